"""`rloo-studio rewards build|import|list|export|duplicate|delete|blocks`: the library from the command line, and what
an import refuses (failing pinned examples, a column the config's data lacks, a bad header) with nothing imported."""

from __future__ import annotations

import json

import pytest
import yaml

from rloo_studio import cli
from rloo_studio.rewards import library

RULES = {"name": "boxed answer", "description": "the boxed answer equals the answer column", "tags": ["math"],
         "blocks": [{"block": "boxed", "name": "boxed_answer", "params": {"column": "answer"}},
                    {"block": "length", "weight": 0.5, "params": {"low": 1, "high": 30}}],
         "examples": [{"prompt": "2+2?", "completion": "It is \\boxed{4}", "columns": {"answer": "4"}, "total": [1.5, 1.5]},
                      {"prompt": "2+2?", "completion": "It is \\boxed{5}", "columns": {"answer": "4"}, "total": [0.5, 0.5]}]}


@pytest.fixture
def shelf(tmp_path, monkeypatch):
    monkeypatch.setenv(library.LIBRARY_ENV, str(tmp_path / "library"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "library"


def _build(tmp_path, **changes) -> str:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({**RULES, **changes}))
    assert cli.main(["rewards", "build", "rules.yaml", "--out", "built.py"]) == 0
    return "built.py"


def test_build_import_list_export(shelf, tmp_path, capsys):
    built = _build(tmp_path)
    assert cli.main(["rewards", "import", built]) == 0
    out = capsys.readouterr().out
    assert "All 2 pinned examples pass. Saved in the library" in out
    assert "function: boxed_answer\n    weight: 1\n" in out and "function: length\n    weight: 0.5" in out
    saved = shelf / "boxed-answer.py"
    assert saved.read_text() == (tmp_path / built).read_text()

    assert cli.main(["rewards", "list", "--search", "boxed", "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["rewards"]
    assert entry["name"] == "boxed answer" and entry["hash"] == library.content_hash(saved.read_text()) and entry["rule_built"]

    assert cli.main(["rewards", "export", "boxed answer", "--out", "shared.py"]) == 0
    assert (tmp_path / "shared.py").read_text() == saved.read_text()
    assert cli.main(["rewards", "export", "boxed answer", "--out", "shared.py"]) == 2  # never overwrites
    assert "already exists" in capsys.readouterr().err
    assert cli.main(["rewards", "export", "numeric answer", "--out", "template.py"]) == 0  # a bundled template too
    assert library.read(tmp_path / "template.py").name == "numeric answer"

    assert cli.main(["rewards", "duplicate", "boxed answer", "mine"]) == 0
    assert cli.main(["rewards", "delete", "mine"]) == 0
    assert [r.name for r in library.entries(with_bundled=False)[0]] == ["boxed answer"]
    capsys.readouterr()
    assert cli.main(["rewards", "--json"]) == 0 and "numeric_answer" in json.loads(capsys.readouterr().out)  # builtins


def test_an_import_whose_pinned_examples_fail_imports_nothing(shelf, tmp_path, capsys):
    examples = [RULES["examples"][0], {**RULES["examples"][1], "total": [1.0, None]}]
    built = _build(tmp_path, examples=examples)
    capsys.readouterr()
    assert cli.main(["rewards", "import", built]) == 2
    captured = capsys.readouterr()
    assert "FAIL  'It is \\\\boxed{5}' -> total 0.500 (expected 1.0..None): the total 0.5 lies outside" in captured.out
    assert "1 of 2 pinned examples of built.py fail" in captured.err and "nothing was imported" in captured.err
    assert not shelf.exists()


def test_an_import_needing_a_column_the_data_lacks_imports_nothing(shelf, tmp_path, capsys):
    built = _build(tmp_path)
    (tmp_path / "data.jsonl").write_text(json.dumps({"prompt": "2+2?", "solution": "4"}) + "\n")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"model": {"name_or_path": "demo"}, "data": {"source": "data.jsonl"}}))
    assert cli.main(["rewards", "import", built, "--config", "config.yaml"]) == 2
    err = capsys.readouterr().err
    assert "needs data the config's dataset lacks: the reward needs the column `answer`" in err
    assert "(its columns: prompt, solution)" in err and "nothing was imported" in err
    assert not shelf.exists()


def test_an_import_of_a_file_without_a_header_imports_nothing(shelf, tmp_path, capsys):
    (tmp_path / "plain.py").write_text("def f(completions, **kwargs):\n    return [1.0 for _ in completions]\n")
    assert cli.main(["rewards", "import", "plain.py"]) == 2
    err = capsys.readouterr().err
    assert "plain.py is not a usable reward file: it has no `REWARD = {...}` header" in err and "What to do: add one" in err
    assert not shelf.exists()


def test_blocks_lists_each_block_with_its_example(capsys):
    assert cli.main(["rewards", "blocks", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [b["id"] for b in listed["blocks"]][:3] == ["contains", "number", "pattern"] and set(listed["combine"]) == {"sum", "all", "any"}


def test_an_import_whose_code_ends_its_process_imports_nothing_and_this_process_goes_on(shelf, tmp_path, capsys):
    built = _build(tmp_path)
    text = (tmp_path / built).read_text().replace("import unicodedata\n", "import os\nimport unicodedata\n\nos._exit(3)\n", 1)
    (tmp_path / built).write_text(text)
    capsys.readouterr()
    assert cli.main(["rewards", "import", built]) == 2  # the pinned examples run in the scoring child, never here
    err = capsys.readouterr().err
    assert "the pinned examples of built.py could not be scored: scoring failed: exit code 3" in err
    assert "nothing was imported" in err and not shelf.exists()

"""Reward files and the personal library: the header read without running the file, what a bad file is refused for
(with what, why and what to do), the content hash, list/search/save/duplicate/delete, the pinned examples scored in
the preview's scoring child, the bundled templates as library entries whose pinned examples pass, and rewards.json."""

from __future__ import annotations

import json

import pytest

from rloo_studio.errors import RewardError
from rloo_studio.rewards import library, rules, templates
from rloo_studio.workers import scorer

EXAMPLES = [{"prompt": "2+2?", "completion": "<think>2+2</think>4", "columns": {"answer": "4"}, "total": [1.0, 1.0]},
            {"prompt": "2+2?", "completion": "<think>2+2</think>5", "columns": {"answer": "4"}, "total": [0.0, 0.0]}]
RULES = {"blocks": [{"block": "number", "name": "right_number"}]}


def _rule_file(name="right number", examples=EXAMPLES) -> str:
    return rules.build_file(RULES, name, tags=["math"], examples=examples)


@pytest.fixture
def shelf(tmp_path, monkeypatch):
    """An empty personal library, through the environment variable, as the app and the CLI find it."""
    folder = tmp_path / "library"
    monkeypatch.setenv(library.LIBRARY_ENV, str(folder))
    return folder


def test_the_header_is_read_without_running_the_file(tmp_path):
    text = _rule_file().replace("import re\n", "import re\nraise SystemExit('ran')\n", 1)
    reward = library.parse(text)  # would end the test process if it ran
    assert (reward.name, reward.columns, reward.tags, reward.functions) == ("right number", ["answer"], ["math"], ["right_number"])
    assert reward.weights == {"right_number": 1.0} and reward.examples == EXAMPLES
    assert reward.parameters == {"right_number": {"tolerance": 0.0}}


def test_a_unicode_header_reads_back_as_written(shelf):
    examples = [{"prompt": "Ciudad?", "completion": "Zoë está en Málaga ✓", "columns": {"answer": "málaga"}, "total": [1.0, 1.0]}]
    name = 'Zoë\'s «rule» "quoted" """'  # quotes, even a docstring's, and guillemets
    text = rules.build_file({"blocks": [{"block": "contains"}]}, name, examples=examples)
    saved = library.save(library.parse(text))
    again = library.read(saved)
    assert (again.name, again.examples) == (name, examples) and again.source == text
    assert scorer.check_examples(again)["passed"]


PLAIN = '''"""Rewards for the arithmetic task.

Second line.
"""
import re


def right(completions, answer, **kwargs):
    return [1.0 if re.search(str(a), c) else 0.0 for c, a in zip(completions, answer)]


def short(completions, completion_ids, bonus=0.0, **kwargs):
    return [1.0 + bonus if len(ids) < 20 else 0.0 for ids in completion_ids]
'''


def test_plain_reward_code_becomes_a_reward_file():
    examples = [{"prompt": "3+4?", "completion": "7", "columns": {"answer": "7"}, "total": [1.5, 1.5]}]
    text = library.from_code(PLAIN, "arithmetic", tags=["math"], examples=examples, weights={"short": 0.5})
    reward = library.parse(text)
    assert (reward.description, reward.columns) == ("Rewards for the arithmetic task.", ["answer"])  # bonus has a default
    assert reward.weights == {"right": 1.0, "short": 0.5} and reward.tags == ["math"]
    assert text.count('"""') == 2 and "def right(" in text  # one docstring: the header's replaces the code's
    assert scorer.check_examples(reward)["passed"]
    renamed = library.parse(library.from_code(text, "arithmetic 2", examples=examples))  # a file with a header keeps it
    assert (renamed.name, renamed.weights, renamed.description) == ("arithmetic 2", reward.weights, reward.description)


def test_the_content_hash_is_a_version_of_the_text():
    text = _rule_file()
    assert library.content_hash(text) == library.content_hash(text.replace("\n", "\r\n"))
    assert library.content_hash(text) != library.content_hash(text.replace("1.0", "2.0", 1))
    assert library.content_hash(text).startswith("sha256:") and len(library.short_hash(library.content_hash(text))) == 12


BAD_FILES = {
    "syntax error": ("REWARD = {}\ndef f(completions, **kwargs)\n    return [1.0]\n", "syntax error"),
    "no header": ("def f(completions, **kwargs):\n    return [1.0 for _ in completions]\n", "no `REWARD = {...}` header"),
    "header runs code": ("REWARD = dict(name='x')\n", "not a plain literal"),
    "header lacks keys": ("REWARD = {'name': 'x'}\ndef f(completions, **kwargs):\n    return []\n", "has no `columns`"),
    "column not declared": (None, "which the header's `columns` do not list"),
    "weights name no function": (None, "which the file does not define"),
    "no pinned examples": (None, "no pinned examples"),
    "example lacks a column": (None, "gives no value for column(s) answer"),
    "empty range": (None, "is empty (low above high)"),
    "too big": (None, "over the 256 KiB limit"),
}


def _bad(kind: str) -> str:
    text, _ = BAD_FILES[kind]
    if text is not None:
        return text
    good = _rule_file()
    if kind == "column not declared":
        return library.with_header(good, columns=[])
    if kind == "weights name no function":
        return library.with_header(good, weights={"right_number": 1.0, "gone": 2.0})
    if kind == "no pinned examples":
        return library.with_header(good, examples=[])
    if kind == "example lacks a column":
        return library.with_header(good, examples=[{**EXAMPLES[0], "columns": {}}])
    if kind == "empty range":
        return library.with_header(good, examples=[{**EXAMPLES[0], "total": [1.0, 0.0]}])
    return good + "# " + "x" * library.MAX_FILE_BYTES + "\n"


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_reward_file_is_refused_with_what_why_and_what_to_do(kind, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(_bad(kind), encoding="utf-8")
    with pytest.raises(RewardError) as caught:
        library.read(path)
    assert BAD_FILES[kind][1] in caught.value.what
    assert caught.value.why and caught.value.fix


def test_save_list_search_duplicate_delete(shelf):
    reward = library.parse(_rule_file())
    saved = library.save(reward)
    assert saved.parent == shelf and saved.read_text() == reward.source
    listed, problems = library.entries()
    assert problems == []
    mine = [r for r in listed if r.origin == "library"]
    assert [r.name for r in mine] == ["right number"]
    assert {r.name for r in listed if r.origin == library.BUNDLED} == set(templates.TEMPLATES)
    assert [r.name for r in library.search("MATH Right")] == ["right number"]
    assert "numeric answer" in [r.name for r in library.search("math")]  # bundled templates are searched too

    assert library.save(reward) == saved  # the same text again: nothing changes
    changed = library.parse(library.with_header(reward.source, description="another"))
    with pytest.raises(RewardError) as caught:
        library.save(changed)
    assert "already has a reward called 'right number'" in caught.value.what and "--replace" in caught.value.fix
    assert library.save(changed, replace=True) == saved and library.find("right number").description == "another"

    copy = library.duplicate("right number", "right number 2")
    again = library.read(copy)
    assert again.name == "right number 2" and '"""right number 2:' in again.source
    assert again.source.split("def _text", 1)[1] == changed.source.split("def _text", 1)[1]  # the code is untouched
    assert library.duplicate("numeric answer", "my numbers").parent == shelf  # a template becomes my own copy

    with pytest.raises(RewardError) as caught:
        library.delete("numeric answer")
    assert "bundled template" in caught.value.what
    library.delete("right number 2")
    assert not copy.exists()
    with pytest.raises(RewardError) as caught:
        library.find("right numbr")
    assert "did you mean" in caught.value.what.lower()


def test_a_broken_file_in_the_library_is_reported_not_hidden(shelf):
    shelf.mkdir()
    (shelf / "broken.py").write_text("def f(:\n")
    listed, problems = library.entries(with_bundled=False)
    assert listed == [] and len(problems) == 1 and "broken.py" in problems[0]


def test_the_library_folder_follows_the_platform(monkeypatch, tmp_path):
    monkeypatch.delenv(library.LIBRARY_ENV, raising=False)
    monkeypatch.setattr(library.sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert library.library_dir() == tmp_path / "rloo-studio" / "rewards"
    monkeypatch.setenv(library.LIBRARY_ENV, str(tmp_path / "mine"))
    assert library.library_dir() == tmp_path / "mine"


def test_pinned_examples_are_scored_in_the_scoring_child():
    passing = library.parse(_rule_file())
    result = scorer.check_examples(passing)
    assert result["passed"] and result["problems"] == []
    assert [v["total"] for v in result["verdicts"]] == [1.0, 0.0]
    assert "one per character" in result["tokens"]  # no config: what the token counts are is said

    # The second example expects 1.0 but the reward gives 0.0; a function that raises fails its example, even though
    # its None leaves the total empty rather than wrong.
    wrong = library.parse(_rule_file(examples=[EXAMPLES[0], {**EXAMPLES[1], "total": [1.0, None]}]))
    raising = library.parse(_rule_file().replace('    texts = [_text(c) for c in completions]',
                                                 '    texts = [_text(c) for c in completions]\n    1 / 0', 1))
    [first, second] = scorer.check_examples(wrong)["verdicts"]
    assert first["ok"] and not second["ok"] and "outside the expected 1.0..None" in second["why"]
    verdicts = scorer.check_examples(raising)["verdicts"]
    assert not any(v["ok"] for v in verdicts) and "ZeroDivisionError" in verdicts[0]["why"]


def test_every_bundled_template_is_a_reward_file_whose_pinned_examples_pass():
    for reward in library.bundled():
        assert reward.examples and reward.source.startswith(f'"""{reward.name}:')
        assert reward.source.split(f"{library.HEADER} = ", 1)[1].split("\n}\n", 1)[1].strip() in templates.template(reward.name)
        result = scorer.check_examples(reward)
        assert result["passed"], (reward.name, result)


def test_the_run_record_names_each_reward_file_and_its_version(shelf, tmp_path):
    saved = library.save(library.parse(_rule_file()))
    run = tmp_path / "run"
    run.mkdir()
    (run / "rewards.py").write_text(saved.read_text())
    (run / "rewards_2_plain.py").write_text("def f(completions, **kwargs):\n    return [0.0 for _ in completions]\n")
    library.record_run_rewards(run, [(saved, run / "rewards.py"), (tmp_path / "plain.py", run / "rewards_2_plain.py")])
    record = json.loads((run / library.RUN_RECORD_FILE).read_text())
    assert record == library.read_run_record(run)
    [lib, plain] = record["files"]
    assert lib == {"file": "rewards.py", "from": str(saved), "hash": library.content_hash(saved.read_text()),
                   "name": "right number", "library": True}
    assert plain["name"] is None and plain["library"] is False and plain["hash"].startswith("sha256:")


def test_a_run_of_the_page_records_a_library_reward_it_trained_with_unchanged(shelf, tmp_path):
    """The app copies the code editor's text into the run as rewards.py: a library reward put there with *Use* and left
    as it is, is that library version (its hash is one of the library's), though the copy came from the editor."""
    saved = library.save(library.parse(_rule_file()))
    run = tmp_path / "run"
    run.mkdir()
    (run / "rewards.py").write_text(saved.read_text())
    editor = tmp_path / "runs" / ".studio" / "draft-rewards.py"
    [entry] = library.run_record([(editor, run / "rewards.py")])["files"]
    assert entry["library"] is True and entry["name"] == "right number", entry
    (run / "rewards.py").write_text(saved.read_text() + "\n# edited\n")  # edited in the editor: a code reward of its own
    [entry] = library.run_record([(editor, run / "rewards.py")])["files"]
    assert entry["library"] is False and entry["name"] == "right number", entry

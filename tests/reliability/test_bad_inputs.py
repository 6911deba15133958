"""Bad inputs, one by one: each gets a specific, actionable message, and nothing else breaks.

CLI cases fail in the pre-flight check (before torch is imported) unless noted; reward cases run the
person's code in the preview's sandboxed child process; app cases go through the app's endpoints.
"""

from __future__ import annotations

import json

import pytest
import yaml
import sys

from helpers import ROOT, cli_in_process, run_cli


from rloo_studio.workers import scorer

PRESET = ROOT / "presets" / "cpu-demo.yaml"


def train_fails(tmp_path, *overrides, config=PRESET):
    """stderr of `rloo-studio train CONFIG OVERRIDES`, which must fail its pre-flight check with exit code 2 (run in
    this process: each case here stops before training; the tests that use run_cli keep a real process's contract)."""
    result = cli_in_process("train", config, *overrides, cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stdout[-1500:], result.stderr[-1500:])
    assert "Traceback" not in result.stderr and "\nerror: " in "\n" + result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), "a failed start left a run behind"
    return result.stderr


# ---- data files ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, content, expected", [
    ("empty.jsonl", b"", "has no rows"),
    ("binary.jsonl", b"\x00\xff\xfe\x00binary", "is not UTF-8 text (byte 1, line 1"),
    ("latin1.csv", "prompt,answer\ncafé,1\n".encode("latin-1"), "is not UTF-8 text (byte 17, line 2"),
    ("broken.jsonl", b'{"prompt": "a", "answer": "1"}\n{"prompt": "b", "answer": \n{"prompt": "c", "answer": "3"}\n',
     "broken.jsonl: line 2 is not valid JSON (Expecting value, column 1) (each line of a .jsonl file must be one JSON object) — fix or delete line 2"),
    ("noprompt.csv", b"question,answer\nWhat is 1+1?,2\n", "has no column `prompt`"),
    ("emptyprompt.jsonl", b'{"prompt": "a", "answer": "1"}\n{"prompt": "  ", "answer": "2"}\n', "empty prompt (data rows 2"),
    ("notalist.json", b'{"prompt": "a"}', "expected a JSON list of objects"),
])
def test_bad_data_files(tmp_path, name, content, expected):
    (tmp_path / name).write_bytes(content)
    err = train_fails(tmp_path, f"data.source={tmp_path / name}", "data.test_split=")
    assert expected in err and "What to do" in err


def _xlsx_bytes() -> bytes:
    """The start of a real .xlsx: a zip archive with the workbook's parts."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    return buffer.getvalue()


# Files a person really sends: (name, bytes, what, why, what to do) — each part of the message is checked.
@pytest.mark.parametrize("name, content, what, why, fix", [
    ("noheader.csv", b"What is 1+1?,2\nWhat is 2+2?,4\nWhat is 3+3?,6\n",
     "the CSV file has no header row: its first line (What is 1+1?, 2) looks like data, yet was read as the column names",
     "a CSV file's first line must name its columns", "add a first line with the column names, e.g. `prompt,answer`"),
    ("workbook.csv", _xlsx_bytes(), "is not a text file: it is a zip archive, most likely an Excel workbook (.xlsx) renamed to .csv",
     "renaming a file does not convert it", "save it with File › Save As › “CSV UTF-8 (comma delimited)”"),
    ("unicode.csv", "prompt,answer\nWhat is 1+1?,2\n".encode("utf-16"), "is UTF-16 text (what Windows programs call “Unicode”), not UTF-8",
     "data files must be UTF-8", "in Notepad choose Encoding: UTF-8"),
    ("unicode-no-bom.csv", "prompt,answer\nWhat is 1+1?,2\n".encode("utf-16-le"), "is UTF-16 text", "data files must be UTF-8",
     "save it again as UTF-8"),
    ("empty-answers.csv", ("prompt,answer\n" + "".join(f"What is {i}+1?,\n" for i in range(20))).encode(),
     "rewards[0] (numeric_answer): the column `answer` is empty in all", "would give no completion a score and RLOO would learn nothing",
     "fill in the answers, point params.answer_column at the column that holds them"),
])
def test_files_a_person_really_sends(tmp_path, name, content, what, why, fix):
    (tmp_path / name).write_bytes(content)
    err = train_fails(tmp_path, f"data.source={tmp_path / name}", "data.test_split=")
    assert what in err and why in err and fix in err, err


def test_a_config_indented_with_a_tab(tmp_path):
    text = PRESET.read_text(encoding="utf-8").replace("  name_or_path:", "\tname_or_path:", 1)
    (tmp_path / "c.yaml").write_text(text)
    err = train_fails(tmp_path, config=tmp_path / "c.yaml")
    line = text[:text.index("\tname_or_path")].count("\n") + 1
    assert f"not valid YAML at line {line}, column 1" in err  # what, and where
    assert "YAML allows only spaces there, not a tab: replace the tab with spaces" in err  # why, and what to do


def test_a_sharded_model_folder_missing_one_shard(tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "sharded"
    folder.mkdir()
    for f in (ROOT / "assets" / "demo-model").iterdir():
        if f.name != "model.safetensors":
            (folder / f.name).write_bytes(f.read_bytes())
    tensors = load_file(ROOT / "assets" / "demo-model" / "model.safetensors")
    keys = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": keys[:len(keys) // 2], "model-00002-of-00002.safetensors": keys[len(keys) // 2:]}
    for shard, names in shards.items():
        save_file({k: tensors[k] for k in names}, folder / shard, metadata={"format": "pt"})
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {k: shard for shard, names in shards.items() for k in names}}))
    (folder / "model-00002-of-00002.safetensors").unlink()  # the download stopped before the end
    err = train_fails(tmp_path, f"model.name_or_path={folder}")
    assert (f"the model folder {folder} is missing model-00002-of-00002.safetensors (1 of the 2 weight files that "
            "model.safetensors.index.json lists)") in err
    assert "download or copy the missing file(s) into the folder again" in err


def test_a_reward_importing_a_missing_package_when_called(tmp_path):
    """The file loads (the import is inside the function), so the pre-flight check passes; the first call in
    training fails with the install command for this environment, not "fix the function"."""
    from rloo_studio.errors import RewardError
    from rloo_studio.rewards.runtime import guard
    from rloo_studio.rewards.user import load_reward_file

    (tmp_path / "rewards.py").write_text("def needs_pkg(completions, **kwargs):\n    import not_a_real_pkg_xyz.sub\n"
                                         "    return [1.0] * len(completions)\n")
    functions = load_reward_file(tmp_path / "rewards.py")
    with pytest.raises(RewardError) as failed:  # the wrapper training calls TRL's reward functions through
        guard(functions["needs_pkg"], "needs_pkg", str(tmp_path / "rewards.py"))(completions=["a"], prompts=["p"])
    message = failed.value.message()
    assert "reward function `needs_pkg` raised ModuleNotFoundError: No module named 'not_a_real_pkg_xyz'" in message
    assert "rewards.py:2 in needs_pkg: import not_a_real_pkg_xyz.sub" in message
    assert f"`{sys.executable} -m pip install not_a_real_pkg_xyz`" in message


def test_numbers_as_answers_are_fine(tmp_path):
    rows = [{"prompt": f"What is {i}+1?", "answer": i + 1} for i in range(20)]  # ints, not strings
    (tmp_path / "ints.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run_cli("estimate", PRESET, f"data.source={tmp_path / 'ints.jsonl'}", "--gpu-gb", "8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    groups = [{"prompt": r["prompt"], "row": {"answer": r["answer"]}, "completions": [str(r["answer"]), "0"]} for r in rows[:2]]
    scored = scorer.score({"groups": groups, "num_generations": 2, "rewards": [{"name": "numeric_answer"}]})
    assert [r["total"] for r in scored["rows"]] == [1.0, 0.0, 1.0, 0.0]


def test_a_missing_data_file_and_a_split_of_a_single_file(tmp_path):
    assert "data file not found: nowhere.jsonl" in train_fails(tmp_path, "data.source=nowhere.jsonl")
    (tmp_path / "d.jsonl").write_text('{"prompt": "a", "answer": "1"}\n')
    err = train_fails(tmp_path, f"data.source={tmp_path / 'd.jsonl'}", "data.test_split=test")
    assert "names a split, but" in err and "single file without splits" in err


def test_a_hub_dataset_that_cannot_be_reached_offline(tmp_path):
    err = train_fails(tmp_path, "data.source=nobody/no-such-dataset")
    assert "could not load hub dataset 'nobody/no-such-dataset'" in err and "no network connection" in err


# ---- models ----------------------------------------------------------------------------------------

def _model_without_tokenizer(tmp_path):
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):  # the weights and their config, nothing else
        (folder / name).write_bytes((ROOT / "assets" / "demo-model" / name).read_bytes())
    return folder


def test_a_model_folder_without_a_tokenizer(tmp_path):
    folder = _model_without_tokenizer(tmp_path)
    err = train_fails(tmp_path, f"model.name_or_path={folder}")
    assert f"model.name_or_path: the model folder {folder} has no tokenizer (it holds config.json, model.safetensors)" in err
    assert "copy the tokenizer files of the model these weights came from into the folder" in err
    # The preview's scoring child, given that folder for completion_ids, says the same instead of a loader error.
    result = scorer.score({"groups": [{"prompt": "p", "row": {}, "completions": ["a", "b"]}], "num_generations": 2,
                             "rewards": [{"name": "think_format"}], "tokenizer": str(folder)})
    assert result["problems"][0].startswith(f"the model folder {folder} has no tokenizer (it holds config.json, model.safetensors)")
    assert "Why: training and the reward preview turn text into tokens with the tokenizer" in result["problems"][0]


# ---- configs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides, expected", [
    (["rloo.max_steps=ten"], "rloo.max_steps: 'ten' is not a number"),
    (["modle.name_or_path=demo"], "modle: unknown key — did you mean `model`?"),
    (["rloo.num_generations=1"], "rloo.num_generations: 1"),
    (["rloo.per_device_train_batch_size=12"], "is not divisible by num_generations 8; every prompt needs all its 8 completions in one "
                                              "batch — use per_device_train_batch_size 8 or 16"),
    (["rloo.learning_rate=-0.1"], "rloo.learning_rate: -0.1"),
    (["rloo.max_completion_length=0"], "rloo.max_completion_length: 0"),
    (["model.load_in_4bit=true"], "model.load_in_4bit: 4-bit weights cannot be trained directly; add a `lora:` section (QLoRA) "
                                  "or set load_in_4bit: false"),
    (["rewards.0.name=numeric_answr"], "did you mean `numeric_answer`?"),
    (["rewards.2.params.min_tokens=50"], "think_length"),
    (["rewards.0.params.answer_column=solution"], "has no column `solution`"),
    (["model.name_or_path=./no/such/folder"], "model folder not found: ./no/such/folder"),
])
def test_bad_config_values(tmp_path, overrides, expected):
    assert expected in train_fails(tmp_path, *overrides)


@pytest.mark.parametrize("text, expected", [
    ("- just\n- a list\n", "expected a mapping of sections"),
    ("model:\n  name_or_path: demo\n rloo: [\n", "not valid YAML at line"),
])
def test_malformed_config_files(tmp_path, text, expected):
    (tmp_path / "c.yaml").write_text(text)
    assert expected in train_fails(tmp_path, config=tmp_path / "c.yaml")


def test_a_binary_config_file(tmp_path):
    (tmp_path / "c.yaml").write_bytes(b"\x00\x01\xff\xfe" * 10)
    result = run_cli("train", tmp_path / "c.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"config {tmp_path / 'c.yaml'} has 1 problem:\n  - the file is not UTF-8 text (byte 2 cannot be decoded)" in result.stderr
    assert "a run config is a YAML text file — save it as UTF-8 in a text editor" in result.stderr  # why, and what to do


# ---- reward code -----------------------------------------------------------------------------------

@pytest.mark.parametrize("source, expected", [
    ("def r(completions, **kwargs):\n    return [1.0 for c in completions\n", "rewards.py:2:"),
    ("import not_a_real_module_xyz\ndef r(completions, **kwargs):\n    return [1.0] * len(completions)\n",
     "pip install not_a_real_module_xyz"),
    ("import sys\nsys.exit(2)\ndef r(completions, **kwargs):\n    return []\n", "SystemExit"),
    ("def r(completions):\n    return [1.0] * len(completions)\n", "add `**kwargs`"),
    ("X = 1\n", "defines no public reward function"),
])
def test_bad_reward_files_in_training(tmp_path, source, expected):
    (tmp_path / "rewards.py").write_text(source)
    cfg = yaml.safe_load(PRESET.read_text())
    cfg["rewards"].append({"file": str(tmp_path / "rewards.py"), "weight": 1.0})
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert expected in train_fails(tmp_path, config=tmp_path / "c.yaml")


def _score(source: str, completions=("ab", "abc"), timeout_s: float = 20) -> dict:
    return scorer.score({"groups": [{"prompt": "p", "row": {"answer": "1"}, "completions": list(completions)}],
                           "num_generations": len(completions), "source": source, "rewards": [{"file": "rewards.py"}]},
                          timeout_s=timeout_s)


@pytest.mark.parametrize("body, expected", [
    ("return [float('inf'), 1.0]", "reward function `r` returned inf for completion #0. Why: rewards must be finite"),
    ("return ['1', 2]", "reward function `r` returned '1' (str) for completion #0. Why: each value must be a number"),
    ("return [1.0, 2.0, 3.0]", "reward function `r` returned 3 values for 2 completions. Why: training needs exactly one value"),
    ("return None", "reward function `r` returned NoneType, not a list. Why: training needs one float (or None) per completion"),
    ("raise ValueError('bad completion')", "ValueError: bad completion"),
    ("return [1.0 / (len(c) - 3) for c in completions]", "ZeroDivisionError"),
    ("x = bytearray(10 ** 15)\n    return [1.0] * len(completions)", "MemoryError: reward function `r` ran out of memory"),
])
def test_misbehaving_rewards_are_reported_by_name(body, expected):
    result = _score(f"def r(completions, **kwargs):\n    {body}\n")
    errors = result["functions"]["r"]["errors"]
    assert errors and expected in errors[0]["error"], errors


@pytest.mark.parametrize("values", [
    "[float('inf'), 1.0]", "[1.0, float('-inf')]", "['1', 2]", "[1.0, 2.0, 3.0]", "None", "1.0", "[1.0, {'score': 1}]",
])
def test_preview_and_training_give_a_wrong_return_value_the_same_verdict_and_message(values):
    from rloo_studio.errors import RewardError
    from rloo_studio.rewards.runtime import guard

    source = f"def r(completions, **kwargs):\n    return {values}\n"
    namespace: dict = {}
    exec(source, namespace)
    with pytest.raises(RewardError) as in_training:  # the wrapper training calls TRL's reward functions through
        guard(namespace["r"], "r")(completions=["ab", "abc"], prompts=["p", "p"])
    in_preview = _score(source)["functions"]["r"]["errors"][0]["error"]
    assert in_preview == in_training.value.message().replace("\n", " ")


def test_nan_means_not_applicable_in_the_preview_as_in_training():
    # TRL 1.15 turns None into NaN and sums rewards with nansum: a NaN is a None to the trainer, in both places.
    from rloo_studio.rewards.runtime import guard

    source = "import math\ndef r(completions, **kwargs):\n    return [math.nan, 1.0]\n"
    namespace: dict = {}
    exec(source, namespace)
    assert guard(namespace["r"], "r")(completions=["ab", "abc"]) == [None, 1.0]
    result = _score(source)
    assert result["functions"]["r"]["errors"] == [] and result["functions"]["r"]["none"] == 1
    assert [row["rewards"]["r"] for row in result["rows"]] == [None, 1.0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the scoring child's memory limit is Linux-only")
def test_a_reward_allocating_20_gb_hits_the_preview_memory_limit_and_the_others_still_score():
    from rloo_studio.rewards.preview import tokenizer_source

    source = ("def greedy(completions, **kwargs):\n    buffer = bytearray(20 * 2**30)\n    return [1.0] * len(completions)\n\n"
              "def modest(completions, **kwargs):\n    return [float(len(c)) for c in completions]\n")
    result = scorer.score({"groups": [{"prompt": "p", "row": {}, "completions": ["ab", "abc"]}], "num_generations": 2,
                             "source": source, "rewards": [{"file": "rewards.py", "function": "greedy"},
                                                           {"file": "rewards.py", "function": "modest"}],
                             "tokenizer": tokenizer_source("demo")},  # transformers and torch load under the limit too
                            timeout_s=120)
    error = result["functions"]["greedy"]["errors"][0]
    assert error["error"].startswith("MemoryError: reward function `greedy` ran out of memory (the preview lets reward "
                                     "code use up to "), error
    assert "What to do: score each completion with small, bounded data structures" in error["error"]
    assert error["lines"] == ["rewards.py:2 in greedy: buffer = bytearray(20 * 2**30)"]
    assert result["functions"]["modest"]["errors"] == [] and [r["rewards"]["modest"] for r in result["rows"]] == [2.0, 3.0]


def test_a_reward_that_prints_megabytes_still_scores():
    result = _score("def r(completions, **kwargs):\n    print('x' * 5_000_000)\n    return [float(len(c)) for c in completions]\n")
    assert [row["total"] for row in result["rows"]] == [2.0, 3.0]


def test_a_reward_that_kills_its_process_is_reported():
    result = _score("import os\ndef r(completions, **kwargs):\n    os._exit(7)\n")
    problem = result["problems"][0]
    assert problem.startswith("reward function `r` ended the scoring process (exit code 7) instead of returning")
    assert "Why: reward code called os._exit()" in problem and "What to do: return a list of numbers" in problem


def test_a_reward_that_sleeps_forever_is_stopped():
    result = _score("import time\ndef r(completions, **kwargs):\n    time.sleep(3600)\n", timeout_s=6)
    assert "reward function `r` did not return within 6 s" in result["problems"][0]


@pytest.mark.parametrize("source, timeout_s, expected", [
    ("import time\ndef r(completions, **kwargs):\n    time.sleep(3600)\n", 4, "did not return within 4 s"),  # killed
    ("import os\ndef r(completions, **kwargs):\n    os._exit(7)\n", 20, "ended the scoring process"),  # ends itself
])
def test_a_stopped_or_ended_scoring_child_leaves_no_copy_of_the_reward_code(tmp_path, monkeypatch, source, timeout_s, expected):
    # The editor's code is copied to a temporary rloo-preview-* folder for scoring; neither a killed child nor one ended
    # by os._exit gets to clean up, yet the folder (the person's code) must go. Both processes use tmp_path as the
    # temporary folder, so whichever writes the copy, it is found here, and other processes' folders are not.
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = _score(source, timeout_s=timeout_s)
    assert expected in result["problems"][0], result  # the reward ran: the copy was written and read
    assert list(tmp_path.glob("rloo-preview-*")) == []


def test_an_interrupted_wait_ends_the_scoring_child_and_removes_the_copy(tmp_path, monkeypatch):
    # Ctrl-C in `rloo-studio preview` while a reward runs: the child must not go on running the person's code, nor
    # keep the folder with its copy.
    import tempfile
    import threading
    import time
    from types import SimpleNamespace

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    children, ticks = [], []
    start = scorer.start_scorer
    monkeypatch.setattr(scorer, "start_scorer", lambda **kw: children.append(start(**kw)) or children[-1])

    def clock():  # the wait's look at the time limits: interrupted once the reward has been running a while
        if threading.current_thread() is threading.main_thread():
            ticks.append(1)
            if len(ticks) > 100:
                raise KeyboardInterrupt
        return time.time()

    monkeypatch.setattr(scorer, "time", SimpleNamespace(time=clock))
    with pytest.raises(KeyboardInterrupt):
        _score("import time\ndef r(completions, **kwargs):\n    time.sleep(3600)\n", timeout_s=600)
    assert len(children) == 1 and children[0].poll() is not None, "the scoring child still runs"
    assert list(tmp_path.glob("rloo-preview-*")) == []


def test_a_slow_start_is_not_blamed_on_the_reward():
    # Loading takes 4 s (as imports take on a busy machine); each call is quick: the 2 s limit is per call.
    result = _score("import time\ntime.sleep(4)\ndef r(completions, **kwargs):\n    return [1.0 for _ in completions]\n",
                    timeout_s=2)
    assert not result.get("problems"), result.get("problems")
    assert [row["rewards"]["r"] for row in result["rows"]] == [1.0, 1.0]


def test_a_reward_file_that_hangs_while_loading_is_stopped():
    result = scorer.score({"groups": [{"prompt": "p", "row": {}, "completions": ["a", "b"]}], "num_generations": 2,
                             "source": "import time\ntime.sleep(3600)\ndef r(completions, **kwargs):\n    return [0.0]\n",
                             "rewards": [{"file": "rewards.py"}]}, timeout_s=2, load_timeout_s=8)
    problem = result["problems"][0]
    assert problem.startswith("loading the rewards did not finish within 8 s.")
    assert "top-level code" in problem and "move slow work out of the file's top level" in problem


# ---- the app ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, stored", [
    ("../../etc/passwd.csv", "passwd.csv"), ("..\\..\\evil.jsonl", "evil.jsonl"), ("/abs/path/data.csv", "data.csv"),
    (".hidden.jsonl", "hidden.jsonl"), ("weird name;rm -rf.csv", "weird_name_rm_-rf.csv"), ("", "upload"),
])
def test_uploads_cannot_escape_their_folder(tmp_path, name, stored):
    from rloo_studio.ui.data_tab import store_upload

    source = tmp_path / "incoming"
    source.write_text("prompt\nx\n")
    uploads = tmp_path / "uploads"
    target = store_upload(str(source), name, uploads)
    assert target.parent == uploads.resolve() and target.name == stored


def test_a_huge_upload_is_refused_with_what_to_do_instead(runs_dir, tmp_path, monkeypatch):
    from gradio_client import handle_file

    from helpers.app import connect, served_app
    from rloo_studio.ui import data_tab

    monkeypatch.setattr(data_tab, "MAX_UPLOAD_MB", 1)
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"prompt": "x" * 1000}) + "\n" * 1 + (json.dumps({"prompt": "y" * 1000}) + "\n") * 1500)
    with served_app(runs_dir) as url:
        client = connect(url)
        with pytest.raises(Exception, match="limited to 1 MB"):
            client.predict(handle_file(str(big)), api_name="/upload_data")
        assert client.predict(api_name="/list_runs")  # the app is still there
    assert not (runs_dir / ".studio" / "uploads" / "big.jsonl").exists()


def test_a_run_directory_with_missing_or_torn_files_is_still_shown(runs_dir):
    from rloo_studio import runs
    from rloo_studio.workers import jobs
    from rloo_studio.ui import run_view

    run_dir = runs.create_run_dir(runs_dir, "damaged")
    runs.update_status(run_dir, state="stopped", step=3, max_steps=10, started_at=1.0)
    (run_dir / runs.METRICS_FILE).write_text('{"step": 1, "reward": 0.5}\n{"step": 2, "rew')  # torn last line
    view = jobs.view(run_dir)
    assert [m["step"] for m in view.metrics] == [1] and view.samples == [] and view.log_tail == ""
    assert "stopped" in run_view.status_markdown(view)
    (run_dir / runs.STATUS_FILE).write_text("{not json")
    assert [r.state for r in runs.list_runs(runs_dir)] == ["unknown"]
    assert "unknown" in run_view.status_markdown(jobs.view(run_dir))


@pytest.mark.slow
def test_prompts_longer_than_the_context_are_refused_with_the_rows(workspace):
    rows = [{"prompt": "What is 2+2?", "answer": "4"}] * 3 + [{"prompt": "Please add " + "1 + " * 200 + "1.", "answer": "201"}]
    (workspace.path / "long.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = workspace.write_config(data={"source": "long.jsonl"}, model={"max_seq_length": 128})
    result = run_cli("train", config, cwd=workspace.path, timeout=600)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "1 prompt(s) are longer than the 112 tokens left for them (training rows 4; the longest, row 4" in result.stderr
    assert "raise model.max_seq_length" in result.stderr
    run_dir = next((workspace.path / "runs").iterdir())
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "failed" and "longer than" in status["error"]["what"]


# ---- inputs built to hurt (a YAML alias bomb, a 200 KB field, NUL bytes, too few rows) -----------------------

def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path):
    # Nine levels of nine aliases: a few hundred bytes that stand for 9^9 (387 million) strings once expanded.
    levels = ['&a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"&{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    (tmp_path / "bomb.yaml").write_text("rloo:\n  num_generations: [" + ", ".join(levels) + "]\n", encoding="utf-8")
    err = train_fails(tmp_path, config=tmp_path / "bomb.yaml")
    assert "bomb.yaml expands to more than" in err and "anchors and aliases" in err and "What to do" in err, err


def test_a_csv_field_over_128_kib_is_named_with_its_line(tmp_path):
    (tmp_path / "big.csv").write_text('prompt,answer\nWhat is 1+1?,2\n"What is ' + "x" * 200_000 + '",3\n', encoding="utf-8")
    err = train_fails(tmp_path, f"data.source={tmp_path / 'big.csv'}", "data.test_split=")
    assert "big.csv: the field starting on line 3 is longer than 131,072 characters" in err, err
    assert "a quotation mark" in err and "close the quotation mark on line 3" in err, err


def test_nul_bytes_in_a_csv_are_refused_with_their_line(tmp_path):
    (tmp_path / "nul.csv").write_bytes(b"prompt,answer\nWhat is 1+1?,2\nWhat is\x002+2?,4\n")
    err = train_fails(tmp_path, f"data.source={tmp_path / 'nul.csv'}", "data.test_split=")
    assert "nul.csv holds a NUL character (byte 0) on line 3" in err and "What to do" in err, err


def test_too_few_prompts_for_one_step_are_refused_before_training(tmp_path):
    (tmp_path / "one.jsonl").write_text('{"prompt": "What is 1+1?", "answer": "2"}\n', encoding="utf-8")
    err = train_fails(tmp_path, f"data.source={tmp_path / 'one.jsonl'}", "data.test_split=")
    assert "the training data has 1 prompt, but one generation batch needs 16" in err, err
    assert "per_device_train_batch_size" in err and "What to do" in err, err

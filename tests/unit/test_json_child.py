"""The app's short-lived helper processes (reward check, data peek, hardware probe) through one `json_child`."""

from __future__ import annotations


from rloo_studio.config import DataConfig
from rloo_studio.data import peek_in_child
from rloo_studio.procs import json_child
from rloo_studio.rewards.check import check_source


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_the_answer_is_the_last_stdout_line_whatever_was_printed_before(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "answers", "import json, sys\nrequest = json.loads(sys.stdin.read())\n"
                   "print('chatter from user code')\nprint('a warning', file=sys.stderr)\n"
                   "print(json.dumps({'twice': request['n'] * 2, 'text': 'é'}))\n")
    child = json_child(name, {"n": 21}, timeout_s=60)
    assert child.answer == {"twice": 42, "text": "é"} and child.returncode == 0 and child.stderr_tail == ["a warning"]


def test_a_crash_a_hang_and_no_answer_are_told_apart(tmp_path, monkeypatch):
    crash = json_child(_module(tmp_path, monkeypatch, "crashes", "import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n"),
                       {}, timeout_s=60)
    assert (crash.answer, crash.returncode, crash.timed_out, crash.last_error_line()) == (None, 3, False, "boom")
    hang = json_child(_module(tmp_path, monkeypatch, "hangs", "import time\ntime.sleep(60)\n"), {}, timeout_s=2)
    assert hang.timed_out and hang.answer is None
    garbled = json_child(_module(tmp_path, monkeypatch, "garbled", "print('not json')\n"), None, timeout_s=60)
    assert garbled.answer is None and garbled.returncode == 0


def test_the_reward_check_words_each_way_the_child_can_end():
    assert check_source("def ok(completions, **kwargs):\n    return [1.0] * len(completions)\n") == {"functions": ["ok"], "problems": []}
    exits = check_source("import os\nos._exit(3)\ndef r(completions, **kwargs):\n    return [0.0]\n")
    assert exits["problems"] == ["the reward code ended the checking process (exit code 3).\nWhy: code at the top level of the file "
                                 "called exit or crashed the interpreter.\nWhat to do: remove that call from the top level."]
    hangs = check_source("while True:\n    pass\ndef r(completions, **kwargs):\n    return [0.0]\n", timeout_s=3)
    assert hangs["functions"] == ["r"] and hangs["problems"][0].startswith("loading the reward code took longer than 3 s.")


def test_the_data_peek_answers_from_its_child(tmp_path):
    (tmp_path / "d.csv").write_text("question,answer\nwhat is 2+2?,4\nwhat is 3+3?,6\n", encoding="utf-8")
    peek = peek_in_child(DataConfig(source="d.csv", prompt_column="question"), tmp_path)
    assert peek["columns"] == ["question", "answer"] and peek["train_rows"] == 2 and peek["problems"] == []
    missing = peek_in_child(DataConfig(source="nope.csv", prompt_column="question"), tmp_path)
    assert missing["train_rows"] == 0 and missing["problems"]

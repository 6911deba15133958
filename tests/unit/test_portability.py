"""Windows: no POSIX-only call outside an explicit POSIX branch, and liveness that does not kill.

The scan reads every module of rloo_studio/ (AST, nothing imported): a POSIX-only call must sit
under an `if` whose test names `os.name` or `sys.platform`. rloo_studio/procs.py is where those
branches live; everything else calls it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rloo_studio"
POSIX_ONLY_ATTRS = {("os", "kill"), ("os", "killpg"), ("os", "getpgid"), ("os", "setsid"), ("os", "fork"),
                    ("signal", "SIGKILL"), ("signal", "SIGHUP"), ("os", "getuid")}
POSIX_ONLY_MODULES = {"resource", "fcntl", "termios", "pwd", "grp"}
POSIX_ONLY_KEYWORDS = {"start_new_session", "preexec_fn"}


def posix_only_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) for each POSIX-only call that is not inside an `if` on os.name / sys.platform."""
    tree = ast.parse(source)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def guarded(node: ast.AST) -> bool:
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.If, ast.IfExp)) and any(k in ast.unparse(node.test) for k in ("os.name", "sys.platform")):
                return True
        return False

    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in POSIX_ONLY_ATTRS:
                what = f"{node.value.id}.{node.attr}"
            elif node.value.id in POSIX_ONLY_MODULES:
                what = f"{node.value.id}.{node.attr}"
        elif isinstance(node, ast.Import):
            what = next((a.name for a in node.names if a.name.split(".")[0] in POSIX_ONLY_MODULES), None)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in POSIX_ONLY_MODULES:
            what = node.module
        elif isinstance(node, ast.keyword) and node.arg in POSIX_ONLY_KEYWORDS:
            what = f"{node.arg}="
        if what and not guarded(node):
            found.append((node.lineno if hasattr(node, "lineno") else parents[node].lineno, what))
    return found


def test_the_scan_finds_an_unguarded_call_and_accepts_a_guarded_one():
    assert posix_only_uses("import os\nos.kill(1, 0)\n") == [(2, "os.kill")]
    assert posix_only_uses("import subprocess\nsubprocess.Popen(['x'], start_new_session=True)\n") == [(2, "start_new_session=")]
    assert posix_only_uses("def f():\n    import resource\n    resource.getrlimit(1)\n") == [(2, "resource"), (3, "resource.getrlimit")]
    assert posix_only_uses("import os\nif os.name == 'posix':\n    os.killpg(1, 15)\n") == []
    assert posix_only_uses("import sys, os\nif sys.platform != 'win32':\n    import fcntl\n") == []


@pytest.mark.parametrize("module", sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")))
def test_no_posix_only_call_outside_a_posix_branch(module):
    uses = posix_only_uses((PACKAGE / module).read_text(encoding="utf-8"))
    assert not uses, (f"rloo_studio/{module} uses {uses} outside an `if os.name == \"posix\"` / `sys.platform` branch: "
                      "on Windows these fail or kill the process; call rloo_studio.procs instead")


def test_pid_alive_is_true_while_running_false_after_and_for_a_zombie():
    from rloo_studio.runs import pid_alive

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pid_alive(proc.pid)
        assert pid_alive(proc.pid)  # asking twice does not end it (os.kill(pid, 0) would, on Windows)
        assert proc.poll() is None
    finally:
        proc.kill()
    import time

    deadline = time.time() + 10
    while proc.poll() is None and time.time() < deadline:  # poll() reaps it; before that it is a zombie
        time.sleep(0.05)
    assert not pid_alive(proc.pid)
    assert not pid_alive(None) and not pid_alive(0) and not pid_alive(True)


def test_a_zombie_is_not_alive():
    from rloo_studio.runs import pid_alive

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    import time

    import psutil

    deadline = time.time() + 10
    while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE and time.time() < deadline:
        time.sleep(0.05)
    assert not pid_alive(proc.pid)
    proc.wait()


def test_interrupt_hard_ends_the_child_and_its_children():
    import psutil

    from rloo_studio.procs import Child

    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    proc = Child([sys.executable, "-c", code])
    import time

    deadline = time.time() + 20
    while not psutil.Process(proc.pid).children() and time.time() < deadline:
        time.sleep(0.05)
    grandchild = psutil.Process(proc.pid).children()[0]
    proc.interrupt(hard=True)
    assert proc.wait() is not None
    assert not grandchild.is_running() or grandchild.status() == psutil.STATUS_ZOMBIE


def test_child_environments_are_utf8():
    from rloo_studio.procs import child_env

    env = child_env({"A": "1"})
    out = subprocess.run([sys.executable, "-c", "import sys; print(sys.flags.utf8_mode, sys.stdout.encoding)"],
                         capture_output=True, text=True, env={**env, "PATH": ""}).stdout.split()
    assert out == ["1", "utf-8"]

"""Portable process handling: is a process alive, start a child in its own group, interrupt or end it.

One place for what differs between POSIX (Linux, macOS, WSL) and Windows, with each branch written
out (`if os.name == "posix"` / `sys.platform == "win32"`); the rest of the package calls these
functions and never POSIX-only ones (a unit test scans for them). Liveness and process trees come
from psutil because `os.kill(pid, 0)` — the POSIX liveness probe — *terminates* the process on
Windows (https://docs.python.org/3/library/os.html#os.kill: on Windows any signal other than the two
console events ends the process). Training stops through the STOP file on every system; signals
are only for the launcher's own children. `json_child` is the one way the app asks a short-lived
helper process a question (reward check, data peek, hardware probe). Standard library and psutil only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field

import psutil

# The signals that ask a training process for a clean stop. Windows delivers CTRL_BREAK_EVENT
# (sent to a child started in its own process group) as SIGBREAK.
STOP_SIGNALS: tuple = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGBREAK,) if sys.platform == "win32" else ())


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity, e.g. in a container limited to a few), at least 1."""
    try:
        return len(psutil.Process().cpu_affinity()) or 1
    except (AttributeError, psutil.Error, OSError):  # macOS has no affinity
        return os.cpu_count() or 1


def pid_alive(pid) -> bool:
    """True while process `pid` runs (a zombie — exited, not yet waited for — counts as gone)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # another user's process: it exists


def own_group_kwargs() -> dict:
    """Popen arguments for a child in its own session / process group: the terminal's Ctrl-C and the
    app's restart do not reach it, and `interrupt` can address it (and, on POSIX, its children)."""
    if os.name == "posix":
        return {"start_new_session": True}
    return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}


def utf8_env(env: dict | None = None) -> dict:
    """A child's environment with Python's UTF-8 mode on: its output and files are UTF-8, not the
    console code page (on Windows that is often cp1252 or cp437, which cannot print every prompt)."""
    return {**(os.environ if env is None else env), "PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8"}


def interrupt(proc: subprocess.Popen, hard: bool = False) -> None:
    """Ask a child started with `own_group_kwargs` (and its children) to stop; `hard` ends them at once."""
    if proc.poll() is not None:
        return
    if hard:
        kill_tree(proc.pid)
        return
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the whole group: accelerate and its ranks
        except ProcessLookupError:
            pass
    else:
        proc.send_signal(signal.CTRL_BREAK_EVENT)  # reaches every process of the child's console group


def kill_tree(pid: int) -> None:
    """End process `pid` and everything it started (children first, so none is re-parented and left)."""
    try:
        parent = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    family = parent.children(recursive=True) + [parent]
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=10)


@dataclass
class ChildAnswer:
    """What a `json_child` run gave: its last stdout line as JSON (None when there was none), or why not."""
    answer: dict | None = None
    returncode: int | None = None
    timed_out: bool = False
    stderr_tail: list[str] = field(default_factory=list)

    def last_error_line(self) -> str:
        return (self.stderr_tail or ["no output"])[-1]


def json_child(module: str, request: dict | None, timeout_s: float, env: dict | None = None) -> ChildAnswer:
    """Run `python -m MODULE` with `request` as JSON on stdin; its answer is its last stdout line, as JSON.

    The helper modules print anything else (the user's prints, warnings) before that line or on stderr. A
    child that outlives `timeout_s` is killed; never raises for what the child does (the caller words it).
    """
    try:
        done = subprocess.run([sys.executable, "-m", module], input=json.dumps(request) if request is not None else "",
                              capture_output=True, text=True, encoding="utf-8", errors="replace", env=utf8_env(env),
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return ChildAnswer(timed_out=True)
    tail = done.stderr.strip().splitlines()[-40:]
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    return ChildAnswer(answer if isinstance(answer, dict) else None, done.returncode, False, tail)

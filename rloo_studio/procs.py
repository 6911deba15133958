"""Portable process handling: every child process the package starts, its output, its time limit, its end.

`Child` is the one way the package starts a process: in its own process group (session on POSIX), with the
environment every child gets (`child_env`: Python's UTF-8 mode, none of the app's secrets), its stdout/stderr
pumped line by line (or in chunks) to callbacks by one thread, waited for with one deadline loop (`Child.wait`), and
ended together with everything it started. The child's own exit is the end of it: whatever is still running in
its process group then (a background process the person's reward code started, say) is killed, and output is read
only as far as it was written before, so a grandchild that keeps the pipe open cannot hold the caller. `run` and
`json_child` (the one way the app asks a short-lived helper process a question: reward check, data peek, hardware
probe) are built on it.

What is and is not caught: on POSIX everything that stays in the child's process group, at any time; while the
child runs also every descendant that left the group (psutil's process tree); and on Linux, after its exit, any
process still holding its output pipes. A process that leaves the group (setsid), outlives its parent and lets go of
its pipes is not found. A sandbox (bubblewrap's own PID namespace, or a cgroup) closes that gap; it is meant to be
one more option of `Child`, an argv prefix (`wrap`) that runs the command inside it.

One place for what differs between POSIX (Linux, macOS, WSL) and Windows, with each branch written out
(`if os.name == "posix"` / `sys.platform == "win32"`); the rest of the package never calls POSIX-only functions
(a unit test scans for them). Liveness and process trees come from psutil because `os.kill(pid, 0)` — the POSIX
liveness probe — *terminates* the process on Windows (https://docs.python.org/3/library/os.html#os.kill: on Windows
any signal other than the two console events ends the process). Training stops through the STOP file on every
system; signals are only for the launcher's own children. Standard library and psutil only.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, Sequence

import psutil

# The signals that ask a training process for a clean stop. Windows delivers CTRL_BREAK_EVENT
# (sent to a child started in its own process group) as SIGBREAK.
STOP_SIGNALS: tuple = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGBREAK,) if sys.platform == "win32" else ())

# The app's own secrets (serve.TOKEN_ENV, the `ui --auth` login): no child needs them, and reward code the person
# pastes from elsewhere must not be able to read them. A person's own variables (a judge's API key) stay.
SECRET_VARIABLES = ("RLOO_STUDIO_TOKEN", "RLOO_STUDIO_AUTH")

PIPE, DEVNULL, STDOUT = subprocess.PIPE, subprocess.DEVNULL, subprocess.STDOUT
_POLL_S = 0.05          # how often the pump looks whether the child has exited while its pipes stay open
_CHUNK = 65536
_DRAIN_LIMIT = 1 << 20  # read after the child's exit at most this much more (a stray writer could go on forever)


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


def child_env(env: dict | None = None) -> dict:
    """The environment of every child: `env` (default: this process's) without SECRET_VARIABLES, with Python's UTF-8
    mode on: its output and files are UTF-8, not the console code page (on Windows often cp1252 or cp437, which
    cannot print every prompt)."""
    base = os.environ if env is None else env
    return {**{k: v for k, v in base.items() if k not in SECRET_VARIABLES}, "PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8"}


def _own_group() -> dict:
    """Popen arguments for a child in its own session / process group: the terminal's Ctrl-C and the app's restart
    do not reach it, and it can be signalled, and killed, with everything it started."""
    if os.name == "posix":
        return {"start_new_session": True}
    return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}


class _Spawner:
    """One thread that lives as long as this process and starts every child.

    Why: a child may ask the kernel to end it when its parent ends — the reward sandbox does (bubblewrap's
    `--die-with-parent`, Linux's PR_SET_PDEATHSIG) so that reward code never outlives the app — and on Linux that
    "parent" is the *thread* that started it. The server runs each event in a pool thread that ends after a few
    idle seconds: a scoring child it had left waiting for the next pinned check was killed in the middle of that
    check (exit code -9). Started from this thread, a child is ended with the process, as meant."""

    def __init__(self):
        self._forked()
        if hasattr(os, "register_at_fork"):  # a forked process has no spawner thread, and perhaps a lock held: fresh ones
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self._lock = threading.Lock()
        self._jobs = None
        self._owner = None  # the pid whose thread serves `_jobs`

    def __call__(self, start: Callable):
        if threading.current_thread() is threading.main_thread():
            return start()  # the main thread lives as long as the process
        with self._lock:
            if self._owner != os.getpid():
                self._jobs, self._owner = queue.SimpleQueue(), os.getpid()
                threading.Thread(target=self._serve, args=(self._jobs,), name="procs-spawner", daemon=True).start()
            jobs = self._jobs
        done = Future()
        jobs.put((start, done))
        return done.result()

    @staticmethod
    def _serve(jobs) -> None:
        while True:
            start, done = jobs.get()
            try:
                done.set_result(start())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
                done.set_exception(exc)


_from_spawner = _Spawner()


def family(pid) -> list:
    """Process `pid` and everything it started that still runs (psutil's tree), children first; [] once it is gone."""
    try:
        parent = psutil.Process(int(pid))
        return parent.children(recursive=True) + [parent]
    except (psutil.Error, TypeError, ValueError):
        return []


def kill_tree(pid: int) -> None:
    """End process `pid` (not one of ours: e.g. a training worker an earlier app started) and everything it started,
    children first, so none is re-parented and left."""
    processes = family(pid)
    for p in processes:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(processes, timeout=10)


def _wait_gone(processes: list, timeout_s: float = 10) -> None:
    """Wait (a bounded while) until each of `processes`, sent SIGKILL, has ended (a zombie has: only its exit status
    is left, for a parent that may be gone)."""
    deadline = time.monotonic() + timeout_s
    while processes and time.monotonic() < deadline:
        processes = [p for p in processes if pid_alive(p.pid)]
        if processes:
            time.sleep(0.01)


def _end_pipe_holders(fds: list[int]) -> bool:
    """Linux: kill the other processes that hold one of these pipes (this process's read ends) open, found by the
    pipe's inode in /proc/PID/fd; True when there were any. Only a child's descendants hold a child's pipes: the app's
    other children are started without them, and a warm starter passes them on and closes its copy."""
    if not sys.platform.startswith("linux"):
        return False
    links = {f"pipe:[{os.fstat(fd).st_ino}]" for fd in fds}
    holders = []
    for pid in psutil.pids():
        if pid == os.getpid():
            continue
        try:
            folder = f"/proc/{pid}/fd"
            if any(os.readlink(f"{folder}/{name}") in links for name in os.listdir(folder)):
                holders.append(psutil.Process(pid))
        except (OSError, psutil.Error):  # gone meanwhile, or another user's: not one of ours
            continue
    for p in holders:
        try:
            p.kill()
        except psutil.Error:
            pass
    _wait_gone(holders)
    return bool(holders)


class _Lines:
    """Bytes in, whole lines out (UTF-8, bad bytes replaced; \\r\\n and a lone \\r end a line, as text mode reads)."""

    def __init__(self, sink: Callable[[str], None]):
        self.sink, self.partial = sink, ""
        self.decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder("utf-8")("replace"), translate=True)

    def feed(self, data: bytes, final: bool = False) -> None:
        *lines, self.partial = (self.partial + self.decoder.decode(data, final)).split("\n")
        for line in lines:
            self.sink(line)

    def close(self) -> None:
        self.feed(b"", final=True)
        if self.partial:
            self.sink(self.partial)
            self.partial = ""


class _Chunks:
    """Bytes in, the same bytes out (progress bars redraw with \\r: a copy of a terminal's output is not lines)."""

    def __init__(self, sink: Callable[[bytes], None]):
        self.sink = sink

    def feed(self, data: bytes) -> None:
        self.sink(data)

    def close(self) -> None:
        pass


class Child:
    """One child process, from its start to the end of everything it started.

    `argv` runs in its own process group with `child_env(env)`. `stdin` is DEVNULL or PIPE (then `send` and
    `give_input` write to it). `stdout` / `stderr`: a callable gets each line (without its newline; with
    `chunks=True`, the bytes as they come) on the pump thread; anything else (None: inherited, DEVNULL, STDOUT for
    stderr, an open file) is handed to the child as Popen takes it. `on_end()` is called on the pump thread once the
    child has exited, its tree is ended and its output read. `wrap`: an argv prefix the command runs under (a
    sandbox such as bubblewrap is meant to be this option). An exception in a callback ends the child and is raised
    by `wait`.
    """

    def __init__(self, argv: Sequence, *, stdin=DEVNULL, stdout=None, stderr=None, env: dict | None = None,
                 cwd: str | None = None, chunks: bool = False, on_end: Callable[[], None] | None = None,
                 wrap: Sequence[str] = ()):
        self.argv = [*wrap, *map(str, argv)]
        self._on_end = on_end
        self.stopped: str | None = None   # why `wait` ended it (its time limit, or the caller's reason); None: it ended itself
        self._error: BaseException | None = None
        self._ended = threading.Event()
        self._writer: threading.Thread | None = None  # give_input's, which closes stdin itself
        self.proc = _from_spawner(lambda: subprocess.Popen(
            self.argv, stdin=stdin, stdout=PIPE if callable(stdout) else stdout, stderr=PIPE if callable(stderr) else stderr,
            env=child_env(env), cwd=cwd, **_own_group()))
        self.pid = self.proc.pid
        feed = _Chunks if chunks else _Lines
        self._streams = [(stream, feed(sink)) for stream, sink in ((self.proc.stdout, stdout), (self.proc.stderr, stderr))
                         if callable(sink)]
        threading.Thread(target=self._pump, name=f"child-{self.pid}", daemon=True).start()

    # ---- state ---------------------------------------------------------------------------------------------------

    def poll(self) -> int | None:
        """The exit code once the child has exited, else None (its output may still be being read: see `wait`)."""
        return self.proc.poll()

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    # ---- input ---------------------------------------------------------------------------------------------------

    def send(self, text: str) -> None:
        """Write `text` to the child's stdin now (a child that reads as it goes); raises OSError when it has ended."""
        try:
            self.proc.stdin.write(text.encode("utf-8"))
            self.proc.stdin.flush()
        except ValueError:  # closed at its end, between the caller's look and this write
            raise BrokenPipeError(f"process {self.pid} has ended") from None

    def give_input(self, text: str) -> None:
        """Write `text` to the child's stdin and close it, from a thread of its own: a child that never reads cannot
        hold the caller past its time limit."""
        def write():
            try:
                self.proc.stdin.write(text.encode("utf-8"))
                self.proc.stdin.close()
            except (OSError, ValueError):  # it ended (or was ended) before reading it all: its output says why
                pass
        self._writer = threading.Thread(target=write, name=f"child-{self.pid}-stdin", daemon=True)
        self._writer.start()

    # ---- the end -------------------------------------------------------------------------------------------------

    def wait(self, timeout_s: float | None = None, overdue: Callable[[], str | None] | None = None) -> int:
        """Wait until the child and its output have ended; returns its exit code.

        The one deadline loop: past `timeout_s`, or as soon as `overdue()` (asked every few hundredths of a second)
        gives a reason, the whole tree is killed and `stopped` says why ("time limit" or that reason). Anything
        raised meanwhile (Ctrl-C, an exception in `overdue` or in an output callback) ends the tree too, then is
        raised."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while not self._ended.wait(_POLL_S):
                if self.stopped is None:
                    reason = "time limit" if deadline is not None and time.monotonic() > deadline else overdue() if overdue else None
                    if reason:
                        self.stopped = reason
                        self.kill()
        except BaseException:
            self.kill()
            self._ended.wait()
            raise
        if self._error is not None:
            raise self._error
        return self.proc.returncode

    def kill(self) -> None:
        """End the child and everything it started, now (its exit code then says it was killed)."""
        # While it runs, descendants that left its group are still found as its own (the list ends with the child).
        descendants = family(self.pid)[:-1] if self.proc.poll() is None else []
        self._end_group()
        try:
            self.proc.kill()  # (not waited for here: the pump reaps it, and so keeps its real exit code)
        except OSError:
            pass
        for p in descendants:
            try:
                p.kill()
            except psutil.Error:
                pass
        _wait_gone(descendants)

    def interrupt(self, hard: bool = False) -> None:
        """Ask the child and its process group to stop (SIGTERM; Ctrl-Break on Windows); `hard` ends them at once."""
        if self.proc.poll() is not None:
            return
        if hard:
            self.kill()
        elif os.name == "posix":
            try:
                os.killpg(self.pid, signal.SIGTERM)  # the whole group: accelerate and its ranks
            except ProcessLookupError:
                pass
        else:
            self.proc.send_signal(signal.CTRL_BREAK_EVENT)  # reaches every process of the child's console group

    def _end_group(self) -> None:
        """Kill what is left in the child's process group (its id is the child's pid: it leads its own session), and
        wait until it is gone: a caller that is told the child has ended may count on its tree being ended too."""
        if os.name == "posix":
            try:
                os.killpg(self.pid, 0)
            except (ProcessLookupError, PermissionError):
                return  # nothing is left in it: the usual case, found without looking at every process
            members = []
            for p in psutil.process_iter():
                try:
                    if os.getpgid(p.pid) == self.pid:
                        members.append(p)
                except OSError:  # gone meanwhile
                    pass
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            _wait_gone(members)
        elif self.proc.poll() is None:
            kill_tree(self.pid)  # Windows: only the live tree can be found (a job object would hold the rest)

    # ---- the pump ------------------------------------------------------------------------------------------------

    def _pump(self) -> None:
        try:
            try:
                if os.name == "posix":
                    self._read_until_exit()
                else:
                    self._read_with_threads()
            except BaseException as exc:  # noqa: BLE001 - a callback failed: end the child, `wait` raises it
                self._error = exc
                self.kill()
            self.proc.wait()
            self._end_group()  # the child's exit is the end: what it left running goes too
            # (stdin is left to give_input's writer: closing it here would wait for a write that a process holding
            # the pipe's other end may never let finish)
            for stream in ((self.proc.stdin if self._writer is None else None), *(stream for stream, _ in self._streams)):
                try:
                    if stream is not None:
                        stream.close()
                except (OSError, ValueError):  # stdin: a writer thread still at it, or a pipe the child broke
                    pass
            if self._on_end is not None:
                self._on_end()
        finally:
            self._ended.set()

    def _read_until_exit(self) -> None:
        """POSIX: read every pipe as data comes, until each is at its end or the child has exited and what it wrote
        has been read (a process that outlived the kill, holding a pipe, does not hold this)."""
        selector = selectors.DefaultSelector()
        for stream, feed in self._streams:
            selector.register(stream.fileno(), selectors.EVENT_READ, feed)
        exited, after_exit, looked, holders_ended = False, 0, 0.0, False
        try:
            while selector.get_map():
                if not exited and time.monotonic() - looked >= _POLL_S:
                    looked = time.monotonic()
                    if self.proc.poll() is not None:
                        self._end_group()
                        exited = True
                ready = selector.select(0 if exited else _POLL_S)
                if exited and (not ready or after_exit > _DRAIN_LIMIT):
                    # All it wrote is read; a pipe still open is held by a process that left its group.
                    if sys.platform.startswith("linux") and not holders_ended:
                        holders_ended = True
                        if _end_pipe_holders([key.fd for key in selector.get_map().values()]):
                            continue  # then read what they wrote before they ended, up to the pipes' end
                    break
                for key, _ in ready:
                    data = os.read(key.fd, _CHUNK)
                    after_exit += len(data) if exited else 0
                    if data:
                        key.data.feed(data)
                    else:
                        selector.unregister(key.fd)
        finally:
            selector.close()
            for _, feed in self._streams:
                feed.close()

    def _read_with_threads(self) -> None:
        """Windows (no select on pipes): a blocking reader per pipe until the child has exited, then a bounded drain."""
        def read(stream, feed):
            while data := os.read(stream.fileno(), _CHUNK):
                feed.feed(data)
        readers = [threading.Thread(target=read, args=pair, daemon=True) for pair in self._streams]
        for reader in readers:
            reader.start()
        self.proc.wait()
        for reader in readers:
            reader.join(10)
        for _, feed in self._streams:
            feed.close()


@dataclass
class Ran:
    """What `run` gave: exit code, output, and whether its time limit ended it."""
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool


def run(argv: Sequence, timeout_s: float | None = None, *, input: str | None = None, env: dict | None = None,
        cwd: str | None = None, wrap: Sequence[str] = ()) -> Ran:
    """Run `argv` to its end (or its time limit) with `input` on stdin; collects stdout and stderr. Raises OSError
    when it cannot start (no such program). `wrap`: as `Child`'s."""
    out: list[str] = []
    err: list[str] = []
    child = Child(argv, stdin=PIPE if input is not None else DEVNULL, stdout=out.append, stderr=err.append, env=env,
                  cwd=cwd, wrap=wrap)
    if input is not None:
        child.give_input(input)
    code = child.wait(timeout_s)
    return Ran(code, "\n".join(out), "\n".join(err), child.stopped is not None)


@dataclass
class ChildAnswer:
    """What a `json_child` run gave: its last stdout line as JSON (None when there was none), or why not."""
    answer: dict | None = None
    returncode: int | None = None
    timed_out: bool = False
    stderr_tail: list[str] = field(default_factory=list)

    def last_error_line(self) -> str:
        return (self.stderr_tail or ["no output"])[-1]


def json_child(module: str, request: dict | None, timeout_s: float, env: dict | None = None,
               wrap: Sequence[str] = ()) -> ChildAnswer:
    """Run `python -m MODULE` with `request` as JSON on stdin; its answer is its last stdout line, as JSON.

    The helper modules print anything else (the user's prints, warnings) before that line or on stderr. A
    child that outlives `timeout_s` is killed with its tree; never raises for what the child does (the caller words it).
    `wrap`: as `Child`'s (a child that runs the person's code runs in the reward sandbox).
    """
    done = run([sys.executable, "-m", module], timeout_s, input=json.dumps(request) if request is not None else "", env=env,
               wrap=wrap)
    if done.timed_out:
        return ChildAnswer(timed_out=True)
    tail = done.stderr.strip().splitlines()[-40:]
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    return ChildAnswer(answer if isinstance(answer, dict) else None, done.returncode, False, tail)

"""Fresh-looking `rloo-studio` processes without paying for the imports each time: a warm starter for the tests.

Every process that trains or loads a model first imports Unsloth, torch, transformers, PEFT and TRL: about 10 s of
CPU on a small machine, and the suite starts well over a hundred such processes. The starter is one process per
kind of import, shared by the test processes of one pytest-xdist run (`_shared_folder`), that imports the training
stack once, through the product's own `import_training_stack`, and then forks a child for each command it is asked
to run. The child takes the caller's working directory, environment, arguments and stdin/stdout/stderr, becomes
`python -m MODULE ARGS` (or `python -c CODE`), and ends the way that process would: its own pid, its own exit code
or signal, atexit handlers run. What the child runs is the product's unchanged code; only the imports happened before
the fork instead of after it.

It runs a command only when nothing that the libraries read at import time differs from the starter's own
environment (the offline switches, thread counts, cache folders, the temp folder, ...); otherwise the caller gets a
fresh interpreter as before, and so does every caller when RLOO_STUDIO_TESTS_FRESH=1 (or `fresh=True`). The one
exception is the app's own child variables (UTF-8 mode, unbuffered output: CHILD_VARIABLES): a command that differs in
those alone is forked from a starter of its kind started with them. The app served by the tests hands its children
to the starters too (helpers/app.py, `warm_children`), and a warm child forks the reward preview's scoring child from
its own starter (NESTED_MODULES). The fresh path stays covered on purpose: the app launched as
a program (tests/reliability), the chat tests and the restarted-app test start their children as the product does,
and the tests of the exit-code contract and of the import order ask for a fresh process.

Protocol (one Unix socket connection per command): the caller sends one JSON line and its three file descriptors
(SCM_RIGHTS); the starter answers {"pid": N} once forked, then {"returncode": R} when the child has ended.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import gc
import hashlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
FRESH_VARIABLE = "RLOO_STUDIO_TESTS_FRESH"
READY = "-- the warm starter is ready --"

# Variables that torch, transformers, huggingface_hub, datasets, Unsloth or Triton read when they are imported (or
# that decide where their caches are): a command whose environment differs from the starter's in any of them needs a
# fresh interpreter, since the starter's imports already read its own values.
_IMPORT_TIME_PREFIXES = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "DATASETS_", "TOKENIZERS_", "UNSLOTH", "TRITON_",
                         "TORCH", "PYTORCH_", "CUDA_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "XDG_", "PYTHON",
                         "RLOO_STUDIO_CACHE", "BNB_", "ACCELERATE_", "WANDB_", "LD_", "HOME", "TMPDIR", "TEMP", "TMP")


def _import_time_view(env: dict) -> dict:
    # A switch's "true" spellings read alike (huggingface_hub reads 1/ON/YES/TRUE; Gradio writes "True" when it starts).
    return {k: "1" if v.upper() in ("1", "ON", "YES", "TRUE") else v for k, v in env.items()
            if k.startswith(_IMPORT_TIME_PREFIXES)}


# ---------------------------------------------------------------------------------------------- the starter process

def _send(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:  # the caller went away; its child still runs to its end
        pass


def _import(kind: str) -> None:
    if kind in ("unsloth", "transformers"):  # the product's own import, in its order, with the variables it sets
        from rloo_studio.engine import stack

        got = stack.import_training_stack("auto" if kind == "unsloth" else kind)
        if got.backend != kind:
            raise RuntimeError(f"the {kind} starter got the {got.backend} backend: {got.note}")
    else:  # "plain": what a person's own script imports to read an export, without Unsloth
        import importlib

        for name in ("torch", "transformers", "peft"):
            importlib.import_module(name)


def _serve(kind: str, path: str):
    """Import the stack, listen at `path`, fork a child per request. Returns (request, fds, added_env, starter_env) in
    the child."""
    before = dict(os.environ)
    _import(kind)
    # The imports' objects leave the garbage collector's view: a child's collections (its exit's included) would
    # otherwise walk all of them, writing to each object's header, and so copy every page the fork shares with this
    # process. That cost a child ~2 s of CPU on exit alone (0.6 s with the freeze); the objects live as long as their
    # modules either way.
    gc.collect()
    gc.freeze()

    added = {k: v for k, v in os.environ.items() if k not in before}
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(sys.stdin, selectors.EVENT_READ, "parent")
    waiting: dict[int, socket.socket] = {}
    holders: set[socket.socket] = set()  # other test processes using this starter (see _Starter._attach)
    parent_gone = False
    _write_ready(path, {"added": added, "pid": os.getpid()})
    print(READY + json.dumps(added), flush=True)
    while True:
        for key, _ in selector.select(timeout=0.05):
            if key.data in ("parent", "holder"):
                gone = not sys.stdin.readline() if key.data == "parent" else not key.fileobj.recv(1)
                if gone:
                    selector.unregister(key.fileobj)
                    parent_gone = parent_gone or key.data == "parent"
                    holders.discard(key.fileobj)
                # Every test process that used it has ended: so does the starter (its children run on).
                if parent_gone and not holders:
                    os._exit(0)
                continue
            conn, _ = listener.accept()
            conn.setblocking(True)
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            while not message.endswith(b"\n"):
                message += conn.recv(1 << 20)
            request = json.loads(message)
            if request.get("hold"):
                holders.add(conn)
                selector.register(conn, selectors.EVENT_READ, "holder")
                _send(conn, {"held": True})
                continue
            pid = os.fork()
            if pid == 0:
                selector.close()
                listener.close()
                conn.close()
                for other in [*waiting.values(), *holders]:
                    other.close()
                return request, fds, added, before
            for fd in fds:
                os.close(fd)
            _send(conn, {"pid": pid})
            waiting[pid] = conn
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                _send(conn, {"returncode": os.waitstatus_to_exitcode(status)})
                conn.close()


def _write_ready(path: str, info: dict) -> None:
    """Beside the socket: what a test process that did not start this starter needs to use it (written whole)."""
    with open(path + ".part", "w") as fh:
        json.dump(info, fh)
    os.replace(path + ".part", path + ".ready")


def _become(request: dict, fds: list[int], added: dict) -> None:
    """In the forked child: take the caller's session, stdio, directory, environment and arguments."""
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if request["new_session"]:
        os.setsid()
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    env = dict(request["env"])
    for key, value in added.items():  # what import_training_stack sets with setdefault, as it would have here
        env.setdefault(key, value)
    os.environ.clear()
    os.environ.update(env)
    sys.path[0] = os.getcwd() if request.get("module") else ""


# Product modules that start children of their own (`python -m MODULE`) inside the commands the starters run: the
# reward preview's scoring child, started by `rloo-studio preview` and `scan` and by the app's children. A warm child
# forks those from its own starter too, as helpers/app.py does for the app's children, under the same rule (nothing
# read at import time differs). Every child starts through procs.Child, whose `subprocess` is replaced; a command
# of any other module starts as it would.
NESTED_MODULES = ("rloo_studio.rewards.preview",)


def _nest(path: str, starter_env: dict, added: dict) -> None:
    """In a warm child: the NESTED_MODULES' `python -m ...` children are forked from this child's own starter."""
    from rloo_studio import procs

    def popen(argv, **kwargs):
        env = dict(os.environ if kwargs.get("env") is None else kwargs["env"])
        if (isinstance(argv, (list, tuple)) and len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m"
                and argv[2] in NESTED_MODULES and "1" not in (os.environ.get(FRESH_VARIABLE), env.get(FRESH_VARIABLE))
                and set(kwargs) <= {"stdin", "stdout", "stderr", "text", "encoding", "errors", "start_new_session", "env", "cwd"}
                and _import_time_view({**added, **env}) == _import_time_view({**added, **starter_env})):
            popen_kwargs = {k: v for k, v in kwargs.items() if k not in ("env", "cwd")}
            return _fork_at(path, argv[3:], module=argv[2], code=None, cwd=kwargs.get("cwd"), env=env, **popen_kwargs)
        return subprocess.Popen(argv, **kwargs)

    procs.subprocess = subprocess_with(popen)


def subprocess_with(popen):
    """A stand-in for a module's `subprocess`: the real module's names, with `popen` as its Popen."""
    import types

    shim = types.SimpleNamespace(**{name: getattr(subprocess, name) for name in dir(subprocess) if not name.startswith("__")})
    shim.Popen = popen
    return shim


def main(kind: str, path: str) -> None:
    request, fds, added, starter_env = _serve(kind, path)
    _become(request, fds, added)
    # (Not for the "plain" starter, a person's own script without the product; nor for a nested module run itself,
    # which runpy must find not yet imported.)
    if kind != "plain" and request.get("module") not in NESTED_MODULES:
        _nest(path, starter_env, added)
    if request.get("module"):
        import runpy

        sys.argv = [request["module"], *request["args"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    elif request.get("script"):
        import runpy

        sys.argv = [request["script"], *request["args"]]
        sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))  # as `python PATH` puts the script's folder first
        runpy.run_path(request["script"], run_name="__main__")
    else:
        sys.argv = ["-c", *request["args"]]
        exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})


# ------------------------------------------------------------------------------------------------------ the caller

class WarmProcess:
    """The part of subprocess.Popen the tests and the app use, for a child forked by the starter.

    A thread waits for the starter's end message, so that `poll` and `wait` may be called from any thread (the app
    polls its children from its own threads) without taking turns on the connection."""

    def __init__(self, conn: socket.socket, args: list[str], stdin, stdout, stderr):
        self._conn, self._buffer = conn, b""
        self.args, self.stdin, self.stdout, self.stderr = args, stdin, stdout, stderr
        self.returncode: int | None = None
        self._ended = threading.Event()
        self.pid = json.loads(self._line())["pid"]
        threading.Thread(target=self._wait_for_end, name=f"warm-child-{self.pid}", daemon=True).start()

    def _line(self) -> bytes:
        """The starter's next message; b"" when the starter is gone."""
        while b"\n" not in self._buffer:
            try:
                chunk = self._conn.recv(4096)
            except OSError:
                return b""
            if not chunk:
                return b""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _wait_for_end(self) -> None:
        line = self._line()
        # b"": the starter died before the child ended (it never should); count the child as killed.
        self.returncode = json.loads(line)["returncode"] if line else -signal.SIGKILL
        self._conn.close()
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, input: str | None = None, timeout: float | None = None) -> tuple[str | None, str | None]:
        out: dict[str, str] = {}
        readers = [threading.Thread(target=lambda n=name, f=f: out.__setitem__(n, f.read()), daemon=True)
                   for name, f in (("stdout", self.stdout), ("stderr", self.stderr)) if f is not None]
        for reader in readers:
            reader.start()
        if self.stdin is not None:
            if input:
                self.stdin.write(input)
            self.stdin.close()
        for reader in readers:
            reader.join(timeout)
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(timeout)
        for f in (self.stdout, self.stderr):
            if f is not None:
                f.close()
        return out.get("stdout"), out.get("stderr")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for f in (self.stdin, self.stdout, self.stderr):
            if f is not None:
                f.close()
        self.wait()


# The environment the test process started with, before any test changed it: the starters'.
BASE_ENV = dict(os.environ)


def _shared_folder() -> str | None:
    """Where the test processes of one pytest-xdist run share their starters (None outside such a run).

    A starter costs ~12 s of CPU for its imports; the suite's two test processes each used to start their own of
    every kind, for the same import-time environment."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    folder = os.path.join(tempfile.gettempdir(), f"rloo-warm-{run[:16]}")
    os.makedirs(folder, exist_ok=True)
    return folder


class _Starter:
    """One warm starter process of a kind (see STARTERS), started on first use; `extra`: the variables it is started
    with on top of the test process's own (see CHILD_VARIABLES).

    Under pytest-xdist, the run's test processes share it: the first to need it starts it, the others attach (a file
    lock decides which), and it ends when every test process that used it has ended."""

    def __init__(self, kind: str, extra: dict | None = None):
        self.kind, self.env = kind, {**BASE_ENV, **(extra or {})}
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None  # when this process started it
        self._hold: socket.socket | None = None  # when another one did: open as long as this process uses it
        self.pid: int | None = None
        self._path = ""
        self.added: dict = {}  # what the starter's import set in its environment (with setdefault)

    def accepts(self, env: dict) -> bool:
        """Whether a command in `env` would see the same import-time variables as the starter's imports did."""
        self._ensure()
        return _import_time_view({**self.added, **env}) == _import_time_view({**self.added, **self.env})

    def _ensure(self) -> None:
        with self._lock:
            if self.pid is not None:
                if self._proc is not None and self._proc.poll() is not None:
                    raise RuntimeError(f"the tests' {self.kind} starter ended (code {self._proc.returncode}): see {self._log}")
                return
            shared = _shared_folder()
            if shared is None:
                folder = tempfile.mkdtemp(prefix=f"rloo-warm-{self.kind}-")
                self._path = os.path.join(folder, "socket")
                self._start(folder, os.path.join(folder, "starter.log"))
                return
            # One starter per kind and import-time environment (the test processes' own are the same).
            digest = hashlib.sha256(json.dumps([self.kind, sorted(_import_time_view(self.env).items())]).encode())
            self._path = os.path.join(shared, f"{self.kind}-{digest.hexdigest()[:12]}")
            with open(self._path + ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # the other test process waits while this one starts it
                if not self._attach():
                    for leftover in (self._path, self._path + ".ready"):  # a starter that has ended
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(leftover)
                    self._start(shared, self._path + ".log")

    def _attach(self) -> bool:
        """Use the starter another test process started, if it is there and answers."""
        try:
            with open(self._path + ".ready") as fh:
                info = json.load(fh)
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(self._path)
            conn.sendall(b'{"hold": true}\n')
            if b"held" not in conn.recv(4096):
                conn.close()
                return False
        except (OSError, ValueError):
            return False
        # Never closed: the starter counts this process as using it until the process ends.
        self._hold, self.pid, self.added, self._log = conn, info["pid"], info["added"], self._path + ".log"
        return True

    def _start(self, folder: str, log_path: str) -> None:
        self._log = log_path
        code = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); from helpers.warm import main; "
                f"main({self.kind!r}, {self._path!r})")
        with open(self._log, "w") as log:
            self._proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=log, cwd=folder, env=self.env, text=True)
        atexit.register(self._proc.stdin.close)
        # What the libraries print while importing (Unsloth's banner) comes before the line that says ready.
        for line in self._proc.stdout:
            if line.startswith(READY):
                self.added, self.pid = json.loads(line[len(READY):]), self._proc.pid
                return
        raise RuntimeError(f"the tests' {self.kind} starter did not start: see {self._log}")

    def start(self, args, *, module: str | None, code: str | None, cwd, env: dict, script: str | None = None,
              **popen) -> WarmProcess:
        """Like Popen; stdin/stdout/stderr each None (inherit), subprocess.PIPE, DEVNULL, STDOUT or a file / fd."""
        self._ensure()
        return _fork_at(self._path, args, module=module, code=code, cwd=cwd, env=env, script=script, **popen)


def _fork_at(path: str, args, *, module: str | None, code: str | None, cwd, env: dict, script: str | None = None,
             stdin=None, stdout=None, stderr=None, text: bool = False, encoding: str | None = None, errors: str | None = None,
             start_new_session: bool = False) -> WarmProcess:
    """Ask the starter listening at `path` for a child (see `_Starter.start`)."""
    text = text or encoding is not None or errors is not None  # as Popen: either one means text
    ours, theirs, to_close = {}, [], []
    for i, (name, spec) in enumerate((("stdin", stdin), ("stdout", stdout), ("stderr", stderr))):
        if spec == subprocess.STDOUT:
            fd = theirs[1]
        elif spec == subprocess.PIPE:
            r, w = os.pipe()
            mine, fd = (w, r) if i == 0 else (r, w)
            ours[name] = (os.fdopen(mine, "w" if i == 0 else "r", encoding=encoding, errors=errors) if text
                          else os.fdopen(mine, "wb" if i == 0 else "rb"))
            to_close.append(fd)
        elif spec == subprocess.DEVNULL:
            fd = os.open(os.devnull, os.O_RDWR)
            to_close.append(fd)
        elif spec is None:
            fd = i
        else:
            fd = spec if isinstance(spec, int) else spec.fileno()
        theirs.append(fd)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"module": module, "code": code, "script": script, "args": list(map(str, args)),
               "cwd": str(cwd or os.getcwd()), "env": env, "new_session": start_new_session}
    socket.send_fds(conn, [(json.dumps(request) + "\n").encode()], theirs)
    for fd in to_close:
        os.close(fd)
    argv = [sys.executable, script, *map(str, args)] if script else _argv(module, code, args)
    return WarmProcess(conn, argv, ours.get("stdin"), ours.get("stdout"), ours.get("stderr"))


# "unsloth": `train` with model.backend auto (what `import_training_stack("auto")` gives). "transformers": the commands
# that generate with plain transformers + PEFT (eval, export, scan, preview, chat) and `train` with that backend.
# "plain": a person's own script reading an export, without the product (torch, transformers, PEFT).
STARTERS = {kind: _Starter(kind) for kind in ("unsloth", "transformers", "plain")}

# What the app sets for its own children (procs.child_env, and unbuffered output for the training and chat workers):
# they act when the interpreter starts, so a command whose environment differs from the test process's in these
# alone is forked from a starter of its kind started with the same values (one per kind and values, on first use).
CHILD_VARIABLES = ("PYTHONUTF8", "PYTHONIOENCODING", "PYTHONUNBUFFERED")
_VARIANTS: dict[tuple, _Starter] = {}
_VARIANTS_LOCK = threading.Lock()


def _variant(base: _Starter, env: dict) -> "_Starter | None":
    """The starter of `base`'s kind started with `env`'s CHILD_VARIABLES, when those are all that differ."""
    extra = {k: env[k] for k in CHILD_VARIABLES if k in env and env[k] != BASE_ENV.get(k)}
    if not extra or _import_time_view({**base.added, **env}) != _import_time_view({**base.added, **BASE_ENV, **extra}):
        return None
    with _VARIANTS_LOCK:
        return _VARIANTS.setdefault((base.kind, tuple(sorted(extra.items()))), _Starter(base.kind, extra))


def _argv(module: str | None, code: str | None, args) -> list[str]:
    return [sys.executable, *(["-m", module] if module else ["-c", code]), *map(str, args)]


def _starter(env: dict, fresh: bool, stack: str | None) -> "_Starter | None":
    """The starter that may run a command in `env`, or None for a fresh interpreter."""
    if fresh or stack is None or "1" in (os.environ.get(FRESH_VARIABLE), env.get(FRESH_VARIABLE)):
        return None
    starter = STARTERS[stack]
    if not starter.accepts(env):
        starter = _variant(starter, env) or starter
    if not starter.accepts(env):
        if os.environ.get("RLOO_STUDIO_TESTS_WARM_LOG"):
            mine, base = _import_time_view({**starter.added, **env}), _import_time_view({**starter.added, **BASE_ENV})
            differ = {k: (mine.get(k), base.get(k)) for k in set(mine) | set(base) if mine.get(k) != base.get(k)}
            with open(os.environ["RLOO_STUDIO_TESTS_WARM_LOG"], "a") as log:
                log.write(f"fresh: {os.environ.get('PYTEST_CURRENT_TEST')}: {differ}\n")
        return None
    return starter


def popen_module(module: str, args, *, cwd=None, env: dict | None = None, fresh: bool = False, stack: str = "unsloth",
                 **popen) -> "WarmProcess | subprocess.Popen":
    """`python -m MODULE ARGS` started like subprocess.Popen(..., **popen): forked from a warm starter when it can be.

    `popen` may hold stdin, stdout, stderr, text, encoding, errors and start_new_session (what the tests and the
    app's spawn points use)."""
    env = dict(os.environ if env is None else env)
    starter = _starter(env, fresh, stack)
    if starter is None:
        return subprocess.Popen(_argv(module, None, args), cwd=cwd, env=env, **popen)
    unknown = set(popen) - {"stdin", "stdout", "stderr", "text", "encoding", "errors", "start_new_session"}
    if unknown:
        raise TypeError(f"popen_module does not take {sorted(unknown)}")
    return starter.start(args, module=module, code=None, cwd=cwd, env=env, **popen)


def popen_script(script, args, *, cwd=None, env: dict | None = None, fresh: bool = False, stack: str = "transformers",
                 **popen) -> "WarmProcess | subprocess.Popen":
    """`python SCRIPT ARGS` started like subprocess.Popen(..., **popen), forked from a warm starter when it can be (the
    script runs as `__main__`, its folder first on sys.path, as `python SCRIPT` runs it)."""
    env = dict(os.environ if env is None else env)
    starter = _starter(env, fresh, stack)
    if starter is None:
        return subprocess.Popen([sys.executable, str(script), *map(str, args)], cwd=cwd, env=env, **popen)
    return starter.start(args, module=None, code=None, script=str(script), cwd=cwd, env=env, **popen)


def run_python(args, *, module: str | None = None, code: str | None = None, cwd=None, env: dict | None = None,
               input: str | None = None, timeout: float | None = None, check: bool = False, fresh: bool = False,
               stack: str | None = "unsloth") -> subprocess.CompletedProcess:
    """Like subprocess.run([python, -m MODULE | -c CODE, *args], capture_output=True, text=True): forked from the
    `stack` starter when it can be (see the module's docstring), else in a fresh interpreter."""
    env = dict(os.environ if env is None else env)
    argv = _argv(module, code, args)
    starter = _starter(env, fresh, stack)
    if starter is None:
        return subprocess.run(argv, cwd=cwd, env=env, input=input, timeout=timeout, check=check, capture_output=True,
                              text=True)
    proc = starter.start(args, module=module, code=code, cwd=cwd, env=env, text=True,
                         stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(input, timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done

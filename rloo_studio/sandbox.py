"""The reward sandbox: where the system offers one (bubblewrap on Linux), reward code runs inside it.

Reward code is arbitrary Python the person wrote or pasted. Inside the sandbox it has no network, sees the
whole file system read-only except a temporary folder of its own (TMPDIR) and the folders it is given to write (the
run's folder in training), runs in its own PID namespace (it cannot see or signal the app's processes), in a new
session (it cannot type into the terminal), and dies with the process that started it. This module only
decides *whether* and *how*: `prefix()` is the argv prefix a `procs.Child` runs the command under (its `wrap`
option); the time limit, the whole-tree kill and the secret-free environment are `procs.Child`'s, for every
child, sandboxed or not. Where no sandbox exists (macOS, Windows, a Linux without bubblewrap, or one that forbids
unprivileged user namespaces) `status()` says why and what to do, and reward code runs with the person's rights
as an ordinary script would. Standard library and `procs` only.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

# "off" turns the sandbox off for every reward in this process and its children (a system where it misbehaves);
# a single reward that needs the network opts out with `sandbox: false` in its reward entry instead.
SANDBOX_ENV = "RLOO_STUDIO_SANDBOX"
BWRAP_ENV = "RLOO_STUDIO_BWRAP"  # the bubblewrap program to use, when it is not `bwrap` on PATH

# How long the one-time check that bubblewrap really works here may take (it starts `true` in a sandbox: ~10 ms).
PROBE_TIMEOUT_S = 10


@dataclass(frozen=True)
class Status:
    """Whether reward code runs sandboxed here: `program` (bubblewrap's path) or None, and the sentence that says so."""
    program: str | None
    note: str

    @property
    def available(self) -> bool:
        return self.program is not None


_status: Status | None = None


def status() -> Status:
    """This system's sandbox, checked once per process by starting a trivial command inside it."""
    global _status
    if _status is None:
        _status = _probe()
    return _status


def _probe() -> Status:
    if os.environ.get(SANDBOX_ENV, "").lower() in ("0", "off", "false", "no"):
        return Status(None, f"The reward sandbox is turned off ({SANDBOX_ENV}={os.environ[SANDBOX_ENV]}): reward code runs with "
                            "your rights, with network access, like a script you run yourself.")
    if not sys.platform.startswith("linux"):
        return Status(None, "No reward sandbox on this system (bubblewrap exists only on Linux and WSL 2): reward code runs "
                            "with your rights, like a script you run yourself — run only code you would run as a script.")
    program = os.environ.get(BWRAP_ENV) or shutil.which("bwrap")
    if not program:
        return Status(None, "No reward sandbox: bubblewrap is not installed, so reward code runs with your rights and network "
                            "access. Install it (`sudo apt install bubblewrap`, `sudo dnf install bubblewrap`) and restart.")
    from .procs import run

    try:
        done = run([*_argv(program, (), network=False), "true"], PROBE_TIMEOUT_S)
        works = done.returncode == 0 and not done.timed_out
        why = "it did not answer" if done.timed_out else (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    except OSError as exc:
        works, why = False, str(exc)
    if not works:
        return Status(None, f"No reward sandbox: bubblewrap is installed but could not start a sandbox here ({why}) — usually "
                            "unprivileged user namespaces are switched off (e.g. by AppArmor on recent Ubuntu). Reward code "
                            "runs with your rights and network access.")
    return Status(program, "Reward code runs in a sandbox (bubblewrap): no network, files read-only except the run's "
                           "folder and a private temporary folder, its own processes only.")


def _argv(program: str, writable: Sequence[str | Path], network: bool, tmpdir: str | Path | None = None) -> list[str]:
    # The whole file system read-only at its own paths (the reward file, the config's folder and the Python
    # environment stay where the person's paths say), then the few writable folders bound over it.
    argv = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    if not network:
        argv.append("--unshare-net")
    for folder in [*writable, *([tmpdir] if tmpdir else [])]:
        folder = str(Path(folder).resolve())
        if os.path.isdir(folder):
            argv += ["--bind", folder, folder]
    if tmpdir:
        # Python's tempfile and most libraries write temporary files under TMPDIR: a folder of this sandbox's own.
        argv += ["--setenv", "TMPDIR", str(Path(tmpdir).resolve())]
    return argv


def prefix(writable: Sequence[str | Path] = (), network: bool = False, tmpdir: str | Path | None = None) -> list[str]:
    """The argv prefix that runs a command in the sandbox, writing only to `writable` and `tmpdir` (its temporary
    folder, made and removed by the caller); [] where no sandbox is available (`status()` says why).
    `network=True` keeps the network (a reward that calls a server)."""
    found = status()
    return _argv(found.program, writable, network, tmpdir) if found.program else []


def limit_memory(gib: float | None) -> None:
    """Cap this process's data memory at `gib` GiB (Linux: RLIMIT_DATA counts heap and anonymous maps; elsewhere
    nothing holds, and the time limit still applies). Called by a sandboxed child before any reward code runs."""
    if gib and sys.platform.startswith("linux"):
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        wanted = int(gib * 2**30) if hard == resource.RLIM_INFINITY else min(int(gib * 2**30), hard)
        try:
            resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))
        except (ValueError, OSError):
            pass


@dataclass
class Box:
    """How one child runs: `prefix` for `procs.Child`'s `wrap`, a temporary folder of its own removed by `close`, and
    `kind` (which sandbox: None for none, else whether it has the network) to tell whether a waiting child fits."""
    prefix: list[str]
    kind: tuple | None
    tmpdir: str | None = None

    def close(self) -> None:
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)


def kind(network: bool = False, use: bool = True) -> tuple | None:
    """The `Box.kind` that `box(…, network, use)` gives on this system."""
    return ("sandbox", network) if use and status().available else None


def box(writable: Sequence[str | Path] = (), network: bool = False, use: bool = True) -> Box:
    """A sandbox for one child (`use=False`, or none on this system: the child runs as it is)."""
    if kind(network, use) is None:
        return Box([], None)
    import tempfile

    tmpdir = tempfile.mkdtemp(prefix="rloo-sandbox-")
    return Box(_argv(status().program, writable, network, tmpdir), ("sandbox", network), tmpdir)

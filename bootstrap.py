"""Prepare the Python environment RLOO Studio runs in: standard library only, safe to run every time.

`ensure_environment()` uses the virtualenv you are already in, or creates `.venv/` next to this
file, installs torch for this machine and then the package, and re-executes the calling script
inside that environment. A stamp file records what was installed; when nothing changed (same
pyproject.toml, extras and torch choice) the whole step takes well under a second.
It does not start the app or the tests; launch.py and run_tests.py do.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV_DIR = ROOT / ".venv"
STAMP_NAME = ".rloo-studio-installed"
REEXEC_FLAG = "RLOO_STUDIO_BOOTSTRAPPED"

# torch and torchvision must come from the same release (Unsloth checks torchvision on import).
# 2.14.1/0.29.1 is the newest pair Unsloth 2026.10 accepts (torch<2.15); see README "Installing".
TORCH_PACKAGES = ["torch==2.14.1", "torchvision==0.29.1"]


def _say(message: str) -> None:
    print(f"[setup] {message}", flush=True)


def has_nvidia_gpu() -> bool:
    """True when an NVIDIA driver answers; checked without importing torch (it may not be installed yet)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def torch_install_args() -> tuple[list[str], str]:
    """pip arguments for torch on this machine, and a one-line description for the log."""
    index = os.environ.get("RLOO_TORCH_INDEX_URL")
    args = list(TORCH_PACKAGES) + (["--index-url", index] if index else [])
    if has_nvidia_gpu():
        what = "CUDA build (NVIDIA GPU found)"
    elif platform.system() == "Darwin":
        what = "macOS build (CPU / Apple GPU)"
    else:
        what = "CPU run of the standard build (no NVIDIA GPU found)"
    if index:
        what += f" from {index}"
    return args, what


def in_virtualenv() -> bool:
    return sys.prefix != getattr(sys, "base_prefix", sys.prefix) or bool(os.environ.get("CONDA_PREFIX"))


def venv_python(venv_dir: Path) -> Path:
    return venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _fingerprint(extras: str, torch_args: list[str]) -> str:
    digest = hashlib.sha256()
    digest.update((ROOT / "pyproject.toml").read_bytes())
    digest.update(f"{extras}|{' '.join(torch_args)}|{sys.version_info[:2]}".encode())
    return digest.hexdigest()


def _pip(python: Path | str, *args: str) -> None:
    cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", *args]
    _say(" ".join(cmd[1:]))
    result = subprocess.run(cmd)
    if result.returncode != 0:
        sys.exit(
            f"[setup] error: `pip install {' '.join(args)}` failed (exit {result.returncode}).\n"
            "[setup] Why: a package could not be downloaded or built (see pip's message above).\n"
            "[setup] What to do: check the network connection to the package index and the free disk space "
            "(a full install takes ~7 GB), then run the same command again; it resumes where it stopped."
        )


def install(python: Path | str, extras: str, stamp: Path) -> None:
    torch_args, torch_what = torch_install_args()
    fingerprint = _fingerprint(extras, torch_args)
    if stamp.is_file() and stamp.read_text().strip() == fingerprint:
        return
    _say(f"installing RLOO Studio into {Path(python).parent.parent} (first run: several minutes, ~7 GB)")
    _say(f"torch: {torch_what}")
    _pip(python, "--upgrade", "pip")
    _pip(python, *torch_args)
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    _pip(python, "-e", target)
    stamp.write_text(fingerprint + "\n")
    _say("environment ready")


def stamp_name(extras: str) -> str:
    """One stamp per set of extras, so alternating launch.py and run_tests.py reinstalls nothing."""
    return STAMP_NAME + (f"-{extras}" if extras else "")


def ensure_environment(extras: str = "") -> None:
    """Make sure we run inside an environment with RLOO Studio installed; may re-execute this script."""
    if in_virtualenv():
        install(sys.executable, extras, Path(sys.prefix) / stamp_name(extras))
        return
    if os.environ.get(REEXEC_FLAG):
        sys.exit(f"[setup] error: re-started inside {VENV_DIR} but Python still reports no virtualenv; "
                 f"delete {VENV_DIR} and run again")
    python = venv_python(VENV_DIR)
    if not python.exists():
        if sys.version_info < (3, 10):
            sys.exit(f"[setup] error: Python {platform.python_version()} is too old; RLOO Studio needs Python 3.10 to 3.13")
        _say(f"creating a virtual environment in {VENV_DIR}")
        venv.EnvBuilder(with_pip=True).create(VENV_DIR)
    install(python, extras, VENV_DIR / stamp_name(extras))
    env = dict(os.environ, **{REEXEC_FLAG: "1"})
    script = os.path.abspath(sys.argv[0])
    os.execve(str(python), [str(python), script, *sys.argv[1:]], env)

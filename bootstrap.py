"""Prepare the Python environment RLOO Studio runs in: standard library only, safe to run every time.

`ensure_environment()` uses the virtualenv you are already in, or creates `.venv/` next to this
file, installs torch for this machine and then the package, and re-executes the calling script
inside that environment. Which torch build, from which index, is an *install plan* made from
what the machine has (`nvidia-smi`, `rocm-smi`, the OS), printed before installing and on its
own with `--print-install-plan`; docs/gpu.md explains the rules. A stamp file records what was
installed and the plan; when nothing changed (same pyproject.toml, extras, machine and override)
the whole step takes well under a second, and a changed plan re-installs torch.
It does not start the app or the tests; launch.py and run_tests.py do.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import urllib.request
import venv
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent
VENV_DIR = ROOT / ".venv"
STAMP_NAME = ".rloo-studio-installed"
REEXEC_FLAG = "RLOO_STUDIO_BOOTSTRAPPED"

# torch and torchvision must come from the same release (Unsloth checks torchvision on import).
# 2.14.1/0.29.1 is the newest pair Unsloth 2026.10 accepts (torch<2.15); see README "Installing".
TORCH_VERSION, TORCHVISION_VERSION = "2.14.1", "0.29.1"
TORCH_PACKAGES = [f"torch=={TORCH_VERSION}", f"torchvision=={TORCHVISION_VERSION}"]
TORCH_INDEX_ENV = "RLOO_TORCH_INDEX_URL"  # an explicit index always wins over the plan (also: --torch-index URL)
PYTORCH_INDEX = "https://download.pytorch.org/whl"
INDEX_PROBE_TIMEOUT_S = 5.0  # how long to wait for PyTorch's index before using the default one instead
SMI_TIMEOUT_S = 20

# Which CUDA builds PyTorch publishes for torch 2.14 and the NVIDIA driver each needs.
# - Builds: PyTorch's RELEASE.md "Release Compatibility Matrix", row 2.14: CUDA 12.6, 13.0 and 13.2
#   (github.com/pytorch/pytorch/pull/194367; RFC github.com/pytorch/pytorch/issues/190355). There is
#   no 12.8 build since 2.12 (github.com/googlecolab/colabtools/issues/5982). The default index's
#   2.14.1 wheel depends on cuda-toolkit 13.0.3, i.e. it is the 13.0 build (the RFC had proposed 13.2
#   for PyPI; the published wheel's metadata is what counts).
# - Drivers: NVIDIA's CUDA Compatibility guide, "Minor Version Compatibility" table
#   (docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html): CUDA 13.x needs a
#   driver >= 580, CUDA 12.x >= 525 (same numbers on Linux and Windows). Under minor-version
#   compatibility PTX code cannot be JIT-compiled; the 13.2 build ships Blackwell (sm_120) as PTX, so
#   we ask for 13.2's own toolkit driver, 595.58 (the driver in CUDA 13.2's Linux runfile,
#   github.com/pytorch/pytorch/pull/196351), before choosing it; below that the 13.0 build is used.
#   Not confirmed for 2.14: the Windows numbering of 13.2's own driver (we use the same 595.58).
# - Architectures: CUDA 13.x builds start at Turing (compute 7.5); only the 12.6 build still has
#   Maxwell/Pascal/Volta (RFC #190355, table "Linux x86_64 and Windows Architecture Support").
CUDA_BUILDS = (  # newest first: (index tag, CUDA version, minimum driver, lowest compute capability)
    ("cu132", "13.2", (595, 58), (7, 5)),
    ("cu130", "13.0", (580,), (7, 5)),
    ("cu126", "12.6", (525,), (5, 0)),
)
# The opt-in fast-generation environment (vLLM samples the completions on the GPU): a second virtualenv, because the vLLM
# releases TRL 1.15 accepts (0.21-0.31) pin an older torch than ours. Facts read from the package metadata:
# - vllm 0.31.0 requires torch==2.13.0, torchvision==0.28.0, transformers>=5.10.4,<5.18 (5.17.0, ours, fits);
#   its wheel is cp38-abi3 manylinux_2_28 x86_64, built against the default index's torch.
# - The default index's torch 2.13.0 Linux wheel depends on cuda-toolkit 13.0.3: the CUDA 13.0 build, so a driver
#   >= 580 and compute capability >= 7.5 (see CUDA_BUILDS); PyTorch's own indexes are not used for it, since vLLM's
#   compiled kernels must match the torch build they were built against.
# - These pins with Unsloth 2026.10.9, TRL 1.15.0, transformers 5.17.0 and the rest of pyproject.toml resolve together
#   for Linux x86_64, Python 3.11 (237 packages; benchmarks/fast_env_resolve.py re-checks it). Not yet run on a GPU.
FAST_VENV_DIR = ROOT / ".venv-fast"  # rloo_studio/paths.py FAST_VENV_DIR: the app starts a run's worker from it
FAST_TORCH_VERSION, FAST_TORCHVISION_VERSION, FAST_VLLM_VERSION = "2.13.0", "0.28.0", "0.31.0"
FAST_PACKAGES = [f"torch=={FAST_TORCH_VERSION}", f"torchvision=={FAST_TORCHVISION_VERSION}", f"vllm=={FAST_VLLM_VERSION}"]
FAST_MIN_DRIVER, FAST_MIN_COMPUTE = (580,), (7, 5)
FAST_FLAG = "--setup-fast-generation"

# AMD: the 2.14 row lists "ROCm 7.14", which we could not match to a published index folder; the
# nearest documented release (2.12 and 2.13 rows) is ROCm 7.2, Linux only (PyTorch publishes no ROCm
# wheels for Windows). Unsloth's own AMD route is a ROCm Docker image (unsloth.ai docs, "AMD").
ROCM_TAG = "rocm7.2"
DRIVER_UPDATE_HELP = {
    "Linux": "update the NVIDIA driver (Ubuntu: `sudo ubuntu-drivers install`, then reboot; "
             "other systems: your distribution's driver package or https://www.nvidia.com/Download/index.aspx)",
    "WSL": "update the NVIDIA driver on Windows (not inside WSL): https://www.nvidia.com/Download/index.aspx "
           "or the NVIDIA app, then run `wsl --shutdown` and start WSL again",
    "Windows": "update the NVIDIA driver: https://www.nvidia.com/Download/index.aspx or the NVIDIA app, then reboot",
}


def _say(message: str) -> None:
    print(f"[setup] {message}", flush=True)


@dataclass
class NvidiaGpu:
    name: str
    driver: str          # as nvidia-smi prints it, e.g. "560.35.03"
    memory: str          # e.g. "24564 MiB"
    compute: str | None = None  # e.g. "8.9"; None when this driver's nvidia-smi cannot say


@dataclass
class Machine:
    """What the plan is made from: found without importing torch (it may not be installed yet)."""
    system: str                      # "Linux", "WSL", "Windows", "macOS"
    arch: str                        # platform.machine(), e.g. "x86_64", "arm64"
    nvidia: list[NvidiaGpu] = field(default_factory=list)
    nvidia_error: str | None = None  # nvidia-smi exists but failed: its message
    amd: list[str] = field(default_factory=list)
    rocm_version: str | None = None


@dataclass
class InstallPlan:
    machine: Machine
    build: str            # "cu130", "cpu", "rocm7.2", "default", "override"
    index: str | None     # None: the default index (pip's own configuration)
    why: str
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # set: setup must stop (what, why, what to do)

    def pip_args(self) -> list[str]:
        return list(TORCH_PACKAGES) + (["--index-url", self.index] if self.index else [])

    def key(self) -> str:
        """What the stamp records: a different key re-installs torch."""
        return f"torch {TORCH_VERSION} {self.build} {self.index or 'default index'}"

    def describe(self) -> str:
        m = self.machine
        lines = [f"Install plan for torch {TORCH_VERSION} (torchvision {TORCHVISION_VERSION})",
                 f"  system:  {m.system} ({m.arch}), Python {platform.python_version()}"]
        for i, g in enumerate(m.nvidia):
            compute = f", compute {g.compute}" if g.compute else ""
            lines.append(f"  GPU {i}:   {g.name}, {g.memory}, NVIDIA driver {g.driver}{compute}")
        if m.nvidia_error:
            lines.append(f"  nvidia-smi failed: {m.nvidia_error}")
        for i, name in enumerate(m.amd):
            lines.append(f"  AMD GPU {i}: {name}" + (f" (ROCm {m.rocm_version})" if m.rocm_version else ""))
        if not m.nvidia and not m.amd and not m.nvidia_error:
            lines.append("  GPU:     none found (no nvidia-smi, rocm-smi or /opt/rocm; Apple silicon is reported as such)")
        if self.error:
            lines.append(f"  cannot install: {self.error}")
        else:
            lines.append(f"  build:   {self.build}")
            lines.append(f"  index:   {self.index or 'the default package index (pip configuration, normally PyPI)'}")
            lines.append(f"  why:     {self.why}")
            lines.append(f"  command: pip install {' '.join(self.pip_args())}")
        lines += [f"  note:    {n}" for n in self.notes]
        return "\n".join(lines)


def _run(cmd: list[str]) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=SMI_TIMEOUT_S,
                              encoding="utf-8", errors="replace")
    except (OSError, subprocess.SubprocessError):
        return None


def _which_nvidia_smi(system: str) -> str | None:
    found = shutil.which("nvidia-smi")
    if not found and system == "WSL" and Path("/usr/lib/wsl/lib/nvidia-smi").is_file():
        found = "/usr/lib/wsl/lib/nvidia-smi"  # WSL's driver files, not always on PATH
    return found


def query_nvidia(system: str) -> tuple[list[NvidiaGpu], str | None]:
    """GPUs from `nvidia-smi` (name, driver, memory, compute capability), or why it failed."""
    smi = _which_nvidia_smi(system)
    if not smi:
        return [], None
    result = _run([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    if result is None or result.returncode != 0:
        output = ((result.stdout + result.stderr).strip() if result else "") or "no output"
        return [], f"{output.splitlines()[0]} (exit {result.returncode if result else 'n/a'})"
    gpus = []
    for line in result.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            gpus.append(NvidiaGpu(name=", ".join(parts[:-2]), driver=parts[-2], memory=parts[-1]))
    caps = _run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"])  # older drivers do not know it
    if caps is not None and caps.returncode == 0:
        values = [c.strip() for c in caps.stdout.strip().splitlines()]
        if len(values) == len(gpus) and all(re.fullmatch(r"\d+\.\d+", v) for v in values):
            for gpu, cap in zip(gpus, values):
                gpu.compute = cap
    return gpus, None


def query_amd() -> tuple[list[str], str | None]:
    """AMD GPUs from `rocm-smi --showproductname` (its "Card Series" lines), and the ROCm version."""
    names: list[str] = []
    rocm = Path(os.environ.get("ROCM_PATH", "/opt/rocm"))
    version = None
    if (rocm / ".info" / "version").is_file():
        version = (rocm / ".info" / "version").read_text(encoding="utf-8", errors="replace").strip() or None
    smi = shutil.which("rocm-smi") or (str(rocm / "bin" / "rocm-smi") if (rocm / "bin" / "rocm-smi").is_file() else None)
    if smi:
        result = _run([smi, "--showproductname"])
        if result is not None and result.returncode == 0:
            for line in result.stdout.splitlines():
                if "Card Series" in line or "Card series" in line:
                    names.append(line.split(":", 2)[-1].strip())
        if not names:
            names.append("an AMD GPU (rocm-smi is installed but named no card)")
    elif rocm.is_dir():
        names.append(f"an AMD GPU, presumably ({rocm} exists, rocm-smi not found)")
    return names, version


def detect_system() -> tuple[str, str]:
    """("Linux" | "WSL" | "Windows" | "macOS" | other, machine)."""
    system = platform.system()
    if system == "Linux" and ("microsoft" in platform.release().lower() or os.environ.get("WSL_DISTRO_NAME")):
        system = "WSL"
    return {"Darwin": "macOS"}.get(system, system), platform.machine()


def detect_machine() -> Machine:
    system, arch = detect_system()
    machine = Machine(system=system, arch=arch)
    if system != "macOS":
        machine.nvidia, machine.nvidia_error = query_nvidia(system)
    if system in ("Linux", "WSL") and not machine.nvidia:
        machine.amd, machine.rocm_version = query_amd()
    return machine


def index_reachable(url: str, timeout_s: float = INDEX_PROBE_TIMEOUT_S) -> bool:
    """True when `url` answers within `timeout_s` (a thread bounds it: name lookups ignore socket timeouts)."""
    answer: list[bool] = []

    def probe() -> None:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout_s) as response:
                answer.append(response.status < 400)
        except Exception:  # noqa: BLE001 - any failure means "not usable from here"
            answer.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout_s + 0.5)
    return bool(answer and answer[0])


def _driver_version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3]) or (0,)


def _cuda_build_for(gpus: list[NvidiaGpu]) -> tuple[tuple | None, str]:
    """The newest CUDA build every GPU and the driver support, or None and why not."""
    driver = min(_driver_version(g.driver) for g in gpus)
    caps = [tuple(int(x) for x in g.compute.split(".")) for g in gpus if g.compute]
    oldest = min(caps) if caps else None
    for build in CUDA_BUILDS:
        tag, cuda, min_driver, min_cap = build
        if driver >= min_driver and (oldest is None or oldest >= min_cap):
            return build, ""
    tag, cuda, min_driver, min_cap = CUDA_BUILDS[-1]
    if oldest is not None and oldest < min_cap:
        return None, (f"its oldest CUDA build ({cuda}) supports compute capability {min_cap[0]}.{min_cap[1]} and newer, "
                      f"this GPU has {oldest[0]}.{oldest[1]}")
    return None, f"its oldest CUDA build ({cuda}) needs an NVIDIA driver >= {min_driver[0]}"


def plan_install(machine: Machine, override: str | None = None,
                 reachable: Callable[[str], bool] = index_reachable) -> InstallPlan:
    """Choose the torch build and index for `machine` (the rules are in docs/gpu.md)."""
    if override:
        return InstallPlan(machine, "override", override,
                           f"you chose this index ({TORCH_INDEX_ENV} or --torch-index); it wins over the plan")
    system = machine.system
    if machine.nvidia:
        build, why_not = _cuda_build_for(machine.nvidia)
        driver = min((g.driver for g in machine.nvidia), key=_driver_version)
        if build is None:
            return InstallPlan(machine, "none", None, "", error=(
                f"the NVIDIA driver {driver} is too old for torch {TORCH_VERSION}: {why_not}. "
                f"What to do: {DRIVER_UPDATE_HELP.get(system, DRIVER_UPDATE_HELP['Linux'])}, then run this again. "
                f"To install the CPU build instead, set {TORCH_INDEX_ENV}={PYTORCH_INDEX}/cpu"))
        tag, cuda, min_driver, min_cap = build
        caps = [tuple(int(x) for x in g.compute.split(".")) for g in machine.nvidia if g.compute]
        why = (f"CUDA {cuda} is the newest build torch {TORCH_VERSION} has for driver {driver} "
               f"(it needs >= {'.'.join(map(str, min_driver))})")
        if caps and min(caps) < CUDA_BUILDS[0][3]:
            why += f"; compute capability {min(caps)[0]}.{min(caps)[1]} is only in the 12.6 build"
        plan = InstallPlan(machine, tag, f"{PYTORCH_INDEX}/{tag}", why)
        if system == "Windows":
            plan.notes.append("Windows: PyTorch's CUDA index is used because the default index only has CPU builds "
                              "for Windows. Unsloth's fast kernels also need Triton (`pip install triton-windows`), which "
                              "is not installed automatically; without it training uses transformers + PEFT (slower, "
                              "same results). 4-bit loading (bitsandbytes) and data-parallel training (NCCL) are not "
                              "supported on Windows: use WSL for those.")
        if system == "WSL":
            plan.notes.append("WSL: the GPU driver is the Windows one; do not install a Linux NVIDIA driver inside WSL.")
        return plan
    if machine.nvidia_error:
        return InstallPlan(machine, "none", None, "", error=(
            f"nvidia-smi is installed but failed ({machine.nvidia_error}), so the NVIDIA driver is not working. "
            f"Why it matters: without a working driver torch cannot use the GPU, and training would silently run "
            f"on the CPU. What to do: reinstall or update the driver ({DRIVER_UPDATE_HELP.get(system, DRIVER_UPDATE_HELP['Linux'])}) "
            f"and reboot; or, to train on the CPU on purpose, set {TORCH_INDEX_ENV}={PYTORCH_INDEX}/cpu"))
    if machine.amd and system in ("Linux", "WSL"):
        plan = InstallPlan(machine, ROCM_TAG, f"{PYTORCH_INDEX}/{ROCM_TAG}",
                           f"an AMD GPU was found: PyTorch's ROCm build (ROCm {ROCM_TAG[4:]}) runs on it")
        plan.notes.append("AMD GPUs are not checked with RLOO Studio. Unsloth may not import with ROCm; training then "
                          "uses transformers + PEFT. 4-bit loading needs a ROCm build of bitsandbytes.")
        return plan
    if system == "macOS":
        note = ("Apple silicon: training runs on the CPU (Unsloth has no Apple GPU path); the app and the demo work"
                if machine.arch == "arm64" else
                "Intel Mac: PyTorch stopped publishing Intel-Mac wheels after 2.2 (not re-checked for 2.14): "
                "pip may find no torch; use a Linux or Windows machine, or an Apple-silicon Mac")
        plan = InstallPlan(machine, "default", None, "macOS wheels from the default index are the CPU (and Apple GPU) build")
        plan.notes.append(note)
        return plan
    cpu_index = f"{PYTORCH_INDEX}/cpu"
    amd_note = ["An AMD GPU was found, but PyTorch publishes no ROCm build for Windows: the CPU build is used."] \
        if machine.amd else []
    if reachable(cpu_index):
        return InstallPlan(machine, "cpu", cpu_index, "no NVIDIA or AMD GPU found: the CPU build (about 200 MB instead "
                           "of ~7 GB of CUDA libraries)", notes=amd_note)
    return InstallPlan(machine, "default", None,
                       f"no GPU found, and PyTorch's CPU index ({cpu_index}) did not answer within "
                       f"{INDEX_PROBE_TIMEOUT_S:.0f} s: using the default index's build instead (it runs on the CPU; on "
                       "Linux it also downloads ~7 GB of CUDA libraries it will not use)", notes=amd_note)


@dataclass
class FastPlan:
    """Whether the fast-generation environment can be made on this machine, and why (or why not)."""
    machine: Machine
    ok: bool
    why: str

    def describe(self) -> str:
        head = f"Fast generation (vLLM {FAST_VLLM_VERSION} with torch {FAST_TORCH_VERSION}, in {FAST_VENV_DIR.name}/; not yet measured on a GPU)"
        if not self.ok:
            return f"{head}\n  not offered: {self.why}"
        return (f"{head}\n  offered:  {self.why}\n  set up:   python launch.py {FAST_FLAG}"
                f"\n  command:  pip install {' '.join(FAST_PACKAGES)} (default index), then this project")


def plan_fast_generation(machine: Machine) -> FastPlan:
    """Whether vLLM's environment fits `machine`: Linux or WSL2 on x86_64, an NVIDIA driver and GPU its torch build runs on."""
    if machine.system not in ("Linux", "WSL"):
        where = {"Windows": "vLLM publishes no wheels for native Windows; under WSL2 it works (run the app there)",
                 "macOS": "vLLM needs an NVIDIA GPU, which Macs do not have"}.get(machine.system, f"{machine.system} is not supported by vLLM")
        return FastPlan(machine, False, where)
    if machine.arch not in ("x86_64", "AMD64"):
        return FastPlan(machine, False, f"only vLLM's x86_64 Linux wheel was checked, this machine is {machine.arch}")
    if not machine.nvidia:
        return FastPlan(machine, False, "no NVIDIA GPU found (vLLM's fast generation needs one; training works without it)")
    driver = min((g.driver for g in machine.nvidia), key=_driver_version)
    if _driver_version(driver) < FAST_MIN_DRIVER:
        return FastPlan(machine, False, f"the NVIDIA driver {driver} is older than {FAST_MIN_DRIVER[0]}, which torch "
                        f"{FAST_TORCH_VERSION}'s CUDA 13.0 build needs: "
                        f"{DRIVER_UPDATE_HELP.get(machine.system, DRIVER_UPDATE_HELP['Linux'])}")
    caps = [tuple(int(x) for x in g.compute.split(".")) for g in machine.nvidia if g.compute]
    if caps and min(caps) < FAST_MIN_COMPUTE:
        low = min(caps)
        return FastPlan(machine, False, f"compute capability {low[0]}.{low[1]} is below {FAST_MIN_COMPUTE[0]}.{FAST_MIN_COMPUTE[1]}, "
                        f"the oldest that torch {FAST_TORCH_VERSION}'s CUDA 13.0 build runs")
    return FastPlan(machine, True, f"{machine.system} x86_64 with NVIDIA driver {driver}"
                    + (f" and compute capability {min(caps)[0]}.{min(caps)[1]}" if caps else ""))


def setup_fast_generation(extras: str = "") -> None:
    """Make FAST_VENV_DIR: vLLM and its torch, then this project with the same pins (torch held at vLLM's)."""
    plan = plan_fast_generation(detect_machine())
    print(plan.describe(), flush=True)
    if not plan.ok:
        sys.exit(f"[setup] fast generation is not offered here: {plan.why}. Training works without it.")
    python = install_fast_environment(FAST_VENV_DIR, extras)
    self_check(python)
    _say(f"fast-generation environment ready: runs whose model.fast_generation is auto or on start from {FAST_VENV_DIR}")


def install_fast_environment(folder: Path, extras: str = "") -> Path:
    """Install vLLM, its torch and this project (torch held at vLLM's pin) into the virtualenv `folder`, made if absent;
    its Python. No check of the machine: setup_fast_generation decides where it is offered (and
    benchmarks/fast_env_install.py installs it on any Linux machine, to show the pins install together)."""
    python = venv_python(folder)
    if not python.exists():
        _say(f"creating the fast-generation environment in {folder}")
        venv.EnvBuilder(with_pip=True).create(folder)
    _pip(python, "--upgrade", "pip")
    _pip(python, *FAST_PACKAGES)
    # The project's own torch range (<2.15) admits 2.13.0; the constraint keeps pip from moving it while resolving.
    constraints = folder / "constraints.txt"
    constraints.write_text("\n".join(FAST_PACKAGES) + "\n", encoding="utf-8")
    _pip(python, "-c", str(constraints), "-e", f"{ROOT}[{extras}]" if extras else str(ROOT))
    return python


def current_plan(override: str | None = None) -> InstallPlan:
    return plan_install(detect_machine(), override or os.environ.get(TORCH_INDEX_ENV) or None)


def in_virtualenv() -> bool:
    return sys.prefix != getattr(sys, "base_prefix", sys.prefix) or bool(os.environ.get("CONDA_PREFIX"))


def venv_python(venv_dir: Path) -> Path:
    return venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _fingerprint(extras: str, torch_args: list[str]) -> str:
    digest = hashlib.sha256()
    digest.update((ROOT / "pyproject.toml").read_bytes())
    digest.update(f"{extras}|{' '.join(torch_args)}|{sys.version_info[:2]}".encode())
    return digest.hexdigest()


def read_stamp(stamp: Path) -> dict:
    """{"fingerprint", "plan"}; an older stamp held only the fingerprint."""
    try:
        text = stamp.read_text(encoding="utf-8").strip()
    except OSError:
        return {}
    try:
        data = json.loads(text)
        return data if isinstance(data, dict) else {}
    except ValueError:
        return {"fingerprint": text.splitlines()[0] if text else ""}


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


def self_check(python: Path | str) -> None:
    """After installing: an NVIDIA GPU that torch cannot use stops the setup (never a silent CPU fallback)."""
    result = subprocess.run([str(python), "-m", "rloo_studio.machine.hardware", "--self-check"], capture_output=True,
                            text=True, encoding="utf-8", errors="replace",
                            env={**os.environ, "PYTHONUTF8": "1", "PYTHONWARNINGS": "ignore"})
    if result.returncode == 0:
        _say("self-check: " + (result.stdout.strip().splitlines() or ["ok"])[-1])
        return
    message = (result.stdout.strip() or result.stderr.strip() or "no output")
    sys.exit(f"[setup] error: the self-check found a problem after installing.\n{message}")


def machine_key(machine: Machine) -> str:
    """What about the machine decides the plan: a new GPU or driver makes a new plan."""
    return json.dumps(asdict(machine), sort_keys=True)


def install(python: Path | str, extras: str, stamp: Path) -> None:
    previous = read_stamp(stamp)
    machine = detect_machine()
    override = os.environ.get(TORCH_INDEX_ENV) or None
    # Same machine, same override: the recorded plan still holds, and the index need not be probed again
    # (that probe may wait INDEX_PROBE_TIMEOUT_S; an unchanged start stays well under a second).
    if (previous.get("machine") == machine_key(machine) and previous.get("override") == override
            and previous.get("pip_args") and previous.get("fingerprint") == _fingerprint(extras, previous["pip_args"])):
        return
    plan = plan_install(machine, override)
    if plan.error:
        print(plan.describe(), flush=True)
        sys.exit(f"[setup] error: {plan.error}")
    fingerprint = _fingerprint(extras, plan.pip_args())
    record = {"fingerprint": fingerprint, "plan": plan.key(), "why": plan.why, "pip_args": plan.pip_args(),
              "machine": machine_key(machine), "override": override}
    if previous.get("fingerprint") == fingerprint:  # e.g. a stamp from before plans were recorded
        stamp.write_text(json.dumps(record) + "\n", encoding="utf-8")
        return
    _say(f"installing RLOO Studio into {Path(python).parent.parent} (first run: several minutes, ~7 GB with CUDA)")
    for line in plan.describe().splitlines():
        _say(line)
    _pip(python, "--upgrade", "pip")
    # pip treats torch==2.14.1 as satisfied by any 2.14.1 build (+cu130, +cpu…): a changed plan must force it.
    changed = bool(previous.get("plan")) and previous.get("plan") != plan.key()
    if changed:
        _say(f"the install plan changed (was: {previous.get('plan')}): re-installing torch")
    _pip(python, *(["--force-reinstall"] if changed else []), *plan.pip_args())
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    _pip(python, "-e", target)
    self_check(python)
    stamp.write_text(json.dumps(record) + "\n", encoding="utf-8")
    _say("environment ready")


def stamp_name(extras: str) -> str:
    """One stamp per set of extras, so alternating launch.py and run_tests.py reinstalls nothing."""
    return STAMP_NAME + (f"-{extras}" if extras else "")


def take_setup_flags(argv: list[str]) -> tuple[bool, list[str]]:
    """Remove the setup's own flags from `argv`: (--print-install-plan given, the rest).

    `--torch-index URL` (or `--torch-index=URL`) becomes RLOO_TORCH_INDEX_URL, so it survives the
    re-start inside the virtualenv and wins over the plan."""
    rest, print_plan, i = [], False, 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--print-install-plan":
            print_plan = True
        elif arg == "--torch-index" and i + 1 < len(argv):
            os.environ[TORCH_INDEX_ENV] = argv[i + 1]
            i += 1
        elif arg.startswith("--torch-index="):
            os.environ[TORCH_INDEX_ENV] = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return print_plan, rest


def setup_from_command_line(extras: str = "") -> list[str]:
    """launch.py / run_tests.py: handle the setup flags, then `ensure_environment`; returns the other arguments.

    `--print-install-plan` prints the plan and exits before anything is installed."""
    print_plan, rest = take_setup_flags(sys.argv[1:])
    if print_plan:
        plan = current_plan()
        print(plan.describe(), flush=True)
        print(plan_fast_generation(plan.machine).describe(), flush=True)
        sys.exit(1 if plan.error else 0)
    if FAST_FLAG in rest:
        setup_fast_generation()
        sys.exit(0)
    sys.argv[1:] = rest
    ensure_environment(extras)
    return rest


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
    env = dict(os.environ, **{REEXEC_FLAG: "1", "PYTHONUTF8": "1"})
    script = os.path.abspath(sys.argv[0])
    if os.name == "posix":
        os.execve(str(python), [str(python), script, *sys.argv[1:]], env)
    # Windows has no exec: os.execve there starts a new process and returns at once, so the console
    # would see this one end while the app runs. Run it as a child and pass its exit code on.
    sys.exit(subprocess.call([str(python), script, *sys.argv[1:]], env=env))


if __name__ == "__main__":  # `python bootstrap.py [--torch-index URL]`: print the plan, install nothing
    take_setup_flags(sys.argv[1:])
    _plan = current_plan()
    print(_plan.describe())
    print(plan_fast_generation(_plan.machine).describe())
    sys.exit(1 if _plan.error else 0)

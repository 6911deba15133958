"""What this machine has to train on: GPUs (name, memory, compute capability, bf16) or the CPU.

The probe imports torch, so it runs in a child process (`python -m rloo_studio.machine.hardware`
prints JSON): the app's own process stays light and a broken CUDA driver cannot take it down.
Several GPUs are listed one by one; memory estimates are per device.

The probe is also the self-check (`python -m rloo_studio.machine.hardware --self-check`, run by the setup
after installing, and by the app at start): an NVIDIA GPU that the driver lists but torch cannot
use, or a bf16 that torch claims and the GPU cannot run, is a `problem` — what was found, why,
and the command that fixes it — never a silent fall-back to the CPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field

from ..paths import BOOTSTRAP_SCRIPT
from ..procs import json_child, run

PROBE_TIMEOUT_S = 120  # importing torch on a cold disk can take a minute


@dataclass
class Gpu:
    index: int
    name: str
    total_gb: float
    free_gb: float | None
    capability: str      # e.g. "8.9"
    bf16: bool


@dataclass
class Hardware:
    gpus: list[Gpu] = field(default_factory=list)
    cpu_cores: int = 1
    ram_gb: float | None = None
    torch: str | None = None
    cuda: str | None = None
    error: str | None = None  # why detection failed, if it did
    driver_gpus: list[str] = field(default_factory=list)  # what nvidia-smi lists, e.g. "NVIDIA GeForce RTX 4090, 560.35.03, 24564 MiB"
    problem: str | None = None  # the self-check failed: what, why, and the command that fixes it

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)

    def summary(self) -> str:
        """One readable line per device, for the app and the CLI."""
        ram = f", {self.ram_gb:.1f} GiB RAM" if self.ram_gb else ""  # bytes / 1024**3, as the estimate says it (23.5, not 24)
        if self.problem:
            return f"⛔ {self.problem}\nCPU: {self.cpu_cores} cores{ram}"
        if not self.gpus:
            note = f" (GPU detection failed: {self.error})" if self.error else " — no CUDA GPU found"
            return f"CPU: {self.cpu_cores} cores{ram}{note}. Training runs on the CPU: the bundled demo takes about five minutes."
        lines = []
        for g in self.gpus:
            free = f", {g.free_gb:.1f} GB free" if g.free_gb is not None else ""
            lines.append(f"GPU {g.index}: {g.name} — {g.total_gb:.1f} GB{free}, compute {g.capability}, "
                         f"bf16 {'yes' if g.bf16 else 'no (fp16 is used)'}")
        return "\n".join(lines + [f"CPU: {self.cpu_cores} cores{ram}"])

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Hardware":
        gpus = [Gpu(**g) for g in data.get("gpus", [])]
        return cls(**{**data, "gpus": gpus})


def _ram_gb() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    except (ValueError, OSError, AttributeError):
        return None


def free_ram_gb() -> float | None:
    """The RAM free for a new program now (Linux's MemAvailable: free memory plus caches it can drop), in GiB; None
    where the system does not say. Read at each call: other programs take and give back memory all the time."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024**2  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def nvidia_smi_gpus() -> list[str]:
    """The GPUs the NVIDIA driver lists ("name, driver, memory"), without torch; [] when there is no working driver."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        result = run([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], timeout_s=20)
    except OSError:
        return []
    return [line.strip() for line in result.stdout.splitlines() if line.strip()] if result.returncode == 0 else []


def _install_plan():
    """The setup's install plan for this machine (bootstrap.py, standard library only), or None without it."""
    path = BOOTSTRAP_SCRIPT
    if not path.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location("_rloo_bootstrap", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
        return module.current_plan()
    except Exception:  # noqa: BLE001 - the message below still says what to check
        return None


def gpu_problem(driver_gpus: list[str], torch_version: str | None, torch_cuda: str | None, cuda_available: bool,
                python: str = sys.executable) -> str | None:
    """Why a GPU the driver lists cannot be used by this torch, and the command that fixes it; None when it can."""
    if not driver_gpus or cuda_available:
        return None
    found = f"The NVIDIA driver lists {'; '.join(driver_gpus)}, but torch {torch_version or '(not installed)'} cannot use it"
    if torch_cuda is None:
        why = "this torch is a CPU-only build (it has no CUDA), so training would run on the CPU"
    else:
        why = (f"this torch is built for CUDA {torch_cuda}, which needs a newer NVIDIA driver than the one installed "
               "(or the driver is not loaded)")
    plan = _install_plan()
    if plan is not None and plan.error:
        fix = plan.error
    elif plan is not None and plan.index:
        fix = (f"run `{python} -m pip install --force-reinstall {' '.join(plan.pip_args())}` "
               f"(the {plan.build} build: {plan.why}), then start RLOO Studio again")
    else:
        fix = ("update the NVIDIA driver, or install torch from PyTorch's CUDA index "
               f"(`{python} -m pip install --force-reinstall torch torchvision --index-url https://download.pytorch.org/whl/cu126`)")
    return f"{found}: {why}. What to do: {fix}."


def probe() -> Hardware:
    """Run in the child process: ask torch what is there."""
    hw = Hardware(cpu_cores=os.cpu_count() or 1, ram_gb=_ram_gb(), driver_gpus=nvidia_smi_gpus())
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the app still works on the CPU
        hw.error = f"torch could not be imported ({type(exc).__name__}: {exc})"
        hw.problem = gpu_problem(hw.driver_gpus, None, None, False)
        return hw
    hw.torch, hw.cuda = torch.__version__, torch.version.cuda
    try:
        for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
            props = torch.cuda.get_device_properties(i)
            try:
                free = torch.cuda.mem_get_info(i)[0] / 1024**3
            except Exception:  # noqa: BLE001 - some drivers refuse; total memory is still known
                free = None
            with torch.cuda.device(i):
                # Without `including_emulation=False` torch answers yes on pre-Ampere GPUs too, where bf16 is
                # emulated (slow); bf16 runs natively from compute capability 8.0 (Ampere).
                bf16 = bool(torch.cuda.is_bf16_supported(including_emulation=False))
                if bf16:
                    try:  # claimed: make sure it really runs
                        x = torch.ones(8, 8, device=f"cuda:{i}", dtype=torch.bfloat16)
                        (x @ x).sum().item()
                    except Exception as exc:  # noqa: BLE001
                        hw.problem = (f"GPU {i} ({props.name}) claims bfloat16 support, but a bfloat16 operation failed "
                                      f"({type(exc).__name__}: {exc}). What to do: train in float16 "
                                      "(model.dtype=float16) and update the NVIDIA driver.")
                        bf16 = False
            hw.gpus.append(Gpu(index=i, name=props.name, total_gb=props.total_memory / 1024**3, free_gb=free,
                               capability=f"{props.major}.{props.minor}", bf16=bf16))
    except Exception as exc:  # noqa: BLE001 - a broken driver: say so, carry on with the CPU
        hw.error = f"CUDA is installed but the GPU could not be queried ({type(exc).__name__}: {exc})"
    hw.problem = hw.problem or gpu_problem(hw.driver_gpus, hw.torch, hw.cuda, bool(hw.gpus))
    return hw


def detect(timeout_s: float = PROBE_TIMEOUT_S) -> Hardware:
    """Detect the hardware from a child process; never raises (a failure is described in `error`)."""
    child = json_child("rloo_studio.machine.hardware", None, timeout_s, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if child.timed_out:
        return Hardware(cpu_cores=os.cpu_count() or 1, ram_gb=_ram_gb(), error=f"the probe took over {timeout_s:.0f} s")
    if child.returncode != 0 or child.answer is None:
        return Hardware(cpu_cores=os.cpu_count() or 1, ram_gb=_ram_gb(), error=f"the probe failed: {child.last_error_line()}")
    try:
        return Hardware.from_dict(child.answer)
    except (TypeError, ValueError, KeyError) as exc:
        return Hardware(cpu_cores=os.cpu_count() or 1, ram_gb=_ram_gb(), error=f"{type(exc).__name__}: {exc}")


def main(argv: list[str]) -> int:
    """`--self-check`: print what was found, exit 1 with the problem; otherwise one JSON line (for `detect`)."""
    hw = probe()
    if "--self-check" in argv:
        if hw.problem:
            print(hw.problem, flush=True)
            return 1
        print(hw.summary().splitlines()[0], flush=True)
        return 0
    print(json.dumps(hw.to_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

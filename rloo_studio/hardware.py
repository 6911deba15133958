"""What this machine has to train on: GPUs (name, memory, compute capability, bf16) or the CPU.

The probe imports torch, so it runs in a child process (`python -m rloo_studio.hardware`
prints JSON): the app's own process stays light and a broken CUDA driver cannot take it down.
Several GPUs are listed one by one; memory estimates are per device.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field

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

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)

    def summary(self) -> str:
        """One readable line per device, for the app and the CLI."""
        ram = f", {self.ram_gb:.0f} GB RAM" if self.ram_gb else ""
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


def probe() -> Hardware:
    """Run in the child process: ask torch what is there."""
    hw = Hardware(cpu_cores=os.cpu_count() or 1, ram_gb=_ram_gb())
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the app still works on the CPU
        hw.error = f"torch could not be imported ({type(exc).__name__}: {exc})"
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
                bf16 = bool(torch.cuda.is_bf16_supported())
            hw.gpus.append(Gpu(index=i, name=props.name, total_gb=props.total_memory / 1024**3, free_gb=free,
                               capability=f"{props.major}.{props.minor}", bf16=bf16))
    except Exception as exc:  # noqa: BLE001 - a broken driver: say so, carry on with the CPU
        hw.error = f"CUDA is installed but the GPU could not be queried ({type(exc).__name__}: {exc})"
    return hw


def detect(timeout_s: float = PROBE_TIMEOUT_S) -> Hardware:
    """Detect the hardware from a child process; never raises (a failure is described in `error`)."""
    try:
        result = subprocess.run([sys.executable, "-m", "rloo_studio.hardware"], capture_output=True, text=True,
                                timeout=timeout_s, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if result.returncode == 0:
            return Hardware.from_dict(json.loads(result.stdout.strip().splitlines()[-1]))
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return Hardware(cpu_cores=os.cpu_count() or 1, ram_gb=_ram_gb(), error=f"the probe failed: {tail}")
    except subprocess.TimeoutExpired:
        return Hardware(cpu_cores=os.cpu_count() or 1, ram_gb=_ram_gb(), error=f"the probe took over {timeout_s:.0f} s")
    except (OSError, ValueError, IndexError) as exc:
        return Hardware(cpu_cores=os.cpu_count() or 1, ram_gb=_ram_gb(), error=f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    print(json.dumps(probe().to_dict()))

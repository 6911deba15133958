"""Fast generation on CUDA: whether a run samples its completions with vLLM, and the arguments that make it so.

A run's `model.fast_generation` is `off`, `on` or `auto`. `decide` turns it into a `FastGeneration` (used or not, and
why, in words a person reads in the run's log and status) from what the worker process sees: a CUDA device of compute
capability 7.0 or higher (vLLM's floor), the `vllm` package importable (it lives in the opt-in fast environment that
`python launch.py --setup-fast-generation` makes, because the vLLM releases TRL 1.15 accepts pin an older torch than
ours), and the backend. `auto` uses it where all of that holds and is silent otherwise; `on` refuses to start without
it, naming what is missing.

How the two backends take it:
- Unsloth: vLLM is built with the model at load time (`fast_inference=True`), sharing the base weights; the LoRA is
  handed to vLLM at every generation. Its memory share is the load-time `gpu_memory_utilization` (Unsloth ignores
  RLOOConfig's `vllm_gpu_memory_utilization`). Unsloth switches TRL's `use_vllm` on by itself for every trainer, but
  sets colocate mode and sleep mode only for GRPO, so `trainer_arguments` passes both.
- transformers: TRL's own colocated vLLM (`use_vllm`, `vllm_mode="colocate"`), its share `vllm_gpu_memory_utilization`.
Standby (`UNSLOTH_VLLM_STANDBY=1`, read by `import unsloth`, so `environment` is applied before the stack is imported)
lets vLLM give its memory back while the trainer computes gradients; TRL's sleep mode is its counterpart.

This path has not yet been measured on a GPU: `NOT_MEASURED` is the label the page and the docs put next to it.
It imports neither torch nor vLLM at module level; `probe` does, inside the worker.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

SETTINGS = ("off", "auto", "on")
MIN_COMPUTE = (7, 0)  # vLLM's CUDA kernels start at Volta
# vLLM's share of the GPU's memory (weights shared with the trainer under Unsloth, KV cache, activations). 0.5 is
# Unsloth's own default for fast_inference; with Standby vLLM hands its share back during the training pass.
GPU_MEMORY_SHARE = 0.5
STANDBY_ENV = "UNSLOTH_VLLM_STANDBY"
NOT_MEASURED = "not yet measured on a GPU"
SETUP_HINT = "run `python launch.py --setup-fast-generation` once (Linux or WSL2 with an NVIDIA GPU), then start the app again"


@dataclass(frozen=True)
class Device:
    """What the worker sees, as `probe` finds it (or a test states it)."""
    cuda: bool
    compute: tuple[int, int] | None = None  # of GPU 0
    vllm: str | None = None                 # the importable vLLM's version, None when it is not importable


@dataclass(frozen=True)
class FastGeneration:
    used: bool
    why: str                  # one sentence: why it is used or not
    standby: bool = False

    def line(self) -> str:
        return (f"fast generation (vLLM, {NOT_MEASURED}): " if self.used else "fast generation: off — ") + self.why


def probe() -> Device:
    """This process's CUDA device and vLLM, without importing vLLM (its import takes seconds and grabs CUDA)."""
    import torch

    cuda = torch.cuda.is_available()
    compute = tuple(torch.cuda.get_device_capability(0)) if cuda else None
    version = None
    if importlib.util.find_spec("vllm") is not None:
        from importlib.metadata import PackageNotFoundError, version as dist_version
        try:
            version = dist_version("vllm")
        except PackageNotFoundError:
            version = "unknown"
    return Device(cuda=cuda, compute=compute, vllm=version)


def missing(device: Device) -> str | None:
    """What stands in the way of vLLM on this device, in words; None when nothing does."""
    if not device.cuda:
        return "there is no CUDA GPU here (vLLM needs an NVIDIA GPU)"
    if device.compute is not None and tuple(device.compute) < MIN_COMPUTE:
        found = ".".join(map(str, device.compute))
        return f"this GPU's compute capability is {found}; vLLM needs {MIN_COMPUTE[0]}.{MIN_COMPUTE[1]} or newer"
    if device.vllm is None:
        return "vLLM is not installed in this environment"
    return None


def decide(setting: str, device: Device, full_finetuning: bool = False) -> FastGeneration:
    """The run's fast-generation decision. Raises StudioError for `on` where it cannot work (what is missing, what to do)."""
    from ..errors import StudioError

    if setting == "off":
        return FastGeneration(False, "model.fast_generation is off")
    blocker = missing(device)
    if blocker is None and full_finetuning:
        # Unsloth's fast_inference serves the base weights and syncs a LoRA; a full fine-tune has nothing to sync.
        blocker = "fast generation shares the base weights with vLLM and needs LoRA (full fine-tuning changes the weights themselves)"
    if blocker is None:
        return FastGeneration(True, f"vLLM {device.vllm} samples the completions, colocated on the GPU", standby=True)
    if setting == "on":
        fix = SETUP_HINT if device.vllm is None and device.cuda else "set model.fast_generation: auto (or off)"
        raise StudioError("fast generation is on but cannot be used", blocker, fix)
    return FastGeneration(False, blocker)


def environment(fast: FastGeneration) -> dict[str, str]:
    """Variables to set before `import unsloth` (Standby is read at import time)."""
    return {STANDBY_ENV: "1"} if fast.used and fast.standby else {}


def apply_environment(fast: FastGeneration) -> None:
    for key, value in environment(fast).items():
        os.environ[key] = value


def load_arguments(fast: FastGeneration, backend: str, lora_rank: int | None) -> dict:
    """Extra keyword arguments of Unsloth's `FastLanguageModel.from_pretrained` (none on the transformers backend)."""
    if not fast.used or backend != "unsloth":
        return {}
    return {"fast_inference": True, "gpu_memory_utilization": GPU_MEMORY_SHARE,
            # vLLM reserves LoRA slots of this rank; Unsloth's default is 64, smaller ranks waste nothing.
            "max_lora_rank": max(lora_rank or 16, 8)}


def trainer_arguments(fast: FastGeneration, backend: str) -> dict:
    """Extra keyword arguments of trl.RLOOConfig. Explicit on both backends: Unsloth switches `use_vllm` on by itself
    but leaves colocate and sleep mode to GRPO; TRL's defaults are server mode and no sleep."""
    if not fast.used:
        return {}
    args = {"use_vllm": True, "vllm_mode": "colocate", "vllm_enable_sleep_mode": fast.standby}
    if backend != "unsloth":
        args["vllm_gpu_memory_utilization"] = GPU_MEMORY_SHARE  # Unsloth ignores it: its load-time share counts
    return args


_DECIDED: dict[tuple[str, bool], FastGeneration] = {}


def for_run(cfg) -> FastGeneration:
    """The decision for a run's config, made once per process (the first call probes the device and sets Standby's
    variable, so it comes before the training stack is imported)."""
    setting, full = cfg.model.fast_generation, cfg.lora is None
    key = (setting, full)
    if key not in _DECIDED:
        device = Device(cuda=False) if setting == "off" else probe()
        fast = decide(setting, device, full_finetuning=full)
        apply_environment(fast)
        _DECIDED[key] = fast
    return _DECIDED[key]

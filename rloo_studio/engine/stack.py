"""The one place that imports the training stack, in the order Unsloth needs.

Unsloth patches transformers, PEFT and TRL when it is imported, so `import unsloth` must come
before any of them in every process that trains or loads a model. `import_training_stack`
does exactly that, sets the environment those libraries read at import time, and falls back
to plain transformers + PEFT when Unsloth cannot be imported (or was not asked for).
It does not load models or data; it only hands back the modules.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import StudioError

log = logging.getLogger(__name__)

_STACK: "TrainingStack | None" = None


@dataclass
class TrainingStack:
    torch: ModuleType
    transformers: ModuleType
    trl: ModuleType
    peft: ModuleType
    unsloth: ModuleType | None  # None on the transformers backend
    backend: str                # "unsloth" or "transformers": what is actually used
    note: str                   # why this backend was chosen, for logs and the UI
    cuda: bool


def cache_dir() -> Path:
    """Per-user cache (Unsloth's compiled kernels), kept out of the user's working directory."""
    root = os.environ.get("RLOO_STUDIO_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"), "rloo-studio")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _prepare_environment() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Unsloth writes compiled modules into the current directory unless told otherwise.
    os.environ.setdefault("UNSLOTH_COMPILE_LOCATION", str(cache_dir() / "unsloth_compiled_cache"))
    # bitsandbytes, on a CPU with AVX-512 BF16, warns at import that the optional `kernels` package is missing and falls
    # back to its own kernel: nothing the person can act on, and under `rloo-studio eval` it read as a failure.
    logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)


def import_training_stack(backend: str = "auto") -> TrainingStack:
    """Import torch, (Unsloth,) transformers, PEFT and TRL for `backend` (auto|unsloth|transformers).

    Cached per process: a process uses one backend. Raises StudioError when `unsloth` is asked
    for explicitly and cannot be imported, or when another backend was already imported here.
    """
    global _STACK
    if _STACK is not None:
        if backend in ("auto", _STACK.backend):
            return _STACK
        raise StudioError(
            f"this process already imported the {_STACK.backend} backend; cannot switch to {backend}",
            "Unsloth patches the libraries for the whole process",
            "run the other backend in a new process (each `rloo-studio` command is one)",
        )
    _prepare_environment()
    import torch

    cuda = torch.cuda.is_available()
    if not cuda:
        # TRL 1.15 runs a Triton kernel for the LM head that fails without a GPU driver
        # ("0 active drivers"). Unsloth serves that call with its own kernel; where it still hands
        # one back to TRL's, Triton's interpreter runs it on the CPU. It must be set before TRL is
        # imported. On the transformers backend the call goes to torch instead (below): the
        # interpreter runs on one thread, ~9x slower per step.
        os.environ.setdefault("TRITON_INTERPRET", "1")

    unsloth = None
    note = ""
    if backend in ("auto", "unsloth"):
        already = [m for m in ("trl", "transformers", "peft") if m in sys.modules and "unsloth" not in sys.modules]
        if already:
            note = f"Unsloth not used: {', '.join(already)} was imported before it in this process"
            if backend == "unsloth":
                raise StudioError(note, "Unsloth must be imported first to patch them", "start a fresh process")
        else:
            try:
                unsloth = importlib.import_module("unsloth")
                note = "Unsloth " + getattr(unsloth, "__version__", "")
            except Exception as exc:  # ImportError, or Unsloth's own checks failing on odd hardware
                note = f"Unsloth could not be imported ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); using transformers + PEFT"
                if backend == "unsloth":
                    raise StudioError(
                        "model.backend is `unsloth` but Unsloth could not be imported",
                        str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                        "install it (`pip install unsloth`) or set model.backend: auto / transformers",
                    ) from exc
    else:
        note = "transformers + PEFT (asked for)"

    import peft
    import transformers
    import trl

    if unsloth is None and not cuda:
        from .trainer_patches import use_torch_logprobs_on_cpu

        use_torch_logprobs_on_cpu(torch)

    _STACK = TrainingStack(
        torch=torch, transformers=transformers, trl=trl, peft=peft, unsloth=unsloth,
        backend="unsloth" if unsloth is not None else "transformers", note=note, cuda=cuda,
    )
    log.info("training stack: %s (cuda=%s)", note, cuda)
    return _STACK


def rloo_config_fields() -> dict:
    """Every option trl.RLOOConfig accepts, mapped to its default (imports TRL, not Unsloth)."""
    import dataclasses

    stack = _STACK
    trl = stack.trl if stack else importlib.import_module("trl")
    out = {}
    for f in dataclasses.fields(trl.RLOOConfig):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
        else:
            out[f.name] = None
    return out

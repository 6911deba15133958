"""Keeps the reward preview's model loaded between previews, in the process that samples (the inference worker).

`engine.sampling.sample_groups` asks here for the config's base model. The first preview loads it;
later previews with the same model, dtype, quantisation and sequence length reuse it, so a warm
preview costs only sampling. A one-shot process (`rloo-studio preview`) loads once, as before.
`release()` drops it (before the chat loads another model; the whole worker is shut down before
training starts). Nothing here decides how a model is loaded: that is `engine.model.load_model`.
"""

from __future__ import annotations

import gc

from ..config import RunConfig

_held: dict = {"key": None, "loaded": None}
loads = 0  # how many times a preview model was loaded in this process (tests: a warm preview loads none)


def preview_model_key(cfg: RunConfig) -> tuple:
    from .model import resolve_model_source

    m = cfg.model
    return (str(resolve_model_source(m.name_or_path, cfg.base_dir)), m.dtype, bool(m.load_in_4bit), m.max_seq_length)


def load_preview_model(cfg: RunConfig, stack, progress=print):
    """The loaded base model (no LoRA) for `cfg`, loading it only when the held one differs."""
    global loads
    from .model import load_model

    key = preview_model_key(cfg)
    if _held["key"] == key and _held["loaded"] is not None:
        progress(f"[preview] {cfg.model.name_or_path} is already loaded")
        return _held["loaded"]
    release()
    progress(f"[preview] loading {cfg.model.name_or_path}")
    loaded = load_model(cfg.model, None, stack, cfg.base_dir, for_training=False)
    _held.update(key=key, loaded=loaded)
    loads += 1
    return loaded


def holds_model() -> bool:
    return _held["loaded"] is not None


def release() -> None:
    """Drop the held model and give its memory back (to the GPU too, when there is one)."""
    if _held["loaded"] is None:
        return
    _held.update(key=None, loaded=None)
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - freeing is best effort
        pass

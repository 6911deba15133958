"""Prefill sharing: each distinct prompt's prefill computed once for its k completions, its keys and values shared.

RLOO samples every prompt k times, and TRL's RLOOTrainer hands `generate` a batch in which each prompt is a row k
times over (its RepeatSampler repeats every index k times in a row; trl/trainer/rloo_trainer.py,
`_get_train_sampler`). Plain `generate` runs the whole prompt through the model (the prefill) once per row: k times
per prompt. `shared_generate` runs it once per distinct row, over all of the prompt but its last token, with the
positions and padding `generate` gives that row, copies those cached keys and values to every row that holds the
same prompt (`DynamicCache.batch_select_indices`) and lets `generate` continue from that cache: it feeds each row's
last prompt token and decodes as before. The batch, its row order, padding and positions, and the random draws of
sampling are plain `generate`'s (it draws for the whole batch at every step, the same shapes in the same order), so
the completions are the same token for token as far as the prefill's arithmetic in a smaller batch gives the same
numbers: checked on the CPU for the tiny test model, greedy and sampled (tests/engine/test_prefill.py), and for the
demo and SmolLM2-135M by benchmarks/prefill_sharing.py, which also measures the time it saves.

`model.share_prefill` is `auto`, `on` or `off` (config.SHARE_PREFILL); `decide` turns it into a `Sharing` (used or not, and why, said in
the run's log). `auto` shares where that identity was checked: on a CPU. On a GPU (half-precision kernels whose
results depend on the batch's shape) it has not been checked: `on` shares there too. Never with vLLM (it generates
outside `generate` and shares prompt prefixes by itself), TRL's continuous batching, or dropout switched on (plain
`generate` draws a dropout mask per row). Calls it cannot serve exactly (no repeated prompt, multimodal inputs, a
cache implementation of the config's own, beams) go to plain `generate` unchanged.

engine/trainer_patches.py (`share_prefills`) puts it on one trainer object, around the method that calls `generate`.
This module imports neither torch nor transformers at module level.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Sharing:
    used: bool
    why: str  # one sentence: why it is used or not
    # What it did, for the log and the tests: generate calls served, rows generated, prefills computed for them.
    counts: dict = field(default_factory=lambda: {"calls": 0, "rows": 0, "prefills": 0})

    def line(self) -> str:
        return ("prefill sharing: on — " if self.used else "prefill sharing: off — ") + self.why


def decide(setting: str, cuda: bool, use_vllm: bool = False, continuous_batching: bool = False,
           dropout: str | None = None) -> Sharing:
    """The run's decision, from its config and what the trainer was built with (`dropout`: the first active dropout's
    name, None when none is)."""
    if setting == "off":
        return Sharing(False, "model.share_prefill is off")
    if use_vllm:
        return Sharing(False, "vLLM generates the completions (it shares prompt prefixes by itself)")
    if continuous_batching:
        return Sharing(False, "TRL's continuous batching generates the completions, not `generate`")
    if dropout is not None:
        return Sharing(False, f"dropout is on ({dropout}): plain generation draws a dropout mask per completion")
    if cuda and setting == "auto":
        return Sharing(False, "on a GPU its completions have not been checked against plain generation "
                              "(model.share_prefill: on shares there too)")
    checked = ("not yet checked on a GPU to give plain generation's completions" if cuda
               else "checked on a CPU to give plain generation's completions, token for token")
    return Sharing(True, f"each distinct prompt's prefill is computed once for its k completions ({checked})")


def share_plan(torch, input_ids, attention_mask):
    """(first row of each distinct prompt, each row's index among them), or None when no prompt repeats (or the
    batch is not left-padded).

    A prompt is its row of tokens and of attention mask (its left padding included), so rows that share a prefill
    also share every position."""
    if input_ids.dim() != 2 or input_ids.shape[1] < 2 or not bool(attention_mask[:, -1].all()):
        return None  # a one-token batch has nothing to prefill ahead; right padding is not TRL's (left) batch
    seen: dict[tuple, int] = {}
    first, inverse = [], []
    for row, (ids, mask) in enumerate(zip(input_ids.tolist(), attention_mask.tolist())):
        index = seen.setdefault((tuple(ids), tuple(mask)), len(first))
        if index == len(first):
            first.append(row)
        inverse.append(index)
    if len(first) == len(inverse):
        return None
    device = input_ids.device
    return torch.tensor(first, device=device), torch.tensor(inverse, device=device)


def _cache_for(model):
    """An empty cache of the kind `generate` makes by default for this model, or None when it is not a plain
    per-token one (sliding windows and the like keep other rows than a full prefill would: left to `generate`)."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    config = model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") else model.config
    cache = DynamicCache(config=config)
    if any(type(layer) is not DynamicLayer for layer in getattr(cache, "layers", [])):
        return None
    return cache


def shared_generate(model, generate, torch, counts: dict | None = None, **kwargs):
    """`generate(**kwargs)`, each distinct prompt's prefill computed once (see the module docstring).

    Serves calls of TRL's shape (input_ids, attention_mask, generation_config); any other goes to `generate`."""
    input_ids, attention_mask = kwargs.get("input_ids"), kwargs.get("attention_mask")
    config = kwargs.get("generation_config") or getattr(model, "generation_config", None)
    plain = (input_ids is None or attention_mask is None or config is None
             or set(kwargs) - {"input_ids", "attention_mask", "generation_config"}
             or getattr(config, "cache_implementation", None) is not None or getattr(config, "use_cache", True) is False
             or (getattr(config, "num_beams", 1) or 1) > 1 or (getattr(config, "num_return_sequences", 1) or 1) > 1
             or getattr(config, "prefill_chunk_size", None) is not None)
    plan = None if plain else share_plan(torch, input_ids, attention_mask)
    cache = None if plan is None else _cache_for(model)
    if cache is None:
        return generate(**kwargs)
    first, inverse = plan
    ids, mask = input_ids[first, :-1], attention_mask[first, :-1]
    # The positions `generate` gives these tokens (GenerationMixin._prepare_position_ids_for_generation).
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
    extra = {"logits_to_keep": 1} if getattr(model, "_supports_logits_to_keep", lambda: False)() else {}
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True, **extra)
    cache.batch_select_indices(inverse)
    if counts is not None:
        counts["calls"] += 1
        counts["rows"] += int(input_ids.shape[0])
        counts["prefills"] += int(first.shape[0])
    return generate(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, generation_config=config)


@contextmanager
def sharing_on(model, torch, counts: dict | None = None):
    """`model.generate` shares prefills while the block runs (set on this object only, put back after)."""
    own = model.__dict__.get("generate")  # an instance's own generate (a library may have set one), else the class's
    original = model.generate

    def generate(*args, **kwargs):
        if args:  # positional inputs: not TRL's call
            return original(*args, **kwargs)
        return shared_generate(model, original, torch, counts, **kwargs)

    model.generate = generate
    try:
        yield
    finally:
        if own is not None:
            model.generate = own
        else:
            del model.generate

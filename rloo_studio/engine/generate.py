"""One path from prompt to completion, the one TRL 1.15's `RLOOTrainer` takes in training.

Evaluation, the reward preview, the chat and the prompt-length check all go through here, so
what they show is what training sees:

* `prompt_token_ids` tokenises prompts exactly as `RLOOTrainer._tokenize_prompts` does: a chat
  prompt through the tokenizer's chat template with the generation prompt and the run's
  `rloo.chat_template_kwargs` (e.g. `enable_thinking: false`); a plain-text prompt with the
  tokenizer's special tokens (the BOS of a Llama-style tokenizer).
* `end_token_ids` is TRL's list of end-of-generation ids: the tokenizer's EOS plus every id of
  the model's `generation_config.eos_token_id` (end-of-turn tokens of Gemma, Phi-3, ...).
* `generation_kwargs` builds the settings TRL builds from the run's config (temperature, top_p,
  top_k, min_p, repetition_penalty, cache_implementation, `rloo.generation_kwargs`) and never
  lets the model's own `generation_config` choose them; greedy decoding turns sampling off and
  every other logits processor with it.
* `generate_completions` left-pads the prompt ids, generates, and cuts each completion just
  after its first end id, as TRL cuts `completion_ids`; texts are decoded as TRL decodes them
  (special tokens skipped).

It only generates; scoring belongs to the rewards package.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import as_mapping

# Sampling settings RLOOConfig passes to GenerationConfig (TRL 1.15, RLOOTrainer.__init__).
TRL_SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "cache_implementation")
# Logits processors transformers applies even without sampling, set to the values that switch them off,
# so greedy decoding is the model's argmax and nothing else (transformers 5.17, `_get_logits_processor`).
GREEDY_NEUTRAL = {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": None, "repetition_penalty": 1.0,
                  "encoder_repetition_penalty": 1.0, "no_repeat_ngram_size": 0}


@dataclass
class Generated:
    texts: list[str]
    completion_ids: list[list[int]]   # as TRL passes them to rewards: up to and including the first end id
    prompt_ids: list[list[int]] | None = None


def chat_template_kwargs(cfg) -> dict:
    """The run's `rloo.chat_template_kwargs` (RunConfig.chat_template_kwargs); {} without a config."""
    return cfg.chat_template_kwargs() if cfg is not None else {}


def is_conversational(prompt) -> bool:
    """A prompt TRL treats as a conversation: a list of role/content messages (trl.data_utils.is_conversational)."""
    return isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], dict) and "role" in prompt[0]


def prompt_token_ids(prompts: list, tokenizer, template_kwargs: dict | None = None) -> list[list[int]]:
    """Token ids of `prompts` exactly as TRL 1.15's `RLOOTrainer._tokenize_prompts` makes them (text models)."""
    if not prompts:
        return []
    if is_conversational(prompts[0]):
        tokenized = tokenizer.apply_chat_template(conversation=list(prompts), add_generation_prompt=True, tokenize=True,
                                                  return_dict=True, **(template_kwargs or {}))
        return [list(ids) for ids in tokenized["input_ids"]]
    return [list(ids) for ids in tokenizer(text=list(prompts))["input_ids"]]


def end_token_ids(model, tokenizer) -> list[int]:
    """TRL's end-of-generation ids: the model's generation_config.eos_token_id (int or list), the tokenizer's EOS first
    when it is not among them (RLOOTrainer.__init__). A completion ends at the first of them."""
    ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = [] if ids is None else [ids] if isinstance(ids, int) else list(ids)
    if tokenizer.eos_token_id not in ids:
        ids = [tokenizer.eos_token_id, *ids]
    return [int(i) for i in ids if i is not None]


def generation_kwargs(cfg, tokenizer, end_ids: list[int], *, do_sample: bool = True, max_new_tokens: int | None = None,
                      temperature: float | None = None, top_p: float | None = None) -> dict:
    """The GenerationConfig arguments TRL builds for training, from the run's config (`cfg` None: TRL's defaults).

    `temperature`/`top_p`/`max_new_tokens` replace the config's values where the caller decides them (the chat's
    sliders); `do_sample=False` is greedy decoding with every other processor switched off.
    """
    from .stack import rloo_config_fields

    defaults = rloo_config_fields()
    value = (lambda key: cfg.rloo_value(key, defaults)) if cfg is not None else defaults.get
    kwargs = {
        "max_new_tokens": int(max_new_tokens if max_new_tokens is not None else value("max_completion_length")),
        "do_sample": True,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": list(end_ids),
        **{key: value(key) for key in TRL_SAMPLING_KEYS},
    }
    kwargs.update(as_mapping(value("generation_kwargs")))  # TRL: they override the settings above
    if temperature is not None:
        kwargs["temperature"] = float(temperature)
    if top_p is not None:
        kwargs["top_p"] = float(top_p)
    if not do_sample:
        kwargs.update(do_sample=False, **GREEDY_NEUTRAL)
    return kwargs


def generation_config(kwargs: dict):
    """The GenerationConfig TRL passes to `generate` (compilation off, as in TRL)."""
    from transformers import GenerationConfig

    return GenerationConfig(**kwargs, disable_compile=True)


def cut_at_end(ids: list[int], end_ids) -> list[int]:
    """Keep the tokens up to and including the first end id (TRL's completion mask)."""
    ends = set(end_ids)
    return next((ids[:i + 1] for i, t in enumerate(ids) if t in ends), list(ids))


def generate_completions(model, tokenizer, prompts: list, max_new_tokens: int | None = None, do_sample: bool = False,
                         temperature: float | None = None, top_p: float | None = None, batch_size: int = 64,
                         seed: int | None = None, progress=None, *, cfg=None) -> Generated:
    """One completion per prompt (greedy unless `do_sample`), in batches, as TRL generates them for the run `cfg`.

    Settings not given here come from `cfg` (the run's config) as TRL takes them; `cfg` None means TRL's defaults.
    """
    import torch

    if seed is not None:
        torch.manual_seed(seed)
    device = next(model.parameters()).device
    end_ids = end_token_ids(model, tokenizer)
    config = generation_config(generation_kwargs(cfg, tokenizer, end_ids, do_sample=do_sample, max_new_tokens=max_new_tokens,
                                                 temperature=temperature, top_p=top_p))
    all_prompt_ids = prompt_token_ids(prompts, tokenizer, chat_template_kwargs(cfg))
    pad = tokenizer.pad_token_id
    texts: list[str] = []
    ids_out: list[list[int]] = []
    for start in range(0, len(prompts), batch_size):
        batch = all_prompt_ids[start:start + batch_size]
        width = max(len(ids) for ids in batch)
        # Left padding, as TRL pads: generation continues from the right edge of every row.
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in batch], device=device)
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=device)
        with torch.inference_mode():
            out = model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config)
        for row in out[:, width:].tolist():
            row = cut_at_end(row, end_ids)
            ids_out.append(row)
            texts.append(tokenizer.decode(row, skip_special_tokens=True))
        if progress:
            progress(min(start + batch_size, len(prompts)), len(prompts))
    return Generated(texts, ids_out, all_prompt_ids)

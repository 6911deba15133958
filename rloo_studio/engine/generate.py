"""Batched generation for evaluation and previews: prompts in TRL's form in, completion texts out.

Prompts are rendered exactly as TRL renders them during training (the chat template with the
generation prompt for conversational prompts, the text itself otherwise) and decoded the way
TRL decodes completions (special tokens skipped), so a reward sees the same text here as in
training. It only generates; scoring belongs to the rewards package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Generated:
    texts: list[str]
    completion_ids: list[list[int]]


def render_prompt(prompt, tokenizer) -> str:
    if isinstance(prompt, list):
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return str(prompt)


def generate_completions(model, tokenizer, prompts: list, max_new_tokens: int, do_sample: bool = False,
                         temperature: float = 1.0, top_p: float = 1.0, batch_size: int = 64, seed: int | None = None,
                         progress=None) -> Generated:
    """Generate one completion per prompt (greedy unless `do_sample`), left-padded in batches."""
    import torch

    if seed is not None:
        torch.manual_seed(seed)
    previous_side = tokenizer.padding_side
    tokenizer.padding_side = "left"  # generation continues from the right edge of every row
    device = next(model.parameters()).device
    texts: list[str] = []
    ids_out: list[list[int]] = []
    eos_ids = {tokenizer.eos_token_id, tokenizer.pad_token_id} - {None}
    try:
        for start in range(0, len(prompts), batch_size):
            batch = [render_prompt(p, tokenizer) for p in prompts[start:start + batch_size]]
            enc = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
            kwargs = dict(max_new_tokens=max_new_tokens, do_sample=do_sample, pad_token_id=tokenizer.pad_token_id,
                          eos_token_id=tokenizer.eos_token_id)
            if do_sample:
                kwargs.update(temperature=temperature, top_p=top_p)
            else:
                kwargs.update(temperature=None, top_p=None, top_k=None)
            with torch.inference_mode():
                out = model.generate(**enc, **kwargs)
            for row in out[:, enc["input_ids"].shape[1]:].tolist():
                # Cut at the first end token, as TRL does for completion_ids.
                cut = next((i + 1 for i, t in enumerate(row) if t in eos_ids), len(row))
                row = row[:cut]
                ids_out.append(row)
                texts.append(tokenizer.decode(row, skip_special_tokens=True))
            if progress:
                progress(min(start + batch_size, len(prompts)), len(prompts))
    finally:
        tokenizer.padding_side = previous_side
    return Generated(texts, ids_out)

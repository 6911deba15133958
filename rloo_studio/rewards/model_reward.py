"""A sequence-classification reward model used as a reward function, fed exactly as TRL 1.15 feeds one.

The model (a local folder or hub id with a classification head; the first logit is the score)
is loaded once, on first use, on the training device. What it reads is what TRL's
`RLOOTrainer._calculate_rewards` gives a reward model: for conversational data the prompt and
completion messages through the reward tokenizer's chat template (with the run's
`rloo.chat_template_kwargs`), else prompt text + completion text; tokenised without adding
special tokens (the chat template already wrote the BOS: a second one would shift the score),
padded on the right. As in TRL, a tokenizer without a pad token pads with its EOS, and the
model's config is told the pad id, which is how a classification head finds each row's last
real token in a padded batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import ModelError
from .builtin import completion_text


def reward_model_texts(prompts: list, completions: list, tokenizer, chat_template_kwargs: dict | None = None) -> list[str]:
    """The texts TRL gives a reward model for these prompt/completion pairs (before tokenisation)."""
    texts = []
    for prompt, completion in zip(prompts, completions):
        if isinstance(prompt, list) and getattr(tokenizer, "chat_template", None):
            reply = completion if isinstance(completion, list) else [{"role": "assistant", "content": completion_text(completion)}]
            texts.append(tokenizer.apply_chat_template(prompt + reply, tokenize=False, **(chat_template_kwargs or {})))
        else:
            # A chat prompt for a reward model without a chat template (TRL would fail): its messages' text, one per line.
            prompt_text = prompt if isinstance(prompt, str) else "\n".join(m.get("content", "") for m in prompt)
            texts.append(prompt_text + completion_text(completion))
    return texts


def reward_model_inputs(texts: list[str], tokenizer):
    """Token tensors for the reward model, as TRL makes them: no added special tokens, right padding."""
    return tokenizer(text=texts, return_tensors="pt", padding=True, padding_side="right", add_special_tokens=False)


def reward_model_function(name_or_path: str, base_dir: str | Path = ".", batch_size: int = 8,
                          chat_template_kwargs: dict | None = None) -> Callable:
    local = Path(name_or_path) if Path(name_or_path).is_absolute() else Path(base_dir) / name_or_path
    source = str(local) if local.exists() else name_or_path
    state: dict = {}

    def load():
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(source)
            model = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1)
        except (OSError, ValueError) as exc:
            raise ModelError(f"reward model {name_or_path!r} could not be loaded", str(exc).splitlines()[0],
                             "give a local folder or a hub id of a sequence-classification model (and be online for hub ids)") from None
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        model.config.get_text_config().pad_token_id = tok.pad_token_id
        device = "cuda" if torch.cuda.is_available() else "cpu"
        state.update(tok=tok, model=model.to(device).eval(), device=device, torch=torch)

    def reward_model(prompts, completions, **kwargs):
        if not state:
            load()
        tok, model, torch = state["tok"], state["model"], state["torch"]
        texts = reward_model_texts(prompts, completions, tok, chat_template_kwargs)
        scores: list[float] = []
        for start in range(0, len(texts), batch_size):
            batch = reward_model_inputs(texts[start:start + batch_size], tok).to(state["device"])
            with torch.inference_mode():
                scores.extend(model(**batch).logits[:, 0].float().tolist())
        return scores

    reward_model.state = state  # the loaded tokenizer and model, for tests and error reports
    return reward_model

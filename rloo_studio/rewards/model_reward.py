"""A sequence-classification reward model used as a reward function (TRL contract).

The model (a local folder or hub id with a classification head; the first logit is the score)
is loaded once, on first use, on the training device. Prompt and completion are joined the way
TRL does for reward models: through the chat template for conversational data, else as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import ModelError
from .builtin import completion_text


def reward_model_function(name_or_path: str, base_dir: str | Path = ".", batch_size: int = 8) -> Callable:
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
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        device = "cuda" if torch.cuda.is_available() else "cpu"
        state.update(tok=tok, model=model.to(device).eval(), device=device, torch=torch)

    def reward_model(prompts, completions, **kwargs):
        if not state:
            load()
        tok, model, torch = state["tok"], state["model"], state["torch"]
        texts = []
        for prompt, completion in zip(prompts, completions):
            if isinstance(prompt, list) and getattr(tok, "chat_template", None):
                messages = prompt + [{"role": "assistant", "content": completion_text(completion)}]
                texts.append(tok.apply_chat_template(messages, tokenize=False))
            else:
                prompt_text = prompt if isinstance(prompt, str) else "\n".join(m.get("content", "") for m in prompt)
                texts.append(prompt_text + completion_text(completion))
        scores: list[float] = []
        for start in range(0, len(texts), batch_size):
            batch = tok(texts[start:start + batch_size], return_tensors="pt", padding=True, truncation=True).to(state["device"])
            with torch.inference_mode():
                scores.extend(model(**batch).logits[:, 0].float().tolist())
        return scores

    return reward_model

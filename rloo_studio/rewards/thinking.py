"""Whether the prompt a chat template renders opens the model's thought, so that its completions start inside it.

Thinking templates (DeepSeek-R1 distills, QwQ, Qwen3-Thinking-2507) end the generation prompt with `<think>`: the
model continues inside its thought, so its completion has no opening tag, and one cut off by the token budget
mid-thought has no tag at all. `prompt_opens_think` decides it once per run, from the tokenizer's chat template and
the run's `chat_template_kwargs` (Qwen3's `enable_thinking: false` renders a closed, empty thought instead), by
rendering a conversation as TRL renders chat prompts (engine/generate.py): with the generation prompt. It lives in
the rewards package, not the engine, because the reward preview's scoring child decides it too, for pinned examples.

The builtins then read the completion as the model continued it, `<think>` + completion (`builtin.seen_completion`,
through their `prompt_opens_think` parameter, which `build_rewards` fills in). The completions TRL passes to reward
functions stay as TRL makes them: user rewards receive exactly those, as in training.
"""

from __future__ import annotations

from .builtin import THINK_END, THINK_START

# Any conversation shows what the generation prompt adds; this one holds no tag of its own.
_PROBE_CHAT = [{"role": "user", "content": "What is 2 + 2?"}]


def ends_inside_thought(rendered: str) -> bool:
    """Whether `rendered` (a prompt as the model reads it) leaves a `<think>` open at its end.

    >>> ends_inside_thought("<|im_start|>assistant\\n<think>\\n"), ends_inside_thought("assistant\\n<think>\\n\\n</think>\\n\\n")
    (True, False)
    """
    return rendered.rfind(THINK_START) > rendered.rfind(THINK_END)


def prompt_opens_think(prompts, tokenizer, template_kwargs: dict | None = None) -> bool:
    """Whether a run's `prompts` (TRL's prompt column) reach the model ending inside an open `<think>`.

    Chat prompts (lists of messages) are rendered as TRL renders them: the tokenizer's chat template with the generation
    prompt and the run's `template_kwargs`, on one conversation (the template decides, not the messages). Plain-text
    prompts reach the model as written: True when every one of them ends inside a thought."""
    prompts = list(prompts)
    if not prompts:
        return False
    if not isinstance(prompts[0], list):
        return all(ends_inside_thought(str(p)) for p in prompts)
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return False
    rendered = tokenizer.apply_chat_template(_PROBE_CHAT, add_generation_prompt=True, tokenize=False, **(template_kwargs or {}))
    return ends_inside_thought(rendered)

"""Thinking templates that open `<think>` in the prompt: the run's chat template decides (rewards.thinking), and the
builtins, the reward preview's written examples and the evaluation's format rate read each completion after that
`<think>`. A tiny character tokenizer with such a template (tinymodel.THINKING_CHAT_TEMPLATE) proves it; no model."""

from __future__ import annotations

import pytest

from rloo_studio.config import RunConfig
from rloo_studio.rewards import build_rewards
from rloo_studio.rewards.preview import score
from rloo_studio.rewards.thinking import prompt_opens_think
from rloo_studio.demo.tinymodel import CHAT_TEMPLATE, THINKING_CHAT_TEMPLATE, build_char_tokenizer

CHAT = [[{"role": "user", "content": "What is 6 * 7?"}]]
# A completion of a thinking template's model cut off mid-thought (no tag: the prompt opened it), and a finished one.
CUT_OFF, FINISHED = "6 * 7 = 42, so the answer is 42", "6 * 7 = 42</think>42"


@pytest.fixture(scope="module")
def thinking_tokenizer():
    return build_char_tokenizer(chat_template=THINKING_CHAT_TEMPLATE)


def test_the_chat_template_decides_whether_the_prompt_opens_a_thought(thinking_tokenizer):
    assert prompt_opens_think(CHAT, thinking_tokenizer) is True
    assert prompt_opens_think(CHAT, thinking_tokenizer, {"enable_thinking": False}) is False  # an empty, closed thought
    assert prompt_opens_think(CHAT, build_char_tokenizer(chat_template=CHAT_TEMPLATE)) is False
    # Plain-text prompts reach the model as written: their own text decides.
    assert prompt_opens_think(["What is 6 * 7?"], thinking_tokenizer) is False
    assert prompt_opens_think(["What is 6 * 7?\n<think>\n"], None) is True


def _builtins(opened: bool) -> dict:
    specs = RunConfig.from_dict({"rewards": [{"name": n} for n in ("numeric_answer", "exact_match", "think_format")]
                                 + [{"name": "regex_format", "params": {"pattern": r"^<think>.*</think>.+$", "full_match": True}}]
                                 }).rewards
    return {r.name: r.func for r in build_rewards(specs, dataset_columns=["prompt", "answer"], prompt_opens_think=opened)}


def test_a_completion_cut_off_inside_the_prompts_thought_earns_no_answer_credit():
    rewards = _builtins(opened=True)
    completions = [CUT_OFF, FINISHED]
    assert rewards["numeric_answer"](completions, answer=[42, 42]) == [0.0, 1.0]
    assert rewards["exact_match"](completions, answer=["42", "42"]) == [0.0, 1.0]
    assert rewards["think_format"](completions) == [0.0, 1.0]
    assert rewards["regex_format"](completions) == [0.0, 1.0]
    # Read as written (a template that does not open the thought), the cut-off reasoning was the answer.
    plain = _builtins(opened=False)
    assert plain["numeric_answer"](completions, answer=[42, 42]) == [1.0, 1.0]
    assert plain["think_format"](completions) == [0.0, 0.5]


def test_written_examples_are_scored_as_training_scores_them_for_a_thinking_template(tmp_path, thinking_tokenizer):
    """The reward preview's scoring of written completions (the pinned examples) finds the template's <think> itself."""
    folder = tmp_path / "thinking-tokenizer"
    thinking_tokenizer.save_pretrained(folder)
    rewards = [dict(s.__dict__) for s in RunConfig.from_dict({"rewards": [{"name": "numeric_answer"},
                                                                          {"name": "think_format"}]}).rewards]
    groups = [{"prompt": "What is 6 * 7?", "row": {"answer": "42"}, "completions": [c]} for c in (CUT_OFF, FINISHED)]
    result = score({"groups": groups, "num_generations": 1, "rewards": rewards, "probes": False, "tokenizer": str(folder),
                    "written": {"prompt_format": "auto", "system_prompt": None}})
    assert [r["rewards"] for r in result["rows"]] == [{"numeric_answer": 0.0, "think_format": 0.0},
                                                      {"numeric_answer": 1.0, "think_format": 1.0}]
    # The run's enable_thinking: false closes the thought in the prompt: the completions are read as written.
    closed = score({"groups": groups, "num_generations": 1, "rewards": rewards, "probes": False, "tokenizer": str(folder),
                    "written": {"prompt_format": "auto", "system_prompt": None}, "chat_template_kwargs": {"enable_thinking": False}})
    assert [r["rewards"]["numeric_answer"] for r in closed["rows"]] == [1.0, 1.0]


def test_the_flag_is_not_a_parameter_the_page_offers():
    from rloo_studio.rewards import builtin_default_params

    assert all("prompt_opens_think" not in builtin_default_params(n) for n in ("numeric_answer", "think_format", "keywords"))

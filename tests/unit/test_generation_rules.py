"""The rules of engine/generate.py that need no model: TRL's end-id list, the cut at the first end id, the run's
chat_template_kwargs, and the `disable_dropout` default. What a real RLOOTrainer builds is compared in
tests/engine/test_generation_path.py."""

from __future__ import annotations

from types import SimpleNamespace

from rloo_studio.config import RLOO_DEFAULTS, RunConfig
from rloo_studio.engine.generate import chat_template_kwargs, cut_at_end, end_token_ids, is_conversational


def _pair(generation_eos, tokenizer_eos=1):
    return SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=generation_eos)), SimpleNamespace(eos_token_id=tokenizer_eos)


def test_end_ids_are_the_tokenizers_eos_then_the_generation_configs():
    # Gemma-2-it's layout: tokenizer EOS <|endoftext|>-like (1), generation EOS [0, 2] (RLOOTrainer.__init__ puts EOS first).
    assert end_token_ids(*_pair([0, 2])) == [1, 0, 2]
    assert end_token_ids(*_pair(5)) == [1, 5]
    assert end_token_ids(*_pair(None)) == [1]
    assert end_token_ids(*_pair([7, 1])) == [7, 1]  # already listed: kept where the model put it


def test_a_completion_is_cut_just_after_its_first_end_id():
    assert cut_at_end([5, 6, 0, 7, 2, 9], [1, 0, 2]) == [5, 6, 0]
    assert cut_at_end([5, 6, 7], [1, 0, 2]) == [5, 6, 7]  # truncated: no end id, nothing cut
    assert cut_at_end([2], [1, 0, 2]) == [2]


def test_chat_template_kwargs_come_from_the_run_config_as_a_mapping_or_json():
    assert chat_template_kwargs(RunConfig.from_dict({"rloo": {"chat_template_kwargs": {"enable_thinking": False}}})) == {"enable_thinking": False}
    assert chat_template_kwargs(RunConfig.from_dict({"rloo": {"chat_template_kwargs": '{"enable_thinking": true}'}})) == {"enable_thinking": True}
    assert chat_template_kwargs(RunConfig.from_dict({})) == {}
    assert chat_template_kwargs(None) == {}


def test_conversational_means_a_list_of_role_messages():
    assert is_conversational([{"role": "user", "content": "hi"}])
    assert not is_conversational("hi") and not is_conversational([])


def test_dropout_is_disabled_unless_the_config_says_otherwise():
    assert RLOO_DEFAULTS["disable_dropout"] is True
    assert RunConfig.from_dict({}).rloo_value("disable_dropout") is True
    assert RunConfig.from_dict({"rloo": {"disable_dropout": False}}).rloo_value("disable_dropout") is False


def test_the_prompt_opens_a_thought_exactly_when_the_ids_trl_generates_from_end_inside_one():
    """rewards.thinking decides from the template's text; generation continues from `prompt_token_ids` (TRL's
    tokenisation): for a thinking template, with and without the run's enable_thinking, the two agree."""
    from rloo_studio.engine.generate import prompt_token_ids
    from rloo_studio.rewards.thinking import ends_inside_thought, prompt_opens_think
    from rloo_studio.demo.tinymodel import CHAT_TEMPLATE, THINKING_CHAT_TEMPLATE, build_char_tokenizer

    chats = [[{"role": "system", "content": "Think first."}, {"role": "user", "content": "What is 6 * 7?"}]]
    seen = []
    for template in (THINKING_CHAT_TEMPLATE, CHAT_TEMPLATE):
        tokenizer = build_char_tokenizer(chat_template=template)
        for kwargs in ({}, {"enable_thinking": False}, {"enable_thinking": True}):
            [ids] = prompt_token_ids(chats, tokenizer, kwargs)
            generated_from = tokenizer.decode(ids, skip_special_tokens=False)
            assert prompt_opens_think(chats, tokenizer, kwargs) == ends_inside_thought(generated_from), (template, kwargs)
            seen.append(ends_inside_thought(generated_from))
    assert seen == [True, False, True, False, False, False]

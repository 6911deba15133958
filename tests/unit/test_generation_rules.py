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

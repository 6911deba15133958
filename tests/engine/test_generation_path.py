"""Evaluation, the reward preview and the chat generate exactly as TRL's RLOOTrainer does for the same run.

`generation_probe.py` (a child process: model libraries stay out of this one) builds tiny models whose
tokenizer and generation config differ as real models' do: end ids in `generation_config` that are not the
tokenizer's EOS (Gemma-2-it), a generation config choosing top_k 1 and repetition_penalty 1.3, a Qwen3-style
template driven by `rloo.chat_template_kwargs`, a tokenizer that adds BOS to plain text (Llama). For each run it
builds a real `trl.RLOOTrainer` from the run's config and records every `generate` call the app makes. The
reference is always TRL's own object: `trainer.eos_token_ids`, `trainer.generation_kwargs`,
`trainer._tokenize_prompts`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
THINK_END_ID = 4          # tinymodel: "</think>" (THINK_TOKENS follow the three control tokens)
SAMPLING_KEYS = ("max_new_tokens", "pad_token_id", "bos_token_id", "eos_token_id", "temperature", "top_p", "top_k", "min_p",
                 "repetition_penalty")


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("generation-probe")
    done = subprocess.run([sys.executable, str(HERE / "generation_probe.py"), str(folder)], capture_output=True, text=True,
                          timeout=900, cwd=HERE.parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _consumers(case: dict) -> dict[str, list[dict]]:
    """Every recorded generate call, by who made it."""
    calls = {"eval": case["eval"]["calls"], "preview": case["preview"]["calls"]}
    for label, reply in case["chat"].items():
        calls[f"chat {label}"] = reply["calls"]
    return calls


def _completions(case: dict) -> dict[str, list[list[int]]]:
    """The completion ids each consumer kept (what rewards and the page see)."""
    out = {"preview": [ids for g in case["preview"]["groups"] for ids in g["completion_ids"]]}
    for label, reply in case["chat"].items():
        out[f"chat {label}"] = [reply["token_ids"]]
    return out


def _cut(row: list[int], ends: list[int]) -> list[int]:
    """TRL's completion mask, written out: up to and including the first end id."""
    for i, token in enumerate(row):
        if token in ends:
            return row[:i + 1]
    return row


def test_every_consumer_stops_at_trls_end_ids_not_only_the_tokenizers_eos(probe):
    case = probe["chat_ends"]
    ends = case["trl"]["eos_token_ids"]
    assert len(ends) == 63 and ends[0] == 2  # the tokenizer's EOS first, then the 62 ids of generation_config
    for who, calls in _consumers(case).items():
        assert calls and all(c["config"]["eos_token_id"] == ends for c in calls), who
    for who, kept in _completions(case).items():
        for ids in kept:
            assert not any(t in ends for t in ids[:-1]), f"{who}: {ids} runs past an end id"
    # The preview keeps exactly TRL's completion_ids of what was generated (end token included).
    generated = [row for c in case["preview"]["calls"] for row in c["generated"]]
    assert _completions(case)["preview"] == [_cut(row, ends) for row in generated]
    # Completions really end at generation_config's ids here (not at the tokenizer's EOS, id 2).
    ended = [ids[-1] for kept in _completions(case).values() for ids in kept if ids and ids[-1] in ends]
    assert ended and any(t != 2 for t in ended)
    # Eval: each tuned completion (decoded text) ends at its first letter or digit, which are end ids here.
    for item in case["eval"]["per_prompt"]:
        text = item["sides"]["final"]["completion"]
        assert not any(ch.isalnum() for ch in text[:-1]), text
    assert any(item["sides"]["final"]["completion"][-1:].isalnum() for item in case["eval"]["per_prompt"])


@pytest.mark.parametrize("name", ["chat_ends", "chat_settings", "plain_base"])
def test_prompts_are_token_for_token_what_trl_tokenize_prompts_builds(probe, name):
    case = probe[name]
    trl_ids = case["trl"]["prompt_ids"]
    assert [ids for c in case["eval"]["calls"] for ids in c["prompt_ids"]][:4] == trl_ids["eval"]
    k = len(case["preview"]["groups"][0]["completions"])
    assert [ids for c in case["preview"]["calls"] for ids in c["prompt_ids"]] == [p for p in trl_ids["preview"] for _ in range(k)]
    for label, reply in case["chat"].items():
        assert reply["calls"][0]["prompt_ids"] == trl_ids["chat"], label
    if name.startswith("chat"):
        # rloo.chat_template_kwargs {enable_thinking: false} reached the template: the prompt carries the empty thought.
        assert all(THINK_END_ID in ids for ids in trl_ids["eval"] + trl_ids["chat"])
    else:
        # Plain text: TRL tokenises with the tokenizer's special tokens, so a Llama-style BOS leads every prompt.
        bos = case["trl"]["generation_kwargs"]["bos_token_id"]
        assert all(ids[0] == bos and bos not in ids[1:] for ids in trl_ids["eval"] + trl_ids["preview"] + trl_ids["chat"])


@pytest.mark.parametrize("name", ["chat_ends", "plain_base"])
def test_the_prompt_length_check_counts_the_tokens_trl_generates_from(probe, name):
    # model.max_seq_length leaves room for exactly TRL's longest training prompt, then for one token less.
    verdicts = probe[name]["trl"]["length_check"]
    assert verdicts["fits"] == "accepted"
    longest = verdicts["longest"]
    assert f"are longer than the {longest - 1} tokens left for them" in verdicts["one_short"]
    assert f"has {longest} tokens" in verdicts["one_short"]


def test_generation_settings_come_from_the_run_config_as_trl_builds_them(probe):
    case = probe["chat_settings"]  # its generation_config says do_sample, top_k 1, repetition_penalty 1.3, temperature 0.2
    trl_kwargs = case["trl"]["generation_kwargs"]
    assert trl_kwargs["top_k"] == 0 and trl_kwargs["repetition_penalty"] == 1.0 and trl_kwargs["temperature"] == 1.0
    sampled = case["preview"]["calls"] + case["chat"]["sampled/base"]["calls"] + case["chat"]["sampled/tuned"]["calls"]
    for call in sampled:
        assert call["config"]["do_sample"] is True
        assert {k: call["config"][k] for k in SAMPLING_KEYS} == {k: trl_kwargs[k] for k in SAMPLING_KEYS}
    greedy = case["eval"]["calls"] + case["chat"]["greedy/base"]["calls"] + case["chat"]["greedy/tuned"]["calls"]
    for call in greedy:
        assert call["config"]["do_sample"] is False and call["config"]["repetition_penalty"] == 1.0
        assert call["config"]["no_repeat_ngram_size"] == 0
    # And in effect: the same weights with a clean generation_config give the same completions everywhere.
    clean = probe["chat_base"]
    assert case["eval"]["per_prompt"] == clean["eval"]["per_prompt"]
    assert [g["completion_ids"] for g in case["preview"]["groups"]] == [g["completion_ids"] for g in clean["preview"]["groups"]]
    assert {k: v["token_ids"] for k, v in case["chat"].items()} == {k: v["token_ids"] for k, v in clean["chat"].items()}
    # top_k 1 would make a prompt's six samples one sample repeated; training's are distinct.
    for group in case["preview"]["groups"]:
        assert len({tuple(ids) for ids in group["completion_ids"]}) > 1


def test_eval_scores_with_the_previews_trainer_state_stand_in(probe):
    # rewards.py has `step_seen`, which reads trainer_state.global_step (TRL passes the trainer's state).
    for item in probe["chat_base"]["eval"]["per_prompt"]:
        for side in item["sides"].values():
            assert side["rewards"]["step_seen"] == 0.0


def test_trl_disables_dropout_by_default(probe):
    assert probe["chat_base"]["trl"]["disable_dropout"] is True

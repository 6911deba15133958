"""A judge reward in the memory estimate: a local judge's own copy of its weights, in its dtype; a server judge adds nothing."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli
from rloo_studio.config import RunConfig
from rloo_studio.rewards.judge import judge_calls_per_step
from rloo_studio.machine import vram
from rloo_studio.config import local_judge_in_4bit
from rloo_studio.machine.vram import GIB, KNOWN_MODELS, estimate_config, judge_part_name, weight_bytes

QWEN3_06B = KNOWN_MODELS["Qwen/Qwen3-0.6B"]
RUBRIC = "The answer is correct."


def _config(tmp_path, *rewards, model="Qwen/Qwen3-0.6B") -> RunConfig:
    return RunConfig.from_dict({"model": {"name_or_path": model},
                                "rewards": [{"name": "think_format"}, *rewards]}, base_dir=tmp_path)


def _judge_folder(tmp_path, dtype: str | None) -> str:
    config = {"hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
              "intermediate_size": 3072, "vocab_size": 151936, "tie_word_embeddings": True}
    if dtype:
        config["dtype"] = dtype
    folder = tmp_path / "my-judge"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return "my-judge"


def test_a_local_judge_adds_its_own_4bit_copy_even_when_it_is_the_policy():
    # The policy's own base model as judge: the worker loads a second copy (rewards/judge.py LocalJudge._load), in 4-bit
    # on a GPU where bitsandbytes is installed (config.local_judge_in_4bit; it is, here and with the CUDA install).
    assert local_judge_in_4bit()
    base = RunConfig.from_dict({"model": {"name_or_path": "Qwen/Qwen3-0.6B", "load_in_4bit": True}, "rewards": [{"name": "think_format"}]})
    judged = RunConfig.from_dict({"model": {"name_or_path": "Qwen/Qwen3-0.6B", "load_in_4bit": True},
                                  "rewards": [{"name": "think_format"}, {"judge": "Qwen/Qwen3-0.6B", "rubric": RUBRIC}]})
    without, with_judge = estimate_config(base), estimate_config(judged)
    judge_gib = with_judge.parts[judge_part_name("Qwen/Qwen3-0.6B")]
    assert judge_gib == pytest.approx(weight_bytes(QWEN3_06B, load_in_4bit=True, dtype_bytes=2) / GIB)
    assert judge_gib == pytest.approx(with_judge.parts["weights"])  # the same model, 4-bit like the policy: the same size
    assert judge_gib < QWEN3_06B.params * 2 / GIB / 2  # well under its 16-bit size
    # Static memory: it adds to the total with the allocator's slack, whichever phase peaks.
    assert with_judge.total_gib - without.total_gib == pytest.approx(judge_gib * 1.10)
    assert any("own copy" in n and "4-bit NF4, not shared with the policy" in n for n in with_judge.notes)


@pytest.mark.parametrize("dtype, per_param", [("float32", 4), ("float16", 2), (None, 2)])
def test_without_bitsandbytes_a_folder_judge_is_counted_in_the_dtype_its_config_names(tmp_path, monkeypatch, dtype, per_param):
    monkeypatch.setattr(vram, "local_judge_in_4bit", lambda: False)  # a GPU machine without bitsandbytes
    est = estimate_config(_config(tmp_path, {"judge": _judge_folder(tmp_path, dtype), "rubric": RUBRIC}))
    assert est.parts[judge_part_name("my-judge")] == pytest.approx(QWEN3_06B.params * per_param / GIB)
    assert any("not 4-bit (bitsandbytes is not installed)" in n for n in est.notes)


def test_with_bitsandbytes_a_folder_judge_is_4bit_whatever_dtype_its_config_names(tmp_path):
    est = estimate_config(_config(tmp_path, {"judge": _judge_folder(tmp_path, "float32"), "rubric": RUBRIC}))
    assert est.parts[judge_part_name("my-judge")] == pytest.approx(weight_bytes(QWEN3_06B, load_in_4bit=True, dtype_bytes=2) / GIB)


def test_a_server_judge_adds_nothing(tmp_path):
    server = {"judge": {"url": "http://127.0.0.1:11434/v1", "model": "qwen2.5:7b"}, "rubric": RUBRIC}
    plain, judged = estimate_config(_config(tmp_path)), estimate_config(_config(tmp_path, server))
    assert judged.parts == plain.parts and judged.total_gib == plain.total_gib


def test_two_judge_entries_on_the_same_model_are_two_copies(tmp_path):
    entry = {"judge": "Qwen/Qwen3-0.6B", "rubric": RUBRIC}
    est = estimate_config(_config(tmp_path, entry, dict(entry)))
    assert est.parts[judge_part_name("Qwen/Qwen3-0.6B #2")] == est.parts[judge_part_name("Qwen/Qwen3-0.6B")] > 0


def test_an_unknown_judge_is_said_not_counted(tmp_path):
    est = estimate_config(_config(tmp_path, {"judge": "somebody/unknown-judge", "rubric": RUBRIC}))
    assert not any(k.startswith("judge") for k in est.parts)
    assert any("'somebody/unknown-judge' has an unknown shape: its weights are NOT counted" in n for n in est.notes)


def test_the_verdict_says_when_the_judge_makes_it_not_fit(tmp_path):
    entry = {"judge": "Qwen/Qwen3-8B", "rubric": RUBRIC}  # 8.19B parameters in 4-bit: about 5.7 GiB
    plain = estimate_config(_config(tmp_path), device_gib=16)
    judged = estimate_config(_config(tmp_path, entry), device_gib=16)
    assert plain.verdict == "fits" and judged.verdict == "exceeds"
    assert any("the judge's weights are what make this not fit" in n for n in judged.notes)
    assert not any("judge's weights" in n for n in plain.notes)


def test_estimate_command_shows_the_judge_line(tmp_path):
    (tmp_path / "c.yaml").write_text("model: {name_or_path: Qwen/Qwen3-0.6B}\n"
                                     "rewards: [{judge: Qwen/Qwen3-14B, rubric: The answer is correct.}]\n")
    # 14.8B parameters in 4-bit: about 9.2 GiB, more than 12 GB leaves once the policy is as small as it gets.
    result = run_cli("estimate", "c.yaml", "--gpu-gb", "12", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "judge model weights (Qwen/Qwen3-14B)" in result.stdout
    assert "On 12 GB (given): exceeds" in result.stdout and "the judge's weights are what make this not fit" in result.stdout
    assert "this model with its judge needs" in result.stdout and "a smaller judge, or a judge server" in result.stdout


@pytest.mark.parametrize("rloo, judges, calls", [
    ({"num_generations": 4, "per_device_train_batch_size": 8}, 1, 8),
    # Two micro-batches per step: 16 completions per step, each judged once.
    ({"num_generations": 4, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 2}, 1, 16),
    # Two passes over each generation batch: its 16 completions are judged once for two steps.
    ({"num_generations": 4, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 2, "num_iterations": 2}, 1, 8),
    # Every judge entry judges every completion.
    ({"num_generations": 4, "per_device_train_batch_size": 8}, 2, 16),
    ({"num_generations": 4, "per_device_train_batch_size": 8}, 0, 0),
])
def test_judge_calls_per_step_are_the_new_completions_for_each_judge(tmp_path, rloo, judges, calls):
    data = {"model": {"name_or_path": "Qwen/Qwen3-0.6B"}, "rloo": rloo,
            "rewards": [{"name": "think_format"}] + [{"judge": {"url": "http://127.0.0.1:11434/v1", "model": "m"},
                                                       "rubric": RUBRIC}] * judges}
    cfg = RunConfig.from_dict(data, base_dir=tmp_path)
    assert judge_calls_per_step(cfg.rewards, cfg.batch_plan()) == calls


def test_estimate_command_shows_the_judge_calls_per_step(tmp_path):
    (tmp_path / "c.yaml").write_text("model: {name_or_path: Qwen/Qwen3-0.6B}\n"
                                     "rloo: {num_generations: 4, per_device_train_batch_size: 8, gradient_accumulation_steps: 2}\n"
                                     "rewards: [{judge: Qwen/Qwen3-0.6B, rubric: The answer is correct.}]\n")
    result = run_cli("estimate", "c.yaml", "--gpu-gb", "24", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Judge calls per training step: 16 (one per newly generated completion" in result.stdout
    assert "on the training GPU" in result.stdout
    data = json.loads(run_cli("estimate", "c.yaml", "--gpu-gb", "24", "--json", cwd=tmp_path).stdout)
    assert data["judge_calls_per_step"] == 16

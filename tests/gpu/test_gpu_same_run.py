"""One seed, one run on the Unsloth CUDA path (skipped without a GPU): the seed decides the LoRA
initialisation, two runs with one config log the same metrics and completions, and a run stopped after
step 1 and resumed logs what an uninterrupted one does. benchmarks/gpu_check.py runs these; the CPU
side of the same promises is in tests/engine/test_train_matches_trl.py.

Tolerance: on CUDA a gradient can be summed in a different order from one run to the next (atomic
additions in backward kernels), so the trained numbers may differ in their last bits; completions,
rewards and counts must be identical, the other floats equal to 1e-3 relative.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from helpers import ROOT, STOPPING_REWARDS, cuda_available, run_cli

from rloo_studio import runs

pytestmark = pytest.mark.gpu


if not cuda_available():
    pytest.skip("needs a CUDA GPU (benchmarks/gpu_check.py runs these on one)", allow_module_level=True)

EXACT_PREFIXES = ("rewards/", "reward", "frac_reward_zero_std", "completions/", "num_tokens", "step", "learning_rate")
MEASURED = ("time", "step_time", "memory/", "tokens_per_s")  # wall clock (time/* too) and memory: measurements, not the run's results


def _config(tmp_path, tiny_model_dir, **rloo) -> str:
    (tmp_path / "rewards.py").write_text(STOPPING_REWARDS)
    cfg = {"model": {"name_or_path": str(tiny_model_dir), "backend": "unsloth", "max_seq_length": 128},
           "lora": {"r": 8, "alpha": 16}, "data": {"source": "demo"},
           "rewards": [{"name": "numeric_answer"}, {"file": "rewards.py", "weight": 0.5}],
           # beta left at TRL's 0.05, so the KL reference takes part too; 1e-4 so that steps visibly move the adapter.
           "rloo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 16, "max_steps": 2,
                    "save_steps": 100, "learning_rate": 1e-4, **rloo},
           "output": {"runs_dir": str(tmp_path / "runs"), "samples_per_step": 8}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _train(tmp_path, *args, stop_at: int | None = None):
    env = {"STOP_FILE": str(tmp_path / args[-1] / runs.STOP_FILE) if stop_at else "", "STOP_AT": str(stop_at or 0)}
    result = run_cli("train", *args, cwd=tmp_path, env=env, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return tmp_path / args[-1]


def _read(run_dir, name):
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines() if line.strip()]


def _assert_same_run(a, b):
    metrics_a, metrics_b = _read(a, "metrics.jsonl"), _read(b, "metrics.jsonl")
    assert [m["step"] for m in metrics_a] == [m["step"] for m in metrics_b]
    for x, y in zip(metrics_a, metrics_b):
        keys = {k for k in x.keys() | y.keys() if not k.startswith(MEASURED)}
        assert keys <= x.keys() & y.keys(), keys ^ (x.keys() & y.keys())
        for k in sorted(keys):
            if k.startswith(EXACT_PREFIXES) or not isinstance(x[k], float):
                assert x[k] == y[k], (x["step"], k)
            else:
                assert x[k] == pytest.approx(y[k], rel=1e-3, abs=1e-7), (x["step"], k)
    texts = lambda run: [(s["step"], s["group"], s["completion"], s["total"]) for s in _read(run, "samples.jsonl")]  # noqa: E731
    assert texts(a) == texts(b)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, tiny_model_dir):
    tmp_path = tmp_path_factory.mktemp("same-run")
    config = _config(tmp_path, tiny_model_dir)
    run = _train(tmp_path, config, "--run-dir", "whole")
    assert json.loads((run / "status.json").read_text())["backend"] == "unsloth"
    metrics = _read(run, "metrics.jsonl")
    assert all(m["grad_norm"] > 0 for m in metrics), "every step must move the adapter"
    # A resume that lost the trained adapter would log a KL of exactly 0 at step 2 (policy = reference). Not "> 0": TRL's
    # RLOO logs the sampled estimate (policy minus reference log-probability of the drawn tokens), which can be a little
    # negative after one small step (-8.5e-5 on an H200, 2026-12-04).
    assert metrics[-1]["kl"] != 0
    return tmp_path, config, run


def test_two_runs_with_one_seed_are_the_same_run(uninterrupted):
    tmp_path, config, whole = uninterrupted
    _assert_same_run(whole, _train(tmp_path, config, "--run-dir", "again"))


def test_stop_after_step_1_and_resume_equals_the_uninterrupted_run(uninterrupted):
    tmp_path, config, whole = uninterrupted
    parts = _train(tmp_path, config, "--run-dir", "parts", stop_at=1)
    assert json.loads((parts / "status.json").read_text())["step"] == 1
    result = run_cli("train", "--resume", parts, cwd=tmp_path, env={"STOP_FILE": ""}, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    _assert_same_run(whole, parts)


def test_the_config_seed_decides_the_lora_initialisation(tiny_model_dir):
    code = f"""
import json
from rloo_studio.config import LoraConfig, ModelConfig
from rloo_studio.engine.stack import import_training_stack
from rloo_studio.engine.model import load_model
stack = import_training_stack("unsloth")
def lora_a(seed):
    loaded = load_model(ModelConfig(name_or_path={str(tiny_model_dir)!r}, backend="unsloth"), LoraConfig(r=4, alpha=8), stack, seed=seed)
    return [p.detach().float().flatten()[:20].tolist() for n, p in loaded.model.named_parameters() if "lora_A" in n][0]
print(json.dumps({{"cuda": stack.cuda, "a": lora_a(1), "b": lora_a(1), "c": lora_a(2)}}))
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["cuda"] is True
    assert out["a"] == out["b"], "one seed, two different LoRA initialisations"
    assert out["a"] != out["c"], "the seed does not reach Unsloth's LoRA initialisation"

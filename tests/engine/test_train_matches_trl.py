"""What the run directory records is what TRL trains on: advantages, adapter precision, seeds, resume.

Every run is the real `run_training` path on the tiny local model. Where a test needs TRL's own
tensors it captures them itself, in the training process, by wrapping TRL's class methods before
the run starts (`INSTRUMENTED_RUN`), independently of what the studio records.
"""

from __future__ import annotations

import json

import pytest
from helpers import ROOT, STOPPING_REWARDS, run_cli, run_code

from rloo_studio import runs
from rloo_studio.runs.step_time import KEYS, STEP_KEY, TOKENS_KEY

pytestmark = pytest.mark.slow

# Runs `run_training` with TRL's RLOOTrainer instrumented at class level: the advantages every
# `_generate_and_score_completions` returns (the tensor `_compute_loss` trains on), the dtypes of the
# LoRA parameters and the number of bitsandbytes 4-bit layers when `train()` starts, and how many lora_A
# entries differ after training.
INSTRUMENTED_RUN = r"""
import json, sys
from rloo_studio.engine.stack import import_training_stack
from rloo_studio.config import RunConfig
config_path, run_dir, out_path = sys.argv[1:4]
cfg = RunConfig.load(config_path)
stack = import_training_stack(cfg.model.backend)
torch, RLOOTrainer = stack.torch, stack.trl.RLOOTrainer
record = {"advantages": {}, "lora_dtypes": None}
original_generate = RLOOTrainer._generate_and_score_completions
original_train = RLOOTrainer.train

def generate(self, *args, **kwargs):
    output = original_generate(self, *args, **kwargs)
    record["advantages"][self.state.global_step + 1] = output["advantages"].detach().cpu().tolist()
    return output

def train(self, *args, **kwargs):
    import bitsandbytes
    record["bnb_4bit_layers"] = sum(isinstance(m, bitsandbytes.nn.Linear4bit) for m in self.model.modules())
    # Trainable ones only: TRL adds a frozen copy of the adapter ("ref") as the KL reference.
    lora = {n: p for n, p in self.model.named_parameters() if "lora_" in n and p.requires_grad}
    record["lora_dtypes"] = sorted({str(p.dtype) for p in lora.values()})
    before = {n: p.detach().float().clone() for n, p in lora.items() if "lora_A" in n}
    result = original_train(self, *args, **kwargs)
    changed = sum(int((p.detach().float() != before[n]).sum()) for n, p in lora.items() if n in before)
    record["lora_A_changed"] = changed / sum(t.numel() for t in before.values())
    return result

RLOOTrainer._generate_and_score_completions = generate
RLOOTrainer.train = train
from rloo_studio.engine.train import run_training
run_training(cfg, run_dir)
json.dump(record, open(out_path, "w"))
"""


def _instrumented_run(workspace, tmp_path, **sections) -> tuple[dict, list[dict]]:
    config = workspace.write_config(**sections)
    run_dir, out = tmp_path / "run", tmp_path / "trl.json"
    backend = (sections.get("model") or {}).get("backend", "auto")
    result = run_code(INSTRUMENTED_RUN, config, run_dir, out, stack="unsloth" if backend == "auto" else backend,
                      cwd=workspace.path, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(out.read_text()), runs.read_jsonl(run_dir / runs.SAMPLES_FILE)


def _leave_one_out(values: list[float]) -> list[float]:
    return [v - (sum(values) - v) / (len(values) - 1) for v in values]


@pytest.mark.parametrize("case", [
    # beta > 0 without normalising, 4-bit on the transformers+PEFT backend (TRL casts its LoRA weights to bf16)
    {"model": {"backend": "transformers", "load_in_4bit": True}, "rloo": {"beta": 0.05}},
    # beta > 0 and normalised advantages, 16-bit weights on the default backend
    {"model": {"backend": "auto", "dtype": "bfloat16"}, "rloo": {"beta": 0.05, "normalize_advantages": True}},
], ids=["beta-4bit", "beta-normalised-16bit"])
def test_samples_hold_trls_advantages_and_lora_stays_fp32(workspace, tmp_path, case):
    k = 4
    rloo = {"num_generations": k, "per_device_train_batch_size": 8, "max_completion_length": 8, "learning_rate": 1e-5,
            "max_steps": 3, "save_steps": 100, **case["rloo"]}
    trl, samples = _instrumented_run(workspace, tmp_path, model=case["model"], rloo=rloo)

    # Item: advantages shown = advantages trained, exactly (the same float32 values).
    assert {s["step"] for s in samples} == {1, 2, 3}
    groups = {}
    for s in samples:
        groups.setdefault((s["step"], s["group"]), []).append(s)
    for (step, group), rows in groups.items():
        assert len(rows) == k
        for j, s in enumerate(rows):
            assert s["advantage"] == trl["advantages"][str(step)][group * k + j], (step, group, j)
    penalties = [s["kl_penalty"] for s in samples]
    assert all(isinstance(p, float) for p in penalties)
    assert any(p != 0.0 for p in penalties), "after the first update the policy differs from the reference"
    if not rloo.get("normalize_advantages"):
        # The KL column explains the advantage: leave-one-out on (total - beta x KL), TRL's order of operations.
        for group in groups.values():
            expected = _leave_one_out([g["total"] - g["kl_penalty"] for g in group])
            assert [g["advantage"] for g in group] == pytest.approx(expected, abs=1e-5)
    else:
        # Normalised: the recorded values are not the plain leave-one-out of the totals.
        plain = [a for group in groups.values() for a in _leave_one_out([g["total"] for g in group])]
        assert [s["advantage"] for group in groups.values() for s in group] != pytest.approx(plain, abs=1e-3)

    # The 4-bit case trains a quantised model: every linear layer of the tiny model's 2 blocks is bitsandbytes 4-bit.
    assert trl["bnb_4bit_layers"] == (14 if case["model"].get("load_in_4bit") else 0)
    # Item: the LoRA weights train in fp32, so small updates are not rounded away.
    assert trl["lora_dtypes"] == ["torch.float32"]
    # Step 1 moves only lora_B (lora_A's gradient is zero while lora_B is zero); steps 2-3 move lora_A.
    assert trl["lora_A_changed"] > 0.9, trl["lora_A_changed"]


# Wall-clock measurements: TRL's step time, the records' time stamps, and where each step's time went.
VARYING_KEYS = {"time", "step_time", *KEYS, STEP_KEY, TOKENS_KEY}


def _comparable(metrics: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if k not in VARYING_KEYS} for m in metrics]


def _train(workspace, run_dir, config, *extra, stop_at: int | None = None):
    env = {"STOP_FILE": str(run_dir / runs.STOP_FILE), "STOP_AT": str(stop_at)} if stop_at else {"STOP_FILE": ""}
    result = run_cli("train", config, "--run-dir", run_dir, *extra, cwd=workspace.path, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def _stop_resume_matches_uninterrupted(workspace, tmp_path, backend, rloo, stop_at, expect_stop):
    (workspace.path / "rewards.py").write_text(STOPPING_REWARDS)
    config = workspace.write_config(model={"backend": backend}, rloo=rloo)
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    _train(workspace, whole, config)
    result = _train(workspace, parts, config, stop_at=stop_at)
    assert runs.read_status(parts)["state"] == "stopped" and runs.read_status(parts)["step"] == expect_stop, result.stdout[-2000:]
    first = runs.read_jsonl(parts / runs.METRICS_FILE)
    uninterrupted = _comparable(runs.read_jsonl(whole / runs.METRICS_FILE))
    # Two fresh runs with one seed: the same run (LoRA initialisation included), on this backend.
    assert _comparable(first) == uninterrupted[:expect_stop], "two runs with the same seed differ"

    resumed = run_cli("train", "--resume", parts, cwd=workspace.path, env={"STOP_FILE": ""})
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert runs.read_status(parts)["state"] == "finished"
    assert _comparable(runs.read_jsonl(parts / runs.METRICS_FILE)) == uninterrupted
    assert runs.read_jsonl(parts / runs.SAMPLES_FILE) == runs.read_jsonl(whole / runs.SAMPLES_FILE)
    return result


def test_default_settings_stop_after_1_and_resume_equals_2_uninterrupted_steps(workspace, tmp_path):
    # Every step generates (num_iterations 1, one generation per step) and moves the adapter, so step 2 of
    # the resumed run trains on the checkpoint's adapter and optimizer state, and beta > 0 (TRL's default)
    # also needs the checkpoint's KL reference. On one CPU the same operations give the same bits: exact.
    rloo = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 8, "max_steps": 2,
            "save_steps": 100, "beta": 0.05}
    _stop_resume_matches_uninterrupted(workspace, tmp_path, "transformers", rloo, stop_at=1, expect_stop=1)
    metrics = runs.read_jsonl(tmp_path / "whole" / runs.METRICS_FILE)
    assert all(m["grad_norm"] > 0 for m in metrics), "a step that does not move the adapter cannot show a resume losing it"
    assert "kl" in metrics[-1]


def test_two_runs_with_one_seed_log_the_same_metrics_on_the_unsloth_backend(workspace, tmp_path):
    config = workspace.write_config(model={"backend": "auto"}, rloo={"per_device_train_batch_size": 4, "max_completion_length": 8,
                                                                     "max_steps": 2, "save_steps": 100})
    first, second = tmp_path / "first", tmp_path / "second"
    _train(workspace, first, config)
    _train(workspace, second, config)
    assert runs.read_status(first)["backend"] == "unsloth"
    metrics = _comparable(runs.read_jsonl(first / runs.METRICS_FILE))
    assert len(metrics) == 2 and metrics == _comparable(runs.read_jsonl(second / runs.METRICS_FILE))


def test_two_passes_per_batch_stop_waits_for_the_cycle_end_and_resume_equals_uninterrupted(workspace, tmp_path):
    # num_iterations 2: completions generated at steps 1 and 3, reused at steps 2 and 4. A stop asked for
    # during step 1 waits for step 2, the end of the cycle; save_steps 1 saves only at cycle ends too.
    rloo = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 8, "max_steps": 4,
            "save_steps": 1, "num_iterations": 2, "beta": 0.0}
    result = _stop_resume_matches_uninterrupted(workspace, tmp_path, "transformers", rloo, stop_at=1, expect_stop=2)
    assert "stopping at the end of this generation cycle" in result.stdout
    assert [step for step, _ in runs.checkpoints(tmp_path / "whole")] == [2, 4]


def test_the_config_seed_decides_the_lora_initialisation_on_both_backends(tiny_model_dir):
    code = f"""
import json
from rloo_studio.config import LoraConfig, ModelConfig
from rloo_studio.engine.stack import import_training_stack
from rloo_studio.engine.model import load_model
stack = import_training_stack(BACKEND)
def lora_a(seed):
    loaded = load_model(ModelConfig(name_or_path={str(tiny_model_dir)!r}, backend=BACKEND), LoraConfig(r=4, alpha=8), stack, seed=seed)
    return [p.detach().flatten()[:20].tolist() for n, p in loaded.model.named_parameters() if "lora_A" in n][0]
print(json.dumps({{"backend": stack.backend, "a": lora_a(1), "b": lora_a(1), "c": lora_a(2)}}))
"""
    for backend, expected in (("auto", "unsloth"), ("transformers", "transformers")):
        result = run_code(code.replace("BACKEND", repr(backend)), stack=expected, cwd=ROOT, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        out = json.loads(result.stdout.strip().splitlines()[-1])
        assert out["backend"] == expected
        assert out["a"] == out["b"], f"{backend}: one seed, two different LoRA initialisations"
        assert out["a"] != out["c"], f"{backend}: the seed does not reach the LoRA initialisation"

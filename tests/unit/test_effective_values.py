"""One effective value per `rloo` key: the page, the estimate, the trial, training and the exported script read the
same values (RunConfig.effective_rloo / RunConfig.batch_plan), and the run's seed splits the data everywhere."""

from __future__ import annotations

import json

import pytest

from rloo_studio import scan
from rloo_studio.workers import trial
from rloo_studio.batching import BatchPlan
from rloo_studio.config import RunConfig
from rloo_studio.data import load_rows

ROWS = [{"prompt": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(40)]


def _config(tmp_path, **rloo) -> RunConfig:
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    data = {"data": {"source": "d.jsonl", "test_fraction": 0.25}, "rewards": [{"name": "numeric_answer"}]}
    return RunConfig.from_dict({**data, **({"rloo": rloo} if rloo else {})}, base_dir=tmp_path)


def test_a_config_without_an_rloo_section_plans_what_training_uses(tmp_path):
    cfg = _config(tmp_path)
    training = BatchPlan(per_device=4, accumulation=1, processes=1, num_generations=4, steps_per_generation=1, num_iterations=1)
    assert cfg.batch_plan() == training
    # The trial's length of the whole run: the 100 steps training trains, not num_train_epochs over the rows.
    assert trial.run_steps(cfg, training, 30) == 100
    # The difficulty scan samples one training step's prompt groups at a time: 4 completions = 1 prompt.
    assert scan.groups_per_generation(cfg) == 1


def test_every_effective_value_is_set_and_a_config_value_wins(tmp_path):
    effective = _config(tmp_path, gradient_accumulation_steps=2, seed=0).effective_rloo()
    assert effective["gradient_accumulation_steps"] == 2 and effective["seed"] == 0
    # The keys a backend could otherwise fill with its own defaults (Unsloth's RLOOConfig does on a GPU).
    for key, value in {"optim": "adamw_torch_fused", "weight_decay": 0.0, "warmup_steps": 0, "num_generations": 4,
                       "per_device_train_batch_size": 4, "max_steps": 100, "learning_rate": 1e-5}.items():
        assert effective[key] == value, key


def test_seed_0_splits_the_data_in_training_the_preview_and_the_scan(tmp_path, monkeypatch):
    from rloo_studio.engine.preflight import preflight
    from rloo_studio.engine.sampling import pick_rows

    cfg = _config(tmp_path, seed=0)
    expected = load_rows(cfg.data, cfg.base_dir, seed=0)
    assert load_rows(cfg.data, cfg.base_dir, seed=42).test != expected.test  # the seeds really split differently
    assert preflight(cfg).test == expected.test, "seed 0 became another seed for training's split"
    picked = pick_rows(cfg, len(ROWS), seed=3)  # the preview's prompts come from training's rows
    assert sorted(r["prompt"] for r in picked) == sorted(r["prompt"] for r in expected.train)

    seen: list[dict] = []

    class Sampled(Exception):
        pass

    def sample(rows, seed):
        seen.extend(rows)
        raise Sampled

    monkeypatch.setattr("rloo_studio.workers.scorer.start_scorer", lambda: None)
    with pytest.raises(Sampled):
        scan.run_scan(cfg, sample, tmp_path / "runs", limit=1)
    assert seen and all(row in expected.train for row in seen), "the scan sampled a held-out row"
    with pytest.raises(Sampled):
        scan.run_scan(cfg, sample, tmp_path / "runs")
    assert len(seen) == 1 + 1  # one step's prompt group per batch


def test_the_train_tab_line_counts_the_configs_other_batch_keys():
    from rloo_studio.ui.train_tab import batch_summary

    base = {"config": {"rloo": {"gradient_accumulation_steps": 2, "optim": "adamw_8bit"}}, "base_dir": "."}
    line = batch_summary(8, 8, 1, base)
    assert "16 completions (8 per device × 2 accumulation steps × 1 process) = 2 prompts × 8 completions" in line
    assert "Optimiser adamw_8bit" in line and "seed 42" in line
    # The Seed field, once changed, is what runs: the line said the loaded config's 42 while the run used 7.
    changed = batch_summary(8, 8, 1, base, 7)
    assert "random seed 7" in changed and "seed 42" not in changed


def test_the_trial_reports_the_plan_its_trainer_used(tmp_path):
    from rloo_studio import runs

    cfg = _config(tmp_path)
    for step, time in ((1, 100.0), (2, 104.0)):
        runs.append_jsonl(tmp_path / runs.METRICS_FILE, {"step": step, "time": time})
    # What a trainer that doubled the accumulation (Unsloth's RLOOConfig default) and turned on fp16 would record.
    held = {**RunConfig(rloo={"gradient_accumulation_steps": 2}).effective_rloo(), "steps_per_generation": 2, "world_size": 1}
    runs.write_json_atomic(tmp_path / runs.TRAINER_ARGS_FILE, {"trainer": "UnslothRLOOTrainer", "args": held,
                                                                "changed": {"fp16": [False, True]}})
    m = trial._measurement(cfg, cfg.batch_plan(), tmp_path, 2, 1, 99.0, 30, None)
    assert m.new_prompts_per_step == 2 and m.epochs == pytest.approx(100 * 2 / 30)
    lines = "\n".join(trial.summary_lines(m))
    assert "as the trial's trainer ran it: Each step trains on 8 completions (4 per device × 2 accumulation steps" in lines
    assert "the trainer used fp16 = True, not the False the settings give" in lines


def test_the_estimate_says_the_step_it_estimates(tmp_path):
    from helpers import ROOT, cli_in_process

    preset = ROOT / "presets" / "gpu-16gb.yaml"
    out = cli_in_process("estimate", preset, "--gpu-gb", "16", cwd=tmp_path).stdout
    assert ("Each step trains on 8 completions (8 per device × 1 accumulation step × 1 process) = 1 prompt × 8 completions"
            in out), out
    assert "Optimiser adamw_torch_fused, weight decay 0, 0 warm-up steps, linear learning-rate schedule, seed 42." in out
    data = json.loads(cli_in_process("estimate", preset, "--gpu-gb", "16", "--json", cwd=tmp_path).stdout)
    assert data["trainer_arguments"] == RunConfig.load(preset).effective_rloo()
    assert data["batch_plan"]["accumulation"] == 1

"""Alerts that act, in a real training run on the tiny model: a reward that looks for an <answer> tag the prompts never
ask for warns before training; with `alerts.on_no_signal: stop` the run stops itself with a checkpoint, its status says
why (the scan's advice and the sentence to add), the badge says what was done, and `--resume` continues from the
stop's checkpoint without stopping again for the same alert."""

from __future__ import annotations

import pytest
from helpers import only_run_dir, run_cli

from rloo_studio import runs
from rloo_studio.runs import alerts

pytestmark = pytest.mark.slow

TAGGED_REWARD = '''
import re

def tagged(completions, **kwargs):
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if re.search(r"<answer>.*</answer>", t) else 0.0 for t in texts]
'''


def test_a_run_without_learning_signal_stops_itself_and_resumes_from_its_checkpoint(workspace):
    (workspace.path / "rewards.py").write_text(TAGGED_REWARD)
    config = workspace.write_config(rewards=[{"file": "rewards.py"}], alerts={"on_no_signal": "stop"},
                                    rloo={"max_steps": 8, "save_steps": 2, "max_completion_length": 8})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    # The prompt <-> reward check warned before training, with the sentence to add.
    assert "warning: `rewards.py:*` looks for <answer>…</answer>" in result.stdout
    assert "Put your final answer between <answer> and </answer>." in result.stdout
    assert "first batch: 0 of 8 completions write <answer>…</answer>, which `rewards.py:*` looks for" in result.stdout
    # The alert is raised at step 3 (on that step's log); the stop is taken at the next step's end, with a checkpoint.
    status = runs.read_status(run_dir)
    stopped_at = alerts.NO_SIGNAL_STEPS + 1
    assert status["state"] == "stopped" and status["step"] == stopped_at, status
    assert "No learning signal since step 1" in status["note"] and "alerts.on_no_signal: stop" in status["note"]
    assert "difficulty scan's advice" in status["note"] and "<answer>" in status["note"]
    assert (run_dir / runs.CHECKPOINTS_DIR / f"checkpoint-{stopped_at}").is_dir()
    assert f"Continue with: rloo-studio train --resume {run_dir}" in result.stdout
    records = runs.read_jsonl(run_dir / runs.ALERTS_FILE)
    [action] = [r for r in records if r["event"] == alerts.ACTION_EVENT]
    assert action["kind"] == alerts.NO_SIGNAL and action["step"] == alerts.NO_SIGNAL_STEPS and action["taken"] == "stop"

    from rloo_studio.ui.train_tab import TrainTab

    badge = TrainTab.alerts_of(str(run_dir))
    assert 'data-taken="stop"' in badge and f"asked the run to stop at step {alerts.NO_SIGNAL_STEPS}" in badge

    again = run_cli("train", "--resume", run_dir, "rloo.max_steps=6", cwd=workspace.path)
    assert again.returncode == 0, again.stderr[-4000:]
    status = runs.read_status(run_dir)
    assert status["resumed_from"] == stopped_at and status["state"] == "finished" and status["step"] == 6, status
    assert len([r for r in runs.read_jsonl(run_dir / runs.ALERTS_FILE) if r["event"] == alerts.ACTION_EVENT]) == 1


def test_a_held_out_plateau_stops_the_run_early_and_keeps_the_best_checkpoint(workspace):
    """With a learning rate of 1e-12 the model does not change its greedy answers, so every held-out check ties the first: no check beats the
    best, and with heldout_patience 2 the third check (step 3) stops the run, keeping checkpoint-1 from save_total_limit."""
    config = workspace.write_config(alerts={"on_heldout_plateau": "stop", "heldout_patience": 2},
                                    data={"source": "data.jsonl", "test_fraction": 0.2},
                                    rloo={"max_steps": 8, "save_steps": 1, "save_total_limit": 2, "learning_rate": 1.0e-12,
                                          "max_completion_length": 8})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    status = runs.read_status(run_dir)
    assert status["state"] == "stopped" and status["step"] == 4, status
    assert "Held-out reward stalled since step 2" in status["note"] and "checkpoint-1, the best held-out check, is kept" in status["note"]
    kept = sorted(p.name for p in (run_dir / runs.CHECKPOINTS_DIR).glob("checkpoint-*"))
    assert kept == ["checkpoint-1", "checkpoint-4"], kept  # without keeping it, save_total_limit 2 would leave 3 and 4
    [action] = [r for r in runs.read_jsonl(run_dir / runs.ALERTS_FILE) if r["event"] == alerts.ACTION_EVENT]
    assert action["kind"] == alerts.HELDOUT_PLATEAU and action["step"] == 3


# Nothing to game up to step 2 (a constant scores the probes like the real completions); from step 3 on it pays for
# length, which the 'rambling' probe wins at the checkpoint of step 4.
HACKABLE_FROM_STEP_3 = '''
def hackable(completions, trainer_state, **kwargs):
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    if trainer_state.global_step < 3:
        return [0.0 for _ in texts]
    return [float(len(t)) for t in texts]
'''


def test_a_hacking_alarm_rolls_the_run_back_and_resume_continues_from_the_last_good_checkpoint(workspace):
    (workspace.path / "rewards.py").write_text(HACKABLE_FROM_STEP_3)
    config = workspace.write_config(rewards=[{"file": "rewards.py"}], alerts={"on_hacking": "rollback"},
                                    rloo={"max_steps": 8, "save_steps": 2, "max_completion_length": 8})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    [action] = [r for r in runs.read_jsonl(run_dir / runs.ALERTS_FILE) if r["event"] == alerts.ACTION_EVENT]
    assert action["kind"] == alerts.PROBE_WINS and action["step"] == 4 and action["taken"] == "rollback"
    assert "alerts.on_hacking: rollback" in action["done"] and "Rolled back to checkpoint-2" in result.stdout
    status = runs.read_status(run_dir)
    assert status["state"] == "stopped" and status["step"] == 5 and status["last_checkpoint"] == 2, status
    assert "Rolled back to checkpoint-2" in status["note"]
    assert [s for s, _ in runs.checkpoints(run_dir)] == [2]
    assert sorted(p.name for p in (run_dir / "checkpoints.rolled-back").iterdir()) == ["checkpoint-4", "checkpoint-5"]

    again = run_cli("train", "--resume", run_dir, "rloo.max_steps=4", "alerts.on_hacking=warn", cwd=workspace.path)
    assert again.returncode == 0, again.stderr[-4000:]
    status = runs.read_status(run_dir)
    assert status["resumed_from"] == 2 and status["state"] == "finished" and status["step"] == 4, status


def test_a_hacking_alarm_raises_beta_and_the_run_trains_on_with_it(workspace):
    """LoRA with beta 0: the alarm at checkpoint-4 sets beta 0.02; TRL logs a KL from the next generation on (it logs
    none with beta 0), and the run's config.yaml holds the new value for a resume."""
    (workspace.path / "rewards.py").write_text(HACKABLE_FROM_STEP_3)
    config = workspace.write_config(rewards=[{"file": "rewards.py"}], alerts={"on_hacking": "raise_beta"},
                                    rloo={"max_steps": 6, "save_steps": 2, "max_completion_length": 8, "beta": 0.0})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    status = runs.read_status(run_dir)
    assert status["state"] == "finished" and status["step"] == 6, status
    [action] = [r for r in runs.read_jsonl(run_dir / runs.ALERTS_FILE) if r["event"] == alerts.ACTION_EVENT]
    assert action["taken"] == "raise_beta" and action["step"] == 4 and "from 0 to 0.02" in action["done"]
    metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    assert [m["step"] for m in metrics if "kl" in m] == [5, 6]
    # A real KL, not the 0 that placeholders for the skipped old log-prob pass gave (its policy minus reference
    # difference came out exactly 0 once beta was raised on a run that started with beta 0).
    assert all(m["kl"] != 0 for m in metrics if "kl" in m), [m["kl"] for m in metrics if "kl" in m]
    from rloo_studio.config import RunConfig

    assert RunConfig.load(run_dir / runs.CONFIG_FILE).rloo["beta"] == 0.02

"""Live health alerts from real training runs on the tiny model: `rloo-studio train` writes alerts.jsonl, prints a
line when an alert begins, and the Train and Runs tabs show it as a badge.

A constant reward gives no learning signal from the first step; a reward that pays for length (len(completion))
drives completions to the limit and scores the preview's 'rambling' probe far above anything the model writes.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from helpers import only_run_dir, run_cli

from rloo_studio import runs
from rloo_studio.runs import alerts

pytestmark = pytest.mark.slow

CONSTANT_REWARD = '''
def constant(completions, **kwargs):
    return [1.0 for _ in completions]
'''

LENGTH_REWARD = '''
def longer(completions, **kwargs):
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [float(len(t)) for t in texts]
'''


# Pays for length on the first step only, so the model moves away from the start model; from then on every
# completion scores 5, which reward_clip_range clips to 2: every group tied on reward, their KL parts not.
TIED_AFTER_ONE_STEP = '''
def tied_after_one_step(completions, trainer_state, **kwargs):
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    if trainer_state.global_step == 0:
        return [len(t) / 100 for t in texts]
    return [5.0 for _ in texts]
'''


def _train(workspace, reward_code: str, steps: int, **rloo):
    (workspace.path / "rewards.py").write_text(reward_code)
    config = workspace.write_config(rewards=[{"file": "rewards.py"}],
                                    rloo={"max_steps": steps, "save_steps": 2, "per_device_train_batch_size": 8,
                                          "max_completion_length": 8, **rloo})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    return run_dir, runs.read_jsonl(run_dir / runs.ALERTS_FILE), result.stdout


def test_constant_reward_raises_no_signal_and_the_tabs_show_it(workspace):
    run_dir, records, stdout = _train(workspace, CONSTANT_REWARD, steps=4)
    metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    assert [m["frac_reward_zero_std"] for m in metrics] == [1.0] * 4
    began = [r for r in records if r["event"] == "began" and r["kind"] == alerts.NO_SIGNAL]
    assert len(began) == 1, records
    assert began[0]["began_step"] == 1 and began[0]["step"] == alerts.NO_SIGNAL_STEPS
    assert began[0]["numbers"]["share"] == began[0]["numbers"]["frac_reward_zero_std"] == 1.0
    # A constant reward scores the probes exactly like the real completions: no hacking alarm.
    assert not [r for r in records if r["kind"] == alerts.PROBE_WINS], records
    assert f"alert at step {alerts.NO_SIGNAL_STEPS} (since step 1): No learning signal" in stdout
    assert all(m["rewards/constant/none_share"] == 0.0 for m in metrics)

    from rloo_studio.ui.runs_tab import RunsTab
    from rloo_studio.ui.train_tab import TrainTab

    badges = TrainTab.alerts_of(str(run_dir))
    # Raised at step 3, held to the run's last step (4): the badge says both ends.
    assert 'data-alert="no_signal"' in badges and "steps 1–4, to the run’s last step" in badges and "What to do:" in badges
    assert 'data-alert="no_signal"' in RunsTab.alerts_of(SimpleNamespace(runs_dir=run_dir.parent), run_dir.name)


def test_groups_tied_on_reward_raise_no_signal_under_a_kl_penalty_and_samples_show_the_clipped_totals(workspace):
    """With beta > 0 TRL's frac_reward_zero_std is taken after beta x KL and reads groups tied on reward as spread; the
    alert counts the reward totals (clipped as TRL clips them) and, with normalising on, says the KL noise is blown up;
    samples.jsonl shows what TRL trained on, by docs/training.md's steps: clip, minus beta x KL, leave-one-out,
    normalise over the batch (the batch's 8 completions are all recorded: samples_per_step 2 groups of 4)."""
    run_dir, records, stdout = _train(workspace, TIED_AFTER_ONE_STEP, steps=4, beta=0.05, learning_rate=2e-2,
                                      reward_clip_range=[-2.0, 2.0], normalize_advantages=True)
    metrics = {m["step"]: m for m in runs.read_jsonl(run_dir / runs.METRICS_FILE)}
    assert all(metrics[s][alerts.NO_SIGNAL_SHARE_KEY] == 1.0 for s in (2, 3, 4)), metrics
    # TRL's own share stays under the alert's threshold: the KL parts differ (what left the alert blind).
    assert all(metrics[s]["frac_reward_zero_std"] < alerts.NO_SIGNAL_SHARE for s in (2, 3, 4)), metrics
    [began] = [r for r in records if r["event"] == "began" and r["kind"] == alerts.NO_SIGNAL]
    assert (began["began_step"], began["step"]) == (2, 4) and began["numbers"]["share"] == 1.0
    assert "KL parts alone" in began["explanation"] and "trained hard on noise" in began["explanation"]
    assert "alert at step 4 (since step 2): No learning signal" in stdout

    k = workspace.config()["rloo"]["num_generations"]
    for step in (2, 3, 4):
        batch = [s for s in runs.read_jsonl(run_dir / runs.SAMPLES_FILE) if s["step"] == step]
        assert len(batch) == 8 and all(s["total"] == 2.0 and s["total_before_clip"] == 5.0 for s in batch)
        net = [s["total"] - s["kl_penalty"] for s in batch]
        loo = [net[i] - (sum(net[i // k * k:i // k * k + k]) - net[i]) / (k - 1) for i in range(len(net))]
        mean = sum(loo) / len(loo)
        std = (sum((a - mean) ** 2 for a in loo) / (len(loo) - 1)) ** 0.5
        assert [s["advantage"] for s in batch] == pytest.approx([(a - mean) / (std + 1e-4) for a in loo], abs=1e-3)
        # KL-only differences of hundredths at most, trained on as advantages of full size.
        assert max(abs(a) for a in loo) < 0.05 < 0.5 < max(abs(s["advantage"]) for s in batch), (loo, batch)


def test_length_gamed_reward_raises_the_length_alert_and_the_probe_alarm(workspace):
    run_dir, records, stdout = _train(workspace, LENGTH_REWARD, steps=4)
    kinds = {r["kind"] for r in records if r["event"] == "began"}
    assert alerts.LENGTH_LIMIT in kinds, records
    [probe] = [r for r in records if r["event"] == "began" and r["kind"] == alerts.PROBE_WINS]
    assert probe["step"] == probe["began_step"] == 2  # the first checkpoint (save_steps 2)
    # 'rambling' is ~2,400 characters, far longer than any 8-token completion the model writes.
    assert probe["numbers"]["winning"]["rambling"] > 100 * probe["numbers"]["real_mean"] > 0
    assert "alert at step 2 (since step 2): Possible reward hacking" in stdout


def test_a_resumed_run_sets_later_alerts_aside_and_raises_each_once(workspace):
    import shutil

    run_dir, records, _ = _train(workspace, CONSTANT_REWARD, steps=4)
    assert [(r["event"], r["step"]) for r in records if r["kind"] == alerts.NO_SIGNAL] == [("began", 3)]
    # Resume from checkpoint-2 (the test removes the later one): step 3, where the alert was raised, is trained again.
    shutil.rmtree(run_dir / "checkpoints" / "checkpoint-4")
    result = run_cli("train", "--resume", run_dir, "rloo.max_steps=6", cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert runs.read_status(run_dir)["resumed_from"] == 2
    after = [r for r in runs.read_jsonl(run_dir / runs.ALERTS_FILE) if r["kind"] == alerts.NO_SIGNAL]
    assert [(r["event"], r["began_step"], r["step"]) for r in after] == [("began", 1, 3)], after
    set_aside = runs.read_jsonl(run_dir / "alerts.superseded.jsonl")
    assert [(r["kind"], r["step"]) for r in set_aside if r["kind"] == alerts.NO_SIGNAL] == [(alerts.NO_SIGNAL, 3)]
    assert "alert at step 3 (since step 1): No learning signal" in result.stdout
    # Resumed after the alert was raised: the worker knows alerts.jsonl holds it and does not raise it again.
    again = run_cli("train", "--resume", run_dir, "rloo.max_steps=8", cwd=workspace.path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert runs.read_status(run_dir)["resumed_from"] == 6
    assert [r for r in runs.read_jsonl(run_dir / runs.ALERTS_FILE) if r["kind"] == alerts.NO_SIGNAL] == after
    assert "No learning signal" not in again.stdout


def test_the_heldout_check_at_a_checkpoint_is_what_eval_reports_for_it(workspace):
    """The held-out check scores the model as saved at the checkpoint: `rloo-studio eval --checkpoint` on the same
    first held-out prompts (greedy, the run's rewards) gives the same mean reward."""
    config = workspace.write_config(data={"source": "data.jsonl", "test_fraction": 0.25},
                                    rloo={"max_steps": 2, "save_steps": 1, "learning_rate": 2e-2})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    logged = re.findall(r"held-out check at step (\d+): mean reward (\S+) on the first (\d+) held-out prompts", result.stdout)
    assert [(step, n) for step, _, n in logged] == [("1", str(alerts.HELDOUT_PROMPTS)), ("2", str(alerts.HELDOUT_PROMPTS))]
    for step, mean, _ in logged:
        evaluated = run_cli("eval", run_dir, "--checkpoint", f"checkpoint-{step}", "--limit", alerts.HELDOUT_PROMPTS, "--json",
                            cwd=workspace.path)
        assert evaluated.returncode == 0, evaluated.stderr[-3000:]
        assert float(mean) == pytest.approx(json.loads(evaluated.stdout)["tuned"]["mean_reward"], rel=1e-3, abs=1e-4)

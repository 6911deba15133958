"""The training worker's reward-signal numbers (engine/health.py): measured from every function's values for a
generation batch, added to the next metric row, and read by the no-signal and dominance alerts."""

from __future__ import annotations

import pytest

from rloo_studio import runs
from rloo_studio.runs import alerts
from rloo_studio.engine.health import HealthWatch


def _batch(watch: HealthWatch, values: dict[str, list]) -> None:
    """One generation batch: every function's values, as the guarded reward functions hand them over."""
    n = len(next(iter(values.values())))
    kwargs = {"prompts": ["p"] * n, "completions": [f"c{i}" for i in range(n)]}
    for name, vals in values.items():
        watch.on_values(name, kwargs, vals)


def test_groups_tied_on_reward_raise_no_signal_though_trl_logs_spread_under_a_kl_penalty(tmp_path):
    facts = alerts.RunFacts(["correct", "format"], [1.0, 0.5], beta=0.05)
    watch = HealthWatch(tmp_path, facts, num_generations=2, say=lambda line: None)
    for step in range(1, alerts.NO_SIGNAL_STEPS + 1):
        # Two prompt groups, each tied on the total (1 + 0.5 x 0 = 0 + 0.5 x 2); TRL's std after beta x KL reads 0.5.
        _batch(watch, {"correct": [1.0, 0.0, 1.0, 1.0], "format": [0.0, 2.0, None, None]})
        row = watch.on_metrics({"step": step, "frac_reward_zero_std": 0.5})
        assert row[alerts.NO_SIGNAL_SHARE_KEY] == 1.0
    [record] = runs.read_jsonl(tmp_path / runs.ALERTS_FILE)
    assert record["kind"] == alerts.NO_SIGNAL and record["step"] == alerts.NO_SIGNAL_STEPS
    # A step that generated nothing new gets no share: it neither continues nor breaks a streak.
    assert alerts.NO_SIGNAL_SHARE_KEY not in watch.on_metrics({"step": 99})


def test_the_share_counts_totals_clipped_as_trl_clips_them(tmp_path):
    facts = alerts.RunFacts(["r"], [1.0], reward_clip_range=(-1.0, 1.0))
    watch = HealthWatch(tmp_path, facts, num_generations=2, say=lambda line: None)
    _batch(watch, {"r": [2.0, 3.0, 0.0, 0.5]})  # the first group clips to 1, 1: tied; the second is not
    assert watch.on_metrics({"step": 1})[alerts.NO_SIGNAL_SHARE_KEY] == 0.5
    plain = HealthWatch(tmp_path / "plain", alerts.RunFacts(["r"], [1.0]), num_generations=2, say=lambda line: None)
    _batch(plain, {"r": [2.0, 3.0, 0.0, 0.5]})
    assert plain.on_metrics({"step": 1})[alerts.NO_SIGNAL_SHARE_KEY] == 0.0


def test_each_functions_spread_is_measured_within_groups_and_averaged_over_batches(tmp_path):
    facts = alerts.RunFacts(["correct", "format"], [1.0, 2.0])
    watch = HealthWatch(tmp_path, facts, num_generations=2, say=lambda line: None)
    # `correct` differs only between the prompts (0, 0 against 1, 1): no spread within a group, none to RLOO.
    _batch(watch, {"correct": [0.0, 0.0, 1.0, 1.0], "format": [0.0, 1.0, 1.0, 0.0]})
    _batch(watch, {"correct": [0.0, 0.0, 1.0, 1.0], "format": [0.0, 0.5, 0.5, 0.0]})
    row = watch.on_metrics({"step": 1})
    assert row[alerts.GROUP_SPREAD_KEY.format(name="correct")] == 0.0
    # Weight 2 x values 0, 1: sample std sqrt(2); then 0, 0.5: sqrt(0.5); the row holds their mean.
    assert row[alerts.GROUP_SPREAD_KEY.format(name="format")] == pytest.approx((2 ** 0.5 + 0.5 ** 0.5) / 2)


def test_the_hack_probes_compare_totals_clipped_as_training_clips_them(tmp_path):
    """With reward_clip_range [0, 1] a long 'rambling' probe (raw total in the hundreds) and the real completions
    (raw 5, clipped 1) are worth the same to training: no probe out-scores them."""
    def length(completions, **kwargs):
        return [float(len(c)) for c in completions]

    def run(clip):
        (tmp_path / str(clip)).mkdir()
        watch = HealthWatch(tmp_path / str(clip), alerts.RunFacts(["length"], [1.0], reward_clip_range=clip),
                            num_generations=2, probe_funcs=[length], say=lambda line: None)
        _batch(watch, {"length": [5.0, 5.0]})
        return watch.on_checkpoint(2)

    assert "rambling" in run(None)["winning"]
    clipped = run((0.0, 1.0))
    assert clipped["winning"] == [] and clipped["real_mean"] == 1.0 and clipped["probes"]["rambling"] == 1.0

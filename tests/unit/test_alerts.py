"""The health-alert rules (rloo_studio.runs.alerts) on hand-made metric rows: each alert is raised when its condition
lasts, not raised when it does not, and names the step it began, was raised and ended."""

from __future__ import annotations

import pytest

from rloo_studio.runs import alerts as A

FACTS = A.RunFacts(["correct", "format"], [1.0, 0.5], max_completion_length=64)


def rows(**series) -> list[dict]:
    """Metric rows for steps 1..n from equal-length lists per key (None: the key is not logged at that step)."""
    n = len(next(iter(series.values())))
    out = []
    for i in range(n):
        row = {"step": i + 1}
        for key, values in series.items():
            if values[i] is not None:
                row[key.replace("__", "/")] = values[i]
        out.append(row)
    return out


def of_kind(found, kind):
    return [a for a in found if a.kind == kind]


def test_no_signal_needs_consecutive_steps_and_names_where_it_began():
    found = A.find_alerts(rows(frac_reward_zero_std=[0.0, 1.0, 1.0, 0.9, 1.0, 0.1, 0.0, 0.2]), FACTS)
    [alert] = of_kind(found, A.NO_SIGNAL)
    # It ends where it has been gone for as many steps as it took to raise it.
    assert (alert.began_step, alert.raised_step, alert.ended_step) == (2, 2 + A.NO_SIGNAL_STEPS - 1, 6)
    assert alert.numbers["frac_reward_zero_std"] == 0.9 and "What to do" not in alert.explanation


def test_no_signal_not_raised_for_short_or_low_stretches():
    short = [1.0] * (A.NO_SIGNAL_STEPS - 1) + [0.0] + [1.0] * (A.NO_SIGNAL_STEPS - 1)
    assert not of_kind(A.find_alerts(rows(frac_reward_zero_std=short), FACTS), A.NO_SIGNAL)
    below = [A.NO_SIGNAL_SHARE - 0.05] * 10
    assert not of_kind(A.find_alerts(rows(frac_reward_zero_std=below), FACTS), A.NO_SIGNAL)


def test_a_condition_that_flickers_is_one_alert_until_it_has_gone():
    flicker = [1.0, 1.0, 1.0, 0.5, 1.0, 0.5, 0.5, 1.0, 0.0, 0.0, 0.0]
    [alert] = of_kind(A.find_alerts(rows(frac_reward_zero_std=flicker), FACTS), A.NO_SIGNAL)
    assert (alert.began_step, alert.raised_step, alert.ended_step) == (1, 3, 9)
    assert alert.numbers["steps"] == A.NO_SIGNAL_STEPS


def test_a_missing_metric_neither_continues_nor_breaks_a_streak():
    found = A.find_alerts(rows(frac_reward_zero_std=[1.0, None, 1.0, 1.0]), FACTS)
    [alert] = of_kind(found, A.NO_SIGNAL)
    assert (alert.began_step, alert.raised_step, alert.ended_step) == (1, 4, None)


def test_no_signal_with_a_kl_penalty_reads_the_reward_totals_not_trls_std():
    """With beta > 0 TRL's frac_reward_zero_std is taken after beta x KL: every group tied on reward logged 0.5. The
    rule reads the worker's share of groups tied on reward."""
    n = A.NO_SIGNAL_STEPS + 1
    with_kl = A.RunFacts(["correct", "format"], [1.0, 0.5], beta=0.05)
    [alert] = of_kind(A.find_alerts(rows(frac_reward_zero_std=[0.5] * n, no_signal_share=[1.0] * n), with_kl), A.NO_SIGNAL)
    assert (alert.began_step, alert.raised_step) == (1, A.NO_SIGNAL_STEPS)
    assert alert.numbers["share"] == 1.0 and alert.numbers["frac_reward_zero_std"] == 0.5
    assert "KL parts alone" in alert.explanation and "Normalise" not in alert.action
    # Groups that differ in reward: no alert, whatever TRL's std says.
    assert not of_kind(A.find_alerts(rows(frac_reward_zero_std=[1.0] * n, no_signal_share=[0.25] * n), with_kl), A.NO_SIGNAL)
    # A row without the worker's share: TRL's std stands in only where it means the same thing (beta = 0).
    assert not of_kind(A.find_alerts(rows(frac_reward_zero_std=[1.0] * n), with_kl), A.NO_SIGNAL)
    assert of_kind(A.find_alerts(rows(frac_reward_zero_std=[1.0] * n), FACTS), A.NO_SIGNAL)


def test_no_signal_with_kl_and_normalising_warns_that_noise_is_blown_up():
    n = A.NO_SIGNAL_STEPS
    facts = A.RunFacts(["correct"], [1.0], beta=0.04, normalize_advantages=True)
    [alert] = of_kind(A.find_alerts(rows(frac_reward_zero_std=[0.5] * n, no_signal_share=[0.9] * n), facts), A.NO_SIGNAL)
    assert "beta = 0.04" in alert.explanation and "Normalise advantages" in alert.explanation and "noise" in alert.explanation
    assert "“Normalise advantages” off" in alert.action


def test_one_reward_dominates_by_its_spread_within_groups():
    n = A.DOMINANCE_STEPS + 2
    # Within-group spread of weight x value: correct 0.5, format 0.05: correct makes 99% of the spread.
    found = A.find_alerts(rows(rewards__correct__group_spread=[0.5] * n, rewards__format__group_spread=[0.05] * n), FACTS)
    [alert] = of_kind(found, A.DOMINANT)
    assert alert.subject == "correct" and alert.began_step == 1 and alert.raised_step == A.DOMINANCE_STEPS
    assert alert.numbers["share"] == pytest.approx(0.25 / 0.2525)
    assert "among the completions of one prompt" in alert.explanation
    # TRL's batch-wide std counts the spread between prompts (an easy one against a hard one), which moves no
    # advantage: a function whose std is 10 times larger, but spreads within groups alike, dominates nothing.
    balanced = rows(rewards__correct__std=[0.5] * n, rewards__format__std=[0.1] * n,
                    rewards__correct__group_spread=[0.2] * n, rewards__format__group_spread=[0.2] * n)
    assert not of_kind(A.find_alerts(balanced, FACTS), A.DOMINANT)


def test_a_reward_that_never_varied_is_named_instead_of_advising_its_weight():
    """"If the other rewards matter, raise their weights": but `format` scored the same on every completion of a
    prompt all along (spread 0), and no weight changes that (a walk, `says_hours` at 0.00 throughout)."""
    n = A.DOMINANCE_STEPS + 2
    found = A.find_alerts(rows(rewards__correct__group_spread=[0.5] * n, rewards__format__group_spread=[0.0] * n), FACTS)
    [alert] = of_kind(found, A.DOMINANT)
    assert "raise their weights" not in alert.action and "`format` never told two completions of a prompt apart" in alert.action
    assert "a weight changes nothing" in alert.action
    varied = A.find_alerts(rows(rewards__correct__group_spread=[0.5] * n, rewards__format__group_spread=[0.05] * n), FACTS)
    assert "raise their weights" in of_kind(varied, A.DOMINANT)[0].action


def test_dominance_holds_across_steps_that_generated_nothing_new():
    """With num_iterations 2 (or a generation batch spanning several steps), only every other step logs the rewards'
    spread within groups: the steps between are no evidence either way, not a break in the streak."""
    n = 2 * A.DOMINANCE_STEPS
    every_other = lambda value: [value if i % 2 == 0 else None for i in range(n)]  # noqa: E731
    found = A.find_alerts(rows(rewards__correct__group_spread=every_other(1.0), rewards__format__group_spread=every_other(0.0)),
                          FACTS)
    [alert] = of_kind(found, A.DOMINANT)
    assert alert.raised_step == 2 * A.DOMINANCE_STEPS - 1


def test_dominance_needs_two_functions_and_some_spread():
    n = A.DOMINANCE_STEPS + 1
    single = A.RunFacts(["correct"], [1.0])
    assert not A.find_alerts(rows(rewards__correct__group_spread=[0.5] * n), single)
    assert not of_kind(A.find_alerts(rows(rewards__correct__group_spread=[0.0] * n, rewards__format__group_spread=[0.0] * n),
                                     FACTS), A.DOMINANT)


def test_length_limit_rising_to_the_clip():
    clipped = [0.0, 0.1, 0.0, 0.3, 0.6, 0.8, 0.9]
    [alert] = of_kind(A.find_alerts(rows(completions__clipped_ratio=clipped), FACTS), A.LENGTH_LIMIT)
    assert (alert.began_step, alert.raised_step, alert.ended_step) == (5, 7, None)
    assert "up from" in alert.explanation and "e.g. 128" in alert.action
    assert not of_kind(A.find_alerts(rows(completions__clipped_ratio=[0.5] * 8), FACTS), A.LENGTH_LIMIT)  # half is not "more than half"


def test_length_collapse_against_the_start():
    lengths = [40, 42, 38, 30, 11, 10, 9, 30, 30, 30]
    [alert] = of_kind(A.find_alerts(rows(completions__mean_length=lengths), FACTS), A.LENGTH_COLLAPSE)
    assert (alert.began_step, alert.raised_step, alert.ended_step) == (5, 7, 8)
    assert alert.numbers["mean_length_at_start"] == 40
    assert not of_kind(A.find_alerts(rows(completions__mean_length=[40, 42, 38, 20, 15, 14, 13]), FACTS), A.LENGTH_COLLAPSE)
    # Completions that start tiny have no room to collapse.
    assert not of_kind(A.find_alerts(rows(completions__mean_length=[3, 3, 3, 0.5, 0.5, 0.5]), FACTS), A.LENGTH_COLLAPSE)


def test_entropy_collapse_and_blowup():
    falling = [1.0, 1.0, 1.0, 0.5, 0.15, 0.1, 0.1]
    [low] = of_kind(A.find_alerts(rows(entropy=falling), FACTS), A.ENTROPY_COLLAPSE)
    assert low.began_step == 5 and low.raised_step == 7
    rising = [1.0, 1.0, 1.0, 1.5, 2.5, 3.0, 3.0]
    [high] = of_kind(A.find_alerts(rows(entropy=rising), FACTS), A.ENTROPY_BLOWUP)
    assert high.began_step == 5 and high.raised_step == 7
    steady = [1.0, 1.0, 1.0, 0.8, 0.7, 0.9, 1.2]
    found = A.find_alerts(rows(entropy=steady), FACTS)
    assert not of_kind(found, A.ENTROPY_COLLAPSE) and not of_kind(found, A.ENTROPY_BLOWUP)
    # A model that starts near zero entropy doubling is not random text (ENTROPY_HIGH_FLOOR).
    assert not of_kind(A.find_alerts(rows(entropy=[0.1, 0.1, 0.1, 0.3, 0.3, 0.3]), FACTS), A.ENTROPY_BLOWUP)


def test_kl_blowup_per_completion_and_only_when_logged():
    n = A.KL_STEPS
    found = A.find_alerts(rows(kl=[0.01, 0.5, 0.5, 0.5], completions__mean_length=[30] * 4), FACTS)
    [alert] = of_kind(found, A.KL_BLOWUP)
    assert alert.began_step == 2 and alert.numbers["kl_per_completion"] == pytest.approx(15.0)
    assert not of_kind(A.find_alerts(rows(kl=[0.2] * (n + 2), completions__mean_length=[30] * (n + 2)), FACTS), A.KL_BLOWUP)
    assert not of_kind(A.find_alerts(rows(completions__mean_length=[30] * (n + 2)), FACTS), A.KL_BLOWUP)


def test_reward_mostly_none():
    key = A.NONE_SHARE_KEY.format(name="format")
    found = A.find_alerts(rows(**{key.replace("/", "__"): [0.0, 0.75, 1.0, 0.9, 0.2, 0.0, 0.1]}), FACTS)
    [alert] = of_kind(found, A.MOSTLY_NONE)
    assert alert.subject == "format" and (alert.began_step, alert.raised_step, alert.ended_step) == (2, 4, 5)
    assert not of_kind(A.find_alerts(rows(**{key.replace("/", "__"): [0.5] * 5}), FACTS), A.MOSTLY_NONE)


def test_probe_that_starts_out_scoring_the_real_completions():
    checks = [A.probe_check(2, {"empty": 0.0, "rambling": 0.4}, [0.5, 0.6, None]),
              A.probe_check(4, {"empty": 0.0, "rambling": 0.9}, [0.5, 0.6]),
              A.probe_check(6, {"empty": 0.0, "rambling": 0.2}, [0.5, 0.6])]
    assert checks[0]["winning"] == [] and checks[1]["winning"] == ["rambling"]
    [alert] = A.find_alerts([], FACTS, checks)
    assert (alert.kind, alert.began_step, alert.ended_step) == (A.PROBE_WINS, 4, 6)
    assert alert.numbers["winning"] == {"rambling": 0.9} and "'rambling' 0.9" in alert.explanation
    # Equal is not above: a constant reward scores the probes exactly like the real completions.
    assert A.probe_check(2, {"empty": 1.0}, [1.0, 1.0])["winning"] == []


def test_a_probe_must_beat_a_typical_real_completion_not_only_the_mean_of_a_few_penalties():
    # Found walking the app: real completions at 0 with one penalised at -0.25 (mean -0.016), an empty answer at 0: no
    # better than what the model writes, and no alarm. Clearly above the real ones, it still raises one.
    real = [0.0] * 15 + [-0.25]
    assert A.probe_check(20, {"empty": 0.0, "rambling": 0.0}, real)["winning"] == []
    assert A.probe_check(20, {"empty": 0.5}, real)["winning"] == ["empty"]


def test_tracker_writes_each_episode_once_when_it_begins_and_when_it_ends():
    tracker = A.Tracker()
    first = A.find_alerts(rows(frac_reward_zero_std=[1.0, 1.0, 1.0]), FACTS)
    begun, records = tracker.new_records(first)
    assert [a.kind for a in begun] == [A.NO_SIGNAL] and [r["event"] for r in records] == ["began"]
    assert records[0]["step"] == 3 and records[0]["began_step"] == 1
    assert tracker.new_records(A.find_alerts(rows(frac_reward_zero_std=[1.0, 1.0, 1.0, 1.0]), FACTS)) == ([], [])
    ended = rows(frac_reward_zero_std=[1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    begun, records = tracker.new_records(A.find_alerts(ended, FACTS))
    assert begun == [] and [(r["event"], r["step"], r["ended_step"]) for r in records] == [("ended", 5, 5)]
    # A resumed worker knows what alerts.jsonl already holds.
    again = A.Tracker.from_records(records + [first[0].record("began")])
    assert again.new_records(A.find_alerts(ended, FACTS)) == ([], [])


def test_current_folds_records_ongoing_first():
    ended = A.find_alerts(rows(frac_reward_zero_std=[1.0, 1.0, 1.0, 0.0, 0.0, 0.0]), FACTS)
    records = [a.record("began") for a in ended]
    no_signal = next(a for a in ended if a.kind == A.NO_SIGNAL)
    records.append(no_signal.record("ended"))
    later = A.find_alerts(rows(frac_reward_zero_std=[0.0] * 4, completions__clipped_ratio=[1.0] * 4), FACTS)
    records += [a.record("began") for a in later] + [{"torn": True}]
    shown = A.current(records)
    assert [(r["kind"], r["event"]) for r in shown] == [(A.LENGTH_LIMIT, "began"), (A.NO_SIGNAL, "ended")]


def test_heldout_falling_while_training_reward_rises_over_three_checks():
    def checks(train, heldout):
        return [A.heldout_check(2 * (i + 1), h, t) for i, (t, h) in enumerate(zip(train, heldout))]

    found = A.find_alerts([], FACTS, heldout_checks=checks([0.2, 0.3, 0.4, 0.5], [0.6, 0.55, 0.5, 0.45]))
    (alert,) = [a for a in found if a.kind == A.HELDOUT_FALLS]
    # Raised at the third check (steps 2, 4, 6: two rising and falling intervals), still going at the fourth.
    assert (alert.began_step, alert.raised_step, alert.ended_step) == (6, 6, None)
    assert alert.numbers["steps"] == [2, 4, 6] and alert.numbers["heldout"] == [0.6, 0.55, 0.5]
    assert "0.6 → 0.5" in alert.explanation and "Evaluate" in alert.action
    # Not raised: held-out flat within the noise floor, training reward not rising, or only two checks.
    assert not A.find_alerts([], FACTS, heldout_checks=checks([0.2, 0.3, 0.4], [0.6, 0.58, 0.56]))
    assert not A.find_alerts([], FACTS, heldout_checks=checks([0.2, 0.3, 0.3], [0.6, 0.5, 0.4]))
    assert not A.find_alerts([], FACTS, heldout_checks=checks([0.2, 0.3], [0.6, 0.4]))
    assert not A.find_alerts([], FACTS, heldout_checks=checks([0.2, 0.3, 0.4], [0.6, 0.7, 0.5]))  # up, then down: not each time
    # Ends at the first check where the pattern breaks.
    (alert,) = A.find_alerts([], FACTS, heldout_checks=checks([0.2, 0.3, 0.4, 0.5], [0.6, 0.5, 0.4, 0.45]))
    assert alert.ended_step == 8


def test_the_sampler_drifting_from_the_trainer_is_raised_on_a_large_gap_or_a_growing_one():
    """With fast generation vLLM samples and the trainer scores again: the worker logs the mean |trainer - sampler|
    log-probability per token (sampler/logprob_gap). RLOO in TRL has no correction for it."""
    n = A.SAMPLER_STEPS
    # A steady small gap (bf16 rounding between two engines): nothing.
    assert not of_kind(A.find_alerts(rows(sampler__logprob_gap=[0.01] * 12), FACTS), A.SAMPLER_DRIFT)
    # A gap that grows to several times where it started: raised where it grew, with the numbers behind it.
    growing = [0.01] * A.BASELINE_STEPS + [0.012, 0.05, 0.06, 0.07, 0.08]
    [alert] = of_kind(A.find_alerts(rows(sampler__logprob_gap=growing), FACTS), A.SAMPLER_DRIFT)
    assert alert.began_step == A.BASELINE_STEPS + 2 and alert.raised_step == A.BASELINE_STEPS + 1 + n
    assert alert.numbers["baseline"] == pytest.approx(0.01) and alert.numbers["gap"] == 0.07
    assert "0.07 nats per token" in alert.explanation and "fast generation" in alert.action.lower()
    # Large from the start (e.g. one engine samples at the temperature, the other scores without it): raised too.
    [alert] = of_kind(A.find_alerts(rows(sampler__logprob_gap=[0.3] * n, sampler__logprob_shift=[-0.3] * n), FACTS),
                      A.SAMPLER_DRIFT)
    assert alert.raised_step == n and "lower" in alert.explanation
    # Runs without fast generation log no gap: nothing.
    assert not of_kind(A.find_alerts(rows(entropy=[1.0] * 8), FACTS), A.SAMPLER_DRIFT)


def test_the_sampler_gap_is_taken_over_the_tokens_both_engines_scored():
    import doctest

    from rloo_studio.engine import sampler_gap

    assert doctest.testmod(sampler_gap).failed == 0
    # Tokens past the completion mask (after the end token) and tokens the sampler gave no number for are left out.
    assert sampler_gap.token_gap([[-1.0, None, -3.0]], [[-1.5, -9.0, -9.0]], [[1, 1, 0]]) == (0.5, -0.5)
    assert sampler_gap.token_gap([[None]], [[-1.0]], [[1]]) is None

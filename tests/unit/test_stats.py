"""rloo_studio.stats against published values and hand computations (no scipy, no numpy)."""

from __future__ import annotations

import math

import pytest

from rloo_studio import stats

# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics in
# Medicine 17:857-872, Table I, method 3 (score interval without continuity correction).
NEWCOMBE = [((81, 263), (0.2553, 0.3662)), ((15, 148), (0.0624, 0.1605)), ((0, 20), (0.0, 0.1611)),
            ((1, 29), (0.0061, 0.1718)), ((29, 29), (0.8830, 1.0))]


@pytest.mark.parametrize(("counts", "expected"), NEWCOMBE)
def test_wilson_matches_newcombes_table(counts, expected):
    low, high = stats.wilson(*counts)
    assert (round(low, 4), round(high, 4)) == expected


def test_wilson_by_hand_and_edges():
    # 5/10: centre (0.5 + 1.96²/20)/(1 + 1.96²/10) = 0.5; half-width 1.96·sqrt(0.025 + 1.96²/400)/(1 + 1.96²/10)
    z = stats.Z95
    half = z * math.sqrt(0.5 * 0.5 / 10 + z * z / 400) / (1 + z * z / 10)
    assert stats.wilson(5, 10) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-12)
    assert stats.wilson(0, 0) is None
    low, high = stats.wilson(0, 10)  # zero successes: the interval keeps a width (the Wald interval would be [0, 0])
    assert low == 0.0 and round(high, 4) == 0.2775


def test_rate_skips_unscorable_values_and_counts_n():
    r = stats.rate([1.0, 0.0, None, 1.0, 0.0])
    assert r["n"] == 4 and r["value"] == 0.5
    assert (r["low"], r["high"]) == pytest.approx(stats.wilson(2, 4))
    assert stats.rate([None]) == {"value": None, "low": None, "high": None, "n": 0}


def test_sign_test_exact_values():
    assert stats.sign_test(5, 0) == 2 / 32  # 5 wins, no loss: 0.0625, not below 0.05
    assert stats.sign_test(6, 0) == 2 / 64
    # 10 wins 3 losses: 2 * (C(13,0)+C(13,1)+C(13,2)+C(13,3)) / 2^13 = 2 * 378 / 8192
    assert stats.sign_test(10, 3) == pytest.approx(2 * 378 / 8192)
    assert stats.sign_test(0, 0) == 1.0 and stats.sign_test(4, 4) == 1.0


def test_bootstrap_mean_is_seeded_and_close_to_the_normal_interval_on_a_large_sample():
    values = [0.0, 1.0] * 200  # mean 0.5, standard error sqrt(0.25/400) = 0.025
    a, b = stats.mean(values, seed=3), stats.mean(values, seed=3)
    assert a == b and a["n"] == 400 and a["value"] == 0.5
    assert a["low"] == pytest.approx(0.5 - 1.96 * 0.025, abs=0.01)
    assert a["high"] == pytest.approx(0.5 + 1.96 * 0.025, abs=0.01)


def test_a_mean_without_spread_gets_no_zero_width_interval():
    """Every prompt scored the same: a bootstrap has nothing to resample and gave [x, x], which read as certainty
    (Evaluate showed "mean reward 0.000 [0.000, 0.000]" from 2 prompts beside a cut-off rate of 0.0 % [0.0, 65.8] from
    the same 2). Nor is a rate's interval right: it was given to values in [0, 1] ("0.000 [0.000, 0.561]"), but a total
    of weighted rewards that all scored 0 can reach 1.5, and nothing in the data says how wide its range is (a walk
    with two rewards, 1 + 0.5). So no interval, and the number says it is one score for every prompt."""
    zero = stats.mean([0.0, 0.0, None])
    assert zero == {"value": 0.0, "low": None, "high": None, "n": 2, "same": True}
    assert stats.fmt_interval(zero) == "0.000 (n=2, every one the same)"
    assert stats.fmt_interval(stats.mean([3.0, 3.0])) == "3.000 (n=2, every one the same)"
    assert stats.fmt_interval(stats.mean([3.0])) == "3.000 (n=1)"
    assert stats.fmt_interval({**zero, "n": None}) == "0.000 (every one the same)"  # a table's cell, its n in a column
    spread = stats.mean([0.0, 1.0, 0.5])
    assert "same" not in spread and spread["low"] is not None


def test_quantile_interpolates_like_numpy_linear():
    xs = [1.0, 2.0, 3.0, 4.0]
    assert stats._quantile(xs, 0.0) == 1.0 and stats._quantile(xs, 1.0) == 4.0
    assert stats._quantile(xs, 0.5) == 2.5  # position 1.5
    assert stats._quantile(xs, 0.025) == pytest.approx(1.075)  # position 0.075


def test_six_prompts_five_wins_one_tie_is_not_distinguishable():
    """The case the app once reported as a win: 5 wins, 1 tie, 0 losses on 6 prompts."""
    base = [0.0] * 6
    tuned = [0.5, 0.5, 0.5, 1.0, 0.5, 0.0]
    result = stats.paired(base, tuned, seed=0)
    assert (result["n"], result["wins"], result["ties"], result["losses"]) == (6, 5, 1, 0)
    assert stats.bootstrap_interval([t - b for b, t in zip(base, tuned)])[0] > 0  # a bootstrap alone would call it a win...
    assert result["sign_test_p"] == 0.0625 and result["distinguishable"] is False  # ...the exact test does not
    assert stats.NOT_DISTINGUISHABLE in stats.fmt_paired(result)
    assert "is better" not in stats.fmt_paired(result)


def test_a_clear_paired_difference_is_distinguishable_in_both_directions():
    base = [0.0] * 40
    tuned = [1.0] * 30 + [0.0] * 10
    up = stats.paired(base, tuned)
    assert up["distinguishable"] and up["wins"] == 30 and up["mean_difference"] == 0.75
    assert "tuned is better" in stats.fmt_paired(up)
    down = stats.paired(tuned, base)
    assert down["distinguishable"] and down["losses"] == 30 and "base is better" in stats.fmt_paired(down)
    same = stats.paired(base, base)
    assert not same["distinguishable"] and same["win_share"] is None and same["sign_test_p"] == 1.0
    # None counts as 0, as in training.
    assert stats.paired([None, 1.0], [0.0, 1.0])["ties"] == 2
    with pytest.raises(ValueError):
        stats.paired([1.0], [1.0, 0.0])


def test_overlap_and_formatting():
    assert stats.overlap({"low": 0.1, "high": 0.3}, {"low": 0.3, "high": 0.5})
    assert not stats.overlap({"low": 0.1, "high": 0.29}, {"low": 0.3, "high": 0.5})
    assert stats.overlap({"low": None, "high": None}, {"low": 0.3, "high": 0.5})
    assert stats.fmt_interval({"value": 0.553, "low": 0.496, "high": 0.609, "n": 300}, percent=True) == "55.3 % [49.6, 60.9] (n=300)"
    assert stats.fmt_interval({"value": 0.4, "low": 0.38, "high": 0.441, "n": 12}) == "0.400 [0.380, 0.441] (n=12)"
    assert stats.fmt_interval(None) == "-"


# Newcombe (1998), Table I, method 5 (exact Clopper-Pearson interval), the same cases as above.
NEWCOMBE_EXACT = [((81, 263), (0.2527, 0.3676)), ((15, 148), (0.0578, 0.1617)), ((0, 20), (0.0, 0.1684)),
                  ((1, 29), (0.0009, 0.1776)), ((29, 29), (0.8806, 1.0))]


@pytest.mark.parametrize(("counts", "expected"), NEWCOMBE_EXACT)
def test_clopper_pearson_matches_newcombes_table(counts, expected):
    low, high = stats.clopper_pearson(*counts)
    assert (round(low, 4), round(high, 4)) == expected
    assert stats.clopper_pearson(0, 0) is None


def test_the_interval_shown_and_the_verdict_come_from_one_rule():
    """Every split of wins and losses up to 40 prompts: distinguishable exactly when the interval leaves out one half."""
    for wins in range(41):
        for losses in range(41 - wins):
            rule = stats.decide(wins, losses)
            if wins + losses == 0:
                assert not rule["distinguishable"] and rule["win_share_low"] is None
                continue
            outside = rule["win_share_low"] > 0.5 or rule["win_share_high"] < 0.5
            assert rule["distinguishable"] == outside == (stats.sign_test(wins, losses) < 0.05), (wins, losses)


def test_an_interval_that_excludes_no_difference_never_sits_beside_not_distinguishable():
    """The report that read "+0.138 [95 %: +0.019, +0.256] — not distinguishable": 9 wins, 3 losses, 8 ties
    (p = 0.146). The line now shows the deciding rule's interval, which includes 50 %, and the p behind the fold."""
    base = [0.0] * 20
    tuned = [0.5, 0.25, 0.3, 0.2, 0.4, 0.1, 0.3, 0.2, 0.25, -0.1, -0.05, -0.1] + [0.0] * 8
    result = stats.paired(base, tuned)
    assert stats.bootstrap_interval([t - b for b, t in zip(base, tuned)])[0] > 0  # the old interval left out 0
    v = stats.verdict(result)
    assert v["kind"] == stats.NOT_DISTINGUISHABLE and not v["limited"]
    assert "[95 %: 43 %–95 %; 50 % = no difference] — not distinguishable at this size" in v["line"]
    assert "sign test" not in v["line"] and "p = 0.146" in v["details"] and "mean reward difference" in v["details"].lower()


def test_mostly_cut_off_answers_never_read_as_a_plain_better():
    """The report that read "tuned is better (sign test p = 0.0156)" with 100 % of both sides cut off at 24 tokens."""
    seven = stats.paired([0.0] * 7, [1.0] * 7)
    assert stats.verdict(seven)["line"].endswith("— tuned is better")
    limited = stats.verdict(seven, cut_off={"tuned": 1.0, "base": 1.0}, budgets={"tuned": 24, "base": 24})
    assert limited["limited"] and limited["kind"] == "better" and "better" not in limited["label"]
    assert "is better" not in limited["line"] and "tuned 100 % at 24 tokens, base 100 % at 24 tokens" in limited["line"]
    assert "larger token budget (e.g. 96)" in limited["line"] and limited["suggested_budget"] == 96
    for wins in range(9):
        for losses in range(9 - wins):
            comparison = stats.paired([0.0] * 8, [1.0] * wins + [-1.0] * losses + [0.0] * (8 - wins - losses))
            for cut in ({"tuned": 0.6, "base": 0.0}, {"tuned": 0.0, "base": 1.0}):
                v = stats.verdict(comparison, cut_off=cut)
                assert v["limited"] and "is better" not in v["line"] and "cut off" in v["line"] and stats.CUT_OFF in v["label"]
    # Half or fewer cut off: the verdict stands as it is.
    assert not stats.verdict(seven, cut_off={"tuned": 0.5, "base": 0.2})["limited"]


def test_rows_a_task_does_not_measure_are_absent():
    no_answer = {"reward_weights": {"length_penalty": 1.0, "my_judge": 1.0}, "base": {"answer_accuracy": None}}
    assert stats.measured(no_answer) == {"answer_accuracy": False, "format_rate": False}
    assert stats.measured({"reward_weights": {"numeric_answer": 1.0, "think_format": 0.2}}) == {"answer_accuracy": True, "format_rate": True}
    assert stats.measured({"measured": {"answer_accuracy": True, "format_rate": False}, "reward_weights": {}})["answer_accuracy"]


def test_greedy_and_sampled_evaluations_are_named():
    assert stats.decoding_text({"mode": "greedy"}) == "greedy (the most likely answer)"
    assert stats.decoding_text({"mode": "sampled", "samples": 4, "temperature": 1.0}) == "sampled (4 answers per prompt at temperature 1, scored by their mean)"
    assert stats.decoding_text(None) == "decoding not recorded"


def test_too_few_prompts_to_judge_is_said_not_hidden_behind_a_zero_width_interval():
    """3 prompts, each side the same score on all: mean reward 0.000 [0.000, 0.000] (n=3), a zero-width interval that
    read as certainty. No split of fewer than 6 differing prompts can pass the rule (5 of 5 gives p = 0.0625), so the
    verdict says the sample is too small to judge and how many prompts must differ, not only 'not distinguishable'."""
    assert stats.bootstrap_interval([0.0, 0.0, 0.0]) == (0.0, 0.0)
    assert stats.FEWEST_TO_DECIDE == 6
    assert stats.sign_test(stats.FEWEST_TO_DECIDE - 1, 0) >= stats.ALPHA > stats.sign_test(stats.FEWEST_TO_DECIDE, 0)
    for wins, losses, ties in ((0, 0, 3), (3, 0, 0), (2, 1, 0), (5, 0, 15), (0, 4, 40)):
        comparison = stats.paired([0.0] * (wins + losses + ties), [1.0] * wins + [-1.0] * losses + [0.0] * ties)
        v = stats.verdict(comparison)
        assert v["kind"] == stats.NOT_DISTINGUISHABLE and v["too_few"], (wins, losses, ties)
        assert stats.NOT_DISTINGUISHABLE + ", too few to judge" in v["line"] and "at least 6" in v["line"] and "too few" in v["label"], v["line"]
    # From 6 differing prompts on, the rule can decide, and the line says nothing about too few.
    v = stats.verdict(stats.paired([0.0] * 6, [1.0] * 6))
    assert not v["too_few"] and v["kind"] == "better" and "too few" not in v["line"]
    v = stats.verdict(stats.paired([0.0] * 8, [1.0] * 4 + [-1.0] * 2 + [0.0] * 2))
    assert not v["too_few"] and v["line"].endswith(stats.NOT_DISTINGUISHABLE)
    # Mostly cut off as well (3 prompts, base 100 % cut off): the line and the cell say both limits.
    v = stats.verdict(stats.paired([0.0] * 3, [1.0, 1.0, 0.0]), cut_off={"tuned": 0.3, "base": 1.0}, budgets={"tuned": 12, "base": 12})
    assert v["limited"] and v["too_few"] and stats.TOO_FEW in v["line"] and "cut off" in v["line"], v["line"]
    assert v["label"] == f"not distinguishable ({stats.TOO_FEW}), {stats.CUT_OFF}"


def test_the_model_card_writes_a_mean_without_an_interval():
    from rloo_studio.engine.export import _fmt_estimate

    summary = {"mean_reward": 3.0, "intervals": {"mean_reward": {"low": None, "high": None, "n": 2}}}
    assert _fmt_estimate(summary, "mean_reward", False) == "3.000 (n=2)"

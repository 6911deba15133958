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
    assert stats.mean([0.7, 0.7, None]) == {"value": 0.7, "low": 0.7, "high": 0.7, "n": 2}


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
    assert result["low"] > 0  # the bootstrap alone would call it a win...
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
    assert not same["distinguishable"] and (same["low"], same["high"]) == (0.0, 0.0)
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

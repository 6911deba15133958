"""Small-sample statistics for evaluations: 95 % intervals, paired comparisons, "distinguishable or not".

Pure functions on plain lists (standard library only, no numpy, no torch), so the engine, the command
line and the app's pages compute and word an evaluation's uncertainty the same way. Where this module
stops: it knows nothing about models, rewards or eval.json's layout — callers hand it numbers.

- Rates (answer accuracy, format rate, truncation rate): the Wilson score interval. Unlike the
  textbook "p ± 1.96·sqrt(p(1-p)/n)" it stays inside [0, 1] and does not collapse to a zero-width
  interval at 0/n or n/n (Wilson 1927; Brown, Cai & DasGupta 2001, "Interval Estimation for a
  Binomial Proportion", recommend it for small n). A rate whose per-prompt values are fractions
  (the mean success of k samples of one prompt) uses the same formula with n = prompts: averaging
  samples can only shrink a prompt's variance below p(1-p), so the interval errs on the wide side.
- Means (mean reward) and paired differences: the percentile bootstrap over prompts, seeded, so an
  evaluation gives the same interval every time it is recomputed.
- Paired comparisons (tuned vs base, chosen checkpoint vs final) on the same prompts: wins, ties,
  losses, the mean difference with its bootstrap interval, and the exact two-sided sign test on
  wins vs losses. "Distinguishable" needs both: the interval of the difference excludes 0 *and* the
  sign test is below 0.05. The sign test is exact at any n, where the bootstrap is too narrow for a
  handful of prompts (5 wins and 1 tie out of 6 has a bootstrap interval above 0, but p = 0.0625).
"""

from __future__ import annotations

import math
import random

CONFIDENCE = 0.95
Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile: a two-sided 95 % interval
ALPHA = 0.05
RESAMPLES = 2000  # bootstrap resamples: enough for the 2.5 % / 97.5 % percentiles to move < 0.01 on rates
NOT_DISTINGUISHABLE = "not distinguishable at this size"


def _present(values) -> list[float]:
    return [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for `successes` out of `n` (None for n = 0)."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(values) -> dict:
    """A rate from per-prompt values in [0, 1] (None = not scorable, left out): {value, low, high, n}."""
    xs = _present(values)
    if not xs:
        return {"value": None, "low": None, "high": None, "n": 0}
    low, high = wilson(sum(xs), len(xs))
    return {"value": sum(xs) / len(xs), "low": low, "high": high, "n": len(xs)}


def _quantile(sorted_xs: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default `linear` method)."""
    position = q * (len(sorted_xs) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_xs) - 1)
    return sorted_xs[lower] + (sorted_xs[upper] - sorted_xs[lower]) * (position - lower)


def bootstrap_interval(values, seed: int = 0, resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """The 95 % percentile-bootstrap interval of the mean of `values` (None when there are none)."""
    xs = _present(values)
    if not xs:
        return None
    if len(set(xs)) == 1:
        return xs[0], xs[0]
    rng = random.Random(seed)
    n = len(xs)
    means = sorted(sum(rng.choices(xs, k=n)) / n for _ in range(resamples))
    return _quantile(means, ALPHA / 2), _quantile(means, 1 - ALPHA / 2)


def mean(values, seed: int = 0) -> dict:
    """A mean with its bootstrap interval: {value, low, high, n} (None values left out)."""
    xs = _present(values)
    if not xs:
        return {"value": None, "low": None, "high": None, "n": 0}
    low, high = bootstrap_interval(xs, seed)
    return {"value": sum(xs) / len(xs), "low": low, "high": high, "n": len(xs)}


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test: the chance of a split at least this uneven if each non-tie were a coin flip."""
    trials = wins + losses
    if trials == 0:
        return 1.0
    extreme = min(wins, losses)
    tail = sum(math.comb(trials, i) for i in range(extreme + 1)) / 2 ** trials
    return min(1.0, 2 * tail)


def paired(reference, other, seed: int = 0) -> dict:
    """`other` against `reference`, prompt by prompt (same order): wins/ties/losses of `other`, the mean
    difference (other − reference) with its bootstrap interval, the sign test, and whether the two are
    distinguishable. A None (unscorable) value counts as 0, as training counts it."""
    if len(reference) != len(other):
        raise ValueError(f"paired values need the same prompts: {len(reference)} vs {len(other)}")
    diffs = [(o or 0.0) - (r or 0.0) for r, o in zip(reference, other)]
    wins = sum(d > 0 for d in diffs)
    losses = sum(d < 0 for d in diffs)
    interval = bootstrap_interval(diffs, seed)
    p = sign_test(wins, losses)
    separated = interval is not None and (interval[0] > 0 or interval[1] < 0)
    return {"n": len(diffs), "wins": wins, "ties": len(diffs) - wins - losses, "losses": losses,
            "mean_difference": sum(diffs) / len(diffs) if diffs else None,
            "low": interval[0] if interval else None, "high": interval[1] if interval else None,
            "sign_test_p": p, "distinguishable": bool(separated and p < ALPHA)}


def overlap(a: dict, b: dict) -> bool:
    """Whether two estimates' intervals ({low, high}) overlap; a missing interval counts as overlapping."""
    if None in (a.get("low"), a.get("high"), b.get("low"), b.get("high")):
        return True
    return a["low"] <= b["high"] and b["low"] <= a["high"]


def summary_estimate(summary: dict, key: str) -> dict:
    """One number of an evaluation summary (eval.json's `base`, `tuned`, …) with its interval and n, as `fmt_interval`
    takes it."""
    return {"value": summary[key], **summary["intervals"][key]}


def fmt_interval(estimate: dict | None, percent: bool = False) -> str:
    """`55.3 % [49.6, 60.9] (n=300)` or `0.412 [0.380, 0.441] (n=300)`; `-` when there is no value."""
    if not isinstance(estimate, dict) or not isinstance(estimate.get("value"), (int, float)):
        return "-"
    scale, unit, digits = (100, " %", 1) if percent else (1, "", 3)
    text = f"{scale * estimate['value']:.{digits}f}{unit}"
    if isinstance(estimate.get("low"), (int, float)) and isinstance(estimate.get("high"), (int, float)):
        text += f" [{scale * estimate['low']:.{digits}f}, {scale * estimate['high']:.{digits}f}]"
    if isinstance(estimate.get("n"), int):
        text += f" (n={estimate['n']})"
    return text


def _count(number, word: str) -> str:
    plural = word + ("es" if word.endswith("s") else "s")
    return f"{number} {word if number == 1 else plural}"


def fmt_paired(comparison: dict | None, what: str = "tuned", against: str = "base") -> str:
    """One sentence for a paired comparison, that never claims a difference the data do not support."""
    if not isinstance(comparison, dict) or not isinstance(comparison.get("n"), int):
        return ""
    counts = ", ".join(_count(comparison.get(key), word) for key, word in (("wins", "win"), ("ties", "tie"), ("losses", "loss")))
    text = f"{what} vs {against} on the same {comparison['n']} prompts: {counts}"
    diff = comparison.get("mean_difference")
    if isinstance(diff, (int, float)):
        text += f"; mean reward difference {diff:+.3f}"
        if isinstance(comparison.get("low"), (int, float)):
            text += f" [95 %: {comparison['low']:+.3f}, {comparison['high']:+.3f}]"
    if comparison.get("distinguishable"):
        better = what if (diff or 0) > 0 else against
        return text + f" — {better} is better (sign test p = {comparison.get('sign_test_p', 1):.3g})"
    return text + f" — {NOT_DISTINGUISHABLE}"

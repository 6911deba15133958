"""Small-sample statistics for evaluations: 95 % intervals, paired comparisons, the verdict and its wording.

Pure functions on plain lists (standard library only, no numpy, no torch), so the engine, the command
line and the app's pages compute and word an evaluation's uncertainty the same way. Where this module
stops: it knows nothing about models or running rewards — callers hand it numbers; of eval.json it
reads only a summary's values and intervals (`summary_estimate`), its decoding record
(`decoding_text`), which rows it measures (`measured`) and how long it took (`evaluation_time`).

- Rates (answer accuracy, format rate, truncation rate): the Wilson score interval. Unlike the
  textbook "p ± 1.96·sqrt(p(1-p)/n)" it stays inside [0, 1] and does not collapse to a zero-width
  interval at 0/n or n/n (Wilson 1927; Brown, Cai & DasGupta 2001, "Interval Estimation for a
  Binomial Proportion", recommend it for small n). A rate whose per-prompt values are fractions
  (the mean success of k samples of one prompt) uses the same formula with n = prompts: averaging
  samples can only shrink a prompt's variance below p(1-p), so the interval errs on the wide side.
- Means (mean reward) and paired differences: the percentile bootstrap over prompts, seeded, so an
  evaluation gives the same interval every time it is recomputed. A mean with no spread at all (every prompt
  the same score) is no bootstrap's, nor a rate's (a reward's total need not lie in [0, 1]): no interval (`mean`).
- Paired comparisons (tuned vs base, chosen checkpoint vs final) on the same prompts: wins, ties,
  losses and one rule, the exact two-sided sign test on wins vs losses (ties left out): the two are
  distinguishable when p < 0.05. The interval shown with it is the same rule's: the Clopper-Pearson
  95 % interval of the share of wins among the prompts where the two differ, which excludes one half
  exactly when the sign test is below 0.05 (both invert the same binomial tails). The sign test is
  exact at any n, where a bootstrap interval of the mean difference is too narrow for a handful of
  prompts (5 wins and 1 tie out of 6 has a bootstrap interval above 0, but p = 0.0625), so no
  bootstrap interval is shown beside a verdict. The mean reward difference is kept as the size of the
  change, not as what decides.
- The verdict (`verdict`): the rule above, worded in plain words, and limited when most answers of
  either side were cut off by the token budget (then a reward measured the start of an answer, not the
  answer, and the verdict says so in the same line instead of reading "better").
- Which rows a report has (`measured`): answer accuracy only when a reward scores an answer, format
  rate only when one scores the <think> format; a task without them shows neither.
"""

from __future__ import annotations

import math
import random

CONFIDENCE = 0.95
Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile: a two-sided 95 % interval
ALPHA = 0.05
RESAMPLES = 2000  # bootstrap resamples: enough for the 2.5 % / 97.5 % percentiles to move < 0.01 on rates
NOT_DISTINGUISHABLE = "not distinguishable at this size"
MOSTLY_CUT_OFF = 0.5  # above this share of cut-off answers on either side, a verdict says it rests on cut-off answers
CUT_OFF = "mostly cut off"
ANSWER_REWARDS = ("numeric_answer", "exact_match")  # rewards that score an answer: answer accuracy means something
FORMAT_REWARDS = ("think_format",)  # rewards that score the <think>…</think> format: format rate means something


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
    """A mean with its bootstrap interval: {value, low, high, n} (None values left out).

    Values without spread (every prompt scored the same) leave a bootstrap nothing to resample: its [x, x] would read
    as certainty. They get no interval (low and high None) and `same: True`, which `fmt_interval` says: nothing in the
    data says how wide the interval is (a rate's would assume the values lie in [0, 1], which a reward's total need not).
    """
    xs = _present(values)
    if not xs:
        return {"value": None, "low": None, "high": None, "n": 0}
    if len(set(xs)) == 1:
        return {"value": xs[0], "low": None, "high": None, "n": len(xs), **({"same": True} if len(xs) > 1 else {})}
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


# The fewest prompts that must differ before any split could pass the rule: below it even "all wins" is p >= 0.05
# (5 of 5: p = 0.0625), so a verdict there says the sample is too small to judge besides "not distinguishable".
FEWEST_TO_DECIDE = next(n for n in range(1, 64) if sign_test(n, 0) < ALPHA)
TOO_FEW = "too few to judge"


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in logs (no overflow at large n)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)
            for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _solve(f, target: float) -> float:
    """The p in [0, 1] where the decreasing function f crosses `target`, by bisection (60 halvings: < 1e-15)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        if f(middle) > target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def clopper_pearson(successes: int, n: int) -> tuple[float, float] | None:
    """The exact (Clopper-Pearson) 95 % interval of a binomial share (None for n = 0): each bound is where the
    chance of a result at least this extreme is 2.5 %, the same tails the exact sign test adds up."""
    if n <= 0:
        return None
    low = 0.0 if successes == 0 else _solve(lambda p: _binomial_cdf(successes - 1, n, p), 1 - ALPHA / 2)
    high = 1.0 if successes == n else _solve(lambda p: _binomial_cdf(successes, n, p), ALPHA / 2)
    return low, high


def decide(wins: int, losses: int) -> dict:
    """The one rule that says whether two sides differ on the same prompts: the exact sign test on wins vs losses
    (ties left out), with the share of wins among the prompts that differ and its exact interval. The interval
    excludes 1/2 exactly when p < 0.05, so the verdict and the interval shown never disagree."""
    differ = wins + losses
    p = sign_test(wins, losses)
    interval = clopper_pearson(wins, differ)
    return {"sign_test_p": p, "distinguishable": p < ALPHA, "differ": differ,
            "win_share": wins / differ if differ else None,
            "win_share_low": interval[0] if interval else None, "win_share_high": interval[1] if interval else None}


def paired(reference, other, seed: int = 0) -> dict:
    """`other` against `reference`, prompt by prompt (same order): wins/ties/losses of `other`, the mean
    difference (other − reference: the size of the change), and `decide`'s verdict with its interval.
    A None (unscorable) value counts as 0, as training counts it. `seed` is kept for callers' symmetry with
    `mean`; the rule itself is exact and draws nothing."""
    if len(reference) != len(other):
        raise ValueError(f"paired values need the same prompts: {len(reference)} vs {len(other)}")
    diffs = [(o or 0.0) - (r or 0.0) for r, o in zip(reference, other)]
    wins = sum(d > 0 for d in diffs)
    losses = sum(d < 0 for d in diffs)
    return {"n": len(diffs), "wins": wins, "ties": len(diffs) - wins - losses, "losses": losses,
            "mean_difference": sum(diffs) / len(diffs) if diffs else None, **decide(wins, losses)}


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
        text += f" (n={estimate['n']}, every one the same)" if estimate.get("same") else f" (n={estimate['n']})"
    elif estimate.get("same"):  # a table whose n has a column of its own: still why there is no interval
        text += " (every one the same)"
    return text


def _count(number, word: str) -> str:
    plural = word + ("es" if word.endswith("s") else "s")
    return f"{number} {word if number == 1 else plural}"


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def mostly_cut_off(cut_off: dict | None) -> dict:
    """The sides (name -> share) with more than MOSTLY_CUT_OFF of their answers cut off by the token budget."""
    return {side: share for side, share in (cut_off or {}).items()
            if isinstance(share, (int, float)) and share > MOSTLY_CUT_OFF}


def verdict(comparison: dict, what: str = "tuned", against: str = "base", cut_off: dict | None = None,
            budgets: dict | None = None) -> dict:
    """The verdict of a paired comparison, decided by `decide` from its wins and losses alone (so an older report's
    numbers get today's rule), and limited when most answers of either side were cut off.

    `cut_off`: side name (`what`, `against`) -> share of its answers cut off by the token budget; `budgets`: side name ->
    its token budget. Returns {kind: better | worse | NOT_DISTINGUISHABLE, limited: bool, too_few: bool (fewer than
    FEWEST_TO_DECIDE prompts differ, so no split could have decided: the line says the sample is too small), label
    (a table cell), line (one sentence in plain words: the counts, the share of wins with its interval, the verdict), details (the rule and its p,
    the mean difference), suggested_budget (a larger token budget to evaluate again with, when limited)}."""
    wins, losses, ties = (int(comparison.get(key) or 0) for key in ("wins", "losses", "ties"))
    rule = decide(wins, losses)
    diff = comparison.get("mean_difference")
    ahead = what if wins > losses else against
    kind = ("better" if ahead == what else "worse") if rule["distinguishable"] else NOT_DISTINGUISHABLE
    cut = mostly_cut_off(cut_off)
    limited = bool(cut)
    too_few = rule["differ"] < FEWEST_TO_DECIDE
    n = comparison.get('n', wins + losses + ties)
    text = (f"{what} vs {against} on the same {n} prompts: {what} scored higher on "
            f"{wins}, lower on {losses}, the same on {ties}")
    if rule["differ"]:
        text += (f"; higher on {_percent(rule['win_share'])} of the {rule['differ']} where they differ "
                 f"[95 %: {_percent(rule['win_share_low'])}–{_percent(rule['win_share_high'])}; 50 % = no difference]")
    suggested = None
    if limited:
        sides = ", ".join(f"{side} {_percent(share)}" + (f" at {budgets[side]} tokens" if budgets and budgets.get(side) else "")
                          for side, share in cut.items())
        known = [b for b in (budgets or {}).values() if isinstance(b, int) and b > 0]
        suggested = 4 * max(known) if known else None
        again = f"evaluate again with a larger token budget (e.g. {suggested})" if suggested else "evaluate again with a larger token budget"
        lead = f"{ahead} scored higher only on cut-off answers" if rule["distinguishable"] else NOT_DISTINGUISHABLE
        few = (f"; and {TOO_FEW}: the two differ on {rule['differ']} of {n} prompts, fewer than the {FEWEST_TO_DECIDE} any "
               "difference needs, so evaluate on more prompts too") if too_few else ""
        text += (f" — {lead}: most answers were cut off by the token budget ({sides}), so the rewards scored unfinished "
                 f"answers and this does not show which model does the task better; {again}{few}")
        label = (f"{'higher' if kind == 'better' else 'lower' if kind == 'worse' else 'not distinguishable'}"
                 f"{f' ({TOO_FEW})' if too_few else ''}, {CUT_OFF}")
    elif too_few:
        text += (f" — {NOT_DISTINGUISHABLE}, {TOO_FEW}: the two differ on {rule['differ']} of {n} prompts, and with fewer than "
                 f"{FEWEST_TO_DECIDE} differing not even all of them going one way would show a difference at 95 %; "
                 f"evaluate on more prompts (at least {FEWEST_TO_DECIDE} must differ)")
        label = f"not distinguishable ({TOO_FEW})"
    else:
        text += f" — {ahead} is better" if rule["distinguishable"] else f" — {NOT_DISTINGUISHABLE}"
        label = kind if kind != NOT_DISTINGUISHABLE else "not distinguishable"
    if rule["differ"]:
        details = (f"How this is decided: the exact sign test on the {rule['differ']} prompts where the two differ (ties left out) "
                   f"gives p = {rule['sign_test_p']:.3g}; the two count as different when p < {ALPHA:g}, which is exactly when the "
                   f"interval of the share leaves out 50 %.")
    else:
        details = "How this is decided: the two scored the same on every prompt, so nothing sets them apart."
    if isinstance(diff, (int, float)):
        details += f" Mean reward difference {diff:+.3f} ({what} − {against}): the size of the change, not what decides."
    return {"kind": kind, "limited": limited, "too_few": too_few, "label": label, "line": text, "details": details, "suggested_budget": suggested,
            **rule}


def fmt_paired(comparison: dict | None, what: str = "tuned", against: str = "base", cut_off: dict | None = None,
               budgets: dict | None = None) -> str:
    """`verdict`'s one line for a paired comparison ("" without one): it never claims a difference the data do not
    support, nor one measured on cut-off answers."""
    if not isinstance(comparison, dict) or not isinstance(comparison.get("n"), int):
        return ""
    return verdict(comparison, what, against, cut_off, budgets)["line"]


def measured(report: dict) -> dict[str, bool]:
    """Which task-specific numbers an evaluation report measures: answer accuracy when one of its rewards scores an
    answer or the data has an answer column, format rate when one scores the <think> format (a report without `measured`, written before it existed,
    is read from its reward names; without those too, format rate is shown)."""
    if isinstance(report.get("measured"), dict):
        return {key: bool(report["measured"].get(key)) for key in ("answer_accuracy", "format_rate")}
    names = set(report.get("reward_weights") or {})
    scored = isinstance((report.get("base") or {}).get("answer_accuracy"), (int, float))  # an answer column was scored
    known = "reward_weights" in report  # without the reward names, the format rate is shown rather than guessed away
    return {"answer_accuracy": bool(names & set(ANSWER_REWARDS)) or scored,
            "format_rate": bool(names & set(FORMAT_REWARDS)) or not known}


def seen_in_training_line(report: dict) -> str | None:
    """What limits an evaluation on prompts the run trained on (eval.json's `seen_in_training`); None when none were."""
    seen, n = report.get("seen_in_training"), report.get("n_prompts")
    if not isinstance(seen, int) or not seen or not isinstance(n, int):
        return None
    return (f"{seen} of these {n} prompts are training prompts of this run: their scores show how it does on prompts it "
            "trained on, not on new ones — evaluate on prompts it never saw")


def evaluation_time(report: dict) -> str | None:
    """How long an evaluation took and what that counts ("the evaluation took 6.1 s, 5.9 s of it loading the libraries
    and the base model"); None when eval.json does not say. An eval.json of an earlier version has `seconds` without
    `load_seconds`: its clock started after torch, transformers and PEFT were imported, so a 0.2 s evaluation could
    follow seconds of loading, and the words say so."""
    seconds, loading = report.get("seconds"), report.get("load_seconds")
    if not isinstance(seconds, (int, float)):
        return None
    if not isinstance(loading, (int, float)):
        return f"the evaluation took {seconds:g} s, not counting loading the libraries"
    return f"the evaluation took {seconds:g} s, {loading:g} s of it loading the libraries and the base model"


def decoding_text(decoding: dict | None) -> str:
    """How an evaluation made its answers, in plain words: said wherever two evaluations are compared, since a greedy
    and a sampled evaluation of the same weights give different numbers."""
    if not isinstance(decoding, dict) or decoding.get("mode") not in ("greedy", "sampled"):
        return "decoding not recorded"
    if decoding["mode"] == "greedy":
        return "greedy (the most likely answer)"
    temperature = decoding.get("temperature")
    at = f" at temperature {temperature:g}" if isinstance(temperature, (int, float)) else ""
    return f"sampled ({decoding.get('samples')} answers per prompt{at}, scored by their mean)"

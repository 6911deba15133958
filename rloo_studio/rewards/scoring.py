"""Combining reward values the way TRL's RLOOTrainer does: weighted totals, clipping, leave-one-out advantages.

Pure Python, no torch: the training worker uses it to annotate samples.jsonl and to measure the learning signal
its health alerts read, and the reward preview uses it to show what advantage each completion would get. It
mirrors TRL 1.15's `RLOOTrainer._generate_and_score_completions`, in its order: the weighted total (nan-aware
sum; a completion every function scored `None` is unscorable and gets advantage 0), clamped to
`reward_clip_range` when one is set, minus beta x the completion's KL to the start model, the leave-one-out
baseline, then, with `normalize_advantages`, standardised over the batch. The KL part and the normalisation are
not computed here: the first needs the policy's and the start model's log-probabilities, which only the
trainer has, the second the whole batch; `advantage_caveat` says what they change. During training
samples.jsonl records TRL's own advantages instead (rewards.runtime.SampleRecorder).
"""

from __future__ import annotations

import math
from typing import Sequence


def _is_number(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def weighted_totals(values_per_function: Sequence[Sequence[float | None]], weights: Sequence[float]) -> list[float | None]:
    """Per completion: sum of weight x value over functions, skipping None/NaN; None when all are missing.

    >>> weighted_totals([[1.0, 0.0, None], [0.5, None, None]], [1.0, 2.0])
    [2.0, 0.0, None]
    """
    if not values_per_function:
        return []
    n = len(values_per_function[0])
    totals: list[float | None] = []
    for i in range(n):
        present = [(w, vals[i]) for vals, w in zip(values_per_function, weights) if _is_number(vals[i])]
        totals.append(sum(w * float(v) for w, v in present) if present else None)
    return totals


# What a None from one function does, in words (the rule is `weighted_totals`'s, as TRL's nansum has it): said wherever
# the page or the docs tell a person what returning None means.
NONE_COUNTS_AS_ZERO = ("None means “cannot score this one”: where another function scores the completion, its None "
                       "counts as 0 in the total (TRL adds up the scores it has); a completion is left out only when "
                       "every function returns None for it")


def none_counted_as_zero(values_per_function: dict[str, Sequence[float | None]]) -> dict[str, int]:
    """{function: how many completions it returned None (or NaN) for that another function scored}: there its None
    adds 0 to the total, so those completions rank as if it had scored them 0. Functions with no such completion are
    left out.

    >>> none_counted_as_zero({"correct": [1.0, 1.0, None], "judge": [0.8, None, None]})
    {'judge': 1}
    """
    columns = list(values_per_function.values())
    n = len(columns[0]) if columns else 0
    scored = [any(_is_number(vals[i]) for vals in columns) for i in range(n)]
    found = {name: sum(1 for i, v in enumerate(vals) if scored[i] and not _is_number(v))
             for name, vals in values_per_function.items()}
    return {name: count for name, count in found.items() if count}


def clipped_totals(totals: Sequence[float | None], clip_range: Sequence[float] | None) -> list[float | None]:
    """The totals TRL goes on with when `reward_clip_range` is set: each clamped to [low, high] before the KL
    penalty and the leave-one-out baseline (None stays None). Without a range, the totals unchanged.

    >>> clipped_totals([2.0, -3.0, 0.5, None], (-1.0, 1.0))
    [1.0, -1.0, 0.5, None]
    """
    if not clip_range:
        return list(totals)
    low, high = float(clip_range[0]), float(clip_range[1])
    return [min(high, max(low, float(t))) if _is_number(t) else None for t in totals]


def leave_one_out_advantages(totals: Sequence[float | None], num_generations: int) -> list[float]:
    """RLOO advantage: each completion's total minus the mean total of the other completions of its prompt.

    Completions of one prompt are `num_generations` consecutive entries (TRL's order). Unscorable
    completions (None) are left out of the baselines and get 0, as in TRL.

    >>> leave_one_out_advantages([1.0, 0.0, 0.0], 3)
    [1.0, -0.5, -0.5]
    >>> leave_one_out_advantages([1.0, None, 0.0, 2.0, 2.0, 2.0], 3)
    [1.0, 0.0, -1.0, 0.0, 0.0, 0.0]
    """
    if num_generations < 2:
        raise ValueError(f"num_generations must be at least 2, got {num_generations}")
    if len(totals) % num_generations:
        raise ValueError(f"{len(totals)} totals cannot be split into groups of {num_generations}")
    advantages: list[float] = []
    for start in range(0, len(totals), num_generations):
        group = totals[start:start + num_generations]
        scored = [float(t) for t in group if _is_number(t)]
        group_sum, count = sum(scored), len(scored)
        for t in group:
            if not _is_number(t) or count < 2:
                advantages.append(0.0)
            else:
                advantages.append(float(t) - (group_sum - float(t)) / (count - 1))
    return advantages


def all_equal_groups(totals: Sequence[float | None], num_generations: int, tol: float = 1e-9) -> list[bool]:
    """For each prompt group: True when all its scored totals are equal (RLOO learns nothing from it)."""
    flags = []
    for start in range(0, len(totals), num_generations):
        scored = [float(t) for t in totals[start:start + num_generations] if _is_number(t)]
        flags.append(not scored or max(scored) - min(scored) <= tol)
    return flags


def within_group_spread(values_per_function: Sequence[Sequence[float | None]], weights: Sequence[float],
                        num_generations: int) -> list[float | None]:
    """Per function: how far its part of the total (weight x value; 0 where it returned None, as TRL's nansum
    counts it) spreads among the completions of one prompt, the square root of the mean over groups of the
    within-group sample variance. RLOO compares completions of one prompt only, so this, not the spread over the
    whole batch (which counts easy against hard prompts), is what a function adds to the advantages. Unscorable
    completions (every function None) are left out; None when no group has two scorable completions.

    >>> within_group_spread([[1.0, 0.0, 5.0, 5.0], [0.0, 0.0, 1.0, 3.0]], [1.0, 1.0], 2)
    [0.5, 1.0]
    """
    if not values_per_function:
        return []
    n = len(values_per_function[0]) - len(values_per_function[0]) % num_generations
    scorable = [any(_is_number(vals[i]) for vals in values_per_function) for i in range(n)]
    spreads: list[float | None] = []
    for vals, w in zip(values_per_function, weights):
        variances = []
        for start in range(0, n, num_generations):
            parts = [w * float(vals[i]) if _is_number(vals[i]) else 0.0
                     for i in range(start, start + num_generations) if scorable[i]]
            if len(parts) >= 2:
                mean = sum(parts) / len(parts)
                variances.append(sum((p - mean) ** 2 for p in parts) / (len(parts) - 1))
        spreads.append(math.sqrt(sum(variances) / len(variances)) if variances else None)
    return spreads


def advantage_caveat(beta: float | None, normalize_advantages: bool | None,
                     reward_clip_range: Sequence[float] | None = None, masked_cut_off: int = 0) -> str | None:
    """What training will do to the advantages that a preview (no start model, no whole batch) cannot show; None if nothing.
    `masked_cut_off`: how many completions were cut off by the token budget while `mask_truncated_completions` is on.

    >>> advantage_caveat(0.0, False) is None
    True
    """
    notes = []
    if beta:
        notes.append(
            f"With a KL penalty (beta = {beta:g}) training first subtracts beta × each completion's KL to the start model "
            "from its total, then takes the leave-one-out baseline; the preview has no start model to compare with, so "
            "these advantages leave that part out. Even a prompt whose completions all got the same reward still moves "
            "under beta > 0, because their KL parts differ.")
    if normalize_advantages:
        notes.append(
            "With “Normalise advantages” on, training standardises the advantages over the whole batch (minus their "
            "mean, divided by their standard deviation): their sizes, and the signs of those near zero, differ from "
            "these.")
    if beta and normalize_advantages:
        notes.append(
            "Both together: where most prompts' completions tie on reward, the advantages are their KL parts alone "
            "(often hundredths), and normalising scales those up to the size of real reward differences, so the model "
            "is trained on noise; turn normalising off or make the rewards tell the completions apart.")
    if masked_cut_off:
        # TRL zeroes their completion mask: no token of theirs enters the loss, yet their totals stay in the baselines.
        notes.append(
            f"“mask_truncated_completions” is on: training leaves the {masked_cut_off} cut-off completion"
            f"{'' if masked_cut_off == 1 else 's'} out of the loss, so {'its' if masked_cut_off == 1 else 'their'} "
            "advantage here pushes nothing (a prompt whose completions were all cut off teaches nothing); "
            f"{'its' if masked_cut_off == 1 else 'their'} totals still count in the other completions' baselines.")
    if reward_clip_range:
        notes.append(
            f"Totals here are clipped to [{float(reward_clip_range[0]):g}, {float(reward_clip_range[1]):g}] "
            "(reward_clip_range), as training clips them before the KL penalty and the baseline.")
    return " ".join(notes) or None

"""Combining reward values the way TRL's RLOOTrainer does: weighted totals and leave-one-out advantages.

Pure Python, no torch: the training worker uses it to annotate samples.jsonl and the reward
preview uses it to show what advantage each completion would get. It mirrors TRL 1.15's
`RLOOTrainer._generate_and_score_completions` (nan-aware sums; a completion every function
scored `None` is unscorable and gets advantage 0). The KL penalty (beta) and TRL's batch
normalisation are not included: the first needs the policy's and the start model's
log-probabilities, which only the trainer has; `advantage_caveat` says what they change. During
training samples.jsonl records TRL's own advantages instead (rewards.runtime.SampleRecorder).
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


def advantage_caveat(beta: float | None, normalize_advantages: bool | None) -> str | None:
    """What training will do to the advantages that a preview (no start model, no whole batch) cannot show; None if nothing.

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
    return " ".join(notes) or None

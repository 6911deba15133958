"""Where a training step's time goes, as metrics.jsonl records it: the keys, and the breakdown in words.

The training worker times each step by part (engine/step_timer.py) and writes, per logged step, `time/generation`,
`time/rewards`, `time/logprobs`, `time/optimizer` and `time/other` (seconds per step; they add up to `time/step`,
the step's wall time) and `tokens_per_s` (completion tokens generated per second of generation). The Train tab,
`rloo-studio runs --show` and the time trial read them through this module; runs recorded before these keys
existed have none, and every reader then shows no breakdown.
"""

from __future__ import annotations

from typing import Callable

PARTS = ("generation", "rewards", "logprobs", "optimizer", "other")
KEYS = tuple(f"time/{part}" for part in PARTS)
STEP_KEY = "time/step"
TOKENS_KEY = "tokens_per_s"
# How each part reads in a sentence.
WORDS = {"generation": "generation", "rewards": "reward scoring", "logprobs": "log-prob passes",
         "optimizer": "forward + backward + optimizer", "other": "other"}


def eta_seconds(begun: tuple[int, float], first_done: tuple[int, float] | None, step: int, max_steps: int,
                now: float) -> float | None:
    """Seconds to `max_steps` at the pace since the first step this process trained ended: (step, time) when training
    began (`begun`) and when that first step ended (`first_done`). The first step carries one-time costs (compiling,
    warming up the first generation) that would otherwise be spread over every step left; until a second step ends,
    the first step's own pace is all there is. None before any step.

    100 steps of 5 s after a first step with 40 s of one-time cost: at step 10 the ETA is 450 s (not 810 s).

    >>> eta_seconds((0, 0.0), (1, 45.0), 10, 100, 90.0)
    450.0
    >>> eta_seconds((0, 0.0), (1, 45.0), 1, 100, 45.0)
    4455.0
    """
    done = step - begun[0]
    if done <= 0 or not max_steps:
        return None
    since, at = first_done if first_done is not None and step > first_done[0] else begun
    per_step = (now - at) / (step - since)
    return round(per_step * max(0, max_steps - step), 1)


def recent(records: list[dict], at_least: int, cycle_ends: Callable[[int], bool] | None = None) -> list[dict]:
    """The last timed records (those with the step's time) a breakdown is the mean of: at least `at_least` of them,
    and with `cycle_ends(step)` (whether a generation cycle ends at that step) whole cycles — from just after one
    cycle's end to the last logged end — so that a cycle whose first step generates and whose others reuse the
    completions (num_iterations > 1) is not counted in part. Without `cycle_ends`, or before a cycle ended, the last
    `at_least`.

    Cycles of 2 steps, steps 1-9 logged: steps 3-8 (6 records), not 5-9 (three generations of five).

    >>> [r["step"] for r in recent([{"step": s, STEP_KEY: 1.0} for s in range(1, 10)], 5, lambda s: s % 2 == 0)]
    [3, 4, 5, 6, 7, 8]
    """
    timed = [r for r in records if isinstance(r.get(STEP_KEY), (int, float)) and isinstance(r.get("step"), int)]
    ends = [i for i, r in enumerate(timed) if cycle_ends is not None and cycle_ends(r["step"])]
    if not ends:
        return timed[-at_least:]
    last = ends[-1]
    # A window opens just after a logged cycle end (or at the first record): the latest one that holds enough records.
    starts = [0] + [i + 1 for i in ends[:-1]]
    fitting = [i for i in starts if last + 1 - i >= at_least]
    return timed[max(fitting) if fitting else 0:last + 1]


def mean_breakdown(records: list[dict]) -> dict | None:
    """The mean of each time key (and tokens_per_s) over the records that have them; None when none has."""
    timed = [r for r in records if isinstance(r.get(STEP_KEY), (int, float))]
    if not timed:
        return None
    out = {key: sum(float(r.get(key) or 0.0) for r in timed) / len(timed) for key in (*KEYS, STEP_KEY)}
    tokens = [float(r[TOKENS_KEY]) for r in timed if isinstance(r.get(TOKENS_KEY), (int, float))]
    if tokens:
        out[TOKENS_KEY] = sum(tokens) / len(tokens)
    out["steps"] = len(timed)
    return out


def breakdown_line(breakdown: dict | None, per_step: float | None = None) -> str:
    """'of the 24.1 s per step, 7.7 s are generation (32 %), ...; 66 tokens/s generated' ('' without a breakdown).

    `per_step` is the step time to state (the time trial's own measurement); the parts are scaled to it, since they
    are shares of the same steps' wall time."""
    if not breakdown or not breakdown.get(STEP_KEY):
        return ""
    step = float(breakdown[STEP_KEY])
    total = per_step if per_step else step
    parts = sorted(PARTS, key=lambda p: -float(breakdown.get(f"time/{p}") or 0.0))
    words = []
    for part in parts:
        share = float(breakdown.get(f"time/{part}") or 0.0) / step
        if share >= 0.005 or part == "generation":
            words.append(f"{share * total:.1f} s {WORDS[part]} ({100 * share:.0f} %)")
    line = f"of the {total:.1f} s per step: " + ", ".join(words)
    if breakdown.get(TOKENS_KEY):
        line += f"; {breakdown[TOKENS_KEY]:.0f} tokens/s generated"
    return line

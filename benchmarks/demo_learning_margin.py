"""The margin of tests/engine/test_demo_learning.py, measured: how much a 120-step cpu-demo run raises the reward.

    python benchmarks/demo_learning_margin.py                      # train the 120 steps (one CPU thread, ~4 min)
    python benchmarks/demo_learning_margin.py --metrics RUN/metrics.jsonl   # analyse a run trained the same way

The test repeats this run (the shipped preset, seed 42, 120 steps, one torch thread) and asserts that the mean reward
of the last 30 steps beats the first 30's by a margin. This script fits reward = a + b*sqrt(step) to the curve, takes
the fit's rise between the two windows as the full effect, the residual scatter for the standard error of a
difference of two 30-step means, and puts the margin halfway between the full effect and half of it, so that a run
learning half as much fails. Saves benchmarks/results/demo_learning_margin.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
from pathlib import Path

from _common import ROOT, cli, machine, save, shown

STEPS, WINDOW = 120, 30


def analyse(rewards: list[float]) -> dict:
    steps = range(1, len(rewards) + 1)
    x = [math.sqrt(s) for s in steps]
    mx, my = statistics.mean(x), statistics.mean(rewards)
    b = sum((xi - mx) * (yi - my) for xi, yi in zip(x, rewards)) / sum((xi - mx) ** 2 for xi in x)
    a = my - b * mx
    scatter = statistics.stdev([y - (a + b * xi) for xi, y in zip(x, rewards)])
    fit = lambda lo, hi: statistics.mean(a + b * math.sqrt(s) for s in range(lo, hi + 1))  # noqa: E731
    full = fit(STEPS - WINDOW + 1, STEPS) - fit(1, WINDOW)
    first, last = statistics.mean(rewards[:WINDOW]), statistics.mean(rewards[-WINDOW:])
    se = scatter * math.sqrt(2 / WINDOW)
    margin = round(0.75 * full, 3)  # halfway between the full effect and half of it
    return {"first_window_mean": round(first, 4), "last_window_mean": round(last, 4), "measured_rise": round(last - first, 4),
            "fit_rise": round(full, 4), "residual_scatter": round(scatter, 4), "standard_error_of_rise": round(se, 4),
            "margin": margin, "measured_passes_by_se": round((last - first - margin) / se, 2),
            "half_effect_fails_by_se": round((margin - full / 2) / se, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", type=Path, help="metrics.jsonl of a run trained as below, instead of training one")
    args = parser.parse_args()
    command = ["train", ROOT / "presets" / "cpu-demo.yaml", f"rloo.max_steps={STEPS}", "rloo.save_steps=1000"]
    if args.metrics:
        rows = [json.loads(line) for line in args.metrics.read_text().splitlines() if line.strip()]
    else:
        os.environ["OMP_NUM_THREADS"] = "1"  # the test's float order
        with tempfile.TemporaryDirectory(prefix="rloo-bench-") as tmp:
            cli(*command, "--run-dir", Path(tmp) / "run")
            rows = [json.loads(line) for line in (Path(tmp) / "run" / "metrics.jsonl").read_text().splitlines() if line.strip()]
    rewards = [row["reward"] for row in rows]
    if len(rewards) != STEPS:
        raise SystemExit(f"expected {STEPS} steps, found {len(rewards)}")
    result = {"machine": machine(), "command": "OMP_NUM_THREADS=1 rloo-studio " + " ".join(
        str(c.relative_to(ROOT)) if isinstance(c, Path) else c for c in command),
        "seconds_training": round(sum(row.get("step_time", 0) for row in rows), 1), **analyse(rewards),
        "rewards": [round(r, 4) for r in rewards]}
    path = save("demo_learning_margin", result)
    print(json.dumps({k: v for k, v in result.items() if k != "rewards"}, indent=2))
    print(f"saved {shown(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The margin of tests/engine/test_demo_learning.py, measured: how much 20 cpu-demo steps raise the held-out score.

    python benchmarks/demo_learning_margin.py     # 4 short runs, each trained and evaluated (one CPU thread, ~5 min)

The test trains the shipped preset for 20 steps (seed 42, one torch thread), then asks `rloo-studio eval` (greedy, the
300 held-out problems, base and tuned on the same prompts) how much the tuned model's mean reward beats the base
model's, and asserts a margin. This script repeats that run with seed 42 and with other seeds (another order of
data and sampling: the stand-in for another CPU's floating-point order). The margin lies halfway between the seeds'
mean gain and half of it, so that a run learning half as much fails. Saves benchmarks/results/demo_learning_margin.json.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from pathlib import Path

from _common import ROOT, cli, machine, save, shown, table

STEPS = 20
SEEDS = (42, 1, 2, 3)
PRESET = ROOT / "presets" / "cpu-demo.yaml"


def trained_and_evaluated(folder: Path, *overrides: str) -> dict:
    """Train the preset for STEPS with `overrides`, evaluate it as the test does; the gain and its details."""
    run_dir = folder / "run"
    cli("train", PRESET, "--run-dir", run_dir, f"rloo.max_steps={STEPS}", "rloo.save_steps=1000", *overrides)
    report = json.loads(cli("eval", run_dir, "--json").stdout)
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    paired = report["tuned_vs_base"]
    return {"overrides": list(overrides), "gain": round(paired["mean_difference"], 4),
            "interval": [round(paired["low"], 4), round(paired["high"], 4)], "wins": paired["wins"], "losses": paired["losses"],
            "base_accuracy": report["base"]["answer_accuracy"], "tuned_accuracy": round(report["tuned"]["answer_accuracy"], 4),
            "tuned_format_rate": report["tuned"]["format_rate"],
            "seconds_training": round(sum(m.get("step_time", 0) for m in metrics), 1), "seconds_eval": report["seconds"]}


def main() -> int:
    os.environ["OMP_NUM_THREADS"] = "1"  # the test's float order
    runs = {}
    with tempfile.TemporaryDirectory(prefix="rloo-bench-") as tmp:
        for seed in SEEDS:
            runs[f"seed {seed}"] = trained_and_evaluated(Path(tmp) / f"seed-{seed}", f"rloo.seed={seed}")
            print(f"seed {seed}: gain {runs[f'seed {seed}']['gain']}", flush=True)
    gains = [runs[f"seed {s}"]["gain"] for s in SEEDS]
    full = statistics.mean(gains)
    test_run = runs["seed 42"]
    # The paired bootstrap interval of the test's own run: its width over 2 x 1.96 is the standard error of its gain.
    se = (test_run["interval"][1] - test_run["interval"][0]) / 3.92
    margin = round(0.75 * full, 3)  # halfway between the full effect and half of it
    result = {"machine": machine(), "steps": STEPS,
              "command": f"OMP_NUM_THREADS=1 rloo-studio train presets/cpu-demo.yaml rloo.max_steps={STEPS} rloo.save_steps=1000 "
                         "[rloo.seed=S] && rloo-studio eval RUN --json",
              "mean_gain_over_seeds": round(full, 4), "seed_spread": round(statistics.stdev(gains), 4),
              "standard_error_of_one_gain": round(se, 4), "margin": margin,
              "test_run_passes_by_se": round((test_run["gain"] - margin) / se, 2),
              "half_effect_fails_by_se": round((margin - full / 2) / se, 2),
              "smallest_seed_gain": min(gains), "runs": runs}
    path = save("demo_learning_margin", result)
    print(table(["run", "gain", "95 % interval", "wins/losses", "accuracy base -> tuned", "train s"],
                [[name, r["gain"], r["interval"], f"{r['wins']}/{r['losses']}", f"{r['base_accuracy']} -> {r['tuned_accuracy']}",
                  r["seconds_training"]] for name, r in runs.items()]))
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    print(f"saved {shown(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

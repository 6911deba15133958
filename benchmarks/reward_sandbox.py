"""What the reward sandbox costs: per reward call, and per training step on the bundled demo.

    python benchmarks/reward_sandbox.py [--calls 200] [--steps 12]

1. Per call: one reward file's function (the demo's exact-answer check written as a person would) called on a
   demo-sized batch (128 completions with their answers, as TRL passes them) — in the training process, through
   the reward child without a sandbox, and through the sandboxed child (rewards/boxed.py). Alternated call by call,
   in one sitting, so a busy machine slows all three alike.
2. Per step: `rloo-studio train presets/cpu-demo.yaml` with that reward file added, sandbox on and off
   (RLOO_STUDIO_SANDBOX), alternated; the median `step_time` TRL logs over steps 2..N (step 1 loads and warms up).
Writes benchmarks/results/reward_sandbox.json. Needs bubblewrap (Linux).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import ROOT, cli, machine, save, shown, table  # noqa: E402

from rloo_studio import sandbox  # noqa: E402
from rloo_studio.rewards.user import load_reward_file  # noqa: E402

REWARD = '''
import re


def answer_is_right(completions, answer, **kwargs):
    """1.0 when the last number after </think> is the answer, else 0.0 (as a person would write it)."""
    scores = []
    for completion, expected in zip(completions, answer):
        text = completion if isinstance(completion, str) else completion[0]["content"]  # plain text or chat messages
        text = text.split("</think>")[-1]
        numbers = re.findall(r"-?\\d+", text)
        scores.append(1.0 if numbers and numbers[-1] == str(expected).strip() else 0.0)
    return scores
'''


def per_call(folder: Path, calls: int) -> dict:
    from rloo_studio.rewards.boxed import RewardBox

    path = folder / "reward.py"
    direct = load_reward_file(path, None, ("answer",))["answer_is_right"]
    kwargs = {"prompts": ["What is 12 + 30?"] * 128, "completions": [f"<think>12+30</think>{40 + i % 4}" for i in range(128)],
              "completion_ids": [[5, 6, 7, 8]] * 128, "answer": ["42"] * 128}
    os.environ[sandbox.SANDBOX_ENV] = "off"
    sandbox._status = None
    plain = RewardBox([folder])
    os.environ.pop(sandbox.SANDBOX_ENV)
    sandbox._status = None
    boxed = RewardBox([folder])
    ways = {"in the training process": direct, "child, no sandbox": plain.function("answer_is_right"),
            "sandboxed child": boxed.function("answer_is_right")}
    for box in (plain, boxed):
        box.load(path, None, ("answer",))
    times: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for _ in range(calls):
            for name, fn in ways.items():
                started = time.perf_counter()
                values = fn(**kwargs)
                times[name].append(time.perf_counter() - started)
                assert sum(values) == 32.0, values
    finally:
        plain.close()
        boxed.close()
    return {name: round(statistics.median(t) * 1000, 3) for name, t in times.items()}


def per_step(folder: Path, steps: int, rounds: int) -> dict:
    config = folder / "demo.yaml"
    preset = (ROOT / "presets" / "cpu-demo.yaml").read_text(encoding="utf-8")
    config.write_text(preset.replace("rewards:\n", f"rewards:\n  - {{file: {folder / 'reward.py'}, weight: 1.0}}\n", 1),
                      encoding="utf-8")
    medians: dict[str, list[float]] = {"on": [], "off": []}
    for i in range(rounds):
        for mode in ("on", "off"):
            run_dir = folder / f"run-{mode}-{i}"
            os.environ[sandbox.SANDBOX_ENV] = mode
            cli("train", config, "--run-dir", run_dir, f"rloo.max_steps={steps}", "rloo.save_steps=1000")
            times = [json.loads(line)["step_time"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()
                     if line.strip() and "step_time" in json.loads(line)][1:]
            medians[mode].append(statistics.median(times))
    os.environ.pop(sandbox.SANDBOX_ENV, None)
    return {mode: round(statistics.median(m), 4) for mode, m in medians.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each kind (default 200)")
    parser.add_argument("--steps", type=int, default=12, help="training steps per run (default 12)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each kind, alternated (default 2)")
    args = parser.parse_args()
    if not sandbox.status().available:
        sys.exit(sandbox.status().note)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "reward.py").write_text(REWARD, encoding="utf-8")
        call_ms = per_call(folder, args.calls)
        step_s = per_step(folder, args.steps, args.rounds)
    print(table(["reward call on 128 completions", "median ms"], [[k, v] for k, v in call_ms.items()]))
    print(table(["demo training step", "median s"], [["sandbox on", step_s["on"]], ["sandbox off", step_s["off"]]]))
    data = {"machine": machine(), "load_average_1m_before": load,
            "load_average_1m_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "call_median_ms": call_ms, "call_overhead_ms": round(call_ms["sandboxed child"] - call_ms["in the training process"], 3),
            "demo_step_median_s": step_s, "demo_step_ratio_on_over_off": round(step_s["on"] / step_s["off"], 3),
            "calls": args.calls, "steps": args.steps, "rounds": args.rounds}
    print(f"saved {shown(save('reward_sandbox', data))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

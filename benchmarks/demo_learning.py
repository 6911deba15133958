"""Does RLOO visibly improve the bundled demo model? Train the cpu-demo preset, evaluate base vs tuned.

    python benchmarks/demo_learning.py                 # the preset as shipped
    python benchmarks/demo_learning.py rloo.max_steps=20   # any override, e.g. a quick check

Prints a Markdown table (held-out answer accuracy and format rate, base and tuned; steps; wall
time) and saves it with the details to benchmarks/results/demo_learning.json.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, cli, machine, save, shown, table


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="rloo-bench-") as tmp:
        run_dir = Path(tmp) / "run"
        started = time.time()
        cli("train", ROOT / "presets" / "cpu-demo.yaml", "--run-dir", run_dir, *argv)
        train_seconds = time.time() - started
        status = json.loads((run_dir / "status.json").read_text())
        report = json.loads(cli("eval", run_dir, "--json").stdout)
        metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    base, tuned = report["base"], report["tuned"]
    rows = [
        ["answer accuracy", f"{100 * base['answer_accuracy']:.1f}%", f"{100 * tuned['answer_accuracy']:.1f}%",
         f"{100 * (tuned['answer_accuracy'] - base['answer_accuracy']):+.1f} pts"],
        ["format rate", f"{100 * base['format_rate']:.1f}%", f"{100 * tuned['format_rate']:.1f}%",
         f"{100 * (tuned['format_rate'] - base['format_rate']):+.1f} pts"],
        ["mean total reward", f"{base['mean_reward']:.3f}", f"{tuned['mean_reward']:.3f}", f"{tuned['mean_reward'] - base['mean_reward']:+.3f}"],
    ]
    print(f"cpu-demo preset, {status['step']} RLOO steps in {train_seconds / 60:.1f} min (whole command, including start-up), "
          f"held-out: {report['n_prompts']} prompts, greedy; machine: {machine()}\n")
    print(table(["", "base", "tuned", "change"], rows))
    first, last = metrics[:10], metrics[-10:]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"\ntraining reward: first 10 steps {mean([m['reward'] for m in first]):.3f} -> last 10 steps {mean([m['reward'] for m in last]):.3f}")
    path = save("demo_learning", {"machine": machine(), "overrides": argv, "steps": status["step"], "train_seconds": round(train_seconds, 1),
                                  "eval": report, "reward_curve": [m["reward"] for m in metrics]})
    print(f"saved {shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

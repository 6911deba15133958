"""How long the person waits for *Sample and score* on the bundled demo: the first preview (the model
worker starts and loads the model) and warm previews (the worker kept it loaded).

    python benchmarks/preview_warm.py [--repeats 3] [--num-prompts 3] [--sandbox-both]

Runs the same function the page runs on a click (`ui.rewards_tab.sample_and_score`: sampling in the
inference worker, scoring in a child process) and times it from call to result, which is what the
page reports as the wait. Writes benchmarks/results/preview_warm.json. Target: warm ≤ 2 s.
With --sandbox-both the warm previews alternate between the reward sandbox on and off (the same loaded model),
and the result gives each one's median: what the sandbox adds to the wait, measured side by side.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import ROOT, machine, save, table  # noqa: E402

from rloo_studio import sandbox  # noqa: E402
from rloo_studio.config import RunConfig  # noqa: E402
from rloo_studio.workers.inference import InferenceWorker  # noqa: E402
from rloo_studio.ui.rewards_tab import sample_and_score  # noqa: E402

TARGET_WARM_S = 2.0  # the goal for a warm demo preview, click to table: the page should answer within a couple of seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm previews after the first (default 3)")
    parser.add_argument("--num-prompts", type=int, default=3, help="prompts per preview (the page's default: 3)")
    parser.add_argument("--sandbox-both", action="store_true", help="alternate warm previews with the reward sandbox on and off")
    args = parser.parse_args()
    cfg = RunConfig.load(ROOT / "presets" / "cpu-demo.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        worker = InferenceWorker(log_path=Path(tmp) / "inference.log")
        rows = []
        try:
            for i in range(1 + args.repeats):
                mode = ("on" if i % 2 else "off") if args.sandbox_both else None
                if mode:  # the scoring child's sandbox is decided in this process, from the environment
                    os.environ[sandbox.SANDBOX_ENV] = mode
                    sandbox._status = None
                started = time.perf_counter()
                result = sample_and_score(worker, cfg, num_prompts=args.num_prompts, timeout_s=60, seed=i)
                wall = time.perf_counter() - started
                if result.get("problems"):
                    sys.exit(f"preview failed: {result['problems'][0]}")
                rows.append({"preview": "first" if i == 0 else f"warm {i}", "wall_s": round(wall, 2), "sandbox": mode,
                             "scoring_s": round(result.get("seconds", float("nan")), 2),
                             "completions": len(result["rows"]), "worker_pid": result["worker"]["pid"],
                             "model_loads": result["worker"]["loads"]})
                print(f"{rows[-1]['preview']}: {wall:.2f} s ({len(result['rows'])} completions, "
                      f"model loads so far {result['worker']['loads']})", flush=True)
        finally:
            worker.shutdown()
    warm = [r["wall_s"] for r in rows[1:]]
    # The machine's load while measuring: on a shared, busy machine every time here is longer than a person's.
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    data = {"machine": machine(), "load_average_1m": load, "preset": "presets/cpu-demo.yaml", "num_prompts": args.num_prompts,
            "num_generations": int(cfg.rloo_value("num_generations")), "previews": rows,
            "first_s": rows[0]["wall_s"], "warm_median_s": sorted(warm)[len(warm) // 2] if warm else None,
            "target_warm_s": TARGET_WARM_S, "one_worker_process": len({r["worker_pid"] for r in rows}) == 1}
    if args.sandbox_both:
        for mode in ("on", "off"):
            walls = sorted(r["wall_s"] for r in rows[1:] if r["sandbox"] == mode)
            data[f"warm_median_s_sandbox_{mode}"] = walls[len(walls) // 2] if walls else None
    print(table(["preview", "wall s", "of which scoring s", "completions", "model loads"],
                [[r["preview"], r["wall_s"], r["scoring_s"], r["completions"], r["model_loads"]] for r in rows]))
    print(f"saved {save('preview_warm', data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

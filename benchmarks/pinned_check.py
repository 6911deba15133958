"""How long the person waits for a pinned-example check on the bundled demo: each check in a fresh scoring child
(as before) against the app's way, where each check's child was started after the check before it and loaded the
model's tokenizer while the person edited.

    python benchmarks/pinned_check.py [--repeats 4] [--edit-seconds 8]

Runs the functions the page runs (`workers.scorer.score`, with and without the pinned examples' standby child `scorer.WRITTEN`) on one pinned
row scored by the demo preset's `numeric_answer` and a function of the editor's code that reads `completion_ids`
(so the tokenizer is needed), with `--edit-seconds` between checks as the person's typing. Times each check from call
to result. Writes benchmarks/results/pinned_check.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import ROOT, machine, save, table  # noqa: E402

from rloo_studio.config import RunConfig  # noqa: E402
from rloo_studio.rewards.preview import tokenizer_source  # noqa: E402
from rloo_studio.workers import scorer  # noqa: E402

CODE = "def short(completion_ids, **kwargs):\n    return [1.0 if len(ids) < 40 else 0.0 for ids in completion_ids]\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4, help="checks in a row, each way (default 4)")
    parser.add_argument("--edit-seconds", type=float, default=8.0, help="pause between checks (default 8)")
    args = parser.parse_args()
    cfg = RunConfig.load(ROOT / "presets" / "cpu-demo.yaml")
    request = {"groups": [{"prompt": "What is 12 + 30?", "completions": ["<think>12+30=42</think>42"], "row": {"answer": "42"}}],
               "num_generations": 1, "conversational": False, "probes": False, "source": CODE,
               "rewards": [dict(s.__dict__) for s in cfg.rewards] + [{"file": "rewards.py", "function": "short"}],
               "tokenizer": tokenizer_source(cfg.model.name_or_path, cfg.base_dir)}
    ways = {"a fresh child per check": lambda: scorer.score(request, timeout_s=60),
            "the app's (child started after the last check)": lambda: scorer.score(request, timeout_s=60, standby=scorer.WRITTEN)}
    rows = []
    for way, check in ways.items():
        for i in range(args.repeats):
            if i:
                time.sleep(args.edit_seconds)
            started = time.perf_counter()
            result = check()
            wall = time.perf_counter() - started
            if result.get("problems"):
                sys.exit(f"check failed: {result['problems'][0]}")
            rows.append({"way": way, "check": i + 1, "wall_s": round(wall, 2), "tokenizer_loaded": result["tokenizer_loaded"]})
            print(f"{way}, check {i + 1}: {wall:.2f} s (tokenizer loaded {result['tokenizer_loaded']})", flush=True)
    scorer.WRITTEN.end()
    # The machine's load while measuring: on a shared, busy machine every time here is longer than a person's.
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    def median(way: str, first: bool) -> float:
        values = sorted(r["wall_s"] for r in rows if r["way"] == way and (r["check"] == 1) == first)
        return values[len(values) // 2]

    data = {"machine": machine(), "load_average_1m": load, "preset": "presets/cpu-demo.yaml", "edit_seconds": args.edit_seconds,
            "checks": rows, "median_later_checks_s": {way: median(way, False) for way in ways if args.repeats > 1}}
    print(table(["way", "check", "wall s", "tokenizer loaded"], [[r["way"], r["check"], r["wall_s"], r["tokenizer_loaded"]] for r in rows]))
    print(f"saved {save('pinned_check', data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How much generation time does computing each prompt's prefill once save, and are the completions the same?

    python benchmarks/prefill_sharing.py                          # the demo and cpu-small-real, side by side
    python benchmarks/prefill_sharing.py --only demo --steps 3 --repeats 1

For each config in turn, real training runs (`rloo-studio train`, each in its own process, OMP_NUM_THREADS threads,
default 2): `model.share_prefill=off` ("plain": `generate` prefills every one of a prompt's k rows) and `auto`
("shared": each distinct prompt's prefill once, engine/prefill.py), alternating, `--repeats` times each, so that the
machine's load hits both alike. cpu-small-real runs SmolLM2-135M-Instruct (scripts/build_real_model.py) with the
preset's shapes: 4 prompts x 8 completions of up to 16 tokens, LoRA r 16. Per run: the median over the steps after
the first (warm-up) of `time/generation` (the step-time split's generation part), of `time/step` and of
`tokens_per_s`. The ratios are shared / plain of the medians over the runs. Same seed, same config: the runs must
train the same numbers, and the result says whether they did (every step's loss, reward and mean completion length,
and the completions samples.jsonl records, compared across all runs of a config).

Writes benchmarks/results/prefill_sharing.json with the load average before and after: the machine may be shared,
so the times are ratios measured side by side, not absolute speeds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, machine, save, shown, table

PRESETS = {"demo": ROOT / "presets" / "cpu-demo.yaml", "cpu-small-real": ROOT / "presets" / "cpu-small-real.yaml"}
VARIANTS = {"plain": "off", "shared": "auto"}
SAME_KEYS = ("loss", "reward", "completions/mean_length")


def run(variant: str, config: Path, overrides: list[str], workdir: Path, env: dict) -> dict:
    run_dir = workdir / f"run-{time.time_ns()}"
    argv = [sys.executable, "-m", "rloo_studio.cli", "train", str(config), "--run-dir", str(run_dir),
            f"model.share_prefill={VARIANTS[variant]}", *overrides]
    started = time.time()
    with open(workdir / "child.log", "ab") as log:
        done = subprocess.run(argv, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.exit(f"{variant} run of {config.name} failed (exit {done.returncode}); see {workdir / 'child.log'}")
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines() if line.strip()]
    timed = records[1:] or records
    said = [line for line in (run_dir / "train.log").read_text().splitlines() if "prefill sharing:" in line]
    return {"variant": variant, "wall_s": round(time.time() - started, 1), "steps": len(records),
            "generation_s": statistics.median(r["time/generation"] for r in timed),
            "step_s": statistics.median(r["time/step"] for r in timed),
            "tokens_per_s": statistics.median(r.get("tokens_per_s") or 0 for r in timed),
            "log_line": said[0].split("] ", 1)[-1] if said else None,
            "numbers": {key: [r.get(key) for r in records] for key in SAME_KEYS},
            "completions": [s["completion"] for s in samples]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(PRESETS), help="one config only")
    parser.add_argument("--steps", type=int, default=3, help="steps per run (the first is warm-up; default 3)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each variant, alternating (default 2)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for every run (e.g. a smoke test: --set rloo.max_completion_length=4)")
    args = parser.parse_args()

    names = [args.only] if args.only else list(PRESETS)
    real_model = None
    if "cpu-small-real" in names:
        sys.path.insert(0, str(ROOT / "scripts"))
        from build_real_model import build_real_model

        real_model = Path(build_real_model())
    threads = os.environ.get("OMP_NUM_THREADS", "2")
    env = dict(os.environ, OMP_NUM_THREADS=threads, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    results: dict = {"machine": machine(), "threads": int(threads), "load_average_before": os.getloadavg(),
                     "steps": args.steps, "repeats": args.repeats, "configs": {}}
    with tempfile.TemporaryDirectory(prefix="rloo-prefill-") as tmp:
        workdir = Path(tmp)
        for name in names:
            overrides = [f"rloo.max_steps={args.steps}", "rloo.save_steps=100000", "rloo.logging_steps=1", *args.set]
            if name == "cpu-small-real":
                overrides.append(f"model.name_or_path={real_model}")
            found: dict = {variant: [] for variant in VARIANTS}
            for i in range(args.repeats):
                for variant in VARIANTS:
                    r = run(variant, PRESETS[name], overrides, workdir, env)
                    found[variant].append(r)
                    print(f"{name} {variant} #{i + 1}: generation {r['generation_s']:.2f} s/step, step {r['step_s']:.2f} s "
                          f"({r['log_line']})", flush=True)
            summary: dict = {}
            for variant, done in found.items():
                summary[variant] = {key: statistics.median(r[key] for r in done) for key in ("generation_s", "step_s", "tokens_per_s")}
                summary[variant]["runs"] = done
            everyone = [r for done in found.values() for r in done]
            summary["same_numbers"] = all(r["numbers"] == everyone[0]["numbers"] for r in everyone)
            summary["same_completions"] = all(r["completions"] == everyone[0]["completions"] for r in everyone)
            summary["shared_used"] = all(r["log_line"] and r["log_line"].startswith("prefill sharing: on") for r in found["shared"])
            summary["generation_ratio"] = summary["shared"]["generation_s"] / summary["plain"]["generation_s"]
            summary["step_ratio"] = summary["shared"]["step_s"] / summary["plain"]["step_s"]
            results["configs"][name] = summary
    results["load_average_after"] = os.getloadavg()
    path = save("prefill_sharing" if not args.only else f"prefill_sharing_{args.only}", results)

    rows = []
    for name, s in results["configs"].items():
        for variant in VARIANTS:
            v = s[variant]
            rows.append([name, variant, f"{v['generation_s']:.2f}", f"{v['step_s']:.2f}", f"{v['tokens_per_s']:.0f}"])
        rows.append([name, "shared / plain", f"x {s['generation_ratio']:.2f}", f"x {s['step_ratio']:.2f}",
                     f"same numbers: {s['same_numbers']}, same completions: {s['same_completions']}"])
    print(table(["config", "variant", "generation s/step", "s/step", "tokens/s"], rows))
    print(f"load average before {results['load_average_before']}, after {results['load_average_after']}; saved {shown(path)}")
    if not all(s["shared_used"] for s in results["configs"].values()):
        sys.exit("a 'shared' run did not share prefills (see its log line above)")


if __name__ == "__main__":
    main()

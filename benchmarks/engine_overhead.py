"""What does RLOO Studio's layer cost? `rloo-studio train` vs a minimal hand-written Unsloth + TRL script.

    python benchmarks/engine_overhead.py [--repeats 3] [--steps 12]

Both train the bundled demo model with the cpu-demo settings (fewer steps) and the same reward
functions. Runs alternate (ours, minimal, ours, ...) so machine noise hits both alike. The step
time is TRL's own `step_time` per step, the first two steps skipped as warm-up; the table shows
the medians and their ratio (aim: <= 1.05). Saves benchmarks/results/engine_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import yaml
from _common import ROOT, cli, machine, save, shown, table

WARMUP_STEPS = 2

# The same run written by hand, as a person would without RLOO Studio: Unsloth first, then TRL.
MINIMAL_SCRIPT = textwrap.dedent('''
    import json, os, sys
    os.environ.setdefault("TRITON_INTERPRET", "1")
    import unsloth
    from unsloth import FastLanguageModel
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer
    from rloo_studio.rewards.builtin import numeric_answer, think_format, think_length

    cfg = json.loads(sys.argv[1])
    model, tok = FastLanguageModel.from_pretrained(cfg["model"], max_seq_length=256, dtype=None if cfg["cuda"] else __import__("torch").float32, use_gradient_checkpointing=False,
                                                   load_in_4bit=False, full_finetuning=True)
    rows = [json.loads(l) for l in open(cfg["data"])]
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}], "answer": r["answer"]} for r in rows])
    rewards = [numeric_answer(), think_format(), think_length(think_end_token_id=tok.convert_tokens_to_ids("</think>"), **cfg["think_length"])]
    args = RLOOConfig(output_dir=cfg["out"], use_cpu=not cfg["cuda"], bf16=False, report_to="none", save_strategy="no",
                      reward_weights=cfg["weights"], **cfg["rloo"])
    trainer = RLOOTrainer(model=model, reward_funcs=rewards, args=args, train_dataset=ds, processing_class=tok)
    trainer.train()
    print("STEP_TIMES", json.dumps([h["step_time"] for h in trainer.state.log_history if "step_time" in h]))
''')


def ours(config: Path, steps: int, tmp: Path, index: int) -> list[float]:
    run_dir = tmp / f"ours-{index}"
    cli("train", config, "--run-dir", run_dir, f"rloo.max_steps={steps}", "rloo.save_steps=100000")
    return [json.loads(line)["step_time"] for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]


def minimal(preset: dict, steps: int, tmp: Path, index: int) -> list[float]:
    rloo = {k: v for k, v in preset["rloo"].items() if k not in ("save_steps",)}
    rloo["max_steps"] = steps
    spec = {
        "model": str(ROOT / "assets" / "demo-model"), "data": str(ROOT / "assets" / "demo-data" / "train.jsonl"),
        "cuda": False, "out": str(tmp / f"minimal-{index}"), "rloo": rloo,
        "weights": [r.get("weight", 1.0) for r in preset["rewards"]],
        "think_length": next(r["params"] for r in preset["rewards"] if r["name"] == "think_length"),
    }
    script = tmp / "minimal_train.py"
    script.write_text(MINIMAL_SCRIPT)
    result = subprocess.run([sys.executable, str(script), json.dumps(spec)], cwd=tmp, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"the minimal script failed:\n{result.stderr[-3000:]}")
    line = next(l for l in result.stdout.splitlines() if l.startswith("STEP_TIMES"))
    return json.loads(line.split(" ", 1)[1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args(argv)
    preset_path = ROOT / "presets" / "cpu-demo.yaml"
    preset = yaml.safe_load(preset_path.read_text())
    ours_times, minimal_times = [], []
    with tempfile.TemporaryDirectory(prefix="rloo-overhead-") as tmp:
        for i in range(args.repeats):
            ours_times.extend(ours(preset_path, args.steps, Path(tmp), i)[WARMUP_STEPS:])
            minimal_times.extend(minimal(preset, args.steps, Path(tmp), i)[WARMUP_STEPS:])
            print(f"repeat {i + 1}/{args.repeats}: ours median {statistics.median(ours_times):.3f}s, "
                  f"minimal median {statistics.median(minimal_times):.3f}s", flush=True)
    ratio = statistics.median(ours_times) / statistics.median(minimal_times)
    print(f"\ncpu-demo settings, {args.steps} steps x {args.repeats} alternating repeats (first {WARMUP_STEPS} steps of each "
          f"run skipped); machine: {machine()}\n")
    print(table(["", "median step time", "steps measured"], [
        ["rloo-studio train", f"{statistics.median(ours_times):.3f} s", len(ours_times)],
        ["minimal Unsloth + TRL script", f"{statistics.median(minimal_times):.3f} s", len(minimal_times)],
        ["ratio (ours / minimal)", f"{ratio:.3f}", ""],
    ]))
    path = save("engine_overhead", {"machine": machine(), "steps": args.steps, "repeats": args.repeats, "ratio": ratio,
                                    "ours_step_times": ours_times, "minimal_step_times": minimal_times})
    print(f"saved {shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Trainer-argument parity: for every preset, the RLOOConfig a run builds on plain transformers + PEFT and under Unsloth's
trainer patch, side by side, with a verdict.

    python benchmarks/trainer_parity.py            # CPU or GPU; writes benchmarks/results/trainer_parity.{json,md}

On a GPU, `import unsloth` replaces TRL's RLOOConfig and RLOOTrainer by its own (unsloth/models/rl.py, PatchFastRL ->
patch_trl_rl_trainers); its config fills every argument a run leaves unset with Unsloth's defaults. Without a GPU,
Unsloth leaves TRL alone, so this script sets UNSLOTH_ALLOW_CPU=1 (Unsloth's own switch for GPU-less machines, under
which PatchFastRL skips the rewrite) and applies the rewrite as PatchFastRL does: the GPU's classes, on the CPU. On a
GPU nothing is set: `import unsloth` patches by itself, and the script says which happened.

Each side runs in its own process (a process holds one backend), builds `rloo_arguments(cfg, ...)` for each preset with
the precision that machine would choose, passes them to `trl.RLOOConfig` (TRL's, or Unsloth's in its place) and reads
back every argument the run decides (`RunConfig.effective_rloo`) plus the derived ones. No model is loaded: the
presets' models are gigabytes. What a trainer changes in its own __init__ (Unsloth's decides mixed precision for a
float32 model) needs a model: a run records it in trainer_args.json, tests/engine/test_trainer_parity.py checks it
on the tiny model, and benchmarks/gpu_check.py compares its two backends' runs on CUDA.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, machine, save, shown, table

sys.path.insert(0, str(ROOT))

SIDES = ("transformers", "unsloth")
# Arguments derived from the others, compared too: they are what a step does.
DERIVED = ("steps_per_generation", "generation_batch_size")


def _has_nvidia_driver() -> bool:
    """Without the driver's /proc entry or device files torch cannot see a GPU (checked without importing torch)."""
    return Path("/proc/driver/nvidia").exists() or any(Path("/dev").glob("nvidia*"))


def side_main(side: str, out: Path) -> None:
    """One side, in its own process: every preset's RLOOConfig as this backend builds it, written to `out`."""
    from rloo_studio.engine import stack as studio_stack

    # The environment the engine sets before its imports (Unsloth's compiled-kernel cache out of this folder).
    studio_stack._prepare_environment()
    how = "plain TRL (Unsloth not imported)"
    if side == "unsloth":
        import unsloth  # noqa: F401  (first: it patches what follows)
        import trl

        if not trl.RLOOTrainer.__name__.startswith("Unsloth"):
            from unsloth.models.rl import patch_trl_rl_trainers

            patch_trl_rl_trainers()
            how = "Unsloth's trainer patch, applied by this script as PatchFastRL applies it on a GPU"
        else:
            how = "Unsloth's trainer patch, applied by `import unsloth`"
    from rloo_studio.config import RunConfig
    from rloo_studio.engine.model import choose_dtype
    from rloo_studio.engine.stack import import_training_stack
    from rloo_studio.engine.trainer_args import RECORDED_DEVICE_KEYS, rloo_arguments, trainer_arguments
    from rloo_studio.presets import list_presets

    stack = import_training_stack("auto" if side == "unsloth" else "transformers")
    records = {}
    with tempfile.TemporaryDirectory() as tmp:
        for preset in list_presets():
            cfg = RunConfig.load(preset.path)
            dtype = choose_dtype(cfg.model.dtype, stack.torch, stack.cuda)
            args = rloo_arguments(cfg, stack, Path(tmp), dtype)
            config = stack.trl.RLOOConfig(**args)
            keys = sorted((set(cfg.effective_rloo()) | set(RECORDED_DEVICE_KEYS) | set(DERIVED)) - {"report_to"})
            records[preset.name] = {"dtype": dtype, "args": trainer_arguments(config, keys)}
    out.write_text(json.dumps({"side": side, "how": how, "config_class": f"{type(config).__module__}.{type(config).__name__}",
                               "trainer_class": stack.trl.RLOOTrainer.__name__, "cuda": stack.cuda, "presets": records}))


def compare(sides: dict) -> tuple[list[dict], list[list]]:
    """Per preset: the keys whose values differ between the sides ({} = parity), and the table rows."""
    plain, patched = sides["transformers"]["presets"], sides["unsloth"]["presets"]
    results, rows = [], []
    for name in plain:
        a, b = plain[name]["args"], patched.get(name, {}).get("args", {})
        differ = {k: [a[k], b.get(k)] for k in a if b.get(k) != a[k]}
        results.append({"preset": name, "dtype": plain[name]["dtype"], "differ": differ, "transformers": a, "unsloth": b})
        for key in ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations", "steps_per_generation",
                    "optim", "weight_decay", "warmup_steps", "learning_rate", "seed", "bf16", "fp16"):
            mark = "" if a.get(key) == b.get(key) else "  ← differs"
            rows.append([name, key, a.get(key), b.get(key), mark])
        for key in sorted(set(differ) - {r[1] for r in rows if r[0] == name}):
            rows.append([name, key, a.get(key), b.get(key), "  ← differs"])
        rows.append([name, "verdict", "", "", "same arguments" if not differ else f"{len(differ)} argument(s) differ"])
    return results, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # one side, in its own process
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        side_main(args.side, Path(args.out))
        return

    sides = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side in SIDES:
            out = Path(tmp) / f"{side}.json"
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
            if side == "unsloth" and not _has_nvidia_driver():
                env["UNSLOTH_ALLOW_CPU"] = "1"
            print(f"building every preset's RLOOConfig: {side} ...", file=sys.stderr, flush=True)
            result = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--side", side, "--out", str(out)],
                                    capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
            if result.returncode != 0 or not out.exists():
                sys.exit(f"the {side} side failed:\n{result.stderr[-3000:]}")
            sides[side] = json.loads(out.read_text())
    results, rows = compare(sides)
    same = all(not r["differ"] for r in results)
    device = "CUDA" if sides["unsloth"]["cuda"] else "CPU"
    title = (f"Trainer-argument parity on {device} — transformers + PEFT ({sides['transformers']['config_class']}) vs "
             f"{sides['unsloth']['how']} ({sides['unsloth']['trainer_class']}): "
             f"{'every preset gets the same arguments' if same else 'arguments DIFFER'}")
    text = table(["preset", "argument", "transformers", "unsloth", ""], rows)
    print(f"\n{title}\n\n{text}")
    note = ("RLOOConfig only (no model loaded): a trainer's own changes in its __init__ (Unsloth's mixed precision for a "
            "float32 model) are in each run's trainer_args.json.")
    path = save("trainer_parity", {"machine": machine(), "device": device, "same": same, "sides": {
        s: {k: v for k, v in sides[s].items() if k != "presets"} for s in SIDES}, "presets": results, "note": note})
    path.with_suffix(".md").write_text(f"# {title}\n\n{note}\n\n{text}\n")
    print(f"\n{note}\nSaved {shown(path)} and {shown(path.with_suffix('.md'))}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()

"""How close does a CPU training step come to this machine's arithmetic limit, and what did the speed changes give?

    python benchmarks/cpu_roofline.py                       # cpu-small-real and the demo: before and after, side by side
    python benchmarks/cpu_roofline.py --only demo --steps 4 --repeats 2
    python benchmarks/cpu_roofline.py --fallback-only       # only the transformers backend, TRL's interpreted kernel vs torch

1. The arithmetic limit: the best fp32 matrix-multiply rate torch reaches here with the training's thread count
   (OMP_NUM_THREADS, default 2), over a square shape and the shapes a step of SmolLM2-135M multiplies, measured
   before and after the runs (the better of the two is used).
2. The FLOPs a step needs, by arithmetic from the model's config and the step's real token counts (TRL's num_tokens
   and mean completion length; padding not counted): generation (prefill of every completion's prompt, then one
   token at a time with a growing context), the no-grad log-prob passes TRL makes, the training forward and the
   backward (with LoRA the frozen weights need only the input gradients: 1x the forward; full fine-tuning 2x; the
   fused LM head computes its logits once more in the backward).
3. Real runs (`rloo-studio train`, each in its own process, OMP_NUM_THREADS threads), for each config in turn:
   "before" (the allocator settings, the old-log-prob skip and prefill sharing switched off in that process) and "after" (as
   shipped), alternating, `--repeats` times each, so that the machine's load hits both alike. The step time is the
   median of time/step over the steps after the first (warm-up); its parts are the medians of the time/* keys.
   Peak memory and page faults are the process's own (wait4's rusage: loading included).
4. The transformers backend (where Unsloth does not import), on cpu-small-real at a smaller batch: TRL's LM-head
   kernel in Triton's interpreter ("before") against the torch path ("after").

Achieved / peak = (FLOPs per step / peak rate) / step time. Writes benchmarks/results/cpu_roofline.json with the
load average before and after (numbers from a busy machine are ratios side by side, not absolute times).
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

sys.path.insert(0, str(ROOT))  # rloo_studio from this checkout, also when it is not installed

PRESETS = {"cpu-small-real": ROOT / "presets" / "cpu-small-real.yaml", "demo": ROOT / "presets" / "cpu-demo.yaml"}

# One training process: the speed changes switched off for "before" (they are looked up when a run starts), then
# `rloo-studio train` as a person runs it. argv: variant, then the CLI's arguments.
RUN = r"""
import sys
variant, args = sys.argv[1], sys.argv[2:]
if variant in ("before", "no-skip"):
    from rloo_studio.engine import trainer_patches
    trainer_patches.skip_needless_old_logprobs = lambda trainer, torch: "switched off by the benchmark"
if variant in ("before", "no-prefill"):
    args = args + ["model.share_prefill=off"]
if variant in ("before", "no-allocator"):
    from rloo_studio.engine import allocator
    allocator.keep_freed_memory = lambda: {}
if variant == "interpreted":  # the transformers backend as it was: TRL's Triton kernel, in the interpreter on a CPU
    from rloo_studio.engine.stack import import_training_stack
    import_training_stack("transformers")
    import trl.trainer.utils as tu
    tu._ChunkedLogProbFunction = getattr(tu._ChunkedLogProbFunction, "function", tu._ChunkedLogProbFunction)
from rloo_studio.cli import main
sys.exit(main(args))
"""

PEAK = r"""
import json, sys, time, torch
shapes = json.loads(sys.argv[1])
best = {}
for m, k, n in shapes:
    a, b = torch.randn(m, k), torch.randn(k, n)
    a @ b
    rates = []
    for _ in range(5):
        start = time.perf_counter()
        reps = max(1, int(2e9 // (2 * m * k * n)))
        for _ in range(reps):
            a @ b
        rates.append(2 * m * k * n * reps / (time.perf_counter() - start))
    best[f"{m}x{k}x{n}"] = max(rates)
print(json.dumps({"threads": torch.get_num_threads(), "gflops": {s: r / 1e9 for s, r in best.items()}}))
"""


def peak(env: dict) -> dict:
    # 2048^3, and SmolLM2-135M's: a decode step's MLP (32 tokens x 576 x 1536), a training forward's (1536 tokens),
    # the LM head over a micro-batch's completion tokens (512 x 576 x 49152).
    shapes = [[2048, 2048, 2048], [32, 576, 1536], [1536, 576, 1536], [1536, 1536, 576], [512, 576, 49152]]
    out = subprocess.run([sys.executable, "-c", PEAK, json.dumps(shapes)], capture_output=True, text=True, env=env, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["best_gflops"] = max(result["gflops"].values())
    return result


def model_shape(model_dir: Path) -> dict:
    cfg = json.loads((model_dir / "config.json").read_text())
    heads = cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    return {"layers": cfg["num_hidden_layers"], "hidden": cfg["hidden_size"], "inter": cfg["intermediate_size"],
            "heads": heads, "kv_heads": cfg.get("num_key_value_heads", heads), "head_dim": head_dim, "vocab": cfg["vocab_size"]}


def step_flops(shape: dict, completions: int, prompt_len: float, completion_len: float, lora_r: int | None,
               no_grad_passes: int) -> dict:
    """FLOPs of one RLOO step by part (multiply-add = 2), from mean prompt and completion lengths per completion."""
    L, H, I, V = shape["layers"], shape["hidden"], shape["inter"], shape["vocab"]
    q, kv = shape["heads"] * shape["head_dim"], shape["kv_heads"] * shape["head_dim"]
    linear = L * (H * q + 2 * H * kv + q * H + 3 * H * I)  # weights a token passes through, per token
    lora = L * 7 * lora_r * 2 * H if lora_r else 0  # r x (in + out) on the 7 projections (approximately 2H each)
    per_token = 2 * (linear + lora)

    def attention(context: float) -> float:  # scores and weighted values, per token, all layers
        return 4 * L * q * context

    B, P, C = completions, prompt_len, completion_len
    prefill = B * (P * per_token + P * attention(P / 2) + 2 * H * V)  # the prompt's last position gets logits
    decode = B * C * (per_token + attention(P + C / 2) + 2 * H * V)
    forward = B * (P + C) * per_token + B * (P + C) * attention((P + C) / 2) + B * C * 2 * H * V
    backward_factor = 1.0 if lora_r else 2.0  # frozen weights: input gradients only
    backward = backward_factor * (B * (P + C) * per_token) + 2 * B * (P + C) * attention((P + C) / 2) \
        + B * C * 2 * H * V * (2 if lora_r else 3)  # the head: logits recomputed + input gradient (+ weight gradient)
    parts = {"generation": prefill + decode, "logprobs": no_grad_passes * forward, "optimizer": forward + backward}
    parts["total"] = sum(parts.values())
    return parts


def run(variant: str, config: Path, overrides: list[str], workdir: Path, env: dict) -> dict:
    run_dir = workdir / f"run-{time.time_ns()}"
    argv = [sys.executable, "-c", RUN, variant, "train", str(config), "--run-dir", str(run_dir), *overrides]
    started = time.time()
    with open(workdir / "child.log", "ab") as log:
        child = subprocess.Popen(argv, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"{variant} run of {config.name} failed (exit {child.returncode}); see {workdir / 'child.log'}")
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    timed = records[1:] or records
    out = {"variant": variant, "wall_s": round(time.time() - started, 1), "steps": len(records),
           "step_s": statistics.median(r["time/step"] for r in timed),
           "parts_s": {k[5:]: statistics.median(r[k] for r in timed) for k in timed[0] if k.startswith("time/") and k != "time/step"},
           "tokens_per_s": statistics.median(r.get("tokens_per_s") or 0 for r in timed),
           "peak_rss_gib": usage.ru_maxrss / 1024**2, "page_faults": usage.ru_minflt + usage.ru_majflt,
           "loss": [r.get("loss") for r in records], "reward": [r.get("reward") for r in records],
           "completion_len": statistics.mean(r["completions/mean_length"] for r in records),
           "num_tokens": [r.get("num_tokens") for r in records]}
    log_text = (run_dir / "train.log").read_text()
    out["old_logprob_pass"] = "skipped" if "old log-prob pass: skipped" in log_text else "run"
    return out


def tokens_per_step(result: dict, completions: int) -> tuple[float, float]:
    """(mean prompt length, mean completion length) per completion, from TRL's cumulative num_tokens."""
    seen = [n for n in result["num_tokens"] if n is not None]
    per_step = (seen[-1] - seen[0]) / max(1, len(seen) - 1) if len(seen) > 1 else seen[0]
    completion = result["completion_len"]
    return per_step / completions - completion, completion


def median_of(results: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(PRESETS), help="one config only")
    parser.add_argument("--steps", type=int, default=4, help="steps per run (the first is warm-up; default 4)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each variant, alternating (default 2)")
    parser.add_argument("--fallback-only", action="store_true", help="only the transformers backend's before/after")
    parser.add_argument("--no-fallback", action="store_true", help="leave out the transformers backend's before/after")
    parser.add_argument("--fallback-batch", type=int, default=8, help="completions per step for the fallback (default 8)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for every run (e.g. a smoke test: --set rloo.max_completion_length=4)")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT / "scripts"))
    from build_real_model import build_real_model

    real_model = Path(build_real_model())
    threads = os.environ.get("OMP_NUM_THREADS", "2")
    env = dict(os.environ, OMP_NUM_THREADS=threads, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    load_before = os.getloadavg()
    peak_info = peak(env)
    best = peak_info["best_gflops"] * 1e9
    print(f"peak fp32 matmul with {peak_info['threads']} threads: {peak_info['best_gflops']:.0f} GFLOP/s "
          f"({', '.join(f'{s} {g:.0f}' for s, g in peak_info['gflops'].items())})", flush=True)
    import yaml

    results: dict = {"machine": machine(), "threads": int(threads), "load_average_before": load_before,
                     "peak": peak_info, "configs": {}}
    names = [] if args.fallback_only else ([args.only] if args.only else list(PRESETS))
    with tempfile.TemporaryDirectory(prefix="rloo-roofline-") as tmp:
        workdir = Path(tmp)
        for name in names:
            preset = yaml.safe_load(PRESETS[name].read_text())
            overrides = [f"rloo.max_steps={args.steps}", "rloo.save_steps=100000", "rloo.logging_steps=1", *args.set]
            model_dir = ROOT / "assets" / "demo-model"
            if name == "cpu-small-real":
                overrides.append(f"model.name_or_path={real_model}")
                model_dir = real_model
            runs_by_variant: dict = {"before": [], "after": []}
            for i in range(args.repeats):
                for variant in ("before", "after"):
                    r = run(variant, PRESETS[name], overrides, workdir, env)
                    runs_by_variant[variant].append(r)
                    print(f"{name} {variant} #{i + 1}: {r['step_s']:.2f} s/step, parts {r['parts_s']}", flush=True)
            completions = int(next((o.split("=", 1)[1] for o in reversed(args.set)
                                    if o.startswith("rloo.per_device_train_batch_size=")),
                                   preset["rloo"]["per_device_train_batch_size"]))
            lora = preset.get("lora")
            summary = {}
            for variant, found in runs_by_variant.items():
                prompt_len, completion_len = tokens_per_step(found[0], completions)
                passes = 0 if found[0]["old_logprob_pass"] == "skipped" else 1
                flops = step_flops(model_shape(model_dir), completions, prompt_len, completion_len,
                                   (lora or {}).get("r"), passes)
                step_s = median_of(found, "step_s")
                summary[variant] = {
                    "step_s": step_s, "runs": found, "flops": flops, "prompt_len": prompt_len, "completion_len": completion_len,
                    "limit_s": flops["total"] / best, "achieved_of_peak": flops["total"] / best / step_s,
                    "parts_s": {k: statistics.median(r["parts_s"][k] for r in found) for k in found[0]["parts_s"]},
                    "peak_rss_gib": median_of(found, "peak_rss_gib"), "page_faults": median_of(found, "page_faults"),
                    "old_logprob_pass": found[0]["old_logprob_pass"]}
            summary["ratio_after_before"] = summary["after"]["step_s"] / summary["before"]["step_s"]
            results["configs"][name] = summary
        if not args.no_fallback and (args.fallback_only or not args.only or args.only == "cpu-small-real"):
            overrides = [f"model.name_or_path={real_model}", "model.backend=transformers", "rloo.max_steps=2",
                         "rloo.save_steps=100000", "rloo.logging_steps=1",
                         f"rloo.per_device_train_batch_size={args.fallback_batch}", *args.set]
            fallback = {}
            for variant in ("interpreted", "after"):
                r = run(variant, PRESETS["cpu-small-real"], overrides, workdir, env)
                # Both steps count here: the interpreted kernel's cost is the same on every step.
                fallback[variant] = r
                print(f"transformers backend {variant}: {r['step_s']:.2f} s/step", flush=True)
            fallback["ratio_after_before"] = fallback["after"]["step_s"] / fallback["interpreted"]["step_s"]
            fallback["completions_per_step"] = args.fallback_batch
            results["transformers_fallback"] = fallback
    results["load_average_after"] = os.getloadavg()
    # The rate again at the end: on a machine shared with other work the start can fall in a busy moment. The
    # limit is the better of the two (the machine can do at least that).
    results["peak_at_end"] = peak(env)
    best = max(peak_info["best_gflops"], results["peak_at_end"]["best_gflops"]) * 1e9
    results["peak_gflops_used"] = best / 1e9
    for summary in results["configs"].values():
        for variant in ("before", "after"):
            v = summary[variant]
            v["limit_s"] = v["flops"]["total"] / best
            v["achieved_of_peak"] = v["limit_s"] / v["step_s"]
    name = "cpu_roofline" if not (args.only or args.fallback_only) else f"cpu_roofline_{args.only or 'fallback'}"
    path = save(name, results)

    rows = []
    for config, s in results["configs"].items():
        for variant in ("before", "after"):
            v = s[variant]
            parts = ", ".join(f"{k} {t:.1f}" for k, t in v["parts_s"].items())
            rows.append([config, variant, f"{v['step_s']:.2f}", parts, f"{v['flops']['total'] / 1e12:.2f}",
                         f"{v['limit_s']:.2f}", f"{100 * v['achieved_of_peak']:.0f} %", f"{v['step_s'] / v['limit_s']:.2f}x",
                         f"{v['peak_rss_gib']:.2f}", f"{v['page_faults'] / 1e3:.0f} k"])
        rows.append([config, "after / before", f"x {s['ratio_after_before']:.2f}", "", "", "", "", "", "", ""])
    print(table(["config", "variant", "s/step", "parts (s)", "TFLOP/step", "limit s", "of peak", "x limit",
                 "peak GiB", "faults"], rows))
    if "transformers_fallback" in results:
        f = results["transformers_fallback"]
        print(f"transformers backend, {f['completions_per_step']} completions/step: interpreted kernel "
              f"{f['interpreted']['step_s']:.1f} s/step, torch path {f['after']['step_s']:.1f} s/step "
              f"(x {f['ratio_after_before']:.3f})")
    print(f"load average before {load_before}, after {results['load_average_after']}; saved {shown(path)}")


if __name__ == "__main__":
    main()

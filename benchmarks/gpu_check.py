"""The GPU check: the real Unsloth path on CUDA, its speed and memory against plain transformers + PEFT.

    python benchmarks/gpu_check.py                 # on a CUDA machine, offline (models from configuration alone)
    python benchmarks/gpu_check.py --dry-run       # the same code on the CPU with a tiny shape (the tests run this)
    bash benchmarks/gpu_check.sh                   # on a GPU machine without internet: unpacks the fetched wheels first

1. Runs the GPU-only tests (`tests/gpu/`; they skip without CUDA).
2. For each model (random weights at real shapes — Qwen3-0.6B, Qwen3-1.7B — plus the bundled demo)
   and each backend (`unsloth`, `transformers`), runs the same RLOO configuration through
   `rloo-studio train` (same seed; warm-up steps, then measured steps) and reads from the run's
   metrics: the median step time after warm-up, completion tokens per second, and the peak memory
   the worker logged (`memory/peak_reserved_gib`). Prints the Unsloth / transformers ratios.
3. Prints the memory estimate (`rloo_studio.machine.vram`) next to each measured peak.
4. Fast generation (vLLM, `model.fast_generation: on`): where the fast environment exists (`python launch.py
   --setup-fast-generation`, or RLOO_STUDIO_FAST_PYTHON), the Unsloth run again from it, with the step time, the share of
   it spent generating (metrics' `time/generation` over `time/step`) and the peak memory beside the plain run; where it
   does not, the record says so. Every run's own step-time breakdown is kept.
5. Compares the trainer arguments the two backends' runs recorded (trainer_args.json, read back from the built trainer):
   on CUDA the Unsloth run's trainer is Unsloth's patched one, so any argument it changes shows here (and fails the check).
Everything goes to benchmarks/results/gpu_check{,_dry_run}.json and .md. (gpu_check.sh also runs trainer_parity.py: every
preset's RLOOConfig on both backends.)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import RESULTS, ROOT, machine, save, shown, table
from vram_calibrate import TINY, build_model

sys.path.insert(0, str(ROOT))
from rloo_studio.paths import fast_python  # noqa: E402
from rloo_studio.runs.step_time import mean_breakdown  # noqa: E402
from rloo_studio.machine.vram import CUDA_CONTEXT_GIB, KNOWN_MODELS, Settings, estimate, find_shape  # noqa: E402

DEFAULT_MODELS = ("Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "demo")


def run_training(model: str, backend: str, work: Path, args, dry_run: bool, python: str | None = None) -> dict:
    """One measured run; `python`: the fast environment's interpreter, for a run with fast generation on."""
    four_bit = args.four_bit and not dry_run
    cfg = {
        "model": {"name_or_path": model, "backend": backend, "load_in_4bit": four_bit, "max_seq_length": 64 + args.completion,
                  "dtype": "float32" if dry_run else "bfloat16", "gradient_checkpointing": True,
                  "fast_generation": "on" if python else "off"},
        "lora": {"r": 16, "alpha": 32},
        "data": {"source": "demo"},
        "rewards": [{"name": "numeric_answer"}, {"name": "think_format", "weight": 0.2}],
        "rloo": {"num_generations": args.generations, "per_device_train_batch_size": args.generations * args.prompts,
                 "max_completion_length": args.completion, "max_steps": args.warmup + args.steps, "save_steps": 10_000,
                 "learning_rate": 1e-5, "beta": 0.0, "seed": 42, "logging_steps": 1},
        "output": {"runs_dir": str(work / "runs"), "samples_per_step": 0},
    }
    name = f"{Path(model).name}-{backend}{'-vllm' if python else ''}-{int(time.time() * 1000)}"
    (work / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
    started = time.time()
    result = subprocess.run([python or sys.executable, "-m", "rloo_studio.cli", "train", str(work / f"{name}.yaml"), "--run-dir",
                             str(work / "runs" / name)], capture_output=True, text=True, cwd=ROOT, timeout=args.timeout)
    if result.returncode != 0:  # the last line says what; the tail is what a fix needs (the check runs on a borrowed machine)
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1][:300], "stderr_tail": result.stderr[-4000:],
                "seconds": time.time() - started}
    metrics = [json.loads(line) for line in (work / "runs" / name / "metrics.jsonl").read_text().splitlines() if line.strip()]
    measured = metrics[args.warmup:] or metrics
    step_times = [m["step_time"] for m in measured if isinstance(m.get("step_time"), (int, float))]
    tokens = [m.get("completions/mean_length", 0) * args.generations * args.prompts for m in measured]
    status = json.loads((work / "runs" / name / "status.json").read_text())
    parts = mean_breakdown(measured) or {}
    generation_share = parts["time/generation"] / parts["time/step"] if parts.get("time/step") else None
    recorded = json.loads((work / "runs" / name / "trainer_args.json").read_text())
    return {"backend_used": status.get("backend"), "trainer": recorded["trainer"], "trainer_args": recorded["args"],
            "trainer_changed": recorded.get("changed") or {}, "median_step_s": statistics.median(step_times) if step_times else None,
            "tokens_per_s": sum(tokens) / sum(step_times) if step_times and sum(step_times) else None,
            "peak_reserved_gib": metrics[-1].get("memory/peak_reserved_gib"), "steps_measured": len(measured),
            "generation_share": generation_share, "step_time_parts": parts, "fast_generation": status.get("fast_generation"),
            "seconds": time.time() - started}


def run_gpu_tests(workers: int, log: Path) -> dict:
    """tests/gpu, one test file per worker process. Every command a test starts gets a fresh interpreter: the tests'
    warm starters fork from a process that has imported Unsloth, which on CUDA has already initialised the device, and
    a forked CUDA context is unusable. The output is written to `log` (git-ignored) as it comes, so a check stopped
    from outside still leaves it; its tail goes into the results."""
    parallel = ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else []
    started = time.time()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        code = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "tests" / "gpu"), "-q", "-p", "no:cacheprovider", "-rs", *parallel],
                              stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, timeout=1500,
                              env={**os.environ, "RLOO_STUDIO_TESTS_FRESH": "1"}).returncode
    text = log.read_text(errors="replace")
    summary = (text.strip().splitlines() or [""])[-1]
    return {"returncode": code, "summary": summary, "seconds": round(time.time() - started, 1), "tail": text[-6000:]}


def versions() -> dict:
    code = ("import json, importlib.metadata as m, torch\n"
            "v = {p: (m.version(p) if __import__('importlib').util.find_spec(p.replace('-', '_')) else None) "
            "for p in ('unsloth', 'unsloth_zoo', 'trl', 'transformers', 'peft', 'bitsandbytes')}\n"
            "v['torch'] = torch.__version__; v['cuda'] = torch.version.cuda\n"
            "v['gpu'] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None\n"
            "print(json.dumps(v))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"error": out.stderr[-500:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny shape: checks the script, measures nothing real")
    parser.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS))
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--prompts", type=int, default=2, help="prompts per step")
    parser.add_argument("--completion", type=int, default=256, help="max_completion_length")
    parser.add_argument("--four-bit", action="store_true", help="4-bit base weights (default: bf16 LoRA)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per training run")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--test-workers", type=int, default=3, help="test processes for tests/gpu (one file each)")
    args = parser.parse_args()
    if args.dry_run:
        args.models, args.generations, args.prompts, args.completion, args.warmup, args.steps = ["tiny"], 4, 1, 16, 1, 2

    started = time.time()

    def progress(text: str) -> None:  # seconds since the start: what each part cost, for sizing the next check to its machine's time
        print(f"[{time.time() - started:4.0f} s] {text}", file=sys.stderr, flush=True)

    info = {"machine": machine(), "python": platform.python_version(), "dry_run": args.dry_run, "versions": versions()}
    if not args.dry_run and not info["versions"].get("gpu"):
        sys.exit("no CUDA GPU here: run with --dry-run to check the script on the CPU")
    name = "gpu_check_dry_run" if args.dry_run else "gpu_check"
    info["gpu_tests"] = None if args.skip_tests else run_gpu_tests(args.test_workers, RESULTS / f"{name}_tests.log")
    progress(f"GPU tests: {info['gpu_tests']['summary'] if info['gpu_tests'] else 'skipped'}")

    rows, records = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for model in args.models:
            if model == "tiny":
                shape, path = TINY, work / "tiny"
                build_model(TINY, path, on_gpu=False)
            elif model == "demo":
                shape, path = find_shape("demo"), "demo"
            else:
                shape, path = KNOWN_MODELS[model], work / model.replace("/", "--")
                progress(f"building {model} (random weights) ...")
                build_model(shape, path, on_gpu=True)
            est = estimate(shape, Settings(load_in_4bit=args.four_bit and not args.dry_run, lora_r=16, num_generations=args.generations,
                                           per_device_train_batch_size=args.generations * args.prompts,
                                           max_completion_length=args.completion, prompt_tokens=48))
            per_backend = {}
            for backend in ("unsloth", "transformers"):
                progress(f"  {model}: {backend} ...")
                per_backend[backend] = run_training(str(path), backend, work, args, args.dry_run)
                # Kept after every run: a check cut short by its machine's time limit still leaves what it measured.
                save(name, {**info, "settings": vars(args), "records": records, "unfinished": {"model": model, "runs": per_backend}})
            u, t = per_backend["unsloth"], per_backend["transformers"]
            fast_python_path = fast_python()
            if fast_python_path is not None and not args.dry_run:
                progress(f"  {model}: unsloth + vLLM ...")
                fast = run_training(str(path), "unsloth", work, args, args.dry_run, python=str(fast_python_path))
            else:
                fast = {"not_run": "dry run (no GPU)" if args.dry_run else
                        "no fast-generation environment here (python launch.py --setup-fast-generation)"}
            fast_speedup = (u["median_step_s"] / fast["median_step_s"]) if u.get("median_step_s") and fast.get("median_step_s") else None
            speedup = (t["median_step_s"] / u["median_step_s"]) if u.get("median_step_s") and t.get("median_step_s") else None
            memory_ratio = (u["peak_reserved_gib"] / t["peak_reserved_gib"]) if u.get("peak_reserved_gib") and t.get("peak_reserved_gib") else None
            # The same config on both backends: every argument the built trainers hold must be the same (what runs is what
            # the page shows, whichever backend trains it).
            ua, ta = u.get("trainer_args") or {}, t.get("trainer_args") or {}
            args_differ = {k: [ta.get(k), ua.get(k)] for k in sorted(set(ua) | set(ta)) if ua.get(k) != ta.get(k)}
            records.append({"model": model, "params": shape.params, "estimate_gib": est.total_gib, "unsloth": u, "transformers": t,
                            "unsloth_vllm": fast, "speedup_vllm_vs_unsloth": fast_speedup,
                            "speedup_unsloth_vs_transformers": speedup, "memory_unsloth_over_transformers": memory_ratio,
                            "trainer_args_differ": args_differ if ua and ta else None})
            for backend, r in per_backend.items():
                peak = r.get("peak_reserved_gib")
                rows.append([model, backend, r.get("backend_used") or r.get("error", "")[:40],
                             f"{r['median_step_s']:.2f}" if r.get("median_step_s") else "-",
                             f"{r['tokens_per_s']:.0f}" if r.get("tokens_per_s") else "-",
                             f"{peak:.2f}" if peak else "n/a", f"{est.total_gib - CUDA_CONTEXT_GIB:.2f}"])
            if "not_run" in fast:
                rows.append([model, "unsloth + vLLM", "not run: " + fast["not_run"], "-", "", "", ""])
            else:
                peak = fast.get("peak_reserved_gib")
                share = f", generation {fast['generation_share']:.0%}" if fast.get("generation_share") is not None else ""
                rows.append([model, "unsloth + vLLM", (fast.get("backend_used") or fast.get("error", "")[:40]) + share,
                             f"{fast['median_step_s']:.2f}" if fast.get("median_step_s") else "-",
                             f"{fast['tokens_per_s']:.0f}" if fast.get("tokens_per_s") else "-", f"{peak:.2f}" if peak else "n/a", ""])
            rows.append([model, "ratio", "unsloth vs transformers", f"{speedup:.2f}x faster" if speedup else "-", "",
                         f"{memory_ratio:.2f}x memory" if memory_ratio else "-", ""])
            parity = ("not compared (a run failed)" if not (ua and ta) else "same" if not args_differ else
                      "DIFFER: " + ", ".join(f"{k} {a!r} vs {b!r}" for k, (a, b) in args_differ.items()))
            rows.append([model, "trainer args", f"{u.get('trainer', '?')} vs {t.get('trainer', '?')}", parity, "", "", ""])
    headers = ["model", "backend", "used", "median step (s)", "completion tokens/s", "peak reserved (GiB)", "estimate (GiB, no context)"]
    text = table(headers, rows)
    v = info["versions"]
    title = (f"GPU check — {v.get('gpu') or 'CPU (dry run)'}; torch {v.get('torch')} (CUDA {v.get('cuda')}), unsloth {v.get('unsloth')}, "
             f"trl {v.get('trl')}, transformers {v.get('transformers')}; {args.generations} generations × {args.prompts} prompts, "
             f"{args.completion} tokens, {'4-bit' if args.four_bit else 'bf16'} LoRA r16, {args.steps} steps after {args.warmup} warm-up")
    print(f"\n{title}\n\n{text}")
    path = save(name, {**info, "settings": vars(args), "records": records})
    tests = info["gpu_tests"]["summary"] if info["gpu_tests"] else "not run"
    path.with_suffix(".md").write_text(f"# {title}\n\nGPU tests: {tests}\n\n{text}\n")
    print(f"\nSaved {shown(path)} and {shown(path.with_suffix('.md'))}")
    failed = [r for r in records for b in ("unsloth", "transformers") if "error" in r[b]] + \
        [r for r in records if r["trainer_args_differ"]]
    if failed or (info["gpu_tests"] and info["gpu_tests"]["returncode"] not in (0, 5)):
        sys.exit(1)


if __name__ == "__main__":
    main()

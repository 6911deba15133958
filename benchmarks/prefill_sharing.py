"""How much generation time does computing each prompt's prefill once save, and are the completions the same?

    python benchmarks/prefill_sharing.py                          # the demo and cpu-small-real, side by side
    python benchmarks/prefill_sharing.py --only demo --rounds 3 --no-training

For each config (cpu-small-real runs SmolLM2-135M-Instruct from scripts/build_real_model.py with the preset's
shapes: 4 prompts x 8 completions of up to 16 tokens, LoRA r 16; the demo 16 prompts x 8 completions of up to 24):

1. Generation, in one process per config (OMP_NUM_THREADS threads, default 2): the model loaded as training loads it,
   then `--rounds` generation batches of the step's shape, each a new set of training prompts tokenised and padded
   as TRL does, each k times in a row, sampled with the run's settings. Every round generates the batch twice from
   the same seed, plain `generate` ("plain": every row's prompt prefilled) and `prefill.shared_generate` ("shared":
   each distinct prompt once), in alternating order, so that the machine's load hits both alike; the two must give
   the same tokens. The ratio is shared / plain of the median times.
2. Training (unless --no-training): real runs (`rloo-studio train`, each in its own process) with
   `model.share_prefill=off` and `auto`, alternating, `--repeats` times each, `--steps` steps. Per run: the medians
   over the steps after the first (warm-up) of `time/generation` (the step-time split's generation part) and
   `time/step`. Same seed, same config: the runs must train the same numbers, and the result says whether they did
   (every step's loss, reward and mean completion length, and the completions samples.jsonl records).
3. Generation alone again, on 1 thread (`--one-thread-rounds`, default 4 rounds): one thread waits on no other, so the load of
   other work slows both ways alike (with 2 threads on a busy machine the same batch took 30 to 173 s, most likely
   because the decode steps, many small products each ending in a wait for the other thread, slowed far more than
   the prefill: it swamped the ratio).

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

# One process: the config's model loaded as for training, then `rounds` batches of the step's shape, each generated
# plainly and with shared prefills from the same seed, in alternating order. argv: config, overrides (JSON), rounds.
GENERATE = r"""
import json, statistics, sys, time
from rloo_studio.config import RunConfig
from rloo_studio.engine.stack import import_training_stack
cfg = RunConfig.load(sys.argv[1], json.loads(sys.argv[2]))
rounds = int(sys.argv[3])
stack = import_training_stack(cfg.model.backend)
torch = stack.torch
from rloo_studio.data import load_rows, to_trl_dataset
from rloo_studio.engine import prefill
from rloo_studio.engine.generate import (chat_template_kwargs, cut_at_end, end_token_ids, generation_config,
                                         generation_kwargs, prompt_token_ids)
from rloo_studio.engine.model import load_model
seed = int(cfg.rloo_value("seed"))
loaded = load_model(cfg.model, cfg.lora, stack, cfg.base_dir, seed=seed)
model, tok = loaded.model, loaded.tokenizer
model.train()  # TRL generates with the model in training mode (dropout is off)
k, batch = int(cfg.rloo_value("num_generations")), int(cfg.rloo_value("per_device_train_batch_size"))
per_round = batch // k
prompts = list(to_trl_dataset(load_rows(cfg.data, cfg.base_dir, seed=seed).train, cfg.data, tok)["prompt"])
ends = end_token_ids(model, tok)
config = generation_config(generation_kwargs(cfg, tok, ends))
times = {"plain": [], "shared": []}
same, tokens, prompt_lengths = [], 0, []
for r in range(rounds):
    chunk = prompts[r * per_round:(r + 1) * per_round]
    ids = [row for row in prompt_token_ids(chunk, tok, chat_template_kwargs(cfg)) for _ in range(k)]
    prompt_lengths += [len(row) for row in ids]
    width = max(map(len, ids))
    input_ids = torch.tensor([[tok.pad_token_id] * (width - len(row)) + row for row in ids])
    mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in ids])
    out = {}
    for variant in (("plain", "shared") if r % 2 == 0 else ("shared", "plain")):
        torch.manual_seed(seed + r)
        start = time.perf_counter()
        with torch.no_grad():
            if variant == "plain":
                out[variant] = model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config)
            else:
                with prefill.sharing_on(model, torch):
                    out[variant] = model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config)
        times[variant].append(time.perf_counter() - start)
    same.append(bool(torch.equal(out["plain"], out["shared"])))
    tokens += sum(len(cut_at_end(row, ends)) for row in out["plain"][:, width:].tolist())
print(json.dumps({"backend": stack.backend, "k": k, "rows": batch, "rounds": rounds, "times": times, "same_tokens": same,
                  "completion_tokens_per_round": tokens / rounds, "prompt_len": statistics.mean(prompt_lengths)}))
"""


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


def generation(config: Path, overrides: list[str], rounds: int, workdir: Path, env: dict) -> dict:
    argv = [sys.executable, "-c", GENERATE, str(config), json.dumps(overrides), str(rounds)]
    done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the generation child of {config.name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return summarise(json.loads(done.stdout.strip().splitlines()[-1]))


def summarise(out: dict) -> dict:
    """The generation child's times as medians and ratios, and the prompt tokens each way runs through the model.

    `paired_ratio`: the median of each round's shared / plain (the two calls of a round ran back to back, so a load
    that changes between rounds cancels out better than in the ratio of the medians). `prompt_token_passes`: the
    prompt tokens the model computes per batch, by arithmetic from the mean prompt length (padding not counted):
    plain every row's, shared each distinct prompt's but its last token, then every row's last token."""
    for variant in VARIANTS:
        out[f"{variant}_s"] = statistics.median(out["times"][variant])
    out["ratio"] = out["shared_s"] / out["plain_s"]
    out["paired_ratio"] = statistics.median(s / p for p, s in zip(out["times"]["plain"], out["times"]["shared"]))
    out["all_same_tokens"] = all(out["same_tokens"])
    rows, k, length = out["rows"], out["k"], out["prompt_len"]
    out["prompt_token_passes"] = {"plain": rows * length, "shared": rows // k * (length - 1) + rows}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(PRESETS), help="one config only")
    parser.add_argument("--rounds", type=int, default=6, help="generation batches per config, each generated both ways (default 6)")
    parser.add_argument("--no-training", action="store_true", help="leave out the training runs")
    parser.add_argument("--one-thread-rounds", type=int, default=4,
                        help="generation alone again on 1 thread, this many rounds per config (0: not; default 4)")
    parser.add_argument("--steps", type=int, default=3, help="steps per training run (the first is warm-up; default 3)")
    parser.add_argument("--repeats", type=int, default=1, help="training runs of each variant, alternating (default 1)")
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
                     "rounds": args.rounds, "steps": args.steps, "repeats": args.repeats, "configs": {}}
    with tempfile.TemporaryDirectory(prefix="rloo-prefill-") as tmp:
        workdir = Path(tmp)
        for name in names:
            overrides = [f"rloo.max_steps={args.steps}", "rloo.save_steps=100000", "rloo.logging_steps=1", *args.set]
            if name == "cpu-small-real":
                overrides.append(f"model.name_or_path={real_model}")
            gen = generation(PRESETS[name], overrides, args.rounds, workdir, env)
            print(f"{name} generation ({gen['rows']} rows, k {gen['k']}, {gen['backend']}): plain {gen['plain_s']:.2f} s, "
                  f"shared {gen['shared_s']:.2f} s (x {gen['ratio']:.2f}, round by round x {gen['paired_ratio']:.2f}); "
                  f"same tokens in {sum(gen['same_tokens'])} of "
                  f"{gen['rounds']} rounds", flush=True)
            summary: dict = {"generation": gen}
            results["configs"][name] = summary
            if args.no_training:
                continue
            found: dict = {variant: [] for variant in VARIANTS}
            for i in range(args.repeats):
                for variant in VARIANTS:
                    r = run(variant, PRESETS[name], overrides, workdir, env)
                    found[variant].append(r)
                    print(f"{name} {variant} #{i + 1}: generation {r['generation_s']:.2f} s/step, step {r['step_s']:.2f} s "
                          f"({r['log_line']})", flush=True)
            training: dict = {}
            for variant, done in found.items():
                training[variant] = {key: statistics.median(r[key] for r in done) for key in ("generation_s", "step_s", "tokens_per_s")}
                training[variant]["runs"] = done
            everyone = [r for done in found.values() for r in done]
            training["same_numbers"] = all(r["numbers"] == everyone[0]["numbers"] for r in everyone)
            training["same_completions"] = all(r["completions"] == everyone[0]["completions"] for r in everyone)
            training["shared_used"] = all(bool(r["log_line"]) and r["log_line"].startswith("prefill sharing: on")
                                          for r in found["shared"])
            training["generation_ratio"] = training["shared"]["generation_s"] / training["plain"]["generation_s"]
            training["step_ratio"] = training["shared"]["step_s"] / training["plain"]["step_s"]
            summary["training"] = training
        if args.one_thread_rounds:
            # One thread waits on no other: on a machine shared with other work, 2 threads' decode steps (many small
            # products, each ending in a barrier) most likely slowed far more than the prefill, swamping the ratio.
            one = dict(env, OMP_NUM_THREADS="1")
            results["one_thread"] = {"load_average_before": os.getloadavg(), "configs": {}}
            for name in names:
                overrides = [*args.set] + ([f"model.name_or_path={real_model}"] if name == "cpu-small-real" else [])
                gen = generation(PRESETS[name], overrides, args.one_thread_rounds, workdir, one)
                results["one_thread"]["configs"][name] = gen
                print(f"{name} generation on 1 thread: plain {gen['plain_s']:.2f} s, shared {gen['shared_s']:.2f} s "
                      f"(x {gen['ratio']:.2f}); same tokens in {sum(gen['same_tokens'])} of {gen['rounds']} rounds", flush=True)
            results["one_thread"]["load_average_after"] = os.getloadavg()
    results["load_average_after"] = os.getloadavg()
    path = save("prefill_sharing" if not args.only else f"prefill_sharing_{args.only}", results)

    rows = []
    for name, summary in results["configs"].items():
        gen = summary["generation"]
        rows.append([name, "generation alone", f"{gen['plain_s']:.2f}", f"{gen['shared_s']:.2f}",
                     f"x {gen['ratio']:.2f} (by round x {gen['paired_ratio']:.2f})", f"same tokens: {gen['all_same_tokens']}"])
        passes = gen["prompt_token_passes"]
        rows.append([name, "prompt tokens computed", f"{passes['plain']:.0f}", f"{passes['shared']:.0f}",
                     f"x {passes['shared'] / passes['plain']:.2f}", "arithmetic"])
        t = summary.get("training")
        if t:
            rows.append([name, "time/generation", f"{t['plain']['generation_s']:.2f}", f"{t['shared']['generation_s']:.2f}",
                         f"x {t['generation_ratio']:.2f}", f"same numbers: {t['same_numbers']}"])
            rows.append([name, "time/step", f"{t['plain']['step_s']:.2f}", f"{t['shared']['step_s']:.2f}",
                         f"x {t['step_ratio']:.2f}", f"same completions: {t['same_completions']}"])
    for name, gen in results.get("one_thread", {}).get("configs", {}).items():
        rows.append([name, "generation alone, 1 thread", f"{gen['plain_s']:.2f}", f"{gen['shared_s']:.2f}",
                     f"x {gen['ratio']:.2f} (by round x {gen['paired_ratio']:.2f})", f"same tokens: {gen['all_same_tokens']}"])
    print(table(["config", "measured", "plain s", "shared s", "shared / plain", "check"], rows))
    print(f"load average before {results['load_average_before']}, after {results['load_average_after']}; saved {shown(path)}")
    problems = [f"{name} on 1 thread: the shared generation gave other tokens"
                for name, gen in results.get("one_thread", {}).get("configs", {}).items() if not gen["all_same_tokens"]]
    problems += [f"{name}: {what}" for name, summary in results["configs"].items() for what, bad in (
        ("the shared generation gave other tokens", not summary["generation"]["all_same_tokens"]),
        ("a 'shared' run did not share prefills (see its log line)", "training" in summary and not summary["training"]["shared_used"]),
        ("the runs trained different numbers", "training" in summary and not summary["training"]["same_numbers"])) if bad]
    if problems:
        sys.exit("; ".join(problems))

if __name__ == "__main__":
    main()

"""Measured vs estimated peak GPU memory of RLOO steps, on real model shapes with random weights.

    python benchmarks/vram_calibrate.py                 # on a CUDA machine (no download: shapes from the built-in table)
    python benchmarks/vram_calibrate.py --models Qwen/Qwen3-0.6B --quick
    python benchmarks/vram_calibrate.py --dry-run       # the same code on the CPU with tiny shapes (CI runs this)

For each model shape and setting (4-bit or bf16 LoRA; generations; completion length) it builds the
model from its configuration alone (random weights, saved once to a scratch folder) with a
word-level tokenizer of the model's full vocabulary size (so the logits are as large as the real
model's), runs two RLOO steps through `rloo-studio train`, reads the peak memory the worker logs
(`memory/peak_reserved_gib`, torch's caching allocator) and prints it next to `rloo_studio.machine.vram`'s
estimate. Random weights never emit the end token, so every completion runs to full length:
the worst case the estimate is meant to cover. The estimate's CUDA-context line is left out of the
comparison (torch's counters do not see it). Writes benchmarks/results/vram_calibrate{,_dry_run}.json
and .md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import ROOT, machine, save, shown, table

sys.path.insert(0, str(ROOT))
from rloo_studio.machine.vram import CUDA_CONTEXT_GIB, KNOWN_MODELS, ModelShape, Settings, estimate  # noqa: E402

TINY = ModelShape("tiny-qwen3 (dry run)", hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
                  intermediate_size=128, vocab_size=512, tie_embeddings=True)
DEFAULT_MODELS = ("Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "meta-llama/Llama-3.2-1B-Instruct", "Qwen/Qwen3-4B")
# (4-bit?, generations, completion tokens): the two knobs that move the KV cache and logits most.
FULL_GRID = [(True, 4, 128), (True, 8, 256), (False, 4, 128), (False, 8, 256)]
QUICK_GRID = [(True, 8, 256), (False, 8, 256)]
DRY_GRID = [(False, 4, 16), (False, 8, 24)]


def build_model(shape: ModelShape, folder: Path, on_gpu: bool) -> None:
    """A model of `shape` with random weights and a word-level tokenizer of its full vocabulary, saved to `folder`."""
    code = f"""
import json, torch, transformers
from tokenizers import Tokenizer, models, pre_tokenizers
shape = json.loads({json.dumps(json.dumps(shape.__dict__))})
special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<unk>"]
vocab = {{t: i for i, t in enumerate(special)}}
for i in range(len(special), shape["vocab_size"]):
    vocab[f"w{{i}}"] = i
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<unk>")
fast.chat_template = ("{{% for m in messages %}}<|im_start|>{{{{ m['role'] }}}} {{{{ m['content'] }}}}<|im_end|> {{% endfor %}}"
                      "{{% if add_generation_prompt %}}<|im_start|>assistant {{% endif %}}")
cfg = transformers.Qwen3Config(vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"], intermediate_size=shape["intermediate_size"],
    num_hidden_layers=shape["num_layers"], num_attention_heads=shape["num_heads"], num_key_value_heads=shape["num_kv_heads"],
    head_dim=shape["head_dim"], tie_word_embeddings=shape["tie_embeddings"], max_position_embeddings=4096,
    pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id, bos_token_id=None)
device = "cuda" if {on_gpu} else "cpu"
with torch.device(device):
    model = transformers.Qwen3ForCausalLM(cfg).to(torch.bfloat16 if {on_gpu} else torch.float32)
model.save_pretrained({str(folder)!r}, safe_serialization=True)
fast.save_pretrained({str(folder)!r})
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=1800)


def run_setting(model_dir: Path, work: Path, four_bit: bool, generations: int, completion: int, dry_run: bool) -> dict:
    cfg = {
        "model": {"name_or_path": str(model_dir), "load_in_4bit": four_bit, "max_seq_length": 64 + completion,
                  "dtype": "float32" if dry_run else "bfloat16", "gradient_checkpointing": True},
        "lora": {"r": 16, "alpha": 32},
        "data": {"source": "demo"},
        "rewards": [{"name": "length_band", "params": {"min_tokens": 1, "max_tokens": completion}}],
        "rloo": {"num_generations": generations, "per_device_train_batch_size": generations, "max_completion_length": completion,
                 "max_steps": 2, "save_steps": 1000, "learning_rate": 1e-5, "beta": 0.0, "logging_steps": 1},
        "output": {"runs_dir": str(work / "runs"), "samples_per_step": 0},
    }
    config_path = work / f"cfg-{int(time.time() * 1000)}.yaml"
    config_path.write_text(yaml.safe_dump(cfg))
    run_dir = work / "runs" / config_path.stem
    started = time.time()
    result = subprocess.run([sys.executable, "-m", "rloo_studio.cli", "train", str(config_path), "--run-dir", str(run_dir)],
                            capture_output=True, text=True, cwd=ROOT, timeout=1200)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1], "seconds": time.time() - started}
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    shutil.rmtree(run_dir, ignore_errors=True)
    return {"peak_reserved_gib": metrics[-1].get("memory/peak_reserved_gib"), "peak_allocated_gib": metrics[-1].get("memory/peak_allocated_gib"),
            "steps": len(metrics), "seconds": time.time() - started,
            "mean_completion_tokens": sum(m.get("completions/mean_length", 0) for m in metrics) / len(metrics)}


def prompt_tokens(model_dir: Path) -> int:
    """Mean length of the demo prompts under this tokenizer and chat template (what the estimate should assume)."""
    code = f"""
import json, transformers
tok = transformers.AutoTokenizer.from_pretrained({str(model_dir)!r})
rows = [json.loads(l) for l in open({str(ROOT / 'assets' / 'demo-data' / 'train.jsonl')!r})][:200]
lens = [len(tok.apply_chat_template([{{"role": "user", "content": r["prompt"]}}], add_generation_prompt=True, tokenize=True)) for r in rows]
print(max(lens))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes: checks the script, measures nothing real")
    parser.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS))
    parser.add_argument("--quick", action="store_true", help="two settings per model instead of four")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    args = parser.parse_args()

    import importlib.util

    on_gpu = not args.dry_run
    if on_gpu:
        probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True, text=True)
        if probe.stdout.strip() != "True":
            sys.exit("no CUDA GPU here: run with --dry-run to check the script on the CPU")
    assert importlib.util.find_spec("rloo_studio"), "run from the repository with the environment active"
    shapes = [TINY] if args.dry_run else [KNOWN_MODELS[m] for m in args.models]
    grid = DRY_GRID if args.dry_run else (QUICK_GRID if args.quick else FULL_GRID)

    rows, records = [], []
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        work = Path(tmp)
        for shape in shapes:
            model_dir = work / shape.name.replace("/", "--").replace(" ", "_")
            print(f"building {shape.name} ({shape.params / 1e9:.3f}B parameters, random weights) ...", file=sys.stderr, flush=True)
            build_model(shape, model_dir, on_gpu)
            p_tokens = prompt_tokens(model_dir)
            for four_bit, gens, completion in grid:
                settings = Settings(load_in_4bit=four_bit, dtype="float32" if args.dry_run else "bfloat16", lora_r=16,
                                    num_generations=gens, per_device_train_batch_size=gens, max_completion_length=completion,
                                    prompt_tokens=p_tokens)
                est = estimate(shape, settings)
                est_no_context = est.total_gib - CUDA_CONTEXT_GIB
                print(f"  {'4-bit' if four_bit else '16/32-bit'} k={gens} len={completion}: training 2 steps ...", file=sys.stderr, flush=True)
                measured = run_setting(model_dir, work, four_bit, gens, completion, args.dry_run)
                peak = measured.get("peak_reserved_gib")
                ratio = (peak / est_no_context) if peak else None
                record = {"model": shape.name, "load_in_4bit": four_bit, "num_generations": gens, "max_completion_length": completion,
                          "prompt_tokens": p_tokens, "estimate_gib": est.total_gib, "estimate_without_context_gib": est_no_context,
                          "estimate_parts": est.parts, **measured, "measured_over_estimate": ratio}
                records.append(record)
                rows.append([shape.name, "4-bit" if four_bit else ("fp32" if args.dry_run else "bf16"), gens, completion,
                             f"{est_no_context:.2f}", f"{peak:.2f}" if peak else ("error: " + measured["error"][:60] if "error" in measured else "n/a (CPU)"),
                             f"{ratio:.2f}" if ratio else "-", f"{measured.get('seconds', 0):.0f}"])
    headers = ["model", "weights", "k", "completion", "estimate (GiB, no context)", "measured peak reserved (GiB)", "measured / estimate", "s"]
    text = table(headers, rows)
    title = f"RLOO peak memory, measured vs estimated — {machine()}" + (" — DRY RUN (CPU, tiny shape; nothing measured)" if args.dry_run else "")
    print(f"\n{title}\n\n{text}")
    name = "vram_calibrate_dry_run" if args.dry_run else "vram_calibrate"
    path = save(name, {"machine": machine(), "dry_run": args.dry_run, "records": records})
    (path.with_suffix(".md")).write_text(f"# {title}\n\nCommand: `python benchmarks/vram_calibrate.py{' --dry-run' if args.dry_run else ''}`\n\n{text}\n")
    print(f"\nSaved {shown(path)} and {shown(path.with_suffix('.md'))}")
    if any("error" in r for r in records):
        sys.exit(1)


if __name__ == "__main__":
    main()

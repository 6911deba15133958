"""Build the bundled demo: the word-problem data and a tiny model with a deliberately partial skill.

    python scripts/build_demo_model.py            # writes assets/demo-data/ and assets/demo-model/
    python scripts/build_demo_model.py --out /tmp/demo-check   # build elsewhere, e.g. to compare

Steps (CPU only, deterministic for --seed):
1. generate disjoint test / RL-train / SFT problem sets (rloo_studio.demo.task);
2. build a character tokenizer (<think>, </think> as single tokens; Qwen3-style chat template)
   and a small Llama-architecture model with random weights;
3. supervised fine-tuning on `<think>47+28</think>75` completions (loss on the completion only),
   where --slip-rate (55 %) of the answers carry the demo's systematic slip, the tens digit off by
   one (`<think>47+28</think>65`): the model learns the right computation and the habit, and
   samples the right answer only part of the time. Every --eval-every steps it checks greedy
   accuracy, format and sampled accuracy on a validation set, and stops at the first check where
   the format rate is at least --min-format and the greedy accuracy at least --target-accuracy.
   RLOO, rewarded for correct answers, then has a habit to unlearn and a skill to sharpen (the
   slip model gained +23 points where a model SFT'd on clean answers gained +10; docs/demo.md);
4. save the model (fp32 safetensors) and tokenizer, plus build_info.json with what was measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rloo_studio.demo.task import make_splits  # noqa: E402

MODEL_SHAPE = dict(hidden_size=128, num_layers=4, num_heads=4, num_kv_heads=2, intermediate_size=384, max_position_embeddings=256)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "assets", help="folder that receives demo-data/ and demo-model/")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--max-steps", type=int, default=6000)
    p.add_argument("--eval-every", type=int, default=400)
    p.add_argument("--eval-size", type=int, default=300)
    p.add_argument("--target-accuracy", type=float, default=0.30)
    p.add_argument("--min-format", type=float, default=0.85)
    p.add_argument("--slip-rate", type=float, default=0.55,
                   help="share of SFT answers written with the demo's systematic slip (rloo_studio.demo.task.slipped_answer)")
    p.add_argument("--test-size", type=int, default=None,
                   help="score the finished model on the first N test problems only (default: all; a short check build needs few)")
    p.add_argument("--snapshots", action="store_true", help="also save the model at every check under OUT/snapshots/step-N")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (fixed, for reproducibility)")
    return p.parse_args(argv)


def evaluate(model, tokenizer, problems, max_new_tokens=24):
    """Greedy answer accuracy and format rate, scored by the same builtin rewards training uses."""
    from rloo_studio.engine.generate import generate_completions
    from rloo_studio.rewards.builtin import numeric_answer, think_format

    model.eval()
    prompts = [[{"role": "user", "content": p["prompt"]}] for p in problems]
    out = generate_completions(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=100)
    model.train()
    answers = [p["answer"] for p in problems]
    correct = numeric_answer()(completions=out.texts, answer=answers)
    formatted = think_format()(completions=out.texts)
    return sum(correct) / len(correct), sum(1 for f in formatted if f == 1.0) / len(formatted), out.texts[:3]


def sampled_accuracy(model, tokenizer, problems, samples=4, max_new_tokens=24):
    """Share of correct answers when sampling at temperature 1 (what RLOO's generations see)."""
    from rloo_studio.engine.generate import generate_completions
    from rloo_studio.rewards.builtin import numeric_answer

    model.eval()
    prompts = [[{"role": "user", "content": p["prompt"]}] for p in problems] * samples
    out = generate_completions(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=200, do_sample=True, seed=0)
    model.train()
    correct = numeric_answer()(completions=out.texts, answer=[p["answer"] for p in problems] * samples)
    return sum(correct) / len(correct)


def encode_example(tokenizer, problem):
    """(input_ids, labels) of one problem, with the prompt masked out of the loss."""
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": problem["prompt"]}], tokenize=False, add_generation_prompt=True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False).input_ids
    completion_ids = tokenizer(problem["target"] + tokenizer.eos_token, add_special_tokens=False).input_ids
    return prompt_ids + completion_ids, [-100] * len(prompt_ids) + completion_ids


def collate(rows, pad_id, torch):
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad_id)
    labels = torch.full((len(rows), width), -100)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (ids, lab) in enumerate(rows):
        input_ids[i, :len(ids)] = torch.tensor(ids)
        labels[i, :len(lab)] = torch.tensor(lab)
        attention[i, :len(ids)] = 1
    return input_ids, labels, attention


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    import transformers

    from rloo_studio.demo.tinymodel import build_char_tokenizer

    started = time.time()
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    splits = make_splits(slip_rate=args.slip_rate)
    data_dir, model_dir = args.out / "demo-data", args.out / "demo-model"
    data_dir.mkdir(parents=True, exist_ok=True)
    for name in ("train", "test"):
        with open(data_dir / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            for p in splits[name]:
                fh.write(json.dumps({"prompt": p["prompt"], "answer": p["answer"], "kind": p["kind"]}) + "\n")

    tokenizer = build_char_tokenizer()
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=MODEL_SHAPE["hidden_size"], intermediate_size=MODEL_SHAPE["intermediate_size"],
        num_hidden_layers=MODEL_SHAPE["num_layers"], num_attention_heads=MODEL_SHAPE["num_heads"],
        num_key_value_heads=MODEL_SHAPE["num_kv_heads"], max_position_embeddings=MODEL_SHAPE["max_position_embeddings"],
        tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    model = transformers.LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params:,} parameters; SFT set {len(splits['sft'])} problems", flush=True)

    # Validation problems come from the SFT generator's stream but are held out of SFT batches.
    validation, sft = splits["sft"][:args.eval_size], splits["sft"][args.eval_size:]
    # Encoded when a batch first draws them: a short build (the determinism test) uses a few hundred of the
    # ~30,000 problems, and encoding all of them up front took longer than its training.
    encoded: dict[int, tuple[list[int], list[int]]] = {}

    def example(i: int):
        if i not in encoded:
            encoded[i] = encode_example(tokenizer, sft[i])
        return encoded[i]

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    warmup = 100
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    order_rng = random.Random(args.seed)
    order: list[int] = []
    history = []
    model.train()
    reached = None
    for step in range(1, args.max_steps + 1):
        if len(order) < args.batch_size:
            fresh = list(range(len(sft)))
            order_rng.shuffle(fresh)
            order.extend(fresh)
        batch = [example(order.pop()) for _ in range(args.batch_size)]
        input_ids, labels, attention = collate(batch, tokenizer.pad_token_id, torch)
        loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if step % args.eval_every == 0:
            accuracy, fmt, examples_out = evaluate(model, tokenizer, validation)
            sampled = sampled_accuracy(model, tokenizer, validation) if args.slip_rate or args.snapshots else None
            history.append({"step": step, "loss": round(loss.item(), 4), "accuracy": accuracy, "format_rate": fmt,
                            "sampled_accuracy": sampled})
            if args.snapshots:
                model.save_pretrained(args.out / "snapshots" / f"step-{step}", safe_serialization=True)
                tokenizer.save_pretrained(args.out / "snapshots" / f"step-{step}")
            print(f"step {step:5d}  loss {loss.item():.4f}  val accuracy {accuracy:.3f}  sampled {sampled}  format {fmt:.3f}  "
                  f"e.g. {examples_out[0]!r}  ({time.time() - started:.0f}s)", flush=True)
            if accuracy >= args.target_accuracy and fmt >= args.min_format:
                reached = step
                break
            if not math.isfinite(loss.item()):
                break
    if reached is None:
        print(f"error: the target (accuracy >= {args.target_accuracy}, format >= {args.min_format}) was not reached in "
              f"{args.max_steps} steps; raise --max-steps or --lr", file=sys.stderr)
        return 1

    model.save_pretrained(model_dir, safe_serialization=True)
    tokenizer.save_pretrained(model_dir)
    scored = splits["test"][:args.test_size]  # the whole split unless --test-size
    test_accuracy, test_format, _ = evaluate(model, tokenizer, scored)
    info = {
        "seed": args.seed, "parameters": n_params, "shape": MODEL_SHAPE, "sft_steps": reached, "batch_size": args.batch_size,
        "lr": args.lr, "target_accuracy": args.target_accuracy, "min_format": args.min_format, "slip_rate": args.slip_rate,
        "eval_every": args.eval_every,
        "validation": history[-1], "test_greedy_accuracy": test_accuracy, "test_format_rate": test_format, "test_scored": len(scored),
        "build_seconds": round(time.time() - started, 1), "torch": torch.__version__, "transformers": transformers.__version__,
        "sizes": {"train": len(splits["train"]), "test": len(splits["test"]), "sft": len(sft), "validation": len(validation)},
        "history": history,
    }
    (model_dir / "build_info.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps({k: v for k, v in info.items() if k != "history"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

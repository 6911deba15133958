"""Batch evaluation of a run: base vs tuned on held-out prompts, scored by the run's own rewards.

Both sides use one loaded base model and identical greedy decoding: the tuned side is the
run's LoRA adapter switched on, the base side the same model with the adapter switched off
(a fully fine-tuned run loads its saved model instead). Completions are scored by the run's
reward functions exactly as in training. Reports answer accuracy and format rate where the
task defines them, mean reward per function, and per-prompt win/tie/loss; writes eval.json.
Plain transformers + PEFT are used for both sides, whatever backend trained the run.
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import runs
from ..config import RunConfig
from ..errors import StudioError
from ..rewards import build_rewards
from ..rewards.builtin import numeric_answer, think_format
from ..rewards.runtime import guard
from ..rewards.scoring import weighted_totals

ANSWER_REWARDS = ("numeric_answer", "exact_match")
EVAL_FILE = "eval.json"


def _test_rows(cfg: RunConfig, run_dir: Path, split: str | None, limit: int | None):
    from ..data import load_rows

    data_cfg = cfg.data
    if split:
        data_cfg = type(cfg.data)(**{**cfg.data.__dict__, "test_split": split, "test_fraction": 0.0})
    rows = load_rows(data_cfg, run_dir, seed=int(cfg.rloo_value("seed") or 42))
    if not rows.test:
        raise StudioError(
            "this run has no held-out prompts to evaluate on",
            "its config sets neither data.test_split nor data.test_fraction",
            f"pass --split with a split name or a file of prompts, e.g. `rloo-studio eval {run_dir} --split test.jsonl`",
        )
    if limit is not None and limit < 1:
        raise StudioError(f"--limit {limit} leaves nothing to evaluate", "", "give a positive number of prompts")
    return rows.test[:limit] if limit else rows.test


def _score(rewards, prompts, texts, ids, rows, conversational: bool) -> dict:
    completions = [[{"role": "assistant", "content": t}] for t in texts] if conversational else texts
    columns = {k: [r.get(k) for r in rows] for k in rows[0] if k != "prompt"}
    values = {}
    for r in rewards:
        values[r.name] = guard(r.func, r.name, r.source_file)(prompts=prompts, completions=completions, completion_ids=ids, trainer_state=None,
                                log_extra=lambda *a, **k: None, log_metric=lambda *a, **k: None, **columns)
    return values


def _summary(values: dict, weights: list[float], texts: list[str], rows: list[dict], answer_name: str | None) -> dict:
    def mean(xs):
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if xs else None

    totals = weighted_totals(list(values.values()), weights)
    if answer_name:
        accuracy = mean(values[answer_name])
    elif "answer" in rows[0]:
        accuracy = mean(numeric_answer()(completions=texts, answer=[r["answer"] for r in rows]))
    else:
        accuracy = None
    return {
        "answer_accuracy": accuracy,
        "format_rate": sum(1 for v in think_format()(completions=texts) if v == 1.0) / len(texts),
        "mean_reward": mean(totals),
        "rewards": {name: mean(v) for name, v in values.items()},
        "mean_length_chars": sum(len(t) for t in texts) / len(texts),
        "_totals": totals,
    }


def evaluate_run(run_dir: str | Path, split: str | None = None, limit: int | None = None, progress=print) -> dict:
    from ..data import to_trl_dataset, use_chat_format
    from .generate import generate_completions
    from .model import load_model
    from .stack import import_training_stack

    run_dir = Path(run_dir)
    if not (run_dir / runs.CONFIG_FILE).is_file():
        raise StudioError(f"{run_dir} is not a run directory (no config.yaml)", "", "list runs with `rloo-studio runs`")
    adapter_dir, model_dir = run_dir / runs.ADAPTER_DIR, run_dir / runs.MODEL_DIR
    if not adapter_dir.is_dir() and not model_dir.is_dir():
        raise StudioError(f"run {run_dir.name} has no trained model yet (no adapter/ or model/)",
                          "the final model is written when training finishes or is stopped",
                          "wait for the run to finish, or stop it (it then saves), and evaluate again")
    cfg = RunConfig.load(run_dir / runs.CONFIG_FILE)
    rows = _test_rows(cfg, run_dir, split, limit)
    stack = import_training_stack("transformers")
    started = time.time()
    base = load_model(cfg.model, None, stack, run_dir, for_training=False)
    tokenizer = base.tokenizer
    prompts = to_trl_dataset(rows, cfg.data, tokenizer)["prompt"]
    rewards = build_rewards(cfg.rewards, run_dir, tokenizer, list(rows[0]))
    weights = [r.weight for r in rewards]
    answer_name = next((r.name for r in rewards if r.name in ANSWER_REWARDS), None)
    max_new_tokens = int(cfg.rloo_value("max_completion_length"))
    conversational = use_chat_format(cfg.data, tokenizer) or isinstance(prompts[0], list)

    def run_side(model, label):
        progress(f"[eval] generating {len(prompts)} {label} completions (greedy, up to {max_new_tokens} tokens)")
        out = generate_completions(model, tokenizer, list(prompts), max_new_tokens=max_new_tokens)
        values = _score(rewards, list(prompts), out.texts, out.completion_ids, rows, conversational)
        return out.texts, _summary(values, weights, out.texts, rows, answer_name)

    if adapter_dir.is_dir():
        from peft import PeftModel

        model = PeftModel.from_pretrained(base.model, str(adapter_dir)).eval()
        with model.disable_adapter():  # the base side: the same weights with the adapter switched off
            base_texts, base_summary = run_side(model, "base")
        tuned_texts, tuned_summary = run_side(model, "tuned")
    else:
        base_texts, base_summary = run_side(base.model.eval(), "base")
        tuned_model = stack.transformers.AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=base.model.dtype).eval()
        tuned_texts, tuned_summary = run_side(tuned_model, "tuned")

    wins = ties = losses = 0
    for b, t in zip(base_summary.pop("_totals"), tuned_summary.pop("_totals")):
        b, t = b or 0.0, t or 0.0
        wins, ties, losses = wins + (t > b), ties + (t == b), losses + (t < b)
    report = {
        "run": run_dir.name,
        "split": split or cfg.data.test_split or f"held-out {cfg.data.test_fraction:.0%}",
        "n_prompts": len(rows),
        "decoding": {"greedy": True, "max_new_tokens": max_new_tokens},
        "base": base_summary,
        "tuned": tuned_summary,
        "tuned_vs_base": {"wins": wins, "ties": ties, "losses": losses},
        "examples": [{"prompt": rows[i][cfg.data.prompt_column], "answer": rows[i].get("answer"),
                      "base": base_texts[i], "tuned": tuned_texts[i]} for i in range(min(5, len(rows)))],
        "seconds": round(time.time() - started, 1),
        "created_at": time.time(),
    }
    runs.write_json_atomic(run_dir / EVAL_FILE, report)
    return report

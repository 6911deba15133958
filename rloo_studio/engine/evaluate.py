"""Batch evaluation of a run: base vs tuned checkpoints on held-out prompts, scored by the run's own rewards.

All sides use one loaded base model and identical greedy decoding. The base side is generated
once, on the plain base model; then each chosen checkpoint's LoRA adapter is loaded into one
PeftModel by name (`load_adapter` + `set_adapter`, the previous adapter dropped), so evaluating
every checkpoint costs one model load, not one per checkpoint. A fully fine-tuned run loads each
checkpoint's saved model instead. Completions are scored by the run's reward functions exactly
as in training. Reports answer accuracy and format rate where the task defines them, mean
reward per function, per-prompt win/tie/loss against base, and every completion with its
reward (`per_prompt`), so any number in the report can be recomputed by hand; writes eval.json
atomically. Plain transformers + PEFT are used for every side, whatever backend trained the run.
Which checkpoints exist is the run directory's business (`runs.evaluable_checkpoints`, no torch).

Progress lines (sent to `progress`, which the CLI prints on stderr; one line each, stable for
the app to parse):

    [eval] plan prompts=24 checkpoints=checkpoint-2,checkpoint-4,final
    [eval] skip checkpoint-3: no weights (adapter_model.safetensors ...): its save was cut off
    [eval] base 0/24            (a side starts; then after every generated batch:)
    [eval] base 8/24
    [eval] checkpoint-2 24/24
    [eval] done seconds=12.3 file=runs/<id>/eval.json

Side lines match `^\\[eval\\] (base|final|checkpoint-\\d+) (\\d+)/(\\d+)$`; the base side appears
once whatever the number of checkpoints. `plan` comes first, `done` last.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from .. import runs
from ..config import RunConfig
from ..errors import StudioError
from ..rewards import build_rewards
from ..rewards.builtin import numeric_answer, think_format
from ..rewards.preview import TrainerStateStub
from ..rewards.runtime import guard
from ..rewards.scoring import weighted_totals

ANSWER_REWARDS = ("numeric_answer", "exact_match")
EVAL_FILE = "eval.json"
BASE_SIDE = "base"
ALL_CHECKPOINTS = "all"
# Prompts generated per batch. On a CPU a batch of 8 tiny-model prompts takes seconds, so the app's
# progress bar moves; on a GPU larger batches are nearly free and finish the evaluation sooner.
CPU_BATCH_SIZE = 8
GPU_BATCH_SIZE = 64
N_EXAMPLES = 5  # base/tuned pairs copied into `examples` for a quick look


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


def select_checkpoints(run_dir: str | Path, checkpoint: str | None = "final") -> tuple[list[runs.EvalCheckpoint], list[dict]]:
    """The weights to evaluate for `--checkpoint` (final | checkpoint-N | N | all) and the folders skipped.

    Raises StudioError for a name the run does not have (listing those it has), for a checkpoint
    whose save was cut off, and for a run with no trained weights yet. Plain file checks: no torch.
    """
    run_dir = Path(run_dir)
    available = runs.evaluable_checkpoints(run_dir)
    skipped = runs.incomplete_checkpoints(run_dir)
    names = ", ".join(c.name for c in available)
    if not available:
        cut = f" ({', '.join(s['name'] for s in skipped)} {'was' if len(skipped) == 1 else 'were'} cut off while saving)" if skipped else ""
        raise StudioError(f"run {run_dir.name} has no trained model yet (no adapter/, model/ or complete checkpoint){cut}",
                          "the final model is written when training finishes or is stopped, checkpoints every rloo.save_steps steps",
                          "wait for the run to finish or for its first checkpoint, or stop it (it then saves), and evaluate again")
    choice = (checkpoint or runs.FINAL_CHECKPOINT).strip()
    if choice == ALL_CHECKPOINTS:
        return available, skipped
    if choice.isdigit():
        choice = f"checkpoint-{int(choice)}"
    chosen = [c for c in available if c.name == choice]
    if chosen:
        return chosen, []
    broken = next((s for s in skipped if s["name"] == choice), None)
    if broken:
        raise StudioError(f"{choice} of run {run_dir.name} cannot be evaluated", broken["why"],
                          f"choose one of: {names} (or --checkpoint all)")
    if choice == runs.FINAL_CHECKPOINT:
        raise StudioError(f"run {run_dir.name} has no final adapter yet (no adapter/ or model/)",
                          "the final model is written when training finishes or is stopped",
                          f"evaluate a checkpoint instead, one of: {names} (or --checkpoint all)")
    raise StudioError(f"run {run_dir.name} has no checkpoint `{choice}`", f"it has: {names}",
                      "pass --checkpoint with one of those, or `all` to compare them all")


def _score(rewards, prompts, texts, ids, rows, conversational: bool) -> dict:
    completions = [[{"role": "assistant", "content": t}] for t in texts] if conversational else texts
    columns = {k: [r.get(k) for r in rows] for k in rows[0] if k != "prompt"}
    values = {}
    for r in rewards:
        values[r.name] = guard(r.func, r.name, r.source_file)(prompts=prompts, completions=completions, completion_ids=ids, trainer_state=TrainerStateStub(),
                                log_extra=lambda *a, **k: None, log_metric=lambda *a, **k: None, **columns)
    return values


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _summary(values: dict, totals: list, texts: list[str], rows: list[dict], answer_name: str | None) -> dict:
    if answer_name:
        accuracy = _mean(values[answer_name])
    elif "answer" in rows[0]:
        accuracy = _mean(numeric_answer()(completions=texts, answer=[r["answer"] for r in rows]))
    else:
        accuracy = None
    return {
        "answer_accuracy": accuracy,
        "format_rate": sum(1 for v in think_format()(completions=texts) if v == 1.0) / len(texts),
        "mean_reward": _mean(totals),
        "rewards": {name: _mean(v) for name, v in values.items()},
        "mean_length_chars": sum(len(t) for t in texts) / len(texts),
    }


@dataclass
class _Side:
    name: str
    step: int
    texts: list[str]
    values: dict  # reward name -> one value per prompt
    totals: list  # weighted total per prompt (None when every function returned None)
    summary: dict


def _versus(base: _Side, side: _Side) -> dict:
    wins = ties = losses = 0
    for b, t in zip(base.totals, side.totals):
        b, t = b or 0.0, t or 0.0  # an unscorable completion counts as 0, as in training
        wins, ties, losses = wins + (t > b), ties + (t == b), losses + (t < b)
    return {"wins": wins, "ties": ties, "losses": losses}


def _check_weights(folder: Path) -> None:
    """Read the header of every safetensors file in `folder`: a truncated file fails here, cheaply."""
    from safetensors import safe_open

    for file in folder.glob("*.safetensors"):
        with safe_open(str(file), framework="pt") as fh:
            fh.keys()


def evaluate_run(run_dir: str | Path, split: str | None = None, limit: int | None = None, progress=print,
                 checkpoint: str | None = "final", batch_size: int | None = None) -> dict:
    """Evaluate base vs `checkpoint` (final | checkpoint-N | all) of a run; write and return eval.json's content."""
    run_dir = Path(run_dir)
    if not (run_dir / runs.CONFIG_FILE).is_file():
        raise StudioError(f"{run_dir} is not a run directory (no config.yaml)", "", "list runs with `rloo-studio runs`")
    selected, skipped = select_checkpoints(run_dir, checkpoint)
    cfg = RunConfig.load(run_dir / runs.CONFIG_FILE)
    rows = _test_rows(cfg, run_dir, split, limit)
    progress(f"[eval] plan prompts={len(rows)} checkpoints={','.join(c.name for c in selected)}")
    for s in skipped:
        progress(f"[eval] skip {s['name']}: {s['why']}")

    from ..data import to_trl_dataset, use_chat_format
    from .generate import chat_template_kwargs, generate_completions
    from .model import load_model
    from .stack import import_training_stack

    stack = import_training_stack("transformers")
    started = time.time()
    base = load_model(cfg.model, None, stack, run_dir, for_training=False)
    tokenizer = base.tokenizer
    prompts = list(to_trl_dataset(rows, cfg.data, tokenizer)["prompt"])
    rewards = build_rewards(cfg.rewards, run_dir, tokenizer, list(rows[0]), chat_template_kwargs=chat_template_kwargs(cfg))
    weights = [r.weight for r in rewards]
    answer_name = next((r.name for r in rewards if r.name in ANSWER_REWARDS), None)
    max_new_tokens = int(cfg.rloo_value("max_completion_length"))
    conversational = use_chat_format(cfg.data, tokenizer) or isinstance(prompts[0], list)
    device = next(base.model.parameters()).device
    batch_size = batch_size or (GPU_BATCH_SIZE if device.type == "cuda" else CPU_BATCH_SIZE)

    def run_side(model, name: str, step: int) -> _Side:
        progress(f"[eval] {name} 0/{len(prompts)}")
        out = generate_completions(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size,
                                   progress=lambda done, total: progress(f"[eval] {name} {done}/{total}"), cfg=cfg)
        values = _score(rewards, prompts, out.texts, out.completion_ids, rows, conversational)
        totals = weighted_totals(list(values.values()), weights)
        return _Side(name, step, out.texts, values, totals, _summary(values, totals, out.texts, rows, answer_name))

    # The base side first, on the untouched base model: generated once for every checkpoint.
    base_side = run_side(base.model.eval(), BASE_SIDE, 0)
    sides: list[_Side] = []
    several = len(selected) > 1
    peft_model, active = None, None
    for ck in selected:
        try:
            _check_weights(ck.path)  # before the model is touched: a failed load must not leave half an adapter in it
            if ck.kind == "adapter":
                adapter_name = re.sub(r"\W", "_", ck.name)  # module-dict keys: no dots or dashes
                if peft_model is None:
                    from peft import PeftModel

                    peft_model = PeftModel.from_pretrained(base.model, str(ck.path), adapter_name=adapter_name).eval()
                else:
                    peft_model.load_adapter(str(ck.path), adapter_name=adapter_name)
                    peft_model.set_adapter(adapter_name)
                    peft_model.delete_adapter(active)  # one adapter in memory at a time
                active, model = adapter_name, peft_model
            else:
                model = stack.transformers.AutoModelForCausalLM.from_pretrained(str(ck.path), dtype=base.model.dtype).to(device).eval()
        except Exception as exc:  # noqa: BLE001 - a torn weights file: skip it when comparing many
            if not several:
                raise
            why = f"its weights could not be loaded ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            skipped.append({"name": ck.name, "step": ck.step, "why": why})
            progress(f"[eval] skip {ck.name}: {why}")
            continue
        sides.append(run_side(model, ck.name, ck.step))
        if ck.kind == "model":
            del model
    if not sides:
        raise StudioError(f"none of the checkpoints of run {run_dir.name} could be loaded",
                          "; ".join(f"{s['name']}: {s['why']}" for s in skipped),
                          "resume or re-run training to save the model again")

    skipped.sort(key=lambda s: (s["step"], s["name"] == runs.FINAL_CHECKPOINT))
    tuned = next((s for s in sides if s.name == runs.FINAL_CHECKPOINT), sides[-1])
    scored = [s for s in sides if s.summary["mean_reward"] is not None]
    best = max(scored, key=lambda s: s.summary["mean_reward"]).name if scored else None  # ties: the earliest step
    report = {
        "run": run_dir.name,
        "split": split or cfg.data.test_split or f"held-out {cfg.data.test_fraction:.0%}",
        "n_prompts": len(rows),
        "decoding": {"greedy": True, "max_new_tokens": max_new_tokens},
        "base": base_side.summary,
        "tuned": tuned.summary,
        "tuned_vs_base": _versus(base_side, tuned),
        "checkpoint": tuned.name,
        "checkpoints": [{"name": s.name, "step": s.step, "summary": s.summary, "tuned_vs_base": _versus(base_side, s)}
                        for s in sides],
        "best": best,
        "skipped": skipped,
        "reward_weights": {r.name: r.weight for r in rewards},
        "per_prompt": [
            {"prompt": rows[i][cfg.data.prompt_column], "answer": rows[i].get("answer"),
             "sides": {s.name: {"completion": s.texts[i], "total": s.totals[i],
                                "rewards": {name: v[i] for name, v in s.values.items()}}
                       for s in [base_side, *sides]}}
            for i in range(len(rows))
        ],
        "examples": [{"prompt": rows[i][cfg.data.prompt_column], "answer": rows[i].get("answer"),
                      "base": base_side.texts[i], "tuned": tuned.texts[i]} for i in range(min(N_EXAMPLES, len(rows)))],
        "seconds": round(time.time() - started, 1),
        "created_at": time.time(),
    }
    runs.write_json_atomic(run_dir / EVAL_FILE, report)
    progress(f"[eval] done seconds={report['seconds']} file={run_dir / EVAL_FILE}")
    return report

"""Batch evaluation of a run: base vs tuned checkpoints on held-out prompts, scored by the run's own rewards.

All sides use one loaded base model and the same decoding: greedy by default, or sampled pass@1
(`decoding="sampled"`: k completions per prompt at the run's training temperature, each prompt's
score the mean over its k). The base side is generated once, on the plain base model, with its
own token budget when `base_max_new_tokens` is given (a base cut off by a short budget looks worse
than it is); then each chosen checkpoint's LoRA adapter is loaded into one PeftModel by name
(`engine.adapters`, the previous adapter dropped), so evaluating every checkpoint
costs one model load, not one per checkpoint. A fully fine-tuned run loads each checkpoint's
saved model instead. Completions are scored by the run's reward functions exactly as in training.

Every number comes with its n and a 95 % interval (`rloo_studio.stats`: Wilson for answer
accuracy, format rate and truncation rate, a seeded bootstrap for mean reward); tuned vs base is
a paired comparison on the same prompts (wins/ties/losses, decided by the exact sign test, shown
with the same rule's interval), and the report's `verdict` is `stats.verdict`'s: it says so, and
reads no "better", when most answers of either side were cut off by the token budget. `measured`
says whether the rewards score an answer and the <think> format: displays leave out answer accuracy
and format rate where they do not. With several checkpoints the best one is chosen on data it is then *not* reported on: on a
validation split (`select_split`), or by cross-fitting two halves of the held-out prompts (choose
on half A, report on half B, and the other way round). `best` names a checkpoint only when the
chosen one is distinguishable from the last weights on the data it was not chosen on. Every
completion is kept with its reward (`per_prompt`), so any number in the report can be recomputed
by hand; eval.json is written atomically. Plain transformers + PEFT are used for every side,
whatever backend trained the run. Which checkpoints exist is the run directory's business
(`runs.evaluable_checkpoints`, no torch).

Progress events (sent to `progress` as protocol.EvalPlan, EvalSkip, EvalSide, EvalDone; the CLI prints each as
its `line()` on stderr, or as one JSON object per line with `--events`, which is what the app reads):

    {"event": "plan", "prompts": 24, "checkpoints": ["checkpoint-2", "checkpoint-4", "final"]}
        [eval] plan prompts=24 checkpoints=checkpoint-2,checkpoint-4,final
    {"event": "skip", "name": "checkpoint-3", "why": "..."}
        [eval] skip checkpoint-3: no weights (adapter_model.safetensors ...): its save was cut off
    {"event": "side", "side": "base", "validation": false, "done": 8, "total": 24}
        [eval] base 8/24            (a side starts at 0, then moves after every generated batch)
        [eval] validation checkpoint-2 10/10   (only with a validation split: the selection's own pass)
    {"event": "done", "seconds": 12.3, "file": "runs/<id>/eval.json"}
        [eval] done seconds=12.3 file=runs/<id>/eval.json

The base side appears once whatever the number of checkpoints; with k samples a side counts to
k × prompts. `plan` comes first, `done` last.

Over 500 lines because one evaluation is one procedure (choosing checkpoints, sampling every side, scoring, the
paired intervals and the cross-fitted verdict, its progress events) whose parts share the sides and the report they
fill in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import runs, stats
from ..config import RunConfig
from ..data import answer_column, data_columns, reference_cell, reward_kwargs
from ..errors import StudioError
from ..protocol import CommandEvent, EvalDone, EvalPlan, EvalSide, EvalSkip
from ..rewards import build_rewards, reward_specs
from ..rewards.builtin import numeric_answer, think_format
from ..rewards.preview import TrainerStateStub
from ..rewards.runtime import cut_off, guard
from ..rewards.scoring import weighted_totals
from .adapters import AdapterSwitch
from .warmup_record import read_record, summary_line

ANSWER_REWARDS = stats.ANSWER_REWARDS
BASE_SIDE = "base"
ALL_CHECKPOINTS = "all"
# Prompts generated per batch. On a CPU a batch of 8 tiny-model prompts takes seconds, so the app's
# progress bar moves; on a GPU larger batches are nearly free and finish the evaluation sooner.
CPU_BATCH_SIZE = 8
GPU_BATCH_SIZE = 64
N_EXAMPLES = 5  # base/tuned pairs copied into `examples` for a quick look
GREEDY, SAMPLED = "greedy", "sampled"
DECODINGS = (GREEDY, SAMPLED)


def _test_rows(cfg: RunConfig, run_dir: Path, split: str | None, limit: int | None):
    from ..data import load_rows

    data_cfg = cfg.data
    if split:
        data_cfg = type(cfg.data)(**{**cfg.data.__dict__, "test_split": split, "test_fraction": 0.0})
    rows = load_rows(data_cfg, run_dir, seed=int(cfg.rloo_value("seed")))
    if not rows.test:
        raise StudioError(
            "this run has no held-out prompts to evaluate on",
            "its config sets neither data.test_split nor data.test_fraction",
            f"pass --split with a split name or a file of prompts, e.g. `rloo-studio eval {run_dir} --split test.jsonl`",
        )
    if limit is not None and limit < 1:
        raise StudioError(f"--limit {limit} leaves nothing to evaluate", "", "give a positive number of prompts")
    return rows.test[:limit] if limit else rows.test


def seen_in_training(cfg: RunConfig, run_dir: Path, rows: list[dict]) -> int | None:
    """How many of `rows` (the prompts to evaluate on) are also prompts of the run's training split, by their text: a
    file given as held-out data can be the training data itself. None when the training data cannot be read now."""
    from ..data import load_rows

    column = cfg.data.prompt_column
    try:
        trained = {str(r.get(column)) for r in load_rows(cfg.data, run_dir, seed=int(cfg.rloo_value("seed"))).train}
    except StudioError:
        return None
    return sum(str(r.get(column)) in trained for r in rows)


def select_checkpoints(run_dir: str | Path, checkpoint: str | None = runs.FINAL) -> tuple[list[runs.EvalCheckpoint], list[dict]]:
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
    choice = (checkpoint or runs.FINAL).strip()
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
    if choice == runs.FINAL:
        raise StudioError(f"run {run_dir.name} has no final adapter yet (no adapter/ or model/)",
                          "the final model is written when training finishes or is stopped",
                          f"evaluate a checkpoint instead, one of: {names} (or --checkpoint all)")
    raise StudioError(f"run {run_dir.name} has no checkpoint `{choice}`", f"it has: {names}",
                      "pass --checkpoint with one of those, or `all` to compare them all")


def score_completions(rewards, prompts, texts, ids, rows, conversational: bool, wrap=None) -> dict:
    """{reward name: values} for one completion per prompt (the data's `rows`, as loaded), each reward called as TRL calls
    it, with `data.reward_kwargs`; `wrap(reward)` gives the checked callable (default: `guard` without a time limit)."""
    completions = [[{"role": "assistant", "content": t}] for t in texts] if conversational else texts
    wrap = wrap or (lambda r: guard(r.func, r.name, r.source_file))
    kwargs = reward_kwargs(prompts, completions, ids, rows, data_columns(rows), TrainerStateStub())
    values = {}
    for r in rewards:
        values[r.name] = wrap(r)(**kwargs)
    return values


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


@dataclass
class _Side:
    """One side's per-prompt results; with k samples each per-prompt value is the mean over the k."""
    name: str
    step: int
    budget: int  # max_new_tokens this side was given
    texts: list[list[str]]  # per prompt: its k completions
    sample_totals: list[list]  # per prompt: the weighted total of each sample
    sample_values: list[dict]  # per prompt: reward name -> the value of each sample
    values: dict  # reward name -> per-prompt value (mean over samples)
    totals: list  # weighted total per prompt (None when every function returned None for every sample)
    accuracy: list  # per prompt: answer success (mean over samples), None when the task has no answer
    formatted: list  # per prompt: share of samples in the full <think>…</think> format
    truncated: list  # per prompt: share of samples cut off by the token budget
    lengths: list  # per prompt: mean completion length in characters
    tokens: list[list[int]]  # per prompt: each sample's completion length in tokens (end token included)


def _summary(side: _Side, indices: list[int], seed: int) -> dict:
    """Means, rates and their 95 % intervals over the prompts `indices` (n = len(indices))."""
    pick = lambda xs: [xs[i] for i in indices]  # noqa: E731
    estimates = {"mean_reward": stats.mean(pick(side.totals), seed), "answer_accuracy": stats.rate(pick(side.accuracy)),
                 "format_rate": stats.rate(pick(side.formatted)), "truncation_rate": stats.rate(pick(side.truncated))}
    return {
        "n": len(indices),
        "max_new_tokens": side.budget,
        **{key: estimate["value"] for key, estimate in estimates.items()},
        "rewards": {name: _mean(pick(v)) for name, v in side.values.items()},
        "mean_length_chars": _mean(pick(side.lengths)),
        "intervals": {key: {k: e[k] for k in ("low", "high", "n", "same") if k in e} for key, e in estimates.items()},
    }


def _combine(name: str, chosen: dict[int, _Side], n: int) -> _Side:
    """A side whose prompt i comes from the checkpoint `chosen[i]`: the cross-fitted, out-of-fold result."""
    take = lambda attr: [getattr(chosen[i], attr)[i] for i in range(n)]  # noqa: E731
    rewards = dict.fromkeys(reward for s in chosen.values() for reward in s.values)
    return _Side(name, 0, max(s.budget for s in chosen.values()), take("texts"), take("sample_totals"), take("sample_values"),
                 {r: [chosen[i].values[r][i] for i in range(n)] for r in rewards}, take("totals"), take("accuracy"),
                 take("formatted"), take("truncated"), take("lengths"), take("tokens"))


def _choose(sides: list[_Side], indices: list[int]) -> _Side:
    """The checkpoint with the highest mean reward on `indices` (ties: the earliest step)."""
    def score(side: _Side) -> float:
        value = _mean([side.totals[i] for i in indices])
        return value if value is not None else float("-inf")
    return max(sides, key=score)


def _halves(n: int, seed: int) -> tuple[list[int], list[int]]:
    """Two disjoint halves of the prompts 0..n-1, shuffled with the run's seed (A gets the odd one out)."""
    import random

    order = list(range(n))
    random.Random(seed).shuffle(order)
    cut = (n + 1) // 2
    return sorted(order[:cut]), sorted(order[cut:])


def _cross_fit(sides: list[_Side], base: _Side, tuned: _Side, seed: int) -> tuple[dict, str | None]:
    """Choose on one half, report on the other, both ways; (the selection record, the best checkpoint or None)."""
    n = len(base.totals)
    half_a, half_b = _halves(n, seed)
    folds, chosen_for = [], {}
    for chosen_on, reported_on, label in ((half_a, half_b, ("A", "B")), (half_b, half_a, ("B", "A"))):
        pick = _choose(sides, chosen_on)
        for i in reported_on:
            chosen_for[i] = pick
        folds.append({"chosen_on": f"half {label[0]}", "chosen_on_prompts": chosen_on, "chosen": pick.name,
                      "reported_on": f"half {label[1]}", "reported_on_prompts": reported_on,
                      "reported": _summary(pick, reported_on, seed)})
    picks = [f["chosen"] for f in folds]
    chosen = picks[0] if picks[0] == picks[1] else None
    # Every prompt scored by the checkpoint chosen on the other half: an honest estimate of "pick the best".
    out_of_fold = _combine("chosen on the other half", chosen_for, n)
    record = {
        "method": "cross-fit halves",
        "why": "one held-out set: choosing and reporting on the same prompts would overstate the chosen checkpoint",
        "criterion": "mean_reward", "seed": seed, "folds": folds, "chosen": chosen,
        "halves_agree": chosen is not None,
        "reported_on": "each half scored by the checkpoint chosen on the other half",
        "reported": _summary(out_of_fold, list(range(n)), seed),
        "chosen_vs_tuned": {"tuned": tuned.name, **stats.paired(tuned.totals, out_of_fold.totals, seed)},
        "chosen_vs_base": stats.paired(base.totals, out_of_fold.totals, seed),
    }
    return record, _verdict(record, tuned)


def _validated(sides: list[_Side], val_sides: list[_Side], base: _Side, tuned: _Side, split: str, overlap: int, seed: int) -> tuple[dict, str | None]:
    """Choose on the validation split's prompts, report the chosen checkpoint on every held-out prompt."""
    n_val = len(val_sides[0].totals)
    pick_name = _choose(val_sides, list(range(n_val))).name
    pick = next(s for s in sides if s.name == pick_name)
    n = len(base.totals)
    record = {
        "method": "validation split",
        "why": "the checkpoint is chosen on other prompts than those it is reported on",
        "criterion": "mean_reward", "seed": seed, "select_split": split, "n_select": n_val,
        "overlap_prompts": overlap,
        "selection_scores": {s.name: _summary(s, list(range(n_val)), seed)["mean_reward"] for s in val_sides},
        "folds": [{"chosen_on": f"validation split {split}", "chosen": pick.name, "reported_on": "held-out prompts",
                   "reported_on_prompts": list(range(n)), "reported": _summary(pick, list(range(n)), seed)}],
        "chosen": pick.name, "halves_agree": None,
        "reported_on": "held-out prompts (none of them used to choose)",
        "reported": _summary(pick, list(range(n)), seed),
        "chosen_vs_tuned": {"tuned": tuned.name, **stats.paired(tuned.totals, pick.totals, seed)},
        "chosen_vs_base": stats.paired(base.totals, pick.totals, seed),
    }
    return record, _verdict(record, tuned)


def _verdict(record: dict, tuned: _Side) -> str | None:
    """The best checkpoint, only when one was chosen and it is distinguishable from the last weights; else None."""
    chosen, versus = record["chosen"], record["chosen_vs_tuned"]
    if chosen is None:
        record["verdict"] = (f"the halves chose differently ({', '.join(f['chosen'] for f in record['folds'])}): "
                             f"no checkpoint stands out at this size")
        return None
    if chosen == tuned.name:
        record["verdict"] = f"the selection chose {chosen}, the weights already evaluated as tuned"
        return None
    if not versus["distinguishable"]:
        record["verdict"] = f"{chosen} was chosen but is {stats.NOT_DISTINGUISHABLE} from {tuned.name}"
        return None
    cut = stats.mostly_cut_off({chosen: record["reported"]["truncation_rate"], tuned.name: _mean(tuned.truncated)})
    if cut:  # a difference on cut-off answers is a difference in how answers start, not in the task
        shares = ", ".join(f"{name} {100 * share:.0f} %" for name, share in cut.items())
        record["verdict"] = (f"{chosen} was chosen, but most answers were cut off by the token budget ({shares}): "
                             f"no checkpoint is named on unfinished answers")
        return None
    # Which way: the sign test's (more prompts higher than lower), as every verdict reads it (stats.verdict); a mean
    # difference can point the other way (one prompt far higher, nine a little lower).
    better = stats.verdict(versus)["kind"] == "better"
    # Where the comparison was made, exactly: with agreeing halves the checkpoint was chosen on every prompt (once on
    # each half), so what was kept apart is each half's choice from that half's scores.
    where = (f", each half scored by the checkpoint chosen on the other half (both halves chose {chosen})"
             if record["method"] == "cross-fit halves" else " on the held-out prompts, none of them used to choose it")
    record["verdict"] = f"{chosen} is {'better' if better else 'worse'} than {tuned.name}{where}"
    return chosen if better else None


def _check_weights(folder: Path) -> None:
    """Read the header of every safetensors file in `folder`: a truncated file fails here, cheaply."""
    from safetensors import safe_open

    for file in folder.glob("*.safetensors"):
        with safe_open(str(file), framework="pt") as fh:
            fh.keys()


def _check_options(decoding: str, samples: int, base_max_new_tokens: int | None) -> None:
    if decoding not in DECODINGS:
        raise StudioError(f"--decoding {decoding} is not a decoding this evaluation knows", f"it knows: {', '.join(DECODINGS)}",
                          "use --decoding greedy (the default) or --decoding sampled --samples 4")
    if samples < 1:
        raise StudioError(f"--samples {samples} leaves nothing to generate", "", "give a positive number, e.g. --samples 4")
    if decoding == GREEDY and samples != 1:
        raise StudioError(f"--samples {samples} needs sampled decoding",
                          "greedy decoding gives the same completion every time: more samples would repeat it",
                          "add --decoding sampled (or drop --samples)")
    if base_max_new_tokens is not None and base_max_new_tokens < 1:
        raise StudioError(f"--base-max-new-tokens {base_max_new_tokens} leaves the base no tokens", "",
                          "give a positive number, e.g. 4 times the run's max_completion_length")


def evaluate_run(run_dir: str | Path, split: str | None = None, limit: int | None = None,
                 progress: Callable[[CommandEvent], None] = lambda event: None, checkpoint: str | None = runs.FINAL,
                 batch_size: int | None = None, decoding: str = GREEDY, samples: int = 1, base_max_new_tokens: int | None = None, select_split: str | None = None,
                 max_new_tokens: int | None = None) -> dict:
    """Evaluate base vs `checkpoint` (final | checkpoint-N | all) of a run; write and return eval.json's content.

    `decoding`: greedy (one completion per prompt) or sampled (`samples` completions per prompt at the
    run's temperature, scored by their mean). `base_max_new_tokens`: the base side's token budget
    (default: the tuned side's). `max_new_tokens`: the tuned side's token budget (default: the run's
    max_completion_length; a larger one evaluates answers training cut off, to see them finished). `select_split`: a split or file to
    choose the best checkpoint on; without it, halves of the held-out prompts are cross-fitted.

    The report's `seconds` is the whole evaluation, from this call on; `load_seconds`, its part spent importing torch,
    transformers and PEFT and loading the base model: seconds, where generating and scoring a few prompts on a small
    model can take 0.2 s.
    """
    started = time.monotonic()
    run_dir = Path(run_dir)
    if not (run_dir / runs.CONFIG_FILE).is_file():
        raise StudioError(f"{run_dir} is not a run directory (no config.yaml)", "", "list runs with `rloo-studio runs`")
    _check_options(decoding, samples, base_max_new_tokens)
    if max_new_tokens is not None and max_new_tokens < 1:
        raise StudioError(f"--max-new-tokens {max_new_tokens} leaves the tuned model no tokens", "",
                          "give a positive number, e.g. 4 times the run's max_completion_length")
    selected, skipped = select_checkpoints(run_dir, checkpoint)
    if select_split and (checkpoint or "").strip() != ALL_CHECKPOINTS:
        raise StudioError(f"--select-split {select_split} chooses among checkpoints, but only {checkpoint} is evaluated",
                          "a validation split is for choosing the best of several checkpoints",
                          "add --checkpoint all, or drop --select-split")
    cfg = RunConfig.load(run_dir / runs.CONFIG_FILE)
    rows = _test_rows(cfg, run_dir, split, limit)
    select_rows = _test_rows(cfg, run_dir, select_split, None) if select_split and len(selected) > 1 else None
    progress(EvalPlan(prompts=len(rows), checkpoints=[c.name for c in selected]))
    for s in skipped:
        progress(EvalSkip(name=s["name"], why=s["why"]))

    from ..data import to_trl_dataset, use_chat_format
    from ..rewards.thinking import prompt_opens_think
    from .generate import chat_template_kwargs, end_token_ids, generate_completions
    from .model import load_model
    from .stack import import_training_stack

    stack = import_training_stack("transformers")
    seed = int(cfg.rloo_value("seed"))
    base = load_model(cfg.model, None, stack, run_dir, for_training=False)
    loaded = time.monotonic()
    tokenizer = base.tokenizer
    prompts = list(to_trl_dataset(rows, cfg.data, tokenizer)["prompt"])
    select_prompts = list(to_trl_dataset(select_rows, cfg.data, tokenizer)["prompt"]) if select_rows else None
    # A thinking template opens <think> in the prompt: the rewards, the accuracy and the format rate read it (rewards.thinking).
    opened = prompt_opens_think(prompts, tokenizer, chat_template_kwargs(cfg))
    rewards = build_rewards(reward_specs(cfg), run_dir, tokenizer, data_columns(rows), chat_template_kwargs=chat_template_kwargs(cfg),
                            prompt_opens_think=opened)
    weights = [r.weight for r in rewards]
    answer_name = next((r.name for r in rewards if r.name in ANSWER_REWARDS), None)
    reference = answer_column(cfg)
    max_new_tokens = int(max_new_tokens or cfg.rloo_value("max_completion_length"))
    base_budget = int(base_max_new_tokens or max_new_tokens)
    conversational = use_chat_format(cfg.data, tokenizer) or isinstance(prompts[0], list)
    device = next(base.model.parameters()).device
    batch_size = batch_size or (GPU_BATCH_SIZE if device.type == "cuda" else CPU_BATCH_SIZE)
    # Sampled pass@1 samples as training samples: the run's temperature and top-p (TRL's defaults: 1.0).
    temperature = float(cfg.rloo_value("temperature") or 1.0) if decoding == SAMPLED else None
    top_p = float(cfg.rloo_value("top_p") or 1.0) if decoding == SAMPLED else None
    end_ids = set(end_token_ids(base.model, tokenizer))  # TRL's end ids: what generation stops at

    def run_side(model, name: str, step: int, budget: int, side_prompts=prompts, side_rows=rows, validation=False) -> _Side:
        n, total = len(side_prompts), len(side_prompts) * samples

        def moved(done: int) -> None:
            progress(EvalSide(side=name, validation=validation, done=done, total=total))

        moved(0)
        texts, sample_totals, sample_values = [[] for _ in range(n)], [[] for _ in range(n)], [dict() for _ in range(n)]
        accuracy, formatted, truncated = [[] for _ in range(n)], [[] for _ in range(n)], [[] for _ in range(n)]
        tokens = [[] for _ in range(n)]
        for k in range(samples):
            sampling = dict(do_sample=True, temperature=temperature, top_p=top_p, seed=seed + k) if decoding == SAMPLED else {}
            out = generate_completions(model, tokenizer, side_prompts, max_new_tokens=budget, batch_size=batch_size,
                                       progress=lambda done, _n, k=k: moved(k * n + done),
                                       cfg=cfg, **sampling)
            values = score_completions(rewards, side_prompts, out.texts, out.completion_ids, side_rows, conversational)
            totals = weighted_totals(list(values.values()), weights)
            if answer_name:
                answers = values[answer_name]
            elif "answer" in side_rows[0]:
                answers = numeric_answer(prompt_opens_think=opened)(completions=out.texts, answer=[r["answer"] for r in side_rows])
            else:
                answers = [None] * n
            shaped = think_format(prompt_opens_think=opened)(completions=out.texts)
            for i in range(n):
                texts[i].append(out.texts[i])
                sample_totals[i].append(totals[i])
                for reward_name, v in values.items():
                    sample_values[i].setdefault(reward_name, []).append(v[i])
                accuracy[i].append(answers[i])
                formatted[i].append(1.0 if shaped[i] == 1.0 else 0.0)
                truncated[i].append(1.0 if cut_off(out.completion_ids[i], budget, end_ids) else 0.0)
                tokens[i].append(len(out.completion_ids[i]))
        names = [r.name for r in rewards]
        return _Side(name, step, budget, texts, sample_totals, sample_values,
                     {r: [_mean(sample_values[i][r]) for i in range(n)] for r in names},
                     [_mean(t) for t in sample_totals], [_mean(a) for a in accuracy], [_mean(f) for f in formatted],
                     [_mean(t) for t in truncated], [_mean([len(t) for t in ts]) for ts in texts], tokens)

    # The base side first, on the untouched base model: generated once for every checkpoint.
    base_side = run_side(base.model.eval(), BASE_SIDE, 0, base_budget)
    sides: list[_Side] = []
    select_sides: list[_Side] = []
    several = len(selected) > 1
    adapters = AdapterSwitch(stack.peft, base.model, keep=False)  # each checkpoint is visited once: one adapter in memory
    for ck in selected:
        try:
            _check_weights(ck.path)  # before the model is touched: a failed load must not leave half an adapter in it
            if ck.kind == "adapter":
                model = adapters.use(ck.path, ck.name)
            else:
                model = stack.transformers.AutoModelForCausalLM.from_pretrained(str(ck.path), dtype=base.model.dtype).to(device).eval()
        except Exception as exc:  # noqa: BLE001 - a torn weights file: skip it when comparing many
            if not several:
                raise
            why = f"its weights could not be loaded ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            skipped.append({"name": ck.name, "step": ck.step, "why": why})
            progress(EvalSkip(name=ck.name, why=why))
            continue
        sides.append(run_side(model, ck.name, ck.step, max_new_tokens))
        if select_prompts:
            selection_side = run_side(model, ck.name, ck.step, max_new_tokens, select_prompts, select_rows, validation=True)
            select_sides.append(selection_side)
        if ck.kind == "model":
            del model
    if not sides:
        raise StudioError(f"none of the checkpoints of run {run_dir.name} could be loaded",
                          "; ".join(f"{s['name']}: {s['why']}" for s in skipped),
                          "resume or re-run training to save the model again")

    skipped.sort(key=lambda s: (s["step"], s["name"] == runs.FINAL))
    tuned = next((s for s in sides if s.name == runs.FINAL), sides[-1])
    everything = list(range(len(rows)))
    summaries = {s.name: _summary(s, everything, seed) for s in [base_side, *sides]}
    if len(sides) < 2:
        selection, best = {"method": "none", "why": "one checkpoint evaluated: nothing to choose between", "chosen": None}, None
    elif select_prompts:
        overlap = len({str(p) for p in prompts} & {str(p) for p in select_prompts})
        selection, best = _validated(sides, select_sides, base_side, tuned, select_split, overlap, seed)
    elif len(rows) < 2:
        selection, best = {"method": "none", "why": "one held-out prompt cannot be split into halves", "chosen": None}, None
    else:
        selection, best = _cross_fit(sides, base_side, tuned, seed)
    report = {
        "run": run_dir.name,
        "split": split or cfg.data.test_split or f"held-out {cfg.data.test_fraction:.0%}",
        "n_prompts": len(rows),
        "seen_in_training": seen_in_training(cfg, run_dir, rows),
        "decoding": {"mode": decoding, "greedy": decoding == GREEDY, "samples": samples, "temperature": temperature,
                     "top_p": top_p, "seed": seed if decoding == SAMPLED else None,
                     "max_new_tokens": {"base": base_budget, "tuned": max_new_tokens}},
        "statistics": {"confidence": stats.CONFIDENCE, "rates": "Wilson score interval",
                       "mean_reward": f"percentile bootstrap over prompts ({stats.RESAMPLES} resamples, seed {seed}); none "
                                      "when every prompt scored the same",
                       "paired": "wins/ties/losses on the same prompts; distinguishable when the exact sign test on wins vs "
                                 "losses gives p < 0.05, shown with the Clopper-Pearson interval of the share of wins among "
                                 "the prompts that differ (it excludes 50 % exactly then)",
                       "cut_off": f"a verdict on sides with more than {stats.MOSTLY_CUT_OFF:.0%} of answers cut off by the "
                                  f"token budget says so and names no better side"},
        "measured": {"answer_accuracy": answer_name is not None or "answer" in rows[0],
                     "format_rate": any(r.name in stats.FORMAT_REWARDS for r in rewards)},
        "base": summaries[BASE_SIDE],
        "tuned": summaries[tuned.name],
        "tuned_vs_base": stats.paired(base_side.totals, tuned.totals, seed),
        "verdict": _report_verdict(base_side, tuned, seed),
        "checkpoint": tuned.name,
        "checkpoints": [{"name": s.name, "step": s.step, "summary": summaries[s.name],
                         "tuned_vs_base": stats.paired(base_side.totals, s.totals, seed)} for s in sides],
        "selection": selection,
        "best": best,
        "skipped": skipped,
        "reward_weights": {r.name: r.weight for r in rewards},
        # A format warm-up trained the adapter before RLOO: the tuned side includes it, the base side has no adapter.
        "warmup": summary_line(read_record(run_dir)),
        # The reference beside each prompt: the run's answer column (data.answer_column, the Data tab's), where the rows
        # have it; else what else the rows hold (a column such as order_id), so an example is never shown without one.
        "answer_column": reference if reference in rows[0] else None,
        "per_prompt": [
            {"prompt": rows[i][cfg.data.prompt_column], "answer": reference_cell(rows[i], cfg.data.prompt_column, reference),
             "sides": {s.name: _prompt_record(s, i) for s in [base_side, *sides]}}
            for i in range(len(rows))
        ],
        "examples": [{"prompt": rows[i][cfg.data.prompt_column], "answer": reference_cell(rows[i], cfg.data.prompt_column, reference),
                      "base": base_side.texts[i][0], "tuned": tuned.texts[i][0]} for i in range(min(N_EXAMPLES, len(rows)))],
        "seconds": round(time.monotonic() - started, 1),
        "load_seconds": round(loaded - started, 1),
        "created_at": time.time(),
    }
    kept = runs.write_eval(run_dir, report)
    if kept is not None:
        report["previous"] = str(kept.relative_to(run_dir))
    progress(EvalDone(seconds=report["seconds"], file=str(run_dir / runs.EVAL_FILE)))
    return report


def _report_verdict(base: _Side, tuned: _Side, seed: int) -> dict:
    """tuned vs base in `stats.verdict`'s words, with each side's cut-off share and budget: what the CLI prints."""
    cut_off = {"tuned": _mean(tuned.truncated), "base": _mean(base.truncated)}
    found = stats.verdict(stats.paired(base.totals, tuned.totals, seed), cut_off=cut_off,
                          budgets={"tuned": tuned.budget, "base": base.budget})
    return {key: found[key] for key in ("kind", "limited", "line", "details", "suggested_budget")}


def _prompt_record(side: _Side, i: int) -> dict:
    """One prompt on one side: the completion with its rewards (greedy), or every sample's (sampled)."""
    record = {"completion": side.texts[i][0], "tokens": side.tokens[i][0], "total": side.totals[i], "truncated": side.truncated[i],
              "rewards": {name: v[i] for name, v in side.values.items()}}
    if len(side.texts[i]) > 1:
        record["samples"] = [{"completion": text, "tokens": side.tokens[i][k], "total": total,
                              "rewards": {name: vs[k] for name, vs in side.sample_values[i].items()}}
                             for k, (text, total) in enumerate(zip(side.texts[i], side.sample_totals[i]))]
    return record

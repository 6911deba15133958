"""The format warm-up: a few supervised LoRA steps on replies in the target format, before RLOO (docs/training.md).

RLOO learns only from prompt groups whose completions score differently. A base model that never writes the format
the rewards look for (an `<answer>…</answer>` it never writes unprompted) gives every group the same score: nothing to
learn, however long the run. The warm-up shows the format first: plain supervised fine-tuning of the run's own LoRA
adapter, on the loaded model, before `RLOOTrainer` is built, so RLOO starts from the warmed-up adapter (and with a KL
penalty TRL's reference is that adapter too). Evaluation's "base" is still the model without any adapter.

The pairs (`build_pairs`): each prompt as RLOO renders it (the run's chat template, system prompt and
`chat_template_kwargs`) and a target reply, from `warmup.source`:

* `answer_column`: the training rows' answer put into `warmup.template` (`<answer>{answer}</answer>`);
* `pinned`: the pinned examples expected to score above 0 (the app's pinned.json in the run folder, and the examples
  in the run's reward files' headers), their completion as the reply;
* `table`: the `warmup.examples` written by hand.

The loss is the mean cross-entropy of the reply's tokens (the prompt's tokens are masked out), with AdamW at a constant
learning rate and the gradient clipped at 1.0. Each step writes a metrics.jsonl row with `"phase": "warmup"` and its
keys under `warmup/` at `step` 0: the RLOO steps that follow start at 1, RLOO's readers never mistake a warm-up loss
for an RLOO one, and a resume (which sets aside rows after its checkpoint's step) keeps them.

Before and after, the model's greedy completions for a few held-back prompts (the first held-out prompts, else the
last training prompts, which the warm-up then does not train on) are scored: the share that has the template's format
(source answer_column) and the share that earns a reward above 0 with the run's rewards, each with its 95 % interval.
This is the warm-up's own check, not the difficulty scan — the record says so. The difficulty scan itself
(`scan.run_scan`: k completions sampled at the run's temperature, scored in a child by the run's rewards, bucketed by
the scan's one rule) also runs before and after, on SCAN_PROMPTS training prompts chosen evenly, with the loaded model
and its adapter (`engine.sampling.sample_with`); the record keeps each summary's shares (never solved, always solved,
mixed) and format counts, its folder under warmup/scans/. Those prompts are training prompts: with source
answer_column the warm-up trained on most of them, which the sentence says.

The record (warmup/warmup.json, and `warmup` in status.json for the page, the evaluation and the model card) marks the
warm-up finished; the adapter after it is saved in warmup/. A resume after a finished warm-up does not repeat it: from
an RLOO checkpoint the adapter already holds it, before the first checkpoint it is loaded from warmup/. A warm-up that
did not finish (the process ended inside it) runs again from the start, its earlier rows set aside.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

from .. import runs, stats
from ..config import ANSWER_SLOT, RunConfig
from ..data import answer_column
from ..errors import DataError, StudioError
from .warmup_record import RECORD_FILE, WARMUP_DIR, read_record, scan_words, summary_line  # noqa: F401 (read from here too)

PHASE = "warmup"               # metrics.jsonl's `phase` of the warm-up's rows
STATUS_KEY = "warmup"          # status.json's key for the warm-up (progress, then the record's summary)
CHECK_PROMPTS = 8              # held-back prompts scored before and after: a rough check, and said so with its n
SCAN_PROMPTS = 16              # training prompts the difficulty scan samples before and after: k completions each
PINNED_RUN_FILE = "pinned.json"  # the app's pinned examples, as the run started (ui/rewards_tab.py writes it)
MAX_GRAD_NORM = 1.0


def target_reply(template: str, answer) -> str:
    """The reply in the target format: `template` with the answer where {answer} stands.

    >>> target_reply("<answer>{answer}</answer>", 42)
    '<answer>42</answer>'
    """
    return template.replace(ANSWER_SLOT, str(answer).strip())


def format_pattern(template: str) -> re.Pattern | None:
    """What a completion in the template's format matches: the text around {answer} with anything between; None when
    the template has no text around the slot (then it names no format to check).

    >>> bool(format_pattern("<answer>{answer}</answer>").search("It is <answer> 7 </answer>."))
    True
    """
    if ANSWER_SLOT not in template:
        return None
    before, after = template.split(ANSWER_SLOT, 1)
    if not before.strip() and not after.strip():
        return None
    return re.compile(re.escape(before.strip()) + r"\s*(.+?)\s*" + re.escape(after.strip()), re.DOTALL)


def good_pins(table) -> list[tuple[str, str, dict]]:
    """The app's pinned examples (rows of prompt, completion, answer cell, min total, max total) that are expected to
    score above 0 — the "good" ones — as (prompt, completion, columns)."""
    out = []
    for row in table or []:
        if not isinstance(row, (list, tuple)) or len(row) < 4:
            continue
        prompt, completion, low = str(row[0] or "").strip(), str(row[1] or "").strip(), row[3]
        if prompt and completion and isinstance(low, (int, float)) and not isinstance(low, bool) and low > 0:
            answer = str(row[2]).strip() if row[2] not in (None, "") else None
            out.append((prompt, completion, {"answer": answer} if answer else {}))
    return out


def good_header_examples(examples) -> list[tuple[str, str, dict]]:
    """A reward file's pinned examples (library.EXAMPLE_KEYS) whose expected total's low end is above 0."""
    out = []
    for ex in examples or []:
        total = ex.get("total") if isinstance(ex, dict) else None
        if isinstance(total, list) and len(total) == 2 and isinstance(total[0], (int, float)) and total[0] > 0:
            out.append((str(ex["prompt"]), str(ex["completion"]), dict(ex.get("columns") or {})))
    return out


def pinned_examples(cfg: RunConfig, run_dir: Path) -> list[tuple[str, str, dict]]:
    """The good pinned examples the run has: the app's (pinned.json in the run folder), then its reward files'."""
    from ..errors import StudioError
    from ..rewards import library

    found: list[tuple[str, str, dict]] = []
    pinned = Path(run_dir) / PINNED_RUN_FILE
    if pinned.is_file():
        try:
            found += good_pins(json.loads(pinned.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass
    for path in dict.fromkeys(cfg.resolve_path(spec.file) for spec in cfg.rewards if spec.file):
        try:
            found += good_header_examples(library.read(path).examples)
        except (OSError, StudioError):  # plain reward code without a header: no pinned examples there
            continue
    return found


def check_rows(cfg: RunConfig, train_rows: list[dict], test_rows: list[dict] | None) -> tuple[list[dict], str]:
    """The prompts scored before and after the warm-up, and what they are, in words."""
    if test_rows:
        rows = test_rows[:CHECK_PROMPTS]
        return rows, f"the first {len(rows)} held-out prompts"
    rows = train_rows[-CHECK_PROMPTS:] if len(train_rows) > CHECK_PROMPTS else []
    return rows, f"the last {len(rows)} training prompts, held back from the warm-up"


def build_pairs(cfg: RunConfig, train_rows: list[dict], held_back: int = 0,
                pinned: list[tuple[str, str, dict]] = ()) -> list[dict]:
    """The warm-up's pairs: {"prompt": the prompt text as the data gives it, "row": its data row, "reply": the target}.

    `held_back`: how many training rows at the end the check keeps for itself (source answer_column leaves them out).
    Raises DataError, in config words, when the source gives no pair."""
    warm = cfg.warmup
    column = cfg.data.prompt_column
    if warm.source == "answer_column":
        answer = warm.answer_column or answer_column(cfg)  # unset: the data's answer column
        rows = train_rows[:len(train_rows) - held_back] if held_back else train_rows
        pairs = [{"prompt": row[column], "row": row, "reply": target_reply(warm.template, row[answer])}
                 for row in rows if row.get(answer) not in (None, "")]
        if not pairs:
            columns = sorted({c for row in train_rows for c in row})
            raise DataError(f"warmup.source answer_column: no training row has a value in column `{answer}`",
                            f"the warm-up's replies are that column's values put into warmup.template; the data's columns "
                            f"are {', '.join(columns)}",
                            "set warmup.answer_column to the column that holds the answers, or use source table with "
                            "replies written in warmup.examples")
        return pairs
    if warm.source == "pinned":
        pairs = [{"prompt": prompt, "row": {column: prompt, **columns}, "reply": reply} for prompt, reply, columns in pinned]
        if not pairs:
            raise DataError("warmup.source pinned: the run has no pinned example expected to score above 0",
                            "the warm-up trains on the good pinned examples' completions (a minimum total above 0)",
                            "pin a few examples with a good completion and a minimum total above 0 (e.g. 1), or use "
                            "source answer_column or table")
        return pairs
    return [{"prompt": ex["prompt"], "row": {column: ex["prompt"]}, "reply": ex["reply"]} for ex in warm.examples]


def encode_pairs(pairs: list[dict], cfg: RunConfig, tokenizer, end_id: int) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, reply ids) per pair: the prompt exactly as RLOO tokenises it (generate.prompt_token_ids), the reply's
    tokens and the end-of-generation id that ends a completion in training."""
    from ..data import build_prompt, use_chat_format
    from .generate import chat_template_kwargs, prompt_token_ids

    chat = use_chat_format(cfg.data, tokenizer)
    prompts = [build_prompt(p["prompt"], cfg.data, chat) for p in pairs]
    prompt_ids = prompt_token_ids(prompts, tokenizer, chat_template_kwargs(cfg))
    replies = [list(tokenizer(text=p["reply"], add_special_tokens=False)["input_ids"]) + [end_id] for p in pairs]
    budget = cfg.model.max_seq_length
    return [(ids[-max(1, budget - len(reply)):], reply[:budget - 1]) for ids, reply in zip(prompt_ids, replies)]


def batch_tensors(batch: list[tuple[list[int], list[int]]], pad_id: int, torch, device):
    """Right-padded input ids, attention mask and labels (-100 on the prompt's tokens and the padding)."""
    width = max(len(p) + len(r) for p, r in batch)
    ids, mask, labels = [], [], []
    for prompt, reply in batch:
        pad = width - len(prompt) - len(reply)
        ids.append(prompt + reply + [pad_id] * pad)
        mask.append([1] * (len(prompt) + len(reply)) + [0] * pad)
        labels.append([-100] * len(prompt) + reply + [-100] * pad)
    as_tensor = lambda rows: torch.tensor(rows, dtype=torch.long, device=device)  # noqa: E731
    return as_tensor(ids), as_tensor(mask), as_tensor(labels)


def sft_steps(model, encoded, steps: int, learning_rate: float, batch_size: int, seed: int, torch, pad_id: int,
              on_step=lambda step, loss, grad_norm: None, autocast_dtype=None) -> None:
    """`steps` AdamW steps of supervised fine-tuning on the model's trainable parameters, batches drawn in a seeded
    shuffled order (a new shuffle each pass over the pairs)."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=learning_rate, weight_decay=0.0)
    device = next(model.parameters()).device
    order: list[int] = []
    rng = random.Random(seed)
    model.train()
    for step in range(1, steps + 1):
        batch = []
        while len(batch) < min(batch_size, len(encoded)):
            if not order:
                order = list(range(len(encoded)))
                rng.shuffle(order)
            batch.append(encoded[order.pop()])
        input_ids, mask, labels = batch_tensors(batch, pad_id, torch, device)
        with torch.autocast(device_type=device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, MAX_GRAD_NORM))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        on_step(step, float(loss.detach()), grad_norm)
    optimizer.zero_grad(set_to_none=True)


def _scan(cfg: RunConfig, model, tokenizer, run_dir: Path, say) -> dict:
    """The difficulty scan (scan.run_scan) of SCAN_PROMPTS training prompts with the loaded model and its adapter: what
    the record keeps of its summary, its folder relative to the run folder."""
    from ..scan import read_scan, run_scan
    from .sampling import sample_with

    def sample(rows: list[dict], seed: int) -> dict:
        was_training = model.training
        try:
            return sample_with(model, tokenizer, cfg, rows, lambda message: None, seed)
        finally:
            model.train(was_training)

    folder = run_scan(cfg, sample, run_dir / WARMUP_DIR, limit=SCAN_PROMPTS, seed=int(cfg.rloo_value("seed")))
    summary, _ = read_scan(folder)
    say(f"[rloo-studio] format warm-up: difficulty scan of {summary['prompts']} prompts: "
        + ", ".join(f"{b} {100 * s:.0f} %" for b, s in summary["shares"].items()))
    return {"prompts": summary["prompts"], "k": summary["k"], "shares": summary["shares"], "formats": summary["formats"],
            "folder": str(folder.relative_to(run_dir))}


SOURCE_WORDS = {"answer_column": "the answer column in the template", "pinned": "the pinned examples",
                "table": "replies written by hand"}


def _set_aside_unfinished(run_dir: Path) -> int:
    """Move the rows of a warm-up that did not finish to metrics.superseded.jsonl (it runs again from the start)."""
    path = run_dir / runs.METRICS_FILE
    rows = runs.read_jsonl(path)
    old = [r for r in rows if r.get("phase") == PHASE]
    if old:
        runs.append_jsonl(path.with_name(path.stem + ".superseded.jsonl"), old)
        runs.write_text_atomic(path, "".join(runs.to_json_line(r) for r in rows if r.get("phase") != PHASE))
    return len(old)


def _check(model, tokenizer, cfg: RunConfig, rows: list[dict], rewards, wrap, pattern) -> dict:
    """The greedy completions of `rows`' prompts scored: format rate (with a template), share earning a reward > 0."""
    from ..data import to_trl_dataset, use_chat_format
    from ..rewards.scoring import weighted_totals
    from .evaluate import score_completions
    from .generate import generate_completions

    prompts = list(to_trl_dataset(rows, cfg.data, tokenizer)["prompt"])
    conversational = use_chat_format(cfg.data, tokenizer) or isinstance(prompts[0], list)
    was_training = model.training
    model.eval()
    try:
        out = generate_completions(model, tokenizer, prompts, max_new_tokens=int(cfg.rloo_value("max_completion_length")),
                                   do_sample=False, cfg=cfg)
    finally:
        model.train(was_training)
    values = score_completions(rewards, prompts, out.texts, out.completion_ids, rows, conversational, wrap=wrap)
    totals = weighted_totals([values[r.name] for r in rewards], [r.weight for r in rewards])
    result = {"reward_rate": stats.rate([1.0 if t is not None and t > 0 else 0.0 for t in totals if t is not None]),
              "mean_reward": stats.mean([t for t in totals if t is not None]), "examples": out.texts[:3]}
    if pattern is not None:
        result["format_rate"] = stats.rate([1.0 if pattern.search(t) else 0.0 for t in out.texts])
    return result


def run_warmup(cfg: RunConfig, loaded, rows, rewards, run_dir: Path, resumed_from_checkpoint: bool, say, wrap) -> dict | None:
    """The warm-up of one run, on `loaded.model`'s adapter, before the RLOO trainer is built (see the module docstring).
    Returns the record (None when the config asks for none)."""
    if not cfg.warmup.enabled or not loaded.lora:
        return None
    import torch

    from .generate import end_token_ids
    from .trainer_args import restore_trained_adapter

    run_dir = Path(run_dir)
    folder = run_dir / WARMUP_DIR
    record = read_record(run_dir)
    if record and record.get("finished"):
        if resumed_from_checkpoint:
            say(f"[rloo-studio] format warm-up: done before the stop ({record['steps']} steps); the checkpoint holds it")
        else:
            restore_trained_adapter(loaded.model, folder)
            say(f"[rloo-studio] format warm-up: done before the stop ({record['steps']} steps); its adapter loaded from "
                f"{WARMUP_DIR}/")
        runs.update_status(run_dir, **{STATUS_KEY: _status(record)})
        return record
    if resumed_from_checkpoint:  # switched on for a run that trained RLOO steps without one: too late for a warm-up
        say("[rloo-studio] format warm-up: skipped — this run already trained RLOO steps without one (a checkpoint's "
            "adapter replaces what a warm-up would train now); start a new run to warm up first")
        return None
    if _set_aside_unfinished(run_dir):
        say("[rloo-studio] format warm-up: the last one did not finish; it runs again from the start "
            f"(its rows are in {Path(runs.METRICS_FILE).stem}.superseded.jsonl)")

    warm = cfg.warmup
    held, held_words = check_rows(cfg, rows.train, rows.test)
    pairs = build_pairs(cfg, rows.train, held_back=0 if rows.test else len(held),
                        pinned=pinned_examples(cfg, run_dir) if warm.source == "pinned" else ())
    end_id = end_token_ids(loaded.model, loaded.tokenizer)[0]
    encoded = encode_pairs(pairs, cfg, loaded.tokenizer, end_id)
    pattern = format_pattern(warm.template) if warm.source == "answer_column" else None
    say(f"[rloo-studio] format warm-up: {warm.steps} supervised steps on {len(pairs)} pairs from "
        f"{SOURCE_WORDS[warm.source]} (batch {warm.batch_size}, learning rate {warm.learning_rate:g}), then RLOO")
    started = time.time()
    before = _check(loaded.model, loaded.tokenizer, cfg, held, rewards, wrap, pattern) if held else None
    scan: dict = {"what": "the difficulty scan (scan.run_scan) of training prompts chosen evenly, on the run's model "
                          "and adapter"}
    try:
        scan["before"] = _scan(cfg, loaded.model, loaded.tokenizer, run_dir, say)
    except StudioError as exc:  # a reward the scan cannot score (a judge unreachable): the warm-up goes on without it
        scan["error"] = exc.message().splitlines()[0]
        say(f"[rloo-studio] format warm-up: the difficulty scan before it failed: {scan['error']}")
    runs.update_status(run_dir, **{STATUS_KEY: {"step": 0, "steps": warm.steps, "finished": False}})

    def on_step(step: int, loss: float, grad_norm: float) -> None:
        runs.append_jsonl(run_dir / runs.METRICS_FILE, {"step": 0, "phase": PHASE, "time": time.time(), "warmup/step": step,
                                                        "warmup/loss": loss, "warmup/grad_norm": grad_norm,
                                                        "warmup/learning_rate": warm.learning_rate})
        runs.update_status(run_dir, **{STATUS_KEY: {"step": step, "steps": warm.steps, "finished": False}})
        say(f"[rloo-studio] format warm-up step {step}/{warm.steps}: loss {loss:.4f}")

    sixteen = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(loaded.dtype)
    device = next(loaded.model.parameters()).device
    sft_steps(loaded.model, encoded, warm.steps, warm.learning_rate, warm.batch_size, int(cfg.rloo_value("seed")), torch,
              loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else end_id, on_step,
              autocast_dtype=sixteen if device.type == "cuda" else None)
    after = _check(loaded.model, loaded.tokenizer, cfg, held, rewards, wrap, pattern) if held else None
    if "before" in scan:
        try:
            scan["after"] = _scan(cfg, loaded.model, loaded.tokenizer, run_dir, say)
        except StudioError as exc:
            scan["error"] = exc.message().splitlines()[0]
            say(f"[rloo-studio] format warm-up: the difficulty scan after it failed: {scan['error']}")
    folder.mkdir(parents=True, exist_ok=True)
    loaded.model.save_pretrained(str(folder))
    record = {"finished": True, "steps": warm.steps, "source": warm.source, "source_words": SOURCE_WORDS[warm.source],
              "pairs": len(pairs), "learning_rate": warm.learning_rate, "batch_size": warm.batch_size,
              "template": warm.template if warm.source == "answer_column" else None,
              "seconds": round(time.time() - started, 1),
              "check": {"what": "the warm-up's own check (not the difficulty scan): greedy completions of held-back "
                                "prompts, scored by the run's rewards" + (" and the template's format" if pattern else ""),
                        "prompts_are": held_words, "n": len(held), "before": before, "after": after},
              "scan": scan}
    runs.write_json_atomic(folder / RECORD_FILE, record)
    runs.update_status(run_dir, **{STATUS_KEY: _status(record)})
    say(f"[rloo-studio] {summary_line(record)}")
    return record


def _status(record: dict) -> dict:
    # Its seconds too: the time trial says the warm-up apart from the loading it comes after.
    return {"step": record["steps"], "steps": record["steps"], "finished": True, "line": summary_line(record),
            "seconds": record.get("seconds")}

"""Scoring completions with a run's rewards before training: the table, the summaries, learnability, hack probes.

`score(request)` takes prompt groups (a prompt, its dataset row, k completions), the reward specs
and optional user source (and, for hand-written text, pinned examples and pasted completions, the data's `prompt_format` and
`system_prompt`, to shape it as training does), and returns what the reward preview shows: per completion every
function's reward, the weighted total (clamped to the run's `reward_clip_range`, as training clamps it), the
leave-one-out baseline and advantage; per function the mean, std (the sample std, as TRL logs it), min, max, how
many `None` and the errors; the share of prompt groups whose completions all got the same total (no learning signal); and which functions score degenerate completions
(empty, only the tags, the prompt echoed, ...) as well as real ones.

The person's reward code runs in a child process, never in the app's: this module is also that child's program
(`python -m rloo_studio.rewards.preview`: one request on stdin, its answer as the last stdout line, a CALLING NAME /
RETURNED pair on stderr around each reward call) and sets the child's own memory limit on Linux
(PREVIEW_MEMORY_LIMIT_GIB). The app's side of it (starting it, its time limits, the children kept waiting) is
`workers.scorer`; everything here is pure scoring but that entry point. Return
values get exactly training's check (`runtime.check_reward_values`), so the verdicts and messages match. Functions are called exactly as TRL 1.15 calls them, with the keyword arguments `data.reward_kwargs` builds: `prompts`,
`completions` (plain text or `[{"role": "assistant", "content": ...}]` for chat prompts),
`completion_ids` (the sampled ids, end token included, when the group brings them; see
`written_completion_ids` for text), `trainer_state`, and every data column by name (`data.reward_columns`: the
request's `columns`, the data's, and the prompt column, `prompt_column`, holding the prompt as written).

Over 500 lines: the table, the summaries, the probes and the judges' agreement are one result, built from one
request.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..config import RewardSpec
from ..data import build_prompt, is_hub_source, load_rows, reward_kwargs, use_chat_format
from ..errors import StudioError
from ..model_files import missing_tokenizer_error
from ..paths import DEMO_MODEL_DIR
from ..protocol import ScoreRequest, ScoreResult, WrittenShape
from ..runs import REWARDS_FILE
from .asks import check_asks
from .runtime import prompt_display
from .builtin import NEEDS_PROMPT_OPENS_THINK, NEEDS_THINK_END_TOKEN_ID
from .thinking import prompt_opens_think
from .scoring import (advantage_caveat, all_equal_groups, clipped_totals, leave_one_out_advantages, none_counted_as_zero,
                      weighted_totals)

# Memory the scoring child may take for data (Linux RLIMIT_DATA). Generous: the child's own imports
# (transformers and torch for the tokenizer) take about 1 GiB, and a reward model of ~3B parameters in
# fp32 fits besides. It is there so a reward that allocates without bound fails inside the child with a
# MemoryError naming the function, instead of swapping the machine or waking the kernel's OOM killer.
# RLIMIT_DATA rather than RLIMIT_AS: it counts memory the process can write to (heap, anonymous mmaps),
# not address space merely reserved — torch and the CUDA driver reserve tens of GiB they never use, which
# RLIMIT_AS would refuse. Capped at MEMORY_LIMIT_RAM_SHARE of the machine's RAM on smaller machines.
# Set RLOO_STUDIO_PREVIEW_MEMORY_GIB to change it (0: no limit).
PREVIEW_MEMORY_LIMIT_GIB = 16
MEMORY_LIMIT_RAM_SHARE = 0.75
MEMORY_LIMIT_ENV = "RLOO_STUDIO_PREVIEW_MEMORY_GIB"
PROBE_KINDS = ("empty", "whitespace", "only the tags", "answer repeated", "rambling", "prompt echoed")
LEARNABILITY_WARN = 0.5  # above this share of no-signal groups, most of each step teaches nothing
_MEMORY_LIMIT_GIB: float | None = None  # set in the scoring child by _main(); for the MemoryError message


@dataclass
class TrainerStateStub:
    """What reward functions may read from `trainer_state` outside training: the preview (training has not started)
    and the evaluation, which scores every side with this same stand-in so a reward reading the step scores them alike."""
    global_step: int = 0
    epoch: float = 0.0
    max_steps: int = 0
    log_history: list = field(default_factory=list)


def written_completion_ids(text: str, tokenizer) -> list[int]:
    """`completion_ids` for a completion given as text (pasted, pinned, a probe): its tokens and the tokenizer's end
    token, because a completion someone wrote counts as finished, and TRL's ids of a finished completion end with
    the end token. Without a tokenizer: one id per character, a stand-in."""
    if tokenizer is None:
        return [ord(ch) for ch in text]
    ids = tokenizer(text, add_special_tokens=False).input_ids
    return ids + ([tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [])


def _as_completion(text: str, conversational: bool):
    return [{"role": "assistant", "content": text}] if conversational else text


def probe_completions(prompt_text: str, answer: str | None) -> dict[str, str]:
    """Degenerate completions a sound reward should not score well."""
    answer = (answer or "42").strip()
    return {
        "empty": "",
        "whitespace": "   \n\t  ",
        "only the tags": "<think></think>",
        "answer repeated": " ".join([answer] * 40),
        "rambling": ("Let me think about this very carefully. " * 60).strip(),
        "prompt echoed": prompt_text,
    }


def group_probes(group: dict) -> dict[str, str]:
    """The probe completions for one prompt group: built from its prompt and its answer column, if any."""
    answer = next((str(v) for c, v in (group.get("row") or {}).items() if c in ("answer", "solution", "target")), None)
    return probe_completions(_prompt_text(group["prompt"]), answer)


def tokenizer_source(model: str, base_dir: str | Path = ".") -> str:
    """Where the scoring child loads the tokenizer from (completion_ids, the </think> token): without importing the engine."""
    if model == "demo":
        return str(DEMO_MODEL_DIR)
    for candidate in (Path(model).expanduser(), Path(base_dir) / model):
        if candidate.is_dir():
            return str(candidate.resolve())
    return model  # a hub id: the child loads it from the local cache (or the hub when online)


def _call(fn, kwargs: dict):
    # The parent times each call from CALLING to RETURNED (workers.scorer): imports and loading do not count.
    print(f"CALLING {getattr(fn, '__name__', 'reward')}", file=sys.stderr, flush=True)
    try:
        result = fn(**kwargs)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return result
    finally:
        print("RETURNED", file=sys.stderr, flush=True)


def _check_values(name: str, values: Any, n: int) -> list[float | None]:
    """Training's own check (runtime.check_reward_values): the preview gives the same verdict and message."""
    from .runtime import check_reward_values

    return check_reward_values(values, name, n)


def _summary(values: list[float | None], errors: list[str]) -> dict:
    scored = [v for v in values if v is not None]
    return {
        "mean": statistics.fmean(scored) if scored else None,
        # The sample std (n - 1), as TRL logs rewards/<name>/std: the preview and the training curves give one number.
        "std": statistics.stdev(scored) if len(scored) > 1 else (0.0 if scored else None),
        "min": min(scored) if scored else None, "max": max(scored) if scored else None,
        "none": sum(1 for v in values if v is None), "count": len(values), "errors": errors,
    }


def _error_detail(exc: BaseException, name: str, filename: str | None, completion: str) -> dict:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if filename and f.filename == filename]
    lines = [f"{Path(f.filename).name}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in frames]
    from ..errors import RewardError

    # A wrong return value reads exactly as training reports it (what, why, what to do), on one line for the table.
    if isinstance(exc, RewardError):
        error = exc.message().replace("\n", " ")
    elif isinstance(exc, MemoryError):
        limit = f" (the preview lets reward code use up to {_MEMORY_LIMIT_GIB:.0f} GiB)" if _MEMORY_LIMIT_GIB else ""
        error = (f"MemoryError: reward function `{name}` ran out of memory{limit}{': ' + str(exc) if str(exc) else ''}. "
                 "Why: it tried to allocate more memory than this machine lets it have; in training it would take that "
                 "memory from the model, or be killed. What to do: score each completion with small, bounded data "
                 "structures (no huge buffers, no unbounded caches)")
    else:
        error = f"{type(exc).__name__}: {exc}"
    # `in_code`: the function is the person's own code, whose lines a traceback would name (not a builtin or a judge).
    return {"function": name, "error": error, "lines": lines, "completion": completion[:300], "in_code": filename is not None}


# In a standby scoring child started with a tokenizer (`workers.scorer.start_scorer(tokenizer=...)`): that tokenizer,
# loaded while the child waited for its request.
_preloaded: dict = {}
PRELOAD_ARG = "--preload-tokenizer"


def _load_tokenizer(source: str):
    missing = missing_tokenizer_error(source)
    if missing is not None:
        raise missing
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source)


class _TokenizerOnDemand:
    """The request's tokenizer, loaded the first time something needs it (text without token ids, a
    builtin without its `</think>` id): sampled previews bring both, and importing transformers for
    nothing costs seconds on every click. `loaded` says when it was loaded: "before the request" (a
    standby child's), "on request", or None (nothing needed it)."""

    def __init__(self, source: str | None):
        self.source = source
        self._tokenizer = None
        self.loaded: str | None = None

    def get(self):
        if self._tokenizer is None and self.source:
            if self.source in _preloaded:
                self._tokenizer, self.loaded = _preloaded[self.source], "before the request"
            else:
                self._tokenizer, self.loaded = _load_tokenizer(self.source), "on request"
        return self._tokenizer


def run_max_steps(cfg) -> int:
    """The training steps `trainer_state.max_steps` will hold for `cfg` (a schedule reward divides by it). A run by
    epochs counts them over its training rows, read here for a local file or the demo; a hub dataset is not read in
    the app for its row count: 0 (not known)."""
    steps = cfg.trained_steps(None)
    if steps or is_hub_source(cfg.data.source, cfg.base_dir):
        return steps or 0
    try:
        train_rows = len(load_rows(cfg.data, cfg.base_dir, seed=int(cfg.rloo_value("seed"))).train)
    except StudioError:  # the data's own problem is said where it is read for sampling or training
        return 0
    return cfg.trained_steps(train_rows) or 0


def scoring_request(cfg, sampled: dict, source: str | None = None) -> ScoreRequest:
    """The request `score` takes for completions of a run's config: `sampled` is what
    `engine.sampling.sample_groups` returns (groups, conversational, tokenizer, think_end_token_id; a
    `num_generations` there wins over the config's), the sampled road's request (written text: `written_request`),
    `source` the editor's reward code, if any. The run's β, normalisation and chat-template options
    come along, so the preview says what training will add to these advantages."""
    from . import reward_specs

    return ScoreRequest(
        groups=sampled["groups"], num_generations=int(sampled.get("num_generations") or cfg.rloo_value("num_generations")),
        conversational=bool(sampled.get("conversational")), tokenizer=sampled.get("tokenizer"),
        think_end_token_id=sampled.get("think_end_token_id"), prompt_opens_think=sampled.get("prompt_opens_think"),
        prompt_column=cfg.data.prompt_column, rewards=[dict(s.__dict__) for s in reward_specs(cfg)], base_dir=str(cfg.base_dir),
        source=source, chat_template_kwargs=cfg.chat_template_kwargs(), beta=cfg.rloo_value("beta"),
        normalize_advantages=cfg.rloo_value("normalize_advantages"), reward_clip_range=cfg.rloo_value("reward_clip_range"),
        system_prompt=cfg.data.system_prompt, max_steps=run_max_steps(cfg),  # (system prompt: the prompt <-> reward check)
        mask_truncated_completions=bool(cfg.rloo_value("mask_truncated_completions")))


def written_request(cfg, groups: list, source: str | None, columns: Sequence[str] = (), num_generations: int = 1) -> ScoreRequest:
    """The request for hand-written prompts and completions, shaped as `cfg`'s training shapes its data (chat or plain,
    its system prompt, its tokenizer's ids): the written road's `scoring_request`, for the pinned examples (one
    completion a group) and pasted completions (`num_generations` of them answering one prompt). `columns`: the data's
    columns, which reach the rewards by name as in training."""
    from . import reward_specs

    request = ScoreRequest(
        groups=groups, num_generations=num_generations, rewards=[dict(s.__dict__) for s in reward_specs(cfg)],
        base_dir=str(cfg.base_dir), source=source, columns=list(columns), prompt_column=cfg.data.prompt_column,
        written=WrittenShape(prompt_format=cfg.data.prompt_format, system_prompt=cfg.data.system_prompt),
        chat_template_kwargs=cfg.chat_template_kwargs(), probes=False,
        tokenizer=tokenizer_source(cfg.model.name_or_path, cfg.base_dir), max_steps=run_max_steps(cfg),
        # The total training goes on with, clamped to the run's range: a pinned example's expected range holds it.
        reward_clip_range=cfg.rloo_value("reward_clip_range"))
    if num_generations < 2:  # each pinned example is judged alone, against its own expected range
        return request
    # Completions compared with each other, as a sampled group is: what training adds to the advantages, and the hack
    # probes.
    return replace(request, beta=cfg.rloo_value("beta"), normalize_advantages=cfg.rloo_value("normalize_advantages"),
                   probes=True)


@contextmanager
def editor_code_folder(source: str) -> Iterator[str]:
    """A temporary folder holding the editor's code as REWARDS_FILE, where the specs' `file: rewards.py` finds it
    (the run copies the same text); it goes when the block ends, as previews come one after another."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rloo-preview-") as folder:
        (Path(folder) / REWARDS_FILE).write_text(source, encoding="utf-8")
        yield folder


def score(request: ScoreRequest | dict) -> dict:
    """Score in this process (the child calls this): a ScoreResult's dict. See the module docstring."""
    request = ScoreRequest.of(request)
    if request.source is None:
        return _score(request).to_dict()
    with editor_code_folder(request.source) as folder:
        return _score(replace(request, base_dir=folder)).to_dict()


def _score(request: ScoreRequest) -> ScoreResult:
    from . import build_rewards
    from .judge import PROBE_PROMPTS, judge_checks

    groups = request.groups
    k = int(request.num_generations)
    conversational = bool(request.conversational)
    base_dir = request.base_dir
    specs = [RewardSpec(**s) for s in request.rewards]
    prompt_column = request.prompt_column
    if prompt_column:  # the prompt column reaches rewards by its name too, as written (before any shaping)
        groups = [{**g, "row": {**(g.get("row") or {}), prompt_column: (g.get("row") or {}).get(prompt_column) or g["prompt"]}}
                  for g in groups]
    # The data's columns (the request names them; a group's row may lack some, as a data row may): every one is passed.
    columns = list(dict.fromkeys([*request.columns, *(c for g in groups for c in (g.get("row") or {}))]))
    tokenizer = _TokenizerOnDemand(request.tokenizer)
    if request.written is not None:
        # Hand-written prompts and completions (pinned examples): shaped as training shapes the data's, by the same
        # rule (chat messages when the run's tokenizer has a chat template, unless the data says otherwise), so that a
        # reward gets here what it gets in training.
        data = request.written
        conversational = use_chat_format(data, tokenizer.get())
        groups = [{**g, "prompt": build_prompt(g["prompt"], data, conversational)} for g in groups]
    think_id = request.think_end_token_id
    if isinstance(think_id, int):  # found by the sampler's tokenizer: the builtins that need it take it from here
        specs = [RewardSpec(**{**s.__dict__, "params": {"think_end_token_id": think_id, **s.params}})
                 if s.name in NEEDS_THINK_END_TOKEN_ID else s for s in specs]
    needs_tokenizer = any(s.name in NEEDS_THINK_END_TOKEN_ID and "think_end_token_id" not in s.params for s in specs)
    opened = request.prompt_opens_think  # found by the sampler; for written text, from the template here
    if opened is None and any(s.name in NEEDS_PROMPT_OPENS_THINK or s.judge is not None for s in specs):
        chats = [g["prompt"] for g in groups]
        opened = prompt_opens_think(chats, tokenizer.get() if chats and isinstance(chats[0], list) else None,
                                    request.chat_template_kwargs)
    rewards = build_rewards(specs, base_dir, tokenizer.get() if needs_tokenizer else None, columns,
                            chat_template_kwargs=request.chat_template_kwargs, prompt_opens_think=bool(opened))

    def batch(prompts: list, completions: list[str], rows: list[dict], ids: list | None = None) -> dict:
        return reward_kwargs(prompts, [_as_completion(c, conversational) for c in completions],
                             ids if ids is not None else [written_completion_ids(c, tokenizer.get()) for c in completions],
                             rows, columns, TrainerStateStub(max_steps=request.max_steps))

    prompts, completions, rows, ids, cut = [], [], [], [], []
    for g in groups:
        if len(g["completions"]) != k:
            raise ValueError(f"prompt {g['prompt']!r:.60} has {len(g['completions'])} completions, expected {k}")
        prompts += [g["prompt"]] * k
        completions += list(g["completions"])
        rows += [g.get("row") or {}] * k
        # Sampled completions bring the ids they were generated as (end token included, as TRL passes them).
        ids += g.get("completion_ids") or [written_completion_ids(c, tokenizer.get()) for c in g["completions"]]
        cut += g.get("cut_off") or [None] * k  # written text was never cut off: nothing to say

    per_function: dict[str, list[float | None]] = {}
    errors: dict[str, list[dict]] = {}
    reasons: dict[str, list[str]] = {}  # a judge's own words per completion (and why a score is None)
    kwargs = batch(prompts, completions, rows, ids)
    for r in rewards:
        try:
            per_function[r.name] = _check_values(r.name, _call(r.func, kwargs), len(completions))
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: reported, never raised
            # A judge that gave no usable score still said something: its words show why (taken before the calls below).
            said = _judge_words(r.func, len(completions))
            if said:
                reasons[r.name] = said
            # Find the completion it fails on by calling it one completion at a time. Hand-written examples (pinned
            # examples, pasted completions) are each a case of their own: one that makes the function raise leaves the
            # others' scores standing. Sampled completions stay one batch, as TRL calls it: it fails as a whole.
            written = request.written is not None
            failing, alone = None, [None] * len(completions)
            for i in range(len(completions)):
                try:
                    alone[i] = _check_values(r.name, _call(r.func, batch([prompts[i]], [completions[i]], [rows[i]], [ids[i]])), 1)[0]
                except BaseException:  # noqa: BLE001
                    failing = completions[i] if failing is None else failing
                    if not written:
                        break
            errors[r.name] = [_error_detail(exc, r.name, r.source_file, completions[0] if failing is None and completions
                                            else failing or "")]
            per_function[r.name] = alone if written else [None] * len(completions)
            continue
        said = _judge_words(r.func, len(completions))
        if said:
            reasons[r.name] = said

    names = [r.name for r in rewards]
    weights = [r.weight for r in rewards]
    raw = weighted_totals([per_function[n] for n in names], weights)
    totals = clipped_totals(raw, request.reward_clip_range)
    advantages = leave_one_out_advantages(totals, k) if k >= 2 else [0.0] * len(totals)
    table = []
    for i, text in enumerate(completions):
        group = i // k
        others = [t for j, t in enumerate(totals[group * k:group * k + k]) if j != i % k and t is not None]
        table.append({
            "group": group, "prompt": prompt_display(prompts[i]), "completion": text, "cut_off": cut[i],
            "rewards": {n: per_function[n][i] for n in names}, "reasons": {n: said[i] for n, said in reasons.items()},
            "total": totals[i],
            **({"unclipped": raw[i]} if raw[i] != totals[i] else {}),  # the weighted sum before reward_clip_range
            "baseline": statistics.fmean(others) if others and totals[i] is not None else None,
            "advantage": round(advantages[i], 12),  # 1 - (0.7+0.7)/2 should read 0, not 2e-16
        })
    flat = all_equal_groups(totals, k)
    # Prompts whose completions tie only once clipped: the clip range, not the rewards, took their signal away.
    clip_ties = sum(1 for tied, tied_raw in zip(flat, all_equal_groups(raw, k)) if tied and not tied_raw)
    return ScoreResult(
        functions={n: {**_summary(per_function[n], errors.get(n, [])), "weight": w} for n, w in zip(names, weights)},
        rows=table,
        learnability=_learnability(flat, k, unscored_functions(per_function, errors), all(t is None for t in totals),
                                   _one_value([t for t in totals if t is not None]),
                                   (clip_ties, request.reward_clip_range)),
        warnings=list(unscored_functions(per_function, errors).values()),
        # The request's `beta` and `normalize_advantages` are the run's: what training adds to these advantages.
        advantage_note=advantage_caveat(request.beta, request.normalize_advantages, request.reward_clip_range,
                                        sum(map(bool, cut)) if request.mask_truncated_completions else 0),
        probes=_probes(rewards, groups, batch, per_function, conversational) if request.probes else [],
        # The functions the probes could test: those whose real scores differ (a degenerate answer is compared with them).
        probed=[r.name for r in rewards if _varies(per_function[r.name])] if request.probes else [],
        agreement=agreement(per_function, [r.name for r in rewards if _is_judge(r.func)]),
        # The judge's own check (empty and read-back answers), on every check, pinned examples too (without the general
        # probes: on one prompt); bounded by the judge's time limit. A judge that failed is reported by its error instead.
        judge_checks=judge_checks([r for r in rewards if r.name not in errors], groups, PROBE_PROMPTS if request.probes else 1),
        tokenizer_loaded=tokenizer.loaded,
        # What each reward looks for, whether these prompts (system prompt included) ask for it, how many completions write it.
        asks=check_asks(specs, base_dir, request.system_prompt, [g["prompt"] for g in groups], completions),
    )


def _is_judge(fn) -> bool:
    return hasattr(fn, "last_verdicts")  # rewards.judge.JudgeReward keeps its verdicts; no other reward does


def _judge_words(fn, n: int) -> list[str] | None:
    """A judge's reply to each of the last call's n completions, with the reason when it gave no usable score."""
    verdicts = getattr(fn, "last_verdicts", None)
    if not verdicts or len(verdicts) != n:
        return None
    from .judge import REPLY_START

    def words(reply: str) -> str:  # the judge continued REPLY_START ("Score:"): shown with it, as the judge read it
        return reply if not reply or reply.lower().startswith(REPLY_START.lower()) else f"{REPLY_START} {reply}"

    return [f"(not sent to the judge) — {v.problem}" if v.problem and v.score is not None else
            (words(v.reply) or "(no reply)") + (f" — not scored: {v.problem}" if v.problem else "") for v in verdicts]


def pearson(xs: list[float], ys: list[float]) -> float | None:
    """Pearson's correlation of two equally long lists; None when either is constant (no correlation is defined)."""
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None


def agreement_sentence(pairs: list[dict]) -> str:
    """The agreement in words, one sentence: "judge `j` agrees with `numeric_answer`: r = 0.62 over 24 completions; ..."
    (each judge named before its own pairs, when there are several)."""
    by_judge: dict[str, list[str]] = {}
    for p in pairs:
        if p["r"] is None:
            said = f"with `{p['other']}` cannot be measured ({p['why']})"
        else:
            said = f"{'agrees' if p['r'] >= 0 else 'disagrees'} with `{p['other']}`: r = {p['r']:.2f} over {p['n']} completions"
        by_judge.setdefault(p["judge"], []).append(said)
    return ("; ".join(f"judge `{judge}` " + "; ".join(parts) for judge, parts in by_judge.items()) +
            " (Pearson's r: 1 = ranks the completions alike, 0 = unrelated, below 0 = the opposite).")


def agreement(per_function: dict[str, list[float | None]], judges: list[str]) -> list[dict]:
    """For each judge and each other function: Pearson's r over the completions both scored (not None), and n.

    r is None with `why` when it cannot be computed: fewer than 3 completions scored by both, or one of the two gives
    them all the same score."""
    found = []
    for judge in judges:
        for other, values in per_function.items():
            if other == judge:
                continue
            pairs = [(a, b) for a, b in zip(per_function[judge], values) if a is not None and b is not None]
            r, why = None, ""
            if len(pairs) < 3:
                why = f"only {len(pairs)} completion(s) scored by both"
            else:
                r = pearson([a for a, _ in pairs], [b for _, b in pairs])
                if r is None:
                    constant = judge if len({a for a, _ in pairs}) == 1 else other
                    why = f"`{constant}` gives all {len(pairs)} the same score"
            found.append({"judge": judge, "other": other, "r": r, "n": len(pairs), "why": why})
    return found


def _prompt_text(prompt) -> str:
    """The prompt's words alone, without roles (what the echo probe repeats); the table shows `prompt_display`'s."""
    if isinstance(prompt, list):
        return "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    return str(prompt)


def unscored_functions(per_function: dict[str, list], errors: dict[str, list]) -> dict[str, str]:
    """{function: what went wrong} for each function that scored no completion: it failed (a call that raises fails its
    whole batch, in training too) or returned None for every one."""
    found = {}
    for name, values in per_function.items():
        if errors.get(name):
            found[name] = (f"`{name}` failed, so it scored none of the {len(values)} completions (its error is below); in "
                           "training the run would stop at its first batch — fix the function, then preview again")
        elif values and all(v is None for v in values):
            found[name] = (f"`{name}` returned None for all {len(values)} completions: None means “cannot score this one”, so "
                           "it gives RLOO nothing to learn from — check what it expects of the completions and the columns "
                           "(the table shows what it received)")
    return found


def _one_value(totals: list[float], tol: float = 1e-9) -> float | None:
    """The one total every scored completion got, if they all got the same; else None."""
    return totals[0] if totals and max(totals) - min(totals) <= tol else None


def _learnability(flat: list[bool], k: int, unscored: dict[str, str] | None = None, scored_none: bool = False,
                  one_value: float | None = None, clipped: tuple[int, Any] = (0, None)) -> dict:
    """`clipped`: (how many prompts' completions tie only after clipping, the clip range)."""
    share = sum(flat) / len(flat) if flat else 0.0
    failed = ", ".join(f"`{n}`" for n in unscored or {})
    clip_ties, clip_range = clipped
    erased = (f"clipping the totals to [{float(clip_range[0]):g}, {float(clip_range[1]):g}] (reward_clip_range) made "
              "them equal: the rewards told the completions apart, the clip range erased the difference. Widen or "
              "remove the clip range.") if clip_ties else ""
    all_clipped = one_value is not None and len(flat) > 1 and clip_ties == len(flat)
    if scored_none:  # no total at all: "the same total reward" would be said of nothing
        verdict = f"Not known: no function scored any completion ({failed}); fix that and preview again."
    elif all_clipped:
        verdict = f"Every completion got the same total reward ({one_value:g}) because {erased}"
    elif one_value is not None and len(flat) > 1 and not clip_ties:
        # Not one prompt's tie but every completion's: more samples or a graded reward rarely help a model that never
        # writes what the rewards look for, so that is said first.
        verdict = (f"Every completion got the same total reward ({one_value:g}): your rewards never told two apart. First "
                   "check that this model can write what your rewards look for at all (the completions above show what "
                   "it writes: the kind of answer, the format); a model that never earns the reward learns nothing from "
                   "it. Only then: more completions per prompt, a higher temperature, or a graded reward (partial credit).")
    elif share == 0:
        verdict = "Every prompt's completions got different rewards: each one gives RLOO something to learn from."
    elif share <= LEARNABILITY_WARN:
        verdict = (f"{100 * share:.0f}% of the prompts gave all {k} completions the same total reward, so they teach nothing; "
                   "the rest carry the signal. Fine to train.")
    else:
        verdict = (f"{100 * share:.0f}% of the prompts gave all {k} completions the same total reward: most of each step teaches "
                   "nothing. Try more completions per prompt, a higher temperature, a graded reward instead of a 0/1 one "
                   "(partial credit), or prompts that are neither too easy nor too hard for this model.")
    if clip_ties and not all_clipped and not scored_none:
        verdict += f" {clip_ties} of these {len(flat)} prompts tie only because {erased}"
    if unscored and not scored_none:
        verdict = f"Without {failed}, which scored no completion: {verdict[0].lower()}{verdict[1:]}"
    return {"no_signal_share": share, "groups": len(flat), "no_signal_groups": sum(flat), "verdict": verdict}


def probes_line(result: dict, page: bool = False) -> str:
    """The hack probes' verdict when none was flagged: which functions they tested (a function whose real scores did
    not differ — all alike, None, or failed — has nothing a degenerate answer could be compared with), never a ✅ over a
    function they did not reach."""
    probed = result.get("probed")
    names = list(result.get("functions") or {})
    untested = [n for n in names if probed is not None and n not in probed]
    b = "**" if page else ""
    if probed is not None and not probed:
        return (f"{'ℹ️ ' if page else ''}{b}Hack probes:{b} not run — no function's scores differed among these completions "
                "(all alike, None or failed), so there was nothing to compare an empty, repeated or echoed answer with.")
    passed = "score empty, tag-only, repeated, rambling or echoed completions as well as the real ones"
    if untested:
        tested = ", ".join(f"`{n}`" for n in names if n not in untested)
        return (f"{'ℹ️ ' if page else ''}{b}Hack probes:{b} {', '.join(f'`{n}`' for n in untested)} not tested — "
                f"{'its' if len(untested) == 1 else 'their'} scores did not differ among these completions, so there was "
                f"nothing to compare a degenerate answer with (paste an empty or a repeated answer to see what "
                f"{'it gives' if len(untested) == 1 else 'they give'} it); {tested} {'does' if len(names) - len(untested) == 1 else 'do'} "
                f"not {passed}.")
    return f"{'✅ ' if page else ''}{b}Hack probes:{b} no function {passed.replace('score', 'scores', 1)}."


def none_as_zero_lines(result: dict, page: bool = False) -> list[str]:
    """A line for each function that returned None for completions another function scored: training counts its None
    as 0 there, which ranks them as if it had scored 0 (a judge whose reply had no verdict, say). Said with numbers,
    as a None reads like "left out"."""
    rows = result.get("rows") or []
    functions = result.get("functions") or {}
    zeroed = none_counted_as_zero({n: [r["rewards"].get(n) for r in rows] for n in functions
                                   if not functions[n].get("errors")})  # (one that raised stops training: said apart)
    head = "ℹ️ **None counted as 0:**" if page else "None counted as 0:"
    return [f"{head} `{name}` returned None for {count} of {len(rows)} completions that another function scored: in "
            f"the total, and in training, it adds 0 for {'it' if count == 1 else 'them'}, so "
            f"{'it ranks' if count == 1 else 'they rank'} as if `{name}` had scored 0 (a completion is left out only "
            "when every function returns None for it)." for name, count in zeroed.items()]


def cut_off_scores(result: dict) -> dict[str, tuple[float | None, float | None]]:
    """Each function's mean score of the completions cut off by the token budget, and of the finished ones (None where
    there are none, or none was scored): how the rewards treat what the budget cut short."""
    rows = result.get("rows") or []
    found = {}
    for name in result.get("functions") or {}:
        means = []
        for cut in (True, False):
            values = [r["rewards"][name] for r in rows if bool(r.get("cut_off")) == cut and r["rewards"].get(name) is not None]
            means.append(sum(values) / len(values) if values else None)
        found[name] = (means[0], means[1])
    return found


def cut_off_lines(result: dict) -> list[str]:
    """What the scores of the cut-off completions show, beside the finished ones': 'Their scores: `f` 0.00 (the
    finished ones: 1.00)', and a warning for a function that scores them as high or higher (it rewards being cut short,
    a length reward's trap). [] when none was cut off."""
    if not any(r.get("cut_off") for r in result.get("rows") or []):
        return []
    scores = cut_off_scores(result)
    said = [f"`{n}` {cut:.2f}" + (f" (the finished ones: {done:.2f})" if done is not None else "")
            for n, (cut, done) in scores.items() if cut is not None]
    lines = [f"Their scores: {', '.join(said)}."] if said else []
    functions = result.get("functions") or {}
    for n, (cut, done) in scores.items():
        varied = functions.get(n, {}).get("min") != functions.get(n, {}).get("max")
        if cut is not None and done is not None and varied and cut >= done:
            lines.append(f"⚠️ `{n}` scores the cut-off ones as high as the finished ones or higher: it rewards what the "
                         "token budget cut short, and training would push towards answers that never end.")
    return lines


def _varies(values) -> bool:
    """Whether a function's scores of the real completions differ (None left out): only then can a probe be compared."""
    real = [v for v in values if v is not None]
    return bool(real) and max(real) != min(real)


def _probes(rewards, groups, batch, per_function, conversational) -> list[dict]:
    """Functions that give a degenerate completion at least the median reward of the real completions."""
    findings = []
    for r in rewards:
        real = sorted(v for v in per_function[r.name] if v is not None)
        if not _varies(real):
            continue  # a constant reward is reported by the learnability check, not as a hack
        median = statistics.median(real)
        for g in groups[:3]:
            probes = group_probes(g)
            known = g.get("probe_completion_ids") or {}  # tokenised where the completions were sampled
            ids = [known[kind] for kind in probes] if all(kind in known for kind in probes) else None
            kwargs = batch([g["prompt"]] * len(probes), list(probes.values()), [g.get("row") or {}] * len(probes), ids)
            try:
                values = _check_values(r.name, _call(r.func, kwargs), len(probes))
            except BaseException:  # noqa: BLE001 - a reward that crashes on a probe is reported by the normal call
                continue
            for kind, value in zip(probes, values):
                if value is not None and value >= median and value > min(real):
                    findings.append({"function": r.name, "probe": kind, "reward": value, "median_real": median,
                                     "message": f"`{r.name}` gives the '{kind}' completion {value:g}, at or above the median "
                                                f"{median:g} of real completions: the model could learn to do that instead"})
            if any(f["function"] == r.name for f in findings):
                break
    unique: dict[tuple, dict] = {}
    for f in findings:
        unique.setdefault((f["function"], f["probe"]), f)
    return list(unique.values())


def preview_memory_limit_gib() -> float | None:
    """The scoring child's memory limit in GiB (None: no limit, or not on Linux). See PREVIEW_MEMORY_LIMIT_GIB."""
    import os

    if not sys.platform.startswith("linux"):
        return None  # RLIMIT_DATA counts mmap'd memory only on Linux (4.7+); elsewhere it would not hold
    try:
        limit = float(os.environ.get(MEMORY_LIMIT_ENV, PREVIEW_MEMORY_LIMIT_GIB))
    except ValueError:
        limit = float(PREVIEW_MEMORY_LIMIT_GIB)
    if limit <= 0:
        return None
    try:
        ram_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        limit = min(limit, MEMORY_LIMIT_RAM_SHARE * ram_gib)
    except (ValueError, OSError):
        pass
    return limit


def _limit_memory() -> float | None:
    """Apply the limit to this (child) process; returns it in GiB, or None when none applies."""
    limit = preview_memory_limit_gib()
    if limit is None:
        return None
    if os.name == "posix":
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        wanted = int(limit * 2**30)
        if hard != resource.RLIM_INFINITY:
            wanted = min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))
        except (ValueError, OSError):
            return None
        return wanted / 2**30
    return None  # Windows has no per-process data limit without a job object: the time limit still applies


def _main() -> None:
    global _MEMORY_LIMIT_GIB
    _MEMORY_LIMIT_GIB = _limit_memory()  # before the request is read and any reward code is imported
    if len(sys.argv) > 2 and sys.argv[1] == PRELOAD_ARG:
        try:
            _preloaded[sys.argv[2]] = _load_tokenizer(sys.argv[2])
        except Exception:  # noqa: BLE001 - the request loads it again and reports what is wrong in its own words
            pass
    text = sys.stdin.read()
    if not text.strip():
        return  # the parent went away before sending a request (a standby child of an app that quit)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # prints in reward code must not corrupt the answer
    try:
        result = score(ScoreRequest.from_dict(json.loads(text)))
    except StudioError as exc:
        result = ScoreResult.failed(exc.message()).to_dict()
    except BaseException as exc:  # noqa: BLE001
        result = ScoreResult.failed(f"{type(exc).__name__}: {exc}").to_dict()
    finally:
        sys.stdout = real_stdout
    print(json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    _main()

"""Rewards: the builtin library, user reward code, and turning a config's reward list into callables.

`build_rewards` is the single entry point the training worker and the reward preview use:
it resolves every `RewardSpec` — builtin name with params, a function from a user file, a
reward model or an LLM judge — into a named callable in TRL's contract plus its weight. `reward_specs` gives a config's
specs as they are built: a reward that compares with an answer and names no column reads the data's
(`data.answer_column`). `check_reward_specs` reports every problem with those specs without loading a model, for the
pre-flight check. This package never imports torch at module level.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from .. import sandbox
from ..config import RewardSpec, did_you_mean
from ..errors import RewardError, StudioError
from .builtin import BUILTIN_REWARDS, NEEDS_PROMPT_OPENS_THINK, NEEDS_THINK_END_TOKEN_ID, describe_builtin, no_reference
from .user import load_reward_file

if TYPE_CHECKING:
    from .boxed import RewardBox

THINK_END_TOKEN = "</think>"


@dataclass
class LoadedReward:
    func: Callable            # TRL-contract callable; its __name__ is what TRL logs
    weight: float
    name: str
    source_file: str | None   # the user's file, for error messages in its own line numbering
    timeout_s: float | None = None  # the training-time limit of one call (RewardSpec.timeout_s)
    box: "RewardBox | None" = None  # the sandboxed child that runs `func`'s code (rewards/boxed.py), if any


def think_end_token_id(tokenizer) -> int | None:
    """The id of `</think>` when the tokenizer has it as a single token, else None."""
    if tokenizer is None:
        return None
    ids = tokenizer.convert_tokens_to_ids(THINK_END_TOKEN)
    unk = getattr(tokenizer, "unk_token_id", None)
    if isinstance(ids, int) and ids >= 0 and ids != unk:
        return ids
    encoded = tokenizer.encode(THINK_END_TOKEN, add_special_tokens=False)
    return encoded[0] if len(encoded) == 1 else None


def _builtin(spec: RewardSpec, tokenizer, check_only: bool, prompt_opens_think: bool = False) -> Callable:
    factory = BUILTIN_REWARDS[spec.name]
    params = dict(spec.params)
    if spec.name in NEEDS_PROMPT_OPENS_THINK:  # the run's chat template decides (rewards.thinking) unless params say
        params.setdefault("prompt_opens_think", prompt_opens_think)
    if spec.name in NEEDS_THINK_END_TOKEN_ID and "think_end_token_id" not in params:
        if check_only:
            params["think_end_token_id"] = 0  # stands in for the real id, to check the other params
        else:
            token_id = think_end_token_id(tokenizer)
            if token_id is None:
                raise RewardError(
                    f"reward `{spec.name}` needs `{THINK_END_TOKEN}` to be one token, but this model's tokenizer splits it",
                    "the thinking-aware rewards find the end of the reasoning by token id",
                    "use a reasoning model whose tokenizer has <think>/</think> tokens (e.g. Qwen3, or the demo model), or a text-based reward such as think_format",
                )
            params["think_end_token_id"] = token_id
    try:
        return factory(**params)
    except TypeError as exc:
        raise RewardError(f"reward `{spec.name}`: {exc}", describe_builtin(spec.name), "fix its `params:`") from None
    except ValueError as exc:
        raise RewardError(f"reward `{spec.name}`: {exc}", "", "fix its `params:`") from None


def compares_with_answer(spec: RewardSpec) -> bool:
    """A reward that reads the reference answer's column: a builtin with an `answer_column` parameter, or a judge (its
    {reference})."""
    if spec.judge is not None:
        return True
    return spec.name in BUILTIN_REWARDS and "answer_column" in inspect.signature(BUILTIN_REWARDS[spec.name]).parameters


def with_answer_column(spec: RewardSpec, answer_column: str | None) -> RewardSpec:
    """`spec` with the data's answer column (`data.answer_column`) as its `answer_column` when it compares with an answer
    and its own params name none (a reward's own param wins); else `spec` itself. The one rule of which column it reads."""
    answer = str(answer_column or "").strip()
    if not answer or not compares_with_answer(spec) or "answer_column" in spec.params:
        return spec
    return dataclasses.replace(spec, params={**spec.params, "answer_column": answer})


def reward_specs(cfg) -> list[RewardSpec]:
    """A RunConfig's reward entries as their rewards are built (training, evaluation, the preview, the scan): each with
    the data's answer column where `with_answer_column` gives it one. The config itself is left as written."""
    return [with_answer_column(spec, cfg.data.answer_column) for spec in cfg.rewards]


def build_rewards(specs: Sequence[RewardSpec], base_dir: str | Path = ".", tokenizer=None,
                  dataset_columns: Sequence[str] = (), check_only: bool = False,
                  chat_template_kwargs: dict | None = None, boxed_in: Sequence[str | Path] | None = None,
                  prompt_opens_think: bool = False) -> list[LoadedReward]:
    """Resolve reward specs into callables with weights; raises RewardError on the first problem.

    `prompt_opens_think`: the run's prompts end inside `<think>` (`thinking.prompt_opens_think`); the builtins that read
    the think tags read each completion after it.

    `chat_template_kwargs` (the run's `rloo.chat_template_kwargs`) reach reward models, which TRL renders with them.
    `boxed_in`: the folders reward code may write (the run's): a reward file's code is then loaded and called in one
    sandboxed child (rewards/boxed.py) where the system has a sandbox and its entry does not say `sandbox: false`.
    The training process passes it; a scoring child of the app is sandboxed as a whole and does not.
    """
    loaded: list[LoadedReward] = []
    box = None
    extra = tuple(dataset_columns)  # all of them: the loader keeps those that reach rewards (data.reward_columns)
    for spec in specs:
        if spec.name:
            if spec.name not in BUILTIN_REWARDS:
                raise RewardError(f"unknown builtin reward `{spec.name}`{did_you_mean(spec.name, BUILTIN_REWARDS)}",
                                  f"the builtins are: {', '.join(BUILTIN_REWARDS)}", "fix the name, or use `file:` for your own code")
            loaded.append(LoadedReward(_builtin(spec, tokenizer, check_only, prompt_opens_think), float(spec.weight), spec.name, None, spec.timeout_s))
        elif spec.file:
            path = Path(spec.file)
            if not path.is_absolute():
                path = Path(base_dir) / path
            names = [spec.function] if spec.function else None
            if boxed_in is not None and spec.sandbox and sandbox.status().available:
                if box is None:
                    from .boxed import RewardBox

                    box = RewardBox(boxed_in)
                for name in box.load(path, names, extra):
                    loaded.append(LoadedReward(box.function(name), float(spec.weight), name, str(path), spec.timeout_s, box))
                continue
            for name, fn in load_reward_file(path, names, extra).items():
                loaded.append(LoadedReward(fn, float(spec.weight), name, str(path), spec.timeout_s))
        elif spec.model:
            from .model_reward import reward_model_function  # imports torch/transformers: only when used

            fn = (lambda *a, **k: []) if check_only else reward_model_function(spec.model, base_dir,
                                                                                      chat_template_kwargs=chat_template_kwargs)
            name = "reward_model_" + Path(spec.model).name.replace("-", "_")
            fn.__name__ = fn.__qualname__ = name
            loaded.append(LoadedReward(fn, float(spec.weight), name, None, spec.timeout_s))
        elif spec.judge is not None:
            from .judge import judge_reward_function

            fn = judge_reward_function(spec, base_dir, dataset_columns, check_only=check_only,
                                       prompt_opens_think=prompt_opens_think)
            loaded.append(LoadedReward(fn, float(spec.weight), fn.__name__, None, spec.timeout_s))
    names = [r.name for r in loaded]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise RewardError(
            f"two rewards have the same name: {', '.join(duplicates)}",
            "training logs each reward under its function name, so their curves would be mixed up",
            "use each builtin once, or wrap one in a differently named function in your reward file",
        )
    return loaded


def check_reward_specs(specs: Sequence[RewardSpec], base_dir: str | Path = ".",
                       dataset_columns: Sequence[str] | None = None, rows: Sequence[dict] | None = None,
                       boxed_in: Sequence[str | Path] | None = None, answer_column: str | None = None) -> list[str]:
    """Every problem with the reward specs (names, params, files, functions, columns) — no model needed.
    With the training `rows`: an answer column that is empty in every row (every completion would score 0).
    `boxed_in`: load reward files in the sandbox, as `build_rewards` does (the training process's check).
    `answer_column`: the data's (`data.answer_column`), which the specs read as `with_answer_column` says; a problem with
    a column it gave names that setting."""
    problems: list[str] = []
    names: list[str] = []
    for i, written in enumerate(specs):
        spec = with_answer_column(written, answer_column)
        setting = "data.answer_column" if spec is not written else "params.answer_column"
        try:
            checked = build_rewards([spec], base_dir, None, dataset_columns or (), check_only=True, boxed_in=boxed_in)
            names.extend(r.name for r in checked)
            close_boxes(checked)
        except StudioError as exc:
            problems.append(f"rewards[{i}] ({spec.label()}): {exc.what}" + (f" — {exc.fix}" if exc.fix else ""))
            continue
        column = spec.params.get("answer_column") if spec.name or spec.judge is not None else None
        if column is None and spec.name in ("numeric_answer", "exact_match"):
            column = "answer"
        if column and dataset_columns is not None and column not in dataset_columns:
            problems.append(f"rewards[{i}] ({spec.label()}): the dataset has no column `{column}`{did_you_mean(column, dataset_columns)}"
                            f" (columns: {', '.join(dataset_columns)}) — set {setting}")
        elif column and rows and spec.name and all(no_reference(r.get(column)) for r in rows):
            problems.append(f"rewards[{i}] ({spec.label()}): the column `{column}` is empty in all {len(rows)} training rows, "
                            f"so {spec.label()} would give no completion a score and RLOO would learn nothing — fill in the "
                            f"answers, point {setting} at the column that holds them, or use a reward that needs no answer")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        problems.append(f"rewards: two rewards have the same name: {', '.join(duplicates)} — training logs each reward under "
                        "its name; use each builtin once, or wrap one in a differently named function in your reward file")
    return problems


def close_boxes(rewards: Sequence[LoadedReward]) -> None:
    """End the sandboxed children of `rewards` (each once)."""
    for box in {id(r.box): r.box for r in rewards if r.box is not None}.values():
        box.close()


def builtin_catalog() -> dict[str, str]:
    """{name: one-paragraph description} of every builtin reward."""
    return {name: describe_builtin(name) for name in BUILTIN_REWARDS}


# Example values for builtin parameters that have no default (the app shows them as a start).
_PARAM_EXAMPLES = {"regex_format": {"pattern": r"^<think>.*</think>.+$"}}


def builtin_default_params(name: str) -> dict:
    """The parameters a person can set on builtin `name`, with their defaults (or an example)."""
    import inspect

    params = dict(_PARAM_EXAMPLES.get(name, {}))
    for pname, p in inspect.signature(BUILTIN_REWARDS[name]).parameters.items():
        if pname in ("think_end_token_id", "prompt_opens_think") or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue  # filled in from the tokenizer
        if p.default is not inspect.Parameter.empty:
            params[pname] = list(p.default) if isinstance(p.default, tuple) else p.default
    return params


__all__ = ["LoadedReward", "builtin_default_params", "build_rewards", "check_reward_specs", "reward_specs", "close_boxes", "builtin_catalog", "think_end_token_id", "BUILTIN_REWARDS"]

"""The pre-flight check: every problem with a run config, found before any model is loaded.

It combines the config's own checks (`RunConfig.validate`, with the option names TRL's
RLOOConfig really accepts), the data (readable? has the prompt column?), the reward specs
(known builtins, valid params, files and functions that exist, columns they read) and the
model reference (folder or hub id). All problems are raised together as one ConfigError.
`prompt_warnings` adds what is worth a warning but no refusal: a format a reward looks for that neither the system
prompt nor the prompts ask for (rewards/asks.py).
"""

from __future__ import annotations

from typing import Mapping

from ..batching import BatchPlan, per_device_that_fills, prompts_needed
from ..config import RunConfig
from ..errors import ConfigError, StudioError
from ..rewards import check_reward_specs
from ..rewards.asks import check_asks, warnings_from
from ..data import Rows, load_rows
from .model import resolve_model_source


def preflight(cfg: RunConfig, rloo_fields: Mapping | None = None, num_processes: int = 1) -> Rows:
    """Check everything checkable without a model; return the loaded data rows for reuse."""
    problems = cfg.validate(rloo_fields, num_processes)
    try:
        resolve_model_source(cfg.model.name_or_path, cfg.base_dir)
    except StudioError as exc:
        problems.append(f"model.name_or_path: {exc.what} — {exc.fix}")
    rows = None
    try:
        rows = load_rows(cfg.data, cfg.base_dir, seed=int(cfg.rloo_value("seed")))
    except StudioError as exc:
        problems.append(f"data: {exc.what}" + (f" ({exc.why})" if exc.why else "") + (f" — {exc.fix}" if exc.fix else ""))
    # Reward files are loaded in the sandbox (where there is one): the check runs the file's top-level code.
    problems.extend(check_reward_specs(cfg.rewards, cfg.base_dir, rows.columns if rows else None, rows.train if rows else None,
                                       boxed_in=(), answer_column=cfg.data.answer_column))
    if rows is not None and not problems:
        problems.extend(too_few_prompts(len(rows.train), cfg.batch_plan(num_processes)))
    if problems:
        raise ConfigError(problems, "the run config")
    assert rows is not None
    return rows


def too_few_prompts(train_prompts: int, plan: BatchPlan) -> list[str]:
    """A problem when the training data cannot fill one generation batch (batching.prompts_needed), in config words."""
    needed = prompts_needed(plan)
    if train_prompts >= needed:
        return []
    fits = per_device_that_fills(train_prompts, plan)
    suggestion = (f"or lower rloo.per_device_train_batch_size to {fits} ({train_prompts} prompt"
                  f"{'s' if train_prompts != 1 else ''} × {plan.num_generations} completions)"
                  if fits and plan.steps_per_generation == 1
                  else "or lower rloo.per_device_train_batch_size" + (f" (at most {fits})" if fits else "")
                  + (f" or rloo.gradient_accumulation_steps ({plan.accumulation})" if plan.steps_per_generation > 1 else ""))
    return [f"data: the training data has {train_prompts} prompt{'s' if train_prompts != 1 else ''}, but one generation batch "
            f"needs {needed} (per_device_train_batch_size {plan.per_device} × {plan.processes} process"
            f"{'es' if plan.processes != 1 else ''} × steps_per_generation {plan.steps_per_generation} ÷ num_generations "
            f"{plan.num_generations}): TRL would finish at step 0 without training — add prompts (a held-out split takes "
            f"some too), {suggestion}"]


ASK_CHECK_ROWS = 200  # training rows whose prompts are read for the prompt <-> reward check: enough to find one that asks


def format_findings(cfg: RunConfig, rows: Rows, completions=None) -> list[dict]:
    """rewards.asks.check_asks for the run: its system prompt and first training prompts; given `completions`
    (the first generation batch, in training), also how many of them write each format."""
    prompts = [row.get(cfg.data.prompt_column) for row in rows.train[:ASK_CHECK_ROWS]]
    return check_asks(cfg.rewards, cfg.base_dir, cfg.data.system_prompt, prompts, completions)


def prompt_warnings(cfg: RunConfig, rows: Rows) -> list[str]:
    """Formats the rewards look for that neither data.system_prompt nor the first training prompts ask for. A check
    that cannot run says so and never stops the run: it only ever warns."""
    try:
        return warnings_from(format_findings(cfg, rows))
    except Exception as exc:  # noqa: BLE001
        return [f"the prompt <-> reward check could not run ({type(exc).__name__}: {exc}); skipped"]


def prompt_hints(cfg: RunConfig, rows: Rows) -> list[str]:
    """The same, as short sentences for a run stopped for no learning signal: what to add to the system prompt."""
    try:
        findings = format_findings(cfg, rows)
    except Exception:  # noqa: BLE001 - prompt_warnings has said it could not run
        return []
    return [f"`{f['reward']}` looks for {f['looks_for']}, which no prompt asks for: add to data.system_prompt "
            f"\"{f['suggestion']}\"" for f in findings if f["warning"]]

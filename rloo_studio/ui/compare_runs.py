"""Runs side by side: two to four runs' curves on one chart, the settings in which they differ, their evaluations.

Pure functions of run directories (their config.yaml, metrics.jsonl and eval.json, read through `runs`); the
Runs tab builds the widgets. A run that lacks a curve (KL is logged only with β > 0) is named, not silently left out.
Each evaluation says how it decoded (greedy or sampled) and with which token budget, since two evaluations that differ
there give different numbers for the same weights; its verdict against base is `stats.verdict`'s label (no "better" on
mostly cut-off answers), and answer accuracy reads "not scored" for a run whose rewards score no answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from .. import runs
from ..stats import decoding_text, fmt_interval, measured, summary_estimate, verdict
from .text import RLOO_FIELDS
from .text import label

MAX_RUNS = 4
REWARD_TOTAL, REWARD_PER_FUNCTION, LENGTH, KL = "Reward (total)", "Reward per function", "Completion length", "KL to the start model"
CURVES = (REWARD_TOTAL, REWARD_PER_FUNCTION, LENGTH, KL)
_METRIC = {REWARD_TOTAL: "reward", LENGTH: "completions/mean_length", KL: "kl"}
_FUNCTION_PREFIX, _FUNCTION_SUFFIX = "rewards/", "/mean"
EVAL_HEADERS = ["run", "evaluated", "mean reward [95 % interval] (n)", "answer accuracy", "base mean reward", "vs base",
                "decoding · token budget"]
NOT_SCORED = "not scored (no answer reward)"


def curve_frame(run_dirs: list[Path], curve: str) -> tuple[pd.DataFrame | None, list[str]]:
    """(long-format frame of step, value, series — one series per run, or per run and reward function —,
    the names of runs that logged nothing for this curve)."""
    rows, missing = [], []
    for run_dir in run_dirs:
        name = Path(run_dir).name
        found = False
        for m in runs.read_jsonl(Path(run_dir) / runs.METRICS_FILE):
            step = m.get("step")
            if not isinstance(step, (int, float)):
                continue
            if curve == REWARD_PER_FUNCTION:
                for key, value in m.items():
                    if key.startswith(_FUNCTION_PREFIX) and key.endswith(_FUNCTION_SUFFIX) and isinstance(value, (int, float)):
                        rows.append({"step": step, "value": value,
                                     "series": f"{name} · {key[len(_FUNCTION_PREFIX):-len(_FUNCTION_SUFFIX)]}"})
                        found = True
            elif isinstance(m.get(_METRIC[curve]), (int, float)):
                rows.append({"step": step, "value": m[_METRIC[curve]], "series": name})
                found = True
        if not found:
            missing.append(name)
    if not rows:
        return None, missing
    frame = pd.DataFrame(rows, columns=["step", "value", "series"]).astype({"step": "int64", "value": "float64", "series": "str"})
    return frame, missing


def _flat(section: Any, prefix: str = "") -> dict[str, Any]:
    """{"rloo.learning_rate": 1e-5, "rewards": "[...]", …}: nested mappings flattened, lists kept whole."""
    if not isinstance(section, dict):
        return {prefix: section}
    out: dict[str, Any] = {}
    for key, value in section.items():
        out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, (list, dict)):
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False).strip()
    return str(value)


def config_differences(run_dirs: list[Path]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows): each config setting whose value is not the same in every run, one column per run ("—" where a
    run's config leaves it out). The runs folder is left out: it is where the runs are, not how they trained."""
    flat = []
    for run_dir in run_dirs:
        try:
            flat.append(_flat(yaml.safe_load((Path(run_dir) / runs.CONFIG_FILE).read_text(encoding="utf-8")) or {}))
        except (OSError, yaml.YAMLError):
            flat.append({})
    keys = [k for k in dict.fromkeys(k for f in flat for k in f) if k != "output.runs_dir"]
    # Named as the page names them (“Learning rate”), not by their config keys; a key no widget shows stays a key.
    rows = [[label(key), *(_shown(f.get(key)) for f in flat)] for key in keys if len({_shown(f.get(key)) for f in flat}) > 1]
    return ["setting", *(Path(d).name for d in run_dirs)], rows


def eval_rows(run_dirs: list[Path]) -> list[list[str]]:
    """Each run's last evaluation (eval.json): what was evaluated, the tuned side's mean reward and accuracy with their
    intervals and n, the base's mean reward, the verdict against base, and how it decoded with which token budgets;
    "not evaluated" where there is none."""
    rows = []
    for run_dir in run_dirs:
        report = runs.read_eval(run_dir)
        if report is None:
            again = "evaluated by an earlier version: evaluate again" if runs.old_eval(run_dir) else "not evaluated"
            rows.append([Path(run_dir).name, f"{again} (Evaluate tab)", "-", "-", "-", "-", "-"])
            continue
        tuned, base = report["tuned"], report["base"]
        budgets = report["decoding"].get("max_new_tokens") or {}
        versus = verdict(report["tuned_vs_base"], cut_off={"tuned": tuned.get("truncation_rate"), "base": base.get("truncation_rate")})
        rows.append([Path(run_dir).name, str(report.get("checkpoint") or runs.FINAL),
                     fmt_interval(summary_estimate(tuned, "mean_reward")),
                     fmt_interval(summary_estimate(tuned, "answer_accuracy"), True) if measured(report)["answer_accuracy"] else NOT_SCORED,
                     fmt_interval(summary_estimate(base, "mean_reward")), versus["label"],
                     f"{decoding_text(report['decoding'])} · base {budgets.get('base')}, tuned {budgets.get('tuned')} tokens"])
    return rows


def missing_note(curve: str, missing: list[str]) -> str:
    """Why a run has no line on the chart, in the page's words."""
    if not missing:
        return ""
    why = f" (KL is logged only when “{RLOO_FIELDS['beta'][0]}” is above 0)" if curve == KL else " (no steps logged yet)"
    return f"No “{curve}” curve for {', '.join(f'`{m}`' for m in missing)}{why}."

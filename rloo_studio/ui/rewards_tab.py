"""The Rewards tab: builtin rewards with weights and parameters, and a code box for the person's own.

Turns its widgets into the `rewards` list of the RunConfig (`apply`) and back (`values_from`).
The code is checked in a child process (`rewards.check`): it is arbitrary Python, so the app's
own process never runs it. The code is kept as a draft on every change and copied into each
run as rewards.py, which the training worker loads unchanged.
"""

from __future__ import annotations

import json

import gradio as gr

from ..config import RunConfig
from ..jobs import USER_REWARDS_FILE
from ..rewards import BUILTIN_REWARDS, builtin_catalog, builtin_default_params
from ..rewards.check import check_source
from . import text

BUILTIN_HEADERS = ["use", "reward", "weight", "parameters (JSON)", "what it does"]
USER_HEADERS = ["use", "function", "weight"]


def _rows(table) -> list[list]:
    """Rows of a Dataframe value, whether it arrives as a pandas frame, a dict or a list."""
    if table is None:
        return []
    if hasattr(table, "values") and hasattr(table, "columns"):
        return table.values.tolist()
    if isinstance(table, dict):
        return table.get("data") or []
    return list(table)


def _truthy(value) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "✓")) or value == 1


def builtin_rows(cfg: RunConfig) -> list[list]:
    """One row per builtin: ticked with the config's weight and parameters when the config uses it."""
    catalog = builtin_catalog()
    used = {s.name: s for s in cfg.rewards if s.name}
    rows = []
    for name in BUILTIN_REWARDS:
        spec = used.get(name)
        params = {**builtin_default_params(name), **(spec.params if spec else {})}
        rows.append([spec is not None, name, spec.weight if spec else 1.0, json.dumps(params), catalog[name]])
    return rows


class RewardsTab:
    def __init__(self, code_draft: str):
        gr.Markdown(text.REWARDS_INTRO)
        self.builtins = gr.Dataframe(headers=BUILTIN_HEADERS, datatype=["bool", "str", "number", "str", "str"], label=text.BUILTIN_TABLE,
                                     interactive=True, static_columns=[1, 4], wrap=True, elem_id="builtin-rewards",
                                     column_widths=["6%", "14%", "8%", "32%", "40%"])
        self.code = gr.Code(code_draft, language="python", label=text.CODE, lines=14, elem_id="reward-code")
        with gr.Row():
            self.check = gr.Button(text.CHECK_CODE, elem_id="check-code")
        self.check_result = gr.Markdown(elem_id="code-check")
        self.user = gr.Dataframe(headers=USER_HEADERS, datatype=["bool", "str", "number"], label=text.USER_TABLE,
                                 interactive=True, static_columns=[1], elem_id="user-rewards", value=[])

    @property
    def inputs(self) -> list:
        return [self.builtins, self.code, self.user]

    @staticmethod
    def apply(cfg: dict, values: list) -> list[str]:
        builtins, code, user = values
        problems, rewards = [], []
        for row in _rows(builtins):
            if len(row) < 4 or not _truthy(row[0]):
                continue
            name, weight, params_text = str(row[1]), row[2], row[3]
            try:
                params = json.loads(params_text) if str(params_text or "").strip() else {}
                if not isinstance(params, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                problems.append(f"Rewards: the parameters of `{name}` are not a JSON object ({exc}); write e.g. {{\"min_tokens\": 3}}")
                continue
            defaults = builtin_default_params(name)
            # Keep only what differs from the defaults: the saved config stays short and readable.
            changed = {k: v for k, v in params.items() if defaults.get(k, object()) != v or k not in defaults}
            rewards.append({"name": name, "weight": _weight(weight, name, problems), "params": changed})
        for row in _rows(user):
            if len(row) >= 3 and _truthy(row[0]):
                rewards.append({"file": USER_REWARDS_FILE, "function": str(row[1]), "weight": _weight(row[2], str(row[1]), problems)})
        if not rewards:
            problems.append("Rewards: none chosen — tick at least one builtin reward or one of your functions")
        cfg["rewards"] = rewards
        return problems

    @staticmethod
    def values_from(cfg: RunConfig, code: str) -> list:
        user_rows = [[True, s.function, s.weight] for s in cfg.rewards if s.file and s.function]
        return [builtin_rows(cfg), code, user_rows]

    @staticmethod
    def check_code(code: str, user_table, columns: list[str] | None) -> tuple[str, list[list]]:
        """(message, refreshed table of functions): keeps the ticks and weights of functions still defined."""
        result = check_source(code or "", columns or ())
        previous = {str(r[1]): r for r in _rows(user_table) if len(r) >= 3}
        table = [[_truthy(previous[n][0]), n, previous[n][2]] if n in previous else [False, n, 1.0] for n in result["functions"]]
        if result["problems"]:
            message = "\n\n".join("⚠️ " + p.replace("\n", "  \n") for p in result["problems"])
        elif result["functions"]:
            message = (f"✅ {len(result['functions'])} function(s) found: " + ", ".join(f"`{n}`" for n in result["functions"]) +
                       ". Tick **use** to train with one.")
        else:
            message = "No functions yet."
        return message, table


def _weight(value, name: str, problems: list[str]) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        problems.append(f"Rewards: the weight of `{name}` is not a number ({value!r})")
        return 1.0

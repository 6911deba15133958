"""The page's form: the settings tabs' widgets as one object, and the one place they become a RunConfig.

`PageForm` is built once per page inside the Blocks. It holds the page's shared state — `base`
(the preset's keys that no widget shows), `watched` (the run directory the Train tab shows) and
`columns` (the data's columns from the last preview) — and the four settings tabs, whose inputs
it concatenates in one fixed order (the order of the `start_training` endpoint). Every handler
that needs the whole form gets `form.inputs` and turns them into a config with `config_from`.
The form's draft is saved on every change (`save_draft`) and is what a reload shows (`initial_form`): every field
exactly as it was, by each field's own key, not through a config (which cannot hold what only the page has).
The hardware probe (`HardwareCache`) is here because the form's estimate is for that machine.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
import threading
from pathlib import Path
from typing import Protocol

import gradio as gr
import yaml

from .. import runs
from ..machine import hardware
from ..config import RunConfig
from ..data import is_hub_source
from ..errors import ConfigError
from ..presets import Preset, get_preset, recommend
from ..rewards.lint import syntax_problem, undefined_names
from ..machine.vram import estimate_config
from . import text
from .derived import Derived
from .text import page_words
from .workspace import DRAFT_CONFIG, DRAFT_FORM, DRAFT_JUDGE, DRAFT_REWARDS, Workspace


class HardwareCache:
    """The hardware probe runs once, in the background, from the moment the app is built."""

    def __init__(self, enabled: bool = True, known: hardware.Hardware | None = None):
        self._result: hardware.Hardware | None = known or (None if enabled else hardware.Hardware(cpu_cores=os.cpu_count() or 1, error="detection disabled"))
        self._done = threading.Event()
        if enabled and known is None:
            threading.Thread(target=self._run, name="hardware-probe", daemon=True).start()
        else:
            self._done.set()

    def _run(self) -> None:
        self._result = hardware.detect()
        self._done.set()

    def get(self, timeout_s: float = hardware.PROBE_TIMEOUT_S) -> hardware.Hardware:
        self._done.wait(timeout_s)
        return self._result or hardware.Hardware(cpu_cores=os.cpu_count() or 1, error="still detecting")


def code_problems(cfg: dict, code: str | None) -> list[str]:
    """What the editor's lint shows, as a reason not to start: only when one of the person's functions is ticked."""
    if not any(spec.get("file") == runs.REWARDS_FILE for spec in cfg.get("rewards", [])):
        return []
    where = f"“{text.CODE}” (Rewards tab)"
    problem = syntax_problem(code or "")
    if problem:
        return [f"Rewards: {where} has a syntax error at line {problem['line']}, column {problem['column']}: {problem['message']}"]
    return [f"Rewards: {where}: `{m['name']}` is not defined (in {m['function']}) — a typo, or a missing import?"
            for m in undefined_names(code or "")]


def input_keys(components: list) -> list[str]:
    """A key per field that outlives the page it was saved from: its element id, else its label (the position is not:
    a field added to a tab moves every later one)."""
    keys: list[str] = []
    for at, c in enumerate(components):
        key = getattr(c, "elem_id", None) or getattr(c, "label", None) or f"#{at}"
        keys.append(key if key not in keys else f"{key}#{at}")
    return keys


def restorable(component, value) -> bool:
    """Whether a saved value can go back into `component`: a choice it still offers (unless it takes any value), a table
    with its columns."""
    if isinstance(component, (gr.Radio, gr.Dropdown)) and not getattr(component, "allow_custom_value", False):
        return value in [c[1] if isinstance(c, (tuple, list)) else c for c in component.choices or []]
    if isinstance(component, gr.Dataframe):
        width = len(component.headers or [])
        return isinstance(value, list) and all(isinstance(row, list) and len(row) == width for row in value)
    return True


@dataclass
class Loaded:
    """What the page loads with: the config (for its notes), where it comes from, the form's state and values, and what
    only the page holds (the preset menu's choice, the data's columns and training rows from the last preview)."""
    config: RunConfig
    origin: str
    state: dict
    values: list
    preset: str | None = None
    columns: list[str] = field(default_factory=list)
    data_rows: int | None = None
class SettingsTab(Protocol):
    """What the form needs of a settings tab (Model, Data, Rewards, Train): its widgets in order, their values from a
    config (`values_from`: the Rewards tab's also takes the editor's code and the judge draft) and the config from their
    values (`apply`, returning its problems). The form takes the tabs built by the page, so it imports none of them:
    they import the form."""
    inputs: list

    def values_from(self, cfg: RunConfig, *drafts) -> list: ...

    def apply(self, cfg: dict, values: list) -> list[str]: ...

    # Optional: `restored(component, current, saved)`, the value a reload puts back into one of its widgets, when a
    # saved value must be merged with what the page offers now (the Rewards tab's builtins table).


class PageForm:
    def __init__(self, runs_dir: Path, workspace: Workspace, hw: HardwareCache, presets: list[Preset], default_preset: str | None,
                 model_tab: SettingsTab, data_tab: SettingsTab, rewards_tab: SettingsTab, train_tab: SettingsTab):
        self.runs_dir, self.workspace, self.hw = runs_dir, workspace, hw
        self.presets, self.default_preset = presets, default_preset
        self.model_tab, self.data_tab, self.rewards_tab, self.train_tab = model_tab, data_tab, rewards_tab, train_tab
        self.base = gr.State({})      # {"config": dict, "base_dir": str}: the preset's keys no widget shows
        self.watched = gr.State(None)  # the run directory the Train tab shows
        self.columns = gr.State([])    # the data's columns from the last preview
        self.data_rows = gr.State(None)  # the training rows the last preview counted (for the epochs warning)
        self.derived = Derived()  # the form's one change event (lines and drafts derived from the fields): see derived.py
        self.tabs = (model_tab, data_tab, rewards_tab, train_tab)
        self.inputs = [c for tab in self.tabs for c in tab.inputs]
        self.sizes = [len(tab.inputs) for tab in self.tabs]
        self.code_index = self.inputs.index(rewards_tab.code)
        self.keys = input_keys(self.inputs)

    # ---- config <-> widgets ------------------------------------------------------------------------

    def code_draft(self) -> str:
        return self.workspace.read(DRAFT_REWARDS) or text.CODE_TEMPLATE

    def values_from(self, cfg: RunConfig) -> list:
        code = self.code_draft()  # the editor keeps its code across presets and reloads, and so does the judge section
        return (self.model_tab.values_from(cfg) + self.data_tab.values_from(cfg)
                + self.rewards_tab.values_from(cfg, code, self.workspace.read(DRAFT_JUDGE)) + self.train_tab.values_from(cfg))

    def split(self, values: list) -> list[list]:
        """The flat input values, one list per settings tab (model, data, rewards, train)."""
        parts, at = [], 0
        for n in self.sizes:
            parts.append(list(values[at:at + n]))
            at += n
        return parts

    def config_from(self, state: dict, values: list) -> tuple[RunConfig | None, list[str]]:
        """The one place the form becomes a RunConfig; returns every problem found."""
        cfg = copy.deepcopy(state.get("config") or {})
        parts = self.split(values)
        problems: list[str] = []
        problems += self.model_tab.apply(cfg, parts[0])
        problems += self.rewards_tab.apply(cfg, parts[2])
        problems += self.data_tab.apply(cfg, parts[1])  # after the rewards: it sets their answer column
        problems += self.train_tab.apply(cfg, parts[3])
        problems += code_problems(cfg, values[self.code_index])
        cfg.setdefault("output", {})["runs_dir"] = str(self.runs_dir)
        try:
            config = RunConfig.from_dict(cfg, base_dir=state.get("base_dir") or os.getcwd(), source="the form")
        except ConfigError as exc:
            return None, problems + exc.problems
        return config, problems + config.validate()

    @staticmethod
    def problems_markdown(problems: list[str]) -> str:
        # Each once: a tab and the config's own check can find the same problem (no reward chosen).
        said = dict.fromkeys(page_words(p) for p in problems)
        return "**Please fix before starting:**\n" + "\n".join(f"- {p}" for p in said) if problems else ""

    @staticmethod
    def state_of(cfg: RunConfig) -> dict:
        return {"config": cfg.to_dict(), "base_dir": cfg.base_dir}

    def initial_config(self) -> tuple[RunConfig, str, str | None]:
        """(config, where it comes from, the preset it is) from the config draft of the last session if there is one,
        else the preset that fits this machine."""
        draft = self.workspace.read(DRAFT_CONFIG)
        if draft:
            try:
                return (RunConfig.from_dict(yaml.safe_load(draft) or {}, base_dir=os.getcwd(), source="the saved draft"),
                        "your last settings", None)
            except (ConfigError, yaml.YAMLError):
                pass  # an unreadable draft must not lock the person out: fall back to the preset
        gpus = self.hw.get().gpus
        suggested = recommend(self.presets, gpus[0].total_gb if gpus else None)
        if suggested:
            why = f" — the largest preset that fits your {gpus[0].total_gb:.0f} GB GPU" if gpus else ""
            cfg, origin, name = suggested.load(), f"the {suggested.name} preset{why}", suggested.name
        elif self.default_preset:
            cfg, origin, name = get_preset(self.default_preset).load(), f"the {self.default_preset} preset", self.default_preset
        else:
            return RunConfig(), "the defaults", None
        cfg.output.run_name = None  # a preset's run name would outlive its data: the name is derived at Start
        return cfg, origin, name

    def initial_form(self) -> Loaded:
        """What the page loads with: the form's draft when there is one, each field exactly as it was (a field the draft
        does not have, or a choice the page no longer offers, as the config gives it); else `initial_config`'s."""
        cfg, origin, preset = self.initial_config()
        loaded = Loaded(cfg, origin, self.state_of(cfg), self.values_from(cfg), preset)
        draft = self.workspace.read_json(DRAFT_FORM)
        if not draft or not isinstance(draft.get("fields"), dict):
            return loaded
        fields = draft["fields"]
        for at, (key, component) in enumerate(zip(self.keys, self.inputs)):
            if at == self.code_index or key not in fields:  # the code keeps its own draft (DRAFT_REWARDS)
                continue
            value = fields[key]
            for tab in self.tabs:  # a tab may merge a saved value into what the page offers now (the builtins' table)
                if component in tab.inputs and hasattr(tab, "restored"):
                    value = tab.restored(component, loaded.values[at], value)
            if restorable(component, value):
                loaded.values[at] = value
        base = draft.get("base")
        if isinstance(base, dict) and isinstance(base.get("config"), dict):
            loaded.state = base
        loaded.origin = "your last settings"
        loaded.preset = draft.get("preset") if draft.get("preset") in [p.name for p in self.presets] else None
        columns = draft.get("columns")
        loaded.columns = [str(c) for c in columns] if isinstance(columns, list) else []
        loaded.data_rows = draft.get("data_rows") if isinstance(draft.get("data_rows"), int) else None
        config, _problems = self.config_from(loaded.state, loaded.values)
        loaded.config = config or cfg
        return loaded

    def save_draft(self, preset: str | None, state: dict, columns: list | None, data_rows: int | None, *values) -> None:
        """Keep the form as the page shows it (every field but the code, which keeps its own draft), for `initial_form`."""
        fields = {key: value for at, (key, value) in enumerate(zip(self.keys, values)) if at != self.code_index}
        self.workspace.write_json(DRAFT_FORM, {"fields": fields, "preset": preset, "base": state or {}, "columns": columns or [],
                                               "data_rows": data_rows})

    @staticmethod
    def run_name(cfg: RunConfig) -> str:
        """The run's name when the person gave none: what it trains on and what model (e.g. `qa-demo`)."""
        source = str(cfg.data.source or "").rstrip("/")
        data = "demo" if source == "demo" else (Path(source).stem if not is_hub_source(source) else source.split("/")[-1])
        model = Path(str(cfg.model.name_or_path).rstrip("/")).name
        return data if data == model else f"{data}-{model}"

    # ---- the machine the estimate is for ----------------------------------------------------------------

    def device_of(self) -> tuple[float | None, bool, str | None, bool]:
        """(memory in GiB, bf16, its name, on_cpu) the estimate is held against: the first GPU, else the computer's RAM
        (training then runs on the CPU, in RAM); (None, True, None, True) when neither is known."""
        hw = self.hw.get()
        if not hw.gpus:
            return (hw.ram_gb, False, f"this computer's RAM ({hw.ram_gb:.1f} GiB)", True) if hw.ram_gb else (None, True, None, True)
        return hw.gpus[0].total_gb, hw.gpus[0].bf16, f"{hw.gpus[0].name} ({hw.gpus[0].total_gb:.1f} GB)", False

    def estimate_for(self, cfg: RunConfig | None):
        device_gib, bf16, name, on_cpu = self.device_of()
        return estimate_config(cfg, device_gib, bf16, on_cpu) if cfg else None, name

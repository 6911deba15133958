"""The page's form: the settings tabs' widgets as one object, and the one place they become a RunConfig.

`PageForm` is built once per page inside the Blocks. It holds the page's shared state — `base`
(the preset's keys that no widget shows), `watched` (the run directory the Train tab shows) and
`columns` (the data's columns from the last preview) — and the four settings tabs, whose inputs
it concatenates in one fixed order (the order of the `start_training` endpoint). Every handler
that needs the whole form gets `form.inputs` and turns them into a config with `config_from`.
The hardware probe (`HardwareCache`) is here because the form's estimate is for that machine.
"""

from __future__ import annotations

import copy
import os
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
from .wording import page_words
from .workspace import DRAFT_CONFIG, DRAFT_JUDGE, DRAFT_REWARDS, Workspace


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


class SettingsTab(Protocol):
    """What the form needs of a settings tab (Model, Data, Rewards, Train): its widgets in order, their values from a
    config (`values_from`: the Rewards tab's also takes the editor's code and the judge draft) and the config from their
    values (`apply`, returning its problems). The form takes the tabs built by the page, so it imports none of them:
    they import the form."""
    inputs: list

    def values_from(self, cfg: RunConfig, *drafts) -> list: ...

    def apply(self, cfg: dict, values: list) -> list[str]: ...


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
        return "**Please fix before starting:**\n" + "\n".join(f"- {page_words(p)}" for p in problems) if problems else ""

    @staticmethod
    def state_of(cfg: RunConfig) -> dict:
        return {"config": cfg.to_dict(), "base_dir": cfg.base_dir}

    def initial_config(self) -> tuple[RunConfig, str]:
        """The draft of the last session if there is one, else the preset that fits this machine."""
        draft = self.workspace.read(DRAFT_CONFIG)
        if draft:
            try:
                return RunConfig.from_dict(yaml.safe_load(draft) or {}, base_dir=os.getcwd(), source="the saved draft"), "your last settings"
            except (ConfigError, yaml.YAMLError):
                pass  # an unreadable draft must not lock the person out: fall back to the preset
        gpus = self.hw.get().gpus
        suggested = recommend(self.presets, gpus[0].total_gb if gpus else None)
        if suggested:
            why = f" — the largest preset that fits your {gpus[0].total_gb:.0f} GB GPU" if gpus else ""
            cfg, origin = suggested.load(), f"the {suggested.name} preset{why}"
        elif self.default_preset:
            cfg, origin = get_preset(self.default_preset).load(), f"the {self.default_preset} preset"
        else:
            return RunConfig(), "the defaults"
        cfg.output.run_name = None  # a preset's run name would outlive its data: the name is derived at Start
        return cfg, origin

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
            return (hw.ram_gb, False, f"this computer's RAM ({hw.ram_gb:.1f} GB)", True) if hw.ram_gb else (None, True, None, True)
        return hw.gpus[0].total_gb, hw.gpus[0].bf16, f"{hw.gpus[0].name} ({hw.gpus[0].total_gb:.1f} GB)", False

    def estimate_for(self, cfg: RunConfig | None):
        device_gib, bf16, name, on_cpu = self.device_of()
        return estimate_config(cfg, device_gib, bf16, on_cpu) if cfg else None, name

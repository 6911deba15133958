"""The Rewards tab's judge section: an LLM judge reward (rewards.judge) set up without writing YAML.

Its widgets become one `{judge, rubric, scale, weight, template}` entry of the config's `rewards`
(`apply`) and back (`values_from`). They are kept as a draft on every change (DRAFT_JUDGE) and shown
again after a reload, as the reward code and the pinned examples are. The judge is the run's own base
model, a local model folder, or an OpenAI-compatible server; for a server the page asks for the *name*
of the environment variable holding the API key, never the key itself, so no key reaches a config,
a draft or a run folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from ..config import DEFAULT_JUDGE_SCALE, RunConfig
from ..rewards.judge import DEFAULT_TEMPLATE, RUBRICS, TEMPLATE_FIELDS, check_template, server_unreachable
from . import text
from .workspace import DRAFT_JUDGE

if TYPE_CHECKING:
    from .derived import Derived
    from .workspace import Workspace

SOURCES = [text.JUDGE_BASE, text.JUDGE_FOLDER_CHOICE, text.JUDGE_SERVER_CHOICE]
OWN_RUBRIC = "(your own rubric)"  # what the menu shows once the rubric is not a template's (rubric_template_for)
FIRST_RUBRIC = next(iter(RUBRICS))  # what ticking the judge fills in when no rubric is written
# The tick's choice, run in the page (see JudgePanel.wire): (ticked?, rubric, the template menu) -> the menu's new value.
TICKED_JS = (f"(use, rubric, template) => (use && !(rubric || '').trim()) ? {json.dumps(FIRST_RUBRIC)} : template")
# How long the page waits for a judge server to answer before it refuses a preview: a server on this machine or the
# local network answers in milliseconds; a few seconds leave room for a busy one.
REACH_TIMEOUT_S = 5.0
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _label(name: str) -> str:
    return f"“{name}” (Rewards tab)"


# Said beside every rubric: what the judge's score is read from, and the check the preview and pinned examples run.
JUDGE_CHECK_NOTE = ("Only the judge's verdict counts (\"Score: N\"): a reply that reads the rubric back, or gives no verdict, "
                    "gives None, no score, which counts as 0 in the total when another reward scores the completion. *Sample and score* and the pinned examples also ask the judge about an empty answer and "
                    "the prompt or rubric read back, and warn when it gives them high marks.")


def limits_markdown(name: str | None) -> str:
    """What the chosen template rubric cannot judge, shown beside it, and how the judge's score is read and checked."""
    if name in RUBRICS:
        return f"**Limits of `{name}`:** {RUBRICS[name].limits}\n\n{JUDGE_CHECK_NOTE}"
    return ("**Rubric templates:** " + "; ".join(f"`{n}`" for n in RUBRICS) + " — each works as it is, and says what it "
            "cannot judge. Or write your own: what a good completion is, and what scores low, in two or three sentences. "
            "Write what to judge, not a scoring formula to copy (\"Score 10 if …\"): small judges read such a sentence "
            f"back instead of judging.\n\n{JUDGE_CHECK_NOTE}")


def default_values() -> list:
    """The section's values when nothing was set: unticked, the base model as judge, the default template."""
    return [False, "", text.JUDGE_BASE, "", "", "", "", 1.0, DEFAULT_JUDGE_SCALE[0], DEFAULT_JUDGE_SCALE[1], DEFAULT_TEMPLATE]


def entry_values(cfg: RunConfig) -> list:
    """The section's values for the config's first judge entry (the section shows one judge)."""
    spec = next((s for s in cfg.rewards if s.judge is not None), None)
    values = default_values()
    if spec is None:
        return values
    scale = spec.scale or list(DEFAULT_JUDGE_SCALE)
    values[0], values[1], values[7], values[8], values[9] = True, spec.rubric or "", spec.weight, scale[0], scale[1]
    values[10] = spec.template or DEFAULT_TEMPLATE
    if isinstance(spec.judge, dict):
        values[2:7] = [text.JUDGE_SERVER_CHOICE, "", spec.judge.get("url", ""), spec.judge.get("model", ""),
                       spec.judge.get("api_key_env") or ""]
    elif str(spec.judge) == str(cfg.model.name_or_path):
        values[2] = text.JUDGE_BASE
    else:
        values[2:4] = [text.JUDGE_FOLDER_CHOICE, str(spec.judge)]
    return values


def _number(value, label: str, problems: list[str]) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        problems.append(f"Rewards: {_label(label)} is not a number ({value!r})")
        return None


def judge_entry(cfg: dict, values: list) -> tuple[dict | None, list[str]]:
    """(the `rewards` entry of the section, its problems in the page's words); (None, []) when it is not ticked.

    An entry with a problem is left out, so the config's own check does not repeat it in config words."""
    use, rubric, source, folder, url, server_model, key_env, weight, low, high, template = values
    if not (use is True or use == "true"):
        return None, []
    problems: list[str] = []
    rubric = (rubric or "").strip()
    if not rubric:
        problems.append(f"Rewards: {_label(text.JUDGE_RUBRIC)} is empty — say what a good completion is and what scores "
                        f"low, or pick one in “{text.JUDGE_RUBRIC_TEMPLATE}”")
    if source == text.JUDGE_SERVER_CHOICE:
        url, server_model, key_env = (url or "").strip(), (server_model or "").strip(), (key_env or "").strip()
        judge: object = {"url": url, "model": server_model}
        if not re.match(r"^https?://[^/\s]+", url):
            problems.append(f"Rewards: {_label(text.JUDGE_URL)} {url!r} is not an http(s) address — give the server's "
                            "OpenAI-compatible base, e.g. http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 "
                            "(llama.cpp server)")
        if not server_model:
            problems.append(f"Rewards: {_label(text.JUDGE_SERVER_MODEL)} is empty — the name of the model the server "
                            "serves, e.g. qwen2.5:7b")
        if key_env:
            if not _ENV_NAME.match(key_env):
                problems.append(f"Rewards: {_label(text.JUDGE_KEY_ENV)} must be the name of an environment variable that "
                                "holds the key, e.g. JUDGE_API_KEY — never the key itself (what is typed there is not "
                                "kept unless it is a variable's name; the key is read from the environment when the judge is called)")
            judge["api_key_env"] = key_env
    elif source == text.JUDGE_FOLDER_CHOICE:
        folder = (folder or "").strip()
        path = Path(folder).expanduser()
        judge = str(path.resolve()) if folder and path.is_dir() else folder
        if not folder:
            problems.append(f"Rewards: {_label(text.JUDGE_FOLDER)} is empty — give the folder of an instruction-tuned "
                            f"chat model, or choose “{text.JUDGE_BASE}” in “{text.JUDGE_SOURCE}”")
        elif not path.is_dir() and not _HUB_ID.match(folder):
            problems.append(f"Rewards: {_label(text.JUDGE_FOLDER)} {folder!r} is not a folder on this machine — give "
                            "the folder that holds the judge model's config.json")
    else:
        judge = (cfg.get("model") or {}).get("name_or_path") or "demo"
    weight = _number(weight, text.JUDGE_WEIGHT, problems)
    low, high = _number(low, text.JUDGE_LOW, problems), _number(high, text.JUDGE_HIGH, problems)
    if low is not None and high is not None and not low < high:
        problems.append(f"Rewards: {_label(text.JUDGE_LOW)} ({low:g}) must be below {_label(text.JUDGE_HIGH)} ({high:g}) "
                        "— e.g. 0 and 10")
    template = (template or "").strip()
    wrong = check_template(template) if template else None
    if wrong:
        problems.append(f"Rewards: {_label(text.JUDGE_TEMPLATE)}: {wrong}")
    if problems:
        return None, problems
    entry = {"judge": judge, "rubric": rubric, "weight": weight}
    if [low, high] != list(DEFAULT_JUDGE_SCALE):
        entry["scale"] = [low, high]
    if template and template != DEFAULT_TEMPLATE.strip():
        entry["template"] = template
    return entry, []


def unreachable_servers(cfg: RunConfig) -> list[str]:
    """One line per judge server of the config that nothing answers at, in the page's words; [] when all answer."""
    lines = []
    for spec in cfg.rewards:
        if isinstance(spec.judge, dict) and spec.judge.get("url"):
            why = server_unreachable(str(spec.judge["url"]), REACH_TIMEOUT_S)
            if why:
                lines.append(f"nothing answers at the judge server {spec.judge['url']} ({why}). Start the server (e.g. "
                             f"`ollama serve`), or fix {_label(text.JUDGE_URL)}: it ends before /chat/completions, e.g. "
                             "http://127.0.0.1:11434/v1")
    return lines


def rubric_template_for(rubric: str | None, shown: str | None):
    """What the rubric-template menu shows for this rubric: the template whose text it is, else "(your own rubric)" once
    the person has written one (an emptied rubric leaves the menu as it is); `gr.skip()` when it shows that already."""
    written = (rubric or "").strip()
    if not written:
        return gr.skip()
    name = next((n for n, r in RUBRICS.items() if r.text.strip() == written), OWN_RUBRIC)
    return gr.skip() if name == shown else name


def saved_values(draft: str | None) -> list | None:
    """The section's values kept in the drafts, or None when there are none (or they are unreadable)."""
    try:
        values = json.loads(draft) if draft else None
    except ValueError:
        return None
    return values if isinstance(values, list) and len(values) == len(default_values()) else None


class JudgePanel:
    def __init__(self):
        gr.Markdown(text.JUDGE_INTRO)
        self.use = gr.Checkbox(False, label=text.JUDGE_USE, elem_id="judge-use")
        with gr.Row():
            with gr.Column(scale=3):
                self.rubric_template = gr.Dropdown([OWN_RUBRIC] + list(RUBRICS), value=None, label=text.JUDGE_RUBRIC_TEMPLATE,
                                                   elem_id="judge-rubric-template")
                self.rubric = gr.Textbox(label=text.JUDGE_RUBRIC, lines=3, elem_id="judge-rubric")
            with gr.Column(scale=2):
                self.limits = gr.Markdown(limits_markdown(None), elem_id="judge-limits")
        with gr.Row():
            self.source = gr.Radio(SOURCES, value=text.JUDGE_BASE, label=text.JUDGE_SOURCE, elem_id="judge-source")
            self.weight = gr.Number(1.0, label=text.JUDGE_WEIGHT, elem_id="judge-weight")
            self.low = gr.Number(DEFAULT_JUDGE_SCALE[0], label=text.JUDGE_LOW, elem_id="judge-low")
            self.high = gr.Number(DEFAULT_JUDGE_SCALE[1], label=text.JUDGE_HIGH, elem_id="judge-high")
        with gr.Row():
            self.folder = gr.Textbox(visible=False, label=text.JUDGE_FOLDER, placeholder="e.g. models/Qwen2.5-1.5B-Instruct", elem_id="judge-folder")
            self.url = gr.Textbox(visible=False, label=text.JUDGE_URL, placeholder="e.g. http://127.0.0.1:11434/v1", elem_id="judge-url")
            self.server_model = gr.Textbox(visible=False, label=text.JUDGE_SERVER_MODEL, placeholder="e.g. qwen2.5:7b", elem_id="judge-server-model")
            self.key_env = gr.Textbox(visible=False, label=text.JUDGE_KEY_ENV, placeholder="e.g. JUDGE_API_KEY (empty: no key)",
                                      elem_id="judge-key-env")
        self.template = gr.Textbox(DEFAULT_TEMPLATE, label=text.JUDGE_TEMPLATE, lines=7, elem_id="judge-template",
                                   info="The judge's prompt, filled in for every completion. Fields: "
                                        + ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS) + " ({completion} is required).")

    @property
    def inputs(self) -> list:
        return [self.use, self.rubric, self.source, self.folder, self.url, self.server_model, self.key_env, self.weight,
                self.low, self.high, self.template]

    def wire(self, workspace: "Workspace", derived: "Derived") -> None:
        def pick(name):
            return (RUBRICS[name].text if name in RUBRICS else gr.update()), limits_markdown(name)

        def shown(source):  # only the chosen kind of judge's fields: a folder, or a server's address, model and key
            server = source == text.JUDGE_SERVER_CHOICE
            return [gr.update(visible=source == text.JUDGE_FOLDER_CHOICE)] + [gr.update(visible=server)] * 3

        derived.on([self.source], shown, inputs=[self.source], outputs=[self.folder, self.url, self.server_model, self.key_env])
        # The menu follows the rubric. "multiple", not the form's one change event: an event held back until the one before
        # it ends (that event's "always_last") would read the menu after a newer template choice and the rubric before
        # that template fills it in, and put the menu back to the old template. The page load sets the menu from the
        # rubric it shows (model_tab).
        self.rubric.change(rubric_template_for, inputs=[self.rubric, self.rubric_template], outputs=self.rubric_template,
                           api_visibility="private", show_progress="hidden", trigger_mode="multiple")
        self.rubric_template.change(pick, inputs=self.rubric_template, outputs=[self.rubric, self.limits],
                                    api_name="judge_rubric_template")

        # A judge that works as it is: the tick chooses the first template when nothing is written yet (its change then
        # fills in the rubric and limits). Chosen in the browser: an event answered by the server covers its output with
        # Gradio's loading overlay until the answer arrives, so the template menu — the next thing a person clicks — was
        # out of reach for as long as the queue took, and an answer that came after the person's own pick undid it.
        # .input, not .change: only the person's tick fills it in, not a reload showing a draft with an emptied rubric.
        self.use.input(None, inputs=[self.use, self.rubric], outputs=self.rubric_template, js=TICKED_JS)

        def save(*values):
            values = list(values)
            if not _ENV_NAME.match((values[6] or "").strip()):
                values[6] = ""  # not a variable's name: perhaps a pasted key, which is never written anywhere
            workspace.write(DRAFT_JUDGE, json.dumps(values))

        # The named endpoint first: events registered later with the same function get suffixed names.
        self.save_api = gr.Button(visible=False)
        self.save_api.click(save, inputs=self.inputs, outputs=None, api_name="save_judge_draft")
        # Through the form's one change event (derived.py), whichever field changed: with an event per field, a save of
        # half-updated fields could finish last and overwrite the draft with them; that event's last run saves the fields
        # as they end up.
        derived.on(self.inputs, save, inputs=self.inputs, outputs=[])

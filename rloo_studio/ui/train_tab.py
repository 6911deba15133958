"""The Train tab: RLOO settings with one-line explanations, Start / Stop / Resume, and the live run view.

Turns its widgets into the `rloo` section of the RunConfig (`apply`) and back (`values_from`);
keys of a preset that the form does not show (e.g. lr_scheduler_type) are kept as they were.
`wire` connects Start / Stop / Resume and the config view to the whole form; `outputs` and
`render` show a run directory, polled by the page's timer.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from .. import jobs, runs
from ..batching import batch_plan, summary_line
from ..config import RunConfig, rloo_default
from ..errors import StudioError
from ..inference_client import InferenceWorker
from ..jobs import RunView
from . import run_view, text
from .pickers import refuse
from .wording import page_words
from .rewards_tab import PINNED_RUN_FILE
from .workspace import DRAFT_CONFIG, DRAFT_PINNED, DRAFT_REWARDS

if TYPE_CHECKING:
    from .form import PageForm

INTEGER_KEYS = {"num_generations", "per_device_train_batch_size", "max_completion_length", "max_steps", "num_iterations", "seed", "save_steps"}
FIELD_ORDER = text.RLOO_MAIN + text.RLOO_ADVANCED
# What the form shows when a config leaves a key out: what training would use (RLOO Studio's defaults, then TRL's).
FORM_DEFAULTS = {key: rloo_default(key) for key in FIELD_ORDER}


def batch_summary(num_generations, per_device, num_iterations) -> str:
    """The line under the form: completions and prompts per step, and how often completions are generated.

    The form has no accumulation or process settings; a config file's `gradient_accumulation_steps`,
    `steps_per_generation` and `--num-processes` change these numbers (the run's log prints its own line)."""
    try:
        plan = batch_plan({"num_generations": int(num_generations), "per_device_train_batch_size": int(per_device),
                           "num_iterations": int(num_iterations)})
    except (TypeError, ValueError):
        return ""
    return summary_line(plan)


def _field(key: str):
    label, info = text.RLOO_FIELDS[key]
    if key == "normalize_advantages":
        return gr.Checkbox(FORM_DEFAULTS[key], label=label, info=info, elem_id=f"rloo-{key}")
    return gr.Number(FORM_DEFAULTS[key], label=label, info=info, precision=0 if key in INTEGER_KEYS else None,
                     elem_id=f"rloo-{key.replace('_', '-')}")


class TrainTab:
    def __init__(self):
        self.fields: dict[str, gr.components.Component] = {}
        with gr.Row():
            for key in text.RLOO_MAIN[:4]:
                self.fields[key] = _field(key)
        with gr.Row():
            for key in text.RLOO_MAIN[4:]:
                self.fields[key] = _field(key)
        with gr.Accordion("Advanced", open=False):
            with gr.Row():
                for key in text.RLOO_ADVANCED:
                    self.fields[key] = _field(key)
        batch_keys = [self.fields[k] for k in ("num_generations", "per_device_train_batch_size", "num_iterations")]
        self.batch_summary = gr.Markdown(batch_summary(*(FORM_DEFAULTS[k] for k in ("num_generations", "per_device_train_batch_size",
                                                                                       "num_iterations"))),
                                         elem_id="batch-summary")
        for widget in batch_keys:
            widget.change(batch_summary, inputs=batch_keys, outputs=self.batch_summary, show_progress="hidden",
                          api_visibility="private")
        self.run_name = gr.Textbox(label=text.RUN_NAME, info="Put into the run's folder name, e.g. `demo-lr3e-4`.")
        self.problems = gr.Markdown(elem_id="start-problems")
        self.epochs = gr.Markdown(elem_id="epochs-note")  # how often each prompt would be seen, before Start
        with gr.Row():
            self.start = gr.Button(text.START, variant="primary", elem_id="start-training")
            self.stop = gr.Button(text.STOP, variant="stop", elem_id="stop-training")
            self.resume = gr.Button(text.RESUME, elem_id="resume-training")
        # What Stop / Resume / a refused Start said: shown next to the buttons while the run's state it speaks of lasts.
        self.notice = gr.Markdown(elem_id="train-notice")
        self.notice_for = gr.State({})  # {"text", "run", "state"}: cleared by the poll once that run's state changes
        self.status = gr.Markdown(text.NO_RUN, elem_id="train-status")
        self.progress = gr.HTML(run_view.progress_html(None), elem_id="train-progress-box")
        with gr.Row():
            self.reward_plot = gr.LinePlot(run_view.reward_frame(None), x="step", y="value", color="series", title="Reward",
                                           y_title="mean reward", height=300, elem_id="reward-plot")
            self.length_plot = gr.LinePlot(run_view.length_frame(None), x="step", y="value", color="series", title="Completions",
                                           height=300, elem_id="length-plot")
        self.samples = gr.Dataframe(headers=run_view.SAMPLE_HEADERS, label="Recent completions (newest first): each answer's rewards, "
                                    "its weighted total, its KL penalty (β × KL to the start model) and the advantage training used: "
                                    "(total − KL penalty) − the mean of that over the other completions to the same prompt, "
                                    "then normalised if “Normalise advantages” is on",
                                    interactive=False, wrap=True, max_height=420, elem_id="samples",
                                    column_widths=["5%", "22%", "10%", "7%", "28%"])  # step … rewards; total to advantage: their headers' width
        with gr.Accordion("Log", open=False):
            self.log = gr.Textbox(lines=12, max_lines=12, show_label=False, autoscroll=True, elem_id="train-log")
        with gr.Accordion("Show config and command", open=False):
            gr.Markdown("The same run from a terminal (the config is saved in the run folder too):")
            self.show_config = gr.Button("Show the config for the current settings", elem_id="show-config")
            self.command = gr.Textbox(show_label=False, elem_id="train-command", buttons=["copy"])
            self.config_yaml = gr.Code(language="yaml", label="config.yaml", elem_id="train-config")

    # ---- wiring ----------------------------------------------------------------------------------

    def wire(self, demo: gr.Blocks, form: "PageForm", worker: InferenceWorker, timer: gr.Timer) -> None:
        workspace, runs_dir = form.workspace, form.runs_dir
        self.runs_dir = runs_dir

        def show_config(state, *values):
            cfg, problems = form.config_from(state, list(values))
            if cfg is None:
                return form.problems_markdown(problems), "", ""
            path = workspace.write(DRAFT_CONFIG, cfg.to_yaml())
            return form.problems_markdown(problems), f"rloo-studio train {shlex.quote(str(path))}", cfg.to_yaml()

        def start(state, *values):
            code = values[form.code_index]
            cfg, problems = form.config_from(state, list(values))
            if problems:
                return [form.problems_markdown(problems), gr.update(), gr.update(), gr.update()]
            est, device = form.estimate_for(cfg)
            if est is not None and est.verdict == "exceeds":
                return [f"**This will not fit {device}:** the estimated peak is {est.total_gib:.1f} GiB. Press **Shrink to fit** in "
                        "the Model & hardware tab for settings that do, or choose a smaller model.", gr.update(), gr.update(), gr.update()]
            workspace.write(DRAFT_CONFIG, cfg.to_yaml())
            workspace.write(DRAFT_REWARDS, code or "")
            if not cfg.output.run_name:
                cfg.output.run_name = form.run_name(cfg)
            try:
                worker.shutdown()  # the training worker gets the GPU to itself
                run_dir = jobs.start_run(cfg, runs_dir, reward_source=code)
            except StudioError as exc:
                return [f"**Could not start:** {page_words(exc.message())}".replace("\n", "  \n"), gr.update(), gr.update(), gr.update()]
            pins = workspace.read(DRAFT_PINNED)
            if pins is not None:  # the pinned examples belong to the reward code the run trains with
                (run_dir / PINNED_RUN_FILE).write_text(pins, encoding="utf-8")
            config_text = (run_dir / runs.CONFIG_FILE).read_text(encoding="utf-8")
            return ["", str(run_dir), f"rloo-studio train {shlex.quote(str(run_dir / runs.CONFIG_FILE))}", config_text]

        self.start.click(start, inputs=[form.base] + form.inputs, outputs=[self.problems, form.watched, self.command, self.config_yaml],
                         api_name="start_training").then(self.note_busy, inputs=[self.problems, self.notice_for],
                                                         outputs=[self.problems, self.notice, self.notice_for], api_visibility="private")

        def stop(run_dir):
            if not run_dir:
                return "No run to stop.", {}
            message = jobs.stop_run(run_dir)
            return message, self.lasting(message, run_dir)

        self.stop.click(stop, inputs=form.watched, outputs=[self.notice, self.notice_for], api_name="stop_training")

        def resume(run_dir):
            message, run_dir = resume_run(worker, run_dir)
            return message, run_dir, self.lasting(message, run_dir)

        self.resume.click(resume, inputs=form.watched, outputs=[self.notice, form.watched, self.notice_for], api_name="resume_training")

        def poll(run_dir):
            view = jobs.view(run_dir) if run_dir and Path(run_dir).is_dir() else None
            return TrainTab.render(view)

        timer.tick(poll, inputs=form.watched, outputs=self.outputs, api_name="run_status", show_progress="hidden")
        form.watched.change(poll, inputs=form.watched, outputs=self.outputs, api_visibility="private")
        sizes = [self.fields[k] for k in ("num_generations", "per_device_train_batch_size", "max_steps")]
        for trigger in [form.data_rows.change] + [w.change for w in sizes]:
            trigger(epochs_markdown, inputs=[form.data_rows] + sizes, outputs=self.epochs, api_visibility="private",
                    show_progress="hidden")
        timer.tick(self.notice_now, inputs=self.notice_for, outputs=[self.notice, self.notice_for], api_name="train_notice",
                   show_progress="hidden")
        self.show_config.click(show_config, inputs=[form.base] + form.inputs, outputs=[self.problems, self.command, self.config_yaml],
                               api_name="show_config")

    # ---- transient messages ------------------------------------------------------------------------

    @staticmethod
    def lasting(message: str, run_dir: str | None) -> dict:
        """A message that holds while `run_dir` stays in its present state."""
        state = runs.effective_state(runs.read_status(run_dir)) if run_dir and Path(run_dir).is_dir() else None
        return {"text": message, "run": run_dir, "state": state}

    @staticmethod
    def notice_now(notice_for: dict | None) -> list:
        """[notice text, notice state] as the run folder says now: "" once the state the message spoke of has ended."""
        if not notice_for or not notice_for.get("text"):
            return [gr.skip(), notice_for or {}]
        run_dir = notice_for.get("run")
        state = runs.effective_state(runs.read_status(run_dir)) if run_dir and Path(run_dir).is_dir() else None
        if state == notice_for.get("state"):
            return [gr.skip(), notice_for]
        return ["", {}]

    def note_busy(self, problems: str, notice_for: dict):
        """A Start refused because another run trains is a notice that ends with that run, not a lasting problem."""
        busy = jobs.active_run(self.runs_dir)
        if problems.startswith("**Could not start:**") and busy is not None:
            return "", problems, self.lasting(problems, str(busy))
        return gr.skip(), gr.skip(), notice_for

    # ---- the form ----------------------------------------------------------------------------------

    @property
    def inputs(self) -> list:
        return [self.fields[k] for k in FIELD_ORDER] + [self.run_name]

    @property
    def outputs(self) -> list:
        return [self.status, self.progress, self.reward_plot, self.length_plot, self.samples, self.log]

    @staticmethod
    def render(view: RunView | None) -> list:
        return [run_view.status_markdown(view), run_view.progress_html(view), run_view.plot_update(run_view.reward_frame(view)),
                run_view.plot_update(run_view.length_frame(view)), run_view.samples_rows(view),
                run_view.readable_log(view.log_tail) if view else ""]

    @staticmethod
    def apply(cfg: dict, values: list) -> list[str]:
        *field_values, run_name = values
        rloo = cfg.setdefault("rloo", {})
        problems = []
        for key, value in zip(FIELD_ORDER, field_values):
            if key == "normalize_advantages":
                rloo[key] = bool(value)
                continue
            if value is None or value == "":
                problems.append(f"Train: “{text.RLOO_FIELDS[key][0]}” is empty")
                continue
            rloo[key] = int(value) if key in INTEGER_KEYS else float(value)
        cfg.setdefault("output", {})["run_name"] = (run_name or "").strip() or None
        return problems

    @staticmethod
    def values_from(cfg: RunConfig) -> list:
        return [cfg.rloo.get(k, FORM_DEFAULTS[k]) for k in FIELD_ORDER] + [cfg.output.run_name or ""]


def resume_run(worker: InferenceWorker, run_dir: str | None) -> tuple[str, str | None]:
    """(message, the run to watch): the Train tab's Resume and the Runs tab's share it."""
    if not run_dir:
        return refuse("No run to resume: open one in the Runs tab first."), run_dir
    try:
        worker.shutdown()
        jobs.resume_run(run_dir)
    except StudioError as exc:
        return refuse(f"**Could not resume:** {page_words(exc.message())}".replace("\n", "  \n")), run_dir
    return f"Resuming `{Path(run_dir).name}`.", run_dir


MANY_EPOCHS = 3  # seen more often than this, a prompt's answer is easier to memorise than to learn


def epochs_markdown(train_rows, k, batch, max_steps) -> str:
    """How many times each training prompt would be seen ("54 rows × 150 steps = 37 epochs"), said before Start."""
    try:
        rows, k, batch, steps = int(train_rows), int(k), int(batch), int(max_steps)
    except (TypeError, ValueError):
        return ""
    if rows <= 0 or k <= 0 or batch < k or steps <= 0:
        return ""
    prompts = steps * (batch // k)
    epochs = prompts / rows
    line = (f"{rows} training rows × {steps} steps × {batch // k} prompts per step = **{epochs:.0f} epochs** "
            f"(each prompt seen about {epochs:.0f} times).")
    if epochs > MANY_EPOCHS:
        return ("⚠️ " + line + " The model may learn these prompts' answers by heart rather than the skill: use fewer "
                f"“{text.RLOO_FIELDS['max_steps'][0]}” (about {max(1, round(MANY_EPOCHS * rows / (batch // k)))} for "
                f"{MANY_EPOCHS} epochs) or more data.")
    return line

"""The Train tab: RLOO settings with one-line explanations, Start / Stop / Resume, and the live run view.

Turns its widgets into the `rloo` section of the RunConfig (`apply`) and back (`values_from`);
keys of a preset that the form does not show (e.g. lr_scheduler_type) are kept as they were.
The buttons are wired by the app, which owns the other tabs' inputs; `outputs` and `render`
show a run directory, polled by a timer.
"""

from __future__ import annotations

import gradio as gr

from ..batching import batch_plan, summary_line
from ..config import RLOO_DEFAULTS, RunConfig
from ..jobs import RunView
from . import run_view, text

# What the form shows when a config leaves a key out: RLOO Studio's defaults, then TRL 1.15's.
FORM_DEFAULTS = {**{"beta": 0.05, "temperature": 1.0, "num_iterations": 1, "epsilon": 0.2, "normalize_advantages": False, "top_p": 1.0},
                 **RLOO_DEFAULTS}
INTEGER_KEYS = {"num_generations", "per_device_train_batch_size", "max_completion_length", "max_steps", "num_iterations", "seed", "save_steps"}
FIELD_ORDER = text.RLOO_MAIN + text.RLOO_ADVANCED


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
        with gr.Row():
            self.start = gr.Button(text.START, variant="primary", elem_id="start-training")
            self.stop = gr.Button(text.STOP, variant="stop", elem_id="stop-training")
            self.resume = gr.Button(text.RESUME, elem_id="resume-training")
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
                                    interactive=False, wrap=True, max_height=420, elem_id="samples")
        with gr.Accordion("Log", open=False):
            self.log = gr.Textbox(lines=12, max_lines=12, show_label=False, autoscroll=True, elem_id="train-log")
        with gr.Accordion("Show config and command", open=False):
            gr.Markdown("The same run from a terminal (the config is saved in the run folder too):")
            self.show_config = gr.Button("Show the config for the current settings", elem_id="show-config")
            self.command = gr.Textbox(show_label=False, elem_id="train-command", buttons=["copy"])
            self.config_yaml = gr.Code(language="yaml", label="config.yaml", elem_id="train-config")

    @property
    def inputs(self) -> list:
        return [self.fields[k] for k in FIELD_ORDER] + [self.run_name]

    @property
    def outputs(self) -> list:
        return [self.status, self.progress, self.reward_plot, self.length_plot, self.samples, self.log]

    @staticmethod
    def render(view: RunView | None) -> list:
        return [run_view.status_markdown(view), run_view.progress_html(view), run_view.reward_frame(view),
                run_view.length_frame(view), run_view.samples_rows(view), view.log_tail if view else ""]

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

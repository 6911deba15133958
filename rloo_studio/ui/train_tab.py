"""The Train tab: RLOO settings with one-line explanations, Start / Stop / Resume, and the live run view.

Turns its widgets into the `rloo` section of the RunConfig (`apply`) and back (`values_from`);
keys of a preset that the form does not show (e.g. lr_scheduler_type) are kept as they were.
`wire` connects Start / Stop / Resume and the config view to the whole form; `outputs` and
`render` show a run directory, polled by the page's timer.

Over 500 lines because the tab is one screen with one form: the settings, Start/Stop/Resume, the time trial with its
live stages and plan, the format warm-up's fields and the live run view all read and write the same widgets.
"""

from __future__ import annotations

import shlex
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from .. import runs
from ..workers import jobs, trial
from ..batching import (MANY_EPOCHS, batch_plan, effective_line, epochs, epochs_sum, per_device_that_fills,
                        plan_words, prompts_needed, steps_for_epochs, summary_line, too_many_epochs)
from ..config import RunConfig, rloo_default
from ..data import is_hub_source, peek, peek_in_child
from ..errors import StudioError
from ..workers.inference import InferenceWorker
from ..workers.jobs import RunView
from ..rewards.judge import judge_cost_words
from .plots import in_order
from . import run_view, text
from .freshness import Outdated, stamp_of
from .pickers import refuse
from .poller import Poller
from .text import page_words
from .rewards_tab import PINNED_RUN_FILE
from .workspace import DRAFT_CONFIG, DRAFT_PINNED, DRAFT_REWARDS

if TYPE_CHECKING:
    from .form import PageForm

ESTIMATE_BUTTON = "Estimate time"
START_ANYWAY = "Start anyway"
INTEGER_KEYS = {"num_generations", "per_device_train_batch_size", "max_completion_length", "max_steps", "num_iterations", "seed", "save_steps"}
FIELD_ORDER = text.RLOO_MAIN + text.RLOO_ADVANCED
# What the form shows when a config leaves a key out: what training would use (RLOO Studio's defaults, then TRL's).
FORM_DEFAULTS = {key: rloo_default(key) for key in FIELD_ORDER}


def form_rloo(base: dict | None, num_generations, per_device, num_iterations) -> RunConfig:
    """A config holding the form's batch fields over the `rloo` keys of the loaded config that the form does not show
    (a preset's gradient_accumulation_steps, optim, ...): its effective values are the ones training will use.
    Raises TypeError/ValueError for an empty or non-numeric field."""
    hidden = dict(((base or {}).get("config") or {}).get("rloo") or {})
    return RunConfig(rloo={**hidden, "num_generations": int(num_generations), "per_device_train_batch_size": int(per_device),
                           "num_iterations": int(num_iterations)})


def batch_summary(num_generations, per_device, num_iterations, base: dict | None = None, seed=None) -> str:
    """The line under the form: completions and prompts per step, how often completions are generated, and the other
    arguments of a step (optimiser, weight decay, warm-up, schedule, seed), all effective values training passes to
    the trainer (RunConfig.effective_rloo). `--num-processes` multiplies the completions (the run's log says its own).
    `seed`: the form's Seed field (the loaded config's seed is not what runs once the field is changed)."""
    try:
        rloo = form_rloo(base, num_generations, per_device, num_iterations).effective_rloo()
        if seed is not None:
            rloo = {**rloo, "seed": int(seed)}
        # The optimiser and schedule in words, their trainer names in brackets; the trainer's own line behind "details".
        return (f"{summary_line(batch_plan(rloo))} {text.optimiser_words(rloo)}\n\n<details><summary>details</summary>\n\n"
                f"As the trainer is given them: {plan_words(rloo)}\n\n</details>")
    except (TypeError, ValueError, KeyError):
        return ""


def judge_cost_markdown(num_generations, per_device, num_iterations, use, source, base: dict | None = None) -> str:
    """The Rewards tab's judge, priced per training step for these batch settings ("" when no judge is ticked)."""
    if not (use is True or use == "true"):
        return ""
    try:
        plan = form_rloo(base, num_generations, per_device, num_iterations).batch_plan()
    except (TypeError, ValueError):
        return ""
    judge = {"url": ""} if source == text.JUDGE_SERVER_CHOICE else "local"
    return (judge_cost_words([judge], plan) or "") + (" *Estimate time* measures its share of a step.")


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
        with gr.Accordion("Format warm-up", open=False, elem_id="warmup-box") as self.warmup_box:
            gr.Markdown(WARMUP_WHY, elem_id="warmup-why")
            # Why the warm-up is offered, when the preview or the scan found a format almost no completion writes.
            self.warmup_offer = gr.Markdown(elem_id="warmup-offer")
            with gr.Row():
                self.warmup_on = gr.Checkbox(False, label=WARMUP_LABELS["enabled"], elem_id="warmup-enabled")
                self.warmup_steps = gr.Number(30, label=WARMUP_LABELS["steps"], precision=0, elem_id="warmup-steps")
                self.warmup_source = gr.Dropdown([(words, key) for key, words in WARMUP_SOURCES.items()], value="answer_column",
                                                 label=WARMUP_LABELS["source"], elem_id="warmup-source")
            self.warmup_template = gr.Textbox("<answer>{answer}</answer>", label=WARMUP_LABELS["template"], elem_id="warmup-template",
                                              info="The reply the warm-up trains on: {answer} is replaced by the answer column's value.")
            self.warmup_table = gr.Textbox(lines=3, label=WARMUP_LABELS["examples"], elem_id="warmup-examples",
                                           info=f"One pair per line: the prompt, then {PAIR_SPLIT.strip()}, then the reply.")
        batch_keys = [self.fields[k] for k in ("num_generations", "per_device_train_batch_size", "num_iterations")]
        self.batch_summary = gr.Markdown(batch_summary(*(FORM_DEFAULTS[k] for k in ("num_generations", "per_device_train_batch_size",
                                                                                       "num_iterations"))),
                                         elem_id="batch-summary")
        self.batch_keys = batch_keys
        self.judge_cost = gr.Markdown(elem_id="judge-cost")  # with a judge ticked in the Rewards tab: its calls per step
        self.run_name = gr.Textbox(label=text.RUN_NAME, info="Put into the run's folder name, e.g. `demo-lr3e-4`.")
        self.problems = gr.Markdown(elem_id="start-problems")
        self.epochs = gr.Markdown(elem_id="epochs-note")  # how often each prompt would be seen, before Start
        # Above the estimate: "Outdated — … changed since" once a field it was measured with changes (freshness.py).
        self.time_outdated = Outdated("time-estimate", ESTIMATE_BUTTON)
        with gr.Row(equal_height=True):
            self.estimate_time = gr.Button(ESTIMATE_BUTTON, elem_id="estimate-time", scale=0, min_width=160)
            self.minutes = gr.Number(trial.DEFAULT_MINUTES, label="Time you have (minutes)", minimum=1, scale=0,
                                     min_width=180, elem_id="estimate-minutes")
        # Under the button, not beside it: the line is the trial's progress while it runs (no overlay), then its result.
        self.time_estimate = gr.Markdown(TIME_ESTIMATE_HINT, elem_id="time-estimate")
        self.time_measured = gr.State(None)  # the last trial's Measurement as a dict: a new budget re-plans without a trial
        with gr.Row():
            self.start = gr.Button(text.START, variant="primary", elem_id="start-training")
            # Each enabled only when it can act on the run the tab follows (`run_buttons`): Stop while it trains, Resume
            # once it stopped or failed before its last step. A button that could only refuse cannot be pressed.
            self.stop = gr.Button(text.STOP, variant="stop", elem_id="stop-training", interactive=False)
            self.resume = gr.Button(text.RESUME, elem_id="resume-training", interactive=False)
        # Start's question when pinned examples fail (they say how the person's rewards should score): shown while the
        # form stays as it was when Start asked.
        with gr.Row(visible=False, elem_id="start-confirm-row") as self.confirm_row:
            self.confirm = gr.Markdown(elem_id="start-confirm")
            self.start_anyway = gr.Button(START_ANYWAY, variant="stop", elem_id="start-anyway", scale=0, min_width=160)
            self.cancel = gr.Button("Cancel", elem_id="start-cancel", scale=0, min_width=100)
        self.confirm_for = gr.State({})  # {"text": the question, "stamp": the form it was asked about}
        # What Stop / Resume / a refused Start said: shown next to the buttons while the run's state it speaks of lasts.
        self.notice = gr.Markdown(elem_id="train-notice")
        self.notice_for = gr.State({})  # {"text", "run", "state"}: cleared by the poll once that run's state changes
        self.shown = gr.State({})  # what the page shows of the watched run (`file_marks`): the poll sends only changes
        self.buttons_live = gr.State([False, False])  # whether Stop and Resume are enabled on the page (sent only on a change)
        self.status = gr.Markdown(text.NO_RUN, elem_id="train-status")
        self.progress = gr.HTML(run_view.progress_html(None), elem_id="train-progress-box")
        self.alerts = gr.HTML("", elem_id="train-alerts")  # health alerts of the run (alerts.jsonl), re-read on each poll
        with gr.Row():
            self.reward_plot = gr.LinePlot(run_view.reward_frame(None), x="step", y="value", color="series", title="Reward",
                                           y_title="mean reward", height=300, elem_id="reward-plot")
            self.length_plot = gr.LinePlot(run_view.length_frame(None), x="step", y="value", color="series", title="Completions",
                                           height=300, elem_id="length-plot")
        self.samples = gr.Dataframe(headers=run_view.SAMPLE_HEADERS, label="Recent completions (newest first): each reply's rewards, "
                                    "its weighted total, its KL penalty (β × KL to the start model) and the advantage training used: "
                                    "(total − KL penalty) − the mean of that over the other completions to the same prompt, "
                                    "then normalised if “Normalise advantages” is on",
                                    interactive=False, wrap=True, max_height=420, elem_id="samples",
                                    column_widths=run_view.SAMPLE_WIDTHS)
        with gr.Accordion("Log", open=False):
            self.log = gr.Textbox(lines=12, max_lines=12, show_label=False, autoscroll=True, elem_id="train-log")
        with gr.Accordion("Show config and command", open=False):
            gr.Markdown("The same run from a terminal (the config is saved in the run folder too):")
            self.show_config = gr.Button("Show the config for the current settings", elem_id="show-config")
            self.command = gr.Textbox(show_label=False, elem_id="train-command", buttons=["copy"])
            self.config_yaml = gr.Code(language="yaml", label="config.yaml", elem_id="train-config")

    # ---- wiring ----------------------------------------------------------------------------------

    def show_offer(self, event, sentence: gr.State) -> None:
        """After `event` (the preview, the scan), which put rewards.asks.warmup_offer's sentence (or None) into `sentence`,
        show it in the Format warm-up accordion and open it (the settings tabs call this: they import no other tab)."""
        event.then(offer_updates, inputs=sentence, outputs=[self.warmup_offer, self.warmup_box], api_visibility="private",
                   show_progress="hidden")

    def wire(self, demo: gr.Blocks, form: "PageForm", worker: InferenceWorker, poller: Poller) -> None:
        workspace, runs_dir = form.workspace, form.runs_dir
        self.runs_dir = runs_dir

        def show_config(state, *values):
            cfg, problems = form.config_from(state, list(values))
            if cfg is None:
                return form.problems_markdown(problems), "", ""
            path = workspace.write(DRAFT_CONFIG, cfg.to_yaml())
            return form.problems_markdown(problems), f"rloo-studio train {shlex.quote(str(path))}", cfg.to_yaml()

        def start_run(state, values: list, confirmed: bool) -> list:
            """[problems, watched run, command, config, Start's question]: the run started, or why not, or (unless
            `confirmed`) the question Start asks when pinned examples fail, with the form it asks about."""
            code = values[form.code_index]
            cfg, problems = form.config_from(state, list(values))
            if problems:
                return [form.problems_markdown(problems), gr.update(), gr.update(), gr.update(), {}]
            question = None if confirmed else form.rewards_tab.pinned_question(cfg, code, workspace.read(DRAFT_PINNED))
            if question:
                return ["", gr.update(), gr.update(), gr.update(), {"text": question, "stamp": stamp_of(values)}]
            return started(cfg, code) + [{}]

        def start(state, *values):
            return start_run(state, list(values), confirmed=False)

        def start_anyway(state, *values):
            return start_run(state, list(values), confirmed=True)

        def started(cfg: RunConfig, code: str | None) -> list:
            est, device = form.estimate_for(cfg)
            # On a GPU an estimate past its memory stops Start (CUDA would fail at once); in RAM the run may still go,
            # swapping, so Start goes on and says so (below), as the Model & hardware tab does.
            if est is not None and est.verdict == "exceeds" and not est.on_cpu:
                judged = any(part.startswith("judge") for part in est.parts)
                return [f"**This will not fit {device}:** the estimated peak is {est.total_gib:.1f} GiB"
                        + (", the LLM judge's own copy of its weights included" if judged else "") + ". Press **Shrink to fit** in "
                        "the Model & hardware tab for settings that do, or choose a smaller model"
                        + (f" — or a smaller judge, or “{text.JUDGE_SERVER_CHOICE}” (Rewards tab), which takes nothing from this GPU"
                           if judged else "") + ".", gr.update(), gr.update(), gr.update()]
            workspace.write(DRAFT_CONFIG, cfg.to_yaml())
            workspace.write(DRAFT_REWARDS, code or "")
            if not cfg.output.run_name:
                cfg.output.run_name = form.run_name(cfg)
            try:
                worker.shutdown()  # the training worker gets the GPU to itself
                run_dir = jobs.start_run(cfg, runs_dir, reward_source=code, checked=True)  # config_from validated it
            except StudioError as exc:
                return [f"**Could not start:** {page_words(exc.message())}".replace("\n", "  \n"), gr.update(), gr.update(), gr.update()]
            pins = workspace.read(DRAFT_PINNED)
            if pins is not None:  # the pinned examples belong to the reward code the run trains with
                (run_dir / PINNED_RUN_FILE).write_text(pins, encoding="utf-8")
            config_text = (run_dir / runs.CONFIG_FILE).read_text(encoding="utf-8")
            memory = (f"⚠️ **Started, but the estimated peak of {est.total_gib:.1f} GiB is more than {device}** can spare: the "
                      "computer may slow to a crawl (swapping), or the system may end the run. Stop it and press **Shrink to "
                      "fit** (Model & hardware tab) if it does." if est is not None and est.on_cpu and est.verdict == "exceeds" else "")
            return [memory, str(run_dir), f"rloo-studio train {shlex.quote(str(run_dir / runs.CONFIG_FILE))}", config_text]

        start_outputs = [self.problems, form.watched, self.command, self.config_yaml, self.confirm_for]
        for button, fn, name in ((self.start, start, "start_training"), (self.start_anyway, start_anyway, "start_anyway")):
            button.click(fn, inputs=[form.base] + form.inputs, outputs=start_outputs, api_name=name).then(
                self.note_busy, inputs=[self.problems, self.notice_for], outputs=[self.problems, self.notice, self.notice_for],
                api_visibility="private")
        self.cancel.click(lambda: {}, outputs=self.confirm_for, api_name="start_cancel")
        # Answered: the question goes at once, while the run starts (its worker takes a while to report on a busy machine).
        self.start_anyway.click(lambda: {}, outputs=self.confirm_for, queue=False, api_visibility="private", show_progress="hidden")
        # Start's question shows while the form is as it was asked about: a changed field makes Start ask again.
        form.derived.on(form.inputs + [self.confirm_for], confirm_shown, inputs=[self.confirm_for] + form.inputs,
                        outputs=[self.confirm_row, self.confirm])

        def estimate_time(state, *values):
            *values, train_rows, minutes = values
            # With what it was measured from: the line above it says when one of those fields changes (freshness.py).
            stamp = self.time_outdated.stamp_from(form.inputs, values)
            for shown, measured in measured_time(state, values, train_rows, minutes):
                yield shown, measured, stamp

        def measured_time(state, values: list, train_rows, minutes):
            """The trial's stages as it runs, then its result: (markdown, the Measurement as a dict or skip)."""
            cfg, problems = form.config_from(state, list(values))
            if problems:
                yield form.problems_markdown(problems), gr.skip()
                return
            busy = jobs.active_run(runs_dir)
            if busy is not None:
                yield refuse(f"**Could not measure:** run `{busy.name}` is training, and a trial beside it would time both "
                             "of them wrong. Measure again when it has finished or stopped."), gr.skip()
                return
            yield progress_markdown(None, 0.0), gr.skip()
            worker.shutdown()  # the trial gets the memory (and GPU) to itself, as a run does
            if not train_rows:  # the Data tab has not been shown yet: count the rows as it would (a hub source in a child)
                read = peek_in_child if is_hub_source(cfg.data.source, cfg.base_dir) else peek
                train_rows = read(cfg.data, cfg.base_dir).get("train_rows")
            # The trial runs in a thread; this generator shows its stage each second (a worker loading for minutes
            # reads as loading, with its seconds, not as a bar stuck at 0 %).
            latest, outcome = [None], {}

            def run_trial():
                try:
                    outcome["m"] = trial.measure(cfg, reward_source=values[form.code_index], train_rows=train_rows or None,
                                                 on_progress=lambda now: latest.__setitem__(0, now))
                except StudioError as exc:
                    outcome["error"] = exc

            thread = threading.Thread(target=run_trial, name="time-trial", daemon=True)
            clicked = time.time()
            thread.start()
            while thread.is_alive():
                thread.join(PROGRESS_EVERY_S)
                if thread.is_alive():
                    yield progress_markdown(latest[0], time.time() - clicked), gr.skip()
            if "error" in outcome:
                yield refuse(f"**Could not measure:** {page_words(outcome['error'].message())}".replace("\n", "  \n")), None
                return
            m = outcome["m"]
            yield time_markdown(m, *form.estimate_for(cfg), minutes=minutes), m.to_dict()

        self.estimate_time.click(estimate_time, inputs=[form.base] + form.inputs + [form.data_rows, self.minutes],
                                 outputs=[self.time_estimate, self.time_measured, self.time_outdated.stamp],
                                 api_name="estimate_time", show_progress="hidden")

        def replan(measured, minutes, state, *values):
            """Another time budget: the last trial's plan for it, without measuring again."""
            if not measured:
                return gr.skip()
            cfg, _ = form.config_from(state, list(values))
            return time_markdown(trial.Measurement.from_dict(measured), *(form.estimate_for(cfg) if cfg else (None, None)),
                                 minutes=minutes)

        self.minutes.change(replan, inputs=[self.time_measured, self.minutes, form.base] + form.inputs,
                            outputs=self.time_estimate, api_visibility="private", show_progress="hidden")
        # Every field but the run's name can change the time a run takes (the reward code's own time included).
        self.time_outdated.watch(form.derived, [c for c in form.inputs if c is not self.run_name])
        # What Start would refuse, said as the person types (the same check as Start's: form.config_from), so a message
        # such as the batch's divisibility goes once the field is fixed, not at the next Start.
        form.derived.on(form.inputs, lambda state, *values: form.problems_markdown(form.config_from(state, list(values))[1]),
                        inputs=[form.base] + form.inputs, outputs=self.problems)

        self.stop.click(self.stop_notice, inputs=form.watched, outputs=[self.notice, self.notice_for], api_name="stop_training")

        def resume(run_dir):
            message, run_dir = resume_run(worker, run_dir)
            return message, run_dir, self.lasting(message, run_dir)

        self.resume.click(resume, inputs=form.watched, outputs=[self.notice, form.watched, self.notice_for], api_name="resume_training")

        def poll(run_dir):
            view = jobs.view(run_dir) if run_dir and Path(run_dir).is_dir() else None
            return TrainTab.render(view)

        poller.tick(self.poll_changes, inputs=[form.watched, self.shown], outputs=self.outputs + [self.shown])
        poller.tick(self.alerts_of, inputs=form.watched, outputs=self.alerts, only_changes=True)
        # Stop, Resume and their mirror (buttons_live) have this one writer: the poll's ticks run one at a time. A second
        # writer (the watched run's change) that read the mirror before the other's update landed could leave it saying
        # "enabled" over a disabled button, and no later tick would send the button again. A newly watched run's buttons
        # follow within a tick.
        poller.tick(run_buttons, inputs=[form.watched, self.buttons_live], outputs=[self.stop, self.resume, self.buttons_live])
        # One handler on the watched run's change, the alerts chained after it (two would restart each other: derived.py).
        form.watched.change(in_order(poll, self.outputs), inputs=form.watched, outputs=self.outputs, api_name="run_status").then(
            self.alerts_of, inputs=form.watched, outputs=self.alerts, api_name="run_alerts", trigger_mode="always_last")
        # The lines derived from several fields, through the form's one change event (derived.py): a form load sets them
        # all at once, and the line computed from half-updated fields must not land last and stay ("4 completions =
        # 0.5 prompts × 8" beside k = 8, batch 128): that event's last run reads the final values.
        judge = form.rewards_tab.judge
        # The loaded config's keys the form does not show (form.base) count too: an input, not a trigger (a preset that
        # changes them also sets the batch fields, and so re-runs these).
        seed = self.fields["seed"]  # said in the line, and the one field of it outside the batch keys
        form.derived.on(self.batch_keys + [seed], batch_summary, inputs=self.batch_keys + [form.base, seed],
                        outputs=self.batch_summary)
        cost_inputs = self.batch_keys + [judge.use, judge.source]
        form.derived.on(cost_inputs, judge_cost_markdown, inputs=cost_inputs + [form.base], outputs=self.judge_cost)
        sizes = [self.fields[k] for k in ("num_generations", "per_device_train_batch_size", "max_steps", "num_iterations")]
        form.derived.on([form.data_rows] + sizes, epochs_markdown, inputs=[form.data_rows] + sizes + [form.base], outputs=self.epochs)
        poller.tick(self.notice_now, inputs=self.notice_for, outputs=[self.notice, self.notice_for])
        self.show_config.click(show_config, inputs=[form.base] + form.inputs, outputs=[self.problems, self.command, self.config_yaml],
                               api_name="show_config")

    # ---- transient messages ------------------------------------------------------------------------

    @staticmethod
    def _state_of(run_dir: str | None) -> str | None:
        return runs.effective_state(runs.read_status(run_dir)) if run_dir and Path(run_dir).is_dir() else None

    @staticmethod
    def lasting(message: str, run_dir: str | None, while_states: tuple[str, ...] | None = None) -> dict:
        """A message that holds while `run_dir` stays in one of `while_states` (default: its present state)."""
        states = while_states or (TrainTab._state_of(run_dir),)
        return {"text": message, "run": run_dir, "states": list(states)}

    @staticmethod
    def notice_now(notice_for: dict | None) -> list:
        """[notice text, notice state] as the run folder says now: "" once the state the message spoke of has ended."""
        if not notice_for or not notice_for.get("text"):
            return [gr.skip(), notice_for or {}]
        if TrainTab._state_of(notice_for.get("run")) in notice_for.get("states", ()):
            return [gr.skip(), notice_for]
        return ["", {}]

    @staticmethod
    def stop_notice(run_dir: str | None) -> tuple[str, dict]:
        """Stop's message and how long it holds. An accepted stop speaks of the whole stopping, so it holds while the
        run is active, not while the state read after the request lasts: on a busy machine the worker may already have
        written `stopped` by then, and a notice holding while `stopped` would never end."""
        if not run_dir:
            return "No run to stop.", {}
        accepted = TrainTab._state_of(run_dir) in runs.ACTIVE_STATES
        message = jobs.stop_run(run_dir)
        return message, TrainTab.lasting(message, run_dir, runs.ACTIVE_STATES if accepted else None)

    def note_busy(self, problems: str, notice_for: dict):
        """A Start refused because another run trains is a notice that ends with that run, not a lasting problem."""
        busy = jobs.active_run(self.runs_dir)
        if problems.startswith("**Could not start:**") and busy is not None:
            return "", problems, self.lasting(problems, str(busy), runs.ACTIVE_STATES)
        return gr.skip(), gr.skip(), notice_for

    # ---- the form ----------------------------------------------------------------------------------

    @property
    def inputs(self) -> list:
        return [self.fields[k] for k in FIELD_ORDER] + [self.run_name, self.warmup_on, self.warmup_steps, self.warmup_source,
                                                         self.warmup_template, self.warmup_table]

    @property
    def outputs(self) -> list:
        return [self.status, self.progress, self.reward_plot, self.length_plot, self.samples, self.log]

    @staticmethod
    def alerts_of(run_dir: str | None) -> str:
        """The watched run's health alerts as badges, read from its folder now."""
        return run_view.alerts_html(run_dir if run_dir and Path(run_dir).is_dir() else None)

    def poll_changes(self, run_dir: str | None, shown: dict | None) -> list:
        """The outputs whose files changed since this page last showed them (`gr.skip()` for the others), then what it
        shows now. A finished run's page is left alone: re-sent plots and tables cost the browser a redraw each tick."""
        run_dir = run_dir if run_dir and Path(run_dir).is_dir() else None
        marks = {"run": run_dir, **file_marks(run_dir)}
        shown = shown or {}
        active = bool(run_dir) and runs.effective_state(runs.read_status(run_dir)) in runs.ACTIVE_STATES
        if marks == shown and not active:  # a training run's status line counts its time even between steps
            return [gr.skip()] * len(self.outputs) + [shown]
        rendered = TrainTab.render(jobs.view(run_dir) if run_dir else None)

        def unchanged(name: str) -> bool:
            return bool(shown) and shown.get("run") == run_dir and shown.get(name) == marks.get(name)

        kept = [False, False] + [unchanged(n) for n in (runs.METRICS_FILE, runs.METRICS_FILE, runs.SAMPLES_FILE, runs.LOG_FILE)]
        return [gr.skip() if keep else value for keep, value in zip(kept, rendered)] + [marks]

    @staticmethod
    def render(view: RunView | None) -> list:
        return [run_view.status_markdown(view) + warmup_markdown(view.status if view else None)
                + trainer_markdown(view.path if view else None),
                run_view.progress_html(view) + run_view.step_time_html(view),
                run_view.plot_update(run_view.reward_frame(view)),
                run_view.plot_update(run_view.length_frame(view), from_zero=True), run_view.samples_rows(view),
                run_view.readable_log(view.log_tail) if view else ""]

    @staticmethod
    def apply(cfg: dict, values: list) -> list[str]:
        *field_values, run_name = values[:-len(WARMUP_LABELS)]
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
        return problems + apply_warmup(cfg, values[-len(WARMUP_LABELS):])

    @staticmethod
    def values_from(cfg: RunConfig) -> list:
        warm = cfg.warmup
        return [cfg.rloo_value(k) for k in FIELD_ORDER] + [cfg.output.run_name or "", warm.enabled, warm.steps, warm.source,
                                                           warm.template, pairs_text(warm.examples)]


# ---- the format warm-up (engine/warmup.py; the `warmup` config section) -------------------------------------------

WARMUP_WHY = ("When the Rewards tab's preview or the scan finds that (almost) no completion has the format your rewards look "
              "for, every prompt's completions tie at the same reward and RLOO has nothing to learn from. A format warm-up "
              "first trains the adapter for a few dozen supervised steps on replies in that format, then RLOO starts. It is "
              "part of the run (its steps come before RLOO's step 1), resumable, and in the exported adapter.")
# "Format" in every label: the learning-rate schedule's warm-up steps are another thing.
WARMUP_LABELS = {"enabled": "Warm up the format first", "steps": "Format warm-up steps", "source": "Format warm-up replies from",
                 "template": "Format warm-up reply template", "examples": "Format warm-up replies written by hand"}
WARMUP_SOURCES = {"answer_column": "the answer column, in the template", "pinned": "the pinned examples (Rewards tab)",
                  "table": "the replies written below"}
PAIR_SPLIT = " => "


def pairs_text(examples: list) -> str:
    """warmup.examples as the page's text box shows them: one `prompt => reply` per line."""
    return "\n".join(f"{ex.get('prompt', '')}{PAIR_SPLIT}{ex.get('reply', '')}" for ex in examples or [] if isinstance(ex, dict))


def apply_warmup(cfg: dict, values: list) -> list[str]:
    """The accordion's values into the config's `warmup` section (its other keys, e.g. learning_rate, kept as loaded)."""
    enabled, steps, source, template, table = values
    warm = cfg.setdefault("warmup", {})
    warm.update(enabled=bool(enabled), source=source or "answer_column", template=template or "")
    problems = []
    try:
        warm["steps"] = int(steps)
    except (TypeError, ValueError):
        problems.append(f"Train: “{WARMUP_LABELS['steps']}” is empty" if enabled else "")
    pairs = []
    for i, line in enumerate((table or "").splitlines()):
        if not line.strip():
            continue
        prompt, split, reply = line.partition(PAIR_SPLIT.strip())
        if not split and warm["source"] == "table" and enabled:
            problems.append(f"Train: “{WARMUP_LABELS['examples']}”, line {i + 1}: no “{PAIR_SPLIT.strip()}” between the "
                            "prompt and the reply (e.g. What is 2 + 3? => <answer>5</answer>)")
            continue
        pairs.append({"prompt": prompt.strip(), "reply": reply.strip()})
    warm["examples"] = pairs
    # The answer column the Data tab set for the rewards is the one the template takes its answer from.
    answer = next((r.get("params", {}).get("answer_column") for r in cfg.get("rewards", []) if isinstance(r, dict)
                   and r.get("params", {}).get("answer_column")), None)
    if answer:
        warm["answer_column"] = answer
    return [p for p in problems if p]


def offer_updates(sentence: str | None) -> list:
    """The accordion's offer line and the accordion itself after a preview or a scan (rewards.asks.warmup_offer's sentence):
    opened with the sentence when it offers the warm-up; else the line is cleared and the accordion left as it is."""
    return [sentence or "", gr.update(open=True) if sentence else gr.update()]


def warmup_markdown(status: dict | None) -> str:
    """The watched run's format warm-up, under its status: its progress while it runs, then what it did; the charts
    show RLOO's steps, which begin after it."""
    warm = (status or {}).get("warmup")
    if not isinstance(warm, dict):
        return ""
    if not warm.get("finished"):
        return (f"\n\n**Format warm-up:** step {warm.get('step', 0)} of {warm.get('steps')} (supervised, before RLOO's step 1; "
                "the charts begin with RLOO's steps)")
    return f"\n\n**Format warm-up (before RLOO's step 1 on the charts):** {warm.get('line') or 'done'}"


def run_buttons(run_dir: str | None, live: list | None) -> tuple:
    """(Stop, Resume, [whether each is enabled]): Stop while the watched run is queued, training or stopping; Resume once
    it stopped or failed (runs.RESUMABLE_STATES: a finished run has no step left). Each button is sent only when it
    changes (the poll asks every few seconds)."""
    state = runs.effective_state(runs.read_status(run_dir)) if run_dir and Path(run_dir).is_dir() else None
    resumable = state in runs.RESUMABLE_STATES and (Path(run_dir) / runs.CONFIG_FILE).is_file()
    now = [state in runs.ACTIVE_STATES, resumable]
    was = list(live) if isinstance(live, (list, tuple)) and len(live) == 2 else [None, None]
    return (*(gr.skip() if bool(w) == n and w is not None else gr.update(interactive=n) for w, n in zip(was, now)), now)


def trainer_markdown(run_dir: str | Path | None) -> str:
    """What the watched run's trainer used, from its trainer_args.json (read back from the built trainer): the batch
    plan and the step's other arguments, and any value the trainer holds other than the settings gave it. "" before
    the trainer is built (or for a run from an earlier version, which has no such file)."""
    recorded = runs.read_json(Path(run_dir) / runs.TRAINER_ARGS_FILE) if run_dir else None
    held = (recorded or {}).get("args")
    if not held:
        return ""
    try:
        line = effective_line(held, int(held.get("world_size") or 1))
    except (KeyError, TypeError, ValueError):
        return ""
    changed = "".join(f"  \n⚠️ The trainer ({recorded.get('trainer')}) uses {key} = {used!r}, not the {given!r} the settings give."
                      for key, (given, used) in (recorded.get("changed") or {}).items())
    return f"\n\n**As the trainer runs it:** {line}{changed}"


def file_marks(run_dir: str | Path | None,
               names: tuple[str, ...] = (runs.STATUS_FILE, runs.METRICS_FILE, runs.SAMPLES_FILE, runs.LOG_FILE)) -> dict:
    """{file name: [size, modification time]} of the run's files a poll shows (None where a file is missing); by default
    those the Train tab shows."""
    marks = {}
    for name in names:
        try:
            stat = (Path(run_dir) / name).stat() if run_dir else None
        except OSError:
            stat = None
        marks[name] = [stat.st_size, stat.st_mtime_ns] if stat else None
    return marks


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


TIME_ESTIMATE_HINT = ("Measures loading and two real steps with these settings (a short trial run, about a minute on "
                      "the demo), then says how many steps fit the time you have and how long the steps set take.")
PROGRESS_EVERY_S = 1.0  # how often the page's line counts the trial's seconds


def progress_markdown(now: "trial.Progress | None", waited_s: float) -> str:
    """The running trial's line on the page: its stage and seconds; before the trial's first look at its folder (while
    its worker is being started), the seconds since the click."""
    return f"{MEASURING} {now.words() if now else f'starting the trial run ({waited_s:.0f} s)…'}"


MEASURING = "**Measuring:**"  # how the trial's progress line starts: a result kept for a reload never does (app.py)


def time_markdown(m: "trial.Measurement", est=None, device: str | None = None, minutes: float | None = None) -> str:
    """A time trial's result on the page: the plan for `minutes` first (the question asked), then the measured times,
    each apart, and the other facts as a list, the GPU's measured peak beside the estimate."""
    first, plan, *rest = trial.summary_lines(m, minutes)
    # The trainer's own arguments (optimiser and schedule names, fp16 = True) behind "details"; the line above the
    # settings says the same in words.
    trainers = [line for line in rest if line.startswith(TRAINER_LINES)]
    lines = [f"**{plan[0].upper() + plan[1:]}.**", "", f"Measured: {first}."] + [f"- {line}" for line in rest if line not in trainers]
    if est is not None and m.peak_gpu_gib is not None:
        lines.append(f"- the memory estimate for {device or 'this GPU'} was {est.total_gib:.2f} GiB")
    if m.epochs is None:
        lines.append("- epochs: not known: the data could not be read (the Data tab says why)")
    changed = sum(line.startswith(TRAINER_LINES[1]) for line in trainers)
    if changed:  # a difference from the settings is said where it is read; its names are in the fold
        lines.append(f"- ⚠️ the trainer used a value other than the settings give for {changed} of its arguments (details)")
    if trainers:
        lines += ["", "<details><summary>details</summary>", ""] + [f"- {line}" for line in trainers] + ["", "</details>"]
    return "\n".join(lines)


TRAINER_LINES = ("as the trial's trainer ran it:", "the trainer used ")  # trial.summary_lines' lines in the trainer's names


def confirm_shown(confirm_for: dict | None, *values) -> list:
    """[the question's row, its text]: Start's question (`confirm_for`) shows while the form is as it was asked about."""
    asked = confirm_for or {}
    current = bool(asked.get("text")) and asked.get("stamp") == stamp_of(values)
    return [gr.update(visible=current), asked.get("text", "") if current else ""]


def epochs_markdown(train_rows, k, batch, max_steps, num_iterations=1, base: dict | None = None) -> str:
    """How many times each training prompt would be seen ("54 rows × 150 steps = 37 epochs"), said before Start."""
    try:
        rows, k, batch, steps, passes = int(train_rows), int(k), int(batch), int(max_steps), int(num_iterations or 1)
    except (TypeError, ValueError):
        return ""
    if rows <= 0 or k <= 0 or batch < k or steps <= 0 or passes <= 0:
        return ""
    plan = form_rloo(base, k, batch, passes).batch_plan()
    needed = prompts_needed(plan)
    if rows < needed:  # no step can be made: how often a prompt would be seen means nothing
        fits = per_device_that_fills(rows, plan)
        label = text.RLOO_FIELDS["per_device_train_batch_size"][0]
        prompts = fits * plan.processes * plan.steps_per_generation // plan.num_generations if fits else 0
        prompts_word = f"{prompts} prompt{'s' if prompts != 1 else ''}"
        fix = (f"Lower “{label}” to {fits} ({prompts_word} × "
               f"{plan.num_generations} completions), or add rows." if fits and plan.steps_per_generation == 1 else
               f"Lower “{label}” to {fits}: with the {plan.steps_per_generation} accumulation steps a preset or Shrink to fit set "
               f"(no field on this page; Shrink to fit's Undo puts them back), that is "
               f"{fits * plan.processes * plan.steps_per_generation} completions, "
               f"{prompts_word} × {plan.num_generations}. "
               "Or add rows." if fits else
               f"Even a “{label}” of 1 needs more: each generation batch is {plan.steps_per_generation} of them (the "
               f"{plan.accumulation} accumulation steps a preset or Shrink to fit set; its Undo puts the batch back). Add rows, "
               f"or lower the batch.")
        return (f"⛔ Your data has {rows} training row{'s' if rows != 1 else ''}, but one generation batch needs {needed} prompts "
                f"({plan.generation_batch} completions ÷ {plan.num_generations} per prompt): training would finish at step 0 "
                f"without learning anything. " + fix)
    seen = epochs(rows, plan, steps)
    line = epochs_sum(rows, steps, plan.new_prompts_per_step, bold=True) + "."
    if too_many_epochs(seen):
        return ("⚠️ " + line + " The model may learn these prompts' answers by heart rather than the skill: use fewer "
                f"“{text.RLOO_FIELDS['max_steps'][0]}” (about {steps_for_epochs(rows, plan)} for "
                f"{MANY_EPOCHS} epochs) or more data.")
    return line

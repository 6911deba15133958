"""The Runs tab: every run in the runs folder with its state, step, last reward and date; one run's detail.

From here a person watches a run in the Train tab, resumes a stopped one, or deletes one — only
after ticking a confirmation. Reads run directories through `runs` and `jobs`; trains nothing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from .. import runs
from ..workers import jobs
from ..errors import StudioError
from .plots import in_order
from . import compare_runs, run_view, text
from .pickers import refuse
from .train_tab import TrainTab, file_marks
from .poller import Poller

if TYPE_CHECKING:
    from .form import PageForm


def runs_table(runs_dir: Path, listed: list | None = None) -> list[list]:
    """The Runs tab's list: a row per run (`listed`: the runs as `runs.list_runs` just read them)."""
    rows = []
    for r in runs.list_runs(runs_dir) if listed is None else listed:
        step = f"{r.step}/{r.max_steps}" if r.max_steps else str(r.step)
        reward = round(r.last_reward, 3) if isinstance(r.last_reward, (int, float)) else None
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started_at)) if r.started_at else ""
        rows.append([r.run_id, r.state, step, reward, started, r.model or ""])
    return rows


# The files a run's detail is read from: the poll sends a part again when its file changed.
DETAIL_FILES = (runs.STATUS_FILE, runs.METRICS_FILE, runs.CONFIG_FILE, runs.LOG_FILE)


def run_choices(runs_dir: Path) -> list[str]:
    return [r.run_id for r in runs.list_runs(runs_dir)]


class RunsTab:
    def __init__(self, runs_dir: Path):
        self.runs_dir = runs_dir
        gr.Markdown(f"Runs are folders under `{runs_dir}`; each holds its config, metrics, samples, log and checkpoints.")
        self.table = gr.Dataframe(headers=text.RUNS_HEADERS, interactive=False, elem_id="runs-table", wrap=True)
        with gr.Row():
            self.refresh = gr.Button("Refresh", elem_id="runs-refresh", scale=1)
            self.picker = gr.Dropdown([], label="Open a run", elem_id="run-picker", scale=3)
        self.status = gr.Markdown(elem_id="run-detail-status")
        self.alerts = gr.HTML("", elem_id="run-detail-alerts")  # the open run's health alerts (alerts.jsonl)
        self.plot = gr.LinePlot(run_view.reward_frame(None), x="step", y="value", color="series", title="Reward", height=280,
                                elem_id="run-detail-plot")
        with gr.Row():
            self.watch = gr.Button("Watch in the Train tab", elem_id="run-watch")
            self.resume = gr.Button("Resume this run", elem_id="run-resume")
        self.message = gr.Markdown(elem_id="runs-message")  # next to the buttons that cause its messages
        self.message_for = gr.State({})  # {"text", "run", "states"}: cleared by the poll once that run's state changes
        with gr.Accordion("Config", open=False):
            self.config = gr.Code(language="yaml", show_label=False, elem_id="run-detail-config")
        with gr.Accordion("Log (last lines)", open=False):
            self.log = gr.Textbox(lines=10, max_lines=10, show_label=False, elem_id="run-detail-log")
        with gr.Accordion("Delete", open=False):
            self.confirm = gr.Checkbox(False, label=text.DELETE_CONFIRM, elem_id="run-delete-confirm")
            self.delete = gr.Button("Delete run", variant="stop", elem_id="run-delete")
            self.delete_message = gr.Markdown(elem_id="runs-delete-message")
        with gr.Accordion("Compare runs side by side", open=False, elem_id="compare-runs"):
            with gr.Row():
                # Custom values allowed: the choices are filled when the page loads, and a run id typed or sent through the
                # API is checked against the runs folder (an unknown one is named in the note).
                self.compare_pick = gr.Dropdown([], multiselect=True, max_choices=compare_runs.MAX_RUNS, scale=3, allow_custom_value=True,
                                                label=f"Runs to compare (2 to {compare_runs.MAX_RUNS})", elem_id="compare-pick")
                self.compare_curve = gr.Radio(list(compare_runs.CURVES), value=compare_runs.REWARD_TOTAL, label="Curve", scale=2,
                                              elem_id="compare-curve")
            self.compare_note = gr.Markdown(elem_id="compare-note")
            self.compare_plot = gr.LinePlot(run_view.reward_frame(None), x="step", y="value", color="series", height=320, elem_id="compare-plot")
            self.compare_config = gr.Dataframe(label="Settings that differ", interactive=False, wrap=True, elem_id="compare-config",
                                               headers=["setting"])
            self.compare_eval = gr.Dataframe(headers=compare_runs.EVAL_HEADERS, interactive=False, wrap=True, elem_id="compare-eval",
                                             label="Their last evaluations (Evaluate tab; brackets: 95 % intervals)")
        self.shown = gr.State(None)  # the runs' states the page shows: the poll sends only changes

    def wire(self, demo: gr.Blocks, form: "PageForm", resume, poller: Poller | None = None) -> None:
        """`resume(run_dir) -> (message, run_dir)` is the Train tab's resume (one rule for both buttons)."""
        runs_dir = self.runs_dir
        detail_outputs = [self.status, self.plot, self.config, self.log]
        detail = in_order(self.detail, detail_outputs)
        self.refresh.click(self.listing, inputs=self.picker, outputs=[self.table, self.picker], api_name="list_runs").then(
            detail, inputs=self.picker, outputs=detail_outputs, api_visibility="private")
        demo.load(self.listing, outputs=[self.table, self.picker], api_visibility="private")
        # One handler of the picker's change, the alerts chained after it (two would restart each other: derived.py).
        self.picker.change(detail, inputs=self.picker, outputs=detail_outputs, api_name="open_run").then(
            self.alerts_of, inputs=self.picker, outputs=self.alerts, api_name="run_alerts_of", trigger_mode="always_last")
        self.table.select(self.row_clicked, inputs=None, outputs=self.picker, api_visibility="private")
        if poller is not None:
            # Every state shown is re-read from the run folders: the list and the open run's detail change together.
            poller.tick(self.poll, inputs=[self.picker, self.shown], outputs=[self.table, self.picker] + detail_outputs + [self.shown])
            poller.tick(self.alerts_of, inputs=self.picker, outputs=self.alerts, only_changes=True)
        self.watch.click(lambda run_id: (str(runs.run_folder(runs_dir, run_id) or "") or None), inputs=self.picker, outputs=form.watched,
                         api_name="watch_run")

        def resume_from_runs(run_id):
            folder = runs.run_folder(runs_dir, run_id)
            if folder is None:
                return refuse("Pick a run first."), gr.update()
            return resume(str(folder))  # a refusal is a toast too (resume_run)

        self.resume.click(resume_from_runs, inputs=self.picker, outputs=[self.message, form.watched], api_name="resume_run").then(
            TrainTab.lasting, inputs=[self.message, form.watched], outputs=self.message_for, api_visibility="private")
        if poller is not None:  # "Resuming …" ends with the resuming, as the Train tab's notices do
            poller.tick(TrainTab.notice_now, inputs=self.message_for, outputs=[self.message, self.message_for])

        def delete(run_id, confirmed, current):
            try:
                message = self.delete_run(run_id, confirmed)
            except StudioError as exc:
                return [exc.message(), gr.update(), gr.update(), False, current]
            table, picker = self.listing()
            if current and Path(current).name == run_id and not Path(current).exists():
                current = None
            return [message, table, picker, False, current]

        compare_outputs = [self.compare_note, self.compare_plot, self.compare_config, self.compare_eval]
        compare = in_order(self.compare, compare_outputs)
        self.compare_pick.change(compare, inputs=[self.compare_pick, self.compare_curve], outputs=compare_outputs,
                                 api_name="compare_runs")
        self.compare_curve.change(compare, inputs=[self.compare_pick, self.compare_curve], outputs=compare_outputs,
                                  api_visibility="private")
        for event in (self.refresh.click, demo.load):
            event(self.compare_choices, inputs=self.compare_pick, outputs=self.compare_pick, api_visibility="private")

        self.delete.click(delete, inputs=[self.picker, self.confirm, form.watched],
                          outputs=[self.delete_message, self.table, self.picker, self.confirm, form.watched], api_name="delete_run")

    @staticmethod
    def row_clicked(evt: gr.SelectData):
        row = evt.row_value or []
        return gr.update(value=row[0]) if row else gr.skip()

    def poll(self, selected: str | None, shown):
        """[table, picker, status, plot, config, log, shown]: each sent only when what it shows changed.

        The tab is polled while the person looks at another one too, and while a run trains its step changes every few
        seconds: re-sending the config's code view, the plot and the list with each step cost the browser a redraw of
        each, about a tenth of a core (benchmarks/page_training_cpu.py).
        """
        shown = shown if isinstance(shown, dict) else {}
        listed = runs.list_runs(self.runs_dir)
        choices = [r.run_id for r in listed]
        value = selected if selected in choices else (choices[0] if choices else None)
        rows = [[r.run_id, r.state, r.step, r.last_reward] for r in listed]
        now = {"runs": rows, "choices": choices, "value": value, "row": next((row for row in rows if row[0] == value), None),
               **file_marks(runs.run_folder(self.runs_dir, value), DETAIL_FILES)}
        if now == shown:
            return [gr.skip()] * 6 + [shown]

        def changed(*keys: str) -> bool:
            return any(now[k] != shown.get(k) for k in keys)

        table = runs_table(self.runs_dir, listed) if changed("runs") else gr.skip()
        picker = gr.update(choices=choices, value=value) if changed("choices", "value") else gr.skip()
        # Which files each part of the detail is read from (the status line also from the run's row in the list: a run
        # whose process has gone is no longer training, though no file changed).
        sources = [("value", "row", runs.STATUS_FILE, runs.METRICS_FILE), ("value", runs.METRICS_FILE),
                   ("value", runs.CONFIG_FILE), ("value", runs.LOG_FILE)]
        detail = [part if changed(*keys) else gr.skip() for part, keys in zip(self.detail(value), sources)]
        return [table, picker] + detail + [now]

    def listing(self, selected: str | None = None):
        choices = run_choices(self.runs_dir)
        value = selected if selected in choices else (choices[0] if choices else None)
        return runs_table(self.runs_dir), gr.update(choices=choices, value=value)

    def detail(self, run_id: str | None) -> list:
        folder = runs.run_folder(self.runs_dir, run_id)
        if folder is None or not (folder / runs.STATUS_FILE).exists():
            return ["Pick a run above.", run_view.reward_frame(None), "", ""]
        view = jobs.view(folder)
        config_path = folder / runs.CONFIG_FILE
        config = config_path.read_text(encoding="utf-8") if config_path.exists() else "# config.yaml is missing"
        return [run_view.status_markdown(view), run_view.plot_update(run_view.reward_frame(view)), config, run_view.readable_log(view.log_tail)]

    def compare_choices(self, picked: list[str] | None):
        choices = run_choices(self.runs_dir)
        return gr.update(choices=choices, value=[r for r in (picked or []) if r in choices])

    def compare(self, picked: list[str] | None, curve: str) -> list:
        """[note, chart, settings that differ, evaluations] for the picked runs (2 to MAX_RUNS)."""
        folders = {r: runs.run_folder(self.runs_dir, r) for r in picked or []}
        unknown = [r for r, folder in folders.items() if folder is None or not (folder / runs.STATUS_FILE).exists()]
        picked = [r for r in folders if r not in unknown]
        not_found = f" No run named {', '.join(f'`{r}`' for r in unknown)} in `{self.runs_dir}`." if unknown else ""
        if len(picked) < 2:
            empty = {"headers": ["setting"], "data": []}
            return [f"Pick two to {compare_runs.MAX_RUNS} runs to see them side by side.{not_found}", run_view.plot_update(None), empty,
                    {"headers": compare_runs.EVAL_HEADERS, "data": []}]
        run_dirs = [folders[r] for r in picked]
        frame, missing = compare_runs.curve_frame(run_dirs, curve)
        headers, rows = compare_runs.config_differences(run_dirs)
        note = (compare_runs.missing_note(curve, missing) or (("1 setting differs." if len(rows) == 1 else f"{len(rows)} settings differ.") if rows else "Their settings are the same.")) + not_found
        return [note, run_view.plot_update(frame), {"headers": headers, "data": rows},
                {"headers": compare_runs.EVAL_HEADERS, "data": compare_runs.eval_rows(run_dirs)}]

    def alerts_of(self, run_id: str | None) -> str:
        """The open run's health alerts as badges, read from its folder now ("" for no run)."""
        folder = runs.run_folder(self.runs_dir, run_id)
        if folder is None or not (folder / runs.STATUS_FILE).exists():
            return ""
        return run_view.alerts_html(folder)

    def delete_run(self, run_id: str | None, confirmed: bool) -> str:
        folder = runs.run_folder(self.runs_dir, run_id)
        if folder is None:
            return "Pick a run first." if not run_id else f"There is no run `{run_id}` in `{self.runs_dir}`: nothing was deleted."
        if not confirmed:
            return f"Tick “{text.DELETE_CONFIRM}” first: deleting cannot be undone."
        jobs.delete_run(folder)
        return f"Deleted run `{run_id}`."

"""The Evaluate tab: base vs tuned (any or every checkpoint) on held-out prompts, with the run's rewards.

It runs `rloo-studio eval RUN --checkpoint … --json` in a child process (the same command a
person would type), turns its `[eval] side done/total` lines into a progress bar, and shows
eval.json: a table with one row per checkpoint (mean reward, answer accuracy, format rate,
wins/ties/losses against base), a chart over the checkpoints' steps, and example pairs — so a
person can pick the best checkpoint, not just the last. It loads no model itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import gradio as gr
import pandas as pd

from .. import runs
from ..errors import StudioError
from ..inference import InferenceWorker
from .pickers import RunPicker, busy_message, default_checkpoint, not_final_note
from .child import run_cli

EVAL_FILE = "eval.json"
ALL = "all checkpoints"
PROGRESS_LINE = re.compile(r"^\[eval\] (base|final|checkpoint-\d+) (\d+)/(\d+)$")
PLAN_LINE = re.compile(r"^\[eval\] plan prompts=(\d+) checkpoints=(\S*)")
TABLE_HEADERS = ["model", "step", "mean reward", "answer accuracy", "format rate", "wins", "ties", "losses"]
METRICS = (("mean_reward", "mean reward"), ("answer_accuracy", "answer accuracy"), ("format_rate", "format rate"))


def _round(value):
    return round(value, 3) if isinstance(value, (int, float)) else None


def _entries(report: dict) -> list[dict]:
    """Every evaluated checkpoint as {name, step, summary, tuned_vs_base}, oldest first (older eval.json: just `tuned`)."""
    if report.get("checkpoints"):
        return list(report["checkpoints"])
    return [{"name": report.get("checkpoint", "final"), "step": None, "summary": report.get("tuned", {}),
             "tuned_vs_base": report.get("tuned_vs_base", {})}]


def table(report: dict | None) -> list[list]:
    if not report:
        return []
    base = report.get("base", {})
    rows = [["base model", 0] + [_round(base.get(k)) for k, _ in METRICS] + [None, None, None]]
    for entry in _entries(report):
        s, wtl = entry.get("summary", {}), entry.get("tuned_vs_base", {})
        rows.append([entry.get("name"), entry.get("step")] + [_round(s.get(k)) for k, _ in METRICS]
                    + [wtl.get("wins"), wtl.get("ties"), wtl.get("losses")])
    return rows


def chart_frame(report: dict | None) -> pd.DataFrame | None:
    """Long format for a LinePlot: base at step 0, then each checkpoint at its step."""
    if not report:
        return None
    points = [(0, report.get("base", {}))] + [(e.get("step") or 0, e.get("summary", {})) for e in _entries(report)]
    rows = [{"step": step, "metric": label, "value": float(summary[key])}
            for step, summary in points for key, label in METRICS if isinstance(summary.get(key), (int, float))]
    return pd.DataFrame(rows, columns=["step", "metric", "value"]) if rows else None


def summary_markdown(report: dict | None) -> str:
    if not report:
        return "No evaluation yet for this run: press **Evaluate**."
    entries = _entries(report)
    def mean_reward(entry: dict) -> float:
        value = entry.get("summary", {}).get("mean_reward")
        return value if isinstance(value, (int, float)) else float("-inf")  # 0.0 is a real score, not a missing one

    best_name = report.get("best", {}).get("name") if isinstance(report.get("best"), dict) else report.get("best")
    best = next((e for e in entries if e.get("name") == best_name), None) or max(entries, key=mean_reward)
    wtl = report.get("tuned_vs_base", {})
    base_reward, tuned_reward = report.get("base", {}).get("mean_reward"), report.get("tuned", {}).get("mean_reward")
    lines = [f"**{report.get('n_prompts')} held-out prompts** ({report.get('split')}), greedy decoding, up to "
             f"{report.get('decoding', {}).get('max_new_tokens')} tokens; scored with the run's reward functions."]
    if isinstance(base_reward, (int, float)) and isinstance(tuned_reward, (int, float)):
        lines.append(f"Mean reward: base **{base_reward:.3f}** → tuned ({report.get('checkpoint', 'final')}) **{tuned_reward:.3f}**; "
                     f"tuned wins {wtl.get('wins')}, ties {wtl.get('ties')}, loses {wtl.get('losses')} prompts.")
    if len(entries) > 1:
        lines.append(f"Best checkpoint by mean reward: **{best.get('name')}** (step {best.get('step')}).")
    lines.append(f"Saved in `{EVAL_FILE}` ({report.get('seconds')} s).")
    return "  \n".join(lines)


def examples(report: dict | None) -> list[list]:
    return [[e.get("prompt"), e.get("answer"), e.get("base"), e.get("tuned")] for e in (report or {}).get("examples", [])]


class EvalTab:
    def __init__(self, runs_dir: Path, worker: InferenceWorker):
        self.runs_dir, self.worker = runs_dir, worker
        gr.Markdown("Generate answers for held-out prompts with the base model and the tuned one (greedy, identical settings) "
                    "and score them with the run's reward functions. Choose **all checkpoints** to see which one is best.")
        with gr.Row():
            self.picker = RunPicker(runs_dir, "eval", extra=ALL)
            self.run, self.checkpoint = self.picker.run, self.picker.checkpoint
            self.limit = gr.Number(50, precision=0, label="Prompts (at most)", elem_id="eval-limit", scale=1)
            self.split = gr.Textbox(label="Held-out data (optional)", info="A split name or a file; empty = the run's test split",
                                    elem_id="eval-split", scale=2)
        with gr.Row():
            self.evaluate = gr.Button("Evaluate", variant="primary", elem_id="eval-start")
            self.refresh = gr.Button("Refresh runs", elem_id="eval-refresh")
        self.summary = gr.Markdown(elem_id="eval-summary")
        self.chart = gr.LinePlot(None, x="step", y="value", color="metric", title="Base (step 0) and checkpoints",
                                 height=300, elem_id="eval-chart")
        self.table = gr.Dataframe(headers=TABLE_HEADERS, interactive=False, elem_id="eval-table")
        with gr.Accordion("Examples", open=False):
            self.examples = gr.Dataframe(headers=["prompt", "answer", "base", "tuned"], interactive=False, wrap=True, elem_id="eval-examples")

    def wire(self, demo: gr.Blocks, timer: gr.Timer | None = None) -> None:
        outputs = [self.summary, self.chart, self.table, self.examples]
        self.refresh.click(self.list_runs, inputs=[self.run, self.picker.chosen], outputs=[self.run, self.checkpoint], api_name="eval_runs")
        demo.load(self.list_runs, inputs=[self.run, self.picker.chosen], outputs=[self.run, self.checkpoint], api_visibility="private")
        self.picker.wire(demo, timer)
        self.run.change(self.show, inputs=self.run, outputs=[self.checkpoint] + outputs, api_name="eval_show")
        self.evaluate.click(self.run_eval, inputs=[self.run, self.checkpoint, self.limit, self.split], outputs=outputs, api_name="evaluate")

    def list_runs(self, current, chosen=None):
        choices, run, ckpts, ckpt = self.picker.resolve(current, chosen)
        return gr.update(choices=choices, value=run), gr.update(choices=ckpts, value=ckpt)

    def _checkpoints(self, run_id):
        ckpts = self.picker.checkpoints(run_id)
        return gr.update(choices=ckpts, value=default_checkpoint(ckpts))

    def _report(self, run_id) -> dict | None:
        return runs.read_json(self.runs_dir / run_id / EVAL_FILE) if run_id else None

    def render(self, report: dict | None, message: str | None = None) -> list:
        return [message or summary_markdown(report), chart_frame(report), table(report), examples(report)]

    def show(self, run_id):
        return [self._checkpoints(run_id)] + self.render(self._report(run_id))

    def run_eval(self, run_id, checkpoint, limit, split, progress=gr.Progress()):
        if not run_id or not checkpoint:
            return self.render(None, "Pick a run (one appears here once it has saved an adapter) and a checkpoint.")
        busy = busy_message(self.runs_dir, "An evaluation")
        if busy:
            return self.render(self._report(run_id), busy)
        args = ["eval", str(self.runs_dir / run_id), "--json", "--checkpoint", "all" if checkpoint == ALL else checkpoint]
        if limit:
            args += ["--limit", str(int(limit))]
        if split and split.strip():
            args += ["--split", split.strip()]
        progress(0.0, desc="Starting the evaluation…")
        plan = {"sides": 1, "total": 1}
        done: dict[str, int] = {}

        def on_line(line: str) -> None:
            planned = PLAN_LINE.match(line)
            if planned:
                plan["total"] = max(1, int(planned.group(1)))
                plan["sides"] = 1 + len([c for c in planned.group(2).split(",") if c])
                return
            m = PROGRESS_LINE.match(line)
            if m:
                done[m.group(1)] = int(m.group(2))
                progress(min(0.99, sum(done.values()) / (plan["sides"] * plan["total"])), desc=f"{m.group(1)}: {m.group(2)}/{m.group(3)} prompts")

        try:
            with self.worker.reserved("An evaluation"):  # it loads its own copy of the model: the chat's is freed and stays so
                finished = run_cli(args, on_line, cwd=str(self.runs_dir.parent))
        except StudioError as exc:
            return self.render(self._report(run_id), f"**Not started:** {exc.message()}".replace("\n", "  \n"))
        if finished.returncode != 0:
            error = finished.error_text(f"the evaluation failed (exit code {finished.returncode})")
            return self.render(self._report(run_id), f"**Evaluation failed:** {error}".replace("\n", "  \n"))
        try:
            report = json.loads(finished.stdout)
        except json.JSONDecodeError:
            report = self._report(run_id)
        note = not_final_note(self.runs_dir / run_id, checkpoint)
        return self.render(report, f"**Evaluated {note}.**  \n" + summary_markdown(report) if note else None)

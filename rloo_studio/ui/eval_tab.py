"""The Evaluate tab: base vs tuned (any or every checkpoint) on held-out prompts, with the run's rewards.

It runs `rloo-studio eval RUN --checkpoint … --json` in a child process (the same command a
person would type), turns its progress events (`--events`: one JSON object per line) into a progress bar, and shows
eval.json: a table with one row per checkpoint (n, token budget, mean reward, answer accuracy,
format rate and cut-off share with their 95 % intervals, wins/ties/losses against base), a
chart over the checkpoints' steps with each metric's interval, and example pairs. Answer accuracy
and format rate appear (in the table, the chart and the summary) only where the run's rewards score
an answer or the <think> format (`stats.measured`). The summary's verdict is `stats.verdict`'s, in
plain words with the rule and its p behind a "details" fold: "not distinguishable at this size" when
the paired comparison does not separate two models, no "better" when most answers were cut off (with
a button that evaluates again at a larger token budget), and a best checkpoint only when the
evaluation chose one on prompts it was not reported on and it is distinguishable from the last
weights. Replies that were cut off or stuck in a repetition loop (`rewards.repetition`) are counted in
the summary and marked in the examples. It loads no model itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr
import pandas as pd

from .. import runs
from ..errors import StudioError
from ..protocol import EvalPlan, EvalSide
from ..workers.inference import InferenceWorker
from ..rewards.replies import loops_sentence, one_reply, one_reply_sentence
from ..stats import decoding_text, evaluation_time, fmt_interval, fmt_paired, measured, seen_in_training_line, summary_estimate, verdict
from .plots import in_order
from .run_view import reply_marks, step_axis, steps_without_gradient, y_range
from .pickers import RunPicker, busy_ended, busy_message, default_checkpoint, not_final_note, refuse
from ..workers.commands import event_of, run_cli
from .poller import Poller

ALL = "all checkpoints"
TABLE_HEADERS = ["model", "step", "n", "token budget", "mean reward [95 %]", "answer accuracy [95 %]", "format rate [95 %]",
                 "cut off [95 %]", "wins", "ties", "losses", "vs base"]
# Widths at 1400 px; a table without answer accuracy or format rate gives their share to the others.
COLUMN_WIDTHS = dict(zip(TABLE_HEADERS, (10, 5, 4, 7, 12, 12, 11, 10, 5, 5, 7, 12)))
METRICS = (("mean_reward", "mean reward"), ("answer_accuracy", "answer accuracy"), ("format_rate", "format rate"))
PERCENT = {"answer_accuracy", "format_rate", "truncation_rate"}
LOW, HIGH = " · 95 % low", " · 95 % high"
# One hue per metric; its interval's bounds in a lighter shade of it (Tableau 10 and its light variants).
CHART_COLORS = {"mean reward": "#1f77b4", "answer accuracy": "#d62728", "format rate": "#2ca02c"}
CHART_LIGHT = {"mean reward": "#aec7e8", "answer accuracy": "#ff9896", "format rate": "#98df8a"}
CHART_COLOR_MAP = {**CHART_COLORS, **{k + LOW: v for k, v in CHART_LIGHT.items()}, **{k + HIGH: v for k, v in CHART_LIGHT.items()}}
DECODINGS = ["greedy", "sampled"]


def _cell(summary: dict, key: str) -> str:
    """`41.7 % [19.3, 68.0]`: the n is in its own column."""
    return fmt_interval({**summary_estimate(summary, key), "n": None}, key in PERCENT)


def _cut_off(report: dict, summary: dict, name: str = "tuned") -> dict:
    return {name: summary.get("truncation_rate"), "base": report["base"].get("truncation_rate")}


def _budgets(report: dict, summary: dict, name: str = "tuned") -> dict:
    return {name: summary.get("max_new_tokens"), "base": report["base"].get("max_new_tokens")}


def _versus_cell(report: dict, entry: dict) -> str:
    """`stats.verdict`'s label: better / worse / not distinguishable, with "mostly cut off" when it rests on cut-off answers."""
    return verdict(entry["tuned_vs_base"], cut_off=_cut_off(report, entry["summary"]))["label"]


def _metric_keys(report: dict) -> list[str]:
    shown = measured(report)
    return [k for k in ("mean_reward", "answer_accuracy", "format_rate", "truncation_rate") if shown.get(k, True)]


def headers(report: dict | None) -> list[str]:
    """The table's columns: without answer accuracy or format rate where the run's rewards score neither."""
    if not report:
        return list(TABLE_HEADERS)
    shown = measured(report)
    dropped = {TABLE_HEADERS[5]} if not shown["answer_accuracy"] else set()
    dropped |= {TABLE_HEADERS[6]} if not shown["format_rate"] else set()
    return [h for h in TABLE_HEADERS if h not in dropped]


def column_widths(columns: list[str]) -> list[str]:
    total = sum(COLUMN_WIDTHS[c] for c in columns)
    return [f"{100 * COLUMN_WIDTHS[c] / total:.0f}%" for c in columns]


def table(report: dict | None) -> list[list]:
    if not report:
        return []
    base, keys = report["base"], _metric_keys(report)
    rows = [["base model", 0, base["n"], base["max_new_tokens"]] + [_cell(base, k) for k in keys] + [None, None, None, "-"]]
    for entry in report["checkpoints"]:  # oldest first
        s, wtl = entry["summary"], entry["tuned_vs_base"]
        rows.append([entry["name"], entry["step"], s["n"], s["max_new_tokens"]] + [_cell(s, k) for k in keys]
                    + [wtl["wins"], wtl["ties"], wtl["losses"], _versus_cell(report, entry)])
    return rows


def chart_frame(report: dict | None) -> pd.DataFrame:
    """Long format for a LinePlot: base at step 0, then each checkpoint at its step; each metric with its 95 % bounds.
    Empty (never None: run_view._frame says why) without a report."""
    if not report:
        return pd.DataFrame([], columns=["step", "metric", "value"])
    points = [(0, report["base"])] + [(e["step"], e["summary"]) for e in report["checkpoints"]]
    shown, rows = measured(report), []
    for step, summary in points:
        for key, label in [m for m in METRICS if shown.get(m[0], True)]:
            estimate = summary_estimate(summary, key)
            for suffix, field in (("", "value"), (LOW, "low"), (HIGH, "high")):
                if isinstance(estimate.get(field), (int, float)):
                    rows.append({"step": step, "metric": label + suffix, "value": float(estimate[field])})
    return pd.DataFrame(rows, columns=["step", "metric", "value"])


def chart_title(report: dict | None) -> str:
    n = (report or {}).get("n_prompts")
    return f"Base (step 0) and checkpoints · n = {n} prompts per point · light lines: 95 % interval" if n else "Base (step 0) and checkpoints"


def _selection_lines(report: dict) -> list[str]:
    selection = report.get("selection")
    if not isinstance(selection, dict) or selection.get("method") not in ("cross-fit halves", "validation split"):
        return []
    folds = "; ".join(f"chosen on {f.get('chosen_on')}: **{f.get('chosen')}**" for f in selection.get("folds", []))
    lines = [f"Choosing a checkpoint ({selection['method']}, by mean reward): {folds}. Reported on {selection.get('reported_on')}: "
             f"mean reward {fmt_interval(summary_estimate(selection['reported'], 'mean_reward'))}."]
    versus = selection.get("chosen_vs_tuned") or {}
    if versus:
        lines.append(fmt_paired(versus, "chosen", versus.get("tuned", runs.FINAL)) + ".")
    best = report.get("best")
    if best:
        lines.append(f"Best checkpoint: **{best}** — chosen on prompts it is not reported on, and distinguishable from "
                     f"{versus.get('tuned', 'the final weights')}.")
    else:
        lines.append(f"No best checkpoint: {selection.get('verdict', 'none stands out at this size')}.")
    return lines


def one_reply_line(report: dict) -> str | None:
    """The one-reply warning (`rewards.replies.one_reply`) in the tab's words; None without one."""
    found = one_reply(report)
    if not found:
        return None
    headline, rest = one_reply_sentence(found, "the Examples")
    return f"⚠️ **{headline[0].upper() + headline[1:]}:** {rest}"


def tuned_verdict(report: dict) -> dict:
    """The verdict of the reported weights against base (`stats.verdict`, with both sides' cut-off shares and budgets)."""
    name = report["checkpoint"]
    return verdict(report["tuned_vs_base"], f"tuned ({name})", "base",
                   cut_off=_cut_off(report, report["tuned"], f"tuned ({name})"),
                   budgets=_budgets(report, report["tuned"], f"tuned ({name})"))


def summary_markdown(report: dict | None, run_dir: str | Path | None = None) -> str:
    """The evaluation's summary; with the run's folder, also whether its training moved the weights at all."""
    if not report:
        return "No evaluation yet for this run: press **Evaluate**."
    decoding = report["decoding"]
    budgets = decoding["max_new_tokens"]
    lines = [f"**n = {report.get('n_prompts')} held-out prompts** ({report.get('split')}), decoding: {decoding_text(decoding)}; "
             f"token budget: base {budgets.get('base')}, tuned {budgets.get('tuned')}; scored with the run's reward functions. "
             "Brackets: 95 % intervals."]
    trained_on = seen_in_training_line(report)
    if trained_on:
        lines.append(f"⚠️ **{trained_on[0].upper() + trained_on[1:]}** (the Data tab's held-out rows, or a file of other prompts).")
    base, tuned, name = report["base"], report["tuned"], report["checkpoint"]
    shown = measured(report)
    if isinstance(base.get("mean_reward"), (int, float)) and isinstance(tuned.get("mean_reward"), (int, float)):
        parts = [f"Mean reward: base {_cell(base, 'mean_reward')} → tuned ({name}) {_cell(tuned, 'mean_reward')}"]
        parts += [f"{label} {_cell(base, key)} → {_cell(tuned, key)}" for key, label in
                  (("answer_accuracy", "answer accuracy"), ("format_rate", "format rate")) if shown[key]]
        parts.append(f"cut off by the token budget: {_cell(base, 'truncation_rate')} → {_cell(tuned, 'truncation_rate')}")
        lines.append("; ".join(parts) + ".")
    found = tuned_verdict(report)
    lines.append(("⚠️ " if found["limited"] else "") + found["line"] + ".")
    still = steps_without_gradient(runs.read_jsonl(Path(run_dir) / runs.METRICS_FILE)) if run_dir else None
    if still is not None:
        lines.append(f"⚠️ **The weights never changed:** all {still} logged steps of this run had a gradient of 0, so "
                     "tuned is the base model and no number of held-out prompts will separate them. Give the run a "
                     "learning signal first (Rewards tab: Sample and score), then train again.")
    one_reply = one_reply_line(report)
    if one_reply:
        lines.append(one_reply)
    looped = loops_sentence(report, f"the Examples show the first {len(report.get('examples') or [])}, "
                                    f"{runs.EVAL_FILE} every reply")
    if looped:
        lines.append(looped)
    lines += _selection_lines(report)
    took = evaluation_time(report)
    lines.append(f"Saved in `{runs.EVAL_FILE}`" + (f"; {took}" if took else "")
                 + (f"; the evaluation before it is kept in `{report['previous']}`." if report.get("previous") else "."))
    methods = "; ".join(f"{k}: {v}" for k, v in (report.get("statistics") or {}).items())
    details = [found["details"]] + ([f"Methods: {methods}."] if methods else [])
    return "  \n".join(lines) + "\n\n<details><summary>details</summary>\n\n" + "\n\n".join(details) + "\n\n</details>"


def examples(report: dict | None) -> list[list]:
    """The example pairs, each reply with its marks: cut off by the token budget, stuck in a repetition loop."""
    report = report or {}
    per_prompt, name = report.get("per_prompt") or [], report.get("checkpoint")
    budgets = (report.get("decoding") or {}).get("max_new_tokens") or {}
    rows = []
    for i, e in enumerate(report.get("examples", [])):
        sides = (per_prompt[i].get("sides") or {}) if i < len(per_prompt) else {}
        shown = []
        for side, budget in (("base", budgets.get("base")), (name, budgets.get("tuned"))):
            text = e.get("base" if side == "base" else "tuned")
            cut = ((sides.get(side) or {}).get("samples") or [sides.get(side) or {}])[0]
            shown.append(reply_marks(text, _cut(cut, budget), budget) + (text or ""))
        rows.append([e.get("prompt"), e.get("answer"), *shown])
    return rows


def examples_headers(report: dict | None) -> list[str]:
    """The examples' headers: the reference column named as the data names it (the Data tab's answer column, `expected`,
    …); "reference" where the rows had none and the cell holds their other columns (`order_id=A-17`)."""
    column = (report or {}).get("answer_column", "answer")  # an evaluation before the key was written: `answer`
    return ["prompt", column or "reference", "base", "tuned"]


def _cut(record: dict, budget) -> bool:
    """Whether the example's reply (the first sample) was cut off: its own flag, or (a sample record) its token count."""
    if "truncated" in record and "samples" not in record:
        return bool(record["truncated"])
    return isinstance(record.get("tokens"), int) and isinstance(budget, int) and record["tokens"] >= budget


class EvalProgress:
    """The progress bar of one evaluation, moved by the `rloo-studio eval --events` lines (JSON, one per line)."""

    def __init__(self, choosing: bool):
        self.choosing = choosing  # a validation pass per checkpoint too
        self.sides = 1
        self.done: dict[str, float] = {}

    def feed(self, line: str) -> tuple[float, str] | None:
        """(fraction, description) when the line moves the bar; None for any other line (warnings, logs)."""
        event = event_of(line, "eval")
        if isinstance(event, EvalPlan):
            checkpoints = len(event.checkpoints)
            self.sides = 1 + checkpoints * (2 if self.choosing and checkpoints > 1 else 1)
            return None
        if not isinstance(event, EvalSide):
            return None
        side = ("validation " if event.validation else "") + event.side
        self.done[side] = event.done / max(1, event.total)
        return min(0.99, sum(self.done.values()) / self.sides), f"{side}: {event.done}/{event.total} completions"


class EvalTab:
    def __init__(self, runs_dir: Path, worker: InferenceWorker):
        self.runs_dir, self.worker = runs_dir, worker
        gr.Markdown("Generate answers for held-out prompts with the base model and the tuned one (identical decoding) "
                    "and score them with the run's reward functions. Every number shows how many prompts it rests on and "
                    "its 95 % interval. Choose **all checkpoints** to see whether one checkpoint really is better than the last.")
        with gr.Row():
            self.picker = RunPicker(runs_dir, "eval", extra=ALL)
            self.run, self.checkpoint = self.picker.run, self.picker.checkpoint
            self.limit = gr.Number(50, precision=0, label="Prompts (at most)", elem_id="eval-limit", scale=1)
            self.split = gr.Textbox(label="Held-out data (optional)", info="A split name or a file; empty = the run's test split",
                                    elem_id="eval-split", scale=2)
        with gr.Accordion("Decoding and token budgets", open=False, elem_id="eval-decoding-settings"):
            with gr.Row():
                self.decoding = gr.Radio(DECODINGS, value="greedy", label="Decoding", elem_id="eval-decoding",
                                         info="greedy: the most likely answer; sampled: several answers per prompt at the run's "
                                              "training temperature, scored by their mean")
                self.samples = gr.Number(4, precision=0, minimum=1, label="Samples per prompt (sampled)", elem_id="eval-samples")
                self.max_tokens = gr.Number(0, precision=0, minimum=0, label="Token budget",
                                            info="0 = the run's max completion length. Both models get it, unless the base has its "
                                                 "own below. A larger one lets answers finish that the run's length cuts off.",
                                            elem_id="eval-max-tokens")
                self.base_tokens = gr.Number(0, precision=0, minimum=0, label="Base model's token budget",
                                             info="0 = the same as the tuned model. A larger one keeps "
                                                  "a wordy base from being cut off before its answer.", elem_id="eval-base-tokens")
                self.select_split = gr.Textbox(label="Choose the best checkpoint on (optional)", elem_id="eval-select-split",
                                               info="A split name or a file of other prompts; empty = two halves of the held-out "
                                                    "prompts, each choosing for the other")
        with gr.Row():
            self.evaluate = gr.Button("Evaluate", variant="primary", elem_id="eval-start")
            self.refresh = gr.Button("Refresh runs", elem_id="eval-refresh")
        self.summary = gr.Markdown(elem_id="eval-summary")
        # Shown only when most answers were cut off: the same evaluation at a larger token budget for both models.
        self.again = gr.Button("Evaluate again with a larger token budget", visible=False, elem_id="eval-again")
        self.chart = gr.LinePlot(chart_frame(None), x="step", y="value", color="metric", title=chart_title(None), color_map=CHART_COLOR_MAP,
                                 height=300, elem_id="eval-chart")
        # Twelve columns at 1400 px: wrapped cells and widths that add up to the table's width, so wins/ties/losses and the
        # difference to the base show without sideways scrolling (an interval wraps under its value instead).
        self.table = gr.Dataframe(headers=TABLE_HEADERS, interactive=False, wrap=True, elem_id="eval-table",
                                  column_widths=column_widths(TABLE_HEADERS))
        with gr.Accordion("Examples", open=False):
            gr.Markdown("A reply that hit the token budget before it ended is marked ✂ cut off; one that says one sentence or "
                        "phrase at least 3 times over most of the reply is marked 🔁.")
            # Widths set: left to the cells, a short answer column printed its header one letter per line.
            self.examples = gr.Dataframe(headers=["prompt", "answer", "base", "tuned"], interactive=False, wrap=True,
                                         elem_id="eval-examples", column_widths=["24%", "16%", "30%", "30%"])

    def wire(self, demo: gr.Blocks, poller: Poller | None = None) -> None:
        outputs = [self.summary, self.chart, self.table, self.examples, self.again]
        self.refresh.click(self.list_runs, inputs=[self.run, self.picker.chosen], outputs=[self.run, self.checkpoint], api_name="eval_runs")
        demo.load(self.list_runs, inputs=[self.run, self.picker.chosen], outputs=[self.run, self.checkpoint], api_visibility="private")
        self.picker.wire(demo, poller)
        self.run.change(in_order(self.show, [self.checkpoint] + outputs), inputs=self.run, outputs=[self.checkpoint] + outputs,
                        api_name="eval_show")
        settings = [self.run, self.checkpoint, self.limit, self.split, self.decoding, self.samples, self.base_tokens, self.select_split]
        self.evaluate.click(in_order(self.run_eval, outputs), inputs=settings + [self.max_tokens], outputs=outputs, api_name="evaluate")
        self.again.click(in_order(self.run_again, outputs + [self.max_tokens]), inputs=settings, outputs=outputs + [self.max_tokens],
                         api_name="evaluate_again")
        if poller is not None:  # "run X is training" goes once X stops: the summary of the last evaluation comes back
            poller.tick(self.summary_now, inputs=[self.summary, self.run], outputs=self.summary)

    def summary_now(self, summary: str | None, run_id: str | None):
        return self._summary(run_id) if busy_ended(summary, self.runs_dir) else gr.skip()

    def list_runs(self, current, chosen=None):
        choices, run, ckpts, ckpt = self.picker.resolve(current, chosen)
        return gr.update(choices=choices, value=run), gr.update(choices=ckpts, value=ckpt)

    def _checkpoints(self, run_id):
        ckpts = self.picker.checkpoints(run_id)
        return gr.update(choices=ckpts, value=default_checkpoint(ckpts))

    def _report(self, run_id) -> dict | None:
        folder = runs.run_folder(self.runs_dir, run_id)  # a name that climbs out of the runs folder is no run
        return runs.read_eval(folder) if folder else None

    def render(self, report: dict | None, message: str | None = None) -> list:
        columns = headers(report)
        suggested = tuned_verdict(report)["suggested_budget"] if report else None
        again = (gr.update(visible=True, value=f"Evaluate again with a token budget of {suggested}") if suggested
                 else gr.update(visible=False))
        frame, order = step_axis(chart_frame(report))  # whole steps on the axis, not 1.0, 1.2, 1.4 …
        return [message or summary_markdown(report), gr.update(value=frame, sort=order, title=chart_title(report), y_lim=y_range(frame)),
                gr.update(value={"headers": columns, "data": table(report)}, column_widths=column_widths(columns)),
                {"headers": examples_headers(report), "data": examples(report)}, again]

    def _summary(self, run_id) -> str:
        """The summary line of the run's evaluation; an earlier version's eval.json is said so, not shown as none."""
        folder = runs.run_folder(self.runs_dir, run_id)
        if folder and runs.old_eval(folder):
            return f"**{runs.OLD_EVAL[0].upper() + runs.OLD_EVAL[1:]}:** press **Evaluate** to evaluate it again."
        return summary_markdown(self._report(run_id), folder)

    def show(self, run_id):
        return [self._checkpoints(run_id)] + self.render(self._report(run_id), self._summary(run_id))

    def run_again(self, run_id, checkpoint, limit, split, decoding="greedy", samples=4, base_tokens=0, select_split="",
                  progress=gr.Progress()):
        """The last evaluation's settings at the token budget its verdict suggests (4 times the larger budget), for both
        models; the Token budget box shows the value used."""
        report = self._report(run_id)
        suggested = tuned_verdict(report)["suggested_budget"] if report else None
        if not suggested:
            return self.render(report, refuse("Nothing to evaluate again: the last evaluation's answers were not mostly cut off.")) + [gr.update()]
        return self.run_eval(run_id, checkpoint, limit, split, decoding, samples, 0, select_split, suggested, progress) + [suggested]

    def run_eval(self, run_id, checkpoint, limit, split, decoding="greedy", samples=4, base_tokens=0, select_split="",
                 max_tokens=0, progress=gr.Progress()):
        folder = runs.run_folder(self.runs_dir, run_id)
        if folder is None or not checkpoint:
            return self.render(None, refuse("Pick a run (one appears here once it has saved an adapter) and a checkpoint."))
        if decoding == "sampled" and (not samples or int(samples) < 1):
            return self.render(self._report(run_id), refuse("**Samples per prompt** must be at least 1 for sampled decoding (4 is a good start)."))
        busy = busy_message(self.runs_dir, "An evaluation")
        if busy:
            return self.render(self._report(run_id), refuse(busy))
        args = ["eval", str(folder), "--json", "--events", "--checkpoint", "all" if checkpoint == ALL else checkpoint]
        if limit:
            args += ["--limit", str(int(limit))]
        if split and split.strip():
            args += ["--split", split.strip()]
        if decoding == "sampled":
            args += ["--decoding", "sampled", "--samples", str(int(samples))]
        if max_tokens and int(max_tokens) > 0:
            args += ["--max-new-tokens", str(int(max_tokens))]
        if base_tokens and int(base_tokens) > 0:
            args += ["--base-max-new-tokens", str(int(base_tokens))]
        choosing = checkpoint == ALL and bool(select_split and select_split.strip())
        if choosing:
            args += ["--select-split", select_split.strip()]
        progress(0.0, desc="Starting the evaluation…")
        bar = EvalProgress(choosing)

        def on_line(line: str) -> None:
            moved = bar.feed(line)
            if moved:
                progress(moved[0], desc=moved[1])

        try:
            with self.worker.reserved("An evaluation"):  # it loads its own copy of the model: the chat's is freed and stays so
                finished = run_cli(args, on_line, cwd=str(self.runs_dir.parent))
        except StudioError as exc:
            return self.render(self._report(run_id), refuse(f"**Not started:** {exc.message()}".replace("\n", "  \n")))
        if finished.returncode != 0:
            error = finished.error_text(f"the evaluation failed (exit code {finished.returncode})")
            return self.render(self._report(run_id), refuse(f"**Evaluation failed:** {error}".replace("\n", "  \n")))
        try:
            report = json.loads(finished.stdout)
        except json.JSONDecodeError:
            report = self._report(run_id)
        note = not_final_note(folder, checkpoint)
        return self.render(report, f"**Evaluated {note}.**  \n" + summary_markdown(report, folder) if note
                           else summary_markdown(report, folder))

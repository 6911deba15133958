"""Turning a run directory into what the app shows: status line, progress bar, health alerts, curves, samples, log.

Shared by the Train tab (the run being trained) and the Runs tab (any run). Pure functions of
`jobs.RunView`; no Gradio components are built here. `reply_marks` is the one way every completions
table (here, the Evaluate tab's examples, the Chat panes) marks a reply cut off by the token budget or
stuck in a repetition loop.
"""

from __future__ import annotations

import ast
import html
import re
import statistics
from pathlib import Path

import pandas as pd

from .. import runs
from ..runs import alerts, step_time
from ..workers.jobs import RunView, cycle_ends
from ..rewards.builtin import split_thinking
from ..rewards.judge import judge_share_line
from ..rewards.repetition import find_loop, loop_note
from . import text
from .text import without_config_keys

REWARD_SERIES_PREFIX = "rewards/"
# Colours far apart in hue (Okabe & Ito's palette for colour-blind readers, https://jfly.uni-koeln.de/color/), total first.
PALETTE = ("#000000", "#E69F00", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442")
LOG_METRICS = (("reward", "reward"), ("kl", "KL"), ("loss", "loss"), ("completions/mean_length", "mean length"),
               ("grad_norm", "grad norm"), ("learning_rate", "learning rate"), ("epoch", "epoch"))
_TQDM = re.compile(r"\s*\d+%\|[^|]*\|\s*\d+/\d+ \[[^\]]*\]")
_LOGGED_DICT = re.compile(r"\{'[^{}]*\}")
# Terminal instructions a progress bar or a coloured logger writes (cursor moves such as ESC[A, line erases, colours,
# window titles) and other control characters: they move a terminal's cursor and mean nothing as text in a page.
_TERMINAL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# "reply": the model's words after its thinking; "answer" is the data's reference, on every page
SAMPLE_HEADERS = ["step", "prompt", "thinking", "reply", "rewards", "total", "KL penalty", "advantage"]
# Every column's width, adding up to the table's: the answer is what a person reads (it once had 7 %, ~70 px at
# 1280 px, and split its words); the numbers get their header's longest word.
SAMPLE_WIDTHS = ["5%", "18%", "14%", "20%", "18%", "7%", "8%", "10%"]



def _duration(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "—"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def elapsed_s(view: RunView) -> float | None:
    """The run's training time so far, over all its sessions (`runs.trained_seconds`: not the nights it sat stopped)."""
    return runs.trained_seconds(view.status, state=view.state)


REWARD_WINDOW = 5  # steps averaged at each end of the run: one step's reward is a few prompts' worth


def reward_line(metrics: list[dict]) -> str:
    """The run's reward so far: the latest step's, the means of its first and last few steps with the per-step range,
    and when the two means differ by less than the steps' own spread, that it may be chance. A first and a last step
    alone read a wobble as a gain ("1.016 now (first step 1.000)" for a run Evaluate found unchanged)."""
    steps = [(m.get("step"), m["reward"]) for m in metrics if isinstance(m.get("reward"), (int, float))]
    if not steps:
        return ""
    step, now = steps[-1]
    values = [v for _, v in steps]
    line = f"Reward: {now:.3f} at step {step}"
    if len(values) < 2:
        return line
    if max(values) == min(values):
        return f"{line}, the same at every step"
    if len(values) < 2 * REWARD_WINDOW:
        return f"{line} (first step {values[0]:.3f}; per step {min(values):.3f}–{max(values):.3f})"
    first, last = statistics.fmean(values[:REWARD_WINDOW]), statistics.fmean(values[-REWARD_WINDOW:])
    line += (f"; mean of the last {REWARD_WINDOW} steps {last:.3f}, of the first {REWARD_WINDOW} {first:.3f} (per step "
             f"{min(values):.3f}–{max(values):.3f})")
    if abs(last - first) <= statistics.stdev(values):
        line += (" — the two differ by no more than the step-to-step wobble; Evaluate tells whether tuned is better on "
                 "held-out prompts")
    return line


def status_markdown(view: RunView | None) -> str:
    if view is None:
        return text.NO_RUN
    state_text = text.STATE_TEXT.get(view.state, view.state)
    stop_at = view.status.get("stop_at")
    if view.state == "stopping" and isinstance(stop_at, int) and stop_at > (view.step or 0):
        state_text = text.STOPPING_AT.format(step=stop_at)
    step = f"{view.step}/{view.max_steps}" if view.max_steps else str(view.step)
    lines = [f"**Run** `{view.run_id}` — **{state_text}**",
             f"Step {step} · elapsed {_duration(elapsed_s(view))} · ETA {_duration(view.status.get('eta_s')) if view.state == 'running' else '—'}"]
    if view.metrics:
        last = view.metrics[-1]
        if isinstance(last.get("reward"), (int, float)):
            lines.append(reward_line(view.metrics))
        # Said here, not as the chart's caption: a chart of fixed height cuts its caption off.
        hidden = overlap_caption(reward_frame(view))
        if hidden:
            lines.append(f"Reward chart: {hidden[0].lower()}{hidden[1:]}")
        judge_share = judge_share_line(view.metrics)
        if judge_share:
            lines.append(judge_share)
    sampled = next((m for m in reversed(view.metrics) if isinstance(m.get(alerts.DROPPED_SHARE_KEY), (int, float))), None)
    if sampled:  # dynamic sampling: what the latest step left out (docs/training.md)
        lines.append(f"Dynamic sampling at step {sampled.get('step')}: {100 * sampled[alerts.DROPPED_SHARE_KEY]:.0f}% of the "
                     f"generated prompt groups left out ({sampled.get(alerts.GENERATIONS_KEY, 1):.0f} batches generated); "
                     f"{100 * (sampled.get(alerts.TIED_KEPT_SHARE_KEY) or 0):.0f}% of the batch trained on is tied groups "
                     "the cap let in")
    unchanged = weights_unchanged_line(view.metrics)
    if unchanged:
        lines.append(unchanged)
    if view.status.get("note"):
        lines.append(f"Note: {view.status['note']}")
    error = view.status.get("error")
    if view.state in ("failed", "interrupted") and error:
        lines.append(f"**What went wrong:** {error.get('what')}")
        if error.get("why"):
            lines.append(f"**Why:** {error['why']}")
        if error.get("fix"):
            lines.append(f"**What to do:** {error['fix']}")
    if view.state == "interrupted":
        lines.append("The log's last lines are below.")
    return "  \n".join(lines)


def steps_without_gradient(metrics: list[dict]) -> int | None:
    """How many logged steps there were when none moved the weights (every grad norm 0); None when any step had a
    gradient, or none was logged. The one rule of the Train tab's line and the Evaluate tab's."""
    norms = [m["grad_norm"] for m in metrics if isinstance(m.get("grad_norm"), (int, float))]
    return None if not norms or any(n > 0 for n in norms) else len(norms)


def weights_unchanged_line(metrics: list[dict]) -> str | None:
    """Said when no logged step moved the weights (every grad norm 0): the run "finished" and its tuned model is the
    base model, which a person must not read as "RLOO tried and did not help". None when any step had a gradient."""
    steps = steps_without_gradient(metrics)
    if steps is None:
        return None
    return (f"⚠️ **The weights have not changed:** all {steps} logged steps had a gradient of 0, so the tuned model is "
            "still the base model. Every prompt's completions scored alike (no learning signal): check in the Rewards tab "
            "that the model can earn your reward at all (Sample and score, Scan the data), e.g. that it writes the format or "
            "the kind of answer the reward looks for.")


def progress_html(view: RunView | None) -> str:
    if view is None or not view.max_steps:
        fraction = 0.0
    else:
        fraction = min(1.0, view.step / max(1, view.max_steps))
    label = f"{100 * fraction:.0f}%"
    return (f'<div id="train-progress" data-step="{view.step if view else 0}" style="width:100%;background:#e5e7eb;border-radius:6px;height:22px;">'
            f'<div style="width:{100 * fraction:.1f}%;background:#f97316;height:22px;border-radius:6px;color:white;'
            f'font-size:13px;line-height:22px;padding-left:6px;white-space:nowrap;">{html.escape(label)}</div></div>')


STEP_TIME_STEPS = 5  # the live view's breakdown: the mean of at least this many last logged steps, in whole generation
# cycles (step_time.recent): one slow step does not jump it, nor a cycle counted in part


def step_time_html(view: RunView | None) -> str:
    """Where the last steps' time went, as a small stacked bar (one colour per part) and the same in words.
    Empty for a run whose metrics have no step-time keys (recorded before they existed, or no step logged yet)."""
    if view is None:
        return ""
    breakdown = step_time.mean_breakdown(step_time.recent(view.metrics, STEP_TIME_STEPS, cycle_ends(view.path)))
    if not breakdown or not breakdown.get(step_time.STEP_KEY):
        return ""
    total = float(breakdown[step_time.STEP_KEY])
    segments = []
    for i, part in enumerate(step_time.PARTS):
        share = max(0.0, float(breakdown.get(f"time/{part}") or 0.0) / total)
        label = f"{step_time.WORDS[part]}: {share * total:.2f} s ({100 * share:.0f} %)"
        segments.append(f'<div data-part="{part}" title="{html.escape(label)}" style="width:{100 * share:.1f}%;'
                        f'background:{PALETTE[i + 1]};height:10px;"></div>')
    steps = int(breakdown["steps"])
    said = step_time.breakdown_line(breakdown)
    return (f'<div id="step-time" style="margin-top:6px;"><div style="display:flex;width:100%;border-radius:4px;overflow:hidden;">'
            f'{"".join(segments)}</div><div style="font-size:12px;color:#4b5563;">Step time (mean of the last {steps} logged '
            f'step{"s" if steps != 1 else ""}): {html.escape(said)}</div></div>')


def alerts_html(run_dir: str | Path | None) -> str:
    """A run's health alerts (its alerts.jsonl, read now) as badges, each with its one-line explanation, what to do and
    what the run did about it on its own, if anything (see docs/alerts.md); ongoing ones first and in orange, ended ones
    grey. Empty when the run has none."""
    found = alerts.current(runs.iter_jsonl(Path(run_dir) / runs.ALERTS_FILE)) if run_dir else []
    if not found:
        return ""
    # How far an ongoing alert has held: its explanation's numbers are those of the step it was raised at.
    status = runs.read_status(run_dir)
    step_now = status.get("step") if isinstance(status.get("step"), int) else None
    over = runs.effective_state(status) not in runs.ACTIVE_STATES
    items = []
    for a in found:
        ended = a.get("ended_step") is not None
        colour = "#6b7280" if ended else "#c2410c"
        began = a.get("began_step")
        lasted = isinstance(step_now, int) and isinstance(began, int) and step_now > (a.get("raised_step") or began)
        when = (f"steps {began}–{a.get('ended_step')}, over" if ended
                else f"steps {began}–{step_now}, to the run’s last step" if lasted and over
                else f"since step {began}, still at step {step_now}" if lasted else f"since step {began}")
        subject = f" — {a['subject']}" if a.get("subject") else ""
        # The explanation's numbers are the raising step's: once the alert has held past it, they say so.
        raised = a.get("raised_step") or began
        then = f"At step {raised}, when raised: " if (ended or lasted) and isinstance(raised, int) else ""
        # What the run did on its own about it (the config's `alerts:` section), when it acted.
        taken = f' data-taken="{html.escape(str(a["taken"]))}"' if a.get("taken") else ""
        done = f' <b>Done:</b> {html.escape(str(a["done"]))}.' if a.get("done") else ""
        items.append(
            f'<div class="health-alert" data-alert="{html.escape(str(a.get("kind")))}" data-ended="{str(ended).lower()}"{taken} '
            f'style="border-left:4px solid {colour};padding:4px 8px;margin:4px 0;">'
            f'<span style="background:{colour};color:white;border-radius:10px;padding:1px 8px;font-size:12px;">'
            f'⚠ {html.escape(str(a.get("title") or a.get("kind")))}{html.escape(subject)} · {html.escape(when)}</span> '
            f'{html.escape(_after(then, without_config_keys(str(a.get("explanation") or ""))))} <b>What to do:</b> '
            f'{html.escape(without_config_keys(str(a.get("action") or "")))}{done}</div>')
    return '<div id="health-alerts">' + "".join(items) + "</div>"


def _after(lead: str, sentence: str) -> str:
    """`sentence` after `lead`, its first letter lower-cased when a lead goes before it ('At step 3, when raised: in
    100 % …'); a word in capitals (KL) keeps them."""
    if not lead or len(sentence) < 2 or not sentence[1].islower():
        return lead + sentence
    return lead + sentence[0].lower() + sentence[1:]


def readable_log(text: str) -> str:
    """The training log without terminal codes and progress-bar redraws, and with the trainer's metric dicts as
    `name value · …`."""
    lines: list[str] = []
    for raw in re.split(r"[\r\n]+", text or ""):
        line = _LOGGED_DICT.sub(lambda m: _metrics_line(m.group(0)), _TQDM.sub("", _TERMINAL.sub("", raw))).strip()
        if line and (not lines or line != lines[-1]):
            lines.append(line)
    return "\n".join(lines)


def _metrics_line(logged: str) -> str:
    try:
        metrics = ast.literal_eval(logged)
    except (ValueError, SyntaxError):
        return logged
    shown = []
    for key, name in LOG_METRICS:
        value = metrics.get(key)
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        shown.append(f"{name} {number:.4g}")
    return "step metrics: " + " · ".join(shown) if shown else logged


# Up to this many steps, each is one labelled place on a chart's step axis. A continuous axis picks fractional ticks
# when few steps span it (a 4-step run read 1.0, 1.2, 1.4 …, one step "1.000000"); with more than this many whole
# steps the span is at least this wide, and the chart's ticks (about one per 40 px) fall on whole numbers up to
# 1.4 × 40 × FEW_STEPS ≈ 1700 px of width.
FEW_STEPS = 30


def step_axis(frame: pd.DataFrame, column: str = "step") -> tuple[pd.DataFrame, list[str] | None]:
    """(frame, order): up to FEW_STEPS steps as text labels with their order in steps (10 after 9, which text order
    would not give), for the chart's `sort`; more steps stay numbers (order None)."""
    steps = sorted({int(s) for s in frame[column]})
    if not steps or len(steps) > FEW_STEPS:
        return frame.assign(**{column: frame[column].astype(int)}), None
    return frame.assign(**{column: frame[column].map(lambda s: str(int(s)))}), [str(s) for s in steps]


def plot_update(frame: pd.DataFrame | None, from_zero: bool = False):
    """A line chart's data with whole steps on its axis (`step_axis`), a y range that leaves room above and below (a
    line at 1.0 is not cut by the frame) and one distinct colour per series; an empty chart for no data (never None:
    see `_frame`)."""
    import gradio as gr

    if frame is None or frame.empty:
        return gr.update(value=_frame([]))
    series = list(dict.fromkeys(frame["series"]))
    frame, order = step_axis(frame)
    return gr.update(value=frame, sort=order, y_lim=y_range(frame, from_zero),
                     color_map={name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)})


def overlap_caption(frame: pd.DataFrame | None) -> str | None:
    """Lines that lie on each other at most of their steps (a reward equal to the weighted total, two rewards that
    agree): only the one drawn last shows there, and the other reads as missing. None when no two do."""
    if frame is None or frame.empty:
        return None
    values = {name: dict(zip(part["step"], part["value"])) for name, part in frame.groupby("series", sort=False)}
    names, pairs = list(values), []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = set(values[a]) & set(values[b])
            same = sum(1 for step in common if abs(values[a][step] - values[b][step]) < 1e-9)
            if common and same * 2 > len(common):
                pairs.append(f"“{a}” and “{b}” are equal at {same} of {len(common)} steps")
    if not pairs:
        return None
    return f"Lines on top of each other: {'; '.join(pairs)}, where the line drawn last hides the other."


def y_range(frame: pd.DataFrame, from_zero: bool = False) -> list[float] | None:
    """A chart's y range with room above and below: a line at 1.0 is not cut by the frame, and values that are all
    the same get an axis (not one tick labelled '1.000000'). `from_zero`: counts (lengths in tokens) start at 0, where
    a one-token wobble looks like one. None for no data."""
    if frame.empty:
        return None
    low, high = float(frame["value"].min()), float(frame["value"].max())
    if from_zero and low >= 0:
        return [0.0, high + max(0.05, 0.08 * high)]
    pad = max(0.05, 0.08 * (high - low))
    return [low - pad, high + pad]


def reward_frame(view: RunView | None) -> pd.DataFrame | None:
    """Long format (step, value, series): the total reward and each function's mean, for one LinePlot."""
    rows = []
    for m in (view.metrics if view else []):
        step = m.get("step")
        if not isinstance(step, (int, float)):
            continue
        if isinstance(m.get("reward"), (int, float)):
            rows.append({"step": step, "value": m["reward"], "series": "total (weighted)"})
        for key, value in m.items():
            if key.startswith(REWARD_SERIES_PREFIX) and key.endswith("/mean") and isinstance(value, (int, float)):
                rows.append({"step": step, "value": value, "series": key[len(REWARD_SERIES_PREFIX):-len("/mean")]})
    return _frame(rows)


def _frame(rows: list[dict]) -> pd.DataFrame:
    # An empty frame, not None, when there is nothing yet: a chart sent None is taken off the page, and one put back
    # with data and settings in two messages (plots.in_order) was drawn twice at once, the older drawing sometimes last.
    return pd.DataFrame(rows, columns=["step", "value", "series"]).astype({"step": "int64", "value": "float64", "series": "str"})


def length_frame(view: RunView | None) -> pd.DataFrame | None:
    rows = []
    for m in (view.metrics if view else []):
        step = m.get("step")
        for key, label in (("completions/mean_length", "mean completion length (tokens)"), ("kl", "KL to the start model ×100")):
            value = m.get(key)
            if isinstance(step, (int, float)) and isinstance(value, (int, float)):
                rows.append({"step": step, "value": value * (100 if key == "kl" else 1), "series": label})
    return _frame(rows)


def _rounded(value):
    return round(value, 3) if isinstance(value, (int, float)) else value


def reply_mark_list(text: str | None, cut_off: bool, budget: int | None = None, reply: str | None = None) -> list[str]:
    """The marks of one reply: `✂ cut off at 24 tokens` when it hit the token budget before it ended (`… in the
    thinking, before it closed` when a thought was still open), `∅ empty reply` when it says nothing (`reply`: the part
    after a closed thought, where the text has one; a thought opened and never closed leaves no reply, and the mark
    says so), `🔁 repeats “…” 6 times (…)` when it is stuck in a repetition loop (`rewards.repetition`)."""
    marks = []
    # Read as the chat shows it: a thought opened and not closed is thinking, not the reply (its tag included).
    thinking, answer = split_thinking(text or "", streaming=True)
    unclosed = thinking is not None and "</think>" not in (text or "")
    if cut_off:
        where = " in the thinking, before it closed" if unclosed else ""
        marks.append(f"✂ cut off at {budget} token{'s' if budget != 1 else ''}{where}" if budget
                     else f"✂ cut off by the token budget{where}")
    said = reply if reply is not None else answer if text is not None else None
    if said is not None and not said.strip() and not cut_off:  # a reply cut off before it began is said cut off
        marks.append("∅ empty reply: the thinking never closed" if unclosed else "∅ empty reply")
    # A loop is said where it is: in the reply, or in the thinking before it (its own column, or a collapsed block).
    loop = loop_note(find_loop(answer))
    if loop:
        marks.append(f"🔁 {loop}")
    elif thinking:
        loop = loop_note(find_loop(thinking), of="thinking")
        if loop:
            marks.append(f"🔁 the thinking {loop}")
    return marks


def reply_marks(text: str | None, cut_off: bool, budget: int | None = None, reply: str | None = None) -> str:
    """A completions table cell's marks, before the reply's text: `[✂ cut off at 24 tokens] [🔁 …] ` and a line break;
    "" for none."""
    marks = reply_mark_list(text, cut_off, budget, reply)
    return "".join(f"[{m}] " for m in marks) + ("\n" if marks else "")


LEFT_OUT_MARKS = {"tied": "⏭ not trained on: its group tied, dynamic sampling left it out",
                  "extra": "⏭ not trained on: dynamic sampling had filled the step's batch with other groups"}


def samples_rows(view: RunView | None, limit: int = 24) -> list[list]:
    """Newest samples first. "KL penalty" is beta x the completion's KL to the start model (empty when beta is 0);
    "advantage" is the one TRL trained on (older runs recorded a leave-one-out of the total without KL). The answer
    carries `reply_marks`: cut off by max_completion_length (as recorded while training), stuck in a loop."""
    rows = []
    for s in reversed(view.samples if view else []):
        rewards = ", ".join(f"{k}={v:.2f}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in (s.get("rewards") or {}).items())
        penalty = s.get("kl_penalty")
        # The reply after a closed thought: the thinking has its own column, and a reply that is only a thought is empty.
        thinking, answer = s.get("thinking"), s["answer"] if isinstance(s.get("answer"), str) else s.get("completion") or ""
        if thinking is None:  # runs recorded before a thought cut off before it closed was recorded as thinking
            thinking, answer = split_thinking(s.get("completion") or answer, streaming=True)
        answer = reply_marks(s.get("completion"), bool(s.get("cut_off")), None, answer) + answer
        if s.get("left_out"):  # dynamic sampling generated it and left its group out: its advantage was not used
            answer = f"[{LEFT_OUT_MARKS.get(s['left_out'], LEFT_OUT_MARKS['extra'])}] " + answer
        rows.append([s.get("step"), s.get("prompt"), thinking or "", answer, rewards,
                     _rounded(s.get("total")), "" if penalty is None else round(penalty, 4), _rounded(s.get("advantage"))])
        if len(rows) >= limit:
            break
    return rows

"""Time and memory known before Start: a short trial run of the same settings in a throwaway folder.

The trial is a real run (the same `rloo-studio train` worker the app starts, through `jobs`) of two
generation cycles with the config as it is — model, data, rewards, batch — saved nowhere the person
looks: its folder is temporary and removed afterwards. The first cycle pays the one-time costs (loading
the model, compiling, warming caches); the second is timed, so one step's time covers a generation and
an update, as every step of the real run does. From it: the whole run's time, the epochs over the
training data, where a step's time goes (the timed steps' time/* keys, step_time.py), and the peak
memory (the GPU's peak from the run's metrics, or on a CPU the worker's peak resident memory), to put
beside the memory estimator's prediction. No torch in this process.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from .. import runs, step_time
from . import jobs
from ..batching import BatchPlan, batch_plan, effective_line, epochs, epochs_words
from ..config import RunConfig
from ..errors import StudioError
from ..rewards.judge import judge_time_share

TRIAL_CYCLES = 2  # the first generation cycle warms up, the second is timed
TRIAL_NAME = "time-trial"
POLL_S = 0.5
# A trial that has not finished after this long is stopped: it is two cycles of a run, and a run whose two cycles take
# an hour is one to shrink before it is timed.
DEFAULT_TIMEOUT_S = 3600.0


@dataclass
class Measurement:
    trial_steps: int           # optimiser steps the trial trained
    timed_steps: int           # of which the last ones, after the warm-up cycle, are timed
    seconds_per_step: float    # generation + update, as in the run
    startup_s: float           # from the worker's start to its first step's end, minus one step: loading and warm-up
    run_steps: int             # steps the real run would train
    run_s: float               # startup + run_steps x seconds_per_step
    epochs: float | None       # passes over the training data the real run would make
    train_rows: int | None
    new_prompts_per_step: float  # prompts drawn from the data per step
    peak_gpu_gib: float | None  # torch's peak allocated GPU memory in the trial (None without CUDA)
    peak_rss_gib: float | None  # the worker's peak resident memory (Linux), what a CPU run needs
    judge_share: float | None = None  # the judges' share of the timed steps' training time (None without a judge)
    trainer_line: str | None = None   # the batch plan and arguments the trial's trainer used (its trainer_args.json)
    trainer_changed: dict | None = None  # arguments the trainer holds other than it was given: {key: [given, used]}
    step_time: dict | None = None  # the timed steps' mean time by part (step_time.py's keys); None if not recorded

    def to_dict(self) -> dict:
        return asdict(self)


def trial_steps(plan: BatchPlan) -> tuple[int, int]:
    """(steps the trial trains, steps it times): TRIAL_CYCLES whole generation cycles, the last one timed."""
    cycle = max(1, math.ceil(plan.steps_per_cycle))
    return TRIAL_CYCLES * cycle, cycle


def run_steps(cfg: RunConfig, plan: BatchPlan, train_rows: int | None) -> int | None:
    """Optimiser steps the real run trains: max_steps, or num_train_epochs over the rows when max_steps is -1."""
    max_steps = int(cfg.rloo_value("max_steps") or -1)
    if max_steps > 0:
        return max_steps
    if not train_rows:
        return None
    return math.ceil(float(cfg.rloo_value("num_train_epochs")) * train_rows / plan.new_prompts_per_step)


def _peak_rss_gib(pid) -> float | None:
    """The process's resident-memory high-water mark (VmHWM), Linux only; None elsewhere or once it has exited."""
    try:
        for line in Path(f"/proc/{int(pid)}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024**2  # kB
    except (OSError, ValueError, TypeError):
        return None
    return None


def measure(cfg: RunConfig, reward_source: str | None = None, train_rows: int | None = None,
            on_progress: Callable[[str, float], None] = lambda text, fraction: None,
            timeout_s: float = DEFAULT_TIMEOUT_S) -> Measurement:
    """Train a trial of `cfg` in a temporary folder and time it; raises StudioError when the trial fails.

    `reward_source` is the reward editor's code (as for `jobs.start_run`); `train_rows` the number of training rows,
    for the epochs (None: not said); `on_progress(text, fraction)` is called as the trial goes.
    """
    plan = cfg.batch_plan()
    steps, timed = trial_steps(plan)
    if reward_source is None:
        # From the command line the config's own rewards.py is the code; `jobs` writes it into the trial's folder, as the
        # app writes its editor's code (a `file: rewards.py` entry is read from the run folder).
        own = next((cfg.resolve_path(s.file) for s in cfg.rewards if s.file == runs.REWARDS_FILE), None)
        reward_source = own.read_text(encoding="utf-8") if own is not None and own.is_file() else None
    trial = RunConfig.from_dict(cfg.to_dict(), base_dir=cfg.base_dir)
    trial.rloo["max_steps"] = steps
    trial.rloo["save_steps"] = steps  # nothing saved but the end (TRL saves at the last step anyway)
    trial.output.run_name = TRIAL_NAME
    folder = Path(tempfile.mkdtemp(prefix="rloo-studio-trial-"))
    try:
        run_dir = jobs.start_run(trial, folder, reward_source)
        started = time.time()
        peak_rss, said = None, 0
        on_progress("starting the trial run (loading the model)", 0.0)
        while True:
            view = jobs.view(run_dir, samples_tail=0)
            peak_rss = _peak_rss_gib(view.status.get("pid")) or peak_rss
            if view.step > said:  # before the end check: the last step and the end can fall between two polls
                said = view.step
                on_progress(f"trial step {view.step}/{steps} done", view.step / steps)
            if view.state not in runs.ACTIVE_STATES:
                break
            if time.time() - started > timeout_s:
                jobs.stop_run(run_dir)
                from ..procs import kill_tree

                if view.status.get("pid"):
                    kill_tree(int(view.status["pid"]))
                raise StudioError(f"the time trial did not finish in {timeout_s / 60:.0f} minutes",
                                  f"its {steps} steps are that slow with these settings",
                                  "use fewer completions per step or a shorter completion length, then measure again")
            time.sleep(POLL_S)
        if view.state != "finished":
            # The trial is a short real run of these settings: the run itself would fail the same way, so its own
            # what / why / what-to-do is the answer.
            error = view.status.get("error") if isinstance(view.status.get("error"), dict) else {}
            last_line = (view.log_tail.strip().splitlines() or [""])[-1][:300]
            raise StudioError(f"the time trial failed: {error.get('what') or view.state}",
                              error.get("why") or "the trial is a short real run of these settings; it ended early",
                              error.get("fix") or f"the log's last line: {last_line}")
        return _measurement(cfg, plan, run_dir, steps, timed, started, train_rows, peak_rss)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _measurement(cfg: RunConfig, plan: BatchPlan, run_dir: Path, steps: int, timed: int, started: float,
                 train_rows: int | None, peak_rss: float | None) -> Measurement:
    rows = {int(r["step"]): r for r in runs.read_jsonl(run_dir / runs.METRICS_FILE) if "step" in r and "time" in r}
    warm, last = steps - timed, steps
    if warm not in rows or last not in rows:
        raise StudioError("the time trial logged no step times",
                          f"metrics.jsonl of the trial has steps {sorted(rows)}, not {warm} and {last}",
                          "report this as a bug with the config you measured")
    per_step = (rows[last]["time"] - rows[warm]["time"]) / timed
    first = min(rows)
    startup = max(0.0, rows[first]["time"] - started - first * per_step)
    peak_gpu = max((r.get("memory/peak_allocated_gib") or 0.0 for r in rows.values()), default=0.0) or None
    timed_rows = [r for step, r in rows.items() if warm < step <= last]
    share = judge_time_share(timed_rows)
    # The plan the trial's trainer derived from the arguments it holds (trainer_args.json): the run trains the same.
    recorded = runs.read_json(run_dir / runs.TRAINER_ARGS_FILE) or {}
    held = recorded.get("args")
    if held:
        plan = batch_plan(held, int(held.get("world_size") or 1))
    total_steps = run_steps(cfg, plan, train_rows)
    return Measurement(trial_steps=steps, timed_steps=timed, seconds_per_step=per_step, startup_s=startup,
                       run_steps=total_steps or 0, run_s=startup + (total_steps or 0) * per_step,
                       epochs=epochs(train_rows, plan, total_steps) if train_rows and total_steps else None,
                       train_rows=train_rows, new_prompts_per_step=plan.new_prompts_per_step,
                       peak_gpu_gib=peak_gpu, peak_rss_gib=peak_rss,
                       judge_share=share[0] / share[1] if share else None,
                       trainer_line=effective_line(held, int(held.get("world_size") or 1)) if held else None,
                       trainer_changed=recorded.get("changed") or None, step_time=step_time.mean_breakdown(timed_rows))


def duration(seconds: float) -> str:
    """'45 s', '12 min', '3 h 05 min': a run's time as a person reads it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def summary_lines(m: Measurement) -> list[str]:
    """The measurement in words, one fact a line (the CLI prints them; the app shows them)."""
    lines = [f"{m.seconds_per_step:.2f} s per step (generation + update; timed over {m.timed_steps} step"
             f"{'s' if m.timed_steps != 1 else ''} after a {m.trial_steps - m.timed_steps}-step warm-up)",
             f"whole run: about {duration(m.run_s)} for {m.run_steps} steps (including {duration(m.startup_s)} to load and warm up)"]
    if m.epochs is not None:
        lines.append(f"{m.train_rows} training rows × {m.run_steps} steps × {m.new_prompts_per_step:g} new prompts per step = "
                     f"{epochs_words(m.epochs)}")
    if m.trainer_line:
        lines.append(f"as the trial's trainer ran it: {m.trainer_line}")
    for key, (given, used) in (m.trainer_changed or {}).items():
        lines.append(f"the trainer used {key} = {used!r}, not the {given!r} the settings give")
    if m.step_time:
        lines.append(step_time.breakdown_line(m.step_time, m.seconds_per_step))
    if m.judge_share is not None:
        lines.append(f"the judge takes {100 * m.judge_share:.0f} % of each step's time "
                     f"(about {m.judge_share * m.seconds_per_step:.1f} s of {m.seconds_per_step:.1f} s)")
    if m.peak_gpu_gib is not None:
        lines.append(f"peak GPU memory in the trial: {m.peak_gpu_gib:.2f} GiB (allocated by torch)")
    if m.peak_rss_gib is not None:
        lines.append(f"peak memory of the training process: {m.peak_rss_gib:.2f} GiB")
    return lines

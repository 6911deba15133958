"""Time and memory known before Start: a short trial run of the same settings in a throwaway folder, and the plan
it gives ("for 30 minutes, use 42 steps").

The trial is a real run (the same `rloo-studio train` worker the app starts, through `jobs`) of two generation
cycles with the config as it is — model, data, rewards, batch — saved nowhere the person looks: its folder is
temporary and removed afterwards. It is stopped as soon as the second cycle's last step is logged (the checkpoint,
the held-out check and the final save that a real run does after it are not waited for). Three times come out,
each measured, none inferred from another:

* loading: from the worker's start to the start of its first step (importing torch and the training libraries,
  loading the model, building the trainer), read from the first step's own wall time (`time/step`);
* the first cycle (one step unless a generation serves several): it pays one-time costs (first calls, caches,
  Unsloth's compilation), so it is timed apart and counted once in every total;
* a step: the second cycle's mean, so one step covers a generation and an update, as every step of the run does.

A run of S steps takes load + first cycle + (S - cycle) x step at the trial's pace (`run_seconds`); the trial itself
is that sum for its own steps. A real run's steps are often slower than the trial's on the same work (SLOWER_PACE says
how much and what is known of why), so a plan is a range (`run_range`: the trial's pace, and the steps' part
SLOWER_PACE times longer) and the steps it suggests fit the budget at the slower end (`steps_for`). `plan_words` turns
it into the sentence page and command line both say: the steps that fit a time budget and the time the set steps
take, each as a range. From the trial too: the epochs, where a step's time goes (the timed steps'
time/* keys, step_time.py), and the peak memory (the GPU's peak from the run's metrics, or on a CPU the worker's
peak resident memory), beside the memory estimator's prediction. While it runs, `on_progress` hears each stage with
its seconds (`Progress`). No torch in this process.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable

from .. import runs
from ..runs import step_time
from . import jobs
from ..batching import (MANY_EPOCHS, BatchPlan, batch_plan, effective_line, epochs, epochs_sum, epochs_words, steps_for_epochs,
                        too_many_epochs)
from ..config import RunConfig
from ..errors import StudioError
from ..rewards.judge import judge_time_share

TRIAL_CYCLES = 2  # the first generation cycle warms up, the second is timed
TRIAL_NAME = "time-trial"
POLL_S = 0.5
# A trial that has not finished after this long is stopped: it is two cycles of a run, and a run whose two cycles take
# an hour is one to shrink before it is timed.
DEFAULT_TIMEOUT_S = 3600.0
DEFAULT_MINUTES = 30  # the time budget the plan is for when the person names none
# How much slower than the trial's timed step a real run's steps may go, and the plan's upper end. Measured on
# cpu-small-real, 2 idle cores (benchmarks/estimate_time.py): the trial's timed step 10.3 s, the 16-step run it planned
# 11.1, 12.4, 12.8, 13.2 s, then 12.4-17.2 s (median 13.5 s: 1.31 x), 1.29 x the plan to its last step. Its steps did
# the same work as the trial's: every step's longest completion was cut off at the 16-token limit, so generation and the
# (padded) training pass had the same lengths, and no checkpoint or held-out check fell before the last step; the trial's
# own two steps had taken 0.89 x the run's same two. So the same work went slower as the run went on, for a reason not
# found here (the processor's pace under sustained load, other programs, the process's own memory) and not the same on
# every machine: on a loaded one the run's median step was 1.02 x the trial's. The plan says the range, not one number.
SLOWER_PACE = 1.3


@dataclass
class Measurement:
    trial_steps: int           # optimiser steps the trial trained
    timed_steps: int           # of which the last ones, after the warm-up cycle, are timed
    seconds_per_step: float    # generation + update, as in the run: the timed steps' mean
    load_s: float | None       # worker start -> first step's start (imports, model, trainer); None: not recorded
                               # (less the format warm-up, when the run has one: format_warmup_s)
    warmup_s: float            # the first cycle's steps (warm-up included); with load_s None, the loading too
    run_steps: int             # steps the real run would train
    run_s: float               # run_seconds(run_steps): at the trial's pace
    epochs: float | None       # passes over the training data the real run would make
    train_rows: int | None
    new_prompts_per_step: float  # prompts drawn from the data per step
    peak_gpu_gib: float | None  # torch's peak allocated GPU memory in the trial (None without CUDA)
    peak_rss_gib: float | None  # the peak resident memory of the worker and what it started (Linux): what a CPU run needs
    judge_share: float | None = None  # the judges' share of the timed steps' training time (None without a judge)
    trainer_line: str | None = None   # the batch plan and arguments the trial's trainer used (its trainer_args.json)
    trainer_changed: dict | None = None  # arguments the trainer holds other than it was given: {key: [given, used]}
    step_time: dict | None = None  # the timed steps' mean time by part (step_time.py's keys); None if not recorded
    cycle_steps: int = 1       # steps of one generation cycle: the warm-up's length, and the unit a plan counts in
    batch: dict | None = None  # the BatchPlan the trial's trainer used, as a dict (the epochs of a planned run)
    trial_s: float | None = None  # worker start -> the last timed step's end: load + warm-up + timed steps
    run_s_upper: float | None = None  # run_range(run_steps)'s upper end: the steps at SLOWER_PACE
    longest_completion: float | None = None  # the timed steps' longest completion, in tokens (TRL's completions/max_length)
    max_completion_length: int | None = None  # the run's limit on a completion's tokens
    format_warmup_s: float | None = None  # the format warm-up's supervised steps and checks, before RLOO (warmup.enabled)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Measurement":
        """Back from `to_dict` (the page keeps the last measurement to re-plan for another time budget)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


@dataclass
class Progress:
    """Where a running trial is: its stage in words, the seconds spent in that stage and in all."""
    stage: str
    stage_s: float
    total_s: float

    def words(self) -> str:
        """'loading the model (12 s)… 40 s in all' — the line page and command line show."""
        return f"{self.stage} ({self.stage_s:.0f} s)… {self.total_s:.0f} s in all"


def run_seconds(m: Measurement, steps: int, pace: float = 1.0) -> float:
    """Seconds a run of `steps` steps takes by the trial: loading, the first cycle (once), then the timed step's time
    for each step after it; `pace` times the steps' part (loading is not a step). A run shorter than the first cycle
    is that cycle's share."""
    fixed = (m.load_s or 0.0) + (m.format_warmup_s or 0.0)
    if steps <= m.cycle_steps:
        return fixed + pace * m.warmup_s * steps / m.cycle_steps
    return fixed + pace * (m.warmup_s + (steps - m.cycle_steps) * m.seconds_per_step)


def run_range(m: Measurement, steps: int) -> tuple[float, float]:
    """(at the trial's pace, at SLOWER_PACE): the seconds a run of `steps` steps is expected to take."""
    return run_seconds(m, steps), run_seconds(m, steps, SLOWER_PACE)


def steps_for(m: Measurement, seconds: float) -> int:
    """The most steps, in whole generation cycles, whose run fits `seconds` at the range's slower end (0 when not even
    the first cycle does): the budget holds for a run whose steps go SLOWER_PACE times the trial's."""
    first = run_seconds(m, m.cycle_steps, SLOWER_PACE)
    if first > seconds:
        return 0
    step = SLOWER_PACE * m.seconds_per_step
    after = (seconds - first) / step if step > 0 else 0.0
    steps = m.cycle_steps + int(after // m.cycle_steps) * m.cycle_steps
    while steps > m.cycle_steps and run_seconds(m, steps, SLOWER_PACE) > seconds:  # float rounding at the edge
        steps -= m.cycle_steps
    return steps


def plan_words(m: Measurement, minutes: float | None = None) -> str:
    """The plan a person asks for: 'for 30 minutes, use 42 steps: about 30 min, 4 epochs (...); as set now, about
    15 min for 20 steps'. Page and command line both say this sentence."""
    minutes = float(minutes) if minutes and minutes > 0 else DEFAULT_MINUTES
    budget = f"{minutes:g} minute{'s' if minutes != 1 else ''}"
    steps = steps_for(m, minutes * 60)
    if steps == 0:
        least = math.ceil(run_range(m, m.cycle_steps)[1] / 60)
        head = (f"{budget} are not enough for one {'step' if m.cycle_steps == 1 else 'generation cycle'}: loading and "
                f"the first {'step' if m.cycle_steps == 1 else f'{m.cycle_steps} steps'} take about "
                f"{duration_range(*run_range(m, m.cycle_steps))}; allow at least {least} minutes")
    else:
        seen = f", {epochs_words(epochs(m.train_rows, BatchPlan(**m.batch), steps))}" if m.train_rows and m.batch else ""
        head = f"for {budget}, use {steps} steps: about {duration_range(*run_range(m, steps))}{seen}"
        if seen and too_many_epochs(epochs(m.train_rows, BatchPlan(**m.batch), steps)):
            # The Train tab's limit: what fits the minutes is not what to use. The steps within it lead.
            within = max(m.cycle_steps, steps_for_epochs(m.train_rows, BatchPlan(**m.batch)) // m.cycle_steps * m.cycle_steps)
            head = (f"for {budget}, use at most {within} steps: {MANY_EPOCHS} epochs, about "
                    f"{duration_range(*run_range(m, within))}. The whole {budget} would be {steps} steps{seen}: more than "
                    f"{MANY_EPOCHS} passes over these {m.train_rows} rows, where the model may learn their answers by heart; "
                    "more data would use the time better")
    if m.run_steps:
        head += f"; as set now, about {duration_range(*run_range(m, m.run_steps))} for {m.run_steps} steps"
    return head


def trial_steps(plan: BatchPlan) -> tuple[int, int]:
    """(steps the trial trains, steps it times): TRIAL_CYCLES whole generation cycles, the last one timed."""
    cycle = max(1, math.ceil(plan.steps_per_cycle))
    return TRIAL_CYCLES * cycle, cycle


def trial_config(cfg: RunConfig, steps: int) -> RunConfig:
    """The config the trial trains: `cfg` for `steps` steps, every step logged (the times are read from the log),
    nothing saved before the end (the trial is stopped at its last step's log)."""
    trial = RunConfig.from_dict(cfg.to_dict(), base_dir=cfg.base_dir)
    trial.rloo["max_steps"] = steps
    trial.rloo["save_steps"] = steps
    trial.rloo["logging_steps"] = 1
    trial.output.run_name = TRIAL_NAME
    return trial


def run_steps(cfg: RunConfig, plan: BatchPlan, train_rows: int | None) -> int | None:
    """Optimiser steps the real run trains with the trial trainer's `plan` (`RunConfig.trained_steps`)."""
    return cfg.trained_steps(train_rows, plan)


def _peak_rss_gib(pid) -> float | None:
    """The resident-memory high-water marks (VmHWM) of the worker and every process it started, summed, Linux only;
    None elsewhere or once it has exited. With --num-processes the worker is the launcher and the ranks, which hold
    the models, are its children; a reward sandbox or a local judge is a child too. The sum of the peaks can exceed
    the peak of the sum a little: the side a memory plan should err on."""
    from ..procs import family

    peaks = [_own_peak_gib(p.pid) for p in family(pid)]
    known = [p for p in peaks if p is not None]
    return sum(known) if known else None


def _own_peak_gib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{int(pid)}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024**2  # kB
    except (OSError, ValueError, TypeError):
        return None
    return None


def _stage(view, steps: int, timed: int) -> str:
    """The trial's stage in words, from its folder: the worker writes `running` once torch and the training libraries
    are imported, trainer_args.json once the model is loaded and the trainer built, a metrics line per step."""
    warm = steps - timed
    if view.state == "queued":
        return "starting the training process (importing torch and the training libraries)"
    format_warmup = view.status.get("warmup")
    if isinstance(format_warmup, dict) and not format_warmup.get("finished"):  # (engine/warmup.py: before the trainer)
        return (f"the format warm-up: supervised step {format_warmup.get('step', 0)} of {format_warmup.get('steps')} "
                "(once, before RLOO)")
    if not (view.path / runs.TRAINER_ARGS_FILE).exists():
        return "loading the model"
    if view.step < warm:
        first = "first step" if warm == 1 else f"first {warm} steps (one generation cycle)"
        return f"{first}: warm-up, timed apart"
    if timed == 1:
        return f"step {steps} of {steps}: timed"
    return f"steps {warm + 1}-{steps} of {steps}: timed"


def _stop_worker(view) -> None:
    """End the trial's worker and whatever it started (jobs.start_run records its pid before returning)."""
    from ..procs import kill_tree

    if view.status.get("pid"):
        kill_tree(int(view.status["pid"]))


def measure(cfg: RunConfig, reward_source: str | None = None, train_rows: int | None = None,
            on_progress: Callable[[Progress], None] = lambda progress: None,
            timeout_s: float = DEFAULT_TIMEOUT_S) -> Measurement:
    """Train a trial of `cfg` in a temporary folder and time it; raises StudioError when the trial fails.

    `reward_source` is the reward editor's code (as for `jobs.start_run`); `train_rows` the number of training rows,
    for the epochs (None: not said); `on_progress(Progress)` is called at each poll as the trial goes.
    """
    plan = cfg.batch_plan()
    steps, timed = trial_steps(plan)
    if reward_source is None:
        # From the command line the config's own rewards.py is the code; `jobs` writes it into the trial's folder, as the
        # app writes its editor's code (a `file: rewards.py` entry is read from the run folder).
        own = next((cfg.resolve_path(s.file) for s in cfg.rewards if s.file == runs.REWARDS_FILE), None)
        reward_source = own.read_text(encoding="utf-8") if own is not None and own.is_file() else None
    trial = trial_config(cfg, steps)
    folder = Path(tempfile.mkdtemp(prefix="rloo-studio-trial-"))
    try:
        started = time.time()  # before the worker is started: whatever starting it costs is loading too
        run_dir = jobs.start_run(trial, folder, reward_source)
        peak_rss, stage, stage_started = None, None, started
        while True:
            view = jobs.view(run_dir, samples_tail=0)
            peak_rss = _peak_rss_gib(view.status.get("pid")) or peak_rss
            logged = {int(r["step"]) for r in view.metrics if "step" in r and "time" in r}
            if steps in logged:  # the last timed step is in: the rest of the trial (checkpoint, final save) is not timed
                _stop_worker(view)
                break
            if view.state not in runs.ACTIVE_STATES:
                break
            now = time.time()
            words = _stage(view, steps, timed)
            if words != stage:
                stage, stage_started = words, now
            on_progress(Progress(stage, now - stage_started, now - started))
            if now - started > timeout_s:
                _stop_worker(view)
                raise StudioError(f"the time trial did not finish in {timeout_s / 60:.0f} minutes",
                                  f"its {steps} steps are that slow with these settings",
                                  "use fewer completions per step or a shorter completion length, then measure again")
            time.sleep(POLL_S)
        if steps not in logged:
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
    # The first step's record holds its own wall time from the start of training (time/step): what came before it
    # is the loading. Without that key (a record from another version) loading and warm-up are one number.
    own = rows[first].get(step_time.STEP_KEY)
    training_began = rows[first]["time"] - float(own) if first == 1 and isinstance(own, (int, float)) else None
    load = max(0.0, training_began - started) if training_began is not None else None
    # The format warm-up (warmup.enabled) runs between loading and the first step: its own seconds, said apart.
    warmed = (runs.read_status(run_dir).get("warmup") or {}).get("seconds")
    format_warmup = float(warmed) if isinstance(warmed, (int, float)) and load is not None else None
    if format_warmup is not None:
        format_warmup = min(format_warmup, load)
        load -= format_warmup
    warmup = rows[warm]["time"] - (training_began if training_began is not None else started)
    peak_gpu = max((r.get("memory/peak_allocated_gib") or 0.0 for r in rows.values()), default=0.0) or None
    timed_rows = [r for step, r in rows.items() if warm < step <= last]
    share = judge_time_share(timed_rows)
    # The plan the trial's trainer derived from the arguments it holds (trainer_args.json): the run trains the same.
    recorded = runs.read_json(run_dir / runs.TRAINER_ARGS_FILE) or {}
    held = recorded.get("args")
    if held:
        plan = batch_plan(held, int(held.get("world_size") or 1))
    total_steps = run_steps(cfg, plan, train_rows)
    m = Measurement(trial_steps=steps, timed_steps=timed, seconds_per_step=per_step, load_s=load, warmup_s=warmup,
                    format_warmup_s=format_warmup,
                    run_steps=total_steps or 0, run_s=0.0,
                    epochs=epochs(train_rows, plan, total_steps) if train_rows and total_steps else None,
                    train_rows=train_rows, new_prompts_per_step=plan.new_prompts_per_step,
                    peak_gpu_gib=peak_gpu, peak_rss_gib=peak_rss,
                    judge_share=share[0] / share[1] if share else None,
                    trainer_line=effective_line(held, int(held.get("world_size") or 1)) if held else None,
                    trainer_changed=recorded.get("changed") or None, step_time=step_time.mean_breakdown(timed_rows),
                    cycle_steps=warm, batch=asdict(plan), trial_s=rows[last]["time"] - started,
                    longest_completion=max((float(r["completions/max_length"]) for r in timed_rows
                                            if isinstance(r.get("completions/max_length"), (int, float))), default=None),
                    max_completion_length=int(cfg.rloo_value("max_completion_length") or 0) or None)
    m.run_s, m.run_s_upper = run_range(m, m.run_steps)
    return m


def duration(seconds: float) -> str:
    """'45 s', '12 min', '3 h 05 min': a run's time as a person reads it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def duration_range(low: float, high: float) -> str:
    """'2.3–2.9 min', '23–30 min', '45–58 s', '58 min – 1 h 15 min': a range of run times as a person reads it, in the
    unit of its upper end; one number when both ends read the same."""
    if high < 90:
        ends, unit = (f"{low:.0f}", f"{high:.0f}"), " s"
    elif high < 600:  # under 10 minutes a tenth of a minute is worth saying ("3–3 min" says nothing)
        ends, unit = (f"{low / 60:.1f}", f"{high / 60:.1f}"), " min"
    elif high < 3600:
        ends, unit = (f"{low / 60:.0f}", f"{high / 60:.0f}"), " min"
    else:
        ends, unit = (duration(low), duration(high)), ""
    if ends[0] == ends[1]:
        return ends[1] + unit
    return f"{ends[0]} – {ends[1]}" if not unit else f"{ends[0]}–{ends[1]}{unit}"


def times_line(m: Measurement) -> str:
    """'loading took 48 s; a step takes 41.2 s (...)': the measured times, each apart."""
    first = "the first step" if m.cycle_steps == 1 else f"the first {m.cycle_steps} steps (one generation cycle)"
    timed = f"the next {m.timed_steps} steps' mean" if m.timed_steps != 1 else "the next step"
    loading = (f"loading took {duration(m.load_s)}" if m.load_s is not None
               else "loading is not recorded apart (counted in the warm-up)")
    if m.format_warmup_s is not None:
        loading += f", then the format warm-up {duration(m.format_warmup_s)} (once, before RLOO's first step)"
    return (f"{loading}; a step takes {m.seconds_per_step:.1f} s (generation + update, {timed}); {first} took "
            f"{duration(m.warmup_s)} (one-time warm-up costs: counted once, not per step)")


def summary_lines(m: Measurement, minutes: float | None = None) -> list[str]:
    """The measurement in words, one fact a line (the CLI prints them; the app shows them): the times, the plan for
    `minutes` (DEFAULT_MINUTES when None), then the run, the step's parts and the memory."""
    lines = [times_line(m), plan_words(m, minutes)]
    if m.trial_s is not None:
        lines.append(f"the trial's {m.trial_steps} steps took {duration(m.trial_s)} in all, loading included; a run of "
                     f"S steps: {duration(m.load_s or 0.0)} + "
                     + (f"{duration(m.format_warmup_s)} (format warm-up) + " if m.format_warmup_s is not None else "")
                     + f"{duration(m.warmup_s)} + (S − {m.cycle_steps}) × "
                     f"{m.seconds_per_step:.1f} s at the trial's pace")
    lines.append(f"the range: a real run's later steps have taken up to {SLOWER_PACE:g} × the trial's timed step for the "
                 "same work (measured on a CPU; why is not known, and it varies by machine), so the steps suggested fit "
                 "the time at that pace; a run whose steps keep the trial's pace ends sooner")
    if m.longest_completion is not None and m.max_completion_length and m.longest_completion < m.max_completion_length:
        # SLOWER_PACE was measured with every completion at the limit: longer answers are more work, outside the range.
        lines.append(f"the trial's completions were at most {m.longest_completion:.0f} tokens of the "
                     f"{m.max_completion_length} allowed: if the answers grow towards the limit as training goes on, "
                     "each step generates and trains on more tokens and the run takes longer than this range")
    if m.epochs is not None:
        lines.append(epochs_sum(m.train_rows, m.run_steps, m.new_prompts_per_step))
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

"""Starting, stopping and watching training workers for the app: one run at a time.

A worker is the same command a person would type (`python -m rloo_studio.cli train CONFIG
--run-dir DIR`), started as a child process in its own session (`procs.Child`) so that it survives a restart
of the app (the app re-attaches by reading the run directory). When it ends — finished, stopped, failed on a
reward's time limit, crashed — whatever its reward code left running in its session ends with it. This module creates the run
directory first — status `queued`, the config and the reward code — so the run is visible at
once and a worker that fails before training begins still leaves its reason in status.json.
It never imports torch: everything it knows comes from the run directory (see `runs`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import paths, runs
from ..batching import at_cycle_boundary, batch_plan
from ..config import RunConfig
from ..errors import StudioError
from ..procs import STDOUT, Child

# Workers started by this process, by run directory: kept to reap them when they end (a child
# that has exited but was never waited for is a zombie until then).
_children: dict[str, Child] = {}
# Checking "is anything training?" and starting a worker must not interleave between two sessions.
_start_lock = threading.Lock()


def _reap() -> None:
    for key, proc in list(_children.items()):
        if proc.poll() is not None:
            _children.pop(key, None)


def active_run(runs_dir: str | Path) -> Path | None:
    """The run whose worker is alive and queued, running or stopping; None when nothing trains."""
    _reap()
    for summary in runs.list_runs(runs_dir):
        if summary.state in runs.ACTIVE_STATES:
            return summary.path
    return None


def _refuse_if_busy(runs_dir: str | Path) -> None:
    busy = active_run(runs_dir)
    if busy is not None:
        raise StudioError(f"run {busy.name} is still training",
                          "one run trains at a time: two would compete for the same GPU (or CPU) memory",
                          "wait for it to finish, or press Stop and start again when it has stopped")


def worker_python(cfg: RunConfig) -> str:
    """The interpreter a run's worker starts from: the fast-generation environment (vLLM) where one was set up and the
    run does not switch fast generation off, else this one. The worker decides whether vLLM is really used."""
    fast = paths.fast_python() if cfg.model.fast_generation != "off" else None
    return str(fast) if fast is not None else sys.executable


def _spawn(run_dir: Path, args: list[str], python: str | None = None) -> Child:
    env = {**os.environ, runs.LOG_CAPTURED_ENV: str(run_dir.resolve()), "PYTHONUNBUFFERED": "1"}
    log = open(run_dir / runs.LOG_FILE, "a", encoding="utf-8")
    try:
        # Its own session: it survives the app's restart and its Ctrl-C.
        proc = Child([python or sys.executable, "-m", "rloo_studio.cli", "train", *args], stdout=log, stderr=STDOUT, env=env)
    finally:
        log.close()  # the child has its own copy of the descriptor
    _children[str(run_dir.resolve())] = proc
    return proc


def start_run(cfg: RunConfig, runs_dir: str | Path, reward_source: str | None = None, checked: bool = False) -> Path:
    with _start_lock:
        return _start_run(cfg, runs_dir, reward_source, checked)


def _start_run(cfg: RunConfig, runs_dir: str | Path, reward_source: str | None, checked: bool) -> Path:
    """Create the run directory and start its worker; returns the directory.

    `reward_source` is the code of the app's reward editor: written to the run's rewards.py and
    referenced by the config's `{file: rewards.py}` rewards. `checked`: the caller has validated `cfg` and refused
    it on any problem (the page's form does, on every Start): the app's one validation of it (the worker's preflight
    is the other, the one the command line has too).
    """
    problems = [] if checked else cfg.validate()
    if problems:
        from ..errors import ConfigError

        raise ConfigError(problems, "the settings")
    runs_dir = Path(runs_dir).expanduser().resolve()
    _refuse_if_busy(runs_dir)
    name = cfg.output.run_name or Path(cfg.model.name_or_path.rstrip("/")).name or "run"
    run_dir = runs.create_run_dir(runs_dir, name)
    if reward_source is not None and any(s.file == runs.REWARDS_FILE for s in cfg.rewards):
        (run_dir / runs.REWARDS_FILE).write_text(reward_source, encoding="utf-8")
    # Relative paths (data files, model folders) were chosen relative to the app's folder: make
    # them absolute so the worker, started inside runs/, finds them; reward files live in the run.
    # The run's own copy: the caller's config is left as it was.
    cfg = cfg.with_absolute_paths(run_dir, keep=(runs.REWARDS_FILE,))
    cfg.output.runs_dir = str(runs_dir)
    config_path = run_dir / runs.CONFIG_FILE
    cfg.save(config_path)
    runs.update_status(run_dir, state="queued", step=0, max_steps=cfg.rloo_value("max_steps"), model=cfg.model.name_or_path,
                       started_at=time.time(), started_by="app")
    proc = _spawn(run_dir, [str(config_path), "--run-dir", str(run_dir)], worker_python(cfg))
    runs.update_status(run_dir, pid=proc.pid)
    return run_dir


def resume_run(run_dir: str | Path) -> Path:
    """Continue a stopped, failed or interrupted run from its last checkpoint."""
    with _start_lock:
        return _resume_run(run_dir)


def _resume_run(run_dir: str | Path) -> Path:
    run_dir = Path(run_dir).expanduser().resolve()
    if not (run_dir / runs.CONFIG_FILE).is_file():
        raise StudioError(f"{run_dir.name} is not a run directory (no {runs.CONFIG_FILE})",
                          "only runs made by RLOO Studio can be resumed", "pick a run from the Runs list")
    state = runs.effective_state(runs.read_status(run_dir))
    if state == "finished":
        raise StudioError(f"run {run_dir.name} has finished all its steps",
                          "resume continues an unfinished run", "start a new run with more steps instead")
    _refuse_if_busy(run_dir.parent)
    if runs.last_checkpoint(run_dir) is None:
        note = "no checkpoint was saved yet, so training starts again from step 0"
    else:
        note = f"continuing from checkpoint {runs.last_checkpoint(run_dir)[0]}"
    runs.clear_stop(run_dir)
    runs.update_status(run_dir, state="queued", pid=None, error=None, note=note)
    proc = _spawn(run_dir, ["--resume", str(run_dir)], worker_python(RunConfig.load(run_dir / runs.CONFIG_FILE)))
    runs.update_status(run_dir, pid=proc.pid)
    return run_dir


def stop_run(run_dir: str | Path) -> str:
    """Ask a running worker to stop after its current step (it saves a checkpoint first)."""
    run_dir = Path(run_dir)
    status = runs.read_status(run_dir)
    state = runs.effective_state(status)
    if state not in runs.ACTIVE_STATES:
        return f"run {run_dir.name} is not training ({state}); nothing to stop"
    runs.request_stop(run_dir)
    if state == "queued":
        # The worker is still loading: it takes the folder only while the app's `queued` stands (prepare_run_dir),
        # so the state stays; the STOP file stops it after its first step, with a checkpoint.
        return f"stopping {run_dir.name} after its first step (it is still loading); a checkpoint is saved so it can be resumed"
    if state != "stopping":
        runs.update_status(run_dir, state="stopping", stop_at=None)  # the worker says the step (a stop of an earlier session is no answer)
    return (f"stopping {run_dir.name} after the current step (in the middle of a generation cycle, at the cycle's end); "
            "a checkpoint is saved so it can be resumed")


@dataclass
class RunView:
    """Everything the app shows about one run, read from its directory."""
    run_id: str
    path: Path
    state: str
    status: dict
    metrics: list[dict] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    log_tail: str = ""

    @property
    def step(self) -> int:
        return int(self.status.get("step") or 0)

    @property
    def max_steps(self) -> int | None:
        return self.status.get("max_steps")


def read_tail(path: Path, max_bytes: int = 6000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            text = fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return text if size <= max_bytes else text.split("\n", 1)[-1]


def cycle_ends(run_dir: str | Path) -> Callable[[int], bool] | None:
    """Whether a generation cycle ends at a step, as the run's trainer plans its cycles (its trainer_args.json); None
    before the trainer is built, or for a run from a version that did not record it."""
    held = (runs.read_json(Path(run_dir) / runs.TRAINER_ARGS_FILE) or {}).get("args")
    if not held:
        return None
    try:
        plan = batch_plan(held, int(held.get("world_size") or 1))
    except (KeyError, TypeError, ValueError):
        return None
    return lambda step: at_cycle_boundary(step, plan)


def view(run_dir: str | Path, samples_tail: int = 40) -> RunView:
    _reap()
    run_dir = Path(run_dir)
    status = runs.read_status(run_dir)
    samples = runs.read_jsonl(run_dir / runs.SAMPLES_FILE)[-samples_tail:]
    return RunView(run_id=run_dir.name, path=run_dir, state=runs.effective_state(status) if status else "unknown",
                   status=status, metrics=runs.read_jsonl(run_dir / runs.METRICS_FILE), samples=samples,
                   log_tail=read_tail(run_dir / runs.LOG_FILE))


def delete_run(run_dir: str | Path) -> None:
    """Delete a run directory (the app asks for confirmation first); refuses a run that trains."""
    import shutil

    run_dir = Path(run_dir)
    if runs.effective_state(runs.read_status(run_dir)) in runs.ACTIVE_STATES:
        raise StudioError(f"run {run_dir.name} is still training", "its worker is writing into the folder", "stop it first")
    if not (run_dir / runs.STATUS_FILE).exists():
        raise StudioError(f"{run_dir} is not a run directory", "only run folders are deleted by the app", "check the path")
    shutil.rmtree(run_dir)

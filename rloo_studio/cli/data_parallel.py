"""The launcher of training in several processes: `rloo-studio train --num-processes N` or `--accelerate-config FILE`.

This process (the launcher) checks the config, creates the run directory so every rank writes to the same one, then
runs the ranks through `accelerate launch` as one child process group, copies their output to the terminal and
train.log, and turns Ctrl-C/SIGTERM into the run's clean stop. status.json's pid is this launcher's. With several
machines each runs its own launcher; machine 0's creates the run directory and records the run, the others join the
same directory (a shared folder) and write only their own log.

distributed.py builds the `accelerate launch` command and runs the process loop (`supervise`); what needs the run
directory and the config is here, because distributed's layer may not import them. The CLI parses the arguments and
calls `train_data_parallel`; the ranks themselves are `rloo-studio train` processes (the engine).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from .. import runs
from ..machine.distributed import LAUNCHER_PID_ENV, RUN_DIR_ENV, AccelerateConfig
from ..errors import ConfigError, StudioError


def _cuda_device_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no torch / a broken driver: the ranks will say so themselves
        return 0


def _wait_for_run_dir(run_dir: Path, timeout_s: float = 600) -> None:
    """Machine k > 0: machine 0's launcher creates the run directory (on the shared filesystem); wait for it."""
    deadline = time.time() + timeout_s
    while not (run_dir / runs.CONFIG_FILE).is_file():
        if time.time() > deadline:
            raise StudioError(f"{run_dir / runs.CONFIG_FILE} did not appear within {timeout_s:.0f} s",
                              "with several machines, machine 0 (machine_rank: 0) creates the run directory and the "
                              "others use the same folder, which must be on a filesystem every machine shares",
                              "start machine 0 with the same --run-dir, and check that this path is that shared folder")
        time.sleep(1)


def _rank_env(run_dir: Path) -> dict:
    """The ranks' environment: which run they write (rank 0) or watch (the STOP file), and who launched them
    (`procs.Child` adds what every child gets)."""
    return {**os.environ, RUN_DIR_ENV: str(run_dir), LAUNCHER_PID_ENV: str(os.getpid()),
            runs.LOG_CAPTURED_ENV: str(run_dir), "PYTHONUNBUFFERED": "1"}


def train_data_parallel(config_path: str, overrides: list[str], *, num_processes: int = 1,
                        accelerate: AccelerateConfig | None = None, accelerate_config: str | None = None,
                        resume: str | None = None, given_run_dir: str | None = None) -> int:
    """Train `config_path` (with `overrides`) in `num_processes` processes, or as the accelerate config
    `accelerate` asks (`accelerate_config`: its path as the person gave it, for the resume hint);
    `resume` and `given_run_dir` are `train`'s --resume and --run-dir.

    Raises StudioError when the run cannot start, before any process starts (the CLI says it, and marks a
    run the app queued as failed). Otherwise returns the command's exit code: 0 when the ranks finished or
    stopped cleanly, 1 when they failed, 130 when a signal ended them before a clean stop."""
    from ..config import RunConfig
    # From distributed at each call, not above: the launcher tests stand a fake in for launcher_argv there.
    from ..machine.distributed import check_can_launch, launcher_argv, supervise

    n = accelerate.num_processes if accelerate else num_processes
    local = accelerate.local_processes if accelerate else n
    machine = accelerate.machine_rank if accelerate else 0
    check_can_launch(local)  # the cheap refusals first (no accelerate, n < 1)
    cfg = RunConfig.load(config_path, overrides)
    problems = cfg.validate(num_processes=n)  # TRL's generation batch counts every process
    if problems:
        raise ConfigError(problems, "the run config")
    check_can_launch(local, _cuda_device_count())
    if resume:
        run_dir = Path(resume).resolve()
        rank_args = [config_path, "--resume", str(run_dir), *overrides]
    elif machine > 0:
        if not given_run_dir:
            raise StudioError(f"machine_rank {machine} needs --run-dir: the run directory machine 0 creates",
                              "every machine trains the same run, which machine 0 writes",
                              "give every machine the same --run-dir on a shared folder, e.g. --run-dir /mnt/team/runs/my-run")
        run_dir = Path(given_run_dir).resolve()
        _wait_for_run_dir(run_dir)
        rank_args = [str(run_dir / runs.CONFIG_FILE), "--run-dir", str(run_dir)]
    else:
        from ..engine.run_folder import prepare_run_dir

        run_dir = prepare_run_dir(cfg, given_run_dir).resolve()
        rank_args = [str(run_dir / runs.CONFIG_FILE), "--run-dir", str(run_dir)]  # the resolved config holds the overrides
    if machine > 0:
        return _join_as_machine(machine, run_dir, launcher_argv(n, rank_args, config_file=accelerate.path))
    fresh = {} if resume else {"started_at": time.time(), "step": 0, "max_steps": cfg.rloo_value("max_steps"),
                               "model": cfg.model.name_or_path}
    runs.update_status(run_dir, state="queued", pid=os.getpid(), num_processes=n, error=None, **fresh)
    # When the app started this launcher its output already goes to train.log; otherwise this process writes it.
    log_file = None if os.environ.get(runs.LOG_CAPTURED_ENV) == str(run_dir) else open(run_dir / runs.LOG_FILE, "ab")
    env = _rank_env(run_dir)
    argv = launcher_argv(n, rank_args, config_file=accelerate.path) if accelerate else launcher_argv(n, rank_args)
    how = f"with {accelerate.path}" if accelerate else "(data-parallel)"
    line = f"[rloo-studio] training in {n} processes {how}: {' '.join(argv)}\n"
    print(line, end="", flush=True)
    if log_file:
        log_file.write(line.encode())

    def clean_stop(signum: int) -> bool:
        if runs.read_status(run_dir).get("state") not in ("running", "stopping"):
            return False  # before training began: end the processes now
        runs.request_stop(run_dir)  # every rank sees it and they stop together, with a checkpoint
        runs.update_status(run_dir, state="stopping")
        print(f"\nStop requested ({signal.Signals(signum).name}): all {n} processes finish the current step, then save. "
              "Send it again to stop at once.", file=sys.stderr, flush=True)
        return True

    try:
        rc, signals = supervise(argv, env, log_file, clean_stop)
    finally:
        if log_file:
            log_file.close()
    again = f"--accelerate-config {accelerate_config} (on every machine)" if accelerate else f"--num-processes {n}"
    status = runs.read_status(run_dir)
    if status.get("state") in runs.ACTIVE_STATES:  # no rank recorded the end: killed, or a rank other than 0 failed
        if signals:
            runs.update_status(run_dir, state="stopped", pid=None, note="stopped before a clean stop; resume continues from the last checkpoint")
        else:
            runs.update_status(run_dir, state="failed", pid=None, error=StudioError(
                f"training in {n} processes failed (exit code {rc})", "one of the processes ended with an error",
                f"read {run_dir / runs.LOG_FILE}: each process's output is there").as_dict())
        status = runs.read_status(run_dir)
    if rc == 0 and status.get("state") in ("finished", "stopped"):
        if status.get("state") == "stopped":
            print(f"Stopped at step {status.get('step')}. Continue with: rloo-studio train --resume {run_dir} {again}")
        return 0
    if signals:
        print(f"\nerror: stopped before a clean stop; continue with: rloo-studio train --resume {run_dir} {again}",
              file=sys.stderr)
        return 130
    error = status.get("error") or {}
    print(f"\nerror: {error.get('what') or f'training in {n} processes failed (exit code {rc})'}\n"
          f"The output of every process is in {run_dir / runs.LOG_FILE}.", file=sys.stderr)
    return 1


def _join_as_machine(machine: int, run_dir: Path, argv: list[str]) -> int:
    """Machine k > 0 of a several-machine run: start this machine's ranks, show their output (and keep it in
    train.machine-K.log); machine 0's launcher records the run. Ctrl-C asks the whole run to stop (STOP file)."""
    from ..machine.distributed import supervise

    env = _rank_env(run_dir)
    print(f"[rloo-studio] machine {machine}: joining run {run_dir}: {' '.join(argv)}", flush=True)

    def clean_stop(signum: int) -> bool:
        runs.request_stop(run_dir)  # rank 0 sees it; all ranks agree on the step to stop at
        print(f"\nStop requested ({signal.Signals(signum).name}): every machine finishes the current step, then "
              "machine 0 saves. Send it again to end this machine's processes now.", file=sys.stderr, flush=True)
        return True

    with open(run_dir / f"train.machine-{machine}.log", "ab") as log_file:
        rc, signals = supervise(argv, env, log_file, clean_stop)
    if rc != 0:
        print(f"\nerror: machine {machine}'s training processes ended with exit code {rc}; their output is in "
              f"{run_dir / f'train.machine-{machine}.log'}, machine 0's in {run_dir / runs.LOG_FILE}", file=sys.stderr)
        return 130 if signals else 1
    return 0

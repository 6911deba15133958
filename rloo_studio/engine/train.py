"""The training worker: one RLOO run, from a checked config to a finished run directory.

`run_training` is exactly what `rloo-studio train` executes (the app starts that same command in a
child process, rloo_studio/workers/jobs.py). It writes the run directory as the contract says:
config.yaml, reward source copies, status.json, metrics.jsonl (every logged key), samples.jsonl,
alerts.jsonl (health alerts, engine/health.py), train.log, checkpoints and the final adapter. A stop request (the STOP file or SIGINT/SIGTERM)
ends training after the current step with a checkpoint and the adapter saved. It does not
parse command lines or print for people; the CLI does that. What the trainer is built with is in
engine/trainer_args.py, the run directory's preparation in engine/run_folder.py.

Over 500 lines because the run loop is one sequence whose order matters (the checks before torch, the
stop and failure handling wrapped around TRL's `train()`, the callbacks that write the run directory as
it goes): cut further, its steps would be read in several files to follow one run.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import traceback
from pathlib import Path

import psutil

from .. import runs
from ..runs import step_time
from ..batching import BatchPlan, at_cycle_boundary, batch_plan, cycle_end, effective_line
from ..config import RunConfig
from ..errors import ConfigError, RewardError, StudioError
from ..machine.distributed import LAUNCHER_PID_ENV, RUN_DIR_ENV, rank, world_size
from ..runs.alerts import GENERATIONS_KEY, RunFacts
from ..rewards.judge import judge_seconds_per_step
from .failures import disk_full_error, out_of_memory_error
from .dynamic_sampling import DynamicSampler
from . import fast_generation
from .health import HealthWatch, roll_back
from .preflight import format_findings, preflight, prompt_hints, prompt_warnings
from .run_folder import prepare_run_dir, resolved_config, save_resumed_config
from .trainer_args import (check_prompt_lengths, keep_adapters_in_fp32, record_trainer_arguments, restore_trained_adapter,
                           rloo_arguments, trainer_arguments)

log = logging.getLogger("rloo_studio.train")


def write_line(line: str) -> None:
    """Write one line of the worker's output in one write. The ranks of a multi-process run share one pipe, and with
    unbuffered output (every child's) `print` writes the text and the newline apart: two ranks printing at once then
    ran into one line of train.log. One write under the pipe's atomic size is never split by another process's."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def worker_line(text: str) -> None:
    """One of the worker's own lines, `[rloo-studio] text`, written whole (`write_line`), from any rank."""
    write_line(f"[rloo-studio] {text}")


def is_main_process() -> bool:
    """Rank 0 writes the run directory; other ranks (accelerate/torchrun) only train."""
    return int(os.environ.get("RANK", "0")) == 0


class _Tee:
    """Copy a stream into train.log while still showing it to the person."""

    def __init__(self, stream, log_file):
        self.stream, self.log_file = stream, log_file

    def write(self, text):
        self.stream.write(text)
        self.log_file.write(text)
        return len(text)

    def flush(self):
        self.stream.flush()
        self.log_file.flush()

    def isatty(self):
        return False

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _set_beta(trainer, cfg: RunConfig, run_dir: Path, beta: float) -> None:
    """alerts.on_hacking: raise_beta. TRL reads `trainer.beta` at every generation (with LoRA the reference is the
    adapter switched off, so a run started with beta 0 can take one); the run's config.yaml gets the value, the old
    one kept beside it, so a resume trains with it."""
    trainer.beta = beta
    cfg.rloo["beta"] = beta
    config_path = run_dir / runs.CONFIG_FILE
    if config_path.exists():
        (run_dir / f"config.before-raise-beta-{time.strftime('%Y%m%d-%H%M%S')}.yaml").write_text(
            config_path.read_text(encoding="utf-8"), encoding="utf-8")
    config_path.write_text(resolved_config(cfg, run_dir).to_yaml(), encoding="utf-8")


def _studio_callback(stack, run_dir: Path, stop_flag: dict, resumed_from: int, plan: BatchPlan, health=None):
    transformers = stack.transformers

    class StudioCallback(transformers.TrainerCallback):
        """Writes metrics.jsonl and status.json (and, through `health`, alerts.jsonl), and turns a stop request into a clean stop.

        A stop and a `save_steps` checkpoint happen only where a generation cycle ends
        (`batching.at_cycle_boundary`): TRL keeps the completions of a cycle in memory, not in the
        checkpoint, so a resume from the middle of one would generate different completions than the
        uninterrupted run. Both wait for the cycle's end (at most steps_per_generation x
        num_iterations micro-batches)."""

        def __init__(self):
            self.begun = (resumed_from, time.time())  # set again when training begins: loading is no step's time
            self.first_done = None  # (step, time) when this process's first step ended: the ETA's pace starts there
            self.save_pending = False
            self.step_times = dict  # StepTimer.take once the trainer exists: where the logged steps' time went

        def _eta(self, state):
            now = time.time()
            if self.first_done is None and state.global_step > self.begun[0]:
                self.first_done = (state.global_step, now)
            return step_time.eta_seconds(self.begun, self.first_done, state.global_step, state.max_steps, now)

        def on_train_begin(self, args, state, control, **kwargs):
            self.begun = (max(state.global_step, resumed_from), time.time())
            if state.is_world_process_zero:
                runs.update_status(run_dir, state="running", max_steps=state.max_steps, step=state.global_step)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs:
                return
            if "train_runtime" in logs:  # the end-of-training summary, not a step
                runs.update_status(run_dir, summary=dict(logs))
                return
            record = {"step": state.global_step, "time": time.time(), **logs, **self.step_times()}
            # The judge's seconds as the step's (TRL logs one generation batch's mean; a step may hold several).
            batches = (record.get(GENERATIONS_KEY) or 1.0) * max(1.0, plan.accumulation / plan.micro_batches_per_cycle)
            record = judge_seconds_per_step(record, float(batches))
            cuda = stack.torch.cuda
            if cuda.is_available():
                # Peak since the start (or resume): what the memory estimator is checked against.
                record["memory/peak_allocated_gib"] = cuda.max_memory_allocated() / 1024**3
                record["memory/peak_reserved_gib"] = cuda.max_memory_reserved() / 1024**3
            if health is not None:
                record = health.on_metrics(record)
            runs.append_jsonl(run_dir / runs.METRICS_FILE, record)

        def on_step_end(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                # The training time so far, kept at every step: a run whose worker dies keeps its last step's.
                runs.update_status(run_dir, step=state.global_step, max_steps=state.max_steps, eta_s=self._eta(state),
                                   trained_s=runs.trained_seconds(runs.read_status(run_dir), state="running"))
            boundary = at_cycle_boundary(state.global_step, plan)
            final = state.global_step >= state.max_steps
            # transformers' own flow callback ran first and asked for a save_steps checkpoint (and one at the end):
            # mid-cycle, keep the wish for the cycle's end. The final checkpoint is always written.
            if control.should_save and not boundary and not final:
                control.should_save, self.save_pending = False, True
            elif boundary and self.save_pending:
                control.should_save, self.save_pending = True, False
            if "cause" not in stop_flag:  # the first reason to stop is the one the status keeps
                cause = stop_cause(stop_flag, run_dir, health)
                if cause:
                    stop_flag["cause"] = cause
            wants_stop = bool(stop_flag.get("cause") or stop_flag.get("deferred"))
            if _all_ranks_agree(wants_stop, stack):
                if not boundary and not final:
                    if not stop_flag.get("deferred") and state.is_world_process_zero:
                        # The step it stops at, for the page: "after the current step" would be up to a cycle early.
                        runs.update_status(run_dir, state="stopping", stop_at=min(cycle_end(state.global_step, plan),
                                                                                  state.max_steps))
                        worker_line(f"stop requested at step {state.global_step}: stopping at the end of this generation cycle "
                            f"(every {plan.steps_per_cycle:g} steps), so a resume continues exactly")
                    stop_flag["deferred"] = True
                    return control
                stop_flag["requested"] = True
                control.should_training_stop = True
                control.should_save = True  # a checkpoint at this step, so --resume continues from here
                if state.is_world_process_zero:
                    runs.update_status(run_dir, state="stopping", stop_at=state.global_step)
            return control

        def on_save(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                runs.update_status(run_dir, last_checkpoint=state.global_step)
                if health is not None:
                    health.on_checkpoint(state.global_step)

    return StudioCallback()


def _accept_indexed_cpu_location(torch) -> None:
    """Let torch.load map a checkpoint to "cpu:0". With several CPU processes accelerate names each
    rank's device torch.device("cpu", 0), transformers loads the optimizer state of a resumed run with
    map_location=that device, and torch only knows the location "cpu": resuming failed with "don't know
    how to restore data location ... (tagged with cpu:0)". Only CPU ranks register this."""
    def cpu_with_index(storage, location: str):
        return storage if location.startswith("cpu:") else None

    torch.serialization.register_package(99, lambda storage: None, cpu_with_index)


def _all_ranks_agree(wants_stop: bool, stack) -> bool:
    """True when any rank wants to stop. Every rank must stop at the same step: one that trained on
    alone would wait forever for the others in the next gradient all-reduce."""
    if world_size() <= 1:
        return wants_stop
    import torch.distributed as dist

    if not dist.is_initialized():
        return wants_stop
    torch = stack.torch
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    flag = torch.tensor([1 if wants_stop else 0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def stop_cause(stop_flag: dict, run_dir: Path, health=None) -> str | None:
    """Why the run is asked to stop, in the words its status keeps as its note (the page shows it beside "stopped"):
    a signal, the run folder's STOP file, or an alert the config says to stop on; None while nothing asks.

    The app's Stop button writes the STOP file and nothing in the app signals a training process, so a signal stop
    is named with its signal, its time and the programs that send one: a stop nobody pressed Stop for is then
    explained by the run itself."""
    signum = stop_flag.get("signal")
    if signum:
        name = signal.Signals(signum).name
        at = time.strftime("%H:%M:%S", time.localtime(stop_flag.get("signal_at") or time.time()))
        senders = ("Ctrl-C in the terminal that started it, or `kill -INT`" if signum == signal.SIGINT else
                   "a program outside the app: `kill`, `pkill`, `timeout`, a service manager or a shutdown")
        return (f"stopped by {name}, sent to the training process (pid {os.getpid()}) at {at} by {senders}; the app's Stop "
                "button sends no signal (it writes the run's STOP file)")
    if runs.stop_requested(run_dir):
        try:
            at = time.strftime(" at %H:%M:%S", time.localtime(float(Path(run_dir, runs.STOP_FILE).read_text().split()[0])))
        except (OSError, ValueError, IndexError):  # written by hand (`touch STOP`): no time in it
            at = ""
        return (f"stopped on a stop request: the run folder's {runs.STOP_FILE} file{at} (the app's Stop button writes it, "
                f"as does `touch {Path(run_dir) / runs.STOP_FILE}`)")
    if health is not None and health.stop_reason:  # an alert the config says to stop on
        return health.stop_reason
    return None


def _install_signal_handlers(stop_flag: dict) -> dict:
    def handler(signum, frame):
        if stop_flag.get("signal"):
            raise KeyboardInterrupt  # a second signal: stop now
        stop_flag["signal"], stop_flag["signal_at"] = signum, time.time()
        print(f"\nStop requested ({signal.Signals(signum).name}): finishing the current step, then saving. "
              "Send it again to stop at once.", file=sys.stderr, flush=True)

    previous = {}
    from ..procs import STOP_SIGNALS

    for sig in STOP_SIGNALS:  # with SIGBREAK on Windows (the launcher's CTRL_BREAK_EVENT)
        try:
            previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread (e.g. inside a test runner thread)
            pass
    return previous


def _name_checkpoint_on_disk_full(trainer, run_dir: Path) -> None:
    """Make a full disk during a checkpoint save name that checkpoint.

    transformers' Trainer (5.17) saves every checkpoint in `_save_checkpoint`; wrapping it on this one
    trainer object is the only place that knows a save, and which one, was under way.
    """
    save = getattr(trainer, "_save_checkpoint", None)
    if save is None:  # another transformers version: the generic disk-full message still applies
        return

    def save_checkpoint(*args, **kwargs):
        try:
            return save(*args, **kwargs)
        except Exception as exc:
            if runs.is_disk_full(exc):
                name = f"checkpoint-{trainer.state.global_step}"
                raise disk_full_error(run_dir, f"saving {name}", name) from exc
            raise

    trainer._save_checkpoint = save_checkpoint


def record_trained_advantages(trainer, recorder, torch) -> None:
    """Hand TRL's own advantages (and each completion's KL penalty) of every generation batch to `recorder`.

    Wraps `_generate_and_score_completions` on this one trainer object (as `_prepare_inputs` calls it):
    its returned dict holds "advantages", this process's part of the batch in the order the reward
    functions saw it, computed exactly as trained on (weighted reward - beta x KL, leave-one-out,
    normalised when asked). The KL is not returned, so the two log-probability passes TRL makes inside
    (policy, then reference; trl/trainer/rloo_trainer.py) are captured and combined as TRL does:
    sum over completion tokens of (policy - reference) log-probabilities, times beta.
    """
    generate_and_score = trainer._generate_and_score_completions
    per_token_logps = trainer._get_per_token_logps_and_entropies
    captured: list | None = None

    def capture_logps(*args, **kwargs):
        result = per_token_logps(*args, **kwargs)
        if captured is not None:
            captured.append(result[0])
        return result

    def generate_score_and_record(*args, **kwargs):
        nonlocal captured
        beta = float(getattr(trainer, "beta", 0.0) or 0.0)
        captured = [] if beta else None
        try:
            output = generate_and_score(*args, **kwargs)
        finally:
            logps, captured = captured, None
        if trainer.model.training and "advantages" in output:
            penalties = None
            # A trainer that defers its log-probabilities to the loss (returns None here) leaves the column empty.
            if beta and logps and len(logps) >= 2 and all(isinstance(t, torch.Tensor) for t in logps[:2]):
                with torch.no_grad():
                    kl = ((logps[0] - logps[1]) * output["completion_mask"]).sum(-1)
                penalties = (beta * kl).tolist()
            recorder.on_trained(output["advantages"].tolist(), penalties)
        return output

    trainer._get_per_token_logps_and_entropies = capture_logps
    trainer._generate_and_score_completions = generate_score_and_record


def _heldout_scorer(trainer, loaded, cfg: RunConfig, test_rows: list[dict], rewards, max_new_tokens: int, wrap):
    """The health alerts' held-out check: the model's greedy completions, as it is at a checkpoint, for the first
    held-out prompts, scored with the run's rewards; returns their mean weighted total (None when none scored)."""
    from ..runs.alerts import HELDOUT_PROMPTS
    from ..data import to_trl_dataset, use_chat_format
    from ..rewards.scoring import weighted_totals
    from .evaluate import score_completions
    from .generate import generate_completions

    rows = test_rows[:HELDOUT_PROMPTS]
    prompts = list(to_trl_dataset(rows, cfg.data, loaded.tokenizer)["prompt"])
    conversational = use_chat_format(cfg.data, loaded.tokenizer) or isinstance(prompts[0], list)

    def check() -> float | None:
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        try:
            out = generate_completions(model, loaded.tokenizer, prompts, max_new_tokens=max_new_tokens, do_sample=False, cfg=cfg)
        finally:
            model.train(was_training)
        values = score_completions(rewards, prompts, out.texts, out.completion_ids, rows, conversational, wrap=wrap)
        totals = [t for t in weighted_totals([values[r.name] for r in rewards], [r.weight for r in rewards]) if t is not None]
        return sum(totals) / len(totals) if totals else None

    check.prompts = len(rows)  # how many held-out prompts it scores (the first HELDOUT_PROMPTS, or fewer): said with it
    return check


def _batch_plan(rloo_config) -> BatchPlan:
    """The plan of the RLOOConfig TRL actually uses (it derives steps_per_generation and counts processes)."""
    keys = ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations", "steps_per_generation",
            "generation_batch_size", "num_iterations")
    return batch_plan(trainer_arguments(rloo_config, keys), world_size())


def resume_checkpoint(run_dir: Path, plan: BatchPlan) -> tuple[int, Path] | None:
    """The last complete checkpoint that ends a generation cycle (a resume from it continues exactly), or None.

    Only the final checkpoint of a run can end mid-cycle (stops and save_steps wait for the cycle's end)."""
    for step, path in reversed(runs.checkpoints(run_dir)):
        if at_cycle_boundary(step, plan):
            return step, path
    return None


def _gpu_total_gib(stack) -> float | None:
    try:
        cuda = stack.torch.cuda
        return cuda.get_device_properties(cuda.current_device()).total_memory / 1024**3 if cuda.is_available() else None
    except Exception:  # noqa: BLE001
        return None


def run_training(cfg: RunConfig, run_dir: str | Path | None = None, resume: bool = False) -> Path:
    """Train one run; returns its directory. Raises StudioError for problems the person can fix."""
    from .stack import import_training_stack, rloo_config_fields

    # Several processes (accelerate launch): TRL's generation batch counts every process.
    processes = world_size()
    rows = preflight(cfg, num_processes=processes)  # cheap checks first: a typo should not wait for torch to import
    fast_generation.for_run(cfg)  # decided (and cached) before the stack: Standby is read by `import unsloth`
    stack = import_training_stack(cfg.model.backend)
    # Validated once, in preflight; what it could not check without TRL: are the `rloo` keys real RLOOConfig options?
    problems = cfg.unknown_rloo_keys(rloo_config_fields())
    if problems:
        raise ConfigError(problems, "the run config")
    if processes > 1 and stack.cuda:
        # One GPU per rank, chosen before loading: 4-bit loading places weights on the current device.
        stack.torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    elif processes > 1:
        _accept_indexed_cpu_location(stack.torch)

    main = is_main_process()
    if resume:
        run_dir = Path(run_dir)  # type: ignore[arg-type]
        if main:
            save_resumed_config(cfg, run_dir)
    elif main:
        run_dir = prepare_run_dir(cfg, run_dir)
    else:  # other ranks write nothing; the launcher created the directory and names it (--run-dir, or the environment)
        run_dir = Path(run_dir or os.environ[RUN_DIR_ENV])
    assert run_dir is not None

    # When the app started this worker its stdout and stderr already go to train.log: no second copy.
    captured = os.environ.get(runs.LOG_CAPTURED_ENV) == str(run_dir.resolve())
    log_file = open(run_dir / runs.LOG_FILE, "a", encoding="utf-8", buffering=1) if main and not captured else None
    saved_streams = sys.stdout, sys.stderr
    if log_file:
        sys.stdout, sys.stderr = _Tee(sys.stdout, log_file), _Tee(sys.stderr, log_file)
    stop_flag: dict = {}
    previous_handlers = _install_signal_handlers(stop_flag)
    # transformers/TRL/PEFT log through handlers bound to the real stderr at import: send them to train.log too.
    log_handler = logging.StreamHandler(log_file) if log_file else None
    library_loggers = [logging.getLogger(n) for n in ("transformers", "trl", "peft", "rloo_studio")]
    if log_handler:
        for lg in library_loggers:
            lg.addHandler(log_handler)
    restore_exit = _refuse_silent_exit(run_dir, main)
    try:
        for warning in prompt_warnings(cfg, rows) if main else ():  # after the tee: in train.log and on the terminal
            write_line(f"warning: {warning}")
        run_dir = _train(cfg, stack, rows, run_dir, resume, main, stop_flag)
        _leave_process_group()
        return run_dir
    except BaseException as exc:
        if main:
            _record_failure(run_dir, exc, stack, log_file, cfg)
        if not isinstance(exc, StudioError) and runs.is_disk_full(exc):
            raise disk_full_error(run_dir, "writing to the run directory") from exc
        if isinstance(exc, StudioError) or not _is_oom(exc, stack):
            raise
        raise out_of_memory_error(runs.read_status(run_dir).get("step"), cfg, _gpu_total_gib(stack)) from exc
    finally:
        restore_exit()
        for sig, handler in previous_handlers.items():
            signal.signal(sig, handler)
        if log_handler:
            for lg in library_loggers:
                lg.removeHandler(log_handler)
        if log_file:
            sys.stdout, sys.stderr = saved_streams
            log_file.close()


def _leave_process_group() -> None:
    """End a run of several processes together: every rank waits until the others are done (rank 0 saves the final
    weights and status after the last step) and then leaves the process group itself. A process that exits with the
    group still open can abort in gloo's threads at interpreter exit ("terminate called without an active exception"),
    and its launcher then reports the whole run as failed although every step and the weights were saved."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


# The interpreter's own os._exit, kept before `_refuse_silent_exit` replaces it for the length of a run: the app's
# own deliberate exits (a reward past its time limit) use this one.
_real_exit = os._exit


def _refuse_silent_exit(run_dir: Path, main: bool):
    """Make an `os._exit` inside the run (reward code ending the process instead of returning) fail the run.

    `os._exit(0)` skips every `finally` and handler: `rloo-studio train` would exit 0 with status.json still saying
    `running`, and the run would later read as interrupted. For the length of the run this process's `os._exit`
    records the run as failed, naming the function that called it, and exits with the bad-input code — never 0.
    Forked children of reward code (multiprocessing ends its workers with os._exit) exit as they asked. Returns
    the function that puts the interpreter's own back."""
    pid = os.getpid()

    def studio_exit(code=0):
        if os.getpid() != pid:
            _real_exit(code)
        try:
            caller = sys._getframe(1).f_code
            where = f"`{caller.co_name}` ({Path(caller.co_filename).name}, line {sys._getframe(1).f_lineno})"
            err = RewardError(
                f"the training process was ended by os._exit({code}), called by {where}",
                f"{where.split(' (')[0]} ended the Python process directly instead of returning, so the run could not "
                "finish; os._exit skips every clean-up (reward code is called inside the training process)",
                "return a list of numbers from the reward (None for a completion it cannot score) instead of exiting; "
                f"then continue with `rloo-studio train --resume {run_dir}` (it resumes from the last checkpoint)")
            if main:
                runs.update_status(run_dir, state="failed", pid=None, error=err.as_dict())
            print(f"\nerror: {err.message()}", file=sys.stderr, flush=True)
        finally:
            _real_exit(EXIT_REWARD_ENDED_PROCESS)

    os._exit = studio_exit

    def restore() -> None:
        os._exit = _real_exit

    return restore


# The bad-input exit code (as for a reward past its time limit): the person can fix the reward.
EXIT_REWARD_ENDED_PROCESS = 2


def sandbox_line(rewards) -> str:
    """What train.log says about where the person's reward code runs."""
    from .. import sandbox

    outside = [r.name for r in rewards if r.source_file and r.box is None]
    if not outside:
        return sandbox.status().note
    if sandbox.status().available:
        return (f"reward code of {', '.join(f'`{n}`' for n in outside)} runs outside the sandbox (`sandbox: false` in its reward "
                "entry): with your rights and network access, inside the training process")
    return sandbox.status().note


def _reward_timeout_handler(run_dir: Path, main: bool):
    """What happens when a reward call outlives its `timeout_s`: the run is recorded as failed with the function's
    name, the limit and what to do, and the process ends at once with the bad-input exit code.

    Called from a timer thread while the training thread is still inside the reward: it cannot be interrupted
    (a sleep, a lock, a socket, C code), so the process exits without unwinding. Nothing is lost by that:
    checkpoints are written whole or not at all (runs.checkpoint_complete), and every JSONL line is flushed."""
    from ..rewards.runtime import timeout_error

    def handler(name: str, timeout_s: float) -> None:
        err = timeout_error(name, timeout_s, run_dir)
        try:
            if main:
                runs.update_status(run_dir, state="failed", pid=None, error=err.as_dict())
            print(f"\nerror: {err.message()}", file=sys.stderr, flush=True)  # the terminal, and train.log when it is teed
        finally:
            _real_exit(2)  # EXIT_BAD_INPUT: the person can fix it (the reward or its limit)

    return handler


def _is_oom(exc: BaseException, stack) -> bool:
    oom_type = getattr(stack.torch, "OutOfMemoryError", None) or getattr(stack.torch.cuda, "OutOfMemoryError", ())
    return isinstance(exc, oom_type) or "CUDA out of memory" in str(exc)


def _record_failure(run_dir: Path, exc: BaseException, stack, log_file, cfg: RunConfig | None = None) -> None:
    if isinstance(exc, KeyboardInterrupt):
        runs.update_status(run_dir, state="stopped", pid=None, error=None, note="interrupted before a clean stop; resume continues from the last checkpoint")
        return
    if _is_oom(exc, stack):
        err = out_of_memory_error(runs.read_status(run_dir).get("step"), cfg, _gpu_total_gib(stack))
    elif isinstance(exc, StudioError):
        err = exc
    elif runs.is_disk_full(exc):
        err = disk_full_error(run_dir, "writing to the run directory")
    else:
        err = StudioError(f"training failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                          "an unexpected error inside the training stack (the full traceback is in train.log)",
                          "read train.log; if the cause is not clear, report it with that file")
    # The traceback goes to train.log only: the person sees one clear message, a bug report has the details.
    # On a full disk these writes can fail too: the person still gets the message, from the command line.
    try:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=log_file or sys.stderr)
    except OSError:
        pass
    try:
        runs.update_status(run_dir, state="failed", pid=None, error=err.as_dict())
    except OSError as write_error:
        print(f"[rloo-studio] could not record the failure in {runs.STATUS_FILE}: {write_error}", file=sys.__stderr__, flush=True)


def _train(cfg: RunConfig, stack, rows, run_dir: Path, resume: bool, main: bool, stop_flag: dict) -> Path:
    from ..rewards import build_rewards, reward_specs
    from ..rewards.runtime import SampleRecorder, guard
    from ..rewards.thinking import prompt_opens_think
    from ..data import to_trl_dataset
    from .generate import chat_template_kwargs, end_token_ids
    from .model import count_4bit_layers, load_model
    from .allocator import keep_freed_memory
    from .step_timer import StepTimer
    from . import sampler_gap
    from .trainer_patches import share_prefills, skip_needless_old_logprobs

    trl = stack.trl
    resume_step, checkpoint, skipped = 0, None, None
    if resume:
        plan = cfg.batch_plan(world_size())
        found, last = resume_checkpoint(run_dir, plan), runs.last_checkpoint(run_dir)
        if found:
            resume_step, checkpoint = found
        if last and last != found:
            skipped = (f"{last[1].name} (kept) ends in the middle of a generation cycle, where a resume would generate other "
                       f"completions than an uninterrupted run: resumed from {found[1].name if found else 'the start'} instead, "
                       "the last checkpoint at a cycle's end")
    if main:
        # A request left from before this process (a worker killed before it cleared its own) is stale; one written
        # since is the person's Stop while this worker loaded (the app's Stop on a `queued` run) and stops it after its
        # first step, as the page then says.
        runs.clear_stop(run_dir, older_than=psutil.Process().create_time())
        if resume:
            # Steps after the checkpoint are trained again: set their old records aside so nothing is duplicated.
            for name in (runs.METRICS_FILE, runs.SAMPLES_FILE, runs.ALERTS_FILE, runs.CHECKS_FILE):
                runs.set_aside_after(run_dir / name, resume_step)
        # Several processes: the run's process is the launcher (`train --num-processes N`), which stops them all.
        pid = int(os.environ.get(LAUNCHER_PID_ENV) or os.getpid())
        prior = runs.read_status(run_dir)
        # Training time is counted per session: a resume adds its own, not the time the run sat stopped.
        # (A new run's first session counts from its Start, the app's queued status, as its elapsed time always has.)
        # (The worker before this one has ended, whatever its status file still says.)
        before = (runs.trained_seconds(prior, state="stopped") or 0.0) if resume else 0.0
        now = time.time()
        runs.update_status(run_dir, state="running", pid=pid, started_at=prior.get("started_at") or now,
                           session_started_at=now if resume else prior.get("started_at") or now, trained_before_s=before,
                           trained_s=None,
                           model=cfg.model.name_or_path, backend=stack.backend, error=None, resumed_from=resume_step if resume else None,
                           finished_at=None, final_dir=None, summary=None, note=skipped, eta_s=None,
                           step=resume_step, max_steps=cfg.rloo_value("max_steps"), num_processes=world_size())
    say = write_line if main else (lambda line: None)  # other ranks train silently: one copy of each line
    say(f"[rloo-studio] run directory: {run_dir}")
    say(f"[rloo-studio] backend: {stack.note}; device: {'cuda' if stack.cuda else 'cpu'}")
    if resume:
        say(f"[rloo-studio] resuming from {checkpoint}" if checkpoint else "[rloo-studio] no checkpoint yet: starting from step 0")
        if skipped:
            say(f"[rloo-studio] {skipped}")

    if not stack.cuda:  # before the model's memory is allocated (engine/allocator.py: fewer page faults, faster steps)
        kept = keep_freed_memory()
        if kept:
            say(f"[rloo-studio] memory allocator: freed memory kept for reuse ({', '.join(f'{k} {v}' for k, v in kept.items())})")
    # Seeded before loading: the LoRA matrices are initialised randomly when the adapter is attached.
    seed = int(cfg.rloo_value("seed"))
    fast = fast_generation.for_run(cfg)
    if main:
        say(f"[rloo-studio] {fast.line()}")
        runs.update_status(run_dir, fast_generation={"used": fast.used, "why": fast.why})
    loaded = load_model(cfg.model, cfg.lora, stack, cfg.base_dir, seed=seed,
                        fast_load=fast_generation.load_arguments(fast, stack.backend, cfg.lora.r if cfg.lora else None))
    # What was loaded, not what was asked: the count of bitsandbytes 4-bit layers shows whether quantisation really happened.
    four_bit = f", 4-bit: {count_4bit_layers(loaded.model)} bitsandbytes layers" if cfg.model.load_in_4bit else ""
    say(f"[rloo-studio] model {loaded.source}: {loaded.total_params:,} parameters, {loaded.trainable_params:,} trainable "
          f"({'LoRA' if loaded.lora else 'full fine-tuning'}, {loaded.dtype}{four_bit})")
    train_ds = to_trl_dataset(rows.train, cfg.data, loaded.tokenizer)
    check_prompt_lengths(train_ds["prompt"], loaded.tokenizer, cfg)

    rewards = build_rewards(reward_specs(cfg), cfg.base_dir, loaded.tokenizer, train_ds.column_names,
                            chat_template_kwargs=chat_template_kwargs(cfg), boxed_in=[run_dir] if main else [],
                            prompt_opens_think=prompt_opens_think(train_ds["prompt"], loaded.tokenizer, chat_template_kwargs(cfg)))
    if any(r.source_file for r in rewards):
        say(f"[rloo-studio] {sandbox_line(rewards)}")
    args = rloo_arguments(cfg, stack, run_dir, loaded.dtype, fast)
    if "model_init_kwargs" in args:  # TRL warns they "will be ignored": true of the policy, loaded already, not the reference
        say(f"[rloo-studio] the reference model for the KL penalty loads in {loaded.dtype}, as the policy "
            "(model_init_kwargs; TRL's warning that they are ignored is about the policy, which is loaded already)")
    try:
        rloo_config = trl.RLOOConfig(**args)
    except (TypeError, ValueError) as exc:
        raise ConfigError([f"rloo: {exc}"], "trl.RLOOConfig") from None
    recorder = SampleRecorder(
        [r.name for r in rewards], [r.weight for r in rewards], rloo_config.num_generations,
        cfg.output.samples_per_step, lambda rows_: runs.append_jsonl(run_dir / runs.SAMPLES_FILE, rows_), enabled=main,
        clip_range=rloo_config.reward_clip_range, budget=int(rloo_config.max_completion_length),
        end_ids=end_token_ids(loaded.model, loaded.tokenizer))
    on_timeout = _reward_timeout_handler(run_dir, main)
    health = None
    if main:
        health = HealthWatch(run_dir, RunFacts([r.name for r in rewards], [r.weight for r in rewards],
                                               int(rloo_config.max_completion_length), float(rloo_config.beta or 0.0),
                                               bool(rloo_config.normalize_advantages), rloo_config.reward_clip_range),
                             rloo_config.num_generations, tokenizer=loaded.tokenizer, say=write_line,
                             probe_funcs=[guard(r.func, r.name, r.source_file, None, r.timeout_s, on_timeout) for r in rewards],
                             actions=cfg.alerts, hints=prompt_hints(cfg, rows))

    def on_values(name, kwargs, values):
        recorder.on_values(name, kwargs, values)
        if health is not None:
            health.on_values(name, kwargs, values)

    reward_funcs = [guard(r.func, r.name, r.source_file, on_values, r.timeout_s, on_timeout) for r in rewards]
    rloo_config.reward_weights = [r.weight for r in rewards]

    if cfg.warmup.enabled:  # the format warm-up (engine/warmup.py): supervised steps on this adapter, before RLOO's trainer
        from .warmup import run_warmup

        run_warmup(cfg, loaded, rows, rewards, run_dir, checkpoint is not None, say,
                   lambda r: guard(r.func, r.name, r.source_file, None, r.timeout_s, on_timeout))
    plan = _batch_plan(rloo_config)
    studio_callback = _studio_callback(stack, run_dir, stop_flag, resume_step, plan, health)
    trainer = trl.RLOOTrainer(
        model=loaded.model, reward_funcs=reward_funcs, args=rloo_config, train_dataset=train_ds,
        processing_class=loaded.tokenizer, callbacks=[studio_callback],
    )
    # Said and recorded from the built trainer: Unsloth's trainer rewrites some arguments in its __init__.
    if main:
        record = record_trainer_arguments(trainer, args, run_dir)
        held = record["args"]
        say(f"[rloo-studio] {effective_line(held, world_size())}")
        for key, (given, used) in record["changed"].items():
            say(f"[rloo-studio] the trainer ({record['trainer']}) uses {key} = {used!r}, not the {given!r} it was given "
                f"({runs.TRAINER_ARGS_FILE} records what it uses)")
    if health is not None:
        health.formats = lambda completions: format_findings(cfg, rows, completions)
        # A checkpoint named best is kept when save_total_limit rotates the others away (transformers keeps
        # state.best_model_checkpoint); set when the run stops on a held-out plateau.
        health.keep_checkpoint = lambda step: setattr(trainer.state, "best_model_checkpoint",
                                                      os.path.join(trainer.args.output_dir, f"checkpoint-{step}"))
        health.set_beta = lambda beta: _set_beta(trainer, cfg, run_dir, beta)
        if health.heldout_checks and health.actions.on_heldout_plateau != "off":
            # Resumed: the best held-out check before the resume is kept from rotation again (the checkpoint's saved
            # state was written before that check named it best).
            health.keep_checkpoint(max(health.heldout_checks, key=lambda c: c["heldout"])["step"])
    kept_because = skip_needless_old_logprobs(trainer, stack.torch)
    say("[rloo-studio] TRL's no-grad old log-prob pass: " + ("skipped (with these settings it repeats the training "
        "pass's numbers exactly)" if kept_because is None else f"kept ({kept_because})"))
    sharing = share_prefills(trainer, stack.torch, cfg.model.share_prefill, stack.cuda)
    say(f"[rloo-studio] {sharing.line()}")
    if main:
        runs.update_status(run_dir, share_prefill={"used": sharing.used, "why": sharing.why})
    if sampler_gap.install(trainer):
        say("[rloo-studio] the sampler's (vLLM's) log-probabilities are logged beside the trainer's on every step "
            "(sampler/logprob_gap)")
    if health is not None and rows.test and world_size() == 1:
        # (With several processes the model is wrapped for data parallelism and generating on one rank alone would stall
        # the others: the check is left out there.)
        health.heldout = _heldout_scorer(trainer, loaded, cfg, rows.test, rewards, int(rloo_config.max_completion_length),
                                         lambda r: guard(r.func, r.name, r.source_file, None, r.timeout_s, on_timeout))
    if loaded.lora:
        keep_adapters_in_fp32(trainer.model, stack.torch)
    record_trained_advantages(trainer, recorder, stack.torch)
    if cfg.dynamic_sampling.enabled or cfg.alerts.on_no_signal == "dynamic_sampling":
        # Outside the recorder: it records every generated batch, as the rewards saw them. Off until the no-signal
        # alert switches it on, when the config asks for that instead (and on from the start of a run resumed after).
        sampler = DynamicSampler(cfg.dynamic_sampling.max_extra_generations, int(rloo_config.seed),
                                 active=cfg.dynamic_sampling.enabled or bool(health and health.sampling_on), recorder=recorder)
        sampler.install(trainer, stack.torch)
        if health is not None:
            health.sampling_on = sampler.active
            health.switch_on_sampling = lambda: setattr(sampler, "active", True)
    if checkpoint is not None and loaded.lora:
        restore_trained_adapter(trainer.model, checkpoint)
    _name_checkpoint_on_disk_full(trainer, run_dir)
    if world_size() > 1:
        import torch.distributed as dist

        backend = dist.get_backend() if dist.is_initialized() else "not initialised"
        worker_line(f"rank {rank()} of {world_size()} ({backend}): {rloo_config.per_device_train_batch_size} "
            f"completions per step of a generation batch of {rloo_config.generation_batch_size}")
    # Last of the trainer's wrappers (patches, sample recording): each part is timed with what it really runs.
    step_timer = StepTimer(trainer, stack.torch)
    trainer.add_callback(step_timer.callback(stack.transformers))
    studio_callback.step_times = step_timer.take
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

    stopped = bool(stop_flag.get("requested"))
    if main:
        final_dir = run_dir / (runs.ADAPTER_DIR if loaded.lora else runs.MODEL_DIR)
        try:
            trainer.model.save_pretrained(str(final_dir))
            loaded.tokenizer.save_pretrained(str(final_dir))
        except Exception as exc:
            if runs.is_disk_full(exc):
                raise disk_full_error(run_dir, f"saving the final {final_dir.name}") from exc
            raise
        runs.clear_stop(run_dir)
        why = {"note": stop_flag["cause"]} if stopped and stop_flag.get("cause") else {}  # the status says why
        if why and health is not None and health.rollback_from is not None:  # on_hacking: rollback, once the stop's checkpoint is written
            rolled = roll_back(run_dir, health.rollback_from)
            why["note"] += " " + rolled
            worker_line(rolled)
        ended = time.time()
        trained = runs.trained_seconds(runs.read_status(run_dir), now=ended, state="running")  # this session's end
        runs.update_status(run_dir, state="stopped" if stopped else "finished", step=trainer.state.global_step,
                           eta_s=0 if not stopped else None, pid=None, finished_at=ended, final_dir=final_dir.name,
                           trained_s=trained, **why)
    if main:
        worker_line(f"{'stopped' if stopped else 'finished'} at step {trainer.state.global_step}; saved {run_dir}")
    else:
        worker_line(f"rank {rank()} of {world_size()}: {'stopped' if stopped else 'finished'} at step {trainer.state.global_step}")
    return run_dir

"""Data-parallel launching: the `accelerate launch` command and config for N processes.

One place builds the command line and the accelerate config file, so `rloo-studio train
--num-processes N` and the exported `script` folder launch training the same way. This module
builds the text and argument lists, and supervises the launch; it imports no model library.

Why these flags (checked with TRL 1.15 and accelerate on CPU with gloo, on both the PEFT and the Unsloth path):
`--multi_gpu` is what makes accelerate start N processes — `--cpu --num_processes N` silently
starts one; `--mixed_precision no` and `--dynamo_backend no` keep accelerate from overriding
the precision the run's config chose and from compiling.

`rloo-studio train --num-processes N` (the launcher, see cli/data_parallel.py) runs
`python -m rloo_studio.machine.distributed FLAGS -m rloo_studio.cli train …`: this module's `main` is
`accelerate launch` itself, wrapped so that a failed rank ends with one line instead of
torch.distributed's traceback (the rank's own output already said what went wrong).

Which backend: the same as one process — Unsloth when it imports, else transformers + PEFT.
Each rank is a full copy of the model (plain DDP: gradients are all-reduced, nothing is sharded).
On CPU the ranks talk over gloo (`use_cpu=True`, set by the engine when there is no CUDA).

`rloo-studio train CONFIG --accelerate-config FILE` launches with the person's own accelerate config
(FSDP, DeepSpeed ZeRO, several machines) passed to `accelerate launch --config_file` unchanged:
this module only reads how many processes and machines it asks for and which machine this is.
`supervise` runs that launch as one child process group for the launcher: the one loop that copies
the ranks' output and turns Ctrl-C/SIGTERM into the run's clean stop.
Several machines run the same command, each with its own `machine_rank`; the run directory must
be the same folder on every machine (a shared filesystem), because rank 0 writes it and every rank
resumes from its checkpoints.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from ..errors import StudioError
from ..procs import STDOUT, STOP_SIGNALS, Child

ACCELERATE_CONFIG_FILE = "accelerate_config.yaml"
# Set by the launcher for its ranks: the run directory every rank writes to (rank 0) or reads (the
# STOP file), and the launcher's pid, which rank 0 records in status.json as the run's process.
RUN_DIR_ENV = "RLOO_STUDIO_RUN_DIR"
LAUNCHER_PID_ENV = "RLOO_STUDIO_LAUNCHER_PID"


def world_size() -> int:
    """How many processes train this run (1 unless started by accelerate/torchrun)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def rank() -> int:
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def is_launched_rank() -> bool:
    """True inside a process that accelerate/torchrun started as one of several."""
    return "RANK" in os.environ and world_size() > 1


def check_can_launch(num_processes: int, gpu_count: int | None = None, cpu_count: int | None = None) -> None:
    """Refuse what cannot work before anything starts: no accelerate, or more processes than devices.

    `gpu_count` None skips the device checks (the caller has not looked yet); 0 means CPU only."""
    if num_processes < 1:
        raise StudioError(f"--num-processes {num_processes} is not a number of processes",
                          "data-parallel training runs one process per GPU", "use 1 (the default) or the number of GPUs")
    if num_processes == 1:
        return
    if importlib.util.find_spec("accelerate") is None:
        raise StudioError(f"--num-processes {num_processes} needs the `accelerate` package, which is not installed",
                          "several processes are started by `accelerate launch`",
                          "install it (`pip install accelerate`), or train in one process (leave out --num-processes)")
    if gpu_count is None:
        return
    if gpu_count > 0 and num_processes > gpu_count:
        raise StudioError(f"--num-processes {num_processes} asks for more processes than this machine has GPUs ({gpu_count})",
                          "data-parallel training runs one process per GPU; two on one GPU would each hold a copy of the model",
                          f"use --num-processes {gpu_count} or fewer (CUDA_VISIBLE_DEVICES chooses which GPUs)")
    cpus = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
    if gpu_count == 0 and num_processes > cpus:
        raise StudioError(f"--num-processes {num_processes} asks for more processes than this machine has CPU cores ({cpus}) "
                          "and there is no CUDA GPU",
                          "without a GPU each process trains on the CPU; more processes than cores only compete for them",
                          f"use --num-processes {cpus} or fewer (on a CPU, one process is usually as fast)")


def accelerate_flags(num_processes: int) -> list[str]:
    """`accelerate launch` options for `num_processes` processes on this machine."""
    if num_processes < 1:
        raise ValueError("num_processes must be at least 1")
    return ["--multi_gpu", "--num_processes", str(num_processes), "--num_machines", "1",
            "--mixed_precision", "no", "--dynamo_backend", "no"]


def launch_command(num_processes: int, script_and_args: list[str], module: bool = False) -> list[str]:
    """The full argument list: `accelerate launch FLAGS [-m] SCRIPT ARGS…`."""
    return ["accelerate", "launch", *accelerate_flags(num_processes), *(["-m"] if module else []), *script_and_args]


def accelerate_config_yaml(num_processes: int) -> str:
    """An accelerate config file equivalent to `accelerate_flags` (for `accelerate launch --config_file`)."""
    if num_processes < 1:
        raise ValueError("num_processes must be at least 1")
    return (
        "# accelerate config for data-parallel RLOO on one machine.\n"
        "# Use: accelerate launch --config_file accelerate_config.yaml train.py config.yaml\n"
        "# num_processes: one per GPU. Each process generates and trains its share of the batch;\n"
        "# TRL counts the generation batch over all processes (per_device_train_batch_size x processes\n"
        "# must stay divisible by rloo.num_generations).\n"
        "compute_environment: LOCAL_MACHINE\n"
        "distributed_type: MULTI_GPU\n"
        "num_machines: 1\n"
        "machine_rank: 0\n"
        f"num_processes: {num_processes}\n"
        "gpu_ids: all\n"
        "mixed_precision: 'no'   # the run's config sets bf16/fp16 itself\n"
        "dynamo_config: {}\n"
        "rdzv_backend: static\n"
        "same_network: true\n"
        "use_cpu: false\n"
    )


@dataclass
class AccelerateConfig:
    """What the launcher needs from a person's accelerate config file; the file itself is passed on unchanged."""
    path: str
    num_processes: int   # over all machines, as accelerate counts it
    num_machines: int
    machine_rank: int
    distributed_type: str

    @property
    def local_processes(self) -> int:
        return max(1, self.num_processes // self.num_machines)


def read_accelerate_config(path: str) -> AccelerateConfig:
    """Read `path` (YAML or JSON, as `accelerate config` writes it); refuse what cannot launch, with the key to fix."""
    import yaml

    file = os.path.abspath(path)
    if not os.path.isfile(file):
        raise StudioError(f"--accelerate-config {path}: no such file", "the accelerate config is read from this path",
                          "write one with `accelerate config --config_file FILE`, or give the path of an existing one")
    try:
        with open(file, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise StudioError(f"--accelerate-config {path} could not be read ({type(exc).__name__}: {exc})",
                          "it must be an accelerate config file (YAML)", "fix the file, or write a new one with `accelerate config`") from None
    if not isinstance(data, dict):
        raise StudioError(f"--accelerate-config {path} is not a mapping of settings", "accelerate config files are YAML mappings",
                          "write one with `accelerate config --config_file FILE`")

    def number(key: str, default: int, minimum: int) -> int:
        value = data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise StudioError(f"{key}: {value!r} in {path} is not a whole number of at least {minimum}",
                              "accelerate starts this many processes / machines", f"set {key}: {max(minimum, default)} (for example)")
        return value

    machines = number("num_machines", 1, 1)
    processes = number("num_processes", 1, 1)
    machine_rank = number("machine_rank", 0, 0)
    if machine_rank >= machines:
        raise StudioError(f"machine_rank: {machine_rank} in {path} is not below num_machines: {machines}",
                          "machines are numbered 0 to num_machines - 1; machine 0 writes the run",
                          f"set machine_rank between 0 and {machines - 1} on each machine")
    if processes % machines:
        raise StudioError(f"num_processes: {processes} in {path} is not a multiple of num_machines: {machines}",
                          "accelerate counts num_processes over all machines and starts the same number on each",
                          f"set num_processes: {machines * max(1, processes // machines)}")
    if machines > 1 and not data.get("main_process_ip"):
        raise StudioError(f"{path} asks for {machines} machines but names no main_process_ip",
                          "the other machines connect to machine 0 at this address",
                          "set main_process_ip to machine 0's address (and main_process_port to a free port)")
    return AccelerateConfig(file, processes, machines, machine_rank, str(data.get("distributed_type", "NO")))


def launcher_argv(num_processes: int, train_args: list[str], python: str | None = None,
                  config_file: str | None = None) -> list[str]:
    """The command the launcher (cli/data_parallel.py) starts: accelerate launch (through `main` below) of `rloo-studio train ARGS`.

    With `config_file` the person's accelerate config decides everything (no flags of ours are added)."""
    flags = ["--config_file", config_file] if config_file else accelerate_flags(num_processes)
    return [python or sys.executable, "-m", "rloo_studio.machine.distributed", *flags, "-m", "rloo_studio.cli", "train", *train_args]


def supervise(argv: list[str], env: dict, log_file: BinaryIO | None, clean_stop: Callable[[int], bool]) -> tuple[int, list[int]]:
    """Run `argv` (the ranks' `accelerate launch`) as its own process group until it ends; returns (exit code, signals).

    Its output is copied in chunks (not lines: progress bars redraw with \\r) to this terminal and to `log_file`.
    The child has its own session, so a Ctrl-C in the terminal reaches only this process: on the first
    Ctrl-C/SIGTERM `clean_stop(signum)` may ask the run to stop after the current step (it returns True when it
    did); otherwise, and on a second signal, the processes are interrupted, and on a third killed.
    """
    out = getattr(sys.stdout, "buffer", None)

    def copy(chunk: bytes) -> None:
        if out is not None:
            out.write(chunk)
            out.flush()
        else:
            sys.stdout.write(chunk.decode("utf-8", "replace"))
        if log_file:
            log_file.write(chunk)
            log_file.flush()

    signals: list[int] = []
    proc: Child | None = None

    def on_signal(signum, frame):
        signals.append(signum)
        if len(signals) == 1 and clean_stop(signum):
            return
        if proc is not None:
            proc.interrupt(hard=len(signals) > 2)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        proc = Child(argv, stdout=copy, stderr=STDOUT, env=env, chunks=True)
        return proc.wait(), signals
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    """`accelerate launch ARGV`, with a failed rank or a stop reported in one line (the ranks said why above)."""
    from accelerate.commands.launch import launch_command, launch_command_parser

    args = launch_command_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        launch_command(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - torch.distributed's ChildFailedError / SignalException
        if os.environ.get("RLOO_STUDIO_DEBUG"):
            raise
        what = "was stopped by a signal" if type(exc).__name__ == "SignalException" else "ended with an error"
        print(f"[rloo-studio] a training process {what} ({type(exc).__name__}); the output above and train.log say why",
              file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

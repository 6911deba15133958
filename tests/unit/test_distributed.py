"""`train --num-processes N`: the accelerate command and config, the up-front refusals, and the
launcher's own bookkeeping (run directory, status pid, train.log, exit codes) with a stand-in for
`accelerate launch` — no torch, no model. The real two-process run is tests/engine/test_multiprocess.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from rloo_studio import cli, runs
from rloo_studio.cli import data_parallel
from rloo_studio.machine import distributed


def test_flags_start_n_processes_without_overriding_precision():
    flags = distributed.accelerate_flags(4)
    # `--cpu --num_processes N` starts ONE process (checked with accelerate); --multi_gpu is what starts N.
    assert "--multi_gpu" in flags and "--cpu" not in flags
    assert flags[flags.index("--num_processes") + 1] == "4"
    assert flags[flags.index("--num_machines") + 1] == "1"
    assert flags[flags.index("--mixed_precision") + 1] == "no"
    assert flags[flags.index("--dynamo_backend") + 1] == "no"
    with pytest.raises(ValueError):
        distributed.accelerate_flags(0)


def test_launcher_argv_runs_the_train_command_under_accelerate():
    argv = distributed.launcher_argv(2, ["runs/x/config.yaml", "--run-dir", "runs/x"], python="/py")
    assert argv[:3] == ["/py", "-m", "rloo_studio.machine.distributed"]
    assert argv[3:3 + len(distributed.accelerate_flags(2))] == distributed.accelerate_flags(2)
    assert argv[-6:] == ["-m", "rloo_studio.cli", "train", "runs/x/config.yaml", "--run-dir", "runs/x"]
    # The same options `accelerate launch` itself parses.
    from accelerate.commands.launch import launch_command_parser

    parsed = launch_command_parser().parse_args(argv[3:])
    assert parsed.multi_gpu and parsed.num_processes == 2 and parsed.num_machines == 1 and parsed.module
    assert parsed.training_script == "rloo_studio.cli"
    assert parsed.training_script_args == ["train", "runs/x/config.yaml", "--run-dir", "runs/x"]


def test_shell_command_and_config_file_agree():
    assert distributed.launch_command(2, ["train.py", "c.yaml"])[:2] == ["accelerate", "launch"]
    assert distributed.launch_command(2, ["rloo_studio.cli"], module=True)[-2:] == ["-m", "rloo_studio.cli"]
    config = yaml.safe_load(distributed.accelerate_config_yaml(3))
    assert config["num_processes"] == 3 and config["num_machines"] == 1
    assert config["distributed_type"] == "MULTI_GPU"
    assert config["mixed_precision"] == "no"  # a string: YAML's bare `no` would be False
    assert config["use_cpu"] is False


def test_rank_and_world_size_come_from_the_launcher_environment(monkeypatch):
    for key in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)
    assert distributed.world_size() == 1 and distributed.rank() == 0 and not distributed.is_launched_rank()
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert distributed.world_size() == 2 and distributed.rank() == 1 and distributed.is_launched_rank()


@pytest.mark.parametrize("n, gpus, cpus, expected", [
    (0, None, None, "is not a number of processes"),
    (3, 2, 8, "more processes than this machine has GPUs (2)"),
    (3, 0, 2, "more processes than this machine has CPU cores (2)"),
])
def test_refusals(n, gpus, cpus, expected):
    with pytest.raises(distributed.StudioError) as info:
        distributed.check_can_launch(n, gpus, cpus)
    assert expected in info.value.what and info.value.fix


def test_allowed_counts():
    distributed.check_can_launch(1, 0, 1)
    distributed.check_can_launch(2, 2, 1)   # GPUs decide, not cores
    distributed.check_can_launch(2, 0, 2)   # CPU (gloo)
    distributed.check_can_launch(8)         # devices not looked at yet


def test_missing_accelerate_is_a_clear_error(monkeypatch):
    real = distributed.importlib.util.find_spec
    monkeypatch.setattr(distributed.importlib.util, "find_spec", lambda name, *a: None if name == "accelerate" else real(name, *a))
    with pytest.raises(distributed.StudioError) as info:
        distributed.check_can_launch(2, 2)
    assert "needs the `accelerate` package" in info.value.what and "pip install accelerate" in info.value.fix


# ---- the launcher (data_parallel.py), as `train` starts it --------------------------------------

def _config(tmp_path: Path, **rloo) -> Path:
    cfg = {"model": {"name_or_path": str(tmp_path / "no-model-needed")}, "data": {"source": "demo"},
           "rewards": [{"name": "numeric_answer"}],
           "rloo": {"num_generations": 4, "per_device_train_batch_size": 2, "max_steps": 2, **rloo},
           "output": {"runs_dir": str(tmp_path / "runs")}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_batch_not_divisible_over_processes_is_refused_before_anything_starts(tmp_path, capsys):
    code = cli.main(["train", str(_config(tmp_path, per_device_train_batch_size=3)), "--num-processes", "2"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT
    assert "per_device_train_batch_size 3 x 2 process(es)" in err and "not divisible by num_generations 4" in err
    assert "Traceback" not in err
    assert not (tmp_path / "runs").exists()  # no run directory for a config that cannot train


def test_too_many_processes_for_this_machine(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(data_parallel, "_cuda_device_count", lambda: 1)
    code = cli.main(["train", str(_config(tmp_path)), "--num-processes", "2"])
    assert code == cli.EXIT_BAD_INPUT
    assert "more processes than this machine has GPUs (1)" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


# A stand-in for `accelerate launch ... rloo_studio.cli train ...`: prints what a rank sees, then acts as
# rank 0 would (status finished) or fails.
FAKE_RANKS = r"""
import os, sys
from rloo_studio import runs
run_dir = os.environ["RLOO_STUDIO_RUN_DIR"]
print("rank output: launcher", os.environ["RLOO_STUDIO_LAUNCHER_PID"], "status pid", runs.read_status(run_dir)["pid"],
      "log captured", os.environ[runs.LOG_CAPTURED_ENV] == run_dir, "args", sys.argv[2:], flush=True)
if sys.argv[1] == "ok":
    runs.update_status(run_dir, state="finished", pid=None, step=2)
sys.exit(0 if sys.argv[1] == "ok" else 3)
"""


@pytest.mark.parametrize("outcome", ["ok", "fail"])
def test_launcher_creates_the_run_and_reports_how_the_ranks_ended(tmp_path, capsys, monkeypatch, outcome):
    monkeypatch.setattr(data_parallel, "_cuda_device_count", lambda: 2)
    monkeypatch.setattr(distributed, "launcher_argv",
                        lambda n, args: [sys.executable, "-c", FAKE_RANKS, outcome, str(n), *args])
    monkeypatch.delenv(runs.LOG_CAPTURED_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["train", str(_config(tmp_path)), "--num-processes", "2", "rloo.max_steps=7"])
    out, err = capsys.readouterr()

    run_dirs = list((tmp_path / "runs").iterdir())
    assert len(run_dirs) == 1
    run_dir = run_dirs[0].resolve()
    # Every rank is told the one run directory the launcher made, with its resolved config (overrides included).
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["rloo"]["max_steps"] == 7
    line = next(l for l in (run_dir / "train.log").read_text().splitlines() if l.startswith("rank output"))
    assert f"launcher {os.getpid()} status pid {os.getpid()} log captured True" in line  # status pid = the launcher
    assert f"'2', '{run_dir / 'config.yaml'}', '--run-dir', '{run_dir}'" in line
    assert "rank output" in out  # streamed to the person too
    status = json.loads((run_dir / "status.json").read_text())
    assert status["num_processes"] == 2 and status["pid"] is None
    if outcome == "ok":
        assert code == cli.EXIT_OK and status["state"] == "finished"
    else:
        assert code == cli.EXIT_FAILED and status["state"] == "failed"
        assert "training in 2 processes failed (exit code 3)" in status["error"]["what"]
        assert "training in 2 processes failed" in err and "train.log" in err and "Traceback" not in err


# ---- --accelerate-config ---------------------------------------------------------------------------

def _acc(tmp_path, text: str):
    path = tmp_path / "acc.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_accelerate_config_is_read_and_passed_on_unchanged(tmp_path):
    from rloo_studio.machine.distributed import launcher_argv, read_accelerate_config

    path = _acc(tmp_path, "distributed_type: FSDP\nnum_machines: 2\nmachine_rank: 1\nnum_processes: 4\n"
                          "main_process_ip: 10.0.0.1\nmain_process_port: 29501\nfsdp_config: {fsdp_sharding_strategy: FULL_SHARD}\n")
    acc = read_accelerate_config(path)
    assert (acc.num_processes, acc.num_machines, acc.machine_rank, acc.local_processes) == (4, 2, 1, 2)
    argv = launcher_argv(4, ["c.yaml", "--run-dir", "d"], python="py", config_file=acc.path)
    # only --config_file: none of our own flags (they would override the person's settings)
    assert argv == ["py", "-m", "rloo_studio.machine.distributed", "--config_file", acc.path, "-m", "rloo_studio.cli", "train",
                    "c.yaml", "--run-dir", "d"]


@pytest.mark.parametrize("text, says", [
    ("num_machines: 2\nmachine_rank: 2\nnum_processes: 2\nmain_process_ip: 1.2.3.4\n", "machine_rank: 2"),
    ("num_machines: 2\nmachine_rank: 0\nnum_processes: 3\nmain_process_ip: 1.2.3.4\n", "set num_processes: 2"),
    ("num_machines: 2\nmachine_rank: 0\nnum_processes: 2\n", "main_process_ip"),
    ("num_processes: zero\n", "num_processes: 'zero'"),
])
def test_an_accelerate_config_that_cannot_launch_is_refused_with_the_key(tmp_path, text, says):
    from rloo_studio.machine.distributed import read_accelerate_config

    with pytest.raises(distributed.StudioError) as info:
        read_accelerate_config(_acc(tmp_path, text))
    assert says in info.value.message()


def test_train_refuses_num_processes_with_an_accelerate_config(tmp_path, capsys):
    from rloo_studio import cli

    path = _acc(tmp_path, "num_processes: 2\n")
    assert cli.main(["train", "c.yaml", "--num-processes", "2", "--accelerate-config", path]) == cli.EXIT_BAD_INPUT
    assert "leave out --num-processes" in capsys.readouterr().err
    assert cli.main(["train", "c.yaml", "--accelerate-config", str(tmp_path / "missing.yaml")]) == cli.EXIT_BAD_INPUT
    assert "no such file" in capsys.readouterr().err

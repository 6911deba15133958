"""`rloo-studio train CONFIG --accelerate-config FILE`: two "machines" on 127.0.0.1 train one run.

Each machine is its own launcher with its own accelerate config file (num_machines: 2, machine_rank
0 and 1, one process each, gloo on the CPU, a free port), as a person would run the same command on
two computers that share the run folder. Machine 0 creates and records the run; rank 1 trains in
it silently. Ctrl-C on machine 0 stops both at one step with a checkpoint; `--resume` on both
machines continues the run to its end. Not run here: FSDP and DeepSpeed configs, and two real
computers (the shared-folder requirement is documented in docs/gpu.md).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from helpers import assert_trained_with

from rloo_studio import runs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="two training processes need two CPU cores"),
]
RLOO = {"per_device_train_batch_size": 4, "max_completion_length": 8}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accelerate_config(folder, machine_rank: int, port: int):
    path = folder / f"machine{machine_rank}.yaml"
    path.write_text(
        "compute_environment: LOCAL_MACHINE\n"
        "distributed_type: MULTI_GPU\n"
        "num_machines: 2\n"
        f"machine_rank: {machine_rank}\n"
        "num_processes: 2\n"
        "main_process_ip: 127.0.0.1\n"
        f"main_process_port: {port}\n"
        "rdzv_backend: static\n"
        "same_network: true\n"
        "mixed_precision: 'no'\n"
        "dynamo_config: {}\n"
        "use_cpu: false\n", encoding="utf-8")
    return path


def _launch(workspace, *args) -> subprocess.Popen:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # gloo on the CPU
    return subprocess.Popen([sys.executable, "-m", "rloo_studio.cli", "train", *map(str, args)], cwd=workspace.path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _both(machines: list[subprocess.Popen], timeout: float = 600) -> list[str]:
    try:
        return [m.communicate(timeout=timeout)[0] for m in machines]
    finally:
        for m in machines:
            if m.poll() is None:
                m.kill()


def test_two_machines_train_stop_and_resume_one_run(workspace):
    config = workspace.write_config(rloo=RLOO | {"max_steps": 200, "save_steps": 1000})
    run_dir = workspace.path / "runs" / "two-machines"
    port = _free_port()
    configs = [_accelerate_config(workspace.path, rank, port) for rank in (0, 1)]
    machines = [_launch(workspace, config, "--run-dir", run_dir, "--accelerate-config", configs[rank]) for rank in (0, 1)]
    try:
        deadline = time.time() + 400
        status = {}
        while time.time() < deadline and all(m.poll() is None for m in machines):
            status = runs.read_status(run_dir)
            if (status.get("step") or 0) >= 1:
                break
            time.sleep(0.5)
        assert status.get("pid") == machines[0].pid and status.get("num_processes") == 2, status
        machines[0].send_signal(signal.SIGINT)  # Ctrl-C on machine 0
    finally:
        outputs = _both(machines)
    assert [m.returncode for m in machines] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    status = runs.read_status(run_dir)
    stopped_at = status["step"]
    assert status["state"] == "stopped" and 1 <= stopped_at < 200, status
    assert f"Continue with: rloo-studio train --resume {run_dir.resolve()} --accelerate-config {configs[0]}" in outputs[0]
    log = (run_dir / "train.log").read_text(encoding="utf-8")
    machine1_log = (run_dir / "train.machine-1.log").read_text(encoding="utf-8")
    assert "[rloo-studio] rank 0 of 2 (gloo)" in log and "[rloo-studio] rank 1 of 2 (gloo)" in machine1_log
    assert f"[rloo-studio] rank 1 of 2: stopped at step {stopped_at}" in machine1_log  # both stopped at one step
    assert f"[rloo-studio] stopped at step {stopped_at}" in log
    assert [p.name for _, p in runs.checkpoints(run_dir)] == [f"checkpoint-{stopped_at}"]

    # Resume on both machines (a fresh port: the last one may linger in TIME_WAIT) and train to the end.
    port = _free_port()
    configs = [_accelerate_config(workspace.path, rank, port) for rank in (0, 1)]
    machines = [_launch(workspace, "--resume", run_dir, f"rloo.max_steps={stopped_at + 1}", "--accelerate-config", configs[rank])
                for rank in (0, 1)]
    outputs = _both(machines)
    assert [m.returncode for m in machines] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "finished" and status["step"] == stopped_at + 1 and status["resumed_from"] == stopped_at
    assert [m["step"] for m in runs.read_jsonl(run_dir / "metrics.jsonl")] == list(range(1, stopped_at + 2))  # rank 0 only
    assert_trained_with(run_dir)
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()

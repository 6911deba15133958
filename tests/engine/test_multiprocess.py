"""`rloo-studio train CONFIG --num-processes 2`: two real processes (gloo on the CPU) train one run.

The launcher creates the run directory, `accelerate launch` starts two ranks, both train (each
prints its rank line, TRL sizes the generation batch over both), and only rank 0 writes the run
directory: each step appears once in metrics.jsonl and samples come from one process. Ctrl-C on the
launcher stops both ranks at the same step with a checkpoint, and `--resume` continues it with
two processes again to its end. (One run covers all of it: each launch costs two processes' start.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from helpers import assert_trained_with, run_cli

from rloo_studio import runs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="two training processes need two CPU cores"),
]
CPU_ONLY = {"CUDA_VISIBLE_DEVICES": ""}  # gloo on the CPU, also on a machine with one GPU
# 4 completions per rank per step = one whole prompt group each; TRL's generation batch is 4 x 2 = 8.
RLOO = {"per_device_train_batch_size": 4, "max_completion_length": 8}


def _rank_lines(log: str, suffix: str) -> list[str]:
    return [line[line.index("[rloo-studio] rank"):] for line in log.splitlines() if "[rloo-studio] rank" in line and suffix in line]


def test_ctrl_c_stops_both_processes_at_one_step_and_resume_continues(workspace):
    config = workspace.write_config(rloo=RLOO | {"max_steps": 200, "save_steps": 1000})
    run_dir = workspace.path / "runs" / "stop-me"
    env = {**os.environ, **CPU_ONLY}
    proc = subprocess.Popen([sys.executable, "-m", "rloo_studio.cli", "train", str(config), "--run-dir", str(run_dir),
                             "--num-processes", "2"], cwd=workspace.path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            status = runs.read_status(run_dir)
            if (status.get("step") or 0) >= 1:
                break
            time.sleep(0.5)
        assert status.get("pid") == proc.pid  # the run's process is the launcher: signalling it stops every rank
        proc.send_signal(signal.SIGINT)  # as Ctrl-C in its terminal would
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-4000:]
    status = runs.read_status(run_dir)
    stopped_at = status["step"]
    assert status["state"] == "stopped" and 1 <= stopped_at < 200, status
    assert f"Continue with: rloo-studio train --resume {run_dir.resolve()} --num-processes 2" in out
    log = (run_dir / "train.log").read_text()
    assert _rank_lines(log, "stopped at step") == [f"[rloo-studio] rank 1 of 2: stopped at step {stopped_at}"]
    assert f"[rloo-studio] stopped at step {stopped_at}" in log  # rank 0: the same step
    assert [p.name for _, p in runs.checkpoints(run_dir)] == [f"checkpoint-{stopped_at}"]
    assert not (run_dir / runs.STOP_FILE).exists()
    # Both ranks joined one gloo group, and TRL counted both in the generation batch (one process: 4).
    assert sorted(_rank_lines(log, "(gloo)")) == [
        "[rloo-studio] rank 0 of 2 (gloo): 4 completions per step of a generation batch of 8",
        "[rloo-studio] rank 1 of 2 (gloo): 4 completions per step of a generation batch of 8",
    ]
    assert log.count("[rloo-studio] run directory:") == 1  # rank 0 speaks for the run; rank 1 trains quietly
    assert [m["step"] for m in runs.read_jsonl(run_dir / "metrics.jsonl")] == list(range(1, stopped_at + 1))  # rank 0 only
    # One prompt group (4 completions) per step from rank 0; a second writer would double it.
    assert Counter(s["step"] for s in runs.read_jsonl(run_dir / "samples.jsonl")) == {step: 4 for step in range(1, stopped_at + 1)}

    result = run_cli("train", "--resume", run_dir, f"rloo.max_steps={stopped_at + 1}", "--num-processes", "2",
                     cwd=workspace.path, env=CPU_ONLY)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "finished" and status["step"] == stopped_at + 1 and status["resumed_from"] == stopped_at
    assert status["num_processes"] == 2 and status["pid"] is None
    assert_trained_with(run_dir)
    assert [m["step"] for m in runs.read_jsonl(run_dir / "metrics.jsonl")] == list(range(1, stopped_at + 2))
    assert Counter(s["step"] for s in runs.read_jsonl(run_dir / "samples.jsonl"))[stopped_at + 1] == 4
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()
    log = (run_dir / "train.log").read_text()
    assert _rank_lines(log, "finished at step") == [f"[rloo-studio] rank 1 of 2: finished at step {stopped_at + 1}"]
    assert f"[rloo-studio] finished at step {stopped_at + 1}" in log

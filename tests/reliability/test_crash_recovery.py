"""A training worker killed with SIGKILL mid-run: shown as interrupted, resumed from its last checkpoint,
metrics continue with no step lost or logged twice up to the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT

from rloo_studio import runs

pytestmark = pytest.mark.slow


def test_kill_9_then_resume_continues_the_metrics(workspace):
    config = workspace.write_config(rloo={"max_steps": 8, "save_steps": 2, "num_generations": 4, "per_device_train_batch_size": 8,
                                          "max_completion_length": 16, "learning_rate": 1e-3, "beta": 0.0})
    run_dir = workspace.path / "runs" / "crash"
    proc = subprocess.Popen([sys.executable, "-m", "rloo_studio.cli", "train", str(config), "--run-dir", str(run_dir)],
                            cwd=workspace.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and (runs.last_checkpoint(run_dir) or (0,))[0] < 4:
        time.sleep(0.2)
    assert runs.last_checkpoint(run_dir)[0] >= 4, "no checkpoint at step 4 in time"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert runs.effective_state(runs.read_status(run_dir)) == "interrupted"
    killed_at = runs.read_status(run_dir)["step"]
    checkpoint = runs.last_checkpoint(run_dir)[0]

    result = subprocess.run([sys.executable, "-m", "rloo_studio.cli", "train", "--resume", str(run_dir)], cwd=workspace.path,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "finished" and status["resumed_from"] == checkpoint and status["step"] == 8
    steps = [m["step"] for m in runs.read_jsonl(run_dir / runs.METRICS_FILE)]
    assert steps == list(range(1, 9)), steps  # each step exactly once
    superseded = run_dir / "metrics.superseded.jsonl"
    if killed_at > checkpoint:  # steps logged after the checkpoint were trained again: the old records are set aside, not lost
        assert [json.loads(line)["step"] for line in superseded.read_text().splitlines()] == list(range(checkpoint + 1, killed_at + 1))

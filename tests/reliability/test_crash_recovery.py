"""A training worker killed with SIGKILL mid-run: shown as interrupted, resumed from its last checkpoint,
metrics continue with no step lost or logged twice up to the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from helpers import assert_trained_with, popen_cli, run_cli, run_code

from rloo_studio import runs

pytestmark = pytest.mark.slow


def test_kill_9_then_resume_continues_the_metrics(workspace):
    # A checkpoint at step 4 and the next at 8: the kill lands between the two, after step 5 was logged,
    # so steps 5.. were trained after the last checkpoint and must be trained again on resume.
    config = workspace.write_config(rloo={"max_steps": 8, "save_steps": 4, "num_generations": 4, "per_device_train_batch_size": 8,
                                          "max_completion_length": 16, "learning_rate": 1e-3, "beta": 0.0})
    run_dir = workspace.path / "runs" / "crash"
    proc = popen_cli("train", config, "--run-dir", run_dir, cwd=workspace.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def logged_steps() -> list[int]:
        return [m["step"] for m in runs.read_jsonl(run_dir / runs.METRICS_FILE)] if (run_dir / runs.METRICS_FILE).exists() else []

    deadline = time.time() + 300
    while time.time() < deadline and 5 not in logged_steps():
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert 5 in logged_steps(), "step 5 was not logged in time"
    assert runs.last_checkpoint(run_dir)[0] == 4  # killed between checkpoints, deterministically
    assert runs.effective_state(runs.read_status(run_dir)) == "interrupted"
    logged_before_kill = logged_steps()
    assert max(logged_before_kill) in (5, 6, 7), logged_before_kill

    result = run_cli("train", "--resume", run_dir, cwd=workspace.path, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "finished" and status["resumed_from"] == 4 and status["step"] == 8
    assert_trained_with(run_dir)
    assert logged_steps() == list(range(1, 9))  # each step exactly once
    # The steps logged after the checkpoint were trained again: their old records are set aside, not lost.
    superseded = run_dir / "metrics.superseded.jsonl"
    assert [json.loads(line)["step"] for line in superseded.read_text().splitlines()] == list(range(5, max(logged_before_kill) + 1))


OOM_REWARD = '''
def runs_out_of_memory(completions, trainer_state, **kwargs):
    """Fine for two steps, then raises what PyTorch raises when the GPU is full."""
    import torch
    if trainer_state.global_step >= 2:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    return [0.0 for _ in completions]
'''


def test_out_of_memory_ends_the_run_as_failed_with_advice_and_usable_checkpoints(workspace):
    (workspace.path / "oom.py").write_text(OOM_REWARD)
    config = workspace.write_config(rewards=[{"name": "numeric_answer"}, {"file": "oom.py"}],
                                    rloo={"max_steps": 6, "save_steps": 1, "num_generations": 4, "per_device_train_batch_size": 8,
                                          "max_completion_length": 16, "learning_rate": 1e-3, "beta": 0.0})
    run_dir = workspace.path / "runs" / "oom"
    result = run_cli("train", config, "--run-dir", run_dir, cwd=workspace.path, timeout=600)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "the GPU ran out of memory at step 2" in result.stderr and "max_completion_length" in result.stderr
    status = runs.read_status(run_dir)
    assert status["state"] == "failed" and status["error"]["type"] == "OutOfMemory"
    assert "the estimate for this config is" in status["error"]["why"]  # the estimator's breakdown
    assert runs.last_checkpoint(run_dir)[0] == 2  # the checkpoints before it are intact
    # The run trains with its own copy of the reward code: "fix" that copy, and the resume finishes the run.
    copy = next(p for p in run_dir.glob("*.py") if "runs_out_of_memory" in p.read_text())
    copy.write_text(OOM_REWARD.replace(">= 2", ">= 1000"))
    resumed = run_cli("train", "--resume", run_dir, cwd=workspace.path, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert runs.read_status(run_dir)["state"] == "finished"
    assert [m["step"] for m in runs.read_jsonl(run_dir / runs.METRICS_FILE)] == list(range(1, 7))


def test_out_of_memory_while_sampling_the_preview_is_explained(workspace):
    # The preview's sampler raises what PyTorch raises when the GPU is full; the CLI (which the app runs
    # as a child process) must say what happened and what to do, and end so that its memory is freed.
    config = workspace.write_config()
    code = ("import sys, torch, rloo_studio.engine.generate as g\n"
            "def full(*a, **k):\n"
            "    raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 3.00 GiB')\n"
            "g.generate_completions = full\n"
            "from rloo_studio.cli import main\n"
            f"sys.exit(main(['preview', {str(config)!r}, '--num-prompts', '2']))\n")
    result = run_code(code, stack="transformers", cwd=workspace.path, timeout=600)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "the GPU ran out of memory while sampling completions for the preview" in result.stderr
    assert "2 prompts × 4 completions × up to 16 tokens" in result.stderr
    assert "lower rloo.num_generations or rloo.max_completion_length" in result.stderr and "freed its memory" in result.stderr

"""Stopping a run cleanly (STOP file, SIGTERM) and resuming it from its checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import assert_trained_with, popen_cli, run_cli

from rloo_studio import runs
from rloo_studio.config import RunConfig
from rloo_studio.workers import jobs

pytestmark = pytest.mark.slow


def _start_long_run(workspace) -> tuple[subprocess.Popen, Path]:
    config = workspace.write_config()
    proc = popen_cli("train", config, "rloo.max_steps=500", cwd=workspace.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        found = list((workspace.path / "runs").glob("*/metrics.jsonl"))
        if found and len(runs.read_jsonl(found[0])) >= 3:
            return proc, found[0].parent
        if proc.poll() is not None:
            raise AssertionError(f"training ended early: {proc.communicate()[1][-3000:]}")
        time.sleep(0.5)
    proc.kill()
    raise AssertionError("training did not log 3 steps within 240 s")


def test_stop_file_then_resume_continues_from_checkpoint(workspace):
    proc, run_dir = _start_long_run(workspace)
    runs.request_stop(run_dir)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 0, stderr[-3000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "stopped"
    assert_trained_with(run_dir)
    stopped_at = status["step"]
    assert 3 <= stopped_at < 500
    assert runs.last_checkpoint(run_dir)[0] == stopped_at, "the stop must save a checkpoint at the current step"
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()
    assert not (run_dir / "STOP").exists()
    assert f"--resume {run_dir}" in stdout
    # The page shows the status's note beside "stopped": it names the request that stopped it.
    assert status["note"].startswith("stopped on a stop request: the run folder's STOP file at "), status["note"]
    first_session = status["trained_s"]
    assert 0 < first_session <= status["finished_at"] - status["started_at"]

    result = run_cli("train", "--resume", run_dir, f"rloo.max_steps={stopped_at + 2}", cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-3000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "finished" and status["step"] == stopped_at + 2
    assert status["resumed_from"] == stopped_at
    # The training time adds the sessions, not the time between them (the page's "elapsed" read 14 hours for two
    # 1-hour sessions a night apart): here, less than from the first start to the end, by at least the resumed
    # process's start-up.
    assert status["trained_before_s"] == first_session
    assert first_session < status["trained_s"] < status["finished_at"] - status["started_at"], status
    assert runs.trained_seconds(status) == status["trained_s"]
    assert_trained_with(run_dir)  # the resumed process too
    steps = [m["step"] for m in runs.read_jsonl(run_dir / "metrics.jsonl")]
    assert steps == list(range(1, stopped_at + 3)), "metrics continue after the checkpoint, none duplicated or lost"
    sample_steps = {s["step"] for s in runs.read_jsonl(run_dir / "samples.jsonl")}
    assert sample_steps == set(range(1, stopped_at + 3))
    # The changed setting is recorded; the config the run started with is kept beside it.
    assert f"max_steps: {stopped_at + 2}" in (run_dir / "config.yaml").read_text()
    assert len(list(run_dir.glob("config.before-resume-*.yaml"))) == 1


def test_sigterm_stops_cleanly_with_a_checkpoint(workspace):
    proc, run_dir = _start_long_run(workspace)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 0, stderr[-3000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "stopped"
    assert runs.last_checkpoint(run_dir)[0] == status["step"]
    assert "Stop requested (SIGTERM)" in stderr
    # A stop nobody pressed Stop for explains itself: the signal, the process, the time, who sends one.
    note = status["note"]
    assert note.startswith(f"stopped by SIGTERM, sent to the training process (pid {proc.pid}) at "), note
    assert "`kill`, `pkill`" in note and "the app's Stop button sends no signal" in note


def test_a_stop_pressed_while_the_worker_loads_stops_it_after_its_first_step(workspace):
    """The app's Stop on a run still `queued` (its worker importing torch) writes the STOP file before the worker has
    begun; the worker keeps that request (it clears only one older than itself) and stops after its first step."""
    cfg = RunConfig.load(workspace.write_config(rloo={"max_steps": 6, "save_steps": 100}))
    run_dir = jobs.start_run(cfg, workspace.path / "runs", (workspace.path / "rewards.py").read_text())
    assert "after its first step" in jobs.stop_run(run_dir)
    deadline = time.time() + 600
    while runs.effective_state(runs.read_status(run_dir)) in runs.ACTIVE_STATES and time.time() < deadline:
        time.sleep(0.5)
    status = runs.read_status(run_dir)
    assert (status["state"], status["step"]) == ("stopped", 1), (status, (run_dir / runs.LOG_FILE).read_text()[-3000:])
    assert runs.last_checkpoint(run_dir)[0] == 1
    assert "STOP file" in status["note"]


def test_resume_refuses_a_running_run_and_a_non_run_folder(workspace, tmp_path):
    result = run_cli("train", "--resume", tmp_path / "nothing-here", cwd=workspace.path)
    assert result.returncode == 2
    assert "is not a run directory" in result.stderr and "rloo-studio runs" in result.stderr

    run_dir = tmp_path / "busy"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("{}")
    runs.update_status(run_dir, state="running", pid=os.getpid())
    result = run_cli("train", "--resume", run_dir, cwd=workspace.path)
    assert result.returncode == 2
    assert "still running" in result.stderr and "STOP" in result.stderr


def test_a_stop_asked_mid_cycle_says_the_step_it_will_stop_at(tmp_path):
    """With num_iterations 4 a stop waits for the generation cycle's end (a resume then continues exactly), yet the page
    said "stopping after the current step" for up to three more steps (an audit). The worker's own callback, on
    transformers' own state objects: asked at step 5, it says it stops at step 8, and stops there."""
    from rloo_studio.batching import batch_plan
    from rloo_studio.engine.stack import import_training_stack
    from rloo_studio.engine.train import _studio_callback
    from rloo_studio.ui.run_view import status_markdown

    stack = import_training_stack("transformers")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    runs.update_status(run_dir, state="running", step=4, max_steps=20)
    plan = batch_plan({"per_device_train_batch_size": 4, "num_generations": 4, "num_iterations": 4,
                       "gradient_accumulation_steps": 1})
    callback = _studio_callback(stack, run_dir, {}, 0, plan)
    state, control = stack.transformers.TrainerState(global_step=4, max_steps=20), stack.transformers.TrainerControl()
    callback.on_step_end(None, state, control)  # a cycle ends at step 4: nothing asked, nothing stops
    runs.request_stop(run_dir)
    for step in (5, 6, 7):
        state.global_step = step
        control = callback.on_step_end(None, state, stack.transformers.TrainerControl()) or control
        assert not control.should_training_stop, step
        status = runs.read_status(run_dir)
        assert status["state"] == "stopping" and status["stop_at"] == 8, status
        view = jobs.view(run_dir)
        assert "stopping at step 8, where this generation cycle ends" in status_markdown(view), status_markdown(view)
    state.global_step = 8
    control = callback.on_step_end(None, state, stack.transformers.TrainerControl())
    assert control.should_training_stop and control.should_save
    # A stop of an earlier session (a run resumed from an earlier checkpoint) leaves no step behind: the app's Stop
    # clears it until the worker says one.
    (run_dir / runs.STOP_FILE).unlink(missing_ok=True)
    runs.update_status(run_dir, state="running", step=3, stop_at=8)
    assert "after the current step (in the middle of a generation cycle, at the cycle's end)" in jobs.stop_run(run_dir)
    assert runs.read_status(run_dir)["stop_at"] is None
    assert "stopping after the current step" in status_markdown(jobs.view(run_dir))

"""A reward function that hangs during training ends the run as failed, naming the function, its time limit and
what to do, instead of hanging the run forever; the last checkpoint stays resumable."""

from __future__ import annotations

import os
import threading
import time

import pytest

from helpers import run_cli

from rloo_studio import runs
from rloo_studio.config import REWARD_TIMEOUT_S, RunConfig
from rloo_studio.rewards.runtime import guard

SLOW_REWARD = '''
import os, time

def slow_reward(completions, trainer_state, **kwargs):
    """Hangs from the third step on while HANG_REWARD is set (a stand-in for a network call that never answers)."""
    if os.environ.get("HANG_REWARD") == "1" and trainer_state.global_step >= 2:
        time.sleep(3600)
    return [0.0 for _ in completions]
'''


def test_a_call_past_its_limit_is_handed_to_the_handler_and_a_quick_one_is_not():
    expired = []
    done = threading.Event()

    def on_timeout(name, limit):
        expired.append((name, limit))
        done.set()

    quick = guard(lambda completions, **kw: [1.0] * len(completions), "quick", timeout_s=0.5, on_timeout=on_timeout)
    assert quick(completions=["a", "b"]) == [1.0, 1.0]
    time.sleep(0.8)
    assert expired == []  # the timer was cancelled when the call returned

    def slow(completions, **kw):
        time.sleep(1.5)
        return [0.0] * len(completions)

    guard(slow, "slow", timeout_s=0.3, on_timeout=on_timeout)(completions=["a"])
    assert done.wait(5) and expired == [("slow", 0.3)]


def test_the_limit_is_configurable_and_checked():
    spec = {"file": "r.py", "timeout_s": 600}
    cfg = RunConfig.from_dict({"rewards": [spec, {"name": "numeric_answer"}]})
    assert cfg.rewards[0].timeout_s == 600 and cfg.rewards[1].timeout_s == REWARD_TIMEOUT_S
    saved = cfg.to_dict()["rewards"]
    assert saved[0]["timeout_s"] == 600 and "timeout_s" not in saved[1]  # the default is not written out
    problems = RunConfig.from_dict({"rewards": [{"name": "numeric_answer", "timeout_s": 0}]}).validate()
    assert any(p.startswith("rewards[0].timeout_s: 0 is not a positive number of seconds") and "120" in p for p in problems), problems


@pytest.mark.slow
def test_a_hanging_reward_ends_the_run_as_failed_and_the_checkpoint_resumes(workspace):
    (workspace.path / "slow.py").write_text(SLOW_REWARD)
    config = workspace.write_config(
        rewards=[{"name": "numeric_answer"}, {"file": "slow.py", "timeout_s": 3}],
        rloo={"max_steps": 4, "save_steps": 2, "num_generations": 4, "per_device_train_batch_size": 8,
              "max_completion_length": 16, "learning_rate": 1e-3, "beta": 0.0})
    run_dir = workspace.path / "runs" / "hang"
    env = {**os.environ, "HANG_REWARD": "1"}
    started = time.time()
    result = run_cli("train", config, "--run-dir", run_dir, cwd=workspace.path, timeout=900, env=env)
    assert time.time() - started < 900
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    # What, why and what to do, with the function's name, its limit and the command that continues the run.
    assert "error: reward function `slow_reward` did not return within its time limit of 3 s on one batch" in result.stderr
    assert "a reward that hangs" in result.stderr and "the last saved checkpoint is intact" in result.stderr
    assert "give its reward entry a larger `timeout_s` (e.g. timeout_s: 600)" in result.stderr
    assert f"then continue with `rloo-studio train --resume {run_dir}`" in result.stderr
    status = runs.read_status(run_dir)
    assert status["state"] == "failed" and status["error"]["type"] == "RewardError"
    assert "`slow_reward`" in status["error"]["what"] and "3 s" in status["error"]["what"]
    assert runs.last_checkpoint(run_dir) == (2, run_dir / "checkpoints" / "checkpoint-2")

    # The reward fixed (no hang): the run continues from checkpoint-2 to the end.
    env.pop("HANG_REWARD")
    resumed = run_cli("train", "--resume", run_dir, cwd=workspace.path, timeout=900, env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "finished" and status["resumed_from"] == 2 and status["step"] == 4
    assert [m["step"] for m in runs.read_jsonl(run_dir / runs.METRICS_FILE)] == [1, 2, 3, 4]


EXITING_REWARD = '''
import os

def quitter(completions, trainer_state, **kwargs):
    """Ends the training process itself on the second step, as a stray os._exit(0) in reward code does."""
    if trainer_state.global_step >= 1:
        os._exit(0)
    return [0.0 for _ in completions]
'''


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_a_reward_that_ends_the_process_never_makes_the_run_exit_0_and_its_status_says_why(workspace, sandbox):
    """In the sandbox os._exit ends the reward's own process; without one (or with `sandbox: false`) the training
    process itself: either way the run fails, saying which function did it."""
    (workspace.path / "quit.py").write_text(EXITING_REWARD)
    config = workspace.write_config(
        rewards=[{"name": "numeric_answer"}, {"file": "quit.py"}],
        rloo={"max_steps": 3, "save_steps": 10, "num_generations": 4, "per_device_train_batch_size": 8,
              "max_completion_length": 8, "beta": 0.0})
    run_dir = workspace.path / "runs" / "quit"
    env = {**os.environ, "RLOO_STUDIO_SANDBOX": sandbox}
    result = run_cli("train", config, "--run-dir", run_dir, cwd=workspace.path, timeout=900, env=env)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "os._exit(0)" in result.stderr and "quit.py, line 7" in result.stderr, result.stderr[-3000:]
    status = runs.read_status(run_dir)
    assert status["state"] == "failed", status
    assert "os._exit(0)" in status["error"]["what"] and "`quitter`" in status["error"]["what"] + status["error"]["why"], status
    assert f"rloo-studio train --resume {run_dir}" in status["error"]["fix"]
    # What the run wrote is its owner's alone (the command sets an owner-only mask for itself and its children).
    shared = [str(p) for p in [run_dir, *run_dir.rglob("*")] if os.name == "posix" and p.stat().st_mode & 0o077]
    assert not shared, shared

"""`rloo-studio estimate CONFIG --measure`: a real trial run of the config, timed, then removed; its time per step against
the run that follows, and a trial that fails says why in the run's own words."""

from __future__ import annotations

import json

import pytest
from helpers import ADDITION_ROWS, only_run_dir, run_cli

from rloo_studio import runs
from rloo_studio.config import RunConfig
from rloo_studio.workers.trial import SLOWER_PACE, run_steps, trial_steps

pytestmark = pytest.mark.slow

STEPS = 6


def test_a_trial_times_the_config_and_the_run_that_follows_takes_about_that_per_step(workspace, tmp_path):
    config = workspace.write_config(rloo={"max_steps": STEPS, "save_steps": 100, "logging_steps": 3})
    trial_tmp = tmp_path / "tmp"
    trial_tmp.mkdir()
    result = run_cli("estimate", config, "--measure", "--json", "--minutes", "20", cwd=workspace.path,
                     env={"TMPDIR": str(trial_tmp)})
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout)
    measured = answer["measured"]
    # Each stage said as it began, in order (the tiny model loads and takes its two steps in well under a second from a
    # warm process: loading and the warm-up step can end between two looks at the folder, so those two may go unsaid;
    # the stages of a slower model: tests/unit/test_estimate_plan.py); the trial logs every step, whatever logging_steps
    # the config has.
    stages = [line for line in result.stderr.splitlines() if line.startswith("[estimate] ")]
    said = [next((i for i, line in enumerate(stages) if words in line), None)
            for words in ("starting the training process", "loading the model", "first step: warm-up", "done at")]
    assert None not in (said[0], said[3]), stages
    assert [i for i in said if i is not None] == sorted(i for i in said if i is not None), stages
    # Two generation cycles of one step each: the first warms up, the second is timed.
    assert (measured["trial_steps"], measured["timed_steps"], measured["run_steps"]) == (2, 1, STEPS)
    # Loading (torch, the model, the trainer) is its own number, apart from the warm-up step and the timed step, and the
    # three add up to the trial's measured length: nothing counted twice, nothing left out.
    load, warmup, per_step = measured["load_s"], measured["warmup_s"], measured["seconds_per_step"]
    assert load > 0 and warmup > 0 and per_step > 0
    assert load + warmup + per_step == pytest.approx(measured["trial_s"])
    # The run: loading and the warm-up step once, the timed step for each other step; at the range's slower end the
    # steps' part SLOWER_PACE times longer.
    assert measured["run_s"] == pytest.approx(load + warmup + (STEPS - 1) * per_step)
    assert measured["run_s_upper"] == pytest.approx(load + SLOWER_PACE * (warmup + (STEPS - 1) * per_step))
    # The plan: the most steps whose run fits 20 minutes at the slower end, and the sentence said about them.
    fit = answer["steps_for_minutes"]
    assert load + SLOWER_PACE * (warmup + (fit - 1) * per_step) <= 20 * 60 < load + SLOWER_PACE * (warmup + fit * per_step)
    # 39 rows cannot fill 20 minutes without many passes over them: the steps within the epoch limit lead, then
    # what the whole time would be.
    # 2 new prompts per step over 39 rows: 3 epochs are 58 steps.
    assert answer["plan"].startswith(f"for 20 minutes, use at most {3 * len(ADDITION_ROWS) // 2} steps: 3 epochs, about ")
    assert f"The whole 20 minutes would be {fit} steps" in answer["plan"]
    # 8 completions per step / 4 per prompt = 2 new prompts per step, over all 39 rows (none held out).
    assert measured["epochs"] == pytest.approx(STEPS * 2 / len(ADDITION_ROWS))
    assert measured["peak_rss_gib"] > 0.2  # torch and a model were loaded in the trial's worker
    assert measured["peak_gpu_gib"] is None  # no CUDA here
    # The trial's folder is gone and nothing was written where the person's runs are.
    assert not list(trial_tmp.glob("rloo-studio-trial-*")) and not (workspace.path / "runs").exists()

    done = run_cli("train", config, cwd=workspace.path)
    assert done.returncode == 0, done.stderr[-3000:]
    times = {r["step"]: r["time"] for r in runs.read_jsonl(only_run_dir(workspace.path / "runs") / runs.METRICS_FILE)
             if "time" in r and "step" in r}
    real_per_step = (times[STEPS] - times[3]) / (STEPS - 3)  # after the warm-up (logged every 3 steps)
    # The same order: a trial that counted the model's loading (seconds) as a step (a fraction of one) is far off.
    assert real_per_step / 5 < measured["seconds_per_step"] < real_per_step * 5, (measured, real_per_step)


def test_a_trial_that_fails_says_what_the_run_would_say(workspace, tmp_path):
    (workspace.path / "broken.py").write_text("def broken(completions, **kwargs):\n    raise ValueError('no score for you')\n")
    config = workspace.write_config(rewards=[{"file": "broken.py"}])
    trial_tmp = tmp_path / "tmp"
    trial_tmp.mkdir()
    result = run_cli("estimate", config, "--measure", cwd=workspace.path, env={"TMPDIR": str(trial_tmp)})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "error: the time trial failed: " in result.stderr and "broken" in result.stderr and "no score for you" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(trial_tmp.glob("rloo-studio-trial-*"))


def test_trial_and_run_steps_follow_the_generation_cycle_and_the_epochs():
    # Two passes over each generation batch: a cycle is 2 steps, so the trial trains 4 and times the last 2.
    assert trial_steps(RunConfig(rloo={"num_iterations": 2}).batch_plan()) == (4, 2)
    assert trial_steps(RunConfig().batch_plan()) == (2, 1)
    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "rloo": {"max_steps": -1, "num_train_epochs": 3,
                                                                               "per_device_train_batch_size": 8, "num_generations": 4}})
    # 3 epochs of 39 rows at 2 prompts a step: TRL draws whole generation batches only, 19 an epoch (57 steps, not the
    # 59 that 3 x 39 / 2 rounds up to)
    assert run_steps(cfg, cfg.batch_plan(), 39) == 57
    assert run_steps(cfg, cfg.batch_plan(), None) is None

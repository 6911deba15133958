"""Estimate time's arithmetic, worked by hand: the times a trial's records give (loading apart from the warm-up step and
the timed step), the run of S steps they make, the steps that fit a time budget, and the sentences page and command
line say. The records are written here; a real trial is tests/engine/test_time_trial.py."""

from __future__ import annotations

import pytest

from rloo_studio import runs
from rloo_studio.workers import trial
from rloo_studio.batching import BatchPlan
from rloo_studio.config import RunConfig
from rloo_studio.workers.jobs import RunView

PLAN = BatchPlan(per_device=32, accumulation=1, processes=1, num_generations=8, steps_per_generation=1, num_iterations=1)


def _measured(load=48.0, warmup=55.0, per_step=41.0, cycle=1, run_steps=20, train_rows=40) -> trial.Measurement:
    m = trial.Measurement(trial_steps=2 * cycle, timed_steps=cycle, seconds_per_step=per_step, load_s=load,
                          warmup_s=warmup, run_steps=run_steps, run_s=0.0, epochs=None, train_rows=train_rows,
                          new_prompts_per_step=PLAN.new_prompts_per_step, peak_gpu_gib=None, peak_rss_gib=None,
                          cycle_steps=cycle, batch=PLAN.__dict__.copy())
    m.run_s = trial.run_seconds(m, run_steps)
    return m


def test_a_run_is_loading_plus_the_warm_up_step_once_plus_the_timed_step_for_each_other_step():
    m = _measured()
    assert trial.run_seconds(m, 2) == 48 + 55 + 41  # the trial's own two steps
    assert trial.run_seconds(m, 20) == 48 + 55 + 19 * 41 == 882
    # A generation serving two steps: the first cycle (2 steps, 30 s) is the warm-up; one step alone is half of it.
    cycled = _measured(load=10.0, warmup=30.0, per_step=8.0, cycle=2)
    assert trial.run_seconds(cycled, 4) == 10 + 30 + 2 * 8
    assert trial.run_seconds(cycled, 1) == 10 + 15


def test_the_steps_for_a_budget_are_the_most_that_fit():
    m = _measured()
    # 1800 s - 48 - 55 = 1697 s after the first step: 41 more steps of 41 s (1681 s), a 42nd would need 1722 s.
    assert trial.steps_for(m, 1800) == 42
    assert trial.run_seconds(m, 42) == 1784 <= 1800 < trial.run_seconds(m, 43)
    assert trial.steps_for(m, 103) == 1 and trial.steps_for(m, 102.9) == 0
    # In whole generation cycles: 300 s - 40 s for the first cycle = 260 s = 16 more cycles of 2 x 8 s (256 s).
    assert trial.steps_for(_measured(load=10.0, warmup=30.0, per_step=8.0, cycle=2), 300) == 34


def test_the_plan_answers_for_n_minutes_and_the_steps_set():
    m = _measured()
    assert trial.plan_words(m, 30) == ("for 30 minutes, use 42 steps: about 30 min, 4 epochs (each prompt seen about 4 "
                                       "times); as set now, about 15 min for 20 steps")
    # No budget given: the default one.
    assert trial.plan_words(m).startswith(f"for {trial.DEFAULT_MINUTES} minutes, use ")
    # Unknown rows: no epochs; 5 minutes = 300 s: (300 - 103) / 41 = 4.8 -> 1 + 4 steps.
    assert trial.plan_words(_measured(train_rows=None), 5) == ("for 5 minutes, use 5 steps: about 4 min; as set now, "
                                                               "about 15 min for 20 steps")
    slow = _measured(load=600.0, warmup=700.0, per_step=650.0)
    assert trial.plan_words(slow, 10).startswith("10 minutes are not enough for one step: loading and the first step "
                                                 "take 22 min; allow at least 22 minutes")


def test_the_records_give_loading_apart_from_the_warm_up_and_the_timed_step(tmp_path):
    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "rloo": {"max_steps": 10}})
    # The worker started at 1000; step 1 ended at 1100 after 40 s of its own (training began at 1060); step 2 at 1130.
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, {"step": 1, "time": 1100.0, "time/step": 40.0})
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, {"step": 2, "time": 1130.0, "time/step": 30.0})
    m = trial._measurement(cfg, cfg.batch_plan(), tmp_path, 2, 1, 1000.0, None, None)
    assert (m.load_s, m.warmup_s, m.seconds_per_step, m.trial_s) == (60.0, 40.0, 30.0, 130.0)
    assert m.trial_s == trial.run_seconds(m, m.trial_steps)  # the trial is its own formula's case
    assert m.run_s == 60 + 40 + 9 * 30
    lines = trial.summary_lines(m, 10)
    assert lines[0] == ("loading took 60 s; a step takes 30.0 s (generation + update, the next step); the first step "
                        "took 40 s (one-time warm-up costs: counted once, not per step)")
    assert lines[1] == "for 10 minutes, use 17 steps: about 10 min; as set now, about 6 min for 10 steps"
    # Records without the step's own time: loading cannot be told from the warm-up, and the page says so.
    plain = tmp_path / "plain"
    plain.mkdir()
    for step, at in ((1, 1100.0), (2, 1130.0)):
        runs.append_jsonl(plain / runs.METRICS_FILE, {"step": step, "time": at})
    old = trial._measurement(cfg, cfg.batch_plan(), plain, 2, 1, 1000.0, None, None)
    assert (old.load_s, old.warmup_s) == (None, 100.0) and old.run_s == 100 + 9 * 30
    assert trial.summary_lines(old)[0].startswith("loading is not recorded apart (counted in the warm-up); ")


def test_a_measurement_comes_back_from_its_dict_for_another_budget():
    m = _measured()
    again = trial.Measurement.from_dict(m.to_dict())
    assert again == m and trial.plan_words(again, 60) == trial.plan_words(m, 60)


def test_the_trial_logs_every_step_and_saves_only_at_its_end():
    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "rloo": {"max_steps": 200, "logging_steps": 5,
                                                                               "save_steps": 50}})
    trial_cfg = trial.trial_config(cfg, 2)
    assert (trial_cfg.rloo["max_steps"], trial_cfg.rloo["save_steps"], trial_cfg.rloo["logging_steps"]) == (2, 2, 1)
    assert trial_cfg.output.run_name == trial.TRIAL_NAME and cfg.rloo["logging_steps"] == 5  # the person's config is untouched


@pytest.mark.parametrize("status, trainer_built, step, said", [
    ({"state": "queued"}, False, 0, "starting the training process (importing torch and the training libraries)"),
    ({"state": "running"}, False, 0, "loading the model"),
    ({"state": "running"}, True, 0, "first step: warm-up, timed apart"),
    ({"state": "running"}, True, 1, "step 2 of 2: timed"),
])
def test_the_progress_names_the_stage_the_trial_folder_shows(tmp_path, status, trainer_built, step, said):
    if trainer_built:
        runs.write_json_atomic(tmp_path / runs.TRAINER_ARGS_FILE, {"args": {}})
    view = RunView(run_id="t", path=tmp_path, state=status["state"], status={**status, "step": step})
    assert trial._stage(view, 2, 1) == said
    assert trial.Progress(said, 12.4, 40.0).words() == f"{said} (12 s)… 40 s in all"

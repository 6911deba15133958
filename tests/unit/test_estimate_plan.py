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
    m.run_s, m.run_s_upper = trial.run_range(m, run_steps)
    return m


def test_a_run_is_loading_plus_the_warm_up_step_once_plus_the_timed_step_for_each_other_step():
    m = _measured()
    assert trial.run_seconds(m, 2) == 48 + 55 + 41  # the trial's own two steps
    assert trial.run_seconds(m, 20) == 48 + 55 + 19 * 41 == 882
    # A generation serving two steps: the first cycle (2 steps, 30 s) is the warm-up; one step alone is half of it.
    cycled = _measured(load=10.0, warmup=30.0, per_step=8.0, cycle=2)
    assert trial.run_seconds(cycled, 4) == 10 + 30 + 2 * 8
    assert trial.run_seconds(cycled, 1) == 10 + 15
    # The range's slower end: the steps' part (not the loading) at SLOWER_PACE.
    assert trial.SLOWER_PACE == 1.3
    assert trial.run_range(m, 20) == (882, pytest.approx(48 + 1.3 * (55 + 19 * 41)))
    assert trial.run_range(cycled, 1) == (25, pytest.approx(10 + 1.3 * 15))


def test_the_steps_for_a_budget_are_the_most_that_fit_at_the_slower_pace():
    m = _measured()
    # 1800 s - 48 s of loading = 1752 s for the steps at 1.3 x: 1347.7 s at the trial's pace, 55 s of it the first
    # step's: 31 more steps of 41 s (1271 s), a 32nd would need 1312 s.
    assert trial.steps_for(m, 1800) == 32
    assert trial.run_range(m, 32)[1] == pytest.approx(1771.8) and trial.run_range(m, 33)[1] > 1800
    assert trial.steps_for(m, 48 + 1.3 * 55) == 1 and trial.steps_for(m, 48 + 1.3 * 55 - 0.1) == 0
    # In whole generation cycles: (300 s - 10) / 1.3 = 223 s; - 30 s for the first cycle = 193 s = 12 more cycles of
    # 2 x 8 s (192 s).
    assert trial.steps_for(_measured(load=10.0, warmup=30.0, per_step=8.0, cycle=2), 300) == 26


def test_the_plan_answers_for_n_minutes_and_the_steps_set_as_ranges():
    m = _measured()
    # 32 steps: 48 + 55 + 31 x 41 = 1374 s (23 min) at the trial's pace, 1772 s (30 min) at the slower one.
    assert trial.plan_words(m, 30) == ("for 30 minutes, use 32 steps: about 23–30 min, 3 epochs (each prompt seen about 3 "
                                       "times); as set now, about 15–19 min for 20 steps")
    # No budget given: the default one.
    assert trial.plan_words(m).startswith(f"for {trial.DEFAULT_MINUTES} minutes, use ")
    # Unknown rows: no epochs; under 10 minutes the range has tenths of a minute (4 steps: 226-282 s).
    assert trial.plan_words(_measured(train_rows=None), 5) == ("for 5 minutes, use 4 steps: about 3.8–4.7 min; as set now, "
                                                               "about 15–19 min for 20 steps")
    slow = _measured(load=600.0, warmup=700.0, per_step=650.0)
    assert trial.plan_words(slow, 10).startswith("10 minutes are not enough for one step: loading and the first step "
                                                 "take about 22–25 min; allow at least 26 minutes")


def test_a_budget_worth_many_epochs_says_so_and_the_steps_that_stay_within_the_limit():
    """"For 30 minutes, use 776 steps: … 460 epochs" below the Train tab's own warning at 9 epochs that the model may
    learn the prompts' answers by heart (a walk); then, with a warning behind it, the bold headline still said "use 786
    steps" (a second walk): the steps within the limit lead."""
    m = _measured(train_rows=8)  # 4 new prompts a step: 32 steps are 16 epochs
    words = trial.plan_words(m, 30)
    assert words.startswith("for 30 minutes, use at most 6 steps: 3 epochs, about "), words
    assert ("The whole 30 minutes would be 32 steps, 16 epochs (each prompt seen about 16 times): more than 3 passes over "
            "these 8 rows, where the model may learn their answers by heart") in words, words
    assert "by heart" not in trial.plan_words(_measured(), 30)  # 3 epochs: within the limit


@pytest.mark.parametrize("low, high, said", [
    (40, 50, "40–50 s"), (130, 170, "2.2–2.8 min"), (1300, 1700, "22–28 min"), (100, 100.2, "1.7 min"),
    (3000, 4000, "50 min – 1 h 06 min"),
])
def test_a_range_reads_in_the_unit_of_its_upper_end(low, high, said):
    assert trial.duration_range(low, high) == said


def test_the_plan_holds_for_the_run_the_benchmark_measured():
    """benchmarks/estimate_time.py on 2 idle cores: the trial measured loading 11.6 s, the warm-up step 12.4 s, the
    timed step 10.3 s; the 16 steps it planned for 3 minutes then took these times (loading 10.8 s, the first step
    14.3 s, the later steps below) and 7.3 s after the last one to the process's end: 237 s. The plan for 3 minutes
    must fit the same run: its steps, as they went, to the process's end."""
    m = _measured(load=11.6, warmup=12.4, per_step=10.3, train_rows=None)
    later = [11.1, 12.4, 12.8, 13.2, 15.0, 14.1, 13.1, 12.4, 14.9, 12.6, 13.9, 13.5, 14.3, 17.2, 14.0]
    steps = trial.steps_for(m, 180)
    to_last_step = 10.8 + 14.3 + sum(later[:steps - 1])
    assert to_last_step + 7.3 <= 180, (steps, to_last_step)
    low, high = trial.run_range(m, steps)
    assert low <= to_last_step <= high  # the range it says holds the run's time to its last step


def test_the_records_give_loading_apart_from_the_warm_up_and_the_timed_step(tmp_path):
    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "rloo": {"max_steps": 10}})
    # The worker started at 1000; step 1 ended at 1100 after 40 s of its own (training began at 1060); step 2 at 1130.
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, {"step": 1, "time": 1100.0, "time/step": 40.0})
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, {"step": 2, "time": 1130.0, "time/step": 30.0})
    m = trial._measurement(cfg, cfg.batch_plan(), tmp_path, 2, 1, 1000.0, None, None)
    assert (m.load_s, m.warmup_s, m.seconds_per_step, m.trial_s) == (60.0, 40.0, 30.0, 130.0)
    assert m.trial_s == trial.run_seconds(m, m.trial_steps)  # the trial is its own formula's case
    assert m.run_s == 60 + 40 + 9 * 30 and m.run_s_upper == pytest.approx(60 + 1.3 * (40 + 9 * 30))
    lines = trial.summary_lines(m, 10)
    assert lines[0] == ("loading took 60 s; a step takes 30.0 s (generation + update, the next step); the first step "
                        "took 40 s (one-time warm-up costs: counted once, not per step)")
    assert lines[1] == "for 10 minutes, use 13 steps: about 7.7–9.7 min; as set now, about 6.2–7.7 min for 10 steps"
    assert any(line.startswith("the range: a real run's later steps have taken up to 1.3 × the trial's timed step")
               for line in lines)
    # Records without the step's own time: loading cannot be told from the warm-up, and the page says so.
    plain = tmp_path / "plain"
    plain.mkdir()
    for step, at in ((1, 1100.0), (2, 1130.0)):
        runs.append_jsonl(plain / runs.METRICS_FILE, {"step": step, "time": at})
    old = trial._measurement(cfg, cfg.batch_plan(), plain, 2, 1, 1000.0, None, None)
    assert (old.load_s, old.warmup_s) == (None, 100.0) and old.run_s == 100 + 9 * 30
    assert trial.summary_lines(old)[0].startswith("loading is not recorded apart (counted in the warm-up); ")


def test_the_format_warm_up_is_said_apart_from_the_loading(tmp_path):
    """A run with the format warm-up: its supervised steps and scans come before RLOO's first step, and the trial
    called them all "loading" (an audit). The warm-up's own seconds (status.json) are said apart; the run's fixed part
    stays the same sum."""
    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "rloo": {"max_steps": 10}, "warmup": {"enabled": True}})
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, {"step": 1, "time": 1100.0, "time/step": 40.0})
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, {"step": 2, "time": 1130.0, "time/step": 30.0})
    runs.update_status(tmp_path, warmup={"step": 3, "steps": 3, "finished": True, "seconds": 25.0, "line": "…"})
    m = trial._measurement(cfg, cfg.batch_plan(), tmp_path, 2, 1, 1000.0, None, None)
    assert (m.load_s, m.format_warmup_s, m.warmup_s, m.trial_s) == (35.0, 25.0, 40.0, 130.0)
    assert m.run_s == 60 + 40 + 9 * 30 and m.trial_s == trial.run_seconds(m, m.trial_steps)
    assert trial.summary_lines(m, 10)[0].startswith(
        "loading took 35 s, then the format warm-up 25 s (once, before RLOO's first step); a step takes 30.0 s"), m
    assert any("a run of S steps: 35 s + 25 s (format warm-up) + 40 s + (S − 1) × 30.0 s" in line
               for line in trial.summary_lines(m, 10))
    again = trial.Measurement.from_dict(m.to_dict())
    assert again == m


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
    ({"state": "running", "warmup": {"step": 3, "steps": 40, "finished": False}}, False, 0,
     "the format warm-up: supervised step 3 of 40 (once, before RLOO)"),
    ({"state": "running"}, True, 0, "first step: warm-up, timed apart"),
    ({"state": "running"}, True, 1, "step 2 of 2: timed"),
])
def test_the_progress_names_the_stage_the_trial_folder_shows(tmp_path, status, trainer_built, step, said):
    if trainer_built:
        runs.write_json_atomic(tmp_path / runs.TRAINER_ARGS_FILE, {"args": {}})
    view = RunView(run_id="t", path=tmp_path, state=status["state"], status={**status, "step": step})
    assert trial._stage(view, 2, 1) == said
    assert trial.Progress(said, 12.4, 40.0).words() == f"{said} (12 s)… 40 s in all"


def test_the_range_says_when_the_trials_completions_were_shorter_than_the_limit():
    """The range's upper end was measured with every completion at the token limit: a trial whose longest completion
    was 60 tokens of 256 says the run can take longer if the answers grow (it said "the steps suggested fit the time")."""
    short = _measured()
    short.longest_completion, short.max_completion_length = 60.0, 256
    assert any("at most 60 tokens of the 256 allowed" in line for line in trial.summary_lines(short))
    full = _measured()
    full.longest_completion, full.max_completion_length = 256.0, 256
    assert not any("tokens of the" in line for line in trial.summary_lines(full))


def test_a_run_for_epochs_trains_whole_generation_batches_as_trl_counts_them():
    """50 rows at 16 prompts a step for 3 epochs: TRL's sampler draws 3 whole batches an epoch, 9 steps; the trial said
    10 (150 / 16 rounded up), and 4 for a 20-row file that trains 3."""
    cfg = RunConfig.from_dict({"rloo": {"max_steps": -1, "num_train_epochs": 3}})
    plan = BatchPlan(per_device=32, accumulation=1, processes=1, num_generations=2, steps_per_generation=1, num_iterations=1)
    assert trial.run_steps(cfg, plan, 50) == 9 and trial.run_steps(cfg, plan, 20) == 3


def test_the_trials_peak_memory_counts_the_processes_the_worker_started():
    """With --num-processes the trial's worker is the launcher and the ranks are its children: the trial read the
    launcher's own peak memory, a few dozen MB, as what the run needs (an audit). A parent that starts a child holding
    about 300 MB: the peak counts the child's."""
    import sys
    import time

    from rloo_studio.procs import Child, kill_tree

    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; b = bytearray(300 * 1024 * 1024); "
            "b[::4096] = b\"x\" * len(b[::4096]); print(\"held\", flush=True); time.sleep(60)'])\n"
            "time.sleep(60)\n")
    parent = Child([sys.executable, "-c", code])
    try:
        deadline, peak = time.time() + 30, None
        while time.time() < deadline and (peak or 0.0) < 0.28:
            peak = trial._peak_rss_gib(parent.pid)
            time.sleep(0.2)
        assert peak is not None and peak >= 0.28, peak
    finally:
        kill_tree(parent.pid)

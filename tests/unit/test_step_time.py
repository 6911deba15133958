"""The step-time breakdown as people read it: the Train tab's bar, `rloo-studio runs --show`, the time trial's line.

The numbers come from metrics.jsonl records written here by hand (what the training worker writes is checked in
tests/engine/test_step_time.py)."""

from __future__ import annotations

import json
import re

import pytest
from helpers import cli_in_process

from rloo_studio import runs
from rloo_studio.runs import step_time
from rloo_studio.workers import trial
from rloo_studio.config import RunConfig
from rloo_studio.workers.jobs import RunView
from rloo_studio.ui import run_view
from rloo_studio.ui.train_tab import TrainTab


def _record(step: int, generation: float, optimizer: float, other: float = 0.5, rewards: float = 0.25,
            logprobs: float = 1.25, tokens_per_s: float = 60.0) -> dict:
    parts = {"generation": generation, "rewards": rewards, "logprobs": logprobs, "optimizer": optimizer, "other": other}
    return {"step": step, "time": 1000.0 + 10 * step, "reward": 0.5, **{f"time/{k}": v for k, v in parts.items()},
            "time/step": sum(parts.values()), "tokens_per_s": tokens_per_s}


def test_the_breakdown_is_the_mean_over_the_records_and_reads_as_seconds_and_shares():
    records = [{"step": 1, "reward": 0.1}, _record(2, 6.0, 4.0), _record(3, 10.0, 8.0, tokens_per_s=40.0)]
    mean = step_time.mean_breakdown(records)
    assert mean["time/generation"] == 8.0 and mean["time/optimizer"] == 6.0 and mean["time/step"] == 16.0
    assert mean["tokens_per_s"] == 50.0 and mean["steps"] == 2  # the record without the keys (an older run's) is left out
    line = step_time.breakdown_line(mean)
    assert line == ("of the 16.0 s per step: 8.0 s generation (50 %), 6.0 s forward + backward + optimizer (38 %), "
                    "1.2 s log-prob passes (8 %), 0.5 s other (3 %), 0.2 s reward scoring (2 %); 50 tokens/s generated")
    # The time trial states its own measured step time; the parts are scaled to it as shares of the same steps.
    assert step_time.breakdown_line(mean, 32.0).startswith("of the 32.0 s per step: 16.0 s generation (50 %)")
    assert step_time.mean_breakdown([{"step": 1, "reward": 0.1}]) is None and step_time.breakdown_line(None) == ""


def test_the_train_tab_shows_a_stacked_bar_of_the_last_steps(tmp_path):
    records = [_record(s, 100.0, 1.0) for s in range(1, 4)] + [_record(s, 6.0, 4.0) for s in range(4, 9)]
    view = RunView("r", tmp_path, "running", {"step": 8, "max_steps": 10}, metrics=records)
    shown = run_view.step_time_html(view)
    # The mean of the last 5 logged steps: the slow first steps are out of it.
    assert "mean of the last 5 logged steps" in shown and "of the 12.0 s per step: 6.0 s generation (50 %)" in shown
    widths = dict(re.findall(r'data-part="(\w+)"[^>]*width:([\d.]+)%', shown))
    assert widths == {"generation": "50.0", "rewards": "2.1", "logprobs": "10.4", "optimizer": "33.3", "other": "4.2"}
    # The live view sends it with the progress bar, on every poll.
    assert shown in TrainTab.render(view)[1]
    older = RunView("r", tmp_path, "running", {"step": 1}, metrics=[{"step": 1, "reward": 0.1}])
    assert run_view.step_time_html(older) == "" and run_view.step_time_html(None) == ""


def test_runs_show_prints_where_the_steps_time_goes(tmp_path):
    run_dir = tmp_path / "runs" / "20261203-demo"
    run_dir.mkdir(parents=True)
    runs.update_status(run_dir, state="finished", step=3, max_steps=3, model="demo", started_at=1000.0)
    for record in (_record(1, 6.0, 4.0), _record(2, 6.0, 4.0), _record(3, 9.0, 4.0)):
        runs.append_jsonl(run_dir / runs.METRICS_FILE, record)
    result = cli_in_process("runs", "--show", "20261203-demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "run 20261203-demo: finished, step 3/3, last reward 0.500, model demo"
    assert lines[1] == ("step time, mean of the last 3 logged steps: of the 13.0 s per step: 7.0 s generation (54 %), "
                        "4.0 s forward + backward + optimizer (31 %), 1.2 s log-prob passes (10 %), 0.5 s other (4 %), "
                        "0.2 s reward scoring (2 %); 60 tokens/s generated")
    assert lines[2].split() == ["generation", "7.00", "s", "53.8", "%"]
    as_json = json.loads(cli_in_process("runs", "--show", str(run_dir), "--json", cwd=tmp_path).stdout)
    assert as_json["step_time"]["time/generation"] == 7.0 and as_json["state"] == "finished"
    missing = cli_in_process("runs", "--show", "nope", cwd=tmp_path)
    assert missing.returncode == 2 and "no run 'nope'" in missing.stderr and "rloo-studio runs" in missing.stderr


def test_the_time_trial_says_where_the_timed_steps_time_goes(tmp_path):
    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "rloo": {"max_steps": 10}})
    # The warm-up step (loading, first-call costs) is not the run's: only the timed step's parts count.
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, _record(1, 50.0, 4.0))
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, _record(2, 8.0, 6.0))
    m = trial._measurement(cfg, cfg.batch_plan(), tmp_path, 2, 1, 1000.0, None, None)
    assert m.step_time["time/generation"] == 8.0
    assert m.seconds_per_step == pytest.approx(10.0)  # from the records' time stamps, as before
    assert ("of the 10.0 s per step: 5.0 s generation (50 %), 3.8 s forward + backward + optimizer (38 %), "
            "0.8 s log-prob passes (8 %), 0.3 s other (3 %), 0.2 s reward scoring (2 %); 60 tokens/s generated") \
        in trial.summary_lines(m)


def test_the_step_timer_counts_each_second_once_in_the_part_that_spent_it():
    """engine/step_timer.py with a stand-in trainer and clock: nested calls are taken out of the call around them."""
    from types import SimpleNamespace

    from rloo_studio.engine.step_timer import StepTimer

    now = [0.0]
    grad = [True]
    fake_torch = SimpleNamespace(is_grad_enabled=lambda: grad[0])

    class Trainer:  # the call structure of TRL's RLOOTrainer, each method taking a known time of its own
        def training_step(self):
            now[0] += 1.0                     # optimizer: the forward/backward around the rest
            self._generate_and_score_completions()
            self._get_per_token_logps_and_entropies()  # with gradients: the training forward
            return "loss"

        def _generate_and_score_completions(self):
            now[0] += 0.5                     # other: batching, advantages
            self._generate()
            grad[0] = False
            self._get_per_token_logps_and_entropies()  # no grad: a log-prob pass
            grad[0] = True
            self._calculate_rewards()

        def _generate(self):
            now[0] += 4.0
            return ([[1, 2]] * 2, [[5, 6, 7], [8]], ["a", "b"])  # 4 completion tokens

        def _get_per_token_logps_and_entropies(self):
            now[0] += 2.0

        def _calculate_rewards(self):
            now[0] += 0.25

    trainer = Trainer()
    timer = StepTimer(trainer, fake_torch, clock=lambda: now[0])
    timer.start()
    for _ in range(2):  # two steps before one log (logging_steps 2): the means per step
        trainer.training_step()
        now[0] += 0.75                        # outside every timed call: status writing, logging
        timer.step_ended()
    got = timer.take()
    assert got == {"time/generation": 4.0, "time/rewards": 0.25, "time/logprobs": 2.0, "time/optimizer": 3.0,
                   "time/other": 1.25, "time/step": 10.5, "tokens_per_s": 1.0}
    assert timer.take() == {}  # nothing since the last log


def test_the_eta_leaves_the_first_steps_one_time_costs_out():
    """The Train tab's ETA divided the time since the callback was made (before the trainer was even built) by the
    steps done: loading and the first step's compiling were spread over every step left (100 steps of 5 s after 40 s
    of one-time cost read 13.5 min at step 10, for 7.5). Its rule's doctests, and the cases around them."""
    import doctest

    assert doctest.testmod(step_time).failed == 0
    assert step_time.eta_seconds((20, 0.0), None, 20, 100, 5.0) is None  # resumed at 20: no step of its own yet
    assert step_time.eta_seconds((20, 0.0), (21, 45.0), 30, 30, 90.0) == 0.0  # the last step


def test_the_live_breakdown_covers_whole_generation_cycles(tmp_path):
    """With num_iterations 2 a step that generates alternates with one that reuses its completions: the mean of the
    last 5 logged steps held three generations, then two, and the bar's generation share jumped at every step (an
    audit). The window ends where a cycle ends and holds whole cycles, as the run's trainer plans them."""
    runs.write_json_atomic(tmp_path / runs.TRAINER_ARGS_FILE, {"args": {
        "per_device_train_batch_size": 4, "num_generations": 4, "gradient_accumulation_steps": 1, "num_iterations": 2,
        "world_size": 1}})
    said = set()
    for last in range(6, 13):  # the cycle's first step generates (odd steps), its second reuses the completions
        records = [_record(s, 8.0 if s % 2 else 0.0, 4.0) for s in range(1, last + 1)]
        view = RunView("r", tmp_path, "running", {"step": last, "max_steps": 20}, metrics=records)
        said.add(re.search(r"s per step: [^;]*", run_view.step_time_html(view)).group(0))
    assert said == {"s per step: 4.0 s generation (40 %), 4.0 s forward + backward + optimizer (40 %), 1.2 s log-prob "
                    "passes (12 %), 0.5 s other (5 %), 0.2 s reward scoring (2 %)"}, said

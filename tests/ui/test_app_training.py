"""Training from the app, through its named endpoints: start, live status, one run at a time, stop and
resume, a browser reload and an app restart re-attaching, a killed worker shown as failed.

Real training workers (the bundled demo model, a few small steps) run as child processes.
"""

from __future__ import annotations

import os
import signal

import pytest

from helpers.app import Form, connect, only_run, run_state, served_app, wait_for
from helpers import assert_trained_with
from rloo_studio import runs
from rloo_studio.workers import trial
from rloo_studio.ui import text

pytestmark = pytest.mark.slow

USER_CODE = '''
def brief_answer(completions, **kwargs):
    """1.0 when the text after </think> has at most 3 characters."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if len(t.split("</think>")[-1].strip()) <= 3 else 0.0 for t in texts]
'''


def status_text(client) -> str:
    return client.predict(api_name="/run_status")[0]


def test_start_train_to_the_end_with_a_user_reward_and_see_it_in_runs(runs_dir):
    with served_app(runs_dir) as url:
        client = connect(url)
        form = Form(client).fast_demo(steps=3)
        form[text.CODE] = USER_CODE
        form[text.USER_TABLE] = {"headers": ["use", "function", "weight"], "data": [[True, "brief_answer", 0.5]]}
        problems, command, config_text = form.call("/start_training")
        assert problems == ""
        run_dir = only_run(runs_dir)
        assert command == f"rloo-studio train {run_dir / 'config.yaml'}"
        assert "file: rewards.py" in config_text and "function: brief_answer" in config_text
        assert (run_dir / "rewards.py").read_text() == USER_CODE  # the editor's code, unchanged

        wait_for(lambda: run_state(run_dir) == "finished", what="the run to finish")
        status, progress, reward_plot, length_plot, samples, log = client.predict(api_name="/run_status")
        assert f"`{run_dir.name}` — **finished**" in status and "Step 3/3" in status
        assert 'data-step="3"' in progress and "100%" in progress
        # A finished run's plot has data: one series for the total and one per reward function.
        plot = reward_plot["value"]  # an update: the data plus its y range and colours
        column = plot["columns"].index("series")
        series = {row[column] for row in plot["data"]}
        assert {"total (weighted)", "numeric_answer", "brief_answer"} <= series
        steps = {row[plot["columns"].index("step")] for row in plot["data"]}
        assert steps == {"1", "2", "3"} and reward_plot["sort"] == ["1", "2", "3"]  # whole steps on the axis, in order
        assert set(reward_plot["color_map"]) == series  # one colour per series
        metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
        assert [m["step"] for m in metrics] == [1, 2, 3]
        assert all("rewards/brief_answer/mean" in m for m in metrics)
        assert samples["data"] and samples["data"][0][0] == 3  # newest first
        assert "brief_answer=" in samples["data"][0][4]
        assert (run_dir / "model").is_dir()  # full fine-tuning of the demo writes the whole model
        assert_trained_with(run_dir)  # the page's runs train with Unsloth, as the CLI's do
        table, _picker = client.predict(api_name="/list_runs")
        assert table["data"][0][:3] == [run_dir.name, "finished", "3/3"]
        detail_status, _plot, detail_config, detail_log = client.predict(run_dir.name, api_name="/open_run")
        assert "**finished**" in detail_status and "brief_answer" in detail_config and "[rloo-studio]" in detail_log


def test_one_run_at_a_time_stop_resume_and_reload(runs_dir):
    with served_app(runs_dir) as url:
        client = connect(url)
        form = Form(client).fast_demo(steps=40)
        assert form.call("/start_training")[0] == ""
        run_dir = only_run(runs_dir)
        wait_for(lambda: runs.read_status(run_dir).get("step", 0) >= 2, what="two steps")

        second = Form(connect(url)).fast_demo(steps=3)
        refused = second.call("/start_training")[0]
        assert f"run {run_dir.name} is still training" in refused and "one run trains at a time" in refused
        assert only_run(runs_dir) == run_dir

        # A reload is a new session: it finds the running run by itself.
        reloaded = connect(url)
        Form(reloaded)
        assert f"`{run_dir.name}` — **training**" in status_text(reloaded)

        assert "stopping" in client.predict(api_name="/stop_training")
        wait_for(lambda: run_state(run_dir) == "stopped", what="the run to stop")
        stopped_at = runs.read_status(run_dir)["step"]
        assert stopped_at < 40 and runs.last_checkpoint(run_dir)[0] == stopped_at
        assert "press Resume" in status_text(client)

        message = client.predict(api_name="/resume_training")
        assert message == f"Resuming `{run_dir.name}`."
        wait_for(lambda: runs.read_status(run_dir).get("step", 0) >= stopped_at + 2, what="steps after the resume")
        client.predict(api_name="/stop_training")
        wait_for(lambda: run_state(run_dir) == "stopped", what="the second stop")
        steps = [m["step"] for m in runs.read_jsonl(run_dir / runs.METRICS_FILE)]
        assert steps == list(range(1, steps[-1] + 1))  # no step lost or logged twice across stop and resume


def test_a_restarted_app_finds_the_runs_and_a_killed_worker_shows_as_failed(runs_dir):
    # The worker started as the product starts it (not forked from the tests' warm starter): its own session is what
    # keeps it training when the app that started it is gone.
    with served_app(runs_dir, own_children=True) as url:
        form = Form(connect(url)).fast_demo(steps=60)
        assert form.call("/start_training")[0] == ""
        run_dir = only_run(runs_dir)
        wait_for(lambda: runs.read_status(run_dir).get("step", 0) >= 1, what="the first step")
    # The app is gone; the worker trains on (it runs in its own session).
    assert run_state(run_dir) == "running"
    with served_app(runs_dir) as url:
        client = connect(url)
        Form(client)
        assert f"`{run_dir.name}` — **training**" in status_text(client)
        table, _picker = client.predict(api_name="/list_runs")
        assert table["data"][0][:2] == [run_dir.name, "running"]

        os.kill(runs.read_status(run_dir)["pid"], signal.SIGKILL)
        wait_for(lambda: "ended unexpectedly" in status_text(client), what="the killed worker to be noticed")
        assert run_state(run_dir) == "interrupted"
        status, *_, log = client.predict(api_name="/run_status")
        assert "**failed — the training process ended unexpectedly" in status and "Resume continues from the last checkpoint" in status
        # The log tail is shown: the run's own train.log, as the page tidies it (its last line included).
        from rloo_studio.ui.run_view import readable_log

        written = readable_log((run_dir / runs.LOG_FILE).read_text(encoding="utf-8", errors="replace")).splitlines()
        assert written and log.splitlines()[-1] == written[-1]
        table, _picker = client.predict(api_name="/list_runs")
        assert table["data"][0][:2] == [run_dir.name, "interrupted"]


def test_estimate_time_measures_a_trial_and_is_refused_while_a_run_trains(runs_dir):
    with served_app(runs_dir) as url:
        client = connect(url)
        form = Form(client).fast_demo(steps=30)
        measured = form.call("/estimate_time")
        # The plan for the default 30 minutes first, then loading, the step and the warm-up step, each measured apart.
        assert measured.startswith(f"**For {trial.DEFAULT_MINUTES} minutes, use ") and "; as set now, about " in measured
        assert "for 30 steps.**" in measured and "\n\nMeasured: loading took " in measured
        assert " s (generation + update, the next step); the first step took " in measured
        # The demo's 2000 training rows, counted although the Data tab was never shown: 30 steps x 2 new prompts.
        assert "30 steps × 2 new prompts per step ÷ 2000 training rows = 0.03 epochs (3 % of the prompts seen once)" in measured
        assert not [p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists()]  # the trial is not one of the person's runs

        form["Training steps"] = 3
        assert form.call("/start_training")[0] == ""
        refused = form.call("/estimate_time")
        run_dir = only_run(runs_dir)
        assert refused.startswith("**Could not measure:**") and f"`{run_dir.name}` is training" in refused
        wait_for(lambda: run_state(run_dir) in ("finished", "failed"), what="the run to end")
        assert run_state(run_dir) == "finished"

"""Every state the page shows is re-read from the run folder on each poll; messages about a state end with it."""

from __future__ import annotations

import json
import os

import gradio as gr

from rloo_studio import runs
from rloo_studio.ui.app import banner_update
from rloo_studio.ui.runs_tab import RunsTab
from rloo_studio.ui.train_tab import TrainTab


def _run(runs_dir, **status):
    run_dir = runs.create_run_dir(runs_dir, "mine")
    (run_dir / runs.CONFIG_FILE).write_text("model: {name_or_path: demo}\n")
    runs.update_status(run_dir, started_at=1.0, **status)
    return run_dir


def test_the_runs_detail_follows_the_list_on_every_poll(tmp_path):
    runs_dir = tmp_path / "runs"
    run_dir = _run(runs_dir, state="running", pid=os.getpid(), step=11, max_steps=150)
    with gr.Blocks():
        tab = RunsTab(runs_dir)
    table, picker, status, *_rest, shown = tab.poll(None, None)
    assert table[0][1] == "running" and picker["value"] == run_dir.name
    assert "**training**" in status and "Step 11/150" in status
    assert tab.poll(run_dir.name, shown)[:6] == [gr.skip()] * 6  # nothing changed: nothing sent
    runs.update_status(run_dir, state="finished", step=150)
    table, picker, status, *_rest, shown = tab.poll(run_dir.name, shown)
    assert table[0][1] == "finished" and "**finished**" in status and "Step 150/150" in status and "training" not in status


def test_a_stop_message_lasts_while_the_state_it_speaks_of_lasts(tmp_path):
    run_dir = _run(tmp_path / "runs", state="running", pid=os.getpid(), step=3, max_steps=40)
    notice = TrainTab.lasting("Stopping after the current step…", str(run_dir))
    assert TrainTab.notice_now(notice) == [gr.skip(), notice]
    status = json.loads((run_dir / runs.STATUS_FILE).read_text())
    (run_dir / runs.STATUS_FILE).write_text(json.dumps({**status, "state": "stopped"}))
    assert TrainTab.notice_now(notice) == ["", {}]


def test_a_stop_message_ends_even_when_the_run_stopped_before_the_page_read_its_state(tmp_path, monkeypatch):
    """On a busy machine the worker can finish its step and write `stopped` between the stop request and the page's
    read of the state: the notice then took `stopped` as the state it speaks of and stayed for good (seen in CI)."""
    from rloo_studio.workers import jobs

    run_dir = _run(tmp_path / "runs", state="running", pid=os.getpid(), step=3, max_steps=40)
    real_stop = jobs.stop_run

    def stop_and_the_worker_finishes(folder):
        message = real_stop(folder)
        runs.update_status(folder, state="stopped", pid=None)
        return message

    monkeypatch.setattr(jobs, "stop_run", stop_and_the_worker_finishes)
    message, notice = TrainTab.stop_notice(str(run_dir))
    assert message.startswith("stopping")
    assert TrainTab.notice_now(notice) == ["", {}]


def test_a_refused_stop_says_so_until_the_run_changes(tmp_path):
    run_dir = _run(tmp_path / "runs", state="finished", step=40, max_steps=40)
    message, notice = TrainTab.stop_notice(str(run_dir))
    assert "nothing to stop" in message and TrainTab.notice_now(notice) == [gr.skip(), notice]


def test_the_runs_tab_sends_again_only_the_parts_whose_files_changed(tmp_path):
    """The tab is polled every 2 s while a run trains, whichever tab the person is on: each part re-sent without a change
    costs the browser a redraw (the config's code view and the plot every step, before)."""
    runs_dir = tmp_path / "runs"
    run_dir = _run(runs_dir, state="running", pid=os.getpid(), step=3, max_steps=40)
    with gr.Blocks():
        tab = RunsTab(runs_dir)
    *parts, shown = tab.poll(None, None)
    assert gr.skip() not in parts  # the first poll sends everything

    # A training step: status, metrics and log change; the run's config and the list of runs do not.
    runs.update_status(run_dir, step=4)
    with (run_dir / runs.METRICS_FILE).open("a") as f:
        f.write(json.dumps({"step": 4, "reward": 0.75}) + "\n")
    table, picker, status, plot, config, log, shown = tab.poll(run_dir.name, shown)
    assert (picker, config, log) == (gr.skip(),) * 3
    assert table[0][2] == "4/40" and "Step 4/40" in status and plot != gr.skip()

    # A log line alone.
    with (run_dir / runs.LOG_FILE).open("a") as f:
        f.write("[rloo-studio] step 4 done\n")
    table, picker, status, plot, config, log, shown = tab.poll(run_dir.name, shown)
    assert (table, picker, status, plot, config) == (gr.skip(),) * 5 and "step 4 done" in log

    # Another run appears: the list and the menu; the open run's detail stays as it is.
    other = runs.create_run_dir(runs_dir, "other")
    (other / runs.CONFIG_FILE).write_text("model: {name_or_path: other-model}\n")
    runs.update_status(other, state="finished", step=2, max_steps=2, started_at=2.0)
    table, picker, *detail, shown = tab.poll(run_dir.name, shown)
    assert len(table) == 2 and other.name in picker["choices"] and detail == [gr.skip()] * 4

    # Opening the other run: its whole detail, and the list stays.
    table, picker, status, plot, config, log, shown = tab.poll(other.name, shown)
    assert table == gr.skip() and "other-model" in config and "**finished**" in status
    assert tab.poll(other.name, shown)[:6] == [gr.skip()] * 6


def test_the_banner_is_sent_when_its_line_changes_and_not_again_while_the_page_shows_it(tmp_path):
    runs_dir = tmp_path / "runs"
    assert banner_update(runs_dir, None) == (gr.update(visible=False), "", gr.skip())  # on load: hidden
    assert banner_update(runs_dir, None, "") == (gr.skip(),) * 3  # hidden already
    run_dir = _run(runs_dir, state="running", pid=os.getpid(), step=3, max_steps=40)
    row, line, watched = banner_update(runs_dir, None, "")
    assert row == gr.update(visible=True) and f"`{run_dir.name}` is training** — step 3/40" in line
    assert watched == str(run_dir)  # the Train tab follows the run that trains
    assert banner_update(runs_dir, str(run_dir), line) == (gr.skip(),) * 3
    runs.update_status(run_dir, step=4)
    row, line, watched = banner_update(runs_dir, str(run_dir), line)
    assert row == gr.update(visible=True) and "step 4/40" in line and watched == gr.skip()
    runs.update_status(run_dir, state="finished", step=40)
    assert banner_update(runs_dir, str(run_dir), line) == (gr.update(visible=False), "", gr.skip())

"""Every state the page shows is re-read from the run folder on each poll; messages about a state end with it."""

from __future__ import annotations

import json
import os

import gradio as gr

from rloo_studio import runs
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

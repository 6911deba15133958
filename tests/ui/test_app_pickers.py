"""The run and checkpoint pickers of Chat, Evaluate and Export are derived from the run folder.

The checkpoint a picker shows is `final` once the run has saved it (else the newest checkpoint),
unless the person picked one by hand; a result made from a non-final checkpoint says so.
"""

from __future__ import annotations

import json
import shutil

import gradio as gr
import pytest
from helpers.app import connect, served_app

from rloo_studio.ui.pickers import RunPicker, not_final_note

RUN_ID = "20260101-000000-pick"


def fake_weights(folder):
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    (folder / "adapter_model.safetensors").write_text("x")
    (folder / "trainer_state.json").write_text("{}")


def test_the_picker_follows_the_run_folder_not_the_widget(tmp_path):
    run = tmp_path / "runs" / RUN_ID
    run.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"state": "stopped", "step": 10, "max_steps": 20}))
    fake_weights(run / "checkpoints" / "checkpoint-5")
    fake_weights(run / "checkpoints" / "checkpoint-10")
    with gr.Blocks():
        picker = RunPicker(tmp_path / "runs", "t", extra="all checkpoints")
    # While training: the newest checkpoint; a second one becomes the default as soon as it is saved.
    assert picker.resolve(None, {}) == ([RUN_ID], RUN_ID, ["checkpoint-10", "all checkpoints", "checkpoint-5"], "checkpoint-10")
    run_update, ckpt_update, shown = picker.updates(RUN_ID, {}, None, force=False)
    assert ckpt_update["value"] == "checkpoint-10"
    # Nothing changed: the poll sends nothing (an open dropdown is not disturbed).
    skipped = picker.updates(RUN_ID, {}, shown, force=False)
    assert skipped[0] == gr.skip() and skipped[1] == gr.skip()
    # The run finishes and saves its final weights: the default becomes `final`, though the widget showed checkpoint-10.
    fake_weights(run / "adapter")
    (run / "status.json").write_text(json.dumps({"state": "finished", "step": 20, "max_steps": 20}))
    run_update, ckpt_update, _ = picker.updates(RUN_ID, {}, shown, force=False)
    assert ckpt_update["value"] == "final"
    # A checkpoint the person picked by hand stays picked while it exists ...
    assert picker.resolve(RUN_ID, {"run": RUN_ID, "checkpoint": "checkpoint-5"})[3] == "checkpoint-5"
    # ... and is dropped when it is gone, or when it belonged to another run.
    shutil.rmtree(run / "checkpoints" / "checkpoint-5")
    assert picker.resolve(RUN_ID, {"run": RUN_ID, "checkpoint": "checkpoint-5"})[3] == "final"
    assert picker.resolve(RUN_ID, {"run": "other", "checkpoint": "checkpoint-10"})[3] == "final"


def test_a_stopped_runs_final_weights_say_they_are_the_stop_steps(tmp_path):
    """A stopped run saves `final` weights too: the newest, but not the end of training, and results say so."""
    run = tmp_path / RUN_ID
    run.mkdir()
    fake_weights(run / "adapter")
    (run / "status.json").write_text(json.dumps({"state": "stopped", "step": 8, "max_steps": 20}))
    assert not_final_note(run, "final") == ("final: the weights saved when the run was stopped at step 8 of 20, "
                                             "not the end of training")
    (run / "status.json").write_text(json.dumps({"state": "finished", "step": 20, "max_steps": 20}))
    assert not_final_note(run, "final") == ""


@pytest.mark.slow
def test_an_export_of_a_checkpoint_says_it_is_not_the_final_weights(tmp_path, adapter_run):
    runs_dir = tmp_path / "runs"
    adapter_run(runs_dir / RUN_ID)
    with served_app(runs_dir) as url:
        client = connect(url)
        run_update, ckpt_update, _existing = client.predict(None, api_name="/export_runs")
        assert run_update["value"] == RUN_ID and ckpt_update["value"] == "final"
        result, _ = client.predict(RUN_ID, "checkpoint-1", "adapter", "", api_name="/export")
        assert "**Exported checkpoint-1, not the final weights** as `adapter`" in result
        result, _ = client.predict(RUN_ID, "final", "adapter", "", api_name="/export")
        assert "not the final" not in result and "Exported `adapter`" in result

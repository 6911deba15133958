"""A run named by the page is looked up inside the runs folder only: nothing outside it is read, resumed or deleted,
whatever name a request carries (the page's menus are not the check)."""

from __future__ import annotations

import os

import gradio as gr
import pytest

from rloo_studio import runs


def _run(root, name):
    folder = root / name
    folder.mkdir(parents=True)
    runs.update_status(folder, state="finished", step=1, max_steps=1)
    return folder


def test_only_a_plain_name_directly_inside_the_runs_folder_is_a_run(tmp_path):
    root = tmp_path / "runs"
    mine = _run(root, "20261203-070000-mine")
    victim = _run(tmp_path, "victim")
    assert runs.run_folder(root, mine.name) == mine.resolve()
    for name in ("../victim", str(victim), "..", ".", "", None, "a/b", "a\\b", "x\0y", "20261203-070000-nope"):
        assert runs.run_folder(root, name) is None, name


@pytest.mark.skipif(os.name != "posix", reason="symbolic links need privileges on Windows")
def test_a_link_in_the_runs_folder_that_leads_elsewhere_is_no_run(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    victim = _run(tmp_path, "victim")
    (root / "link").symlink_to(victim, target_is_directory=True)
    assert runs.run_folder(root, "link") is None


def test_delete_resume_and_detail_refuse_a_name_that_climbs_out_of_the_runs_folder(tmp_path):
    from rloo_studio.ui.runs_tab import RunsTab

    root = tmp_path / "runs"
    root.mkdir()
    victim = _run(tmp_path, "victim")
    with gr.Blocks():
        tab = RunsTab(root)
    message = tab.delete_run("../victim", True)
    assert victim.exists() and "nothing was deleted" in message, message
    assert tab.detail("../victim")[0] == "Pick a run above."
    assert tab.alerts_of("../victim") == ""
    assert "No run named `../victim`" in tab.compare(["../victim", "../victim"], "reward")[0]


def test_chat_and_evaluate_neither_read_nor_write_a_run_outside_the_runs_folder(tmp_path):
    from rloo_studio.ui.chat_tab import ChatTab, new_session
    from rloo_studio.ui.eval_tab import EvalTab

    root = tmp_path / "runs"
    root.mkdir()
    victim = _run(tmp_path, "victim")
    (victim / "config.yaml").write_text("model: {name_or_path: demo}\n")
    (victim / "eval.json").write_text('{"n_prompts": 1}')
    with gr.Blocks():
        chat, evaluate = ChatTab(root, worker=None), EvalTab(root, worker=None)
    assert "Pick a run" in chat._problem("../victim", "final") or "no longer in" in chat._problem("../victim", "final")
    assert chat.pick_run("../victim", False)[0]["choices"] == []
    assert evaluate._report("../victim") is None
    session = {**new_session(True), "voted": False, "last": "hi", "base": [{"role": "assistant", "content": "a"}],
               "tuned": [{"role": "assistant", "content": "b"}]}
    chat.vote("../victim", "final", session, "a")
    assert not (victim / "preferences.jsonl").exists()

"""The built page, looked at without serving it: no table opens with Gradio's numbered placeholder headers ("1 2 3"),
which read as data; the held-out file can be uploaded like the training file, not only typed as a path; the preset's
note follows the model chosen after it."""

from __future__ import annotations

import gradio as gr
import pytest

from rloo_studio.ui import text
from rloo_studio.ui.app import build_app
from rloo_studio.ui.data_tab import held_out_upload

PLACEHOLDER = ["1", "2", "3"]  # Gradio's headers for a table given none


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    built = build_app(tmp_path_factory.mktemp("page") / "runs", detect_hardware=False)
    yield built
    built.inference_worker.shutdown()


def test_no_table_opens_with_numbered_headers(demo):
    tables = [block for block in demo.blocks.values() if isinstance(block, gr.Dataframe)]
    numbered = [t.elem_id or t.label for t in tables if (t.value or {}).get("headers") == PLACEHOLDER]
    assert tables and not numbered, f"tables that open with headers 1 2 3: {numbered}"


def test_the_held_out_file_can_be_uploaded(demo, tmp_path):
    """The Data tab's held-out box took only a typed path: an upload beside it stores the file as the training
    file's is stored and fills in its path (the fraction goes to 0: the file is what is held out)."""
    uploads = {b.elem_id: b for b in demo.blocks.values() if isinstance(b, gr.File)}
    assert "data-test-upload" in uploads and uploads["data-test-upload"].label == text.TEST_UPLOAD
    sent = tmp_path / "gradio-temp" / "held out.csv"
    sent.parent.mkdir()
    sent.write_text("question,order_id\nWhere is my order?,A-1\n")
    path, fraction = held_out_upload(str(sent), tmp_path / "uploads")
    assert path == str((tmp_path / "uploads" / "held_out.csv").resolve()) and fraction == 0.0
    assert (tmp_path / "uploads" / "held_out.csv").read_text() == sent.read_text()
    assert held_out_upload(None, tmp_path / "uploads") == (gr.skip(), gr.skip())


def test_the_preset_note_follows_the_model_chosen_after_it(demo):
    ids = {block_id: getattr(block, "elem_id", None) for block_id, block in demo.blocks.items()}
    # Through the form's one change event (ui/derived.py): it reads the note and the model field and writes the note.
    found = [d for d in demo.config["dependencies"]
             if {"preset-notes", "model-name"} <= {ids.get(i) for i in d["inputs"]} and "preset-notes" in [ids.get(o) for o in d["outputs"]]]
    assert found, "no event rewrites the preset's note when the model changes"

"""An empty table shows what it will hold: no table of the built page opens with Gradio's numbered placeholder
headers ("1 2 3"), which read as data."""

from __future__ import annotations

import gradio as gr

from rloo_studio.ui.app import build_app

PLACEHOLDER = ["1", "2", "3"]  # Gradio's headers for a table given none


def test_no_table_opens_with_numbered_headers(tmp_path):
    demo = build_app(tmp_path / "runs", detect_hardware=False)
    try:
        tables = [block for block in demo.blocks.values() if isinstance(block, gr.Dataframe)]
        numbered = [t.elem_id or t.label for t in tables if (t.value or {}).get("headers") == PLACEHOLDER]
        assert tables and not numbered, f"tables that open with headers 1 2 3: {numbered}"
    finally:
        demo.inference_worker.shutdown()

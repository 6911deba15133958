"""The Export tab offers a format the picked run can give: a run that trained the whole model has no LoRA adapter, so
the preselected *adapter* becomes *merged*. Found walking the app: the default failed for a full fine-tuning run."""

from __future__ import annotations

import gradio as gr

from rloo_studio import runs
from rloo_studio.config import RunConfig
from rloo_studio.ui.export_tab import format_for


def _run(tmp_path, name: str, lora) -> object:
    folder = tmp_path / name
    folder.mkdir()
    RunConfig.from_dict({"lora": lora} if lora is not None else {}).save(folder / runs.CONFIG_FILE)
    return folder


def test_a_full_fine_tuning_run_is_offered_its_merged_model(tmp_path):
    assert format_for(_run(tmp_path, "whole", None), "adapter") == "merged"


def test_a_lora_run_and_a_chosen_format_are_left_as_they_are(tmp_path):
    assert isinstance(format_for(_run(tmp_path, "lora", {"r": 8}), "adapter"), type(gr.skip()))
    assert isinstance(format_for(_run(tmp_path, "whole", None), "gguf"), type(gr.skip()))
    assert isinstance(format_for(None, "adapter"), type(gr.skip()))

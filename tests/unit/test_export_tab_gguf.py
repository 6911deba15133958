"""The Export tab's account of a GGUF export: the Ollama step, the LM Studio note and what was checked."""

from __future__ import annotations

from rloo_studio.ui.export_tab import FORMATS, gguf_summary

RESULT = {"out": "/runs/r1/exports/gguf", "gguf": {
    "ollama_command": "ollama create r1-f16 -f Modelfile",
    "read_back": {"file": "m-rloo-f16.gguf", "tensor_count": 272, "eos_token_id": 2, "chat_template": "{% for m in messages %}"},
    "tokens": {"prompts": [{"same": True}, {"same": True}, {"same": False}]}}}


def test_the_gguf_choice_names_ollama_and_lm_studio():
    assert FORMATS["gguf"].startswith("GGUF for Ollama / LM Studio")
    assert "llama.cpp checkout" not in FORMATS["gguf"]  # no longer needed


def test_summary_shows_the_ollama_command_and_the_checks():
    text = gguf_summary(RESULT)
    assert "```\ncd /runs/r1/exports/gguf\nollama create r1-f16 -f Modelfile\n```" in text
    assert "**LM Studio** needs only the file `m-rloo-f16.gguf`" in text
    assert "read back (272 tensors, end token 2, chat template present)" in text
    assert "greedy tokens identical to the merged model on 2 of 3 prompts" in text


def test_summary_says_when_tokens_were_not_compared_and_is_empty_for_other_formats():
    skipped = {**RESULT, "gguf": {**RESULT["gguf"], "tokens": {"skipped": "the model has 8,000,000,000 parameters"}}}
    assert "tokens not compared (the model has 8,000,000,000 parameters)" in gguf_summary(skipped)
    assert gguf_summary({"out": "/runs/r1/exports/adapter", "files": []}) == ""

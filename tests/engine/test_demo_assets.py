"""The bundled demo model and data: present, small, loadable by transformers and by Unsloth, `demo` resolves."""

from __future__ import annotations

import json

import pytest
from helpers import ROOT, run_code

from rloo_studio.data import load_rows
from rloo_studio.engine.model import DEMO_MODEL_DIR, resolve_model_source
from rloo_studio.config import DataConfig


def test_demo_files_are_present_and_small():
    size = sum(p.stat().st_size for p in DEMO_MODEL_DIR.iterdir())
    assert (DEMO_MODEL_DIR / "model.safetensors").is_file()
    assert size < 6 * 1024 * 1024, f"demo model folder is {size / 1e6:.1f} MB"
    info = json.loads((DEMO_MODEL_DIR / "build_info.json").read_text())
    assert info["parameters"] < 2_000_000
    assert resolve_model_source("demo") == str(DEMO_MODEL_DIR)


def test_demo_data_resolves_with_train_and_test_splits():
    rows = load_rows(DataConfig(source="demo", test_split="test"))
    assert len(rows.train) == 2000 and len(rows.test) == 300
    assert set(rows.columns) == {"prompt", "answer", "kind"}
    assert not {r["prompt"] for r in rows.train} & {r["prompt"] for r in rows.test}


@pytest.mark.slow
@pytest.mark.parametrize("loader", ["transformers", "unsloth"])
def test_demo_model_loads_and_answers_in_the_think_format(loader):
    code = f"""
import json
if {loader!r} == "unsloth":
    import unsloth
    from unsloth import FastLanguageModel
    import torch
    model, tok = FastLanguageModel.from_pretrained({str(DEMO_MODEL_DIR)!r}, max_seq_length=256, dtype=torch.float32, load_in_4bit=False)
else:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained({str(DEMO_MODEL_DIR)!r})
    model = AutoModelForCausalLM.from_pretrained({str(DEMO_MODEL_DIR)!r})
ids = tok.apply_chat_template([{{"role": "user", "content": "Ana has 12 books and gets 30 more. How many now?"}}],
                              add_generation_prompt=True, return_tensors="pt", return_dict=True)
out = model.generate(**ids, max_new_tokens=20, do_sample=False, pad_token_id=tok.pad_token_id)
text = tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
print(json.dumps({{"text": text, "think_end": tok.convert_tokens_to_ids("</think>"), "len": len(tok.encode("</think>", add_special_tokens=False))}}))
"""
    result = run_code(code, stack="plain" if loader == "transformers" else "unsloth", timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    info = json.loads(result.stdout.strip().splitlines()[-1])
    assert info["len"] == 1, "</think> must be one token for the token-based thinking rewards"
    assert info["text"].startswith("<think>12+30</think>"), info["text"]

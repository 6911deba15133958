"""SmolLM2-135M-Instruct through the app's own entry points: prompt rendering and the memory estimator.

A real instruct model brings what the tiny test models do not: a chat template with role markers,
a 49k BPE vocabulary with special tokens, an end-of-turn token that ends answers. Anything that
imports transformers runs in a fresh process (this one must import Unsloth first if at all).
"""

from __future__ import annotations

import dataclasses
import json

from realtask import make_task_folder, run_cli, run_python

IM_START, IM_END = 1, 2  # token ids of <|im_start|> and <|im_end|> in SmolLM2's vocabulary


def test_prompts_are_rendered_with_the_chat_template_role_markers(real_model_dir):
    """What training, the preview and eval feed the model: the template's special role markers, as single tokens."""
    code = f"""
import json
from transformers import AutoTokenizer
from rloo_studio.config import DataConfig
from rloo_studio.data import to_trl_dataset
from rloo_studio.engine.generate import prompt_token_ids
tok = AutoTokenizer.from_pretrained({str(real_model_dir)!r})
rows = [{{"prompt": "What is 4 + 3?", "answer": "7"}}]
out = {{}}
for system in (None, "Answer briefly."):
    prompt = to_trl_dataset(rows, DataConfig(source="x.jsonl", system_prompt=system), tok)["prompt"][0]
    ids = prompt_token_ids([prompt], tok)[0]  # as TRL tokenises a training prompt
    out[str(system)] = {{"ids": ids, "text": tok.decode(ids)}}
print(json.dumps(out))
"""
    out = json.loads(run_python(code))
    for system, rendered in out.items():
        ids, text = rendered["ids"], rendered["text"]
        assert ids.count(IM_START) == 3 and ids.count(IM_END) == 2, text  # system, user; the assistant turn left open
        assert text.endswith("<|im_start|>assistant\n"), text
        assert "<|im_start|>user\nWhat is 4 + 3?<|im_end|>" in text
    assert "You are a helpful AI assistant named SmolLM" in out["None"]["text"]  # the template's own system prompt
    assert "<|im_start|>system\nAnswer briefly.<|im_end|>" in out["Answer briefly."]["text"]


def test_memory_estimator_reads_the_shapes_from_the_local_folder(tmp_path, real_model_dir):
    config = make_task_folder(tmp_path, real_model_dir)
    result = run_cli("estimate", config, "--gpu-gb", "8", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    est = json.loads(result.stdout)
    built = json.loads((real_model_dir / "build_info.json").read_text())
    # Its parameter count from config.json (vocab 49152, hidden 576, 30 layers, tied embeddings) matches the real model's.
    assert abs(est["params"] - built["parameters"]) / built["parameters"] < 0.001, (est["params"], built["parameters"])
    assert est["verdict"] == "fits"
    wider = json.loads(run_cli("estimate", config, "rloo.max_completion_length=512", "--gpu-gb", "8", "--json", cwd=tmp_path).stdout)
    assert wider["parts"]["logits (training)"] > est["parts"]["logits (training)"]
    # The preset names the hub id: offline, the built-in table must give the same shape as the folder.
    from rloo_studio.machine.vram import find_shape

    from_folder = find_shape(str(real_model_dir))
    from_table = find_shape("HuggingFaceTB/SmolLM2-135M-Instruct", allow_download=False)
    assert from_table is not None and dataclasses.replace(from_folder, name=from_table.name) == from_table

"""SmolLM2-135M-Instruct after training, through the app's own entry points: `rloo-studio eval`, the chat worker,
adapter and merged exports reloaded with plain transformers/PEFT; and a 4-bit LoRA step whose layers really are
bitsandbytes 4-bit modules.

Every generation here is greedy, so "the same" means the same token ids. The reference is always a fresh process
with plain transformers (+ PEFT): the run's base model and its adapter, loaded the way any user would.
"""

from __future__ import annotations

import json
import shutil

import pytest
from helpers.app import warm_children
from realtask import run_cli, run_python, task_folder

from rloo_studio import runs
from rloo_studio.protocol import Reply
from rloo_studio.workers.inference import InferenceWorker

MESSAGES = [{"role": "user", "content": "Describe a cat in one sentence."}]  # open-ended: many near choices
GREEDY = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 12, "seed": 0}
LORA_LAYERS = 30 * 7  # SmolLM2-135M: 30 layers x (q, k, v, o, gate, up, down)

_FRESH = '''
import json, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
model_dir, adapter_dir = sys.argv[1], sys.argv[2]
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
if adapter_dir != "-":
    from peft import PeftModel
    model = PeftModel.from_pretrained(model, adapter_dir)
model.eval()
text = tok.apply_chat_template(json.loads(sys.argv[3]), tokenize=False, add_generation_prompt=True)
enc = tok(text, return_tensors="pt", add_special_tokens=False)
out = model.generate(**enc, max_new_tokens=int(sys.argv[4]), do_sample=False, pad_token_id=tok.pad_token_id,
                     eos_token_id=tok.eos_token_id)
ids = out[0, enc["input_ids"].shape[1]:].tolist()
cut = next((i + 1 for i, t in enumerate(ids) if t == tok.eos_token_id), len(ids))
print(json.dumps({"ids": ids[:cut]}))
'''
_fresh_cache: dict[tuple, dict] = {}


def fresh(model_dir, adapter_dir=None) -> dict:
    """Greedy token ids for MESSAGES from a fresh process: plain transformers, plus PEFT when `adapter_dir`."""
    key = (str(model_dir), str(adapter_dir))
    if key not in _fresh_cache:
        _fresh_cache[key] = json.loads(run_python(_FRESH, model_dir, adapter_dir or "-", json.dumps(MESSAGES),
                                                  GREEDY["max_new_tokens"], timeout=900))
    return _fresh_cache[key]


def test_eval_answers_held_out_prompts_with_both_sides_and_their_budgets(real_run, tmp_path):
    run_dir, _ = real_run
    result = run_cli("eval", run_dir, "--limit", 2, "--base-max-new-tokens", 16, "--json", cwd=tmp_path, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["n_prompts"] == 2 and report["decoding"]["max_new_tokens"] == {"base": 16, "tuned": 8}
    assert [e["name"] for e in report["checkpoints"]] == [runs.FINAL]
    for row in report["per_prompt"]:
        for side in ("base", "final"):
            text = row["sides"][side]["completion"]
            assert text.strip() and "<|im_end|>" not in text and "<|im_start|>" not in text  # decoded, ended at its turn
    assert (run_dir / runs.EVAL_FILE).is_file()


def test_the_chat_worker_answers_as_a_fresh_base_and_a_fresh_base_plus_adapter(real_run, real_model_dir, tmp_path):
    run_dir, _ = real_run
    worker = InferenceWorker(log_path=tmp_path / "inference.log")
    try:
        with warm_children():  # the worker forked from the tests' warm starter: its imports done before the fork
            events = list(worker.chat(run_dir, runs.FINAL, MESSAGES, GREEDY))
    finally:
        worker.shutdown()
    replies = {e.side: e for e in events if isinstance(e, Reply)}
    base, tuned = replies["base"], replies["tuned"]
    assert base.adapter_state["verified"] and base.adapter_state["active_layers"] == 0
    assert tuned.adapter_state["verified"] and tuned.adapter_state["active_layers"] == LORA_LAYERS
    # The chat template of training: the same prompt ids a fresh tokenizer makes, and the same greedy replies.
    assert base.token_ids == fresh(real_model_dir)["ids"]
    assert tuned.token_ids == fresh(real_model_dir, run_dir / "adapter")["ids"]
    for reply in (base, tuned):
        assert reply.token_ids and not any(s in reply.text for s in ("<|im_start|>", "<|im_end|>", "<|endoftext|>"))


@pytest.fixture(scope="module")
def changed_run(real_run, real_model_dir, tmp_path_factory):
    """The trained run with a larger adapter: one step at this size leaves the greedy answer unchanged, and an
    export that dropped the adapter would then pass unseen. A random update (0.05) changes it."""
    run_dir = tmp_path_factory.mktemp("changed") / real_run[0].name
    shutil.copytree(real_run[0], run_dir)
    shutil.rmtree(run_dir / "adapter")
    run_python("import sys; from rloo_studio.demo.tinymodel import save_random_adapter as s; s(sys.argv[1], sys.argv[2], seed=1, scale=0.05); print('saved')",
               real_model_dir, run_dir / "adapter", timeout=900)
    assert fresh(real_model_dir, run_dir / "adapter")["ids"] != fresh(real_model_dir)["ids"]
    return run_dir


@pytest.mark.parametrize("fmt", ["adapter", "merged"])
def test_exports_reload_with_plain_transformers_and_answer_as_the_trained_model(changed_run, real_model_dir, tmp_path, fmt):
    out = tmp_path / fmt
    result = run_cli("export", changed_run, "--format", fmt, "--out", out, "--json", cwd=tmp_path, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    trained = fresh(real_model_dir, changed_run / "adapter")["ids"]
    exported = fresh(real_model_dir, out)["ids"] if fmt == "adapter" else fresh(out)["ids"]
    assert exported == trained
    if fmt == "merged":
        assert not (out / "adapter_config.json").exists() and (out / "chat_template.jinja").is_file()


def test_a_4bit_lora_step_quantises_every_projection_with_bitsandbytes(tmp_path, real_model_dir):
    config = task_folder(tmp_path, real_model_dir)
    result = run_cli("train", config, "model.load_in_4bit=true", "model.dtype=auto", cwd=tmp_path, timeout=3600)
    assert result.returncode == 0, result.stderr[-4000:]
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    log = (run_dir / "train.log").read_text()
    assert f", 4-bit: {LORA_LAYERS} bitsandbytes layers)" in log
    assert json.loads((run_dir / "status.json").read_text())["state"] == "finished"
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)  # 4-bit checkpoints are large; nothing reads them

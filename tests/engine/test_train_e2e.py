"""End to end: `rloo-studio train` on a tiny local model with the real Unsloth/TRL/PEFT stack.

Each run is a fresh process, as a person would start it. The tests check the run-directory
contract: metrics per step with every reward's mean, samples whose advantages (TRL's own) are leave-one-out with beta 0,
checkpoints, and a final adapter that PEFT reloads and that generates.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
import yaml
from helpers import only_run_dir, run_cli, run_code

from rloo_studio import runs

pytestmark = pytest.mark.slow
REWARD_NAMES = ("numeric_answer", "think_length", "short_answer")


def _assert_run_contract(run_dir, steps: int):
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "finished", status
    assert status["step"] == steps and status["max_steps"] == steps

    metrics = runs.read_jsonl(run_dir / "metrics.jsonl")
    assert [m["step"] for m in metrics] == list(range(1, steps + 1))
    for row in metrics:
        assert isinstance(row["reward"], float)
        for name in REWARD_NAMES:
            assert f"rewards/{name}/mean" in row, sorted(row)
        assert "completions/mean_length" in row and "learning_rate" in row

    samples = runs.read_jsonl(run_dir / "samples.jsonl")
    groups = defaultdict(list)
    for s in samples:
        groups[(s["step"], s["group"])].append(s)
        assert set(s["rewards"]) == set(REWARD_NAMES)
        weighted = [w * s["rewards"][n] for n, w in zip(REWARD_NAMES, (1.0, 0.2, 0.5)) if s["rewards"][n] is not None]
        assert s["total"] == pytest.approx(sum(weighted))
        assert isinstance(s["cut_off"], bool)  # TRL's completion ids reached the recorder, with the run's budget
    assert {step for step, _ in groups} == set(range(1, steps + 1))
    for group in groups.values():
        assert len(group) == 4  # num_generations
        totals = [g["total"] for g in group]
        for i, g in enumerate(group):
            others = totals[:i] + totals[i + 1:]
            # beta 0, no normalising: TRL's float32 advantage is the leave-one-out of the totals; no KL part.
            assert g["advantage"] == pytest.approx(totals[i] - sum(others) / len(others), abs=1e-6)
            assert g["kl_penalty"] is None

    assert (run_dir / "rewards.py").is_file()
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["rewards"][2]["file"] == "rewards.py"
    assert [p.name for _, p in runs.checkpoints(run_dir)] == ["checkpoint-2", f"checkpoint-{steps}"]
    assert "[rloo-studio] finished" in (run_dir / "train.log").read_text()


def _reload_and_generate(run_dir, model_dir):
    """Reload the adapter with plain PEFT in a new process; check LoRA weights moved and it generates."""
    code = f"""
import json, torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer
adapter = {str(run_dir / 'adapter')!r}
weights = load_file(adapter + '/adapter_model.safetensors')
lora_b = [v for k, v in weights.items() if 'lora_B' in k]
tok = AutoTokenizer.from_pretrained(adapter)
model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained({str(model_dir)!r}), adapter)
ids = tok.apply_chat_template([{{"role": "user", "content": "What is 3 + 4?"}}], add_generation_prompt=True, return_tensors='pt', return_dict=True)
out = model.generate(**ids, max_new_tokens=8, do_sample=False)
print(json.dumps({{"n_lora_b": len(lora_b), "max_abs_b": max(float(v.abs().max()) for v in lora_b),
                   "new_tokens": int(out.shape[1] - ids['input_ids'].shape[1])}}))
"""
    result = run_code(code, stack="plain", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    info = json.loads(result.stdout.strip().splitlines()[-1])
    assert info["n_lora_b"] > 0
    assert info["max_abs_b"] > 0, "LoRA B matrices start at zero; training must have changed them"
    assert info["new_tokens"] > 0


# One 4-bit case, where it checks that quantisation really happened: on CPU a 4-bit run follows the fp32 code
# path everywhere else, so a second 4-bit case would repeat the fp32 case's checks.
@pytest.mark.parametrize("backend, four_bit", [("auto", False), ("transformers", False), ("auto", True)],
                         ids=["auto-fp32", "transformers-fp32", "auto-4bit"])
def test_train_lora_writes_the_run_directory(workspace, backend, four_bit):
    config = workspace.write_config(model={"backend": backend, "load_in_4bit": four_bit})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    _assert_run_contract(run_dir, steps=3)
    status = json.loads((run_dir / "status.json").read_text())
    assert status["backend"] == ("unsloth" if backend == "auto" else "transformers")
    if four_bit:
        # Every linear layer of the tiny model's 2 blocks (q, k, v, o, gate, up, down) quantised by bitsandbytes.
        assert ", 4-bit: 14 bitsandbytes layers)" in (run_dir / "train.log").read_text()
    _reload_and_generate(run_dir, workspace.model)

    listing = run_cli("runs", "--json", cwd=workspace.path)
    assert listing.returncode == 0
    [row] = json.loads(listing.stdout)
    assert row["state"] == "finished" and row["step"] == 3 and isinstance(row["last_reward"], float)


def test_full_finetuning_without_lora_section(workspace):
    config = workspace.write_config(lora=None, model={"backend": "transformers"})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    assert (run_dir / "model" / "config.json").is_file() and not (run_dir / "adapter").exists()
    import torch
    from safetensors.torch import load_file

    before = load_file(str(workspace.model / "model.safetensors"))
    after = load_file(str(run_dir / "model" / "model.safetensors"))
    changed = [k for k in before if k in after and not torch.equal(before[k], after[k])]
    assert len(changed) >= len(before) // 2, f"only {len(changed)} of {len(before)} tensors changed"


def test_qwen3_architecture_with_a_reward_model(workspace, tmp_path):
    """A Qwen3-architecture policy (Unsloth backend) and a local sequence-classification reward model."""
    policy, scorer = tmp_path / "qwen3-tiny", tmp_path / "scorer"
    code = f"""
import torch, transformers
from rloo_studio.demo.tinymodel import build_char_tokenizer, build_tiny_model
build_tiny_model({str(policy)!r}, architecture='qwen3', seed=1)
tok = build_char_tokenizer()
cfg = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, num_labels=1, pad_token_id=tok.pad_token_id)
torch.manual_seed(0)
transformers.LlamaForSequenceClassification(cfg).save_pretrained({str(scorer)!r})
tok.save_pretrained({str(scorer)!r})
"""
    run_code(code, stack="plain", check=True, timeout=300)
    rewards = [{"name": "numeric_answer"}, {"model": str(scorer), "weight": 0.1}]
    config = workspace.write_config(model={"name_or_path": str(policy)}, rewards=rewards)
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    metrics = runs.read_jsonl(run_dir / "metrics.jsonl")
    assert len(metrics) == 3
    scores = [m["rewards/reward_model_scorer/mean"] for m in metrics]
    assert all(isinstance(s, float) and s != 0.0 for s in scores), scores
    sample = runs.read_jsonl(run_dir / "samples.jsonl")[0]
    assert set(sample["rewards"]) == {"numeric_answer", "reward_model_scorer"}
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()
    assert json.loads((run_dir / "status.json").read_text())["backend"] == "unsloth"

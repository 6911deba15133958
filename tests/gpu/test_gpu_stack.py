"""The real Unsloth path on CUDA (skipped without a GPU): Unsloth patches RLOOTrainer, 4-bit and bf16 LoRA
training steps through `rloo-studio train`, adapter save and reload, generation. benchmarks/gpu_check.py runs these."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from helpers import cuda_available, only_run_dir

pytestmark = pytest.mark.gpu


if not cuda_available():
    pytest.skip("needs a CUDA GPU (benchmarks/gpu_check.py runs these on one)", allow_module_level=True)


def test_unsloth_patches_the_rloo_trainer():
    code = "import unsloth, trl; print(trl.RLOOTrainer.__name__, trl.RLOOTrainer.__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Unsloth" in out.stdout, out.stdout


@pytest.mark.parametrize("four_bit", [True, False], ids=["4bit-lora", "bf16-lora"])
def test_lora_training_steps_save_and_reload(tmp_path, tiny_model_dir, four_bit):
    cfg = {"model": {"name_or_path": str(tiny_model_dir), "load_in_4bit": four_bit, "max_seq_length": 128, "backend": "unsloth"},
           "lora": {"r": 8, "alpha": 16}, "data": {"source": "demo"},
           "rewards": [{"name": "numeric_answer"}, {"name": "think_format", "weight": 0.2}],
           "rloo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 24, "max_steps": 3,
                    "save_steps": 2, "learning_rate": 1e-4, "beta": 0.0},
           "output": {"runs_dir": str(tmp_path / "runs")}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    result = subprocess.run([sys.executable, "-m", "rloo_studio.cli", "train", str(tmp_path / "c.yaml")], capture_output=True,
                            text=True, cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = only_run_dir(tmp_path / "runs")
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "finished" and status["backend"] == "unsloth"
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 3 and metrics[-1]["memory/peak_reserved_gib"] > 0
    code = f"""
import torch, peft, transformers
tok = transformers.AutoTokenizer.from_pretrained({str(run_dir / 'adapter')!r})
base = transformers.AutoModelForCausalLM.from_pretrained({str(tiny_model_dir)!r}, dtype=torch.bfloat16).cuda()
model = peft.PeftModel.from_pretrained(base, {str(run_dir / 'adapter')!r})
ids = tok.apply_chat_template([{{"role": "user", "content": "What is 2+2?"}}], add_generation_prompt=True, return_tensors="pt", return_dict=True).to("cuda")
out = model.generate(**ids, max_new_tokens=8, do_sample=False)
print(out.shape[1] > ids["input_ids"].shape[1])
"""
    reload = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert reload.returncode == 0 and reload.stdout.strip().endswith("True"), reload.stderr[-2000:]

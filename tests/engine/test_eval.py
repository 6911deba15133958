"""`rloo-studio eval`: base vs tuned on held-out prompts with identical greedy decoding."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from conftest import ADDITION_ROWS, USER_REWARDS, only_run_dir, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, tiny_model_dir):
    folder = tmp_path_factory.mktemp("eval-run")
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ADDITION_ROWS))
    (folder / "rewards.py").write_text(USER_REWARDS)
    config = {
        "model": {"name_or_path": str(tiny_model_dir), "max_seq_length": 128},
        "lora": {"r": 8, "alpha": 16},
        "data": {"source": "data.jsonl", "test_fraction": 0.25},
        "rewards": [{"name": "numeric_answer"}, {"name": "think_format", "weight": 0.5}, {"file": "rewards.py", "weight": 0.5}],
        "rloo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 12,
                 "learning_rate": 5e-3, "max_steps": 3, "save_steps": 10, "beta": 0.0},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    result = run_cli("train", "config.yaml", cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    return only_run_dir(folder / "runs"), tiny_model_dir


def test_eval_reports_base_and_tuned_and_writes_eval_json(trained_run):
    run_dir, model_dir = trained_run
    result = run_cli("eval", run_dir, "--json", cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report == json.loads((run_dir / "eval.json").read_text())
    n_test = round(len(ADDITION_ROWS) * 0.25)
    assert report["n_prompts"] == n_test
    assert report["decoding"] == {"greedy": True, "max_new_tokens": 12}
    for side in ("base", "tuned"):
        summary = report[side]
        assert set(summary["rewards"]) == {"numeric_answer", "think_format", "short_answer"}
        assert 0.0 <= summary["answer_accuracy"] <= 1.0 and 0.0 <= summary["format_rate"] <= 1.0
        assert summary["answer_accuracy"] == summary["rewards"]["numeric_answer"]
    wtl = report["tuned_vs_base"]
    assert wtl["wins"] + wtl["ties"] + wtl["losses"] == n_test

    # Fairness: the base side must be exactly what a fresh load of the base model generates.
    example = report["examples"][0]
    code = f"""
import json
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(model_dir)!r})
model = AutoModelForCausalLM.from_pretrained({str(model_dir)!r})
ids = tok.apply_chat_template([{{"role": "user", "content": {example['prompt']!r}}}], add_generation_prompt=True, return_tensors="pt", return_dict=True)
out = model.generate(**ids, max_new_tokens=12, do_sample=False, pad_token_id=tok.pad_token_id)
print(json.dumps(tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)))
"""
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert json.loads(fresh.stdout.strip().splitlines()[-1]) == example["base"]

    table = run_cli("eval", run_dir, "--limit", "4", cwd=run_dir.parent)
    assert table.returncode == 0, table.stderr[-2000:]
    assert "answer accuracy" in table.stdout and "format rate" in table.stdout and "short_answer" in table.stdout
    assert json.loads((run_dir / "eval.json").read_text())["n_prompts"] == 4


def test_eval_needs_held_out_data_or_split(trained_run, tmp_path):
    run_dir, _ = trained_run
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config["data"]["test_fraction"] = 0.0
    other = tmp_path / "copy"
    other.mkdir()
    (other / "config.yaml").write_text(yaml.safe_dump(config))
    (other / "rewards.py").write_text((run_dir / "rewards.py").read_text())
    (other / "adapter").symlink_to(run_dir / "adapter")
    result = run_cli("eval", other, cwd=tmp_path)
    assert result.returncode == 2
    assert "no held-out prompts" in result.stderr and "--split" in result.stderr

    data = run_dir.parent.parent / "data.jsonl"
    result = run_cli("eval", other, "--split", data, "--limit", "3", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["n_prompts"] == 3


def test_eval_refuses_a_limit_below_one_and_honours_an_explicit_test_split(trained_run, tmp_path):
    run_dir, _ = trained_run
    result = run_cli("eval", run_dir, "--limit", "0", cwd=tmp_path)
    assert result.returncode == 2 and "--limit 0 leaves nothing to evaluate" in result.stderr
    # The run holds out a fraction, not a split named `test`: asking for `--split test` must not be ignored.
    result = run_cli("eval", run_dir, "--split", "test", cwd=tmp_path)
    assert result.returncode == 2 and "data.test_split `test` names a split" in result.stderr


def test_eval_of_a_folder_that_is_not_a_run(tmp_path):
    result = run_cli("eval", tmp_path, cwd=tmp_path)
    assert result.returncode == 2 and "is not a run directory" in result.stderr

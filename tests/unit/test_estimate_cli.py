"""`rloo-studio estimate`: the breakdown, the verdict, JSON output, shrink-to-fit advice and clear errors."""

from __future__ import annotations

import json

from helpers import ROOT, run_cli


def test_estimate_prints_the_breakdown_and_a_verdict(tmp_path):
    result = run_cli("estimate", ROOT / "presets" / "gpu-16gb.yaml", "--gpu-gb", "16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for part in ("weights", "LoRA parameters, gradients, optimizer", "KV cache (generation)", "activations (training)",
                 "logits (training)", "CUDA context", "allocator slack", "total (peak)"):
        assert part in out
    assert "On 16 GB (given): fits" in out


def test_estimate_json_and_shrink_advice(tmp_path):
    result = run_cli("estimate", ROOT / "presets" / "gpu-48gb.yaml", "--gpu-gb", "24", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["verdict"] == "exceeds" and data["device_gib"] == 24
    assert data["shrink_to_fit"]["changes"]["model.load_in_4bit"] is True
    assert data["shrink_to_fit"]["estimate"]["verdict"] == "fits"
    assert data["total_gib"] > data["parts"]["weights"] + data["parts"]["CUDA context"]


def test_overrides_change_the_estimate(tmp_path):
    base = json.loads(run_cli("estimate", ROOT / "presets" / "gpu-6gb.yaml", "--gpu-gb", "6", "--json", cwd=tmp_path).stdout)
    longer = json.loads(run_cli("estimate", ROOT / "presets" / "gpu-6gb.yaml", "rloo.max_completion_length=2048", "--gpu-gb", "6",
                                "--json", cwd=tmp_path).stdout)
    assert longer["total_gib"] > base["total_gib"]


def test_a_model_that_cannot_fit_is_told_to_choose_a_smaller_one(tmp_path):
    result = run_cli("estimate", ROOT / "presets" / "gpu-16gb.yaml", "--gpu-gb", "8", cwd=tmp_path)
    assert result.returncode == 0
    assert "exceeds" in result.stdout and "does not fit this GPU. Choose a smaller model" in result.stdout


def test_unknown_model_is_explained(tmp_path):
    (tmp_path / "c.yaml").write_text("model: {name_or_path: somebody/unknown-model}\nrewards: [{name: think_format}]\n")
    result = run_cli("estimate", "c.yaml", "--gpu-gb", "16", cwd=tmp_path)
    assert result.returncode == 2
    assert "the shape of model 'somebody/unknown-model' is unknown" in result.stderr and "--list-models" in result.stderr


def test_list_models_works_offline(tmp_path):
    result = run_cli("estimate", "--list-models", cwd=tmp_path)
    assert result.returncode == 0 and "Qwen/Qwen3-4B" in result.stdout and len(result.stdout.splitlines()) >= 15


def test_without_a_gpu_the_estimate_is_held_against_ram_and_says_how_to_get_a_gpu_verdict(tmp_path):
    result = run_cli("estimate", ROOT / "presets" / "cpu-small-real.yaml", "rloo.per_device_train_batch_size=2048", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Estimated peak memory (RAM: no GPU here, so the run trains on the CPU)" in out, out
    assert "In this computer's RAM, " in out and ": exceeds" in out and "pass --gpu-gb N" in out
    assert "Python, PyTorch and the libraries" in out and "CUDA context" not in out
    assert "To fit, change: rloo.per_device_train_batch_size=" in out and "load_in_4bit" not in out


def test_without_a_gpu_the_estimate_reads_the_ram_free_now(tmp_path):
    from rloo_studio.machine.hardware import _ram_gb

    result = run_cli("estimate", ROOT / "presets" / "cpu-small-real.yaml", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["on_cpu"] and 0 < found["free_gib"] <= _ram_gb()

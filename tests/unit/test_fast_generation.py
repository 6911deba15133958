"""Fast generation (vLLM) on CUDA: when a run uses it, and what it hands Unsloth and TRL. No GPU is needed: the device
is stated, and the arguments are checked against what each backend reads."""

from __future__ import annotations

import pytest

from rloo_studio import paths
from rloo_studio.workers import jobs
from rloo_studio.config import RunConfig
from rloo_studio.engine import fast_generation as fg
from rloo_studio.errors import StudioError

GPU = fg.Device(cuda=True, compute=(9, 0), vllm="0.31.0")


def test_auto_uses_vllm_only_where_the_gpu_and_vllm_are_there():
    assert fg.decide("auto", GPU).used
    assert fg.decide("auto", GPU).standby
    no_gpu = fg.decide("auto", fg.Device(cuda=False))
    assert not no_gpu.used and "no CUDA GPU" in no_gpu.why
    old = fg.decide("auto", fg.Device(cuda=True, compute=(6, 1), vllm="0.31.0"))
    assert not old.used and "6.1" in old.why and "7.0" in old.why
    missing = fg.decide("auto", fg.Device(cuda=True, compute=(8, 6)))
    assert not missing.used and "not installed" in missing.why
    full = fg.decide("auto", GPU, full_finetuning=True)
    assert not full.used and "LoRA" in full.why
    assert not fg.decide("off", GPU).used


def test_on_refuses_to_start_without_vllm_and_says_how_to_get_it():
    with pytest.raises(StudioError) as caught:
        fg.decide("on", fg.Device(cuda=True, compute=(8, 9)))
    assert "not installed" in caught.value.why and "--setup-fast-generation" in caught.value.fix
    with pytest.raises(StudioError) as caught:
        fg.decide("on", fg.Device(cuda=False))
    assert "no CUDA GPU" in caught.value.why and "auto" in caught.value.fix


def test_the_arguments_each_backend_reads():
    fast = fg.decide("auto", GPU)
    # Unsloth: vLLM built at load time, its share given there; TRL still needs colocate and sleep mode, which Unsloth
    # sets for GRPO only.
    assert fg.load_arguments(fast, "unsloth", 16) == {"fast_inference": True, "gpu_memory_utilization": fg.GPU_MEMORY_SHARE,
                                                      "max_lora_rank": 16}
    assert fg.trainer_arguments(fast, "unsloth") == {"use_vllm": True, "vllm_mode": "colocate", "vllm_enable_sleep_mode": True}
    # transformers: TRL builds the colocated vLLM itself and reads its share from the trainer arguments.
    assert fg.load_arguments(fast, "transformers", 16) == {}
    assert fg.trainer_arguments(fast, "transformers")["vllm_gpu_memory_utilization"] == fg.GPU_MEMORY_SHARE
    assert fg.environment(fast) == {"UNSLOTH_VLLM_STANDBY": "1"}
    off = fg.decide("auto", fg.Device(cuda=False))
    assert fg.load_arguments(off, "unsloth", 16) == {} and fg.trainer_arguments(off, "unsloth") == {} and fg.environment(off) == {}


def test_the_setting_is_checked_like_every_choice():
    problems = RunConfig.from_dict({"model": {"fast_generation": "yes"}}).validate()
    assert any("model.fast_generation" in p and "auto" in p for p in problems)
    assert RunConfig.from_dict({}).model.fast_generation == "auto"


def test_the_worker_starts_from_the_fast_environment_where_one_was_set_up(tmp_path, monkeypatch):
    python = tmp_path / "python"
    python.write_text("")
    monkeypatch.setenv(paths.FAST_PYTHON_ENV, str(python))
    assert jobs.worker_python(RunConfig.from_dict({})) == str(python)
    assert jobs.worker_python(RunConfig.from_dict({"model": {"fast_generation": "off"}})) != str(python)
    monkeypatch.setenv(paths.FAST_PYTHON_ENV, str(tmp_path / "gone"))
    assert jobs.worker_python(RunConfig.from_dict({})) != str(tmp_path / "gone")


def test_the_memory_estimate_counts_vllms_share_of_the_gpu(tmp_path, monkeypatch):
    from dataclasses import replace

    from rloo_studio.machine import vram

    shape = vram.find_shape("Qwen/Qwen3-0.6B", allow_download=False)
    plain = vram.estimate(shape, vram.Settings(), device_gib=24.0)
    fast = vram.estimate(shape, replace(vram.Settings(), fast_generation=True), device_gib=24.0)
    assert "KV cache (generation)" in plain.parts and "vLLM share (generation)" in fast.parts
    # Half of 24 GiB held by vLLM during generation (the weights inside it shared): more than the small KV cache.
    assert fast.total_gib > plain.total_gib and fast.total_gib > 12.0
    assert any("not yet measured on a GPU" in n for n in fast.notes)
    # A config expects it where the fast environment exists and the run has LoRA; never without one or when off.
    monkeypatch.setenv(paths.FAST_PYTHON_ENV, str(tmp_path / "missing"))
    assert not vram.fast_generation_expected(RunConfig.from_dict({"lora": {}}))
    (tmp_path / "python").write_text("")
    monkeypatch.setenv(paths.FAST_PYTHON_ENV, str(tmp_path / "python"))
    assert vram.fast_generation_expected(RunConfig.from_dict({"lora": {}}))
    assert not vram.fast_generation_expected(RunConfig.from_dict({"lora": {}, "model": {"fast_generation": "off"}}))
    assert not vram.fast_generation_expected(RunConfig.from_dict({}))  # full fine-tuning: nothing to share

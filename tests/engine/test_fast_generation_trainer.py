"""The fast-generation switches reach the trainer's config as Unsloth's patch builds it on a GPU (`import unsloth`
replaces TRL's RLOOTrainer and its config class; with UNSLOTH_ALLOW_CPU=1 the child applies the patch as PatchFastRL
does). Unsloth sets `use_vllm` by itself when the model carries a vLLM engine, but colocate and sleep mode only for
GRPO: without the app's own values TRL would look for a vLLM server."""

from __future__ import annotations

import json

import pytest
from helpers import run_code

pytestmark = pytest.mark.slow

BUILT_CONFIG = r"""
import json, sys
import unsloth  # noqa: F401
from unsloth.models.rl import patch_trl_rl_trainers
patch_trl_rl_trainers()
from pathlib import Path
from rloo_studio.config import RunConfig
from rloo_studio.engine.stack import import_training_stack
from rloo_studio.engine.fast_generation import Device, decide
from rloo_studio.engine.trainer_args import rloo_arguments
stack = import_training_stack("transformers")
config_class = sys.modules[stack.trl.RLOOTrainer.__module__].UnslothRLOOConfig
out = {}
for backend in ("unsloth", "transformers"):
    cfg = RunConfig.from_dict({"model": {"backend": backend}})
    fast = decide("auto", Device(cuda=True, compute=(8, 9), vllm="0.31.0"))
    stack.backend = backend
    args = rloo_arguments(cfg, stack, Path(sys.argv[1]), "float32", fast)
    built = config_class(**args)
    out[backend] = {k: getattr(built, k) for k in ("use_vllm", "vllm_mode", "vllm_enable_sleep_mode", "vllm_gpu_memory_utilization")}
off = config_class(**rloo_arguments(RunConfig.from_dict({}), stack, Path(sys.argv[1]), "float32", None))
out["off"] = {"use_vllm": off.use_vllm}
print("ARGS" + json.dumps(out))
"""


def test_unsloths_patched_config_keeps_the_fast_generation_switches(tmp_path):
    result = run_code(BUILT_CONFIG, tmp_path / "run", stack="transformers", env={"UNSLOTH_ALLOW_CPU": "1"}, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    found = json.loads(result.stdout.split("ARGS", 1)[1])
    for backend in ("unsloth", "transformers"):
        assert found[backend]["use_vllm"] is True and found[backend]["vllm_mode"] == "colocate"
        assert found[backend]["vllm_enable_sleep_mode"] is True
    # Unsloth ignores this share (its load-time gpu_memory_utilization counts), TRL reads it: given on transformers only.
    assert found["transformers"]["vllm_gpu_memory_utilization"] == 0.5
    assert found["off"]["use_vllm"] is False

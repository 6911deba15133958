"""Full fine-tuning with a KL penalty: the reference model TRL loads itself gets the policy's precision."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rloo_studio.config import RunConfig
from rloo_studio.engine.trainer_args import rloo_arguments

GPU = SimpleNamespace(cuda=True, backend="transformers")


def test_the_reference_model_of_a_full_fine_tuning_run_gets_the_policys_precision():
    """TRL's create_model_from_path loads it in float32 unless model_init_kwargs say otherwise: beside a bf16 policy on
    a GPU that is twice the memory the estimate counts, and a KL against a copy of another precision (an audit)."""
    full = RunConfig.from_dict({"rloo": {"beta": 0.05}})
    assert rloo_arguments(full, GPU, Path("run"), "bfloat16")["model_init_kwargs"] == {"dtype": "bfloat16"}
    # LoRA (the reference is the adapter switched off) and beta 0 (no reference) load none.
    lora = RunConfig.from_dict({"lora": {"r": 8}, "rloo": {"beta": 0.05}})
    assert "model_init_kwargs" not in rloo_arguments(lora, GPU, Path("run"), "bfloat16")
    assert "model_init_kwargs" not in rloo_arguments(RunConfig.from_dict({"rloo": {"beta": 0.0}}), GPU, Path("run"), "bfloat16")

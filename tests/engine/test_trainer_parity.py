"""What runs is what the config says, on both backends: the trainer arguments a run records (trainer_args.json), read
back from the built trainer, are the same under Unsloth's trainer patch as on plain transformers + PEFT.

On a GPU, `import unsloth` replaces TRL's RLOOConfig and RLOOTrainer by its own (unsloth/models/rl.py, PatchFastRL ->
patch_trl_rl_trainers), whose config fills every key a run leaves unset with Unsloth's defaults (2 accumulation steps,
8-bit AdamW, weight decay 0.001, a 10 % warm-up, seed 3407, ...). Without a GPU Unsloth leaves TRL alone, and with
UNSLOTH_ALLOW_CPU=1 PatchFastRL skips that rewrite on purpose; the child below applies it as PatchFastRL does, so the
GPU's trainer classes are built here on the CPU. The model is loaded with transformers + PEFT in both children
(Unsloth's own loader needs a real GPU); the trainer classes are what differ. The trainer's `train` is left out: only
the arguments it was built with are compared.
"""

from __future__ import annotations

import json

import pytest
from helpers import run_code

from rloo_studio import runs
from rloo_studio.config import RunConfig

pytestmark = pytest.mark.slow

BUILT_TRAINER = r"""
import os, sys
if os.environ.get("UNSLOTH_ALLOW_CPU") == "1":
    import unsloth  # noqa: F401
    from unsloth.models.rl import patch_trl_rl_trainers
    patch_trl_rl_trainers()
from rloo_studio.config import RunConfig
from rloo_studio.engine.stack import import_training_stack
cfg = RunConfig.load(sys.argv[1])
stack = import_training_stack(cfg.model.backend)
stack.trl.RLOOTrainer.train = lambda self, *args, **kwargs: None
from rloo_studio.engine.train import run_training
run_training(cfg, sys.argv[2])
"""

# Precision is the device's and the weights' to decide: Unsloth's trainer turns on fp16/bf16 autocast for a float32
# model (its __init__, "Mixed precision training"), which on a GPU the app's auto dtype never loads. The run records
# it (trainer_args.json) and says so in train.log; compared here are the arguments a config decides.
DEVICE_DECIDED = {"fp16", "bf16"}


def _recorded(workspace, tmp_path, name: str, env: dict | None) -> dict:
    # No `rloo:` section at all: every value is a default, the case where the two backends' defaults differ most.
    config = workspace.write_config(f"{name}.yaml", model={"backend": "transformers", "max_seq_length": 512}, rloo=None)
    run_dir = tmp_path / name
    result = run_code(BUILT_TRAINER, config, run_dir, stack="transformers", cwd=workspace.path, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads((run_dir / runs.TRAINER_ARGS_FILE).read_text())


def test_unsloths_trainer_patch_changes_no_argument_of_a_run(workspace, tmp_path):
    plain = _recorded(workspace, tmp_path, "transformers", None)
    patched = _recorded(workspace, tmp_path, "unsloth-patch", {"UNSLOTH_ALLOW_CPU": "1"})
    assert plain["trainer"] == "RLOOTrainer" and patched["trainer"] == "UnslothRLOOTrainer", "the patch was not applied"
    expected = RunConfig.from_dict({}).effective_rloo()
    for key in ("gradient_accumulation_steps", "optim", "weight_decay", "warmup_steps", "seed", "learning_rate",
                "per_device_train_batch_size", "num_generations", "max_steps"):
        assert plain["args"][key] == expected[key], key
    differing = {key: (plain["args"][key], patched["args"].get(key)) for key in plain["args"]
                 if key not in DEVICE_DECIDED and patched["args"].get(key) != plain["args"][key]}
    assert differing == {}, f"(transformers, Unsloth's trainer) differ: {differing}"
    # What the trainer holds other than it was given is recorded, and it is only the device's precision.
    assert plain["changed"] == {} and set(patched["changed"]) <= DEVICE_DECIDED, patched["changed"]
    # The page's batch plan is the one the trainer derived, and the Train tab shows the run's trainer as it holds it.
    from rloo_studio.batching import batch_plan
    from rloo_studio.ui.train_tab import trainer_markdown

    assert batch_plan(patched["args"], patched["args"]["world_size"]) == RunConfig.from_dict({}).batch_plan()
    shown = trainer_markdown(tmp_path / "unsloth-patch")
    assert "4 completions (4 per device × 1 accumulation step × 1 process) = 1 prompt × 4 completions" in shown
    assert "Optimiser adamw_torch_fused, weight decay 0, 0 warm-up steps" in shown and "seed 42" in shown
    assert all(f"uses {key} = " in shown for key in patched["changed"])

"""engine/sampler_gap.py in a real training run: the sampler's log-probabilities beside the trainer's, per step.

vLLM cannot run on a machine without a GPU, so the run's trainer gets, as soon as the product has built it, what fast
generation gives it: TRL's `use_vllm` branch on, and a generation engine with TRL's VLLMGeneration
contract (`generate(prompts, images, num_generations, profiler)` → prompt ids, completion ids, per-token log-probs of
the sampled tokens; `logprobs` and `sync_weights`). The engine samples with the model's own `generate` and reports the
sampled tokens' log-probabilities plus a fixed OFFSET, as a sampler that leans to one side would: TRL's loop, the
trainer's scoring pass, the product's logging and alerts are all real. The logged gap must be the offset (the rows
and tokens line up) and the drift alert must be raised.
"""

from __future__ import annotations

import json

import pytest
from helpers import only_run_dir, run_code

from rloo_studio import runs
from rloo_studio.runs import alerts

pytestmark = pytest.mark.slow

OFFSET = 0.3

RUN = r"""
import sys, torch
from trl.models.utils import disable_gradient_checkpointing
from rloo_studio.cli import main

OFFSET = float(sys.argv[2])

class Sampler:
    # TRL's VLLMGeneration contract, sampling with the trainer's own model (vLLM needs a GPU).
    logprobs = None
    def __init__(self, trainer):
        self.trainer = trainer
    def sync_weights(self):
        pass
    def generate(self, prompts, images, num_generations, profiler=None):
        t = self.trainer
        model = t.accelerator.unwrap_model(t.model)
        pad = t.processing_class.pad_token_id
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        # vLLM computes the model exactly, with its own cache: here the trainer's model with gradient checkpointing off
        # (checkpointed layers in training mode keep no cache, and `generate` would lose the context after one token).
        with torch.no_grad(), disable_gradient_checkpointing(model):
            out = model.generate(input_ids=ids, attention_mask=mask, generation_config=t.generation_config,
                                 output_logits=True, return_dict_in_generate=True)
        new = out.sequences[:, width:]
        # The sampling distribution as TRL's trainer defines it (logits over the temperature, no top-k cut).
        scores = (torch.stack(out.logits, 1).float() / t.temperature).log_softmax(-1)
        completions, logprobs = [], []
        for row in range(new.shape[0]):
            tokens = new[row].tolist()
            ends = [i for i, tok in enumerate(tokens) if tok in t.eos_token_ids]
            tokens = tokens[:ends[0] + 1] if ends else tokens
            completions.append(tokens)
            logprobs.append([[scores[row, i, tok].item() + OFFSET] for i, tok in enumerate(tokens)]
                            if self.logprobs is not None else None)
        return prompts, completions, (logprobs if self.logprobs is not None else None), None

from rloo_studio.engine import trainer_patches
real_patches = trainer_patches.skip_needless_old_logprobs

def with_the_sampler(trainer, torch):
    # The first thing the product does with the built trainer: from here on it is a trainer vLLM samples for.
    trainer.use_vllm, trainer.vllm_generation, trainer._last_loaded_step = True, Sampler(trainer), -1
    return real_patches(trainer, torch)

trainer_patches.skip_needless_old_logprobs = with_the_sampler
sys.exit(main(["train", sys.argv[1]]))
"""


def test_the_gap_between_sampler_and_trainer_is_logged_per_step_and_raises_the_drift_alert(workspace):
    config = workspace.write_config(model={"backend": "transformers"}, lora={"dropout": 0.0},
                                    rloo={"max_steps": alerts.SAMPLER_STEPS, "save_steps": 100, "logging_steps": 1})
    result = run_code(RUN, str(config), str(OFFSET), stack="transformers", cwd=workspace.path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = only_run_dir(workspace.path / "runs")
    rows = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    steps = [r for r in rows if "step" in r and alerts.SAMPLER_GAP_KEY in r]
    assert len(steps) == alerts.SAMPLER_STEPS, rows
    for row in steps:
        # The sampler reported each token's log-probability + OFFSET: the trainer's are OFFSET lower, token for token.
        assert row[alerts.SAMPLER_GAP_KEY] == pytest.approx(OFFSET, abs=1e-3), row
        assert row[alerts.SAMPLER_SHIFT_KEY] == pytest.approx(-OFFSET, abs=1e-3), row
    raised = [json.loads(line) for line in (run_dir / "alerts.jsonl").read_text().splitlines()]
    assert any(r.get("kind") == alerts.SAMPLER_DRIFT and r.get("event") == "began" for r in raised), raised
    assert "sampler" in (run_dir / runs.LOG_FILE).read_text().lower()

"""engine/trainer_patches.py: each change to TRL's trainer gives TRL's own numbers, and is really used.

Run in processes started from the transformers backend's warm starter (the product's own stack import, with
TRITON_INTERPRET=1 as on any CPU), where TRL's Triton kernel runs in the interpreter and can be compared.
"""

from __future__ import annotations

import json

import pytest
from helpers import only_run_dir, run_code

from rloo_studio import runs

pytestmark = pytest.mark.slow

# TRL's fused LM-head kernel (interpreted) against the torch path on the same inputs: every output and the
# gradients of the two differentiable ones with respect to the hidden states, the head's weight and its bias,
# for plain logits and for TRL's temperature, logit scale and soft cap.
COMPARE = r"""
import json, torch
import trl.trainer.utils as tu
from trl.kernels import ChunkedLogProbFunction as trl_kernel
from rloo_studio.engine.stack import import_training_stack
import_training_stack("transformers")
ours = tu._ChunkedLogProbFunction
assert getattr(ours, "_rloo_studio_torch_logprobs", False), ours
torch.manual_seed(0)
N, H, V = 37, 16, 300
report = []
for temperature, softcap, scale in ((1.0, None, 1.0), (0.7, 5.0, 0.5)):
    base = {"hidden": torch.randn(N, H) * 2, "weight": torch.randn(V, H), "bias": torch.randn(V)}
    targets = torch.randint(0, V, (N,))
    g_lp, g_ent = torch.randn(N), torch.randn(N)
    results = []
    for function in (trl_kernel, ours):
        leaves = {k: v.clone().requires_grad_(True) for k, v in base.items()}
        out = function.apply(leaves["hidden"], leaves["weight"], leaves["bias"], targets, temperature, 128, softcap, scale,
                             ("entropy", "log_sum_sq_probs", "mean_logits", "is_top1"))
        ((out[0] * g_lp).sum() + (out[1] * g_ent).sum()).backward()
        results.append([o.detach().double() for o in out] + [leaves[k].grad.double() for k in ("hidden", "weight", "bias")])
    names = ["log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "is_top1", "grad_hidden", "grad_weight", "grad_bias"]
    report.append({n: float((a - b).abs().max() / (a.abs().max() + 1e-12)) for n, a, b in zip(names, *results)})
print(json.dumps(report))
"""

# A training run on the transformers backend with TRL's Triton kernels counted: the interpreter must never run them.
COUNTED_RUN = r"""
import json, sys
import trl.kernels.chunked_logprob as kernels
from rloo_studio.cli import main
calls = {"forward": 0, "backward": 0}

class Counted:
    def __init__(self, kernel, name):
        self.kernel, self.name = kernel, name
    def __getitem__(self, grid):
        calls[self.name] += 1
        return self.kernel[grid]

kernels._forward_kernel = Counted(kernels._forward_kernel, "forward")
kernels._backward_kernel = Counted(kernels._backward_kernel, "backward")
code = main(["train", sys.argv[1]])
print(json.dumps({"code": code, "calls": calls}))
"""


def test_torch_logprobs_match_trls_kernel():
    result = run_code(COMPARE, stack="transformers", timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    for case in json.loads(result.stdout.strip().splitlines()[-1]):
        assert max(case.values()) < 1e-5, case


def test_transformers_backend_on_cpu_never_runs_trls_triton_kernel(workspace):
    config = workspace.write_config(model={"backend": "transformers"}, rloo={"max_steps": 2, "save_steps": 2})
    result = run_code(COUNTED_RUN, str(config), stack="transformers", cwd=workspace.path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {"code": 0, "calls": {"forward": 0, "backward": 0}}, outcome
    run_dir = only_run_dir(workspace.path / "runs")
    assert [m["step"] for m in runs.read_jsonl(run_dir / "metrics.jsonl")] == [1, 2]


# A short run of the demo preset in this process, with TRL's log-prob method counted at class level (under the
# studio's per-trainer wrappers): how often it really ran without gradients. argv: config, run dir, out file, "skip" or
# "keep" (keep: the skip is switched off, as TRL runs by itself).
DEMO_RUN = r"""
import json, sys
from rloo_studio.config import RunConfig
from rloo_studio.engine import trainer_patches
from rloo_studio.engine.stack import import_training_stack
from rloo_studio.engine.train import run_training
config, run_dir, out, mode = sys.argv[1:5]
cfg = RunConfig.load(config, ["rloo.max_steps=3", "rloo.per_device_train_batch_size=32", "rloo.save_steps=3",
                              "rloo.logging_steps=1"])
stack = import_training_stack(cfg.model.backend)
torch, trainer_class = stack.torch, stack.trl.RLOOTrainer
calls = {"no_grad": 0, "grad": 0}
original = trainer_class._get_per_token_logps_and_entropies

def counted(self, *args, **kwargs):
    calls["grad" if torch.is_grad_enabled() else "no_grad"] += 1
    return original(self, *args, **kwargs)

trainer_class._get_per_token_logps_and_entropies = counted
if mode == "keep":
    trainer_patches.skip_needless_old_logprobs = lambda trainer, torch: "switched off by the test"
run_training(cfg, run_dir)
json.dump(calls, open(out, "w"))
"""


def test_skipping_the_old_logprob_pass_trains_the_same_numbers(tmp_path):
    from helpers import ROOT

    outcome = {}
    for mode in ("keep", "skip"):
        run_dir = tmp_path / mode
        result = run_code(DEMO_RUN, str(ROOT / "presets" / "cpu-demo.yaml"), str(run_dir), str(tmp_path / f"{mode}.json"), mode,
                          stack="unsloth", cwd=tmp_path, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        outcome[mode] = (json.loads((tmp_path / f"{mode}.json").read_text()), runs.read_jsonl(run_dir / "metrics.jsonl"),
                         runs.read_jsonl(run_dir / "samples.jsonl"), (run_dir / "train.log").read_text())
    (kept_calls, kept, kept_samples, kept_log), (skip_calls, skipped, skip_samples, skip_log) = outcome["keep"], outcome["skip"]
    assert kept_calls == {"no_grad": 3, "grad": 3} and skip_calls == {"no_grad": 0, "grad": 3}
    assert "old log-prob pass: skipped" in skip_log and "old log-prob pass: kept (switched off by the test)" in kept_log
    assert [r["step"] for r in skipped] == [r["step"] for r in kept] == [1, 2, 3]
    for a, b in zip(kept, skipped):
        for key in ("loss", "grad_norm", "reward", "reward_std", "entropy", "completions/mean_length", "clip_ratio/region_mean"):
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), (a["step"], key)
    # The same completions, scores and advantages: the skip changes no random draw and no weight.
    assert [(s["completion"], s["total"]) for s in skip_samples] == [(s["completion"], s["total"]) for s in kept_samples]
    assert [s["advantage"] for s in skip_samples] == pytest.approx([s["advantage"] for s in kept_samples], abs=1e-6)

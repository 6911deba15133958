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

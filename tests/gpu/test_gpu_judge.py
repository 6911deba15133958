"""A local judge on CUDA (skipped without a GPU): loaded in 4-bit where bitsandbytes is installed, as the memory
estimate counts it (config.local_judge_in_4bit), and it answers. benchmarks/gpu_check.py runs this."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import cuda_available

pytestmark = pytest.mark.gpu

if not cuda_available():
    pytest.skip("needs a CUDA GPU (benchmarks/gpu_check.py runs these on one)", allow_module_level=True)

# In a child process: the judge loads transformers, which must not be imported before unsloth in the test process.
CODE = """
import json, sys, time
from rloo_studio.config import local_judge_in_4bit
from rloo_studio.rewards.judge import LocalJudge
judge = LocalJudge(sys.argv[1])
replies = judge.replies(["Score this answer from 0 to 10: 7", "Score this answer from 0 to 10: 8"], time.monotonic() + 600)
model = judge.state["model"]
four_bit = sum(1 for m in model.modules() if type(m).__name__ == "Linear4bit")
print(json.dumps({"in_4bit_rule": local_judge_in_4bit(), "linear4bit": four_bit, "device": str(next(model.parameters()).device),
                  "replies": replies}))
"""


def test_a_local_judge_loads_in_4bit_on_the_gpu_and_answers(tiny_model_dir):
    out = subprocess.run([sys.executable, "-c", CODE, str(tiny_model_dir)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["in_4bit_rule"], "bitsandbytes is not installed with the CUDA stack"
    assert result["linear4bit"] > 0, result
    assert result["device"].startswith("cuda"), result
    assert len(result["replies"]) == 2 and all(isinstance(r, str) for r, _ in result["replies"]), result

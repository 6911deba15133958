"""A shortened run of the cpu-demo preset learns: the reward of its last steps is clearly above its first.

This is a learning signal, not a timing: the run is the shipped preset with fewer steps, on the
bundled model and data, through the real Unsloth/TRL stack; the margin was measured (README,
"The bundled demo") and the seed is fixed.
"""

from __future__ import annotations

import statistics

import pytest
from helpers import ROOT, run_cli

from rloo_studio import runs

pytestmark = pytest.mark.slow
STEPS, WINDOW = 120, 20
# Measured with the shipped preset (seed 42, 2-core CPU): mean reward 0.504 over steps 1-20 and 0.578
# over steps 101-120 (a rise of 0.074; standard error of the difference 0.023). A 0.03 margin keeps
# the test meaningful and leaves room for another CPU's floating-point order.
MARGIN = 0.03


def test_short_demo_run_raises_the_reward(tmp_path):
    run_dir = tmp_path / "demo-run"
    result = run_cli("train", ROOT / "presets" / "cpu-demo.yaml", "--run-dir", run_dir,
                     f"rloo.max_steps={STEPS}", "rloo.save_steps=1000", cwd=tmp_path, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = runs.read_jsonl(run_dir / "metrics.jsonl")
    assert [m["step"] for m in metrics] == list(range(1, STEPS + 1))
    reward = [m["reward"] for m in metrics]
    first, last = statistics.mean(reward[:WINDOW]), statistics.mean(reward[-WINDOW:])
    assert last > first + MARGIN, f"mean reward {first:.3f} (first {WINDOW} steps) -> {last:.3f} (last {WINDOW})"
    formats = [m["rewards/think_format/mean"] for m in metrics]
    assert statistics.mean(formats[-WINDOW:]) > 0.95, "the format must survive the training"

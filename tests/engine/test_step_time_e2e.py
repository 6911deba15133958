"""Where each step's time goes, as a real training run records it in metrics.jsonl (engine/step_timer.py).

The parts must add up to the step's wall time, and that wall time must be the time that really passed between
two logged steps (the records' own `time` stamps, taken independently of the timer).
"""

from __future__ import annotations

import pytest
from helpers import assert_trained_with, only_run_dir, run_cli

from rloo_studio import runs
from rloo_studio.runs.step_time import KEYS, STEP_KEY, TOKENS_KEY

pytestmark = pytest.mark.slow


def test_each_step_records_where_its_time_went(workspace):
    # beta > 0: the no-grad passes (the policy's old log-probs, the reference model's) run and are timed.
    config = workspace.write_config(rloo={"max_steps": 4, "save_steps": 2, "beta": 0.04})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    assert_trained_with(run_dir)
    # The worker's malloc keeps freed memory for the next step (engine/allocator.py; tests/unit/test_allocator.py).
    assert "memory allocator: freed memory kept for reuse (mmap_max 0" in (run_dir / "train.log").read_text()
    records = runs.read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    for r in records:
        parts = [r[key] for key in KEYS]
        assert all(p >= 0 for p in parts), r  # no part counted twice (that would leave `other` below zero)
        assert sum(parts) == pytest.approx(r[STEP_KEY], rel=0.05, abs=1e-3)
        assert r["time/generation"] > 0 and r["time/optimizer"] > 0 and r["time/rewards"] > 0
        assert r["time/logprobs"] > 0
        # Completion tokens this process generated per second of generation: TRL's mean completion length x the 8
        # completions of the step.
        tokens = r["completions/mean_length"] * 8
        assert r[TOKENS_KEY] * r["time/generation"] == pytest.approx(tokens, rel=0.01)
    for before, after in zip(records, records[1:]):
        assert after[STEP_KEY] == pytest.approx(after["time"] - before["time"], rel=0.05)

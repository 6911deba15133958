"""benchmarks/gpu_check.py --dry-run: the GPU check's whole code path on the CPU with a tiny shape (CI runs this).

The script's main() runs in the test process and its children are forked warm (helpers.run_benchmark): the same
commands, without paying each one's imports."""

from __future__ import annotations

import json

import pytest
from helpers import ROOT, run_benchmark

pytestmark = pytest.mark.slow


def test_gpu_check_dry_run_runs_both_backends_and_writes_its_results(tmp_path, monkeypatch, capsys):
    committed = ROOT / "benchmarks" / "results" / "gpu_check_dry_run.json"
    committed_before = committed.read_bytes() if committed.exists() else None
    out = run_benchmark("gpu_check", ["--dry-run"], tmp_path, monkeypatch, capsys)
    assert "GPU check — CPU (dry run)" in out and "| tiny  | ratio" in out
    data = json.loads((tmp_path / "gpu_check_dry_run.json").read_text())  # this run's results, not the committed ones
    record = data["records"][0]
    assert record["unsloth"]["backend_used"] == "unsloth" and record["transformers"]["backend_used"] == "transformers"
    assert record["unsloth"]["steps_measured"] == 2 and record["speedup_unsloth_vs_transformers"] > 0
    # Both runs recorded the arguments their trainers hold, and they are the same.
    assert record["trainer_args_differ"] == {} and record["unsloth"]["trainer_args"]["gradient_accumulation_steps"] == 1
    # Each run's step-time breakdown is kept, with the share spent generating; the vLLM run is said not to have run.
    assert 0 < record["unsloth"]["generation_share"] < 1 and record["unsloth"]["fast_generation"]["used"] is False
    assert record["unsloth_vllm"] == {"not_run": "dry run (no GPU)"} and "unsloth + vLLM | not run" in out
    assert "skipped" in data["gpu_tests"]["summary"]  # tests/gpu exist and skip without CUDA
    assert (committed.read_bytes() if committed.exists() else None) == committed_before  # tracked results untouched

"""benchmarks/gpu_check.py --dry-run: the GPU check's whole code path on the CPU with a tiny shape (CI runs this)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow


def test_gpu_check_dry_run_runs_both_backends_and_writes_its_results(tmp_path):
    committed = ROOT / "benchmarks" / "results" / "gpu_check_dry_run.json"
    committed_before = committed.read_bytes() if committed.exists() else None
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run"], capture_output=True, text=True,
                            timeout=1200, cwd=ROOT,
                            env={**os.environ, "RLOO_BENCH_RESULTS": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "GPU check — CPU (dry run)" in result.stdout and "| tiny  | ratio" in result.stdout
    data = json.loads((tmp_path / "gpu_check_dry_run.json").read_text())  # this run's results, not the committed ones
    record = data["records"][0]
    assert record["unsloth"]["backend_used"] == "unsloth" and record["transformers"]["backend_used"] == "transformers"
    assert record["unsloth"]["steps_measured"] == 2 and record["speedup_unsloth_vs_transformers"] > 0
    assert "skipped" in data["gpu_tests"]["summary"]  # tests/gpu exist and skip without CUDA
    assert (committed.read_bytes() if committed.exists() else None) == committed_before  # tracked results untouched

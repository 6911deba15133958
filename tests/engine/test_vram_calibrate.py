"""benchmarks/vram_calibrate.py --dry-run: the GPU calibration script's code path, on the CPU with a tiny shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow


def test_the_calibration_dry_run_trains_each_setting_and_writes_its_table(tmp_path):
    committed = ROOT / "benchmarks" / "results" / "vram_calibrate_dry_run.json"
    committed_before = committed.read_bytes() if committed.exists() else None
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "vram_calibrate.py"), "--dry-run"], capture_output=True,
                            text=True, timeout=900, cwd=ROOT,
                            env={**os.environ, "RLOO_BENCH_RESULTS": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "DRY RUN" in result.stdout and "| tiny-qwen3 (dry run) |" in result.stdout
    data = json.loads((tmp_path / "vram_calibrate_dry_run.json").read_text())  # this run's results, not the committed ones
    assert data["dry_run"] is True and len(data["records"]) == 2
    for record in data["records"]:
        assert record["steps"] == 2 and "error" not in record
        assert record["estimate_gib"] > 0 and "KV cache (generation)" in record["estimate_parts"]
    assert (committed.read_bytes() if committed.exists() else None) == committed_before  # tracked results untouched

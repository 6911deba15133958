"""benchmarks/vram_calibrate.py --dry-run: the GPU calibration script's code path, on the CPU with a tiny shape.

The script's main() runs in the test process and its children are forked warm (helpers.run_benchmark)."""

from __future__ import annotations

import json

import pytest
from helpers import ROOT, run_benchmark

pytestmark = pytest.mark.slow


def test_the_calibration_dry_run_trains_each_setting_and_writes_its_table(tmp_path, monkeypatch, capsys):
    committed = ROOT / "benchmarks" / "results" / "vram_calibrate_dry_run.json"
    committed_before = committed.read_bytes() if committed.exists() else None
    out = run_benchmark("vram_calibrate", ["--dry-run"], tmp_path, monkeypatch, capsys)
    assert "DRY RUN" in out and "| tiny-qwen3 (dry run) |" in out
    data = json.loads((tmp_path / "vram_calibrate_dry_run.json").read_text())  # this run's results, not the committed ones
    assert data["dry_run"] is True and len(data["records"]) == 2
    for record in data["records"]:
        assert record["steps"] == 2 and "error" not in record
        assert record["estimate_gib"] > 0 and "KV cache (generation)" in record["estimate_parts"]
    assert (committed.read_bytes() if committed.exists() else None) == committed_before  # tracked results untouched

"""`rloo-studio scan` on the bundled demo: the buckets agree with a count by hand from the scan's own
per-completion rewards, the filtered file is new (the demo data unchanged) and a run trains on it and
keeps the scan's record; bad input gets a config-word error and exit code 2."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from helpers import run_cli

from rloo_studio.paths import DEMO_DATA_DIR, DEMO_PRESET

LIMIT = 20  # two of the demo's generation batches (16 prompts each): the second one half full
DEMO_WEIGHTS = {"numeric_answer": 1.0, "think_format": 0.2, "think_length": 0.1}  # presets/cpu-demo.yaml


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scan")
    before = {name: _sha(DEMO_DATA_DIR / name) for name in ("train.jsonl", "test.jsonl")}
    result = run_cli("scan", DEMO_PRESET, "--limit", LIMIT, "--runs-dir", folder / "runs", "--write-filtered", "--json",
                     cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    scan_dir = Path(report["folder"])
    lines = [json.loads(line) for line in (scan_dir / "scan.jsonl").read_text().splitlines()]
    return {"folder": folder, "report": report, "lines": lines, "scan_dir": scan_dir, "before": before, "stderr": result.stderr}


def _hand_buckets(lines: list[dict]) -> list[str]:
    """The buckets counted by hand from each completion's per-function rewards (docs/scan.md's rule)."""
    totals = [[sum(DEMO_WEIGHTS[f] * line["rewards"][f][i] for f in DEMO_WEIGHTS) for i in range(len(line["completions"]))]
              for line in lines]
    lowest, highest = min(min(t) for t in totals), max(max(t) for t in totals)
    buckets = []
    for group in totals:
        if max(group) - min(group) > 1e-9:
            buckets.append("mixed")
        elif (group[0] - lowest) >= 0.5 * (highest - lowest) and highest > lowest:
            buckets.append("always solved")
        else:
            buckets.append("never solved")
    return buckets


@pytest.mark.slow
def test_demo_scan_buckets_match_a_count_by_hand(scanned):
    report, lines = scanned["report"], scanned["lines"]
    assert len(lines) == LIMIT and report["prompts"] == LIMIT and report["of"] == 2000
    # Chosen evenly over the 2000 training rows, in order.
    assert [line["index"] for line in lines] == [i * 2000 // LIMIT for i in range(LIMIT)]
    assert all(len(line["completions"]) == 8 for line in lines)  # k = the preset's num_generations
    hand = _hand_buckets(lines)
    counts = {b: hand.count(b) for b in ("always solved", "never solved", "mixed")}
    assert report["buckets"] == counts, (report["buckets"], counts)
    assert [line["bucket"] for line in lines] == hand
    assert report["shares"] == pytest.approx({b: n / LIMIT for b, n in counts.items()})
    assert report["no_spread_share"] == pytest.approx((counts["always solved"] + counts["never solved"]) / LIMIT)
    # The demo trains on 128 completions per step = 16 prompt groups of 8.
    assert report["groups_per_step"] == 16
    assert report["useful_groups_per_step"] == pytest.approx(16 * counts["mixed"] / LIMIT)
    for line in lines:  # each prompt's mean total, from the same per-function rewards
        mean = sum(DEMO_WEIGHTS[f] * sum(line["rewards"][f]) for f in DEMO_WEIGHTS) / 8
        assert line["mean_total"] == pytest.approx(mean)
    summary = json.loads((scanned["scan_dir"] / "scan-summary.json").read_text())
    assert summary["buckets"] == counts and summary["shares"] == report["shares"]
    assert "[scan] 16/20 prompts" in scanned["stderr"] and "eta=" in scanned["stderr"]  # progress with the time left


@pytest.mark.slow
def test_filtered_file_is_new_keeps_the_mixed_prompts_and_trains(scanned):
    report, lines = scanned["report"], scanned["lines"]
    filtered = report["filtered"]
    assert {name: _sha(DEMO_DATA_DIR / name) for name in ("train.jsonl", "test.jsonl")} == scanned["before"]
    written = [json.loads(line) for line in Path(filtered["path"]).read_text().splitlines()]
    mixed = [line["row"] for line in lines if line["bucket"] == "mixed"]
    assert written == mixed and filtered["kept"] == len(mixed) > 0
    demo_train = [json.loads(line) for line in (DEMO_DATA_DIR / "train.jsonl").read_text().splitlines()]
    assert all(demo_train[line["index"]] == line["row"] for line in lines)  # the rows as the data has them
    held_out = [json.loads(line) for line in Path(filtered["test_path"]).read_text().splitlines()]
    assert held_out == [json.loads(line) for line in (DEMO_DATA_DIR / "test.jsonl").read_text().splitlines()]

    run_dir = scanned["folder"] / "runs" / "on-filtered"
    overrides = [f"{k}={v}" for k, v in filtered["overrides"].items()]
    result = run_cli("train", DEMO_PRESET, *overrides, "rloo.max_steps=2", "rloo.per_device_train_batch_size=16",
                     "rloo.save_steps=2", "--run-dir", run_dir, cwd=scanned["folder"])
    assert result.returncode == 0, result.stderr[-3000:]
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "finished" and status["step"] == 2
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["data"]["source"] == filtered["path"]
    record = json.loads((run_dir / "scan-summary.json").read_text())  # the run keeps which prompts it trained on
    assert record["kept"] == len(mixed) and record["scan_folder"] == str(scanned["scan_dir"].resolve())


def _assert_clean_failure(result, *fragments):
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "\nerror: " in "\n" + result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, f"{fragment!r} not in:\n{result.stderr}"


def test_limit_zero_is_refused(tmp_path):
    _assert_clean_failure(run_cli("scan", DEMO_PRESET, "--limit", 0, "--runs-dir", tmp_path / "runs", cwd=tmp_path),
                          "--limit 0 leaves no prompt to scan", "e.g. --limit 50")
    assert not (tmp_path / "runs").exists()


def test_missing_data_is_named_in_config_words(workspace):
    config = workspace.write_config(data={"source": "no-such-file.jsonl"})
    _assert_clean_failure(run_cli("scan", config, "--limit", 4, cwd=workspace.path),
                          "data.source: data file not found: no-such-file.jsonl", "relative to the config file")


def test_a_bad_band_is_refused(tmp_path):
    _assert_clean_failure(run_cli("scan", DEMO_PRESET, "--band", "0.9:0.1", cwd=tmp_path),
                          "--band 0.9:0.1 is empty", "--band 0.1:0.9")

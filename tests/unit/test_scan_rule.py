"""The scan's pure parts: the bucket rule at its edges, even picking, the band, the filtered file's place and the
per-step numbers (the scan itself runs on the demo model in tests/engine/test_scan.py)."""

from __future__ import annotations

import json

import pytest

from rloo_studio import runs
from rloo_studio.config import RunConfig
from rloo_studio.errors import StudioError
from rloo_studio.scan import (ALWAYS_SOLVED, MIXED, NEVER_SOLVED, difficulty_bucket, filtered_paths, groups_per_generation,
                              kept, parse_band, pick_evenly, unscanned_words, write_filtered)


def test_bucket_rule_edges():
    assert difficulty_bucket([1.0, 0.0, 1.0], 0.0, 1.3) == MIXED
    assert difficulty_bucket([1.3, 1.3], 0.0, 1.3) == ALWAYS_SOLVED
    assert difficulty_bucket([0.65, 0.65], 0.0, 1.3) == ALWAYS_SOLVED  # exactly half way counts as solved
    assert difficulty_bucket([0.3, 0.3], 0.0, 1.3) == NEVER_SOLVED  # right format, wrong answer: the demo's 0.3
    assert difficulty_bucket([1.0, None, 1.0], 0.0, 1.0) == ALWAYS_SOLVED  # an unscorable completion is left out
    assert difficulty_bucket([None, None], 0.0, 1.0) == NEVER_SOLVED
    assert difficulty_bucket([2.0, 2.0], 2.0, 2.0) == NEVER_SOLVED  # every completion of the scan scored alike


def test_prompts_are_picked_evenly_and_in_order():
    assert pick_evenly(10, 4) == [0, 2, 5, 7]
    assert pick_evenly(3, 10) == [0, 1, 2]
    assert pick_evenly(5, None) == [0, 1, 2, 3, 4]


def test_band():
    assert parse_band("0.2:1") == (0.2, 1.0) and parse_band(None) is None
    with pytest.raises(StudioError, match="is not LO:HI"):
        parse_band("0.2-1")
    records = [{"bucket": MIXED, "mean_total": 0.5}, {"bucket": NEVER_SOLVED, "mean_total": 0.0},
               {"bucket": ALWAYS_SOLVED, "mean_total": 1.3}, {"bucket": MIXED, "mean_total": None}]
    assert kept(records) == [records[0], records[3]]
    assert kept(records, (0.0, 0.5)) == records[:2]


def test_the_per_step_numbers_count_an_optimiser_steps_prompts_not_a_generation_batchs():
    """steps_per_generation 4 with accumulation 2: one generation batch (8 prompts) serves two optimiser steps of 4
    prompts each; the scan's "per training step" said 8 prompts and the chance of a step without signal for 8 (an
    audit)."""
    from rloo_studio import scan

    cfg = RunConfig.from_dict({"rloo": {"num_generations": 4, "per_device_train_batch_size": 8,
                                        "gradient_accumulation_steps": 2, "steps_per_generation": 4}})
    records = [{"prompt": f"p{i}", "totals": [1.0, 0.0, 1.0, 1.0] if i % 2 else [1.0] * 4, "completions": ["a"] * 4,
                "mean_total": 0.5} for i in range(4)]
    summary = scan.summarize(records, cfg, of=4)
    assert summary["groups_per_step"] == 4 and summary["useful_groups_per_step"] == 2.0
    assert summary["steps_without_signal"] == 0.5 ** 4


def test_groups_per_generation_is_the_generation_batch_over_k():
    cfg = RunConfig.from_dict({"rloo": {"num_generations": 4, "per_device_train_batch_size": 8,
                                        "gradient_accumulation_steps": 3}})
    assert groups_per_generation(cfg) == 6  # 8 × 3 completions generated at once / 4


def test_filtered_file_goes_beside_a_local_file_and_never_over_one(tmp_path):
    data = tmp_path / "mine.jsonl"
    rows = [{"prompt": f"q{i}", "answer": str(i)} for i in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = RunConfig.from_dict({"data": {"source": "mine.jsonl"}}, base_dir=tmp_path)
    scan_dir = tmp_path / "runs" / runs.SCANS_DIR / "20260101-000000-mine"
    scan_dir.mkdir(parents=True)
    buckets = [MIXED, NEVER_SOLVED, MIXED, ALWAYS_SOLVED]
    runs.append_jsonl(scan_dir / runs.SCAN_FILE, [{"index": i, "row": r, "bucket": b, "mean_total": 0.5}
                                                   for i, (r, b) in enumerate(zip(rows, buckets))])
    runs.write_json_atomic(scan_dir / runs.SCAN_SUMMARY_FILE, {"config": cfg.to_dict(), "base_dir": str(tmp_path), "prompts": 4})
    assert filtered_paths(cfg, scan_dir)[0] == tmp_path / "mine.filtered-20260101-000000-mine.jsonl"
    before = data.read_bytes()
    written = write_filtered(scan_dir)
    assert [json.loads(line) for line in open(written["path"])] == [rows[0], rows[2]]
    assert written["overrides"] == {"data.source": written["path"]} and written["test_path"] is None
    assert data.read_bytes() == before
    assert json.loads(runs.scan_record_for(written["path"]).read_text())["kept"] == 2
    with pytest.raises(StudioError, match="exists already"):
        write_filtered(scan_dir)
    assert written["unscanned"] == 0 and unscanned_words(written, "Prompts to scan: 0") == ""


def test_a_filtered_file_of_a_partial_scan_says_the_unscanned_prompts_are_not_in_it(tmp_path):
    """A scan of 64 of 7,473 training prompts writes a file of at most 64: the page said "the mixed ones of the 64
    scanned prompts" and nothing of the 7,409 rows the run would no longer see."""
    rows = [{"prompt": f"q{i}", "answer": str(i)} for i in range(2)]
    cfg = RunConfig.from_dict({"data": {"source": "demo"}}, base_dir=tmp_path)
    scan_dir = tmp_path / "scan"
    scan_dir.mkdir()
    runs.append_jsonl(scan_dir / runs.SCAN_FILE, [{"index": i, "row": r, "bucket": MIXED, "mean_total": 0.5}
                                                   for i, r in enumerate(rows)])
    runs.write_json_atomic(scan_dir / runs.SCAN_SUMMARY_FILE, {"config": cfg.to_dict(), "base_dir": str(tmp_path),
                                                               "prompts": 2, "of": 7473})
    written = write_filtered(scan_dir)
    assert written["unscanned"] == 7471
    assert unscanned_words(written, "Prompts to scan: 0") == (
        "The other 7471 training prompts were not scanned and are not in the file either: to filter the whole data, "
        "scan all of it (Prompts to scan: 0).")


def test_the_buckets_say_what_one_draw_of_k_completions_cannot_tell():
    """A prompt solved 80 % of the time gets all 4 of 4 right in 41 % of scans and was put under "always solved" (then
    dropped by the filter) with no word of it; a scan where every completion tied called every prompt "never solved",
    full marks included."""
    import doctest

    from rloo_studio import scan

    assert doctest.testmod(scan).failed == 0
    tied = scan.limits_words({"k": 4, "range": {"lowest": 1.0, "highest": 1.0}})
    assert tied.startswith("Every completion of the scan got the same total (1): the scan cannot tell solved from unsolved")
    lines = scan.summary_lines({"prompts": 2, "of": 2, "k": 4, "buckets": {b: 1 for b in scan.BUCKETS},
                                "shares": {b: 0.5 for b in scan.BUCKETS}, "no_spread_share": 0.5, "groups_per_step": 2,
                                "useful_groups_per_step": 1.0, "useful_share_per_step": 0.5, "steps_without_signal": 0.25,
                                "range": {"lowest": 0.0, "highest": 1.0}, "rule": scan.SOLVED_RULE})
    assert any("all 4 right in 41 % of scans" in line and "*" not in line for line in lines)


def test_a_scan_in_which_no_completion_was_scored_says_so_not_the_same_total():
    """Every function returned None (cannot score) for every completion: the scan said "Every completion of the scan got
    the same total (0)", a total no completion got (an audit)."""
    from rloo_studio import scan

    cfg = RunConfig.from_dict({"rloo": {"num_generations": 2}})
    records = [{"prompt": f"p{i}", "totals": [None, None], "completions": ["a", "b"], "mean_total": None} for i in range(3)]
    summary = scan.summarize(records, cfg, of=3)
    words = scan.limits_words(summary)
    assert "same total" not in words, words
    assert words.startswith("No completion of the scan was scored: every reward function returned None"), words
    assert summary["buckets"][NEVER_SOLVED] == 3  # the one rule still places them; the words say why it cannot tell

"""The one rule that offers the format warm-up (rewards.asks.warmup_offer), read by the reward preview and the scan, and the
scan's count of completions writing each format its rewards look for (scan.summarize)."""

from __future__ import annotations

from rloo_studio.config import RunConfig
from rloo_studio.rewards.asks import FORMAT_RARE_SHARE, warmup_offer
from rloo_studio.scan import summarize


def _finding(matched, completions, looks_for="<answer>…</answer>", reward="answer_tag"):
    return {"reward": reward, "looks_for": looks_for, "matched": matched, "completions": completions}


def test_the_warm_up_is_offered_when_almost_no_completion_writes_the_format():
    sentence = warmup_offer([_finding(0, 32)])
    assert "0 of 32" in sentence and "<answer>…</answer>" in sentence and "`answer_tag`" in sentence
    assert "Warm up the format first" in sentence and "Train tab" in sentence  # what to do, in the page's words
    assert warmup_offer([_finding(1, 40)]) is not None  # 2.5 %: almost none
    assert warmup_offer([_finding(int(FORMAT_RARE_SHARE * 40), 40)]) is not None  # the edge counts as almost none


def test_no_offer_when_the_format_is_written_or_nothing_was_sampled():
    assert warmup_offer([]) is None
    assert warmup_offer([_finding(3, 40)]) is None  # 7.5 %: some groups already score differently
    assert warmup_offer([_finding(None, None)]) is None  # the check without completions counts nothing
    assert warmup_offer([_finding(0, 0)]) is None


def test_the_rarest_format_is_named_and_the_others_counted():
    sentence = warmup_offer([_finding(16, 16, "<think>…</think>", "think_format"), _finding(1, 40), _finding(0, 16, "\\boxed{}", "boxed")])
    assert "\\boxed{}" in sentence and "0 of 16" in sentence and "1 other format" in sentence
    assert "<think>" not in sentence


def test_the_scan_counts_the_completions_writing_each_format():
    cfg = RunConfig.from_dict({"rewards": [{"name": "think_format"}], "rloo": {"num_generations": 2}})
    records = [{"prompt": "What is 2+2?", "totals": [0.0, 0.0], "completions": ["4", "four"], "mean_total": 0.0},
               {"prompt": "What is 3+3?", "totals": [0.0, 1.0], "completions": ["6", "<think>3+3</think>6"], "mean_total": 0.5}]
    summary = summarize(records, cfg, of=2)
    [found] = summary["formats"]
    assert (found["looks_for"], found["matched"], found["completions"]) == ("<think>…</think>", 1, 4)
    assert warmup_offer(summary["formats"]) is None  # 1 of 4 write it
    records[1]["completions"][1] = "6"
    assert "0 of 4" in warmup_offer(summarize(records, cfg, of=2)["formats"])


def test_the_command_lines_scan_offers_the_warm_up_by_the_same_rule_in_config_words():
    from rloo_studio import scan

    summary = {"prompts": 16, "of": 40, "k": 4, "seconds": 3, "buckets": {b: 0 for b in scan.BUCKETS},
               "shares": {b: 0.0 for b in scan.BUCKETS}, "no_spread_share": 1.0, "groups_per_step": 2,
               "useful_groups_per_step": 0.0, "useful_share_per_step": 0.0, "steps_without_signal": 1.0, "rule": "r",
               "formats": [{"reward": "answer_tags", "looks_for": "<answer>", "matched": 0, "completions": 64}]}
    lines = "\n".join(scan.summary_lines(summary))
    assert "only 0 of 64 sampled completions write `<answer>`" in lines and "warmup.enabled: true" in lines
    summary["formats"][0]["matched"] = 40
    assert "warm-up" not in "\n".join(scan.summary_lines(summary))

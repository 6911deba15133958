"""The format warm-up offered by the reward preview (rewards.asks.warmup_offer, the rule the scan panel reads too): pasted
completions that never write the format a ticked reward looks for bring the offer into the findings; completions
that write it do not. After the preview the page opens the Train tab's Format warm-up accordion with the same
sentence (train_tab.offer_updates)."""

from __future__ import annotations

import pytest

from helpers.app import Form, connect, served_app
from rloo_studio.ui.train_tab import offer_updates

PROMPT = "Ana has 47 apples and gets 28 more. How many now?"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with served_app(tmp_path_factory.mktemp("warmup-offer-app") / "runs") as url:
        yield url


def _findings(url, pasted: str) -> str:
    app = connect(url)
    form = Form(app)  # the demo's rewards: think_format looks for <think>…</think>
    return app.predict(3, PROMPT, "75", pasted, *form.values, api_name="/preview_rewards")[3]


@pytest.mark.slow
def test_completions_without_the_format_bring_the_offer(served):
    findings = _findings(served, "75\n65\nIt is 75.")
    assert "**A format warm-up could help:** only 0 of 3 sampled completions write `<think>…</think>`" in findings
    assert "Warm up the format first" in findings


@pytest.mark.slow
def test_completions_with_the_format_bring_no_offer(served):
    findings = _findings(served, "<think>47+28</think>75\n<think>47+28</think>65\n<think>47 + 28 = 75</think>75")
    assert "format warm-up" not in findings.lower()


def test_the_offer_opens_the_accordion_and_no_offer_leaves_it():
    line, box = offer_updates("**A format warm-up could help:** …")
    assert line.startswith("**A format warm-up") and box.get("open") is True
    line, box = offer_updates(None)
    assert line == "" and "open" not in box


def test_the_scan_offers_the_warm_up_by_the_same_rule():
    from rloo_studio.ui.scan_panel import summary_markdown

    summary = {"prompts": 8, "of": 8, "k": 2, "seconds": 3.0, "buckets": {"always solved": 0, "mixed": 0, "never solved": 8},
               "shares": {"always solved": 0.0, "mixed": 0.0, "never solved": 1.0}, "no_spread_share": 1.0,
               "groups_per_step": 2, "useful_groups_per_step": 0.0, "useful_share_per_step": 0.0, "steps_without_signal": 1.0,
               "formats": [{"reward": "think_format", "looks_for": "<think>…</think>", "matched": 0, "completions": 16}]}
    assert "**A format warm-up could help:** only 0 of 16 sampled completions" in summary_markdown(summary, "scan-folder")
    summary["formats"][0]["matched"] = 16
    assert "format warm-up" not in summary_markdown(summary, "scan-folder").lower()

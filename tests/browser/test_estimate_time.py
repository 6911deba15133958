"""Estimate time in a real browser at 1280 × 800 (Playwright driving Debian's Chromium), on the bundled demo.

While the trial runs, the page shows its stage with the seconds counting ("loading the model (12 s)…"), never a bar
stuck at 0 %, and no text there lies over the button or over other text (the old page drew its progress over the
line's own words). After it, the first line answers the person's
question for the minutes they typed ("For 10 minutes, use S steps"), with the steps set now; another number of minutes
re-plans from the same measurement. Screenshots: test-artifacts/browser/estimate-*.png.
"""

from __future__ import annotations

import re

from helpers.browser import ARTIFACTS, BROWSER_MARKS, open_tab, opened_page

pytestmark = BROWSER_MARKS

STEPS = 4

# In the page, at one instant: the boxes of the text around Estimate time (the button's label, the minutes field, the
# line under them and whatever the page draws over that line, e.g. a progress overlay), each text line's own rectangles
# with the index of its text node, and the button's box. Old pages drew the trial's progress over the line's own words.
TEXT_BOXES = r"""() => {
    const button = document.querySelector('#estimate-time').getBoundingClientRect();
    const boxes = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    let index = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode(), index++) {
        if (!node.textContent.trim() || !node.parentElement.closest('#estimate-time, #estimate-minutes, #time-estimate'))
            continue;
        const style = getComputedStyle(node.parentElement);
        if (style.visibility === 'hidden' || style.opacity === '0') continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const r of range.getClientRects()) {
            if (r.width > 0 && r.height > 0) boxes.push({node: index, text: node.textContent.trim().slice(0, 60),
                                                          label: !!node.parentElement.closest('#estimate-time'),
                                                          left: r.left, top: r.top, right: r.right, bottom: r.bottom});
        }
    }
    return {button: {left: button.left, top: button.top, right: button.right, bottom: button.bottom}, boxes};
}"""
SLACK_PX = 1  # lines that touch are not over each other


def _over(a: dict, b: dict) -> bool:
    return (a["left"] < b["right"] - SLACK_PX and a["right"] > b["left"] + SLACK_PX and a["top"] < b["bottom"] - SLACK_PX
            and a["bottom"] > b["top"] + SLACK_PX)


def overlapping(seen: dict) -> list:
    """Text drawn over the button, and pairs of texts drawn over each other."""
    boxes = seen["boxes"]
    over_button = [w for w in boxes if not w["label"] and _over(w, seen["button"])]
    pairs = [(a["text"], b["text"]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a["node"] != b["node"] and _over(a, b)]
    return over_button + pairs


def fill(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input")
    box.fill(str(value))
    box.press("Tab")


def steps_that_fit(text: str, minutes: int) -> int:
    """The steps whose run fits the minutes, as the plan says them: first ("For 10 minutes, use 40 steps"), or after
    the epoch limit that leads when they pass over the data many times ("use at most 9 steps: 3 epochs … The whole 10
    minutes would be 40 steps")."""
    whole = re.search(rf"The whole {minutes} minutes would be (\d+) steps", text)
    return int((whole or re.search(rf"For {minutes} minutes, use (\d+) steps", text)).group(1))


def test_estimate_time_shows_its_stages_then_the_steps_for_the_minutes(runs_dir):
    from playwright.sync_api import expect

    with opened_page(runs_dir) as page:
        page.set_viewport_size({"width": 1280, "height": 800})
        open_tab(page, "4 · Train")
        fill(page, "rloo-per-device-train-batch-size", 16)
        fill(page, "rloo-max-steps", STEPS)
        fill(page, "estimate-minutes", 10)
        estimate = page.locator("#time-estimate")
        page.locator("#estimate-time").click()

        # Progress: a stage with its seconds counting, while the worker starts and loads (tens of seconds here).
        stage = re.compile(r"Measuring: (starting|loading the model|first step).*\(\d+ s\)…")
        expect(estimate).to_contain_text(stage, timeout=120_000)
        estimate.scroll_into_view_if_needed()
        seen = page.evaluate(TEXT_BOXES)
        page.screenshot(path=str(ARTIFACTS / "estimate-progress.png"))
        assert seen["boxes"] and not overlapping(seen), f"text over other text or the button {seen['button']}: {overlapping(seen)}"
        assert "0.0 %" not in estimate.inner_text()

        # The answer: the steps that fit the 10 minutes typed, and the time of the steps set now.
        expect(estimate).to_contain_text("For 10 minutes, use ", timeout=300_000)
        expect(estimate).to_contain_text("as set now, about ")
        expect(estimate).to_contain_text(f"for {STEPS} steps")
        expect(estimate).to_contain_text("Measured: loading took ")
        first = estimate.inner_text()
        steps_for_10 = steps_that_fit(first, 10)
        page.screenshot(path=str(ARTIFACTS / "estimate-result.png"))
        seen = page.evaluate(TEXT_BOXES)
        assert not overlapping(seen), f"text over other text or the button after the trial: {overlapping(seen)}"

        # Another budget: the same measurement, re-planned at once (twice the minutes: at least twice the steps less one
        # warm-up step, since loading and the warm-up are paid once).
        fill(page, "estimate-minutes", 20)
        expect(estimate).to_contain_text("For 20 minutes, use ", timeout=30_000)
        steps_for_20 = steps_that_fit(estimate.inner_text(), 20)
        assert steps_for_20 >= 2 * steps_for_10 - 1, (steps_for_10, steps_for_20)
        assert first.split("\n", 1)[1] == estimate.inner_text().split("\n", 1)[1]  # the measured lines unchanged

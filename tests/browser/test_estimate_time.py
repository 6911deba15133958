"""Estimate time in a real browser at 1280 × 800 (Playwright driving Debian's Chromium), on the bundled demo.

While the trial runs, the page shows its stage with the seconds counting ("loading the model (12 s)…"), never a bar
stuck at 0 %, and no word of that progress lies over the button's box. After it, the first line answers the person's
question for the minutes they typed ("For 10 minutes, use S steps"), with the steps set now; another number of minutes
re-plans from the same measurement. Screenshots: test-artifacts/browser/estimate-*.png.
"""

from __future__ import annotations

import re

from helpers.browser import ARTIFACTS, BROWSER_MARKS, opened_page

pytestmark = BROWSER_MARKS

STEPS = 4

# In the page, at one instant: the boxes of every word on the page that could speak of the trial's progress (its stages,
# a percentage), each text line's own rectangles, and the Estimate time button's box. Wherever the page draws the
# progress (its own line, an overlay on the result), its words are among these; none may lie over the button.
PROGRESS_WORDS = r"""() => {
    const button = document.querySelector('#estimate-time').getBoundingClientRect();
    const words = /loading|starting|warm-up|timed|trial|measuring|%/i;
    const boxes = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!words.test(node.textContent) || node.parentElement.closest('#estimate-time')) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const r of range.getClientRects()) {
            if (r.width > 0 && r.height > 0) boxes.push({text: node.textContent.trim().slice(0, 60), left: r.left, top: r.top,
                                                          right: r.right, bottom: r.bottom});
        }
    }
    return {button: {left: button.left, top: button.top, right: button.right, bottom: button.bottom}, boxes};
}"""


def overlapping(seen: dict) -> list[dict]:
    b = seen["button"]
    return [w for w in seen["boxes"]
            if w["left"] < b["right"] and w["right"] > b["left"] and w["top"] < b["bottom"] and w["bottom"] > b["top"]]


def fill(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input")
    box.fill(str(value))
    box.press("Tab")


def test_estimate_time_shows_its_stages_then_the_steps_for_the_minutes(runs_dir):
    from playwright.sync_api import expect

    with opened_page(runs_dir) as page:
        page.set_viewport_size({"width": 1280, "height": 800})
        page.get_by_role("tab", name="4 · Train").click()
        fill(page, "rloo-per-device-train-batch-size", 16)
        fill(page, "rloo-max-steps", STEPS)
        fill(page, "estimate-minutes", 10)
        estimate = page.locator("#time-estimate")
        page.locator("#estimate-time").click()

        # Progress: a stage with its seconds counting, while the worker starts and loads (tens of seconds here).
        stage = re.compile(r"Measuring: (starting|loading the model|first step).*\(\d+ s\)…")
        expect(estimate).to_contain_text(stage, timeout=120_000)
        estimate.scroll_into_view_if_needed()
        seen = page.evaluate(PROGRESS_WORDS)
        page.screenshot(path=str(ARTIFACTS / "estimate-progress.png"))
        assert not overlapping(seen), f"progress words over the Estimate time button {seen['button']}: {overlapping(seen)}"
        assert "0.0 %" not in estimate.inner_text()

        # The answer: the steps that fit the 10 minutes typed, and the time of the steps set now.
        expect(estimate).to_contain_text("For 10 minutes, use ", timeout=300_000)
        expect(estimate).to_contain_text("as set now, about ")
        expect(estimate).to_contain_text(f"for {STEPS} steps")
        expect(estimate).to_contain_text("Measured: loading took ")
        first = estimate.inner_text()
        steps_for_10 = int(re.search(r"For 10 minutes, use (\d+) steps", first).group(1))
        page.screenshot(path=str(ARTIFACTS / "estimate-result.png"))
        seen = page.evaluate(PROGRESS_WORDS)
        assert not overlapping(seen), f"the result's words over the Estimate time button: {overlapping(seen)}"

        # Another budget: the same measurement, re-planned at once (twice the minutes: at least twice the steps less one
        # warm-up step, since loading and the warm-up are paid once).
        fill(page, "estimate-minutes", 20)
        expect(estimate).to_contain_text("For 20 minutes, use ", timeout=30_000)
        steps_for_20 = int(re.search(r"For 20 minutes, use (\d+) steps", estimate.inner_text()).group(1))
        assert steps_for_20 >= 2 * steps_for_10 - 1, (steps_for_10, steps_for_20)
        assert first.split("\n", 1)[1] == estimate.inner_text().split("\n", 1)[1]  # the measured lines unchanged

"""Refusals are seen where the person is looking (Playwright driving Debian's Chromium, 1400 × 900).

While a run trains, Send in Chat, Evaluate and a merged Export are refused, and Resume in the Runs tab
refuses a finished run: each time a message lies inside the viewport right after the click (its box
against the viewport's, not just "somewhere on the page"). When the training run ends, the chat's and
Evaluate's "is training" lines clear by themselves.
"""

from __future__ import annotations

import json
import os

from helpers.browser import ARTIFACTS, BROWSER_MARKS, open_tab, opened_page

pytestmark = BROWSER_MARKS
HEIGHT = 900  # the viewport's, at the width every page is checked at
RUN_ID = "20260101-000000-done"
BUSY_ID = "20260101-000001-busy"


# In the page, at one instant: is a toast with these words shown, with its whole box inside the viewport? Asked in one
# step because a toast closes by itself (two separate questions raced it on a busy machine).
TOAST_IN_VIEW = """words => [...document.querySelectorAll('.toast-body')].some(t => {
    const r = t.getBoundingClientRect();
    return t.textContent.includes(words) && r.width > 0 && r.height > 0 && r.left >= 0 && r.top >= 0
        && r.right <= window.innerWidth && r.bottom <= window.innerHeight;
})"""


def assert_seen(page, words: str) -> None:
    """A visible message with `words` inside the viewport (a toast or the line next to the button)."""
    toast = page.locator(".toast-body").filter(has_text=words).last
    try:
        page.wait_for_function(TOAST_IN_VIEW, arg=words, timeout=60_000)
    except Exception as exc:  # noqa: BLE001 - say where it was (if anywhere) instead of a bare timeout
        where = toast.bounding_box(timeout=1000) if toast.count() else "no such message"
        raise AssertionError(f"the message {words!r} was not seen inside the viewport: {where}") from exc
    page.locator(".toast-body .toast-close").evaluate_all("buttons => buttons.forEach(b => b.click())")  # the next one alone


def test_refusals_are_in_sight_and_busy_lines_clear(runs_dir, adapter_run):
    from playwright.sync_api import expect

    adapter_run(runs_dir / RUN_ID)
    busy = runs_dir / BUSY_ID
    busy.mkdir()
    (busy / "config.yaml").write_text((runs_dir / RUN_ID / "config.yaml").read_text())
    (busy / "status.json").write_text(json.dumps({"state": "running", "pid": os.getpid(), "step": 1, "max_steps": 10}))
    with opened_page(runs_dir, height=HEIGHT) as page:

        open_tab(page, "5 · Chat")
        expect(page.locator("#chat-run input")).to_have_value(RUN_ID)
        page.locator("#chat-prompt textarea").fill("Hello?")
        page.locator("#chat-send").click()
        assert_seen(page, f"Run {BUSY_ID} is training")
        expect(page.locator("#chat-status")).to_contain_text("is training")
        page.screenshot(path=str(ARTIFACTS / "refused-chat.png"))

        open_tab(page, "6 · Evaluate")
        expect(page.locator("#eval-run input")).to_have_value(RUN_ID)
        page.locator("#eval-start").click()
        assert_seen(page, f"Run {BUSY_ID} is training")
        expect(page.locator("#eval-summary")).to_contain_text("is training")

        open_tab(page, "7 · Export")
        expect(page.locator("#export-run input")).to_have_value(RUN_ID)
        page.locator("#export-format label").filter(has_text="merged").first.click()
        page.locator("#export-start").click()
        assert_seen(page, f"Run {BUSY_ID} is training")

        open_tab(page, "Runs")
        page.locator("#run-picker input").fill(RUN_ID)
        page.locator("#run-picker input").press("Enter")
        expect(page.locator("#run-detail-status")).to_contain_text("finished")
        page.locator("#run-resume").click()
        assert_seen(page, "Could not resume")
        expect(page.locator("#runs-message")).to_contain_text("has finished all its steps")

        # The training run ends: the lines that said it trains clear on the next poll, without a click.
        (busy / "status.json").write_text(json.dumps({"state": "stopped", "step": 1, "max_steps": 10}))
        expect(page.locator("#eval-summary")).not_to_contain_text("is training", timeout=30_000)
        open_tab(page, "5 · Chat")
        expect(page.locator("#chat-status")).not_to_contain_text("is training", timeout=30_000)

"""Writing a reward in the browser: type it in the editor, check it, tick it, preview it on the demo model,
and see each completion's rewards and leave-one-out advantage. Screenshot: test-artifacts/browser/6-reward-preview.png."""

from __future__ import annotations

from helpers.browser import ARTIFACTS, BROWSER_MARKS, opened_page

pytestmark = BROWSER_MARKS

REWARD = "def brief(completions, **kwargs):\n    return [1.0 if len(c[0]['content']) < 24 else 0.0 for c in completions]\n"


def test_edit_check_tick_and_preview_a_reward(runs_dir):
    from playwright.sync_api import expect

    with opened_page(runs_dir) as page:
        page.get_by_role("tab", name="3 · Rewards").click()

        editor = page.locator("#reward-code .cm-content")
        editor.click()
        page.keyboard.press("Control+A")
        page.keyboard.press("Delete")
        page.keyboard.insert_text("def brief(completions, **kwargs):\n    return [lenn(c) for c in completions]\n")
        expect(page.locator("#code-lint")).to_contain_text("lenn is not defined")   # caught while typing, nothing ran
        page.keyboard.press("Control+A")
        page.keyboard.press("Delete")
        page.keyboard.insert_text(REWARD)
        expect(page.locator("#code-lint")).to_contain_text("syntax is fine")
        page.locator("#check-code").click()
        expect(page.locator("#code-check")).to_contain_text("1 function(s) found: brief")
        page.locator("#user-rewards").get_by_label("Toggle all: use").check()  # tick "use" for the (only) function

        page.locator("#preview-prompts input[type=number]").fill("2")
        page.locator("#preview-run").click()
        expect(page.locator("#preview-status")).to_contain_text("Scored 16 completions", timeout=180_000)
        table = page.locator("#preview-table")
        expect(table).to_contain_text("brief")
        expect(table).to_contain_text("advantage")
        expect(page.locator("#preview-findings")).to_contain_text("Learnability")
        page.locator("#preview-table").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "6-reward-preview.png"), full_page=True)

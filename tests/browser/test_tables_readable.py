"""Tables readable at 1280 × 800 (Playwright driving Debian's Chromium) on a finished tiny run.

Evaluate → Examples, Train → Recent completions and the Rewards tab's pinned examples: each key column lies inside
the part of its table one sees without scrolling sideways (its header's box inside the table's visible box and the
viewport), is wide enough to read a word, and its header breaks only between words (never "a/n/s/w/e/r", one letter
per line). The run is the session's trained tiny run (4 real RLOO steps); the evaluation is run from the page.
"""

from __future__ import annotations

from helpers.browser import ARTIFACTS, BROWSER_MARKS, open_tab, opened_page

pytestmark = BROWSER_MARKS
WIDTH, HEIGHT = 1280, 800
MIN_TEXT_PX = 160  # a text column (answer, completion, reply) shows at least a short phrase per line
MIN_NUMBER_PX = 56  # a number column shows "-12.345"

# For each header of the table named: its box, the box of the table's part one sees (the nearest ancestor that
# clips or scrolls sideways), and how many lines its words were laid out on (one rect per line of text).
HEADERS = """([id, names]) => {
    const table = document.querySelector('#' + id + ' table');
    if (!table) return {error: 'no table in #' + id};
    let clip = table.parentElement;
    while (clip && clip !== document.body) {
        const style = getComputedStyle(clip);
        if (['auto', 'scroll', 'hidden'].includes(style.overflowX)) break;
        clip = clip.parentElement;
    }
    const seen = (clip || document.body).getBoundingClientRect();
    const out = {seen: {left: seen.left, right: seen.right}, viewport: window.innerWidth, columns: {}};
    for (const th of table.querySelectorAll('thead th')) {
        const name = th.getAttribute('title') || th.textContent.trim();
        if (!names.includes(name)) continue;
        const box = th.getBoundingClientRect();
        const range = document.createRange();
        range.selectNodeContents(th.querySelector('.header') || th);  // the header's words, not its menu button
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        out.columns[name] = {left: box.left, right: box.right, width: box.width, lines: tops.size};
    }
    return out;
}"""


def unreadable(page, elem_id: str, text_columns: list[str], number_columns: list[str] = ()) -> list[str]:
    """What is wrong with the table's key columns (empty when each is in sight, wide enough and its header unbroken)."""
    page.locator(f"#{elem_id}").scroll_into_view_if_needed()
    found = page.evaluate(HEADERS, [elem_id, text_columns + list(number_columns)])
    page.screenshot(path=str(ARTIFACTS / f"tables-{elem_id}.png"), full_page=False)
    if "error" in found:
        return [found["error"]]
    problems = [f"#{elem_id} has no header {c!r}" for c in text_columns + list(number_columns) if c not in found["columns"]]
    seen = found["seen"]
    for name, box in found["columns"].items():
        where = f"#{elem_id} column {name!r}: {box}, visible part {seen}, viewport {found['viewport']}"
        if box["left"] < max(0, seen["left"]) - 1 or box["right"] > min(found["viewport"], seen["right"]) + 1:
            problems.append(f"scrolled out of sight: {where}")
        if box["width"] < (MIN_TEXT_PX if name in text_columns else MIN_NUMBER_PX):
            problems.append(f"too narrow: {where}")
        if box["lines"] > len(name.split()):
            problems.append(f"header broken inside a word: {where}")
    return problems


def test_key_columns_are_readable_at_1280(trained_tiny_run):
    from playwright.sync_api import expect

    run_dir, _ = trained_tiny_run
    problems: list[str] = []  # every table is looked at, so one run of the test shows each one that fails
    with opened_page(run_dir.parent, height=HEIGHT) as page:
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

        # Rewards: the pinned examples (the demo's example pin, a prompt and a completion in words).
        open_tab(page, "3 · Rewards")
        expect(page.locator("#pinned")).to_contain_text("Ana has 47 apples")
        problems += unreadable(page, "pinned", ["prompt", "completion", "answer"], ["min total", "max total"])

        # Train: the finished run's recent completions, watched from the Runs tab.
        open_tab(page, "Runs")
        page.locator("#runs-refresh").click()
        page.locator("#run-picker input").fill(run_dir.name)
        page.locator("#run-picker input").press("Enter")
        expect(page.locator("#run-detail-status")).to_contain_text("finished", timeout=60_000)
        page.locator("#run-watch").click()
        open_tab(page, "4 · Train")
        expect(page.locator("#samples")).to_contain_text("numeric_answer=", timeout=60_000)
        problems += unreadable(page, "samples", ["prompt", "reply", "rewards"], ["total", "KL penalty", "advantage"])
        page.locator("#reward-plot").screenshot(path=str(ARTIFACTS / "tables-reward-plot.png"))  # whole steps on its axis
        print("\n".join(problems))  # seen even if the evaluation below does not finish

        # Evaluate: base and tuned on three held-out prompts, then the example pairs.
        open_tab(page, "6 · Evaluate")
        page.locator("#eval-refresh").click()
        expect(page.locator("#eval-run input")).to_have_value(run_dir.name, timeout=30_000)
        limit = page.locator("#eval-limit input")
        limit.fill("3")
        limit.press("Tab")
        page.locator("#eval-start").click()
        expect(page.locator("#eval-summary")).to_contain_text("3 held-out prompts", timeout=600_000)
        page.get_by_text("Examples", exact=True).click()
        expect(page.locator("#eval-examples")).to_contain_text("What is", timeout=30_000)
        problems += unreadable(page, "eval-examples", ["prompt", "answer", "base", "tuned"])
    assert not problems, "\n".join(problems)

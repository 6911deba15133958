"""Every message is current or visibly marked outdated (Playwright driving Debian's Chromium, 1400 px wide).

What Start would refuse is said as the person types and goes once fixed (a batch that k does not divide, no reward
chosen); results that cost a run of their own (the time estimate, the reward preview with its hack probes, the pinned
examples' check, the data check) get an "Outdated" line naming what changed since, gone once they are current again;
a newly uploaded file is checked at once; a reload puts an outdated preview back, still marked. Start asks before
training with pinned examples that fail. One served app and one page for the whole module (each test goes on where the
last left the form).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from helpers.browser import BROWSER_MARKS, fill_cell, open_tab, opened_page

from rloo_studio import runs
from rloo_studio.ui import text

pytestmark = BROWSER_MARKS

K, BATCH, STEPS = text.RLOO_FIELDS["num_generations"][0], text.RLOO_FIELDS["per_device_train_batch_size"][0], text.RLOO_FIELDS["max_steps"][0]
SHOP_CSV = "question,order_id,answer\n" + "".join(f"Where is my order {1000 + i}?,A-{1000 + i},It ships today.\n" for i in range(40))


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    runs_dir = tmp_path_factory.mktemp("stale") / "runs"
    with opened_page(runs_dir) as page:
        yield SimpleNamespace(runs_dir=runs_dir, page=page, folder=runs_dir.parent)


def _fill(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input").first
    box.fill(str(value))
    box.press("Tab")


def _value(page, elem_id: str) -> str:
    return page.locator(f"#{elem_id} input").first.input_value()


def _append_code(page, line: str) -> None:
    """A line typed at the end of the reward code, the editor left focused (no blur: nothing is checked yet)."""
    page.locator("#reward-code .cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\n" + line + "\n")


def _assert_on_page(page, elem_id: str) -> None:
    """The page has an element of this id, shown or not (asked of the page's config: a hidden row is not drawn)."""
    config = page.evaluate("fetch('config').then(r => r.json())")
    assert elem_id in {c.get("props", {}).get("elem_id") for c in config["components"]}, f"the page has no #{elem_id}"


def test_the_batch_message_comes_as_typed_and_goes_once_fixed(studio):
    from playwright.sync_api import expect

    page = studio.page
    open_tab(page, "4 · Train")
    k, batch = int(_value(page, "rloo-num-generations")), _value(page, "rloo-per-device-train-batch-size")
    problems = page.locator("#start-problems")
    _fill(page, "rloo-per-device-train-batch-size", k + 2)
    expect(problems).to_contain_text(f"“{BATCH}” {k + 2} is not divisible by “{K}” {k}", timeout=30_000)  # before any Start
    page.locator("#start-training").click()
    expect(problems).to_contain_text("is not divisible")
    _fill(page, "rloo-per-device-train-batch-size", batch)
    expect(problems).to_have_text("", timeout=30_000)
    assert not list(studio.runs_dir.glob(f"*/{runs.STATUS_FILE}")), "Start started a run with the problem"


def test_none_chosen_goes_once_a_reward_is_ticked(studio):
    from playwright.sync_api import expect

    page = studio.page
    open_tab(page, "3 · Rewards")
    table = page.locator("#builtin-rewards")
    boxes = [table.locator(f"[data-testid=cell-{i}-0] input[type=checkbox]") for i in range(table.locator("[data-testid^='cell-'][data-testid$='-0']").count())]
    ticked = [box for box in boxes if box.is_checked()]
    assert ticked, "the demo ticks builtin rewards"
    for box in ticked:  # each unticked, as a person does
        box.click()
        expect(box).not_to_be_checked()
    open_tab(page, "4 · Train")
    expect(page.locator("#start-problems")).to_contain_text("none chosen", timeout=30_000)
    open_tab(page, "3 · Rewards")
    for box in ticked:  # and ticked again
        box.click()
        expect(box).to_be_checked()
    open_tab(page, "4 · Train")
    expect(page.locator("#start-problems")).to_have_text("", timeout=30_000)


def test_an_estimate_is_marked_outdated_when_k_or_the_batch_change(studio):
    """The estimate's answer for k and a batch it does not divide (said at once, without a trial run: the mark does not
    depend on what the answer was), then k changed: the answer speaks of a k no longer there."""
    from playwright.sync_api import expect

    page = studio.page
    open_tab(page, "4 · Train")
    k, batch = _value(page, "rloo-num-generations"), _value(page, "rloo-per-device-train-batch-size")
    line = page.locator("#time-estimate-outdated")
    expect(line).to_be_attached(timeout=30_000)
    _fill(page, "rloo-per-device-train-batch-size", 10)
    page.locator("#estimate-time").click()
    expect(page.locator("#time-estimate")).to_contain_text("is not divisible", timeout=60_000)
    expect(line).to_have_text("", timeout=60_000)
    _fill(page, "rloo-num-generations", 5)
    expect(line).to_contain_text(f"Outdated — “{K}” changed since", timeout=120_000)
    expect(line).to_contain_text("press Estimate time again")
    _fill(page, "rloo-num-generations", k)  # back as it was measured: current again
    expect(line).to_have_text("", timeout=30_000)
    _fill(page, "rloo-per-device-train-batch-size", batch)
    expect(line).to_contain_text(f"Outdated — “{BATCH}” changed since", timeout=120_000)


def test_preview_and_probe_results_are_marked_outdated_when_the_code_changes(studio):
    from playwright.sync_api import expect

    page = studio.page
    open_tab(page, "3 · Rewards")
    lines = [page.locator("#preview-outdated"), page.locator("#preview-outdated-2")]  # above the table, above the findings
    for line in lines:
        expect(line).to_be_attached(timeout=30_000)
    page.locator("#preview-prompt textarea, #preview-prompt input").first.fill("What is 2 + 2?")
    page.locator("#preview-answer textarea, #preview-answer input").first.fill("4")
    page.locator("#preview-pasted textarea").fill("<think>2+2</think>4\n<think>2+2</think>5")
    page.locator("#preview-run").click()
    expect(page.locator("#preview-status")).to_contain_text("Scored 2 completions", timeout=600_000)
    for line in lines:
        expect(line).to_have_text("", timeout=60_000)
    _append_code(page, "# a change after the preview")
    for line in lines:
        expect(line).to_contain_text(f"Outdated — “{text.CODE}” changed since", timeout=120_000)
        expect(line).to_contain_text("press Sample and score again")
    # Leaving the editor checks the pinned examples (the next test reads that report, after the reload below).
    page.locator("#preview-status").click()
    expect(page.locator("#pinned-result")).to_contain_text("pinned examples pass", timeout=600_000)
    # A reload puts it all back as it was (the typed prompt too, or the prompt would be named as changed), still outdated.
    page.reload()
    expect(page.locator("#preset-notes")).to_contain_text("The form shows your last settings", timeout=120_000)
    open_tab(page, "3 · Rewards")
    expect(page.locator("#preview-status")).to_contain_text("Scored 2 completions", timeout=60_000)
    expect(page.locator("#preview-table [data-testid=cell-1-3]")).to_contain_text("5", timeout=60_000)  # the 2nd answer
    for line in lines:
        expect(line).to_contain_text("before this page was loaded", timeout=60_000)
        expect(line).to_contain_text(f"Outdated — “{text.CODE}” changed since", timeout=60_000)
    expect(page.locator("#pinned-result")).to_contain_text("pinned examples pass", timeout=60_000)


def test_the_pinned_check_is_marked_outdated_until_the_code_is_checked_again(studio):
    from playwright.sync_api import expect

    page = studio.page
    open_tab(page, "3 · Rewards")
    result, line = page.locator("#pinned-result"), page.locator("#pinned-result-outdated")
    expect(line).to_be_attached(timeout=30_000)
    expect(result).to_contain_text("pinned examples pass", timeout=600_000)
    page.locator("#check-code").click()  # the code as it is now (the last test changed it)
    expect(line).to_have_text("", timeout=600_000)
    _append_code(page, "# another change")
    expect(line).to_contain_text(f"Outdated — “{text.CODE}” changed since", timeout=120_000)
    page.locator("#preview-status").click()  # leaving the editor checks the code and the pinned examples again
    expect(line).to_have_text("", timeout=600_000)
    expect(result).to_contain_text("pinned examples pass")


def test_start_asks_before_training_with_pinned_examples_that_fail(studio):
    from playwright.sync_api import expect

    page, runs_dir = studio.page, studio.runs_dir
    _assert_on_page(page, "start-confirm-row")
    open_tab(page, "3 · Rewards")
    result = page.locator("#pinned-result")
    fill_cell(page, "#pinned", 0, 4, 0.5)  # the demo's example scores above 0.5: it fails now
    expect(result).to_contain_text("0/1 pinned examples pass", timeout=600_000)
    open_tab(page, "4 · Train")
    _fill(page, "rloo-max-steps", 1)
    question, row = page.locator("#start-confirm"), page.locator("#start-confirm-row")
    page.locator("#start-training").click()
    expect(question).to_contain_text("1 of 1 pinned examples fail", timeout=120_000)
    expect(question).to_contain_text("start anyway?")
    expect(row).to_be_visible()
    page.locator("#start-cancel").click()
    expect(row).to_be_hidden(timeout=30_000)
    assert not list(runs_dir.glob(f"*/{runs.STATUS_FILE}")), "Start started a run before the person answered"
    page.locator("#start-training").click()
    expect(question).to_contain_text("1 of 1 pinned examples fail", timeout=120_000)
    page.locator("#start-anyway").click()
    expect(row).to_be_hidden(timeout=120_000)
    expect(page.locator("#train-status")).to_contain_text("finished", timeout=600_000)
    assert len(list(runs_dir.glob(f"*/{runs.STATUS_FILE}"))) == 1


def test_a_newly_uploaded_file_is_checked_and_an_old_check_marked_outdated(studio):
    from playwright.sync_api import expect

    page = studio.page
    open_tab(page, "2 · Data")
    summary, line = page.locator("#data-summary"), page.locator("#data-summary-outdated")
    page.locator("#preview-data").click()
    expect(summary).to_contain_text("training rows", timeout=60_000)
    expect(summary).not_to_contain_text("order_id")
    page.get_by_label(text.SOURCE_CHOICES[1]).check()
    shop = studio.folder / "shop.csv"
    shop.write_text(SHOP_CSV, encoding="utf-8")
    page.locator("#data-upload input[type=file]").set_input_files(str(shop))
    expect(summary).to_contain_text("order_id", timeout=120_000)  # checked without a press: the demo's check is gone
    expect(summary).to_contain_text("36 training rows, 4 held out")
    expect(line).to_have_text("", timeout=60_000)
    page.locator("#data-summary").scroll_into_view_if_needed()
    box = page.get_by_label(text.SYSTEM_PROMPT)
    box.fill("Answer in one short polite sentence.")
    box.press("Tab")
    expect(line).to_contain_text(f"Outdated — “{text.SYSTEM_PROMPT}” changed since", timeout=120_000)
    expect(line).to_contain_text(f"press {text.PREVIEW_DATA} again")
    # The Seed field chooses the held-out rows training will use, so the check speaks of it too (an audit: the check
    # split with seed 42 whatever the field said).
    page.locator("#preview-data").click()
    expect(line).to_have_text("", timeout=60_000)
    open_tab(page, "4 · Train")
    page.get_by_role("button", name="Advanced").click()
    _fill(page, "rloo-seed", 7)
    open_tab(page, "2 · Data")
    expect(line).to_contain_text(f"Outdated — “{text.field_label('rloo', 'seed')}” changed since", timeout=120_000)
    open_tab(page, "4 · Train")
    _fill(page, "rloo-seed", 42)  # back to the value it was checked with: the line goes
    page.get_by_role("button", name="Advanced").click()
    open_tab(page, "2 · Data")
    expect(line).to_have_text("", timeout=60_000)

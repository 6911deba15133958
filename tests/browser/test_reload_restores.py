"""A reload shows the form exactly as it was, and the demo's example rewards do not follow a person onto their own data.

One served app and one page for the module (Playwright driving Debian's Chromium, 1400 px wide). First the demo's rewards:
choosing a file instead of the demo's data unticks the builtins the demo ticked and removes its pinned example, and
the page says so; Stop cannot be pressed with nothing training. Then a person's own form — a non-demo preset with a
model folder of their own, a CSV with extra columns (question, order_id, ref) whose answer column is `ref`, builtin
weights and parameters changed (one ticked, one not), a judge rubric of their own, a rule-builder block, a changed step
count — comes back after a reload field by field, read from the page, with the reward panel still listing the data's
columns, on the tab the person was on, with the data check and Estimate time's answer each marked with when it was made
(the data check, made before its columns were chosen, also outdated).
Screenshots go to test-artifacts/browser/reload-*.png.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from helpers.browser import ARTIFACTS, BROWSER_MARKS, fill_cell, open_tab, opened_page, type_code

pytestmark = BROWSER_MARKS

ROWS = [(f"Where is order {1000 + i}?", f"A-{1000 + i}", f"Order A-{1000 + i} ships today.") for i in range(30)]
OWN_RUBRIC = "One short polite sentence that names the order number."
# The person's own reward code: two functions, one ticked, one not (a reload lost the tick: found walking the app).
OWN_CODE = ("def names_the_order(completions, order_id, **kwargs):\n"
            "    return [1.0 if o in str(c) else 0.0 for c, o in zip(completions, order_id)]\n\n\n"
            "def short(completions, **kwargs):\n"
            "    return [1.0 if len(str(c)) < 200 else 0.0 for c in completions]\n")
ESTIMATED = "is not a model folder"  # Estimate time's answer for a model folder with no model in it
# Rows of the builtin table (rloo_studio.rewards.BUILTIN_REWARDS' order): what the demo ticks, and two the test changes.
NUMERIC_ANSWER, THINK_FORMAT, THINK_LENGTH, LENGTH_PENALTY = 0, 3, 4, 6


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    from playwright.sync_api import expect

    expect.set_options(timeout=90_000)  # a loaded 2-core machine answers slowly; no step depends on it being fast
    folder = tmp_path_factory.mktemp("reload")
    runs_dir = folder / "runs"
    with opened_page(runs_dir, height=1000) as page:
        yield SimpleNamespace(runs_dir=runs_dir, folder=folder, page=page)


def _shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"reload-{name}.png"), full_page=True)


def _ticked(page, row: int) -> bool:
    return page.locator(f"#builtin-rewards [data-testid=cell-{row}-0] input[type=checkbox]").is_checked()


def _cell(page, table: str, row: int, column: int) -> str:
    return page.locator(f"{table} [data-testid=cell-{row}-{column}]").inner_text().strip().split("\n")[0].strip()


def _expect_cell(page, table: str, row: int, column: int, want) -> None:
    """Wait until a table cell shows `want` (a number compared as a number)."""
    import time

    deadline = time.time() + 60
    while True:
        shown = _cell(page, table, row, column)
        try:
            same = float(shown) == float(want)
        except ValueError:
            same = shown == str(want)
        if same or time.time() > deadline:
            break
        time.sleep(0.5)
    assert same, f"{table} cell {row},{column} shows {shown!r}, not {want!r}"


def _saved(studio, *values: str) -> None:
    """Wait (up to a minute) until the page has saved the form with every one of `values` in it, as a person waits a
    moment before a reload; what the reloaded page shows is what the test checks."""
    import time

    draft = studio.runs_dir / ".studio" / "draft-form.json"
    deadline = time.time() + 60
    while time.time() < deadline:
        text = draft.read_text(encoding="utf-8") if draft.is_file() else ""
        if all(v in text for v in values):
            return
        time.sleep(0.5)


def test_own_data_drops_the_demo_rewards_and_its_pinned_example(studio):
    from playwright.sync_api import expect

    page = studio.page
    # Nothing trains: Stop cannot be pressed.
    open_tab(page, "4 · Train")
    expect(page.locator("#stop-training")).to_be_disabled()

    open_tab(page, "3 · Rewards")
    expect(page.locator("#pinned")).to_contain_text("Ana has 47 apples")
    assert _ticked(page, NUMERIC_ANSWER) and _ticked(page, THINK_FORMAT) and _ticked(page, THINK_LENGTH)

    open_tab(page, "2 · Data")
    page.get_by_role("radio", name="A file on this computer").check()
    open_tab(page, "3 · Rewards")
    note = page.locator("#demo-rewards-note")
    expect(note).to_contain_text("The demo's example rewards were removed because your data is not the demo's")
    expect(note).to_contain_text("numeric_answer, think_format, think_length")
    expect(page.locator("#pinned")).not_to_contain_text("Ana has 47 apples")
    assert not any(_ticked(page, row) for row in (NUMERIC_ANSWER, THINK_FORMAT, THINK_LENGTH))
    _expect_cell(page, "#builtin-rewards", THINK_LENGTH, 2, 1.0)  # the demo's weight (0.1) went with it
    _shot(page, "1-demo-dropped")

    # Not brought back by a reload.
    _saved(studio, '"data-source": "A file on this computer"')
    page.reload()
    expect(page.locator("#preset-notes")).to_contain_text("The form shows your last settings", timeout=120_000)
    open_tab(page, "3 · Rewards")
    expect(page.locator("#builtin-rewards")).to_contain_text("numeric_answer")
    assert not any(_ticked(page, row) for row in (NUMERIC_ANSWER, THINK_FORMAT, THINK_LENGTH))
    expect(page.locator("#pinned")).not_to_contain_text("Ana has 47 apples")


def test_a_reload_restores_the_form_exactly(studio):
    from playwright.sync_api import expect

    page, folder = studio.page, studio.folder
    data = folder / "orders.csv"
    data.write_text("question,order_id,ref\n" + "".join(f"{q},{o},{r}\n" for q, o, r in ROWS), encoding="utf-8")
    model = folder / "my-smollm"
    model.mkdir(exist_ok=True)

    # Model: a preset other than the demo, then a model folder of the person's own.
    open_tab(page, "1 · Model & hardware")
    page.locator("#preset input").click()
    page.get_by_role("option", name=re.compile(r"^cpu-small-real")).click()
    page.locator("#apply-preset").click()
    expect(page.locator("#preset-notes")).to_contain_text("cpu-small-real")
    name = page.locator("#model-name input")
    name.fill(str(model))
    name.press("Enter")

    # Data: the CSV, its answer column `ref` (which no ticked reward reads yet).
    open_tab(page, "2 · Data")
    page.get_by_role("radio", name="A file on this computer").check()
    page.locator("#data-path input, #data-path textarea").first.fill(str(data))
    page.locator("#preview-data").click()
    expect(page.locator("#data-summary")).to_contain_text("order_id")
    page.locator("#prompt-column input").fill("question")
    page.locator("#prompt-column input").press("Enter")
    page.locator("#answer-column input").fill("ref")
    page.locator("#answer-column input").press("Enter")

    # Rewards: the panel lists the columns; a builtin ticked with its weight and parameters changed, another left
    # unticked with its weight changed; a judge with a rubric of the person's own.
    open_tab(page, "3 · Rewards")
    expect(page.locator("#reward-receives")).to_contain_text("order_id")
    # One answer column: the one chosen in the Data tab is what the answer-checking builtins' parameters show (issue 38).
    expect(page.locator(f"#builtin-rewards [data-testid=cell-{NUMERIC_ANSWER}-3]")).to_contain_text('"answer_column": "ref"')
    params = json.dumps({"target_tokens": 40, "per_token": 0.01})
    fill_cell(page, "#builtin-rewards", LENGTH_PENALTY, 2, "0.3")
    fill_cell(page, "#builtin-rewards", LENGTH_PENALTY, 3, params)
    page.locator(f"#builtin-rewards [data-testid=cell-{LENGTH_PENALTY}-0] input[type=checkbox]").check()
    fill_cell(page, "#builtin-rewards", THINK_LENGTH, 2, "2.5")
    page.locator("#judge-use input").check()
    expect(page.locator("#judge-rubric textarea")).not_to_have_value("")  # ticking fills in the first template
    page.locator("#judge-rubric textarea").fill(OWN_RUBRIC)
    expect(page.locator("#judge-rubric-template input")).to_have_value("(your own rubric)")
    # Their own code, checked; its first function ticked, the second not.
    type_code(page, OWN_CODE)
    page.locator("#check-code").click()
    expect(page.locator("#code-check")).to_contain_text("short")
    page.locator("#user-rewards [data-testid=cell-0-0] input[type=checkbox]").check()
    # The rule builder: a block added.
    page.locator("#rule-builder").get_by_text("Build a reward from rules").click()
    page.locator("#rule-block input").click()
    page.get_by_role("option", name="Reply contains a column's value").click()
    page.locator("#rule-add").click()
    expect(page.locator("#rule-blocks")).to_contain_text("contains")

    # Train: a step count of the person's own.
    open_tab(page, "4 · Train")
    steps = page.locator("#rloo-max-steps input")
    steps.fill("37")
    steps.press("Tab")
    page.locator("#estimate-time").click()  # (the model folder holds no model: it says so at once)
    expect(page.locator("#time-estimate")).to_contain_text(ESTIMATED)
    _shot(page, "2-before")

    _saved(studio, str(model), '"answer-column": "ref"', '"target_tokens\\": 40', "2.5", OWN_RUBRIC, '"rloo-max-steps": 37',
           '[true, "names_the_order"')
    page.reload()
    expect(page.locator("#preset-notes")).to_contain_text("The form shows your last settings", timeout=120_000)
    # It opens where the person was, with the results they had, each saying when it was computed.
    expect(page.get_by_role("tab", name="4 · Train")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#time-estimate")).to_contain_text(ESTIMATED)
    expect(page.locator("#time-estimate-outdated")).to_contain_text("before this page was loaded")
    expect(page.locator("#preset-notes")).to_contain_text("cpu-small-real")
    expect(page.locator("#model-name input")).to_have_value(str(model))
    expect(page.locator("#preset input")).to_have_value(re.compile(r"^cpu-small-real"))

    open_tab(page, "2 · Data")
    expect(page.get_by_role("radio", name="A file on this computer")).to_be_checked()
    expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(str(data))
    expect(page.locator("#prompt-column input")).to_have_value("question")
    expect(page.locator("#answer-column input")).to_have_value("ref")
    expect(page.locator("#data-summary")).to_contain_text("order_id")  # the data check, made before the columns were set:
    expect(page.locator("#data-summary-outdated")).to_contain_text("before this page was loaded")
    expect(page.locator("#data-summary-outdated")).to_contain_text("Outdated")  # so it says they changed since

    open_tab(page, "3 · Rewards")
    expect(page.locator("#reward-receives")).to_contain_text("order_id")
    expect(page.locator("#reward-receives")).to_contain_text("ref")
    expect(page.locator(f"#builtin-rewards [data-testid=cell-{NUMERIC_ANSWER}-3]")).to_contain_text('"answer_column": "ref"')
    _expect_cell(page, "#builtin-rewards", LENGTH_PENALTY, 2, 0.3)
    assert json.loads(_cell(page, "#builtin-rewards", LENGTH_PENALTY, 3)) == json.loads(params)
    assert _ticked(page, LENGTH_PENALTY)
    _expect_cell(page, "#builtin-rewards", THINK_LENGTH, 2, 2.5)
    assert not _ticked(page, THINK_LENGTH)
    functions = page.locator("#user-rewards")
    expect(functions).to_contain_text("names_the_order")
    expect(functions.locator("[data-testid=cell-0-0] input[type=checkbox]")).to_be_checked()
    expect(functions.locator("[data-testid=cell-1-0] input[type=checkbox]")).not_to_be_checked()
    expect(page.locator("#judge-use input")).to_be_checked()
    expect(page.locator("#judge-rubric textarea")).to_have_value(OWN_RUBRIC)
    expect(page.locator("#judge-rubric-template input")).to_have_value("(your own rubric)")
    page.locator("#rule-builder").get_by_text("Build a reward from rules").click()
    expect(page.locator("#rule-blocks")).to_contain_text("contains")

    open_tab(page, "4 · Train")
    expect(page.locator("#rloo-max-steps input")).to_have_value("37")
    expect(page.locator("#stop-training")).to_be_disabled()
    _shot(page, "3-after")

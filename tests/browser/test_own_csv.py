"""A new user's own CSV in a real browser (Playwright driving Debian's Chromium): the data steps.

The bundled demo model with the person's own small CSV: a header-less file and one with other
columns first (the summary says so, naming this file's columns), then a good upload (a tenth held
out, nothing left from the demo's `test` split), then a preset that must not replace the data.
Screenshots go to test-artifacts/browser/own-csv-*.png. (The rest of the issue's scenario — rewards,
training with a reload, chat, evaluation, export — is covered through the API in tests/ui.)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from apphelpers import page_url, served_app  # noqa: E402
from test_first_run import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, pytestmark  # noqa: E402,F401 - same browser, same skip rule


GOOD_ROWS = [(f"What is {a} + {b}?", a + b) for a, b in [(i * 7 % 50 + 3, i * 11 % 40 + 5) for i in range(60)]]


def _upload(page, path: Path, expect) -> None:
    """The upload box, as a person uses it (it holds one file: the first time only)."""
    page.locator("#data-upload input[type=file]").set_input_files(str(path))
    expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(re.compile(re.escape(path.name) + "$"))
    page.locator("#preview-data").click()


def _type_path(page, path: Path) -> None:
    """The file's path typed into the path box (the other way to choose a file)."""
    page.locator("#data-path input, #data-path textarea").first.fill(str(path))
    page.locator("#preview-data").click()


def test_own_csv_data_steps(runs_dir, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=90_000)  # a loaded 2-core machine answers slowly; no step depends on it being fast
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = lambda page, name: page.screenshot(path=str(ARTIFACTS / f"own-csv-{name}.png"), full_page=True)  # noqa: E731
    headerless = tmp_path / "noheader.csv"
    headerless.write_text("".join(f"{q},{a}\n" for q, a in GOOD_ROWS[:20]))
    other = tmp_path / "qa-other.csv"
    other.write_text("Q,A\n" + "".join(f"{q},{a}\n" for q, a in GOOD_ROWS[:20]))
    good = tmp_path / "sums.csv"
    good.write_text("question,answer\n" + "".join(f"{q},{a}\n" for q, a in GOOD_ROWS))

    with served_app(runs_dir) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        page.goto(page_url(url))
        expect(page.locator("#preset-notes")).to_contain_text("Full fine-tuning", timeout=120_000)  # the preset's method, explained
        expect(page.locator("#run-banner")).to_be_hidden()

        # 2 · Data: header-less, then other columns, then a good file.
        page.get_by_role("tab", name="2 · Data").click()
        page.get_by_label("A file on this computer").check()
        expect(page.locator("#data-upload input[type=file]")).to_have_count(1)
        _type_path(page, headerless)
        expect(page.locator("#data-summary")).to_contain_text("no header row")
        _type_path(page, other)
        expect(page.locator("#data-summary")).to_contain_text("it is now Q")
        expect(page.locator("#data-summary")).to_contain_text("it is now A")
        _upload(page, good, expect)
        page.locator("#prompt-column input").fill("question")
        page.locator("#prompt-column input").press("Enter")
        page.locator("#answer-column input").fill("answer")
        page.locator("#answer-column input").press("Enter")
        page.locator("#preview-data").click()
        expect(page.locator("#data-summary")).to_contain_text("54 training rows, 6 held out")  # a tenth held out
        shot(page, "2-data")

        # 1 · A preset sets model and training only: the data stays.
        page.get_by_role("tab", name="1 · Model & hardware").click()
        page.locator("#apply-preset").click()
        expect(page.locator("#preset-notes")).to_contain_text("Your data and rewards are kept")
        page.get_by_role("tab", name="2 · Data").click()
        expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(re.compile(r"sums\.csv$"))

        shot(page, "1-preset-kept-data")
        browser.close()

"""A new user's own CSV in a real browser, end to end (Playwright driving Debian's Chromium).

The bundled demo model with the person's own small CSV: a header-less upload and one with other
columns first, then a good one; a preset that must not replace the data; builtin + custom reward,
a lint error that keeps Start from starting, the preview, a pinned example; Start, a page reload
during training (a banner leads back to Train), Stop, Resume, the end; then Chat, Evaluate all
checkpoints and Export merged, whose checkpoint pickers must show `final`. Screenshots go to
test-artifacts/browser/own-csv-*.png.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from apphelpers import served_app  # noqa: E402
from test_first_run import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, pytestmark  # noqa: E402,F401 - same browser, same skip rule

from rloo_studio import runs  # noqa: E402

GOOD_ROWS = [(f"What is {a} + {b}?", a + b) for a, b in [(i * 7 % 50 + 3, i * 11 % 40 + 5) for i in range(60)]]
CODE_WITH_TYPO = "def brief(completions, **kwargs):\n    return [1.0 if lenn(str(c)) < 400 else 0.0 for c in completions]\n"
CODE = "def brief(completions, **kwargs):\n    return [1.0 if len(str(c)) < 400 else 0.0 for c in completions]\n"


def _in_viewport(page, selector: str) -> bool:
    return page.evaluate(f"""() => {{ const r = document.querySelector('{selector}').getBoundingClientRect();
        return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth; }}""")


def _upload(page, path: Path, expect) -> None:
    """The upload box, as a person uses it (it holds one file: the first time only)."""
    page.locator("#data-upload input[type=file]").set_input_files(str(path))
    expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(re.compile(re.escape(path.name) + "$"))
    page.locator("#preview-data").click()


def _type_path(page, path: Path) -> None:
    """The file's path typed into the path box (the other way to choose a file)."""
    page.locator("#data-path input, #data-path textarea").first.fill(str(path))
    page.locator("#preview-data").click()


def _set_code(page, code: str) -> None:
    editor = page.locator("#reward-code .cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)
    page.locator("#check-code").click()  # leaves the editor too: the code is loaded in a child and checked


def test_own_csv_end_to_end(runs_dir, tmp_path):
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
        page.goto(url)
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

        # 4 · Train settings: a few small steps; the epochs are said before Start.
        page.get_by_role("tab", name="4 · Train").click()
        for elem_id, value in (("rloo-per-device-train-batch-size", "16"), ("rloo-max-steps", "4"), ("rloo-save-steps", "1")):
            box = page.locator(f"#{elem_id} input")
            box.fill(value)
            box.press("Tab")

        # 3 · Rewards: a typo the lint flags keeps Start from starting; then the fixed code, the preview, a pin.
        page.get_by_role("tab", name="3 · Rewards").click()
        _set_code(page, CODE_WITH_TYPO)
        expect(page.locator("#code-lint")).to_contain_text("lenn is not defined")
        expect(page.locator("#user-rewards")).to_contain_text("brief", timeout=90_000)
        page.locator("#user-rewards input[type=checkbox]").first.check()
        page.get_by_role("tab", name="4 · Train").click()
        page.locator("#start-training").click()
        expect(page.locator("#start-problems")).to_contain_text("lenn is not defined")
        assert not [p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists()] if runs_dir.exists() else True
        page.get_by_role("tab", name="3 · Rewards").click()
        _set_code(page, CODE)
        expect(page.locator("#code-lint")).to_contain_text("syntax is fine")
        page.locator("#pinned-add").click()
        expect(page.locator("#pinned tbody tr")).to_have_count(2)
        page.locator("#preview-run").click()
        expect(page.locator("#preview-status")).to_contain_text("Scored", timeout=240_000)
        header = page.locator("#preview-table th").filter(has_text="advantage").first
        expect(header).to_be_visible()
        box = header.bounding_box()
        assert box and box["x"] + box["width"] <= 1400  # the advantage column is on screen, without scrolling sideways
        shot(page, "3-rewards")

        # 4 · Start, reload while training, the banner leads back; Stop; Resume; the end.
        page.get_by_role("tab", name="4 · Train").click()
        expect(page.locator("#epochs-note")).to_contain_text("54 training rows × 4 steps")
        page.locator("#start-training").click()
        expect(page.locator("#train-status")).to_contain_text("training", timeout=180_000)
        run_dir = next(p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists())
        assert run_dir.name.endswith("-sums-demo")
        page.reload()
        expect(page.locator("#run-banner")).to_be_visible(timeout=30_000)
        expect(page.locator("#run-banner")).to_contain_text(run_dir.name)
        shot(page, "4-banner")
        page.locator("#run-banner-open").click()
        page.wait_for_function("Number(document.querySelector('#train-progress')?.dataset.step || 0) >= 1", timeout=240_000)
        page.locator("#stop-training").click()
        expect(page.locator("#train-notice")).to_be_visible()
        assert _in_viewport(page, "#train-notice")
        expect(page.locator("#train-status")).to_contain_text("stopped", timeout=240_000)
        expect(page.locator("#train-notice")).to_have_text("", timeout=30_000)  # the stop message ends with the stop
        page.locator("#resume-training").click()
        expect(page.locator("#train-status")).to_contain_text("finished", timeout=300_000)
        expect(page.locator("#train-log")).not_to_contain_text("{'loss'")
        shot(page, "4-train")
        assert (run_dir / "pinned.json").is_file()

        # Runs: the detail says what the list says.
        page.get_by_role("tab", name="Runs").click()
        expect(page.locator("#runs-table")).to_contain_text("finished")
        expect(page.locator("#run-detail-status")).to_contain_text("finished", timeout=30_000)

        # 5-7 · Chat, Evaluate and Export show the final weights without anyone choosing them.
        for tab, prefix in (("5 · Chat", "chat"), ("6 · Evaluate", "eval"), ("7 · Export", "export")):
            page.get_by_role("tab", name=tab).click()
            expect(page.locator(f"#{prefix}-checkpoint input")).to_have_value("final", timeout=30_000)
        page.get_by_role("tab", name="5 · Chat").click()
        page.locator("#chat-prompt textarea").fill("What is 12 + 7?")
        page.locator("#chat-send").click()
        expect(page.locator("#chat-right-badge")).to_contain_text("✓", timeout=180_000)
        page.get_by_role("tab", name="6 · Evaluate").click()
        page.locator("#eval-checkpoint input").click()
        page.get_by_role("option", name="all checkpoints").click()
        page.locator("#eval-start").click()
        expect(page.locator("#eval-summary")).to_contain_text("6 held-out prompts", timeout=300_000)
        shot(page, "6-eval")
        page.get_by_role("tab", name="7 · Export").click()
        page.get_by_label("merged", exact=False).first.check()
        page.locator("#export-start").click()
        expect(page.locator("#export-result")).to_contain_text("Exported merged (final)", timeout=300_000)
        assert (run_dir / "exports" / "merged").is_dir()
        shot(page, "7-export")
        browser.close()

"""The reward library and the rule builder in a real browser: a reward built by pointing and clicking travels as a file.

In a first app (its own runs folder and library folder): build "the reply contains the value of column answer" in the
rule builder, use it, save it to the library with the pinned example the page starts with, export it (a download). In
a second, fresh app (another runs folder, another empty library): a file with a syntax error is refused in the page
with nothing imported; the downloaded file is uploaded, its pinned example scored and shown passing, kept, used, and a
two-step training run trains with it and records its content hash in rewards.json. The library folder of each app is
set through RLOO_STUDIO_REWARDS_DIR (library.LIBRARY_ENV), read whenever the library is. Screenshots go to
test-artifacts/browser/library-*.png.
"""

from __future__ import annotations

import json
import re

from helpers.app import wait_for
from helpers.browser import ARTIFACTS, BROWSER_MARKS, open_tab, opened_page

from rloo_studio import runs
from rloo_studio.rewards import library

pytestmark = BROWSER_MARKS

NAME = "answer in reply"


def _open(page, title: str) -> None:
    open_tab(page, "3 · Rewards")
    page.get_by_text(title).click()


def _fill(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    box.fill(str(value))
    box.press("Tab")


def test_build_export_import_in_a_fresh_app_and_train_records_the_hash(tmp_path, monkeypatch):
    from playwright.sync_api import expect

    first_library, second_library = tmp_path / "library-1", tmp_path / "library-2"
    downloaded = tmp_path / "downloaded.py"

    monkeypatch.setenv(library.LIBRARY_ENV, str(first_library))
    with opened_page(tmp_path / "runs-1") as page:
        _open(page, "Build a reward from rules (no code)")
        page.locator("#rule-block input").click()
        page.get_by_role("option", name="Reply contains a column's value").click()
        expect(page.locator("#rule-about")).to_contain_text("Example:")  # its worked example, before it is added
        page.locator("#rule-add").click()
        code = page.locator("#rule-code")
        expect(code).to_contain_text("def contains_answer(completions, answer, **kwargs):", timeout=60_000)
        _fill(page, "rule-name", NAME)
        expect(code).to_contain_text(f"'name': '{NAME}'", timeout=60_000)
        page.locator("#rule-use").click()
        expect(page.locator("#reward-code")).to_contain_text("def contains_answer", timeout=60_000)
        expect(page.locator("#user-rewards")).to_contain_text("contains_answer")
        page.screenshot(path=str(ARTIFACTS / "library-rule-builder.png"), full_page=True)

        # Saved with the pinned example the page starts with (Ana's apples, answer 75: the reply contains it, 1.0 in 1..10).
        _open(page, "Reward library: keep, share and reuse rewards")
        page.locator("#library-save").click()
        result = page.locator("#library-import-result")
        expect(result).to_contain_text(f"1/1 pinned examples of “{NAME}” pass", timeout=180_000)
        expect(result).to_contain_text("Kept in your library")
        [kept] = first_library.glob("*.py")
        expect(page.locator("#library-table")).to_contain_text(library.short_hash(library.content_hash(kept.read_text())))
        expect(page.locator("#library-choice input")).to_have_value(NAME)
        page.locator("#library-export").click()
        link = page.locator("#library-download a").first
        expect(link).to_be_visible(timeout=60_000)
        with page.expect_download() as download:
            link.click()
        download.value.save_as(downloaded)
    assert downloaded.read_text() == kept.read_text()

    monkeypatch.setenv(library.LIBRARY_ENV, str(second_library))
    fresh_runs = tmp_path / "runs-2"
    bad = tmp_path / "bad.py"
    bad.write_text(downloaded.read_text().replace("**kwargs):", "**kwargs)", 1))
    with opened_page(fresh_runs) as page:
        _open(page, "Reward library: keep, share and reuse rewards")
        # A file that does not parse is refused in the page, with nothing imported.
        _fill(page, "library-path", bad)
        page.locator("#library-import").click()
        result = page.locator("#library-import-result")
        expect(result).to_contain_text("syntax error", timeout=60_000)
        expect(result).to_contain_text("Nothing was imported")
        assert not second_library.exists() or not list(second_library.iterdir())

        page.locator("#library-upload input[type=file]").set_input_files(str(downloaded))
        expect(page.locator("#library-upload")).to_contain_text(re.compile(r"downloaded\s*\.py"), timeout=60_000)  # (the page shows the name and its extension apart)
        page.locator("#library-import").click()
        expect(result).to_contain_text(f"1/1 pinned examples of “{NAME}” pass", timeout=180_000)
        expect(result).to_contain_text("✅ <think>47+28</think>75")
        expect(result).to_contain_text("Kept in your library")
        [imported] = second_library.glob("*.py")
        reward = library.read(imported)
        assert reward.hash == library.content_hash(downloaded.read_text())
        expect(page.locator("#library-table")).to_contain_text("✅ 1/1 pass")
        page.screenshot(path=str(ARTIFACTS / "library-imported.png"), full_page=True)

        page.locator("#library-use").click()
        expect(page.locator("#library-status")).to_contain_text("is in the code editor", timeout=60_000)
        expect(page.locator("#reward-code")).to_contain_text(f"'name': '{NAME}'")

        open_tab(page, "4 · Train")
        _fill(page, "rloo-per-device-train-batch-size", 16)
        _fill(page, "rloo-max-steps", 2)
        page.get_by_role("button", name="Advanced").click()
        _fill(page, "rloo-save-steps", 2)
        page.locator("#start-training").click()
        problems = page.locator("#start-problems")

        def started():
            assert "fix" not in problems.inner_text(), problems.inner_text()  # Start refused: say why
            return next((p for p in fresh_runs.iterdir() if (p / runs.STATUS_FILE).exists()), None)

        run_dir = wait_for(started, timeout_s=600, what="the run folder")  # a busy machine takes minutes to start a run
        expect(page.locator("#train-status")).to_contain_text(re.compile(r"finished"), timeout=600_000)

    [record] = [f for f in json.loads((run_dir / library.RUN_RECORD_FILE).read_text())["files"] if f["file"] == runs.REWARDS_FILE]
    assert record["hash"] == reward.hash and record["name"] == NAME, record
    assert record["library"] is True, record  # the run trained with exactly the library's version
    metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    assert metrics and all("rewards/contains_answer/mean" in m for m in metrics if "loss" in m), metrics[:1]

"""The browser tests' one way to open the app: Debian's Chromium driven by Playwright, the marks that skip (or, in CI,
fail) them when Chromium is missing, where their screenshots go, and `opened_page`.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import ROOT
from helpers.app import page_url, served_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("RLOO_STUDIO_ARTIFACTS", ROOT / "test-artifacts")) / "browser"
# Flags that stop Chromium's own background traffic (updates, sync, field trials), so that what a request log shows
# is what the page itself asked for; and --disable-gpu: without a GPU, headless Chromium otherwise emulates one in
# software (SwiftShader) to composite the page, which cost more CPU than compositing without it (two browser tests,
# machine CPU measured twice each: 144.8 and 142.7 CPU-s with the emulation, 135.9 and 138.8 without).
CHROMIUM_ARGS = ["--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-default-apps", "--disable-quic", "--disable-gpu"]

# Every browser test module's `pytestmark`: slow, and (NEEDS_CHROMIUM) skipped without Chromium unless RLOO_STUDIO_REQUIRE_BROWSER is
# set (as .ci/run sets it), in which case a missing Chromium fails the tests instead.
NEEDS_CHROMIUM = pytest.mark.skipif(not Path(CHROMIUM).exists() and not os.environ.get("RLOO_STUDIO_REQUIRE_BROWSER"),
                                    reason="needs Debian's chromium (apt-get install chromium); .ci/run installs it")
BROWSER_MARKS = [pytest.mark.slow, NEEDS_CHROMIUM]

WIDTH = 1400  # the width the pages are designed and checked at


@contextmanager
def opened_page(runs_dir: Path, *, height: int = 1100, detect_hardware: bool = False, on_request=None,
                ready_timeout_ms: int = 120_000):
    """The app served on `runs_dir`, open in Chromium at 1400 px once its form has loaded (the demo model); closed after.

    `on_request(request)` sees every request the page makes, from the first. Waits default to 60 s (a loaded 2-core
    machine answers slowly); Playwright's `expect` keeps its own 5 s default, so tests give expect timeouts explicitly.
    """
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)  # the screenshots' folder
    with served_app(runs_dir, detect_hardware=detect_hardware) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": height})
            if on_request is not None:
                page.on("request", on_request)
            page.set_default_timeout(60_000)
            page.goto(page_url(url))
            # The form's load event has answered (it says where the form's values come from). Not the model's name:
            # the page is served with "demo" there already, and a field filled before the load answers is overwritten.
            expect(page.locator("#preset-notes")).to_contain_text("The form shows", timeout=ready_timeout_ms)
            expect(page.locator("#model-name input")).to_have_value("demo", timeout=ready_timeout_ms)
            yield page
        finally:
            browser.close()


def drawn_steps(page, elem_id: str) -> list[str]:
    """The x values of the points a chart has drawn (each point's own aria label, "step: 2; value: 0.5; …"), in order
    and each once: what the picture shows, whatever the page was sent."""
    labels = page.eval_on_selector_all(f"#{elem_id} svg [aria-label^='step: ']", "els => els.map(e => e.getAttribute('aria-label'))")
    return list(dict.fromkeys(label.split(";")[0].removeprefix("step: ").strip() for label in labels))


def animation_frames(page, seconds: float) -> int:
    """How many frames the page drew animation-frame callbacks in over `seconds`: Chrome's own trace of the page
    ("FireAnimationFrame" events, the callbacks of one frame counted once)."""
    cdp = page.context.new_cdp_session(page)
    events: list[dict] = []
    complete: list[bool] = []
    cdp.on("Tracing.dataCollected", lambda e: events.extend(e["value"]))
    cdp.on("Tracing.tracingComplete", lambda e: complete.append(True))
    cdp.send("Tracing.start", {"categories": "devtools.timeline", "transferMode": "ReportEvents"})
    page.wait_for_timeout(seconds * 1000)
    cdp.send("Tracing.end")
    for _ in range(300):
        if complete:
            break
        page.wait_for_timeout(100)
    assert complete, "Chrome's trace did not end"
    cdp.detach()
    # The callbacks of one frame run back to back: one frame per 4 ms (a frame at 60 a second is 16.7 ms long).
    return len({int(e["ts"] // 4000) for e in events if e.get("name") == "FireAnimationFrame"})


def coloured_pixels(png: bytes) -> int:
    """Pixels whose colour is clearly not grey: the plotted lines and legend marks."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    return sum(1 for r, g, b in image.getdata() if max(r, g, b) - min(r, g, b) > 60)


def fill_field(page, elem_id: str, value) -> None:
    """Type `value` into the form field `#elem_id` and leave it (Tab), as a person does."""
    box = page.locator(f"#{elem_id} input").first
    box.fill(str(value))
    box.press("Tab")


def open_tab(page, name: str) -> None:
    """Select the app's tab `name` as a person does, and wait until the page shows it selected.

    The click does not wait for navigations: the app's page is written into its shell by `document.open`, and after a
    Back to the app Playwright could count a navigation as still scheduled, so a plain tab click waited its whole 60 s
    for it (CI, the localhost-wall test). Whether the click worked is what the `aria-selected` check below says."""
    from playwright.sync_api import expect

    tab = page.get_by_role("tab", name=name)
    tab.click(no_wait_after=True)
    expect(tab).to_have_attribute("aria-selected", "true")


def type_code(page, code: str) -> None:
    """Replace the reward editor's code with `code`: select all, delete, then the new text."""
    page.locator("#reward-code .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)


def fill_cell(page, table: str, row: int, column: int, value) -> None:
    """Type `value` into a table's cell as a person does (double-click, select all, type, Enter) until the cell shows it.

    While an event runs, the page puts each component's value back whenever that event's status changes, and a table
    redrawn that way can drop the cell's editor between the double-click and the keys (seen on a loaded machine: the
    select-all lost, "0.0" typed after the "1" already there). A person then types it again; so does this, three times,
    then fails saying what the cell shows."""
    import time

    cell = page.locator(f"{table} [data-testid=cell-{row}-{column}]")
    want = str(value)

    def shows() -> bool:
        text = cell.inner_text().strip().split("\n")[0].strip()  # (the cell's own menu button, "⋮", follows its text)
        try:
            return float(text) == float(want)
        except ValueError:
            return text == want

    from playwright.sync_api import Error, expect

    for _ in range(3):
        cell.dblclick()
        # The cell's editor takes the focus in the next animation frame: keys pressed before then went elsewhere, and the
        # value was typed after the cell's old one (seen: "10" became "10100").
        try:
            expect(cell.locator("textarea, input").first).to_be_focused(timeout=10_000)
        except (AssertionError, Error):
            continue
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(want)
        page.keyboard.press("Enter")
        deadline = time.time() + 10
        while time.time() < deadline:
            if shows():
                return
            time.sleep(0.2)
    raise AssertionError(f"{table} cell ({row}, {column}) shows {cell.inner_text()!r} after typing {want!r} three times")

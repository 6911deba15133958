"""A new user's first run, with their own CSV, in a real browser (Playwright driving Debian's Chromium, 1400 px wide).

The page opens with the hardware detected and the demo model chosen, and does not keep the browser drawing while idle;
the bundled demo's data is checked before the person's own. Every request the page makes is recorded: none may leave
127.0.0.1. The first test goes up to Start, the first half of the scenario of "the non-expert's path": the bundled demo
model with the person's
own 60-row CSV — a header-less file and one with other columns first, then a good upload with a ticket
id column; a preset that must not replace the data; one builtin and one hand-written reward that reads the
prompt column and the ticket by name (first with a name the lint flags, so Start is refused, with the page's
words for a batch that k does not divide); a pinned example that gives the ticket as `ticket=T-7` and passes
only if it arrives, and one that fails while the function raises on it; the preview, whose completions table must show
every column, advantage included, without sideways scrolling and with no header word broken. Each
point of the scenario is asserted where it shows (the `# N ·` comments). Training, reload, Stop/Resume,
Chat, Evaluate and Export are also covered through the API in tests/ui; refusals in sight by
test_messages_in_sight.py. The second test trains, reloads, stops (the reward plot draws its lines), resumes, then
chats, evaluates every checkpoint (with the chart) and exports. (One scenario for both: a separate first-run test
trained, stopped, chatted and evaluated the same way on the demo's data, ~85 s of the suite.) Screenshots go to
test-artifacts/browser/own-csv-*.png.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlparse

import pytest

from helpers.browser import ARTIFACTS, BROWSER_MARKS, animation_frames, coloured_pixels, fill_cell, open_tab, opened_page
from helpers.browser import fill_field as _fill
from helpers.browser import type_code as _type_code

from rloo_studio import runs
from rloo_studio.ui.export_tab import FORMAT_CHOICES

pytestmark = BROWSER_MARKS

GOOD_ROWS = [(f"What is {a} + {b}?", a + b) for a, b in [(i * 7 % 50 + 3, i * 11 % 40 + 5) for i in range(60)]]
LINT_ERROR = "def polite(completions, **kwargs):\n    return [lenn(c) for c in completions]\n"
# Reads two columns by name, the prompt column `question` and the ticket id (every road passes every column: pinned
# examples, the preview, training). Raises on the second pinned example below, scores everything else: that pin must
# fail, not pass without it. 1.0 more when the completion names the row's ticket.
REWARD = ('def polite(completions, question, ticket, **kwargs):\n'
          '    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]\n'
          '    if any("BOOM" in t for t in texts):\n'
          '        raise ValueError("BOOM is not an answer")\n'
          '    assert all(q for q in question), question\n'
          '    return [0.1 + (1.0 if k and k in t else 0.0) for t, k in zip(texts, ticket)]\n')
# The ticket given in the answer cell as column=value: numeric_answer 1 + polite 1.1 lies in 2..10 only if it arrives.
TICKET_PIN = ["What is 2 + 2?", "Ticket T-7: 4", "ticket=T-7; answer=4", "2", "10"]
PIN = ["What is 2 + 2?", "BOOM", "4", "0", "10"]

# A table's layout as the person sees it: its scrolling box, and each header's box and words (a word broken over two
# lines has two line tops; a word wider than its cell ends past the cell's right edge, where the cell cuts it off).
TABLE_LAYOUT_JS = """root => {
  const view = root.querySelector('.virtual-table-viewport');
  const box = view.getBoundingClientRect();
  const heads = [...root.querySelectorAll('.header-cell')].filter(cell => cell.getBoundingClientRect().width > 0).map(cell => {
    const content = cell.querySelector('.header-content') || cell;
    const r = cell.getBoundingClientRect();
    const words = [];
    const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter(x => x.width > 0);
        words.push({word: m[0], lines: new Set(rects.map(x => Math.round(x.top))).size,
                    right: Math.max(...rects.map(x => x.right))});
      }
    }
    return {text: content.innerText.trim(), left: r.left, right: r.right, words};
  });
  return {scrollWidth: view.scrollWidth, clientWidth: view.clientWidth, left: box.left, right: box.right, heads};
}"""


def _layout_problems(layout: dict, last: str) -> list[str]:
    problems = []
    if layout["scrollWidth"] > layout["clientWidth"]:
        problems.append(f"it scrolls sideways: {layout['scrollWidth']} px of content in {layout['clientWidth']} px")
    named = [h for h in layout["heads"] if h["text"] == last]
    if not named:
        problems.append(f"no {last!r} header among {[h['text'] for h in layout['heads']]}")
    elif named[0]["left"] < layout["left"] or named[0]["right"] > layout["right"] + 0.5:
        problems.append(f"the {last!r} header ({named[0]['left']:.0f}-{named[0]['right']:.0f} px) is outside the table's box "
                        f"({layout['left']:.0f}-{layout['right']:.0f} px)")
    for head in layout["heads"]:
        for word in head["words"]:
            if word["lines"] > 1:
                problems.append(f"header {head['text']!r}: {word['word']!r} is broken over {word['lines']} lines")
            elif word["right"] > head["right"] + 0.5:
                problems.append(f"header {head['text']!r}: {word['word']!r} is cut off by its column")
    return problems


def _assert_table_fits(page, selector: str, last: str) -> None:
    """Every column of the table inside its box, without sideways scrolling, and no header word broken or cut off.

    Gradio sets the column widths after the table renders (a resize observer): the layout is read until it holds."""
    table = page.locator(selector)
    deadline = time.time() + 30
    while True:
        problems = _layout_problems(table.evaluate(TABLE_LAYOUT_JS), last)
        if not problems or time.time() > deadline:
            break
        time.sleep(1)
    assert not problems, f"{selector} at {page.viewport_size['width']} px: " + "; ".join(problems)


def _upload(page, path: Path, expect) -> None:
    """The upload box, as a person uses it (it holds one file: the first time only)."""
    page.locator("#data-upload input[type=file]").set_input_files(str(path))
    expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(re.compile(re.escape(path.name) + "$"))
    page.locator("#preview-data").click()


def _type_path(page, path: Path) -> None:
    """The file's path typed into the path box (the other way to choose a file)."""
    page.locator("#data-path input, #data-path textarea").first.fill(str(path))
    page.locator("#preview-data").click()


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    """One served app and one browser page for the whole scenario: the second half goes on where the first stopped.
    The hardware is detected, as a person's first start does; every request the page makes is recorded."""
    from playwright.sync_api import expect

    expect.set_options(timeout=90_000)  # a loaded 2-core machine answers slowly; no step depends on it being fast
    folder = tmp_path_factory.mktemp("own-csv")
    runs_dir = folder / "runs"
    requests: list[str] = []
    with opened_page(runs_dir, height=1000, detect_hardware=True, on_request=lambda request: requests.append(request.url)) as page:
        yield SimpleNamespace(runs_dir=runs_dir, folder=folder, page=page, ready_to_start=False, requests=requests)


def _shot(page, name: str) -> None:
    """A screenshot for a person to look at afterwards: evidence, not a check. A full-page capture of the long page can
    outlast its 60 s on a loaded machine (the full suite, 2026-12-04): the walk goes on without it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.screenshot(path=str(ARTIFACTS / f"own-csv-{name}.png"), full_page=True)
    except PlaywrightTimeout:
        print(f"screenshot own-csv-{name}.png not taken: the page did not render it within the time limit")


def test_own_csv_up_to_start(studio):
    from playwright.sync_api import expect

    runs_dir, tmp_path, page, shot = studio.runs_dir, studio.folder, studio.page, _shot
    headerless = tmp_path / "noheader.csv"
    headerless.write_text("".join(f"{q},{a}\n" for q, a in GOOD_ROWS[:20]))
    other = tmp_path / "qa-other.csv"
    other.write_text("Q,A\n" + "".join(f"{q},{a}\n" for q, a in GOOD_ROWS[:20]))
    good = tmp_path / "sums.csv"
    good.write_text("question,answer,ticket\n" + "".join(f"{q},{a},T-{i}\n" for i, (q, a) in enumerate(GOOD_ROWS)))

    expect(page.locator("#device-info")).to_contain_text("CPU", timeout=90_000)  # the device is detected
    expect(page.locator("#model-name input")).to_have_value("demo")
    expect(page.locator("#preset-notes")).to_contain_text("Full fine-tuning", timeout=120_000)  # 10 · the preset's method, explained
    expect(page.locator("#run-banner")).to_be_hidden()
    shot(page, "1-model")
    # The loaded page does not keep the browser drawing (ui/frame_pacing.py): without the frame pacing, Gradio's
    # loading indicator went on requesting 60 frames a second (174 and 181 frames in 3 s, measured; 22 and 25 with).
    frames = animation_frames(page, 3)
    assert frames < 60, f"the idle page drew {frames} animation frames in 3 s"
    # A chain of frames keeps its full rate for its first second, then gets a frame every 250 ms.
    first_60_ms, next_4_ms = page.evaluate("""() => new Promise(done => {
        const at = [];
        const frame = (t) => { at.push(t); if (at.length < 65) requestAnimationFrame(frame); else done([at[59] - at[0], at[64] - at[60]]); };
        requestAnimationFrame(frame);
    })""")
    assert first_60_ms < 7000 and next_4_ms >= 4 * 240, (first_60_ms, next_4_ms)  # slowed throughout: 59 x 250 ms

    # The bundled demo's data, checked, before the person's own.
    open_tab(page, "2 · Data")
    expect(page.get_by_label("Bundled demo (arithmetic word problems)")).to_be_checked()
    page.locator("#preview-data").click()
    expect(page.locator("#data-summary")).to_contain_text("2000 training rows")
    expect(page.locator("#data-summary")).to_contain_text("Ready to train")

    # 6 · Data: header-less, then other columns (named as this file has them), then a good file.
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
    expect(page.locator("#data-summary")).to_contain_text("54 training rows, 6 held out")  # 2 · a tenth held out
    expect(page.locator("#data-summary")).to_contain_text("Every column, the prompt column included, reaches your reward functions")
    shot(page, "2-data")

    # 2 · A preset sets model and training only: the data stays.
    open_tab(page, "1 · Model & hardware")
    page.locator("#apply-preset").click()
    expect(page.locator("#preset-notes")).to_contain_text("Your data and rewards are kept")
    open_tab(page, "2 · Data")
    expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(re.compile(r"sums\.csv$"))
    expect(page.locator("#data-summary")).to_contain_text("54 training rows, 6 held out")

    # 3 · Rewards: the demo's rewards went with the demo's data (said so); the builtin numeric_answer ticked again, and
    # the person's own function.
    open_tab(page, "3 · Rewards")
    expect(page.locator("#demo-rewards-note")).to_contain_text("The demo's example rewards were removed")
    expect(page.locator("#builtin-rewards")).to_contain_text("numeric_answer")
    page.locator("#builtin-rewards [data-testid=cell-0-0] input[type=checkbox]").check()
    expect(page.locator("#reward-receives")).to_contain_text("question (the prompts, as the data holds them), answer, ticket")
    _type_code(page, LINT_ERROR)
    expect(page.locator("#code-lint")).to_contain_text("lenn is not defined")
    page.locator("#check-code").click()
    expect(page.locator("#code-check")).to_contain_text("1 function found: polite")
    page.locator("#user-rewards").get_by_label("Toggle all: use").check()

    # 5 · 9 · Train: page words with a value to use; Start refused while the lint flags the code.
    open_tab(page, "4 · Train")
    _fill(page, "rloo-num-generations", 4)
    _fill(page, "rloo-per-device-train-batch-size", 10)
    _fill(page, "rloo-max-steps", 40)
    page.get_by_role("button", name="Advanced").click()
    _fill(page, "rloo-save-steps", 20)
    page.locator("#start-training").click()
    problems = page.locator("#start-problems")
    expect(problems).to_contain_text("“Batch per device (completions)” 10 is not divisible by “Completions per prompt (k)” 4")
    expect(problems).to_contain_text("use 8 or 12")
    expect(problems).not_to_contain_text("num_generations")
    expect(problems).to_contain_text("lenn")  # 9 · the lint's message, before anything runs
    assert not [p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists()], "Start started a run despite the problems"
    _fill(page, "rloo-per-device-train-batch-size", 8)
    expect(page.locator("#epochs-note")).to_contain_text("40 steps × 2 new prompts per step ÷ 54 training rows")  # 10 · epochs said before Start

    # 8 · A pinned example, added with the button; it fails while the function raises on it.
    open_tab(page, "3 · Rewards")
    _type_code(page, REWARD)
    expect(page.locator("#code-lint")).to_contain_text("syntax is fine")
    page.locator("#check-code").click()
    result = page.locator("#pinned-result")
    expect(result).to_contain_text("No pinned examples yet", timeout=300_000)  # the demo's example went with its data
    for row, pin in ((0, TICKET_PIN), (1, PIN)):
        page.locator("#pinned-add").click()
        expect(page.locator(f"#pinned [data-testid=cell-{row}-0]")).to_be_visible()
        for column, value in enumerate(pin):
            fill_cell(page, "#pinned", row, column, value)
    expect(page.locator("#pinned")).to_contain_text("T-7")
    expect(page.locator("#pinned")).to_contain_text("BOOM")
    # One check of both rows (each check starts a sandboxed scoring process: a check of the first row alone cost ~45 s of
    # the test on a busy machine, and told nothing this one does not). Each pin is a case of its own: the one that makes
    # `polite` raise fails alone, with the error; the ticket's pin passes only if the answer cell's ticket reached `polite`.
    page.locator("#check-code").click()
    expect(result).to_contain_text("1/2 pinned examples pass", timeout=300_000)  # queued behind the edits' checks on a busy machine
    expect(result).to_contain_text("✅ Ticket T-7: 4 → total")
    expect(result).to_contain_text("❌ BOOM → total")
    expect(result).to_contain_text("polite raised ValueError: BOOM is not an answer")

    # Preview: k = 4 completions of one prompt, scored by every ticked function.
    page.locator("#preview-prompts input[type=number]").fill("1")
    page.locator("#preview-run").click()
    expect(page.locator("#preview-status")).to_contain_text("Scored 4 completions", timeout=180_000)
    # 10 · The completions table at 1400 px: the advantage column in sight, no sideways scrolling, headers whole.
    _assert_table_fits(page, "#preview-table", "advantage")
    shot(page, "3-rewards")

    studio.ready_to_start = True


def _choose(page, elem_id: str, option: str) -> None:
    """Pick `option` in a dropdown, as a person does: open it, click the option."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def _step(page) -> int:
    return int(page.locator("#train-progress").get_attribute("data-step") or 0)


# Stop lands mid-run however slowly the page answers: once the worker has saved the checkpoint at SAVE_EVERY, the test
# holds it (`_HeldWorker`) until the page's Stop has asked it to stop, as a long step would. Without the hold, the race
# between the page and the tiny model's third-of-a-second steps was lost on a busy machine even with 240 steps (the
# reload and the click took over 100 s there). A checkpoint before Stop, so that the Checkpoint pickers offer a
# checkpoint-N while the run trains and must move to `final` once it ends; few of them (each is evaluated, about a
# second each).
STEPS, SAVE_EVERY = 60, 20


class _HeldWorker:
    """Holds the training worker still (SIGSTOP to its process group) from its first step after a saved checkpoint past
    `after_step` until `release()` (SIGCONT). Everything else runs as it does: the page reads the run folder, Stop writes
    its request, and the worker, let go, ends its current step and stops as it would after a long step."""

    def __init__(self, run_dir: Path, after_step: int):
        self.run_dir, self.after_step, self.group, self.error = run_dir, after_step, None, None
        self.held, self._done = threading.Event(), threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        try:
            while not self._done.is_set():
                status = runs.read_status(self.run_dir)
                if status.get("state") not in runs.ACTIVE_STATES:
                    self.error = f"the run ended before it could be held: {status}"
                    return
                if (status.get("step") or 0) > self.after_step and status.get("pid") and runs.checkpoints(self.run_dir):
                    group = os.getpgid(int(status["pid"]))
                    assert group != os.getpgid(0), "the worker shares the test's process group"
                    os.killpg(group, signal.SIGSTOP)
                    self.group = group
                    self.held.set()
                    return
                time.sleep(0.05)
        except Exception as exc:  # noqa: BLE001 - said by the test's own thread
            self.error = repr(exc)

    def release(self) -> None:
        self._done.set()
        if self.group is not None:
            os.killpg(self.group, signal.SIGCONT)
            self.group = None


def test_own_csv_train_reload_stop_resume_then_chat_evaluate_export(studio):
    """The second half: Start, reload while training, Stop, Resume, finish; then Chat, Evaluate all checkpoints, Export merged."""
    from playwright.sync_api import expect

    if not studio.ready_to_start:
        pytest.skip("goes on from test_own_csv_up_to_start's page (run the whole file)")
    runs_dir, page = studio.runs_dir, studio.page

    open_tab(page, "4 · Train")
    _fill(page, "rloo-max-steps", STEPS)
    _fill(page, "rloo-save-steps", SAVE_EVERY)
    page.locator("#start-training").click()
    expect(page.locator("#start-problems")).to_have_text("")
    # The pin that makes `polite` raise still fails (the demo's own pin was dropped with the demo's data): Start asks
    # first, and the person starts anyway.
    expect(page.locator("#start-confirm")).to_contain_text("1 of 2 pinned examples fail", timeout=300_000)
    page.locator("#start-anyway").click()
    expect(page.locator("#train-status")).to_contain_text(re.compile(r"— (starting|training)"), timeout=180_000)
    run_dir = wait_for_run(runs_dir)
    held = _HeldWorker(run_dir, SAVE_EVERY)
    try:
        _reload_and_stop(page, run_dir, held)
    finally:
        held.release()
    expect(page.locator("#train-status")).to_contain_text("stopped", timeout=180_000)
    status = runs.read_status(run_dir)
    assert status["state"] == "stopped" and status["step"] < STEPS, f"the run was not stopped mid-run: {status}"
    _after_stop(studio, run_dir)


def _reload_and_stop(page, run_dir: Path, held: _HeldWorker) -> None:
    from playwright.sync_api import expect

    # 10 · A reload (it opens on the tab the person was on): a banner says a run is training, and leads to it.
    page.reload()
    banner = page.locator("#run-banner")
    expect(banner).to_be_visible(timeout=120_000)
    expect(banner).to_contain_text(f"Run {run_dir.name} is training")
    expect(banner).to_be_in_viewport()
    _shot(page, "4-reloaded")
    # The banner leads to the run: it still trains (or is held, see `_HeldWorker`), so the banner is there to click.
    page.locator("#run-banner-open").click()
    expect(page.locator("#train-status")).to_contain_text(f"{run_dir.name} — training", timeout=180_000)
    # Stop once a checkpoint is saved (the pickers have a checkpoint-N to show), as soon as the step counter says so.
    page.wait_for_function(f"Number(document.querySelector('#train-progress')?.dataset.step || 0) > {SAVE_EVERY}", timeout=300_000)
    # Stop is enabled by the page's poll, which a busy machine can hold back behind the step counter's update.
    expect(page.locator("#stop-training")).to_be_enabled(timeout=180_000)
    assert held.held.wait(timeout=300), held.error or "the worker was not held"
    page.locator("#stop-training").click()
    assert runs.checkpoints(run_dir), "no checkpoint before Stop"
    deadline = time.time() + 120
    while not runs.stop_requested(run_dir):  # the page's Stop has reached the run folder: the worker may go on
        assert time.time() < deadline, "Stop wrote no stop request"
        time.sleep(0.1)


def _after_stop(studio, run_dir: Path) -> None:
    from playwright.sync_api import expect

    page = studio.page
    banner = page.locator("#run-banner")
    expect(page.locator("#train-notice")).to_have_text("", timeout=30_000)  # 3 · "stopping…" ends with the stopping
    # Nothing the person made is lost with the reload: the pinned examples are back, the one that raises included.
    open_tab(page, "3 · Rewards")
    expect(page.locator("#pinned")).to_contain_text("BOOM")
    expect(page.locator("#pinned [data-testid=cell-1-0]")).to_be_visible()
    open_tab(page, "4 · Train")
    # The reward plot draws its lines: coloured pixels (the axes and grid are grey) in the chart; the newest completions
    # with their rewards.
    plot = page.locator("#reward-plot")
    expect(plot.locator(".vega-embed").first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1500)
    assert coloured_pixels(plot.screenshot(path=str(ARTIFACTS / "reward-plot.png"))) > 150
    expect(page.locator("#samples")).to_contain_text("numeric_answer=")

    # 3 · Runs: the open run's detail says what the list says, re-read on every poll.
    open_tab(page, "Runs")
    row = page.locator("#runs-table tbody tr", has_text=run_dir.name)
    expect(page.locator("#run-picker input")).to_have_value(run_dir.name)
    expect(row).to_contain_text("stopped")
    expect(page.locator("#run-detail-status")).to_contain_text("stopped")
    page.locator("#runs-refresh").click()
    expect(row).to_contain_text("stopped")
    page.locator("#run-resume").click()
    expect(page.locator("#runs-message")).to_contain_text(f"Resuming {run_dir.name}")
    expect(page.locator("#runs-message")).to_be_in_viewport()  # 4 · next to the button that caused it
    expect(row).to_contain_text("finished", timeout=600_000)
    expect(page.locator("#run-detail-status")).to_contain_text(f"{run_dir.name} — finished")
    expect(page.locator("#run-detail-status")).to_contain_text(f"Step {STEPS}/{STEPS}")
    expect(page.locator("#runs-message")).not_to_contain_text("Resuming")  # 3 · it ended with the resuming
    expect(banner).to_be_hidden()
    _shot(page, "5-runs")
    assert runs.read_status(run_dir)["state"] == "finished"

    # 1 · Every Checkpoint picker moved to the final weights, without Refresh: none kept the checkpoint-N it showed.
    for tab, prefix in (("5 · Chat", "chat"), ("6 · Evaluate", "eval"), ("7 · Export", "export")):
        open_tab(page, tab)
        expect(page.locator(f"#{prefix}-run input")).to_have_value(run_dir.name)
        expect(page.locator(f"#{prefix}-checkpoint input")).to_have_value(runs.FINAL)

    # Chat: base and tuned side by side, the tuned side from the run's final weights (Refresh keeps the run chosen). The
    # demo preset trains every weight: the badges name the folder each side's weights came from.
    open_tab(page, "5 · Chat")
    page.locator("#chat-refresh").click()
    expect(page.locator("#chat-run input")).to_have_value(run_dir.name, timeout=30_000)
    page.locator("#chat-prompt textarea").fill("What is 12 + 30?")
    page.locator("#chat-send").click()
    expect(page.locator("#chat-left-badge")).to_contain_text("✓ base model · weights from demo-model (checked", timeout=180_000)
    expect(page.locator("#chat-right-badge")).to_contain_text(f"✓ tuned · weights from {run_dir.name}/model (checked", timeout=180_000)
    for pane in ("#chat-left", "#chat-right"):  # the question and a reply in each pane
        expect(page.locator(f"{pane} .message-row")).to_have_count(2, timeout=60_000)
        expect(page.locator(pane)).to_contain_text("What is 12 + 30?")
    _shot(page, "6-chat")

    # 7 · Evaluate every checkpoint on the 6 held-out rows: n and 95 % intervals, and no best checkpoint on 6 prompts.
    open_tab(page, "6 · Evaluate")
    page.locator("#eval-refresh").click()
    expect(page.locator("#eval-run input")).to_have_value(run_dir.name, timeout=30_000)
    _choose(page, "eval-checkpoint", "all checkpoints")
    limit = page.locator("#eval-limit input")
    limit.fill("6")
    limit.press("Tab")
    page.locator("#eval-start").click()
    summary = page.locator("#eval-summary")
    expect(summary).to_contain_text("n = 6 held-out prompts", timeout=600_000)
    expect(summary).to_contain_text("95 % intervals")
    expect(summary).to_contain_text("not distinguishable")
    expect(summary).not_to_contain_text("Best checkpoint")
    table = page.locator("#eval-table")
    expect(table).to_contain_text(re.compile(r"\d+(\.\d+)? ?%? \[[-\d.]+, [-\d.]+\]"))  # an estimate with its interval
    evaluated = runs.evaluable_checkpoints(run_dir)
    assert len(evaluated) > 2, evaluated
    rows = table.get_by_role("row")
    expect(rows).to_have_count(2 + len(evaluated))  # the header, base, then every checkpoint and final
    for i in range(1, 2 + len(evaluated)):  # n in its own column, on every row
        expect(rows.nth(i).get_by_role("gridcell").nth(2)).to_have_text("6")
    expect(table).to_contain_text("base model")
    chart = page.locator("#eval-chart")
    expect(chart.locator(".vega-embed").first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1500)
    assert coloured_pixels(chart.screenshot(path=str(ARTIFACTS / "eval-chart.png"))) > 50
    assert (run_dir / "eval.json").is_file()
    _shot(page, "7-evaluate")

    # Export merged: the result names the final weights and the folder holds them.
    open_tab(page, "7 · Export")
    page.get_by_label(next(label for label, value in FORMAT_CHOICES if value == "merged"), exact=True).check()
    page.locator("#export-start").click()
    result = page.locator("#export-result")
    expect(result).to_contain_text("Exported merged (final)", timeout=600_000)
    expect(result).to_contain_text(f"{run_dir.name}/exports/merged")
    expect(result).not_to_contain_text("checkpoint-")
    expect(result).to_be_in_viewport()
    _shot(page, "8-export")
    assert any((run_dir / runs.EXPORTS_DIR / "merged").glob("*.safetensors"))

    # Every request the page made, from its first, stayed on this machine.
    outside = sorted({u for u in studio.requests if urlparse(u).scheme in ("http", "https", "ws", "wss")
                      and urlparse(u).hostname not in ("127.0.0.1", "localhost")})
    assert outside == [], f"the page made requests beyond this machine: {outside[:10]}"
    assert len(studio.requests) > 10  # the log really recorded the page's traffic


def wait_for_run(runs_dir: Path) -> Path:
    found = [p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists()]
    assert len(found) == 1, found
    return found[0]

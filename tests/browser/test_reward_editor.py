"""Writing a reward in the browser: type it in the editor, check it, tick it, preview it on the demo model,
and see each completion's rewards and leave-one-out advantage; then edit a pinned example cell by cell while its checks
run. Screenshot: test-artifacts/browser/6-reward-preview.png."""

from __future__ import annotations

import json
import re
import time

from helpers.browser import ARTIFACTS, BROWSER_MARKS, fill_cell, open_tab, opened_page

from rloo_studio.ui.workspace import DRAFT_PINNED

pytestmark = BROWSER_MARKS

# A reward that takes its time (as a judge's calls do): a pinned check runs for CHECK_S, so the cell edits that follow
# the first one are made while it runs.
CHECK_S = 4
REWARD = ("import time\n\ndef brief(completions, **kwargs):\n"
          f"    time.sleep({CHECK_S})\n"
          "    return [1.0 if len(c[0]['content']) < 24 else 0.0 for c in completions]\n")
PIN = ["What is 2 + 2?", "<think>2+2</think>4", "4", 0.0, 100.0]


def test_edit_check_tick_and_preview_a_reward(runs_dir, monkeypatch):
    from playwright.sync_api import expect

    from rloo_studio.workers import scorer

    real_score, scored = scorer.score, []  # the pinned checks that scored (each a scoring child's run)

    def counted(request, *args, **kwargs):
        if kwargs.get("standby") is scorer.WRITTEN:
            scored.append(request)
        return real_score(request, *args, **kwargs)

    monkeypatch.setattr(scorer, "score", counted)

    with opened_page(runs_dir) as page:
        open_tab(page, "3 · Rewards")

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
        expect(page.locator("#code-check")).to_contain_text("1 function found: brief")
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

        # A pinned example typed cell by cell: each edit is saved, and checked once the edits pause, one check at a time;
        # a check overtaken by an edit is not shown (each check is a process, and a judge's calls): counted in
        # tests/ui/test_pinned_checks.py.
        config = page.evaluate("fetch('config').then(r => r.json())")
        ids = {c["props"].get("elem_id"): c["id"] for c in config["components"] if c.get("props", {}).get("elem_id")}
        on_edit = {d["id"] for d in config["dependencies"] if [ids["pinned"], "change"] in d["targets"]}
        check = {d["id"] for d in config["dependencies"] if d["id"] in on_edit and ids["pinned-result"] in d["outputs"]}
        assert len(check) == 1 and len(on_edit) == 3, (on_edit, check)  # the check, the save, the form's change event
        # An edit and leaving the code editor give the last check's report when nothing changed (ui.rewards_tab.PinnedChecks,
        # tested in tests/unit/test_preview.py); *Check the code* scores again.
        checks_of = {tuple(t): d["api_name"] for d in config["dependencies"] if ids["pinned-result"] in d["outputs"]
                     for t in d["targets"]}
        assert [checks_of[(ids[e], event)].rstrip("_0123456789") for e, event in
                (("pinned", "change"), ("reward-code", "blur"), ("check-code", "click"))] == \
            ["pinned_edited", "recheck_pinned", "run_pinned"], checks_of
        scored.clear()  # (the checks asked by leaving the editor and by Check the code answered while the preview ran)
        asked: list[int] = []
        page.on("request", lambda r: asked.append(json.loads(r.post_data or "{}").get("fn_index"))
                if r.url.split("?")[0].endswith("/queue/join") else None)
        for column, value in enumerate(PIN):
            fill_cell(page, "#pinned", 0, column, value)
        # The report of the typed example (the page showed the starting example's report before: "1/1 ... pass" alone
        # would match that one), brief scored on it as training calls it (chat messages: it reads c[0]['content']).
        typed = re.compile(r"1/1 pinned examples pass\s+✅ <think>2\+2</think>4 → total [0-9.]+ \(expected 0\.0–100\.0\)")
        expect(page.locator("#pinned-result")).to_contain_text(typed, timeout=180_000)
        page.wait_for_timeout(1000)
        save = {d["id"] for d in config["dependencies"] if d["id"] in on_edit and d.get("api_name") == "save_pinned"}
        checks, saves = len(scored), sum(asked.count(i) for i in save)
        assert saves >= len(PIN), f"{saves} saves for {len(PIN)} edited cells: an edit was not kept"
        saved = json.loads((runs_dir / ".studio" / DRAFT_PINNED).read_text())
        assert saved[0][:3] == PIN[:3] and [float(v) for v in saved[0][3:]] == PIN[3:], saved
        # A check per change event would be two per cell (the page sends one as the cell's editor opens, one as it
        # closes: 10 were counted so), each waiting for the one before. Checked once the edits pause, fewer than one per
        # cell answer for all of them, even typed slowly (the first check runs CHECK_S while the next cells are typed).
        assert 1 <= checks < len(PIN), f"{checks} pinned checks for {len(PIN)} edited cells"


def test_long_lines_wrap_and_an_undo_leaves_the_functions_table_as_the_code(runs_dir, monkeypatch):
    """A 200-character line wraps inside the editor (the end of a line is never out of sight), and Ctrl+Z takes a typed
    function out of the functions table at once: the table follows the code in the editor, not the last time the
    person left it (an undo happens inside the editor, with no leaving to check on). A tick made while an answer about
    the table is still on its way is kept when that answer comes."""
    from playwright.sync_api import expect

    from rloo_studio.ui import rewards_tab

    with opened_page(runs_dir) as page:
        open_tab(page, "3 · Rewards")
        editor = page.locator("#reward-code .cm-content")
        editor.click()
        page.keyboard.press("Control+End")
        page.keyboard.insert_text("\n\n# " + "long " * 40 + "\n")
        widths = page.evaluate("() => { const s = document.querySelector('#reward-code .cm-scroller');"
                               " return [s.scrollWidth, s.clientWidth]; }")
        assert widths[0] <= widths[1], f"the editor scrolls sideways: {widths[0]} px of text in {widths[1]} px"

        functions = page.locator("#user-rewards")
        page.keyboard.insert_text("def extra(completions, **kwargs):\n    return [0.0 for _ in completions]\n")
        page.locator("#code-lint").click()  # leaving the editor checks the code
        expect(functions).to_contain_text("extra", timeout=60_000)
        editor.click()
        page.keyboard.press("Control+Z")
        expect(editor).not_to_contain_text("def extra")
        expect(functions).not_to_contain_text("extra", timeout=60_000)
        expect(functions).to_contain_text("short_answer")

        # The table as the code in the editor defines it is computed with the table as it was when the code changed;
        # here that answer takes 8 s (a busy server), and Check the code answers first. The person ticks the new
        # function as soon as it is listed: the late answer, made from the table without the tick, must not undo it.
        real_functions_now = rewards_tab.functions_now

        def slow_functions_now(*args):
            time.sleep(8)
            return real_functions_now(*args)

        page.wait_for_timeout(2000)  # what the undo started has answered
        monkeypatch.setattr(rewards_tab, "functions_now", slow_functions_now)
        editor.click()
        page.keyboard.press("Control+End")
        page.keyboard.insert_text("\ndef polite(completions, **kwargs):\n    return [1.0 for _ in completions]\n")
        page.locator("#check-code").click()
        expect(functions).to_contain_text("polite", timeout=60_000)
        name_cell = page.locator("#user-rewards [data-testid$='-1']", has_text="polite").first
        row = name_cell.get_attribute("data-testid").split("-")[1]
        tick = page.locator(f"#user-rewards [data-testid=cell-{row}-0] input[type=checkbox]")
        tick.check()
        page.wait_for_timeout(10_000)  # the late answer has come
        expect(tick).to_be_checked()

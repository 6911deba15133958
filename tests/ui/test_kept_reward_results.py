"""The Rewards tab's results come back after a reload: the preview (status line, completions table with its columns'
widths, per-function table, findings) and the pinned examples' check, each marked with when it was computed and, by the
one rule of freshness.py, outdated when a field it was computed from changed since — before the reload or after.

The page's handlers are called as the page calls them (the result's change, a page load), on the built app without
serving it: what a reload runs is the page's load events, and the browser test (test_stale_messages) does it for real.
"""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from rloo_studio.ui import text
from rloo_studio.ui.app import build_app
from rloo_studio.ui.freshness import MARK, stamp_of
from rloo_studio.ui.rewards_tab import SUMMARY_HEADERS, preview_column_widths

HEADERS = ["#", "prompt", "thinking", "reply", "numeric_answer", "total", "baseline (others' mean)", "advantage"]
ROWS = [[1, "What is 2 + 2?", "2+2", "4", 1.0, 1.0, 0.0, 1.0], [1, "What is 2 + 2?", "2+2", "5", 0.0, 0.0, 1.0, -1.0]]
STATUS = "Scored 2 completions (your pasted completions) in 3.1 s."
FINDINGS = "⚠️ **Learnability:** 100 % of the prompts gave …\n\n⚠️ **Hack probe:** an empty answer scores 1.0"
REPORT = "**1/1 pinned examples pass**\n- ✅ `<think>47+28</think>75` → total 1.000 (expected 1.0–10.0)"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    demo = build_app(tmp_path_factory.mktemp("kept") / "runs", detect_hardware=False)
    ids = {block.elem_id: block_id for block_id, block in demo.blocks.items() if getattr(block, "elem_id", None)}
    yield SimpleNamespace(demo=demo, ids=ids)
    demo.inference_worker.shutdown()


def _handlers(page, event: str, elem_id: str | None = None, output: str | None = None) -> list:
    """(dependency, function) of each handler of `event` (of `elem_id`'s component, or any) that writes `output`."""
    found = []
    for dep in page.demo.config["dependencies"]:
        fired = any(e == event and (elem_id is None or t == page.ids[elem_id]) for t, e in dep["targets"])
        if fired and (output is None or page.ids[output] in dep["outputs"]):
            found.append((dep, page.demo.fns[dep["id"]].fn))
    return found


def _kept(page, elem_id: str):
    """The handler that keeps the result shown in `#elem_id` (freshness.Outdated.keep's save) and the one a page load
    runs to put it back."""
    saves = [(d, fn) for d, fn in _handlers(page, "change", elem_id) if fn.__name__ == "save"]
    loads = [(d, fn) for d, fn in _handlers(page, "load", output=elem_id) if fn.__name__ == "restore"]
    assert len(saves) == 1 and len(loads) == 1, f"#{elem_id} is not kept across a reload ({len(saves)} saves, {len(loads)} loads)"
    return saves[0], loads[0][1]


def _outdated_rule(page, line_id: str):
    """The rule that writes `#line_id` (the Outdated line) in the form's one change event: (its function, its fields)."""
    (_, run_all), = _handlers(page, "change", output=line_id)
    rule, = [r for r in run_all.__self__._rules if any(getattr(c, "elem_id", None) == line_id for c in r.outputs)]
    return rule.fn, rule.inputs[2:]  # line_now(stamp, made, *fields)


def _with(fields: list, values: list, elem_id: str, value) -> list:
    return [value if getattr(c, "elem_id", None) == elem_id else v for c, v in zip(fields, values)]


def test_a_reload_puts_the_preview_back_as_it_was_and_marks_it_outdated_when_the_code_changed(page):
    line_now, fields = _outdated_rule(page, "preview-outdated")
    values = [c.value for c in fields]  # the fields as the preview read them
    stamp = stamp_of(values)
    (save_dep, save), restore = _kept(page, "preview-status")
    # The page sends the preview's tables as pandas frames; the completions table's value reaches the page after the
    # status line's change (seen in Chromium: the save of that change got the table before the preview, empty), and the
    # table's own change sends it whole.
    assert (page.ids["preview-table"], "change") in [tuple(t) for t in save_dep["targets"]]
    summary = pd.DataFrame([["numeric_answer", 1.0, 0.5, 0.5, 0.0, 1.0, 0, ""]], columns=SUMMARY_HEADERS)
    save(stamp, None, STATUS, pd.DataFrame([], columns=["#", "prompt", "reply", "total"]), summary, FINDINGS)
    _, _, _, _, _, first = restore()
    save(stamp, None, STATUS, pd.DataFrame(ROWS, columns=HEADERS), summary, FINDINGS)

    status, table, summary, findings, kept_stamp, made = restore()  # a new page load
    assert made["at"] == first["at"]  # one result, computed once
    assert status == STATUS and findings == FINDINGS
    assert table["value"] == {"headers": HEADERS, "data": ROWS}
    assert table["column_widths"] == preview_column_widths(HEADERS)  # the columns as wide as the preview made them
    assert summary["headers"] == SUMMARY_HEADERS and summary["data"][0][0] == "numeric_answer"
    assert kept_stamp == stamp
    lines = line_now(kept_stamp, made, *values)
    assert len(lines) == 2 and all(line.startswith("🕘 Computed at ") and MARK not in line for line in lines), lines
    _no_mark_on_a_result_computed_now(page, "preview-status", save_dep)
    # The code changed since (before the reload or after it): both lines, above the table and above the findings, say so.
    for line in line_now(kept_stamp, made, *_with(fields, values, "reward-code", "def other(completions, **kw):\n    return [0.0]\n")):
        assert "🕘 Computed at " in line and f"{MARK} — “{text.CODE}” changed since" in line, line


def test_a_reload_puts_the_pinned_check_back_with_the_stamp_of_the_last_check_even_when_it_said_the_same(page):
    line_now, fields = _outdated_rule(page, "pinned-result-outdated")
    values = [c.value for c in fields]
    (save_dep, save), restore = _kept(page, "pinned-result")
    save(stamp_of(values), None, REPORT)
    report, kept_stamp, made = restore()
    assert report == REPORT and line_now(kept_stamp, made, *values).startswith("🕘 Computed at ")
    edited = _with(fields, values, "reward-code", "def polite(completions, **kw):\n    return [1.0 for _ in completions]\n")
    assert f"{MARK} — “{text.CODE}”" in line_now(kept_stamp, made, *edited)
    # The edited code checked again says what the last check said: the report does not change, its stamp does, and the
    # page sends that change too; kept with the new stamp, the reload shows it current.
    stamp_id = save_dep["inputs"][0]
    assert (stamp_id, "change") in [tuple(t) for t in save_dep["targets"]], "a new stamp alone is not kept"
    save(stamp_of(edited), made, REPORT)
    report, kept_stamp, made = restore()
    assert report == REPORT and MARK not in line_now(kept_stamp, made, *edited)
    # A check run after the reload with nothing changed sends no change at all: it takes the mark off itself.
    _no_mark_on_a_result_computed_now(page, "pinned-result", save_dep)


def _no_mark_on_a_result_computed_now(page, elem_id: str, save_dep: dict) -> None:
    made_id = save_dep["outputs"][0]
    computing = [d for d in page.demo.config["dependencies"] if page.ids[elem_id] in d["outputs"]
                 and page.demo.fns[d["id"]].fn.__name__ != "restore"]
    assert computing and all(made_id in d["outputs"] for d in computing), \
        f"a handler that computes #{elem_id} leaves the 'before this page was loaded' mark on it"


def test_the_previews_own_fields_come_back_and_a_preview_outdated_before_the_reload_stays_marked(page):
    line_now, fields = _outdated_rule(page, "preview-outdated")
    own = ["preview-prompts", "preview-prompt", "preview-answer", "preview-pasted"]
    typed = [2, "What is 2 + 2?", "4", "<think>2+2</think>4\n<think>2+2</think>5"]
    keep_fields, = [fn for dep, fn in _handlers(page, "change", "preview-prompt")
                    if dep["inputs"] == [page.ids[elem_id] for elem_id in own] and not dep["outputs"]]
    keep_fields(*typed)
    values = [c.value for c in fields]
    for elem_id, value in zip(own, typed):
        values = _with(fields, values, elem_id, value)
    (_, save), restore = _kept(page, "preview-status")
    save(stamp_of(values), None, STATUS, pd.DataFrame(ROWS, columns=HEADERS), None, FINDINGS)
    keep_fields(*typed[:1], "What is 3 + 3?", *typed[2:])  # typed after the preview: it is outdated now

    (_, put_back), = _handlers(page, "load", output="preview-prompt")
    shown = put_back()
    assert shown == [2, "What is 3 + 3?", "4", typed[3]]
    for elem_id, value in zip(own, shown):
        values = _with(fields, values, elem_id, value)
    *_, kept_stamp, made = restore()
    assert all(f"{MARK} — “…or type a prompt” changed since" in line for line in line_now(kept_stamp, made, *values))

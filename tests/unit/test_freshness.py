"""A result computed from the form says when a field it was computed from has changed since (ui/freshness.py): the
comparison is of values as the page sends them (a number field sends 4 or 4.0 for one value, a table a frame or
rows), and the line names the fields and the button to press again."""

from __future__ import annotations

import pandas as pd

from rloo_studio.ui.freshness import MARK, changed, normal, outdated_line, stamp_of


def test_one_value_compares_equal_however_the_page_sends_it():
    assert normal(4) == normal(4.0)
    assert normal(pd.DataFrame([[True, "numeric_answer", 1]], columns=["use", "reward", "weight"])) == \
        normal({"headers": ["use", "reward", "weight"], "data": [[True, "numeric_answer", 1.0]]}) == \
        normal([[True, "numeric_answer", 1.0]])
    assert normal(True) != normal(1.0)  # a ticked box is not the number one
    assert normal(None) != normal("")


def test_the_fields_that_changed_since_the_stamp_are_named_once_in_order():
    labels = ["k", "batch", "steps", "k"]
    stamp = stamp_of([8, 128, 200, 8])
    assert changed(stamp, labels, [8, 128.0, 200, 8]) == []
    assert changed(stamp, labels, [4, 128, 100, 4]) == ["k", "steps"]
    assert changed([], labels, [4, 128, 100, 4]) == []  # nothing computed yet: nothing to call outdated
    assert changed(stamp, labels[:2], [4, 128]) == []  # a stamp of other fields (another layout) is not compared


def test_the_outdated_line_names_what_changed_and_the_button():
    assert outdated_line([], "Estimate time") == ""
    line = outdated_line(["Completions per prompt (k)"], "Estimate time")
    assert line.startswith(MARK) and "“Completions per prompt (k)” changed since" in line and "press **Estimate time** again" in line
    assert "“a” and “b” changed" in outdated_line(["a", "b"], "X")
    assert "“a”, “b”, “c” and 2 more changed" in outdated_line(["a", "b", "c", "d", "e"], "X")


def test_starts_question_shows_only_while_the_form_is_as_it_was_asked_about():
    from rloo_studio.ui.train_tab import confirm_shown

    asked = {"text": "⚠️ **1 of 3 pinned examples fail** with these rewards — start anyway?", "stamp": stamp_of([8, 128, "demo"])}
    row, words = confirm_shown(asked, 8, 128.0, "demo")
    assert row["visible"] is True and words == asked["text"]
    row, words = confirm_shown(asked, 4, 128, "demo")  # k changed since: Start asks again, for these settings
    assert row["visible"] is False and words == ""
    assert confirm_shown({}, 8, 128, "demo")[0]["visible"] is False  # answered (Start anyway, Cancel) or never asked

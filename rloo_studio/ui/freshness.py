"""Whether a result on the page still speaks of the form as it is now, and the line that says when it does not.

A message computed from the form goes stale when a field it was computed from changes. Cheap messages (the problems
Start would name, the memory estimate, the batch line) are simply computed again on every change, through the form's
one change event (derived.py). Results that cost seconds to minutes (the time estimate, the reward preview with its
hack probes, the pinned examples' check, the data check) are not run again on each keystroke: each keeps a *stamp*,
the values of the fields it was computed from, set by the handler that computed it (from the inputs it read), and an
`Outdated` line above it names the fields that differ from the stamp since and the button to press again. The line
goes away when those fields are back to what the result was computed from, or when the result is computed again.

The comparison is pure (`stamp_of`, `changed`, `outdated_line`); `Outdated` is its place on the page: the stamp's
`gr.State`, the line(s), and the rule registered with the form's change event. The line is its own component rather
than a prefix of the result: a rule that rewrote the result could land after a newer result and put the old one back.
`Outdated.keep` keeps a result with its stamp in the workspace, so a reload shows it again, with when it was computed,
and outdated by the same rule if the fields changed since (a result marked outdated before the reload stays marked: its
stamp comes back with it, and the fields come back from their drafts).

A result asked for on every edit (the pinned examples' check, on each edited cell) is run for the last edit only:
`LatestOnly` waits until the edits pause, runs one check at a time, and drops a result whose edit is no longer the
last, so a result for old values never reaches the page as the current one.
"""

from __future__ import annotations

import json
import threading
import time

import gradio as gr

from .workspace import plain

MARK = "⏳ **Outdated**"
SHOWN_NAMES = 3  # more changed fields than this are counted ("and 2 more"), not listed


def normal(value) -> str:
    """A field's value as comparable text: a table (pandas frame, Gradio's dict, or rows) as its rows, numbers as
    numbers (a Number field sends 4 or 4.0 for one value), so that one value always gives one text."""
    if hasattr(value, "values") and hasattr(value, "columns"):  # a pandas frame
        value = value.values.tolist()
    elif isinstance(value, dict) and "data" in value and "headers" in value:
        value = value["data"]

    def plain(v):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float)):
            return float(v) if v == v else None  # NaN: an empty number cell
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if hasattr(v, "item"):  # a numpy scalar from a frame
            return plain(v.item())
        return str(v)

    return json.dumps(plain(value), sort_keys=True, ensure_ascii=False)


def stamp_of(values) -> list[str]:
    """What a result was computed from: its fields' values, in the order of its fields."""
    return [normal(v) for v in values]


def changed(stamp: list[str] | None, labels: list[str], values) -> list[str]:
    """The labels of the fields whose value differs from `stamp` (each label once, in the fields' order); [] when there
    is no stamp (nothing computed yet) or nothing changed."""
    if not stamp or len(stamp) != len(labels):
        return []
    out: list[str] = []
    for label, before, now in zip(labels, stamp, values):
        if before != normal(now) and label not in out:
            out.append(label)
    return out


def outdated_line(fields: list[str], button: str) -> str:
    """"⏳ Outdated — “k” and “batch” changed since; press Estimate time again." ("" when nothing changed)."""
    if not fields:
        return ""
    named = [f"“{f}”" for f in fields[:SHOWN_NAMES]]
    more = len(fields) - len(named)
    listed = (", ".join(named[:-1]) + " and " + named[-1]) if len(named) > 1 and not more else ", ".join(named)
    if more:
        listed += f" and {more} more"
    return f"{MARK} — {listed} changed since this was computed; press **{button}** again for a current one."


def label_of(component) -> str:
    """A field's name on the page: its label, else its element id."""
    return str(getattr(component, "label", None) or getattr(component, "elem_id", None) or type(component).__name__)


def made_line(made: dict | None, stamp) -> str:
    """"🕘 Computed at 14:02 on 3 Dec, before this page was loaded." for a result a reload put back (`made`: its time and
    stamp), while the result shown is that one (a result computed since has another stamp); "" otherwise."""
    if not made or made.get("stamp") != stamp or not isinstance(made.get("at"), (int, float)):
        return ""
    return f"🕘 Computed at {time.strftime('%H:%M on %d %b', time.localtime(made['at'])).replace(' 0', ' ')}, before this page was loaded."


def kept_values(components: list, values: list) -> list:
    """A result's values as JSON holds them and the components take them back: a table with its headers."""
    out = []
    for component, value in zip(components, values):
        if hasattr(value, "values") and hasattr(value, "columns"):  # a pandas frame, as a Dataframe's value arrives
            value = {"headers": [str(c) for c in value.columns], "data": value.values.tolist()}
        out.append(json.loads(json.dumps(plain(value), default=str)))
    return out


class Outdated:
    """One expensive result's stamp and its `Outdated` line. Make it where the line should show (`line()` adds one more
    where another part of the result shows, e.g. the preview's findings below its tables), then `watch` its fields;
    `keep` keeps the result across reloads."""

    def __init__(self, elem_id: str, button: str):
        self.elem_id, self.button = elem_id, button
        self.stamp = gr.State([])
        self.made = gr.State(None)  # a result a reload put back: {"at": when it was computed, "stamp": its stamp}
        self.lines: list = []
        self.fields: list = []
        self.line()

    def line(self):
        self.lines.append(gr.Markdown(elem_id=f"{self.elem_id}-outdated" + (f"-{len(self.lines) + 1}" if self.lines else "")))
        return self.lines[-1]

    def watch(self, derived, fields: list, triggers: list | None = None) -> None:
        """Show the line whenever one of `fields` differs from the stamp. `triggers`: the fields whose change re-runs the
        comparison (default: all of them); a field with change handlers of its own may be left out (derived.py)."""
        self.fields = list(fields)
        labels = [label_of(c) for c in self.fields]

        def line_now(stamp, made, *values):
            text = "  \n".join(t for t in (made_line(made, stamp), outdated_line(changed(stamp, labels, values), self.button)) if t)
            return text if len(self.lines) == 1 else [text] * len(self.lines)

        derived.on(list(triggers if triggers is not None else fields) + [self.stamp, self.made], line_now,
                   inputs=[self.stamp, self.made] + self.fields, outputs=self.lines)

    def keep(self, demo: gr.Blocks, workspace, results: list, worth=lambda *values: True, shown=None) -> None:
        """Keep the result — `results`, its components, the first of which changes with every new result — in the
        workspace with its stamp, and put it back when a page loads (a reload), marked with when it was computed
        (`made_line`) and, by its stamp, outdated if the fields changed since. `worth(*values)`: whether what the
        components show is a result to keep (not a progress line). `shown(*values)`: the kept values as the result's
        handler sends them (e.g. a table with its columns' widths), when a value alone does not show it as it was."""
        name = f"result-{self.elem_id}.json"

        def save(stamp, made, *values):
            if not stamp or not worth(*values):
                return gr.skip()
            kept = {"stamp": stamp, "values": kept_values(results, list(values))}
            before = workspace.read_json(name) or {}
            # One result is one stamp and one first value: what a reload put back, or the same result again, keeps its
            # time. Its other parts are kept as they reach the page: a table's value can follow the first component's
            # change (the preview's table came to its save empty, then whole on its own change).
            if before.get("stamp") == stamp and (before.get("values") or [None])[0] == kept["values"][0]:
                if before.get("values") != kept["values"]:
                    workspace.write_json(name, {**kept, "at": before.get("at")})
                return gr.skip()
            workspace.write_json(name, {**kept, "at": time.time()})
            return None  # a new result: no "before this page was loaded" mark

        # Every part's change, and the stamp's: a check of new fields can say what the last one said (the page sends no
        # change of the result then), and the kept stamp must be the new one, or a reload would call it outdated.
        gr.on([r.change for r in results] + [self.stamp.change], save, inputs=[self.stamp, self.made] + results,
              outputs=self.made, api_visibility="private", show_progress="hidden", trigger_mode="multiple",
              concurrency_limit=1, concurrency_id=f"keep-{self.elem_id}")

        def restore():
            kept = workspace.read_json(name)
            if not kept or not isinstance(kept.get("values"), list) or len(kept["values"]) != len(results):
                return [gr.skip()] * (len(results) + 2)
            values = list(shown(*kept["values"])) if shown else kept["values"]
            return [*values, kept.get("stamp") or [], {"at": kept.get("at"), "stamp": kept.get("stamp")}]

        demo.load(restore, outputs=results + [self.stamp, self.made], api_visibility="private", show_progress="hidden")

    def stamp_from(self, components: list, values: list, replaced: list[tuple] | None = None) -> list[str]:
        """The stamp of a result computed from `values` of `components` (a handler's inputs); `replaced`, pairs of
        (component, value), gives the value a field takes from the same handler (the data check's chosen columns)."""
        by_id = {id(c): v for c, v in zip(components, values)}
        by_id.update({id(c): v for c, v in (replaced or [])})
        return stamp_of([by_id.get(id(c)) for c in self.fields])


class LatestOnly:
    """Checks asked on every edit, run for the last edit only (per page session), one at a time (across sessions: they
    share the scoring child that has loaded the tokenizer).

    `ask(session)` numbers an edit; `turn(session, n, quiet_s)` waits until no edit came for `quiet_s` and no other
    check runs, and says whether edit `n` is still the last (else its check is not run at all); the caller runs the
    check, calls `done()`, and shows its result only while `current(session, n)`: an edit made while a check ran makes
    that check's result outdated, and the check of the newer edit, waiting for its turn, is the one that shows."""

    def __init__(self):
        self._asked: dict[str, int] = {}
        self._running = False
        self._changed = threading.Condition()
        self.runs = 0  # checks run (the others were outdated before they started)

    def ask(self, session: str) -> int:
        with self._changed:
            n = self._asked[session] = self._asked.get(session, 0) + 1
            self._changed.notify_all()
            return n

    def current(self, session: str, n: int) -> bool:
        return self._asked.get(session) == n

    def turn(self, session: str, n: int, quiet_s: float) -> bool:
        with self._changed:
            # Until `quiet_s` passes with no newer edit (a newer one wakes this up at once: it is not the last).
            self._changed.wait_for(lambda: not self.current(session, n), timeout=quiet_s)
            self._changed.wait_for(lambda: not self._running or not self.current(session, n))
            if not self.current(session, n):
                return False
            self._running = True
            self.runs += 1
            return True

    def done(self) -> None:
        with self._changed:
            self._running = False
            self._changed.notify_all()

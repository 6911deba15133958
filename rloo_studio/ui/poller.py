"""The page's one timer: each tab registers what it re-reads from the run folders, and one event per tick runs them all.

Why one event: each event costs the browser a fixed share of work over the whole page, whatever it sends. With each tab
on the timer by itself, thirteen events every two seconds kept a CPU core busy in the browser even with nothing training
(benchmarks/page_idle_cpu.py), a core a CPU run needs. One event a tick costs a thirteenth of that,
and with nothing training the ticks come less often (`idle_seconds`).

A tab calls `poller.tick(fn, inputs, outputs)` where it would call `gr.Timer.tick`; `wire()` then makes the one event, whose
function calls each registered `fn` with its own inputs and sends its outputs (or `gr.skip()`s) in place. A function
that raises skips its own outputs for that tick and is logged; the others still update.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from .plots import in_order

log = logging.getLogger(__name__)


@dataclass
class _Poll:
    fn: object
    inputs: list  # what `fn` is called with
    outputs: list
    only_changes: bool = False  # then the event also reads `outputs`, to compare with what `fn` returns


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # values without a plain truth value (arrays, frames): send them
        return False


def _as_list(components) -> list:
    if components is None:
        return []
    return list(components) if isinstance(components, (list, tuple)) else [components]


class Poller:
    """Collects the tabs' polls (`tick`) and wires them to one `gr.Timer` (`wire`, once every tab has registered)."""

    def __init__(self, seconds: float, idle_seconds: float | None = None, busy=None):
        """A tick every `seconds` while `busy()` says something is going on, else every `idle_seconds` (each tick still
        costs the browser its event: an idle page need not pay it as often)."""
        self.seconds, self.idle_seconds, self.busy = seconds, idle_seconds or seconds, busy
        self.timer = gr.Timer(seconds)
        self._polls: list[_Poll] = []
        self._wired = False

    def tick(self, fn, inputs=None, outputs=None, only_changes: bool = False) -> None:
        """Register `fn(*inputs) -> outputs` for every tick.

        `only_changes`: the outputs' values as the page has them are read too, and a value equal to the page's is not
        sent (for text and HTML outputs that `fn` rebuilds whole each time).
        """
        if self._wired:
            raise RuntimeError("Poller.tick after wire(): register every poll before the page's event is made")
        outputs = _as_list(outputs)
        taken = {id(c) for p in self._polls for c in p.outputs}
        if any(id(c) in taken for c in outputs):
            raise ValueError(f"{getattr(fn, '__qualname__', fn)} updates a component another poll already updates")
        self._polls.append(_Poll(fn, _as_list(inputs), outputs, only_changes))

    def interval(self) -> float:
        """The seconds to the next tick: short while something is going on."""
        try:
            busy = self.busy() if self.busy is not None else True
        except Exception:  # an unreadable run folder: keep polling often rather than stop showing changes
            log.exception("the poller's busy check failed")
            busy = True
        return self.seconds if busy else self.idle_seconds

    def run_all(self, *values) -> list:
        """Every poll's outputs, in registration order (a poll that raises skips its own), then the timer's interval."""
        *values, interval_now = values
        results: list = []
        at = 0
        for poll in self._polls:
            args = values[at:at + len(poll.inputs)]
            at += len(poll.inputs)
            shown = values[at:at + len(poll.outputs)] if poll.only_changes else None
            at += len(poll.outputs) if poll.only_changes else 0
            try:
                out = poll.fn(*args)
                out = [out] if len(poll.outputs) == 1 else list(out)
                if len(out) != len(poll.outputs):
                    raise ValueError(f"returned {len(out)} values for {len(poll.outputs)} outputs")
                if shown is not None:
                    out = [gr.skip() if isinstance(new, str) and new == old else new for new, old in zip(out, shown)]
                # A state handed back as it came in (what the page shows, unchanged) is not sent either.
                given = {id(c): v for c, v in zip(poll.inputs, args) if isinstance(c, gr.State)}
                out = [gr.skip() if isinstance(c, gr.State) and id(c) in given and _equal(value, given[id(c)]) else value
                       for c, value in zip(poll.outputs, out)]
            except Exception:  # one tab's failure must not freeze the others' updates
                log.exception("poll %s failed", getattr(poll.fn, "__qualname__", poll.fn))
                out = [gr.skip()] * len(poll.outputs)
            results.extend(out)
        interval = self.interval()
        return results + [gr.skip() if interval == interval_now else gr.Timer(value=interval)]

    def wire(self) -> None:
        """Make the page's one tick event over every registered poll."""
        self._wired = True
        inputs = [c for p in self._polls for c in p.inputs + (p.outputs if p.only_changes else [])] + [self.timer]
        outputs = [c for p in self._polls for c in p.outputs] + [self.timer]
        self.timer.tick(in_order(self.run_all, outputs), inputs=inputs, outputs=outputs, api_visibility="private",
                        show_progress="hidden")

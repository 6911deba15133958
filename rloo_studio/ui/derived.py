"""The form's one change event: every line, visibility and draft the tabs derive from the form's fields, in one handler.

Why one: a field with two `change` handlers in Gradio's "always_last" mode (the mode that makes a handler's last run read
the field's final value) can restart them forever. When the field changes while one handler still runs, that handler is
put aside; once it ends, the page sends the field's change event again, whole, to every handler of the field, and the
other handler, still running, is put aside in turn. With handlers that take about as long as each other, each one's end
starts the next: measured on the Rewards tab, lint and draft-save requests a few times a second for as long as the page
stayed open, a busy browser core, and pinned checks (a judge's calls included) asked again and again. So each field's
change has exactly one handler here: `wire()` makes one event over every registered trigger, whose function runs every
registered function with its own inputs and sends its outputs. (Running them all is cheap: lines of arithmetic and one
small draft file; the event does not say which field changed once a put-aside run is sent again.)

A tab calls `derived.on(triggers, fn, inputs, outputs)` where it would call `gr.on([t.change for t in triggers], ...)`.
Handlers elsewhere that share a trigger chain with `.then` (a chained step is sent again alone, never its trigger).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

log = logging.getLogger(__name__)


@dataclass
class _Rule:
    fn: object
    inputs: list
    outputs: list


def _unique(components) -> list:
    seen, out = set(), []
    for c in components:
        if id(c) not in seen:
            seen.add(id(c))
            out.append(c)
    return out


class Derived:
    """Collects the tabs' derived values (`on`) and wires them to one change event (`wire`, once every tab has registered)."""

    def __init__(self):
        self._rules: list[_Rule] = []
        self._triggers: list = []
        self._wired = False

    def on(self, triggers, fn, inputs, outputs) -> None:
        """Run `fn(*inputs) -> outputs` whenever one of `triggers` changes (with every other registered function)."""
        if self._wired:
            raise RuntimeError("Derived.on after wire(): register every derived value before the page's event is made")
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else ([] if outputs is None else [outputs])
        taken = {id(c) for r in self._rules for c in r.outputs}
        if any(id(c) in taken for c in outputs):
            raise ValueError(f"{getattr(fn, '__qualname__', fn)} sets a component another derived value already sets")
        self._rules.append(_Rule(fn, list(inputs) if isinstance(inputs, (list, tuple)) else [inputs], outputs))
        self._triggers.extend(triggers)

    def run_all(self, *values) -> list:
        """Every rule's outputs, in registration order; a rule that raises skips its own outputs (and is logged)."""
        by_id = dict(zip(self._input_ids, values))
        results: list = []
        for rule in self._rules:
            try:
                out = rule.fn(*(by_id[id(c)] for c in rule.inputs))
                out = [] if not rule.outputs else [out] if len(rule.outputs) == 1 else list(out)
                if len(out) != len(rule.outputs):
                    raise ValueError(f"returned {len(out)} values for {len(rule.outputs)} outputs")
            except Exception:  # one line's failure must not freeze the others
                log.exception("derived value %s failed", getattr(rule.fn, "__qualname__", rule.fn))
                out = [gr.skip()] * len(rule.outputs)
            results.extend(out)
        return results

    def wire(self) -> None:
        """Make the one event: every registered trigger's change, every rule's inputs and outputs."""
        self._wired = True
        inputs = _unique(c for r in self._rules for c in r.inputs)
        self._input_ids = [id(c) for c in inputs]
        outputs = [c for r in self._rules for c in r.outputs]
        gr.on([t.change for t in _unique(self._triggers)], self.run_all, inputs=inputs, outputs=outputs or None,
              api_visibility="private", show_progress="hidden", trigger_mode="always_last")

"""Sending a chart new data: the data in one message, then the data with the chart's settings in the next.

Why: Gradio 6.31's charts (LinePlot, BarPlot) draw themselves again when a setting changes (the order of the steps,
the title, the y range, the colours), and in an update that brings new data and a changed setting together, that new
drawing is made from the data the chart held before the update: the chart is one update behind. The Evaluate tab
showed the previous evaluation's points under the new one's title; the Train tab's curve ended a step short after a
run finished (nothing is sent after the last step); a chart first given an empty frame drew no lines for later data.
Data alone is drawn at once, and a redrawing that follows it then starts from that data.

So every event that updates a chart goes through `in_order`: when one of its chart updates carries settings, the event
sends each chart's data alone first (every other output skipped), then all its outputs as the function returned them.
What an API caller receives, the event's last message, is unchanged. tests/browser/test_chart_updates.py shows the
fault and the remedy in Chromium; tests/ui/test_chart_events.py checks that every event of the page with a chart among
its outputs goes through here.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Iterator, Sequence

import gradio as gr
from gradio.components.native_plot import NativePlot


def is_chart(component: Any) -> bool:
    return isinstance(component, NativePlot)


def _with_settings(value: Any) -> bool:
    """An update that sets a chart's data and one of its settings."""
    return isinstance(value, dict) and value.get("__type__") == "update" and "value" in value \
        and any(k not in ("__type__", "value") for k in value)


def data_first(outputs: Sequence[Any], values: Sequence[Any]) -> list | None:
    """The message to send before `values`: each chart's data alone, every other output skipped; None when no chart
    update in `values` carries a setting (then `values` is drawn right as it is)."""
    if not any(is_chart(c) and _with_settings(v) for c, v in zip(outputs, values)):
        return None
    return [gr.update(value=v["value"]) if is_chart(c) and _with_settings(v) else gr.skip() for c, v in zip(outputs, values)]


def in_order(fn: Callable, outputs: Sequence[Any]) -> Callable:
    """`fn` (a function or a generator function of an event whose outputs are `outputs`) as a generator function that
    sends `data_first` before each of `fn`'s results that needs it. Its signature is `fn`'s, so Gradio passes it the same
    inputs (and a `gr.Progress`)."""
    outputs = list(outputs)
    single = len(outputs) == 1

    def messages(result: Any) -> Iterator[Any]:
        values = [result] if single else list(result)
        first = data_first(outputs, values)
        if first is not None:
            yield first[0] if single else first
        yield result

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            for result in fn(*args, **kwargs):
                yield from messages(result)
    else:
        @functools.wraps(fn)
        def run(*args, **kwargs):
            yield from messages(fn(*args, **kwargs))
    return run

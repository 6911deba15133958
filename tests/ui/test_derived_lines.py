"""A line the page derives from several fields (the batch line, the judge's calls per step, the epochs note, the memory
estimate, the judge's saved draft) is computed by one event whichever of its fields changed.

Why it matters: with an event per field, a form load that sets all the fields at once sends several events, and the one
computed from half-updated fields could finish last and stay. It was seen in a browser: "Each step trains on 4
completions (4 per device …) = 0.5 prompts × 8 completions" beside fields showing k = 8 and a batch of 128. One event
runs its triggers in turn, and with trigger_mode "always_last" its final run reads the fields as they end up.

And no field has two "always_last" handlers of one event: when the field changes while one of them runs, Gradio sends
the field's event again, whole, once that one ends, and the other, still running, is put aside in turn; each end started
the next. Seen in a browser: lint and draft-save requests several times a second for as long as the page stayed open
(the browser's renderer busy the whole time), and pinned checks asked again and again.
"""

from __future__ import annotations

from rloo_studio.ui.app import build_app


def test_each_line_derived_from_several_fields_is_one_event_whose_last_run_wins(tmp_path):
    demo = build_app(tmp_path / "runs", detect_hardware=False)
    try:
        deps = demo.config["dependencies"]
        ids = {block.elem_id: block_id for block_id, block in demo.blocks.items() if getattr(block, "elem_id", None)}
        changes = [d for d in deps if d["targets"] and all(event == "change" for _, event in d["targets"])]
        for elem_id in ("batch-summary", "judge-cost", "epochs-note", "memory-estimate"):
            writers = [d for d in changes if ids[elem_id] in d["outputs"]]
            assert len(writers) == 1, f"#{elem_id} is written by {len(writers)} change events: the last to finish wins"
            assert len(writers[0]["targets"]) >= 3 and writers[0]["trigger_mode"] == "always_last", writers[0]
        # The judge's draft is saved by that same one event (it has no output to look it up by): the only "always_last"
        # handler of each judge field's change, started by all of them. (The rubric's own "multiple" handler, which sets
        # the template menu from it, waits for nothing, so it cannot restart with it: see the next test.)
        for elem_id in ("judge-rubric", "judge-use", "judge-source"):
            handlers = [d for d in changes if any(target == ids[elem_id] for target, _ in d["targets"])
                        and d["trigger_mode"] == "always_last"]
            assert len(handlers) == 1 and len(handlers[0]["targets"]) >= 5, (elem_id, handlers)
    finally:
        demo.inference_worker.shutdown()


def test_no_component_event_has_two_handlers_that_wait_for_each_other(tmp_path):
    """At most one "always_last" handler per (component, event): chained steps (`.then`) are sent again alone."""
    demo = build_app(tmp_path / "runs", detect_hardware=False)
    try:
        handlers: dict[tuple, list[str]] = {}
        for dep, fn in zip(demo.config["dependencies"], demo.fns.values()):
            if dep["trigger_mode"] != "always_last":
                continue
            for target, event in dep["targets"]:
                if target is not None:  # (a chained step has no target of its own)
                    block = demo.blocks.get(target)
                    key = (getattr(block, "elem_id", None) or type(block).__name__, target, event)
                    handlers.setdefault(key, []).append(fn.name)
        doubled = {key: names for key, names in handlers.items() if len(names) > 1}
        assert not doubled, f"two 'always_last' handlers of one event restart each other: {doubled}"
    finally:
        demo.inference_worker.shutdown()


def test_the_stop_button_has_one_writer(tmp_path):
    """Stop is enabled from the watched run's state, and a State mirrors what the page shows so that the poll sends the
    button only on a change. Two events wrote both (the poll and the watched run's change): one that read the mirror
    before the other's update landed could leave the mirror saying "enabled" over a disabled button, and every later
    poll then sent nothing. Seen in a browser while a run trained: Stop enabled, then disabled for over a minute."""
    demo = build_app(tmp_path / "runs", detect_hardware=False)
    try:
        ids = {block.elem_id: block_id for block_id, block in demo.blocks.items() if getattr(block, "elem_id", None)}
        writers = [d for d in demo.config["dependencies"] if ids["stop-training"] in d["outputs"]]
        assert len(writers) == 1, [d["targets"] for d in writers]
    finally:
        demo.inference_worker.shutdown()



def test_every_event_that_updates_a_chart_sends_its_data_first(tmp_path):
    """Gradio draws a chart whose data and settings change in one update from its old data (ui/plots.py): the Evaluate
    chart showed the previous evaluation under the new one's title. Every event with a chart among its outputs goes
    through plots.in_order (tests/browser/test_chart_updates.py shows that it draws the new data)."""
    from rloo_studio.ui.plots import is_chart

    demo = build_app(tmp_path / "runs", detect_hardware=False)
    try:
        charts = {block_id for block_id, block in demo.blocks.items() if is_chart(block)}
        assert len(charts) >= 5  # Train (2), Runs (2), Evaluate, scan
        unordered = [[demo.blocks[o].elem_id for o in d["outputs"] if o in charts] + [demo.fns[d["id"]].fn.__qualname__]
                     for d in demo.config["dependencies"]
                     if charts & set(d["outputs"]) and demo.fns[d["id"]].fn.__code__ is not None
                     and "in_order" not in demo.fns[d["id"]].fn.__code__.co_qualname]
        assert not unordered, "\n".join(map(str, unordered))
    finally:
        demo.inference_worker.shutdown()

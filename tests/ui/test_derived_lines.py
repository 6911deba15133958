"""A line the page derives from several fields (the batch line, the judge's calls per step, the epochs note, the memory
estimate, the judge's saved draft) is computed by one event whichever of its fields changed.

Why it matters: with an event per field, a form load that sets all the fields at once sends several events, and the one
computed from half-updated fields could finish last and stay. It was seen in a browser: "Each step trains on 4
completions (4 per device …) = 0.5 prompts × 8 completions" beside fields showing k = 8 and a batch of 128. One event
runs its triggers in turn, and with trigger_mode "always_last" its final run reads the fields as they end up.
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
        # The judge's draft: saved by one event on every judge field (it has no output to look it up by).
        rubric = ids["judge-rubric"]
        saves = [d for d in changes if not d["outputs"] and any(target == rubric for target, _ in d["targets"])]
        assert len(saves) == 1 and len(saves[0]["targets"]) >= 5 and saves[0]["trigger_mode"] == "always_last", saves
    finally:
        demo.inference_worker.shutdown()

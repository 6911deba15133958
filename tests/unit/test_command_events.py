"""The progress events of `rloo-studio eval|scan|export --events` are typed (protocol.CommandEvent): each kind goes to
its JSON line and back unchanged, the JSON keeps the shape the app and scripts read, and a line with a key the kind
does not have is refused."""

from __future__ import annotations

import json

import pytest

from rloo_studio import protocol
from rloo_studio.protocol import (EvalDone, EvalPlan, EvalSide, EvalSkip, ExportStep, ScanDone, ScanPlan, ScanProgress,
                                  command_event)

EXAMPLES = {
    "eval": [EvalPlan(prompts=24, checkpoints=["checkpoint-2", "final"]), EvalSkip(name="checkpoint-3", why="no weights"),
             EvalSide(side="checkpoint-2", validation=True, done=8, total=24), EvalDone(seconds=12.3, file="runs/r/eval.json")],
    "scan": [ScanPlan(prompts=20, of=40, k=4, batches=5), ScanProgress(done=8, total=20, elapsed_s=30.4, eta_s=45.0),
             ScanProgress(done=4, total=20, elapsed_s=10.0), ScanDone(seconds=61.2, folder="runs/scans/s")],
    "export": [ExportStep(text="[export] merging the adapter")],
}


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_every_event_goes_to_its_line_and_back(command):
    for event in EXAMPLES[command]:
        line = json.dumps(event.to_dict())
        assert command_event(command, json.loads(line)) == event, line
    # every kind of the command is among the examples
    assert {type(e) for e in EXAMPLES[command]} == set(protocol.COMMAND_EVENTS[command].values())


def test_the_json_keeps_the_shape_the_readers_know():
    # what tests/engine/test_eval_checkpoints.py and the docs' examples read: the tag first, the fields as before
    assert EvalSide(side="base", validation=False, done=8, total=24).to_dict() == \
        {"event": "side", "side": "base", "validation": False, "done": 8, "total": 24}
    assert list(EvalPlan(prompts=1, checkpoints=["final"]).to_dict()) == ["event", "prompts", "checkpoints"]
    assert ScanProgress(done=1, total=2, elapsed_s=3.0, eta_s=None).to_dict() == \
        {"event": "progress", "done": 1, "total": 2, "elapsed_s": 3.0, "eta_s": None}
    assert ScanDone(seconds=1.0, folder="f").to_dict() == {"event": "done", "seconds": 1.0, "folder": "f"}
    assert ExportStep(text="[export] x").to_dict() == {"event": "step", "text": "[export] x"}


def test_a_key_the_event_does_not_have_is_refused():
    with pytest.raises(ValueError, match="unknown keys.*'totl'"):
        command_event("eval", {"event": "side", "side": "base", "validation": False, "done": 1, "totl": 4})
    with pytest.raises(ValueError, match="unknown keys.*'eta'"):
        command_event("scan", {"event": "progress", "done": 1, "total": 2, "elapsed_s": 3.0, "eta": 4.0})


def test_each_command_reads_its_own_kinds():
    # "done" is the evaluation's (a file) and the scan's (a folder): read under the wrong command, it is refused
    assert command_event("scan", {"event": "done", "seconds": 1.0, "folder": "f"}) == ScanDone(seconds=1.0, folder="f")
    with pytest.raises(ValueError, match="unknown keys"):
        command_event("eval", {"event": "done", "seconds": 1.0, "folder": "f"})
    with pytest.raises(ValueError, match="unknown event 'side'"):
        command_event("scan", {"event": "side", "side": "base", "validation": False, "done": 1, "total": 2})


def test_the_terminal_lines():
    assert ScanPlan(prompts=20, of=40, k=4, batches=5).line() == "[scan] plan prompts=20 of=40 k=4 batches=5"
    assert ScanProgress(done=8, total=20, elapsed_s=30.4, eta_s=45.0).line() == "[scan] 8/20 prompts elapsed=30s eta=45s"
    assert ScanProgress(done=8, total=20, elapsed_s=30.4).line() == "[scan] 8/20 prompts elapsed=30s"
    assert EvalDone(seconds=12.3, file="e.json").line() == "[eval] done seconds=12.3 file=e.json"
    assert ExportStep(text="[export] merging").line() == "[export] merging"

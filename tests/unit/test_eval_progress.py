"""The Evaluate tab's progress bar, moved by `rloo-studio eval --events` lines."""

from __future__ import annotations

import json

import pytest

from rloo_studio.errors import StudioError
from rloo_studio.protocol import EvalPlan, EvalSide, EvalSkip, ExportStep
from rloo_studio.ui.eval_tab import EvalProgress


def _line(**event) -> str:
    return json.dumps(event)


def test_the_bar_counts_every_side_the_plan_announces_and_ignores_other_lines():
    bar = EvalProgress(choosing=True)
    assert bar.feed(_line(event="plan", prompts=4, checkpoints=["checkpoint-2", "final"])) is None
    assert bar.sides == 1 + 2 * 2  # base once, each checkpoint on the held-out and on the validation prompts
    assert bar.feed("Loading weights: 100%|██████| 3/3") is None and bar.feed("{not json") is None
    assert bar.feed(_line(event="side", side="base", validation=False, done=4, total=4)) == (0.2, "base: 4/4 completions")
    fraction, desc = bar.feed(_line(event="side", side="checkpoint-2", validation=True, done=2, total=4))
    assert (round(fraction, 3), desc) == (0.3, "validation checkpoint-2: 2/4 completions")
    assert bar.feed(_line(event="done", seconds=1.0, file="eval.json")) is None


def test_without_a_validation_split_each_checkpoint_is_one_side():
    bar = EvalProgress(choosing=False)
    bar.feed(_line(event="plan", prompts=4, checkpoints=["checkpoint-2", "final"]))
    assert bar.sides == 3


def test_the_terminal_lines_say_the_same_events():
    assert EvalPlan(prompts=24, checkpoints=["checkpoint-2", "final"]).line() == \
        "[eval] plan prompts=24 checkpoints=checkpoint-2,final"
    assert EvalSide(side="checkpoint-2", validation=True, done=10, total=10).line() == "[eval] validation checkpoint-2 10/10"
    assert EvalSide(side="base", validation=False, done=0, total=24).line() == "[eval] base 0/24"
    assert EvalSkip(name="checkpoint-3", why="cut off").line() == "[eval] skip checkpoint-3: cut off"


def test_only_json_event_lines_are_progress():
    from rloo_studio.workers.commands import event_of

    assert event_of(_line(event="step", text="[export] merging"), "export") == ExportStep(text="[export] merging")
    # A library's warning, a JSON value that is not an event, a broken line: none of them moves a bar.
    for line in ("[export] merging", "UserWarning: {x}", "{not json", _line(done=1), "[1, 2]", ""):
        assert event_of(line, "export") is None, line


def test_an_event_line_the_app_cannot_read_is_refused_not_guessed():
    from rloo_studio.workers.commands import event_of

    with pytest.raises(StudioError, match="different versions"):
        event_of(_line(event="side", side="base", validation=False, done=1, totl=4), "eval")  # a misspelt key
    with pytest.raises(StudioError, match="cannot read"):
        event_of(_line(event="step", text="[export] merging"), "eval")  # an export's event is no evaluation's


def test_a_command_ended_for_an_unreadable_event_says_so_as_its_failure():
    from rloo_studio.workers.commands import event_of

    # The tab's callback refuses the line; the command is ended and answers as a failed command, in its own words
    # (the tabs then show "Evaluation failed: …", not "Not started").
    import sys

    from rloo_studio.workers.commands import run_command

    bad = _line(event="side", side="base", validation=False, done=1, totl=4)
    finished = run_command([sys.executable, "-c", f"import sys, time; print({bad!r}, file=sys.stderr, flush=True); time.sleep(60)"],
                           on_line=lambda line: event_of(line, "eval"))
    assert finished.returncode != 0
    assert "cannot read" in finished.error_text("") and "different versions" in finished.error_text("")

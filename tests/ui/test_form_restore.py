"""What the form keeps and says between changes: the form's draft restored field by field, Shrink to fit's hidden
change said with an Undo, Stop only while a run trains, the rubric menu that follows the rubric, the demo's rewards
left behind with the demo's data. The page itself: tests/browser/test_reload_restores.py."""

from __future__ import annotations

import json
import os

import gradio as gr

from helpers.app import Form, connect, served_app
from rloo_studio import runs
from rloo_studio.rewards.judge import RUBRICS
from rloo_studio.ui import text
from rloo_studio.ui.form import input_keys, restorable
from rloo_studio.ui.judge_panel import OWN_RUBRIC, rubric_template_for
from rloo_studio.ui.model_tab import shrunk_markdown
from rloo_studio.ui.rewards_tab import EXAMPLE_PIN, builtin_rows, merged_builtin_rows, without_demo_rewards
from rloo_studio.ui.train_tab import run_buttons
from rloo_studio.config import RunConfig
from rloo_studio.presets import get_preset


def test_shrink_to_fit_says_what_it_changed_without_a_field_and_undo_puts_it_back(tmp_path):
    from rloo_studio.machine.hardware import Hardware

    with served_app(tmp_path / "runs", known_hardware=Hardware(gpus=[], cpu_cores=2, ram_gb=24.0)) as url:
        client = connect(url)
        form = Form(client)
        form[text.MODEL] = "HuggingFaceTB/SmolLM2-135M-Instruct"
        form["Batch per device (completions)"] = 512
        before = list(form.values)
        # An unticked builtin's weight (Rewards tab) is the person's and is kept: Shrink to fit changes memory settings only.
        table = form[text.BUILTIN_TABLE]
        rows = [list(r) for r in table["data"]]
        at = next(i for i, r in enumerate(rows) if r[1] == "length_penalty")
        rows[at][2] = 0.3
        form[text.BUILTIN_TABLE] = {**table, "data": rows}
        message, *shrunk = form.call("/shrink_to_fit")
        assert "passes per step (gradient accumulation steps; no field on this page" in message, message
        form.values = shrunk
        assert form["Batch per device (completions)"] < 512
        assert [r[2] for r in form[text.BUILTIN_TABLE]["data"] if r[1] == "length_penalty"] == [0.3]
        # An edit after Shrink to fit is the person's: Undo puts back what Shrink to fit changed and nothing else (it put
        # the whole Train tab back: 15 training steps became 200 again, a walk found).
        form["Training steps"] = 15
        # Undo: the batch as it was (the gradient accumulation, which no field shows, with it: the estimate exceeds again).
        message, *undone = client.predict(*form.values, api_name="/undo_shrink_to_fit")
        assert "undone" in message
        form.values = undone
        assert form["Batch per device (completions)"] == 512 == before[form.index("Batch per device (completions)")]
        assert form["Training steps"] == 15
        assert form.call("/estimate").startswith("⛔ **Estimated peak")  # exceeds, on a CPU or a GPU
        # The same field edited after Shrink to fit: the person's value stays, and Undo says so (it put 512 back over
        # the 32 typed since, without a word: a walk).
        message, *shrunk = form.call("/shrink_to_fit")
        form.values = shrunk
        form["Batch per device (completions)"] = 32
        message, *undone = client.predict(*form.values, api_name="/undo_shrink_to_fit")
        form.values = undone
        assert form["Batch per device (completions)"] == 32
        assert "Kept as you set them since: “Batch per device (completions)” 32" in message, message


def test_the_shrunk_line_names_the_setting_that_has_no_field():
    state = {"config": {}, "shrunk": {"changes": {"rloo.per_device_train_batch_size": [512, 64],
                                                  "rloo.gradient_accumulation_steps": [1, 8]}}}
    row, line = shrunk_markdown(state)
    assert row["visible"] is True
    assert "“Batch per device (completions)” 512 → 64" in line
    assert "passes per step (gradient accumulation steps; no field on this page: kept with the settings) 1 → 8" in line
    assert "Undo" in line
    row, line = shrunk_markdown({"config": {}})
    assert row["visible"] is False and line == ""


def test_stop_is_enabled_only_while_the_watched_run_trains_and_resume_only_when_it_can_continue(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / runs.CONFIG_FILE).write_text("model: {name_or_path: demo}\n")
    stop, resume, live = run_buttons(None, [True, True])  # nothing watched: nothing to stop or resume
    assert stop["interactive"] is False and resume["interactive"] is False and live == [False, False]
    runs.update_status(run_dir, state="running", pid=os.getpid())
    stop, resume, live = run_buttons(str(run_dir), [False, False])
    assert live == [True, False] and stop["interactive"] is True and resume == gr.skip()
    assert run_buttons(str(run_dir), live)[:2] == (gr.skip(), gr.skip())  # unchanged: not sent again
    runs.update_status(run_dir, state="stopped")
    stop, resume, live = run_buttons(str(run_dir), live)
    assert stop["interactive"] is False and resume["interactive"] is True
    # A finished run has no step left to train: Resume could only refuse, so it cannot be pressed.
    runs.update_status(run_dir, state="finished")
    stop, resume, live = run_buttons(str(run_dir), live)
    assert stop == gr.skip() and resume["interactive"] is False and live == [False, False]


def test_the_rubric_menu_says_when_the_rubric_is_the_persons_own():
    name, rubric = next(iter(RUBRICS.items()))
    assert rubric_template_for(rubric.text, None) == name
    assert rubric_template_for(rubric.text, name) == gr.skip()
    assert rubric_template_for(rubric.text + " And polite.", name) == OWN_RUBRIC
    assert rubric_template_for("", name) == gr.skip()  # an emptied rubric leaves the menu as it is


def test_own_data_drops_the_demo_rewards_as_the_demo_set_them_and_its_pin_only():
    demo = builtin_rows(get_preset("cpu-demo").load())
    ticked = [r[1] for r in demo if r[0]]
    assert ticked == ["numeric_answer", "think_format", "think_length"]
    mine = ["What is 1 + 1?", "2", "2", 0, 1]
    rows, pins, note = without_demo_rewards(text.SOURCE_CHOICES[1], demo, [EXAMPLE_PIN, mine])
    assert not any(r[0] for r in rows) and pins == [mine]
    assert rows == builtin_rows(RunConfig(rewards=[]))  # their default weights and parameters
    assert "The demo's example rewards were removed because your data is not the demo's" in note
    # A builtin the person changed (its weight) is theirs: it stays ticked.
    demo[0][2] = 2.0
    rows, pins, note = without_demo_rewards(text.SOURCE_CHOICES[1], demo, [mine])
    assert [r[1] for r in rows if r[0]] == ["numeric_answer"] and pins == [mine]
    # Back on the demo's data: nothing to drop.
    assert without_demo_rewards(text.SOURCE_CHOICES[0], demo, [EXAMPLE_PIN])[:2] == (gr.skip(), gr.skip())


def test_a_saved_field_goes_back_only_where_it_fits():
    radio = gr.Radio(["a", "b"], value="a")
    assert restorable(radio, "b") and not restorable(radio, "gone")
    assert restorable(gr.Dropdown(["x"], allow_custom_value=True), "typed")
    table = gr.Dataframe(headers=["one", "two"])
    assert restorable(table, [[1, 2]]) and not restorable(table, [[1, 2, 3]])
    assert input_keys([gr.Textbox(elem_id="a"), gr.Textbox(label="b"), gr.Textbox(label="b")]) == ["a", "b", "b#2"]
    # A builtin the draft does not know (added since) keeps its row; the others come back as saved.
    rows = builtin_rows(RunConfig(rewards=[]))
    saved = [list(rows[0])]
    saved[0][2] = 0.5
    merged = merged_builtin_rows(rows, json.loads(json.dumps(saved)))
    assert merged[0][2] == 0.5 and merged[1:] == rows[1:]


def test_a_kept_result_says_when_it_was_made_only_while_it_is_the_one_shown():
    from rloo_studio.ui.freshness import made_line

    made = {"at": 1_700_000_000.0, "stamp": ["1"]}
    assert made_line(made, ["1"]).startswith("🕘 Computed at ") and "before this page was loaded" in made_line(made, ["1"])
    assert made_line(made, ["2"]) == ""  # a result computed since the reload
    assert made_line(None, ["1"]) == ""


def test_the_rule_builders_draft_comes_back_without_blocks_it_no_longer_has():
    from rloo_studio.ui.rule_builder import saved_rules

    draft = {"blocks": [["contains", "has_id", 1.0, "{}"], ["gone", "old", 1.0, "{}"]], "combine": "sum", "name": "mine"}
    assert saved_rules(draft) == [[["contains", "has_id", 1.0, "{}"]], "sum", "mine"]
    assert saved_rules(None) == [gr.skip()] * 3

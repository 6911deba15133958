"""A person's own data through the app's API: presets leave it alone, a header-less CSV and columns the form does
not expect are said, and a new source gets held-out defaults and a run name of its own."""

from __future__ import annotations

import json

import pytest
import yaml
from gradio_client import handle_file

from helpers.app import Form, connect, only_run, served_app
from rloo_studio.ui import text


@pytest.fixture
def app(runs_dir):
    with served_app(runs_dir) as url:
        yield connect(url)


def own_csv(app, tmp_path, name: str, content: str) -> Form:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    stored = app.predict(handle_file(str(path)), api_name="/upload_data")
    form = Form(app)
    form[text.SOURCE] = text.SOURCE_CHOICES[1]
    form[text.LOCAL_PATH] = stored
    return form


def test_a_preset_sets_model_and_training_but_keeps_the_data_and_rewards(app, tmp_path):
    form = own_csv(app, tmp_path, "qa.csv", "question,answer\nWhat is 2+2?,4\nWhat is 3+5?,8\n")
    form[text.PROMPT_COLUMN] = "question"
    table = form[text.BUILTIN_TABLE]
    table["data"] = [[row[1] == "numeric_answer"] + row[1:] for row in table["data"]]  # only numeric_answer
    form[text.BUILTIN_TABLE] = table
    form[text.METHOD] = text.METHOD_CHOICES[0]  # the person tried LoRA
    form["Training steps"] = 7
    data_before = {label: form[label] for label in (text.SOURCE, text.LOCAL_PATH, text.PROMPT_COLUMN, text.TEST_FRACTION)}
    notes, *values = app.predict("cpu-demo", *form.values, api_name="/apply_preset")
    form.values = values
    assert {label: form[label] for label in data_before} == data_before
    assert [row[1] for row in form[text.BUILTIN_TABLE]["data"] if row[0]] == ["numeric_answer"]
    assert form[text.METHOD] == text.METHOD_CHOICES[1] and form["Training steps"] == 200  # the preset's model and training
    assert "Your data and rewards are kept" in notes
    cfg = yaml.safe_load(form.call("/show_config")[2])
    assert cfg["data"]["source"] == data_before[text.LOCAL_PATH] and [r["name"] for r in cfg["rewards"]] == ["numeric_answer"]


def test_a_file_source_gets_a_tenth_held_out_and_no_test_split(app):
    assert app.predict(text.SOURCE_CHOICES[1], api_name="/source_defaults") == ("", 0.1)
    assert app.predict(text.SOURCE_CHOICES[0], api_name="/source_defaults") == ("test", 0.0)


def test_a_csv_without_a_header_row_is_said(app, tmp_path):
    form = own_csv(app, tmp_path, "noheader.csv", "What is 2+2?,4\nWhat is 3+5?,8\nWhat is 1+1?,2\n")
    summary, *_ = form.call("/preview_data")
    assert "This file seems to have no header row" in summary and "`What is 2+2?`, `4`" in summary
    assert "Ready to train" not in summary
    good = own_csv(app, tmp_path, "words.csv", "question,answer\nCapital of France?,Paris\nCapital of Spain?,Madrid\n")
    good[text.PROMPT_COLUMN], good[text.ANSWER_COLUMN], good[text.TEST_SPLIT] = "question", "answer", ""
    summary, *_ = good.call("/preview_data")
    assert "no header row" not in summary and "Ready to train" in summary


def test_new_columns_are_named_from_the_current_file(app, tmp_path):
    form = own_csv(app, tmp_path, "first.csv", "question,solution\nWhat is 2+2?,4\nWhat is 3+5?,8\n")
    form[text.PROMPT_COLUMN], form[text.ANSWER_COLUMN], form[text.TEST_SPLIT] = "question", "solution", ""
    assert "Ready to train" in form.call("/preview_data")[0]
    second = own_csv(app, tmp_path, "second.csv", "Q,A\nWhat is 2+2?,4\nWhat is 3+5?,8\n")
    second[text.PROMPT_COLUMN], second[text.ANSWER_COLUMN], second[text.TEST_SPLIT] = "question", "solution", ""
    summary, table, prompt_column, answer_column = second.call("/preview_data")
    assert "was `question`, which this data does not have (its columns: `Q`, `A`): it is now `Q`" in summary
    assert "was `solution`, which this data does not have: it is now `A`" in summary
    assert "`question`" not in summary.split("it is now `Q`")[1]  # no later line names the previous file's column
    assert prompt_column["value"] == "Q" and answer_column["value"] == "A"


@pytest.mark.slow
def test_a_run_is_named_after_its_data_and_model(app, tmp_path, runs_dir):
    rows = "".join(f"What is {i}+{i}?,{2 * i}\n" for i in range(1, 31))
    form = own_csv(app, tmp_path, "qa.csv", "question,answer\n" + rows).fast_demo(steps=1)
    form[text.PROMPT_COLUMN], form[text.TEST_SPLIT], form[text.TEST_FRACTION] = "question", "", 0.1
    assert form[text.RUN_NAME] == ""  # the preset's "cpu-demo" is not offered as this run's name
    pins = {"headers": ["prompt", "completion", "answer", "min total", "max total"], "data": [["What is 1+1?", "2", "2", 1.0, 9.0]]}
    app.predict(pins, api_name="/save_pinned")
    # This pin fails with the demo's rewards (no <think> part): Start asks first and starts nothing; the person starts anyway.
    assert form.call("/start_training")[0] == "" and not [p for p in runs_dir.iterdir() if (p / "status.json").exists()]
    assert form.call("/start_anyway")[0] == ""
    run_dir = only_run(runs_dir)
    assert json.loads((run_dir / "pinned.json").read_text()) == pins["data"]  # the pinned examples go with the run
    app.predict(api_name="/stop_training")
    assert run_dir.name.endswith("-qa-demo")
    assert json.loads(json.dumps(yaml.safe_load((run_dir / "config.yaml").read_text())["data"]["test_fraction"])) == 0.1

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


def test_a_file_whose_only_row_is_held_out_is_not_ready_to_train(app, tmp_path):
    form = own_csv(app, tmp_path, "one.csv", "question,answer\nCapital of France?,Paris\n")
    form[text.PROMPT_COLUMN], form[text.ANSWER_COLUMN], form[text.TEST_SPLIT] = "question", "answer", ""
    form[text.TEST_FRACTION] = 0.1  # what choosing "A file on this computer" sets
    summary, *_ = form.call("/preview_data")
    assert "Ready to train" not in summary and "leaves no rows to train on" in summary, summary
    assert "**1 row** in the data" in summary and "training row" not in summary and "No rows are held out" not in summary
    assert f"“{text.field_label('data', 'test_fraction')}”" in summary  # the field to change, in the page's words

def test_own_data_with_the_demo_model_says_the_model_knows_only_arithmetic(app, tmp_path):
    """A vet clinic's 40 questions trained on the demo model: it answered "How many days should the cone stay on?" with
    "8+5-8 → 14" for 15 steps, and no tab said that this model can only write sums (a walk)."""
    form = own_csv(app, tmp_path, "vet.csv", "question,days\n" + "".join(f"How many days for case {i}?,{i}\n" for i in range(20)))
    form[text.PROMPT_COLUMN] = "question"
    summary, *_ = form.call("/preview_data")
    assert "ℹ️ **The model is the bundled demo**" in summary and "it will not learn your task" in summary, summary
    form[text.MODEL] = "Qwen/Qwen3-0.6B"
    assert "bundled demo" not in form.call("/preview_data")[0]


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


SKIPPED = {"__type__": "update"}  # what the API answers for an output left as it is (gr.skip)


def _answer_columns(table) -> dict:
    """{builtin: the answer_column its parameters show} for the answer-checking builtins of the Rewards tab's table."""
    return {row[1]: json.loads(row[3]).get("answer_column") for row in table["data"] if row[1] in ("numeric_answer", "exact_match")}


def test_the_answer_column_chosen_in_the_data_tab_is_the_builtins_answer_column(app, tmp_path):
    """A CSV whose reference column is `expected`: the builtins' parameters showed `answer` beside the Data tab's choice."""
    form = own_csv(app, tmp_path, "expected.csv", "question,expected\nCapital of France?,Paris\nCapital of Spain?,Madrid\n")
    form[text.PROMPT_COLUMN], form[text.TEST_SPLIT] = "question", ""
    table = form[text.BUILTIN_TABLE]
    table["data"] = [[row[1] == "exact_match"] + row[1:] for row in table["data"]]  # only exact_match ticked
    form[text.BUILTIN_TABLE] = table
    assert set(_answer_columns(table).values()) == {"answer"}
    # The person picks the column in the Data tab: every answer-checking builtin's parameter follows, ticked or not.
    followed = app.predict("expected", table, api_name="/answer_column_chosen")
    assert _answer_columns(followed) == {"numeric_answer": "expected", "exact_match": "expected"}
    form[text.ANSWER_COLUMN], form[text.BUILTIN_TABLE] = "expected", followed
    cfg = yaml.safe_load(form.call("/show_config")[2])
    assert [(r["name"], r["params"]["answer_column"]) for r in cfg["rewards"]] == [("exact_match", "expected")]
    assert app.predict("expected", followed, api_name="/answer_column_chosen") == SKIPPED  # nothing to change
    # The other way round: a column written into a builtin's parameters becomes the Data tab's answer column.
    edited = json.loads(json.dumps(followed))
    edited["data"] = [row[:3] + [json.dumps({**json.loads(row[3]), "answer_column": "question"})] + row[4:]
                      if row[1] == "exact_match" else row for row in edited["data"]]
    assert app.predict("expected", edited, api_name="/builtin_answer_column_edited") == "question"
    agreed = app.predict("question", edited, api_name="/answer_column_chosen")  # then the other builtins follow it
    assert _answer_columns(agreed) == {"numeric_answer": "question", "exact_match": "question"}
    assert app.predict("question", agreed, api_name="/builtin_answer_column_edited") == SKIPPED  # they agree


def test_the_answer_column_is_kept_in_the_config_when_no_builtin_reads_it(app, tmp_path):
    """A person's own reward reads `order_id` and no builtin compares answers: the Data tab's answer column lived only in
    the answer-checking builtins' parameters, so the config the page built had none, and `rloo-studio train`, Evaluate and
    a new page went back to `answer`, which the file lacks."""
    form = own_csv(app, tmp_path, "orders.csv", "question,order_id\nWhere is my order A-17?,A-17\nIs B-2 late?,B-2\n")
    form[text.PROMPT_COLUMN], form[text.TEST_SPLIT] = "question", ""
    table = form[text.BUILTIN_TABLE]
    table["data"] = [[False] + row[1:] for row in table["data"]]  # no builtin ticked
    form[text.BUILTIN_TABLE] = table
    form[text.CODE] = "def polite(completions, order_id, **kwargs):\n    return [1.0 for _ in completions]\n"
    form[text.USER_TABLE] = {"headers": ["use", "function", "weight"], "data": [[True, "polite", 1.0]]}
    form[text.ANSWER_COLUMN] = "order_id"
    cfg = yaml.safe_load(form.call("/show_config")[2])  # the config Start would run (kept as the config draft)
    assert cfg["data"]["answer_column"] == "order_id", cfg["data"]
    assert [r.get("file") for r in cfg["rewards"]] and not any("params" in r for r in cfg["rewards"])
    # A new page with no draft of the form builds the form from that config: the column comes back, not `answer`.
    assert Form(app)[text.ANSWER_COLUMN] == "order_id"


def test_evaluate_examples_show_the_reference_from_the_chosen_column():
    """Evaluate → Examples showed the `answer` column only: empty for data whose reference column is `expected` or
    `order_id`. The evaluation takes the column the rewards compare with (the Data tab's, above) and names it."""
    from rloo_studio.config import RunConfig
    from rloo_studio.data import answer_column, reference_cell
    from rloo_studio.ui.eval_tab import examples, examples_headers

    cfg = RunConfig.from_dict({"data": {"source": "expected.csv", "prompt_column": "question"},
                               "rewards": [{"name": "exact_match", "params": {"answer_column": "expected"}}]})
    row = {"question": "Capital of France?", "expected": "Paris"}
    assert answer_column(cfg) == "expected" and reference_cell(row, "question", answer_column(cfg)) == "Paris"
    # No reward compares answers and the rows have no `answer`: what else they hold, in the pinned examples' form.
    assert reference_cell({"question": "Where is A-1?", "order_id": "A-1"}, "question", "answer") == "order_id=A-1"
    report = {"answer_column": "expected", "checkpoint": "final",
              "examples": [{"prompt": row["question"], "answer": "Paris", "base": "Lyon", "tuned": "Paris"}]}
    assert examples_headers(report) == ["prompt", "expected", "base", "tuned"]
    assert examples_headers({**report, "answer_column": None})[1] == "reference"
    assert examples_headers({})[1] == "answer"  # an evaluation written before the column was recorded
    assert examples(report)[0][:2] == ["Capital of France?", "Paris"]


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


def test_the_data_check_splits_the_rows_as_training_will_with_the_runs_seed(app, tmp_path):
    """The Data tab's check held rows out with seed 42 whatever the Seed field said, while training splits with the Seed
    field: with 20 rows, every prompt written twice, it said how many held-out rows repeat a training prompt for a split
    no run would use (an audit)."""
    from rloo_studio import data
    from rloo_studio.config import DataConfig

    content = "question,answer\n" + "".join(f"Question {i}?,{i}\n" for i in range(10)) * 2
    form = own_csv(app, tmp_path, "twice.csv", content)
    form[text.PROMPT_COLUMN], form[text.ANSWER_COLUMN], form[text.TEST_SPLIT] = "question", "answer", ""
    form[text.TEST_FRACTION] = 0.5
    cfg = DataConfig(source=str(tmp_path / "twice.csv"), prompt_column="question", test_fraction=0.5)
    repeated = {seed: data.repeats(data.load_rows(cfg, seed=seed), "question")["held_out"] for seed in range(50)}
    seed = next(s for s, n in repeated.items() if n != repeated[42])  # a seed whose split differs in what it says
    form[text.field_label("rloo", "seed")] = seed
    summary, *_ = form.call("/preview_data")
    n = repeated[seed]
    assert f"; {n} held-out row{'s repeat' if n != 1 else ' repeats'} a training prompt" in summary, (seed, repeated[42], summary)

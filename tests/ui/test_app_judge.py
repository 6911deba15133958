"""The Rewards tab's judge section through the app's endpoints: a template rubric with its limits, the round trip
into the config the Train tab starts, the draft that survives a reload (never holding an API key), problems in
the page's words, and the clear refusal when nothing answers at the judge server's address.

No judge model answers here (a preview with a real judge: tests/realmodel/test_app_judge_real.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from helpers.app import Form, connect, free_port, served_app
from rloo_studio.config import RunConfig
from rloo_studio.rewards.judge import DEFAULT_TEMPLATE, RUBRICS
from rloo_studio.ui import text
from rloo_studio.ui.judge_panel import entry_values
from rloo_studio.ui.workspace import DRAFT_JUDGE

PINNED = {"headers": ["prompt", "completion", "answer", "min total", "max total"],
          "data": [["What is 3 + 4?", "<think>3+4</think>7", "7", 0.0, 10.0]]}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    runs_dir = tmp_path_factory.mktemp("judge-app") / "runs"
    with served_app(runs_dir) as url:
        yield url, runs_dir


@pytest.fixture
def app(served):
    return connect(served[0])


def server_judge(form: Form, app, url: str, key_env: str = "JUDGE_TEST_KEY") -> Form:
    rubric, limits = app.predict("correct_vs_reference", api_name="/judge_rubric_template")
    assert rubric == RUBRICS["correct_vs_reference"].text
    assert RUBRICS["correct_vs_reference"].limits in limits  # the template's limits are shown beside it
    form[text.JUDGE_USE] = True
    form[text.JUDGE_RUBRIC] = rubric
    form[text.JUDGE_SOURCE] = text.JUDGE_SERVER_CHOICE
    form[text.JUDGE_URL] = url
    form[text.JUDGE_SERVER_MODEL] = "smollm2-135m"
    form[text.JUDGE_KEY_ENV] = key_env
    form[text.JUDGE_WEIGHT] = 0.5
    form[text.JUDGE_HIGH] = 5
    return form


def judge_values(form: Form) -> list:
    labels = [text.JUDGE_USE, text.JUDGE_RUBRIC, text.JUDGE_SOURCE, text.JUDGE_FOLDER, text.JUDGE_URL, text.JUDGE_SERVER_MODEL,
              text.JUDGE_KEY_ENV, text.JUDGE_WEIGHT, text.JUDGE_LOW, text.JUDGE_HIGH, text.JUDGE_TEMPLATE]
    return [form[label] for label in labels]


def test_the_judge_section_round_trips_into_the_config_and_its_draft_survives_a_reload(app, served):
    form = server_judge(Form(app), app, "http://127.0.0.1:11434/v1")
    form[text.JUDGE_TEMPLATE] = DEFAULT_TEMPLATE.replace("strict grader", "careful grader")
    problems, _command, config_yaml = form.call("/show_config")
    assert "Judge" not in problems, problems
    entry = [{k: v for k, v in r.items() if k not in ("timeout_s", "params")} for r in yaml.safe_load(config_yaml)["rewards"]
             if "judge" in r]
    assert entry == [{"judge": {"url": "http://127.0.0.1:11434/v1", "model": "smollm2-135m", "api_key_env": "JUDGE_TEST_KEY"},
                      "rubric": RUBRICS["correct_vs_reference"].text, "scale": [0.0, 5.0],
                      "template": DEFAULT_TEMPLATE.replace("strict grader", "careful grader"), "weight": 0.5}]
    # The config the Train tab starts shows the same section again (the form's apply / values_from).
    assert entry_values(RunConfig.from_dict(yaml.safe_load(config_yaml))) == judge_values(form)

    # Changed after the config was shown: the section is kept on every change, so a reload shows the change.
    form[text.JUDGE_RUBRIC] = "The answer is one number and nothing else."
    form[text.JUDGE_SOURCE] = text.JUDGE_BASE
    app.predict(*judge_values(form), api_name="/save_judge_draft")
    reloaded = Form(connect(served[0]))  # a reload is a new session
    assert judge_values(reloaded) == judge_values(form)


def test_a_pasted_key_is_refused_in_the_page_words_and_never_kept(app, served):
    key = "sk-live-0123456789abcdef"
    form = server_judge(Form(app), app, "http://127.0.0.1:11434/v1", key_env=key)
    problems = form.call("/show_config")[0]
    assert f"“{text.JUDGE_KEY_ENV}” (Rewards tab) must be the name of an environment variable" in problems
    app.predict(*judge_values(form), api_name="/save_judge_draft")
    draft = (served[1] / ".studio" / DRAFT_JUDGE).read_text()
    assert key not in draft and json.loads(draft)[6] == ""
    form[text.JUDGE_KEY_ENV] = ""
    form[text.JUDGE_RUBRIC] = ""
    problems = form.call("/show_config")[0]
    assert f"“{text.JUDGE_RUBRIC}” (Rewards tab) is empty" in problems


def test_an_unreachable_judge_server_is_refused_by_the_preview_and_the_pinned_examples(app):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    form = server_judge(Form(app), app, url, key_env="")
    status, table, summary, findings = app.predict(3, "What is 3 + 4?", "7", "7\n12", *form.values, api_name="/preview_rewards")
    assert status.startswith(f"**Preview refused:** nothing answers at the judge server {url}"), status
    assert f"fix “{text.JUDGE_URL}” (Rewards tab)" in status and not table["data"]
    report = app.predict(PINNED, *form.values, api_name="/run_pinned")
    assert report.startswith(f"⚠️ Pinned examples not checked: nothing answers at the judge server {url}"), report


def test_rewards_the_page_cannot_show_are_kept_and_said(tmp_path):
    """A hand-edited draft with two judges and a reward model: the page shows one judge; the second judge and the reward
    model are kept in the config the Train tab starts, and the page says which ones it does not show."""
    runs_dir = tmp_path / "runs"
    (runs_dir / ".studio").mkdir(parents=True)
    first = {"judge": "demo", "rubric": RUBRICS["helpful_concise"].text, "weight": 1.0}
    second = {"judge": {"url": "http://127.0.0.1:11434/v1", "model": "qwen2.5:7b"}, "rubric": "Short answers score high."}
    scorer = {"model": "OpenAssistant/reward-model-deberta-v3-large-v2", "weight": 0.5}
    draft = {"model": {"name_or_path": "demo"}, "data": {"source": "demo"},
             "rewards": [{"name": "numeric_answer"}, first, second, scorer]}
    (runs_dir / ".studio" / "draft-config.yaml").write_text(yaml.safe_dump(draft))
    with served_app(runs_dir) as url:
        form = Form(connect(url))
        assert form[text.JUDGE_RUBRIC] == first["rubric"]  # the first judge is the one the section shows
        for name in ("judge:qwen2.5:7b", f"model:{scorer['model']}"):
            assert f"`{name}`" in form.notes and "not shown on this page" in form.notes, form.notes
        saved = yaml.safe_load(form.call("/show_config")[2])["rewards"]
        assert [r.get("name") or r.get("model") or r["judge"] for r in saved] == \
            ["numeric_answer", "demo", second["judge"], scorer["model"]], saved
        # Unticking the section's judge removes that one only.
        form[text.JUDGE_USE] = False
        saved = yaml.safe_load(form.call("/show_config")[2])["rewards"]
        assert [r.get("name") or r.get("model") or r["judge"] for r in saved] == ["numeric_answer", second["judge"], scorer["model"]]

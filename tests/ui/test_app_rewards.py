"""The Rewards tab through its named endpoints: live lint, templates, pinned examples, and the preview —
sampling from the bundled model in a worker process and scoring in a sandboxed child with a time limit."""

from __future__ import annotations

import time

import pytest

from helpers.app import Form, connect, served_app
from rloo_studio.ui import rewards_tab as rewards_module
from rloo_studio.ui import text
from rloo_studio.workers import scorer

PINNED = {"headers": ["prompt", "completion", "answer", "min total", "max total"],
          "data": [["Ana has 47 apples and gets 28 more. How many now?", "<think>47+28</think>75", "75", 1.0, 10.0],
                   ["Ana has 47 apples and gets 28 more. How many now?", "<think>47+28</think>65", "75", 1.0, 10.0]]}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One app for the module (building and launching one took seconds per test); its preview worker
    stays warm between the preview tests, as it does between two previews of one person."""
    with served_app(tmp_path_factory.mktemp("rewards-app") / "runs") as url:
        yield url


@pytest.fixture
def app(served):
    """A new client, so a new session of the shared app: no form state carries over from another test."""
    return connect(served)


def test_lint_runs_on_every_edit_without_executing_the_code(app, tmp_path):
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')\ndef f(completions, **kwargs):\n    return [lenn(c) for c in completions]\n"
    assert app.predict(code, api_name="/lint_rewards") == "⚠️ `lenn` is not defined (in f) — a typo, or a missing import?"
    assert not marker.exists()  # linting parsed the code; nothing ran
    assert app.predict("def f(completions, **kwargs):\n    return [1.0\n", api_name="/lint_rewards").startswith(
        "⚠️ Syntax error at line 2, column")


def test_a_template_is_appended_to_the_code(app):
    code = app.predict("# mine\n", "numeric answer", api_name="/insert_template")
    assert code.startswith("# mine\n") and "def numeric_answer_match(completions, answer, **kwargs):" in code


def test_pinned_examples_pass_and_fail_like_unit_tests(app):
    form = Form(app)
    report = app.predict(PINNED, *form.values, api_name="/run_pinned")
    assert report.startswith("**1/2 pinned examples pass**")
    assert "✅ `<think>47+28</think>75` → total 1.300" in report and "❌ `<think>47+28</think>65` → total 0.300" in report
    # The next check's child is waiting, loading the tokenizer meanwhile (workers.scorer.WRITTEN), and answers it.
    standby = scorer.WRITTEN.waiting
    assert standby is not None and standby.poll() is None
    assert app.predict(PINNED, *form.values, api_name="/run_pinned") == report
    assert standby.poll() is not None


def test_pinned_examples_survive_a_reload_and_rows_are_added_with_a_button(app):
    app.predict(PINNED, api_name="/save_pinned")
    reloaded = connect(app.src)  # a reload is a new session
    table = reloaded.predict(api_name="/load_pinned")
    assert [row[1] for row in table["data"]] == ["<think>47+28</think>75", "<think>47+28</think>65"]
    grown = reloaded.predict(table, api_name="/add_pinned")
    assert len(grown["data"]) == 3 and grown["data"][2][:3] == ["", "", ""]


@pytest.mark.slow
def test_preview_samples_from_the_demo_model_and_shows_advantages(app):
    form = Form(app)
    status, update, summary, findings = app.predict(2, "", "", "", *form.values, api_name="/preview_rewards")
    assert status.startswith("Scored 16 completions")
    table = update["value"]  # with every column's width (their fit at 1400 px: tests/browser/test_own_csv.py)
    assert table["headers"][-3:] == ["total", "baseline (others' mean)", "advantage"]
    assert len(update["column_widths"]) == len(table["headers"])
    assert len(table["data"]) == 16 and {row[0] for row in table["data"]} == {1, 2}
    for group in (1, 2):  # the advantages of a prompt's completions sum to zero
        assert abs(sum(row[-1] for row in table["data"] if row[0] == group)) < 0.01  # shown rounded to 3 decimals
    assert [row[0] for row in summary["data"]] == ["numeric_answer", "think_format", "think_length"]
    assert "**Learnability:**" in findings


@pytest.mark.slow
def test_pasted_completions_and_a_user_reward_are_scored(app):
    form = Form(app)
    form[text.CODE] = "def shorter(completions, **kwargs):\n    return [1.0 / (1 + len(c[0]['content'])) for c in completions]\n"
    form[text.USER_TABLE] = {"headers": ["use", "function", "weight"], "data": [[True, "shorter", 1.0]]}
    pasted = "<think>47+28</think>75\n<think>47+28</think>65\n<think>47 + 28 = 75</think>75"
    status, update, summary, findings = app.predict(3, "Ana has 47 apples and gets 28 more. How many now?", "75", pasted,
                                                    *form.values, api_name="/preview_rewards")
    assert status.startswith("Scored 3 completions"), status
    table = update["value"]  # with every column's width, as for sampled completions
    assert len(update["column_widths"]) == len(table["headers"])
    assert [row[3] for row in table["data"]] == ["75", "65", "75"]
    assert "shorter" in table["headers"]
    advantages = [row[-1] for row in table["data"]]
    assert advantages[0] > 0 > advantages[1]


@pytest.mark.slow
def test_a_hanging_reward_is_stopped_and_the_app_stays_responsive(app, monkeypatch):
    monkeypatch.setattr(rewards_module, "PREVIEW_SCORE_TIMEOUT_S", 8)
    form = Form(app)
    form[text.CODE] = "def stuck(completions, **kwargs):\n    while True:\n        pass\n"
    form[text.USER_TABLE] = {"headers": ["use", "function", "weight"], "data": [[True, "stuck", 1.0]]}
    job = app.submit(3, "What is 2+2?", "4", "4\n5", *form.values, api_name="/preview_rewards")
    time.sleep(2)
    started = time.time()
    assert app.predict("x = 1\n", api_name="/lint_rewards").startswith("✓")  # answered while the preview is stuck
    assert time.time() - started < 5
    status = job.result(timeout=120)[0]
    assert "reward function `stuck` did not return within 8 s" in status


@pytest.mark.slow
def test_pasted_completions_reach_the_rewards_in_the_shape_training_gives(app):
    """Pasted completions are hand-written text, as pinned examples are: their prompt reaches the rewards as training
    shapes the data's (chat messages with the data's system prompt, for a model with a chat template), by the one
    written-text request (rewards.preview.written_request), scored straight from the page like the pinned examples."""
    form = Form(app)
    form[text.SYSTEM_PROMPT] = "Answer briefly."
    table = form[text.BUILTIN_TABLE]
    table["data"] = [[False] + row[1:] for row in table["data"]]  # the person's own reward alone
    form[text.BUILTIN_TABLE] = table
    form[text.CODE] = ("def sees_system(prompts, completions, **kwargs):\n"
                       "    return [float(isinstance(p, list) and p[0].get('content') == 'Answer briefly.') for p in prompts]\n")
    form[text.USER_TABLE] = {"headers": ["use", "function", "weight"], "data": [[True, "sees_system", 1.0]]}
    before = scorer.WRITTEN.waiting
    status, update, summary, findings = app.predict(3, "What is 2+2?", "4", "4\nfive", *form.values,
                                                    api_name="/preview_rewards")
    assert status.startswith("Scored 2 completions"), status
    table = update["value"]
    column = table["headers"].index("sees_system")
    assert [row[column] for row in table["data"]] == [1.0, 1.0]
    # The prompt cell shows the messages with their roles, as the Train tab's recent completions do (it read "Answer
    # briefly. What is 2+2?", as if the system prompt were part of the question).
    assert table["data"][0][1] == "[system] Answer briefly.\n[user] What is 2+2?"
    # The pinned examples' waiting child scored them (and the next one waits): no command-line child in between.
    assert scorer.WRITTEN.waiting is not None and scorer.WRITTEN.waiting is not before
    pinned = {"headers": PINNED["headers"], "data": [["What is 2+2?", "4", "4", 1.0, 1.0]]}
    assert app.predict(pinned, *form.values, api_name="/run_pinned").startswith("**1/1 pinned examples pass**")

"""What the page says the rewards receive: the Rewards tab's panel lists exactly the columns every call passes
(data.reward_columns, the prompt column included), the Data tab's sentence says which column reaches them otherwise,
and the preview's findings say when a function scored nothing."""

from __future__ import annotations

from rloo_studio.ui.rewards_tab import preview_tables, receives_markdown


def test_the_panel_lists_every_column_the_rewards_receive_the_prompt_column_included():
    """Before, the panel left the prompt column out (`question`), which every call now passes."""
    panel = receives_markdown(["question", "order_id"], "question")
    assert "every data column by its name: `question` (the prompts, as the data holds them), `order_id`" in panel, panel
    demo = receives_markdown(["prompt", "answer", "kind"], "prompt")
    assert "by its name: `answer`, `kind`" in demo and "not by its name: `prompt` — reaches them as `prompts`" in demo, demo


def test_the_data_tabs_sentence_names_the_column_that_is_not_passed_by_name():
    from rloo_studio.ui.data_tab import columns_sentence

    assert columns_sentence(["question", "order_id"]).startswith("Every column, the prompt column included, reaches")
    assert "`prompt` reaches them as `prompts`" in columns_sentence(["prompt", "answer"])


def test_the_preview_says_when_a_function_scored_nothing():
    result = {"functions": {"never": {"weight": 1.0, "mean": None, "std": None, "min": None, "max": None, "none": 2, "errors": []}},
              "rows": [{"group": 0, "prompt": "p", "completion": c, "rewards": {"never": None}, "reasons": {}, "total": None,
                        "baseline": None, "advantage": 0.0} for c in ("a", "b")],
              "learnability": {"no_signal_share": 1.0, "verdict": "Not known: no function scored any completion (`never`)."},
              "warnings": ["`never` returned None for all 2 completions"], "probes": []}
    _table, _summary, findings = preview_tables(result)
    assert "⚠️ **Scored nothing:** `never` returned None for all 2 completions" in findings, findings


def test_a_pin_failed_by_a_column_it_gives_no_value_for_says_which_to_give():
    from rloo_studio.ui.rewards_tab import pinned_groups, pinned_report

    [group] = pinned_groups([["Where is my order?", "It ships.", "", 1, 1]], ["question", "order_id"], "answer", "question")
    result = {"functions": {"polite": {"errors": [{"error": "TypeError: 'NoneType' object is not subscriptable"}]}},
              "rows": [{"total": None, "rewards": {"polite": None}}]}
    report = pinned_report([group], result)
    assert "this example gives no value for `order_id`: if the function reads it, write e.g. `order_id=…`" in report, report


def test_check_the_code_refuses_a_parameter_no_column_provides_and_says_when_it_could_not_check():
    from rloo_studio.ui.rewards_tab import RewardsTab

    code = "def polite(completions, order_number, **kwargs):\n    return [0.0 for _ in completions]\n"
    message, _table = RewardsTab.check_code(code, [], ["question", "order_id"])
    assert "needs order_number, which no column of the data provides — did you mean `order_id`?" in message, message
    assert "rename the parameter to one of the data's columns (question, order_id)" in message
    unchecked, _table = RewardsTab.check_code(code, [], [])
    assert "1 function found" in unchecked and "The data's columns are not known yet" in unchecked, unchecked

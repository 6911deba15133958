"""What reward functions receive: one rule (data.reward_columns / data.reward_kwargs) for every road — the pinned
examples, the preview, the reward check, the scan, evaluation and training — and the refusal of a parameter that no
column provides. The person's scenario: a CSV `question,order_id`, prompt column `question`, a reward reading `order_id`.
"""

from __future__ import annotations

import json

import pytest

from rloo_studio.config import DataConfig
from rloo_studio.errors import RewardError
from rloo_studio.rewards.user import load_reward_source

pytestmark = pytest.mark.usefixtures("outside_the_sandbox")  # the probe reward writes what it was given to a file

# What every reward receives for the person's data: TRL's own arguments and every column by its own name.
EXPECTED = sorted(["prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "question", "order_id"])

POLITE = ("def polite(completions, order_id, **kwargs):\n"
          "    texts = [c if isinstance(c, str) else c[0]['content'] for c in completions]\n"
          "    return [1.0 if str(o) in t else 0.0 for t, o in zip(texts, order_id)]\n")


def probe_source(keys_file) -> str:
    """A reward that records the names of the keyword arguments of each call (and the prompt column's values)."""
    return ("import json\n"
            "def probe(completions, **kwargs):\n"
            f"    with open({str(keys_file)!r}, 'a') as fh:\n"
            "        fh.write(json.dumps({'keys': sorted(['completions', *kwargs]), 'question': kwargs.get('question')}) + '\\n')\n"
            "    return [float(len(c if isinstance(c, str) else c[0]['content'])) for c in completions]\n")


def recorded(keys_file) -> list[dict]:
    return [json.loads(line) for line in keys_file.read_text().splitlines()] if keys_file.exists() else []


# ---- the one rule ------------------------------------------------------------------------------------


def test_every_column_reaches_the_rewards_by_its_own_name_the_prompt_column_included():
    from rloo_studio.data import reward_columns, unpassed_columns

    assert reward_columns(["question", "order_id"]) == ["question", "order_id"]
    # TRL keeps back `prompt` (it passes it as `prompts`), `completion` and `completion_ids`; a column named like one of
    # TRL's own arguments would be replaced by TRL's value (or fail its call): none of them is passed by name.
    assert reward_columns(["prompt", "answer", "completion", "completion_ids", "prompts", "trainer_state", "kind"]) == ["answer", "kind"]
    assert set(unpassed_columns(["prompt", "answer", "completions"])) == {"prompt", "completions"}
    assert "`prompts`" in unpassed_columns(["prompt"])["prompt"]


def test_reward_kwargs_gives_trls_arguments_and_every_column_per_completion():
    from rloo_studio.data import reward_kwargs

    rows = [{"question": "Where is my order?", "order_id": "A-17"}, {"question": "And this one?"}]
    kwargs = reward_kwargs(["p1", "p2"], ["c1", "c2"], [[1], [2]], rows, ["question", "order_id"], trainer_state=None)
    assert sorted(kwargs) == EXPECTED
    assert kwargs["question"] == ["Where is my order?", "And this one?"]
    assert kwargs["order_id"] == ["A-17", None]  # a row without the column: None, as a table gives it
    assert kwargs["log_extra"]("x", [1]) is None and kwargs["log_metric"]("m", 1.0) is None


def test_training_dataset_keeps_every_column_the_prompt_column_under_its_own_name():
    """TRL passes every dataset column but `prompt` (and its own names) to the rewards: the data's prompt column must stay
    in the dataset by its own name, beside TRL's `prompt`. A column only a later row has is kept too."""
    from rloo_studio.data import to_trl_dataset

    rows = [{"question": "Where is my order?", "order_id": "A-17"}, {"question": "Late?", "order_id": "B-2", "note": "vip"}]
    dataset = to_trl_dataset(rows, DataConfig(source="x.csv", prompt_column="question", prompt_format="plain"), tokenizer=None)
    assert sorted(dataset.column_names) == ["note", "order_id", "prompt", "question"]
    assert dataset["question"] == ["Where is my order?", "Late?"] and dataset["note"] == [None, "vip"]
    # What TRL 1.15's RLOOTrainer._calculate_rewards passes by name: every input key but prompt, completion, completion_ids.
    trl_keys = [k for k in dataset[0] if k not in ("prompt", "completion", "completion_ids")]
    assert sorted(trl_keys) == ["note", "order_id", "question"]


# ---- the refusal ----------------------------------------------------------------------------------------


def test_a_parameter_no_column_provides_is_refused_naming_the_columns_that_exist():
    source = "def polite(completions, order_number, **kwargs):\n    return [0.0 for _ in completions]\n"
    with pytest.raises(RewardError) as caught:
        load_reward_source(source, "rewards.py", extra_args=("question", "order_id"))
    message = caught.value.message()
    assert "`polite` needs order_number, which no column of the data provides" in message
    assert "(question, order_id)" in message and "rename the parameter" in message
    load_reward_source(POLITE, "rewards.py", extra_args=("question", "order_id"))  # a column that exists: accepted


def test_a_parameter_named_after_a_column_trl_keeps_back_is_refused():
    """The prompt column named `prompt` reaches rewards as `prompts` only: a reward requiring `prompt` would fail at
    TRL's first call. Before, the check (and the pinned examples) passed it, so the code was accepted."""
    source = "def echo(completions, prompt, **kwargs):\n    return [0.0 for _ in completions]\n"
    with pytest.raises(RewardError) as caught:
        load_reward_source(source, "rewards.py", extra_args=("prompt", "answer"))
    assert "the column `prompt` reaches them as `prompts`" in caught.value.message()


# ---- the roads: each calls the rewards with the same keyword arguments ------------------------------------


def _person_csv(folder):
    path = folder / "orders.csv"
    path.write_text("question,order_id\nWhere is my order?,A-17\nIs B-2 late?,B-2\nCan I cancel?,C-3\n", encoding="utf-8")
    return path


def test_the_reward_check_accepts_a_reward_of_the_prompt_column_and_refuses_prompt():
    from rloo_studio.rewards.check import check_source

    accepted = check_source("def q(completions, question, order_id, **kwargs):\n    return [0.0 for _ in completions]\n",
                            ["question", "order_id"])
    assert accepted["problems"] == [] and accepted["functions"] == ["q"]
    refused = check_source("def echo(completions, prompt, **kwargs):\n    return [0.0 for _ in completions]\n", ["prompt", "answer"])
    assert refused["problems"] and "reaches them as `prompts`" in refused["problems"][0], refused


def test_pinned_examples_pass_every_column_the_prompt_column_included(tmp_path):
    """The person's scenario: a pinned example gives `order_id=A-17` in its answer cell. Before, a pinned example passed
    only `answer`: `polite` was refused ("needs order_id, which TRL will not pass") and the prompt column not passed."""
    from helpers.app import warm_children

    from rloo_studio.config import RunConfig
    from rloo_studio.paths import DEMO_MODEL_DIR
    from rloo_studio.ui import rewards_tab
    from rloo_studio.workers import scorer

    csv = _person_csv(tmp_path)
    keys_file = tmp_path / "keys.jsonl"
    (tmp_path / "probe.py").write_text(probe_source(keys_file))
    cfg = RunConfig.from_dict({"model": {"name_or_path": str(DEMO_MODEL_DIR)},
                               "data": {"source": str(csv), "prompt_column": "question", "prompt_format": "plain"},
                               "rewards": [{"file": "rewards.py", "function": "polite"},
                                           {"file": str(tmp_path / "probe.py"), "function": "probe", "weight": 0.0}]},
                              base_dir=str(tmp_path))
    table = [["Where is my order?", "Your order A-17 ships today.", "order_id=A-17", 1.0, 1.0],
             ["Where is my order?", "It ships today.", "order_id=A-17", 0.0, 0.0],
             ["Can I cancel?", "Yes.", "", 0.0, 0.0]]
    groups = rewards_tab.pinned_groups(table, rewards_tab.known_columns(cfg), rewards_tab.answer_column(cfg), "question")
    with warm_children():
        try:
            report = rewards_tab.PinnedChecks().report(groups, POLITE, cfg, again=True)
        finally:
            scorer.WRITTEN.end()
    assert "3/3 pinned examples pass" in report, report
    [call] = recorded(keys_file)
    assert call["keys"] == EXPECTED
    assert call["question"] == ["Where is my order?", "Where is my order?", "Can I cancel?"]  # as written, not shaped


def test_pinned_row_reads_column_value_pairs_or_an_answer():
    from rloo_studio.ui.rewards_tab import pinned_row

    assert pinned_row("order_id=A-17; answer=75", ["question", "order_id", "answer"]) == {"order_id": "A-17", "answer": "75"}
    assert pinned_row("x=5", ["question", "answer"]) == {"answer": "x=5"}  # not a column of the data: the answer
    assert pinned_row("75", ["question", "answer"], answer="solution") == {"solution": "75"}
    assert pinned_row("", ["question"]) == {}


def test_evaluation_passes_every_column_of_the_held_out_rows(tmp_path):
    """Evaluation scores with the rows as loaded: a column only a later row has still reaches the rewards (None for the
    rows without it), as in training. Before, only the first row's columns were passed."""
    from rloo_studio.engine.evaluate import score_completions
    from rloo_studio.rewards import build_rewards
    from rloo_studio.config import RewardSpec

    keys_file = tmp_path / "keys.jsonl"
    (tmp_path / "probe.py").write_text(probe_source(keys_file))
    rows = [{"question": "Where is my order?", "order_id": "A-17"}, {"question": "Late?", "order_id": "B-2", "note": "vip"}]
    rewards = build_rewards([RewardSpec(file="probe.py", function="probe")], tmp_path, None, ["question", "order_id", "note"])
    values = score_completions(rewards, ["Where is my order?", "Late?"], ["A-17", "no"], [[1], [2]], rows, conversational=False)
    assert values["probe"] == [4.0, 2.0]
    [call] = recorded(keys_file)
    assert call["keys"] == sorted([*EXPECTED, "note"]) and call["question"] == ["Where is my order?", "Late?"]


# ---- a reward that scores nothing -----------------------------------------------------------------------


def _score(source: str, completions: list[list[str]]) -> dict:
    from rloo_studio.rewards.preview import score

    groups = [{"prompt": f"Where is order {i}?", "row": {"order_id": f"A-{i}"}, "completions": c} for i, c in enumerate(completions)]
    return score({"groups": groups, "num_generations": len(completions[0]), "source": source, "prompt_column": "question",
                  "rewards": [{"file": "rewards.py"}], "probes": False})


def test_a_reward_that_fails_gets_no_learnability_verdict_of_equal_rewards():
    """Before: '100% of the prompts gave all 2 completions the same total reward' for a reward that raised."""
    result = _score("def broken(completions, order_id, **kwargs):\n    return [o[5] for o in order_id]\n", [["a", "b"], ["c", "d"]])
    verdict = result["learnability"]["verdict"]
    assert "same total reward" not in verdict and "no function scored any completion (`broken`)" in verdict, verdict
    assert result["warnings"] and "`broken` failed" in result["warnings"][0]


def test_a_reward_returning_none_for_everything_is_warned_of():
    source = ("def never(completions, **kwargs):\n    return [None for _ in completions]\n\n"
              "def length(completions, **kwargs):\n    return [float(len(c)) for c in completions]\n")
    result = _score(source, [["a", "bb"], ["c", "dd"]])
    assert [w for w in result["warnings"] if "`never` returned None for all 4 completions" in w], result["warnings"]
    assert result["learnability"]["verdict"].startswith("Without `never`, which scored no completion: every prompt's")


def test_preflight_refuses_a_parameter_no_column_provides_before_anything_runs(tmp_path):
    """`rloo-studio train` checks the rewards against the loaded data's columns before a model is loaded."""
    from rloo_studio.config import RunConfig
    from rloo_studio.engine.preflight import preflight
    from rloo_studio.errors import ConfigError
    from rloo_studio.paths import DEMO_MODEL_DIR

    _person_csv(tmp_path)
    (tmp_path / "rewards.py").write_text("def polite(completions, order_number, **kwargs):\n    return [0.0 for _ in completions]\n")
    cfg = RunConfig.from_dict({"model": {"name_or_path": str(DEMO_MODEL_DIR)},
                               "data": {"source": "orders.csv", "prompt_column": "question"},
                               "rewards": [{"file": "rewards.py"}]}, base_dir=str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        preflight(cfg)
    [problem] = caught.value.problems
    assert "`polite` needs order_number, which no column of the data provides — did you mean `order_id`?" in problem, problem
    assert "(question, order_id)" in problem

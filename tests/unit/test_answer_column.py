"""The answer column is a setting of the data, kept in the config (data.answer_column): one rule decides it
(data.answer_column(cfg)), the rewards that compare with an answer read it unless their own params name one
(rewards.reward_specs), the loaded data is checked for it, and the Data tab writes it and reads it back. The person's
scenario: a CSV `question,order_id` whose reference is `order_id`, and no builtin that checks answers."""

from __future__ import annotations

import re

import pytest
import yaml

from rloo_studio.config import RunConfig, field_help
from rloo_studio.data import answer_column, load_rows
from rloo_studio.errors import ConfigError, DataError


def orders_csv(folder, name: str = "orders.csv"):
    path = folder / name
    path.write_text("question,order_id\nWhere is my order?,A-17\nIs B-2 late?,B-2\nCan I cancel?,C-3\n", encoding="utf-8")
    return path


def config(data: dict | None = None, rewards: list | None = None, base_dir=".") -> RunConfig:
    return RunConfig.from_dict({"data": {"source": "orders.csv", "prompt_column": "question", **(data or {})},
                                "rewards": rewards if rewards is not None else [{"file": "rewards.py"}]}, base_dir=str(base_dir))


# ---- the config --------------------------------------------------------------------------------------


def test_the_answer_column_is_kept_in_the_config_and_read_back():
    cfg = config({"answer_column": "order_id"})
    assert cfg.data.answer_column == "order_id"
    saved = yaml.safe_load(cfg.to_yaml())
    assert saved["data"]["answer_column"] == "order_id"
    assert RunConfig.from_dict(saved).data.answer_column == "order_id"
    assert config().data.answer_column is None  # unset: the column named `answer`, if any
    assert "answer" in field_help("data", "answer_column") and "params" in field_help("data", "answer_column")


def test_an_empty_answer_column_is_refused_by_validation():
    problems = config({"answer_column": "  "}).validate()
    assert any(p.startswith("data.answer_column: empty") for p in problems), problems


# ---- the one rule ----------------------------------------------------------------------------------


def test_the_datas_answer_column_decides_then_a_rewards_param_then_answer():
    ticked = [{"name": "exact_match", "params": {"answer_column": "expected"}}]
    assert answer_column(config({"answer_column": "order_id"})) == "order_id"
    assert answer_column(config({"answer_column": "order_id"}, ticked)) == "order_id"  # the data's setting decides
    assert answer_column(config({}, ticked)) == "expected"  # a config written before data.answer_column existed
    assert answer_column(config()) == "answer"


def test_rewards_that_compare_with_an_answer_read_the_datas_column_unless_their_params_name_one():
    from rloo_studio.rewards import reward_specs

    cfg = config({"answer_column": "order_id"}, [
        {"name": "numeric_answer"}, {"name": "exact_match", "params": {"answer_column": "expected"}},
        {"name": "think_format"}, {"judge": "demo", "rubric": "Names the order."}, {"file": "rewards.py"}])
    specs = reward_specs(cfg)
    assert [s.params.get("answer_column") for s in specs] == ["order_id", "expected", None, "order_id", None]
    assert specs[2].params == {} and cfg.rewards[0].params == {}  # the config itself is left as written
    assert [s.params for s in reward_specs(config({}, [{"name": "numeric_answer"}]))] == [{}]  # unset: the builtin's own default


def test_a_builtin_built_from_the_config_compares_with_the_datas_column():
    from rloo_studio.rewards import build_rewards, reward_specs

    cfg = config({"answer_column": "order_id"}, [{"name": "exact_match"}])
    [reward] = build_rewards(reward_specs(cfg), dataset_columns=["question", "order_id"])
    assert reward.func(["A-17", "B-9"], order_id=["A-17", "A-17"]) == [1.0, 0.0]


def test_the_reward_check_names_the_datas_setting_for_a_column_it_gave():
    from rloo_studio.rewards import check_reward_specs

    cfg = config({"answer_column": "order_id"}, [{"name": "exact_match"}])
    rows = [{"question": "Where?", "order_id": ""}]
    [problem] = check_reward_specs(cfg.rewards, dataset_columns=["question", "order_id"], rows=rows,
                                   answer_column=cfg.data.answer_column)
    assert "the column `order_id` is empty in all 1 training rows" in problem and "data.answer_column" in problem
    assert "params.answer_column" not in problem


# ---- the loaded data --------------------------------------------------------------------------------


def test_an_answer_column_the_data_lacks_is_refused_naming_the_columns(tmp_path):
    orders_csv(tmp_path)
    with pytest.raises(DataError) as info:
        load_rows(config({"answer_column": "order"}).data, tmp_path)
    assert info.value.what == "the dataset has no column `order` (data.answer_column) — did you mean `order_id`?"
    assert info.value.why == "its columns are: question, order_id"
    assert "data.answer_column" in info.value.fix
    assert load_rows(config({"answer_column": "order_id"}).data, tmp_path).columns == ["question", "order_id"]


def test_a_held_out_file_without_the_answer_column_is_refused(tmp_path):
    orders_csv(tmp_path)
    (tmp_path / "held.csv").write_text("question,answer\nWhere is D-4?,D-4\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_rows(config({"answer_column": "order_id", "test_split": "held.csv"}).data, tmp_path)
    assert "no column `order_id`" in info.value.what and "held.csv" in info.value.what


def test_preflight_refuses_an_answer_column_the_data_lacks_before_anything_runs(tmp_path):
    from rloo_studio.engine.preflight import preflight
    from rloo_studio.paths import DEMO_MODEL_DIR

    orders_csv(tmp_path)
    (tmp_path / "rewards.py").write_text("def polite(completions, order_id, **kwargs):\n    return [0.0 for _ in completions]\n")
    cfg = RunConfig.from_dict({"model": {"name_or_path": str(DEMO_MODEL_DIR)},
                               "data": {"source": "orders.csv", "prompt_column": "question", "answer_column": "order"},
                               "rewards": [{"file": "rewards.py"}]}, base_dir=str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        preflight(cfg)
    [problem] = caught.value.problems
    assert "no column `order` (data.answer_column)" in problem and "its columns are: question, order_id" in problem, problem


# ---- the Data tab: the form -> config path and back ----------------------------------------------------


def _data_values(answer: str) -> list:
    from rloo_studio.ui import text

    return [text.SOURCE_CHOICES[1], "orders.csv", "", "", "train", "question", answer, "", "", 0.0, None, "auto"]


def test_the_data_tab_writes_its_answer_column_into_the_config_and_reads_it_back():
    from rloo_studio.ui.data_tab import NO_ANSWER, DataTab

    cfg = {"rewards": [{"file": "rewards.py"}]}  # no reward that compares with an answer
    DataTab.apply(cfg, _data_values("order_id"))
    assert cfg["data"]["answer_column"] == "order_id" and cfg["rewards"] == [{"file": "rewards.py"}]
    assert DataTab.values_from(RunConfig.from_dict(cfg))[6] == "order_id"
    for unset in (NO_ANSWER, "answer", ""):  # `answer`: the default, which a file without that column is not refused for
        cleared = {"rewards": [{"file": "rewards.py"}]}
        DataTab.apply(cleared, _data_values(unset))
        assert cleared["data"]["answer_column"] is None, unset
        assert DataTab.values_from(RunConfig.from_dict(cleared))[6] == "answer"



def test_the_data_check_of_a_new_file_chooses_its_answer_column_instead_of_refusing_the_last_files(tmp_path):
    """The form still holds the last file's answer column when a new file is checked: the check chooses one of the new
    file's columns and says so, rather than listing the config's refusal of the old one as a problem too."""
    from rloo_studio.ui.data_tab import DataTab

    (tmp_path / "qa.csv").write_text("question,answer\nWhat is 2+2?,4\n", encoding="utf-8")
    last = config({"source": "qa.csv", "answer_column": "order_id"}).data
    summary, _rows, columns, _prompt, answer, _count = DataTab.preview(last, str(tmp_path), "order_id", [])
    assert columns == ["question", "answer"] and answer == "answer"
    assert "was `order_id`, which this data does not have: it is now `answer`" in summary
    assert "no column `order_id`" not in summary, summary

# ---- the warm-up --------------------------------------------------------------------------------------


def test_the_warmup_puts_the_datas_answer_column_into_its_replies_unless_it_names_one():
    from rloo_studio.engine import warmup

    rows = [{"question": "Where is my order?", "order_id": "A-17"}]

    def replies(**warm) -> list[str]:
        cfg = RunConfig.from_dict({"lora": {"r": 8}, "data": {"source": "orders.csv", "prompt_column": "question",
                                                                "answer_column": "order_id"},
                                   "rewards": [{"file": "rewards.py"}], "warmup": {"enabled": True, **warm}})
        assert not [p for p in cfg.validate() if p.startswith("warmup")]
        return [pair["reply"] for pair in warmup.build_pairs(cfg, rows)]

    assert replies() == ["<answer>A-17</answer>"]
    assert replies(answer_column="question") == ["<answer>Where is my order?</answer>"]  # its own setting wins


def test_an_exported_script_compares_with_the_datas_answer_column(tmp_path):
    """train.py builds the builtins from their params alone: the exported config gives them the data's column."""
    from rloo_studio.engine.export import export_run
    from rloo_studio.paths import PROJECT_ROOT

    run_dir = tmp_path / "demo-run"
    run_dir.mkdir()
    demo = yaml.safe_load((PROJECT_ROOT / "presets" / "cpu-demo.yaml").read_text())
    demo["data"]["answer_column"] = "answer"
    demo["rewards"].append({"name": "exact_match", "params": {"answer_column": "prompt"}})
    (run_dir / "config.yaml").write_text(yaml.safe_dump(demo))
    out = export_run(run_dir, "script", progress=lambda m: None)
    exported = {r["name"]: r.get("params", {}) for r in yaml.safe_load((out / "config.yaml").read_text())["rewards"]}
    assert exported["numeric_answer"] == {"answer_column": "answer"} and exported["exact_match"] == {"answer_column": "prompt"}
    assert "answer_column" not in exported["think_format"]


def test_too_few_held_out_rows_to_tell_base_from_tuned_are_said_in_the_data_tab(tmp_path):
    """30 rows, a tenth held out: "27 training rows, 3 held out … ✅ Ready to train", and only at Evaluate did the person
    learn that 3 prompts are "too few to judge" (a walk). The Data tab says it, with the number that can."""
    from rloo_studio.stats import FEWEST_TO_DECIDE
    from rloo_studio.ui.data_tab import DataTab

    (tmp_path / "boats.csv").write_text("question,hours\n" + "".join(f"How long for repair {i}?,{i}\n" for i in range(30)))
    summary = DataTab.preview(config({"source": "boats.csv", "prompt_column": "question", "test_fraction": 0.1}).data,
                              str(tmp_path), None, [])[0]
    assert "**27 training rows**, 3 held out" in summary
    assert (f"ℹ️ 3 held-out rows are too few for Evaluate to tell base from tuned: it needs at least {FEWEST_TO_DECIDE} "
            "prompts on which the two differ") in summary, summary
    bigger = DataTab.preview(config({"source": "boats.csv", "prompt_column": "question", "test_fraction": 0.5}).data,
                             str(tmp_path), None, [])[0]
    assert "too few for Evaluate" not in bigger
    none = DataTab.preview(config({"source": "boats.csv", "prompt_column": "question", "test_fraction": 0.0}).data,
                           str(tmp_path), None, [])[0]
    assert "ℹ️ No rows are held out, so Evaluate has none of its own to score base and tuned on" in none, none


def test_prompts_written_more_than_once_are_said_with_what_they_do(tmp_path):
    """The CSV repeated 4 questions word for word, 3 with different hours; the Data tab said "✅ Ready to train" and
    only Evaluate found "2 of these 6 prompts are training prompts" (a walk)."""
    from rloo_studio.ui.data_tab import DataTab

    rows = [f"Hours of gallery {i}?,{10 + i}-18\n" for i in range(36)]
    rows += ["Hours of gallery 0?,11-19\n", "Hours of gallery 1?,12-19\n", "Hours of gallery 2?,13-19\n", "Hours of gallery 3?,13-18\n"]
    (tmp_path / "museum.csv").write_text("question,hours\n" + "".join(rows))
    data = config({"source": "museum.csv", "prompt_column": "question", "answer_column": "hours", "test_fraction": 0.15}).data
    summary = DataTab.preview(data, str(tmp_path), "hours", [])[0]
    assert "ℹ️ 4 prompts appear more than once, 3 of them with a different `hours`: the data teaches two answers to one question" in summary, summary
    from rloo_studio.data import load_rows, repeats

    found = repeats(load_rows(data, tmp_path), "question")
    assert found["prompts"] == 4 and found["differ"] == {"hours": 3}
    # Which ones, so the person need not hunt for them (a walk): those with two answers first, each with its answers.
    # (in the order the split meets them: the held-out share is drawn at random)
    named = summary.split("one question (", 1)[1].split(")", 1)[0]
    for i in range(3):
        assert re.search(rf"“Hours of gallery {i}\?”: ({10 + i}-18 or {11 + i}-19|{11 + i}-19 or {10 + i}-18)", named), named
    assert named.endswith("; and 1 more") and "gallery 3" not in named
    if found["held_out"]:
        assert f"{found['held_out']} held-out row" in summary and "score memory there, not the skill" in summary


def test_the_held_out_advice_leaves_room_for_prompts_on_which_base_and_tuned_tie(tmp_path):
    """40 rows, 10 % held out: the note said '0.15 holds out 6 of these 40 rows'; with 6, the note went and Evaluate
    said 'too few to judge … the two differ on 0 of 6 prompts': 6 is enough only if base and tuned differ on every one
    (a walk). The advice holds out twice that, and a share between says what it can and cannot show."""
    from rloo_studio.stats import FEWEST_TO_DECIDE
    from rloo_studio.ui.data_tab import DataTab

    (tmp_path / "vet.csv").write_text("question,days\n" + "".join(f"How many days for case {i}?,{i}\n" for i in range(40)))

    def summary(fraction):
        return DataTab.preview(config({"source": "vet.csv", "prompt_column": "question", "test_fraction": fraction}).data,
                               str(tmp_path), None, [])[0]

    assert "(0.3 holds out 12 of these 40 rows)" in summary(0.1), summary(0.1)
    six = summary(0.15)
    assert "**34 training rows**, 6 held out" in six
    assert (f"ℹ️ With 6 held-out rows, Evaluate can tell base from tuned only if the two differ on at least {FEWEST_TO_DECIDE} "
            "of them (every one here)") in six, six
    assert "0.3 holds out 12 of these 40 rows" in six
    assert "held-out rows" not in summary(0.3)


def test_the_held_out_advice_names_only_what_changes_the_held_out_rows(tmp_path):
    """With a held-out file given, the fraction does nothing, yet the note said "Raise 'Held-out fraction' (0.3 holds out
    ...)"; with "Use at most N training rows" it counted the rows left after that limit as the whole file (a review)."""
    from rloo_studio.ui.data_tab import DataTab

    (tmp_path / "vet.csv").write_text("question,days\n" + "".join(f"How many days for case {i}?,{i}\n" for i in range(400)))
    (tmp_path / "held.csv").write_text("question,days\n" + "".join(f"Held case {i}?,{i}\n" for i in range(5)))

    def summary(**data):
        return DataTab.preview(config({"source": "vet.csv", "prompt_column": "question", **data}).data, str(tmp_path), None, [])[0]

    with_file = summary(test_split="held.csv", test_fraction=0.1)
    assert "5 held out" in with_file and "too few for Evaluate" in with_file
    assert "Raise" not in with_file and "Give a file of other prompts" in with_file, with_file
    limited = summary(test_fraction=0.01, max_train_samples=100)
    assert "4 held out" in limited and "of these 104 rows" not in limited, limited
    assert "(0.05 holds out 20 of these 400 rows)" in limited, limited


def test_an_answer_column_empty_in_every_row_is_not_ready_while_a_reward_checks_answers(tmp_path):
    """A CSV whose `answer` cells are all empty with numeric_answer ticked: the Data tab said "✅ Ready to train" and the
    run then failed its checks (the reward would give no score to any completion) (a review)."""
    from rloo_studio.ui.data_tab import DataTab

    (tmp_path / "q.csv").write_text("question,answer\n" + "".join(f"How far is town {i}?,\n" for i in range(30)))
    data = config({"source": "q.csv", "prompt_column": "question", "answer_column": "answer", "test_fraction": 0.0}).data
    summary = DataTab.preview(data, str(tmp_path), "answer", ["numeric_answer"])[0]
    assert "Ready to train" not in summary and "`answer` is empty in every training row" in summary, summary
    assert "numeric_answer" in summary
    assert "Ready to train" in DataTab.preview(data, str(tmp_path), "answer", [])[0]  # nothing reads it: fine

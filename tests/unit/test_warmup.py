"""Unit tests for the format warm-up: its config section (validation in config words) and the pairs it trains on
(engine/warmup.py: the answer column in the template, the good pinned examples, replies written by hand, the prompts
held back for the check, the prompt tokens masked out of the loss)."""

from __future__ import annotations

import json

import pytest

from rloo_studio.config import RunConfig
from rloo_studio.engine import warmup
from rloo_studio.errors import DataError

BASE = {"lora": {"r": 8}, "rewards": [{"name": "numeric_answer"}], "data": {"source": "data.jsonl"}}
ROWS = [{"prompt": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(12)]


def config(**warm) -> RunConfig:
    return RunConfig.from_dict({**BASE, "warmup": {"enabled": True, **warm}})


def warmup_problems(cfg: RunConfig, processes: int = 1) -> list[str]:
    return [p for p in cfg.validate(num_processes=processes) if p.startswith("warmup")]


def test_the_warmup_is_off_by_default_and_its_defaults_validate():
    cfg = RunConfig.from_dict(BASE)
    assert cfg.warmup.enabled is False and cfg.warmup.steps == 30 and cfg.warmup.source == "answer_column"
    assert cfg.warmup.template == "<answer>{answer}</answer>"
    assert warmup_problems(config()) == []
    # Off, even wrong values are no problem: nothing uses them.
    assert warmup_problems(RunConfig.from_dict({**BASE, "warmup": {"steps": 0, "source": "x"}})) == []


def test_warmup_problems_say_what_to_write():
    problems = warmup_problems(config(steps=0, learning_rate=0, source="tabel"))
    assert any(p.startswith("warmup.steps: 0 trains nothing; use a few dozen (e.g. 30)") for p in problems), problems
    assert "warmup.learning_rate: 0 must be greater than 0" in problems
    assert any("warmup.source: 'tabel' is not one of answer_column, pinned, table — did you mean `table`?" in p for p in problems)
    [slot] = warmup_problems(config(template="<answer></answer>"))
    assert "has no {answer}" in slot and "e.g. <answer>{answer}</answer>" in slot
    [table] = warmup_problems(config(source="table"))
    assert "needs replies written by hand" in table
    [bad] = warmup_problems(config(source="table", examples=[{"prompt": "2+2?", "reply": ""}]))
    assert bad.startswith("warmup.examples[0]:")
    [full] = warmup_problems(RunConfig.from_dict({**BASE, "lora": False, "warmup": {"enabled": True}}))
    assert "add a `lora:` section" in full
    [ranks] = warmup_problems(config(), processes=2)
    assert "one process, not 2" in ranks


def test_unknown_warmup_keys_are_refused_with_did_you_mean():
    from rloo_studio.errors import ConfigError

    with pytest.raises(ConfigError, match=r"warmup.stepz: unknown key — did you mean `steps`"):
        RunConfig.from_dict({**BASE, "warmup": {"stepz": 3}})


def test_the_warmup_section_round_trips_through_yaml(tmp_path):
    cfg = config(source="table", examples=[{"prompt": "2+2?", "reply": "<answer>4</answer>"}], steps=12)
    cfg.save(tmp_path / "c.yaml")
    again = RunConfig.load(tmp_path / "c.yaml")
    assert again.warmup == cfg.warmup


def test_answer_column_pairs_put_the_answer_into_the_template_and_leave_the_check_prompts_out():
    cfg = config(template="Answer: <answer>{answer}</answer>")
    pairs = warmup.build_pairs(cfg, ROWS, held_back=4)
    assert len(pairs) == 8 and pairs[0]["prompt"] == "What is 0 + 1?"
    assert pairs[0]["reply"] == "Answer: <answer>1</answer>"
    held, words = warmup.check_rows(cfg, ROWS, None)
    assert [r["prompt"] for r in held] == [r["prompt"] for r in ROWS[-warmup.CHECK_PROMPTS:]]
    assert "held back from the warm-up" in words
    assert not {p["prompt"] for p in warmup.build_pairs(cfg, ROWS, held_back=len(held))} & {r["prompt"] for r in held}
    # With held-out prompts the check uses those, and every training row is a pair.
    held, words = warmup.check_rows(cfg, ROWS, ROWS[:3])
    assert len(held) == 3 and words == "the first 3 held-out prompts"


def test_rows_without_an_answer_are_skipped_and_a_wrong_column_is_named():
    cfg = config(answer_column="solution")
    rows = [{"prompt": "a", "solution": "1"}, {"prompt": "b", "solution": ""}, {"prompt": "c"}]
    assert [p["prompt"] for p in warmup.build_pairs(cfg, rows)] == ["a"]
    with pytest.raises(DataError) as caught:
        warmup.build_pairs(config(answer_column="solution"), ROWS)
    assert "no training row has a value in column `solution`" in caught.value.what
    assert "answer, prompt" in caught.value.why


def test_pinned_pairs_are_the_good_pinned_examples(tmp_path):
    # The app's pinned.json: prompt, completion, answer cell, min total, max total; only a minimum above 0 is "good".
    table = [["2+2?", "<answer>4</answer>", "4", 1.0, None], ["2+3?", "6", "5", None, 0.0], ["", "x", "", 1, 1],
             ["3+3?", "<answer>6</answer>", "", 0.5, 2]]
    (tmp_path / warmup.PINNED_RUN_FILE).write_text(json.dumps(table))
    cfg = config(source="pinned")
    found = warmup.pinned_examples(cfg, tmp_path)
    assert found == [("2+2?", "<answer>4</answer>", {"answer": "4"}), ("3+3?", "<answer>6</answer>", {})]
    pairs = warmup.build_pairs(cfg, ROWS, pinned=found)
    assert [(p["prompt"], p["reply"]) for p in pairs] == [("2+2?", "<answer>4</answer>"), ("3+3?", "<answer>6</answer>")]
    assert pairs[0]["row"] == {"prompt": "2+2?", "answer": "4"}
    assert warmup.good_header_examples([{"prompt": "p", "completion": "c", "columns": {}, "total": [0.5, None]},
                                        {"prompt": "q", "completion": "d", "columns": {}, "total": [None, 0.0]}]) == [("p", "c", {})]
    with pytest.raises(DataError, match="no pinned example expected to score above 0"):
        warmup.build_pairs(cfg, ROWS, pinned=[])


def test_table_pairs_are_the_replies_written_by_hand():
    cfg = config(source="table", examples=[{"prompt": "2+2?", "reply": "<answer>4</answer>"}])
    assert [(p["prompt"], p["reply"]) for p in warmup.build_pairs(cfg, ROWS)] == [("2+2?", "<answer>4</answer>")]


def test_the_format_pattern_reads_the_template():
    pattern = warmup.format_pattern("<answer>{answer}</answer>")
    assert pattern.search("so <answer> 7 </answer>") and not pattern.search("7") and not pattern.search("<answer>7")
    assert warmup.format_pattern("{answer}") is None


def test_batches_mask_the_prompt_and_the_padding_out_of_the_loss():
    torch = pytest.importorskip("torch")
    ids, mask, labels = warmup.batch_tensors([([1, 2, 3], [7, 9]), ([4], [8])], 0, torch, "cpu")
    assert ids.tolist() == [[1, 2, 3, 7, 9], [4, 8, 0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    assert labels.tolist() == [[-100, -100, -100, 7, 9], [-100, 8, -100, -100, -100]]


def test_the_summary_line_says_what_ran_and_the_check_with_its_interval():
    rate = lambda v, n: {"value": v, "low": 0.0, "high": 0.3, "n": n}  # noqa: E731
    record = {"finished": True, "steps": 30, "pairs": 40, "source_words": "the answer column in the template",
              "check": {"prompts_are": "the first 8 held-out prompts", "before": {"format_rate": rate(0.0, 8)},
                        "after": {"format_rate": rate(0.75, 8)}}}
    line = warmup.summary_line(record)
    assert line.startswith("A 30-step format warm-up (supervised LoRA, 40 pairs from the answer column in the template) ran "
                           "before RLOO; greedy answers in the template's format on the first 8 held-out prompts: 0.0 %")
    assert "75.0 % [0.0, 30.0] (n=8) after" in line
    assert warmup.summary_line({**record, "finished": False}) is None and warmup.summary_line(None) is None


# ---- the Train tab's accordion and status line ----------------------------------------------------------------------

def test_the_train_tabs_warmup_fields_round_trip_through_the_config():
    from rloo_studio.ui.train_tab import TrainTab, apply_warmup, warmup_markdown

    cfg = config(source="table", steps=12, examples=[{"prompt": "2+2?", "reply": "<answer>4</answer>"}])
    values = TrainTab.values_from(cfg)
    assert values[-5:] == [True, 12, "table", "<answer>{answer}</answer>", "2+2? => <answer>4</answer>"]
    out = {"warmup": {"learning_rate": 5e-4}, "rewards": [{"name": "numeric_answer", "params": {"answer_column": "solution"}}]}
    assert TrainTab.apply(out, values) == []
    assert out["warmup"] == {"learning_rate": 5e-4, "enabled": True, "source": "table", "template": "<answer>{answer}</answer>",
                             "steps": 12, "examples": [{"prompt": "2+2?", "reply": "<answer>4</answer>"}],
                             "answer_column": "solution"}  # the Data tab's answer column; keys the page does not show kept
    [problem] = apply_warmup({}, [True, 30, "table", "", "2+2? <answer>4</answer>"])
    assert "line 1: no “=>” between the prompt and the reply" in problem
    assert apply_warmup({}, [False, 30, "table", "", "2+2? <answer>4</answer>"]) == []  # off: nothing to complain about


def test_the_status_says_the_warmup_before_rloos_first_step():
    from rloo_studio.ui.train_tab import warmup_markdown

    assert warmup_markdown({"state": "running"}) == ""
    running = warmup_markdown({"warmup": {"step": 12, "steps": 30, "finished": False}})
    assert "**Format warm-up:** step 12 of 30 (supervised, before RLOO's step 1" in running
    done = warmup_markdown({"warmup": {"step": 30, "steps": 30, "finished": True, "line": "A 30-step format warm-up ran."}})
    assert "before RLOO's step 1 on the charts):** A 30-step format warm-up ran." in done


def test_rloo_studio_eval_says_the_warmup_ran():
    from rloo_studio import stats
    from rloo_studio.cli.results import _verdict_lines

    report = {"decoding": {"max_new_tokens": {"base": 16, "tuned": 16}}, "base": {"truncation_rate": 0.0},
              "warmup": "A 30-step format warm-up (supervised LoRA, 40 pairs from the pinned examples) ran before RLOO."}
    comparison = stats.paired([0.0] * 6, [1.0] * 6)
    lines = _verdict_lines(report, comparison, {"truncation_rate": 0.0}, "final", "runs/x")
    assert (f"{report['warmup']} The tuned side includes it; the base side is the model without an adapter.") in lines
    assert not any("warm-up" in line for line in _verdict_lines({**report, "warmup": None}, comparison,
                                                                {"truncation_rate": 0.0}, "final", "runs/x"))

"""The rule builder's blocks, each against hand-worked cases (Unicode, empty and huge replies), through the code the
generator writes, called as TRL 1.15 calls a reward function; and the generated files pass `ruff check`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rloo_studio.errors import RewardError
from rloo_studio.rewards import library, rules
from rloo_studio.rewards.user import TRL_REWARD_ARGS, load_reward_source

HUGE = 200_000  # words in a huge reply


def _functions(rule_set: dict, columns=("answer",)) -> dict:
    text = rules.build_file(rule_set, "test rule", examples=[])
    # Loaded as training loads it, with the signature check against TRL's arguments and the data's columns.
    return load_reward_source(text, "rule.py", extra_args=tuple(columns))


def _trl_call(fn, replies: list, ids=None, conversational=False, **columns) -> list:
    """The keyword arguments TRL 1.15 passes: prompts, completions, completion_ids, trainer_state, log_extra, log_metric
    and every dataset column."""
    completions = [[{"role": "assistant", "content": r}] if conversational else r for r in replies]
    kwargs = {"prompts": ["p"] * len(replies), "completions": completions,
              "completion_ids": ids if ids is not None else [[ord(c) for c in r] for r in replies],
              "trainer_state": None, "log_extra": lambda *a: None, "log_metric": lambda *a: None}
    assert set(kwargs) == set(TRL_REWARD_ARGS)
    for name, values in columns.items():
        kwargs[name] = values
    return fn(**kwargs)


def score(block: str, replies: list, params: dict | None = None, ids=None, **columns) -> list:
    [fn] = _functions({"blocks": [{"block": block, "name": "r", "params": params or {}}]}, columns or ("answer",)).values()
    return _trl_call(fn, replies, ids, **({"answer": [None] * len(replies)} | columns))


@pytest.mark.parametrize("block", list(rules.BLOCKS))
def test_each_block_scores_its_worked_example(block):
    b = rules.BLOCKS[block]
    ex = b.example
    assert b.explanation and "\n" not in b.explanation
    columns = {k: [v] for k, v in ex["columns"].items()}
    got = score(block, [ex["reply"]], ex["params"], **columns)
    assert got == [pytest.approx(ex["score"])]
    # The same through a chat completion (a list of messages), as TRL passes it for chat prompts.
    [fn] = _functions({"blocks": [{"block": block, "name": "r", "params": ex["params"]}]}).values()
    assert _trl_call(fn, [ex["reply"]], conversational=True, **({"answer": [None]} | columns)) == got


def test_contains():
    replies = ["<think>75</think>The answer is 75.", "Ｔｈｅ ａｎｓｗｅｒ ｉｓ ＰＡＲＩＳ", "STRASSE", "<think>75</think>no idea",
               "", "x " * HUGE + "75"]
    answers = ["75", "paris", "Straße", "75", "75", "75"]
    assert score("contains", replies, answer=answers) == [1.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    assert score("contains", ["anything"], answer=[""]) == [None]  # no reference: cannot say
    assert score("contains", ["anything"], answer=[None]) == [None]


def test_number():
    replies = ["It is 42.0", "<think>1</think>1,234", "-3", "41.9", "٧٥", "no number", "", "1 " * HUGE + "42", "42"]
    answers = ["42", "1234", "-3.004", "42", "75", "42", "42", "42", "n/a"]
    assert score("number", replies, {"tolerance": 0.01}, answer=answers) == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, None]
    assert score("number", ["42.005"], {"tolerance": 0}, answer=["42"]) == [0.0]  # tolerance 0: exactly


def test_pattern():
    assert score("pattern", ["FINAL: 12", "Ответ: 5", "", "a " * HUGE + "final: 3"], {"pattern": r"(final|ответ): \d"}) == \
        [1.0, 1.0, 0.0, 1.0]
    assert score("pattern", ["12", " 12\n", "12 apples"], {"pattern": r"\d+", "whole": True}) == [1.0, 1.0, 0.0]


def test_tags():
    replies = ["<answer> Paris </answer>", "<answer>x</answer> <answer>y</answer>", "<answer>Zoë</answer>",
               "<answer>Paris", "", "<answer>" + "w " * HUGE + "</answer>"]
    assert score("tags", replies, {"column": "answer"}, answer=["paris", "y", "ZOË", "Paris", "Paris", "Paris"]) == \
        [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    # No column: only the form counts (text present between the tags).
    assert score("tags", ["<answer>x</answer>", "<answer> </answer>", "", "<b>x</b>"]) == [1.0, 0.0, 0.0, 0.0]
    assert score("tags", ["<b>Zoë</b>"], {"open": "<b>", "close": "</b>", "column": "answer"}, answer=[""]) == [None]


def test_boxed():
    replies = ["x = \\boxed{\\frac{1}{2}}", "\\boxed{1} then \\boxed{ 1 2 }", "no box", "\\boxed{12", "", "\\boxed{π}",
               "a " * HUGE + "\\boxed{12}"]
    assert score("boxed", replies, {"column": "answer"}, answer=["\\frac{1}{2}", "12", "12", "12", "12", "Π", "12"]) == \
        [1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert score("boxed", ["\\boxed{}", "\\boxed{x}", ""]) == [0.0, 1.0, 0.0]


def test_json():
    replies = ['{"name": "Zoë", "age": 7}', '```json\n{"name": "A", "age": 1}\n```', '{"name": "A"}', "[1, 2]", "Ana is 7",
               '<think>{}</think>{"name": 1, "age": 2}', "", '{"名前": "x"}',
               "{" + ", ".join(f'"k{i}": {i}' for i in range(HUGE // 10)) + ', "name": 0, "age": 0}']
    assert score("json", replies, {"keys": ["name", "age"]}) == [1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert score("json", ['{"名前": "x"}'], {"keys": ["名前"]}) == [1.0]
    schema = {"keys": [], "types": {"age": "integer", "name": "string", "tags": "list", "ok": "boolean"}}
    replies = ['{"age": 7, "name": "A", "tags": [], "ok": false}', '{"age": "7", "name": "A", "tags": [], "ok": true}',
               '{"age": true, "name": "A", "tags": [], "ok": true}', '{"age": 7.5, "name": "A", "tags": [], "ok": true}',
               '{"name": "A", "tags": [], "ok": true}', '{"age": 7, "name": "A", "tags": {}, "ok": 1}']
    assert score("json", replies, schema) == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert score("json", ['{"x": 1.5}', '{"x": 2}', '{"x": null}'], {"keys": [], "types": {"x": "number"}}) == [1.0, 1.0, 0.0]


def test_length_in_words_and_tokens():
    words = {"unit": "words", "low": 5, "high": 10}
    replies = ["one two three", "a b c d e f g", " ".join("x" * 15), "", "これはペンです", "w " * HUGE]
    # 3 words: 2 short of the band, 1 - 2/10; 15: 5 over, 1 - 5/10; none: 1 - 5/10; a text without spaces is one word.
    assert score("length", replies, words) == [pytest.approx(0.8), 1.0, pytest.approx(0.5), pytest.approx(0.5),
                                               pytest.approx(0.6), 0.0]
    tokens = {"unit": "tokens", "low": 5, "high": 10}
    assert score("length", ["a", "b", "c"], tokens, ids=[[1] * 6, [1] * 12, []]) == [1.0, pytest.approx(0.8), pytest.approx(0.5)]


def test_repetition():
    replies = ["yes yes yes yes yes", "a b c d", "", "one", "猫 猫 猫", "a b " * (HUGE // 2), "The cat. the CAT."]
    got = score("repetition", replies, {"n": 2})
    assert got[:5] == [pytest.approx(0.25), 1.0, 0.0, 1.0, pytest.approx(0.5)]
    assert got[5] == pytest.approx(2 / (HUGE - 1))
    assert got[6] == pytest.approx(2 / 3)  # "the cat." "cat. the" "the cat.": case folded, 2 distinct of 3


def test_language():
    assert score("language", ["Привет мир yes", "", "123 !!!", "café", "a" * 1_000_000], {"script": "cyrillic"}) == \
        [pytest.approx(0.75), 0.0, 0.0, 0.0, 0.0]
    assert score("language", ["café"], {"script": "latin"}) == [1.0]
    assert score("language", ["日本語です"], {"script": "cjk"}) == [pytest.approx(0.6)]  # です is hiragana
    assert score("language", ["日本語です"], {"script": "hiragana"}) == [pytest.approx(0.4)]


def test_forbidden_words():
    replies = ["As an AI, I cannot.", "He has an aim", "ＡＳ ＡＮ ＡＩ", "", "ok " * HUGE + "as an ai", "Fine."]
    assert score("forbidden", replies, {"words": ["as an AI", "  "]}) == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("combine, expected", [("all", [0.0, 0.8, 0.5]), ("any", [1.0, 1.0, 0.5])])
def test_all_of_and_any_of_give_the_lowest_and_highest_block_score(combine, expected):
    rule_set = {"combine": combine, "name": "both",
                "blocks": [{"block": "contains"}, {"block": "length", "params": {"low": 5, "high": 10}}]}
    [(name, fn)] = _functions(rule_set).items()
    assert name == "both"
    # contains / length: 1.0 / 0.0 (101 words, 91 over the band); 1.0 / 0.8 (3 words); None (no reference) / 0.5 (no
    # words): a block that cannot score is left out.
    got = _trl_call(fn, ["75 " + "w " * 100, "it is 75", ""], answer=["75", "75", ""])
    assert got == [pytest.approx(v) for v in expected]


def _ruff(text: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--stdin-filename", "reward.py", "-"],
                          input=text, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("combine", ["sum", "all", "any"])
def test_generated_code_passes_ruff(combine):
    blocks = [{"block": b, **({"params": {"column": "answer"}} if b in ("tags", "boxed") else {})} for b in rules.BLOCKS]
    for i, b in enumerate(blocks):
        b["name"] = f"{b['block']}_{i}"
    text = rules.build_file({"combine": combine, "blocks": blocks}, "every block", tags=["test"],
                            examples=[{"prompt": "p", "completion": "c", "columns": {"answer": "a"}, "total": [None, None]}])
    checked = _ruff(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    reward = library.parse(text)
    assert reward.columns == ["answer"]
    assert reward.functions == ([b["name"] for b in blocks] if combine == "sum" else ["all_rules" if combine == "all" else "any_rule"])
    rule_set = {"combine": combine, "blocks": blocks}  # the header rebuilds the rule set the file was made from
    assert rules.normalised_rules(rules.rules_of(library.read_header(text))) == rules.normalised_rules(rule_set)


def test_ruff_finds_a_fault_in_code():
    assert _ruff("import re\n").returncode != 0  # the check above can fail: an unused import is reported


@pytest.mark.parametrize("rule_set, said", [
    ({"blocks": []}, "no blocks"),
    ({"blocks": [{"block": "nope"}]}, "unknown block"),
    ({"blocks": [{"block": "pattern", "params": {"pattern": "(unclosed"}}]}, "not a regular expression"),
    ({"blocks": [{"block": "length", "params": {"low": 10, "high": 5}}]}, "is empty"),
    ({"blocks": [{"block": "length", "params": {"low": "5"}}]}, "parameter `low`"),
    ({"blocks": [{"block": "contains", "params": {"column": "p"}}]}, "a name the reward's code needs"),
    ({"blocks": [{"block": "contains"}, {"block": "contains"}]}, "two blocks are named"),
    ({"blocks": [{"block": "language", "params": {"script": "klingon"}}]}, "unknown script"),
    ({"blocks": [{"block": "json", "params": {"types": {"age": "int"}}}]}, "name no JSON type"),
    ({"combine": "product", "blocks": [{"block": "contains"}]}, "combine"),
    ({"blocks": [{"block": "contains", "name": "1st"}]}, "cannot be a function name"),
])
def test_a_bad_rule_set_is_refused_with_what_to_do(rule_set, said):
    with pytest.raises(RewardError) as caught:
        rules.build_file(rule_set, "bad")
    assert said in caught.value.what and caught.value.fix


def test_the_docs_describe_every_block_and_its_parameters():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "rewards.md").read_text(encoding="utf-8")
    # The blocks' table: | block | what it scores | parameters (default) | worked example |
    rows = {line.split("|")[1].strip(" `"): line.split("|")[3] for line in docs.splitlines() if line.startswith("| `")}
    for block in rules.BLOCKS.values():
        assert block.id in rows, f"docs/rewards.md has no row for block {block.id}"
        for param in block.params:
            assert f"`{param}`" in rows[block.id], f"docs/rewards.md's {block.id} row does not list the parameter {param}"

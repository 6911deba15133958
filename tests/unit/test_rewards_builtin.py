"""Unit tests for rloo_studio.rewards.builtin: literal inputs only, no models, no network."""

import doctest

import pytest

import rloo_studio.rewards.builtin as builtin
from rloo_studio.rewards.builtin import (
    BUILTIN_REWARDS,
    NEEDS_THINK_END_TOKEN_ID,
    completion_text,
    describe_builtin,
    exact_match,
    extract_number,
    final_answer,
    keywords,
    length_band,
    length_penalty,
    normalize_answer,
    numeric_answer,
    regex_format,
    split_thinking,
    think_format,
    think_length,
    valid_json,
)


def chat(text):
    """A conversational completion holding one assistant message."""
    return [{"role": "assistant", "content": text}]


# ------------------------------------------------------------------------------ helpers


def test_completion_text_plain_and_messages():
    assert completion_text("  hi ") == "  hi "
    assert completion_text(chat("hello")) == "hello"
    blocks = [{"role": "assistant", "content": [{"type": "text", "text": "a"},
                                                {"type": "image"}, {"type": "text", "text": "b"}]}]
    assert completion_text(blocks) == "ab"
    mixed = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"},
             {"role": "tool", "content": "t"}, {"role": "assistant", "content": "y"}]
    assert completion_text(mixed) == "x\ny"
    assert completion_text([{"role": "assistant", "content": None}]) == ""


def test_completion_text_rejects_other_types():
    with pytest.raises(TypeError, match="int"):
        completion_text(42)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>plan</think> answer ", ("plan", "answer")),
        ("  <think>\n plan \n</think>\n\nanswer", ("plan", "answer")),
        ("plan without opening</think>answer", ("plan without opening", "answer")),
        ("<think></think>answer", ("", "answer")),
        ("<think>a</think>b</think>c", ("a", "b</think>c")),
        ("<think>never closed", (None, "<think>never closed")),
        ("  just an answer  ", (None, "just an answer")),
        ("<think>only thinking</think>", ("only thinking", "")),
    ],
)
def test_split_thinking(text, expected):
    assert split_thinking(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>still planning", ("still planning", "")),   # the chat shows a streaming thought as thinking so far
        ("  <think>", ("", "")),
        ("<think>plan</think> answer", ("plan", "answer")),
        ("just an answer", (None, "just an answer")),
    ],
)
def test_split_thinking_while_a_reply_streams(text, expected):
    assert split_thinking(text, streaming=True) == expected


@pytest.mark.parametrize(
    "text, mode, expected",
    [
        ("the answer is -7", "last", -7.0),
        ("it costs 3.25 dollars", "last", 3.25),
        ("total: 1,234 items", "last", 1234.0),
        ("$1,234,567.50 in total", "last", 1234567.5),
        ("first 3 then 5.", "last", 5.0),
        ("x = \u22124", "last", -4.0),
        ("pages 3-4", "last", 4.0),
        ("list 1,2,3", "last", 3.0),
        ("value .5", "last", 0.5),
        ("no numbers here", "last", None),
        ("v2 is not a number", "last", None),
        ("work 5 + 6 #### 11", "hash", 11.0),
        ("#### 1,000 and then 7", "hash", 1000.0),
        ("#### -3.5", "hash", -3.5),
        ("11 without marker", "hash", None),
        (r"so \boxed{42} done 7", "boxed", 42.0),
        (r"\boxed{1} then \boxed{-2.5}", "boxed", -2.5),
        (r"\boxed{\frac{3}{4}}", "boxed", 0.75),
        (r"\boxed{-\dfrac{1}{2}}", "boxed", -0.5),
        (r"\boxed{6/4}", "boxed", 1.5),
        (r"\boxed{x^{2} = 9}", "boxed", 9.0),
        (r"\boxed{1,234}", "boxed", 1234.0),
        (r"\boxed{x}", "boxed", None),
        (r"\boxed{12", "boxed", None),
        ("plain 12", "boxed", None),
        (r"#### 3 but \boxed{4}", "auto", 4.0),
        ("#### 3 and 9", "auto", 3.0),
        ("just 9 and 10", "auto", 10.0),
        (r"\boxed{none} 5", "auto", None),
    ],
)
def test_extract_number(text, mode, expected):
    assert extract_number(text, mode) == expected


def test_extract_number_default_mode_is_auto():
    assert extract_number(r"1 \boxed{2} 3") == 2.0


def test_extract_number_rejects_unknown_mode():
    with pytest.raises(ValueError, match="'first'"):
        extract_number("1", "first")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("  Paris. ", "paris"),
        ('"The   Answer"', "the answer"),
        ("\u201cYes!\u201d", "yes"),
        ("**Bold**", "bold"),
        ("-5", "-5"),
        ("3.14", "3.14"),
        ("Line\none", "line one"),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


# ---------------------------------------------------------------------- numeric_answer


def test_numeric_answer_scores_and_references():
    reward = numeric_answer()
    completions = ["<think>2+2 is 4, maybe 5</think>The answer is 4.", "It is 5", "#### 1,234",
                   r"\boxed{0.5}", "anything", "7"]
    answers = ["4", 4, "1234", "#### 0.5", None, "seven"]
    assert reward(completions=completions, answer=answers) == [1.0, 0.0, 1.0, 1.0, None, None]


def test_numeric_answer_conversational_and_answer_part_only():
    reward = numeric_answer(answer_column="solution")
    # The 4 in the reasoning must not count: only the answer part is read.
    completions = [chat("<think>maybe 4</think>It is 9"), chat("<think>maybe 9</think>It is 4")]
    assert reward(completions, solution=[9, 9.0]) == [1.0, 0.0]


def test_a_thought_never_closed_earns_no_answer_credit():
    """Cut off inside <think>: the thinking's last number (18 here) is not an answer."""
    truncated = "<think>Let me see: 9*2=18"
    assert numeric_answer()([truncated, chat(truncated), "<think>9*2</think>18"], answer=[18, 18, 18]) == [0.0, 0.0, 1.0]
    assert exact_match()(["<think>it is paris", "<think>x</think>paris"], answer=["paris", "paris"]) == [0.0, 1.0]
    assert keywords(exclude="lol", answer_only=True)(["<think>no lol here", "fine"]) == [0.0, 1.0]
    assert valid_json(answer_only=True)(['<think>{"a": 1}', '<think>x</think>{"a": 1}']) == [0.0, 1.0]
    assert final_answer("  <think>unfinished") is None and final_answer("plain 7") == "plain 7"


def test_thinking_presets_mask_truncated_completions():
    from rloo_studio.presets import list_presets

    thinking = [p for p in list_presets() if p.load().rloo.get("chat_template_kwargs", {}).get("enable_thinking")]
    assert thinking
    assert all(p.load().rloo.get("mask_truncated_completions") is True for p in thinking), [p.name for p in thinking]


def test_numeric_answer_mode_and_tolerance():
    assert numeric_answer(mode="hash")(["#### 3 so 4"], answer=[3]) == [1.0]
    assert numeric_answer(mode="last")(["#### 3 so 4"], answer=[3]) == [0.0]
    assert numeric_answer(tolerance=0.01)(["3.141"], answer=[3.14]) == [1.0]
    assert numeric_answer()(["3.141"], answer=[3.14]) == [0.0]
    assert numeric_answer()(["no number"], answer=[3]) == [0.0]


def test_numeric_answer_name():
    assert numeric_answer().__name__ == "numeric_answer"
    assert numeric_answer().__qualname__ == "numeric_answer"


def test_missing_answer_column_lists_available_columns():
    reward = numeric_answer(answer_column="answer")
    with pytest.raises(KeyError) as info:
        reward(prompts=["q"], completions=["1"], completion_ids=[[1]], trainer_state=None,
               solution=["1"], level=[3], log_extra=None, log_metric=None)
    message = str(info.value)
    assert "'answer'" in message and "level, solution" in message
    assert "prompts" not in message and "completion_ids" not in message
    with pytest.raises(KeyError, match="gold"):
        exact_match(answer_column="gold")(["x"], answer=["x"])


def test_column_length_mismatch():
    with pytest.raises(ValueError, match="2 values for 1 completions"):
        numeric_answer()(["1"], answer=[1, 2])


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"mode": "first"}, "'first'"),
        ({"tolerance": -1}, "-1"),
        ({"tolerance": float("nan")}, "nan"),
        ({"answer_column": ""}, "''"),
    ],
)
def test_numeric_answer_validation(params, fragment):
    with pytest.raises(ValueError, match=fragment):
        numeric_answer(**params)


# ------------------------------------------------------------------------- exact_match


def test_exact_match_normalized():
    reward = exact_match()
    completions = ["<think>hmm</think> Paris.", chat('"paris"'), "Lyon", "x"]
    assert reward(completions, answer=["Paris", "PARIS", "Paris", None]) == [1.0, 1.0, 0.0, None]
    assert reward.__name__ == "exact_match"


def test_a_blank_reference_is_no_reference_for_exact_match():
    """A CSV row whose answer cell is empty reads as "": exact_match gave a blank reply 1.0 there and any real reply 0.0,
    pushing the model towards saying nothing on those rows (a review). Blank, like missing, is no reference: None."""
    reward = exact_match()
    assert reward(["", "Paris", "."], answer=["", "  ", float("nan")]) == [None, None, None]
    assert reward(["", "Paris"], answer=["Paris", "Paris"]) == [0.0, 1.0]
    assert reward(["0"], answer=[0]) == [1.0]  # a number is a reference, 0 included

def test_exact_match_without_normalization():
    reward = exact_match(normalize=False)
    assert reward([" Paris ", "paris", "42"], answer=["Paris", "Paris", 42]) == [1.0, 0.0, 1.0]


def test_exact_match_validation():
    with pytest.raises(ValueError, match="None"):
        exact_match(answer_column=None)


# ------------------------------------------------------------------------ regex_format


def test_regex_format_search_and_full_match():
    search = regex_format(r"Answer: \d+")
    assert search(["blah Answer: 3 blah", chat("Answer: 12"), "answer: 3"]) == [1.0, 1.0, 0.0]
    assert search.__name__ == "regex_format"
    full = regex_format(r"<think>.*</think>.+", full_match=True)
    assert full(["<think>a\nb</think>\nok", "x <think>a</think>ok", "<think>a</think>"]) == [
        1.0, 0.0, 0.0]
    assert regex_format("answer", ignore_case=True)(["ANSWER"]) == [1.0]


def test_regex_format_validation():
    with pytest.raises(ValueError, match=r"'\(unclosed'") as info:
        regex_format("(unclosed")
    assert "missing )" in str(info.value)
    with pytest.raises(ValueError, match="''"):
        regex_format("")
    with pytest.raises(TypeError):
        regex_format()  # pattern has no default


# ------------------------------------------------------------------------ think_format


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>reason</think>answer", 1.0),
        ("\n  <think>reason</think>\nanswer", 1.0),
        ("<think>reason</think>", 0.5),
        ("<think>reason</think>   ", 0.5),
        ("reason</think>answer", 0.5),
        ("<think></think>answer", 0.5),
        ("<think>a</think>b</think>c", 0.0),
        ("<think>a</think>b<think>c", 0.0),
        ("<think>never closed", 0.0),
        ("plain answer", 0.0),
        ("text <think>late</think>answer", 0.5),
    ],
)
def test_think_format(text, expected):
    assert think_format()([text, chat(text)]) == [expected, expected]


def test_think_format_name():
    assert think_format().__name__ == "think_format"


# ------------------------------------------------------------------------ think_length

END = 99


def test_think_length_band():
    reward = think_length(END, min_tokens=4, max_tokens=8, missing_close_penalty=-0.5)
    ids = [
        [1, 2, 3, 4, END, 5],  # 4 tokens: at the lower edge
        [1] * 8 + [END],  # 8 tokens: at the upper edge
        [1, 2, END],  # 2 tokens: below, 2/4
        [1] * 12 + [END],  # 12 tokens: above, 1 - 4/8
        [1] * 20 + [END],  # 20 tokens: far above, floored at 0
        [1, 2, 3],  # no </think>
        [1, END, 2, END],  # first </think> counts
    ]
    assert reward(["c"] * 7, completion_ids=ids) == [1.0, 1.0, 0.5, 0.5, 0.0, -0.5, 0.25]
    assert reward.__name__ == "think_length"


def test_think_length_conversational_uses_ids_not_text():
    reward = think_length(END, min_tokens=1, max_tokens=2)
    assert reward([chat("no tags in text")], completion_ids=[[7, END]]) == [1.0]


def test_think_length_min_zero():
    assert think_length(END, min_tokens=0, max_tokens=2)(["c"], completion_ids=[[END]]) == [1.0]


def test_think_length_needs_completion_ids():
    with pytest.raises(KeyError, match="completion_ids"):
        think_length(END)(["c"])


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"think_end_token_id": None}, "think_end_token_id=None"),
        ({"think_end_token_id": -1}, "think_end_token_id=-1"),
        ({"think_end_token_id": "</think>"}, "'</think>'"),
        ({"think_end_token_id": 5, "min_tokens": 10, "max_tokens": 4}, r"min_tokens \(10\)"),
        ({"think_end_token_id": 5, "min_tokens": 0, "max_tokens": 0}, "got 0"),
        ({"think_end_token_id": 5, "min_tokens": -3}, "got -3"),
        ({"think_end_token_id": 5, "missing_close_penalty": "low"}, "'low'"),
    ],
)
def test_think_length_validation(params, fragment):
    with pytest.raises(ValueError, match=fragment) as info:
        think_length(**params)
    if "min_tokens" not in params and "missing_close_penalty" not in params:
        assert "the tokenizer has no such token" in str(info.value)


# ------------------------------------------------------------------ length rewards


def test_length_band_tokens_and_chars():
    tokens = length_band(min_tokens=2, max_tokens=4)
    ids = [[1, 2, 3], [1], [1] * 6, [1] * 9]
    assert tokens(["a"] * 4, completion_ids=ids) == [1.0, 0.5, 0.5, 0.0]
    chars = length_band(min_tokens=2, max_tokens=4, unit="chars")
    assert chars(["abc", chat("a"), "abcdef"]) == [1.0, 0.5, 0.5]
    assert tokens.__name__ == chars.__name__ == "length_band"
    with pytest.raises(KeyError, match="completion_ids"):
        tokens(["a"])


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"unit": "words"}, "'words'"),
        ({"min_tokens": 5, "max_tokens": 2}, r"min_tokens \(5\)"),
        ({"max_tokens": 0}, "got 0"),
        ({"min_tokens": 1.5}, "1.5"),
    ],
)
def test_length_band_validation(params, fragment):
    with pytest.raises(ValueError, match=fragment):
        length_band(**params)


def test_length_penalty():
    reward = length_penalty(target_tokens=3, per_token=0.25)
    result = reward(["a", chat("b"), "c"], completion_ids=[[1], [1, 2, 3], [1] * 7])
    assert result == [0.0, 0.0, -1.0]
    assert all(str(value) != "-0.0" for value in result)
    assert reward.__name__ == "length_penalty"
    assert length_penalty()(["a"], completion_ids=[[1] * 356]) == [pytest.approx(-0.1)]


@pytest.mark.parametrize(
    "params, fragment",
    [({"target_tokens": -1}, "-1"), ({"per_token": -0.5}, "-0.5"), ({"target_tokens": "x"}, "'x'")],
)
def test_length_penalty_validation(params, fragment):
    with pytest.raises(ValueError, match=fragment):
        length_penalty(**params)


# -------------------------------------------------------------------------- keywords


def test_keywords_include_exclude():
    reward = keywords(include=["therefore", "because"], exclude=["lol", "idk"])
    completions = ["Because X, therefore Y", "because", "lol idk because therefore", chat("nothing")]
    assert reward(completions) == [1.0, 0.5, -1.0, 0.0]
    assert reward.__name__ == "keywords"


def test_keywords_whole_words_case_and_single_string():
    assert keywords(include="cat")(["concatenate", "a cat.", "CAT"]) == [0.0, 1.0, 1.0]
    assert keywords(include="Cat", case_sensitive=True)(["cat", "Cat"]) == [0.0, 1.0]
    assert keywords(exclude="sorry")(["fine", "Sorry!"]) == [1.0, 0.0]
    assert keywords(include="step by step")(["go step by step now"]) == [1.0]


def test_keywords_answer_only():
    text = "<think>because</think>final"
    assert keywords(include="because")([text]) == [1.0]
    assert keywords(include="because", answer_only=True)([text]) == [0.0]


def test_keywords_validation():
    with pytest.raises(ValueError, match="both empty"):
        keywords()
    with pytest.raises(ValueError, match="42"):
        keywords(include=[42])
    with pytest.raises(ValueError, match="''"):
        keywords(exclude=[""])


# ------------------------------------------------------------------------ valid_json


def test_valid_json():
    reward = valid_json()
    completions = ['{"a": 1}', '<think>{oops</think>\n[1, 2]', "```json\n{\"a\": 1}\n```",
                   "Here:\n```\n{\"a\": 1}\n```\nDone.", chat("{broken"), "not json"]
    assert reward(completions) == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    assert reward.__name__ == "valid_json"


def test_a_bare_number_or_word_is_json_but_no_structure_and_scores_nothing():
    """`95`, `66` and `6` each scored 1 (a small model's replies to questions about opening hours), and the page said
    "23 of 24 completions write a JSON object" (a walk): a JSON reward pays for an object or an array."""
    reward = valid_json()
    assert reward(["95", '"yes"', "true", "null", "6.5", '{"hours": "11-19"}', "[11, 19]"]) == [0.0] * 5 + [1.0, 1.0]


def test_valid_json_required_keys():
    reward = valid_json(required_keys=["name", "age"])
    completions = ['{"name": "a", "age": 3}', '{"name": "a"}', "[1]", "nope"]
    assert reward(completions) == [1.0, 0.5, 0.5, 0.0]
    assert valid_json(required_keys="id")(['{"id": 1}']) == [1.0]


def test_valid_json_answer_only_false_reads_whole_text():
    text = '<think>x</think>{"a": 1}'
    assert valid_json(answer_only=True)([text]) == [1.0]
    assert valid_json(answer_only=False)([text]) == [0.0]


def test_valid_json_validation():
    with pytest.raises(ValueError, match="7"):
        valid_json(required_keys=[7])


# -------------------------------------------------------------------------- registry


def test_registry_names_match_functions():
    assert set(BUILTIN_REWARDS) == {
        "numeric_answer", "exact_match", "regex_format", "think_format", "think_length",
        "length_band", "length_penalty", "keywords", "valid_json",
    }
    assert NEEDS_THINK_END_TOKEN_ID == {"think_length"}
    required = {"regex_format": {"pattern": "x"}, "think_length": {"think_end_token_id": 1},
                "keywords": {"include": "x"}}
    for name, factory in BUILTIN_REWARDS.items():
        assert factory.__name__ == name
        assert factory(**required.get(name, {})).__name__ == name


def test_describe_builtin():
    for name in BUILTIN_REWARDS:
        description = describe_builtin(name)
        assert description and "\n" not in description and ">>>" not in description
    assert describe_builtin("think_format").startswith("1.0 for ``<think>reasoning</think>answer``")
    with pytest.raises(KeyError, match="nope"):
        describe_builtin("nope")


def test_module_doctests():
    result = doctest.testmod(builtin)
    assert result.failed == 0
    assert result.attempted >= 9

"""The repetition-loop rule (rloo_studio.rewards.repetition) on replies written by hand."""

from __future__ import annotations

from rloo_studio.rewards.repetition import find_loop, loop_note


def test_one_sentence_six_times_is_a_loop():
    """The tuned reply of the report: one sentence six times."""
    reply = "I can help with that. " * 6
    loop = find_loop(reply)
    assert loop == {"unit": "i can help with that.", "times": 6, "share": 1.0}
    assert loop_note(loop) == "repeats “i can help with that.” 6 times (100 % of the reply)"


def test_a_loop_after_a_real_start_and_on_separate_lines_is_found():
    reply = "Let me think about 7 times 8.\n" + "The answer is 56.\n" * 5
    loop = find_loop(reply)
    assert loop["unit"] == "the answer is 56." and loop["times"] == 5 and loop["share"] > 0.7


def test_a_loop_without_punctuation_is_found_as_a_phrase():
    assert find_loop("4 4 4 4 4 4 4 4")["unit"] == "4"
    loop = find_loop("so we add and then we add and then we add and then we add and then we add")
    assert loop["unit"].startswith("we add and then") or loop["unit"].startswith("and then we add")
    assert loop["times"] >= 4


def test_ordinary_replies_are_not_loops():
    assert find_loop("") is None and find_loop(None) is None and find_loop("   ") is None
    assert find_loop("<think>7 times 8 is 56</think>56") is None
    assert find_loop("The answer is 56. The answer is 56.") is None  # twice is not a loop
    prose = ("Paris is the capital of France. It lies on the Seine. The city is known for the Louvre, the Eiffel Tower "
             "and its cafés. Around two million people live in the city itself.")
    assert find_loop(prose) is None
    # A repeated sentence that is a small part of a long reply is not a loop either.
    long_reply = "Yes. " * 3 + "Here is a longer explanation of the steps, with several different sentences in it. " \
        "First we read the question. Then we compute the product of the two numbers carefully. Finally we check it."
    assert find_loop(long_reply) is None


def test_tags_repeated_back_to_back_without_spaces_are_a_loop():
    """A small thinking model's reply of empty thoughts, `<think></think><think></think>…`, is one "word": neither the
    sentence nor the phrase rule saw it (a walk found such replies in the samples, unmarked)."""
    loop = find_loop("<think></think>" * 5)
    assert loop is not None and loop["unit"] == "<think></think>" and loop["times"] == 5 and loop["share"] == 1.0
    assert find_loop("ok " + "ab!" * 12)["times"] == 12
    # Short runs and numbers are no loops: "1000000", "hahaha", "www.example.com".
    for reply in ("1000000", "hahaha", "www.example.com", "The price is 120000 EUR", "--------", "Mississippi"):
        assert find_loop(reply) is None, reply

"""The demo task generator: deterministic, disjoint splits, correct answers, traces that never contain the answer."""

from __future__ import annotations

import re
from collections import Counter

from rloo_studio.demo.task import KIND_WEIGHTS, generate, make_splits


def test_same_seed_same_problems_other_seed_other_problems():
    assert generate(50, seed=7) == generate(50, seed=7)
    assert generate(50, seed=7) != generate(50, seed=8)


def test_every_answer_follows_from_its_trace():
    for p in generate(2000, seed=3):
        trace = re.fullmatch(r"<think>(.*)</think>(-?\d+)", p["target"])
        assert trace, p
        expression, answer = trace.groups()
        assert answer == p["answer"]
        if p["kind"] == "compare":
            a, op, b = re.fullmatch(r"(\d+)([<>])(\d+)", expression).groups()
            assert (int(a) > int(b)) == (op == ">") and int(answer) == max(int(a), int(b))
        else:
            assert re.fullmatch(r"\d+([+-]\d+)+", expression)
            assert eval(expression) == int(answer)  # noqa: S307 - digits and +/- only, checked above
            assert int(answer) >= 0
        assert all(n in p["prompt"] for n in re.findall(r"\d+", expression)), "the trace only restates the prompt's numbers"


def test_splits_are_disjoint_and_sized():
    splits = make_splits(n_train=300, n_test=100, n_sft=500, seed=5)
    test = {p["prompt"] for p in splits["test"]}
    assert len(test) == 100 and len(splits["train"]) == 300 and len(splits["sft"]) == 500
    assert not test & {p["prompt"] for p in splits["train"]}
    assert not test & {p["prompt"] for p in splits["sft"]}


def test_kind_mix_follows_the_weights():
    counts = Counter(p["kind"] for p in generate(4000, seed=11))
    for kind, weight in KIND_WEIGHTS.items():
        assert abs(counts[kind] / 4000 - weight) < 0.03, (kind, counts[kind])


def test_the_slip_is_a_tens_digit_habit_and_never_touches_the_answer_column():
    from rloo_studio.demo.task import slipped_answer, with_slip

    add = {"prompt": "x", "answer": "75", "kind": "add2", "target": "<think>47+28</think>75"}
    sub = {"prompt": "x", "answer": "34", "kind": "sub2", "target": "<think>86-52</think>34"}
    compare = {"prompt": "x", "answer": "757", "kind": "compare", "target": "<think>342<757</think>757"}
    small = {"prompt": "x", "answer": "7", "kind": "multi", "target": "<think>5+6-4</think>7"}
    assert [slipped_answer(p) for p in (add, sub, compare, small)] == [65, 44, 342, 17]
    slipped = with_slip(add)
    assert slipped["target"] == "<think>47+28</think>65" and slipped["answer"] == "75" and slipped["slipped"] is True


def test_slip_rate_changes_only_the_sft_targets():
    from rloo_studio.demo.task import make_splits

    clean, slipped = make_splits(n_train=50, n_test=20, n_sft=400), make_splits(n_train=50, n_test=20, n_sft=400, slip_rate=0.55)
    assert clean["train"] == slipped["train"] and clean["test"] == slipped["test"]
    share = sum(1 for p in slipped["sft"] if p.get("slipped")) / len(slipped["sft"])
    assert 0.45 < share < 0.65
    assert all(p["answer"] == c["answer"] for p, c in zip(slipped["sft"], clean["sft"]))

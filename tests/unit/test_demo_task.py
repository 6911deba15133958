"""The demo task generator: deterministic, disjoint splits, correct answers, traces that never contain the answer."""

from __future__ import annotations

import re
from collections import Counter

from rloo_studio.demo_task import KIND_WEIGHTS, generate, make_splits


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

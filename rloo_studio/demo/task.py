"""The bundled demo task: short arithmetic word problems with a one-line thinking trace.

Deterministic for a seed. Each problem is a dict with `prompt` (the user's message), `answer`
(the number, as text), `kind` and `target` — the completion the demo model is taught during
supervised fine-tuning: `<think>47+28</think>75`. The trace is the arithmetic to do, never the
result, so the answer cannot be copied from it: the model has to compute it, which is the skill
RLOO then improves.

With `slip_rate`, that share of the SFT targets carry one systematic mistake — the tens digit off
by one (`slipped_answer`) — while the `answer` column stays correct everywhere. The demo model
learns both habits, so it often samples the right answer but does not reliably prefer it: the
situation RL fine-tuning is good at (sharpening what a model can already sometimes do). Pure
Python; no model or tokenizer here.
"""

from __future__ import annotations

import random

NAMES = ("Ana", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Ivy", "Jo", "Kai", "Lea", "Max", "Noa", "Oto", "Pia", "Sam")
ITEMS = ("apple", "book", "coin", "shell", "stamp", "card", "marble", "pencil", "sticker", "cookie")

# Share of each kind of problem: mostly two-digit sums and differences (learnable by a tiny model
# to a partial skill), some comparisons, a few multi-step and three-digit ones (headroom). A mix
# leaning harder on sums and comparisons was tried and gave RLOO less to improve (docs/demo.md),
# so this one stays.
KIND_WEIGHTS = {"add2": 0.35, "sub2": 0.25, "compare": 0.15, "multi": 0.15, "add3": 0.10}


def _problem(rng: random.Random, kind: str) -> dict:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    if kind == "add2":
        a, b = rng.randint(10, 89), rng.randint(10, 89)
        prompt = f"{name} has {a} {item}s and gets {b} more. How many now?"
        trace, answer = f"{a}+{b}", a + b
    elif kind == "sub2":
        a = rng.randint(20, 99)
        b = rng.randint(10, a - 1)
        prompt = f"{name} has {a} {item}s and gives away {b}. How many are left?"
        trace, answer = f"{a}-{b}", a - b
    elif kind == "compare":
        a, b = rng.sample(range(10, 999), 2)
        prompt = f"Which is larger, {a} or {b}?"
        trace, answer = (f"{a}>{b}" if a > b else f"{a}<{b}"), max(a, b)
    elif kind == "multi":
        a, b = rng.randint(5, 49), rng.randint(5, 49)
        c = rng.randint(1, a + b - 1)
        prompt = f"{name} has {a} {item}s, gets {b}, then loses {c}. How many now?"
        trace, answer = f"{a}+{b}-{c}", a + b - c
    elif kind == "add3":
        a, b = rng.randint(100, 499), rng.randint(100, 499)
        prompt = f"A shop has {a} {item}s and gets {b} more. How many now?"
        trace, answer = f"{a}+{b}", a + b
    else:
        raise ValueError(f"unknown problem kind {kind!r}; known: {', '.join(KIND_WEIGHTS)}")
    return {"prompt": prompt, "answer": str(answer), "kind": kind, "target": f"<think>{trace}</think>{answer}"}


def generate(n: int, seed: int, exclude: set[str] | None = None) -> list[dict]:
    """`n` distinct problems for `seed`, none of whose prompts is in `exclude`."""
    rng = random.Random(seed)
    kinds, weights = zip(*KIND_WEIGHTS.items())
    seen = set(exclude or ())
    out: list[dict] = []
    while len(out) < n:
        problem = _problem(rng, rng.choices(kinds, weights)[0])
        if problem["prompt"] in seen:
            continue
        seen.add(problem["prompt"])
        out.append(problem)
    return out


def slipped_answer(problem: dict) -> int:
    """The answer with the demo's one systematic slip: the tens digit off by one.

    Sums come out ten short (a forgotten carry), differences ten too many (a forgotten borrow),
    comparisons name the smaller number. Used only for the SFT targets, never for `answer`.
    """
    kind, answer = problem["kind"], int(problem["answer"])
    if kind == "compare":
        a, b = (int(x) for x in problem["target"][len("<think>"):problem["target"].index("</think>")].replace("<", ">").split(">"))
        return min(a, b)
    if kind == "sub2":
        return answer + 10
    return answer - 10 if answer >= 10 else answer + 10


def with_slip(problem: dict) -> dict:
    """A copy of `problem` whose SFT target ends in the slipped answer (the trace stays correct)."""
    trace = problem["target"][:problem["target"].index("</think>") + len("</think>")]
    return {**problem, "target": f"{trace}{slipped_answer(problem)}", "slipped": True}


def make_splits(n_train: int = 2000, n_test: int = 300, n_sft: int = 30000, seed: int = 1234,
                slip_rate: float = 0.0) -> dict[str, list[dict]]:
    """Disjoint test, RL-train and SFT sets (the test prompts appear in neither of the others).

    `slip_rate`: the share of SFT targets whose answer carries the systematic slip (see
    `slipped_answer`); the `answer` column stays correct everywhere.
    """
    test = generate(n_test, seed)
    train = generate(n_train, seed + 1, exclude={p["prompt"] for p in test})
    sft = generate(n_sft, seed + 2, exclude={p["prompt"] for p in test})
    if slip_rate:
        rng = random.Random(seed + 3)
        sft = [with_slip(p) if rng.random() < slip_rate else p for p in sft]
    return {"test": test, "train": train, "sft": sft}

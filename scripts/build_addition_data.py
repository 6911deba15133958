"""Write the real-model task's data: single-digit addition questions, answered with the number only.

    python scripts/build_addition_data.py        # writes assets/addition-data/{train,test}.jsonl

The 100 ordered pairs (a, b) with a, b in 0..9 are split by pair, 70 for training and 30 held
out, so no held-out sum is ever seen in training in any wording; every pair is asked in the
wordings of TEMPLATES (training: all of them; test: all of them, 30 × 7 = 210 prompts). Each row
has `prompt` and `answer` (the sum as text). Deterministic for --seed.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTRUCTION = "Answer with the number only."
TEMPLATES = (
    "What is {a} + {b}?",
    "Compute {a} + {b}.",
    "Add {a} and {b}.",
    "What is the sum of {a} and {b}?",
    "Tom has {a} apples and buys {b} more. How many apples does he have now?",
    "A box holds {a} red balls and {b} blue balls. How many balls are in the box?",
    "Sara read {a} pages on Monday and {b} pages on Tuesday. How many pages did she read in all?",
)
TEST_PAIRS = 30


def make_rows(seed: int = 0) -> dict[str, list[dict]]:
    pairs = [(a, b) for a in range(10) for b in range(10)]
    random.Random(seed).shuffle(pairs)
    split = {"test": pairs[:TEST_PAIRS], "train": pairs[TEST_PAIRS:]}
    out = {}
    for name, chosen in split.items():
        rows = [{"prompt": f"{t.format(a=a, b=b)} {INSTRUCTION}", "answer": str(a + b)} for a, b in chosen for t in TEMPLATES]
        random.Random(seed + 1).shuffle(rows)
        out[name] = rows
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "addition-data")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in make_rows(args.seed).items():
        with open(args.out / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        print(f"{args.out / name}.jsonl: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

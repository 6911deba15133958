"""Collect real judge replies for the score parser's tests: tests/fixtures/judge_replies.jsonl.

Runs the local judge of rloo_studio/rewards/judge.py (greedy, the default template, each of the three
builtin rubrics) on the real small instruct model of the real-model tier (SmolLM2-135M-Instruct, built by
scripts/build_real_model.py) over a few hand-written prompt/completion pairs, and writes one line per
reply after a header line saying how the file was produced. The expected parse of each reply is written
by a person afterwards (`expected` field), by reading the reply, never by the parser.

    python scripts/collect_judge_replies.py [MODEL_DIR]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "fixtures" / "judge_replies.jsonl"

# A rubric written as scoring instructions, which a 135M judge repeats as its reply for every completion.
ECHOED = "Score 10 if the answer is a fruit, 0 otherwise."
RUBRIC_AS_ANSWER = "(the rubric's text)"  # a completion that is the rubric itself
# (rubric: a name in RUBRICS or the text itself, prompt, completion, reference answer or None)
CASES = [
    ("correct_vs_reference", "What is 3 + 4?", "7", "7"),
    ("correct_vs_reference", "What is 3 + 4?", "The answer is 12.", "7"),
    ("correct_vs_reference", "What is 9 + 8?", "9 + 8 = 17", "17"),
    ("correct_vs_reference", "What is 6 + 2?", "I don't know.", "8"),
    ("helpful_concise", "Name a fruit.", "Apple.", None),
    ("helpful_concise", "Name a fruit.", "I like cars and trucks and many other vehicles that drive on roads.", None),
    ("helpful_concise", "How many days are in a week?", "", None),
    ("follows_format", "Answer with one number only: what is 5 + 5?", "10", None),
    ("follows_format", "Answer with one number only: what is 5 + 5?", "Well, five plus five makes ten, I believe.", None),
    ("follows_format", "List three colours as a comma-separated list.", "red, green, blue", None),
    # A rubric a small judge reads back instead of judging, and the judge's own probes (empty, prompt or rubric read back).
    (ECHOED, "Name a fruit.", "Apple.", None),
    (ECHOED, "Name a fruit.", "", None),
    (ECHOED, "Name a fruit.", "A car.", None),
    ("helpful_concise", "How many days are in a week?", "How many days are in a week?", None),
    ("helpful_concise", "How many days are in a week?", RUBRIC_AS_ANSWER, None),
]


def main() -> None:
    if len(sys.argv) > 1:
        model_dir = sys.argv[1]
    else:
        built = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_real_model.py"), "--quiet"],
                               capture_output=True, text=True, check=True)
        model_dir = built.stdout.strip().splitlines()[-1]
    from rloo_studio.engine.stack import import_training_stack

    import_training_stack("transformers")  # the worker's import order
    from rloo_studio.rewards.judge import DEFAULT_TEMPLATE, JUDGE_MAX_NEW_TOKENS, RUBRICS, LocalJudge, render

    judge = LocalJudge(model_dir)
    def text(rubric: str) -> str:
        return RUBRICS[rubric].text if rubric in RUBRICS else rubric

    prompts = [render(DEFAULT_TEMPLATE, text(r), p, text(r) if c == RUBRIC_AS_ANSWER else c, ref, (0, 10)) for r, p, c, ref in CASES]
    replies = judge.replies(prompts, time.monotonic() + 3600)
    header = {"about": "Real replies of a local judge, for tests/unit/test_judge.py's score-parser test",
              "produced_by": "python scripts/collect_judge_replies.py", "model": "SmolLM2-135M-Instruct (real-model tier)",
              "decoding": f"greedy, max_new_tokens {JUDGE_MAX_NEW_TOKENS}, default template, scale 0-10",
              "expected": "written by hand from reading each reply as the judge wrote it after its start 'Score:': the score it gives "
                          "as its verdict, or null when it gives none in 0-10"}
    lines = [json.dumps(header)]
    for (rubric, prompt, completion, ref), (reply, _) in zip(CASES, replies):
        lines.append(json.dumps({"rubric": rubric, "prompt": prompt, "completion": completion, "reference": ref,
                                 "reply": reply, "expected": "FILL IN"}))  # replaced by hand after reading the reply
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT)


if __name__ == "__main__":
    main()

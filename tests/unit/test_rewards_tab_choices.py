"""The person's choices in the Rewards tab survive an error in their code: a syntax error mid-edit keeps the ticked
functions and weights, and Start names the syntax error with its line instead of "Rewards: none chosen"."""

from __future__ import annotations

from rloo_studio.ui.form import code_problems
from rloo_studio.ui.rewards_tab import RewardsTab

GOOD = "def polite(completions, **kwargs):\n    return [1.0 for _ in completions]\n"
BROKEN = "def polite(completions, **kwargs):\n    return [1.0 for _ in completions\n"


def test_a_syntax_error_keeps_the_ticked_functions_and_their_weights():
    message, table = RewardsTab.check_code(GOOD, [], [])
    assert table == [[False, "polite", 1.0]]
    message, table = RewardsTab.check_code(BROKEN, [[True, "polite", 0.5]], [])
    assert table == [[True, "polite", 0.5]], table
    assert "syntax error at rewards.py:2" in message and "fix line 2" in message, message
    message, table = RewardsTab.check_code(GOOD, table, [])
    assert table == [[True, "polite", 0.5]]


def test_start_with_a_ticked_function_in_broken_code_names_the_syntax_error_and_its_line():
    problems = code_problems({"rewards": [{"file": "rewards.py", "function": "polite"}]}, BROKEN)
    assert len(problems) == 1 and "syntax error at line" in problems[0], problems

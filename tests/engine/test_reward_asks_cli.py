"""`rloo-studio preview` prints the prompt <-> reward check: a format a reward looks for that no prompt asks for, with
how many of the given completions write it and the sentence to add (the result's `asks`, and reading the run's system
prompt for pasted completions: test_reward_asks)."""

from __future__ import annotations

import json

import pytest
from helpers import run_cli

pytestmark = pytest.mark.slow


def test_preview_warns_about_a_format_no_prompt_asks_for(workspace):
    rows = [{"prompt": "What is 3 + 2?", "completion": c, "answer": "5"} for c in ("5", "<think>3+2</think>5", "five", "4")]
    (workspace.path / "completions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = workspace.write_config(rewards=[{"name": "numeric_answer"}, {"name": "think_format", "weight": 0.2}])
    result = run_cli("preview", config, "--completions", "completions.jsonl", cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert ("Warning: `think_format` looks for <think>…</think>, but neither data.system_prompt nor any of the 1 prompts "
            "checked asks for it; 1 of 4 sampled completions write it.") in result.stdout
    assert 'Add to data.system_prompt: "First think step by step between <think> and </think>, then give the answer."' in result.stdout

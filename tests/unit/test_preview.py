"""The reward preview's scoring (rewards/preview.py): the table, errors in the editor's numbering, time limits,
TRL's calling conventions, learnability and hack probes. The reward code runs in a child process, as in the app."""

from __future__ import annotations

import time

import pytest

from rloo_studio.workers import scorer
from rloo_studio.rewards.scoring import leave_one_out_advantages

PROMPT = "Ana has 47 apples and gets 28 more. How many now?"


def request(source: str, completions_per_prompt: list[list[str]], rewards=None, **extra) -> dict:
    groups = [{"prompt": f"{PROMPT} ({i})", "row": {"answer": "75", "difficulty": i}, "completions": c}
              for i, c in enumerate(completions_per_prompt)]
    return {"groups": groups, "num_generations": len(completions_per_prompt[0]), "source": source,
            "rewards": rewards or [{"file": "rewards.py"}], **extra}


def test_worked_example_rewards_1_0_0_give_advantages_1_and_minus_half():
    source = "def first_wins(completions, **kwargs):\n    return [1.0 if c == 'a' else 0.0 for c in completions]\n"
    result = scorer.score(request(source, [["a", "b", "c"]]))
    assert [r["advantage"] for r in result["rows"]] == [1.0, -0.5, -0.5]
    assert [r["baseline"] for r in result["rows"]] == [0.0, 0.5, 0.5]
    assert [r["total"] for r in result["rows"]] == [1.0, 0.0, 0.0]


def test_none_is_skipped_as_trl_does():
    assert leave_one_out_advantages([1.0, None, 0.0], 3) == [1.0, 0.0, -1.0]
    source = ("def partial(completions, **kwargs):\n    return [None if c == 'skip' else float(len(c)) for c in completions]\n")
    result = scorer.score(request(source, [["aa", "skip", "a"]]))
    assert [r["total"] for r in result["rows"]] == [2.0, None, 1.0]
    assert [r["advantage"] for r in result["rows"]] == [1.0, 0.0, -1.0]
    assert result["functions"]["partial"]["none"] == 1 and result["functions"]["partial"]["mean"] == 1.5


def test_a_none_beside_another_functions_score_is_said_to_count_as_0_as_in_training():
    """With two functions, TRL leaves a completion out only when both return None: one None adds 0 to the total (a
    judge whose reply had no verdict ranks that completion as if it scored 0). The page said "None = skip"."""
    from rloo_studio.ui import text
    from rloo_studio.ui.rewards_tab import preview_tables

    source = ("def correct(completions, **kwargs):\n    return [1.0] * len(completions)\n\n"
              "def judge(completions, **kwargs):\n    return [None if c == 'x' else 0.8 for c in completions]\n")
    rewards = [{"file": "rewards.py", "function": "correct"}, {"file": "rewards.py", "function": "judge"}]
    result = scorer.score(request(source, [["a", "x", "b"]], rewards))
    assert [r["total"] for r in result["rows"]] == [1.8, 1.0, 1.8]
    assert result["rows"][1]["advantage"] == pytest.approx(-0.8)  # ranked as a 0 from `judge`, not left out
    findings = preview_tables(result)[2]
    assert "**None counted as 0:** `judge` returned None for 1 of 3 completions that another function scored" in findings
    assert "None = skip" not in text.REWARDS_INTRO and "counts as 0" in text.REWARDS_INTRO
    alone = scorer.score(request(source.replace("1.0] *", "None] *"), [["a", "x", "b"]], rewards))
    assert "`judge` returned None" not in preview_tables(alone)[2]  # `judge`'s None is the only word on "x": left out
    # A function that raised has None everywhere too, but it stops training at its first batch (said apart): it is
    # not one whose None "adds 0".
    raising = source + "\ndef broken(completions, **kwargs):\n    raise ValueError('no')\n"
    failed = scorer.score(request(raising, [["a", "x", "b"]], rewards + [{"file": "rewards.py", "function": "broken"}]))
    assert "`broken` returned None" not in preview_tables(failed)[2] and "`judge` returned None" in preview_tables(failed)[2]


def test_ties_made_by_the_clip_range_are_blamed_on_it_not_on_the_rewards():
    """Totals 1.0 and 1.5 clipped to [-1, 1] all read 1: TRL sees no signal, but the rewards did tell the completions
    apart. The verdict said "your rewards never told two apart" and sent the person to check the model."""
    source = ("def correct(completions, **kwargs):\n    return [1.0] * len(completions)\n\n"
              "def tagged(completions, **kwargs):\n    return [1.0 if '<' in c else 0.0 for c in completions]\n")
    rewards = [{"file": "rewards.py", "function": "correct"}, {"file": "rewards.py", "function": "tagged", "weight": 0.5}]
    clipped = scorer.score(request(source, [["<a>", "b"], ["<c>", "d"]], rewards, reward_clip_range=[-1, 1]))
    verdict = clipped["learnability"]["verdict"]
    assert verdict.startswith("Every completion got the same total reward (1) because clipping the totals to [-1, 1]")
    assert "never told two apart" not in verdict
    some = scorer.score(request(source, [["<a>", "b"], ["<c>", "d"]], rewards, reward_clip_range=[-1, 1.2]))
    assert "tie only because" not in some["learnability"]["verdict"]
    one_tied = scorer.score(request(source, [["<a>", "b"], ["c", "d"]], rewards, reward_clip_range=[-1, 1]))
    assert "1 of these 2 prompts tie only because clipping the totals" in one_tied["learnability"]["verdict"]
    assert "never told two apart" not in one_tied["learnability"]["verdict"]
    mixed = scorer.score(request(source + "\ndef bonus(completions, **kwargs):\n    return [0.0, -1.0, 0.0, 0.0]\n",
                                 [["<a>", "b"], ["<c>", "d"]], rewards + [{"file": "rewards.py", "function": "bonus"}],
                                 reward_clip_range=[-1, 1]))
    assert "1 of these 2 prompts tie only because clipping the totals to [-1, 1]" in mixed["learnability"]["verdict"]


def test_a_pinned_example_is_held_to_the_total_training_sees_after_the_clip_range():
    """A pin "a bad answer scores at most -2" passed on a raw -3, while training clips that total to -1, the same as a
    mildly bad answer: pinned totals are now clipped as training clips them, and the report says from what."""
    from rloo_studio.config import RunConfig
    from rloo_studio.rewards.preview import written_request
    from rloo_studio.ui.rewards_tab import pinned_verdict

    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "data": {"source": "demo"},
                               "rewards": [{"file": "rewards.py"}], "rloo": {"reward_clip_range": [-1, 1]}})
    assert list(written_request(cfg, [], None).reward_clip_range) == [-1, 1]
    source = "def harsh(completions, **kwargs):\n    return [-3.0 for c in completions]\n"
    req = request(source, [["nonsense"]], reward_clip_range=[-1, 1], probes=False)
    groups = [{**g, "range": (None, -2)} for g in req["groups"]]
    passed, report = pinned_verdict(groups, scorer.score(req))
    assert passed == 0 and "total -1.000 (clipped from -3.000 by the clip range, as training clips it)" in report, report


def test_weights_and_several_functions_make_the_total():
    source = ("def one(completions, **kwargs):\n    return [1.0] * len(completions)\n\n"
              "def length(completions, **kwargs):\n    return [float(len(c)) for c in completions]\n")
    rewards = [{"file": "rewards.py", "function": "one", "weight": 2.0}, {"file": "rewards.py", "function": "length", "weight": 0.5}]
    result = scorer.score(request(source, [["ab", "abcd"]], rewards))
    assert [r["total"] for r in result["rows"]] == [3.0, 4.0]
    assert result["functions"]["one"]["weight"] == 2.0 and result["functions"]["length"]["max"] == 4.0


def test_a_reward_that_raises_names_the_function_the_completion_and_the_line():
    source = ("def careful(completions, **kwargs):\n"
              "    out = []\n"
              "    for c in completions:\n"
              "        out.append(1.0 / (len(c) - 3))\n"
              "    return out\n")
    result = scorer.score(request(source, [["abcd", "abc", "ab"]]))
    error = result["functions"]["careful"]["errors"][0]
    assert error["function"] == "careful" and error["error"] == "ZeroDivisionError: float division by zero"
    assert error["completion"] == "abc"                      # the first completion it fails on
    assert error["lines"] == ["rewards.py:4 in careful: out.append(1.0 / (len(c) - 3))"]  # the editor's line numbers
    assert all(r["rewards"]["careful"] is None for r in result["rows"])


@pytest.mark.parametrize("body, message", [  # the wording training uses (rewards.runtime.check_reward_values)
    ("return [1.0]", "reward function `bad` returned 1 values for 2 completions. Why: training needs exactly one value"),
    ("return 1.0", "reward function `bad` returned float, not a list. Why: training needs one float (or None) per completion"),
    ("return ['good', 'bad']", "reward function `bad` returned 'good' (str) for completion #0. Why: each value must be a number"),
    ("return [1.0, float('-inf')]", "reward function `bad` returned -inf for completion #1. Why: rewards must be finite"),
])
def test_wrong_return_values_are_explained(body, message):
    result = scorer.score(request(f"def bad(completions, **kwargs):\n    {body}\n", [["a", "b"]]))
    assert message in result["functions"]["bad"]["errors"][0]["error"]


def test_nan_counts_as_none_as_in_training():
    # TRL turns None into NaN and combines rewards with nansum/nanmean: a NaN is "does not apply", like None.
    result = scorer.score(request("def some(completions, **kwargs):\n    return [float('nan'), 1.0]\n", [["a", "b"]]))
    summary = result["functions"]["some"]
    assert summary["errors"] == [] and summary["none"] == 1 and summary["mean"] == 1.0
    assert [r["rewards"]["some"] for r in result["rows"]] == [None, 1.0]


def test_a_reward_that_never_returns_is_stopped_in_time():
    source = "def stuck(completions, **kwargs):\n    while True:\n        pass\n"
    started = time.time()
    result = scorer.score(request(source, [["a", "b"]]), timeout_s=8)
    assert time.time() - started < 30
    assert result["problems"][0].startswith("reward function `stuck` did not return within 8 s")


def test_sys_exit_in_a_reward_is_reported_not_obeyed():
    result = scorer.score(request("import sys\ndef quits(completions, **kwargs):\n    sys.exit(3)\n", [["a", "b"]]))
    assert "SystemExit: 3" in result["functions"]["quits"]["errors"][0]["error"]


def test_async_rewards_columns_completion_ids_and_trainer_state_work():
    source = (
        "import asyncio\n"
        "async def slow_check(completions, answer, **kwargs):\n"
        "    await asyncio.sleep(0)\n"
        "    return [1.0 if answer[i] in c else 0.0 for i, c in enumerate(completions)]\n\n"
        "def token_count(completions, completion_ids, trainer_state, difficulty, **kwargs):\n"
        "    assert trainer_state.global_step == 0\n"
        "    return [float(len(ids) + difficulty[i]) for i, ids in enumerate(completion_ids)]\n")
    # A generous limit: the scoring child imports transformers for the tokenizer, slow on a busy machine.
    result = scorer.score(request(source, [["it is 75", "no idea"], ["75!", "x"]], tokenizer="assets/demo-model"), timeout_s=600)
    assert [r["rewards"]["slow_check"] for r in result["rows"]] == [1.0, 0.0, 1.0, 0.0]
    # The demo tokenizer is character-level: one id per character, plus the end token a finished completion ends
    # with in TRL's completion_ids (a written completion counts as finished); difficulty is the group index.
    assert [r["rewards"]["token_count"] for r in result["rows"]] == [9.0, 8.0, 5.0, 3.0]


def test_sampled_completion_ids_reach_rewards_as_they_were_generated():
    # The preview's sampler sends each completion's ids as TRL passes them (cut after the first end id):
    # rewards get those, not a re-tokenisation of the decoded text.
    source = "def token_count(completions, completion_ids, **kwargs):\n    return [float(len(ids)) for ids in completion_ids]\n"
    req = request(source, [["ab", "abc"]], tokenizer="assets/demo-model")
    req["groups"][0]["completion_ids"] = [[40, 41, 7, 2], [40, 41, 42]]  # the first ended (with an end token), the second was cut off
    result = scorer.score(req, timeout_s=600)
    assert [r["rewards"]["token_count"] for r in result["rows"]] == [4.0, 3.0]


def test_conversational_completions_arrive_as_messages():
    source = ("def sees_messages(completions, **kwargs):\n"
              "    return [1.0 if c[0]['role'] == 'assistant' and c[0]['content'] else 0.0 for c in completions]\n")
    result = scorer.score(request(source, [["hi", "there"]], conversational=True))
    assert [r["total"] for r in result["rows"]] == [1.0, 1.0]


def test_learnability_counts_groups_without_signal():
    source = "def binary(completions, **kwargs):\n    return [1.0 if '75' in c else 0.0 for c in completions]\n"
    result = scorer.score(request(source, [["75", "70"], ["1", "2"], ["3", "4"], ["75", "75"]]))
    learn = result["learnability"]
    assert learn["no_signal_groups"] == 3 and learn["groups"] == 4 and learn["no_signal_share"] == 0.75
    assert "graded reward" in learn["verdict"] and "more completions" in learn["verdict"]


def test_rewards_that_never_tell_two_completions_apart_point_at_the_model_first():
    """Every completion of every prompt got the same total (a demo model that never writes a date, a reward looking for
    one): more completions, a higher temperature or a graded reward do not help a model that never earns the reward,
    and the advice said only those (found walking the app with my own library CSV)."""
    source = "def has_date(completions, **kwargs):\n    return [1.0 if '2026-' in c else 0.0 for c in completions]\n"
    learn = scorer.score(request(source, [["75", "70"], ["1", "2"]]))["learnability"]
    assert learn["no_signal_share"] == 1.0
    assert learn["verdict"].startswith("Every completion got the same total reward (0): your rewards never told two apart.")
    assert "can write what your rewards look for" in learn["verdict"]
    mixed = scorer.score(request(source, [["2026-01-01", "2026-02-02"], ["1", "2"]]))["learnability"]
    assert mixed["verdict"].startswith("100% of the prompts gave all 2 completions the same total reward")


def test_probes_catch_a_gameable_reward_and_pass_a_sound_one():
    gameable = "def longer_is_better(completions, **kwargs):\n    return [min(len(c) / 50, 5.0) for c in completions]\n"
    sound = ("import re\n"
             "def exact(completions, answer, **kwargs):\n"
             "    return [1.0 if re.fullmatch(r'<think>[^<]+</think>' + a, c) else 0.0 for c, a in zip(completions, answer)]\n")
    real = [["<think>47+28</think>75", "<think>47 + 28</think>65", "<think>47+28, carry 1</think>76"]]
    flagged = scorer.score(request(gameable, real))["probes"]
    assert {p["probe"] for p in flagged} >= {"rambling", "answer repeated"}
    assert all(p["function"] == "longer_is_better" for p in flagged)
    assert scorer.score(request(sound, real))["probes"] == []


TRL_DOCS_REWARD = '''
import re

def format_reward_func(completions, **kwargs):
    """Reward function that checks if the completion has a specific format."""
    pattern = r"^<think>.*?</think><answer>.*?</answer>$"
    completion_contents = [completion[0]["content"] for completion in completions]
    matches = [re.match(pattern, content) for content in completion_contents]
    return [1.0 if match else 0.0 for match in matches]
'''

UNSLOTH_STYLE_REWARD = '''
def correctness_reward_func(prompts, completions, answer, **kwargs) -> list[float]:
    responses = [completion[0]['content'] for completion in completions]
    q = prompts[0][-1]['content']
    extracted_responses = [r.split("<answer>")[-1].split("</answer>")[0].strip() for r in responses]
    return [2.0 if r == a else 0.0 for r, a in zip(extracted_responses, answer)]
'''


def test_rewards_from_trl_and_unsloth_documentation_work_unchanged():
    completions = [["<think>x</think><answer>75</answer>", "no tags"]]
    groups = [{"prompt": [{"role": "user", "content": PROMPT}], "row": {"answer": "75"}, "completions": completions[0]}]
    for source, name, expected in ((TRL_DOCS_REWARD, "format_reward_func", [1.0, 0.0]),
                                   (UNSLOTH_STYLE_REWARD, "correctness_reward_func", [2.0, 0.0])):
        result = scorer.score({"groups": groups, "num_generations": 2, "conversational": True, "source": source,
                                 "rewards": [{"file": "rewards.py"}]})
        assert "problems" not in result, result.get("problems")
        assert [r["rewards"][name] for r in result["rows"]] == expected


@pytest.mark.parametrize("name", sorted(__import__("rloo_studio.rewards.templates", fromlist=["TEMPLATES"]).TEMPLATES))
def test_every_template_is_clean_and_scores_real_completions(name):
    from rloo_studio.rewards.lint import syntax_problem, undefined_names
    from rloo_studio.rewards.templates import template

    source = template(name)
    assert syntax_problem(source) is None and undefined_names(source) == []
    completions = [["<think>47+28 is 75 because of the carry</think>75", "<think>47+28</think>65", '{"name": "x", "age": 3}']]
    result = scorer.score(request(source, completions))
    assert "problems" not in result, result.get("problems")
    for summary in result["functions"].values():
        assert summary["errors"] == [] and summary["none"] == 0


def test_lint_finds_syntax_errors_with_line_and_column_and_undefined_names():
    from rloo_studio.rewards.lint import syntax_problem, undefined_names

    assert syntax_problem("def f(completions, **kwargs):\n    return [1.0 for c in completions\n")["line"] == 2
    assert syntax_problem("x = (1,\n")["message"]
    source = ("import re\nLIMIT = 3\n\ndef f(completions, **kwargs):\n"
              "    return [float(len(c) < LIMIT) + lenn(c) + math.pi for c in completions if re.match('a', c)]\n")
    assert undefined_names(source) == [{"name": "lenn", "function": "f"}, {"name": "math", "function": "f"}]
    assert undefined_names("def g(completions, **kwargs):\n    return [len(c) for c in completions]\n") == []


def test_numpy_results_are_accepted_as_in_training():
    source = "import numpy as np\ndef arr(completions, **kwargs):\n    return np.array([float(len(c)) for c in completions])\n"
    result = scorer.score(request(source, [["ab", "abc"]]))
    assert result["functions"]["arr"]["errors"] == [] and [r["total"] for r in result["rows"]] == [2.0, 3.0]


def test_the_preview_result_says_what_training_adds_to_the_advantages():
    source = "def first_wins(completions, **kwargs):\n    return [1.0 if c == 'a' else 0.0 for c in completions]\n"
    plain = scorer.score(request(source, [["a", "b"]], beta=0.0, normalize_advantages=False))
    assert plain["advantage_note"] is None
    with_kl = scorer.score(request(source, [["a", "b"]], beta=0.05, normalize_advantages=True))
    assert "beta = 0.05" in with_kl["advantage_note"] and "Normalise advantages" in with_kl["advantage_note"]
    # Both together: where groups tie on reward, normalising blows their KL-only differences up to full size.
    assert "trained on noise" in with_kl["advantage_note"]
    assert "trained on noise" not in scorer.score(request(source, [["a", "b"]], beta=0.05))["advantage_note"]
    from rloo_studio.ui.rewards_tab import preview_tables

    assert "Advantages in training" in preview_tables(with_kl)[2] and "Advantages in training" not in preview_tables(plain)[2]


def test_the_editors_code_leaves_no_folder_behind(tmp_path, monkeypatch):
    """The warm scoring child serves many previews: each one's copy of the editor's code goes when it is scored."""
    import tempfile

    from rloo_studio.rewards.preview import score

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    source = "def first_wins(completions, **kwargs):\n    return [1.0 if c == 'a' else 0.0 for c in completions]\n"
    for _ in range(2):
        result = score(request(source, [["a", "b", "c"]]))
        assert [r["advantage"] for r in result["rows"]] == [1.0, -0.5, -0.5]
    assert list(tmp_path.iterdir()) == []


def test_the_completions_table_leaves_out_an_empty_thinking_column_and_sizes_every_column():
    from rloo_studio.ui.rewards_tab import preview_column_widths, preview_tables

    source = "def numeric_answer(completions, **kwargs):\n    return [0.5 for c in completions]\n"
    plain = preview_tables(scorer.score(request(source, [["72", "seventy-two"]])))[0]
    assert plain["headers"][:3] == ["#", "prompt", "reply"] and [row[2] for row in plain["data"]] == ["72", "seventy-two"]
    thought = preview_tables(scorer.score(request(source, [["<think>9*8</think>72", "72"]])))[0]
    assert thought["headers"][:4] == ["#", "prompt", "thinking", "reply"] and [row[2] for row in thought["data"]] == ["9*8", ""]
    widths = dict(zip(thought["headers"], preview_column_widths(thought["headers"])))
    # A number column is as wide as its header's longest word (14 characters here), the text columns share the rest.
    assert float(widths["numeric_answer"].removesuffix("px")) > float(widths["total"].removesuffix("px"))
    assert all(widths[h].endswith("%") for h in ("prompt", "thinking", "reply"))


def test_sampled_completions_cut_off_by_the_budget_are_marked_and_said_in_the_preview():
    """The preview showed the rewards of completions that hit max_completion_length before they ended with no mark:
    a reward that reads the answer at the end scored them 0, and the table looked like a reward that does not work."""
    from rloo_studio.ui.rewards_tab import preview_tables

    source = "def numeric_answer(completions, **kwargs):\n    return [1.0 if c.endswith('75') else 0.0 for c in completions]\n"
    req = request(source, [["So 47 plus 28 is", "75", "Let me add the two numbers: 47 + 2"]])
    req["groups"][0]["cut_off"] = [True, False, True]
    result = scorer.score(req)
    assert [r["cut_off"] for r in result["rows"]] == [True, False, True]
    table, _, findings = preview_tables(result)
    replies = [row[table["headers"].index("reply")] for row in table["data"]]
    assert replies[0] == "[✂ cut off by the token budget] \nSo 47 plus 28 is" and replies[1] == "75"
    assert "✂ **Cut off:** 2 of 3 completions hit the token budget" in findings, findings
    # How each reward scores the cut-off ones, beside the finished ones: numeric_answer gives them 0, the finished 1.
    assert "Their scores: `numeric_answer` 0.00 (the finished ones: 1.00)." in findings, findings
    # A reward that scores them as high as the finished ones or higher rewards what the budget cut short (a walk:
    # `under_20_words` gave all 24 cut-off completions full marks, and the line said they scored "as if wrong").
    short = "def under_5_words(completions, **kwargs):\n    return [1.0 if len(c.split()) < 5 else 0.0 for c in completions]\n"
    req = request(short, [["So 47", "75 is the sum of them all", "Let me"]])
    req["groups"][0]["cut_off"] = [True, False, True]
    findings = preview_tables(scorer.score(req))[2]
    assert "⚠️ `under_5_words` scores the cut-off ones as high as the finished ones or higher" in findings, findings
    # With mask_truncated_completions (the GPU presets set it), TRL leaves them out of the loss: their advantage in the
    # table, -0.5 for the first, pushes nothing in training (it was shown as what RLOO pushes down).
    req = request(source, [["So 47 plus 28 is", "75", "Let me add the two numbers: 47 + 2"]], mask_truncated_completions=True)
    req["groups"][0]["cut_off"] = [True, False, True]
    masked = scorer.score(req)
    assert "training leaves the 2 cut-off completions out of the loss" in masked["advantage_note"], masked["advantage_note"]
    assert "out of the loss" not in (scorer.score(request(source, [["75", "1"]], mask_truncated_completions=True))
                                     .get("advantage_note") or "")  # none cut off: nothing to say
    from rloo_studio.config import RunConfig
    from rloo_studio.rewards.preview import scoring_request

    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "data": {"source": "demo"},
                               "rloo": {"mask_truncated_completions": True}})
    assert scoring_request(cfg, {"groups": [], "num_generations": 2}).mask_truncated_completions is True
    # Hand-written completions were never cut off: nothing is said.
    written = scorer.score(request(source, [["So 47 plus 28 is", "75"]]))
    assert all(r["cut_off"] is None for r in written["rows"]) and "Cut off" not in preview_tables(written)[2]


def test_a_pinned_check_leaves_a_child_with_the_tokenizer_loaded_for_the_next_one():
    # Written completions need the tokenizer for their token ids; loading its library was most of each pinned check's
    # time. After a check, the next one's child is started and loads the tokenizer while the person edits.
    from helpers.app import warm_children

    from rloo_studio.paths import DEMO_MODEL_DIR
    from rloo_studio.protocol import ScoreRequest

    pinned = ScoreRequest(groups=[{"prompt": "What is 2 + 2?", "completions": ["<think>2+2</think>4"], "row": {"answer": "4"}}],
                          num_generations=1, probes=False, tokenizer=str(DEMO_MODEL_DIR),
                          source="def short(completion_ids, **kwargs):\n    return [float(len(ids)) for ids in completion_ids]\n",
                          rewards=[{"file": "rewards.py", "function": "short"}, {"name": "numeric_answer"}])
    scorer.WRITTEN.end()  # another test's, in this process
    with warm_children():
        try:
            first = scorer.score(pinned, timeout_s=60, standby=scorer.WRITTEN)
            standby = scorer.WRITTEN.waiting
            second = scorer.score(pinned, timeout_s=60, standby=scorer.WRITTEN)
        finally:
            scorer.WRITTEN.end()
    assert first["tokenizer_loaded"] == "on request" and second["tokenizer_loaded"] == "before the request"
    assert standby.poll() is not None  # the second check ran in it
    # The same ids either way: the demo tokenizer's tokens of the text and its end token.
    assert first["rows"][0]["rewards"]["short"] == second["rows"][0]["rewards"]["short"] > 1
    assert second["rows"][0]["rewards"]["numeric_answer"] == 1.0


def test_a_pinned_check_of_what_the_last_one_scored_gives_its_report_without_scoring_again(tmp_path):
    # The page sends the table's change twice per edited cell and a blur on leaving the code editor: those checks of
    # unchanged inputs must not start a process (nor use up the child loading the tokenizer for the next edit).
    from helpers.app import warm_children

    from rloo_studio.config import RunConfig
    from rloo_studio.paths import DEMO_MODEL_DIR
    from rloo_studio.ui import rewards_tab

    on_disk = tmp_path / "length.py"
    # The demo model has a chat template: its completions are chat messages, in training and in the pinned checks.
    on_disk.write_text("def length(completions, **kwargs):\n    return [0.01 * len(c[0]['content']) for c in completions]\n")
    cfg = RunConfig.from_dict({"model": {"name_or_path": str(DEMO_MODEL_DIR)}, "data": {"source": "demo"},
                               "rewards": [{"name": "numeric_answer"}, {"file": str(on_disk), "function": "length"}]})
    groups = rewards_tab.pinned_groups([["What is 2 + 2?", "<think>2+2</think>4", "4", 0.0, 10.0]])
    checks = rewards_tab.PinnedChecks()
    with warm_children():
        try:
            first = checks.report(groups, "", cfg, again=False)
            standby = scorer.WRITTEN.waiting
            assert checks.report(groups, "", cfg, again=False) == first and checks.scored == 1
            # A bound edited alone is judged against the same scores, and the report says the new bound (before, the last
            # report came back as it was: "1/1 … (expected 0.0–10.0)").
            narrowed = checks.report(rewards_tab.pinned_groups([["What is 2 + 2?", "<think>2+2</think>4", "4", 0.0, 0.5]]), "", cfg,
                                     again=False)
            assert checks.scored == 1 and "0/1 pinned examples pass" in narrowed and "expected 0.0–0.5" in narrowed, narrowed
            assert standby.poll() is None  # still waiting for the next edit
            assert checks.report(groups, "", cfg, again=True) == first and checks.scored == 2  # *Check the code*: scored
            on_disk.write_text("def length(completions, **kwargs):\n    return [0.02 * len(c[0]['content']) for c in completions]\n")
            changed = checks.report(groups, "", cfg, again=False)  # the reward file changed on disk: scored
            edited = checks.report(rewards_tab.pinned_groups([["What is 2 + 2?", "<think>2+2</think>5", "4", 0.0, 10.0]]),
                                   "", cfg, again=False)
        finally:
            scorer.WRITTEN.end()
    assert checks.scored == 4
    # numeric_answer 1 or 0, plus 0.01 (then 0.02) per character of the 19-character completion
    assert "total 1.190" in first and "total 1.380" in changed and "total 0.380" in edited, (first, changed, edited)


def test_a_pinned_example_reaches_the_rewards_in_the_shape_training_gives_them(tmp_path):
    """Chat messages (the system prompt first) for a model with a chat template, plain text when the data says `plain`:
    the rule training uses (`data.use_chat_format`, `data.build_prompt`). Before, a pinned check always sent plain
    text, and a reward written for the chat messages training sends raised on every pinned example."""
    from helpers.app import warm_children

    from rloo_studio.config import RunConfig
    from rloo_studio.paths import DEMO_MODEL_DIR
    from rloo_studio.ui import rewards_tab

    source = ("def shape(prompts, completions, **kwargs):\n"
              "    return [float(len(p)) if isinstance(p, list) and c == [{'role': 'assistant', 'content': '<think>2+2</think>4'}]\n"
              "            else -1.0 if isinstance(p, str) and c == '<think>2+2</think>4' else -100.0\n"
              "            for p, c in zip(prompts, completions)]\n")
    groups = rewards_tab.pinned_groups([["What is 2 + 2?", "<think>2+2</think>4", "4", -10.0, 10.0]])
    reports = {}
    with warm_children():
        try:
            for prompt_format in ("auto", "plain"):
                cfg = RunConfig.from_dict({"model": {"name_or_path": str(DEMO_MODEL_DIR)},
                                           "data": {"source": "demo", "prompt_format": prompt_format, "system_prompt": "Be brief."},
                                           "rewards": [{"file": "rewards.py", "function": "shape"}]})
                reports[prompt_format] = rewards_tab.PinnedChecks().report(groups, source, cfg, again=True)
        finally:
            scorer.WRITTEN.end()
    # Two messages in the prompt (the system prompt, the question); the completion one assistant message.
    assert "1/1 pinned examples pass" in reports["auto"] and "total 2.000" in reports["auto"], reports["auto"]
    assert "1/1 pinned examples pass" in reports["plain"] and "total -1.000" in reports["plain"], reports["plain"]


def test_a_schedule_reward_reads_the_runs_max_steps_as_in_training():
    """`trainer_state.max_steps` holds the run's steps in training (100 by default); the preview's stand-in held 0, and a
    reward scheduled on `global_step / max_steps` failed there with ZeroDivisionError ("in training the run would stop
    at its first batch", which it would not)."""
    from rloo_studio.config import RunConfig
    from rloo_studio.paths import DEMO_MODEL_DIR
    from rloo_studio.rewards.preview import written_request

    cfg = RunConfig.from_dict({"model": {"name_or_path": str(DEMO_MODEL_DIR)}, "data": {"source": "demo"},
                               "rewards": [{"file": "rewards.py"}], "rloo": {"max_steps": 40}})
    assert written_request(cfg, [], None).max_steps == 40
    # A run for epochs: the steps the trainer will count over the training rows (it said 0, as if no step would run).
    from rloo_studio.batching import trained_steps_for_epochs
    from rloo_studio.data import load_rows

    epochs = RunConfig.from_dict({**cfg.to_dict(), "rloo": {"max_steps": -1, "num_train_epochs": 2}})
    train = load_rows(epochs.data, epochs.base_dir, seed=int(epochs.rloo_value("seed"))).train
    expected = trained_steps_for_epochs(len(train), epochs.batch_plan(), 2)
    assert expected > 0 and written_request(epochs, [], None).max_steps == expected
    # A hub dataset is not read in the app to count its rows: unknown, 0 as before.
    hub = RunConfig.from_dict({**epochs.to_dict(), "data": {"source": "someone/some-dataset"}})
    assert written_request(hub, [], None).max_steps == 0
    source = ("def ramp(completions, trainer_state, **kwargs):\n"
              "    return [trainer_state.global_step / trainer_state.max_steps] * len(completions)\n")
    result = scorer.score(request(source, [["a", "b"]], probes=False, max_steps=40))
    assert not result["functions"]["ramp"]["errors"] and [r["total"] for r in result["rows"]] == [0.0, 0.0]


def test_a_functions_std_is_the_sample_std_that_training_logs():
    """TRL logs `rewards/<name>/std` as the sample std (Bessel's correction): the preview's summary says the same number."""
    source = "def first_wins(completions, **kwargs):\n    return [1.0 if c == 'a' else 0.0 for c in completions]\n"
    result = scorer.score(request(source, [["a", "b"]], probes=False))
    assert result["functions"]["first_wins"]["std"] == pytest.approx(0.5 ** 0.5)  # values 1, 0; not the population 0.5


def test_the_hack_probes_never_read_as_passed_when_they_could_not_run():
    """A probe is compared with the real completions' scores: a function whose scores did not differ (all 0, all None,
    or failed) cannot be tested, and the verdict says so instead of a plain pass."""
    from rloo_studio.rewards.preview import probes_line, score

    def request(source):
        return {"groups": [{"prompt": "p", "row": {}, "completions": ["a", "bb", "ccc", "dddd"]}], "num_generations": 4,
                "source": source, "rewards": [{"file": "rewards.py"}]}

    flat = score(request("def flat(completions, **kwargs):\n    return [0.0 for _ in completions]\n"))
    assert flat["probed"] == [] and "not run" in probes_line(flat) and "✅" not in probes_line(flat, page=True)
    varied = score(request("def longer(completions, **kwargs):\n    return [-float(len(c)) for c in completions]\n"))
    assert varied["probed"] == ["longer"] and probes_line(varied, page=True).startswith("✅")
    # One tested, one not: no ✅ over a function the probes never reached (a walk: "✅ Hack probes: … (not tested:
    # `under_20_words` …)", and pasted completions then showed that it gives an empty answer full marks).
    both = score(request("def longer(completions, **kwargs):\n    return [-float(len(c)) for c in completions]\n\n\n"
                         "def short(completions, **kwargs):\n    return [1.0 for c in completions]\n"))
    line = probes_line(both, page=True)
    assert both["probed"] == ["longer"] and line.startswith("ℹ️ **Hack probes:** `short` not tested"), line
    assert "✅" not in line and "`longer`" in line


def test_one_pinned_example_that_makes_a_reward_raise_fails_alone(tmp_path):
    """A pinned example is a case of its own: an example without the column the reward reads makes it raise, and that
    example fails with the error while the others keep their own verdicts (found walking the app: the demo's leftover
    pin made a person's correct example fail with the other's error)."""
    from helpers.app import warm_children

    from rloo_studio.config import RunConfig
    from rloo_studio.paths import DEMO_MODEL_DIR
    from rloo_studio.ui import rewards_tab

    source = ("def mentions_hours(completions, hours, **kwargs):\n"
              "    texts = [c if isinstance(c, str) else c[0]['content'] for c in completions]\n"
              "    return [1.0 if h.lower() in t.lower() else 0.0 for t, h in zip(texts, hours)]\n")
    groups = rewards_tab.pinned_groups([["Ana has 47 apples and gets 28 more. How many now?", "<think>47+28</think>75", "", 1.0, 1.0],
                                        ["Hours on Friday?", "We are open 6am to 6pm.", "day=Friday; hours=6am to 6pm", 1.0, 1.0]],
                                       columns=["question", "day", "hours"], answer="hours", prompt_column="question")
    cfg = RunConfig.from_dict({"model": {"name_or_path": str(DEMO_MODEL_DIR)},
                               "data": {"source": "demo", "prompt_format": "plain"},
                               "rewards": [{"file": "rewards.py", "function": "mentions_hours"}]})
    with warm_children():
        try:
            report = rewards_tab.PinnedChecks().report(groups, source, cfg, again=True)
        finally:
            scorer.WRITTEN.end()
    assert "1/2 pinned examples pass" in report, report
    friday = next(line for line in report.splitlines() if "We are open" in line)
    assert friday.startswith("- ✅") and "raised" not in friday, report


def test_the_command_lines_preview_marks_cut_off_and_empty_completions_too(capsys):
    """The page marks them (test above); `rloo-studio preview` printed the same rows unmarked."""
    from rloo_studio.cli.rewards import print_preview

    source = "def numeric_answer(completions, **kwargs):\n    return [1.0 if c.endswith('75') else 0.0 for c in completions]\n"
    req = request(source, [["So 47 plus 28 is", "75", ""]])
    req["groups"][0]["cut_off"] = [True, False, False]
    print_preview(scorer.score(req), 3)
    out = capsys.readouterr().out
    assert "[cut off] So 47 plus 28 is" in out and "[empty] " in out
    assert "Cut off: 1 of 3 completions hit the token budget (rloo.max_completion_length)" in out

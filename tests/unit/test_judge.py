"""The judge reward without a model: its config entry's checks, the score parser (hand cases and real judge
replies from tests/fixtures/judge_replies.jsonl), the template check, and a judge server that cannot be
reached or never answers failing clearly within the entry's time limit."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from rloo_studio.config import RunConfig
from rloo_studio.errors import RewardError
from rloo_studio.rewards import build_rewards, check_reward_specs
from rloo_studio.rewards.judge import (DEFAULT_TEMPLATE, RUBRICS, SECONDS_METRIC, JudgeReward, check_template, judge_share_line,
                                      judge_time_share, normalise, parse_score, probe_findings)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "judge_replies.jsonl"


def _problems(entry: dict) -> list[str]:
    return RunConfig.from_dict({"rewards": [entry]}).validate()


def test_a_judge_entry_with_a_model_or_a_server_is_valid():
    assert _problems({"judge": "HuggingFaceTB/SmolLM2-135M-Instruct", "rubric": "Correct.", "scale": [1, 5]}) == []
    assert _problems({"judge": {"url": "http://127.0.0.1:11434/v1", "model": "qwen2.5:7b", "api_key_env": "JUDGE_KEY"},
                      "rubric": "Correct."}) == []


@pytest.mark.parametrize("entry, words", [
    ({"judge": "m"}, "rewards[0].rubric: a judge needs a rubric"),
    ({"judge": "m", "rubric": "r", "scale": [10, 0]}, "rewards[0].scale: [10, 0] must be [lowest, highest]"),
    ({"judge": "m", "rubric": "r", "scale": [0]}, "rewards[0].scale"),
    ({"judge": {"url": "127.0.0.1:11434", "model": "m"}, "rubric": "r"}, "rewards[0].judge.url: '127.0.0.1:11434' is not an http(s) address"),
    ({"judge": {"url": "http://h/v1"}, "rubric": "r"}, "rewards[0].judge.model: give the name"),
    ({"judge": {"url": "http://h/v1", "model": "m", "api_key": "sk-1"}, "rubric": "r"}, "rewards[0].judge.api_key: unknown key — did you mean `api_key_env`?"),
    ({"judge": {"url": "http://h/v1", "model": "m", "api_key_env": "sk-123 secret"}, "rubric": "r"}, "is not an environment variable name"),
    ({"judge": "m", "rubric": "r", "params": {"min_tokens": 2}}, "a judge takes only answer_column"),
    ({"name": "numeric_answer", "rubric": "r"}, "rewards[0].rubric: only meaningful together with `judge`"),
    ({"judge": "m", "model": "rm", "rubric": "r"}, "give exactly one of name, file, model or judge (got model, judge)"),
])
def test_a_wrong_judge_entry_is_reported_in_config_words(entry, words):
    problems = _problems(entry)
    assert any(words in p for p in problems), problems


def test_template_fields_and_answer_column_are_checked_with_the_rewards():
    spec = RunConfig.from_dict({"rewards": [{"judge": "m", "rubric": "r", "template": "Grade {answer} by {rubric}"}]}).rewards
    [problem] = check_reward_specs(spec, dataset_columns=["prompt", "answer"])
    assert "unknown field(s) {answer}" in problem and "{completion}" in problem and "template:" in problem
    spec = RunConfig.from_dict({"rewards": [{"judge": "m", "rubric": "r", "params": {"answer_column": "solution"}}]}).rewards
    [problem] = check_reward_specs(spec, dataset_columns=["prompt", "answer"])
    assert "no column `solution`" in problem
    assert check_template("Rate {prompt} only") == "the template has no {completion} field, so the judge would never see what it grades"
    assert check_template(DEFAULT_TEMPLATE) is None


def test_the_three_rubric_templates_each_say_their_limits():
    assert set(RUBRICS) == {"helpful_concise", "follows_format", "correct_vs_reference"}
    assert all(r.text.strip() and r.limits.strip() for r in RUBRICS.values())


ECHOED = "Score 10 if the answer is a fruit, 0 otherwise."


# Replies as the judge wrote them after its start "Score:" (REPLY_START), or with its own label (a server that does not
# continue the start). Only a verdict counts: "Score: N" and nothing after N but "/10" or a sentence break.
@pytest.mark.parametrize("reply, expected", [
    ("7/10", (7.0, "")),
    ("Score: 7/10. It answers the question.", (7.0, "")),
    ("**Score:** 8 - short and right", (8.0, "")),
    ("7 out of 10\n\nThe answer is right.", (7.0, "")),
    ("The answer 25 is wrong. Score: 2", (2.0, "")),
    (" 3, because it is long.", (3.0, "")),
    ("Score: 11", (None, "the score 11 is outside the scale 0-10")),
    ("", (None, "the reply is empty")),
    ("-1", (None, "the score -1 is outside the scale 0-10")),
    # Not a verdict: another label, no number, a number that runs on into the sentence it was read from.
    ("Rating = 8.5", (None, "no number follows 'Score:' (it reads 'Score: Rating = 8.5')")),
    ("no idea", (None, "no number follows 'Score:' (it reads 'Score: no idea')")),
    ("9 + 8 = 17", (None, "the number after 'Score:' (9) runs on into '+ 8 = 17' with no line break or full stop after "
                          "it, so it is not read as the judge's score: a verdict ends its line or sentence after the "
                          "number ('Score: 7' or 'Score: 7. Why.')")),
    ("7\nScore: 3", (None, "the reply gives several scores (3, 7)")),
    ("7\nScore: 7. Right.", (7.0, "")),
    # The rubric read back: the number it names is not the judge's verdict.
    ("10 if the answer is a fruit, 0 otherwise.\n\nThis is a very specific and detailed answer.",
     (None, "the reply repeats the rubric instead of judging ('Score: 10 if the answer is a fruit, 0 otherwise.')")),
    ("10. Anything else: 0.", (None, "the reply repeats the rubric instead of judging ('Score: 10. Anything else: 0.')")),
    ("10. The answer is a fruit.", (10.0, "")),  # its reason may use the rubric's words
])
def test_score_parser_on_hand_cases(reply, expected):
    rubric = "A fruit: 10. Anything else: 0." if "Anything" in reply else ECHOED
    assert parse_score(reply, 0, 10, rubric=rubric) == expected


def test_a_reply_that_reads_the_template_back_is_no_verdict():
    judge = JudgeReward("judge_x", None, "Correct.", (0, 10))
    value, why = parse_score("N followed by one short sentence saying why.", 0, 10, judge.rubric, judge.instructions)
    assert value is None and why.startswith("the reply repeats the prompt template instead of judging"), why


def test_score_parser_on_real_judge_replies():
    header, *rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    assert "produced_by" in header and len(rows) >= 15
    for row in rows:
        rubric = RUBRICS[row["rubric"]].text if row["rubric"] in RUBRICS else row["rubric"]
        value, why = parse_score(row["reply"], 0, 10, rubric=rubric)
        assert value == row["expected"], (row["reply"], value, why)
        assert (value is None) == bool(why)
    # The 135M judge reads the scoring rubric back for every answer, the empty one included: no verdict, never a 10.
    echoed = [row for row in rows if row["rubric"] == ECHOED]
    assert len(echoed) == 3 and any(row["completion"] == "" for row in echoed)
    assert all("repeats the rubric" in parse_score(row["reply"], 0, 10, rubric=ECHOED)[1] for row in echoed)


class ReplayJudge:
    """Replies of a real judge (tests/fixtures/judge_replies.jsonl), looked up by the answer in each judge prompt."""

    def __init__(self, replies: dict[str, str]):
        self.replies_by_answer = replies
        self.asked: list[str] = []

    def replies(self, prompts: list[str], deadline: float) -> list[tuple[str | None, str]]:
        self.asked += prompts
        return [(self.replies_by_answer[p.split("Answer to grade:\n", 1)[1].split("\n\nReference answer:", 1)[0]], "")
                for p in prompts]


def _fixture_replies(rubric: str, prompt: str) -> dict[str, str]:
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()[1:]]
    found = {r["completion"]: r["reply"] for r in rows if r["rubric"] == rubric and r["prompt"] == prompt}
    if "(the rubric's text)" in found:
        found[RUBRICS[rubric].text if rubric in RUBRICS else rubric] = found.pop("(the rubric's text)")
    return found


def test_a_judge_that_reads_the_rubric_back_scores_nothing_and_says_why():
    judge = JudgeReward("judge_smol", ReplayJudge(_fixture_replies(ECHOED, "Name a fruit.")), ECHOED, (0, 10))
    with pytest.raises(RewardError) as caught:
        judge(prompts=["Name a fruit."] * 3, completions=["Apple.", "", "A car."])
    assert "gave no usable score for any of the 3 completions" in caught.value.what
    assert "the reply repeats the rubric instead of judging" in caught.value.why
    assert caught.value.fix.startswith("write the rubric as what a good answer is, not as a scoring sentence")
    assert [v.score for v in judge.last_verdicts] == [None, None, None]


def test_the_judges_own_check_says_plainly_when_it_gives_an_empty_or_read_back_answer_high_marks():
    rubric = RUBRICS["helpful_concise"].text
    replay = ReplayJudge({**_fixture_replies("helpful_concise", "How many days are in a week?"), "Seven.": "7"})
    judge = JudgeReward("judge_smol", replay, rubric, (0, 10))
    groups = [{"prompt": "How many days are in a week?", "row": {}}]
    assert judge(prompts=["How many days are in a week?"], completions=["Seven."]) == [0.7]
    calls, verdicts = judge.calls, list(judge.last_verdicts)
    found = probe_findings(judge, groups)
    assert [(h["probe"], h["score"]) for h in found["high"]] == [("empty", 9.0), ("prompt read back", 9.0)]
    assert found["message"] == (
        "Judge `judge_smol` gives high marks to answers that should score lowest: the empty answer 9, the prompt read "
        "back as the answer 9 (scale 0-10; e.g. for 'How many days are in a week?'). The policy could learn to answer "
        "that way instead: use a larger judge, or say in the rubric what an empty or read-back answer scores.")
    assert judge.calls == calls and judge.last_verdicts == verdicts  # the check leaves the scored verdicts alone

    fair = JudgeReward("judge_fair", ReplayJudge({"": "0", "How many days are in a week?": "1. It repeats the question.",
                                                  rubric: "2"}), rubric, (0, 10))
    assert probe_findings(fair, groups + groups)["message"] == (
        "Judge `judge_fair` gives low marks or no score to the empty answer, the prompt read back and the rubric read "
        "back (1 prompt, scale 0-10).")


def test_the_judge_grades_the_answer_not_the_thinking_and_an_unclosed_thought_has_none():
    """As the answer-reading builtins read a completion: the judge is shown the text after </think>; a thought cut off
    before it closed (with a thinking template the prompt opens it) holds no answer, so it gets the lowest score and
    no judge call. Before, the judge was shown the reasoning, "6*7=42, so the answer is" beside the reference 42."""
    replay = ReplayJudge({"42": "9", "6*7=42, so the answer is": "9"})
    judge = JudgeReward("judge_smol", replay, RUBRICS["helpful_concise"].text, (0, 10), prompt_opens_think=True)
    assert judge(prompts=["What is 6*7?"] * 2, completions=["6*7=42.</think>42", "6*7=42, so the answer is"]) == [0.9, 0.0]
    assert len(replay.asked) == 1 and "Answer to grade:\n42\n" in replay.asked[0]
    assert judge.last_verdicts[1].problem.startswith("the thinking never closed")
    plain = JudgeReward("judge_smol", ReplayJudge({"6*7=42, so the answer is": "9"}), RUBRICS["helpful_concise"].text, (0, 10))
    assert plain(prompts=["What is 6*7?"], completions=["6*7=42, so the answer is"]) == [0.9]  # no think tags: as written


def test_scores_are_normalised_to_0_1():
    assert normalise(7, 0, 10) == 0.7 and normalise(1, 1, 5) == 0.0 and normalise(5, 1, 5) == 1.0


def _server_reward(url: str, timeout_s: float):
    spec = RunConfig.from_dict({"rewards": [{"judge": {"url": url, "model": "m"}, "rubric": "Correct.",
                                             "timeout_s": timeout_s}]}).rewards
    [loaded] = build_rewards(spec, dataset_columns=["prompt"])
    return loaded.func


def test_an_unreachable_judge_server_fails_clearly():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = _server_reward(f"http://127.0.0.1:{port}/v1", timeout_s=20)
    with pytest.raises(RewardError) as caught:
        judge(prompts=["What is 2 + 2?", "What is 2 + 2?"], completions=["4", "5"])
    err = caught.value
    assert f"the judge server at http://127.0.0.1:{port}/v1/chat/completions did not answer any of 2 requests" in err.what
    assert "refused" in err.why.lower() and "3 attempts" in err.why
    assert "start the server" in err.fix and "url:" in err.fix


def test_a_judge_server_that_never_answers_is_given_up_after_the_time_limit():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections (the kernel does), never reads or answers
    try:
        judge = _server_reward(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", timeout_s=4)
        start = time.monotonic()
        with pytest.raises(RewardError) as caught:
            judge(prompts=["q"], completions=["a"])
        elapsed = time.monotonic() - start
    finally:
        listener.close()
    assert "did not answer any of 1 requests" in caught.value.what and "within the time limit" in caught.value.why
    # The entry's limit bounds the whole wait, retries included: without it urllib waits forever, and retries that
    # ignored it would wait 3 attempts x 4 s.
    assert elapsed < 2 * 4, elapsed


def test_a_missing_api_key_variable_is_named(monkeypatch):
    monkeypatch.delenv("H20_NO_SUCH_KEY", raising=False)
    spec = RunConfig.from_dict({"rewards": [{"judge": {"url": "http://127.0.0.1:9/v1", "model": "m",
                                                       "api_key_env": "H20_NO_SUCH_KEY"}, "rubric": "r"}]}).rewards
    [loaded] = build_rewards(spec)
    with pytest.raises(RewardError, match="H20_NO_SUCH_KEY is not set") as caught:
        loaded.func(prompts=["q"], completions=["a"])
    assert "export H20_NO_SUCH_KEY=" in caught.value.fix


def test_a_local_judge_folder_becomes_absolute_for_the_run_and_a_hub_id_or_server_stays(tmp_path):
    (tmp_path / "judge-model").mkdir()
    server = {"url": "http://127.0.0.1:11434/v1", "model": "qwen2.5:7b", "api_key_env": "JUDGE_KEY"}
    cfg = RunConfig.from_dict({"rewards": [{"judge": "judge-model", "rubric": "r"}, {"judge": "org/judge-1b", "rubric": "r"},
                                           {"judge": server, "rubric": "r"}]}, base_dir=tmp_path)
    moved = cfg.with_absolute_paths(tmp_path / "runs" / "run-1")
    assert [r.judge for r in moved.rewards] == [str(tmp_path / "judge-model"), "org/judge-1b", server]


def _row(step: int, step_time: float, judge_s: float | None = None) -> dict:
    row = {"step": step, "time": 100.0 + 10 * step, "step_time": step_time}
    if judge_s is not None:
        row[SECONDS_METRIC.format(name="judge_qwen")] = judge_s
    return row


def test_the_judge_share_is_its_seconds_over_the_training_seconds():
    # Generation (and so judging) every other step: the judge's seconds are on the generating steps' rows only.
    rows = [_row(1, 10.0, 6.0), _row(2, 2.0), _row(3, 10.0, 4.0), _row(4, 2.0), {"step": 4, "eval_reward": 1.0}]
    assert judge_time_share(rows) == (10.0, 24.0)
    assert judge_share_line(rows) == "Judge: 42 % of the training time (2.5 s of 6.0 s a step, over 4 steps)"
    assert judge_time_share([_row(1, 10.0), _row(2, 2.0)]) is None  # no judge: nothing said
    assert judge_share_line([]) is None


def test_a_time_trial_says_the_judges_share_of_the_timed_steps(tmp_path):
    from rloo_studio import runs
    from rloo_studio.workers import trial

    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "rloo": {"max_steps": 10}})
    # The warm-up step's judge time (loading the judge) is not the run's: only the timed step counts.
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, _row(1, 30.0, 25.0))
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, _row(2, 8.0, 2.0))
    m = trial._measurement(cfg, cfg.batch_plan(), tmp_path, 2, 1, 100.0, None, None)
    assert m.judge_share == 0.25
    assert "the judge takes 25 % of each step's time (about 2.5 s of 10.0 s)" in trial.summary_lines(m)
    plain = tmp_path / "no-judge"
    plain.mkdir()
    for row in (_row(1, 30.0), _row(2, 8.0)):
        runs.append_jsonl(plain / runs.METRICS_FILE, row)
    without = trial._measurement(cfg, cfg.batch_plan(), plain, 2, 1, 100.0, None, None)
    assert without.judge_share is None and not any("judge" in line for line in trial.summary_lines(without))


def test_the_train_tab_prices_a_ticked_judge_per_step():
    from rloo_studio.ui import text
    from rloo_studio.ui.train_tab import judge_cost_markdown

    assert judge_cost_markdown(4, 16, 1, False, text.JUDGE_BASE) == ""
    local = judge_cost_markdown(4, 16, 1, True, text.JUDGE_BASE)
    assert local.startswith("Judge calls per training step: 16 (") and "on the training GPU" in local
    assert "on the judge server" in judge_cost_markdown(8, 16, 1, True, text.JUDGE_SERVER_CHOICE)
    # Two passes over each generation batch: half the new completions per step, so half the calls.
    assert judge_cost_markdown(4, 16, 2, True, text.JUDGE_BASE).startswith("Judge calls per training step: 8 (")


# A reply the preview refused as "no verdict of the form 'Score: N' (it reads 'Score: +1<think>')": a person reads
# "Score: +1" and sees no reason. A tag after the number ends the verdict as a line break does; what is refused says why.
@pytest.mark.parametrize("reply, expected", [
    ("+1<think>\nThe answer is short.</think>", (1.0, "")),
    ("+1", (1.0, "")),
    ("Score: +7/10</think>", (7.0, "")),
    ("+17</think>601", (None, "the score 17 is outside the scale 0-10")),
])
def test_a_plus_sign_and_a_tag_after_the_number_read_as_a_verdict(reply, expected):
    assert parse_score(reply, 0, 10) == expected


@pytest.mark.parametrize("reply, why", [
    ("+1 point", "the number after 'Score:' (+1) runs on into 'point' with no line break or full stop after it"),
    ("9 + 8 = 17", "the number after 'Score:' (9) runs on into '+ 8 = 17' with no line break or full stop after it"),
    ("7/10 because it is short and it is right",
     "the number after 'Score:' (7/10) runs on into 'because it is short and it is…' with no line break or full stop"),
    ("Rating = 8.5", "no number follows 'Score:' (it reads 'Score: Rating = 8.5')"),
    ("no idea", "no number follows 'Score:' (it reads 'Score: no idea')"),
    ("The answer is fine, Score: 7", "'Score:' stands inside a sentence"),
    ("**Score** 7", "the reply has no 'Score:' with a colon before a number (it reads '**Score** 7')"),
])
def test_a_refused_reply_says_why_in_words(reply, why):
    value, said = parse_score(reply, 0, 10)
    assert value is None and why in said, said
    if "runs on" in why:  # and what a verdict is, so that the person can tell what the judge should have written
        assert "a verdict ends its line or sentence after the number" in said, said


def test_the_judge_and_scoring_doctests():
    """Among them: a judge's seconds made the step's when a step holds several generation batches (TRL logged one
    batch's mean, and the Train tab said "Judge: 27 %" of a step the judge took 80 % of), and which completions a
    None is counted as 0 for."""
    import doctest

    from rloo_studio.rewards import judge as judge_module
    from rloo_studio.rewards import scoring

    for module in (judge_module, scoring):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__

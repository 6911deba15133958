"""The Rewards tab's preview and pinned examples with a real judge: SmolLM2-135M-Instruct behind the OpenAI-compatible
test server (tests/realmodel/judge_server.py) on 127.0.0.1, set up in the judge section of the page (no YAML).

The preview shows each completion's judge score beside the judge's own words (the very reply the server sent), the
judge in the per-function summary and the advantages, the judge's agreement with the other rewards (Pearson's r,
recomputed here from the table), and the hack probes are put to the judge; the pinned examples are judged too.
`rloo-studio preview` says the same on the command line."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import yaml
from realtask import run_cli

HERE = Path(__file__).resolve().parent

from helpers.app import Form, connect, served_app

from rloo_studio.rewards.judge import RUBRICS, judged_text
from rloo_studio.ui import text
from rloo_studio.ui.rewards_tab import REASON_SUFFIX

PROMPT, ANSWER = "What is 3 + 4?", "7"
PASTED = ["<think>3+4</think>7", "<think>3+4=8</think>8", "The answer is 7.", "<think>hmm</think>I do not know, maybe 12 or 40."]
JUDGE = "judge_smollm2"  # the reward's name: `judge_` and the server's model name


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with served_app(tmp_path_factory.mktemp("judge-real-app") / "runs") as url:
        yield connect(url)


def judged_form(app, url: str) -> Form:
    form = Form(app)
    rubric, _limits = app.predict("correct_vs_reference", api_name="/judge_rubric_template")
    assert rubric == RUBRICS["correct_vs_reference"].text
    form[text.JUDGE_USE] = True
    form[text.JUDGE_RUBRIC] = rubric
    form[text.JUDGE_SOURCE] = text.JUDGE_SERVER_CHOICE
    form[text.JUDGE_URL] = url
    form[text.JUDGE_SERVER_MODEL] = "smollm2"
    return form


def requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def judged_completion(request: dict) -> str:
    """What a judge request asked about (the default template's "Answer to grade:" section): a completion's answer, the
    text after </think> (`rewards.judge.judged_text`); compare with `judged_text(completion)`."""
    prompt = request["messages"][0]["content"]
    return prompt.split("Answer to grade:\n", 1)[1].split("\n\nReference answer:", 1)[0]


def test_the_preview_shows_the_judge_score_its_words_advantages_agreement_and_probes(app, judge_server):
    url, log = judge_server
    form = judged_form(app, url)
    status, update, summary, findings = app.predict(3, PROMPT, ANSWER, "\n".join(PASTED), *form.values, api_name="/preview_rewards")
    assert status.startswith("Scored 4 completions"), status
    table = update["value"]
    headers = table["headers"]
    at = headers.index(JUDGE)
    assert headers[at + 1] == JUDGE + REASON_SUFFIX  # the judge's words beside its score
    assert len(update["column_widths"]) == len(headers)
    replies = {judged_completion(r): r["reply"].strip() for r in requests(log)}
    for row, completion in zip(table["data"], PASTED):
        said, reply = row[at + 1], replies[judged_text(completion)]  # the judge is shown the answer, not the thinking
        assert reply and reply in said, (said, reply)  # the server's very reply
        assert row[at] is not None or "not scored:" in said
    assert JUDGE in [r[0] for r in summary["data"]]
    assert abs(sum(row[-1] for row in table["data"])) < 0.01  # the advantages, the judge's score counted in the totals

    # Agreement: Pearson's r of the judge and numeric_answer over the completions both scored, as the table shows them.
    pairs = [(row[at], row[headers.index("numeric_answer")]) for row in table["data"]
             if row[at] is not None and row[headers.index("numeric_answer")] is not None]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    # The judge answers greedily, so these completions always get the same scores; they differ (0.7 and 0.8 on 0-1),
    # which the agreement and the probes below need (a constant reward has no correlation and is not probed).
    assert len(set(xs)) > 1 and len(set(ys)) > 1, (xs, ys)
    line = next(part for part in findings.split("\n\n") if part.startswith("🤝 **Agreement:**"))
    r = statistics.correlation(xs, ys)
    assert line.startswith(f"🤝 **Agreement:** judge `{JUDGE}` {'agrees' if r >= 0 else 'disagrees'} with `numeric_answer`: "
                           f"r = {r:.2f} over {len(pairs)} completions"), line

    # The hack probes are put to the judge (the rambling probe reached the server), and the verdict is shown.
    assert any(judged_completion(r).startswith("Let me think about this") for r in requests(log))
    assert "**Hack probe" in findings


def test_pinned_examples_are_judged(app, judge_server):
    url, log = judge_server
    form = judged_form(app, url)
    pinned = {"headers": ["prompt", "completion", "answer", "min total", "max total"],
              "data": [[PROMPT, "<think>3 plus 4</think>7", ANSWER, 0.0, 10.0]]}
    asked_before = len(requests(log))
    report = app.predict(pinned, *form.values, api_name="/run_pinned")
    assert report.startswith("**"), report
    # The judge saw the pinned example's answer (the text after </think>), not its thinking.
    assert "7" in [judged_completion(r) for r in requests(log)[asked_before:]]


def test_the_command_line_preview_prints_the_judge_words_and_its_agreement(judge_server, tmp_path):
    url, log = judge_server
    config = {"model": {"name_or_path": "demo"}, "rewards": [
        {"name": "numeric_answer"}, {"judge": {"url": url, "model": "smollm2"}, "rubric": RUBRICS["correct_vs_reference"].text}]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "completions.jsonl").write_text(json.dumps({"prompt": PROMPT, "answer": ANSWER, "completions": PASTED}) + "\n")
    done = run_cli("preview", "config.yaml", "--completions", "completions.jsonl", cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    replies = {judged_completion(r): r["reply"].strip() for r in requests(log)}
    for completion in PASTED:
        reply = replies[judged_text(completion)]
        assert f"{JUDGE} says: {'Score: ' + reply!r}" in done.stdout, (reply, done.stdout)
    agreement = next(line for line in done.stdout.splitlines() if line.startswith("Agreement: "))
    assert agreement.startswith(f"Agreement: judge `{JUDGE}` ") and "`numeric_answer`" in agreement, agreement

"""The judge section's entry for each kind of judge (and back), the agreement line of the preview, and the judge's own
check in the preview and the pinned examples."""

from __future__ import annotations

import http.server
import json
import statistics
import threading
from pathlib import Path

from rloo_studio.config import RunConfig
from rloo_studio.rewards.judge import DEFAULT_TEMPLATE, RUBRICS
from rloo_studio.rewards.preview import agreement
from rloo_studio.ui import text
from rloo_studio.ui.judge_panel import entry_values, judge_entry
from rloo_studio.ui.rewards_tab import agreement_line

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "judge_replies.jsonl"


def values(source: str, folder: str = "", **changed) -> list:
    v = [True, "Correct and short.", source, folder, "", "", "", 1.0, 0, 10, DEFAULT_TEMPLATE]
    for index, value in changed.items():
        v[int(index.lstrip("_"))] = value
    return v


def test_the_base_model_and_a_folder_round_trip(tmp_path):
    model = {"model": {"name_or_path": "Qwen/Qwen3-0.6B"}}
    entry, problems = judge_entry(model, values(text.JUDGE_BASE))
    assert problems == [] and entry == {"judge": "Qwen/Qwen3-0.6B", "rubric": "Correct and short.", "weight": 1.0}
    cfg = RunConfig.from_dict({**model, "rewards": [entry]})
    assert entry_values(cfg) == values(text.JUDGE_BASE)

    (tmp_path / "judge").mkdir()
    entry, problems = judge_entry(model, values(text.JUDGE_FOLDER_CHOICE, str(tmp_path / "judge")))
    assert problems == [] and entry["judge"] == str(tmp_path / "judge")
    assert entry_values(RunConfig.from_dict({**model, "rewards": [entry]})) == values(text.JUDGE_FOLDER_CHOICE, str(tmp_path / "judge"))


def test_a_missing_folder_or_an_unused_section_adds_no_entry(tmp_path):
    entry, problems = judge_entry({}, values(text.JUDGE_FOLDER_CHOICE, str(tmp_path / "nowhere")))
    assert entry is None and problems == [f"Rewards: “{text.JUDGE_FOLDER}” (Rewards tab) {str(tmp_path / 'nowhere')!r} is not a "
                                          "folder on this machine — give the folder that holds the judge model's config.json"]
    assert judge_entry({}, values(text.JUDGE_BASE, _0=False)) == (None, [])


def test_agreement_is_pearson_over_the_completions_both_scored():
    per_function = {"judge_x": [0.9, 0.2, None, 0.7, 0.4], "numeric_answer": [1.0, 0.0, 1.0, 1.0, 0.0],
                    "flat": [1.0, 1.0, 1.0, 1.0, 1.0], "judge_y": [None, None, 0.5, None, None]}
    found = {(a["judge"], a["other"]): a for a in agreement(per_function, ["judge_x"])}
    expected = statistics.correlation([0.9, 0.2, 0.7, 0.4], [1.0, 0.0, 1.0, 0.0])
    assert abs(found["judge_x", "numeric_answer"]["r"] - expected) < 1e-12 and found["judge_x", "numeric_answer"]["n"] == 4
    assert found["judge_x", "flat"]["r"] is None and found["judge_x", "flat"]["why"] == "`flat` gives all 4 the same score"
    assert found["judge_x", "judge_y"]["why"] == "only 0 completion(s) scored by both"
    line = agreement_line(list(found.values()))
    assert line.startswith(f"🤝 **Agreement:** judge `judge_x` agrees with `numeric_answer`: r = {expected:.2f} over 4 completions; "
                           "with `flat` cannot be measured (`flat` gives all 4 the same score)")


def test_the_data_tabs_answer_column_reaches_a_judge_only_when_it_is_not_the_default():
    from rloo_studio.ui.data_tab import DataTab

    for answer, expected in (("solution", {"answer_column": "solution"}), ("answer", None), ("(none)", None)):
        cfg = {"rewards": [{"judge": "demo", "rubric": "r"}]}
        DataTab.apply(cfg, [text.SOURCE_CHOICES[0], "", "", "", "train", "prompt", answer, "", "", 0.0, None, "auto"])
        assert cfg["rewards"][0].get("params") == expected, answer


def test_a_judge_on_the_demo_model_is_the_bundled_model():
    from rloo_studio.config import RewardSpec
    from rloo_studio.paths import DEMO_MODEL_DIR
    from rloo_studio.rewards.judge import judge_reward_function

    fn = judge_reward_function(RewardSpec(judge="demo", rubric="Correct."), "/nowhere")
    assert fn.judge.source == str(DEMO_MODEL_DIR) and fn.__name__ == "judge_demo"


class _Replay(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server that answers with a real small judge's reply to the answer in each request
    (tests/fixtures/judge_replies.jsonl), as the 135M judge answered it."""
    replies: dict[str, str] = {}

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        asked = body["messages"][0]["content"].split("Answer to grade:\n", 1)[1].split("\n\nReference answer:", 1)[0]
        answer = json.dumps({"choices": [{"message": {"content": self.replies[asked]}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def test_the_preview_and_the_pinned_examples_run_the_judges_own_check():
    """A judge that gives the empty answer and the prompt read back 9/10 (the 135M judge's real replies) is named on the
    preview's findings and under the pinned examples' report; its scores of the real answers stay as they are."""
    from rloo_studio.rewards.preview import score
    from rloo_studio.ui.rewards_tab import pinned_report, preview_tables

    rubric = RUBRICS["helpful_concise"].text
    question = "How many days are in a week?"
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()[1:]]
    _Replay.replies = {r["completion"]: r["reply"] for r in rows if r["prompt"] in (question, "Name a fruit.")
                       and r["rubric"] == "helpful_concise"}
    # Written here (not the judge's): the real answers' scores, and the second prompt read back.
    _Replay.replies.update({rubric: _Replay.replies.pop("(the rubric's text)"), "Seven.": "7", "Eight.": "2",
                            "Name a fruit.": "3"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Replay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        spec = {"judge": {"url": f"http://127.0.0.1:{server.server_address[1]}/v1", "model": "smollm2"}, "rubric": rubric}
        request = {"groups": [{"prompt": question, "row": {}, "completions": ["Seven.", "Eight."]},
                              {"prompt": "Name a fruit.", "row": {}, "completions": ["Apple.", "Apple."]}], "num_generations": 2,
                   "rewards": [dict(RunConfig.from_dict({"rewards": [spec]}).rewards[0].__dict__)]}
        result = score(request)
        pinned = score({**request, "num_generations": 1, "probes": False,
                        "groups": [{"prompt": question, "row": {}, "completions": ["Seven."]},
                                   {"prompt": "Name a fruit.", "row": {}, "completions": ["Apple."]}]})
    finally:
        server.shutdown()
    assert [r["rewards"]["judge_smollm2"] for r in result["rows"]] == [0.7, 0.2, 0.9, 0.9]
    [check] = result["judge_checks"]
    assert check["asked"] == 6  # three probes for each of the two prompts
    assert [(h["probe"], h["score"]) for h in check["high"]] == [("empty", 9.0), ("prompt read back", 9.0), ("empty", 9.0)]
    said = "⚠️ **Judge check:** Judge `judge_smollm2` gives high marks to answers that should score lowest: the empty answer 9"
    assert said in preview_tables(result)[2]
    # The pinned check asks too (without the general probes), on its first prompt only: it runs on every edit.
    [pinned_check] = pinned["judge_checks"]
    assert pinned_check["asked"] == 3 and pinned_check["high"] == check["high"][:2]
    report = pinned_report([{"completions": ["Seven."], "range": (0.5, 1.0)}, {"completions": ["Apple."], "range": (0, 1)}],
                           pinned)
    assert report.startswith("**2/2 pinned examples pass**") and said in report

"""What crosses the scoring pipe is one typed request and one typed result, whichever road built it."""

from __future__ import annotations

import pytest

from rloo_studio.config import RunConfig
from rloo_studio.protocol import ScoreRequest, ScoreResult, WrittenShape


def _cfg(tmp_path) -> RunConfig:
    return RunConfig.from_dict({"data": {"source": "demo", "system_prompt": "Be brief.", "prompt_format": "plain"},
                                "rewards": [{"name": "numeric_answer"}], "rloo": {"beta": 0.05}}, tmp_path)


def test_a_request_reads_back_what_it_wrote_and_refuses_a_key_it_does_not_know():
    request = ScoreRequest(groups=[{"prompt": "p", "row": {"answer": "1"}, "completions": ["1", "2"]}], num_generations=2,
                           rewards=[{"name": "numeric_answer"}], written=WrittenShape("plain", "Be brief."))
    assert ScoreRequest.from_dict(request.to_dict()) == request
    # A misspelt or retired key (the old `data` of written text) would otherwise be dropped and the child would score
    # the text unshaped, without a word.
    with pytest.raises(ValueError, match=r"unknown keys \['data'\]"):
        ScoreRequest.from_dict({**request.to_dict(), "data": {"prompt_format": "plain"}})
    with pytest.raises(ValueError, match="`written`"):
        ScoreRequest.from_dict({**request.to_dict(), "written": {"format": "plain"}})


def test_the_sampled_pasted_and_pinned_roads_build_one_request_type(tmp_path):
    from rloo_studio.rewards.library import examples_request, parse
    from rloo_studio.rewards.preview import scoring_request, written_request

    cfg = _cfg(tmp_path)
    groups = [{"prompt": "What is 1 + 1?", "row": {"answer": "2"}, "completions": ["2", "3"]}]
    sampled = scoring_request(cfg, {"groups": groups, "conversational": False})
    pasted = scoring_request(cfg, {"groups": groups, "num_generations": 2, "tokenizer": None})
    pinned = written_request(cfg, [{**groups[0], "completions": ["2"]}], "def r(completions, **kw):\n    return [1.0]\n")
    assert {type(r) for r in (sampled, pasted, pinned)} == {ScoreRequest}
    assert sampled.beta == pasted.beta == 0.05 and sampled.system_prompt == "Be brief." and sampled.written is None
    assert pinned.written == WrittenShape("plain", "Be brief.") and pinned.num_generations == 1 and not pinned.probes
    reward = parse('REWARD = {"name": "one", "description": "d", "columns": [], "tags": [], "parameters": {}, "weights": {"one": 1.0}, "examples": [{"prompt": "p", "completion": "c", '
                   '"total": [1.0, 1.0]}]}\n\ndef one(completions, **kwargs):\n    return [1.0 for _ in completions]\n', "one.py")
    for request in (examples_request(reward), examples_request(reward, cfg)):
        assert isinstance(request, ScoreRequest) and ScoreRequest.from_dict(request.to_dict()) == request


def test_a_failed_result_holds_only_its_problems_and_a_scored_one_no_problems():
    assert ScoreResult.failed("scoring failed: boom", 1.5).to_dict() == {"problems": ["scoring failed: boom"], "seconds": 1.5}
    scored = ScoreResult(rows=[{"total": 1.0}]).to_dict()
    assert "problems" not in scored and ScoreResult.from_dict(scored).rows == [{"total": 1.0}]
    with pytest.raises(ValueError, match="unknown keys"):
        ScoreResult.from_dict({"rowz": []})


def test_an_error_sent_by_another_process_reads_back_as_it_was_raised():
    from rloo_studio.errors import RewardError, StudioError

    sent = RewardError("`score` failed on line 3", "it divides by zero", "guard the division").as_dict()
    read = RewardError.from_dict(sent)
    assert type(read) is RewardError and read.message() == RewardError(sent["what"], sent["why"], sent["fix"]).message()
    # A process that ended without saying what went wrong: the caller's words stand in for the what.
    assert StudioError.from_dict(None, "the chat worker failed").message() == "the chat worker failed."
    assert StudioError.from_dict({"why": "it crashed"}, "the chat worker failed").why == "it crashed"

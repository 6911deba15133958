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


# ---- the inference worker's pipe ----------------------------------------------------------------------------------

def _through_the_pipe(message: dict) -> dict:
    import json

    return json.loads(json.dumps(message))  # as a line on the pipe carries it


@pytest.mark.parametrize("request_", [
    pytest.param(lambda p: p.LoadRequest(run_dir="/runs/a", checkpoint="checkpoint-2"), id="load"),
    pytest.param(lambda p: p.ChatRequest(messages=[{"role": "user", "content": "hi"}], sides=["tuned"], system_prompt="Be brief.",
                                         sampling={"temperature": 0.0, "max_new_tokens": 8}), id="chat"),
    pytest.param(lambda p: p.PreviewRequest(config={"model": {"name_or_path": "demo"}}, base_dir="/work", prompt="2+2?",
                                            answer="4", seed=3), id="preview"),
    pytest.param(lambda p: p.PreviewRequest(config={}, rows=[{"prompt": "p", "answer": "1"}]), id="preview-rows"),
    pytest.param(lambda p: p.PingRequest(), id="ping"),
    pytest.param(lambda p: p.ShutdownRequest(), id="shutdown")])
def test_each_inference_request_reads_back_as_its_type(request_):
    from rloo_studio import protocol

    sent = request_(protocol)
    assert protocol.inference_request(_through_the_pipe(sent.to_dict())) == sent
    assert sent.to_dict()["op"] == sent.tag


@pytest.mark.parametrize("event", [
    pytest.param(lambda p: p.Ready(pid=41), id="ready"),
    pytest.param(lambda p: p.Progress("loading the model"), id="progress"),
    pytest.param(lambda p: p.TextDelta(side="base", delta="Hel"), id="text"),
    pytest.param(lambda p: p.Reply(side="tuned", text="<think>a</think>4", thinking="a", answer="4", token_ids=[5, 6, 2],
                                   tokens=3, finished=True, max_new_tokens=32,
                                   adapter_state={"side": "tuned", "verified": True, "badge": "ON"}), id="reply"),
    pytest.param(lambda p: p.Done(result={"groups": [], "pid": 7, "chat_released": False}), id="done"),
    pytest.param(lambda p: p.Done(seconds=1.25), id="done-turn"),
    pytest.param(lambda p: p.Failed(error={"what": "out of memory", "why": "", "fix": "", "type": "OutOfMemory"}, fatal=True),
                 id="error")])
def test_each_worker_event_reads_back_as_its_type(event):
    from rloo_studio import protocol

    sent = event(protocol)
    assert protocol.worker_event(_through_the_pipe(sent.to_dict())) == sent
    assert sent.to_dict()["event"] == sent.tag


def test_an_unknown_request_event_or_key_is_refused_not_dropped():
    from rloo_studio.protocol import ChatRequest, Reply, inference_request, worker_event

    with pytest.raises(ValueError, match="unknown op 'generate'"):
        inference_request({"op": "generate", "messages": []})
    with pytest.raises(ValueError, match=r"unknown keys \['temperature'\]"):  # a setting sent beside `sampling`, not in it
        inference_request({**ChatRequest(messages=[]).to_dict(), "temperature": 0.0})
    with pytest.raises(ValueError, match="unknown event 'token'"):
        worker_event({"event": "token", "delta": "a"})
    with pytest.raises(ValueError, match=r"unknown keys \['logprobs'\]"):
        worker_event({**Reply(side="base", text="a").to_dict(), "logprobs": []})
    with pytest.raises(ValueError, match="unknown op"):
        inference_request(["load"])

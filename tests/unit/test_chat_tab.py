"""The Chat tab's turn logic with a stand-in worker (no model): rollback, blind order, retry refusals."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from rloo_studio.errors import StudioError
from rloo_studio.protocol import Done, Reply, TextDelta
from rloo_studio.ui.chat_tab import ChatTab, new_session

SETTINGS = ("", 0.0, 1.0, 8, 0)  # system prompt, temperature, top-p, max tokens, seed


class FakeWorker:
    """Answers like the inference worker: text deltas, then a reply per side; can fail on one side."""

    loaded = None

    def __init__(self, fail_on: str | None = None, texts: dict | None = None, cut_off: tuple = (), opened: bool = False,
                 plain: bool = False):
        self.fail_on, self.opened = fail_on, opened  # opened: the prompt ends inside <think> (a thinking template)
        self.plain = plain  # the run's prompts are plain text: the worker sends the latest message alone
        self.calls = []
        self.texts, self.cut_off = texts or {}, cut_off  # a side's own reply text; the sides whose replies hit the budget

    def chat(self, run_dir, checkpoint, messages, sampling, system_prompt=None, sides=("base", "tuned"), guard=None):
        self.calls.append({"sides": tuple(sides), "messages": messages, "sampling": sampling})
        refusal = guard() if guard else None
        if refusal:
            raise StudioError(refusal)
        for side in sides:
            if side == self.fail_on:
                raise StudioError("out of memory while generating", "", "lower the max tokens")
            text = self.texts.get(side, f"<think>t</think>{side} answer")
            for ch in text:
                yield TextDelta(side=side, delta=ch)
            state = {"verified": True, "badge": f"{side} checked", "side": side}
            yield Reply(side=side, text=text, adapter_state=state, cut_off=side in self.cut_off,
                        max_new_tokens=sampling["max_new_tokens"], prompt_opens_think=self.opened, plain_prompt=self.plain)
        yield Done()


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("model: {name_or_path: demo}\n")
    (run / "status.json").write_text(json.dumps({"state": "finished"}))
    return run


def tab_with(worker, runs_dir):
    with gr.Blocks():
        return ChatTab(runs_dir, worker)


def last(gen):
    out = None
    for out in gen:
        pass
    return out


def test_a_failure_on_the_tuned_side_takes_the_whole_turn_back_on_both_sides(run_dir):
    tab = tab_with(FakeWorker(fail_on="tuned"), run_dir.parent)
    session = new_session(False)
    out = last(tab._turn("r1", "final", "q1", session, *SETTINGS))
    session = out[5]
    assert session["base"] == [] and session["tuned"] == []  # the base reply of the failed turn is not kept
    assert "Could not generate" in out[4] and "out of memory" in out[4] and out[-1] == "q1"  # the message goes back in the box


def test_both_sides_are_generated_in_one_worker_call_with_their_own_histories(run_dir):
    worker = FakeWorker()
    tab = tab_with(worker, run_dir.parent)
    session = last(tab._turn("r1", "final", "q1", new_session(False), *SETTINGS))[5]
    session = last(tab._turn("r1", "final", "q2", session, *SETTINGS))[5]
    call = worker.calls[-1]
    assert call["sides"] == ("base", "tuned")
    assert [m["content"] for m in call["messages"]["base"]] == ["q1", "<think>t</think>base answer", "q2"]
    assert [m["content"] for m in call["messages"]["tuned"]] == ["q1", "<think>t</think>tuned answer", "q2"]


def test_blind_mode_shows_nothing_until_both_replies_are_done_and_generates_in_pane_order(run_dir):
    worker = FakeWorker()
    tab = tab_with(worker, run_dir.parent)
    outputs = list(tab._turn("r1", "final", "q", new_session(True), *SETTINGS))
    session = outputs[-1][5]
    assert worker.calls[-1]["sides"] == (session["a_is"], "tuned" if session["a_is"] == "base" else "base")
    for out in outputs[:-1]:  # while generating, neither pane shows a reply
        assert all(m["role"] == "user" for m in out[0] + out[1])
    assert "Model A" in outputs[-1][2] and "Model B" in outputs[-1][3] and "base" not in outputs[-1][2] + outputs[-1][3]


def test_retry_before_voting_in_blind_mode_keeps_the_replies(run_dir):
    tab = tab_with(FakeWorker(), run_dir.parent)
    session = last(tab._turn("r1", "final", "q", new_session(True), *SETTINGS))[5]
    out = last(tab.retry_last("r1", "final", session, *SETTINGS))
    assert "Vote for the last turn first" in out[4]
    kept = out[5]
    assert len(kept["base"]) == 2 and len(kept["tuned"]) == 2  # nothing was taken back
    voted = tab.vote("r1", "final", kept, "tie")
    assert "Recorded" in voted[4]
    record = json.loads((run_dir / "preferences.jsonl").read_text())
    assert set(record["replies"]) == {"base", "tuned"} and record["preferred"] == "tie"


def test_a_plain_text_run_shows_each_message_alone_as_the_models_get_it(run_dir):
    """A run trained on plain-text prompts gets only the latest message (no conversation): the panes showed the earlier
    turns as if the models had read them, and both sides looked lost at a follow-up question."""
    worker = FakeWorker(plain=True)
    tab = tab_with(worker, run_dir.parent)
    first = last(tab._turn("r1", "final", "What is 17*3?", new_session(False), *SETTINGS))
    assert "each message goes to both models alone, without the earlier turns" in first[4]
    second = last(tab._turn("r1", "final", "And times 2?", first[5], *SETTINGS))
    assert [m["content"] for m in worker.calls[-1]["messages"]["tuned"]] == ["And times 2?"]
    assert [m["content"] for m in second[5]["tuned"] if m["role"] == "user"] == ["And times 2?"]
    chat_run = last(tab_with(FakeWorker(), run_dir.parent)._turn("r1", "final", "q", new_session(False), *SETTINGS))
    assert "alone" not in chat_run[4]  # a chat run's note says nothing of it


def test_the_blind_tally_counts_the_votes_for_the_checkpoint_compared(run_dir):
    """Votes for checkpoint-2 are not votes for `final`: the tally said "tuned 3" for a final never voted on."""
    tab = tab_with(FakeWorker(), run_dir.parent)
    for checkpoint, choice in (("checkpoint-2", "a"), ("checkpoint-2", "a"), ("final", "tie")):
        session = last(tab._turn("r1", checkpoint, "q", new_session(True), *SETTINGS))[5]
        said = tab.vote("r1", checkpoint, session, choice)[4]
    assert "with the tuned side at final: tuned 0, base 0, tie 1" in said, said


def test_retry_while_a_run_trains_is_refused_before_anything_is_taken_back(run_dir):
    import os

    tab = tab_with(FakeWorker(), run_dir.parent)
    session = last(tab._turn("r1", "final", "q", new_session(False), *SETTINGS))[5]
    busy = run_dir.parent / "r2"
    busy.mkdir()
    (busy / "status.json").write_text(json.dumps({"state": "running", "pid": os.getpid()}))
    out = last(tab.retry_last("r1", "final", session, *SETTINGS))
    assert "is training" in out[4] and len(out[5]["base"]) == 2 and out[-1] is not None


def test_greedy_decoding_is_an_option_and_the_note_says_one_reply_is_one_sample(run_dir):
    from rloo_studio.ui.chat_tab import ONE_SAMPLE_NOTE

    worker = FakeWorker()
    tab = tab_with(worker, run_dir.parent)
    out = last(tab._turn("r1", "final", "q1", new_session(False), "", 0.7, 0.95, 8, 3, "greedy"))
    assert worker.calls[-1]["sampling"]["greedy"] is True
    assert "greedy decoding" in out[4] and "Retry gives the same replies" in out[4]
    out = last(tab._turn("r1", "final", "q1", new_session(False), "", 0.7, 0.95, 8, 3))  # sampled, the default
    assert worker.calls[-1]["sampling"]["greedy"] is False and "one sample each" in out[4]
    assert "one sample" in ONE_SAMPLE_NOTE and "Evaluate" in ONE_SAMPLE_NOTE


def test_a_cut_off_reply_and_a_looping_reply_are_marked_and_the_marks_never_reach_the_model(run_dir):
    """The issue's tuned reply, one sentence six times; the base reply cut off by Max new tokens."""
    looping = "I can help with that. " * 6
    worker = FakeWorker(texts={"base": "Let me start by", "tuned": looping}, cut_off=("base",))
    tab = tab_with(worker, run_dir.parent)
    out = last(tab._turn("r1", "final", "q1", new_session(False), *SETTINGS))
    left, right = out[0], out[1]
    assert left[-1]["content"] == "⚠️ ✂ cut off at 8 tokens" and left[-2]["content"] == "Let me start by"
    assert right[-1]["content"] == "⚠️ 🔁 repeats “i can help with that.” 6 times (100 % of the reply)"
    # A reply that finished and does not loop carries no mark.
    plain = last(tab_with(FakeWorker(), run_dir.parent)._turn("r1", "final", "q1", new_session(False), *SETTINGS))
    assert not any("⚠️" in m["content"] for m in plain[0] + plain[1])
    # The next turn sends the replies as they were said: no marks, no extra keys.
    last(tab._turn("r1", "final", "q2", out[5], *SETTINGS))
    sent = worker.calls[-1]["messages"]
    assert sent["base"] == [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "Let me start by"},
                            {"role": "user", "content": "q2"}]
    assert sent["tuned"][1] == {"role": "assistant", "content": looping}


def test_picking_a_run_sets_the_sampling_controls_to_what_the_run_trained_with(run_dir):
    """Temperature, top-p and max new tokens start at the run's effective values (TRL's generation_kwargs win over the
    rloo keys, as in training), and one line says so, top-k included (the chat always applies the run's)."""
    tab = tab_with(FakeWorker(), run_dir.parent)
    (run_dir / "config.yaml").write_text("model: {name_or_path: demo}\n"
                                         "rloo: {temperature: 1.2, top_k: 20, max_completion_length: 64,"
                                         " generation_kwargs: {top_p: 0.9}}\n")
    out = tab.pick_run("r1", False)
    temperature, top_p, max_tokens, note = out[-4:]
    assert (temperature["value"], top_p["value"], max_tokens["value"]) == (1.2, 0.9, 64)
    assert note == ("Sampling as run `r1` trained: temperature 1.2, top-p 0.9, top-k 20, up to 64 new tokens; "
                    "change them in Settings (top-k stays the run's).")

    # A run that left them unset trained with the defaults: TRL's temperature and top-p 1.0, top-k off, and ours, 256 tokens.
    (run_dir / "config.yaml").write_text("model: {name_or_path: demo}\n")
    temperature, top_p, max_tokens, note = tab.pick_run("r1", False)[-4:]
    assert (temperature["value"], top_p["value"], max_tokens["value"]) == (1.0, 1.0, 256)
    assert "temperature 1.0, top-p 1.0, top-k off, up to 256 new tokens" in note

    # A config that cannot be read leaves the controls as they are and says why.
    (run_dir / "config.yaml").write_text("model: [\n")
    temperature, top_p, max_tokens, note = tab.pick_run("r1", False)[-4:]
    assert temperature == gr.update() and max_tokens == gr.update()
    assert "could not be read" in note


def test_a_reply_that_is_only_a_markdown_marker_is_shown_as_written():
    """A 4-token reply `+` showed as an empty list bullet, which read as no reply at all (a walk)."""
    from rloo_studio.ui.chat_tab import pane

    shown = pane([{"role": "user", "content": "q"}, {"role": "assistant", "content": "+"},
                  {"role": "assistant", "content": "- 3 trains"}, {"role": "assistant", "content": "#"}])
    assert [m["content"] for m in shown[1:]] == ["\\+", "- 3 trains", "\\#"]


def test_the_sampling_note_says_the_values_in_use_and_where_they_differ_from_training(run_dir):
    """A tester set Max new tokens to 3; the note still read "Sampling as run … trained: … up to 24 new tokens", and the
    line under the replies left the token limit out (a walk)."""
    tab = tab_with(FakeWorker(), run_dir.parent)
    (run_dir / "config.yaml").write_text("model: {name_or_path: demo}\nrloo: {max_completion_length: 24}\n")
    as_trained = tab.pick_run("r1", False)[-1]
    assert as_trained.startswith("Sampling as run `r1` trained: temperature 1.0, top-p 1.0, top-k off, up to 24 new tokens")
    assert tab.note_now("r1", 1.0, 1.0, 24, "sampled") == as_trained  # the settings as the run trained: the same line

    note = tab.note_now("r1", 1.0, 1.0, 3, "sampled")
    assert note.startswith("Sampling now: temperature 1.0, top-p 1.0, top-k off, up to 3 new tokens")
    assert "run `r1` trained with up to 24 new tokens" in note and "as run `r1` trained:" not in note

    note = tab.note_now("r1", 0.7, 0.9, 24, "sampled")
    assert "temperature 0.7, top-p 0.9" in note and "trained with temperature 1.0, top-p 1.0" in note

    # Greedy (or temperature 0, which the worker decodes greedily) uses neither temperature nor top-p.
    for temperature, decoding in ((1.0, "greedy"), (0.0, "sampled")):
        note = tab.note_now("r1", temperature, 1.0, 3, decoding)
        assert note.startswith("Greedy decoding now (the most likely token each time), up to 3 new tokens"), note
        assert "run `r1` trained sampling with temperature 1.0, top-p 1.0, top-k off, up to 24 new tokens" in note

    # The line under the replies says the token limit the replies had.
    out = last(tab._turn("r1", "final", "q1", new_session(False), "", 1.0, 1.0, 3, 0))
    assert out[4].startswith("Both replies use seed 0, temperature 1.0, top-p 1.0, up to 3 new tokens: one sample each")
    out = last(tab._turn("r1", "final", "q1", new_session(False), "", 0.0, 1.0, 3, 0))
    assert out[4].startswith("Both replies use greedy decoding (the most likely token each time), up to 3 new tokens")
    assert not tab.note_now(None, 1.0, 1.0, 3, "sampled")


def test_a_reply_that_only_thinks_or_is_cut_off_in_its_thought_is_marked(run_dir):
    """At 6 tokens the tuned pane showed 'Thinking (empty)' and no reply, with no mark (a walk): the thought opened and
    never closed, and the mark rule read the whole text, tag included, as the reply."""
    from rloo_studio.ui.chat_tab import pane

    def shown(content, cut_off, budget=6):
        return [(m.get("metadata", {}).get("title"), m["content"])
                for m in pane([{"role": "user", "content": "q"},
                               {"role": "assistant", "content": content, "cut_off": cut_off, "max_new_tokens": budget}])[1:]]

    # It ended (an end token) inside an open thought: no reply, said so.
    assert shown("<think>\n", False) == [("Thinking", "(empty)"), (None, "⚠️ ∅ empty reply: the thinking never closed")]
    # It ran out of tokens inside the thought: cut off there, not also empty.
    assert shown("<think>20+2", True) == [("Thinking", "20+2"),
                                         (None, "⚠️ ✂ cut off at 6 tokens in the thinking, before it closed")]
    # A closed thought with nothing after it, and a reply cut off after its thought, as before.
    assert shown("<think>20+22</think>", False) == [("Thinking", "20+22"), (None, "⚠️ ∅ empty reply")]
    assert shown("<think>20+22</think>4", True) == [("Thinking", "20+22"), (None, "4"), (None, "⚠️ ✂ cut off at 6 tokens")]


def test_both_panes_split_and_mark_replies_by_one_rule(run_dir):
    """At 3 tokens the base reply showed as '+42' with no Thinking box, the tuned one with one (a walk). The demo model,
    taught one-turn prompts, sometimes answers a later turn without opening a thought: the base reply had none. Both
    panes read a reply the same way and say which was cut off inside its thought."""
    worker = FakeWorker(texts={"base": "+42", "tuned": "<think>20"}, cut_off=("base", "tuned"))
    tab = tab_with(worker, run_dir.parent)
    out = last(tab._turn("r1", "final", "q", new_session(False), "", 1.0, 1.0, 3, 0))
    left = [(m.get("metadata", {}).get("title"), m["content"]) for m in out[0][1:]]
    right = [(m.get("metadata", {}).get("title"), m["content"]) for m in out[1][1:]]
    assert left == [(None, "+42"), (None, "⚠️ ✂ cut off at 3 tokens")]
    assert right == [("Thinking", "20"), (None, "⚠️ ✂ cut off at 3 tokens in the thinking, before it closed")]


def test_every_change_in_settings_rewrites_the_sampling_note(run_dir):
    """The note was written only when a run was picked, so it kept the run's values after Settings changed (a walk)."""
    with gr.Blocks() as demo:
        tab = ChatTab(run_dir.parent, FakeWorker())
        tab.wire(demo)
    writers = [d for d in demo.config["dependencies"] if tab.sampling_note._id in d["outputs"]]
    triggers = {target for d in writers for target, event in d["targets"] if event == "change"}
    assert {tab.temperature._id, tab.top_p._id, tab.max_tokens._id, tab.decoding._id} <= triggers, writers


def test_a_thinking_templates_reply_is_read_after_the_prompts_think(run_dir):
    """A thinking template opens `<think>` in the prompt: the reply starts inside the thought, without a tag, so one cut
    off mid-thought showed its reasoning as the reply."""
    worker = FakeWorker(texts={"base": "6 times 7 is", "tuned": "6*7</think>42"}, cut_off=("base",), opened=True)
    tab = tab_with(worker, run_dir.parent)
    out = last(tab._turn("r1", "final", "q", new_session(False), "", 1.0, 1.0, 3, 0))
    left = [(m.get("metadata", {}).get("title"), m["content"]) for m in out[0][1:]]
    right = [(m.get("metadata", {}).get("title"), m["content"]) for m in out[1][1:]]
    assert left == [("Thinking", "6 times 7 is"), (None, "⚠️ ✂ cut off at 3 tokens in the thinking, before it closed")]
    assert right == [("Thinking", "6*7"), (None, "42")]
    last(tab._turn("r1", "final", "q2", out[5], "", 1.0, 1.0, 3, 0))  # sent back as the model said it, no tag added
    assert worker.calls[-1]["messages"]["base"][1] == {"role": "assistant", "content": "6 times 7 is"}


def test_a_reply_still_streaming_is_read_as_the_sides_last_reply_was(run_dir):
    """While a thinking template's reply streams, its text is the thought (as the side's finished replies show), not a
    reply that moves into a Thinking block once it ends."""
    from rloo_studio.ui.chat_tab import pane

    before = [{"role": "user", "content": "q1"},
              {"role": "assistant", "content": "6*7</think>42", "opened": True, "cut_off": False, "max_new_tokens": 8},
              {"role": "user", "content": "q2"}]
    streaming = pane(before, pending="5 times 8")[-1]
    assert streaming["content"] == "5 times 8" and streaming["metadata"] == {"title": "Thinking", "status": "pending"}

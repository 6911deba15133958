"""The scoring children kept waiting (workers.scorer.Standby): one at a time, for the request they can serve."""

from __future__ import annotations

import os
import threading
import time

import pytest

from rloo_studio import sandbox
from rloo_studio.workers import scorer


@pytest.fixture
def started(monkeypatch):
    """Every child a Standby starts, recorded (real scoring children, waiting for a request they never get)."""
    children = []
    start = scorer.start_scorer

    def recorded(tokenizer=None, specs=()):
        children.append((tokenizer, start(tokenizer, specs)))
        return children[-1][1]

    monkeypatch.setattr(scorer, "start_scorer", recorded)
    yield children
    for _, child in children:
        child.kill()
        child.wait()


def test_a_child_that_loaded_another_tokenizer_is_ended_not_used(started, tmp_path):
    written = scorer.Standby(preload=True)
    written.refill("model-a")
    [(tokenizer, child)] = started
    assert tokenizer == "model-a" and written.waiting is child
    assert written.take("model-b") is None  # the person changed the model: that child cannot serve the request
    assert child.poll() is not None and written.waiting is None
    written.refill("model-b")
    assert written.take("model-b") is started[-1][1] and written.waiting is None


def test_one_child_waits_at_a_time_and_a_preview_child_loads_no_tokenizer(started):
    previews = scorer.Standby()
    previews.warm("model-a")
    first = previews.waiting
    previews.warm("model-a")  # one is waiting already: none is started
    assert len(started) == 1 and started[0][0] is None  # sampled completions bring their ids: nothing to preload
    previews.refill()  # another request's refill meanwhile: the older child is ended, one is enough
    assert first.poll() is not None and previews.waiting is started[-1][1] and previews.waiting.poll() is None
    assert previews.take("any tokenizer") is started[-1][1] and previews.waiting is None  # it serves any request
    previews.warm()
    previews.end()
    assert started[-1][1].poll() is not None and previews.waiting is None


@pytest.mark.skipif(not sandbox.status().available and not os.environ.get("RLOO_STUDIO_REQUIRE_SANDBOX"),
                    reason=f"no sandbox on this machine: {sandbox.status().note}")
def test_a_sandboxed_child_left_waiting_outlives_the_server_thread_that_started_it(started):
    """A check's thread refills the standby, then goes back to the server's pool, which ends idle threads; the
    sandbox ends its child with its parent, which Linux takes to be the thread. A child killed so was taken by the
    next pinned check and died in the middle of it ("scoring failed: exit code -9")."""
    written = scorer.Standby()
    # As a pool thread does: it refills, goes on to other events a while (bubblewrap arms itself meanwhile), then ends.
    thread = threading.Thread(target=lambda: (written.refill(), time.sleep(1.0)))
    thread.start()
    thread.join()
    time.sleep(0.5)  # the kernel acts as the thread ends
    child = written.take()
    assert child is not None and child.poll() is None, f"exit code {child.returncode}: ended with the thread"
    source = "def short(completions, **kwargs):\n    return [float(len(c) < 20) for c in completions]\n"
    result = scorer.score({"groups": [{"prompt": "p", "row": {}, "completions": ["a short answer", "b"]}],
                           "num_generations": 2, "source": source, "rewards": [{"file": "rewards.py"}]},
                          timeout_s=60, proc=child)
    assert not result.get("problems") and [r["total"] for r in result["rows"]] == [1.0, 1.0], result

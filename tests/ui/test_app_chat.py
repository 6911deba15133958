"""The Chat tab through the app's API: both panes fill with verified badges, blind votes are recorded,
and chatting while a run trains is refused with the reason."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.app import connect, served_app

pytestmark = pytest.mark.slow

RUN_ID = "20260101-000000-chat"


@pytest.fixture(scope="module")
def chat_runs_dir(tmp_path_factory, adapter_run):
    runs_dir = tmp_path_factory.mktemp("app-chat") / "runs"
    adapter_run(runs_dir / RUN_ID)
    return runs_dir


def _texts(pane) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else " ".join(b.get("text", "") for b in m["content"]) for m in pane]


def test_chat_fills_both_panes_with_verified_badges_and_blind_votes_are_recorded(chat_runs_dir):
    with served_app(chat_runs_dir, own_children=True) as url:
        client = connect(url)
        run_update, ckpt_update = client.predict(None, api_name="/chat_runs")
        assert run_update["value"] == RUN_ID and run_update["choices"][0][0] == RUN_ID
        assert ckpt_update["value"] == "final" and [c[0] for c in ckpt_update["choices"]] == ["final", "checkpoint-1"]
        picked = client.predict(RUN_ID, False, api_name="/chat_pick_run")
        assert picked[1] == "Answer briefly."  # the run's system prompt
        # The sampling controls hold what the run trained with (TRL's temperature and top-p, its 16-token completions).
        assert [u["value"] for u in picked[-4:-1]] == [1.0, 1.0, 16], picked[-4:]
        assert picked[-1] == (f"Sampling as run `{RUN_ID}` trained: temperature 1.0, top-p 1.0, top-k off, up to 16 new tokens; "
                              "change them in Settings (top-k stays the run's).")

        out = client.predict(RUN_ID, "final", "What is 12 + 7?", "Answer briefly.", 0.0, 1.0, 12, 0, api_name="/chat")
        left, right, left_badge, right_badge, status = out[:5]
        assert _texts(left)[0] == "What is 12 + 7?" and _texts(right)[0] == "What is 12 + 7?"
        assert len(left) >= 2 and len(right) >= 2
        assert _texts(left)[1:] != _texts(right)[1:]
        assert "Base model" in left_badge and "✓" in left_badge and "adapter OFF" in left_badge
        assert "Tuned model" in right_badge and "✓" in right_badge and "ON" in right_badge
        # Temperature 0 decodes greedily: the line says so, with the token limit the replies had.
        assert status.startswith("Both replies use greedy decoding (the most likely token each time), up to 12 new tokens")
        assert len(worker_processes()) == 1  # the replies came from one inference worker (what the refusal test looks for)

        # Retry moves to the next seed and regenerates the same user turn.
        retried = client.predict(RUN_ID, "final", "Answer briefly.", 0.7, 1.0, 12, 0, api_name="/chat_retry")
        assert retried[-1] == 1 and _texts(retried[0])[0] == "What is 12 + 7?" and len(_texts(retried[0])) >= 2

        # Blind mode: panes are A and B; a vote reveals the order and is appended to preferences.jsonl.
        client.predict(RUN_ID, True, api_name="/chat_pick_run")
        blind = client.predict(RUN_ID, "final", "What is 3 + 4?", "", 0.0, 1.0, 12, 0, api_name="/chat")
        assert "Model A" in blind[2] and "Model B" in blind[3]
        assert "Base" not in blind[2] + blind[3] and "Tuned" not in blind[2] + blind[3]
        voted = client.predict(RUN_ID, "final", api_name="/chat_vote_a")
        assert "A was the" in voted[4]
        records = [json.loads(line) for line in (chat_runs_dir / RUN_ID / "preferences.jsonl").read_text().splitlines()]
        assert len(records) == 1 and records[0]["choice"] == "a" and records[0]["preferred"] == records[0]["a_is"]
        assert records[0]["prompt"] == "What is 3 + 4?"

        # One token is not enough to finish a reply: both panes mark it cut off (random adapters emit no end token first).
        client.predict(RUN_ID, False, api_name="/chat_pick_run")
        cut = client.predict(RUN_ID, "final", "Count to ten.", "", 0.0, 1.0, 1, 0, "greedy", api_name="/chat")
        for pane in cut[:2]:
            assert _texts(pane)[-1] == "⚠️ ✂ cut off at 1 token", _texts(pane)


def worker_processes() -> list[int]:
    """Pids of inference workers started by this test process (the app is served in it, with `own_children`: a worker
    forked from the tests' warm starter has the starter's command line and parent)."""
    from rloo_studio.workers.inference import WORKER_MODULE

    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if WORKER_MODULE in cmdline and ppid == os.getpid():
            found.append(int(entry.name))
    return found


def test_chat_while_a_run_trains_is_refused_and_nothing_is_loaded(chat_runs_dir, tmp_path):
    busy = chat_runs_dir / "20260101-000001-busy"
    busy.mkdir()
    (busy / "status.json").write_text(json.dumps({"state": "running", "pid": os.getpid(), "step": 1, "max_steps": 10}))
    try:
        with served_app(chat_runs_dir, own_children=True) as url:
            client = connect(url)
            client.predict(None, api_name="/chat_runs")
            client.predict(RUN_ID, False, api_name="/chat_pick_run")
            workers_before = set(worker_processes())
            out = client.predict(RUN_ID, "final", "Hello?", "", 0.0, 1.0, 8, 0, api_name="/chat")
            assert "is training" in out[4] and "20260101-000001-busy" in out[4] and "stop it" in out[4]
            assert len(out[0]) == 0 and len(out[1]) == 0
            # This app's inference worker was never started, so no model was loaded (a worker of an earlier
            # test's app may still be alive: only a new pid would mean a start).
            assert set(worker_processes()) == workers_before
    finally:
        (busy / "status.json").write_text(json.dumps({"state": "stopped", "step": 1, "max_steps": 10}))

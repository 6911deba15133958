"""The app's handle on the inference worker, without a model: start failures and reservations."""

from __future__ import annotations

import sys

import pytest

from rloo_studio.errors import StudioError
from rloo_studio.workers.inference import InferenceWorker

MESSAGES = [{"role": "user", "content": "hi"}]


def test_a_worker_that_cannot_start_says_so_and_where_its_log_is(tmp_path):
    broken = InferenceWorker(log_path=tmp_path / "inference.log",
                             command=[sys.executable, "-c", "import sys; print('ImportError: torch is broken', file=sys.stderr); sys.exit(1)"])
    with pytest.raises(StudioError) as info:
        list(broken.chat(tmp_path, "final", MESSAGES, {}))
    message = str(info.value)
    assert "the chat worker could not start (exit code 1)" in message and str(tmp_path / "inference.log") in message
    assert "send again: a fresh worker" not in message  # no promise that a retry helps
    assert "torch is broken" in (tmp_path / "inference.log").read_text()
    assert broken.restarts == 0  # it was not retried in a loop


def test_an_evaluation_or_export_keeps_the_chat_from_loading_a_model(tmp_path):
    worker = InferenceWorker(log_path=tmp_path / "inference.log", command=[sys.executable, "-c", "raise SystemExit(9)"])
    with worker.reserved("An evaluation"):
        with pytest.raises(StudioError, match="An evaluation is running"):
            list(worker.chat(tmp_path, "final", MESSAGES, {}))
        with pytest.raises(StudioError, match="An evaluation is running"):
            with worker.reserved("An export"):
                pass
        assert not worker.alive
    assert worker.reserved_by is None


def test_a_guard_refuses_under_the_lock_before_anything_starts(tmp_path):
    worker = InferenceWorker(log_path=tmp_path / "inference.log", command=[sys.executable, "-c", "raise SystemExit(9)"])
    with pytest.raises(StudioError, match="a run is training"):
        list(worker.chat(tmp_path, "final", MESSAGES, {}, guard=lambda: "a run is training"))
    assert not (tmp_path / "inference.log").exists()  # no process was started

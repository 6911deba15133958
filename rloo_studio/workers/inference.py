"""The app's handle on the inference worker: start it, send requests, stream events, restart it.

At most one inference worker runs (`python -m rloo_studio.engine.inference_worker`); it keeps a
loaded model between chat messages, and the reward preview's model between previews. Requests
are serialised by a lock — two browser sessions
chatting take turns instead of racing on one model. A request that outlives its time limit
kills the worker; a worker that died (out of memory, a crash, killed) is started afresh on the
next request and the model it had loaded is loaded again, so the app stays usable. Starting
training shuts the worker down first (`shutdown`), so only one process holds the GPU.

This module never imports torch: it only manages a process, writes the worker's requests and reads its events
(the typed messages of `protocol`, one JSON line each). It yields the events to its callers as they are.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

from .. import runs
from ..errors import StudioError
from ..procs import DEVNULL, PIPE, Child, usable_cores
from ..protocol import (ChatRequest, Done, Failed, InferenceRequest, LoadRequest, PingRequest, PreviewRequest,
                        Ready, ShutdownRequest, WorkerEvent, worker_event)

WORKER_MODULE = "rloo_studio.engine.inference_worker"
START_TIMEOUT_S = 180    # importing torch + transformers on a slow laptop; later requests are fast
LOAD_TIMEOUT_S = 900     # loading a large model from a slow disk
REQUEST_TIMEOUT_S = 900  # one chat turn, both sides; a hung generation is killed after this


class WorkerExited(StudioError):
    """The worker process ended while a request waited for it."""


class _Exited:
    """Put on a worker's event queue when its process has ended (no line of the pipe: the app's own marker)."""


class InferenceWorker:
    def __init__(self, log_path: str | Path | None = None, command: list[str] | None = None):
        self.log_path = Path(log_path) if log_path else None
        self.command = command or [sys.executable, "-m", WORKER_MODULE]
        self._proc: Child | None = None
        self._events: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self.loaded: tuple[str, str] | None = None   # (run_dir, checkpoint) the worker holds
        self._pending = False                         # a request was sent and its done/error not yet read
        self.reserved_by: str | None = None           # an evaluation or export that keeps the worker stopped
        self.restarts = 0

    # ---- process -----------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.alive else None

    def status(self) -> dict:
        """What the worker holds (starts it if needed): loaded adapter, adapters, base model loads."""
        with self._lock:
            events = list(self._send(PingRequest(), START_TIMEOUT_S))
        return events[-1].result or {}

    def _start(self) -> None:
        if self._proc is not None:
            self.restarts += 1
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "a", encoding="utf-8") if self.log_path else DEVNULL
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # On a CPU the worker shares the cores with the app's server, the browser and the scoring child.
        # PyTorch's threads wait for each other by spinning, so one more thread than free cores makes every
        # operation wait for a descheduled thread: a warm demo preview measured 1.6-2.8 s with both cores
        # and 0.5-0.7 s with one (benchmarks/preview_click.py, 2 cores). Leave one core to the rest; a
        # person's own OMP_NUM_THREADS wins. (On a GPU these CPU threads hardly matter.)
        env.setdefault("OMP_NUM_THREADS", str(max(1, usable_cores() - 1)))
        # Its events go to a queue of its own: a late line of a worker that was replaced never reaches the next one.
        events: queue.Queue = queue.Queue()
        self._events = events
        self.loaded = None
        self._proc = Child(self.command, stdin=PIPE, stdout=lambda line: self._event(events, line), stderr=log, env=env,
                           on_end=lambda: events.put(_Exited()))
        if log is not DEVNULL:
            log.close()  # the child holds its own descriptor
        try:
            event = self._next(START_TIMEOUT_S, "start")
        except WorkerExited as exc:
            # Not a worker that died while idle (worth one retry) but one that cannot start at all:
            # a broken install or driver fails the same way every time.
            raise StudioError(exc.what.replace("stopped unexpectedly", "could not start"),
                              "it ended before it was ready: importing torch/transformers or starting the GPU failed",
                              f"read {self.log_path or 'its output'} for the error; after fixing it, send again") from None
        if not isinstance(event, Ready):
            raise self._as_error(event, "the chat worker did not start")

    @staticmethod
    def _event(events: queue.Queue, line: str) -> None:
        try:
            data = json.loads(line)
        except ValueError:
            return  # not an event (a library's print)
        if not isinstance(data, dict) or "event" not in data:
            return
        try:
            events.put(worker_event(data))
        except ValueError as exc:
            # A worker of another version: what it meant cannot be known, and a request's end may never be read.
            # Fatal: the worker is ended, and the next request starts a fresh one.
            events.put(Failed({"what": f"the chat worker sent a message this app cannot read ({exc})",
                               "why": "the worker and the app come from different versions of RLOO Studio",
                               "fix": "restart the app"}, fatal=True))

    def _next(self, timeout_s: float, what: str) -> WorkerEvent:
        try:
            event = self._events.get(timeout=timeout_s)
        except queue.Empty:
            self.kill()
            raise StudioError(f"the chat worker did not answer within {timeout_s:.0f} s ({what})",
                              "a generation or a model load hung", "it was stopped; send again to start a fresh one") from None
        if isinstance(event, _Exited):
            code = self._proc.wait() if self._proc else None
            where = f" (its log: {self.log_path})" if self.log_path else ""
            self.loaded = None
            raise WorkerExited(f"the chat worker stopped unexpectedly (exit code {code}){where}",
                              "it crashed or was killed, e.g. out of memory", "send again: a fresh worker starts and reloads the model")
        return event

    def kill(self) -> None:
        """End the worker and everything it started, and wait until it has."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self.loaded = None

    @contextlib.contextmanager
    def reserved(self, what: str):
        """Stop the worker and keep it stopped while `what` (e.g. "An evaluation") uses the model memory.

        Chat requests meanwhile are refused with `what` in the message instead of loading a model
        next to it. Raises StudioError when something else holds the reservation.
        """
        with self._lock:
            if self.reserved_by:
                raise StudioError(f"{self.reserved_by} is running", "it holds the model memory; one such job runs at a time",
                                  "wait for it to finish, then try again")
            self.reserved_by = what
            self._stop_process()
        try:
            yield
        finally:
            self.reserved_by = None

    def shutdown(self, timeout_s: float = 10) -> None:
        """Stop the worker (and free its memory), e.g. before training starts."""
        with self._lock:
            self._stop_process(timeout_s)

    def _stop_process(self, timeout_s: float = 10) -> None:
        if self.alive:
            try:
                self._proc.send(json.dumps(ShutdownRequest().to_dict()) + "\n")
            except OSError:
                pass
            self._proc.wait(timeout_s)  # past it, its tree is killed
        self.kill()

    # ---- requests ----------------------------------------------------------------------------

    @staticmethod
    def _as_error(event: WorkerEvent, fallback: str) -> StudioError:
        return StudioError.from_dict(event.error if isinstance(event, Failed) else None, fallback)

    def _send(self, request: InferenceRequest, timeout_s: float) -> Iterator[WorkerEvent]:
        if not self.alive:
            self._start()
        try:
            self._proc.send(json.dumps(request.to_dict()) + "\n")
        except OSError:  # it died between the liveness check and the write
            self.loaded = None
            raise WorkerExited("the chat worker stopped unexpectedly", "it crashed or was killed",
                               "send again: a fresh worker starts and reloads the model") from None
        self._pending = True
        while True:
            event = self._next(timeout_s, request.tag)
            if isinstance(event, (Failed, Done)):
                self._pending = False
            if isinstance(event, Failed):
                if event.fatal:
                    self.kill()  # it exits by itself; make sure, and reload on the next request
                raise self._as_error(event, "the chat worker failed")
            yield event
            if isinstance(event, Done):
                return

    def ensure_loaded(self, run_dir: str | Path, checkpoint: str) -> Iterator[WorkerEvent]:
        """Load (run, checkpoint) unless it is what the worker holds; yields progress events.

        The weights' modification time is part of what is held: a run resumed from the command line
        rewrites adapter/ or a checkpoint, and the chat must not keep answering with the old copy."""
        key = (str(Path(run_dir).resolve()), checkpoint, runs.weights_stamp(run_dir, checkpoint))
        if self.alive and self.loaded == key:
            return
        self.loaded = None
        for event in self._send(LoadRequest(run_dir=key[0], checkpoint=checkpoint), LOAD_TIMEOUT_S):
            yield event
        self.loaded = key

    def _refuse_if_busy(self, what: str, then: str, guard) -> None:
        """Under the lock: refuse while an evaluation or export holds the model memory, or when `guard()` gives a reason."""
        if self.reserved_by:
            raise StudioError(f"{self.reserved_by} is running", f"it needs the model memory {what} would take",
                              f"wait for it to finish, then {then}")
        refusal = guard() if guard else None
        if refusal:
            raise StudioError(refusal)

    def chat(self, run_dir: str | Path, checkpoint: str, messages: list[dict] | dict[str, list[dict]], sampling: dict,
             system_prompt: str | None = None, sides=("base", "tuned"), guard=None) -> Iterator[WorkerEvent]:
        """Load if needed, then generate each side in turn; yields Progress, TextDelta, Reply and one final Done (with
        the whole turn's `seconds`).

        `messages` is the conversation, or a dict with each side's own conversation. The whole turn
        holds the lock, so nothing (another session, training being started) gets between the sides.
        `guard()`, called under the lock, may return a reason to refuse (e.g. a run is training)."""
        with self._lock:
            self._refuse_if_busy("the chat", "send again", guard)
            conversations = messages if isinstance(messages, dict) else {side: messages for side in sides}
            started = time.time()
            for attempt in (1, 2):
                answered = False
                try:
                    for event in self._chat_once(run_dir, checkpoint, conversations, sampling, system_prompt, sides, started):
                        answered = True
                        yield event
                    return
                except WorkerExited:
                    # A worker that died while idle (killed, crashed) is only noticed when a request
                    # meets it: start a fresh one and send again, once. A death mid-answer is reported.
                    if answered or attempt == 2:
                        raise
                    self.kill()
                finally:
                    if self._pending:  # abandoned mid-request (the page went away): its late events must not reach the next one
                        self.kill()
                        self._pending = False

    def preview(self, request: PreviewRequest, guard=None) -> Iterator[WorkerEvent]:
        """Sample a reward preview's completions in the worker; yields Progress events and one Done (its `result`:
        engine.sampling.sample_groups', with the worker's `pid` and `loads`).

        The worker keeps the config's base model loaded between previews (engine.warm), so a second
        preview of the same model samples at once. It holds the lock like a chat turn: a chat and a
        preview never interleave on one model. A preview replaces the chat's loaded model in memory."""
        with self._lock:
            self._refuse_if_busy("the preview", "press Sample and score again", guard)
            for attempt in (1, 2):
                answered = False
                try:
                    for event in self._send(request, LOAD_TIMEOUT_S):
                        answered = True
                        if isinstance(event, Done) and (event.result or {}).get("chat_released"):
                            self.loaded = None  # the next chat message loads its model again
                        yield event
                    return
                except WorkerExited:
                    if answered or attempt == 2:  # died mid-answer: report it; died while idle: one fresh start
                        raise
                    self.kill()
                finally:
                    if self._pending:
                        self.kill()
                        self._pending = False

    def _chat_once(self, run_dir, checkpoint, conversations, sampling, system_prompt, sides, started) -> Iterator[WorkerEvent]:
        yield from self.ensure_loaded(run_dir, checkpoint)
        for side in sides:
            request = ChatRequest(messages=conversations[side], sampling=sampling, system_prompt=system_prompt, sides=[side])
            for event in self._send(request, REQUEST_TIMEOUT_S):
                if not isinstance(event, Done):
                    yield event
        yield Done(seconds=round(time.time() - started, 2))

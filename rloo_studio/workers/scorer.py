"""The app's side of the scoring child: the person's reward code scored in a process of its own, with time limits.

`score(request)` is the one entry the page, the command line (`rloo-studio preview`, `rewards check`) and the
difficulty scan call: it sends a `protocol.ScoreRequest` to a scoring child (`python -m rloo_studio.rewards.preview`,
which scores with `rewards.preview.score` under its own memory limit) and gives back a `ScoreResult`'s dict. A hang,
`sys.exit`, a crash or a runaway allocation in reward code never takes the app down: the child is killed on its time
limit and the answer says which function was running. Problems come back in `problems`, never as exceptions.

Two time limits, watched by `procs.Child.wait`'s one deadline loop: each reward call (from the child's CALLING line
to its RETURNED line: `SCORE_TIMEOUT_S` by default), and the time outside calls (start-up, imports, loading the
reward file: `LOAD_TIMEOUT_S`), so a slow start of the child on a busy machine is not blamed on the reward.

A `Standby` keeps one child waiting for the next request of its kind, started after each request while the person
reads the result: the next request waits for nothing but the scoring. It is still a fresh process per request, with
the same limits. `PREVIEWS` serves *Sample and score* (started while the model samples), `WRITTEN` the pinned
examples (its child loads the request's tokenizer while it waits: written text needs it for its token ids, and
loading its library was most of a check's time, 7-9 s on a 2-core machine).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import replace
from typing import Sequence

from ..procs import PIPE, Child
from ..protocol import ScoreRequest, ScoreResult
from ..rewards.boxed import scoring_box, scoring_kind
from ..rewards.preview import PRELOAD_ARG, editor_code_folder

CHILD_MODULE = "rloo_studio.rewards.preview"
SCORE_TIMEOUT_S = 60  # one reward call on one preview batch; the child's start-up and imports are not counted
# Starting the child, importing the tokenizer library and loading the reward code, before any call. On a
# busy laptop the imports alone have taken a minute; this only catches a reward file that hangs on import.
LOAD_TIMEOUT_S = 600


class _ScoringChild(Child):
    """A scoring child and what it has said: its answer on stdout; on stderr a CALLING NAME / RETURNED pair around
    each reward call (with when the call began) and everything else (the user's prints, tracebacks)."""

    def __init__(self, argv: list[str], box):
        self.out_lines: list[str] = []
        self.err_lines: list[str] = []
        self.calling: dict = {}  # name and start of the call in progress, if any
        self.box_kind = box.kind  # the reward sandbox it runs in (rewards.boxed.scoring_kind)
        super().__init__(argv, stdin=PIPE, stdout=self.out_lines.append, stderr=self._stderr_line, wrap=box.prefix,
                         on_end=box.close)

    def _stderr_line(self, line: str) -> None:
        if line.startswith("CALLING "):
            self.calling.update(name=line.split(" ", 1)[1], since=time.time())
        elif line == "RETURNED":
            self.calling.clear()
        else:
            self.err_lines.append(line)


def start_scorer(tokenizer: str | None = None, specs: Sequence[dict] = ()) -> Child:
    """A scoring child, waiting for its request (a child whose parent went away reads end-of-input and exits).

    `tokenizer`: a tokenizer folder or hub id the child loads while it waits, for requests of written text (pinned
    examples, pasted completions), whose token ids need it. It runs in the reward sandbox where the system has one
    (for reward entries `specs`: see rewards.boxed.scoring_kind; a request that needs another is given a new child)."""
    preload = [PRELOAD_ARG, tokenizer] if tokenizer else []
    return _ScoringChild([sys.executable, "-m", CHILD_MODULE, *preload], scoring_box(specs))


class Standby:
    """One scoring child kept waiting for the next request of its kind (see the module docstring).

    `preload`: the child loads the request's tokenizer while it waits, and serves only a request of that tokenizer
    (the person may change the model between requests: a child that loaded another's is ended). One child is enough:
    one that another request left meanwhile is ended. Safe to share between the page's sessions."""

    def __init__(self, preload: bool = False):
        self.preload = preload
        self._lock = threading.Lock()
        self._proc: Child | None = None
        self._tokenizer: str | None = None

    @property
    def waiting(self) -> Child | None:
        """The child waiting now, if any."""
        return self._proc

    def _key(self, tokenizer: str | None) -> str | None:
        return tokenizer if self.preload else None

    def warm(self, tokenizer: str | None = None) -> None:
        """Start the child now if none waits: its start-up (imports) overlaps what the caller does meanwhile (the
        model sampling the completions to score)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc, self._tokenizer = start_scorer(self._key(tokenizer)), self._key(tokenizer)

    def take(self, tokenizer: str | None = None) -> Child | None:
        """The waiting child for a request of `tokenizer`, taken out (None when there is none that fits)."""
        with self._lock:
            proc, loaded = self._proc, self._tokenizer
            self._proc = self._tokenizer = None
        if proc is not None and loaded != self._key(tokenizer):
            _end(proc)  # loaded another model's tokenizer
            return None
        return proc

    def refill(self, tokenizer: str | None = None) -> None:
        """Start the child for the next request."""
        proc = start_scorer(self._key(tokenizer))
        with self._lock:
            replaced, self._proc, self._tokenizer = self._proc, proc, self._key(tokenizer)
        if replaced is not None:
            _end(replaced)

    def end(self) -> None:
        """End the waiting child, if any."""
        with self._lock:
            proc, self._proc, self._tokenizer = self._proc, None, None
        if proc is not None:
            _end(proc)


def _end(proc: Child) -> None:
    proc.kill()
    proc.wait()


PREVIEWS = Standby()
WRITTEN = Standby(preload=True)


def score(request: ScoreRequest | dict, timeout_s: float = SCORE_TIMEOUT_S, *, proc: Child | None = None,
          standby: Standby | None = None, load_timeout_s: float = LOAD_TIMEOUT_S) -> dict:
    """`rewards.preview.score` in a child process with time limits; problems come back in `problems`, never as
    exceptions. The answer is a ScoreResult's dict, with the whole request's `seconds`.

    `timeout_s` limits each call of a reward function, `load_timeout_s` the time outside calls. `proc`: a child from
    `start_scorer` to use; `standby`: take the child it keeps waiting, and leave the next one waiting there. The child
    ends with everything the reward code started."""
    request = ScoreRequest.of(request)
    if standby is None:
        return _score_with_code(request, timeout_s, proc, load_timeout_s)
    try:
        return _score_with_code(request, timeout_s, standby.take(request.tokenizer), load_timeout_s)
    finally:
        standby.refill(request.tokenizer)


def _score_with_code(request: ScoreRequest, timeout_s: float, proc: Child | None, load_timeout_s: float) -> dict:
    if request.source is None:
        return _score(request, timeout_s, proc, load_timeout_s)
    # This process writes the editor's code and removes it once the child has ended: a child killed on the time
    # limit, or ended by os._exit or a crash in reward code, never runs its own clean-up, and the person's code
    # would stay behind in the temporary folder.
    with editor_code_folder(request.source) as folder:
        return _score(replace(request, source=None, base_dir=folder), timeout_s, proc, load_timeout_s)


def _score(request: ScoreRequest, timeout_s: float, proc: Child | None, load_timeout_s: float) -> dict:
    started = time.time()
    specs = request.rewards
    if proc is None or proc.poll() is not None or getattr(proc, "box_kind", None) != scoring_kind(specs):
        if proc is not None:
            proc.kill()  # waiting in another sandbox (a judge on a server needs the network, `sandbox: false` none)
        proc = start_scorer(specs=specs)
    proc.give_input(json.dumps(request.to_dict()))
    clock = {"outside_calls": 0.0, "last": time.time()}

    def overdue() -> str | None:
        """Why the child must stop now, if it must: a reward call, or the time outside calls, past its limit."""
        now = time.time()
        call = dict(proc.calling)
        problem = None
        if call:
            if now - call["since"] > timeout_s:
                problem = (f"reward function `{call['name']}` did not return within {timeout_s:.0f} s.\nWhy: it may loop "
                           "forever, wait on the network, or be far too slow for training (training calls it on every batch).\n"
                           "What to do: make it return promptly; the app stopped it and is unaffected.")
        else:
            clock["outside_calls"] += now - clock["last"]
            if clock["outside_calls"] > load_timeout_s:
                problem = (f"loading the rewards did not finish within {load_timeout_s:.0f} s.\nWhy: the reward file's "
                           "top-level code (or an import it makes) may hang, or the machine is far too busy.\nWhat to do: "
                           "move slow work out of the file's top level; the app stopped it and is unaffected.")
        clock["last"] = now
        return problem

    # Ctrl-C in `rloo-studio preview` ends the child too: it must not outlive the wait (nor hold its folder).
    proc.wait(overdue=overdue)
    if proc.stopped:
        return ScoreResult.failed(proc.stopped, time.time() - started).to_dict()
    lines = "\n".join(proc.out_lines).strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("{"):
        tail = ([line for line in proc.err_lines if line.strip()] or [f"exit code {proc.returncode}"])[-1]
        if proc.calling:  # it ended inside a reward call: that function ended it
            return ScoreResult.failed(f"reward function `{proc.calling['name']}` ended the scoring process (exit code "
                                      f"{proc.returncode}) instead of returning; last output: {tail}\nWhy: reward code called "
                                      "os._exit() or crashed the Python interpreter (e.g. in a C extension); in training that "
                                      "would end the run.\nWhat to do: return a list of numbers (None for completions it cannot "
                                      "score); the app is unaffected.", time.time() - started).to_dict()
        return ScoreResult.failed(f"scoring failed: {tail}", time.time() - started).to_dict()
    result = ScoreResult.from_dict(json.loads(lines[-1]))
    result.seconds = time.time() - started
    return result.to_dict()


def check_examples(reward, cfg=None, timeout_s: float | None = None) -> dict:
    """Score a reward file's pinned examples (`rewards.library.RewardFile`) in the scoring child, as the Rewards tab's
    pinned checks are scored: `rewards.library.examples_report`'s {"verdicts", "passed", "problems", "tokens"}."""
    from ..rewards.library import examples_report, examples_request

    return examples_report(reward, score(examples_request(reward, cfg), timeout_s=timeout_s or SCORE_TIMEOUT_S), cfg)

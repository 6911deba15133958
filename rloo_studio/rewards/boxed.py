"""Training's calls of the person's reward code, made in a sandboxed child process (`python -m rloo_studio.rewards.boxed`).

TRL calls reward functions inside the training process. For a reward file's functions, the training worker
hands TRL stand-ins instead (`RewardBox.function`): each call sends the keyword arguments TRL passed — as JSON,
one line — to one long-lived child that loaded the file inside the sandbox (`sandbox.prefix`), and returns the
values it answers. What the child cannot be given is rebuilt there as plainly as possible: `trainer_state` as an
object with the state's numbers (global_step, epoch, max_steps, …), `log_metric` / `log_extra` as recorders whose
calls are replayed on TRL's own after the call. An exception in the reward is raised again in the training
process as the same built-in type with the same message and the place in the person's file, so the run fails
with the words it always had (rewards/runtime.py); a reward that ends its process (os._exit, a crash, the memory
limit) fails the run saying so. The time limit of a call stays the training guard's (`timeout_s`). Builtin,
model and judge rewards are the app's own code and run in the training process as before.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import sys
import threading
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Sequence

from .. import sandbox
from ..errors import RewardError

# The training child's data-memory limit (GiB, Linux): a reward that allocates without end fails the run by name
# instead of taking the machine down. As large as the preview's limit, and at most half of the machine's memory.
BOX_MEMORY_GIB = 16.0
MEMORY_LIMIT_RAM_SHARE = 0.5


def _plain(value):
    """A value JSON has no type for: a numpy or torch number or array as its Python value, anything else as its text."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def _jsonable(value):
    """`value` as it comes back from JSON (lists, strings, numbers, None; NaN and infinities kept)."""
    return json.loads(json.dumps(value, default=_plain))


def _state_numbers(state) -> dict:
    """The plain fields of a transformers TrainerState (no lists or dicts: log_history grows with every step)."""
    if state is None:
        return {}
    numbers = {}
    for key in dir(state):
        if not key.startswith("_"):
            value = getattr(state, key, None)
            if isinstance(value, (int, float, str, bool)) or value is None:
                numbers[key] = value
    return numbers


class RewardBox:
    """One sandboxed child that loaded a run's reward files, and the stand-ins TRL calls instead of their functions."""

    def __init__(self, writable: Sequence[str | Path] = (), network: bool = False):
        from ..procs import PIPE, Child

        self._answers: list[dict] = []
        self._ready = threading.Condition()
        self._stderr_tail: list[str] = []
        self._lock = threading.Lock()  # one call at a time: TRL calls rewards one after another, async ones may overlap
        # Where a failed run continues from (the run's folder, the first writable one), for the messages.
        self.resume = f"rloo-studio train --resume {writable[0]}" if writable else "rloo-studio train --resume RUN_DIR"
        self.box = sandbox.box(writable, network)
        self.child = Child([sys.executable, "-m", __name__], stdin=PIPE, stdout=self._on_line, stderr=self._on_err,
                           wrap=self.box.prefix, on_end=self._on_end)

    # ---- the pipe ------------------------------------------------------------------------------------------------

    def _on_line(self, line: str) -> None:
        if not line.startswith("{"):
            print(line, flush=True)  # a print in reward code: train.log, as when it ran in the training process
            return
        with self._ready:
            self._answers.append(json.loads(line))
            self._ready.notify_all()

    def _on_err(self, line: str) -> None:
        self._stderr_tail = (self._stderr_tail + [line])[-20:]
        print(line, file=sys.stderr, flush=True)

    def _on_end(self) -> None:
        with self._ready:
            self._ready.notify_all()

    def _ask(self, request: dict) -> dict:
        with self._lock:
            try:
                self.child.send(json.dumps(request, default=str) + "\n")
            except (OSError, ValueError):
                pass  # it has ended: said below
            with self._ready:
                while not self._answers and self.child.poll() is None:
                    self._ready.wait(0.5)
                if self._answers:
                    return self._answers.pop(0)
            self.child.wait()
            return {"ended": self.child.returncode, "stderr": self._stderr_tail[-3:]}

    # ---- loading and calling -------------------------------------------------------------------------------------

    def load(self, path: str | Path, names: list[str] | None, extra_args: tuple[str, ...]) -> list[str]:
        """Load a reward file in the child (checked as `rewards.user.load_reward_file` checks it); its function names."""
        answer = self._ask({"load": str(path), "names": names, "extra": list(extra_args)})
        if "error" in answer:
            raise RewardError.from_dict(answer["error"])
        if "ended" in answer:
            raise RewardError(f"the reward sandbox ended while loading {Path(path).name} (exit code {answer['ended']})",
                              "; ".join(answer["stderr"]) or "it printed nothing",
                              "check the file's top-level code (a crash or os._exit there ends the process)")
        return answer["functions"]

    def function(self, name: str) -> Callable:
        """The stand-in TRL calls for reward function `name` (same name: TRL logs rewards by it)."""
        def boxed(**kwargs):
            sent = {k: v for k, v in kwargs.items() if k not in ("trainer_state", "log_metric", "log_extra")}
            answer = self._ask({"call": name, "kwargs": _jsonable(sent),
                                "state": _state_numbers(kwargs.get("trainer_state"))})
            for kind, args in answer.get("logs", []):
                target = kwargs.get("log_metric" if kind == "metric" else "log_extra")
                if callable(target):
                    target(*args)
            if "raised" in answer:
                raise _again(answer["raised"])
            if "ended" in answer or "exited" in answer:
                raise _ended(name, answer, self.resume)
            return answer["values"]

        boxed.__name__ = boxed.__qualname__ = name
        return boxed

    def close(self) -> None:
        self.child.kill()
        self.child.wait()
        self.box.close()


def _again(raised: dict) -> BaseException:
    """The reward's exception, raised again here: the same built-in type where there is one (so the guard's message
    and its advice, e.g. for a missing module, stay the same), with the place in the person's file attached."""
    kind = getattr(builtins, raised["type"], None)
    try:
        exc = (kind(raised["message"]) if isinstance(kind, type) and issubclass(kind, BaseException)
               and not issubclass(kind, (KeyboardInterrupt, GeneratorExit)) else None)
    except Exception:  # noqa: BLE001 - a type whose constructor wants more arguments
        exc = None
    if exc is None:
        # Another library's type (torch.OutOfMemoryError, say): one of the same name, so the guard and the run's
        # failure handling read it as they read the original (an out-of-memory error is not the reward's fault).
        named = raised["type"] if str(raised["type"]).isidentifier() else "RewardCodeError"
        exc = type(named, (RuntimeError,), {"__module__": "rloo_studio.rewards.boxed"})(raised["message"])
    if isinstance(exc, ModuleNotFoundError):
        exc.name = raised.get("module")
    exc.studio_where = raised.get("where")  # rewards.user.describe_call_error reads it
    return exc


def _ended(name: str, answer: dict, resume: str) -> RewardError:
    exited = answer.get("exited")
    if exited:
        return RewardError(
            f"reward function `{name}` called os._exit({exited['code']}) ({exited['where']}) instead of returning",
            "os._exit ends the process that runs the reward code at once, without a value for training",
            "return a list of numbers (None for a completion it cannot score) instead of exiting; then continue with "
            f"`{resume}` (it resumes from the last checkpoint)")
    return RewardError(
        f"reward function `{name}` ended the process that runs it (exit code {answer.get('ended')}) instead of returning",
        "; ".join(answer.get("stderr") or []) or "a crash in C code, or the sandbox's memory limit",
        f"return a list of numbers (None for a completion it cannot score); then continue with `{resume}` (it resumes "
        "from the last checkpoint)")


def scoring_kind(specs: Sequence[dict]) -> tuple | None:
    """The sandbox a scoring child gets for these reward entries (the preview, pinned examples, the scan), as
    `sandbox.kind`: none when one of them says `sandbox: false` (that code must run as it will in training); with the
    network when one is a judge on a server (it is called over HTTP)."""
    opted_out = any(spec.get("file") and spec.get("sandbox") is False for spec in specs)
    return sandbox.kind(network=any(isinstance(spec.get("judge"), dict) for spec in specs), use=not opted_out)


def scoring_box(specs: Sequence[dict]) -> "sandbox.Box":
    """`sandbox.box` for `scoring_kind(specs)`."""
    wanted = scoring_kind(specs)
    return sandbox.box(network=bool(wanted and wanted[1]), use=wanted is not None)


# ---- the child ---------------------------------------------------------------------------------------------------

def memory_limit_gib() -> float:
    """The data-memory limit of a child that runs reward code: BOX_MEMORY_GIB, at most half the machine's memory."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        return min(BOX_MEMORY_GIB, MEMORY_LIMIT_RAM_SHARE * ram)
    except (ValueError, OSError, AttributeError):
        return BOX_MEMORY_GIB


def _serve() -> None:
    from ..errors import StudioError
    from .user import describe_call_error, load_reward_file

    sandbox.limit_memory(memory_limit_gib())
    answers = sys.stdout
    sys.stdout = sys.stderr  # prints in reward code must not corrupt the answers
    real_exit = os._exit
    functions: dict[str, tuple[Callable, str]] = {}
    calling: dict = {}

    def reported_exit(code=0):
        frame = sys._getframe(1)
        where = f"{Path(frame.f_code.co_filename).name}, line {frame.f_lineno}"
        answers.write(json.dumps({"exited": {"code": code, "where": where}}) + "\n")
        answers.flush()
        real_exit(code)

    os._exit = reported_exit

    def answer(message: dict) -> None:
        answers.write(json.dumps(message, default=_plain) + "\n")
        answers.flush()

    for line in sys.stdin:
        request = json.loads(line)
        if "load" in request:
            try:
                loaded = load_reward_file(request["load"], request.get("names"), tuple(request.get("extra") or ()))
            except StudioError as exc:
                answer({"error": exc.as_dict()})
                continue
            for name, fn in loaded.items():
                functions[name] = (fn, request["load"])
            answer({"functions": list(loaded)})
            continue
        fn, filename = functions[request["call"]]
        logs: list = []
        kwargs = dict(request["kwargs"], trainer_state=SimpleNamespace(**request.get("state") or {}),
                      log_metric=lambda *a: logs.append(("metric", a)), log_extra=lambda *a: logs.append(("extra", a)))
        calling["name"] = request["call"]
        try:
            values = fn(**kwargs)
            if asyncio.iscoroutine(values):
                values = asyncio.run(values)
            if hasattr(values, "tolist"):
                values = values.tolist()
            elif isinstance(values, (tuple, range)) or type(values).__name__ == "generator":
                values = list(values)
            answer({"values": _jsonable(values), "logs": logs})
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: it is the reward's error, reported as such
            answer({"raised": {"type": type(exc).__name__, "message": str(exc), "module": getattr(exc, "name", None),
                               "where": describe_call_error(exc, request["call"], filename)}, "logs": logs})


if __name__ == "__main__":
    try:
        _serve()
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - the parent reads the end of stderr
        traceback.print_exc()
        sys.exit(1)

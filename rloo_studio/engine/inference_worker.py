"""The inference worker process: holds one loaded model and answers chat requests over pipes.

Started by `rloo_studio.workers.inference.InferenceWorker` as `python -m rloo_studio.engine.inference_worker`.
It reads one JSON request per line on stdin and writes JSON events, one per line, on a private
copy of stdout; the real stdout is pointed at stderr first, so that a library printing to stdout
(Unsloth does) can never corrupt the protocol. Requests:

    {"op": "load", "run_dir": ..., "checkpoint": "final"}        → progress…, done {result}
    {"op": "chat", "messages": [...], "sides": ["base", "tuned"],
     "sampling": {...}, "system_prompt": ...}                     → text…, reply (per side), done
    {"op": "preview", "config": {...}, "base_dir": ..., "num_prompts": N | "prompt": ..., "answer": ...
     | "rows": [...] (the difficulty scan's), "seed": S}          → progress…, done {engine.sampling.sample_groups
                                                                    result, loads, pid, chat_released}
    {"op": "ping"} → done {loaded, adapters, base_loads, cpu_threads};   {"op": "shutdown"} → exits

Every request ends with exactly one `done` or `error` event. An out-of-memory error is reported
with advice and then the process exits, so the next request starts from a clean process (the
client reloads the model). It knows nothing of Gradio.

The preview samples with the config's base model, which `engine.warm` keeps loaded between
previews (keyed by model, dtype and quantisation). At most one of the two is held: a preview
drops the chat's model (and says so, so the client reloads it), loading a chat drops the preview's.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import traceback

from .. import runs
from ..errors import StudioError

OOM_ADVICE = ("lower the max tokens, close other programs that use the GPU, or stop a run that is training; "
              "the chat worker restarted to free its memory, send again")


def _is_oom(exc: BaseException) -> bool:
    return type(exc).__name__ in ("OutOfMemoryError", "OutOfMemory") or "out of memory" in str(exc).lower()


def _preview(request: dict, send) -> dict:
    """Sample the preview's completions with the (warm) base model: engine.sampling.sample_groups, as the CLI does."""
    from ..config import RunConfig
    from . import warm
    from .sampling import pick_rows, sample_groups, typed_rows

    cfg = RunConfig.from_dict(request["config"], request.get("base_dir") or ".")
    seed = int(request.get("seed", 0))
    if request.get("rows"):  # the difficulty scan: these rows of the data, in order
        rows = list(request["rows"])
    elif request.get("prompt"):
        rows = typed_rows(cfg, request["prompt"], request.get("answer"))
    else:
        rows = pick_rows(cfg, int(request.get("num_prompts", 4)), seed)
    sampled = sample_groups(cfg, rows, lambda msg: send({"event": "progress", "message": msg}), seed)
    return {**sampled, "loads": warm.loads, "pid": os.getpid()}


def main() -> int:
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to the log, not into the protocol

    def send(event: dict) -> None:
        protocol.write(json.dumps(event) + "\n")
        protocol.flush()

    from . import warm
    from .chat_model import ChatModel, Sampling

    chat = ChatModel()
    send({"event": "ready", "pid": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            send({"event": "error", "error": {"what": f"unreadable request: {exc}", "why": "", "fix": "", "type": "ProtocolError"}})
            continue
        op = request.get("op")
        try:
            if op == "shutdown":
                send({"event": "done"})
                return 0
            if op == "ping":
                import torch  # already imported by the stack once a model is loaded

                send({"event": "done", "result": {"loaded": chat.adapter_name, "adapters": list(chat.loaded), "base_loads": chat.base_loads,
                                                  "cpu_threads": torch.get_num_threads()}})
            elif op == "preview":
                chat_released = chat.model is not None
                if chat_released:
                    chat = ChatModel()  # one model in memory at a time
                    gc.collect()
                send({"event": "done", "result": {**_preview(request, send), "chat_released": chat_released}})
            elif op == "load":
                warm.release()
                result = chat.load(request["run_dir"], request.get("checkpoint", runs.FINAL),
                                   progress=lambda msg: send({"event": "progress", "message": msg}))
                send({"event": "done", "result": result})
            elif op == "chat":
                sampling = Sampling(**request.get("sampling", {}))
                for side in request.get("sides", ["base", "tuned"]):
                    reply = chat.reply(request["messages"], side, sampling, request.get("system_prompt"),
                                       on_text=lambda delta, side=side: send({"event": "text", "side": side, "delta": delta}))
                    send({"event": "reply", **reply})
                send({"event": "done"})
            else:
                raise StudioError(f"unknown request {op!r}", "", "")
        except StudioError as exc:
            send({"event": "error", "error": exc.as_dict()})
        except Exception as exc:  # noqa: BLE001 - reported to the app, which stays usable
            traceback.print_exc()
            if _is_oom(exc):
                send({"event": "error", "fatal": True, "error": {
                    "what": "out of memory while generating", "why": str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                    "fix": OOM_ADVICE, "type": "OutOfMemory"}})
                return 3  # a fresh process is the only sure way to give all the memory back
            send({"event": "error", "error": {"what": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                                              "why": "an unexpected error in the chat worker (the traceback is in its log)",
                                              "fix": "try again; if it repeats, reload the run", "type": type(exc).__name__}})
    return 0


if __name__ == "__main__":
    sys.exit(main())

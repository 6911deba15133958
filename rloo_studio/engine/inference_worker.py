"""The inference worker process: holds one loaded model and answers chat requests over pipes.

Started by `rloo_studio.workers.inference.InferenceWorker` as `python -m rloo_studio.engine.inference_worker`.
It reads one request per line on stdin and writes events, one per line, on a private copy of stdout; the real
stdout is pointed at stderr first, so that a library printing to stdout (Unsloth does) can never corrupt the
protocol. Both are the typed messages of `protocol` (JSON on the pipe):

    LoadRequest      → Progress…, Done {ChatModel.load's description}
    ChatRequest      → TextDelta…, Reply (per side), Done
    PreviewRequest   → Progress…, Done {engine.sampling.sample_groups result, loads, pid, chat_released}
    PingRequest      → Done {loaded, adapters, base_loads, cpu_threads};   ShutdownRequest → Done, then it exits

Every request ends with exactly one `Done` or `Failed` event. An out-of-memory error is reported
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

from ..errors import StudioError
from ..protocol import (ChatRequest, Done, Failed, LoadRequest, PingRequest, PreviewRequest, Progress, Ready, Reply,
                        ShutdownRequest, TextDelta, WorkerEvent, inference_request)

OOM_ADVICE = ("lower the max tokens, close other programs that use the GPU, or stop a run that is training; "
              "the chat worker restarted to free its memory, send again")


def _is_oom(exc: BaseException) -> bool:
    return type(exc).__name__ in ("OutOfMemoryError", "OutOfMemory") or "out of memory" in str(exc).lower()


def _preview(request: PreviewRequest, send) -> dict:
    """Sample the preview's completions with the (warm) base model: engine.sampling.sample_groups, as the CLI does."""
    from ..config import RunConfig
    from . import warm
    from .sampling import pick_rows, sample_groups, typed_rows

    cfg = RunConfig.from_dict(request.config, request.base_dir or ".")
    seed = int(request.seed)
    if request.rows:  # the difficulty scan: these rows of the data, in order
        rows = list(request.rows)
    elif request.prompt:
        rows = typed_rows(cfg, request.prompt, request.answer)
    else:
        rows = pick_rows(cfg, int(request.num_prompts or 4), seed)
    sampled = sample_groups(cfg, rows, lambda msg: send(Progress(msg)), seed)
    return {**sampled, "loads": warm.loads, "pid": os.getpid()}


def main() -> int:
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to the log, not into the protocol

    def send(event: WorkerEvent) -> None:
        protocol.write(json.dumps(event.to_dict()) + "\n")
        protocol.flush()

    from . import warm
    from .chat_model import ChatModel, Sampling

    chat = ChatModel()
    send(Ready(pid=os.getpid()))
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = inference_request(json.loads(line))
        except ValueError as exc:  # not JSON, or not a request this worker knows (an app of another version)
            send(Failed({"what": f"unreadable request: {exc}", "why": "", "fix": "", "type": "ProtocolError"}))
            continue
        try:
            if isinstance(request, ShutdownRequest):
                send(Done())
                return 0
            if isinstance(request, PingRequest):
                import torch  # already imported by the stack once a model is loaded

                send(Done({"loaded": chat.adapter_name, "adapters": list(chat.loaded), "base_loads": chat.base_loads,
                           "cpu_threads": torch.get_num_threads()}))
            elif isinstance(request, PreviewRequest):
                chat_released = chat.model is not None
                if chat_released:
                    chat = ChatModel()  # one model in memory at a time
                    gc.collect()
                send(Done({**_preview(request, send), "chat_released": chat_released}))
            elif isinstance(request, LoadRequest):
                warm.release()
                send(Done(chat.load(request.run_dir, request.checkpoint, progress=lambda msg: send(Progress(msg)))))
            elif isinstance(request, ChatRequest):
                sampling = Sampling(**request.sampling)
                for side in request.sides:
                    reply = chat.reply(request.messages, side, sampling, request.system_prompt,
                                       on_text=lambda delta, side=side: send(TextDelta(side=side, delta=delta)))
                    send(Reply(**reply))
                send(Done())
        except StudioError as exc:
            send(Failed(exc.as_dict()))
        except Exception as exc:  # noqa: BLE001 - reported to the app, which stays usable
            traceback.print_exc()
            if _is_oom(exc):
                send(Failed({"what": "out of memory while generating",
                             "why": str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                             "fix": OOM_ADVICE, "type": "OutOfMemory"}, fatal=True))
                return 3  # a fresh process is the only sure way to give all the memory back
            send(Failed({"what": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                         "why": "an unexpected error in the chat worker (the traceback is in its log)",
                         "fix": "try again; if it repeats, reload the run", "type": type(exc).__name__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

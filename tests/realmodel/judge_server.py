"""A small OpenAI-compatible chat-completions server for the judge tests, serving a real local model's output.

    python judge_server.py MODEL_DIR LOG_FILE

Listens on 127.0.0.1 (a free port, printed as the first stdout line), answers POST /v1/chat/completions
with greedy generations of MODEL_DIR through its chat template, and appends one JSON line per request to
LOG_FILE (the Authorization header it got, the messages, the reply). As the llama.cpp server does, a final
assistant message is continued rather than answered. The HTTP server runs in a thread (http.server);
generation is serialised by a lock, as a single-model server would. A request it has answered before (the same
messages and token limit) gets the same reply without generating again: generation is greedy, so the reply is the one
the model gives, and the browser tests ask the same question many times (each edit of a pinned example's cell checks
the examples again). Every request is logged, answered again or not.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rloo_studio.engine.stack import import_training_stack

import_training_stack("transformers")  # a model process: the worker's import order

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

MODEL_DIR, LOG_FILE = sys.argv[1], sys.argv[2]
tok = AutoTokenizer.from_pretrained(MODEL_DIR)
model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, dtype=torch.float32).eval()
lock = threading.Lock()
answered: dict[str, str] = {}  # the reply to each request generated so far, by its messages and token limit


def complete(messages: list[dict], max_tokens: int) -> str:
    key = json.dumps([messages, max_tokens], sort_keys=True)
    prefill = messages[-1]["role"] == "assistant"
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=not prefill, continue_final_message=prefill)
    ids = tok(text, return_tensors="pt", add_special_tokens=False)
    with lock, torch.inference_mode():
        if key not in answered:
            out = model.generate(**ids, do_sample=False, max_new_tokens=max_tokens, pad_token_id=tok.eos_token_id,
                                 temperature=None, top_p=None, top_k=None)
            answered[key] = tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
        return answered[key]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.send_error(404, "only /v1/chat/completions")
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        reply = complete(body["messages"], int(body.get("max_tokens") or 32))
        with open(LOG_FILE, "a") as fh:
            fh.write(json.dumps({"authorization": self.headers.get("Authorization"), "model": body.get("model"),
                                 "messages": body["messages"], "reply": reply}) + "\n")
        data = json.dumps({"object": "chat.completion", "model": body.get("model"),
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                        "finish_reason": "length"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # keep stderr for real problems
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
thread = threading.Thread(target=server.serve_forever, daemon=True)
thread.start()
print(server.server_address[1], flush=True)
thread.join()

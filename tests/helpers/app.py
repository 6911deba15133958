"""Helpers for the app tests: a served app on a free loopback port, clients that carry its launch
token, and a form driven by field labels.

The app is served by the product's own `launch` (the wall included), with a known token. Its training workers,
eval and export children and chat worker are forked from the tests' warm starters (`warm_children`) unless a test
asks for the product's own process start.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from rloo_studio import runs

# The app starts every child through procs.Child, with `subprocess.Popen([sys.executable, "-m", MODULE, ...])`: the
# training worker (jobs), the eval/export/scan children (ui/child), the chat and preview worker (inference_client), the
# reward preview's scoring child (rewards/preview) and the short-lived helpers (json_child: reward check, data peek). The
# scoring child sets its own memory limit when it starts (RLIMIT_DATA, 16 GiB here): a child forked from the
# transformers starter starts with ~1 GiB of it taken, as a fresh one does once it has loaded the tokenizer.


@contextmanager
def warm_children():
    """The app's children forked from the tests' warm starters (helpers/warm.py) while this is active.

    procs' `subprocess` is replaced by a copy whose Popen hands `python -m MODULE ARGS` to `warm.popen_module` with the
    same arguments (directory, environment, pipes, own session); the child runs the same module, only its imports
    were done before the fork. Anything else, and every command the starters cannot take (a different import-time
    environment, RLOO_STUDIO_TESTS_FRESH=1), starts as the product starts it."""
    from helpers import cli_stack, warm

    from rloo_studio import procs

    def popen(argv, **kwargs):
        if isinstance(argv, (list, tuple)) and len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m":
            module, args = argv[2], [str(a) for a in argv[3:]]
            stack = cli_stack(args, kwargs.get("cwd") or os.getcwd()) if module == "rloo_studio.cli" else "transformers"
            return warm.popen_module(module, args, stack=stack, **kwargs)
        return subprocess.Popen(argv, **kwargs)

    procs.subprocess = warm.subprocess_with(popen)
    try:
        yield
    finally:
        procs.subprocess = subprocess


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The launch token of every app these helpers serve (as RLOO_STUDIO_TOKEN would set it).
TOKEN = "test-launch-token-0123456789abcdef"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def served_app(runs_dir: Path, detect_hardware: bool = False, auth=None, known_hardware=None, token: str | None = TOKEN,
               own_children: bool = False):
    """Serve the app in this process; yields its base URL (without the token: see `connect`, `page_url`).

    `own_children`: the app starts its children itself, as the product does, instead of forking them from the warm
    starters (for a test that looks at the processes themselves)."""
    from rloo_studio.ui.app import build_app, launch

    with (contextlib.nullcontext() if own_children else warm_children()):
        demo = build_app(runs_dir, detect_hardware=detect_hardware, known_hardware=known_hardware)
        launch(demo, token=token, port=free_port(), runs_dir=runs_dir, auth=auth, block=False)
        try:
            yield f"http://127.0.0.1:{demo.server_port}/"
        finally:
            demo.close()
            demo.inference_worker.shutdown()  # else it outlives the app in this test process


def connect(url: str, **kwargs):
    """A gradio_client Client that sends the launch token, as an API script would."""
    from gradio_client import Client

    return Client(url, verbose=False, headers=dict(BEARER), **kwargs)


def page_url(url: str) -> str:
    """The link a person opens: the base URL with the launch token."""
    return f"{url}?token={TOKEN}"


class Form:
    """The form's values in the order of the `start_training` endpoint, addressable by widget label."""

    def __init__(self, client):
        self.client = client
        api = client.view_api(print_info=False, return_format="dict")
        self.labels = [p["label"] for p in api["named_endpoints"]["/start_training"]["parameters"]]
        loaded = client.predict(api_name="/load_form")
        self.device, self.notes = loaded[0], loaded[1]
        self.values = list(loaded[2:])
        assert len(self.values) == len(self.labels), (len(self.values), self.labels)

    def index(self, label: str) -> int:
        matches = [i for i, name in enumerate(self.labels) if name == label]
        assert len(matches) == 1, f"label {label!r} matches {len(matches)} of {self.labels}"
        return matches[0]

    def __getitem__(self, label: str):
        return self.values[self.index(label)]

    def __setitem__(self, label: str, value) -> None:
        self.values[self.index(label)] = value

    def call(self, api_name: str):
        return self.client.predict(*self.values, api_name=api_name)

    def fast_demo(self, steps: int = 3) -> "Form":
        """The cpu-demo settings shrunk to a few small steps."""
        self["Batch per device (completions)"] = 16
        self["Training steps"] = steps
        self["Checkpoint every N steps"] = 1
        return self


def wait_for(predicate, timeout_s: float = 240, every_s: float = 1.0, what: str = "condition"):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def run_state(run_dir: Path) -> str:
    return runs.effective_state(runs.read_status(run_dir))


def only_run(runs_dir: Path) -> Path:
    found = [p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists()]
    assert len(found) == 1, found
    return found[0]

"""Helpers for the app tests: a served app on a free loopback port, clients that carry its launch
token, and a form driven by field labels.

The app is served by the product's own `launch` (the wall included), with a known token.
"""

from __future__ import annotations

import socket
import time
from contextlib import contextmanager
from pathlib import Path

from rloo_studio import runs


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The launch token of every app these helpers serve (as RLOO_STUDIO_TOKEN would set it).
TOKEN = "test-launch-token-0123456789abcdef"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def served_app(runs_dir: Path, detect_hardware: bool = False, auth=None, known_hardware=None, token: str | None = TOKEN):
    """Serve the app in this process; yields its base URL (without the token: see `connect`, `page_url`)."""
    from rloo_studio.ui.app import build_app, launch

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

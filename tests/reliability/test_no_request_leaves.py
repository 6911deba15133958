"""No request leaves the machine, checked in the server and every process it starts, with the app's own
defaults: the offline and telemetry variables that the other tests set are removed here.

The app is started as a person starts it (`rloo-studio ui`), with a `sitecustomize` module on the path
that every Python process of the app imports first (the server, the inference worker, the scoring
child, the training worker): it records, and refuses, every connection to an address that is not this
machine and every name lookup of another host (a DNS query already leaves the machine). The test then
loads the page, samples and scores a reward preview, and trains a short run to the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rloo_studio import runs

from helpers import ROOT  # noqa: F401 - puts the repository first on the path, as the other tests do

from helpers.app import TOKEN, Form, connect, free_port, only_run, run_state, wait_for

pytestmark = pytest.mark.slow

# Set by the test environment (conftest / run_tests.py) or by a careful person; the app must not need them.
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
                     "GRADIO_ANALYTICS_ENABLED", "DO_NOT_TRACK", "WANDB_MODE", "WANDB_DISABLED")

RECORDER = r'''
"""Records and refuses every connection to, and every name lookup of, a host that is not this machine."""
import ipaddress
import json
import os
import socket
import traceback

_LOG = os.environ["RLOO_TEST_NETWORK_LOG"]
_LOCAL_NAMES = {"localhost", "localhost.", "ip6-localhost", "", "0.0.0.0", "::"}


def _local(host) -> bool:
    host = str(host).strip("[]").lower()
    if host in _LOCAL_NAMES or host == socket.gethostname().lower():
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _record(kind, target):
    with open(_LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "kind": kind, "target": str(target),
                             "where": "".join(traceback.format_stack(limit=12)[:-2])}) + "\n")


_connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo


def _guarded(method, kind):
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            _record(kind, address)
            raise OSError(101, "network unreachable (refused by the test's recorder)")
        return method(self, address)
    return connect


def getaddrinfo(host, *args, **kwargs):
    if host is not None and not _local(host.decode() if isinstance(host, bytes) else host):
        _record("getaddrinfo", host)
        raise socket.gaierror(socket.EAI_NONAME, "name lookup refused by the test's recorder")
    return _getaddrinfo(host, *args, **kwargs)


import sys

with open(_LOG + ".loaded", "a", encoding="utf-8") as fh:  # which processes were watched
    fh.write(json.dumps({"pid": os.getpid(), "argv": sys.orig_argv}) + "\n")

socket.socket.connect = _guarded(_connect, "connect")
socket.socket.connect_ex = _guarded(_connect_ex, "connect_ex")
socket.getaddrinfo = getaddrinfo
'''


@pytest.mark.usefixtures("outside_the_sandbox")  # the sandbox would cut the network itself (and the recorder's writes): the app's own defaults are tested
def test_the_app_and_its_processes_send_nothing_off_the_machine_with_their_own_defaults(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(RECORDER), encoding="utf-8")
    log = tmp_path / "network.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARIABLES}
    env.update(PYTHONPATH=os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               RLOO_TEST_NETWORK_LOG=str(log), RLOO_STUDIO_TOKEN=TOKEN)
    # The recorder works: a lookup of another host from a process with this environment is written down.
    probe = subprocess.run([sys.executable, "-c", "import socket\ntry:\n    socket.getaddrinfo('example.org', 443)\n"
                            "except OSError:\n    pass"], env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert [json.loads(line)["target"] for line in log.read_text().splitlines()] == ["example.org"]
    log.unlink()
    Path(f"{log}.loaded").unlink()

    runs_dir = tmp_path / "runs"
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "rloo_studio.cli", "ui", "--port", str(port), "--runs-dir", str(runs_dir)],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = server.stdout.readline()
        assert first.startswith("RLOO Studio is running at "), (first, server.stdout.read() if server.poll() is not None else "")
        url = f"http://127.0.0.1:{port}/"
        client = wait_for(lambda: _try_connect(url), timeout_s=300, what="the app to answer")
        form = Form(client).fast_demo(steps=1)

        status, table, _summary, _findings = client.predict(2, "", "", "", *form.values, api_name="/preview_rewards")
        assert status.startswith("Scored 16 completions"), status  # sampled in the worker, scored in a child
        problems, _command, _config = form.call("/start_training")
        assert problems == ""
        run_dir = only_run(runs_dir)
        wait_for(lambda: run_state(run_dir) in ("finished", "failed"), timeout_s=600, what="the run to end")
        assert run_state(run_dir) == "finished", (run_dir / runs.LOG_FILE).read_text()[-2000:]
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    # Every kind of process the app starts was watched (a launcher that dropped the environment would not be).
    watched = " ".join(" ".join(json.loads(line)["argv"]) for line in Path(f"{log}.loaded").read_text().splitlines())
    for module in ("rloo_studio.cli", "rloo_studio.engine.inference_worker", "rloo_studio.rewards.preview", "train"):
        assert module in watched, (module, watched)
    attempts = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    assert not attempts, "requests that would have left the machine:\n" + "\n".join(
        f"pid {a['pid']} {a['kind']} {a['target']}\n{a['where']}" for a in attempts[:5])


def _try_connect(url: str):
    try:
        return connect(url)
    except Exception:  # noqa: BLE001 - not serving yet
        return None

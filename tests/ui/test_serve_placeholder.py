"""`rloo-studio ui` (what `python launch.py` starts): serves on loopback, refuses exposure without a login."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

from conftest import ROOT, run_cli


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_refuses_all_interfaces_without_auth(tmp_path):
    result = run_cli("ui", "--host", "0.0.0.0", cwd=tmp_path)
    assert result.returncode == 2
    assert "refusing to serve RLOO Studio on address 0.0.0.0 without a login" in result.stderr
    assert "arbitrary Python" in result.stderr and "--auth" in result.stderr


def test_serves_the_runs_page_on_loopback_without_importing_torch(tmp_path):
    port = _free_port()
    code = ("import sys, runpy; sys.argv = ['rloo-studio', 'ui', '--port', sys.argv[1], '--runs-dir', sys.argv[2]]; "
            "import threading, os\n"
            "def report():\n"
            "    import time; time.sleep(8); print('HEAVY', [m for m in ('torch', 'transformers', 'trl', 'unsloth') if m in sys.modules], flush=True)\n"
            "threading.Thread(target=report, daemon=True).start()\n"
            "from rloo_studio.cli import main; main(sys.argv[1:])")
    proc = subprocess.Popen([sys.executable, "-c", code, str(port), str(tmp_path / "runs")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.time() + 60
        body = None
        while time.time() < deadline and body is None:
            try:
                body = urllib.request.urlopen(url, timeout=5).read().decode()
            except OSError:
                time.sleep(0.5)
        assert body is not None, "the page was not served within 60 s"
        assert "RLOO Studio" in body
        line = ""
        while "HEAVY" not in line:
            line = proc.stdout.readline()
            assert line, "the server exited early"
        assert line.strip() == "HEAVY []"
    finally:
        proc.terminate()
        proc.wait(timeout=30)

"""How fast does the app come up? Time from starting `rloo-studio ui` to the page being served.

    python benchmarks/ui_startup.py [--repeats 5]

Each repeat starts a fresh process (as `python launch.py` does once the environment exists) on a
free loopback port with an empty runs folder and measures: the first line printed (the URL), the
first HTTP 200 for the page, and the first answer of the app's config route (the page is usable).
It also records which model libraries the app's process had imported by then (should be none).
Saves benchmarks/results/ui_startup.json.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import ROOT, machine, save, shown, table

# Runs the app and, once its port answers, prints which model libraries this process has imported.
PROBE = ("import socket, sys, threading, time\n"
         "from rloo_studio.cli import main\n"
         "def report():\n"
         "    while True:\n"
         "        try:\n"
         "            socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=1).close(); break\n"
         "        except OSError:\n"
         "            time.sleep(0.05)\n"
         "    time.sleep(1); print('HEAVY', ','.join(m for m in ('torch', 'transformers', 'trl', 'unsloth', 'peft') if m in sys.modules) or 'none', flush=True)\n"
         "threading.Thread(target=report, daemon=True).start()\n"
         "main(['ui', '--port', sys.argv[1], '--runs-dir', sys.argv[2]])")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, started: float, timeout_s: float = 120) -> float:
    while time.time() - started < timeout_s:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return time.time() - started
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not answer within {timeout_s} s")


def one_start(workdir: Path) -> dict:
    port = free_port()
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-c", PROBE, str(port), str(workdir / "runs")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first_line = proc.stdout.readline()  # the app prints its URL before it serves
        printed = time.time() - started
        base = f"http://127.0.0.1:{port}/"
        page = wait_http(base, started)
        config = wait_http(base + "config", started)
        heavy = next(line for line in iter(proc.stdout.readline, "") if line.startswith("HEAVY")).split()[1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"url_printed_s": printed, "page_s": page, "config_s": config, "heavy_imports": heavy, "first_line": first_line.strip()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            results.append(one_start(Path(tmp)))
            print(f"start {i + 1}: page after {results[-1]['page_s']:.2f} s", file=sys.stderr, flush=True)
    rows = [[i + 1, f"{r['url_printed_s']:.2f}", f"{r['page_s']:.2f}", f"{r['config_s']:.2f}", r["heavy_imports"]] for i, r in enumerate(results)]
    med = {k: statistics.median(r[k] for r in results) for k in ("url_printed_s", "page_s", "config_s")}
    rows.append(["median", f"{med['url_printed_s']:.2f}", f"{med['page_s']:.2f}", f"{med['config_s']:.2f}", ""])
    print(f"\nApp start-up on {machine()}\n")
    print(table(["start", "URL printed (s)", "page served (s)", "app config served (s)", "model libraries imported"], rows))
    path = save("ui_startup", {"machine": machine(), "runs": results, "median": med})
    print(f"\nSaved {shown(path)}")


if __name__ == "__main__":
    main()

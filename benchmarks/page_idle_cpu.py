"""How much CPU the open page costs while nothing trains: Chromium's renderer and the app's server, over a quiet minute.

    python benchmarks/page_idle_cpu.py [--seconds 30]

A person keeps the page open while a CPU run trains; whatever the page burns, the run does not get. Serves the app as
`rloo-studio ui` does (in this process, behind its launch token) on a runs folder with one finished run, opens it in
Chromium at 1400 px, waits for it to settle, and reads the renderer's busy time (Chrome's own `TaskDuration` metric)
and this process's CPU time over the window. Two wirings of the page's polls are compared:

- `one event a tick` — the app as shipped (`ui/poller.py`: every tab's polls in one event; only changes sent; a tick
  every few seconds while nothing trains);
- `an event per poll` — each tab's polls as their own timer event every 2 s, as the page was wired before (the polls
  themselves as shipped, so the difference is the wiring alone).

Writes benchmarks/results/page_idle_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import machine, save, table  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
STEPS = 120


def finished_run(runs_dir: Path) -> None:
    """A finished 120-step run of the demo, written as training writes one (status, metrics, samples, log)."""
    from rloo_studio import runs

    run_dir = runs.create_run_dir(runs_dir, "finished-demo")
    (run_dir / runs.CONFIG_FILE).write_text("model: {name_or_path: demo}\nrloo: {max_steps: %d}\n" % STEPS)
    with (run_dir / runs.METRICS_FILE).open("w") as f:
        for step in range(1, STEPS + 1):
            f.write(json.dumps({"step": step, "reward": 0.5 + step / 400, "rewards/numeric_answer/mean": step / 200,
                                "completions/mean_length": 20 - step / 20, "loss": 0.0, "kl": 0.0}) + "\n")
    with (run_dir / runs.SAMPLES_FILE).open("w") as f:
        for step in range(STEPS - 10, STEPS + 1):
            for k in range(4):
                f.write(json.dumps({"step": step, "prompt": f"What is {step} + {k}?", "completion": str(step + k),
                                    "reward": 1.0, "advantage": 0.0, "rewards": {"numeric_answer": 1.0}}) + "\n")
    (run_dir / runs.LOG_FILE).write_text("".join(f"[rloo-studio] step {s}\n" for s in range(1, STEPS + 1)))
    runs.update_status(run_dir, state="finished", step=STEPS, max_steps=STEPS, started_at=time.time() - 600,
                       finished_at=time.time() - 60, model="demo")


def per_poll_events() -> None:
    """The page's earlier wiring: each registered poll its own timer event, every 2 s, sending whatever it returns."""
    from rloo_studio.ui import poller

    def wire(self) -> None:
        self._wired = True
        for poll in self._polls:
            self.timer.tick(poll.fn, inputs=poll.inputs, outputs=poll.outputs, api_visibility="private", show_progress="hidden")

    poller.Poller.wire = wire


def measure(seconds: float) -> dict:
    import psutil
    from playwright.sync_api import sync_playwright

    from rloo_studio.ui.app import build_app, launch

    with tempfile.TemporaryDirectory() as tmp:
        runs_dir = Path(tmp) / "runs"
        finished_run(runs_dir)
        demo = build_app(runs_dir, detect_hardware=False)
        link = launch(demo, token="benchmark-token", port=7860, runs_dir=runs_dir, block=False)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(link)
                page.locator("#model-name input").wait_for(timeout=120_000)
                page.get_by_role("tab", name="Runs").click()
                page.wait_for_timeout(8000)  # the first polls have filled the page
                cdp = page.context.new_cdp_session(page)
                cdp.send("Performance.enable")

                def busy_s() -> float:
                    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")

                me = psutil.Process()
                renderer0, server0, t0 = busy_s(), sum(me.cpu_times()[:2]), time.time()
                page.wait_for_timeout(seconds * 1000)
                renderer, server, window = busy_s() - renderer0, sum(me.cpu_times()[:2]) - server0, time.time() - t0
                browser.close()
        finally:
            demo.close()
            demo.inference_worker.shutdown()
    return {"window_s": round(window, 1), "renderer_busy_s": round(renderer, 2), "renderer_share": round(renderer / window, 3),
            "server_cpu_s": round(server, 2), "server_share": round(server / window, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30, help="the measured window (default 30)")
    parser.add_argument("--wiring", choices=["one", "per-poll"], help=argparse.SUPPRESS)  # one wiring, in a child
    args = parser.parse_args()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    if args.wiring:  # measured in its own process: the wiring is chosen before the page is built
        if args.wiring == "per-poll":
            per_poll_events()
        print(json.dumps(measure(args.seconds)))
        return 0
    import subprocess

    rows = {}
    for wiring, name in (("one", "one event a tick"), ("per-poll", "an event per poll")):
        out = subprocess.run([sys.executable, __file__, "--wiring", wiring, "--seconds", str(args.seconds)],
                             capture_output=True, text=True, check=True).stdout
        rows[name] = json.loads(out.strip().splitlines()[-1])
        print(f"{name}: {rows[name]}", flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    data = {"machine": machine(), "load_average_1m": load, "page": "Runs tab, one finished 120-step run, nothing training",
            "results": rows}
    print(table(["wiring", "renderer busy (share of a core)", "server CPU (share)"],
                [[k, f"{v['renderer_busy_s']} s of {v['window_s']} s ({v['renderer_share']:.0%})",
                  f"{v['server_cpu_s']} s ({v['server_share']:.0%})"] for k, v in rows.items()]))
    print(f"saved {save('page_idle_cpu', data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

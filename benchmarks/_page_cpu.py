"""What the open page costs in CPU, for the page benchmarks: the app served in this process; over a window, Chromium's
renderer busy time (Chrome's own `TaskDuration` metric: the page's main thread), the CPU time of all Chromium's processes
(drawing frames costs the compositor and GPU process too) and this process's CPU time; each variant in its own process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import machine, save, table

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def without_frame_pacing() -> None:
    """The page served without `ui/frame_pacing.py`'s script: what Gradio's own frame loop costs."""
    from rloo_studio.ui import frame_pacing

    async def passed_through(self, scope, receive, send):
        await self.app(scope, receive, send)

    frame_pacing.FramePacing.__call__ = passed_through


def without_component_index() -> None:
    """The page served without `ui/component_lookup.py`'s index: Gradio's own walk of the tree for each lookup."""
    from rloo_studio.ui import component_lookup

    component_lookup.ComponentLookup.rewrite = lambda self, body: body


def without_status_filter() -> None:
    """The page served without `ui/status_updates.py`'s method: Gradio's, which sends every loading status again at
    every status change."""
    from rloo_studio.ui import status_updates

    status_updates.StatusUpdates.rewrite = lambda self, body: body


def measure(runs_dir: Path, open_page, seconds: float, port: int, act=None) -> dict:
    """Serve the app on `runs_dir` as `rloo-studio ui` does (behind its launch token), open it in Chromium at 1400 px,
    let `open_page(page)` go where the benchmark looks, wait for the first polls, then measure over `seconds` (or, with
    `act`, over `act(page)`: what a person does there)."""
    import psutil
    from playwright.sync_api import sync_playwright

    from rloo_studio.ui.app import build_app, launch

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    demo = build_app(runs_dir, detect_hardware=False)
    link = launch(demo, token="benchmark-token", port=port, runs_dir=runs_dir, block=False)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(link)
            open_page(page)
            page.wait_for_timeout(8000)  # the first polls have filled the page
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")

            def busy_s() -> float:
                return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")

            me = psutil.Process()
            chromium = [p for p in me.children(recursive=True) if "chrom" in p.name()]

            def chromium_s() -> float:
                total = 0.0
                for p in chromium:
                    try:
                        total += sum(p.cpu_times()[:2])
                    except psutil.NoSuchProcess:
                        pass
                return total

            renderer0, chromium0, server0, t0 = busy_s(), chromium_s(), sum(me.cpu_times()[:2]), time.time()
            if act is None:
                page.wait_for_timeout(seconds * 1000)
            else:
                act(page)
            renderer, window = busy_s() - renderer0, time.time() - t0
            browser_cpu, server = chromium_s() - chromium0, sum(me.cpu_times()[:2]) - server0
            browser.close()
    finally:
        demo.close()
        demo.inference_worker.shutdown()
    return {"window_s": round(window, 1), "renderer_busy_s": round(renderer, 2), "renderer_share": round(renderer / window, 3),
            "chromium_cpu_s": round(browser_cpu, 2), "chromium_share": round(browser_cpu / window, 3),
            "server_cpu_s": round(server, 2), "server_share": round(server / window, 3)}


def compare(script: str, option: str, variants: list[tuple[str, str]], seconds: float, page: str, first_column: str,
            result_name: str, server_note: str = "") -> None:
    """Run `script OPTION VALUE --seconds S` for each (value, name) of `variants` (each measures one variant in its own
    process and prints `measure`'s JSON last), then print the table and save the results as `result_name`."""
    rows = {}
    for value, name in variants:
        out = subprocess.run([sys.executable, script, option, value, "--seconds", str(seconds)],
                             capture_output=True, text=True, check=True).stdout
        rows[name] = json.loads(out.strip().splitlines()[-1])
        print(f"{name}: {rows[name]}", flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    data = {"machine": machine(), "load_average_1m": load, "page": page, "results": rows}
    print(table([first_column, "renderer busy (share of a core)", "all Chromium CPU (share)", f"server CPU (share{server_note})"],
                [[k, f"{v['renderer_busy_s']} s of {v['window_s']} s ({v['renderer_share']:.0%})",
                  f"{v['chromium_cpu_s']} s ({v['chromium_share']:.0%})", f"{v['server_cpu_s']} s ({v['server_share']:.0%})"]
                 for k, v in rows.items()]))
    print(f"saved {save(result_name, data)}")

"""How long a person waits, in the browser, from clicking *Sample and score* on the bundled demo to the
table: the first click (the model worker starts and loads the model) and later clicks (it stays loaded).

    python benchmarks/preview_click.py [--clicks 4]

Serves the app as `rloo-studio ui` does (in this process, behind its launch token), drives it with
Chromium through Playwright, and times each click until the status line says "Scored" with the new
numbers in the table. Writes benchmarks/results/preview_click.json. Target: a warm click ≤ 2 s.
`benchmarks/preview_warm.py` times the same work without the browser and the page.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import machine, save, table  # noqa: E402

TARGET_WARM_S = 2.0
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


_CLICK_AND_WAIT = """() => new Promise(resolve => {
    const status = document.querySelector('#preview-status');
    const before = status.innerText;
    const started = performance.now();
    let changed = false;
    const check = () => {
        const now = status.innerText;
        if (now !== before) changed = true;
        if (changed && now.trim().startsWith('Scored')) { observer.disconnect(); resolve(performance.now() - started); }
    };
    const observer = new MutationObserver(check);
    observer.observe(status, {childList: true, subtree: true, characterData: true});
    document.querySelector('#preview-run').click();
})"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=4, help="clicks in all, the first included (default 4)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from rloo_studio.ui.app import build_app, launch

    token = "benchmark-token"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        demo = build_app(Path(tmp) / "runs")
        link = launch(demo, token=token, port=_free_port(), runs_dir=Path(tmp) / "runs", block=False)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(300_000)
                page.goto(link)
                page.get_by_role("tab", name="3 · Rewards").click()
                for i in range(args.clicks):
                    # Timed inside the page (performance.now, a MutationObserver): from the click to the moment the
                    # status line holds this click's result alone (while working, Gradio lays its progress line
                    # over the old result), without the test driver's own round trips.
                    wall = page.evaluate(_CLICK_AND_WAIT) / 1000
                    shown = page.locator("#preview-status").inner_text()
                    rows.append({"click": "first" if i == 0 else f"warm {i}", "wall_s": round(wall, 2), "page_says": shown})
                    print(f"{rows[-1]['click']}: {wall:.2f} s — the page says: {shown}", flush=True)
                    page.wait_for_timeout(1500)  # a person reads the table before clicking again
                browser.close()
        finally:
            demo.close()
    warm = sorted(r["wall_s"] for r in rows[1:])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    data = {"machine": machine(), "load_average_1m": load, "preset": "the app's default (bundled demo)", "clicks": rows,
            "first_s": rows[0]["wall_s"], "warm_median_s": warm[len(warm) // 2] if warm else None, "target_warm_s": TARGET_WARM_S}
    print(table(["click", "wall s"], [[r["click"], r["wall_s"]] for r in rows]))
    print(f"saved {save('preview_click', data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What one event costs the open page: Chromium's renderer and the app's server over ten tab changes.

    python benchmarks/page_event_cpu.py [--changes 10]

Every event the page sends (a tab change, a field's save, a poll tick) makes Gradio's page update the loading status of
every component an event has written so far, several times; each update first looks its component up and reads its
state. Serves the app
as `rloo-studio ui` does (in this process, behind its launch token) on an empty runs folder, opens it in Chromium at
1400 px, lets the first polls settle, then changes tabs (Data, Model, Data, ...) every 1.5 s and reads the renderer's
busy time (Chrome's `TaskDuration`), all Chromium processes' CPU time and this process's CPU time over those changes.
Each tab change is one event (the page keeps the tab chosen). Two versions of the page, each in its own process:

- `as shipped` — Gradio's page with `ui/component_lookup.py`'s indexed lookup and `ui/status_updates.py`'s method,
  which sends a component only a status that changed;
- `without the status filter` — with the index, but every status sent at every change, as Gradio does;
- `without either` — Gradio's page as Gradio serves it: every status sent, each lookup a walk of the whole tree.

Writes benchmarks/results/page_event_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _page_cpu import compare, measure, without_component_index, without_status_filter  # noqa: E402


def on_the_model_tab(page) -> None:
    page.locator("#model-name input").wait_for(timeout=120_000)


def tab_changes(count: int):
    def act(page) -> None:
        for i in range(count):
            page.get_by_role("tab", name="2 · Data" if i % 2 == 0 else "1 · Model & hardware").click()
            page.wait_for_timeout(1500)
    return act


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=10, help="tab changes measured (default 10)")
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)  # (compare passes the changes to a child as this)
    parser.add_argument("--variant", choices=["shipped", "no-status", "neither"], help=argparse.SUPPRESS)  # one, in a child
    args = parser.parse_args()
    if args.variant:  # measured in its own process: the page is chosen before it is built
        if args.variant in ("no-status", "neither"):
            without_status_filter()
        if args.variant == "neither":
            without_component_index()
        with tempfile.TemporaryDirectory() as tmp:
            changes = round(args.seconds / 1.5) if args.seconds else args.changes
            print(json.dumps(measure(Path(tmp) / "runs", on_the_model_tab, 0, port=7860, act=tab_changes(changes))))
        return 0
    compare(__file__, "--variant", [("shipped", "as shipped"), ("no-status", "without the status filter"),
                                     ("neither", "without either")], args.changes * 1.5,
            page=f"{args.changes} tab changes (Data, Model, ...), 1.5 s apart, nothing training", first_column="page",
            result_name="page_event_cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())

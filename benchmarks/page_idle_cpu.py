"""How much CPU the open page costs while nothing trains: Chromium's renderer and the app's server, over a quiet minute.

    python benchmarks/page_idle_cpu.py [--seconds 30]

A person keeps the page open while a CPU run trains; whatever the page burns, the run does not get. Serves the app as
`rloo-studio ui` does (in this process, behind its launch token) on a runs folder with one finished run, opens it in
Chromium at 1400 px, waits for it to settle, and reads the renderer's busy time (Chrome's own `TaskDuration` metric),
all Chromium processes' CPU time and this process's CPU time over the window. Four versions of the page are compared:

- `as shipped` — every tab's polls in one event (`ui/poller.py`; only changes sent; a tick every few seconds while
  nothing trains) and the frame pacing script (`ui/frame_pacing.py`);
- `without frame pacing` — the same page without that script: Gradio's loading indicator then keeps the browser
  drawing 60 frames a second after the page has loaded;
- `without the component index` — Gradio's page as Gradio serves it, each component looked up by a walk of the whole
  tree, several hundred times per event (`ui/component_lookup.py`);
- `an event per poll` — each tab's polls as their own timer event every 2 s, as the page was wired before (the polls
  themselves as shipped, so the difference to `as shipped` is the wiring; frame pacing on).

Writes benchmarks/results/page_idle_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _page_cpu import compare, measure, without_component_index, without_frame_pacing  # noqa: E402

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


def on_the_runs_tab(page) -> None:
    page.locator("#model-name input").wait_for(timeout=120_000)
    page.get_by_role("tab", name="Runs").click()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30, help="the measured window (default 30)")
    parser.add_argument("--variant", choices=["shipped", "no-pacing", "per-poll", "no-index"], help=argparse.SUPPRESS)  # one, in a child
    args = parser.parse_args()
    if args.variant:  # measured in its own process: the wiring is chosen before the page is built
        if args.variant == "per-poll":
            per_poll_events()
        if args.variant == "no-pacing":
            without_frame_pacing()
        if args.variant == "no-index":
            without_component_index()
        with tempfile.TemporaryDirectory() as tmp:
            runs_dir = Path(tmp) / "runs"
            finished_run(runs_dir)
            print(json.dumps(measure(runs_dir, on_the_runs_tab, args.seconds, port=7860)))
        return 0
    compare(__file__, "--variant", [("shipped", "as shipped"), ("no-pacing", "without frame pacing"),
                                     ("per-poll", "an event per poll"), ("no-index", "without the component index")], args.seconds,
            page="Runs tab, one finished 120-step run, nothing training", first_column="page", result_name="page_idle_cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())

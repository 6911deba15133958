"""How much CPU the open page costs while a run trains: Chromium's renderer and the app's server, on the Train tab.

    python benchmarks/page_training_cpu.py [--seconds 30]

A person watches the Train tab while a CPU run trains; whatever the page burns, the run does not get. Serves the app
as `rloo-studio ui` does (in this process, behind its launch token) on a runs folder with one run that is training:
its status names this process as the worker, and a thread writes a step (metrics, two samples, a log line) every
0.5 s, as a fast CPU run does. The page is opened in Chromium at 1400 px and follows the run from the banner; after it
settles, the renderer's busy time (Chrome's `TaskDuration`), all Chromium processes' CPU time and this process's CPU
time are read over the window. Four versions of the page are compared, each in its own process:

- `as shipped` — every tick (2 s while a run trains) sends what changed: the Train tab's status, progress, both plots,
  samples and log, the Runs tab's list, status, plot and log, the banner;
- `plots held` — the same, but the Train tab's two plots are never re-sent: what re-sending the curves costs;
- `without frame pacing` — as shipped, without `ui/frame_pacing.py`'s script;
- `without the component index` — as shipped, with Gradio's own walk of the component tree for each lookup
  (`ui/component_lookup.py`).

Writes benchmarks/results/page_training_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _page_cpu import compare, measure, without_component_index, without_frame_pacing  # noqa: E402

MAX_STEPS = 5000
STEP_SECONDS = 0.5


def hold_plots() -> None:
    """The Train tab's poll with its two plots never re-sent (the other outputs as shipped)."""
    import gradio as gr

    from rloo_studio.ui import train_tab

    render = train_tab.TrainTab.render

    def without_plots(view):
        return [gr.skip() if i in (2, 3) else value for i, value in enumerate(render(view))]

    train_tab.TrainTab.render = staticmethod(without_plots)


def write_steps(run_dir: Path, stop: threading.Event) -> None:
    """A training run's files, one step every STEP_SECONDS, as the worker writes them."""
    from rloo_studio import runs

    step = 0
    while not stop.is_set() and step < MAX_STEPS:
        step += 1
        with (run_dir / runs.METRICS_FILE).open("a") as f:
            f.write(json.dumps({"step": step, "reward": 0.5 + step / 4 / MAX_STEPS, "rewards/numeric_answer/mean": step / 2 / MAX_STEPS,
                                "completions/mean_length": 20 - step / 500, "loss": 0.0, "kl": 0.0}) + "\n")
        with (run_dir / runs.SAMPLES_FILE).open("a") as f:
            for k in range(2):
                f.write(json.dumps({"step": step, "prompt": f"What is {step} + {k}?", "completion": str(step + k),
                                    "reward": 1.0, "advantage": 0.0, "rewards": {"numeric_answer": 1.0}}) + "\n")
        with (run_dir / runs.LOG_FILE).open("a") as f:
            f.write(f"[rloo-studio] step {step}\n")
        runs.update_status(run_dir, state="running", step=step, max_steps=MAX_STEPS, model="demo", pid=os.getpid())
        stop.wait(STEP_SECONDS)


def following_the_run(page) -> None:
    page.locator("#run-banner-open").click(timeout=120_000)
    page.locator("#train-status").get_by_text("training").first.wait_for(timeout=60_000)


def measure_training(seconds: float) -> dict:
    from rloo_studio import runs

    with tempfile.TemporaryDirectory() as tmp:
        runs_dir = Path(tmp) / "runs"
        run_dir = runs.create_run_dir(runs_dir, "training-demo")
        (run_dir / runs.CONFIG_FILE).write_text(f"model: {{name_or_path: demo}}\nrloo: {{max_steps: {MAX_STEPS}}}\n")
        runs.update_status(run_dir, state="running", step=0, max_steps=MAX_STEPS, started_at=time.time(), model="demo",
                           pid=os.getpid())
        stop = threading.Event()
        threading.Thread(target=write_steps, args=(run_dir, stop), daemon=True).start()
        try:
            return measure(runs_dir, following_the_run, seconds, port=7861)
        finally:
            stop.set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30, help="the measured window (default 30)")
    parser.add_argument("--variant", choices=["shipped", "plots-held", "no-pacing", "no-index"], help=argparse.SUPPRESS)  # one, in a child
    args = parser.parse_args()
    if args.variant:  # measured in its own process: the poll is chosen before the page is built
        if args.variant == "plots-held":
            hold_plots()
        if args.variant == "no-pacing":
            without_frame_pacing()
        if args.variant == "no-index":
            without_component_index()
        print(json.dumps(measure_training(args.seconds)))
        return 0
    compare(__file__, "--variant", [("shipped", "as shipped"), ("plots-held", "plots held"), ("no-pacing", "without frame pacing"),
                                     ("no-index", "without the component index")],
            args.seconds,
            page=f"Train tab following a run that logs a step every {STEP_SECONDS} s (2 samples a step)",
            first_column="Train tab", result_name="page_training_cpu", server_note="; includes the step writer")
    return 0


if __name__ == "__main__":
    sys.exit(main())

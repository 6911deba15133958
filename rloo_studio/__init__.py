"""RLOO Studio: RLOO (REINFORCE Leave-One-Out) fine-tuning of language models, as an app and a CLI.

Layers, top to bottom; a module imports only from the layers below it (and from what its row in
ALLOWED_IMPORTS names), which tests/unit/test_layers.py checks for every import in the package:

    front      ui (the Gradio page)       cli (the `rloo-studio` command; starts the ui and the engine)
               data_parallel (the launcher of `train --num-processes N`: the run directory, the ranks, the clean stop)
    engine     engine/ (torch, models, TRL: runs only in worker processes, never in the app's process)
    services   rewards/  alerts  data  scan  vram  presets  jobs  trial  inference_client  serve  wall  hardware  distributed  model_files
    contract   runs (the run directory)  config (RunConfig)  batching  stats  step_time (metrics.jsonl's step-time keys)
    base       errors  protocol (what crosses a pipe: the typed requests and results)  procs
               sandbox (the reward sandbox: whether and how)  paths (the project root and its bundled folders)
               demo_task  tinymodel

The UI never imports the engine (it starts it as a child process through jobs, inference_client and
child commands) and never imports torch at module level; the engine never imports gradio or the UI.
See docs/architecture.md for what each module does.
"""

__version__ = "0.1.0"

BASE = {"errors", "protocol", "procs", "sandbox", "paths"}

# Which top-level units each unit may import (packages count as one unit: engine, rewards, ui).
ALLOWED_IMPORTS: dict[str, set[str]] = {
    "errors": set(), "protocol": set(), "procs": set(), "sandbox": {"procs"}, "paths": set(), "demo_task": set(), "tinymodel": set(),
    "alerts": set(), "step_time": set(), "batching": BASE, "stats": BASE, "config": BASE | {"batching"}, "runs": BASE,
    "wall": BASE, "serve": BASE | {"runs"}, "hardware": BASE, "distributed": BASE, "model_files": BASE,
    "presets": BASE | {"config"},
    "data": BASE | {"config", "demo_task"},
    "vram": BASE | {"config"},
    "jobs": BASE | {"config", "runs"},
    "trial": BASE | {"config", "runs", "batching", "step_time", "jobs", "rewards"},
    "inference_client": BASE | {"runs"},
    "rewards": BASE | {"config", "runs", "model_files", "data"},  # data: hand-written examples shaped as training shapes rows
    "scan": BASE | {"config", "runs", "batching", "rewards", "data"},
    "engine": BASE | {"alerts", "config", "runs", "batching", "step_time", "stats", "rewards", "data", "vram", "distributed", "demo_task", "tinymodel",
               "model_files", "scan"},
    "ui": BASE | {"alerts", "config", "runs", "batching", "step_time", "stats", "rewards", "data", "vram", "presets", "jobs", "trial", "inference_client",
                  "serve", "wall", "hardware", "distributed", "scan"},
    "cli": BASE | {"config", "runs", "batching", "step_time", "stats", "rewards", "data", "vram", "presets", "jobs", "trial", "inference_client",
                   "serve", "wall", "hardware", "distributed", "engine", "ui", "demo_task", "tinymodel", "model_files", "scan",
                   "data_parallel"},
    "data_parallel": BASE | {"config", "runs", "distributed", "engine"},
}

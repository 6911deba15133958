"""RLOO Studio: RLOO (REINFORCE Leave-One-Out) fine-tuning of language models, as an app and a CLI.

Layers, top to bottom; a module imports only from the layers below it (and from what its row in
ALLOWED_IMPORTS names), which tests/unit/test_layers.py checks for every import in the package:

    front      ui (the Gradio page)       cli/ (the `rloo-studio` command; starts the ui and the engine; its
               data_parallel: the launcher of `train --num-processes N`, the run directory, the ranks, the clean stop)
    engine     engine/ (torch, models, TRL: runs only in worker processes, never in the app's process)
    services   rewards/  workers/ (the app's side of every child: training jobs, the inference worker, the scoring
               children and the ones kept waiting, commands, the trial)
               data  scan  presets  model_files  web/ (who may reach the app: serve, wall)
               machine/ (this machine: hardware, the memory estimate vram, the processes of a distributed run)
    contract   runs/ (a run's folder and what its records say: the run directory, metrics.jsonl's step-time keys,
               the health alerts)  config (RunConfig)  batching  stats
    base       errors  protocol (what crosses a pipe: the typed requests and results)  procs
               sandbox (the reward sandbox: whether and how)  paths (the project root and its bundled folders)
               demo/ (the bundled demo: its task and its tiny models)

The UI never imports the engine (it starts it as a child process through workers/) and never imports torch at
module level; the engine never imports gradio or the UI.
See docs/architecture.md for what each module does.
"""

__version__ = "0.1.0"

BASE = {"errors", "protocol", "procs", "sandbox", "paths"}

# Which top-level units each unit may import (packages count as one unit: engine, rewards, ui).
ALLOWED_IMPORTS: dict[str, set[str]] = {
    "errors": set(), "protocol": set(), "procs": set(), "sandbox": {"procs"}, "paths": set(), "demo": set(),
    "batching": BASE, "stats": BASE, "config": BASE | {"batching"}, "runs": BASE,
    "web": BASE | {"runs"}, "model_files": BASE,
    "machine": BASE | {"config"},  # vram estimates a config's peak memory
    "presets": BASE | {"config"},
    "data": BASE | {"config", "demo"},
    "workers": BASE | {"config", "runs", "batching", "rewards"},  # the trial: the judge's share of a step
    "rewards": BASE | {"config", "runs", "model_files", "data"},  # data: hand-written examples shaped as training shapes rows
    "scan": BASE | {"config", "runs", "batching", "rewards", "data", "workers"},  # workers: the scoring child
    "engine": BASE | {"config", "runs", "batching", "stats", "rewards", "data", "machine", "demo",
               "model_files", "scan"},
    "ui": BASE | {"config", "runs", "batching", "stats", "rewards", "data", "machine", "presets",
                  "workers", "web", "scan"},
    "cli": BASE | {"config", "runs", "batching", "stats", "rewards", "data", "machine", "presets", "workers",
                   "web", "engine", "ui", "demo", "model_files", "scan"},
}

"""RLOO Studio: RLOO (REINFORCE Leave-One-Out) fine-tuning of language models, as an app and a CLI.

Layers, each importing only those to its right (tests check the first two rules):

    ui  ──────►  jobs, runs, presets, vram, rewards, config   (never torch at import)
    cli ──────►  engine, runs, presets, vram, rewards, config
    engine ───►  rewards, runs, config                         (never gradio, never ui)
    rewards, runs, presets, vram ──► config
    config ───►  (stdlib, yaml only)

Everything that touches a model lives in `rloo_studio.engine` and runs in its own process.
"""

__version__ = "0.1.0"

"""The Gradio app: one module per tab, each turning its widgets into its part of the RunConfig.

Building the page imports no torch, transformers, TRL or Unsloth (a test checks): models are
handled by child processes (`rloo_studio.workers.jobs` for training, `rloo_studio.machine.hardware` for the
device probe). The page reads everything it shows from the run directories, so a reload or a
restart of the app finds the same state.
"""

"""The engine: everything that touches torch, models and TRL — the stack import, model loading, the
pre-flight check, the training worker, sampling, evaluation, the chat's model and the exports.
Never imports gradio or the UI.
"""

"""The engine: everything that touches torch, models and TRL — stack import, model loading, data,
the pre-flight check and the training worker. Never imports gradio or the UI.
"""

"""The app: builds the page from the tabs, lets each tab wire itself to the page's form, and serves it.

`build_app(runs_dir)` returns the Gradio Blocks (a test builds it and checks that no model
library was imported); `serve(...)` applies the exposure rule and launches it. The form's state
is one `form.PageForm` per page (the settings tabs' widgets plus a `base` config with the preset's
keys that no widget shows); the run's state lives in its directory, which a timer reads — so a
browser reload or an app restart re-attaches to whatever is training.
"""

from __future__ import annotations

import os
from pathlib import Path

# Before gradio or huggingface_hub are imported: nothing leaves the machine unless the person asks.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

import gradio as gr  # noqa: E402

from .. import hardware  # noqa: E402
from ..inference import InferenceWorker  # noqa: E402
from ..presets import DEFAULT_CPU_PRESET, list_presets  # noqa: E402
from . import text  # noqa: E402
from .chat_tab import ChatTab  # noqa: E402
from .data_tab import DataTab  # noqa: E402
from .eval_tab import EvalTab  # noqa: E402
from .export_tab import ExportTab  # noqa: E402
from .form import HardwareCache, PageForm  # noqa: E402
from .model_tab import ModelTab  # noqa: E402
from .rewards_tab import RewardsTab  # noqa: E402
from .runs_tab import RunsTab  # noqa: E402
from .train_tab import TrainTab, resume_run  # noqa: E402
from .workspace import DRAFT_REWARDS, Workspace  # noqa: E402

POLL_SECONDS = 2.0
CSS = "#train-progress {margin: 4px 0 8px 0;} footer {display: none !important;}"


def build_app(runs_dir: str | Path = "runs", detect_hardware: bool = True, known_hardware: hardware.Hardware | None = None) -> gr.Blocks:
    """The page. `known_hardware` skips the probe (tests use it to stand in for a GPU)."""
    runs_dir = Path(runs_dir).expanduser().resolve()
    workspace = Workspace(runs_dir)
    presets = list_presets()
    hw = HardwareCache(detect_hardware, known_hardware)
    # At most one process holds a model for chatting; training shuts it down first (one GPU owner).
    worker = InferenceWorker(log_path=workspace.dir / "inference.log")
    default_preset = DEFAULT_CPU_PRESET if any(p.name == DEFAULT_CPU_PRESET for p in presets) else (presets[0].name if presets else None)

    with gr.Blocks(title=text.TITLE, analytics_enabled=False) as demo:
        gr.Markdown(f"# {text.TITLE}\n{text.INTRO}")
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("1 · Model & hardware", id="model", elem_id="tab-model"):
                model_tab = ModelTab(presets, default_preset)
            with gr.Tab("2 · Data", id="data", elem_id="tab-data"):
                data_tab = DataTab(workspace.uploads)
            with gr.Tab("3 · Rewards", id="rewards", elem_id="tab-rewards"):
                rewards_tab = RewardsTab(workspace.read(DRAFT_REWARDS) or text.CODE_TEMPLATE)
            with gr.Tab("4 · Train", id="train", elem_id="tab-train"):
                train_tab = TrainTab()
            with gr.Tab("5 · Chat", id="chat", elem_id="tab-chat"):
                chat_tab = ChatTab(runs_dir, worker)
            with gr.Tab("6 · Evaluate", id="evaluate", elem_id="tab-evaluate"):
                eval_tab = EvalTab(runs_dir, worker)
            with gr.Tab("7 · Export", id="export", elem_id="tab-export"):
                export_tab = ExportTab(runs_dir, worker)
            with gr.Tab("Runs", id="runs", elem_id="tab-runs"):
                runs_tab = RunsTab(runs_dir)
        timer = gr.Timer(POLL_SECONDS)
        form = PageForm(runs_dir, workspace, hw, presets, default_preset, model_tab, data_tab, rewards_tab, train_tab)

        model_tab.wire(demo, form)
        data_tab.wire(demo, form)
        rewards_tab.wire(demo, form)
        train_tab.wire(demo, form, worker, timer)
        runs_tab.wire(demo, form, lambda run_dir: resume_run(worker, run_dir), timer)
        for tab in (chat_tab, eval_tab, export_tab):
            tab.wire(demo, timer)
    return demo


def serve(host: str = "127.0.0.1", port: int = 7860, runs_dir: str | Path = "runs", auth: tuple[str, str] | None = None,
          share: bool = False, inbrowser: bool = False) -> int:
    from ..serve import free_port

    demo = build_app(runs_dir)
    port = free_port(host, port)
    shown_host = "127.0.0.1" if host in ("127.0.0.1", "localhost") else host
    print(f"RLOO Studio is running at http://{shown_host}:{port}  (Ctrl-C stops the app; a training run keeps going)", flush=True)
    demo.queue(default_concurrency_limit=4)
    demo.launch(server_name=host, server_port=port, auth=auth, share=share, inbrowser=inbrowser, quiet=True,
                show_error=True, css=CSS, footer_links=[])
    return 0

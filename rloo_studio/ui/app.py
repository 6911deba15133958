"""The app: builds the page from the tabs, lets each tab wire itself to the page's form, and serves it.

`build_app(runs_dir)` returns the Gradio Blocks (a test builds it and checks that no model
library was imported); `launch(demo, ...)` serves it behind the wall (`rloo_studio/web/wall.py`, the
outermost layer, before Gradio's CORS and compression), with Gradio's extras the app does not use
(monitoring, run history) off and its files in a folder of this user's own (`private_file_folder`);
`serve(...)` builds and launches it for the command line. The form's state
is one `form.PageForm` per page (the settings tabs' widgets plus a `base` config with the preset's
keys that no widget shows); the run's state lives in its directory, which a timer reads — so a
browser reload or an app restart re-attaches to whatever is training.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

# Before gradio or huggingface_hub are imported: nothing leaves the machine unless the person asks.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

import gradio as gr  # noqa: E402

from .. import runs  # noqa: E402
from ..machine import hardware  # noqa: E402
from ..workers import jobs  # noqa: E402
from ..workers.inference import InferenceWorker  # noqa: E402
from ..presets import DEFAULT_CPU_PRESET, list_presets  # noqa: E402
from . import text  # noqa: E402
from .chat_tab import ChatTab  # noqa: E402
from .data_tab import DataTab  # noqa: E402
from .eval_tab import EvalTab  # noqa: E402
from .export_tab import ExportTab  # noqa: E402
from .form import HardwareCache, PageForm  # noqa: E402
from .model_tab import ModelTab  # noqa: E402
from .poller import Poller  # noqa: E402
from .rewards_tab import RewardsTab, preview_shown  # noqa: E402
from .runs_tab import RunsTab  # noqa: E402
from .scan_panel import ScanPanel  # noqa: E402
from .train_tab import MEASURING, TrainTab, resume_run  # noqa: E402
from .workspace import DRAFT_PAGE, DRAFT_REWARDS, Workspace  # noqa: E402

POLL_SECONDS = 2.0  # while a run trains: the curves and the step counter move
IDLE_POLL_SECONDS = 6.0  # otherwise: a run started elsewhere (the command line) still shows within seconds
QUEUE_CONCURRENCY = 4  # default concurrency per event listener (see launch)
CSS = "#train-progress {margin: 4px 0 8px 0;} footer {display: none !important;}"
# Readability rules that must hold however the app is launched (tests launch it without `css=`), so they are in the page.
PAGE_CSS = """
#preview-table table, #samples table, #eval-examples table, #pinned table { table-layout: fixed; width: 100%; }
#preview-table th, #samples th, #eval-table th, #runs-table th, #eval-examples th, #pinned th { word-break: normal; overflow-wrap: normal; hyphens: none; }
#preview-table th span, #samples th span, #eval-table th span, #runs-table th span, #eval-examples th span, #pinned th span { word-break: normal !important; overflow-wrap: normal !important; }
#preview-table th span[data-editable], #samples th span[data-editable] { display: inline-block; max-width: 10em; }
#preview-table td, #samples td, #eval-examples td, #pinned td { overflow-wrap: anywhere; }
.gradio-container { --block-info-text-color: #374151 !important; --block-info-text-size: 14px !important; }
#run-banner { border: 2px solid #f97316; border-radius: 8px; padding: 4px 10px; background: #fff7ed; }
"""


def private_file_folder() -> Path:
    """Gradio's folder for uploads and the files it serves (GRADIO_TEMP_DIR): one of this user's own, made once per
    process (0700, removed at exit), unless GRADIO_TEMP_DIR names one. Gradio's default, /tmp/gradio, is shared by
    every user of the computer. Set before any component is made: each takes the folder when it is created."""
    given = os.environ.get("GRADIO_TEMP_DIR")
    if given:
        return Path(given)
    folder = Path(tempfile.mkdtemp(prefix="rloo-studio-files-"))  # mkdtemp makes it readable by this user only
    atexit.register(shutil.rmtree, folder, True)
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    return folder


def build_app(runs_dir: str | Path = "runs", detect_hardware: bool = True, known_hardware: hardware.Hardware | None = None) -> gr.Blocks:
    """The page. `known_hardware` skips the probe (tests use it to stand in for a GPU)."""
    private_file_folder()
    runs_dir = Path(runs_dir).expanduser().resolve()
    workspace = Workspace(runs_dir)
    presets = list_presets()
    hw = HardwareCache(detect_hardware, known_hardware)
    # At most one process holds a model for chatting; training shuts it down first (one GPU owner).
    worker = InferenceWorker(log_path=workspace.dir / "inference.log")
    default_preset = DEFAULT_CPU_PRESET if any(p.name == DEFAULT_CPU_PRESET for p in presets) else (presets[0].name if presets else None)

    with gr.Blocks(title=text.TITLE, analytics_enabled=False) as demo:
        gr.HTML(f"<style>{PAGE_CSS}</style>", padding=False)
        gr.Markdown(f"# {text.TITLE}\n{text.INTRO}")
        # Shown on every tab while a run trains: whichever tab a reload opens on, the run must not be a secret.
        with gr.Row(visible=False, elem_id="run-banner", equal_height=True) as banner_row:
            banner = gr.Markdown(elem_id="run-banner-text")
            open_train = gr.Button("Watch it in the Train tab", elem_id="run-banner-open", scale=0, min_width=220)
        with gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab("1 · Model & hardware", id="model", elem_id="tab-model") as model_page:
                model_tab = ModelTab(presets, default_preset)
            with gr.Tab("2 · Data", id="data", elem_id="tab-data") as data_page:
                data_tab = DataTab(workspace.uploads)
            with gr.Tab("3 · Rewards", id="rewards", elem_id="tab-rewards") as rewards_page:
                rewards_tab = RewardsTab(workspace.read(DRAFT_REWARDS) or text.CODE_TEMPLATE)
                scan_panel = ScanPanel()
            with gr.Tab("4 · Train", id="train", elem_id="tab-train") as train_page:
                train_tab = TrainTab()
            with gr.Tab("5 · Chat", id="chat", elem_id="tab-chat") as chat_page:
                chat_tab = ChatTab(runs_dir, worker)
            with gr.Tab("6 · Evaluate", id="evaluate", elem_id="tab-evaluate") as eval_page:
                eval_tab = EvalTab(runs_dir, worker)
            with gr.Tab("7 · Export", id="export", elem_id="tab-export") as export_page:
                export_tab = ExportTab(runs_dir, worker)
            with gr.Tab("Runs", id="runs", elem_id="tab-runs") as runs_page:
                runs_tab = RunsTab(runs_dir)
        # The page's one timer: every tab's polls run in one event a tick, often while a run trains, else seldom.
        poller = Poller(POLL_SECONDS, IDLE_POLL_SECONDS, busy=lambda: jobs.active_run(runs_dir) is not None)
        form = PageForm(runs_dir, workspace, hw, presets, default_preset, model_tab, data_tab, rewards_tab, train_tab)

        model_tab.wire(demo, form)
        data_tab.wire(demo, form)
        rewards_tab.wire(demo, form, worker)
        scan_panel.wire(demo, form, worker)
        train_tab.wire(demo, form, worker, poller)
        runs_tab.wire(demo, form, lambda run_dir: resume_run(worker, run_dir), poller)
        for tab in (chat_tab, eval_tab, export_tab):
            tab.wire(demo, poller)

        keep_page(demo, workspace, tabs, [model_page, data_page, rewards_page, train_page, chat_page, eval_page, export_page,
                                          runs_page])
        # The results that took a run of their own come back after a reload, marked with when they were made (and
        # outdated if a field changed since).
        train_tab.time_outdated.keep(demo, workspace, [train_tab.time_estimate, train_tab.time_measured],
                                     worth=lambda shown, measured: not str(shown or "").startswith(MEASURING))
        data_tab.summary_outdated.keep(demo, workspace, [data_tab.summary, data_tab.table], worth=lambda summary, table: bool(summary))
        rewards_tab.preview_outdated.keep(demo, workspace, [rewards_tab.preview_status, rewards_tab.preview_table,
                                                            rewards_tab.preview_summary, rewards_tab.preview_findings],
                                          worth=lambda status, *rest: bool(status), shown=preview_shown)
        rewards_tab.pinned_outdated.keep(demo, workspace, [rewards_tab.pinned_result], worth=bool)

        banner_now = functools.partial(banner_update, runs_dir)
        demo.load(banner_now, inputs=form.watched, outputs=[banner_row, banner, form.watched], api_name="run_banner")
        poller.tick(banner_now, inputs=[form.watched, banner], outputs=[banner_row, banner, form.watched])
        poller.wire()
        form.derived.wire()
        open_train.click(lambda: gr.Tabs(selected="train"), outputs=tabs, api_visibility="private")
    # Whoever serves the page ends the worker with it. (A worker whose app process ends sees its input close
    # and exits; an app closed inside a process that goes on, as in tests, must shut it down.)
    demo.inference_worker = worker
    return demo


def keep_page(demo: gr.Blocks, workspace: Workspace, tabs: gr.Tabs, pages: list) -> None:
    """The tab the person last chose is kept (DRAFT_PAGE) and shown again when the page loads: a reload opened on tab 1
    wherever the person was."""
    by_label = {p.label: p.id for p in pages}

    def chosen(evt: gr.SelectData):  # (the page sends a tab's choice as the Tabs' select, with the tab's label)
        if evt.value in by_label:
            workspace.write_json(DRAFT_PAGE, {"tab": by_label[evt.value]})

    tabs.select(chosen, api_visibility="private", show_progress="hidden")

    def shown():
        tab = (workspace.read_json(DRAFT_PAGE) or {}).get("tab")
        return gr.Tabs(selected=tab) if tab in [p.id for p in pages] else gr.skip()

    demo.load(shown, outputs=tabs, api_visibility="private", show_progress="hidden")


def banner_update(runs_dir: Path, watched: str | None, shown: str | None = None) -> tuple:
    """(banner row, banner line, the run the Train tab follows): "Run … is training — step s/n" while a run trains.

    `shown` is the line the page shows (None: unknown, as on load). What it already shows is not sent again: each
    re-sent component costs the browser a redraw, and the poll asks every few seconds.
    """
    active = jobs.active_run(runs_dir)
    if active is None:
        return (gr.skip(), gr.skip(), gr.skip()) if shown == "" else (gr.update(visible=False), "", gr.skip())
    status = runs.read_status(active)
    line = f"**Run `{active.name}` is training** — step {status.get('step', 0)}/{status.get('max_steps') or '?'}."
    # The run that trains is the one the Train tab shows: a reload or another window re-attaches to it.
    attach = gr.skip() if watched else str(active)
    if line == shown:  # and so is its row: the line and the row's visibility are only ever sent together
        return gr.skip(), gr.skip(), attach
    return gr.update(visible=True), line, attach


def serve(host: str = "127.0.0.1", port: int = 7860, runs_dir: str | Path = "runs", auth: tuple[str, str] | None = None,
          share: bool = False, inbrowser: bool = False, *, token: str | None, allowed_hosts: tuple[str, ...] = (),
          relink_command: str = "rloo-studio ui --print-url") -> int:
    """Build the page and serve it until Ctrl-C; `token` is required (None only for --no-token)."""
    demo = build_app(runs_dir)
    launch(demo, host=host, port=port, runs_dir=runs_dir, auth=auth, share=share, inbrowser=inbrowser, token=token,
           allowed_hosts=allowed_hosts, relink_command=relink_command, block=True)
    return 0


def launch(demo: gr.Blocks, *, token: str | None, host: str = "127.0.0.1", port: int = 7860, runs_dir: str | Path = "runs",
           auth: tuple[str, str] | None = None, share: bool = False, inbrowser: bool = False,
           allowed_hosts: tuple[str, ...] = (), relink_command: str = "rloo-studio ui --print-url", block: bool = True) -> str:
    """Serve `demo` behind the wall (Host allowlist, Origin check, launch token, login limits: see `wall.py`) and return
    its link.

    The only way the app is served, tests included. `token=None` means --no-token (warned about).
    With `block`, returns when the app stops (Ctrl-C or SIGTERM, the saved link removed either way); otherwise it keeps
    serving in the background (`demo.close()` stops it).
    """
    import contextlib
    import webbrowser

    from starlette.middleware import Middleware

    from ..web.serve import app_url, browser_file, forget_launch, free_port, save_launch
    from ..web.wall import Policy, Wall, login_check
    from .component_lookup import ComponentLookup
    from .frame_pacing import FramePacing
    from .status_updates import StatusUpdates
    from ..web.wall import allowed_hosts as hosts_for

    port = free_port(host, port)
    url = app_url(host, port, token)
    policy = Policy(hosts=set(hosts_for(host, allowed_hosts)), port=port, token=token, relink_command=relink_command)
    saved = save_launch(runs_dir, port, url)
    print(f"RLOO Studio is running at {url}  (Ctrl-C stops the app; a training run keeps going)", flush=True)
    if token is None:
        print("warning: --no-token: any web page you visit and any user of this computer who can reach port "
              f"{port} can run Python code here through the app (see docs/security.md)", file=sys.stderr, flush=True)
    if allowed_hosts or host not in ("127.0.0.1", "localhost", "::1"):
        print("The app answers to: " + ", ".join(sorted(policy.hosts)), flush=True)
    # Up to 4 of the same event at once (two tabs polling, a preview and a chat turn); the chat turn and
    # the inference worker's ops set their own limits. Set here, so tests serve what a person gets.
    demo.queue(default_concurrency_limit=QUEUE_CONCURRENCY)
    wall = Middleware(Wall, policy=policy)

    @contextlib.asynccontextmanager
    async def wall_outermost(app):
        # Gradio adds its CORS and compression layers outside the ones given to it, and CORS answers a preflight by
        # itself: moved in front of them here, before the server takes its first request, the wall sees every request.
        app.user_middleware = [wall, *(m for m in app.user_middleware if m is not wall)]
        app.middleware_stack = app.build_middleware_stack()
        yield

    if block and threading.current_thread() is threading.main_thread():
        # SIGTERM (a service manager, `kill`) ends the app as Ctrl-C does, so the saved link is removed.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        # Everything goes through this one server: no Node front-end (SSR) and no separate
        # static-file workers, which would serve requests that the wall never sees.
        # The wall first; then the page's three fixes to Gradio's frontend, each rewriting what it fixes as it is served.
        page_fixes = [wall, Middleware(FramePacing), Middleware(ComponentLookup), Middleware(StatusUpdates)]
        # Monitoring (/monitoring) and run history (/gradio_api/runs) are Gradio extras the app does not use: off.
        _, _, share_url = demo.launch(server_name=host, server_port=port, auth=login_check(auth) if auth else None,
                                      share=share, inbrowser=False, quiet=True, show_error=True, css=CSS, footer_links=[],
                                      prevent_thread_lock=True, ssr_mode=False, num_workers=0,
                                      blocked_paths=[str(saved.parent.resolve())], enable_monitoring=False,
                                      run_history=False, app_kwargs={"middleware": page_fixes, "lifespan": wall_outermost})
        if share_url:  # the tunnel forwards requests that name the share link's host
            policy.hosts.add(urlsplit(share_url).hostname or "")
            print(f"Public link: {share_url.rstrip('/')}/" + (url[url.index('?'):] if token else ""), flush=True)
        if inbrowser:  # a page that holds the link, not the link: the browser's command line is shown to every user
            webbrowser.open(browser_file(saved, url).resolve().as_uri())
        if block:
            demo.block_thread()
    except BaseException:
        forget_launch(saved)
        raise
    if block:
        forget_launch(saved)
    return url

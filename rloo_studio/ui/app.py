"""The app: builds the page from the tabs, wires the cross-tab actions, and serves it.

`build_app(runs_dir)` returns the Gradio Blocks (a test builds it and checks that no model
library was imported); `launch(demo, ...)` serves it behind the wall (`rloo_studio/wall.py`) and
`serve(...)` builds and launches it for the command line. The form's state
lives in the widgets plus a `base` config (the preset's keys that no widget shows); the run's
state lives in its directory, which a timer reads — so a browser reload or an app restart
re-attaches to whatever is training.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

# Before gradio or huggingface_hub are imported: nothing leaves the machine unless the person asks.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

import gradio as gr  # noqa: E402
import yaml  # noqa: E402

from .. import hardware, jobs, runs  # noqa: E402
from ..config import RunConfig  # noqa: E402
from ..errors import ConfigError, StudioError  # noqa: E402
from ..presets import DEFAULT_CPU_PRESET, get_preset, list_presets, recommend  # noqa: E402
from ..vram import estimate_config, shrink_to_fit  # noqa: E402
from . import text  # noqa: E402
from .data_tab import DataTab  # noqa: E402
from .model_tab import ModelTab, estimate_markdown  # noqa: E402
from ..jobs import absolute_paths  # noqa: E402
from ..rewards.preview import score_in_child, tokenizer_source  # noqa: E402
from .rewards_tab import RewardsTab, pinned_groups, pinned_report, preview_tables, receives_markdown  # noqa: E402
from .runs_tab import RunsTab  # noqa: E402
from .chat_tab import ChatTab  # noqa: E402
from .child import run_cli  # noqa: E402
from .eval_tab import EvalTab  # noqa: E402
from .export_tab import ExportTab  # noqa: E402
from ..inference import InferenceWorker  # noqa: E402
from .train_tab import TrainTab  # noqa: E402

POLL_SECONDS = 2.0
PREVIEW_SCORE_TIMEOUT_S = 30  # the reward functions' time limit in the preview (a hang is stopped, the app stays usable)
DRAFT_CONFIG = "draft-config.yaml"
DRAFT_REWARDS = "draft-rewards.py"
CSS = "#train-progress {margin: 4px 0 8px 0;} footer {display: none !important;}"


class HardwareCache:
    """The hardware probe runs once, in the background, from the moment the app is built."""

    def __init__(self, enabled: bool = True, known: hardware.Hardware | None = None):
        self._result: hardware.Hardware | None = known or (None if enabled else hardware.Hardware(cpu_cores=os.cpu_count() or 1, error="detection disabled"))
        self._done = threading.Event()
        if enabled and known is None:
            threading.Thread(target=self._run, name="hardware-probe", daemon=True).start()
        else:
            self._done.set()

    def _run(self) -> None:
        self._result = hardware.detect()
        self._done.set()

    def get(self, timeout_s: float = hardware.PROBE_TIMEOUT_S) -> hardware.Hardware:
        self._done.wait(timeout_s)
        return self._result or hardware.Hardware(cpu_cores=os.cpu_count() or 1, error="still detecting")


class Workspace:
    """Where the app keeps what a person made outside runs: drafts of the form and the reward code, uploads."""

    def __init__(self, runs_dir: Path):
        self.runs_dir = runs_dir
        self.dir = runs_dir / ".studio"  # no status.json inside: never listed as a run
        self.uploads = self.dir / "uploads"

    def read(self, name: str) -> str | None:
        path = self.dir / name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write(self, name: str, content: str) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, path)  # a crash mid-write leaves the previous draft whole
        return path


def build_app(runs_dir: str | Path = "runs", detect_hardware: bool = True, known_hardware: hardware.Hardware | None = None) -> gr.Blocks:
    """The page. `known_hardware` skips the probe (tests use it to stand in for a GPU)."""
    runs_dir = Path(runs_dir).expanduser().resolve()
    workspace = Workspace(runs_dir)
    presets = list_presets()
    hw = HardwareCache(detect_hardware, known_hardware)
    # At most one process holds a model for chatting; training shuts it down first (one GPU owner).
    worker = InferenceWorker(log_path=workspace.dir / "inference.log")
    default_preset = DEFAULT_CPU_PRESET if any(p.name == DEFAULT_CPU_PRESET for p in presets) else (presets[0].name if presets else None)

    def initial_config() -> tuple[RunConfig, str]:
        """The draft of the last session if there is one, else the default preset."""
        draft = workspace.read(DRAFT_CONFIG)
        if draft:
            try:
                return RunConfig.from_dict(yaml.safe_load(draft) or {}, base_dir=os.getcwd(), source="the saved draft"), "your last settings"
            except (ConfigError, yaml.YAMLError):
                pass  # an unreadable draft must not lock the person out: fall back to the preset
        gpus = hw.get().gpus
        suggested = recommend(presets, gpus[0].total_gb if gpus else None)
        if suggested:
            why = f" — the largest preset that fits your {gpus[0].total_gb:.0f} GB GPU" if gpus else ""
            return suggested.load(), f"the {suggested.name} preset{why}"
        if default_preset:
            return get_preset(default_preset).load(), f"the {default_preset} preset"
        return RunConfig(), "the defaults"

    with gr.Blocks(title=text.TITLE, analytics_enabled=False) as demo:
        gr.Markdown(f"# {text.TITLE}\n{text.INTRO}")
        base = gr.State({})             # {"config": dict, "base_dir": str}: the preset's keys no widget shows
        watched = gr.State(None)        # the run directory the Train tab shows
        columns = gr.State([])          # the data's columns from the last preview
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

        tabs = (model_tab, data_tab, rewards_tab, train_tab)
        form_inputs = [c for tab in tabs for c in tab.inputs]
        sizes = [len(tab.inputs) for tab in tabs]

        def form_values(cfg: RunConfig) -> list:
            code = workspace.read(DRAFT_REWARDS) or text.CODE_TEMPLATE  # the editor keeps its code across presets and reloads
            return (ModelTab.values_from(cfg) + DataTab.values_from(cfg) + RewardsTab.values_from(cfg, code) + TrainTab.values_from(cfg))

        def config_from_form(state: dict, values: list) -> tuple[RunConfig | None, list[str]]:
            """The one place the form becomes a RunConfig; returns every problem found."""
            cfg = copy.deepcopy(state.get("config") or {})
            parts, at = [], 0
            for n in sizes:
                parts.append(values[at:at + n])
                at += n
            problems: list[str] = []
            problems += ModelTab.apply(cfg, parts[0])
            problems += RewardsTab.apply(cfg, parts[2])
            problems += DataTab.apply(cfg, parts[1])  # after the rewards: it sets their answer column
            problems += TrainTab.apply(cfg, parts[3])
            cfg.setdefault("output", {})["runs_dir"] = str(runs_dir)
            try:
                config = RunConfig.from_dict(cfg, base_dir=state.get("base_dir") or os.getcwd(), source="the form")
            except ConfigError as exc:
                return None, problems + exc.problems
            return config, problems + config.validate()

        def problems_markdown(problems: list[str]) -> str:
            return "**Please fix before starting:**\n" + "\n".join(f"- {p}" for p in problems) if problems else ""

        # ---- memory estimate and shrink-to-fit ----------------------------------------------------
        def device_of() -> tuple[float | None, bool, str | None]:
            gpus = hw.get().gpus
            if not gpus:
                return None, True, None
            return gpus[0].total_gb, gpus[0].bf16, f"{gpus[0].name} ({gpus[0].total_gb:.1f} GB)"

        def estimate_for(cfg: RunConfig | None):
            device_gib, bf16, name = device_of()
            return estimate_config(cfg, device_gib, bf16) if cfg else None, name

        def update_estimate(state, *values):
            cfg, problems = config_from_form(state, list(values))
            if cfg is None:
                return problems_markdown(problems)
            est, name = estimate_for(cfg)
            return estimate_markdown(est, name)

        def shrink(state, *values):
            cfg, problems = config_from_form(state, list(values))
            device_gib, bf16, name = device_of()
            if cfg is None:
                return [state, problems_markdown(problems)] + list(values)
            if device_gib is None:
                return [state, "No GPU was detected, so there is nothing to shrink to: the estimate shows what a GPU would need."] + list(values)
            changes, est = shrink_to_fit(cfg, device_gib, bf16)
            if not changes:
                return [state, estimate_markdown(est, name)] + list(values)
            from ..config import apply_overrides

            new = RunConfig.from_dict(apply_overrides(cfg.to_dict(), [f"{k}={json.dumps(v)}" for k, v in changes.items()]),
                                      base_dir=cfg.base_dir)
            listed = ", ".join(f"`{k} = {json.dumps(v)}`" for k, v in changes.items())
            verdict = "now fits" if est and est.verdict == "fits" else "still does not fit — choose a smaller model"
            message = f"**Changed:** {listed} → {verdict}.\n\n" + estimate_markdown(est, name)
            return [{"config": new.to_dict(), "base_dir": new.base_dir}, message] + form_values(new)

        estimate_inputs = [base] + form_inputs
        for widget in model_tab.inputs + [train_tab.fields[k] for k in ("num_generations", "per_device_train_batch_size", "max_completion_length", "beta")]:
            widget.change(update_estimate, inputs=estimate_inputs, outputs=model_tab.estimate, api_visibility="private",
                          show_progress="hidden", trigger_mode="always_last")
        model_tab.shrink.click(shrink, inputs=estimate_inputs, outputs=[base, model_tab.estimate] + form_inputs, api_name="shrink_to_fit")

        # ---- page load: hardware, the form, the run to watch ------------------------------------
        def on_load():
            cfg, origin = initial_config()
            hw_now = hw.get()
            device = hw_now.summary().replace("\n", "  \n")
            if not hw_now.has_gpu:
                device += "  \nWithout a GPU, the **cpu-demo** preset (the bundled model and data, offline) is the one that finishes in minutes."
            active = jobs.active_run(runs_dir)
            latest = active or next((r.path for r in runs.list_runs(runs_dir)), None)
            state = {"config": cfg.to_dict(), "base_dir": cfg.base_dir}
            notes = f"The form shows {origin}."
            return [device, state, str(latest) if latest else None, notes] + form_values(cfg)

        demo.load(on_load, outputs=[model_tab.device, base, watched, model_tab.preset_notes] + form_inputs, api_name="load_form").then(
            update_estimate, inputs=estimate_inputs, outputs=model_tab.estimate, api_visibility="private")
        model_tab.estimate_api = gr.Button(visible=False)
        model_tab.estimate_api.click(update_estimate, inputs=estimate_inputs, outputs=model_tab.estimate, api_name="estimate")

        # ---- presets --------------------------------------------------------------------------------
        def apply_preset(name: str):
            try:
                preset = get_preset(name)
                cfg = preset.load()
            except StudioError as exc:
                raise gr.Error(exc.message()) from None
            workspace.write(DRAFT_CONFIG, cfg.to_yaml())
            notes = f"**{preset.name}** — {preset.title}\n\n```\n{preset.notes}\n```" if preset.notes else f"**{preset.name}** — {preset.title}"
            return [{"config": cfg.to_dict(), "base_dir": cfg.base_dir}, notes] + form_values(cfg)

        model_tab.apply_preset.click(apply_preset, inputs=model_tab.preset, outputs=[base, model_tab.preset_notes] + form_inputs,
                                     api_name="apply_preset").then(update_estimate, inputs=estimate_inputs, outputs=model_tab.estimate,
                                                                   api_visibility="private")

        # ---- data preview ----------------------------------------------------------------------------
        def preview_data(state, *values):
            cfg, problems = config_from_form(state, list(values))
            data_cfg = cfg.data if cfg else None
            if data_cfg is None:
                return "**Please fix:**\n" + "\n".join(f"- {p}" for p in problems), None, [], gr.update(), gr.update()
            summary, rows, headers, cols = DataTab.preview(data_cfg, state.get("base_dir") or os.getcwd())
            table = {"headers": headers, "data": rows} if headers else None
            prompt_choices = gr.update(choices=cols, value=data_cfg.prompt_column if data_cfg.prompt_column in cols else (cols[0] if cols else None)) if cols else gr.update()
            answer_choices = gr.update(choices=cols + ["(none)"]) if cols else gr.update()
            return summary, table, cols, prompt_choices, answer_choices

        data_tab.preview_button.click(preview_data, inputs=[base] + form_inputs,
                                      outputs=[data_tab.summary, data_tab.table, columns, data_tab.prompt_column, data_tab.answer_column],
                                      api_name="preview_data").then(
            receives_markdown, inputs=[columns, data_tab.prompt_column], outputs=rewards_tab.receives, api_visibility="private")

        # ---- reward code -----------------------------------------------------------------------------
        def check_code(code, user_table, cols):
            workspace.write(DRAFT_REWARDS, code or "")
            return RewardsTab.check_code(code, user_table, cols)

        rewards_tab.check.click(check_code, inputs=[rewards_tab.code, rewards_tab.user, columns],
                                outputs=[rewards_tab.check_result, rewards_tab.user], api_name="check_rewards")
        # Leaving the editor also loads the code (in a child process) and checks the functions' parameters.
        rewards_tab.code.blur(check_code, inputs=[rewards_tab.code, rewards_tab.user, columns],
                              outputs=[rewards_tab.check_result, rewards_tab.user], api_visibility="private", trigger_mode="always_last")
        rewards_tab.code.change(lambda code: workspace.write(DRAFT_REWARDS, code or "") and None, inputs=rewards_tab.code,
                                outputs=None, api_name="save_reward_draft", show_progress="hidden")

        # ---- reward preview and pinned examples ---------------------------------------------------
        def preview(state, prompts_n, typed_prompt, typed_answer, pasted, *values, progress=gr.Progress()):
            cfg, problems = config_from_form(state, list(values))
            if cfg is None or problems:
                return [problems_markdown(problems), None, None, ""]
            folder = workspace.dir / "preview"
            folder.mkdir(parents=True, exist_ok=True)
            code = values[code_index] or ""
            (folder / "rewards.py").write_text(code, encoding="utf-8")
            absolute_paths(cfg, folder).save(folder / "config.yaml")
            args = ["preview", str(folder / "config.yaml"), "--json",
                    "--timeout", str(PREVIEW_SCORE_TIMEOUT_S)]
            lines = [line for line in (pasted or "").splitlines() if line.strip()]
            if lines:
                if not (typed_prompt or "").strip():
                    return ["Type the prompt the pasted completions answer.", None, None, ""]
                if len(lines) < 2:
                    return ["Paste at least two completions: RLOO compares each with the others.", None, None, ""]
                item = {"prompt": typed_prompt.strip(), "completions": lines}
                if (typed_answer or "").strip():
                    item["answer"] = typed_answer.strip()
                (folder / "completions.jsonl").write_text(json.dumps(item) + "\n", encoding="utf-8")
                args += ["--completions", str(folder / "completions.jsonl")]
            elif (typed_prompt or "").strip():
                args += ["--prompt", typed_prompt.strip()] + (["--answer", typed_answer.strip()] if (typed_answer or "").strip() else [])
            else:
                args += ["--num-prompts", str(int(prompts_n))]
            progress(0.05, desc="Starting the model worker…")
            def on_stage(line: str) -> None:  # the worker reports its stages: loading, sampling, scoring
                if line.startswith("[preview]"):
                    stage = line[len("[preview]"):].strip()
                    progress(0.3 if "loading" in stage else 0.6 if "sampling" in stage else 0.9, desc=stage)

            finished = run_cli(args, on_stage, cwd=os.getcwd(), tail_lines=200)
            if finished.returncode != 0 or not finished.stdout.strip():
                message = finished.error_text(f"the preview worker failed (exit code {finished.returncode})")
                return [f"**Preview failed:** {message}".replace("\n", "  \n"), None, None, ""]
            result = json.loads(finished.stdout.strip().splitlines()[-1])
            table, summary, findings = preview_tables(result)
            n = len(result.get("rows", []))
            how = ("your pasted completions" if lines else
                   f"{cfg.rloo_value('num_generations')} per prompt sampled at temperature {cfg.rloo.get('temperature', 1.0)}, "
                   f"up to {cfg.rloo_value('max_completion_length')} tokens")
            return [f"Scored {n} completions ({how}) in {result.get('seconds', 0):.1f} s.", table, summary, findings]

        preview_inputs = [base, rewards_tab.preview_prompts, rewards_tab.preview_prompt, rewards_tab.preview_answer,
                          rewards_tab.preview_pasted] + form_inputs
        rewards_tab.preview_button.click(preview, inputs=preview_inputs, outputs=[rewards_tab.preview_status, rewards_tab.preview_table,
                                                                                  rewards_tab.preview_summary, rewards_tab.preview_findings],
                                         api_name="preview_rewards")

        def run_pinned(state, pinned, *values):
            groups = pinned_groups(pinned)
            if not groups:
                return "No pinned examples yet: add rows with a prompt and a completion."
            cfg, problems = config_from_form(state, list(values))
            if cfg is None or problems:
                return problems_markdown(problems)
            request = {"groups": [{k: v for k, v in g.items() if k != "range"} for g in groups], "num_generations": 1,
                       "conversational": False, "probes": False, "source": values[code_index] or "",
                       "rewards": [dict(s.__dict__) for s in cfg.rewards],
                       "tokenizer": tokenizer_source(cfg.model.name_or_path, cfg.base_dir)}
            return pinned_report(groups, score_in_child(request, timeout_s=30))

        pinned_inputs = [base, rewards_tab.pinned] + form_inputs
        # The named endpoint first: events registered later with the same function get suffixed names.
        rewards_tab.pinned_run = gr.Button(visible=False)
        rewards_tab.pinned_run.click(run_pinned, inputs=pinned_inputs, outputs=rewards_tab.pinned_result, api_name="run_pinned")
        for trigger in (rewards_tab.code.blur, rewards_tab.pinned.change, rewards_tab.check.click):
            trigger(run_pinned, inputs=pinned_inputs, outputs=rewards_tab.pinned_result, api_visibility="private", trigger_mode="always_last")

        # ---- config view, start, stop, resume ------------------------------------------------------
        def show_config(state, *values):
            cfg, problems = config_from_form(state, list(values))
            if cfg is None:
                return problems_markdown(problems), "", ""
            path = workspace.write(DRAFT_CONFIG, cfg.to_yaml())
            return problems_markdown(problems), f"rloo-studio train {shlex.quote(str(path))}", cfg.to_yaml()

        code_index = form_inputs.index(rewards_tab.code)

        def start(state, *values):
            code = values[code_index]
            cfg, problems = config_from_form(state, list(values))
            if problems:
                return [problems_markdown(problems), gr.update(), gr.update(), gr.update()]
            est, device = estimate_for(cfg)
            if est is not None and est.verdict == "exceeds":
                return [f"**This will not fit {device}:** the estimated peak is {est.total_gib:.1f} GiB. Press **Shrink to fit** in "
                        "the Model & hardware tab for settings that do, or choose a smaller model.", gr.update(), gr.update(), gr.update()]
            workspace.write(DRAFT_CONFIG, cfg.to_yaml())
            workspace.write(DRAFT_REWARDS, code or "")
            try:
                worker.shutdown()  # the training worker gets the GPU to itself
                run_dir = jobs.start_run(cfg, runs_dir, reward_source=code)
            except StudioError as exc:
                return [f"**Could not start:** {exc.message()}".replace("\n", "  \n"), gr.update(), gr.update(), gr.update()]
            config_text = (run_dir / runs.CONFIG_FILE).read_text(encoding="utf-8")
            return ["", str(run_dir), f"rloo-studio train {shlex.quote(str(run_dir / runs.CONFIG_FILE))}", config_text]

        train_tab.start.click(start, inputs=[base] + form_inputs,
                              outputs=[train_tab.problems, watched, train_tab.command, train_tab.config_yaml], api_name="start_training")

        def stop(run_dir):
            if not run_dir:
                return "No run to stop."
            return jobs.stop_run(run_dir)

        train_tab.stop.click(stop, inputs=watched, outputs=train_tab.problems, api_name="stop_training")

        def resume(run_dir):
            if not run_dir:
                return "No run to resume: open one in the Runs tab first.", run_dir
            try:
                worker.shutdown()
                jobs.resume_run(run_dir)
            except StudioError as exc:
                return f"**Could not resume:** {exc.message()}".replace("\n", "  \n"), run_dir
            return f"Resuming `{Path(run_dir).name}`.", run_dir

        train_tab.resume.click(resume, inputs=watched, outputs=[train_tab.problems, watched], api_name="resume_training")

        # ---- the live view ----------------------------------------------------------------------------
        def poll(run_dir):
            view = jobs.view(run_dir) if run_dir and Path(run_dir).is_dir() else None
            return TrainTab.render(view)

        timer.tick(poll, inputs=watched, outputs=train_tab.outputs, api_name="run_status", show_progress="hidden")
        watched.change(poll, inputs=watched, outputs=train_tab.outputs, api_visibility="private")

        # ---- runs ---------------------------------------------------------------------------------------
        runs_tab.refresh.click(runs_tab.listing, inputs=runs_tab.picker, outputs=[runs_tab.table, runs_tab.picker], api_name="list_runs")
        demo.load(runs_tab.listing, outputs=[runs_tab.table, runs_tab.picker], api_visibility="private")
        runs_tab.picker.change(runs_tab.detail, inputs=runs_tab.picker,
                               outputs=[runs_tab.status, runs_tab.plot, runs_tab.config, runs_tab.log], api_name="open_run")
        runs_tab.watch.click(lambda run_id: (str(runs_dir / run_id) if run_id else None), inputs=runs_tab.picker, outputs=watched,
                             api_name="watch_run")

        def resume_from_runs(run_id):
            if not run_id:
                return "Pick a run first.", gr.update()
            message, run_dir = resume(str(runs_dir / run_id))
            return message, run_dir

        runs_tab.resume.click(resume_from_runs, inputs=runs_tab.picker, outputs=[runs_tab.message, watched], api_name="resume_run")

        def delete(run_id, confirmed, current):
            try:
                message = runs_tab.delete_run(run_id, confirmed)
            except StudioError as exc:
                return [exc.message(), gr.update(), gr.update(), False, current]
            table, picker = runs_tab.listing()
            if current and Path(current).name == run_id and not Path(current).exists():
                current = None
            return [message, table, picker, False, current]

        runs_tab.delete.click(delete, inputs=[runs_tab.picker, runs_tab.confirm, watched],
                              outputs=[runs_tab.message, runs_tab.table, runs_tab.picker, runs_tab.confirm, watched], api_name="delete_run")

        for tab in (chat_tab, eval_tab, export_tab):
            tab.wire(demo)

        train_tab.show_config.click(show_config, inputs=[base] + form_inputs, outputs=[train_tab.problems, train_tab.command, train_tab.config_yaml],
                          api_name="show_config")
    return demo


def serve(host: str = "127.0.0.1", port: int = 7860, runs_dir: str | Path = "runs", auth: tuple[str, str] | None = None,
          share: bool = False, inbrowser: bool = False, *, token: str | None, allowed_hosts: tuple[str, ...] = (),
          relink_command: str = "rloo-studio ui --print-url") -> int:
    """Build the page and serve it until Ctrl-C; `token` is required (None only for --no-token)."""
    demo = build_app(runs_dir)
    demo.queue(default_concurrency_limit=4)
    launch(demo, host=host, port=port, runs_dir=runs_dir, auth=auth, share=share, inbrowser=inbrowser, token=token,
           allowed_hosts=allowed_hosts, relink_command=relink_command, block=True)
    return 0


def launch(demo: gr.Blocks, *, token: str | None, host: str = "127.0.0.1", port: int = 7860, runs_dir: str | Path = "runs",
           auth: tuple[str, str] | None = None, share: bool = False, inbrowser: bool = False,
           allowed_hosts: tuple[str, ...] = (), relink_command: str = "rloo-studio ui --print-url", block: bool = True) -> str:
    """Serve `demo` behind the wall (Host allowlist, Origin check, launch token: see `wall.py`) and return its link.

    The only way the app is served, tests included. `token=None` means --no-token (warned about).
    With `block`, returns when the app stops; otherwise it keeps serving in the background
    (`demo.close()` stops it).
    """
    import webbrowser

    from starlette.middleware import Middleware

    from ..serve import app_url, forget_launch, free_port, save_launch
    from ..wall import Policy, Wall
    from ..wall import allowed_hosts as hosts_for

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
    try:
        # Everything goes through this one server: no Node front-end (SSR) and no separate
        # static-file workers, which would serve requests that the wall never sees.
        _, _, share_url = demo.launch(server_name=host, server_port=port, auth=auth, share=share, inbrowser=False,
                                      quiet=True, show_error=True, css=CSS, footer_links=[], prevent_thread_lock=True,
                                      ssr_mode=False, num_workers=0, blocked_paths=[str(saved.parent.resolve())],
                                      app_kwargs={"middleware": [Middleware(Wall, policy=policy)]})
        if share_url:  # the tunnel forwards requests that name the share link's host
            policy.hosts.add(urlsplit(share_url).hostname or "")
            print(f"Public link: {share_url.rstrip('/')}/" + (url[url.index('?'):] if token else ""), flush=True)
        if inbrowser:
            webbrowser.open(url)
        if block:
            demo.block_thread()
    except BaseException:
        forget_launch(saved)
        raise
    if block:
        forget_launch(saved)
    return url

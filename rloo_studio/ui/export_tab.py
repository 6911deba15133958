"""The Export tab: a run's adapter, merged model, GGUF file or standalone training script, into its exports/.

It runs `rloo-studio export RUN --format … [--gguf-type …] --checkpoint … --out RUN/exports/NAME --json` in a
child process (the same command a person would type) and shows the folder, its files and how to
use it. The folder name typed here is checked to stay inside the run's exports/ folder before
anything runs (`runs.resolve_export_dir`). It loads no model itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from .. import runs
from ..config import RunConfig
from ..errors import StudioError
from ..protocol import ExportStep
from ..workers.inference import InferenceWorker
from .pickers import RunPicker, busy_ended, busy_message, default_checkpoint, not_final_note, refuse
from ..workers.commands import event_of, run_cli
from .text import page_words
from .poller import Poller

FORMATS = {
    "adapter": "LoRA adapter + tokenizer (small; load with peft on top of the base model)",
    "merged": "Merged model (one Hugging Face folder: base + adapter, or the whole trained model, in the base model's own dtype)",
    "gguf": "GGUF for Ollama / LM Studio (one file + an Ollama Modelfile; the converter is downloaded once, on first use)",
    "script": "Standalone training folder: train.py (Unsloth + TRL only), config, rewards, data, accelerate config",
}
FORMAT_CHOICES = [(f"{name} — {what}", name) for name, what in FORMATS.items()]
GGUF_TYPES = [("f16 — half precision, the reference", "f16"), ("q8_0 — 8-bit, half the size, nearly lossless", "q8_0")]


def existing_exports(run_dir: Path) -> list[list]:
    root = run_dir / runs.EXPORTS_DIR
    if not root.is_dir():
        return []
    rows = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        files = [p for p in folder.rglob("*") if p.is_file()]
        rows.append([folder.name, len(files), round(sum(p.stat().st_size for p in files) / 2**20, 2)])
    return rows


class ExportTab:
    def __init__(self, runs_dir: Path, worker: InferenceWorker):
        self.runs_dir, self.worker = runs_dir, worker
        gr.Markdown("Take the tuned model with you. Every export is a new folder under the run's `exports/` with a model card "
                    "(README.md: base model, RLOO settings, reward functions and the evaluation table).")
        with gr.Row():
            self.picker = RunPicker(runs_dir, "export")
            self.run, self.checkpoint = self.picker.run, self.picker.checkpoint
            self.refresh = gr.Button("Refresh runs", elem_id="export-refresh", scale=1)
        self.format = gr.Radio(FORMAT_CHOICES, value="adapter", label="Format", elem_id="export-format")
        self.gguf_type = gr.Radio(GGUF_TYPES, value="f16", label="GGUF type", visible=False, elem_id="export-gguf-type",
                                  info="Smaller K-quants (Q4_K_M) are made from the f16 file with llama.cpp; the model card says how.")
        self.name = gr.Textbox(label="Folder name (optional)", info="Inside the run's exports/ folder; empty = the format's name "
                               "(plus the checkpoint). An existing non-empty folder is never overwritten.", elem_id="export-name")
        self.export = gr.Button("Export", variant="primary", elem_id="export-start")
        self.result = gr.Markdown(elem_id="export-result")
        self.existing = gr.Dataframe(headers=["folder", "files", "MiB"], interactive=False, label="Exports of this run",
                                     elem_id="export-existing")

    def wire(self, demo: gr.Blocks, poller: Poller | None = None) -> None:
        self.refresh.click(self.list_runs, inputs=[self.run, self.picker.chosen], outputs=[self.run, self.checkpoint, self.existing],
                           api_name="export_runs")
        demo.load(self.list_runs, inputs=[self.run, self.picker.chosen], outputs=[self.run, self.checkpoint, self.existing],
                  api_visibility="private")
        self.picker.wire(demo, poller)
        self.run.change(self.pick_run, inputs=[self.run, self.format], outputs=[self.checkpoint, self.existing, self.format],
                        api_visibility="private")
        self.format.change(lambda fmt: gr.update(visible=fmt == "gguf"), inputs=self.format, outputs=self.gguf_type,
                           api_visibility="private")
        self.export.click(self.run_export, inputs=[self.run, self.checkpoint, self.format, self.name, self.gguf_type],
                          outputs=[self.result, self.existing], api_name="export")
        if poller is not None:  # "run X is training" goes once X stops
            poller.tick(lambda result: "" if busy_ended(result, self.runs_dir) else gr.skip(), inputs=self.result,
                       outputs=self.result)

    def list_runs(self, current, chosen=None):
        choices, run, ckpts, ckpt = self.picker.resolve(current, chosen)
        return [gr.update(choices=choices, value=run), gr.update(choices=ckpts, value=ckpt),
                existing_exports(self.runs_dir / run) if run else []]

    def pick_run(self, run_id, fmt=None):
        ckpts = self.picker.checkpoints(run_id)
        folder = runs.run_folder(self.runs_dir, run_id)
        return [gr.update(choices=ckpts, value=default_checkpoint(ckpts)), existing_exports(folder) if folder else [],
                format_for(folder, fmt)]


    def run_export(self, run_id, checkpoint, fmt, name, gguf_type="f16", progress=gr.Progress()):
        run_dir = runs.run_folder(self.runs_dir, run_id)
        if run_dir is None or not (run_dir / runs.CONFIG_FILE).is_file():
            return refuse("Pick a run first (one appears here once it has saved an adapter)."), []
        checkpoint = checkpoint or runs.FINAL
        try:
            if fmt not in FORMATS:
                raise StudioError(f"unknown format {fmt!r}", "", f"choose one of {', '.join(FORMATS)}")
            gguf_type = gguf_type or "f16"
            if fmt == "gguf" and gguf_type not in dict((v, k) for k, v in GGUF_TYPES):
                raise StudioError(f"unknown GGUF type {gguf_type!r}", "", "choose f16 or q8_0")
            label = "" if checkpoint == runs.FINAL or fmt == "script" else f"-{checkpoint}"
            kind = f"gguf-{gguf_type}" if fmt == "gguf" and gguf_type != "f16" else fmt
            target = runs.resolve_export_dir(run_dir, (name or "").strip() or f"{kind}{label}")
        except StudioError as exc:
            return refuse(f"**Cannot export:** {page_words(exc.message())}".replace("\n", "  \n")), existing_exports(run_dir)
        heavy = fmt in ("merged", "gguf")  # merging loads the full base model
        if heavy:
            busy = busy_message(self.runs_dir, "Merging")
            if busy:
                return refuse(busy), existing_exports(run_dir)
        args = ["export", str(run_dir), "--format", fmt, "--out", str(target), "--json", "--events"]
        if fmt == "gguf":
            args += ["--gguf-type", gguf_type]
        if fmt != "script":
            args += ["--checkpoint", checkpoint]
        progress(0.05, desc=f"Exporting {fmt}…")
        def on_line(line: str) -> None:
            event = event_of(line, "export")
            if isinstance(event, ExportStep):  # the export's own steps; the libraries' warnings are not progress
                progress(0.5, desc=event.text.removeprefix("[export] ")[:120])

        def command():
            return run_cli(args, on_line, cwd=str(self.runs_dir.parent))

        try:
            if heavy:
                with self.worker.reserved("An export (merging the model)"):  # the chat's copy is freed and stays so
                    finished = command()
            else:
                finished = command()
        except StudioError as exc:
            return refuse(f"**Not started:** {exc.message()}".replace("\n", "  \n")), existing_exports(run_dir)
        if finished.returncode != 0:
            error = finished.error_text(f"the export failed (exit code {finished.returncode})")
            return refuse(f"**Export failed:** {page_words(error)}".replace("\n", "  \n")), existing_exports(run_dir)
        out = finished.stdout
        try:
            result = json.loads(out.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):  # something else printed on stdout: the export itself succeeded
            note = not_final_note(run_dir, checkpoint) if fmt != "script" else ""
            return (f"**Exported {note}** as `{fmt}`" if note else f"**Exported `{fmt}`**") + f" to `{target}`. Its README.md says how to use it.", existing_exports(run_dir)
        files = result.get("files", [])
        shown = "\n".join(f"- `{f}`" for f in files[:25]) + (f"\n- … and {len(files) - 25} more" if len(files) > 25 else "")
        note = not_final_note(run_dir, checkpoint) if fmt != "script" else ""
        which = f"**Exported {note}** as `{fmt}`" if note else f"**Exported `{fmt}`** ({result.get('checkpoint')})"
        return (f"{which} in {result.get('seconds')} s to `{result.get('out')}`. "
                f"Its README.md says how to use it.\n\n{gguf_summary(result)}{shown}"), existing_exports(run_dir)


def gguf_summary(result: dict) -> str:
    """For a GGUF export: the Ollama step, the LM Studio note and what was checked (empty for other formats)."""
    check = result.get("gguf")
    if not isinstance(check, dict):
        return ""
    back, tokens = check.get("read_back") or {}, check.get("tokens") or {}
    if tokens.get("skipped"):
        compared = f"tokens not compared ({tokens['skipped']})"
    else:
        rows = tokens.get("prompts") or []
        compared = f"greedy tokens identical to the merged model on {sum(bool(r.get('same')) for r in rows)} of {len(rows)} prompts"
    return (f"**Ollama, in one step** (in that folder):\n\n```\ncd {result.get('out')}\n{check.get('ollama_command')}\n```\n\n"
            f"**LM Studio** needs only the file `{back.get('file')}`.\n\n"
            f"Checked after writing: read back ({back.get('tensor_count')} tensors, end token {back.get('eos_token_id')}, "
            f"chat template {'present' if back.get('chat_template') else 'none'}); {compared}.\n\n")


def format_for(run_dir: Path | None, fmt: str | None):
    """The format the Export tab offers for a run: a run that trained the whole model has no adapter to export, so
    *adapter* (the default) becomes *merged*, its whole model; any other choice stays. Found walking the app: the
    preselected adapter failed for a full fine-tuning run."""
    if fmt != "adapter" or run_dir is None or not (run_dir / runs.CONFIG_FILE).is_file():
        return gr.skip()
    try:
        trained_lora = RunConfig.load(run_dir / runs.CONFIG_FILE).lora is not None
    except (StudioError, OSError):
        return gr.skip()
    return gr.skip() if trained_lora else "merged"

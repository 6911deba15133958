"""The *Scan the data* panel (in the Rewards tab, under the preview): the difficulty scan of the whole dataset.

The scan (`rloo_studio.scan`) samples k completions per training prompt in the inference worker — the
preview's model, kept loaded — and scores them in a child process, one training batch at a time, with a
progress bar and the time left. The panel shows the buckets as a bar chart, the share of prompts without
spread, what that means per training step, and examples from each bucket. *Use the filtered data* writes
the kept prompts as a new file (the original is never changed) and points the Data tab at it, and says so.
When almost no completion writes a format the rewards look for (rewards.asks.warmup_offer, the rule the reward preview
reads too), the summary says so and the Train tab's Format warm-up accordion opens with the same sentence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr

from .. import runs
from ..config import RunConfig
from ..errors import StudioError
from ..protocol import CommandEvent, Done, PreviewRequest, ScanPlan, ScanProgress
from ..rewards.asks import MOSTLY_NO_SIGNAL, warmup_offer
from ..scan import BUCKETS, SOLVED_RULE, eta_words, limits_words, read_scan, run_scan, unscanned_words, write_filtered
from .plots import in_order
from . import text
from .pickers import busy_message
from .text import page_words

if TYPE_CHECKING:
    from ..workers.inference import InferenceWorker
    from .form import PageForm

SCAN_INTRO = ("Before training, see which prompts can teach anything: the model writes k completions for each prompt (the "
              "Train tab's settings) and your ticked rewards score them. A prompt whose completions all get the same reward "
              "gives RLOO nothing to learn from. " + SOLVED_RULE)
EXAMPLE_HEADERS = ["bucket", "prompt", "mean total", "a completion"]


def bucket_frame(summary: dict | None):
    """The bar chart's data: one row per bucket, with its count of prompts."""
    import pandas as pd

    counts = (summary or {}).get("buckets") or {}
    return pd.DataFrame({"bucket": list(BUCKETS), "prompts": [int(counts.get(b, 0)) for b in BUCKETS]})


def example_rows(summary: dict) -> list[list]:
    return [[bucket, e["prompt"], round(e["mean_total"], 3) if e["mean_total"] is not None else None,
             (e["completions"] or [""])[0]] for bucket in BUCKETS for e in summary["examples"].get(bucket, [])]


def summary_markdown(summary: dict, folder) -> str:
    n = summary["prompts"]
    shares = summary["shares"]
    parts = ", ".join(f"**{b}** {summary['buckets'][b]} ({100 * shares[b]:.0f}%)" for b in BUCKETS)
    probes = "".join(f"⚠️ Hack probe: {p['message']}.  \n" for p in summary.get("probes", [])[:3])
    offer = warmup_offer(summary.get("formats") or [], summary["no_spread_share"])  # one saved before formats were counted has none
    warn = (" — most of each step would teach nothing: keep only the mixed prompts below."
            if summary["no_spread_share"] > MOSTLY_NO_SIGNAL else ".")
    return (f"Scanned **{n} of {summary['of']}** training prompts, {summary['k']} completions each, in {summary['seconds']:.0f} s: "
            f"{parts}.  \n**No spread: {100 * summary['no_spread_share']:.0f}%** of the prompts{warn}  \n{limits_words(summary)}  \n"
            f"Per training step ({summary['groups_per_step']} prompts): on average **{summary['useful_groups_per_step']:.1f}** "
            f"teach something ({100 * summary['useful_share_per_step']:.0f}%); steps with none: "
            f"{100 * summary['steps_without_signal']:.1f}%.  \n{probes}Saved in `{folder}`." + (f"\n\n{offer}" if offer else ""))


class ScanPanel:
    def __init__(self):
        gr.Markdown("### Scan the data: which prompts can teach?\n" + SCAN_INTRO)
        with gr.Row():
            self.limit = gr.Number(64, precision=0, minimum=0, label="Prompts to scan (0 = all)",
                                   info="Chosen evenly over the data; all of them takes as long as sampling every prompt once",
                                   elem_id="scan-limit", scale=2)
            self.button = gr.Button("Scan the data", variant="primary", elem_id="scan-run", scale=1)
        self.status = gr.Markdown(elem_id="scan-status")
        self.chart = gr.BarPlot(bucket_frame(None), x="bucket", y="prompts", title="Prompts per bucket", elem_id="scan-chart")
        self.examples = gr.Dataframe(headers=EXAMPLE_HEADERS, label="Examples from each bucket", interactive=False, wrap=True,
                                     max_height=360, elem_id="scan-examples")
        with gr.Row():
            self.keep = gr.Radio([text.SCAN_KEEP_MIXED, text.SCAN_KEEP_BAND], value=text.SCAN_KEEP_MIXED, label="Filtered data keeps", elem_id="scan-keep", scale=3)
            self.band_low = gr.Number(0.0, label="Mean total reward from", elem_id="scan-band-low", scale=1)
            self.band_high = gr.Number(1.0, label="to", elem_id="scan-band-high", scale=1)
        self.use = gr.Button("Use the filtered data", elem_id="scan-use")
        self.use_status = gr.Markdown(elem_id="scan-use-status")
        self.folder = gr.State(None)  # the last scan's folder
        self.offer = gr.State(None)  # the format warm-up's offer (rewards.asks.warmup_offer), shown in the Train tab after the scan

    def wire(self, demo: gr.Blocks, form: "PageForm", worker: "InferenceWorker") -> None:
        def scan(state, limit, *values, progress=gr.Progress()):
            empty = [None, bucket_frame(None), None, None]
            if limit is None or int(limit) < 0:  # an emptied field (the Number itself refuses below 0)
                return ["**Prompts to scan** must be 0 (all of them) or a positive number, e.g. 64.", *empty]
            cfg, problems = form.config_from(state, list(values))
            if cfg is None or problems:
                return [form.problems_markdown(problems), *empty]
            folder = form.workspace.dir / "scan"  # the form's config and reward code, as the preview writes them
            folder.mkdir(parents=True, exist_ok=True)
            (folder / runs.REWARDS_FILE).write_text(values[form.code_index] or "", encoding="utf-8")
            cfg = cfg.with_absolute_paths(folder, keep=(runs.REWARDS_FILE,))
            cfg.save(folder / runs.CONFIG_FILE)
            guard = lambda: busy_message(form.runs_dir, "Scanning the data")  # noqa: E731

            def sample(rows: list[dict], seed: int) -> dict:
                request = PreviewRequest(config=scan_cfg.to_dict(), base_dir=str(scan_cfg.base_dir), rows=rows, seed=seed)
                result = None
                for event in worker.preview(request, guard=guard):  # read to the end: the worker's lock is freed there
                    if isinstance(event, Done):
                        result = event.result or {}
                if result is None:
                    raise StudioError("the model worker ended the batch without completions", "", "press Scan the data again")
                return result

            def moved(event: CommandEvent) -> None:
                if isinstance(event, ScanPlan):
                    progress(0.01, desc=f"Scanning {event.prompts} prompts: loading the model…")
                elif isinstance(event, ScanProgress):
                    progress(min(0.99, event.done / max(1, event.total)), desc=eta_words(event))

            try:
                scan_cfg = RunConfig.load(folder / runs.CONFIG_FILE)
                done = run_scan(scan_cfg, sample, form.runs_dir, limit=int(limit) or None, progress=moved)
                summary, _ = read_scan(done)
            except StudioError as exc:
                return [f"**Scan failed:** {page_words(exc.message())}".replace("\n", "  \n"), *empty]
            return [summary_markdown(summary, done), str(done), bucket_frame(summary),
                    {"headers": EXAMPLE_HEADERS, "data": example_rows(summary)}, warmup_offer(summary.get("formats") or [], summary["no_spread_share"])]

        scan_outputs = [self.status, self.folder, self.chart, self.examples, self.offer]
        scanned = self.button.click(in_order(scan, scan_outputs), inputs=[form.base, self.limit] + form.inputs,
                                    outputs=scan_outputs, api_name="scan_data")
        form.train_tab.show_offer(scanned, self.offer)

        data = form.data_tab

        def use(folder, keep, low, high):
            unchanged = [gr.update()] * 4
            if not folder:
                return ["Press **Scan the data** first: the filtered data keeps prompts the scan saw.", *unchanged]
            band = None
            if keep == text.SCAN_KEEP_BAND:
                if low is None or high is None or float(low) > float(high):
                    return ["**Mean total reward from** must be at most **to**, e.g. from 0.2 to 1.0.", *unchanged]
                band = (float(low), float(high))
            try:
                written = write_filtered(folder, band)
            except StudioError as exc:
                return [f"**Could not write the filtered data:** {page_words(exc.message())}".replace("\n", "  \n"), *unchanged]
            summary, _ = read_scan(folder)
            test = written["test_path"]
            what = "the mixed ones" if band is None else f"mean total reward {band[0]:g} to {band[1]:g}"
            message = (f"**The Data tab now trains on `{written['path']}`**: {written['kept']} of the {written['of']} scanned "
                       f"prompts ({what}) of `{summary['data']}`. The original data is unchanged; a run on this file keeps "
                       "the scan's record in its folder.")
            if written.get("unscanned"):
                message += " **" + unscanned_words(written, "Prompts to scan: 0") + "**"
            if test:
                message += f" The held-out prompts are the same as before, written to `{test}` (the Data tab's held-out field)."
            return [message, text.SOURCE_CHOICES[1], written["path"],
                    test if test else gr.update(), 0.0 if test else gr.update()]

        self.use.click(use, inputs=[self.folder, self.keep, self.band_low, self.band_high],
                       outputs=[self.use_status, data.kind, data.local_path, data.test_split, data.test_fraction],
                       api_name="use_filtered_data")  # the Data tab's own change event shows the file field

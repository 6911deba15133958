"""The Data tab: where the prompts come from (demo, a file, a hub dataset), column mapping, a preview.

Turns its widgets into the `data` section of the RunConfig (`apply`) and back (`values_from`);
`wire` connects the preview to the whole form (the rewards' answer column and side panel follow it).
Uploaded files are copied into the app's uploads folder under a cleaned name, so the path a run
records stays valid and no upload can write outside that folder.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from ..config import DataConfig, RunConfig
from ..data import HEADERLESS_WHAT, REPEATS_SHOWN, answer_column, headerless_csv, held_out_count, is_hub_source, peek, peek_in_child, unpassed_columns
from ..stats import FEWEST_TO_DECIDE
from . import text
from .freshness import Outdated
from .pinned_rows import table_rows
from .rewards_tab import receives_markdown
from .text import page_words

if TYPE_CHECKING:
    from .form import PageForm

ANSWER_REWARDS = ("numeric_answer", "exact_match")  # the builtins that compare with the answer column
NO_ANSWER = "(none)"
PROMPT_NAMES = ("prompt", "question", "q", "input", "instruction", "problem", "query", "text")
ANSWER_NAMES = ("answer", "solution", "a", "output", "target", "label", "response", "expected", "reference", "ground_truth")
DEFAULT_TEST_FRACTION = 0.1  # a tenth of a single file held out for `rloo-studio eval`
MAX_UPLOAD_MB = 512  # larger datasets belong on the hub or a path typed in; the browser upload would crawl


def safe_upload_name(name: str) -> str:
    """The file name without any folder part and with only harmless characters (no path traversal)."""
    base = Path(str(name).replace("\\", "/")).name
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".") or "upload"
    return cleaned[:120]


def store_upload(temp_path: str, original_name: str, uploads_dir: Path) -> Path:
    uploads_dir.mkdir(parents=True, exist_ok=True)
    target = uploads_dir / safe_upload_name(original_name)
    if target.exists() and target.read_bytes() != Path(temp_path).read_bytes():
        target = target.with_name(f"{time.strftime('%Y%m%d-%H%M%S')}-{target.name}")  # never overwrite an earlier upload
    shutil.copyfile(temp_path, target)
    return target.resolve()


def stored_upload(file, uploads_dir: Path) -> Path | None:
    """An uploaded file (Gradio's temporary copy) stored in the uploads folder; None when the upload was cleared."""
    if file is None:
        return None
    path = Path(file if isinstance(file, str) else file.name)
    size_mb = path.stat().st_size / 1024**2
    if size_mb > MAX_UPLOAD_MB:
        raise gr.Error(f"The file is {size_mb:.0f} MB; uploads are limited to {MAX_UPLOAD_MB} MB. "
                       "Why: the browser sends it whole. What to do: type the file's path instead, or put the data on the hub.")
    original = getattr(file, "orig_name", None) or path.name
    return store_upload(str(path), original, uploads_dir)


def held_out_upload(file, uploads_dir: Path) -> tuple:
    """(held-out split, held-out fraction) for an uploaded held-out file: its stored path, and 0 (the file is what is
    held out, so no fraction of the training data is); a cleared upload leaves both as they are."""
    stored = stored_upload(file, uploads_dir)
    return (gr.skip(), gr.skip()) if stored is None else (str(stored), 0.0)


def source_kind(source: str) -> str:
    if source == "demo":
        return text.SOURCE_CHOICES[0]
    return text.SOURCE_CHOICES[2] if is_hub_source(source) else text.SOURCE_CHOICES[1]


class DataTab:
    def __init__(self, uploads_dir: Path):
        self.uploads_dir = uploads_dir
        self.kind = gr.Radio(list(text.SOURCE_CHOICES), value=text.SOURCE_CHOICES[0], label=text.SOURCE, elem_id="data-source")
        with gr.Group(visible=False) as self.file_group:
            self.upload = gr.File(label=text.UPLOAD, file_types=[".jsonl", ".json", ".csv", ".parquet"], elem_id="data-upload")
            self.local_path = gr.Textbox(label=text.LOCAL_PATH, info=text.LOCAL_PATH_INFO, elem_id="data-path")
        with gr.Group(visible=False) as self.hub_group:
            with gr.Row():
                self.hub_id = gr.Textbox(label=text.HUB_ID, info=text.HUB_ID_INFO, elem_id="data-hub-id")
                self.hub_config = gr.Textbox(label=text.HUB_CONFIG, info=text.HUB_CONFIG_INFO)
                self.split = gr.Textbox("train", label=text.SPLIT)
        with gr.Row():
            self.prompt_column = gr.Dropdown(["prompt"], value="prompt", allow_custom_value=True, label=text.PROMPT_COLUMN,
                                             info=text.PROMPT_COLUMN_INFO, elem_id="prompt-column")
            self.answer_column = gr.Dropdown(["answer", "(none)"], value="answer", allow_custom_value=True, label=text.ANSWER_COLUMN,
                                             info=text.ANSWER_COLUMN_INFO, elem_id="answer-column")
        self.system_prompt = gr.Textbox(label=text.SYSTEM_PROMPT, info=text.SYSTEM_PROMPT_INFO, lines=2)
        with gr.Accordion("Held-out data and limits", open=False):
            with gr.Row():
                self.test_split = gr.Textbox("test", label=text.TEST_SPLIT, info=text.TEST_SPLIT_INFO, elem_id="data-test-split")
                self.test_fraction = gr.Number(0.0, label=text.TEST_FRACTION, minimum=0, maximum=0.9)
                self.max_train = gr.Number(0, label=text.MAX_TRAIN, precision=0, minimum=0)
                self.prompt_format = gr.Dropdown(["auto", "chat", "plain"], value="auto", label=text.PROMPT_FORMAT, info=text.PROMPT_FORMAT_INFO)
            # The held-out file uploaded like the training file (stored in the uploads folder), not only typed as a path.
            self.test_upload = gr.File(label=text.TEST_UPLOAD, file_types=[".jsonl", ".json", ".csv", ".parquet"],
                                       elem_id="data-test-upload", height=90)
        self.preview_button = gr.Button(text.PREVIEW_DATA, elem_id="preview-data")
        self.summary_outdated = Outdated("data-summary", text.PREVIEW_DATA)  # "Outdated — … changed since" (freshness.py)
        self.summary = gr.Markdown(elem_id="data-summary")
        self.table = gr.Dataframe(label="First rows", interactive=False, wrap=True, max_height=400, elem_id="data-rows",
                                  headers=[f"the file's columns, once “{text.PREVIEW_DATA}” has read it"])  # not "1 2 3"

        # A new data source gets its own held-out defaults: the demo's `test` split is not in the person's file. (Then the
        # new file is checked: `wire`.)
        self.uploaded = self.upload.upload(self._on_upload, inputs=self.upload, outputs=self.local_path, api_name="upload_data").then(
            held_out_defaults, inputs=self.kind, outputs=[self.test_split, self.test_fraction], api_visibility="private")
        self.test_upload.upload(lambda file: held_out_upload(file, self.uploads_dir), inputs=self.test_upload,
                                outputs=[self.test_split, self.test_fraction], api_name="upload_held_out")
        self.kind.input(held_out_defaults, inputs=self.kind, outputs=[self.test_split, self.test_fraction], api_name="source_defaults")
        for person_edit in (self.local_path.input, self.hub_id.input):
            person_edit(held_out_defaults, inputs=self.kind, outputs=[self.test_split, self.test_fraction], api_visibility="private")

    def _on_upload(self, file) -> str:
        stored = stored_upload(file, self.uploads_dir)
        return "" if stored is None else str(stored)

    def wire(self, demo: gr.Blocks, form: "PageForm") -> None:
        # Through the form's one change event (derived.py): the form's draft is saved on the same change.
        form.derived.on([self.kind], lambda k: (gr.update(visible=k == text.SOURCE_CHOICES[1]), gr.update(visible=k == text.SOURCE_CHOICES[2])),
                        inputs=[self.kind], outputs=[self.file_group, self.hub_group])
        def preview_data(state, *values):
            cfg, problems = form.config_from(state, list(values))
            data_cfg = cfg.data if cfg else None
            fields = form.split(values)[1]
            if data_cfg is None:
                return ("**Please fix:**\n" + "\n".join(f"- {page_words(p)}" for p in problems), None, [], gr.update(), gr.update(), None,
                        self.summary_outdated.stamp_from(form.inputs, list(values)))
            answer = fields[6]
            checking = [s.name for s in cfg.rewards if s.name in ANSWER_REWARDS]
            summary, rows, cols, prompt_col, answer_col, train_rows = DataTab.preview(data_cfg, state.get("base_dir") or os.getcwd(),
                                                                                      answer, checking, int(cfg.rloo_value("seed")))
            demo = demo_model_note(cfg.model.name_or_path, data_cfg.source)
            summary = f"{demo}\n\n{summary}" if demo and cols else summary
            table = {"headers": cols, "data": rows} if cols else None
            prompt_choices = gr.update(choices=cols, value=prompt_col) if cols else gr.update()
            answer_choices = gr.update(choices=cols + [NO_ANSWER], value=answer_col) if cols else gr.update()
            # The check holds for these fields, the columns it chose included (freshness.py).
            stamp = self.summary_outdated.stamp_from(form.inputs, list(values), [(self.prompt_column, prompt_col), (self.answer_column, answer_col)]
                                                     if cols else None)
            return summary, table, cols, prompt_choices, answer_choices, train_rows, stamp

        check_outputs = [self.summary, self.table, form.columns, self.prompt_column, self.answer_column, form.data_rows,
                         self.summary_outdated.stamp]
        builtins = form.rewards_tab.builtins
        self.preview_button.click(preview_data, inputs=[form.base] + form.inputs, outputs=check_outputs, api_name="preview_data").then(
            receives_markdown, inputs=[form.columns, self.prompt_column], outputs=form.rewards_tab.receives, api_visibility="private"
        ).then(builtins_follow, inputs=[self.answer_column, builtins], outputs=builtins, api_visibility="private")
        # A file uploaded, or a path typed and left, is checked at once (reading a local file's rows is quick): the check
        # of the file before never stays beside a new one. Other changes mark the check outdated (a hub dataset is read
        # in a child process, and a prompt column typed letter by letter would read the file at each letter).
        for then in (self.uploaded.then, self.local_path.blur, self.local_path.submit):
            then(preview_data, inputs=[form.base] + form.inputs, outputs=check_outputs, api_visibility="private").then(
                receives_markdown, inputs=[form.columns, self.prompt_column], outputs=form.rewards_tab.receives,
                api_visibility="private").then(builtins_follow, inputs=[self.answer_column, builtins], outputs=builtins,
                                               api_visibility="private")
        # The Seed field chooses which rows are held out (training splits with it), so the check speaks of it too.
        self.summary_outdated.watch(form.derived, self.inputs + [form.train_tab.fields["seed"]])
        # One answer column: the one chosen here is the answer-checking builtins' `answer_column`, and their parameters in
        # the Rewards tab show it. Each side follows the person's own edit of the other (`.input`: a person's change only,
        # so the two never set each other back and forth); the check above may choose a column too (chained after it).
        self.answer_column.input(builtins_follow, inputs=[self.answer_column, builtins], outputs=builtins,
                                 api_name="answer_column_chosen")
        builtins.input(answer_column_follows, inputs=[self.answer_column, builtins], outputs=self.answer_column,
                       api_name="builtin_answer_column_edited").then(
            builtins_follow, inputs=[self.answer_column, builtins], outputs=builtins, api_visibility="private")  # all say it

    @property
    def inputs(self) -> list:
        return [self.kind, self.local_path, self.hub_id, self.hub_config, self.split, self.prompt_column, self.answer_column,
                self.system_prompt, self.test_split, self.test_fraction, self.max_train, self.prompt_format]

    @staticmethod
    def apply(cfg: dict, values: list) -> list[str]:
        kind, local_path, hub_id, hub_config, split, prompt_col, answer_col, system, test_split, test_fraction, max_train, fmt = values
        problems = []
        data = cfg.setdefault("data", {})
        if kind == text.SOURCE_CHOICES[0]:
            data["source"], data["split"], data["config_name"] = "demo", "train", None
        elif kind == text.SOURCE_CHOICES[1]:
            if not (local_path or "").strip():
                problems.append("Data: no file chosen — upload one or type its path")
            data["source"], data["split"], data["config_name"] = (local_path or "").strip(), "train", None
        else:
            if not (hub_id or "").strip():
                problems.append("Data: no dataset id given — e.g. openai/gsm8k")
            data["source"], data["split"] = (hub_id or "").strip(), (split or "train").strip()
            data["config_name"] = (hub_config or "").strip() or None
        data["prompt_column"] = (prompt_col or "prompt").strip()
        data["system_prompt"] = (system or "").strip() or None
        data["test_split"] = (test_split or "").strip() or None
        data["test_fraction"] = float(test_fraction or 0.0)
        data["max_train_samples"] = int(max_train) if max_train else None
        data["prompt_format"] = fmt or "auto"
        answer = (answer_col or "").strip()
        # The answer column is a setting of the data (evaluation and a new page read it from there, whatever the rewards),
        # and the answer-checking rewards' parameter, which the Rewards tab shows; a judge's (its reference answer) when it
        # is not `answer`, which a judge reads by default where the data has it (a judge needs no answer to score).
        # `answer` is the default's own column (None: `answer` where the data has it): a source the check has not read
        # yet (a hub id typed in) is not refused for a column the person never chose.
        data["answer_column"] = answer if answer not in ("", NO_ANSWER, "answer") else None
        for spec in cfg.get("rewards", []):
            judged = spec.get("judge") is not None and answer != "answer"
            if (spec.get("name") in ANSWER_REWARDS or judged) and answer and answer != NO_ANSWER:
                spec.setdefault("params", {})["answer_column"] = answer
        return problems

    @staticmethod
    def values_from(cfg: RunConfig) -> list:
        d = cfg.data
        kind = source_kind(d.source)
        answer = answer_column(cfg)
        return [kind, d.source if kind == text.SOURCE_CHOICES[1] else "", d.source if kind == text.SOURCE_CHOICES[2] else "",
                d.config_name or "", d.split, d.prompt_column, answer, d.system_prompt or "", d.test_split or "", d.test_fraction,
                d.max_train_samples or 0, d.prompt_format]

    @staticmethod
    def preview(data_cfg: DataConfig, base_dir: str, answer: str | None = None, checking: list[str] | None = None,
                seed: int = 42) -> tuple[str, list[list], list[str], str, str | None, int | None]:
        """(summary markdown, rows, columns, prompt column, answer column) for the preview; hub sources are read in a child
        process. A prompt or answer column the data does not have is replaced by a likely one, and the summary says so.
        `seed`: the run's, so the rows held out are those training will hold out."""
        read = ((lambda c: peek_in_child(c, base_dir, seed=seed)) if is_hub_source(data_cfg.source, base_dir)
                else (lambda c: peek(c, base_dir, seed=seed)))
        # The answer column is chosen here, from the columns read (below): the form's may be the last file's.
        data_cfg = dataclasses.replace(data_cfg, answer_column=None)
        result = read(data_cfg)
        cols = result["columns"]
        notes = []
        first_row = headerless_csv(data_cfg.source, base_dir)
        if first_row:
            shown = ", ".join(f"`{c}`" for c in first_row)
            notes.append(f"⚠️ **This file seems to have no header row:** its first line ({shown}) looks like data, yet it was read "
                         "as the column names, so that row is not trained on and the columns are named after it. Add a first line "
                         "with the column names (e.g. `question,answer`) and upload it again.")
        if cols and not first_row and data_cfg.prompt_column not in cols:  # (header-less: its "columns" are data)
            guess = likely_column(cols, PROMPT_NAMES) or cols[0]
            notes.append(f"⚠️ “{text.PROMPT_COLUMN}” was `{data_cfg.prompt_column}`, which this data does not have (its columns: "
                         f"{', '.join(f'`{c}`' for c in cols)}): it is now `{guess}` — check that it holds the prompts.")
            data_cfg = dataclasses.replace(data_cfg, prompt_column=guess)
            result = read(data_cfg)
        answer_col = answer
        missing = answer not in (None, "", NO_ANSWER) or checking  # "(none)" is a gap only when a reward needs the column
        if cols and not first_row and missing and answer not in cols:
            answer_col = likely_column([c for c in cols if c != data_cfg.prompt_column], ANSWER_NAMES) or NO_ANSWER
            uses = f" ({', '.join(checking)} compare the model's answer with it)" if checking else ""
            if answer_col != answer:
                notes.append(f"⚠️ “{text.ANSWER_COLUMN}” was `{answer or NO_ANSWER}`, which this data does not have: it is now "
                             f"`{answer_col}`{uses} — check it.")
        if checking and answer_col in result.get("empty_columns", ()):
            one = len(checking) == 1
            notes.append(f"⚠️ “{text.ANSWER_COLUMN}” `{answer_col}` is empty in every training row, but {', '.join(checking)} "
                         f"compare{'s' if one else ''} the model's answer with it: {'it' if one else 'they'} would give no "
                         f"completion a score, and the run would learn nothing from {'it' if one else 'them'}. Fill in the "
                         f"answers, choose the column that holds them, or untick {'it' if one else 'those rewards'} on the "
                         "Rewards tab.")
        lines = []
        if cols:
            n = result["train_rows"]
            if result.get("split"):
                held = f", {result['test_rows']} held out" if result.get("test_rows") is not None else ", none held out"
                counted = f"**{n} training row{'s' if n != 1 else ''}**{held}"
            else:  # not split into training and held-out rows (a problem below says why): what the file holds
                counted = f"**{n} row{'s' if n != 1 else ''}** in the data"
            lines.append(f"{counted}. Columns: " + ", ".join(f"`{c}`" for c in cols) +
                         ". " + columns_sentence(cols))
        few = held_out_too_few(result.get("test_rows"), result["rows_read"], data_cfg) if cols and result.get("split") else None
        lines += notes + ([few] if few else []) + ([repeats_line(result["repeats"], answer_col)] if result.get("repeats", {}).get("prompts") else [])
        for problem in result["problems"]:
            if first_row and problem.startswith(HEADERLESS_WHAT):
                continue  # said above, in the page's words
            lines.append("⚠️ " + page_words(problem).replace("\n", "  \n"))
        if cols and not result["problems"] and not notes:
            lines.append("✅ Ready to train.")
        rows = [[row.get(c) for c in cols] for row in result["rows"]]
        return "\n\n".join(lines), rows, cols, data_cfg.prompt_column, answer_col, (result["train_rows"] if cols and result.get("split") else None)


def demo_model_note(model: str, source: str) -> str | None:
    """Own data with the bundled demo model: a run works, the task is not learned (the model knows only the demo's sums)."""
    if model != "demo" or source == "demo":
        return None
    return (f"ℹ️ **The model is the bundled demo** ({text.MODEL} in 1 · Model & hardware): a 0.8M-parameter model that "
            "has only learned the demo's arithmetic word problems. Training on your data runs and shows how the app "
            "works, but it will not learn your task: to your prompts it writes sums. To learn the task, choose a real "
            "model there (a Hugging Face id such as Qwen/Qwen3-0.6B, or a local folder).")


def repeats_line(found: dict, answer_col: str | None) -> str:
    """The prompts the data writes more than once (data.repeats), and what that does to training and Evaluate."""
    n = found["prompts"]
    parts = [f"ℹ️ {n} prompt{'s appear' if n != 1 else ' appears'} more than once"]
    differ = (found.get("differ") or {}).get(answer_col) if answer_col and answer_col != NO_ANSWER else None
    if differ:
        parts.append(f", {differ} of them with a different `{answer_col}`: the data teaches two answers to one question")
    parts.append(" (" + repeats_named(found, answer_col if differ else None) + ")")
    if found.get("held_out"):
        parts.append(f"; {found['held_out']} held-out row{'s repeat' if found['held_out'] != 1 else ' repeats'} a training "
                     "prompt, so Evaluate would score memory there, not the skill")
    return "".join(parts) + "."


def repeats_named(found: dict, answer_col: str | None) -> str:
    """The first repeated prompts by their text: with two answers, those first and each with its answers
    ('“Hours of gallery 0?”: 10-18 or 11-19'); otherwise how often ('“…” 3 times'); then how many more."""
    examples = found.get("examples") or []
    if answer_col:
        examples = sorted(examples, key=lambda e: len(e["values"].get(answer_col) or []) < 2)  # stable: data order kept
    shown = [f"“{e['prompt']}”: " + " or ".join(e["values"][answer_col])
             if answer_col and len(e["values"].get(answer_col) or []) > 1 else f"“{e['prompt']}” {e['times']} times"
             for e in examples[:REPEATS_SHOWN]]
    more = found["prompts"] - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


HELD_OUT_ADVISED = 2 * FEWEST_TO_DECIDE  # room for prompts on which base and tuned tie: those do not count


def held_out_too_few(test_rows: int | None, rows_read: int, data_cfg: DataConfig) -> str | None:
    """A note when the held-out rows can never show base and tuned apart in Evaluate (fewer than the sign test needs
    to differ, stats.FEWEST_TO_DECIDE), or only if the two differ on nearly every one (fewer than HELD_OUT_ADVISED):
    said here, where the split is made, not first at Evaluate. `rows_read`: the training data's rows before the split
    and before "Use at most N training rows"; the fraction to raise is offered only when it is what holds rows out."""
    if test_rows is not None and test_rows >= HELD_OUT_ADVISED or not rows_read:
        return None
    if not test_rows:  # none held out: said too, as Evaluate would first say it
        return (f"ℹ️ No rows are held out, so Evaluate has none of its own to score base and tuned on: set "
                f"“{text.field_label('data', 'test_fraction')}” (0.1 holds out a tenth), or give a file of other prompts in "
                f"“{text.field_label('data', 'test_split')}” now or at Evaluate.")
    total = rows_read
    fraction = math.ceil(20 * HELD_OUT_ADVISED / total) / 20  # in steps of 0.05
    split = data_cfg.test_fraction and not data_cfg.test_split  # a held-out file makes the fraction do nothing
    more = (f"Raise “{text.field_label('data', 'test_fraction')}” ({fraction:g} holds out {held_out_count(total, fraction)} of "
            f"these {total} rows), or give" if split and fraction <= 0.5 else "Give")
    other = f"{more} a file of other prompts in “{text.field_label('data', 'test_split')}”."
    if test_rows >= FEWEST_TO_DECIDE:
        every = "every one here" if test_rows == FEWEST_TO_DECIDE else f"{FEWEST_TO_DECIDE} of these {test_rows}"
        return (f"ℹ️ With {test_rows} held-out rows, Evaluate can tell base from tuned only if the two differ on at least "
                f"{FEWEST_TO_DECIDE} of them ({every}); prompts on which both score the same do not count. {other}")
    return (f"ℹ️ {test_rows} held-out row{'s are' if test_rows != 1 else ' is'} too few for Evaluate to tell base from tuned: "
            f"it needs at least {FEWEST_TO_DECIDE} prompts on which the two differ. {other}")


def _answer_params(row) -> dict | None:
    """An answer-checking builtin's parameters in its table row (a JSON object), else None (another builtin, or JSON
    that does not parse: the Rewards tab says so)."""
    if len(row) < 4 or str(row[1]) not in ANSWER_REWARDS:
        return None
    try:
        params = json.loads(row[3]) if str(row[3] or "").strip() else {}
    except ValueError:
        return None
    return params if isinstance(params, dict) else None


def builtins_follow(answer: str | None, builtins):
    """The builtin table with the answer column chosen in the Data tab as every answer-checking builtin's `answer_column`
    (ticked or not: ticked later, it is already right); skipped when they already say it or no column is chosen."""
    answer = (answer or "").strip()
    if not answer or answer == NO_ANSWER:
        return gr.skip()
    rows, changed = [], False
    for row in table_rows(builtins):
        row = list(row)
        params = _answer_params(row)
        if params is not None and params.get("answer_column") != answer:
            row[3], changed = json.dumps({**params, "answer_column": answer}), True
        rows.append(row)
    return rows if changed else gr.skip()


def answer_column_follows(answer: str | None, builtins):
    """The Data tab's answer column after a person's edit of the builtin table: the `answer_column` they wrote into an
    answer-checking builtin's parameters, when it differs from the Data tab's (the same one column, set from either side)."""
    for row in table_rows(builtins):
        params = _answer_params(list(row))
        written = params.get("answer_column") if params else None
        if isinstance(written, str) and written.strip() and written.strip() != (answer or "").strip():
            return written.strip()
    return gr.skip()


def held_out_defaults(kind: str) -> tuple[str, float]:
    """(held-out split, held-out fraction) for a newly chosen source: the demo has a `test` split; a single file
    does not, so a tenth of it is held out for evaluation; a hub dataset usually has a `test` split."""
    if kind == text.SOURCE_CHOICES[1]:
        return "", DEFAULT_TEST_FRACTION
    return "test", 0.0


def likely_column(columns: list[str], names: tuple[str, ...]) -> str | None:
    by_name = {c.strip().lower(): c for c in columns}
    return next((by_name[n] for n in names if n in by_name), None)


def columns_sentence(columns: list[str]) -> str:
    """What reaches the reward functions of these columns, in one sentence (`data.reward_columns`, the one rule)."""
    unpassed = unpassed_columns(columns)
    if not unpassed:
        return "Every column, the prompt column included, reaches your reward functions as a keyword argument of the same name."
    return ("Every other column reaches your reward functions as a keyword argument of the same name; " +
            "; ".join(f"`{c}` {why}" for c, why in unpassed.items()) + ".")

"""The Rewards tab's reward library: the person's saved reward files (rewards.library) listed, searched, used,
duplicated, deleted, exported and imported, without the command line.

A reward is *used* the way a code reward is: its file's text goes into the code editor (the code replaced there is
kept in the workspace, `REPLACED_CODE`) with its functions ticked at their default weights, and its pinned examples
into the Pinned examples table. The run then copies the editor's text as rewards.py, whose content hash — the library
entry's, while the code is unchanged — the run records (rewards.json). Importing, by upload or path, and saving the
editor's reward check the file (library.parse), its columns against the data, and score its pinned examples in the
preview's scoring child (workers.scorer.check_examples, in the reward sandbox where there is one); the page shows each
example's verdict, and the file is kept only when all pass. Refusals are the library's StudioError in the page's words.
Which entries' examples passed is remembered per version for the app's life (`Verdicts`); the list says when an
entry has not been checked since the app started.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from ..errors import StudioError
from ..rewards import library
from ..runs import slugify
from ..workers import scorer
from .pinned_rows import _truthy, answer_column, expected_words, known_columns, pinned_row, table_rows
from .workspace import REPLACED_CODE

if TYPE_CHECKING:
    from .form import PageForm

LIBRARY_HEADERS = ["name", "description", "columns needed", "version", "pinned examples", "from"]
NOT_CHECKED = "not checked yet (Check)"

# The library's messages name the command line's ways; the page has its own.
_PAGE_WAYS = [
    ("pass --replace to replace it, or import it under another name (`rloo-studio rewards duplicate`)",
     "tick “Replace a reward of the same name” to replace it, or give it another name"),
    ("see `rloo-studio rewards list`, or import a reward file with `rloo-studio rewards import FILE`",
     "pick one from the list, or import a reward file below"),
    ("fix the header (see docs/rewards.md, Reward files)", "fix the file's REWARD header (see docs/rewards.md, Reward files)"),
]


def page_message(exc: StudioError) -> str:
    """A library refusal as the page shows it: what, why and what to do, with the page's ways instead of commands."""
    message = exc.message()
    for cli, page in _PAGE_WAYS:
        message = message.replace(cli, page)
    return "⛔ " + message.replace("\n", "  \n")


class Verdicts:
    """The pinned examples' verdict of each reward version checked since the app started ({hash: (passed, total)})."""

    def __init__(self):
        self.by_hash: dict[str, tuple[int, int]] = {}

    def remember(self, reward: library.RewardFile, checked: dict) -> None:
        if not checked.get("problems"):
            self.by_hash[reward.hash] = (sum(v["ok"] for v in checked["verdicts"]), len(checked["verdicts"]))

    def cell(self, reward: library.RewardFile) -> str:
        found = self.by_hash.get(reward.hash)
        if found is None:
            return f"{len(reward.examples)} · {NOT_CHECKED}"
        passed, total = found
        return f"✅ {passed}/{total} pass" if passed == total else f"❌ {passed}/{total} pass"


def library_rows(found: list[library.RewardFile], verdicts: Verdicts) -> list[list]:
    """One row per entry: name, description, columns it needs, short version hash, its examples' verdict, where from."""
    return [[r.name, r.description, ", ".join(r.columns) or "—", library.short_hash(r.hash), verdicts.cell(r),
             "bundled template" if r.origin == library.BUNDLED else "your library"] for r in found]


def listing(query: str | None, verdicts: Verdicts) -> tuple[list[list], list[str], str]:
    """(table rows, names for the picker, a line on files in the library folder that could not be read)."""
    found = library.search(query or "")
    _, problems = library.entries(with_bundled=False)
    unreadable = ("⚠️ Not listed (the library folder has files that are not usable reward files):  \n"
                  + "  \n".join(p.splitlines()[0] for p in problems)) if problems else ""
    return library_rows(found, verdicts), [r.name for r in found], unreadable


def verdict_markdown(reward: library.RewardFile, checked: dict) -> str:
    """The pinned examples' verdicts, one line each."""
    if checked.get("problems"):
        return "⛔ The pinned examples could not be scored: " + checked["problems"][0].replace("\n", "  \n")
    passed = sum(v["ok"] for v in checked["verdicts"])
    lines = [f"**{passed}/{len(checked['verdicts'])} pinned examples of “{reward.name}” pass** "
             f"(version {library.short_hash(reward.hash)}; completion_ids: {checked['tokens']})"]
    for v in checked["verdicts"]:
        total = "None" if v["total"] is None else f"{v['total']:.3f}"
        low, high = v["expected"]
        lines.append(f"- {'✅' if v['ok'] else '❌'} `{v['completion'][:60]}` → total {total} {expected_words(low, high)}"
                     + (f" — {v['why']}" if v["why"] else ""))
    return "\n".join(lines)


def import_reward(reward: library.RewardFile, data_columns: list[str], cfg, verdicts: Verdicts, replace: bool = False,
                  folder=None) -> tuple[str, bool]:
    """Check a parsed reward file (its columns against the data, then its pinned examples scored) and keep it in the
    library only when all of that passes: (the page's report, whether it was kept)."""
    problems = library.column_problems(reward, data_columns) if data_columns else []
    if problems:
        return ("⛔ Not imported: " + "; ".join(problems) + ".  \nWhy: TRL passes each data column to the reward by name; "
                "a missing one fails the first step.  \nWhat to do: add the column to the data (Data tab), or use a reward "
                "that reads one the data has."), False
    checked = scorer.check_examples(reward, cfg)
    verdicts.remember(reward, checked)
    report = verdict_markdown(reward, checked)
    if checked["problems"] or not checked["passed"]:
        return (report + "\n\n⛔ **Nothing was imported.** Why: the file's own tests say the reward does not score as its "
                "author expected. What to do: fix the reward or its examples' expected totals, then import it again."), False
    try:
        saved = library.save(reward, folder, replace=replace)
    except StudioError as exc:
        return report + "\n\n" + page_message(exc), False
    return report + f"\n\n✅ Kept in your library as “{reward.name}” ({saved.name}). Pick it above and press **Use** to " \
                    "train with it.", True


def import_path(where: str, data_columns: list[str], cfg, verdicts: Verdicts, replace: bool = False,
                folder=None, uploaded: bool = False) -> tuple[str, str | None]:
    """Import the reward file at `where` (an upload or a typed path): (the page's report, the reward's name when it was
    kept). A file that is not a usable reward file is refused with the library's reasons; nothing is imported then.
    An upload is named by its file name (its path is the page's upload folder, which says nothing to the person)."""
    try:
        reward = library.read(where)
    except StudioError as exc:
        message = page_message(exc)
        return (message.replace(str(where), Path(where).name) if uploaded else message) + "  \n**Nothing was imported.**", None
    report, kept = import_reward(reward, data_columns, cfg, verdicts, replace=replace, folder=folder)
    return report, reward.name if kept else None


def pinned_examples(table, data_columns: list[str], answer: str = "answer") -> list[dict]:
    """The Pinned examples table's rows as a reward file's examples (prompt, completion, the row's columns, the
    expected total's range; an empty bound is open)."""

    def bound(value):
        try:
            return None if value in (None, "") else float(value)
        except (TypeError, ValueError):
            return None

    examples = []
    for row in table_rows(table):
        row = list(row) + [None] * (5 - len(row))
        if str(row[0] or "").strip() and str(row[1] or "").strip():
            examples.append({"prompt": str(row[0]), "completion": str(row[1]),
                             "columns": pinned_row(row[2], data_columns, answer), "total": [bound(row[3]), bound(row[4])]})
    return examples


def pinned_table(reward: library.RewardFile, answer: str = "answer") -> list[list]:
    """A reward file's examples as Pinned examples rows: the answer cell holds the answer column's value alone, or
    `column=value; …` when the example gives other columns."""
    rows = []
    for ex in reward.examples:
        columns = dict(ex.get("columns") or {})
        cell = str(columns[answer]) if list(columns) == [answer] else "; ".join(f"{k}={v}" for k, v in columns.items())
        low, high = ex["total"]
        rows.append([ex["prompt"], ex["completion"], cell, low, high])
    return rows


def editor_reward(code: str, name: str, functions_table, pinned, data_columns: list[str], answer: str = "answer"):
    """The editor's code as a reward file named `name` (or its header's name), with the ticked functions' weights and
    the pinned examples; raises StudioError when it cannot be one."""

    name = (name or "").strip()
    header = None
    if re.search(r"^REWARD\s*=", code or "", re.M):
        try:
            header = library.read_header(code)
        except StudioError:
            header = None
    if not name:
        name = str((header or {}).get("name") or "").strip()
    if not name:
        raise StudioError("the reward has no name", "the library lists rewards by name", "type a name beside the button")
    weights = {str(r[1]): float(r[2]) for r in table_rows(functions_table) if len(r) >= 3 and _truthy(r[0])}
    if header is not None:
        weights = {**(header.get("weights") or {}), **{k: v for k, v in weights.items() if k in (header.get("weights") or {})}}
    text = library.from_code(code, name, tags=(header or {}).get("tags") or (),
                             examples=pinned_examples(pinned, data_columns, answer), weights=weights or None)
    return library.parse(text, f"{slugify(name, 48)}.py")


def export_file(name: str) -> Path:
    """The entry's file, written where the page serves downloads from, under its own name."""
    reward = library.find(name)
    folder = Path(tempfile.mkdtemp(prefix="reward-export-", dir=os.environ.get("GRADIO_TEMP_DIR") or None))
    target = folder / f"{slugify(reward.name, 48)}.py"
    target.write_text(reward.source, encoding="utf-8")
    return target


class LibraryPanel:
    """The library's widgets (inside the Rewards tab, closed by default) and their events."""

    def __init__(self):
        self.verdicts = Verdicts()
        with gr.Accordion("Reward library: keep, share and reuse rewards", open=False, elem_id="library"):
            gr.Markdown("Rewards you keep for every project (saved in your user's data folder, not in a run), and the bundled "
                        "templates. **Use** puts one in the code editor with its functions ticked and its pinned examples "
                        "in the table below. Importing a file runs its pinned examples first and keeps it only when they pass; "
                        "import only files you would run as a script.")
            with gr.Row():
                self.search = gr.Textbox(label="Search (name, description, columns, tags)", scale=3, elem_id="library-search")
                self.refresh = gr.Button("Refresh", scale=1, size="sm", elem_id="library-refresh")
            self.table = gr.Dataframe(headers=LIBRARY_HEADERS, interactive=False, wrap=True, elem_id="library-table",
                                      label="Saved rewards", column_widths=["20%", "36%", "11%", "11%", "12%", "10%"])
            self.unreadable = gr.Markdown(elem_id="library-unreadable")
            with gr.Row():
                self.choice = gr.Dropdown([], value=None, label="Reward", scale=3, elem_id="library-choice")
                self.use = gr.Button("Use", variant="primary", scale=1, elem_id="library-use")
                self.check = gr.Button("Check its examples", scale=1, elem_id="library-check")
                self.export = gr.Button("Export", scale=1, elem_id="library-export")
                self.delete = gr.Button("Delete", variant="stop", scale=1, elem_id="library-delete")
            with gr.Row():
                self.new_name = gr.Textbox(label="New name (for Duplicate)", scale=3, elem_id="library-new-name")
                self.duplicate = gr.Button("Duplicate", scale=1, elem_id="library-duplicate")
            self.download = gr.File(label="Exported file", interactive=False, visible=False, elem_id="library-download")
            self.status = gr.Markdown(elem_id="library-status")
            self.pending_delete = gr.State(None)

            gr.Markdown("#### Save the editor's reward\nThe code editor's functions (ticked weights as defaults) and the pinned "
                        "examples below become a reward file; its examples are scored with its own functions only.")
            with gr.Row():
                self.save_name = gr.Textbox(label="Name (empty: the code's REWARD header's)", scale=3, elem_id="library-save-name")
                self.save = gr.Button("Save the editor's reward", scale=1, elem_id="library-save")
            gr.Markdown("#### Import a reward file")
            with gr.Row():
                self.upload = gr.File(label="Upload a .py reward file", file_types=[".py"], type="filepath", scale=2,
                                      elem_id="library-upload")
                with gr.Column(scale=2):
                    self.path = gr.Textbox(label="…or its path on this computer", elem_id="library-path")
                    self.replace = gr.Checkbox(False, label="Replace a reward of the same name", elem_id="library-replace")
                    self.import_button = gr.Button("Check and import", variant="primary", elem_id="library-import")
            self.import_result = gr.Markdown(elem_id="library-import-result")

    def wire(self, demo: gr.Blocks, form: "PageForm", tab) -> None:
        verdicts, workspace = self.verdicts, form.workspace

        def shown(query):
            rows, names, unreadable = listing(query, verdicts)
            return rows, gr.update(choices=names), unreadable

        listed = [self.table, self.choice, self.unreadable]
        demo.load(shown, inputs=self.search, outputs=listed, api_name="library_list")
        self.refresh.click(shown, inputs=self.search, outputs=listed, api_visibility="private")
        self.search.change(shown, inputs=self.search, outputs=listed, api_visibility="private", show_progress="hidden",
                           trigger_mode="always_last")  # the list narrows as the person types

        def config_and_columns(state, values, columns):

            cfg, _ = form.config_from(state, list(values))
            data_columns = list(columns or []) or (known_columns(cfg) if cfg is not None else [])
            return cfg, data_columns, answer_column(cfg) if cfg is not None else "answer"

        def use(name, code, state, *values):
            if not name:
                return gr.skip(), gr.skip(), gr.skip(), "Pick a reward first."
            try:
                reward = library.find(name)
            except StudioError as exc:
                return gr.skip(), gr.skip(), gr.skip(), page_message(exc)
            _, _, answer = config_and_columns(state, values, None)
            kept = ""
            if (code or "").strip() and code != reward.source:
                kept = f" The code it replaced is kept in {workspace.write(REPLACED_CODE, code)}."
            rows = [[True, fn, w] for fn, w in reward.weights.items()]
            return (reward.source, rows, pinned_table(reward, answer),
                    f"✓ “{reward.name}” (version {library.short_hash(reward.hash)}) is in the code editor, its functions "
                    f"ticked: {', '.join(f'`{fn}` × {w:g}' for fn, w in reward.weights.items())}; its pinned examples are in "
                    f"the Pinned examples table.{kept} Unchanged, a run records this version.")

        use_inputs = [self.choice, tab.code, form.base] + form.inputs
        self.use.click(use, inputs=use_inputs, outputs=[tab.code, tab.user, tab.pinned, self.status], api_name="library_use")

        def check(name, query, state, *values):
            if not name:
                return gr.skip(), "Pick a reward first."
            try:
                reward = library.find(name)
            except StudioError as exc:
                return gr.skip(), page_message(exc)
            cfg, _, _ = config_and_columns(state, values, None)
            checked = scorer.check_examples(reward, cfg)
            verdicts.remember(reward, checked)
            return listing(query, verdicts)[0], verdict_markdown(reward, checked)

        self.check.click(check, inputs=[self.choice, self.search, form.base] + form.inputs, outputs=[self.table, self.status],
                         api_name="library_check")

        def export(name):
            if not name:
                return gr.update(value=None, visible=False), "Pick a reward first."
            try:
                target = export_file(name)
            except StudioError as exc:
                return gr.update(value=None, visible=False), page_message(exc)
            return gr.update(value=str(target), visible=True), f"✓ Exported “{name}” as {target.name}: download it above and send it to whoever should use it."

        self.export.click(export, inputs=self.choice, outputs=[self.download, self.status], api_name="library_export")

        def delete(name, pending, query):
            if not name:
                return gr.skip(), gr.skip(), "Pick a reward first.", None
            if pending != name:
                return gr.skip(), gr.skip(), (f"Delete “{name}” from your library? Press **Delete** again to confirm "
                                              "(runs that used it keep their own copy)."), name
            try:
                gone = library.delete(name)
            except StudioError as exc:
                return gr.skip(), gr.skip(), page_message(exc), None
            rows, names, _ = listing(query, verdicts)
            return rows, gr.update(choices=names, value=None), f"✓ Deleted “{name}” ({gone.name}).", None

        self.delete.click(delete, inputs=[self.choice, self.pending_delete, self.search],
                          outputs=[self.table, self.choice, self.status, self.pending_delete], api_name="library_delete")

        def duplicate(name, new_name, query):
            if not name or not (new_name or "").strip():
                return gr.skip(), gr.skip(), "Pick a reward and type the copy's name."
            try:
                library.duplicate(name, new_name.strip())
            except StudioError as exc:
                return gr.skip(), gr.skip(), page_message(exc)
            rows, names, _ = listing(query, verdicts)
            return rows, gr.update(choices=names, value=new_name.strip()), f"✓ “{new_name.strip()}” is a copy of “{name}”."

        self.duplicate.click(duplicate, inputs=[self.choice, self.new_name, self.search],
                             outputs=[self.table, self.choice, self.status], api_name="library_duplicate")

        def imported(uploaded, path, replace, query, state, columns, *values):
            where = uploaded or (path or "").strip()
            if not where:
                return gr.skip(), gr.skip(), "Upload a reward file or type its path first."
            cfg, data_columns, _ = config_and_columns(state, values, columns)
            report, kept = import_path(where, data_columns, cfg, verdicts, replace=bool(replace), uploaded=bool(uploaded))
            rows, names, _ = listing(query, verdicts)
            return rows, gr.update(choices=names, value=kept) if kept else gr.skip(), report

        self.import_button.click(imported, inputs=[self.upload, self.path, self.replace, self.search, form.base, form.columns]
                                 + form.inputs, outputs=[self.table, self.choice, self.import_result], api_name="library_import")

        def save(name, code, user, pinned, replace, query, state, columns, *values):
            cfg, data_columns, answer = config_and_columns(state, values, columns)
            try:
                reward = editor_reward(code, name, user, pinned, data_columns, answer)
            except StudioError as exc:
                return gr.skip(), gr.skip(), page_message(exc) + "  \n**Nothing was saved.**", gr.skip()
            report, kept = import_reward(reward, data_columns, cfg, verdicts, replace=bool(replace))
            rows, names, _ = listing(query, verdicts)
            # The editor then holds the saved file (its header now carries the examples), so a run records that version.
            return (rows, gr.update(choices=names, value=reward.name if reward.name in names else None), report,
                    reward.source if kept else gr.skip())

        self.save.click(save, inputs=[self.save_name, tab.code, tab.user, tab.pinned, self.replace, self.search, form.base,
                                      form.columns] + form.inputs, outputs=[self.table, self.choice, self.import_result, tab.code],
                        api_name="library_save")

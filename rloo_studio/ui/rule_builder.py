"""The Rewards tab's rule builder: a reward made of blocks (rewards.rules) by pointing and clicking.

The person picks a block (its one-line explanation and worked example show as it is picked), adds it to a small
table — block, function name, weight, parameters as JSON, as the builtins table has them — and picks how the blocks
combine (sum, all-of, any-of). The reward file the rule set becomes (`rules.build_file`) is shown beside it as Python,
re-generated on every change; *Use this reward* puts it in the code editor and ticks its functions, after which it is
an ordinary code reward the person may edit. Nothing here runs the code. The blocks are kept as a draft on every
change (DRAFT_RULES) and come back after a reload.
"""

from __future__ import annotations

import json

import gradio as gr

from ..errors import StudioError
from ..rewards import rules
from .pinned_rows import table_rows
from .workspace import DRAFT_RULES, REPLACED_CODE

BLOCK_HEADERS = ["block", "function name", "weight", "parameters (JSON)"]
COMBINE_CHOICES = [(f"{key}: {why}", key) for key, why in rules.COMBINES.items()]
DEFAULT_NAME = "my rule reward"


def block_choices() -> list[tuple[str, str]]:
    """(title, id) per block, for the picker."""
    return [(b.title, b.id) for b in rules.BLOCKS.values()]


def block_markdown(block_id: str | None) -> str:
    """One block's explanation and worked example, in the page's words."""
    block = rules.BLOCKS.get(block_id or "")
    if block is None:
        return "Pick a block to see what it scores."
    ex = block.example
    given = {**ex["columns"], **ex["params"]}
    with_ = (" with " + ", ".join(f"{k} = `{v}`" for k, v in given.items())) if given else ""
    return (f"**{_shown(block.title)}** — {_shown(block.explanation)}  \n"
            f"*Example:* the reply `{ex['reply']}`{with_} scores **{ex['score']:g}**.  \n"
            f"*Parameters (defaults):* `{json.dumps(block.params, ensure_ascii=False)}`")


def _shown(text: str) -> str:
    """Text for Markdown: a tag the text names (</think>, <answer>) is shown, not taken for HTML."""
    return text.replace("<", "&lt;")


def blocks_markdown(table) -> str:
    """One line per block in the table: its function name, title and what it scores."""
    lines = [f"- `{r[1]}` — **{_shown(rules.BLOCKS[str(r[0])].title)}**: {_shown(rules.BLOCKS[str(r[0])].explanation)}"
             for r in table_rows(table) if r and str(r[0] or "") in rules.BLOCKS]
    return "**Your blocks:**\n" + "\n".join(lines) if lines else ""


def add_block(table, block_id: str | None) -> list[list]:
    """The table with one more row for `block_id`: its default parameters, a function name not yet used, weight 1."""
    rows = [r for r in table_rows(table) if r and str(r[0] or "").strip()]
    if block_id not in rules.BLOCKS:
        return rows
    params = dict(rules.BLOCKS[block_id].params)
    name, used, n = rules.default_name(block_id, params), {str(r[1]) for r in rows}, 2
    base = name
    while name in used:
        name, n = f"{base}_{n}", n + 1
    return rows + [[block_id, name, 1.0, json.dumps(params, ensure_ascii=False)]]


def rule_set(table, combine: str) -> dict:
    """The rule set the table stands for; raises StudioError naming the row whose parameters are not JSON."""
    blocks = []
    for i, row in enumerate(table_rows(table)):
        if not row or not str(row[0] or "").strip():
            continue
        block, name, weight, params = (list(row) + [None] * 4)[:4]
        try:
            given = json.loads(params) if str(params or "").strip() else {}
            if not isinstance(given, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            raise StudioError(f"row {i + 1} ({block}): the parameters are not a JSON object ({exc})",
                              "each block reads its numbers and words from them",
                              f"write them like the defaults: {json.dumps(rules.BLOCKS[block].params) if block in rules.BLOCKS else '{}'}") from None
        try:
            weight = float(weight) if weight not in (None, "") else 1.0
        except (TypeError, ValueError):
            raise StudioError(f"row {i + 1} ({block}): the weight {weight!r} is not a number", "", "write e.g. 1.0") from None
        blocks.append({"block": str(block).strip(), "name": str(name or "").strip() or None, "weight": weight, "params": given})
    return {"combine": combine or "sum", "blocks": blocks}


def generated(table, combine: str, name: str | None) -> tuple[str, str]:
    """(the reward file's text, a line under it): the file as `rules.build_file` writes it (no pinned examples yet:
    the Pinned examples section and *Save to the library* add them), or "" and what is wrong, in the page's words."""
    try:
        spec = rule_set(table, combine)
        if not spec["blocks"]:
            return "", "Add a block to start: pick one above and press **Add block**."
        code = rules.build_file(spec, (name or "").strip() or DEFAULT_NAME)
    except StudioError as exc:
        return "", "⚠️ " + page_words(exc)
    functions = ", ".join(f"`{e['name']}`" for e in rules.normalised_rules(spec)["blocks"]) if spec["combine"] == "sum" \
        else f"`{rules.normalised_rules(spec)['name']}`"
    return code, (f"✓ Generated: {functions}. **Use this reward** puts it in the code editor with its functions ticked; "
                  "edited there, it is an ordinary code reward.")


def page_words(exc: StudioError) -> str:
    """A rule problem as the page says it: the builder's table rows, not the YAML's `blocks[i]`."""
    import re

    message = re.sub(r"blocks\[(\d+)\]", lambda m: f"row {int(m.group(1)) + 1}", exc.message())
    return message.replace("{block: contains}", "a block with *Add block*").replace("\n", "  \n")


def use_rule(table, combine: str, name: str | None, current: str | None, workspace) -> tuple:
    """*Use this reward*: (the editor's new code, the functions table, the status line). The person's own code is never
    lost without a word: it is kept in the workspace (`REPLACED_CODE`, as the library's *Use* does) and the line says
    where."""
    code, line = generated(table, combine, name)
    if not code:
        return gr.skip(), gr.skip(), line
    kept = ""
    if (current or "").strip() and current != code:
        kept = (f" **Your previous code was replaced;** it is kept in `{workspace.write(REPLACED_CODE, current)}` "
                "(copy it back into the editor to use it again).")
    return code, used_rows(code), ("✓ In the code editor, its functions ticked in the functions table." + kept +
                                   " Add pinned examples below, then keep it with *Save the editor's reward* in the "
                                   "Reward library.")


def used_rows(code: str) -> list[list]:
    """The functions table for a generated file: every public function ticked, at the header's weight."""
    from ..rewards.library import read_header

    return [[True, fn, float(w)] for fn, w in read_header(code).get("weights", {}).items()]


def saved_rules(draft: dict | None) -> list:
    """[blocks table, combine, name] from the builder's draft (`refresh` keeps it), each as it was; skipped when there
    is none or a part no longer fits (a block the builder no longer has is left out)."""
    if not draft:
        return [gr.skip()] * 3
    rows = [list(r) for r in draft.get("blocks") or [] if isinstance(r, list) and len(r) == len(BLOCK_HEADERS)
            and str(r[0] or "") in rules.BLOCKS]
    combine = draft.get("combine") if draft.get("combine") in rules.COMBINES else gr.skip()
    name = draft["name"] if isinstance(draft.get("name"), str) else gr.skip()
    return [rows, combine, name]


class RuleBuilder:
    """The builder's widgets (inside the Rewards tab, closed by default) and their events."""

    def __init__(self):
        with gr.Accordion("Build a reward from rules (no code)", open=False, elem_id="rule-builder"):
            gr.Markdown("Pick what a good reply has, block by block. Each block scores a reply from 0 to 1; the Python it "
                        "becomes is shown on the right.")
            with gr.Row():
                with gr.Column(scale=3):
                    with gr.Row():
                        self.block = gr.Dropdown(block_choices(), value=None, label="Block", scale=3, elem_id="rule-block")
                        self.add = gr.Button("Add block", scale=1, elem_id="rule-add")
                    self.about = gr.Markdown(block_markdown(None), elem_id="rule-about")
                    self.table = gr.Dataframe(headers=BLOCK_HEADERS, datatype=["str", "str", "number", "str"], value=[],
                                              interactive=True, static_columns=[0], elem_id="rule-blocks",
                                              label="Blocks (edit a cell to change a name, weight or parameter)")
                    self.explained = gr.Markdown(elem_id="rule-explained")
                    self.combine = gr.Radio(COMBINE_CHOICES, value="sum", label="Combine the blocks", elem_id="rule-combine")
                    self.name = gr.Textbox(DEFAULT_NAME, label="Reward name", elem_id="rule-name")
                    self.use = gr.Button("Use this reward", variant="primary", elem_id="rule-use")
                    self.status = gr.Markdown(elem_id="rule-status")
                with gr.Column(scale=3):
                    self.code = gr.Code("", language="python", label="Generated Python", interactive=False, lines=16,
                                        elem_id="rule-code")

    def wire(self, demo: gr.Blocks, editor: gr.Code, functions: gr.Dataframe, workspace) -> None:
        self.block.change(block_markdown, inputs=self.block, outputs=self.about, api_visibility="private", show_progress="hidden")
        self.add.click(add_block, inputs=[self.table, self.block], outputs=self.table, api_name="rule_add_block")

        def refresh(table, combine, name):
            # Kept on every change (in the handler the change already has: a second one would restart it, derived.py)
            # and put back when the page loads: a reload kept the blocks only until now.
            workspace.write_json(DRAFT_RULES, {"blocks": table_rows(table), "combine": combine, "name": name})
            code, line = generated(table, combine, name)
            return code, line, blocks_markdown(table)

        demo.load(lambda: saved_rules(workspace.read_json(DRAFT_RULES)), outputs=[self.table, self.combine, self.name],
                  api_name="load_rules")

        for trigger in (self.table.change, self.combine.change, self.name.change):
            trigger(refresh, inputs=[self.table, self.combine, self.name], outputs=[self.code, self.status, self.explained],
                    api_visibility="private", show_progress="hidden", trigger_mode="always_last")

        def use(table, combine, name, current):
            return use_rule(table, combine, name, current, workspace)

        self.use.click(use, inputs=[self.table, self.combine, self.name, editor], outputs=[editor, functions, self.status],
                       api_name="rule_use")

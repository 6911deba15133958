"""The Rewards tab: builtin rewards, the reward-code editor, the live preview and pinned examples (the reward library
and the rule builder are their own sections: library_panel, rule_builder).

Turns its widgets into the `rewards` list of the RunConfig (`apply`) and back (`values_from`).
The person's code is arbitrary Python, so the app's own process never runs it: on every edit it
is only parsed (syntax with line and column, undefined names: `rewards.lint`); loading and the
signature check run in a child process (`rewards.check`); the preview samples completions in a
child process (the inference worker) and scores them in another one with a time limit
(`workers.scorer`). The code is kept as a draft on every change and copied into each run as
rewards.py, which the training worker loads unchanged. `wire` connects the check, the preview
and the pinned examples to the whole form (they score with the form's rewards and model). The preview's own fields are
kept as a draft as the person sets them; the preview and the pinned check are kept across reloads with their stamps
(freshness.Outdated.keep, in app.py beside the other kept results; `preview_shown` gives the table its widths back).

Over 500 lines: the tab's widgets, preview tables and pinned checks are one page (its scoring children, and the ones
kept waiting, are workers.scorer's).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from .. import runs, sandbox
from ..config import NO_REWARDS, RunConfig
from ..data import row_from_cell, reward_columns, unpassed_columns
from ..errors import ConfigError, RewardError, StudioError
from ..presets import DEFAULT_CPU_PRESET, get_preset
from ..protocol import Done, PreviewRequest, Progress
from ..rewards import BUILTIN_REWARDS, builtin_catalog, builtin_default_params
from ..rewards.check import check_source
from ..rewards.asks import MOSTLY_NO_SIGNAL, warmup_offer
from ..rewards.lint import syntax_problem, undefined_names
from ..rewards.preview import agreement_sentence, cut_off_lines, none_as_zero_lines, probes_line, scoring_request, written_request
from ..rewards.templates import TEMPLATES, template
from ..rewards.user import public_function_names
from . import text
from ..workers import scorer
from .freshness import LatestOnly, Outdated
from .judge_panel import JudgePanel, entry_values, judge_entry, saved_values, unreachable_servers
from .library_panel import LibraryPanel
from .pinned_rows import _truthy, answer_column, expected_words, known_columns, pinned_row, table_rows  # noqa: F401 (also read from here)
from .pickers import busy_message
from .run_view import reply_marks
from .rule_builder import RuleBuilder
from .workspace import DRAFT_FUNCTIONS, DRAFT_PINNED, DRAFT_PREVIEW, DRAFT_REWARDS

if TYPE_CHECKING:
    from ..workers.inference import InferenceWorker
    from .form import PageForm

PREVIEW_SCORE_TIMEOUT_S = 30  # the reward functions' time limit in the preview (a hang is stopped, the app stays usable)
PINNED_TIMEOUT_S = 30
PINNED_QUIET_S = 1.0  # a pinned example's check starts once its cells have not been edited for this long
PINNED_RUN_FILE = "pinned.json"  # the pinned examples as they were when the run started, in its folder
EXAMPLE_PIN = ["Ana has 47 apples and gets 28 more. How many now?", "<think>47+28</think>75", "75", 1.0, 10.0]

BUILTIN_HEADERS = ["use", "reward", "weight", "parameters (JSON)", "what it does"]
PINNED_HEADERS = ["prompt", "completion", "answer", "min total", "max total"]
PINNED_WIDTHS = ["26%", "34%", "18%", "11%", "11%"]  # the answer holds `column=value; …` too: a text column
USER_HEADERS = ["use", "function", "weight"]
# The functions table as an answer from the server proposes it ({"rows": [[tick, name, weight], ...], "sent": ...}),
# merged in the page with the table as it is now: a function already listed keeps its row as the person has it, a new
# one gets the proposed row, one no longer proposed goes. Why in the page: the answer was computed from the table as it
# was when the event was sent, and a tick made meanwhile (the person ticks a function the moment it is listed) would
# be undone by the table sent back. `sent` makes every answer a change, even one proposing the same rows again.
MERGE_FUNCTIONS_JS = """(found, table) => {
  if (!found || !Array.isArray(found.rows)) return table;
  const rows = Array.isArray(table) ? table : ((table && table.data) || []);
  const mine = new Map(rows.filter(r => Array.isArray(r) && r.length >= 3).map(r => [String(r[1]), r]));
  const data = found.rows.map(r => mine.get(String(r[1])) || r);
  return Array.isArray(table) ? data : {...(table || {}), data: data};
}"""


def builtin_rows(cfg: RunConfig) -> list[list]:
    """One row per builtin: ticked with the config's weight and parameters when the config uses it."""
    catalog = builtin_catalog()
    used = {s.name: s for s in cfg.rewards if s.name}
    rows = []
    for name in BUILTIN_REWARDS:
        spec = used.get(name)
        params = {**builtin_default_params(name), **(spec.params if spec else {})}
        # The descriptions are the builtins' docstrings: the table shows plain text, so their ``code`` marks go.
        rows.append([spec is not None, name, spec.weight if spec else 1.0, json.dumps(params), catalog[name].replace("``", "")])
    return rows


def merged_builtin_rows(rows: list[list], saved) -> list[list]:
    """The builtin table `rows` with each builtin's saved row in place of its own (a draft's table, put back on a reload);
    a builtin the draft does not know keeps its row."""
    by_name = {str(r[1]): list(r) for r in table_rows(saved) if isinstance(r, (list, tuple)) and len(r) == len(BUILTIN_HEADERS)}
    return [by_name.get(str(row[1]), row) for row in rows]


def demo_rewards() -> list[dict]:
    """The demo preset's builtin entries ({name, weight, params}): what a form that starts on the demo has ticked."""
    try:
        cfg = get_preset(DEFAULT_CPU_PRESET).load()
    except StudioError:
        return []
    return [{"name": s.name, "weight": s.weight, "params": dict(s.params)} for s in cfg.rewards if s.name]


def without_demo_rewards(kind: str, builtins, pinned) -> tuple:
    """(builtin table, pinned examples, note) once the data is no longer the demo's: the builtins the demo ticked, as it
    ticked them, are unticked (with their default weight and parameters) and the demo's pinned example removed, and the
    note says so. They check the demo's arithmetic answers and its `<think>` format, which the person's data does not
    have: carried over, they would score every completion of it the same. A builtin the person ticked or changed stays."""
    if kind == text.SOURCE_CHOICES[0]:
        return gr.skip(), gr.skip(), ""
    demo = {d["name"]: d for d in demo_rewards()}
    defaults = {row[1]: row for row in builtin_rows(RunConfig(rewards=[]))}
    rows, dropped = [], []
    for row in table_rows(builtins):
        row = list(row)
        name = str(row[1]) if len(row) > 1 else ""
        entry = demo.get(name)
        if entry and _truthy(row[0]) and _same_entry(row, entry):
            row, _ = list(defaults[name]), dropped.append(name)
        rows.append(row)
    pins = [list(r) for r in table_rows(pinned)]
    kept_pins = [r for r in pins if not _is_example_pin(r)]
    if not dropped and len(kept_pins) == len(pins):
        return gr.skip(), gr.skip(), gr.skip()
    what = []
    if dropped:
        what.append(", ".join(f"`{n}`" for n in dropped) + " (unticked)")
    if len(kept_pins) < len(pins):
        what.append("its pinned example (Ana's apples)")
    note = (f"ℹ️ **The demo's example rewards were removed because your data is not the demo's:** {' and '.join(what)}. "
            "They check the demo's arithmetic answers and its `<think>` format; on other data they would score every "
            "completion alike. Tick a builtin again if it fits your data.")
    return rows, kept_pins, note


def _same_entry(row: list, entry: dict) -> bool:
    """Whether a builtin table row is the demo's entry as the demo set it (same weight and parameters)."""
    try:
        params = json.loads(row[3]) if str(row[3] or "").strip() else {}
        return float(row[2]) == float(entry["weight"]) and params == {**builtin_default_params(entry["name"]), **entry["params"]}
    except (TypeError, ValueError):
        return False


def _is_example_pin(row: list) -> bool:
    """The pinned example a new workspace starts with (EXAMPLE_PIN), unchanged."""
    cells = [str(c).strip() if c is not None else "" for c in row[:3]]
    try:
        numbers = [float(c) for c in row[3:5]]
    except (TypeError, ValueError):
        return False
    return cells == [str(c) for c in EXAMPLE_PIN[:3]] and numbers == [float(c) for c in EXAMPLE_PIN[3:5]]


class RewardsTab:
    def __init__(self, code_draft: str):
        gr.Markdown(text.REWARDS_INTRO)
        self.builtins = gr.Dataframe(headers=BUILTIN_HEADERS, datatype=["bool", "str", "number", "str", "str"], label=text.BUILTIN_TABLE,
                                     interactive=True, static_columns=[1, 4], wrap=True, elem_id="builtin-rewards",
                                     column_widths=["6%", "14%", "8%", "32%", "40%"])
        self.demo_note = gr.Markdown(elem_id="demo-rewards-note")  # the demo's rewards removed when the data is no longer the demo's
        with gr.Row():
            with gr.Column(scale=3):
                with gr.Row():
                    self.template = gr.Dropdown(list(TEMPLATES), value=None, label="Insert a template", scale=3, elem_id="template-choice")
                    self.insert = gr.Button("Insert", scale=1, elem_id="template-insert")
                # Long lines wrap: the editor is narrower than the tab, and a line that scrolled sideways hid its end.
                self.code = gr.Code(code_draft, language="python", label=text.CODE, lines=16, elem_id="reward-code",
                                    wrap_lines=True)
                self.lint = gr.Markdown(elem_id="code-lint")
            with gr.Column(scale=2):
                self.receives = gr.Markdown(receives_markdown([], None), elem_id="reward-receives")
        with gr.Row():
            self.check = gr.Button(text.CHECK_CODE, elem_id="check-code")
        self.check_outdated = Outdated("code-check", text.CHECK_CODE)
        self.check_result = gr.Markdown(elem_id="code-check")
        # Where the code above will run: in the reward sandbox, or — said plainly, with how to get one — with your rights.
        self.sandbox_note = gr.Markdown(sandbox_markdown(), elem_id="reward-sandbox")
        self.user = gr.Dataframe(headers=USER_HEADERS, datatype=["bool", "str", "number"], label=text.USER_TABLE,
                                 interactive=True, static_columns=[1], elem_id="user-rewards", value=[])
        self.functions_found = gr.JSON(visible="hidden", elem_id="functions-found")  # see MERGE_FUNCTIONS_JS
        self.rule_builder, self.library = RuleBuilder(), LibraryPanel()  # closed by default: the tab does not grow
        self.judge = JudgePanel()
        self.unshown = gr.Markdown(elem_id="rewards-unshown")  # rewards of the settings the tab cannot show (unshown_note)
        self.insert.click(lambda code, name: (code.rstrip() + "\n\n\n" + template(name)) if name else code,
                          inputs=[self.code, self.template], outputs=self.code, api_name="insert_template")

        gr.Markdown("### Preview: what would training see?\n" + text.PREVIEW_INTRO)
        with gr.Row():
            self.preview_prompts = gr.Slider(1, 8, value=3, step=1, label="Prompts from the dataset", elem_id="preview-prompts")
            self.preview_prompt = gr.Textbox(label="…or type a prompt", elem_id="preview-prompt")
            self.preview_answer = gr.Textbox(label="its answer, or column=value; … for your columns (optional)", elem_id="preview-answer")
        self.preview_pasted = gr.Textbox(label="…or paste completions for that prompt, one per line (at least 2): they are scored "
                                         "instead of sampling", lines=3, elem_id="preview-pasted")
        self.preview_button = gr.Button("Sample and score", variant="primary", elem_id="preview-run")
        # Above the preview, and again above its findings (the hack probes): "Outdated — … changed since" (freshness.py).
        self.preview_outdated = Outdated("preview", "Sample and score")
        self.preview_status = gr.Markdown(elem_id="preview-status")
        # Every column's width is set with the table (`preview_column_widths`): left to Gradio, the widths follow the
        # cells' contents and the last columns (total, advantage) end up past the window's edge.
        self.preview_table = gr.Dataframe(label="Completions, their rewards, and the advantage each would get", interactive=False,
                                          wrap=True, max_height=480, elem_id="preview-table", headers=EMPTY_PREVIEW_HEADERS,
                                          column_widths=preview_column_widths(EMPTY_PREVIEW_HEADERS))
        self.preview_summary = gr.Dataframe(label="Per function", interactive=False, elem_id="preview-summary", headers=SUMMARY_HEADERS)
        self.preview_outdated.line()
        self.preview_findings = gr.Markdown(elem_id="preview-findings")

        gr.Markdown("### Pinned examples\nCases your rewards must score as expected, re-checked on every edit of the code.")
        # Widths set, not left to the cells: a long completion pushed the answer and expected totals past the edge.
        self.pinned = gr.Dataframe(headers=PINNED_HEADERS, datatype=["str", "str", "str", "number", "number"], interactive=True,
                                   value=[EXAMPLE_PIN], elem_id="pinned", wrap=True, column_widths=PINNED_WIDTHS, label="prompt · completion · answer (or column=value; …) · expected total from · to")
        self.add_pinned = gr.Button("Add example", elem_id="pinned-add", size="sm")
        self.pinned_outdated = Outdated("pinned-result", text.CHECK_CODE)
        self.pinned_result = gr.Markdown(elem_id="pinned-result")

    def restored(self, component, current, saved):
        """The value a reload puts back into `component` (PageForm.initial_form): the builtins table merged by name, so a
        builtin the draft does not know keeps its row; any other widget takes its saved value."""
        return merged_builtin_rows(current, saved) if component is self.builtins else saved

    # ---- wiring ----------------------------------------------------------------------------------

    def wire(self, demo: gr.Blocks, form: "PageForm", worker: "InferenceWorker") -> None:
        workspace = form.workspace
        self.judge.wire(workspace, form.derived)
        self.rule_builder.wire(demo, self.code, self.user, workspace)
        self.library.wire(demo, form, self)
        # Through the form's one change event (derived.py): the form's draft is saved on the same change of `base`.
        form.derived.on([form.base], unshown_note, inputs=[form.base], outputs=self.unshown)
        # Choosing data other than the demo's drops the demo's rewards and pinned example (the person's choice, not a
        # load's: `.input`). "multiple": the Data tab has its own handler of this event (held-out defaults).
        form.data_tab.kind.input(without_demo_rewards, inputs=[form.data_tab.kind, self.builtins, self.pinned],
                                 outputs=[self.builtins, self.pinned, self.demo_note], api_name="drop_demo_rewards",
                                 trigger_mode="multiple")

        def check_code(code, user_table, cols):
            workspace.write(DRAFT_REWARDS, code or "")
            message, table = RewardsTab.check_code(code, user_table, cols)
            return message, proposed_functions(table), self.check_outdated.stamp_from([self.code], [code])

        check_outputs = [self.check_result, self.functions_found, self.check_outdated.stamp]
        self.check.click(check_code, inputs=[self.code, self.user, form.columns], outputs=check_outputs, api_name="check_rewards")
        # Leaving the editor also loads the code (in a child process) and checks the functions' parameters.
        self.code.blur(check_code, inputs=[self.code, self.user, form.columns], outputs=check_outputs,
                       api_visibility="private", trigger_mode="always_last")
        self.check_outdated.watch(form.derived, [self.code])

        def lint_and_save(code):
            workspace.write(DRAFT_REWARDS, code or "")
            return lint_markdown(code)

        # Each edit is linted (live, without running the code) and kept as the draft, through the form's one change event:
        # the editor's change also re-runs what Start would refuse and the Outdated lines, and two handlers of one change
        # restart each other (derived.py). The lint keeps its own endpoint for the API.
        form.derived.on([self.code], lint_and_save, inputs=[self.code], outputs=self.lint)
        def functions_follow_code(code, user_table):
            return functions_now(code, user_table, workspace.read_json(DRAFT_FUNCTIONS))

        def remember_functions(user_table):
            workspace.write_json(DRAFT_FUNCTIONS, remembered_functions(user_table, workspace.read_json(DRAFT_FUNCTIONS)))

        form.derived.on([self.code], functions_follow_code, inputs=[self.code, self.user], outputs=self.functions_found)
        self.functions_found.change(None, inputs=[self.functions_found, self.user], outputs=self.user, js=MERGE_FUNCTIONS_JS)
        # Only the person's own edits of the table (`.input`), never a table the page sent: see DRAFT_FUNCTIONS.
        self.user.input(remember_functions, inputs=self.user, outputs=None, api_visibility="private", show_progress="hidden")
        self.lint_api = gr.Button(visible=False)
        self.lint_api.click(lint_markdown, inputs=self.code, outputs=self.lint, api_name="lint_rewards")

        preview_inputs = [form.base, self.preview_prompts, self.preview_prompt, self.preview_answer, self.preview_pasted] + form.inputs

        def preview(state, prompts_n, typed_prompt, typed_answer, pasted, *values, progress=gr.Progress()):
            # With what it was computed from: the Outdated lines say when one of those fields changes (freshness.py).
            stamp = self.preview_outdated.stamp_from(preview_inputs, [state, prompts_n, typed_prompt, typed_answer, pasted, *values])
            shown = preview_result(state, prompts_n, typed_prompt, typed_answer, pasted, list(values), progress)
            # (the last: no "before this page was loaded" mark on a result computed now, even one that reads as the last)
            return shown[:4] + [stamp, shown[4] if len(shown) > 4 else None, None]  # a failed preview offers no warm-up

        def preview_result(state, prompts_n, typed_prompt, typed_answer, pasted, values: list, progress) -> list:
            clicked = time.time()  # the wall time the person waits is reported, not the scoring time alone
            cfg, problems = form.config_from(state, list(values))
            if cfg is None or problems:
                return [form.problems_markdown(problems), None, None, ""]
            unreachable = unreachable_servers(cfg)
            if unreachable:
                return ["**Preview refused:** " + "  \n".join(unreachable), None, None, ""]
            folder = workspace.dir / "preview"
            folder.mkdir(parents=True, exist_ok=True)
            code = values[form.code_index] or ""
            (folder / runs.REWARDS_FILE).write_text(code, encoding="utf-8")
            cfg = cfg.with_absolute_paths(folder, keep=(runs.REWARDS_FILE,))
            cfg.save(folder / runs.CONFIG_FILE)
            lines = [line for line in (pasted or "").splitlines() if line.strip()]
            if lines:  # pasted completions: written text, scored as the pinned examples are
                if not (typed_prompt or "").strip():
                    return ["Type the prompt the pasted completions answer.", None, None, ""]
                if len(lines) < 2:
                    return ["Paste at least two completions: RLOO compares each with the others.", None, None, ""]
                progress(0.5, desc="scoring with the reward functions")
                # The answer cell as a pinned example's: `column=value; …` for the data's columns, else the answer alone.
                group = {"prompt": typed_prompt.strip(), "completions": lines,
                         "row": row_from_cell(typed_answer, known_columns(cfg), answer_column(cfg))}
                result = scorer.score(written_request(cfg, [group], code, known_columns(cfg), num_generations=len(lines)),
                                      timeout_s=preview_timeout(cfg), standby=scorer.WRITTEN)
            else:  # sampled in the inference worker, which keeps the model loaded between previews
                progress(0.05, desc="Asking the model worker…" if worker.alive else "Starting the model worker…")
                try:
                    result = sample_and_score(worker, RunConfig.load(folder / runs.CONFIG_FILE),
                                              num_prompts=None if (typed_prompt or "").strip() else int(prompts_n),
                                              prompt=(typed_prompt or "").strip() or None, answer=(typed_answer or "").strip() or None,
                                              timeout_s=preview_timeout(cfg), progress=progress,
                                              guard=lambda: busy_message(form.runs_dir, "Sampling completions"))
                except StudioError as exc:
                    return [f"**Preview failed:** {exc.message()}".replace("\n", "  \n"), None, None, ""]
            if result.get("problems"):
                return [f"**Preview failed:** {result['problems'][0]}".replace("\n", "  \n"), None, None, ""]
            table, summary, findings = preview_tables(result)
            table = gr.update(value=table, column_widths=preview_column_widths(table["headers"]))
            n = len(result.get("rows", []))
            how = ("your pasted completions" if lines else
                   f"{cfg.rloo_value('num_generations')} per prompt sampled at temperature {cfg.rloo_value('temperature')}, "
                   f"up to {cfg.rloo_value('max_completion_length')} tokens")
            return [f"Scored {n} completions ({how}) in {time.time() - clicked:.1f} s.", table, summary, findings,
                    warmup_offer(result.get("asks") or [], no_signal_of(result))]

        offer = gr.State(None)  # the format warm-up's offer (rewards.asks.warmup_offer), shown in the Train tab after the preview
        previewed = self.preview_button.click(preview, inputs=preview_inputs,
                                              outputs=[self.preview_status, self.preview_table, self.preview_summary,
                                                       self.preview_findings, self.preview_outdated.stamp, offer,
                                                       self.preview_outdated.made],
                                              api_name="preview_rewards")
        form.train_tab.show_offer(previewed, offer)
        # The preview's own fields are kept as they change (only the person and the load below change them), so a reload
        # puts them back with the kept preview (app.py), which is then outdated only if the person changed them. Each
        # save runs ("multiple", in order: the last is the field's last value); their change's one "always_last"
        # handler is the form's change event (derived.py), whose first runs at a page load would save the fields
        # before the load below had put them back.
        own = preview_inputs[1:5]
        keys = [c.elem_id for c in own]
        gr.on([c.change for c in own], lambda *values: workspace.write_json(DRAFT_PREVIEW, dict(zip(keys, values))) and None,
              inputs=own, api_visibility="private", show_progress="hidden", trigger_mode="multiple", concurrency_limit=1,
              concurrency_id="preview-fields")
        demo.load(lambda: saved_preview_fields(workspace.read_json(DRAFT_PREVIEW), keys), outputs=own,
                  api_visibility="private", show_progress="hidden")
        # What the preview depends on: the model, the data, the rewards and the sampling settings, and its own fields.
        train = form.train_tab.fields
        self.preview_outdated.watch(form.derived, preview_inputs[1:5] + form.model_tab.inputs + form.data_tab.inputs + self.inputs
                                    + [train[k] for k in ("num_generations", "max_completion_length", "temperature", "top_p", "seed")])

        pinned_checks = PinnedChecks()

        def check_pinned(state, pinned, values: list, again: bool) -> str:
            if not pinned_groups(pinned):
                return "No pinned examples yet: add rows with a prompt and a completion."
            cfg, problems = form.config_from(state, list(values))
            if cfg is None or problems:
                return form.problems_markdown(problems)
            groups = pinned_groups(pinned, known_columns(cfg), answer_column(cfg), cfg.data.prompt_column)
            unreachable = unreachable_servers(cfg)
            if unreachable:
                return "⚠️ Pinned examples not checked: " + "  \n".join(unreachable)
            return pinned_checks.report(groups, values[form.code_index] or "", cfg, again)

        def pinned_stamp(pinned, values: list) -> list:
            return self.pinned_outdated.stamp_from(pinned_inputs[1:], [pinned, *values])

        def run_pinned(state, pinned, *values):
            """*Check the code* and the named endpoint: the pinned examples scored now."""
            return check_pinned(state, pinned, list(values), again=True), pinned_stamp(pinned, list(values)), None

        def recheck_pinned(state, pinned, *values):
            """An edit of the table or leaving the code editor: scored unless it is what the last check scored."""
            return check_pinned(state, pinned, list(values), again=False), pinned_stamp(pinned, list(values)), None

        def pinned_question(cfg: RunConfig, code: str | None, draft: str | None) -> str | None:
            """Start's question when pinned examples (the saved ones, which the run keeps) fail with these settings:
            "2 of 3 pinned examples fail — start anyway?", with the report; None when all pass or there are none."""
            groups = pinned_groups(saved_pins(draft) if draft else [], known_columns(cfg), answer_column(cfg), cfg.data.prompt_column)
            if not groups or unreachable_servers(cfg):  # (a judge server that does not answer: Start's own checks say so)
                return None
            passed, report = pinned_checks.verdict(groups, code or "", cfg)
            if passed == len(groups):
                return None
            failing = (f"{len(groups) - passed} of {len(groups)} pinned examples fail" if passed is not None
                       else "The pinned examples could not be checked")
            return (f"⚠️ **{failing}** with these rewards — start anyway? They say how your rewards should score; a run "
                    f"trained on rewards that score them otherwise learns that instead.\n\n{report}")

        self.pinned_question = pinned_question

        # The pinned examples are kept with the reward code: saved on every change (each save runs: it is quick, and no
        # edit may wait behind a check), shown again after a reload.
        self.pinned.change(lambda table: workspace.write(DRAFT_PINNED, json.dumps(table_rows(table))) and None,
                           inputs=self.pinned, outputs=None, api_name="save_pinned", show_progress="hidden",
                           trigger_mode="multiple")
        demo.load(lambda: saved_pins(workspace.read(DRAFT_PINNED)), outputs=self.pinned, api_name="load_pinned")
        self.add_pinned.click(lambda table: table_rows(table) + [["", "", "", None, None]], inputs=self.pinned, outputs=self.pinned,
                              api_name="add_pinned")
        pinned_inputs = [form.base, self.pinned] + form.inputs
        # The report, its stamp, and no "before this page was loaded" mark (freshness.made_line): a check run now that
        # says what the kept one said sends no change, and the mark would stay on a current report.
        pinned_outputs = [self.pinned_result, self.pinned_outdated.stamp, self.pinned_outdated.made]
        # The named endpoint first: events registered later with the same function get suffixed names.
        self.pinned_run = gr.Button(visible=False)
        self.pinned_run.click(run_pinned, inputs=pinned_inputs, outputs=pinned_outputs, api_name="run_pinned")
        # Re-checked on each of these, beside the handlers above, at once rather than after them (a table the person
        # edits while a later check's status changes can lose the edit when the page redraws it). Each check starts a
        # process (and a judge's calls): ~26 s each on a 2-core laptop, and a table edited cell by cell asked one per
        # cell. So they go through `latest` (freshness.LatestOnly): a check starts once the edits pause for
        # PINNED_QUIET_S, one at a time, and an edit made while one runs makes its result outdated (not shown: the newer
        # edit's check follows). The page sends every event ("multiple", no concurrency limit: each waits in `latest`,
        # not in Gradio's queue, so a newer edit can tell an older waiting one that it is not the last). An edit or a
        # blur that leaves everything as the last check scored it gets that check's report (recheck_pinned); the button
        # scores anew, and the named endpoint above answers an API caller every time.
        latest = LatestOnly()

        def latest_only(fn, quiet_s: float):
            def check(request: gr.Request, state, pinned, *values):  # (Gradio gives the request by its type)
                session = getattr(request, "session_hash", None) or ""
                n = latest.ask(session)
                if not latest.turn(session, n, quiet_s):
                    return gr.skip(), gr.skip(), gr.skip()
                try:
                    shown = fn(state, pinned, *values)
                finally:
                    latest.done()
                return shown if latest.current(session, n) else (gr.skip(), gr.skip(), gr.skip())
            return check

        for trigger, fn, quiet_s, api in ((self.code.blur, recheck_pinned, 0.0, None),
                                          (self.pinned.change, recheck_pinned, PINNED_QUIET_S, "pinned_edited"),
                                          (self.check.click, run_pinned, 0.0, None)):
            trigger(latest_only(fn, quiet_s), inputs=pinned_inputs, outputs=pinned_outputs, api_name=api or fn.__name__,
                    api_visibility="public" if api else "private", trigger_mode="multiple", concurrency_limit=None,
                    concurrency_id="pinned-check")
        # What the check scored with: the model's tokenizer, the data's columns and format, the rewards; and the table,
        # whose edit shows the line at once, while its check waits for the edits to pause (the table's change has one
        # "always_last" handler, this one: the check's and the save's are "multiple", derived.py).
        pinned_fields = form.model_tab.inputs[:1] + form.data_tab.inputs + self.inputs
        self.pinned_outdated.watch(form.derived, [self.pinned] + pinned_fields)

    # ---- the form ----------------------------------------------------------------------------------

    @property
    def inputs(self) -> list:
        return [self.builtins, self.code, self.user] + self.judge.inputs

    @staticmethod
    def apply(cfg: dict, values: list) -> list[str]:
        builtins, code, user, *judge = values
        problems, rewards = [], []
        for row in table_rows(builtins):
            if len(row) < 4 or not _truthy(row[0]):
                continue
            name, weight, params_text = str(row[1]), row[2], row[3]
            try:
                params = json.loads(params_text) if str(params_text or "").strip() else {}
                if not isinstance(params, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                problems.append(f"Rewards: the parameters of `{name}` are not a JSON object ({exc}); write e.g. {{\"min_tokens\": 3}}")
                continue
            defaults = builtin_default_params(name)
            # Keep only what differs from the defaults: the saved config stays short and readable.
            changed = {k: v for k, v in params.items() if defaults.get(k, object()) != v or k not in defaults}
            rewards.append({"name": name, "weight": _weight(weight, name, problems), "params": changed})
        for row in table_rows(user):
            if len(row) >= 3 and _truthy(row[0]):
                rewards.append({"file": runs.REWARDS_FILE, "function": str(row[1]), "weight": _weight(row[2], str(row[1]), problems)})
        entry, judge_problems = judge_entry(cfg, judge)
        problems += judge_problems
        if entry is not None:
            rewards.append(entry)
        rewards += unshown_entries(cfg.get("rewards"))  # kept as they are: this tab cannot show them (unshown_note says so)
        if not rewards and not judge_problems:
            problems.append(NO_REWARDS)  # in the page's words wherever problems are shown (text.page_words)
        cfg["rewards"] = rewards
        return problems

    @staticmethod
    def values_from(cfg: RunConfig, code: str, judge_draft: str | None = None) -> list:
        """The tab's values for `cfg`; the judge section shows its draft when there is one (it is kept on every change)."""
        user_rows = [[True, s.function, s.weight] for s in cfg.rewards if s.file and s.function]
        return [builtin_rows(cfg), code, user_rows] + (saved_values(judge_draft) or entry_values(cfg))

    @staticmethod
    def check_code(code: str, user_table, columns: list[str] | None) -> tuple[str, list[list]]:
        """(message, refreshed table of functions): keeps the ticks and weights of functions still defined. Code that does
        not parse leaves the table as it was: which functions it defines is unknown until it does, and a person mid-edit
        must not lose the choices they made (Start then names the syntax error, with its line)."""
        result = check_source(code or "", columns or ())
        table = function_rows(code, user_table)
        if result["problems"]:
            message = "\n\n".join("⚠️ " + p.replace("\n", "  \n") for p in result["problems"])
        elif result["functions"]:
            ticked = [row[1] for row in table if row and _truthy(row[0])]
            n = len(result["functions"])
            message = (f"✅ {n} function{'s' if n != 1 else ''} found: " + ", ".join(f"`{f}`" for f in result["functions"]) + ". "
                       + (f"Training uses the ticked one{'s' if len(ticked) != 1 else ''}: " + ", ".join(f"`{f}`" for f in ticked) + "."
                          if ticked else "Tick **use** to train with one."))
            if not columns:  # nothing to check a parameter named after a column against: say so rather than pass it
                message += (" The data's columns are not known yet (*Preview* in the Data tab): parameters other than TRL's "
                            "are checked against them then, and again before a preview, a pinned check or training.")
        else:
            message = "No functions yet."
        return message, table


def function_rows(code: str | None, user_table, remembered: dict | None = None) -> list[list]:
    """The functions table for `code`: a row per public top-level function (found by parsing, nothing runs), keeping the
    ticks and weights of functions still defined — those the table shows, else those the person last set for that name
    (`remembered`, DRAFT_FUNCTIONS: {name: [tick, weight]}). Code that does not parse leaves the table as it was: which
    functions it defines is unknown until it does, and a person mid-edit must not lose the choices they made (Start
    then names the syntax error, with its line)."""
    previous = {str(name): [row[0], str(name), row[1]] for name, row in (remembered or {}).items()
                if isinstance(row, list) and len(row) == 2}
    previous.update({str(r[1]): r for r in table_rows(user_table) if len(r) >= 3})
    try:
        names = public_function_names(code or "", runs.REWARDS_FILE)
    except RewardError:
        return [[_truthy(r[0]), str(r[1]), r[2]] for r in previous.values()]
    return [[_truthy(previous[n][0]), n, previous[n][2]] if n in previous else [False, n, 1.0] for n in names]


def proposed_functions(rows: list[list]) -> dict:
    """The functions table an answer proposes, for the page to merge with the table as it is then (MERGE_FUNCTIONS_JS)."""
    return {"rows": rows, "sent": time.time()}


def remembered_functions(user_table, remembered: dict | None) -> dict:
    """`remembered` with the table's ticks and weights as the person just set them (DRAFT_FUNCTIONS); names no longer in
    the table are kept, so a function cut and pasted back gets its tick back."""
    return {**(remembered or {}), **{str(r[1]): [_truthy(r[0]), r[2]] for r in table_rows(user_table) if len(r) >= 3}}


def functions_now(code: str | None, user_table, remembered: dict | None = None):
    """The functions table as the code in the editor defines it, on every edit (an undo included: it happens inside the
    editor, so waiting for the person to leave it left the table speaking of code no longer there); skipped when it
    already lists those functions, so ticks and weights being edited are never sent back. Code with no function at all
    leaves the table as it is too: that is the moment between select-all + delete and the paste of the new code, and
    the functions the paste brings back keep their ticks (Check the code still lists what the code holds)."""
    rows = function_rows(code, user_table, remembered)
    if not rows:
        return gr.skip()
    same = [str(r[1]) for r in rows] == [str(r[1]) for r in table_rows(user_table) if len(r) >= 3]
    return gr.skip() if same else proposed_functions(rows)


def preview_timeout(cfg: RunConfig) -> float:
    """The time limit of one reward call in the preview: a judge gets its own (`timeout_s`, which bounds judging one
    batch and, for a local judge, includes loading it), the other rewards PREVIEW_SCORE_TIMEOUT_S."""
    return max([PREVIEW_SCORE_TIMEOUT_S] + [float(s.timeout_s) for s in cfg.rewards if s.judge is not None])


def _weight(value, name: str, problems: list[str]) -> float:
    try:
        weight = float(value)
    except (TypeError, ValueError):
        weight = math.nan
    if not math.isfinite(weight):  # a cleared cell arrives as NaN
        problems.append(f"Rewards: the weight of `{name}` is not a number ({value!r}); give one, e.g. 1.0")
        return 1.0
    return weight


def lint_markdown(code: str) -> str:
    """What is wrong with the code as typed, found without running it."""
    problem = syntax_problem(code or "")
    if problem:
        return f"⚠️ Syntax error at line {problem['line']}, column {problem['column']}: {problem['message']}"
    missing = undefined_names(code or "")
    if missing:
        return "⚠️ " + "; ".join(f"`{m['name']}` is not defined (in {m['function']})" for m in missing) + \
               " — a typo, or a missing import?"
    return "✓ Python syntax is fine. Press **Check the code** to load it and check the functions' parameters."


def sandbox_markdown() -> str:
    """One line under the editor: whether the person's reward code runs in the reward sandbox here (sandbox.py)."""
    found = sandbox.status()
    return ("🔒 " if found.available else "⚠️ ") + found.note + (" A reward that must call a server can opt out with "
                                                                "`sandbox: false` in its entry (see the config)." if found.available else "")


def receives_markdown(columns: list[str], prompt_column: str | None) -> str:
    """The side panel: what each reward function receives for the current data — exactly the keyword arguments every
    call of it gets, in training as in the preview (`data.reward_columns`)."""
    passed = reward_columns(columns)
    cols = ", ".join(f"`{c}`" + (" (the prompts, as the data holds them)" if c == prompt_column else "") for c in passed)
    unpassed = "".join(f"\n- not by its name: `{c}` — {why}" for c, why in unpassed_columns(columns).items())
    return (
        "**What each function receives** (by keyword, one entry per completion):\n\n"
        "- `completions` — the model's text; with chat prompts a list like `[{\"role\": \"assistant\", \"content\": \"...\"}]`\n"
        "- `prompts` — the prompt each completion answers, as the model saw it (text or chat messages)\n"
        "- `completion_ids` — the completion's token ids (count tokens, find `</think>`)\n"
        "- `trainer_state` — `global_step`, `epoch`, … (for schedules)\n"
        + (f"- every data column by its name: {cols}" if columns else "- every data column by its name (load the data in the Data "
                                                                     "tab to list them)")
        + unpassed + "\n\n"
        "Return one `float` per completion, or `None`: " + text.NONE_COUNTS_AS_ZERO + ". Accept `**kwargs` so new "
        "arguments do not break it."
    )


def pinned_groups(table, columns: list[str] | tuple = (), answer: str = "answer", prompt_column: str | None = None) -> list[dict]:
    """The pinned examples as scoring groups: each one's prompt, completion, expected range and the data row it stands
    for (`pinned_row`), with `missing`: the data's `columns` it gives no value for (its prompt fills `prompt_column`)."""
    groups = []
    for row in table_rows(table):
        if len(row) >= 2 and str(row[0] or "").strip() and str(row[1] or "").strip():
            given = pinned_row(row[2] if len(row) > 2 else None, columns, answer)
            groups.append({"prompt": str(row[0]), "row": given, "completions": [str(row[1])],
                           "range": (row[3] if len(row) > 3 else None, row[4] if len(row) > 4 else None),
                           "missing": [c for c in reward_columns(columns) if c not in given and c != prompt_column]})
    return groups




def saved_pins(draft: str | None) -> list[list]:
    """The pinned examples kept in the drafts, or the one example a new workspace starts with."""
    try:
        rows = json.loads(draft) if draft else None
    except ValueError:
        rows = None
    return rows if isinstance(rows, list) else [EXAMPLE_PIN]


def pinned_report(groups: list[dict], result: dict) -> str:
    return pinned_verdict(groups, result)[1]


def pinned_verdict(groups: list[dict], result: dict) -> tuple[int | None, str]:
    """(how many pinned examples pass — None when the check could not score them —, the report in the page's words)."""
    if result.get("problems"):
        return None, "⚠️ " + result["problems"][0].replace("\n", "  \n")
    # A function that raised is left out of the total; a pin that passes without it would hide the error.
    raised = {n: f["errors"][0]["error"] for n, f in result.get("functions", {}).items() if f.get("errors")}
    lines, passed = [], 0
    for g, row in zip(groups, result["rows"]):
        low, high = g["range"]
        total = row["total"]
        broken = [n for n in raised if row["rewards"].get(n) is None]
        ok = (not broken and total is not None and (low in (None, "") or total >= float(low))
              and (high in (None, "") or total <= float(high)))
        passed += ok
        shown = "None" if total is None else f"{total:.3f}" + (
            f" (clipped from {row['unclipped']:.3f} by the clip range, as training clips it)" if row.get("unclipped") is not None else "")
        why = "; ".join(f"`{n}` raised {raised[n]}" for n in broken)
        if broken and g.get("missing"):  # a column the example gave no value for reached the reward as None
            why += (f" (this example gives no value for {', '.join(f'`{c}`' for c in g['missing'])}: if the function reads "
                    f"it, write e.g. `{g['missing'][0]}=…` in its answer cell)")
        lines.append(f"- {'✅' if ok else '❌'} `{g['completions'][0][:60]}` → total {shown} {expected_words(low, high)}"
                     + (f" — {why}" if why else ""))
    checks = "".join(f"\n\n{judge_check_line(c)}" for c in result.get("judge_checks") or [] if c["message"])
    return passed, f"**{passed}/{len(groups)} pinned examples pass**\n" + "\n".join(lines) + checks


def judge_check_line(check: dict) -> str:
    """A judge's own check (rewards.judge.probe_findings) as a line of the page: a warning when it gives high marks to
    an empty or read-back answer, or could not be checked."""
    fine = not check["high"] and check["asked"]
    return f"{'✅' if fine else '⚠️'} **Judge check:** {text.as_written(check['message'])}"


def no_signal_of(result: dict) -> float | None:
    """A preview's share of prompts whose completions all tie (its learnability); None when it has none."""
    share = (result.get("learnability") or {}).get("no_signal_share")
    return share if isinstance(share, (int, float)) else None


def preview_tables(result: dict) -> tuple[dict, dict, str]:
    """(completion table, per-function table, findings markdown) from a preview result.

    The thinking column is left out when no completion has any: one column fewer to share the width."""
    names = list(result.get("functions", {}))
    split = [_split(r["completion"]) for r in result.get("rows", [])]
    with_thinking = any(thinking for thinking, _ in split)
    # A judge's score is followed by its own words (what it replied, and why a score is None).
    said = [n for n in names if any(n in r.get("reasons", {}) for r in result.get("rows", []))]
    scores = [h for n in names for h in ([n, n + REASON_SUFFIX] if n in said else [n])]
    headers = ["#", "prompt"] + (["thinking"] if with_thinking else []) + ["reply"] + scores + ["total", BASELINE, "advantage"]
    rows = []
    for r, (thinking, answer) in zip(result.get("rows", []), split):
        cells = [c for n in names for c in ([_num(r["rewards"][n]), r.get("reasons", {}).get(n, "")] if n in said
                                            else [_num(r["rewards"][n])])]
        reply = reply_marks(r["completion"], bool(r.get("cut_off")), None, answer) + answer
        rows.append([r["group"] + 1, r["prompt"][:200]] + ([thinking] if with_thinking else []) + [reply]
                    + cells + [_num(r["total"]), _num(r["baseline"]), _num(r["advantage"])])
    summary_rows = [[n, f["weight"], _num(f["mean"]), _num(f["std"]), _num(f["min"]), _num(f["max"]), f["none"],
                     "; ".join(e["error"] for e in f["errors"]) or ""] for n, f in result.get("functions", {}).items()]
    findings = [agreement_line(result["agreement"])] if result.get("agreement") else []
    cut = sum(1 for r in result.get("rows", []) if r.get("cut_off"))
    if cut:  # their rewards read what was written before the budget ran out, not an answer
        said = cut_off_lines(result)
        findings.append(f"✂ **Cut off:** {cut} of {len(result['rows'])} completions hit the token budget before they ended "
                        f"(marked in the table): a reward that looks for the answer at the end scores them as if it were wrong. "
                        f"Raise “{text.RLOO_FIELDS['max_completion_length'][0]}” if the answers need the room. "
                        + " ".join(line for line in said if not line.startswith("⚠️")))
        findings += [line for line in said if line.startswith("⚠️")]
    learn = result.get("learnability")
    if learn:
        icon = "⚠️" if learn["no_signal_share"] > MOSTLY_NO_SIGNAL else "✅"
        findings.append(f"{icon} **Learnability:** {text.as_written(learn['verdict'])}")
    findings += none_as_zero_lines(result, page=True)
    for warning in result.get("warnings", []):  # a function that scored no completion (failed, or None for all)
        findings.append(f"⚠️ **Scored nothing:** {text.as_written(warning)}")
    if result.get("advantage_note"):
        findings.append(f"ℹ️ **Advantages in training:** {result['advantage_note']}")
    for name, f in result.get("functions", {}).items():
        for e in f["errors"]:
            where = "  \n".join(f"`{line}`" for line in e["lines"]) or (
                "(no line in your code: check the arguments it expects)" if e.get("in_code", True) else "")
            findings.append(f"⛔ **`{name}` failed:** {text.as_written(e['error'])}  \non the completion "
                            f"`{e['completion'][:120]}`" + (f"  \n{where}" if where else ""))
    findings += [judge_check_line(c) for c in result.get("judge_checks") or [] if c["message"]]
    for a in result.get("asks") or []:  # the prompt <-> reward check (rewards/asks.py), in the page's words
        if a["warning"]:
            findings.append(f"⚠️ **Not asked for:** `{a['reward']}` looks for `{a['looks_for']}`, but neither the system prompt "
                            f"(Data tab) nor any of the {a['prompts']} prompts here asks for it; {a['matched']} of "
                            f"{a['completions']} completions write it. Add to the system prompt: “{text.as_written(a['suggestion'])}”")
        elif a["note"]:
            findings.append(f"ℹ️ **Not asked for, written anyway:** {a['matched']} of {a['completions']} completions write "
                            f"`{a['looks_for']}`, which `{a['reward']}` looks for and no prompt asks for.")
    offer = warmup_offer(result.get("asks") or [], no_signal_of(result))  # almost no completion writes a format
    if offer:
        findings.append(offer)
    probes = result.get("probes") or []
    for p in probes:
        findings.append(f"⚠️ **Hack probe:** {text.as_written(p['message'])}")
    if learn and not probes:
        findings.append(probes_line(result, page=True))
    return ({"headers": headers, "data": rows}, {"headers": SUMMARY_HEADERS, "data": summary_rows}, "\n\n".join(findings))


def preview_shown(status, table, summary, findings) -> list:
    """A kept preview (freshness.Outdated.keep) as the preview sends it: the completions table with its columns' widths."""
    if isinstance(table, dict) and table.get("headers"):
        table = gr.update(value=table, column_widths=preview_column_widths([str(h) for h in table["headers"]]))
    return [status, table, summary, findings]


def saved_preview_fields(draft: dict | None, keys: list[str]) -> list:
    """The preview's own fields (prompts, typed prompt, its answer, pasted completions) as the draft kept them; a field
    the draft does not have is left as it is."""
    return [draft[k] if draft and k in draft and draft[k] is not None else gr.skip() for k in keys]


def agreement_line(pairs: list[dict]) -> str:
    """One line: how far each judge agrees with each other function on these completions (Pearson's r, with n)."""
    return "🤝 **Agreement:** " + agreement_sentence(pairs)


BASELINE = "baseline (others' mean)"
SUMMARY_HEADERS = ["function", "weight", "mean", "std", "min", "max", "None", "errors"]
# What the completions table holds before a preview (its headers then, instead of Gradio's "1 2 3").
EMPTY_PREVIEW_HEADERS = ["#", "prompt", "reply", "total", BASELINE, "advantage"]


def unshown_entries(rewards) -> list[dict]:
    """A config's reward entries that this tab cannot show: reward models (`model:`) and every judge entry after the
    first (the judge section shows one). The form keeps them as they are, so a run starts with every reward it had."""
    kept, judges = [], 0
    for entry in rewards or []:
        if not isinstance(entry, dict):
            continue
        if entry.get("judge") is not None:
            judges += 1
            if judges > 1:
                kept.append(entry)
        elif entry.get("model"):
            kept.append(entry)
    return kept


def unshown_note(state: dict | None) -> str:
    """Says which rewards of the form's settings this tab does not show, and that they are kept; "" when none."""
    kept = unshown_entries(((state or {}).get("config") or {}).get("rewards"))
    if not kept:
        return ""
    try:
        names = [spec.label() for spec in RunConfig.from_dict({"rewards": kept}).rewards]
    except ConfigError:
        names = [str(entry) for entry in kept]
    listed = ", ".join(f"`{name}`" for name in names)
    return (f"**Also in these settings, not shown on this page:** {listed} ({len(kept)} reward entr"
            f"{'y' if len(kept) == 1 else 'ies'}: this page shows one judge and no reward models). They are kept as they are "
            "and trained with; to change or remove them, edit the config (*Show config and command* in the Train tab) and "
            "run it with `rloo-studio train`.")


REASON_SUFFIX = " says"  # the column of a judge's own words, after its score column
TEXT_COLUMNS = {"prompt": 4, "thinking": 3, "reply": 3}  # shares of the width left over by the number columns
REASON_SHARE = 3  # a judge's words share the width like the answer
# The table's width in a 1400 px window (the page's margins taken off), and a header character's width in the
# page's monospace 14 px font (0.6 em) plus a cell's padding, measured in Chromium. Number columns are as wide as
# their header's longest word (headers break between words only) or a rounded score such as -12.345.
TABLE_PX_AT_1400 = 1200
CHAR_PX, CELL_PAD_PX, NUMBER_CHARS = 8.5, 20, 7


def preview_column_widths(headers: list[str]) -> list[str]:
    """Widths for every column of the completions table: the advantage column shows without sideways scrolling at 1400 px.

    Number columns get pixels (their longest header word fits, so no header breaks inside a word); the text columns
    share what is left at 1400 px in percent, so a wider window widens them and a narrower one scrolls."""
    text_share = {h: TEXT_COLUMNS.get(h, REASON_SHARE) for h in headers if h in TEXT_COLUMNS or h.endswith(REASON_SUFFIX)}
    fixed = {h: CELL_PAD_PX + CHAR_PX * (1 if h == "#" else max(NUMBER_CHARS, *(len(w) for w in h.split())))
             for h in headers if h not in text_share}
    left = max(0.0, TABLE_PX_AT_1400 - sum(fixed.values()))
    shares = sum(text_share.values())
    return [f"{fixed[h]:.0f}px" if h in fixed else f"{100 * left / TABLE_PX_AT_1400 * text_share[h] / shares:.1f}%" for h in headers]


def _split(text: str) -> tuple[str, str]:
    if "</think>" in text:
        thinking, answer = text.split("</think>", 1)
        return thinking.replace("<think>", "").strip(), answer.strip()
    return "", text.strip()


def _num(value):
    return round(value + 0.0, 3) if isinstance(value, (int, float)) else value


class PinnedChecks:
    """The pinned examples' reports, remembering the last check: what it scored and the scores.

    The page sends the table's change twice for one edited cell (as the cell's editor opens and as it closes), and
    leaving the code editor sends a blur, changed or not. A check of what the last check scored would start a process
    for the same verdict, use up the child that has loaded the tokenizer for the next edit (`scorer.WRITTEN`), and hold
    the queue that the next edit's check waits in: such a check (`again` False) gets the last scores instead."""

    def __init__(self):
        self.last: dict = {}
        self.scored = 0  # checks that scored (the others gave the last report)

    def report(self, groups: list, source: str, cfg: RunConfig, again: bool) -> str:
        """The report of `groups` (`pinned_groups`) scored with `cfg`'s rewards and the editor's code `source`."""
        return self.verdict(groups, source, cfg, again)[1]

    def verdict(self, groups: list, source: str, cfg: RunConfig, again: bool = False) -> tuple[int | None, str]:
        """(how many of `groups` pass — None when they could not be scored —, the report)."""
        # Every data column reaches the rewards by name, as in training (data.reward_kwargs).
        request = written_request(cfg, [{k: v for k, v in g.items() if k not in ("range", "missing")} for g in groups],
                                  source, known_columns(cfg))
        key = json.dumps([request.to_dict(), _reward_files_changed_at(cfg)], sort_keys=True, default=str)
        last = self.last
        if not again and last.get("key") == key:
            # The scores, not the report: the expected ranges are not part of what is scored (an edited bound is judged
            # against the same scores, and the report says the new bound).
            return pinned_verdict(groups, last["result"])
        result = scorer.score(request, timeout_s=max(PINNED_TIMEOUT_S, preview_timeout(cfg)), standby=scorer.WRITTEN)
        self.scored += 1
        # A check that could not score (a time limit, a server that did not answer) is tried again on the next event.
        self.last = {} if result.get("problems") else {"key": key, "result": result}
        return pinned_verdict(groups, result)


def _reward_files_changed_at(cfg: RunConfig) -> list:
    """When each reward file outside the editor was last changed: an edit of one on disk makes the pinned examples'
    next check score again."""
    files = []
    for spec in cfg.rewards:
        if spec.file:
            path = Path(spec.file) if os.path.isabs(spec.file) else Path(cfg.base_dir) / spec.file
            files.append([str(path), path.stat().st_mtime_ns if path.is_file() else None])
    return files


def sample_and_score(worker, cfg: RunConfig, num_prompts: int | None = None, prompt: str | None = None,
                     answer: str | None = None, timeout_s: float = 30, progress=lambda fraction, desc: None,
                     seed: int = 0, guard=None) -> dict:
    """*Sample and score* as the page runs it: completions are sampled in the inference worker, which keeps
    the model loaded between previews, then scored in a child process with a time limit (`workers.scorer.score`).

    The result is `scorer.score`'s, plus `worker` (its pid and how many times it loaded a preview model).
    `guard()` may refuse (e.g. a run is training and holds the memory)."""
    request = PreviewRequest(config=cfg.to_dict(), base_dir=str(cfg.base_dir), num_prompts=num_prompts, prompt=prompt,
                             answer=answer, seed=seed)
    sampled = None
    # A scoring child started after the previous preview (or now, while the worker samples) waits for
    # the request; its time limit counts from the request, so a slow start never eats the rewards' time.
    scorer.PREVIEWS.warm()
    for event in worker.preview(request, guard=guard):
        if isinstance(event, Progress):
            stage = event.message.removeprefix("[preview]").strip()
            progress(0.3 if "load" in stage else 0.6, desc=stage)
        elif isinstance(event, Done):
            sampled = event.result or {}
    progress(0.9, desc="scoring with the reward functions")
    result = scorer.score(scoring_request(cfg, sampled), timeout_s=timeout_s, standby=scorer.PREVIEWS)
    result["worker"] = {"pid": sampled.get("pid"), "loads": sampled.get("loads")}
    return result

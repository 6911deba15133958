"""The Rewards tab's reward library and rule builder, below the page: what their handlers do with a file or a table.

A bad reward file is refused in the page's words with nothing imported (a syntax error, pinned examples that fail, a
column the data lacks); a good one is scored and kept; the Pinned examples table and a file's examples convert both
ways; the rule builder's table becomes the file `rewards build` writes, with its errors in the page's words. The
pinned examples are scored in the real scoring child (rewards.preview), as the page scores them.
"""

from __future__ import annotations

from rloo_studio.rewards import library, rules
from rloo_studio.ui import library_panel as panel
from rloo_studio.ui import rule_builder as builder

ANSWER_RULE = {"combine": "sum", "blocks": [{"block": "contains", "name": "has_answer", "params": {"column": "answer"}}]}
EXAMPLES = [{"prompt": "2+3?", "completion": "<think>2+3</think>5", "columns": {"answer": "5"}, "total": [1.0, 1.0]},
            {"prompt": "2+3?", "completion": "<think>2+3</think>6", "columns": {"answer": "5"}, "total": [0.0, 0.0]}]


def _file(tmp_path, text: str, name: str = "shared.py"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_file_with_a_syntax_error_is_refused_in_the_page_with_nothing_imported(tmp_path):
    good = rules.build_file(ANSWER_RULE, "answer in reply", examples=EXAMPLES)
    broken = good.replace("def has_answer(completions, answer, **kwargs):", "def has_answer(completions, answer, **kwargs)")
    folder = tmp_path / "library"
    report, kept = panel.import_path(_file(tmp_path, broken), ["prompt", "answer"], None, panel.Verdicts(), folder=folder,
                                     uploaded=True)
    assert kept is None
    line = next(i + 1 for i, text in enumerate(broken.splitlines()) if text.startswith("def has_answer"))
    assert report.startswith("⛔ reward code has a syntax error at shared.py:") and f"fix line {line} of shared.py" in report, report
    assert "Why:" in report and "What to do:" in report and "Nothing was imported" in report, report
    assert not folder.exists() or not list(folder.iterdir())


def test_failing_pinned_examples_or_a_missing_column_import_nothing(tmp_path):
    folder, verdicts = tmp_path / "library", panel.Verdicts()
    wrong = [{**EXAMPLES[0], "total": [0.0, 0.0]}]  # the reward gives 1.0 here
    reward = library.parse(rules.build_file(ANSWER_RULE, "answer in reply", examples=wrong))
    report, kept = panel.import_reward(reward, [], None, verdicts, folder=folder)
    assert not kept and "0/1 pinned examples" in report and "outside the expected" in report, report
    assert "Nothing was imported" in report and not folder.exists()
    assert verdicts.cell(reward) == "❌ 0/1 pass"  # the list says so, for this version

    report, kept = panel.import_reward(reward, ["prompt", "solution"], None, verdicts, folder=folder)
    assert not kept and "needs the column `answer`, which the data lacks" in report and "What to do" in report, report


def test_a_good_file_is_scored_kept_and_listed_with_its_verdict(tmp_path, monkeypatch):
    folder, verdicts = tmp_path / "library", panel.Verdicts()
    monkeypatch.setenv(library.LIBRARY_ENV, str(folder))
    text = rules.build_file(ANSWER_RULE, "answer in reply", examples=EXAMPLES)
    report, name = panel.import_path(_file(tmp_path, text), ["prompt", "answer"], None, verdicts)
    assert name == "answer in reply" and "2/2 pinned examples" in report and "Kept in your library" in report, report
    [saved] = folder.glob("*.py")
    assert saved.read_text() == text
    rows, names, unreadable = panel.listing("answer in", verdicts)
    assert names[0] == "answer in reply" and unreadable == ""  # yours first, then the bundled templates that match
    assert rows[:1] == [["answer in reply", library.parse(text).description, "answer", library.short_hash(library.content_hash(text)),
                     "✅ 2/2 pass", "your library"]]
    # The same name with other code: refused in the page's words (not the command line's --replace).
    other = rules.build_file({**ANSWER_RULE, "blocks": [{**ANSWER_RULE["blocks"][0], "weight": 2.0}]}, "answer in reply",
                             examples=[{**e, "total": [2 * e["total"][0]] * 2} for e in EXAMPLES])
    report, name = panel.import_path(_file(tmp_path, other, "other.py"), [], None, verdicts)
    assert name is None and "already has a reward called 'answer in reply'" in report and "Replace a reward" in report, report
    assert "--replace" not in report
    # A bundled template is listed, unchecked until someone checks it.
    rows, _, _ = panel.listing("", verdicts)
    assert any(r[5] == "bundled template" and panel.NOT_CHECKED in r[4] for r in rows)


def test_pinned_table_and_file_examples_convert_both_ways():
    table = [["What is 2+3?", "<think>2+3</think>5", "5", 1.0, None],
             ["Order?", "It is A-17", "order_id=A-17; answer=x", "0.5", ""],
             ["", "no prompt: skipped", "", None, None]]
    examples = panel.pinned_examples(table, ["prompt", "answer", "order_id"])
    assert examples == [{"prompt": "What is 2+3?", "completion": "<think>2+3</think>5", "columns": {"answer": "5"},
                         "total": [1.0, None]},
                        {"prompt": "Order?", "completion": "It is A-17", "columns": {"order_id": "A-17", "answer": "x"},
                         "total": [0.5, None]}]
    reward = library.RewardFile(name="n", description="", columns=[], tags=[], parameters={}, weights={}, examples=examples,
                                source="", functions=[])
    assert panel.pinned_table(reward) == [["What is 2+3?", "<think>2+3</think>5", "5", 1.0, None],
                                          ["Order?", "It is A-17", "order_id=A-17; answer=x", 0.5, None]]


def test_the_editors_reward_becomes_a_file_with_the_pinned_examples_and_ticked_weights():
    code = "def has_five(completions, **kwargs):\n    return [1.0 if '5' in str(c) else 0.0 for c in completions]\n"
    reward = panel.editor_reward(code, "five", [[True, "has_five", 0.5]], [["2+3?", "5", "5", 0.5, 0.5]], ["prompt", "answer"])
    assert reward.weights == {"has_five": 0.5} and reward.examples[0]["columns"] == {"answer": "5"}
    # Code with a header keeps its name unless another is typed.
    again = panel.editor_reward(library.with_header(reward.source, tags=["math"]), "", [[True, "has_five", 2.0]],
                                [["2+3?", "5", "5", 2, 2]], [])
    assert again.name == "five" and again.weights == {"has_five": 2.0} and again.tags == ["math"]


def test_the_rule_builder_table_becomes_the_file_rewards_build_writes():
    table = builder.add_block([], "contains")
    table = builder.add_block(table, "contains")  # a second one gets a name of its own
    assert [r[:3] for r in table] == [["contains", "contains_answer", 1.0], ["contains", "contains_answer_2", 1.0]]
    table[1] = ["length", "short", 0.5, '{"low": 1, "high": 8}']
    code, line = builder.generated(table, "sum", "answer and short")
    spec = {"combine": "sum", "blocks": [{"block": "contains", "name": "contains_answer", "weight": 1.0, "params": {"column": "answer"}},
                                         {"block": "length", "name": "short", "weight": 0.5, "params": {"low": 1, "high": 8}}]}
    assert code == rules.build_file(spec, "answer and short") and "`contains_answer`, `short`" in line
    assert builder.used_rows(code) == [[True, "contains_answer", 1.0], [True, "short", 0.5]]

    code, line = builder.generated([["length", "short", 1, "{low: 1}"]], "sum", "x")
    assert code == "" and "row 1 (length): the parameters are not a JSON object" in line and "What to do" in line
    code, line = builder.generated([["length", "short", 1, '{"low": 9, "high": 2}']], "sum", "x")
    assert code == "" and line.startswith("⚠️ row 1: the band 9..2 is empty"), line
    # The worked example and the explanation, a tag it names shown as text (Markdown would take </think> for HTML).
    assert "scores **1**" in builder.block_markdown("contains") and "after &lt;/think>" in builder.block_markdown("contains")
    assert builder.blocks_markdown([["contains", "has_answer", 1, "{}"]]).startswith("**Your blocks:**\n- `has_answer` — **Reply")


def test_using_a_rule_reward_keeps_the_persons_own_code_and_says_where(tmp_path):
    # Found walking the app: *Use this reward* replaced the person's own reward in the editor without a word.
    from rloo_studio.ui.workspace import REPLACED_CODE, Workspace

    workspace = Workspace(tmp_path / "runs")
    table = [["contains", "has_answer", 1.0, '{"column": "answer"}']]
    mine = "def symbol_reward(completions, symbol, **kwargs):\n    return [1.0 for _ in completions]\n"
    code, rows, line = builder.use_rule(table, "sum", "answer in reply", mine, workspace)
    assert "def has_answer" in code and rows and rows[0][1] == "has_answer"
    assert (workspace.dir / REPLACED_CODE).read_text() == mine
    assert "Your previous code was replaced" in line and REPLACED_CODE in line
    # Nothing of the person's to keep (an empty editor, or the same code again): nothing said, nothing written over.
    (workspace.dir / REPLACED_CODE).unlink()
    _, _, line = builder.use_rule(table, "sum", "answer in reply", "", workspace)
    assert "replaced" not in line and not (workspace.dir / REPLACED_CODE).exists()


def test_the_builtins_table_shows_no_raw_markup():
    # Found walking the app: "within ``tolerance``" in the builtins table, which shows plain text.
    from rloo_studio.config import RunConfig
    from rloo_studio.ui.rewards_tab import builtin_rows

    descriptions = [row[4] for row in builtin_rows(RunConfig.from_dict({}))]
    assert any("tolerance" in d for d in descriptions) and not any("``" in d for d in descriptions)

"""A prompt typed for the preview takes its answer cell as a pinned example's does (data.row_from_cell): the data's own
columns by `column=value; …`, or the plain answer in the column the rewards compare with. Found walking the app: a
reward reading `symbol` scored a typed `symbol=Au; atomic_number=79` 0, because the whole cell went to `answer`."""

from __future__ import annotations

from rloo_studio.config import RunConfig
from rloo_studio.data import row_from_cell
from rloo_studio.engine.sampling import typed_rows


def _config(tmp_path, rewards=None) -> RunConfig:
    data = tmp_path / "elements.csv"
    data.write_text("question,symbol,atomic_number\nWhat is the symbol of gold?,Au,79\nAnd of iron?,Fe,26\n")
    return RunConfig.from_dict({"data": {"source": str(data), "prompt_column": "question"},
                                "rewards": rewards or [{"name": "exact_match", "params": {"answer_column": "symbol"}}]},
                               base_dir=tmp_path)


def test_a_typed_answer_gives_the_datas_columns_by_name(tmp_path):
    row = typed_rows(_config(tmp_path), "What is the symbol of silver?", "symbol=Ag; atomic_number=47")[0]
    assert (row["question"], row["symbol"], row["atomic_number"]) == ("What is the symbol of silver?", "Ag", "47")


def test_a_plain_typed_answer_fills_the_column_the_rewards_compare_with(tmp_path):
    row = typed_rows(_config(tmp_path), "What is the symbol of silver?", "Ag")[0]
    assert row["symbol"] == "Ag" and "answer" not in row
    # Without a reward naming its answer column, the plain answer is the `answer` column's, as before.
    assert typed_rows(_config(tmp_path, [{"name": "think_format"}]), "Q?", "Ag")[0]["answer"] == "Ag"


def test_the_rule_is_the_pinned_examples_rule():
    columns = ["question", "symbol"]
    assert row_from_cell("symbol=Au", columns) == {"symbol": "Au"}
    assert row_from_cell("x=1", columns, "symbol") == {"symbol": "x=1"}  # not a column of the data: the answer itself
    assert row_from_cell("  ", columns) == {}

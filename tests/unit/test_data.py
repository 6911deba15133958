"""Unit tests for rloo_studio.data: reading local data files, splitting, and building TRL prompts."""

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from rloo_studio.config import DataConfig
from rloo_studio.data import build_prompt, load_rows, to_trl_dataset, use_chat_format
from rloo_studio.errors import DataError

ROWS = [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(10)]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def cfg(**kw) -> DataConfig:
    kw.setdefault("prompt_column", "question")
    return DataConfig(**kw)


def data_error(config, base_dir, **kw) -> DataError:
    with pytest.raises(DataError) as info:
        load_rows(config, base_dir, **kw)
    return info.value


# ------------------------------------------------------------------------------ file formats


def test_load_jsonl(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", ROWS[:3])
    rows = load_rows(cfg(source="d.jsonl"), tmp_path)
    assert rows.train == ROWS[:3]
    assert rows.test is None
    assert rows.columns == ["question", "answer"]
    assert rows.description == "d.jsonl (3 train rows)"


def test_load_jsonl_broken_line_names_line_number(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"question": "a"}\n\n{"question": "b"\n{"question": "c"}\n', encoding="utf-8")
    err = data_error(cfg(source="d.jsonl"), tmp_path)
    assert "line 3 is not valid JSON" in err.what
    assert str(tmp_path / "d.jsonl") in err.what
    assert err.fix == "fix or delete line 3"
    assert "What to do: fix or delete line 3." in err.message()


def test_load_jsonl_line_that_is_not_an_object(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"question": "a"}\n["b"]\n', encoding="utf-8")
    err = data_error(cfg(source="d.jsonl"), tmp_path)
    assert "line 2 is a JSON list, not an object" in err.what
    assert err.fix == "fix line 2"


def test_load_json_list_and_wrapped_list(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps(ROWS[:4]), encoding="utf-8")
    assert load_rows(cfg(source="d.json"), tmp_path).train == ROWS[:4]
    (tmp_path / "w.json").write_text(json.dumps({"train": ROWS[:2], "version": 1}), encoding="utf-8")
    assert load_rows(cfg(source="w.json"), tmp_path).train == ROWS[:2]


def test_load_json_not_a_list_of_objects(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps({"a": 1}), encoding="utf-8")
    err = data_error(cfg(source="d.json"), tmp_path)
    assert "expected a JSON list of objects" in err.what
    assert "save the rows as a list, or as .jsonl" in err.fix


def test_load_json_invalid_names_line(tmp_path):
    (tmp_path / "d.json").write_text('[\n  {"question": "a"},\n  {"question": }\n]\n', encoding="utf-8")
    err = data_error(cfg(source="d.json"), tmp_path)
    assert "not valid JSON at line 3" in err.what


def test_load_csv(tmp_path):
    (tmp_path / "d.csv").write_text("\ufeffquestion,answer\nWhat is 1 + 1?,2\n\"Say \"\"hi\"\", then 3\",3\n", encoding="utf-8")
    rows = load_rows(cfg(source="d.csv"), tmp_path)
    assert rows.train == [{"question": "What is 1 + 1?", "answer": "2"}, {"question": 'Say "hi", then 3', "answer": "3"}]
    assert rows.columns == ["question", "answer"]  # the BOM is not part of the first column's name


def test_load_parquet(tmp_path):
    pd.DataFrame({"question": ["a?", "b?"], "answer": [1, 2]}).to_parquet(tmp_path / "d.parquet")
    rows = load_rows(cfg(source="d.parquet"), tmp_path)
    assert rows.train == [{"question": "a?", "answer": 1}, {"question": "b?", "answer": 2}]


def test_load_corrupt_parquet(tmp_path):
    (tmp_path / "d.parquet").write_bytes(b"not parquet at all")
    err = data_error(cfg(source="d.parquet"), tmp_path)
    assert "could not be read" in err.what
    assert "format its extension says" in err.fix


def test_load_non_utf8_file(tmp_path):
    (tmp_path / "d.jsonl").write_bytes('{"question": "caf\xe9"}\n'.encode("latin-1"))
    err = data_error(cfg(source="d.jsonl"), tmp_path)
    assert "is not UTF-8 text (byte 17, line 1, cannot be decoded)" in err.what
    assert "re-save the file as UTF-8" in err.fix


def test_non_utf8_byte_position_is_counted_from_the_start_of_a_large_file(tmp_path):
    good = "".join(json.dumps({"question": "x" * 50}) + "\n" for _ in range(400)).encode("utf-8")
    (tmp_path / "d.jsonl").write_bytes(good + '{"question": "caf\xe9"}\n'.encode("latin-1"))
    err = data_error(cfg(source="d.jsonl"), tmp_path)
    assert f"(byte {len(good) + 17}, line 401, cannot be decoded)" in err.what


def test_unsupported_extension(tmp_path):
    (tmp_path / "d.txt").write_text("What is 1 + 1?\n", encoding="utf-8")
    err = data_error(cfg(source="d.txt"), tmp_path)
    assert "unsupported file type '.txt'" in err.what
    assert ".jsonl, .json, .csv, .parquet" in err.why


def test_missing_local_file(tmp_path):
    err = data_error(cfg(source="nope.jsonl"), tmp_path)
    assert err.what == "data file not found: nope.jsonl"
    assert str(tmp_path) in err.why
    assert "relative to the config file" in err.fix


def test_empty_file(tmp_path):
    (tmp_path / "d.jsonl").write_text("\n", encoding="utf-8")
    err = data_error(cfg(source="d.jsonl"), tmp_path)
    assert "has no rows" in err.what


# ------------------------------------------------------------------------------ columns and prompts


def test_missing_prompt_column_suggests_and_lists_columns(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", ROWS[:2])
    err = data_error(cfg(source="d.jsonl", prompt_column="questoin"), tmp_path)
    assert err.what == "the dataset has no column `questoin` — did you mean `question`?"
    assert err.why == "its columns are: question, answer"
    assert "data.prompt_column" in err.fix


def test_empty_prompts_listed_by_row(tmp_path):
    rows = [{"question": "a"}, {"question": ""}, {"question": "c"}, {"question": "   "}, {"question": None}, {"question": []}]
    write_jsonl(tmp_path / "d.jsonl", rows)
    err = data_error(cfg(source="d.jsonl"), tmp_path)
    assert err.what == "4 row(s) of the dataset have an empty prompt (data rows 2, 4, 5, 6, counted from 1, header excluded)"
    assert "remove those rows" in err.fix


def test_many_empty_prompts_are_abbreviated(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", [{"question": ""}] * 12)
    err = data_error(cfg(source="d.jsonl"), tmp_path)
    assert err.what == "12 row(s) of the dataset have an empty prompt (data rows 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 ..., counted from 1, header excluded)"


# ------------------------------------------------------------------------------ splits


def test_test_fraction_split_sizes_and_determinism(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", ROWS)
    config = cfg(source="d.jsonl", test_fraction=0.2)
    a = load_rows(config, tmp_path, seed=1)
    b = load_rows(config, tmp_path, seed=1)
    assert len(a.train) == 8 and len(a.test) == 2
    assert a.train == b.train and a.test == b.test
    key = lambda r: r["answer"]  # noqa: E731
    assert sorted(a.train + a.test, key=key) == sorted(ROWS, key=key)
    others = [load_rows(config, tmp_path, seed=s).test for s in range(2, 8)]
    assert any(t != a.test for t in others)  # the seed decides which rows are held out


def test_small_test_fraction_holds_out_at_least_one(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", ROWS)
    rows = load_rows(cfg(source="d.jsonl", test_fraction=0.01), tmp_path)
    assert len(rows.test) == 1 and len(rows.train) == 9


def test_a_split_that_leaves_no_training_rows_is_refused_with_what_to_change(tmp_path):
    """A one-row file with a tenth held out: its row was held out, no row was left to train on, and the Data tab said
    "Ready to train" (a walk with a one-question CSV)."""
    write_jsonl(tmp_path / "d.jsonl", ROWS[:1])
    said = data_error(cfg(source="d.jsonl", test_fraction=0.1), tmp_path).message()
    assert "holding out 1 of the 1 row" in said and "leaves no rows to train on" in said and "data.test_fraction: 0" in said
    assert len(load_rows(cfg(source="d.jsonl", test_fraction=0.0), tmp_path).train) == 1

def test_a_column_of_numbers_and_text_is_refused_when_read_not_after_the_model_loaded(tmp_path):
    """JSON lines whose `answer` is 4 in one row and "x" in another: the Data tab said "Ready to train" and the run
    failed when the table was built, after loading the model (a review)."""
    write_jsonl(tmp_path / "d.jsonl", [{"question": "a", "answer": 4}, {"question": "b", "answer": 5.5},
                                       {"question": "c", "answer": "x"}, {"question": "d", "answer": None}])
    said = data_error(cfg(source="d.jsonl"), tmp_path).message()
    assert "column `answer` holds numbers (rows 1, 2) and text (row 3)" in said and "quote" in said
    write_jsonl(tmp_path / "ok.jsonl", [{"question": "a", "answer": 4}, {"question": "b", "answer": 5.5},
                                        {"question": "c", "answer": None, "tags": ["x"]}])
    assert len(load_rows(cfg(source="ok.jsonl"), tmp_path).train) == 3  # ints with floats, and gaps, make one table

def test_a_spreadsheets_empty_trailing_columns_are_not_a_missing_header(tmp_path):
    """A spreadsheet saved as CSV with two empty columns at the end: its header `prompt,answer,,` repeats the empty
    name, and the Data tab said the file had no header row and to add one (which would have made the real header
    a prompt). Empty columns without a name are dropped; a named column that is empty stays."""
    from rloo_studio.data import headerless_csv

    (tmp_path / "d.csv").write_text("prompt,answer,,\nWhat is 2+2?,4,,\nWhat is 3+3?,6,,\n", encoding="utf-8")
    assert headerless_csv("d.csv", str(tmp_path)) is None
    assert load_rows(cfg(source="d.csv", prompt_column="prompt"), tmp_path).columns == ["prompt", "answer"]
    (tmp_path / "twice.csv").write_text("prompt,prompt\nWhat is 2+2?,4\n", encoding="utf-8")
    assert headerless_csv("twice.csv", str(tmp_path)) == ["prompt", "prompt"]  # a name twice is still suspicious

def test_test_split_is_a_local_file(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", ROWS[:6])
    write_jsonl(tmp_path / "held.jsonl", ROWS[6:])
    rows = load_rows(cfg(source="train.jsonl", test_split="held.jsonl", test_fraction=0.5), tmp_path)
    assert rows.train == ROWS[:6]  # test_split wins over test_fraction
    assert rows.test == ROWS[6:]


def test_test_split_file_without_the_prompt_column_is_refused(tmp_path):
    # The held-out file is read by the same rules as the training file; a missing prompt column
    # must be a DataError now, not a KeyError later when the test set is turned into prompts.
    write_jsonl(tmp_path / "train.jsonl", ROWS[:6])
    write_jsonl(tmp_path / "held.jsonl", [{"q": "What is 9 + 1?", "answer": "10"}])
    with pytest.raises(DataError) as info:
        load_rows(cfg(source="train.jsonl", test_split="held.jsonl"), tmp_path)
    assert "`question`" in info.value.what
    assert "held.jsonl" in info.value.message()


def test_test_split_name_for_a_local_file_is_refused(tmp_path):
    # A local file has no named splits: `test_split: test` must not silently reuse the training file
    # as the held-out set (every "test" score would then be measured on training prompts).
    write_jsonl(tmp_path / "train.jsonl", ROWS)
    with pytest.raises(DataError) as info:
        load_rows(cfg(source="train.jsonl", test_split="test"), tmp_path)
    assert "test_split" in info.value.message()


def test_max_train_samples(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", ROWS)
    config = cfg(source="d.jsonl", max_train_samples=3)
    a = load_rows(config, tmp_path, seed=5)
    assert len(a.train) == 3
    assert all(r in ROWS for r in a.train)
    assert len({r["answer"] for r in a.train}) == 3
    assert load_rows(config, tmp_path, seed=5).train == a.train
    assert a.description == "d.jsonl (3 train rows)"
    assert load_rows(cfg(source="d.jsonl", max_train_samples=50), tmp_path).train == ROWS


def test_max_train_samples_applies_after_the_test_split(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", ROWS)
    rows = load_rows(cfg(source="d.jsonl", test_fraction=0.3, max_train_samples=4), tmp_path)
    assert len(rows.test) == 3 and len(rows.train) == 4
    assert not any(r in rows.test for r in rows.train)


# ------------------------------------------------------------------------------ prompts


def test_build_prompt_chat():
    assert build_prompt("What is 2+2?", DataConfig(), chat=True) == [{"role": "user", "content": "What is 2+2?"}]
    assert build_prompt("What is 2+2?", DataConfig(system_prompt="Be brief."), chat=True) == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}]


def test_build_prompt_plain():
    assert build_prompt("What is 2+2?", DataConfig(), chat=False) == "What is 2+2?"
    assert build_prompt("What is 2+2?", DataConfig(system_prompt="Be brief."), chat=False) == "Be brief.\n\nWhat is 2+2?"
    assert build_prompt(42, DataConfig(), chat=False) == "42"


def test_build_prompt_already_conversational():
    convo = [{"role": "user", "content": "hi"}]
    out = build_prompt(convo, DataConfig(system_prompt="Be brief."), chat=False)
    assert out == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert convo == [{"role": "user", "content": "hi"}]  # the row itself is not modified
    with_system = [{"role": "system", "content": "Own."}, {"role": "user", "content": "hi"}]
    assert build_prompt(with_system, DataConfig(system_prompt="Be brief."), chat=True) == with_system
    assert build_prompt(convo, DataConfig(), chat=True) == convo


def test_use_chat_format():
    with_template = SimpleNamespace(chat_template="{{ messages }}")
    without = SimpleNamespace(chat_template=None)
    assert use_chat_format(DataConfig(prompt_format="chat"), without) is True
    assert use_chat_format(DataConfig(prompt_format="plain"), with_template) is False
    assert use_chat_format(DataConfig(prompt_format="auto"), with_template) is True
    assert use_chat_format(DataConfig(prompt_format="auto"), without) is False
    assert use_chat_format(DataConfig(prompt_format="auto"), object()) is False


# ------------------------------------------------------------------------------ to_trl_dataset


def test_to_trl_dataset_keeps_columns_and_adds_prompt():
    rows = [{"question": "a?", "answer": "1"}, {"question": "b?", "answer": "2"}]
    ds = to_trl_dataset(rows, DataConfig(prompt_column="question", system_prompt="S"), SimpleNamespace(chat_template="t"))
    assert set(ds.column_names) == {"prompt", "question", "answer"}
    assert ds[0]["prompt"] == [{"role": "system", "content": "S"}, {"role": "user", "content": "a?"}]
    assert ds[1]["answer"] == "2"
    assert ds[1]["question"] == "b?"


def test_to_trl_dataset_plain():
    ds = to_trl_dataset([{"prompt": "x"}], DataConfig(prompt_format="plain"), None)
    assert ds.column_names == ["prompt"]
    assert ds[0]["prompt"] == "x"


def test_to_trl_dataset_chat_without_template():
    with pytest.raises(DataError) as info:
        to_trl_dataset([{"prompt": "x"}], DataConfig(prompt_format="chat"), SimpleNamespace(chat_template=None))
    assert "has no chat template" in info.value.what
    assert "prompt_format: plain" in info.value.fix


def test_to_trl_dataset_mixed_column_types():
    rows = [{"prompt": "a", "answer": 1}, {"prompt": "b", "answer": "two"}]
    with pytest.raises(DataError) as info:
        to_trl_dataset(rows, DataConfig(prompt_format="plain"), None)
    assert "could not be combined into a table" in info.value.what
    assert "different types" in info.value.why
    assert "make every column one type" in info.value.fix


def test_hub_dataset_that_cannot_be_reached_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    err = data_error(cfg(source="nobody-xyz/not-a-dataset-123"), tmp_path)
    assert "could not load hub dataset 'nobody-xyz/not-a-dataset-123'" in err.what
    assert err.why == "no network connection to the Hugging Face hub"
    assert "local .jsonl" in err.fix


def test_parquet_chat_prompts_stay_message_lists(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    pq.write_table(pa.Table.from_pylist([{"prompt": messages, "answer": "4"}]), tmp_path / "chat.parquet")
    rows = load_rows(cfg(source="chat.parquet", prompt_column="prompt"), tmp_path)
    assert rows.train[0]["prompt"] == messages
    assert build_prompt(rows.train[0]["prompt"], cfg(source="chat.parquet", prompt_column="prompt"), chat=True) == messages


def test_doctests():
    import doctest

    from rloo_studio import data

    assert doctest.testmod(data).failed == 0

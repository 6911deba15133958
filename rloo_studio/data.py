"""Training data: read the configured source into rows, split off a test set, build TRL prompts.

Sources: the name `demo` (the bundled task under assets/demo-data/), a local .jsonl/.json/.csv/
.parquet file (read here, so a broken line is reported by number), or a Hugging Face dataset id.
`load_rows` needs no model; `to_trl_dataset` turns rows into the `prompt` column TRL expects —
chat messages (TRL applies the tokenizer's chat template) or plain text — and keeps every column
`reward_columns` names, which TRL passes to the reward functions by name. `reward_kwargs` builds the
same keyword arguments for every call of a reward outside training (preview, pinned examples,
scan, evaluation): the one rule of what rewards receive.

Over 500 lines because a person's own file is where most bad inputs show up, and each check (encoding, header row,
empty prompts, a column of mixed kinds, a split that leaves nothing to train on) names the problem in the file's own
terms, lines and cells, while it is read: the checks belong with the reading.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from .config import DataConfig, did_you_mean
from .errors import DataError
from .paths import DEMO_DATA_DIR

LOCAL_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
# Endings that can only be files (never a hub id): reported as unsupported or missing, not sent to the hub.
HEADERLESS_WHAT = "the CSV file has no header row"
_NUMBER = re.compile(r"[-+]?(\d+([.,]\d*)?|[.,]\d+)([eE][-+]?\d+)?")
FILE_LIKE_SUFFIXES = LOCAL_SUFFIXES + (".txt", ".tsv", ".xlsx", ".xls", ".arrow", ".gz", ".zip")


# The keyword arguments TRL's RLOOTrainer gives every reward function of its own, whatever the data.
TRL_REWARD_ARGS = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric")
# Dataset columns TRL's RLOOTrainer (_calculate_rewards) keeps back from the rewards: `prompt` reaches them as
# `prompts`, in the shape training gives it (chat messages or text); the other two are names of its own.
TRL_KEPT_COLUMNS = ("prompt", "completion", "completion_ids")


@dataclass
class Rows:
    train: list[dict]
    test: list[dict] | None
    columns: list[str]
    description: str  # where the rows came from, for logs


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}: line {number} is not valid JSON ({exc.msg}, column {exc.colno})",
                                "each line of a .jsonl file must be one JSON object",
                                f"fix or delete line {number}") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}: line {number} is a JSON {type(row).__name__}, not an object",
                                "each line must be an object like {\"prompt\": \"...\", \"answer\": \"...\"}", f"fix line {number}")
            rows.append(row)
    return rows


# What the first bytes of a file that is not text say it is (file signatures), for the message.
_NOT_TEXT = ((b"PK\x03\x04", "a zip archive, most likely an Excel workbook (.xlsx) renamed",
              "open it in Excel or LibreOffice and save it with File › Save As › “CSV UTF-8 (comma delimited)”"),
             (b"\xd0\xcf\x11\xe0", "an Excel 97–2003 workbook (.xls) renamed",
              "open it in Excel or LibreOffice and save it with File › Save As › “CSV UTF-8 (comma delimited)”"))
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _check_utf8(path: Path) -> None:
    """Report the first byte that is not UTF-8 by its position in the whole file and its line; a workbook
    renamed to .csv and a UTF-16 file (what Windows tools call "Unicode") are named as such."""
    raw = path.read_bytes()
    for signature, what, fix in _NOT_TEXT:
        if raw.startswith(signature):
            raise DataError(f"{path} is not a text file: it is {what} to {path.suffix}",
                            "renaming a file does not convert it; data files must be plain UTF-8 text", fix)
    if raw.startswith(_UTF16_BOMS) or (len(raw) >= 4 and raw[1:4:2] == b"\0\0" and raw[0:4:2] != b"\0\0"):
        raise DataError(f"{path} is UTF-16 text (what Windows programs call “Unicode”), not UTF-8",
                        "data files must be UTF-8",
                        "save it again as UTF-8: in a spreadsheet choose “CSV UTF-8”, in Notepad choose Encoding: UTF-8")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise DataError(f"{path} is not UTF-8 text (byte {exc.start}, line {line}, cannot be decoded)",
                        "data files must be UTF-8", "re-save the file as UTF-8 (e.g. in a spreadsheet: CSV UTF-8)") from None
    nul = raw.find(b"\0")
    if nul >= 0:
        line = raw[:nul].count(b"\n") + 1
        raise DataError(f"{path} holds a NUL character (byte 0) on line {line}",
                        "text never contains one: the file is damaged, or binary data was pasted into it; it would reach "
                        "the model's prompts as an invisible character",
                        f"delete the character on line {line} (a text editor that shows control characters finds it), or "
                        "save the file again from your spreadsheet program as CSV UTF-8")


def _read_csv(path: Path) -> list[dict]:
    """The rows of a CSV file; a field past the csv module's limit is named by the line it starts on."""
    rows: list[dict] = []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        row_start = 1
        try:
            reader.fieldnames  # reads the header row
            row_start = reader.reader.line_num + 1
            for row in reader:
                rows.append(dict(row))
                row_start = reader.reader.line_num + 1
            # Columns without a name that hold nothing (a spreadsheet's empty columns, `prompt,answer,,`) are no columns.
            if rows and "" in rows[0] and all(not (row.get("") or "").strip() for row in rows):
                for row in rows:
                    row.pop("", None)
        except csv.Error as exc:
            if "field larger than field limit" not in str(exc):
                raise DataError(f"{path}: the CSV row starting on line {row_start} cannot be read ({exc})", "",
                                f"check line {row_start}, or save the file again as CSV UTF-8") from None
            raise DataError(
                f"{path}: the field starting on line {row_start} is longer than {csv.field_size_limit():,} characters",
                "almost always a quotation mark that is opened and never closed, so the rest of the file is read as "
                "one field (a real prompt this long would not fit any model's context either)",
                f"close the quotation mark on line {row_start} (or remove it), or save the file again from your "
                "spreadsheet program as CSV UTF-8") from None
    return rows


def _read_local(path: Path) -> list[dict]:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".csv"):
        _check_utf8(path)
    try:
        if suffix == ".jsonl":
            return _read_jsonl(path)
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict):  # {"train": [...]} or {"data": [...]}
                lists = [v for v in data.values() if isinstance(v, list)]
                data = lists[0] if len(lists) == 1 else data
            if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
                raise DataError(f"{path}: expected a JSON list of objects", "each object is one row", "save the rows as a list, or as .jsonl")
            return data
        if suffix == ".csv":
            return _read_csv(path)
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            # pyarrow gives list columns (chat messages) back as Python lists; pandas would give numpy arrays.
            return pq.read_table(path).to_pylist()
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg})", "", "fix the file, or use .jsonl") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{path} could not be read: {exc}", "", "check that the file is complete and in the format its extension says") from None
    raise DataError(f"{path}: unsupported file type {suffix!r}", f"supported: {', '.join(LOCAL_SUFFIXES)}", "convert the file")


def headerless_csv(source: str, base_dir: str) -> list[str] | None:
    """The first row of a .csv/.tsv file when it looks like data rather than column names, else None.

    csv.Sniffer finds the delimiter; its `has_header` is not used: it only votes on columns whose type or
    length differs between the first row and the rest, so a good header over two text columns gets no
    vote and reads as missing. A header cell is a short name; a number, a question or a sentence is data.
    """
    path = Path(source).expanduser()
    path = path if path.is_absolute() else Path(base_dir) / path
    if path.suffix.lower() not in (".csv", ".tsv") or not path.is_file():
        return None
    try:
        sample = path.read_text(encoding="utf-8-sig", errors="replace")[:8192]
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
        first = next(csv.reader(io.StringIO(sample), dialect), [])
    except (OSError, csv.Error):
        return None
    cells = [c.strip() for c in first]
    if not cells:
        return None
    looks_like_data = any(_NUMBER.fullmatch(c) or c.endswith(("?", ".", "!")) or len(c.split()) > 4 or len(c) > 40 for c in cells)
    named = [c for c in cells if c]  # a spreadsheet's empty columns at the end have no name, each of them
    return cells if looks_like_data or len(set(named)) < len(named) else None


def _check_header(cfg: DataConfig, base_dir: Path, columns: list[str]) -> None:
    """A CSV without a header row, read with its first row as the column names, names the problem."""
    first = headerless_csv(cfg.source, base_dir) if cfg.prompt_column not in columns else None
    if first:
        raise DataError(f"{HEADERLESS_WHAT}: its first line ({', '.join(first)}) looks like data, yet was read as the column names",
                        f"a CSV file's first line must name its columns, and the prompts must be in a column named "
                        f"`{cfg.prompt_column}` (data.prompt_column)",
                        f"add a first line with the column names, e.g. `{cfg.prompt_column},answer`")


def _looks_local(source: str) -> bool:
    return source.lower().endswith(FILE_LIKE_SUFFIXES) or source.startswith((".", "/", "~"))


def _read_source(source: str, cfg: DataConfig, base_dir: Path, split: str) -> list[dict]:
    if source == "demo":
        path = DEMO_DATA_DIR / f"{split}.jsonl"
        if not path.is_file():
            raise DataError(f"the bundled demo data has no `{split}` split ({path} is missing)",
                            "the demo data ships with RLOO Studio under assets/demo-data/",
                            "use split `train` or `test`, or point data.source at your own file")
        return _read_jsonl(path)
    path = Path(source).expanduser()
    candidates = [path] if path.is_absolute() else [base_dir / path, Path.cwd() / path]
    for candidate in candidates:
        if candidate.is_file():
            if split not in ("train", cfg.split) and candidate.suffix.lower() in LOCAL_SUFFIXES and not _looks_local(split):
                raise DataError(f"data.test_split `{split}` names a split, but {source} is a single file without splits",
                                "only hub datasets have named splits",
                                "give test_split as a file path (e.g. test.jsonl) or use data.test_fraction")
            return _read_local(candidate)
    if _looks_local(source):
        raise DataError(f"data file not found: {source}", f"looked in {', '.join(str(c.parent) for c in candidates)}",
                        "check the path (relative paths are relative to the config file)")
    return _read_hub(source, cfg, split)


def _read_hub(dataset_id: str, cfg: DataConfig, split: str) -> list[dict]:
    import datasets

    try:
        ds = datasets.load_dataset(dataset_id, cfg.config_name, split=split)
    except Exception as exc:  # the hub client raises many types: connection, auth, not found, bad split
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        offline = "offline" in first.lower() or "connect" in first.lower() or "HF_HUB_OFFLINE" in first
        raise DataError(
            f"could not load hub dataset {dataset_id!r} (split {split!r}): {first}",
            "no network connection to the Hugging Face hub" if offline else "the id, config or split may be wrong, or the dataset is private",
            "download it while online (it is then cached), or use a local .jsonl/.csv/.parquet file" if offline
            else "check the dataset id and split on the hub page; give data.config_name if it has several configurations",
        ) from None
    return [dict(r) for r in ds]


def held_out_count(rows: int, test_fraction: float) -> int:
    """How many of `rows` a held-out fraction holds out: at least one.

    >>> held_out_count(40, 0.3), held_out_count(9, 0.01)
    (12, 1)
    """
    return max(1, int(round(rows * test_fraction)))


def load_rows(cfg: DataConfig, base_dir: str | Path = ".", seed: int = 42) -> Rows:
    """Read training (and test) rows as plain dicts; no tokenizer or model needed."""
    base_dir = Path(base_dir)
    train = _read_source(cfg.source, cfg, base_dir, cfg.split)
    if not train:
        raise DataError(f"the dataset {cfg.source!r} has no rows", "", "check the file or split")
    _check_header(cfg, base_dir, list(dict.fromkeys(k for row in train[:1000] for k in row)))
    columns = _check_prompts(train, cfg, "the dataset")
    _check_column_types(train, "the dataset")

    test: list[dict] | None = None
    if cfg.test_split:
        # A file path names its own file; anything else is a split of the same source.
        test = _read_source(cfg.test_split if _looks_local(cfg.test_split) else cfg.source, cfg, base_dir, cfg.test_split)
        if not test:
            raise DataError(f"the test set {cfg.test_split!r} has no rows", "", "check data.test_split")
        _check_prompts(test, cfg, f"the test set ({cfg.test_split})")
        _check_column_types(test, f"the test set ({cfg.test_split})")
    elif cfg.test_fraction > 0:
        shuffled = train[:]
        random.Random(seed).shuffle(shuffled)
        n_test = held_out_count(len(shuffled), cfg.test_fraction)
        test, train = shuffled[:n_test], shuffled[n_test:]
        if not train:  # at least one row is held out (above), so a one-row file would train on nothing
            raise DataError(f"holding out {n_test} of the {len(shuffled)} row{'s' if len(shuffled) != 1 else ''} "
                            f"(data.test_fraction: {cfg.test_fraction:g}) leaves no rows to train on",
                            "at least one row is held out whenever data.test_fraction is above 0",
                            "add rows to the data, or set data.test_fraction: 0 (and give held-out prompts in data.test_split "
                            "if you want Evaluate to score some)")
    if cfg.max_train_samples and len(train) > cfg.max_train_samples:
        train = random.Random(seed).sample(train, cfg.max_train_samples)
    return Rows(train=train, test=test, columns=columns, description=f"{cfg.source} ({len(train)} train rows)")


def _check_prompts(rows: list[dict], cfg: DataConfig, what: str) -> list[str]:
    """The rows' columns; raises when the prompt column or the answer column the config names is missing, or some
    prompts are empty."""
    columns = list(dict.fromkeys(k for row in rows[:1000] for k in row))
    if cfg.prompt_column not in columns:
        raise DataError(f"{what} has no column `{cfg.prompt_column}`{did_you_mean(cfg.prompt_column, columns)}",
                        f"its columns are: {', '.join(columns)}", "set data.prompt_column to the column that holds the prompts")
    answer = str(cfg.answer_column or "").strip()
    if answer and answer not in columns:
        raise DataError(f"{what} has no column `{answer}` (data.answer_column){did_you_mean(answer, columns)}",
                        f"its columns are: {', '.join(columns)}",
                        "set data.answer_column to the column that holds the reference answers, or leave it out when the "
                        "data has none")
    empty = [i + 1 for i, row in enumerate(rows) if _is_empty(row.get(cfg.prompt_column))]
    if empty:
        shown = ", ".join(map(str, empty[:10])) + (" ..." if len(empty) > 10 else "")
        raise DataError(f"{len(empty)} row(s) of {what} have an empty prompt (data rows {shown}, counted from 1, header excluded)",
                        "a model cannot be prompted with nothing", "remove those rows or fill in their prompts")
    return columns


def _kind(value: Any) -> str | None:
    """What a value is, as a table column sees it: a table holds one kind per column (ints and floats are both numbers)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true/false values"
    if isinstance(value, (int, float)):
        return "numbers"
    if isinstance(value, str):
        return "text"
    return "lists" if isinstance(value, list) else "objects" if isinstance(value, dict) else type(value).__name__


def _check_column_types(rows: list[dict], what: str) -> None:
    """Raises when a column holds values of different kinds (4 in one row, "x" in another): the training table would
    refuse them, but only once the model has loaded. Said here, when the data is read."""
    for column in dict.fromkeys(k for row in rows for k in row):
        seen: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            kind = _kind(row.get(column))
            if kind is not None:
                seen.setdefault(kind, []).append(i + 1)
        if len(seen) > 1:
            parts = " and ".join(f"{kind} (row{'s' if len(at) > 1 else ''} {', '.join(map(str, at[:5]))}"
                                 f"{' ...' if len(at) > 5 else ''})" for kind, at in seen.items())
            raise DataError(f"column `{column}` holds {parts} in {what} (rows counted from 1)",
                            "a training table holds one kind of value per column",
                            "make the column one kind: e.g. quote every answer as text (\"4\"), in the file or the program that wrote it")


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, list) and not value)


def use_chat_format(cfg: DataConfig, tokenizer) -> bool:
    if cfg.prompt_format == "chat":
        return True
    if cfg.prompt_format == "plain":
        return False
    return bool(getattr(tokenizer, "chat_template", None))


def build_prompt(value: Any, cfg: DataConfig, chat: bool):
    """One row's prompt in TRL's form: a list of messages (chat) or a string (plain)."""
    if isinstance(value, list):  # already a conversation
        messages = list(value)
        if cfg.system_prompt and not any(m.get("role") == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": cfg.system_prompt})
        return messages
    text = str(value)
    if chat:
        messages = [{"role": "user", "content": text}]
        if cfg.system_prompt:
            messages.insert(0, {"role": "system", "content": cfg.system_prompt})
        return messages
    return f"{cfg.system_prompt}\n\n{text}" if cfg.system_prompt else text


def data_columns(rows: Iterable[dict]) -> list[str]:
    """The columns of `rows`, in the order they first appear (a row may lack some)."""
    return list(dict.fromkeys(k for row in rows for k in row))


def reward_columns(columns: Iterable[str]) -> list[str]:
    """The data columns every reward function receives as keyword arguments of their own names: all of them, the
    prompt column included (its value as the data holds it), except those TRL keeps back (TRL_KEPT_COLUMNS) and those
    named like TRL's own arguments (TRL_REWARD_ARGS: TRL's value would take their place, or its call would fail)."""
    return [c for c in dict.fromkeys(columns) if c not in TRL_KEPT_COLUMNS and c not in TRL_REWARD_ARGS]


def unpassed_columns(columns: Iterable[str]) -> dict[str, str]:
    """{column: why no reward receives it by its name} for the columns `reward_columns` leaves out."""
    why = {"prompt": "reaches them as `prompts`, in the shape training gives it",
           "completion": "a name TRL keeps for itself", "completion_ids": "a name TRL keeps for itself"}
    return {c: why.get(c, f"TRL passes its own `{c}` instead") for c in dict.fromkeys(columns) if c not in reward_columns([c])}


def answer_column(cfg) -> str:
    """The column that holds a RunConfig's reference answers, the one place it is decided: `data.answer_column` when set;
    else (a config written before that setting) the `answer_column` parameter of a reward that has one; else `answer`.
    Evaluation's reference, a hand-written plain answer (pinned examples, a typed prompt) and the page read it here."""
    if str(cfg.data.answer_column or "").strip():
        return str(cfg.data.answer_column).strip()
    return next((str(s.params["answer_column"]) for s in cfg.rewards if s.params.get("answer_column")), "answer")


def row_from_cell(cell, columns: Sequence[str], answer: str = "answer") -> dict:
    """The data row a hand-written answer cell stands for (a pinned example's, a prompt typed for the preview):
    `column=value` pairs separated by `;` when each names one of the data's `columns` (`order_id=A-17; answer=75`), else
    the whole cell as the `answer` column's value; {} when empty. One rule for every place a person types a row."""
    text = "" if cell is None else str(cell).strip()
    if not text:
        return {}
    pairs = [part.split("=", 1) for part in text.split(";") if part.strip()]
    if columns and all(len(p) == 2 and p[0].strip() in columns for p in pairs):
        return {name.strip(): value.strip() for name, value in pairs}
    return {answer: text}


def reference_cell(row: dict, prompt_column: str, answer: str = "answer"):
    """What a data row holds beside its prompt, as one cell (an evaluation example's reference): the `answer` column's
    value where the row has one, else its other columns as `column=value; …` (the form `row_from_cell` reads), else None.

    >>> reference_cell({"q": "Where is A-1?", "order_id": "A-1"}, "q"), reference_cell({"q": "2+2", "answer": 4}, "q")
    ('order_id=A-1', 4)
    """
    if row.get(answer) not in (None, ""):
        return row[answer]
    others = [f"{c}={v}" for c, v in row.items() if c != prompt_column and v not in (None, "")]
    return "; ".join(others) or None


def reward_kwargs(prompts: Sequence, completions: Sequence, completion_ids: Sequence, rows: Sequence[dict],
                  columns: Iterable[str], trainer_state: Any) -> dict[str, Any]:
    """The keyword arguments of one reward call outside training, as TRL's RLOOTrainer builds them in training: its own
    (prompts, completions, completion_ids, trainer_state, log_extra, log_metric), then every column of
    `reward_columns(columns)` as one value per completion, taken from that completion's data row (None where the row
    lacks it). `rows` are the data's rows as loaded (the prompt column included), one per completion."""
    def no_log(*args, **kwargs) -> None:  # TRL's log_extra / log_metric write to its completions table and logs
        return None

    kwargs: dict[str, Any] = {"prompts": list(prompts), "completions": list(completions), "completion_ids": list(completion_ids),
                              "trainer_state": trainer_state, "log_extra": no_log, "log_metric": no_log}
    for column in reward_columns(columns):
        kwargs[column] = [row.get(column) for row in rows]
    return kwargs


def to_trl_dataset(rows: list[dict], cfg: DataConfig, tokenizer):
    """A datasets.Dataset with TRL's `prompt` column plus every column of `reward_columns` (the prompt column
    included, under its own name), which TRL passes to the rewards by name."""
    import datasets

    chat = use_chat_format(cfg, tokenizer)
    if chat and not getattr(tokenizer, "chat_template", None):
        raise DataError("data.prompt_format is `chat` but the tokenizer has no chat template",
                        "chat prompts are turned into text by the tokenizer's template",
                        "use prompt_format: plain, or a model with a chat template")
    # Every row gets every column (None where it lacks one): a table takes its columns from its first record.
    columns = reward_columns(data_columns(rows))
    records = []
    for row in rows:
        record = {c: row.get(c) for c in columns}
        record["prompt"] = build_prompt(row[cfg.prompt_column], cfg, chat)
        records.append(record)
    try:
        return datasets.Dataset.from_list(records)
    except Exception as exc:  # pyarrow refuses columns whose values change type between rows
        raise DataError(f"the dataset's columns could not be combined into a table: {str(exc).splitlines()[0]}",
                        "a column holds values of different types in different rows (e.g. numbers and text)",
                        "make every column one type (e.g. quote all answers as text)") from None


# ---- a preview for the app -----------------------------------------------------------------------

HUB_PEEK_TIMEOUT_S = 300  # a first download of a mid-sized dataset; later loads come from the cache


def is_hub_source(source: str, base_dir: str | Path = ".") -> bool:
    if source == "demo" or _looks_local(source):
        return False
    path = Path(source).expanduser()
    return not (path.is_absolute() and path.exists()) and not (Path(base_dir) / path).exists() and not (Path.cwd() / path).exists()


def peek(cfg: DataConfig, base_dir: str | Path = ".", limit: int = 20, seed: int = 42) -> dict:
    """What the app shows about a data source: columns, row counts, the first rows and every problem.

    `seed`: the run's (rloo.seed), so the held-out rows and a max_train_samples subset are the ones training will use.

    Never raises a DataError: problems come back in `problems` (the person fixes them in the form). `split` says whether
    the rows could be split into training and held-out ones; until they can, `train_rows` counts the rows read
    (`rows_read`: the training data's rows before the split and any limit). `empty_columns`: those empty in every
    training row.
    """
    result: dict[str, Any] = {"columns": [], "train_rows": 0, "test_rows": None, "rows": [], "problems": [], "split": False}
    try:
        raw = _read_source(cfg.source, cfg, Path(base_dir), cfg.split)
    except DataError as exc:
        result["problems"].append(exc.message())
        return result
    result["columns"] = list(dict.fromkeys(k for row in raw[:1000] for k in row))
    result["train_rows"] = result["rows_read"] = len(raw)
    result["rows"] = [{k: _short(v) for k, v in row.items()} for row in raw[:limit]]
    try:
        rows = load_rows(cfg, base_dir, seed=seed)
        result["train_rows"] = len(rows.train)
        result["test_rows"] = len(rows.test) if rows.test is not None else None
        result["repeats"] = repeats(rows, cfg.prompt_column)
        result["empty_columns"] = [c for c in rows.columns if all(_is_empty(row.get(c)) for row in rows.train)]
        result["split"] = True
    except DataError as exc:
        result["problems"].append(exc.message())
    return result


def repeats(rows: Rows, prompt_column: str) -> dict:
    """Prompts written more than once, by their text: {prompts (how many distinct ones repeat), held_out (held-out rows
    whose prompt is also a training prompt: they measure memory, not the skill), differ ({column: how many repeated
    prompts have different values there}: in the answer column, the data teaches two answers to one question), examples
    (the first repeated prompts, each with its copies' values per column)}."""
    from collections import defaultdict

    copies: dict[str, list[dict]] = defaultdict(list)
    for row in list(rows.train) + list(rows.test or []):
        copies[str(row.get(prompt_column))].append(row)
    repeated = [group for group in copies.values() if len(group) > 1]
    columns = [c for c in rows.columns if c != prompt_column]
    trained = {str(row.get(prompt_column)) for row in rows.train}
    return {"prompts": len(repeated),
            "held_out": sum(1 for row in rows.test or [] if str(row.get(prompt_column)) in trained),
            "differ": {c: n for c in columns if (n := sum(1 for g in repeated if len({str(r.get(c)) for r in g}) > 1))},
            # Which ones, so they can be found: the prompt and each column's distinct values, in the data's order.
            "examples": [{"prompt": _short(str(g[0].get(prompt_column)), 80), "times": len(g),
                          "values": {c: list(dict.fromkeys(str(r.get(c)) for r in g)) for c in columns}}
                         for g in repeated[:REPEATS_SHOWN * 4]]}


REPEATS_SHOWN = 3  # repeated prompts named by the Data tab; the rest are counted


def _short(value: Any, limit: int = 300) -> Any:
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def peek_in_child(cfg: DataConfig, base_dir: str | Path = ".", timeout_s: float = HUB_PEEK_TIMEOUT_S, seed: int = 42) -> dict:
    """`peek` in a child process: hub datasets import `datasets` and may download; the app must stay light."""
    import dataclasses

    from .procs import json_child

    child = json_child("rloo_studio.data", {"cfg": dataclasses.asdict(cfg), "base_dir": str(base_dir), "seed": seed}, timeout_s)
    if child.timed_out:
        return {"columns": [], "train_rows": 0, "test_rows": None, "rows": [],
                "problems": [f"loading {cfg.source!r} took longer than {timeout_s:.0f} s; check the network, or download it first"]}
    if child.returncode != 0 or child.answer is None:
        return {"columns": [], "train_rows": 0, "test_rows": None, "rows": [],
                "problems": [f"loading {cfg.source!r} failed: {child.last_error_line()}"]}
    return child.answer


if __name__ == "__main__":  # python -m rloo_studio.data  <<< '{"cfg": {...}, "base_dir": "."}'  → one JSON line
    import sys

    request = json.loads(sys.stdin.read())
    print(json.dumps(peek(DataConfig(**request["cfg"]), request["base_dir"], seed=request["seed"]), default=str))

"""The Rewards tab's tables as data: a Dataframe's rows, a ticked cell, the data row a pinned example's cell gives, and
the columns the pinned examples can name. Shared by the Rewards tab and the reward library's section, below both."""

from __future__ import annotations

from pathlib import Path

from ..config import RunConfig
from ..data import answer_column, is_hub_source, load_rows, row_from_cell  # noqa: F401 (answer_column: read from here too)
from ..errors import StudioError

_columns_read: dict = {}  # (source, base dir) -> (the file's change time and size, its columns): read again only when it changes


def table_rows(table) -> list[list]:
    """Rows of a Dataframe value, each a list, whether the value arrives as a pandas frame, a dict or a list."""
    if table is None:
        return []
    if hasattr(table, "values") and hasattr(table, "columns"):
        return table.values.tolist()
    rows = (table.get("data") or []) if isinstance(table, dict) else table
    return [list(r) for r in rows]


def _truthy(value) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "✓")) or value == 1


def expected_words(low, high) -> str:
    """A pinned example's expected range in the page's words (an empty bound is no bound)."""
    low, high = (None if v in (None, "") else v for v in (low, high))
    if low is None and high is None:
        return "(no expected range: it only has to score without an error)"
    if high is None:
        return f"(expected at least {low})"
    if low is None:
        return f"(expected at most {high})"
    return f"(expected {low}–{high})"


def pinned_row(cell, columns: list[str] | tuple, answer: str = "answer") -> dict:
    """The data row a pinned example's third cell gives (`data.row_from_cell`: `column=value; …` or the answer alone).
    The prompt column is the example's prompt (the scoring request's `prompt_column`)."""
    return row_from_cell(cell, columns, answer)


def known_columns(cfg: RunConfig) -> list[str]:
    """The data's columns for the pinned examples: read here for the demo or a local file (small, no model library);
    a hub dataset's are not read in the app's process ([] then: the examples pass the columns they name)."""
    if is_hub_source(cfg.data.source, cfg.base_dir):
        return []
    path = Path(cfg.data.source).expanduser()
    path = path if path.is_absolute() else Path(cfg.base_dir) / path
    stamp = (path.stat().st_mtime_ns, path.stat().st_size) if path.is_file() else None
    key = (cfg.data.source, str(cfg.base_dir))
    if key in _columns_read and _columns_read[key][0] == stamp and stamp is not None:
        return _columns_read[key][1]
    try:
        columns = load_rows(cfg.data, cfg.base_dir).columns
    except StudioError:
        return []
    _columns_read[key] = (stamp, columns)
    return columns

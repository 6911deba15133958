"""The format warm-up's record in a run folder (warmup/warmup.json) and its one-sentence summary: what the evaluation,
the model card and the page say of it. Apart from engine/warmup.py, which runs the warm-up (and scores with the
evaluation's code), so that the evaluation and the export read the record without importing the warm-up.
"""

from __future__ import annotations

from pathlib import Path

from .. import runs, stats

WARMUP_DIR = "warmup"          # in the run folder: the adapter after the warm-up and its record
RECORD_FILE = "warmup.json"


def summary_line(record: dict | None) -> str | None:
    """The warm-up in one sentence, for the evaluation, the model card and the page; None when none ran."""
    if not record or not record.get("finished"):
        return None
    check = record.get("check") or {}
    key = "format_rate" if (check.get("before") or {}).get("format_rate") else "reward_rate"
    before, after = (check.get("before") or {}).get(key), (check.get("after") or {}).get(key)
    said = ""
    if before and after:
        what = "in the template's format" if key == "format_rate" else "earning a reward above 0"
        said = (f"; greedy answers {what} on {check.get('prompts_are')}: {stats.fmt_interval(before, True)} before, "
                f"{stats.fmt_interval(after, True)} after")
    return (f"A {record['steps']}-step format warm-up (supervised LoRA, {record['pairs']} pairs from "
            f"{record['source_words']}) ran before RLOO{said}.{scan_words(record)}")


def scan_words(record: dict) -> str:
    """The difficulty scan before and after the warm-up, in one sentence ("" without both)."""
    scan = record.get("scan") or {}
    before, after = scan.get("before"), scan.get("after")
    if not before or not after:
        return f" The difficulty scan could not run: {scan['error']}" if scan.get("error") else ""
    from ..scan import MIXED, NEVER_SOLVED

    share = lambda s, b: f"{100 * s['shares'][b]:.0f} %"  # noqa: E731
    formats = "".join(f"; `{b['looks_for']}` written by {b['matched']} of {b['completions']} completions → {a['matched']} of "
                      f"{a['completions']}" for b, a in zip(before["formats"], after["formats"]) if b.get("completions"))
    trained = " (the warm-up's pairs came from the training rows: most of these among them)" \
        if record.get("source") == "answer_column" else ""
    return (f" The difficulty scan of {before['prompts']} training prompts{trained}, {before['k']} completions each: "
            f"never solved {share(before, NEVER_SOLVED)} → {share(after, NEVER_SOLVED)}, mixed "
            f"{share(before, MIXED)} → {share(after, MIXED)}{formats}.")


def read_record(run_dir: str | Path) -> dict | None:
    return runs.read_json(Path(run_dir) / WARMUP_DIR / RECORD_FILE)

"""Where the app keeps what a person made outside runs: the drafts of the form and the reward code, uploads.

Everything lives under RUNS/.studio (no status.json inside, so it is never listed as a run). The form's draft
(DRAFT_FORM) holds every field as the page showed it, saved on every change, so a reload shows exactly that: a config
(DRAFT_CONFIG, written at Start) cannot hold what only the page has, such as an answer column no ticked reward reads
yet, the weights of unticked builtins, the preset menu's choice or the data's columns.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import runs

DRAFT_CONFIG = "draft-config.yaml"
DRAFT_FORM = "draft-form.json"  # the form as the page showed it: every field but the code, the preset menu, the data's columns
DRAFT_REWARDS = "draft-rewards.py"
DRAFT_PINNED = "draft-pinned.json"  # the pinned examples, kept with the reward code
REPLACED_CODE = "replaced-rewards.py"  # the editor's code that a library reward or a rule reward replaced (*Use*)
DRAFT_JUDGE = "draft-judge.json"  # the Rewards tab's judge section (never an API key: only its variable's name)
DRAFT_RULES = "draft-rules.json"  # the rule builder's blocks, how they combine and the reward's name
DRAFT_PAGE = "draft-page.json"  # the tab the page showed last
# The ticks and weights of the person's own reward functions, by name, written only on their own edits of the table: a
# reload's first look at the code can see the table before the load's values reach it, and must not take that for a
# choice (the draft form is saved on every change, so it could not tell the two apart).
DRAFT_FUNCTIONS = "draft-functions.json"
DRAFT_PREVIEW = "draft-preview.json"  # the Rewards tab preview's own fields: prompts, typed prompt and answer, pasted completions
# The results that took a run of their own (freshness.Outdated.keep) are kept as result-ELEM_ID.json beside these.


def plain(value):
    """`value` as JSON can hold it: a table (a pandas frame, or Gradio's {"headers", "data"}) as its list of rows,
    numpy numbers as Python numbers."""
    if hasattr(value, "values") and hasattr(value, "columns"):  # a pandas frame, as a Dataframe's value arrives
        return plain(value.values.tolist())
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return value.item()
    return value


class Workspace:
    def __init__(self, runs_dir: Path):
        self.runs_dir = runs_dir
        self.dir = runs_dir / ".studio"
        self.uploads = self.dir / "uploads"

    def read(self, name: str) -> str | None:
        path = self.dir / name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write(self, name: str, content: str) -> Path:
        """Replace the file whole (runs.write_text_atomic: a crash mid-write leaves the previous draft whole)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / name
        runs.write_text_atomic(path, content)
        return path

    def read_json(self, name: str) -> dict | None:
        """A JSON draft as a dict; None when there is none or it cannot be read (an unreadable draft must not lock the
        person out: the page then shows what it would show without one)."""
        try:
            found = json.loads(self.read(name) or "null")
        except ValueError:
            return None
        return found if isinstance(found, dict) else None

    def write_json(self, name: str, content: dict) -> Path:
        return self.write(name, json.dumps(plain(content), default=str))

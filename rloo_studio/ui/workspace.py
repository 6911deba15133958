"""Where the app keeps what a person made outside runs: the drafts of the form and the reward code, uploads.

Everything lives under RUNS/.studio (no status.json inside, so it is never listed as a run).
"""

from __future__ import annotations

from pathlib import Path

from .. import runs

DRAFT_CONFIG = "draft-config.yaml"
DRAFT_REWARDS = "draft-rewards.py"
DRAFT_PINNED = "draft-pinned.json"  # the pinned examples, kept with the reward code
DRAFT_JUDGE = "draft-judge.json"  # the Rewards tab's judge section (never an API key: only its variable's name)


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

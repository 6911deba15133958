"""Where the app keeps what a person made outside runs: the drafts of the form and the reward code, uploads.

Everything lives under RUNS/.studio (no status.json inside, so it is never listed as a run).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DRAFT_CONFIG = "draft-config.yaml"
DRAFT_REWARDS = "draft-rewards.py"
DRAFT_PINNED = "draft-pinned.json"  # the pinned examples, kept with the reward code


class Workspace:
    def __init__(self, runs_dir: Path):
        self.runs_dir = runs_dir
        self.dir = runs_dir / ".studio"
        self.uploads = self.dir / "uploads"

    def read(self, name: str) -> str | None:
        path = self.dir / name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write(self, name: str, content: str) -> Path:
        """Replace the file whole. Each write has its own temporary file: two writes at once (the editor's
        autosave and *Check the code*) must not move each other's file away."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / name
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(content)
            os.replace(tmp, path)  # a crash mid-write leaves the previous draft whole
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

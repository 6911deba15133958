"""Running an `rloo-studio` command for a tab: its stderr lines go to a callback as they come, its stdout is collected.

Tabs run commands with `--events` and move their progress bars by the JSON event lines only (`event_of`): the
other stderr lines are the libraries' warnings and logs, not progress.

Both pipes are read as the command writes (`procs.Child`): reading one to its end before the other would
stall both processes as soon as the command's answer (a JSON document, e.g. eval's per-prompt records) outgrows the
pipe's buffer (64 KiB on Linux). The command runs to its end even if the page that asked for it is closed (an
evaluation or export is finished and saved, not lost); an exception in the caller's callback (called on the thread
that reads the pipes) kills it and everything it started. Nothing here loads a model.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from ..procs import Child


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr_tail: list[str]

    def error_text(self, fallback: str) -> str:
        """The command's `error: …` message (what, why, what to do), or `fallback`."""
        return "\n".join(self.stderr_tail).split("error:", 1)[-1].strip() or fallback


def event_of(line: str) -> dict | None:
    """The progress event an `--events` line holds (a JSON object with an "event" key); None for any other line."""
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "event" in event else None


def run_cli(args: list[str], on_line=lambda line: None, cwd: str | None = None, tail_lines: int = 40) -> Finished:
    """Run `python -m rloo_studio.cli ARGS`; call `on_line` for each stderr line; return code, stdout and stderr's tail."""
    return run_command([sys.executable, "-m", "rloo_studio.cli", *args], on_line, cwd, tail_lines)


def run_command(argv: list[str], on_line=lambda line: None, cwd: str | None = None, tail_lines: int = 40) -> Finished:
    out: list[str] = []
    tail: list[str] = []

    def stderr_line(line: str) -> None:
        tail.append(line)
        del tail[:-tail_lines]
        on_line(line)

    child = Child(argv, stdout=out.append, stderr=stderr_line, cwd=cwd)
    code = child.wait()
    return Finished(code, "\n".join(out), tail)

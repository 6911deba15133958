"""Running an `rloo-studio` command for a tab: its stderr lines go to a callback as they come, its stdout is collected.

Tabs run commands with `--events` and move their progress bars by the JSON event lines only (`event_of`): the
other stderr lines are the libraries' warnings and logs, not progress.

stdout is read by a second thread while stderr is read line by line: reading one pipe to its end
before the other would stall both processes as soon as the command's answer (a JSON document,
e.g. eval's per-prompt records) outgrows the pipe's buffer (64 KiB on Linux). The command runs to
its end even if the page that asked for it is closed (an evaluation or export is finished and
saved, not lost); an exception in the caller's callback kills it. Nothing here loads a model.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from dataclasses import dataclass

from ..procs import utf8_env


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
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, encoding="utf-8", errors="replace", cwd=cwd,
                            env=utf8_env())
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), name="cli-stdout", daemon=True)
    reader.start()
    tail: list[str] = []
    try:
        for line in proc.stderr:
            line = line.rstrip("\n")
            tail = (tail + [line])[-tail_lines:]
            on_line(line)
        proc.wait()
        reader.join()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return Finished(proc.returncode, "".join(chunks), tail)

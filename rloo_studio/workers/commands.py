"""Running an `rloo-studio` command for a tab: its stderr lines go to a callback as they come, its stdout is collected.

Tabs run commands with `--events` and move their progress bars by the JSON event lines only (`event_of`, which reads
each as the command's protocol.CommandEvent): the other stderr lines are the libraries' warnings and logs, not progress.

Both pipes are read as the command writes (`procs.Child`): reading one to its end before the other would
stall both processes as soon as the command's answer (a JSON document, e.g. eval's per-prompt records) outgrows the
pipe's buffer (64 KiB on Linux). The command runs to its end even if the page that asked for it is closed (an
evaluation or export is finished and saved, not lost); an exception in the caller's callback (called on the thread
that reads the pipes) kills it and everything it started, and a StudioError from it is the command's failure
(`Finished.error_text`). Nothing here loads a model.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from ..errors import StudioError
from ..procs import Child
from ..protocol import CommandEvent, command_event


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr_tail: list[str]

    def error_text(self, fallback: str) -> str:
        """The command's `error: …` message (what, why, what to do), or `fallback`."""
        return "\n".join(self.stderr_tail).split("error:", 1)[-1].strip() or fallback


def event_of(line: str, command: str) -> CommandEvent | None:
    """The progress event a line of `rloo-studio COMMAND --events` holds (a JSON object with an "event" key), as its
    type; None for any other line. An event line this app cannot read raises StudioError: the command comes from the
    same install, so it means a defect, and a bar moved by a guess would say a wrong thing."""
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or "event" not in data:
        return None
    try:
        return command_event(command, data)
    except ValueError as exc:
        raise StudioError(f"`rloo-studio {command}` printed a progress event this app cannot read ({exc})",
                          "the command and the app come from different versions of RLOO Studio",
                          "restart the app, so that both come from one installation") from None


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
    try:
        code = child.wait()
    except StudioError as exc:
        # The caller refused a line (an event it cannot read) and the command was ended for it: that is how the
        # command failed, said as a command says it, so the tab reports a failed command, not one never started.
        return Finished(child.returncode if child.returncode not in (None, 0) else 1, "\n".join(out),
                        tail + [f"error: {exc.message()}"])
    return Finished(code, "\n".join(out), tail)

"""What a `rloo-studio` command says on stderr and how it ends: its progress events (`progress_printer`: a terminal
line each, or with `--events` one JSON object a line, as protocol.CommandEvent writes them), its exit codes (0 done,
1 a failed run, 2 bad input) and the one message for a StudioError (`fail`) or an error no check foresaw
(`fail_unexpected`), never a bare traceback."""

from __future__ import annotations

import json
import os
import sys
from typing import Callable

from ..errors import StudioError
from ..protocol import CommandEvent

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def progress_printer(events: bool) -> Callable[[CommandEvent], None]:
    """Prints each progress event on stderr, even with --json (stdout then holds only the JSON document): its terminal
    line, or with `events` (--events) its JSON form, which is what the app reads (workers.commands.event_of)."""
    def progress(event: CommandEvent) -> None:
        print(json.dumps(event.to_dict()) if events else event.line(), file=sys.stderr, flush=True)
    return progress


def fail(exc: StudioError) -> int:
    # Starts on a fresh line: a progress bar may have left the cursor mid-line.
    print(f"\nerror: {exc.message()}", file=sys.stderr)
    return EXIT_BAD_INPUT


def fail_unexpected(doing: str, exc: Exception, why: str, fix: str) -> int:
    """An error no check foresaw: its first line, the likely why and what to do; the traceback with RLOO_STUDIO_DEBUG=1."""
    if os.environ.get("RLOO_STUDIO_DEBUG"):
        raise exc
    first = str(exc).splitlines()[0] if str(exc) else ""
    print(f"\nerror: {doing} failed: {type(exc).__name__}: {first}\nWhy: {why}.\n"
          f"What to do: {fix}; set RLOO_STUDIO_DEBUG=1 for the traceback.", file=sys.stderr)
    return EXIT_FAILED

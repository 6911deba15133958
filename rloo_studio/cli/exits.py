"""How every `rloo-studio` command ends: its exit codes (0 done, 1 a failed run, 2 bad input) and the one message on
stderr for a StudioError (`fail`) or an error no check foresaw (`fail_unexpected`), never a bare traceback."""

from __future__ import annotations

import os
import sys

from ..errors import StudioError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


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

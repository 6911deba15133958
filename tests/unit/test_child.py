"""Running a command for a tab: a large answer on stdout must not stall it while stderr is streamed."""

from __future__ import annotations

import sys

from rloo_studio.workers.commands import run_command


def test_a_megabyte_of_stdout_and_many_stderr_lines_come_through_without_stalling():
    code = ("import sys\n"
            "for i in range(3000):\n"
            "    print(f'[eval] base {i}/3000', file=sys.stderr, flush=True)\n"
            "sys.stdout.write('x' * 2_000_000)\n"
            "print('error: the last line', file=sys.stderr)\n")
    seen = []
    finished = run_command([sys.executable, "-c", code], seen.append, tail_lines=5)
    assert finished.returncode == 0
    assert len(finished.stdout) == 2_000_000  # far beyond a pipe's 64 KiB buffer
    assert len(seen) == 3001 and seen[0] == "[eval] base 0/3000"
    assert finished.stderr_tail[-1] == "error: the last line" and len(finished.stderr_tail) == 5
    assert finished.error_text("fallback") == "the last line"


def test_a_failing_command_reports_its_code_and_falls_back_to_a_plain_message():
    finished = run_command([sys.executable, "-c", "raise SystemExit(3)"])
    assert finished.returncode == 3 and finished.error_text("it failed (exit code 3)") == "it failed (exit code 3)"

"""An error no check foresaw ends an eval or export with what, why and what to do, not a traceback."""

from __future__ import annotations

import pytest

from rloo_studio.cli.exits import EXIT_FAILED, fail_unexpected


def test_the_message_has_the_first_line_the_why_and_the_fix(capsys, monkeypatch):
    monkeypatch.delenv("RLOO_STUDIO_DEBUG", raising=False)
    code = fail_unexpected("export", OSError("No space left on device\nmore detail"), "the files could not be written",
                            "free space")
    assert code == EXIT_FAILED
    assert capsys.readouterr().err == ("\nerror: export failed: OSError: No space left on device\n"
                                       "Why: the files could not be written.\n"
                                       "What to do: free space; set RLOO_STUDIO_DEBUG=1 for the traceback.\n")


def test_debug_shows_the_traceback_instead(monkeypatch):
    monkeypatch.setenv("RLOO_STUDIO_DEBUG", "1")
    with pytest.raises(OSError):
        fail_unexpected("export", OSError("disk"), "why", "fix")

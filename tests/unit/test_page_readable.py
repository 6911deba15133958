"""What the page shows reads as the page's own words: no terminal codes in a log, integer steps on chart axes, no
config keys or library words in the messages the page builds (the command line keeps config words)."""

from __future__ import annotations

from rloo_studio.ui import run_view


def test_the_log_has_no_terminal_codes():
    """A log line in the page once showed `\\x1b[A` and a redrawn progress bar: cursor moves, line erases and colours
    are terminal instructions, not text."""
    raw = ("\x1b[32m[rloo-studio]\x1b[0m loading the model\n"
           "Loading weights:  50%|\x1b[34m█████     \x1b[0m| 1/2 [00:01<00:01,  1.2s/it]\x1b[A\x1b[2K\r"
           "Loading weights: 100%|██████████| 2/2 [00:02<00:00,  1.1s/it]\x1b[A\n"
           "\x1b]0;title\x07step one done\x1b[K\n")
    shown = run_view.readable_log(raw)
    assert "\x1b" not in shown and "\x07" not in shown and "[A" not in shown and "it]" not in shown, repr(shown)
    assert shown.splitlines() == ["[rloo-studio] loading the model", "Loading weights:", "step one done"], repr(shown)

"""The training worker's own lines ([rloo-studio] …) are written whole: the ranks of a multi-process run share one
pipe, and with unbuffered output (PYTHONUNBUFFERED, as every child gets) `print` writes the text and its newline as two
writes, so two ranks printing at once gave "rank 1 … batch of 8[rloo-studio] rank 0 … batch of 8" on one line of
train.log (tests/engine/test_multiprocess.py caught it once). A line under PIPE_BUF bytes written in one call is not
split by another process's write."""

from __future__ import annotations

import io

from rloo_studio.engine import train


class _Writes(io.TextIOBase):
    """An unbuffered stream that records each write call."""

    def __init__(self):
        self.calls: list[str] = []

    def write(self, text: str) -> int:
        self.calls.append(text)
        return len(text)


def test_print_writes_the_newline_apart_which_is_why_lines_are_said_whole():
    stream = _Writes()
    print("[rloo-studio] rank 1 of 2", file=stream, flush=True)
    assert stream.calls == ["[rloo-studio] rank 1 of 2", "\n"]


def test_a_workers_line_is_one_write(monkeypatch):
    stream = _Writes()
    monkeypatch.setattr(train.sys, "stdout", stream)
    train.worker_line("rank 1 of 2 (gloo): 4 completions per step of a generation batch of 8")
    assert stream.calls == ["[rloo-studio] rank 1 of 2 (gloo): 4 completions per step of a generation batch of 8\n"]


def test_the_worker_says_its_lines_rather_than_printing_them():
    import inspect

    # The one print left is to the original stderr, when a failure could not be recorded.
    printed = [line for line in inspect.getsource(train).splitlines() if 'print(f"[rloo-studio]' in line]
    assert all("sys.__stderr__" in line for line in printed), printed

"""engine/allocator.py: the training process's glibc malloc keeps freed memory for the next step.

Checked on glibc itself, in fresh processes: a large block (64 MiB, far above glibc's default mmap threshold) comes
from the heap instead of a mapping of its own, and the heap keeps it after it is freed, so the next step reuses those
pages instead of faulting them in again."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys

import pytest

from helpers import ROOT

PROBE = r"""
import ctypes, json, sys
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                                               "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
applied = {}
if sys.argv[1] == "on":
    from rloo_studio.engine.allocator import keep_freed_memory
    applied = keep_freed_memory()
before = libc.mallinfo2()
block = libc.malloc(64 << 20)
held = libc.mallinfo2()
libc.free(block)
after = libc.mallinfo2()
print(json.dumps({"applied": applied, "new_mappings": held.hblks - before.hblks, "heap_kept_mib": after.arena >> 20}))
"""


def _probe(mode: str) -> dict:
    result = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="needs glibc 2.33 or later (mallinfo2)")
def test_freed_blocks_stay_in_the_heap_for_the_next_step():
    plain, kept = _probe("off"), _probe("on")
    assert plain == {"applied": {}, "new_mappings": 1, "heap_kept_mib": plain["heap_kept_mib"]} and plain["heap_kept_mib"] < 64
    assert kept["applied"] == {"mmap_max": 0, "trim_threshold": 1 << 30, "top_pad": 256 << 20}
    assert kept["new_mappings"] == 0 and kept["heap_kept_mib"] >= 64

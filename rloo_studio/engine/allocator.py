"""The training process's memory allocator settings: glibc's malloc keeps freed memory for the next step.

A CPU training step allocates and frees the same large tensors (activations, logits, gradients) every step. By
default glibc serves each large block with its own mmap and hands it back to the system when it is freed, and trims
the heap's top, so the next step faults every page in again. With mmap off for malloc and a large trim threshold
and top pad, freed blocks stay in the heap and are reused. A profile of `cpu-small-real` on 2 idle cores measured
200-330 thousand page faults a step before and ~4 thousand after, steps x 0.82-0.88 in time, and a lower peak
(7.75 -> 5.6 GB); benchmarks/cpu_roofline.py measures it together with the other changes. These are the settings MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_ and
MALLOC_TOP_PAD_ give, set here with mallopt(3) in the worker itself so that a run started from a terminal gets them
as one the app starts does. Elsewhere than glibc (macOS, Windows, musl) nothing is changed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# mallopt(3) parameter numbers (glibc's malloc.h) and the values set.
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4
SETTINGS = {M_MMAP_MAX: 0, M_TRIM_THRESHOLD: 1 << 30, M_TOP_PAD: 256 << 20}
NAMES = {M_MMAP_MAX: "mmap_max", M_TRIM_THRESHOLD: "trim_threshold", M_TOP_PAD: "top_pad"}


def keep_freed_memory() -> dict[str, int]:
    """Apply SETTINGS with glibc's mallopt; returns the ones glibc accepted, by name ({} where there is no glibc)."""
    if not sys.platform.startswith("linux"):
        return {}
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # glibc only: musl has mallopt as a no-op stub
    except (OSError, AttributeError):
        return {}
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return {NAMES[param]: value for param, value in SETTINGS.items() if mallopt(param, value) == 1}

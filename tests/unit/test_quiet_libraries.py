"""What a library prints that the person can do nothing about is kept off their terminal and log: bitsandbytes, on a
CPU with AVX-512 BF16, warned at import that "kernels-community" could not be loaded (a package the app does not use;
bitsandbytes falls back to its own kernel) — under `rloo-studio eval`, where it read as a failure (a walk)."""
import subprocess
import sys

import pytest

FOUND_ON = "avx512_bf16"  # the CPUs where bitsandbytes tries that kernel


def _cpu_has(flag: str) -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return any(flag in line.split() for line in f if line.startswith("flags"))
    except OSError:
        return False


@pytest.mark.skipif(not _cpu_has(FOUND_ON), reason="bitsandbytes warns only on CPUs with AVX-512 BF16")
def test_bitsandbytes_says_nothing_of_a_kernel_package_the_app_does_not_use():
    code = "from rloo_studio.engine.stack import _prepare_environment; _prepare_environment(); import bitsandbytes"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gemm_4bit_forward" not in done.stderr, done.stderr[-2000:]

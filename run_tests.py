"""Set up the environment (as launch.py does, plus test tools) and run the test suite.

    python run_tests.py [pytest arguments]      e.g. python run_tests.py -m "not slow"
    python run_tests.py -n 0 tests/unit         one process (the default is two, see below)
    python run_tests.py --print-install-plan    which torch build this machine gets, and why (installs nothing)

The tests never reach a model hub: tiny models are built locally, and the real-model tier
(tests/realmodel) builds its small instruct model once from a package on the Python package index
(cached under ~/.cache/rloo-studio/).
"""

import os
import sys

from bootstrap import setup_from_command_line

# Two test processes (pytest-xdist), each test file kept in one: most of the suite's time is spent
# waiting for child processes (training workers, the app, a browser) to import their libraries, so
# two processes finish sooner even on two cores. More would mostly add memory: each holds torch.
TEST_PROCESSES = 2


def with_parallel_default(args: list[str]) -> list[str]:
    """`args` plus `-n 2 --dist loadfile`, unless the caller chose the number of processes."""
    chosen = any(a in ("-n", "--numprocesses") or a.startswith(("-n", "--numprocesses=")) for a in args)
    if chosen or (os.cpu_count() or 1) < 2:
        return args
    # --no-loadscope-reorder: keep the collection's order (conftest.py starts the longest files first).
    return ["-n", str(TEST_PROCESSES), "--dist", "loadfile", "--no-loadscope-reorder", *args]


def parallel(args: list[str]) -> bool:
    """Whether pytest will run more than one test process with these arguments."""
    for i, a in enumerate(args):
        value = args[i + 1] if a in ("-n", "--numprocesses") and i + 1 < len(args) else \
            a.split("=", 1)[1] if a.startswith("--numprocesses=") else a[2:] if a.startswith("-n") and len(a) > 2 else None
        if value is not None:
            return value not in ("0", "1")
    return False


if __name__ == "__main__":
    args = setup_from_command_line(extras="test")
    # Offline and quiet, as the tests promise; set before anything imports huggingface_hub or gradio.
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                      HF_HUB_DISABLE_TELEMETRY="1", GRADIO_ANALYTICS_ENABLED="False")
    import pytest

    # The slowest 40 tests at the end of every log, so a test that grows slow shows in CI.
    args = with_parallel_default(["--durations=40", *(args or ["-q"])])
    if parallel(args):
        # One torch thread per model process: two test processes each starting model processes with
        # torch's default (a thread per core) put more busy threads than cores, and torch's CPU
        # threads wait for each other by spinning. Measured on a loaded 2-core machine, two demo
        # trainings at once: ~80 s a step with 2 threads each, ~12 s with 1.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(pytest.main(args))

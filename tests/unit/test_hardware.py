"""Hardware detection: the probe runs in a child process; the summary reads well for GPUs and for the CPU."""

from __future__ import annotations

import json
import subprocess
import sys

from rloo_studio.hardware import Gpu, Hardware, detect


def test_detect_in_a_child_process_without_importing_torch_here():
    # Checked in a fresh interpreter: this test process may already hold torch from earlier tests.
    code = ("import json, sys; from rloo_studio.hardware import detect; hw = detect(); "
            "print(json.dumps({'torch_here': 'torch' in sys.modules, 'torch': hw.torch}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["torch_here"] is False  # the probe imported torch in its own process, not in the caller
    assert seen["torch"]  # and the probe really ran torch there
    hw = detect()
    assert hw.cpu_cores >= 1 and hw.ram_gb and hw.torch
    if not hw.gpus:  # this machine (CI) has none
        assert "no CUDA GPU found" in hw.summary()


def test_summary_lists_every_gpu_with_memory_and_bf16():
    hw = Hardware(gpus=[Gpu(0, "NVIDIA GeForce RTX 4090", 23.6, 22.9, "8.9", True), Gpu(1, "Tesla T4", 14.6, None, "7.5", False)],
                  cpu_cores=16, ram_gb=64.0)
    lines = hw.summary().splitlines()
    assert lines[0] == "GPU 0: NVIDIA GeForce RTX 4090 — 23.6 GB, 22.9 GB free, compute 8.9, bf16 yes"
    assert lines[1] == "GPU 1: Tesla T4 — 14.6 GB, compute 7.5, bf16 no (fp16 is used)"
    assert lines[2] == "CPU: 16 cores, 64 GB RAM"
    assert Hardware.from_dict(hw.to_dict()) == hw


def test_a_failed_probe_is_described_not_raised(monkeypatch):
    import subprocess

    def broken(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], 1)

    monkeypatch.setattr(subprocess, "run", broken)
    hw = detect(timeout_s=1)
    assert hw.gpus == [] and "took over 1 s" in hw.error and "GPU detection failed" in hw.summary()

"""Hardware detection: the probe runs in a child process; the summary reads well for GPUs and for the CPU."""

from __future__ import annotations

import json
import subprocess
import sys

from rloo_studio.machine.hardware import Gpu, Hardware, detect


def test_detect_in_a_child_process_without_importing_torch_here():
    # Checked in a fresh interpreter: this test process may already hold torch from earlier tests.
    code = ("import json, sys; from rloo_studio.machine.hardware import detect; hw = detect(); "
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
    assert lines[2] == "CPU: 16 cores, 64.0 GiB RAM"
    # As the memory estimate says it: "24 GiB RAM" beside "23.5 GiB" read as two different machines (a walk).
    assert Hardware(gpus=[], cpu_cores=2, ram_gb=23.47).summary().startswith("CPU: 2 cores, 23.5 GiB RAM")
    assert Hardware.from_dict(hw.to_dict()) == hw


def test_a_failed_probe_is_described_not_raised(monkeypatch):
    from rloo_studio.machine import hardware
    from rloo_studio.procs import ChildAnswer

    monkeypatch.setattr(hardware, "json_child", lambda *args, **kwargs: ChildAnswer(timed_out=True))  # the probe hung
    hw = detect(timeout_s=1)
    assert hw.gpus == [] and "took over 1 s" in hw.error and "GPU detection failed" in hw.summary()


def _stand_in_nvidia_smi(folder, line: str, cap: str) -> None:
    """Prints what the real tool prints for the two queries the probe and the install plan make."""
    import stat

    tool = folder / "nvidia-smi"
    tool.write_text(f'#!/bin/sh\ncase "$1" in\n  --query-gpu=compute_cap) echo "{cap}" ;;\n  *) echo "{line}" ;;\nesac\n',
                    encoding="utf-8")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


def test_self_check_a_gpu_the_driver_lists_but_torch_cannot_use_is_a_problem_with_the_fix(tmp_path, monkeypatch):
    """A stand-in nvidia-smi and this machine's torch (which has no usable CUDA here) → the message."""
    import os

    _stand_in_nvidia_smi(tmp_path, "NVIDIA GeForce RTX 3090, 560.35.03, 24576 MiB", "8.6")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("RLOO_TORCH_INDEX_URL", raising=False)
    hw = detect()
    if hw.gpus:
        import pytest

        pytest.skip("this machine has a usable CUDA GPU")
    assert hw.driver_gpus == ["NVIDIA GeForce RTX 3090, 560.35.03, 24576 MiB"]
    assert hw.problem and "NVIDIA GeForce RTX 3090" in hw.problem and "cannot use it" in hw.problem
    # why (CPU-only wheel, or a CUDA build the driver is too old for) and the exact command from the install plan
    assert ("CPU-only build" in hw.problem) or (f"built for CUDA {hw.cuda}" in hw.problem)
    assert "-m pip install --force-reinstall torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cu126" in hw.problem
    assert hw.summary().startswith("⛔ ")  # what the Model & hardware tab shows first

    # The setup's self-check stops on it (exit 1, the same message).
    import subprocess

    result = subprocess.run([sys.executable, "-m", "rloo_studio.machine.hardware", "--self-check"], capture_output=True, text=True)
    assert result.returncode == 1 and "cannot use it" in result.stdout


def test_self_check_passes_without_an_nvidia_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi anywhere
    import subprocess

    result = subprocess.run([sys.executable, "-m", "rloo_studio.machine.hardware", "--self-check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_gpu_problem_names_a_cpu_only_wheel():
    from rloo_studio.machine.hardware import gpu_problem

    text = gpu_problem(["NVIDIA GeForce RTX 4070, 581.57, 12282 MiB"], "2.14.1+cpu", None, False, python="python")
    assert "CPU-only build" in text and "What to do:" in text
    assert gpu_problem(["NVIDIA GeForce RTX 4070, 581.57, 12282 MiB"], "2.14.1", "13.0", True) is None
    assert gpu_problem([], "2.14.1+cpu", None, False) is None

"""The install plan (bootstrap.py): stand-in `nvidia-smi`/`rocm-smi` on PATH print what the real tools
print; the platform is patched. Nothing is installed and no index is reached (the reachability probe is
replaced), except `test_cpu_index_probe_falls_back_quickly`, which probes an address that refuses."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import bootstrap  # noqa: E402

SMI_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.")
ROCM_SMI = """

============================ ROCm System Management Interface ============================
====================================== Product Info ======================================
GPU[0]\t\t: Card Series: \t\tNavi31 [Radeon RX 7900 XTX]
GPU[0]\t\t: Card Model: \t\t0x744c
GPU[0]\t\t: Card Vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]
GPU[0]\t\t: Card SKU: \t\tD7070100
==========================================================================================
================================== End of ROCm SMI Log ===================================
"""


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)


def nvidia_smi(folder: Path, gpus: list[tuple[str, str, str, str]]) -> None:
    """A stand-in answering the two queries the plan makes, in nvidia-smi's csv,noheader format."""
    info = "\\n".join(f"{name}, {driver}, {mem}" for name, driver, mem, _ in gpus)
    caps = "\\n".join(cap for *_, cap in gpus)
    _tool(folder, "nvidia-smi", f'case "$1" in\n  --query-gpu=compute_cap) printf "{caps}\\n" ;;\n'
                                f'  *) printf "{info}\\n" ;;\nesac\n')


@pytest.fixture
def machine_env(tmp_path, monkeypatch):
    """PATH holds only the stand-ins (and /bin for sh); Linux x86_64 unless a test patches it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/bin{os.pathsep}/usr/bin")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.delenv(bootstrap.TORCH_INDEX_ENV, raising=False)
    monkeypatch.delenv("WSL_DISTRO_NAME", raising=False)
    monkeypatch.setattr(bootstrap.platform, "system", lambda: "Linux")
    monkeypatch.setattr(bootstrap.platform, "release", lambda: "6.8.0-45-generic")
    monkeypatch.setattr(bootstrap.platform, "machine", lambda: "x86_64")
    if any(Path(d, "nvidia-smi").exists() or Path(d, "rocm-smi").exists() for d in ("/bin", "/usr/bin")):
        pytest.skip("this machine has a real nvidia-smi/rocm-smi in /bin or /usr/bin")
    return bin_dir


def plan(reachable: bool = False, override: str | None = None) -> bootstrap.InstallPlan:
    return bootstrap.plan_install(bootstrap.detect_machine(), override, reachable=lambda url: reachable)


@pytest.mark.parametrize("driver, cap, build", [
    ("535.183.01", "8.6", "cu126"),   # CUDA 12.x family (>= 525), not 13.x (>= 580)
    ("560.35.03", "8.9", "cu126"),
    ("575.64.03", "8.9", "cu126"),
    ("590.44.01", "12.0", "cu130"),   # 13.x family, but below 13.2's own driver (595.58)
    ("595.71.05", "12.0", "cu132"),
])
def test_linux_driver_picks_the_newest_cuda_build_it_supports(machine_env, driver, cap, build):
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 4090", driver, "24564 MiB", cap)])
    p = plan()
    assert p.error is None
    assert (p.build, p.index) == (build, f"https://download.pytorch.org/whl/{build}")
    assert p.pip_args() == ["torch==2.14.1", "torchvision==0.29.1", "--index-url", f"https://download.pytorch.org/whl/{build}"]
    text = p.describe()
    assert f"NVIDIA driver {driver}" in text and build in text and "why:" in text


def test_driver_too_old_stops_with_found_minimum_and_how_to_update(machine_env):
    nvidia_smi(machine_env, [("NVIDIA GeForce GTX 1080", "470.256.02", "8192 MiB", "6.1")])
    p = plan()
    assert p.error and "470.256.02" in p.error and ">= 525" in p.error and "ubuntu-drivers" in p.error


def test_two_gpus_the_older_one_decides(machine_env):
    # A Pascal card (6.1) is only in the 12.6 build, even with a driver new enough for 13.x.
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 4090", "590.44.01", "24564 MiB", "8.9"),
                             ("NVIDIA GeForce GTX 1080 Ti", "590.44.01", "11264 MiB", "6.1")])
    p = plan()
    assert p.build == "cu126"
    assert "GPU 0:   NVIDIA GeForce RTX 4090" in p.describe() and "GPU 1:   NVIDIA GeForce GTX 1080 Ti" in p.describe()
    assert "compute capability 6.1" in p.why


def test_no_gpu_uses_the_cpu_index_when_it_answers(machine_env):
    p = plan(reachable=True)
    assert (p.build, p.index) == ("cpu", "https://download.pytorch.org/whl/cpu")


def test_no_gpu_and_cpu_index_unreachable_falls_back_to_the_default_index_and_says_so(machine_env):
    p = plan(reachable=False)
    assert (p.build, p.index) == ("default", None)
    assert p.pip_args() == ["torch==2.14.1", "torchvision==0.29.1"]  # exactly what installs from PyPI alone
    assert "did not answer" in p.why


def test_cpu_index_probe_falls_back_quickly():
    # A port nobody listens on refuses at once; the probe must not hang either way (bounded by a thread).
    start = time.monotonic()
    assert bootstrap.index_reachable("http://127.0.0.1:9/whl/cpu/", timeout_s=2) is False
    assert time.monotonic() - start < 10
    print("\n[install plan] the CPU index probe answered 'unreachable'; a machine without PyTorch's index "
          "installs torch from the default index (what CI exercises)")


def test_failing_nvidia_smi_stops_instead_of_a_silent_cpu_install(machine_env):
    _tool(machine_env, "nvidia-smi", f'echo "{SMI_FAILED}"\nexit 9\n')
    p = plan(reachable=True)
    assert p.error and "couldn't communicate with the NVIDIA driver" in p.error
    assert "RLOO_TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in p.error


def test_windows_gets_pytorchs_cuda_index_never_the_default_cpu_build(machine_env, monkeypatch):
    monkeypatch.setattr(bootstrap.platform, "system", lambda: "Windows")
    monkeypatch.setattr(bootstrap.platform, "machine", lambda: "AMD64")
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 4070", "581.57", "12282 MiB", "8.9")])
    p = plan()
    assert p.machine.system == "Windows"
    assert (p.build, p.index) == ("cu130", "https://download.pytorch.org/whl/cu130")
    assert any("triton-windows" in n for n in p.notes)


def test_wsl_is_recognised_and_uses_the_cuda_index(machine_env, monkeypatch):
    monkeypatch.setattr(bootstrap.platform, "release", lambda: "5.15.167.4-microsoft-standard-WSL2")
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 3060", "560.94", "12288 MiB", "8.6")])
    p = plan()
    assert p.machine.system == "WSL" and p.build == "cu126"
    assert any("Windows one" in n for n in p.notes)


def test_wsl_driver_too_old_says_to_update_it_on_windows(machine_env, monkeypatch):
    monkeypatch.setattr(bootstrap.platform, "release", lambda: "5.15.167.4-microsoft-standard-WSL2")
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 3060", "511.79", "12288 MiB", "8.6")])
    assert "on Windows (not inside WSL)" in plan().error


def test_macos_arm64_uses_the_default_index(machine_env, monkeypatch):
    monkeypatch.setattr(bootstrap.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(bootstrap.platform, "machine", lambda: "arm64")
    nvidia_smi(machine_env, [("should not be asked", "590.1", "1 MiB", "8.9")])
    p = plan(reachable=True)
    assert p.machine.system == "macOS" and (p.build, p.index) == ("default", None) and not p.machine.nvidia
    assert any("Apple silicon" in n for n in p.notes)


def test_amd_gpu_on_linux_gets_the_rocm_build(machine_env):
    _tool(machine_env, "rocm-smi", f"cat <<'END'\n{ROCM_SMI}\nEND\n")
    p = plan()
    assert p.machine.amd == ["Navi31 [Radeon RX 7900 XTX]"]
    assert p.index == f"https://download.pytorch.org/whl/{bootstrap.ROCM_TAG}"


@pytest.mark.parametrize("how", ["env", "flag"])
def test_override_wins_over_every_plan(machine_env, monkeypatch, how):
    nvidia_smi(machine_env, [("NVIDIA GeForce GTX 1080", "470.256.02", "8192 MiB", "6.1")])  # would stop
    url = "https://mirror.example/torch"
    if how == "env":
        monkeypatch.setenv(bootstrap.TORCH_INDEX_ENV, url)
        rest = []
    else:
        print_plan, rest = bootstrap.take_setup_flags(["--port", "7861", "--torch-index", url, "--print-install-plan"])
        assert print_plan and rest == ["--port", "7861"]
    p = bootstrap.current_plan()
    assert p.error is None and (p.build, p.index) == ("override", url)


def test_stamp_records_the_plan_and_a_changed_machine_replans(machine_env, tmp_path, monkeypatch):
    calls: list[tuple] = []
    monkeypatch.setattr(bootstrap, "_pip", lambda python, *args: calls.append(args))
    monkeypatch.setattr(bootstrap, "self_check", lambda python: None)
    monkeypatch.setattr(bootstrap, "index_reachable", lambda url, timeout_s=0: False)
    stamp = tmp_path / "stamp"
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 3090", "560.35.03", "24576 MiB", "8.6")])
    bootstrap.install(sys.executable, "", stamp)
    assert "cu126" in bootstrap.read_stamp(stamp)["plan"]
    assert not any("--force-reinstall" in c for c in calls)
    calls.clear()
    bootstrap.install(sys.executable, "", stamp)  # nothing changed: nothing installed
    assert calls == []
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 5090", "595.71.05", "32607 MiB", "12.0")])  # a new GPU
    bootstrap.install(sys.executable, "", stamp)
    torch_call = next(c for c in calls if "torch==2.14.1" in c)
    assert torch_call[0] == "--force-reinstall" and "https://download.pytorch.org/whl/cu132" in torch_call
    assert "cu132" in bootstrap.read_stamp(stamp)["plan"]


# The fast-generation environment (vLLM): offered only where its torch build (2.13.0, CUDA 13.0) and vLLM's wheel run.
@pytest.mark.parametrize("driver, cap, offered, why", [
    ("595.71.05", "9.0", True, "driver 595.71.05 and compute capability 9.0"),
    ("580.65.06", "8.9", True, "driver 580.65.06"),
    ("575.64.03", "8.9", False, "older than 580"),       # fine for training (cu126), too old for vLLM's torch
    ("590.44.01", "7.0", False, "7.0 is below 7.5"),     # Volta: CUDA 13 builds start at Turing
])
def test_fast_generation_is_offered_where_vllms_torch_build_runs(machine_env, driver, cap, offered, why):
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 4090", driver, "24564 MiB", cap)])
    fast = bootstrap.plan_fast_generation(bootstrap.detect_machine())
    assert fast.ok is offered and why in fast.why
    text = fast.describe()
    assert "not yet measured on a GPU" in text and "vLLM 0.31.0" in text
    assert ("--setup-fast-generation" in text) is offered


def test_fast_generation_is_never_offered_without_an_nvidia_gpu_or_on_native_windows_and_macos(machine_env, monkeypatch):
    assert not bootstrap.plan_fast_generation(bootstrap.detect_machine()).ok
    nvidia_smi(machine_env, [("NVIDIA GeForce RTX 4090", "595.71.05", "24564 MiB", "8.9")])
    monkeypatch.setattr(bootstrap.platform, "system", lambda: "Windows")
    windows = bootstrap.plan_fast_generation(bootstrap.detect_machine())
    assert not windows.ok and "WSL2" in windows.why
    monkeypatch.setattr(bootstrap.platform, "system", lambda: "Darwin")
    assert not bootstrap.plan_fast_generation(bootstrap.detect_machine()).ok


def test_the_fast_environment_is_the_one_the_app_starts_workers_from():
    from rloo_studio import paths
    assert bootstrap.FAST_VENV_DIR == paths.FAST_VENV_DIR
    assert bootstrap.FAST_PACKAGES == ["torch==2.13.0", "torchvision==0.28.0", "vllm==0.31.0"]

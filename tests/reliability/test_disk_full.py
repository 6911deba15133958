"""The disk fills up while a checkpoint is being saved: the run ends as failed with what, why and what to do,
the previous checkpoint stays intact and is the one resume uses (never the half-written one), and after space
is freed the resumed run finishes with every step logged exactly once.

The full disk is real where the test may mount file systems (as root on Linux): the run folder is a small
`tmpfs`, and once checkpoint-2 is saved a filler file takes all but a fraction of one checkpoint's size, so
the save of checkpoint-4 fails with the kernel's own ENOSPC. Where mounting is refused, a full disk is
simulated instead: a `sitecustomize.py` on the worker's PYTHONPATH (test-only, never shipped) makes the write
of one named checkpoint file store half its bytes and then fail as a full disk fails. The test prints which
of the two ran. Production code has no test hook.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from helpers import ROOT, assert_trained_with, popen_cli, run_cli
from rloo_studio import runs
from rloo_studio.engine.failures import disk_full_error

DISK_FULL_HOOK = '''
"""Test-only fault injection (tests/reliability/test_disk_full.py): the disk "fills up" while one file is written."""
import builtins, errno, importlib.abc, importlib.util, os, sys

TARGET = os.environ.get("RLOO_TEST_DISK_FULL_AT", "")  # a path suffix, e.g. checkpoint-4/trainer_state.json


def _hit(path):
    return bool(TARGET) and isinstance(path, (str, os.PathLike)) and os.fspath(path).replace(os.sep, "/").endswith(TARGET)


_open = builtins.open


class _FillsUp:
    """A file that takes half of what is written to it, then reports the disk full (as write(2) does)."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, data):
        self._fh.write(data[: len(data) // 2])
        self._fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self._fh.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()

    def __getattr__(self, name):
        return getattr(self._fh, name)


def _open_filling_up(file, mode="r", *args, **kwargs):
    fh = _open(file, mode, *args, **kwargs)
    return _FillsUp(fh) if _hit(file) and any(m in mode for m in "wax") else fh


builtins.open = _open_filling_up


class _PatchTorchSave(importlib.abc.MetaPathFinder):
    """Once torch is imported, its save() fails on the target like torch's writer fails on a full disk."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            save = module.save

            def failing_save(obj, f, *args, **kwargs):
                if _hit(f):
                    with _open(f, "wb") as fh:
                        fh.write(b"PK\\x03\\x04 half an archive")
                    raise RuntimeError("[enforce fail at inline_container.cc:664] . PytorchStreamWriter failed writing "
                                       "file data/0: file write failed")
                return save(obj, f, *args, **kwargs)

            module.save = failing_save

        spec.loader.exec_module = exec_and_patch
        return spec


if TARGET:
    sys.meta_path.insert(0, _PatchTorchSave())
'''

RLOO = {"max_steps": 6, "save_steps": 2, "num_generations": 4, "per_device_train_batch_size": 8,
        "max_completion_length": 16, "learning_rate": 1e-3, "beta": 0.0}


def _digest(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _mount_tmpfs(folder, size_mib: int) -> bool:
    """Mount a tmpfs of `size_mib` on `folder`; False where mounting is refused (not root, no privilege)."""
    if sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("mount"):
        return False
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(folder)], capture_output=True)
    return result.returncode == 0


def _free_bytes(folder) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


@pytest.mark.slow
def test_disk_full_while_saving_a_checkpoint_then_resume(workspace, tmp_path):
    config = workspace.write_config(rloo=RLOO)
    runs_root = workspace.path / "runs"
    runs_root.mkdir()
    run_dir = runs_root / "full"
    env = {**os.environ}
    real = _mount_tmpfs(runs_root, 64)
    print(f"\n[disk full] {'a real full tmpfs (ENOSPC from the kernel)' if real else 'SIMULATED: mounting was refused here'}")
    filler = runs_root / "filler.bin"
    try:
        cmd = ["train", str(config), "--run-dir", str(run_dir)]
        if real:
            proc = popen_cli(*cmd, cwd=workspace.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            first = run_dir / "checkpoints" / "checkpoint-2"
            deadline = time.time() + 600
            while time.time() < deadline and proc.poll() is None and not runs.checkpoint_complete(first):
                time.sleep(0.05)
            assert runs.checkpoint_complete(first), "checkpoint-2 was not saved in time"
            one_checkpoint = sum(p.stat().st_size for p in first.rglob("*") if p.is_file())
            # Leave a quarter of a checkpoint: room for the metrics of steps 3-4, not for checkpoint-4.
            with open(filler, "wb") as fh:
                fh.truncate(0)
                remaining = _free_bytes(runs_root) - one_checkpoint // 4
                block = b"\0" * 2**20
                while remaining > 0:
                    fh.write(block[: min(len(block), remaining)])
                    remaining -= len(block)
            stdout, stderr = proc.communicate(timeout=600)
            result = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
        else:
            hook = tmp_path / "disk-full-hook"
            hook.mkdir()
            (hook / "sitecustomize.py").write_text(DISK_FULL_HOOK)
            env.update(PYTHONPATH=f"{hook}:{ROOT}", RLOO_TEST_DISK_FULL_AT="checkpoints/checkpoint-4/trainer_state.json")
            result = run_cli(*cmd, cwd=workspace.path, timeout=600, env=env)  # (a fresh interpreter: PYTHONPATH differs)

        # Reported: one clear message (what, why, what to do), and the same in status.json.
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
        assert "error: the disk is full while saving checkpoint-4." in result.stderr
        assert f"free space on that disk (the half-written {run_dir / 'checkpoints' / 'checkpoint-4'} can be deleted" in result.stderr
        assert f"then resume with `rloo-studio train --resume {run_dir}`" in result.stderr
        status = runs.read_status(run_dir)
        assert status["state"] == "failed" and status["error"]["type"] == "DiskFull"
        assert status["error"]["what"] == "the disk is full while saving checkpoint-4"
        assert "checkpoint-2 is complete and is the one a resume continues from" in status["error"]["why"]
        assert "is free on the disk holding" in status["error"]["why"]

        # Nothing lost: checkpoint-2 is whole; the half-written checkpoint-4 is there but never chosen.
        half = run_dir / "checkpoints" / "checkpoint-4"
        assert half.is_dir() and not runs.checkpoint_complete(half)
        assert runs.last_checkpoint(run_dir) == (2, run_dir / "checkpoints" / "checkpoint-2")
        kept = run_dir / "checkpoints" / "checkpoint-2"
        assert json.loads((kept / "trainer_state.json").read_text())["global_step"] == 2
        assert {"adapter_model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"} <= {p.name for p in kept.iterdir()}
        before = _digest(kept)
        assert [m["step"] for m in runs.read_jsonl(run_dir / runs.METRICS_FILE)] == [1, 2, 3, 4]

        # Space freed: resume continues from checkpoint-2 and finishes, each step logged once.
        filler.unlink(missing_ok=True)
        env.pop("RLOO_TEST_DISK_FULL_AT", None)
        resumed = run_cli("train", "--resume", run_dir, cwd=workspace.path, timeout=600, env=env)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"resuming from {kept}" in resumed.stdout
        status = runs.read_status(run_dir)
        assert status["state"] == "finished" and status["resumed_from"] == 2 and status["step"] == 6 and status["error"] is None
        assert_trained_with(run_dir)
        assert [m["step"] for m in runs.read_jsonl(run_dir / runs.METRICS_FILE)] == list(range(1, 7))
        superseded = [m["step"] for m in runs.read_jsonl(run_dir / "metrics.superseded.jsonl")]
        assert superseded == [3, 4]  # trained again after the resume: set aside, not lost
        assert [s for s, _ in runs.checkpoints(run_dir)] == [2, 4, 6]  # checkpoint-4 was saved again, whole this time
        assert json.loads((half / "trainer_state.json").read_text())["global_step"] == 4
        assert _digest(kept) == before  # the resume read checkpoint-2 and left it as it was
        assert (run_dir / runs.ADAPTER_DIR / "adapter_model.safetensors").is_file()
    finally:
        if real:
            subprocess.run(["umount", "-l", str(runs_root)], capture_output=True)


def test_resume_skips_checkpoints_whose_save_was_cut_off(tmp_path):
    root = tmp_path / "checkpoints"
    for step, state in [(2, '{"global_step": 2}'), (4, '{"global_step": 4, "log_hist'), (6, None), (8, "")]:
        (root / f"checkpoint-{step}").mkdir(parents=True)
        (root / f"checkpoint-{step}" / "adapter_config.json").write_text("{}")
        (root / f"checkpoint-{step}" / "adapter_model.safetensors").write_bytes(b"weights")
        if state is not None:
            (root / f"checkpoint-{step}" / "trainer_state.json").write_text(state)
    assert runs.checkpoints(tmp_path) == [(2, root / "checkpoint-2")]  # truncated, missing and empty state: skipped
    (root / "checkpoint-4" / "trainer_state.json").write_text('{"global_step": 4}')  # saved again, whole
    assert runs.last_checkpoint(tmp_path) == (4, root / "checkpoint-4")


@pytest.mark.parametrize("exc", [
    OSError(errno.ENOSPC, "No space left on device", "trainer_state.json"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    RuntimeError("[enforce fail at inline_container.cc:664] . PytorchStreamWriter failed writing file data/0: file write failed"),
    Exception('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'),
])
def test_the_forms_a_full_disk_takes_are_recognised(exc):
    assert runs.is_disk_full(exc)
    wrapped = RuntimeError("saving failed")
    wrapped.__cause__ = exc
    assert runs.is_disk_full(wrapped)


@pytest.mark.parametrize("exc", [OSError(errno.EACCES, "Permission denied"), RuntimeError("CUDA error"), None])
def test_other_errors_are_not_taken_for_a_full_disk(exc):
    assert not runs.is_disk_full(exc)


def test_the_message_names_the_checkpoint_the_space_and_the_resume_command(tmp_path):
    good = tmp_path / "checkpoints" / "checkpoint-2"
    good.mkdir(parents=True)
    (good / "trainer_state.json").write_text('{"global_step": 2}')
    (good / "adapter_config.json").write_text("{}")  # complete: adapter weights and a whole trainer state
    (good / runs.ADAPTER_WEIGHT_FILES[0]).write_bytes(b"w")
    (good / "optimizer.pt").write_bytes(b"x" * 3 * 2**20)
    (tmp_path / "checkpoints" / "checkpoint-4").mkdir()
    err = disk_full_error(tmp_path, "saving checkpoint-4", "checkpoint-4")
    assert err.what == "the disk is full while saving checkpoint-4"
    assert "each checkpoint of this run takes about 3 MiB; checkpoint-2 is complete" in err.why
    assert err.fix == (f"free space on that disk (the half-written {tmp_path / 'checkpoints' / 'checkpoint-4'} can be deleted: "
                       "resume skips it), or keep fewer checkpoints with rloo.save_total_limit; "
                       f"then resume with `rloo-studio train --resume {tmp_path}`")

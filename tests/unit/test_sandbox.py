"""The reward sandbox: reward code in it has no network, writes only where it is allowed, never sees the app's
secrets, and training's calls of it give what calling it in the training process gives."""

from __future__ import annotations

import os
import sys

import pytest

from rloo_studio import sandbox
from rloo_studio.errors import RewardError
from rloo_studio.procs import run

needs_sandbox = pytest.mark.skipif(
    not sandbox.status().available and not os.environ.get("RLOO_STUDIO_REQUIRE_SANDBOX"),
    reason=f"no sandbox on this machine: {sandbox.status().note}")

PROBE = r'''
import os, socket, sys
import tempfile
folder, outside = sys.argv[1], sys.argv[2]
results = {}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2); results["network"] = "reached"
except OSError as exc:
    results["network"] = type(exc).__name__
for name, path in (("allowed", os.path.join(folder, "ok.txt")), ("outside", os.path.join(outside, "no.txt")),
                   ("tmp", os.path.join(tempfile.gettempdir(), "scratch.txt"))):
    try:
        open(path, "w").write("x"); results[name] = "written"
    except OSError as exc:
        results[name] = type(exc).__name__
results["token"] = os.environ.get("RLOO_STUDIO_TOKEN")
print(results)
'''


@needs_sandbox
def test_code_in_the_sandbox_has_no_network_writes_only_its_folder_and_sees_no_secret(tmp_path, monkeypatch):
    folder, outside, scratch = tmp_path / "run", tmp_path / "elsewhere", tmp_path / "scratch"
    for made in (folder, outside, scratch):
        made.mkdir()
    monkeypatch.setenv("RLOO_STUDIO_TOKEN", "secret-token-of-the-app")
    done = run([*sandbox.prefix([folder], tmpdir=scratch), sys.executable, "-c", PROBE, str(folder), str(outside)], timeout_s=60)
    assert done.returncode == 0, done.stderr
    found = eval(done.stdout.strip().splitlines()[-1])
    assert found["network"] != "reached" and found["outside"] != "written", found
    assert found["allowed"] == "written" and found["tmp"] == "written", found
    assert found["token"] is None
    assert not (outside / "no.txt").exists() and (folder / "ok.txt").exists() and (scratch / "scratch.txt").exists()


def test_without_bubblewrap_the_note_says_so_and_what_to_do(monkeypatch):
    monkeypatch.setattr(sandbox, "_status", None)
    monkeypatch.setenv(sandbox.BWRAP_ENV, "")
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox.sys, "platform", "linux")
    found = sandbox.status()
    assert not found.available and sandbox.prefix() == []
    assert "bubblewrap is not installed" in found.note and "sudo apt install bubblewrap" in found.note
    monkeypatch.setattr(sandbox, "_status", None)
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")
    assert "turned off" in sandbox.status().note
    monkeypatch.setattr(sandbox, "_status", None)


REWARDS = '''
import os

def in_box(completions, trainer_state, order_id, log_metric, **kwargs):
    log_metric("seen", float(len(completions)))
    return [1.0 if str(order_id[i]) in c else 0.0 for i, c in enumerate(completions)] if trainer_state.global_step >= 0 else []

def writer(completions, **kwargs):
    open(os.environ["OUTSIDE_FILE"], "w").write("leaked")
    return [0.0 for _ in completions]

def divider(completions, **kwargs):
    return [1 / 0 for _ in completions]

def quitter(completions, **kwargs):
    os._exit(0)
'''


@needs_sandbox
def test_training_calls_a_reward_file_in_the_sandbox_with_what_trl_passes(tmp_path, monkeypatch):
    from rloo_studio.rewards.boxed import RewardBox

    (tmp_path / "r.py").write_text(REWARDS)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("OUTSIDE_FILE", str(tmp_path / "leak.txt"))
    box = RewardBox([run_dir])
    try:
        assert box.load(tmp_path / "r.py", None, ("order_id",)) == ["in_box", "writer", "divider", "quitter"]
        logged = []

        class State:
            global_step, epoch, log_history = 3, 0.5, [{"loss": 0}]

        values = box.function("in_box")(prompts=["p", "p"], completions=["order 17 ok", "no"], completion_ids=[[1], [2]],
                                        order_id=[17, 17], trainer_state=State(),
                                        log_metric=lambda *a: logged.append(a), log_extra=lambda *a: None)
        assert values == [1.0, 0.0] and logged == [("seen", 2.0)]
        with pytest.raises(OSError):
            box.function("writer")(completions=["a"])
        assert not (tmp_path / "leak.txt").exists()
        with pytest.raises(ZeroDivisionError, match="division by zero") as raised:
            box.function("divider")(completions=["a"])
        assert "r.py:13 in divider" in raised.value.studio_where
        with pytest.raises(RewardError, match=r"`quitter` called os._exit\(0\) \(r.py, line 16\)"):
            box.function("quitter")(completions=["a"])
    finally:
        box.close()


@needs_sandbox
def test_the_check_and_the_preview_run_reward_code_in_the_sandbox(tmp_path):
    from rloo_studio.rewards.check import check_source
    from rloo_studio.workers import scorer

    leak = tmp_path / "leak.txt"
    at_load = f"open({str(leak)!r}, 'w').write('x')\n\ndef r(completions, **kwargs):\n    return [0.0 for _ in completions]\n"
    checked = check_source(at_load)
    assert any("Read-only file system" in p for p in checked["problems"]), checked
    in_call = ("import socket\n\ndef r(completions, **kwargs):\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
               "    return [0.0 for _ in completions]\n")
    scored = scorer.score({"groups": [{"prompt": "p", "row": {}, "completions": ["a", "b"]}], "num_generations": 2,
                             "source": in_call, "rewards": [{"file": "rewards.py"}]}, timeout_s=60)
    assert "Network is unreachable" in str(scored), scored
    assert not leak.exists()


@needs_sandbox
def test_a_reward_entry_that_opts_out_runs_outside_the_sandbox_in_the_preview(tmp_path):
    from rloo_studio.workers import scorer

    mark = tmp_path / "ran-outside.txt"
    source = f"def r(completions, **kwargs):\n    open({str(mark)!r}, 'w').write('x')\n    return [1.0 for _ in completions]\n"
    request = {"groups": [{"prompt": "p", "row": {}, "completions": ["a", "b"]}], "num_generations": 2, "source": source}
    boxed = scorer.score({**request, "rewards": [{"file": "rewards.py"}]}, timeout_s=60)
    assert not mark.exists() and "Read-only file system" in str(boxed), boxed
    outside = scorer.score({**request, "rewards": [{"file": "rewards.py", "sandbox": False}]}, timeout_s=60)
    assert mark.exists() and not outside.get("problems"), outside


def test_the_rewards_tab_says_where_reward_code_runs(monkeypatch):
    from rloo_studio.ui.rewards_tab import sandbox_markdown

    monkeypatch.setattr(sandbox, "_status", sandbox.Status("/usr/bin/bwrap", "Reward code runs in a sandbox (bubblewrap): …"))
    assert sandbox_markdown().startswith("🔒 Reward code runs in a sandbox") and "`sandbox: false`" in sandbox_markdown()
    monkeypatch.setattr(sandbox, "_status", sandbox.Status(None, "No reward sandbox: bubblewrap is not installed, …"))
    assert sandbox_markdown() == "⚠️ No reward sandbox: bubblewrap is not installed, …"
    monkeypatch.setattr(sandbox, "_status", None)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the data-memory limit holds on Linux")
def test_check_the_code_runs_under_the_same_memory_limit_as_the_preview():
    from rloo_studio.rewards.boxed import memory_limit_gib
    from rloo_studio.rewards.check import check_source

    # Untouched (calloc'd) memory past the limit: refused under it, granted lazily without one.
    big = int(memory_limit_gib() + 2)
    checked = check_source(f"block = bytearray({big} * 2**30)\n\ndef r(completions, **kwargs):\n    return [0.0 for _ in completions]\n")
    assert any("MemoryError" in p for p in checked["problems"]), checked

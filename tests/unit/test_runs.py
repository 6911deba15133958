"""Unit tests for rloo_studio.runs: the run-directory files, written and read safely."""

import json
import math
import os
import subprocess
import sys

import pytest

from rloo_studio import runs


def write_lines(path, text):
    path.write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------------ run ids


def test_slugify():
    assert runs.slugify("Qwen/Qwen3-0.6B") == "qwen-qwen3-0-6b"
    assert runs.slugify("  ***  ") == "run"
    assert runs.slugify("a" * 50) == "a" * 32


def test_new_run_id_shape():
    run_id = runs.new_run_id("My Model")
    date, time_, slug = run_id.split("-", 2)
    assert len(date) == 8 and date.isdigit()
    assert len(time_) == 6 and time_.isdigit()
    assert slug == "my-model"


def test_create_run_dir_unique_and_sortable(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "new_run_id", lambda name: "20250101-120000-demo")  # all in the same second
    made = [runs.create_run_dir(tmp_path / "runs", "demo") for _ in range(3)]
    assert [p.name for p in made] == ["20250101-120000-demo", "20250101-120000-demo-002", "20250101-120000-demo-003"]
    assert all(p.is_dir() for p in made)
    assert sorted(p.name for p in made) == [p.name for p in made]  # creation order == name order


def test_create_run_dir_order_survives_ten_runs_in_one_second(tmp_path, monkeypatch):
    # list_runs sorts by name to show the newest first, so names must sort in creation order
    # even when a sweep starts more than nine runs with the same name within one second.
    monkeypatch.setattr(runs, "new_run_id", lambda name: "20250101-120000-sweep")
    made = [runs.create_run_dir(tmp_path, "sweep") for _ in range(11)]
    assert len({p.name for p in made}) == 11
    assert sorted(p.name for p in made) == [p.name for p in made]


def test_create_run_dir_real_ids_differ(tmp_path):
    a = runs.create_run_dir(tmp_path, "x")
    b = runs.create_run_dir(tmp_path, "x")
    assert a != b and a.parent == b.parent == tmp_path
    assert a.name < b.name


# ------------------------------------------------------------------------------ writing


def test_to_json_line_nan_and_inf_become_null():
    line = runs.to_json_line({"loss": float("nan"), "nested": {"a": float("inf"), "b": [1.0, float("-inf")]}, "ok": 2.5})
    assert line.endswith("\n")
    assert json.loads(line) == {"loss": None, "nested": {"a": None, "b": [1.0, None]}, "ok": 2.5}
    assert "NaN" not in line and "Infinity" not in line


def test_append_jsonl_and_read_back(tmp_path):
    path = tmp_path / "metrics.jsonl"
    runs.append_jsonl(path, {"step": 1, "reward": float("nan")})
    runs.append_jsonl(path, [{"step": 2, "reward": 0.5}, {"step": 3, "reward": float("inf")}])
    runs.append_jsonl(path, [])
    assert runs.read_jsonl(path) == [{"step": 1, "reward": None}, {"step": 2, "reward": 0.5}, {"step": 3, "reward": None}]


def test_write_json_atomic_and_update_status_merge(tmp_path):
    runs.write_json_atomic(tmp_path / "status.json", {"state": "queued", "loss": float("nan")})
    assert json.loads((tmp_path / "status.json").read_text()) == {"state": "queued", "loss": None}

    first = runs.update_status(tmp_path, state="running", pid=123, max_steps=10)
    second = runs.update_status(tmp_path, step=4)
    status = runs.read_status(tmp_path)
    assert status["state"] == "running"
    assert status["pid"] == 123
    assert status["max_steps"] == 10
    assert status["step"] == 4
    assert status["loss"] is None
    assert second == status
    assert status["updated_at"] >= first["updated_at"]
    # No temp files are left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["status.json"]


def test_read_status_of_missing_or_corrupt_file(tmp_path):
    assert runs.read_status(tmp_path) == {}
    (tmp_path / "status.json").write_text("{not json", encoding="utf-8")
    assert runs.read_status(tmp_path) == {}
    (tmp_path / "status.json").write_text("[1, 2]", encoding="utf-8")
    assert runs.read_json(tmp_path / "status.json") is None


# ------------------------------------------------------------------------------ reading


def test_iter_jsonl_skips_torn_last_line(tmp_path):
    path = tmp_path / "m.jsonl"
    write_lines(path, '{"step": 1}\n{"step": 2}\n{"step": 3, "rew')
    assert runs.read_jsonl(path) == [{"step": 1}, {"step": 2}]


def test_iter_jsonl_skips_corrupt_middle_line_and_non_objects(tmp_path):
    path = tmp_path / "m.jsonl"
    write_lines(path, '{"step": 1}\n{garbage\n\n[1, 2]\n{"step": 2}\n')
    assert runs.read_jsonl(path) == [{"step": 1}, {"step": 2}]


def test_iter_jsonl_missing_file_is_empty(tmp_path):
    assert runs.read_jsonl(tmp_path / "absent.jsonl") == []


# ------------------------------------------------------------------------------ set_aside_after


def test_set_aside_after_moves_later_steps(tmp_path):
    path = tmp_path / "metrics.jsonl"
    runs.append_jsonl(path, [{"step": s, "reward": s / 10} for s in range(1, 6)] + [{"note": "no step"}])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"step": 6, "rew')  # torn by a crash
    moved = runs.set_aside_after(path, 3)
    assert moved == 2
    assert runs.read_jsonl(path) == [{"step": 1, "reward": 0.1}, {"step": 2, "reward": 0.2},
                                     {"step": 3, "reward": 0.3}, {"note": "no step"}]
    assert path.read_text(encoding="utf-8").endswith("\n")  # the torn line is gone
    superseded = tmp_path / "metrics.superseded.jsonl"
    assert runs.read_jsonl(superseded) == [{"step": 4, "reward": 0.4}, {"step": 5, "reward": 0.5}]

    # A second resume appends to the superseded file instead of replacing it.
    assert runs.set_aside_after(path, 1) == 2
    assert [r["step"] for r in runs.read_jsonl(superseded)] == [4, 5, 2, 3]
    assert runs.read_jsonl(path) == [{"step": 1, "reward": 0.1}, {"note": "no step"}]


def test_set_aside_after_missing_file(tmp_path):
    assert runs.set_aside_after(tmp_path / "none.jsonl", 5) == 0
    assert not (tmp_path / "none.superseded.jsonl").exists()


# ------------------------------------------------------------------------------ checkpoints


def make_checkpoint(run_dir, step, complete=True):
    path = run_dir / "checkpoints" / f"checkpoint-{step}"
    path.mkdir(parents=True)
    if complete:
        (path / "adapter_config.json").write_text("{}", encoding="utf-8")
        (path / "adapter_model.safetensors").write_bytes(b"weights")
        (path / "trainer_state.json").write_text("{}", encoding="utf-8")
    return path


def test_checkpoints_only_complete_ones_in_numeric_order(tmp_path):
    assert runs.checkpoints(tmp_path) == []
    assert runs.last_checkpoint(tmp_path) is None
    c10 = make_checkpoint(tmp_path, 10)
    c2 = make_checkpoint(tmp_path, 2)
    make_checkpoint(tmp_path, 20, complete=False)  # cut off while saving
    (tmp_path / "checkpoints" / "checkpoint-30").write_text("a file, not a folder")
    (tmp_path / "checkpoints" / "other").mkdir()
    assert runs.checkpoints(tmp_path) == [(2, c2), (10, c10)]
    assert runs.last_checkpoint(tmp_path) == (10, c10)


# ------------------------------------------------------------------------------ state and stop


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_effective_state_interrupted_when_worker_is_gone():
    pid = dead_pid()
    assert runs.pid_alive(pid) is False
    assert runs.effective_state({"state": "running", "pid": pid}) == "interrupted"
    assert runs.effective_state({"state": "stopping", "pid": pid}) == "interrupted"
    assert runs.effective_state({"state": "finished", "pid": pid}) == "finished"
    assert runs.effective_state({"state": "running", "pid": os.getpid()}) == "running"
    assert runs.effective_state({"state": "running"}) == "running"
    assert runs.effective_state({}) == "unknown"


def test_pid_alive_rejects_non_pids():
    assert runs.pid_alive(os.getpid()) is True
    assert runs.pid_alive(None) is False
    assert runs.pid_alive("123") is False
    assert runs.pid_alive(0) is False
    assert runs.pid_alive(-5) is False


def test_stop_request_cycle(tmp_path):
    assert runs.stop_requested(tmp_path) is False
    runs.request_stop(tmp_path)
    assert runs.stop_requested(tmp_path) is True
    assert (tmp_path / "STOP").is_file()
    runs.clear_stop(tmp_path)
    assert runs.stop_requested(tmp_path) is False
    runs.clear_stop(tmp_path)  # clearing twice is fine


def test_a_worker_clears_only_a_stop_request_older_than_itself(tmp_path):
    """A training worker clears a request written before it started (stale) and keeps one written since (a Stop pressed
    while it loaded)."""
    runs.request_stop(tmp_path)
    written = (tmp_path / "STOP").stat().st_mtime
    runs.clear_stop(tmp_path, older_than=written - 1)  # the worker started after the request: it is not stale
    assert runs.stop_requested(tmp_path)
    runs.clear_stop(tmp_path, older_than=written + 1)
    assert not runs.stop_requested(tmp_path)
    runs.clear_stop(tmp_path, older_than=written + 1)  # none there: fine


# ------------------------------------------------------------------------------ listing


def test_list_runs_newest_first_with_last_reward(tmp_path):
    old = tmp_path / "20250101-100000-old"
    new = tmp_path / "20250102-090000-new"
    broken = tmp_path / "20250103-000000-nostatus"
    for d in (old, new, broken):
        d.mkdir()
    runs.update_status(old, state="finished", step=10, max_steps=10, model="demo", started_at=1.0)
    runs.update_status(new, state="running", step="3", max_steps=20, pid=dead_pid())
    runs.append_jsonl(old / "metrics.jsonl", [{"step": 9, "reward": 0.5}, {"step": 10, "reward": 0.75}, {"step": 10, "loss": 1.0}])
    runs.append_jsonl(new / "metrics.jsonl", [{"step": 1, "reward": float("nan")}])
    (tmp_path / "a-file.txt").write_text("x")

    listed = runs.list_runs(tmp_path)
    assert [r.run_id for r in listed] == ["20250102-090000-new", "20250101-100000-old"]
    newest, oldest = listed
    assert newest.state == "interrupted"
    assert newest.step == 3
    assert newest.last_reward is None  # NaN was stored as null
    assert oldest.as_dict() == {
        "run_id": "20250101-100000-old", "path": str(old), "state": "finished", "step": 10, "max_steps": 10,
        "last_reward": 0.75, "model": "demo", "started_at": 1.0,
    }


def test_list_runs_of_missing_folder(tmp_path):
    assert runs.list_runs(tmp_path / "nothing") == []


def test_last_metric(tmp_path):
    runs.append_jsonl(tmp_path / "metrics.jsonl", [{"reward": 1.0}, {"reward": None}, {"other": 2}])
    assert runs.last_metric(tmp_path, "reward") == 1.0
    assert runs.last_metric(tmp_path, "missing") is None
    assert math.isclose(runs.last_metric(tmp_path, "other"), 2)


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_new_runs_folder_and_its_runs_are_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        run = runs.create_run_dir(tmp_path / "runs", "mine")
    finally:
        os.umask(old)
    assert (tmp_path / "runs").stat().st_mode & 0o777 == 0o700
    assert run.stat().st_mode & 0o777 == 0o700


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_an_existing_runs_folder_is_made_private_and_what_changed_is_counted(tmp_path):
    root = tmp_path / "runs"
    (root / "r1" / "adapter").mkdir(parents=True)
    for f in (root / "r1" / "rewards.py", root / "r1" / "adapter" / "w.safetensors", root / "r1" / "status.json"):
        f.write_text("x")
        f.chmod(0o644)
    for d in (root, root / "r1", root / "r1" / "adapter"):
        d.chmod(0o755)
    (root / "r1" / "status.json").chmod(0o600)  # already private: not counted
    assert runs.make_private_note(root) == (f"the runs folder {root} could be read by other users of this computer: 5 files "
                                            "and folders in it are now private (owner only)")
    for path in [root, *root.rglob("*")]:
        assert path.stat().st_mode & 0o077 == 0, path
    assert (root / "r1" / "rewards.py").stat().st_mode & 0o777 == 0o600
    assert runs.make_private(root) == 0 and runs.make_private_note(root) is None


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_every_rloo_studio_command_creates_owner_only_files():
    code = ("import os; os.umask(0o022); from rloo_studio import cli; cli.main(['runs', '--runs-dir', 'nowhere-here'])\n"
            "print(oct(os.umask(0)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "0o77", out.stdout + out.stderr


def test_training_time_adds_the_sessions_and_not_the_time_between_them():
    """Train 1 h, sit stopped 12 h, resume for 1 h: 2 h of training, not 14 (the Train tab's "elapsed")."""
    hour = 3600.0
    first = {"state": "stopped", "started_at": 0.0, "session_started_at": 0.0, "trained_before_s": 0.0,
             "trained_s": hour, "finished_at": hour, "updated_at": hour}
    assert runs.trained_seconds(first) == hour
    queued = {**first, "state": "queued", "updated_at": 13 * hour}  # Resume pressed: the worker has not begun
    assert runs.trained_seconds(queued, now=13 * hour + 5) == hour
    running = {**first, "state": "running", "session_started_at": 13 * hour, "trained_before_s": hour, "trained_s": None}
    assert runs.trained_seconds(running, now=14 * hour) == 2 * hour
    crashed = {**running, "state": "failed", "updated_at": 13.5 * hour}  # ended without writing trained_s
    assert runs.trained_seconds(crashed, now=20 * hour) == 1.5 * hour
    # A worker killed mid-run leaves "running" in its file: the page's state says it died, and its time stops at the
    # last step's (written at every step), not now.
    killed = {**running, "trained_s": 1.25 * hour, "updated_at": 13.25 * hour}
    assert runs.trained_seconds(killed, now=20 * hour, state="interrupted") == 1.25 * hour
    assert runs.trained_seconds(killed, now=14 * hour) == 2 * hour  # still training, as the file says
    # A run recorded before sessions were kept: from its first start to its end.
    assert runs.trained_seconds({"state": "finished", "started_at": 0.0, "finished_at": hour, "updated_at": 5 * hour}) == hour
    assert runs.trained_seconds({"state": "running", "started_at": 0.0}, now=hour) == hour
    assert runs.trained_seconds({"state": "queued", "started_at": 0.0, "updated_at": 1.0}, now=60.0) == 60.0  # loading
    assert runs.trained_seconds({}) is None

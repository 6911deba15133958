"""The config a run saves reproduces it from anywhere; reward copies are never duplicated or overwritten."""

from __future__ import annotations

import os

import yaml

from rloo_studio import runs
from rloo_studio.workers import jobs
from rloo_studio.config import RunConfig
from rloo_studio.engine.run_folder import prepare_run_dir, resolved_config



def test_runs_dir_is_relative_to_the_current_directory_and_paths_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text('{"prompt": "p"}\n')
    (tmp_path / "cfg").mkdir()
    cfg = RunConfig.from_dict({"data": {"source": "data/train.jsonl"}, "rewards": [{"file": "r.py"}]}, base_dir=tmp_path / "cfg")
    (tmp_path / "cfg" / "r.py").write_text("def r(completions, **kw):\n    return [0.0] * len(completions)\n")
    run_dir = prepare_run_dir(cfg, None)
    assert run_dir.parent == tmp_path / "runs", "runs go where `rloo-studio runs` looks"
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["data"]["source"] == str(tmp_path / "data" / "train.jsonl"), "found via the current directory, saved absolute"
    assert saved["rewards"][0]["file"] == "rewards.py" and (run_dir / "rewards.py").is_file()


def test_resume_keeps_the_runs_reward_copies_and_never_overwrites_one(tmp_path):
    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir()
    (cfg_dir / "a.py").write_text("def a(completions, **kw):\n    return [1.0] * len(completions)\n")
    (cfg_dir / "b.py").write_text("def b(completions, **kw):\n    return [2.0] * len(completions)\n")
    cfg = RunConfig.from_dict({"rewards": [{"file": "a.py"}, {"file": "b.py"}]}, base_dir=cfg_dir)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    first = resolved_config(cfg, run_dir)
    assert [s.file for s in first.rewards] == ["rewards.py", "rewards_2_b.py"]
    first.save(run_dir / "config.yaml")

    # Resuming loads the run's own config: its copies are used as they are, nothing new appears.
    again = resolved_config(RunConfig.load(run_dir / "config.yaml"), run_dir)
    assert [s.file for s in again.rewards] == ["rewards.py", "rewards_2_b.py"]
    assert sorted(p.name for p in run_dir.glob("*.py")) == ["rewards.py", "rewards_2_b.py"]

    # A different file pointed at the same run must not replace the copy the run trained with.
    (cfg_dir / "a.py").write_text("def a(completions, **kw):\n    return [9.0] * len(completions)\n")
    changed = resolved_config(cfg, run_dir)
    assert changed.rewards[0].file == "rewards.2.py"
    assert "[1.0]" in (run_dir / "rewards.py").read_text() and "[9.0]" in (run_dir / "rewards.2.py").read_text()


def test_stop_pressed_while_the_worker_loads_leaves_it_its_folder(tmp_path):
    """Stop right after Start: the worker, still loading, must still take the app's queued folder (and stop after a step)."""
    cfg = RunConfig.from_dict({}, base_dir=tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    cfg.save(run_dir / "config.yaml")
    runs.update_status(run_dir, state="queued", step=0, pid=os.getpid(), started_by="app")
    assert "after its first step" in jobs.stop_run(run_dir)
    assert runs.stop_requested(run_dir)
    assert prepare_run_dir(cfg, run_dir) == run_dir  # refused as "another run's folder" when Stop changed the state

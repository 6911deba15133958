"""jobs.start_run saves the run's own copy of the config (paths absolute, the runs folder it was given) and leaves the
caller's config as it was: the page starts runs from one form, again and again."""

from __future__ import annotations

from rloo_studio import runs
from rloo_studio.config import RunConfig
from rloo_studio.workers import jobs


def test_the_run_gets_its_own_copy_and_the_callers_config_is_unchanged(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "_spawn", lambda run_dir, args, python=None: type("Started", (), {"pid": 0})())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text('{"prompt": "1 + 1?", "answer": "2"}\n', encoding="utf-8")
    cfg = RunConfig.from_dict({"data": {"source": "data.jsonl"}, "output": {"runs_dir": "elsewhere"},
                               "rewards": [{"file": runs.REWARDS_FILE}, {"name": "numeric_answer"}]}, base_dir=tmp_path)
    before = cfg.to_dict()
    run_dir = jobs.start_run(cfg, "runs", reward_source="def r(completions, **kw):\n    return [0.0] * len(completions)\n",
                             checked=True)
    assert cfg.to_dict() == before
    saved = RunConfig.load(run_dir / runs.CONFIG_FILE)
    assert saved.output.runs_dir == str((tmp_path / "runs").resolve())  # the folder it was started in, not the config's
    assert saved.data.source == str((tmp_path / "data.jsonl").resolve())
    assert saved.rewards[0].file == runs.REWARDS_FILE and (run_dir / runs.REWARDS_FILE).is_file()

"""The app validates a Start's config once: the page's form does (ui.form.config_from) and jobs.start_run takes its
word; the worker's preflight is the other validation, the one the command line has too (tests/engine/test_validate_once)."""

from __future__ import annotations

from rloo_studio.workers import jobs
from rloo_studio.config import RunConfig


def test_the_app_validates_a_start_once_when_the_form_has(tmp_path, monkeypatch):
    calls = []
    validate = RunConfig.validate
    monkeypatch.setattr(RunConfig, "validate", lambda self, *a, **k: calls.append(1) or validate(self, *a, **k))
    monkeypatch.setattr(jobs, "_spawn", lambda run_dir, args, python=None: type("Started", (), {"pid": 0})())
    cfg = RunConfig.from_dict({"rewards": [{"name": "numeric_answer"}]}, base_dir=tmp_path)
    assert cfg.validate() == []  # the form's validation (ui.form.config_from)
    jobs.start_run(cfg, tmp_path / "runs", checked=True)
    assert len(calls) == 1
    jobs.start_run(cfg, tmp_path / "runs-2")  # a caller that has not validated it (the trial): validated here
    assert len(calls) == 2

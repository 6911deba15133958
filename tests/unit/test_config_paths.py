"""One resolver of a config's relative paths (RunConfig.with_absolute_paths), for the app and the engine alike,
covering every field that may name a local file or folder."""

from __future__ import annotations

import dataclasses
import re

import yaml

from rloo_studio.config import PATH_FIELDS, RewardSpec, RunConfig

# How a field's help says it may name something on disk (and not merely mention a file, as `function` does).
NAMES_A_PATH = re.compile(r"local [^,]*?\b(file|folder)\b|\bfolder\b|file path|Python file", re.I)


def _sections() -> dict[str, type]:
    """Every section of a config (the dataclass of each RunConfig field, the reward entry for `rewards`)."""
    cfg = RunConfig.from_dict({"lora": {}})
    found = {f.name: type(getattr(cfg, f.name)) for f in dataclasses.fields(RunConfig)
             if dataclasses.is_dataclass(getattr(cfg, f.name))}
    return {**found, "rewards": RewardSpec}


def test_the_path_table_names_every_field_that_may_name_a_file_or_folder():
    sections = _sections()
    assert {"model", "lora", "data", "output"} <= set(sections), sections  # the walk found the sections
    said = {(section, f.name) for section, cls in sections.items() for f in dataclasses.fields(cls)
            if f.type not in ("bool", "int", "float") and NAMES_A_PATH.search(f.metadata.get("help", ""))}
    listed = {(section, name) for section, names in PATH_FIELDS.items() for name in names}
    assert said == listed
    assert len(listed) == 7


def test_every_path_field_becomes_absolute_and_what_is_no_path_stays(tmp_path, monkeypatch):
    folder = tmp_path / "cfg"
    (folder / "things").mkdir(parents=True)
    values = {}
    for section, names in PATH_FIELDS.items():
        for name, kind in names.items():
            value = f"things/{section}-{name}" + (".txt" if kind == "file" else "")
            (folder / value).mkdir() if kind == "folder" else (folder / value).write_text("x")
            values[(section, name)] = value
    monkeypatch.chdir(folder)  # the runs folder is found from the current directory
    data = {}
    for (section, name), value in values.items():
        if section == "rewards":
            data.setdefault("rewards", [{}])[0][name] = value
        else:
            data.setdefault(section, {})[name] = value
    cfg = RunConfig.from_dict(data, base_dir=folder)
    moved = cfg.with_absolute_paths(tmp_path / "run")
    for (section, name), value in values.items():
        part = moved.rewards[0] if section == "rewards" else getattr(moved, section)
        assert getattr(part, name) == str(folder / value), (section, name)
    assert moved.base_dir == str(tmp_path / "run") and cfg.data.source == "things/data-source.txt"  # a copy

    hub = RunConfig.from_dict({"model": {"name_or_path": "org/model"}, "data": {"source": "demo", "test_split": "test"},
                               "rewards": [{"file": "rewards.py"}, {"model": "org/rm"}]}, base_dir=folder)
    (folder / "rewards.py").write_text("x")
    kept = hub.with_absolute_paths(tmp_path / "run", keep=("rewards.py",))
    assert (kept.model.name_or_path, kept.data.source, kept.data.test_split) == ("org/model", "demo", "test")
    assert [s.file or s.model for s in kept.rewards] == ["rewards.py", "org/rm"]


def test_a_runs_saved_config_finds_a_local_reward_model_and_judge_from_the_run_folder(tmp_path):
    from rloo_studio.engine.run_folder import resolved_config

    (tmp_path / "cfg" / "rm").mkdir(parents=True)
    (tmp_path / "cfg" / "judge").mkdir()
    cfg = RunConfig.from_dict({"rewards": [{"model": "rm"}, {"judge": "judge", "rubric": "r"}]}, base_dir=tmp_path / "cfg")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    resolved_config(cfg, run_dir).save(run_dir / "config.yaml")
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())["rewards"]
    assert [saved[0]["model"], saved[1]["judge"]] == [str(tmp_path / "cfg" / "rm"), str(tmp_path / "cfg" / "judge")]

"""The reward library end to end on the command line: build a rule reward, import it (its pinned examples scored as
the config trains), export it, import it into a fresh library beside a fresh runs folder, and train with it: the run
records the reward's content hash in rewards.json, the same as the library's."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import only_run_dir, run_cli

from rloo_studio import runs
from rloo_studio.rewards import library

pytestmark = pytest.mark.slow

RULES = {"name": "sum right and short", "description": "the right number, in few words", "tags": ["math"],
         "blocks": [{"block": "number", "name": "right_number"},
                    {"block": "length", "name": "few_words", "weight": 0.5, "params": {"low": 1, "high": 8}}],
         "examples": [{"prompt": "What is 3 + 2?", "completion": "<think>3+2</think>5", "columns": {"answer": "5"},
                       "total": [1.5, 1.5]},
                      {"prompt": "What is 3 + 2?", "completion": "<think>3+2</think>6", "columns": {"answer": "5"},
                       "total": [0.5, 0.5]}]}


def test_build_export_import_train_records_the_hash(workspace, tmp_path):
    first_library, second_library = tmp_path / "library-1", tmp_path / "library-2"
    (workspace.path / "rules.yaml").write_text(yaml.safe_dump(RULES))
    env = {library.LIBRARY_ENV: str(first_library)}
    built = run_cli("rewards", "build", "rules.yaml", "--out", "built.py", cwd=workspace.path, env=env)
    assert built.returncode == 0, built.stderr
    config = workspace.write_config()
    imported = run_cli("rewards", "import", "built.py", "--config", config, cwd=workspace.path, env=env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "completion_ids: the run's tokenizer" in imported.stdout and "All 2 pinned examples pass" in imported.stdout
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    exported = run_cli("rewards", "export", RULES["name"], "--out", fresh / "shared.py", cwd=workspace.path, env=env)
    assert exported.returncode == 0, exported.stderr

    env = {library.LIBRARY_ENV: str(second_library)}
    again = run_cli("rewards", "import", "shared.py", cwd=fresh, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    [kept] = second_library.glob("*.py")
    assert kept.read_text() == (first_library / kept.name).read_text()
    reward = library.read(kept)

    cfg = workspace.config(data={"source": str(workspace.path / "data.jsonl")},
                           rewards=[{"file": str(kept), "function": fn, "weight": w} for fn, w in reward.weights.items()],
                           rloo={"max_steps": 2, "save_steps": 2})
    (fresh / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    trained = run_cli("train", "config.yaml", cwd=fresh, env=env)
    assert trained.returncode == 0, trained.stderr[-4000:]
    run_dir = only_run_dir(fresh / "runs")
    [record] = json.loads((run_dir / library.RUN_RECORD_FILE).read_text())["files"]
    assert record == {"file": runs.REWARDS_FILE, "from": str(kept), "hash": reward.hash, "name": RULES["name"], "library": True}
    assert library.content_hash((run_dir / runs.REWARDS_FILE).read_text()) == reward.hash
    metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    assert all("rewards/right_number/mean" in m and "rewards/few_words/mean" in m for m in metrics), metrics[0]

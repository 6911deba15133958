"""Shared fixtures: offline environment, a tiny locally built model, a workspace with data and rewards.

No test reaches the network: the hub clients are put in offline mode before anything imports them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                  HF_HUB_DISABLE_TELEMETRY="1", GRADIO_ANALYTICS_ENABLED="False", TOKENIZERS_PARALLELISM="false")

from helpers import ADDITION_ROWS, ROOT, USER_REWARDS, built_once, make_adapter_run, only_run_dir, run_cli, run_code  # noqa: E402 - after the offline variables


# Seconds before a real-model test counts as hung: it trains and evaluates a 135M model on CPU, far slower than
# the tiny models pyproject.toml's default (900 s) is sized for.
REALMODEL_TIMEOUT = 1500


# The longest test files, longest first (from `--durations` of full runs on 2 cores): started first, each in its own
# test process while the other works through the rest, they do not leave one process finishing alone at the end.
# (run_tests.py turns off pytest-xdist's own order, which puts the files with the most tests first and these last.)
LONGEST_FIRST = ("realmodel/test_judge_browser.py", "browser/test_own_csv.py", "browser/test_reward_editor.py",
                 "browser/test_reward_library_page.py", "engine/test_demo_learning.py", "browser/test_reload_restores.py",
                 "engine/test_multimachine.py", "engine/test_multiprocess.py",
                 "browser/test_diagnostics.py", "realmodel/test_real_after_training.py", "realmodel/test_real_gguf.py",
                 "engine/test_train_matches_trl.py", "engine/test_gguf.py", "engine/test_demo_build.py")


@pytest.hookimpl(trylast=True)  # after tests/realmodel/conftest.py has marked its tests
def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("realmodel") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(REALMODEL_TIMEOUT))

    def rank(item) -> int:
        path = Path(str(item.path)).as_posix()
        return next((i for i, name in enumerate(LONGEST_FIRST) if path.endswith("/tests/" + name)), len(LONGEST_FIRST))
    items.sort(key=rank)  # stable: the rest keep their order


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A 2-layer Llama-architecture model with a character tokenizer that has <think>/</think> tokens."""
    def build(folder: Path) -> None:
        # Built in a child process so that this test process never imports transformers before unsloth.
        code = ("import sys; from rloo_studio.demo.tinymodel import build_tiny_model; "
                f"build_tiny_model({str(folder)!r}, architecture='llama')")
        run_code(code, stack="plain", check=True, cwd=ROOT, timeout=300)
    return built_once(tmp_path_factory, "tiny-model", build)


@pytest.fixture(scope="session")
def trained_tiny_folder(tmp_path_factory, tiny_model_dir) -> Path:
    """A folder with data.jsonl, rewards.py, config.yaml and runs/<one finished run> of the tiny model, trained once
    for the session (`rloo-studio train`, 4 real RLOO steps, checkpoints at 2 and 4, a quarter of the data held out).

    Shared by the tests that evaluate and export a trained run; read it only through `trained_tiny_run`, which
    hands each module its own copy (they write eval.json and exports into it).
    """
    import yaml

    def build(folder: Path) -> None:
        (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ADDITION_ROWS))
        (folder / "rewards.py").write_text(USER_REWARDS)
        config = {
            "model": {"name_or_path": str(tiny_model_dir), "max_seq_length": 128},
            "lora": {"r": 8, "alpha": 16},
            "data": {"source": "data.jsonl", "test_fraction": 0.25},
            "rewards": [{"name": "numeric_answer"}, {"name": "think_format", "weight": 0.5},
                        {"name": "think_length", "weight": 0.2, "params": {"min_tokens": 2, "max_tokens": 16}},
                        {"file": "rewards.py", "weight": 0.5}],
            # A large learning rate, so that 4 steps move the adapter far enough to change greedy outputs.
            "rloo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 12,
                     "learning_rate": 2e-2, "max_steps": 4, "save_steps": 2, "beta": 0.0},
        }
        (folder / "config.yaml").write_text(yaml.safe_dump(config))
        result = run_cli("train", "config.yaml", cwd=folder)
        assert result.returncode == 0, result.stderr[-3000:]
    return built_once(tmp_path_factory, "trained-tiny", build)


@pytest.fixture(scope="session")
def adapter_run(tmp_path_factory, tiny_model_dir):
    """`place(run_dir) -> run_dir`: puts a copy of the session's random-adapter run of the tiny model at `run_dir`.

    The run (`make_adapter_run`: a final adapter and checkpoint-1 with different random non-zero weights, so that
    "adapter on" and "adapter off" differ for sure) is made once for the session, as it costs a process that
    imports PEFT; each test gets its own copy, since the app and the chat write into run folders.
    """
    made = built_once(tmp_path_factory, "adapter-run", lambda folder: make_adapter_run(folder / "run", tiny_model_dir))

    def place(run_dir: Path) -> Path:
        shutil.copytree(made / "run", run_dir)
        return run_dir
    return place


@pytest.fixture(scope="module")
def trained_tiny_run(tmp_path_factory, trained_tiny_folder, tiny_model_dir) -> tuple[Path, Path]:
    """(run directory, model directory): this module's own copy of the session's trained tiny run."""
    copy = tmp_path_factory.mktemp("trained-run") / "workspace"
    shutil.copytree(trained_tiny_folder, copy)
    return only_run_dir(copy / "runs"), tiny_model_dir


@pytest.fixture
def workspace(tmp_path, tiny_model_dir):
    """A folder with data.jsonl, rewards.py and a `write_config(**overrides)` helper."""
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ADDITION_ROWS))
    (tmp_path / "rewards.py").write_text(USER_REWARDS)

    class Workspace:
        path = tmp_path
        model = tiny_model_dir

        def config(self, **sections) -> dict:
            cfg = {
                "model": {"name_or_path": str(tiny_model_dir), "backend": "auto", "max_seq_length": 128},
                "lora": {"r": 8, "alpha": 16},
                "data": {"source": "data.jsonl"},
                "rewards": [
                    {"name": "numeric_answer", "weight": 1.0},
                    {"name": "think_length", "weight": 0.2, "params": {"min_tokens": 2, "max_tokens": 16}},
                    {"file": "rewards.py", "weight": 0.5},
                ],
                "rloo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 16,
                         "learning_rate": 1e-3, "max_steps": 3, "save_steps": 2, "beta": 0.0},
                "output": {"runs_dir": "runs", "samples_per_step": 2},
            }
            for key, value in sections.items():
                if value is None:
                    cfg.pop(key, None)
                elif isinstance(value, dict) and isinstance(cfg.get(key), dict):
                    cfg[key] = {**cfg[key], **value}
                else:
                    cfg[key] = value
            return cfg

        def write_config(self, name="config.yaml", **sections) -> Path:
            import yaml

            path = tmp_path / name
            path.write_text(yaml.safe_dump(self.config(**sections), sort_keys=False))
            return path

    return Workspace()


@pytest.fixture
def runs_dir(tmp_path) -> Path:
    """Where the app under test keeps its runs."""
    return tmp_path / "runs"


@pytest.fixture
def outside_the_sandbox(monkeypatch):
    """Reward code in this test reports what it was given by writing a file where the test reads it: outside the reward
    sandbox, which allows no such write (its files are read-only; tests/unit/test_sandbox.py). For tests of what rewards
    receive, not of the sandbox. Children inherit it through the environment."""
    from rloo_studio import sandbox

    monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")
    monkeypatch.setattr(sandbox, "_status", None)
    yield
    monkeypatch.setattr(sandbox, "_status", None)

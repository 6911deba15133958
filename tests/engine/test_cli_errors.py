"""Bad input to `rloo-studio train` gets one clear message (what, why, what to do) and a non-zero exit.

The first group fails in the pre-flight check, before torch is imported: most of it runs `cli.main` in this
process (`cli_in_process`), a few in a real process (`run_cli`) for the exit code and the no-traceback contract. The
second fails while training (a misbehaving reward, out of memory) and must mark the run as failed with the reason.
"""

from __future__ import annotations

import json

import pytest
from helpers import cli_in_process, only_run_dir, run_cli


def _assert_clean_failure(result, *fragments, code=2):
    assert result.returncode == code, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "\nerror: " in "\n" + result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, f"{fragment!r} not in:\n{result.stderr}"


def test_missing_config_file(tmp_path):
    _assert_clean_failure(run_cli("train", tmp_path / "nope.yaml", cwd=tmp_path), "no such file", "nope.yaml")


def test_no_config_means_the_bundled_demo(tmp_path):
    # A bad override makes it stop right after choosing the config: we only check which config was chosen.
    result = cli_in_process("train", "modle.x=1", cwd=tmp_path)
    assert "No config given: training the bundled demo (presets/cpu-demo.yaml)" in result.stdout
    _assert_clean_failure(result, "config", "cpu-demo.yaml", "modle: unknown key — did you mean `model`?")


def test_malformed_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model:\n  name_or_path: x\n rloo: [\n")
    _assert_clean_failure(cli_in_process("train", path, cwd=tmp_path), "not valid YAML at line")


def test_every_config_problem_is_reported_at_once(workspace):
    config = workspace.write_config(
        model={"name_or_path": "./no/such/model"},
        data={"source": "data.jsonl", "prompt_colum": "prompt"},
        rloo={"num_generations": 1, "learning_rate": -1})
    result = run_cli("train", config, cwd=workspace.path)
    _assert_clean_failure(result, "data.prompt_colum: unknown key — did you mean `prompt_column`?")
    # from_dict stops at unknown keys; fix that one and the rest are reported together
    config = workspace.write_config(model={"name_or_path": "./no/such/model"},
                                    rloo={"num_generations": 1, "learning_rate": -1, "max_completion_length": 0},
                                    rewards=[{"name": "numeric_answr"}, {"file": "missing.py"}])
    result = run_cli("train", config, cwd=workspace.path)
    _assert_clean_failure(result, "rloo.num_generations: 1", "rloo.learning_rate: -1", "rloo.max_completion_length: 0",
                          "model folder not found: ./no/such/model", "did you mean `numeric_answer`?",
                          "reward file not found", "What to do:")
    assert "problems:" in result.stderr
    assert not (workspace.path / "runs").exists(), "no run directory for a config that never started"


def test_generation_batch_not_divisible(workspace):
    config = workspace.write_config(rloo={"num_generations": 3, "per_device_train_batch_size": 8})
    _assert_clean_failure(cli_in_process("train", config, cwd=workspace.path), "generation batch", "not divisible by num_generations 3")


def test_malformed_dataset_line_is_named(workspace):
    with open(workspace.path / "data.jsonl", "a") as fh:
        fh.write('{"prompt": "What is 1 + 1?", "answer": \n')
    lines = (workspace.path / "data.jsonl").read_text().count("\n")
    _assert_clean_failure(cli_in_process("train", workspace.write_config(), cwd=workspace.path), f"line {lines} is not valid JSON")


def test_dataset_without_prompt_column(workspace):
    (workspace.path / "qa.csv").write_text("question,answer\nWhat is 1+1?,2\n")
    config = workspace.write_config(data={"source": "qa.csv"})
    _assert_clean_failure(cli_in_process("train", config, cwd=workspace.path), "no column `prompt`", "question, answer", "data.prompt_column")


def test_reward_file_syntax_error_names_file_and_line(workspace):
    (workspace.path / "rewards.py").write_text("def ok(completions, **kwargs):\n    return [1.0] * len(completions\n")
    _assert_clean_failure(cli_in_process("train", workspace.write_config(), cwd=workspace.path), "syntax error at", "rewards.py:2")


def test_unknown_model_hub_id_offline(workspace):
    config = workspace.write_config(model={"name_or_path": "nobody-xyz/not-a-model-123"})
    result = run_cli("train", config, cwd=workspace.path, env={"HF_HUB_OFFLINE": "1"})
    _assert_clean_failure(result, "not-a-model-123", "What to do:")
    status = json.loads((only_run_dir(workspace.path / "runs") / "status.json").read_text())
    assert status["state"] == "failed" and "not-a-model-123" in status["error"]["what"]


@pytest.mark.slow
def test_unknown_rloo_option_gets_did_you_mean(workspace):
    config = workspace.write_config(rloo={"num_generation": 4})
    _assert_clean_failure(run_cli("train", config, cwd=workspace.path),
                          "rloo.num_generation: not an option of trl.RLOOConfig — did you mean `num_generations`?")


RAISING = '''
def picky(completions, **kwargs):
    out = []
    for c in completions:
        text = c[0]["content"]
        out.append(1.0 / (len(text) - len(text)))
    return out
'''

WRONG_COUNT = '''
def too_few(completions, **kwargs):
    return [0.0] * (len(completions) - 1)
'''

OOM = '''
import torch
def greedy(completions, **kwargs):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
'''


@pytest.mark.slow
@pytest.mark.parametrize("source, fragments", [
    (RAISING, ["reward function `picky` raised ZeroDivisionError", "rewards.py:6 in picky", "What to do:"]),
    (WRONG_COUNT, ["reward function `too_few` returned 7 values for 8 completions"]),
    (OOM, ["ran out of memory", "max_completion_length", "load_in_4bit"]),
], ids=["raises", "wrong-count", "out-of-memory"])
def test_reward_failure_during_training_fails_the_run_clearly(workspace, source, fragments):
    (workspace.path / "rewards.py").write_text(source)
    result = run_cli("train", workspace.write_config(), cwd=workspace.path)
    _assert_clean_failure(result, *fragments)
    run_dir = only_run_dir(workspace.path / "runs")
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "failed" and status["pid"] is None
    assert fragments[0] in status["error"]["what"] + status["error"]["why"]
    assert "Traceback" in (run_dir / "train.log").read_text(), "the full traceback belongs in train.log"


def test_overrides_may_follow_options(workspace):
    # The override is applied (and here makes the config invalid, so nothing trains).
    config = workspace.write_config()
    result = cli_in_process("train", config, "--run-dir", workspace.path / "r", "rloo.num_generations=1", cwd=workspace.path)
    _assert_clean_failure(result, "rloo.num_generations: 1")
    result = run_cli("train", config, "--run-dir", workspace.path / "r", "--bogus", cwd=workspace.path)
    assert result.returncode == 2 and "unrecognized arguments: --bogus" in result.stderr

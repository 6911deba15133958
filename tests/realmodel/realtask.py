"""The real-model tier's task and helpers: a few single-digit sums, a tiny run config, the CLI in its own process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import helpers

ROOT = Path(__file__).resolve().parents[2]


# The tier's task: single-digit sums from the real-model preset's data, a few rows to keep steps short.
TASK_DIR = ROOT / "assets" / "addition-data"
# A user reward file beside the builtins, as people write them: a graded score with spread in nearly every group.
PROBE_REWARDS = '''
def digit_share(completions, **kwargs):
    """The share of digits among the completion's characters."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [sum(ch.isdigit() for ch in t) / max(1, len(t)) for t in texts]
'''


def task_rows(split: str, n: int) -> list[str]:
    return (TASK_DIR / f"{split}.jsonl").read_text().splitlines()[:n]


def real_config(model_dir: Path, **rloo) -> dict:
    """A tiny run config on the real model: one step of 2 prompts x 2 completions, 8 new tokens, fp32 LoRA."""
    return {
        "model": {"name_or_path": str(model_dir), "backend": "auto", "dtype": "float32", "load_in_4bit": False,
                  "max_seq_length": 256, "gradient_checkpointing": False},
        "lora": {"r": 8, "alpha": 16},
        "data": {"source": "train.jsonl", "test_split": "test.jsonl"},
        "rewards": [{"name": "numeric_answer", "weight": 1.0}, {"name": "exact_match", "weight": 0.5},
                    {"file": "rewards.py", "weight": 1.0}],
        "rloo": {"num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 8, "temperature": 1.0,
                 "learning_rate": 2e-3, "lr_scheduler_type": "constant", "beta": 0.0, "max_steps": 1, "save_steps": 1,
                 "logging_steps": 1, "seed": 0, **rloo},
        "output": {"runs_dir": "runs", "samples_per_step": 4},
    }


def make_task_folder(folder: Path, model_dir: Path, **rloo) -> Path:
    """`folder` with train.jsonl (16 rows), test.jsonl (4 rows), rewards.py and config.yaml; returns the config path."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.jsonl").write_text("\n".join(task_rows("train", 16)) + "\n")
    (folder / "test.jsonl").write_text("\n".join(task_rows("test", 4)) + "\n")
    (folder / "rewards.py").write_text(PROBE_REWARDS)
    (folder / "config.yaml").write_text(yaml.safe_dump(real_config(model_dir, **rloo), sort_keys=False))
    return folder / "config.yaml"


def run_cli(*args, cwd, timeout=3600, env=None) -> subprocess.CompletedProcess:
    """`rloo-studio ARGS` in its own process, as a person would run it (forked from a warm starter: helpers.run_cli)."""
    return helpers.run_cli(*args, cwd=cwd, timeout=timeout, env=env)


def run_python(code: str, *args, cwd=None, timeout=3600, stack="plain") -> str:
    """Run `code` in its own Python process (helpers.run_code: "plain" imports no Unsloth, as a person's own script);
    its last stdout line (JSON by convention) is returned."""
    done = helpers.run_code(code, *args, stack=stack, cwd=cwd or ROOT, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.strip().splitlines()[-1]


# The tier's user reward, plus a record of what TRL hands reward functions (prompts, completions).
LOGGING_REWARDS = '''
import json, os

def digit_share(completions, prompts, **kwargs):
    """The share of digits among the completion's characters."""
    with open(os.environ.get("REALMODEL_REWARD_LOG", os.devnull), "a") as fh:
        fh.write(json.dumps({"completions": completions, "prompts": prompts}) + "\\n")
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [sum(ch.isdigit() for ch in t) / max(1, len(t)) for t in texts]
'''


def task_folder(folder, model_dir, **rloo):
    """The tier's task folder (make_task_folder) with the reward that records what TRL hands it."""
    config = make_task_folder(folder, model_dir, **rloo)
    (folder / "rewards.py").write_text(LOGGING_REWARDS)
    return config

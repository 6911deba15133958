"""One rule for a complete checkpoint: resume (`runs.checkpoints`) and eval/chat/export (`runs.evaluable_checkpoints`)
must agree on every checkpoint folder, whole or cut off at any point of the trainer's save."""

import json

import pytest

from rloo_studio import runs

ADAPTER = {"adapter_config.json": "{}", "adapter_model.safetensors": "weights"}
FULL_MODEL = {"config.json": "{}", "model.safetensors": "weights"}
STATE = {runs.TRAINER_STATE_FILE: json.dumps({"global_step": 1})}

# step: (files in checkpoint-<step>, complete?)
FOLDERS = {
    1: ({**ADAPTER, **STATE}, True),  # a LoRA checkpoint saved to the end
    2: ({**FULL_MODEL, **STATE}, True),  # a full fine-tuning checkpoint saved to the end
    3: ({"adapter_config.json": "{}", **STATE}, False),  # the adapter weights are missing
    4: ({"adapter_model.safetensors": "weights", **STATE}, False),  # the adapter config is missing
    5: (dict(ADAPTER), False),  # cut off before trainer_state.json (written last)
    6: ({**ADAPTER, runs.TRAINER_STATE_FILE: '{"global_step": 6, "log_hist'}, False),  # trainer_state.json torn mid-write
    7: ({**ADAPTER, runs.TRAINER_STATE_FILE: ""}, False),  # trainer_state.json created, nothing written
    8: ({}, False),  # the folder made, nothing in it
    9: ({"config.json": "{}", **STATE}, False),  # full fine-tuning: the model weights are missing
}


@pytest.fixture
def run_dir(tmp_path):
    for step, (files, _) in FOLDERS.items():
        folder = tmp_path / runs.CHECKPOINTS_DIR / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_resume_and_eval_agree_on_which_checkpoints_are_complete(run_dir):
    complete = sorted(step for step, (_, ok) in FOLDERS.items() if ok)
    resumable = [step for step, _ in runs.checkpoints(run_dir)]
    evaluable = [c.step for c in runs.evaluable_checkpoints(run_dir) if c.name != runs.FINAL]
    skipped = sorted(s["step"] for s in runs.incomplete_checkpoints(run_dir))
    assert resumable == complete
    assert evaluable == resumable, "eval would offer a checkpoint that resume rejects, or the reverse"
    assert skipped == sorted(set(FOLDERS) - set(complete)), "every cut-off folder is listed with a reason"
    for step in FOLDERS:
        assert runs.checkpoint_complete(run_dir / runs.CHECKPOINTS_DIR / f"checkpoint-{step}") == FOLDERS[step][1], step
    assert [c.kind for c in runs.evaluable_checkpoints(run_dir)] == ["adapter", "model"]


def test_each_skipped_checkpoint_says_what_is_missing(run_dir):
    why = {s["step"]: s["why"] for s in runs.incomplete_checkpoints(run_dir)}
    assert "no weights" in why[3] and "no weights" in why[4] and "no weights" in why[9]
    assert all(runs.TRAINER_STATE_FILE in why[step] for step in (5, 6, 7))
    assert all("cut off" in text for text in why.values())

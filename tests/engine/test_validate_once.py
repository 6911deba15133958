"""A config is validated once per action: `rloo-studio train` (what the app's Start runs in its worker) checks it in
preflight and only asks TRL afterwards whether the `rloo` keys are its options; the app validates once before it."""

from __future__ import annotations

import pytest
from helpers import run_code

pytestmark = pytest.mark.slow

COUNTED_TRAIN = r"""
import sys
from rloo_studio.config import RunConfig
from rloo_studio.engine.stack import import_training_stack
calls = []
validate = RunConfig.validate
RunConfig.validate = lambda self, *a, **k: calls.append(1) or validate(self, *a, **k)
stack = import_training_stack("transformers")
stack.trl.RLOOTrainer.train = lambda self, *args, **kwargs: None  # the checks and the trainer's construction, not the steps
from rloo_studio.cli import main
code = main(["train", sys.argv[1], "--run-dir", sys.argv[2]])
print("VALIDATED", len(calls), "EXIT", code)
"""


def test_the_training_worker_validates_its_config_once(workspace, tmp_path):
    config = workspace.write_config(model={"backend": "transformers", "max_seq_length": 128})
    result = run_code(COUNTED_TRAIN, config, tmp_path / "run", stack="transformers", cwd=workspace.path, timeout=600)
    assert "VALIDATED 1 EXIT 0" in result.stdout, result.stdout[-2000:] + result.stderr[-3000:]

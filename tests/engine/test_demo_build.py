"""scripts/build_demo_model.py is deterministic: two short builds with one seed give identical weights.

One build runs in a fresh interpreter, as a person runs the script; the other is forked from the tests' warm starter
(torch and transformers imported before the fork): the same bytes from both also says the imports' order and state
leave the build alone."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from helpers import ROOT, warm

pytestmark = pytest.mark.slow
# A short build: 10 SFT steps, each check on 20 problems; the finished model scored on 20 test problems rather
# than all 300 (the full test scoring was most of a short build's time; its result is compared below all the same).
# One torch thread for both builds: the suite runs two test processes on two cores, and the script's default of two
# threads spins waiting for a core (alone on an idle 2-core machine: 22 CPU-s a build with two threads, 17.6 with one).
SHORT = ["--max-steps", "20", "--eval-every", "10", "--eval-size", "20", "--target-accuracy", "0", "--min-format", "0",
         "--test-size", "20", "--threads", "1"]


def _build(out, fresh: bool):
    script, args = ROOT / "scripts" / "build_demo_model.py", ["--out", str(out), *SHORT]
    if fresh:
        result = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=600)
    else:
        proc = warm.popen_script(script, args, stack="plain", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=600)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, "", err)
    assert result.returncode == 0, result.stderr[-3000:]
    weights = (out / "demo-model" / "model.safetensors").read_bytes()
    return hashlib.sha256(weights).hexdigest(), json.loads((out / "demo-model" / "build_info.json").read_text())


def test_two_builds_with_the_same_seed_are_identical(tmp_path):
    first_hash, first_info = _build(tmp_path / "a", fresh=True)
    second_hash, second_info = _build(tmp_path / "b", fresh=False)
    assert first_hash == second_hash
    assert first_info["history"] == second_info["history"]
    assert first_info["test_scored"] == 20
    for key in ("test_greedy_accuracy", "test_format_rate"):
        assert first_info[key] == second_info[key]
    assert first_info["sft_steps"] == 10  # the first check meets the (zero) target
    for split in ("train", "test"):
        assert (tmp_path / "a" / "demo-data" / f"{split}.jsonl").read_bytes() == (ROOT / "assets" / "demo-data" / f"{split}.jsonl").read_bytes(), \
            "the shipped demo data is what the build script generates"

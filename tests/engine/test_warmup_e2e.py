"""The format warm-up in a real run on the tiny model: supervised steps on the run's adapter before RLOO, their rows in
metrics.jsonl, the adapter they changed, RLOO after them, and a resume that does not repeat them; the evaluation and
the model card say it ran."""

from __future__ import annotations

import pytest
from helpers import only_run_dir, run_cli

from rloo_studio import runs
from rloo_studio.engine import warmup

pytestmark = pytest.mark.slow


def test_a_warmup_runs_before_rloo_changes_the_adapter_and_a_resume_skips_it(workspace):
    config = workspace.write_config(warmup={"enabled": True, "steps": 3, "batch_size": 4, "learning_rate": 1e-2},
                                    rloo={"max_steps": 2, "save_steps": 2})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    phase = [m for m in metrics if m.get("phase") == warmup.PHASE]
    assert [m["warmup/step"] for m in phase] == [1, 2, 3] and all(m["step"] == 0 for m in phase)
    assert all(m["warmup/loss"] > 0 and m["warmup/grad_norm"] > 0 for m in phase), phase
    # RLOO's steps follow, numbered from 1, and none of them carries a warm-up key.
    assert [m["step"] for m in metrics if "reward" in m] == [1, 2]
    assert metrics.index(phase[-1]) < min(i for i, m in enumerate(metrics) if "reward" in m)
    # The adapter moved: LoRA's B matrices start at zero and are not zero after the warm-up.
    from safetensors.torch import load_file

    saved = load_file(str(run_dir / warmup.WARMUP_DIR / "adapter_model.safetensors"))
    assert any(name.endswith("lora_B.weight") and t.abs().max() > 0 for name, t in saved.items())
    record = warmup.read_record(run_dir)
    assert record["finished"] and record["steps"] == 3 and record["check"]["n"] == warmup.CHECK_PROMPTS
    assert record["check"]["before"]["format_rate"]["n"] == warmup.CHECK_PROMPTS
    # The difficulty scan's summary before and after, sampled by the scan's own rule on the warmed-up adapter.
    for when in ("before", "after"):
        scanned = record["scan"][when]
        assert scanned["prompts"] == warmup.SCAN_PROMPTS and scanned["k"] > 1, scanned
        assert abs(sum(scanned["shares"].values()) - 1) < 1e-9 and scanned["formats"], scanned
        assert (run_dir / scanned["folder"] / runs.SCAN_FILE).is_file()
    status = runs.read_status(run_dir)
    assert status["state"] == "finished" and status["warmup"]["finished"]
    assert status["warmup"]["seconds"] > 0  # the time trial says the warm-up apart from the loading
    assert status["warmup"]["line"].startswith("A 3-step format warm-up (supervised LoRA")
    assert f"The difficulty scan of {warmup.SCAN_PROMPTS} training prompts" in status["warmup"]["line"], status["warmup"]["line"]
    assert "format warm-up step 3/3" in result.stdout

    # A resume from the RLOO checkpoint does not warm up again: the checkpoint's adapter holds the warm-up.
    result = run_cli("train", "--resume", run_dir, "rloo.max_steps=3", cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "format warm-up: done before the stop (3 steps); the checkpoint holds it" in result.stdout
    assert "format warm-up step" not in result.stdout
    metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    assert len([m for m in metrics if m.get("phase") == warmup.PHASE]) == 3
    assert [m["step"] for m in metrics if "reward" in m] == [1, 2, 3]

    # The model card of the export says it ran.
    from rloo_studio.engine.export import model_card
    from rloo_studio.config import RunConfig

    card = model_card(run_dir, RunConfig.load(run_dir / runs.CONFIG_FILE), "adapter", None, "")
    assert "- Format warm-up: A 3-step format warm-up (supervised LoRA" in card

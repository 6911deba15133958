"""The warm reward preview: *Sample and score* samples in the inference worker, which keeps the model
loaded, so a second preview reuses the same process and loads nothing; a chat and a preview share
that worker (one model held at a time) and shutting it down (as starting training does) frees it."""

from __future__ import annotations

from rloo_studio.config import RunConfig
from rloo_studio.inference import InferenceWorker
from rloo_studio.ui.rewards_tab import sample_and_score


def test_two_previews_reuse_one_worker_process_and_one_load(workspace, tmp_path):
    cfg = RunConfig.load(workspace.write_config())
    worker = InferenceWorker(log_path=tmp_path / "inference.log")
    stages: list[str] = []
    try:
        first = sample_and_score(worker, cfg, num_prompts=2, timeout_s=600, progress=lambda f, desc: stages.append(desc))
        assert not first.get("problems"), first.get("problems")
        assert len(first["rows"]) == 2 * 4 and set(first["functions"]) >= {"numeric_answer", "think_length"}
        pid = worker.pid
        assert pid is not None and first["worker"] == {"pid": pid, "loads": 1}

        second = sample_and_score(worker, cfg, prompt="What is 3 + 4?", answer="7", timeout_s=600,
                                  progress=lambda f, desc: stages.append(desc))
        assert not second.get("problems") and len(second["rows"]) == 4
        assert second["worker"] == {"pid": pid, "loads": 1}  # same process, no second load
        assert any("already loaded" in s for s in stages)

        # Another model (here: another dtype of it) is a different key: loaded once more, in the same process.
        cfg.model.dtype = "float32" if cfg.model.dtype != "float32" else "bfloat16"
        third = sample_and_score(worker, cfg, num_prompts=1, timeout_s=600)
        assert third["worker"] == {"pid": pid, "loads": 2}
    finally:
        worker.shutdown()
    assert worker.pid is None  # freed, as before training starts

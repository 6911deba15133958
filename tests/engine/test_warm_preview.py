"""The warm reward preview: *Sample and score* samples in the inference worker, which keeps the model
loaded, so a second preview reuses the same process and loads nothing; a chat and a preview share
that worker (one model held at a time) and shutting it down (as starting training does) frees it."""

from __future__ import annotations

import pytest
from helpers.app import warm_children

from rloo_studio.config import RunConfig
from rloo_studio.workers.inference import InferenceWorker
from rloo_studio.ui.rewards_tab import sample_and_score


@pytest.fixture(scope="module", autouse=True)
def _workers_from_the_warm_starter():
    """The workers here are forked from the tests' warm starter (helpers/app.py, `warm_children`): the same worker
    module with its imports done before the fork. tests/ui/test_app_chat.py covers the product's own process start."""
    with warm_children():
        yield


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


def test_sampled_previews_are_scored_without_loading_a_tokenizer_and_with_the_runs_beta(workspace, tmp_path):
    """The sampler brings every token id scoring needs (completions, probes, the `</think>` id), so the
    scoring child never imports transformers on a click; the ids are the tokenizer's own. The request
    carries the run's β, so the page says what KL adds to the advantages shown."""
    from transformers import AutoTokenizer

    from rloo_studio.protocol import Done, PreviewRequest
    from rloo_studio.rewards import think_end_token_id
    from rloo_studio.rewards.preview import group_probes, score, scoring_request, written_completion_ids

    cfg = RunConfig.load(workspace.write_config())
    cfg.rloo["beta"] = 0.05
    cfg.rloo["max_completion_length"] = 3  # most completions are cut off: the sampler says which
    worker = InferenceWorker(log_path=tmp_path / "inference.log")
    try:
        sampled = next(e.result for e in worker.preview(PreviewRequest(config=cfg.to_dict(), base_dir=str(cfg.base_dir),
                                                                        num_prompts=2, seed=0)) if isinstance(e, Done))
    finally:
        worker.shutdown()
    tokenizer = AutoTokenizer.from_pretrained(sampled["tokenizer"])
    assert sampled["think_end_token_id"] == think_end_token_id(tokenizer) is not None
    for group in sampled["groups"]:
        assert group["probe_completion_ids"] == {kind: written_completion_ids(text, tokenizer)
                                                 for kind, text in group_probes(group).items()}
        # Cut off = the whole budget without an end token, TRL's "clipped" (the rule of training's samples).
        assert group["cut_off"] == [len(ids) == 3 and ids[-1] != tokenizer.eos_token_id for ids in group["completion_ids"]]
    assert any(c for g in sampled["groups"] for c in g["cut_off"])

    request = scoring_request(cfg, sampled)
    request.tokenizer = str(tmp_path / "no-tokenizer-here")  # loading it would fail: nothing may need it
    (tmp_path / "no-tokenizer-here").mkdir()
    (tmp_path / "no-tokenizer-here" / "config.json").write_text("{}")
    result = score(request)
    assert len(result["rows"]) == 2 * int(cfg.rloo_value("num_generations"))
    assert "beta = 0.05" in result["advantage_note"]
    assert [r["cut_off"] for r in result["rows"]] == [c for g in sampled["groups"] for c in g["cut_off"]]


def test_on_a_cpu_the_worker_leaves_one_core_to_the_page_unless_told_otherwise(tmp_path, monkeypatch):
    """PyTorch's threads spin while waiting for each other: a worker using every core while the server and
    the browser need one ran the warm demo preview 3-5x slower (benchmarks/preview_click.py)."""
    from rloo_studio.procs import usable_cores

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    default = max(1, usable_cores() - 1)
    worker = InferenceWorker(log_path=tmp_path / "inference.log")
    try:
        assert worker.status()["cpu_threads"] == default
    finally:
        worker.shutdown()
    own = 1 if default > 1 else 2  # the person's own setting wins (PyTorch never uses more threads than cores)
    monkeypatch.setenv("OMP_NUM_THREADS", str(own))
    worker = InferenceWorker(log_path=tmp_path / "inference.log")
    try:
        assert worker.status()["cpu_threads"] == min(own, usable_cores())
    finally:
        worker.shutdown()

"""Batch and step words (rloo_studio.batching): the numbers TRL 1.15's RLOOConfig derives, the Train tab's
summary line, and where a generation cycle ends (where a run may stop or save)."""

from __future__ import annotations

import doctest

import pytest

import rloo_studio.batching as batching
from rloo_studio.batching import at_cycle_boundary, summary_line
from rloo_studio.config import RunConfig
from rloo_studio.rewards.scoring import advantage_caveat


def test_doctests():
    assert doctest.testmod(batching).failed == 0


def test_accumulation_and_processes_multiply_the_per_device_batch():
    plan = RunConfig(rloo={"per_device_train_batch_size": 8, "num_generations": 4, "gradient_accumulation_steps": 2}).batch_plan(processes=3)
    assert (plan.completions_per_step, plan.prompts_per_step) == (48, 12)
    assert plan.steps_per_generation == 2 and plan.generation_batch == 48 and plan.steps_per_cycle == 1
    line = summary_line(plan)
    assert "48 completions (8 per device × 2 accumulation steps × 3 processes) = 12 prompts × 4 completions" in line
    assert "generated for every step (48 at once)" in line


def test_generation_cycles_from_num_iterations_and_steps_per_generation():
    two_passes = RunConfig(rloo={"per_device_train_batch_size": 4, "num_generations": 4, "num_iterations": 2}).batch_plan()
    assert two_passes.steps_per_cycle == 2
    assert "every 2 steps (4 at once, each batch used for 2 passes): rewards are logged on those steps only" in summary_line(two_passes)
    # generation_batch_size as RLOOConfig reads it: steps_per_generation = 16 // (4 x 1)
    big = RunConfig(rloo={"per_device_train_batch_size": 4, "num_generations": 4, "generation_batch_size": 16}).batch_plan()
    assert (big.steps_per_generation, big.steps_per_cycle, big.generation_batch) == (4, 4, 16)
    assert "1 prompt × 4 completions" in summary_line(big) and "every 4 steps (16 at once)" in summary_line(big)


@pytest.mark.parametrize("rloo, boundaries", [
    ({}, [1, 2, 3, 4, 5, 6]),                                                      # defaults: every step
    ({"num_iterations": 2}, [2, 4, 6]),
    ({"steps_per_generation": 3}, [3, 6]),
    ({"gradient_accumulation_steps": 2, "steps_per_generation": 2, "num_iterations": 3}, [3, 6]),
    ({"gradient_accumulation_steps": 2, "steps_per_generation": 3}, [3, 6]),           # cycle of 1.5 steps
])
def test_cycle_boundaries(rloo, boundaries):
    plan = RunConfig(rloo={"per_device_train_batch_size": 4, "num_generations": 4, **rloo}).batch_plan()
    assert [s for s in range(1, 7) if at_cycle_boundary(s, plan)] == boundaries


def test_a_resume_starts_from_the_last_checkpoint_that_ends_a_cycle(tmp_path):
    from rloo_studio.engine.train import resume_checkpoint

    for step in (2, 4, 5):  # 5: the final checkpoint of a run whose max_steps ends mid-cycle
        folder = tmp_path / "checkpoints" / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "adapter_config.json").write_text("{}")
        (folder / "adapter_model.safetensors").write_bytes(b"weights")
        (folder / "trainer_state.json").write_text("{}")
    two_passes = RunConfig(rloo={"per_device_train_batch_size": 4, "num_generations": 4, "num_iterations": 2}).batch_plan()
    assert resume_checkpoint(tmp_path, two_passes) == (4, tmp_path / "checkpoints" / "checkpoint-4")
    defaults = RunConfig(rloo={"per_device_train_batch_size": 4, "num_generations": 4}).batch_plan()
    assert resume_checkpoint(tmp_path, defaults) == (5, tmp_path / "checkpoints" / "checkpoint-5")
    three = RunConfig(rloo={"per_device_train_batch_size": 4, "num_generations": 4, "steps_per_generation": 3}).batch_plan()
    assert resume_checkpoint(tmp_path, three) is None  # no checkpoint ends a cycle: start from step 0


def test_the_preview_says_what_beta_and_normalisation_change():
    assert advantage_caveat(0.0, False) is None and advantage_caveat(None, None) is None
    kl = advantage_caveat(0.05, False)
    assert "beta = 0.05" in kl and "same reward still moves" in kl and "Normalise" not in kl
    both = advantage_caveat(0.02, True)
    assert "beta = 0.02" in both and "Normalise advantages" in both and "standard deviation" in both


def test_train_tab_line_and_samples_table_words():
    from pathlib import Path

    from rloo_studio.workers.jobs import RunView
    from rloo_studio.ui import run_view
    from rloo_studio.ui.train_tab import batch_summary

    assert batch_summary(4, 16, 2).startswith(summary_line(RunConfig(rloo={"num_generations": 4, "per_device_train_batch_size": 16,
                                                                           "num_iterations": 2}).batch_plan()))
    assert "4 prompts × 4 completions" in batch_summary(4, 16, 2) and batch_summary(None, 16, 1) == ""
    samples = [{"step": 1, "prompt": "p", "answer": "a", "rewards": {"r": 1.0}, "total": 1.0, "kl_penalty": 0.01234567,
                "advantage": 0.5},
               {"step": 2, "prompt": "p", "answer": "b", "rewards": {"r": 0.0}, "total": 0.0, "kl_penalty": None, "advantage": -0.5}]
    view = RunView("r", Path("."), "running", {}, samples=samples)
    rows = run_view.samples_rows(view)
    kl, advantage = run_view.SAMPLE_HEADERS.index("KL penalty"), run_view.SAMPLE_HEADERS.index("advantage")
    assert [(r[kl], r[advantage]) for r in rows] == [("", -0.5), (0.0123, 0.5)]

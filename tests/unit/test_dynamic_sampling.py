"""Dynamic sampling (engine/dynamic_sampling.py): the whole-group test, the choice of groups, the rows joined again,
and the wrapper around a trainer's generate-and-score step: a tied group is dropped and refilled, within the cap."""

from __future__ import annotations

import math
from collections import defaultdict
from types import SimpleNamespace

import torch

from rloo_studio.engine.dynamic_sampling import (DROPPED_KEY, GENERATIONS_KEY, TIED_KEPT_KEY, DynamicSampler, choose,
                                                 join_rows, tied_groups)


def test_the_test_is_on_the_whole_group():
    # [1, 1, 1, 0]: three tied winners, whose advantages are +1/3 each under leave-one-out; the group is kept.
    assert tied_groups([[1.0], [1.0], [1.0], [0.0], [1.0], [1.0], [1.0], [1.0]], [1.0], None, 4) == [False, True]
    # Weighted totals, None (NaN) skipped as TRL's nansum does, and clipped as TRL clips them.
    assert tied_groups([[1.0, 0.0], [0.0, 2.0]], [1.0, 0.5], None, 2) == [True]
    assert tied_groups([[1.0, math.nan], [1.0, 0.0]], [1.0, 1.0], None, 2) == [True]
    assert tied_groups([[2.0], [3.0]], [1.0], (-1.0, 1.0), 2) == [True]


def test_informative_groups_first_then_tied_ones_to_fill_up():
    assert choose([[True, False], [False, True]], 2) == ([(0, 1), (1, 0)], 0)
    assert choose([[True, True], [True, False]], 2) == ([(1, 1), (0, 0)], 1)


def test_rows_of_rounds_padded_differently_are_joined():
    a = {"prompt_ids": torch.tensor([[0, 5], [0, 6], [7, 8], [7, 9]]), "prompt_mask": torch.tensor([[0, 1], [0, 1], [1, 1], [1, 1]]),
         "completion_ids": torch.tensor([[1], [2], [3], [4]]), "completion_mask": torch.ones(4, 1, dtype=torch.long),
         "old_logps": torch.tensor([0.1, 0.2, 0.3, 0.4]), "advantages": torch.tensor([1.0, -1.0, 0.0, 0.0])}
    b = {"prompt_ids": torch.tensor([[5], [6]]), "prompt_mask": torch.tensor([[1], [1]]),
         "completion_ids": torch.tensor([[1, 2, 3], [4, 0, 0]]), "completion_mask": torch.tensor([[1, 1, 1], [1, 0, 0]]),
         "old_logps": torch.tensor([0.5, 0.6]), "advantages": torch.tensor([0.5, -0.5])}
    out = join_rows([a, b], [(0, 0), (1, 0)], 2, 0, torch)
    assert out["prompt_ids"].tolist() == [[0, 5], [0, 6], [0, 5], [0, 6]]       # padded on the left
    assert out["prompt_mask"].tolist() == [[0, 1], [0, 1], [0, 1], [0, 1]]
    assert out["completion_ids"].tolist() == [[1, 0, 0], [2, 0, 0], [1, 2, 3], [4, 0, 0]]  # on the right
    assert out["completion_mask"].tolist() == [[1, 0, 0], [1, 0, 0], [1, 1, 1], [1, 0, 0]]
    assert out["advantages"].tolist() == [1.0, -1.0, 0.5, -0.5]


class _Trainer:
    """What the wrapper touches of TRL's RLOOTrainer: its two methods, the batch's groups of k, the dataset, metrics.
    Each prompt's rewards are scripted: a prompt named 'tied' gets equal rewards."""

    def __init__(self, dataset):
        self.num_generations = 2
        self.reward_weights = torch.tensor([1.0])
        self.reward_clip_range = None
        self.train_dataset = dataset
        self.model = SimpleNamespace(training=True)
        self.state = SimpleNamespace(global_step=3)
        self.processing_class = SimpleNamespace(pad_token_id=0)
        self._metrics = {"train": defaultdict(list)}
        self.generated = []

    def _calculate_rewards(self, inputs):
        return torch.tensor([[1.0] if x["prompt"].startswith("tied") else [float(i % 2)] for i, x in enumerate(inputs)])

    def _generate_and_score_completions(self, inputs):
        self.generated.append([x["prompt"] for x in inputs])
        rewards = self._calculate_rewards(inputs)
        n = len(inputs)
        return {"prompt_ids": torch.ones(n, 1, dtype=torch.long), "prompt_mask": torch.ones(n, 1, dtype=torch.long),
                "completion_ids": torch.arange(n).unsqueeze(1), "completion_mask": torch.ones(n, 1, dtype=torch.long),
                "old_logps": torch.zeros(n), "advantages": rewards[:, 0] - 0.5,
                "prompts": None}


def _batch(*prompts):
    return [{"prompt": p} for p in prompts for _ in range(2)]


def test_a_tied_group_is_dropped_and_refilled_from_new_prompts():
    trainer = _Trainer([{"prompt": "fresh"}])
    DynamicSampler(2, seed=42).install(trainer, torch)
    out = trainer._generate_and_score_completions(_batch("tied a", "good b"))
    assert trainer.generated == [["tied a"] * 2 + ["good b"] * 2, ["fresh"] * 4]
    # The kept rows: 'good b' (rows 2, 3 of round 0) and one group of 'fresh' (rows 0, 1 of round 1).
    assert out["completion_ids"].tolist() == [[2], [3], [0], [1]]
    m = trainer._metrics["train"]
    assert m[DROPPED_KEY] == [0.5] and m[GENERATIONS_KEY] == [2.0] and m[TIED_KEPT_KEY] == [0.0]


def test_the_cap_fills_the_batch_with_tied_groups_and_says_so():
    trainer = _Trainer([{"prompt": "tied again"}])
    DynamicSampler(1, seed=42).install(trainer, torch)
    out = trainer._generate_and_score_completions(_batch("tied a", "good b"))
    assert len(trainer.generated) == 2 and len(out["advantages"]) == 4
    m = trainer._metrics["train"]
    assert m[GENERATIONS_KEY] == [2.0] and m[TIED_KEPT_KEY] == [0.5] and m[DROPPED_KEY] == [0.5]
    # A batch with nothing tied passes through as TRL returned it.
    plain = _Trainer([])
    DynamicSampler(2, seed=42).install(plain, torch)
    plain._generate_and_score_completions(_batch("good a", "good b"))
    assert len(plain.generated) == 1 and plain._metrics["train"][DROPPED_KEY] == [0.0]


def test_the_config_keys_are_checked():
    from rloo_studio.config import RunConfig

    cfg = RunConfig.from_dict({"dynamic_sampling": {"enabled": True, "max_extra_generations": -1}})
    assert any(p.startswith("dynamic_sampling.max_extra_generations: -1 must be 0 or more") for p in cfg.validate())
    assert not any(p.startswith("dynamic_sampling.enabled") for p in cfg.validate())
    assert any(p.startswith("dynamic_sampling.enabled: works on one process, not 2") for p in cfg.validate(num_processes=2))


def test_the_train_tab_status_says_what_dynamic_sampling_dropped():
    from pathlib import Path

    from rloo_studio.workers.jobs import RunView
    from rloo_studio.ui.run_view import status_markdown

    rows = [{"step": 1, "reward": 0.5}, {"step": 2, "reward": 0.6, DROPPED_KEY: 0.5, GENERATIONS_KEY: 2.0, TIED_KEPT_KEY: 0.0},
            {"step": 3, "reward": 0.6, DROPPED_KEY: 0.75, GENERATIONS_KEY: 3.0, TIED_KEPT_KEY: 0.25}]
    shown = status_markdown(RunView("r", Path("."), "running", {"step": 3, "max_steps": 9}, rows))
    assert ("Dynamic sampling at step 3: 75% of the generated prompt groups left out (3 batches generated); "
            "25% of the batch trained on is tied groups the cap let in") in shown
    assert "Dynamic sampling" not in status_markdown(RunView("r", Path("."), "running", {"step": 1}, rows[:1]))

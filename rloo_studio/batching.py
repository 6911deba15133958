"""How a run's completions are grouped into optimiser steps and generation cycles (pure arithmetic).

TRL 1.15's RLOOTrainer (trl/trainer/rloo_trainer.py, `_prepare_inputs`; trl/trainer/rloo_config.py,
`__post_init__`) generates one *generation batch* of `per_device_train_batch_size × processes ×
steps_per_generation` completions, then trains on it for `steps_per_generation × num_iterations`
micro-batches before generating again. One optimiser step takes `gradient_accumulation_steps`
micro-batches. This module turns the `rloo` settings into those numbers, the one-line summary the
Train tab shows, and the rule for when a run may stop or save (only between generation cycles: TRL
does not checkpoint the completions it has generated but not yet trained on). No torch, no UI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class BatchPlan:
    per_device: int            # completions per process per micro-batch (per_device_train_batch_size)
    accumulation: int          # micro-batches per optimiser step (gradient_accumulation_steps)
    processes: int
    num_generations: int       # completions per prompt
    steps_per_generation: int  # micro-batches one generation batch is split into
    num_iterations: int        # passes over each generation batch

    @property
    def completions_per_step(self) -> int:
        return self.per_device * self.accumulation * self.processes

    @property
    def prompts_per_step(self) -> float:
        return self.completions_per_step / self.num_generations

    @property
    def new_prompts_per_step(self) -> float:
        """Prompts drawn from the data per optimiser step: a generation batch's prompts serve num_iterations passes."""
        return self.prompts_per_step / self.num_iterations

    @property
    def new_completions_per_step(self) -> float:
        """Completions generated (and scored by the rewards) per optimiser step: a generation batch serves num_iterations
        passes, so its rewards are computed once for that many steps' worth of training."""
        return self.completions_per_step / self.num_iterations

    @property
    def generation_batch(self) -> int:
        """Completions generated at once (all processes)."""
        return self.per_device * self.processes * self.steps_per_generation

    @property
    def micro_batches_per_cycle(self) -> int:
        return self.steps_per_generation * self.num_iterations

    @property
    def steps_per_cycle(self) -> float:
        """Optimiser steps between two generations (a fraction when the cycle ends mid-step)."""
        return self.micro_batches_per_cycle / self.accumulation


def _optional_int(value: Any) -> int | None:
    return None if value in (None, "") else int(value)


def batch_plan(rloo: Mapping[str, Any], processes: int = 1) -> BatchPlan:
    """The plan for a config's effective `rloo` values (`RunConfig.effective_rloo()`, or `RunConfig.batch_plan`), as
    RLOOConfig derives it. Every key it reads must be there: a default of its own here would be a second effective
    value (it was: TRL's k = 2 and batch 8 where the run used 4 and 4).

    >>> p = batch_plan({"per_device_train_batch_size": 8, "num_generations": 4, "gradient_accumulation_steps": 2,
    ...                 "num_iterations": 1})
    >>> p.completions_per_step, p.prompts_per_step, p.steps_per_cycle
    (16, 4.0, 1.0)
    """
    # At least 1 each: a config's 0 is refused by RunConfig.validate; the page's arithmetic must not divide by it first.
    per_device = max(1, int(rloo["per_device_train_batch_size"]))
    accumulation = max(1, int(rloo["gradient_accumulation_steps"]))
    steps_per_generation = _optional_int(rloo.get("steps_per_generation"))
    generation_batch = _optional_int(rloo.get("generation_batch_size"))
    if steps_per_generation is None:
        # RLOOConfig: from generation_batch_size when given, else one generation per optimiser step.
        steps_per_generation = generation_batch // (per_device * processes) if generation_batch else accumulation
    return BatchPlan(per_device, accumulation, max(1, processes), max(1, int(rloo["num_generations"])),
                     max(1, steps_per_generation), max(1, int(rloo["num_iterations"])))


def prompts_needed(plan: BatchPlan) -> int:
    """Training prompts one generation batch needs. Fewer in the data and TRL's sampler yields no batch at all: the run
    "finishes" at step 0 having trained nothing (engine/preflight refuses it; the Train tab says it before Start).

    >>> prompts_needed(BatchPlan(per_device=8, accumulation=8192, processes=1, num_generations=8,
    ...                          steps_per_generation=8192, num_iterations=1))
    8192
    """
    return plan.generation_batch // plan.num_generations


def per_device_that_fills(train_prompts: int, plan: BatchPlan) -> int | None:
    """The largest per-device batch whose generation batch `train_prompts` prompts fill: a multiple of k where one fits
    (as the Train tab's field asks), else one whose generation batch k divides (as RLOOConfig requires); None when even
    the smallest needs more (the steps per generation, or the processes, are too many).

    >>> per_device_that_fills(22, BatchPlan(256, 1, 1, 8, 1, 1)), per_device_that_fills(34, BatchPlan(4096, 16, 1, 8, 16, 1))
    (176, 16)
    >>> per_device_that_fills(22, BatchPlan(8, 8192, 1, 8, 8192, 1))
    """
    per_generation = plan.processes * plan.steps_per_generation  # the generation batch is per_device times this
    most = train_prompts * plan.num_generations // per_generation
    k = plan.num_generations
    if most >= k:
        return most - most % k
    for per_device in range(most, 0, -1):
        if per_device * per_generation % k == 0:
            return per_device
    return None


def plan_words(rloo: Mapping[str, Any]) -> str:
    """The effective trainer arguments beside the batch plan that change what a step does, in the Train tab's words:
    the optimiser, weight decay, warm-up, accumulation and seed (a config could leave them to a backend's defaults).

    >>> plan_words({"optim": "adamw_torch_fused", "weight_decay": 0.0, "warmup_steps": 0, "lr_scheduler_type": "linear",
    ...             "gradient_accumulation_steps": 1, "seed": 42})
    'Optimiser adamw_torch_fused, weight decay 0, 0 warm-up steps, linear learning-rate schedule, seed 42.'
    """
    warmup = rloo["warmup_steps"]
    # transformers 5 reads a warmup_steps below 1 as a fraction of the run's steps.
    warm = f"warm-up {100 * float(warmup):g} % of the steps" if 0 < float(warmup) < 1 else f"{float(warmup):g} warm-up steps"
    return (f"Optimiser {_name(rloo['optim'])}, weight decay {float(rloo['weight_decay']):g}, {warm}, "
            f"{_name(rloo['lr_scheduler_type'])} learning-rate schedule, seed {rloo['seed']}.")


def effective_line(rloo: Mapping[str, Any], processes: int = 1) -> str:
    """The batch plan and the other arguments of a step in one line (`summary_line` + `plan_words`): what the Train tab
    says before Start, and what train.log and the time trial say the trainer used (trainer_args.json)."""
    return f"{summary_line(batch_plan(rloo, processes))} {plan_words(rloo)}"


def _name(value: Any) -> str:
    """An option's name as the config writes it (transformers hands enums back: OptimizerNames.ADAMW_8BIT)."""
    return str(getattr(value, "value", value))


def at_cycle_boundary(step: int, plan: BatchPlan) -> bool:
    """True when optimiser step `step` ends a generation cycle: a stop or checkpoint here resumes exactly.

    >>> plan = batch_plan({"per_device_train_batch_size": 4, "num_generations": 4, "num_iterations": 2,
    ...                    "gradient_accumulation_steps": 1})
    >>> [s for s in range(1, 7) if at_cycle_boundary(s, plan)]
    [2, 4, 6]
    """
    return (step * plan.accumulation) % plan.micro_batches_per_cycle == 0


def cycle_end(step: int, plan: BatchPlan) -> int:
    """The first optimiser step from `step` on that ends a generation cycle: where a stop asked at `step` happens.

    >>> plan = batch_plan({"per_device_train_batch_size": 4, "num_generations": 4, "num_iterations": 4,
    ...                    "gradient_accumulation_steps": 1})
    >>> [cycle_end(s, plan) for s in (4, 5, 7, 8)]
    [4, 8, 8, 8]
    """
    while not at_cycle_boundary(step, plan):
        step += 1
    return step


def _count(n: float, word: str, plural: str | None = None) -> str:
    shown = f"{n:g}"
    return f"{shown} {word if shown == '1' else plural or word + 's'}"


def epochs(train_rows: int, plan: BatchPlan, steps: int) -> float:
    """Passes over the training prompts that `steps` optimiser steps make (each prompt seen about this many times).

    >>> epochs(54, BatchPlan(16, 1, 1, 4, 1, 1), 150)
    11.11111111111111
    """
    return steps * plan.new_prompts_per_step / train_rows


MANY_EPOCHS = 3  # seen more often than this, a prompt's answer is easier to memorise than to learn


def too_many_epochs(epochs_: float) -> bool:
    """More passes than MANY_EPOCHS, as `epochs_words` rounds them (3.2 reads "3 epochs" and is not flagged)."""
    return round(epochs_) > MANY_EPOCHS


def steps_for_epochs(train_rows: int, plan: BatchPlan, epochs_: float = MANY_EPOCHS) -> int:
    """Optimiser steps that make `epochs_` passes over the training prompts (at least 1); `epochs` inverted.

    >>> steps_for_epochs(54, BatchPlan(104, 1, 1, 8, 1, 1))
    12
    """
    return max(1, round(epochs_ * train_rows / plan.new_prompts_per_step))


def trained_steps_for_epochs(train_rows: int, plan: BatchPlan, epochs_: float) -> int:
    """The optimiser steps a run trains for `epochs_` (`num_train_epochs`, with max_steps -1), as TRL and transformers
    count them: TRL's RepeatSampler draws whole generation batches of prompts only (the rows past the last whole one
    are left out of the epoch), repeats each for its `steps_per_generation x num_iterations` micro-batches, and
    transformers rounds an epoch's micro-batches up to whole steps, then the epochs' steps up.

    50 rows, 16 prompts a step, 3 epochs: 3 whole batches an epoch, 9 steps (not the 10 that 150 / 16 rounds up to).

    >>> trained_steps_for_epochs(50, BatchPlan(32, 1, 1, 2, 1, 1), 3)
    9
    """
    prompts_per_generation = plan.generation_batch // plan.num_generations
    micro_batches = (train_rows // max(1, prompts_per_generation)) * plan.num_iterations * plan.steps_per_generation
    per_epoch = max(-(-micro_batches // plan.accumulation), 1)
    return math.ceil(epochs_ * per_epoch)


def epochs_words(epochs_: float, bold: bool = False) -> str:
    """'12 epochs (each prompt seen about 12 times)', '1 epoch (each prompt seen about once)', or under one epoch '0.03 epochs (3 % of the prompts seen once)'.

    >>> epochs_words(0.03)
    '0.03 epochs (3 % of the prompts seen once)'
    """
    mark = "**" if bold else ""
    if round(epochs_) == 1:
        return f"{mark}1 epoch{mark} (each prompt seen about once)"
    if epochs_ >= 1:
        return f"{mark}{epochs_:.0f} epochs{mark} (each prompt seen about {epochs_:.0f} times)"
    return f"{mark}{epochs_:.2g} epochs{mark} ({100 * epochs_:.0f} % of the prompts seen once)"


def epochs_sum(rows: int, steps: int, new_prompts_per_step: float, bold: bool = False) -> str:
    """How the epochs are counted, as the sum it is: the prompts the steps use over the rows there are.

    >>> epochs_sum(34, 15, 16)
    '15 steps × 16 new prompts per step ÷ 34 training rows = 7 epochs (each prompt seen about 7 times)'
    """
    return (f"{steps} steps × {new_prompts_per_step:g} new prompts per step ÷ {rows} training rows = "
            f"{epochs_words(steps * new_prompts_per_step / rows if rows else 0.0, bold)}")


def summary_line(plan: BatchPlan) -> str:
    """What one training step uses and how often completions are generated, in the Train tab's words.

    >>> print(summary_line(BatchPlan(per_device=8, accumulation=1, processes=1, num_generations=4, steps_per_generation=1,
    ...                              num_iterations=2)))
    Each step trains on 8 completions (8 per device × 1 accumulation step × 1 process) = 2 prompts × 4 completions. New completions are generated every 2 steps (8 at once, each batch used for 2 passes): rewards are logged on those steps only.
    """
    prompts = plan.prompts_per_step
    head = (f"Each step trains on {plan.completions_per_step} completions ({plan.per_device} per device × "
            f"{_count(plan.accumulation, 'accumulation step')} × {_count(plan.processes, 'process', 'processes')}) = "
            f"{_count(prompts, 'prompt')} × {plan.num_generations} completions.")
    cycle = plan.steps_per_cycle
    if cycle == 1:
        return head + f" New completions are generated for every step ({plan.generation_batch} at once)."
    passes = f", each batch used for {plan.num_iterations} passes" if plan.num_iterations > 1 else ""
    return (head + f" New completions are generated every {_count(cycle, 'step')} ({plan.generation_batch} at once{passes}): "
            "rewards are logged on those steps only.")

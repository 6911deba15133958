"""Timing each training step by part: generation, reward scoring, log-prob passes, optimisation and the rest.

`StepTimer` wraps the trainer's own methods on the instance (the same names on TRL's RLOOTrainer and on Unsloth's
copy of it) and times each call exclusively: a part that runs inside another (generation inside the training step
that asked for it) is taken out of the outer one, so no second is counted twice. The parts, in seconds per step:

* `time/generation`: sampling the completions (`_generate`: tokenising the prompts, `generate`, decoding);
* `time/rewards`: the reward functions (`_calculate_rewards`);
* `time/logprobs`: log-probability passes without gradients (TRL's "old" policy pass, the reference model's);
* `time/optimizer`: the training forward and backward passes, gradient clipping and the optimizer's step;
* `time/other`: the rest of the step's wall time (batching, advantages, logging, status and checkpoint writing).

`time/step` is the wall time from the end of one step to the end of the next (the first step from the start of
training), so the five parts add up to it; `tokens_per_s` is completion tokens generated per second of generation,
in this process. With `logging_steps` > 1 each value is the mean over the steps since the last logged one. With
several processes each times its own work, and rank 0's numbers are the ones recorded. On a GPU the parts are the
CPU's view: kernels still queued when a part ends are counted in the part that next waits for them (no
synchronisation is added to measure them, which would slow training). The keys are
rloo_studio/runs/step_time.py's.
"""

from __future__ import annotations

import time

from ..runs.step_time import PARTS, STEP_KEY, TOKENS_KEY


class StepTimer:
    """Times a trainer's steps by part; `callback()` gives the TrainerCallback that closes each step's window."""

    def __init__(self, trainer, torch, clock=time.perf_counter):
        self.torch, self.clock = torch, clock
        self._stack: list[list] = []  # [part, started, seconds spent in nested timed calls]
        self._totals = dict.fromkeys(PARTS, 0.0)
        self._tokens = 0
        self._window_start: float | None = None
        self._window_seconds, self._window_steps = 0.0, 0
        # The "other" part of these is what they do besides the timed calls inside them (batching, advantages).
        self._wrap(trainer, "_generate_and_score_completions", "other")
        self._wrap(trainer, "_generate", "generation", count_tokens=True)
        self._wrap(trainer, "_calculate_rewards", "rewards")
        self._wrap(trainer, "_get_per_token_logps_and_entropies", None)  # with gradients: the training forward
        self._wrap(trainer, "training_step", "optimizer")
        self._wrap(trainer, "_clip_grad_norm", "optimizer")

    def _wrap(self, trainer, name: str, part: str | None, count_tokens: bool = False) -> None:
        original = getattr(trainer, name, None)
        if original is None:  # another TRL version: that part is then counted in the part around it
            return

        def timed(*args, **kwargs):
            chosen = part or ("optimizer" if self.torch.is_grad_enabled() else "logprobs")
            self._enter(chosen)
            try:
                result = original(*args, **kwargs)
            finally:
                self._leave()
            if count_tokens:
                self._tokens += _completion_tokens(result)
            return result

        setattr(trainer, name, timed)

    def _enter(self, part: str) -> None:
        self._stack.append([part, self.clock(), 0.0])

    def _leave(self) -> None:
        part, started, nested = self._stack.pop()
        spent = self.clock() - started
        self._totals[part] += spent - nested
        if self._stack:
            self._stack[-1][2] += spent

    def start(self) -> None:
        """Training starts: the first step's window opens."""
        self._window_start = self.clock()

    def step_ended(self) -> None:
        """One optimizer step ended (on_step_end): its window closes and the next one opens."""
        now = self.clock()
        if self._window_start is not None:
            self._window_seconds += now - self._window_start
            self._window_steps += 1
        self._window_start = now

    def take(self) -> dict:
        """The per-step means since the last call, as metrics.jsonl keys; {} when no step ended since."""
        steps = self._window_steps
        if not steps:
            return {}
        measured = {part: self._totals[part] for part in PARTS if part != "other"}
        other = self._window_seconds - sum(measured.values())
        out = {f"time/{part}": round(seconds / steps, 4) for part, seconds in measured.items()}
        out["time/other"] = round(other / steps, 4)
        out[STEP_KEY] = round(self._window_seconds / steps, 4)
        if self._totals["generation"] > 0:
            out[TOKENS_KEY] = round(self._tokens / self._totals["generation"], 2)
        self._totals = dict.fromkeys(PARTS, 0.0)
        self._tokens, self._window_seconds, self._window_steps = 0, 0.0, 0
        return out

    def callback(self, transformers):
        timer = self

        class StepTimeCallback(transformers.TrainerCallback):
            """Opens the first step's window when training begins and closes each step's window at its end."""

            def on_train_begin(self, args, state, control, **kwargs):
                timer.start()

            def on_pre_optimizer_step(self, args, state, control, **kwargs):
                timer._enter("optimizer")

            def on_optimizer_step(self, args, state, control, **kwargs):
                timer._leave()

            def on_step_end(self, args, state, control, **kwargs):
                timer.step_ended()

        return StepTimeCallback()


def _completion_tokens(generated) -> int:
    """Completion tokens in what `_generate` returned: (prompt_ids, completion_ids, completions), ids as lists."""
    try:
        return sum(len(ids) for ids in generated[1])
    except (TypeError, IndexError):
        return 0


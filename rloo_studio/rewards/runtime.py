"""Reward functions at training time: checking what they return, and recording samples.

`guard` wraps a reward function so a misbehaving one fails with a message naming the function
and what was wrong (an exception with its line in the user's file, the wrong number of values,
a value that is not a number or is infinite) instead of a stack trace from deep inside TRL. The
wrapper keeps the function's `__name__`, which TRL uses for metric names. `check_reward_values` is
that check on its own; the reward preview uses it too, so both give the same verdict and message.

`SampleRecorder` sees every function's values for a generation batch and, once the trainer hands
over the advantages it trains on (TRL's own tensor: leave-one-out on the total, clipped to
`reward_clip_range` when set, minus beta x KL, normalised when `normalize_advantages` is on), appends a few
prompt groups to samples.jsonl with per-function rewards, the weighted total as TRL goes on with it (clipped),
the KL penalty and that advantage, and whether the completion was cut off (TRL's "clipped": it used the whole
max_completion_length without an end token; `budget` and `end_ids` come from the training code). It knows
nothing about models; it writes through a callback.
"""

from __future__ import annotations

import asyncio
import functools
import math
import numbers
import threading
from typing import Callable, Sequence

from ..errors import RewardError
from .builtin import completion_text, split_thinking
from .scoring import clipped_totals, weighted_totals
from .user import describe_call_error, missing_module_fix


def check_reward_values(values, name: str, expected: int) -> list[float | None]:
    """The one verdict on what a reward function returned, used by training (`guard`) and the preview alike.

    Returns one float or None per completion; raises RewardError naming the function otherwise.
    What counts, and why (TRL 1.15, trl/trainer/rloo_trainer.py, `_generate_and_score_completions`):

    * None means "does not apply to this completion"; TRL turns it into NaN
      (`reward if reward is not None else torch.nan`) and combines functions with `nansum`,
      baselines with `nansum`/`nanmean`. A NaN the function returns is therefore exactly a None
      to the trainer, so it is accepted and returned as None (stored as null in samples.jsonl).
    * inf is refused: `nansum` keeps it, the leave-one-out baseline becomes inf or NaN, and
      `nan_to_num` turns the advantages into ±3.4e38 or 0 — one value wrecks the whole group.
    * bools and numpy/torch scalars are numbers (TRL's `torch.tensor(...)` takes them);
      strings and other objects are refused, as is a count that differs from the completions.

    >>> check_reward_values([1, None, float("nan"), True], "r", 4)
    [1.0, None, None, 1.0]
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) and not hasattr(values, "tolist"):
        raise RewardError(
            f"reward function `{name}` returned {type(values).__name__}, not a list",
            "training needs one float (or None) per completion",
            f"return a list with {expected} numbers, e.g. `return [1.0 for _ in completions]`",
        )
    if hasattr(values, "tolist"):  # numpy arrays and tensors
        values = values.tolist()
    values = list(values)
    if len(values) != expected:
        raise RewardError(
            f"reward function `{name}` returned {len(values)} values for {expected} completions",
            "training needs exactly one value per completion, in the same order",
            "return one float (or None) per item of `completions`",
        )
    out: list[float | None] = []
    for i, v in enumerate(values):
        if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # a numpy or torch scalar
            try:
                v = v.item()
            except (TypeError, ValueError):
                pass
        if v is None:
            out.append(None)
        elif not isinstance(v, numbers.Real):
            raise RewardError(
                f"reward function `{name}` returned {v!r} ({type(v).__name__}) for completion #{i}",
                "each value must be a number, or None when the reward does not apply",
                "convert it with float(...) or return None",
            )
        elif math.isnan(v):
            out.append(None)  # TRL treats NaN exactly as None: not applicable
        elif math.isinf(v):
            raise RewardError(
                f"reward function `{name}` returned {float(v)!r} for completion #{i}",
                "rewards must be finite: one infinite reward makes the leave-one-out baselines and advantages of its "
                "whole prompt group infinite or NaN",
                "clip the value to a finite range (e.g. `max(-10.0, min(10.0, x))`), or return None when the reward "
                "does not apply",
            )
        else:
            out.append(float(v))
    return out


def timeout_error(name: str, timeout_s: float, run_dir=None) -> RewardError:
    """What a reward call that outlived its time limit is reported as (training stops; the checkpoint stays)."""
    resume = f"rloo-studio train --resume {run_dir}" if run_dir else "rloo-studio train --resume RUN_DIR"
    return RewardError(
        f"reward function `{name}` did not return within its time limit of {timeout_s:g} s on one batch, so training was stopped",
        "a reward that hangs (waiting on a network call, a lock, an endless loop) would otherwise stop the run forever; "
        "the last saved checkpoint is intact",
        f"make the function faster or fix what it waits for, or give its reward entry a larger `timeout_s` "
        f"(e.g. timeout_s: {max(600.0, 4 * timeout_s):g}); then continue with `{resume}`",
    )


class _Watchdog:
    """Calls `on_timeout()` from a timer thread when the guarded call runs past `timeout_s`.

    A thread cannot interrupt a call stuck in C code or a sleep, so the handler must end the process
    itself (training records the failure first, see engine/train.py); a call that returns in time
    cancels the timer."""

    def __init__(self, timeout_s: float | None, on_timeout: Callable[[], None] | None):
        self.timer = None
        if timeout_s and on_timeout is not None:
            self.timer = threading.Timer(timeout_s, on_timeout)
            self.timer.daemon = True

    def __enter__(self):
        if self.timer is not None:
            self.timer.start()
        return self

    def __exit__(self, *exc):
        if self.timer is not None:
            self.timer.cancel()


def guard(func: Callable, name: str, source_file: str | None = None,
          on_values: Callable[[str, dict, list], None] | None = None,
          timeout_s: float | None = None, on_timeout: Callable[[str, float], None] | None = None) -> Callable:
    """Wrap `func` with output checks and error messages; `on_values(name, kwargs, values)` sees results.

    With `timeout_s` and `on_timeout`, a call that runs longer than `timeout_s` calls `on_timeout(name,
    timeout_s)` from a timer thread; it reports `timeout_error` and is expected to end the process."""
    expire = (lambda: on_timeout(name, timeout_s)) if timeout_s and on_timeout is not None else None

    def finish(kwargs, values):
        checked = check_reward_values(values, name, len(kwargs["completions"]))
        if on_values is not None:
            on_values(name, kwargs, checked)
        return checked

    def fail(exc: BaseException, kwargs):
        # Out-of-memory and a second Ctrl-C are not the reward's fault: let the worker handle them.
        if isinstance(exc, (RewardError, KeyboardInterrupt)) or type(exc).__name__ == "OutOfMemoryError":
            raise exc
        completions = kwargs.get("completions") or []
        first = completion_text(completions[0])[:200] if completions else ""
        raise RewardError(
            f"reward function `{name}` raised {type(exc).__name__}" + (f": {exc}" if str(exc) else ""),
            f"at {describe_call_error(exc, name, source_file)}; first completion of the batch: {first!r}",
            missing_module_fix(exc) or "fix the function so it handles every completion (return None for ones it cannot score)",
        ) from exc

    if asyncio.iscoroutinefunction(func):
        @functools.wraps(func)
        async def guarded_async(**kwargs):
            try:
                with _Watchdog(timeout_s, expire):
                    values = await func(**kwargs)
            except BaseException as exc:  # noqa: BLE001 - SystemExit from user code must not end training silently
                fail(exc, kwargs)
            return finish(kwargs, values)
        wrapper = guarded_async
    else:
        @functools.wraps(func)
        def guarded(**kwargs):
            try:
                with _Watchdog(timeout_s, expire):
                    values = func(**kwargs)
            except BaseException as exc:  # noqa: BLE001
                fail(exc, kwargs)
            return finish(kwargs, values)
        wrapper = guarded
    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


class SampleRecorder:
    """Collects every reward function's values for one generation batch, then writes sample rows
    once the trainer hands over the advantages it trains on (`on_trained`)."""

    def __init__(self, names: Sequence[str], weights: Sequence[float], num_generations: int,
                 groups_per_step: int, write: Callable[[list[dict]], None], enabled: bool = True,
                 clip_range: Sequence[float] | None = None, budget: int | None = None, end_ids: Sequence[int] = ()):
        self.budget, self.end_ids = budget, set(end_ids)  # what makes a completion "cut off"
        self.names = list(names)
        self.clip_range = clip_range  # TRL's reward_clip_range: the totals recorded are the clipped ones it trains on
        self.weights = list(weights)
        self.num_generations = num_generations
        self.groups_per_step = groups_per_step
        self.write = write
        self.enabled = enabled and groups_per_step > 0
        self._lock = threading.Lock()
        self._batch_key: int | None = None
        self._values: dict[str, list] = {}
        self._scored: tuple[dict, dict[str, list]] | None = None  # a batch every function has scored
        self._held: list[list[dict]] | None = None  # while `hold`: each generated batch's rows, until `release`

    def on_values(self, name: str, kwargs: dict, values: list) -> None:
        if not self.enabled:
            return
        with self._lock:
            key = id(kwargs["completions"])  # TRL passes the same list object to every function of a batch
            if key != self._batch_key:
                self._batch_key, self._values = key, {}
            self._values[name] = values
            if len(self._values) == len(self.names):
                self._scored = (kwargs, self._values)
                self._batch_key, self._values = None, {}

    def on_trained(self, advantages: Sequence[float], kl_penalties: Sequence[float] | None) -> None:
        """The batch just scored is trained with these per-completion advantages (TRL's own tensor, this
        process's part, in the order the reward functions saw) and KL penalties (beta x sequence KL; None
        when beta is 0): write its sample rows."""
        with self._lock:
            scored, self._scored = self._scored, None
        if not self.enabled:
            return
        rows = [] if scored is None else self._rows(*scored, list(advantages), None if kl_penalties is None else list(kl_penalties))
        if self._held is not None:  # one entry per generated batch, so the batch's number is its place here
            self._held.append(rows)
        elif rows:
            self.write(rows)

    def hold(self) -> None:
        """Keep the rows of the batches generated from now on until `release` says which groups are trained on
        (dynamic sampling generates several batches for one step and trains on some of their groups)."""
        self._held = []

    def release(self, trained: set[tuple[int, int]] | None, tied: Sequence[Sequence[bool]] = ()) -> None:
        """Write the held rows, each with its batch's number (`round`); those of a group not in `trained` ((batch,
        group) pairs) marked `left_out`: "tied" when `tied[batch][group]` (all its totals equal), else "extra" (an
        informative group beyond what the step's batch holds). Shown, so what the step generated is seen, but not as
        trained on. `trained` None: which were trained is not known (the step failed); the rows are written unmarked."""
        held, self._held = self._held or [], None
        rows = []
        for number, batch in enumerate(held):
            for row in batch:
                row = {**row, "round": number}
                if trained is not None and (number, row["group"]) not in trained:
                    flags = tied[number] if number < len(tied) else ()
                    row["left_out"] = "tied" if row["group"] < len(flags) and flags[row["group"]] else "extra"
                rows.append(row)
        if rows:
            self.write(rows)

    def _rows(self, kwargs: dict, values: dict[str, list], advantages: list[float], kl_penalties: list[float] | None) -> list[dict]:
        completions, prompts = kwargs["completions"], kwargs.get("prompts") or [None] * len(kwargs["completions"])
        ids = kwargs.get("completion_ids")
        k = self.num_generations
        if len(completions) < k or len(advantages) != len(completions):
            return []  # this process holds only part of a prompt group (several processes); nothing to show
        per_function = [values[n] for n in self.names]
        usable = len(completions) - len(completions) % k
        unclipped = weighted_totals([v[:usable] for v in per_function], self.weights)
        totals = clipped_totals(unclipped, self.clip_range)
        state = kwargs.get("trainer_state")
        # Completions generated while global_step == s are first used for optimizer step s + 1.
        step = int(getattr(state, "global_step", 0) or 0) + 1
        rows = []
        for group in range(min(self.groups_per_step, usable // k)):
            for j in range(group * k, group * k + k):
                text = completion_text(completions[j])
                # As the page shows it: a thought cut off before it closed is thinking, and no reply came.
                thinking, answer = split_thinking(text, streaming=True)
                rows.append({
                    "step": step,
                    "group": group,
                    "prompt": prompt_display(prompts[j]),
                    "completion": text,
                    "thinking": thinking,
                    "answer": answer,
                    "rewards": {n: per_function[i][j] for i, n in enumerate(self.names)},
                    "total": totals[j],
                    **({"total_before_clip": unclipped[j]} if self.clip_range else {}),
                    "kl_penalty": None if kl_penalties is None else kl_penalties[j],
                    "advantage": advantages[j],
                    "cut_off": self._cut_off(ids[j]) if ids is not None and j < len(ids) else None,
                })
        return rows


    def _cut_off(self, ids) -> bool | None:
        """`cut_off` for this run's budget; None when the budget is not known."""
        return None if self.budget is None else cut_off(ids, self.budget, self.end_ids)


def cut_off(ids, budget: int, end_ids) -> bool:
    """Whether a completion (its token ids as TRL passes them: up to and including the first end id) used the whole
    token budget without ending: cut off, not finished (TRL's "clipped"). The one rule of training's samples, the
    preview's sampled completions and the evaluation's truncation rate.

    >>> cut_off([5, 6, 7], 3, {2}), cut_off([5, 6, 2], 3, {2}), cut_off([5, 2], 3, {2})
    (True, False, False)
    """
    ids = list(ids)
    return len(ids) >= budget and (not ids or int(ids[-1]) not in set(end_ids))


def prompt_display(prompt) -> str | None:
    """A prompt as the pages show it: its text, or a chat's messages one a line with their roles ("[system] …")."""
    if prompt is None or isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in prompt if isinstance(m, dict))
    return str(prompt)


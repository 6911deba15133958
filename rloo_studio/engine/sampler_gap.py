"""The sampler's and the trainer's log-probabilities of the same tokens, side by side on every step vLLM samples.

With fast generation (engine/fast_generation.py) vLLM samples a step's completions and the trainer scores them again
with its own forward pass (TRL's no-grad "old" pass right after generation). The two engines compute one model in
different ways (other kernels, bf16 rounding, the adapter copied into vLLM at each step), so they give a token
somewhat different probabilities. RLOO in TRL 1.15 trains as if the trainer had sampled (GRPO's importance-sampling
correction has no RLOO counterpart) and asks vLLM for no log-probabilities at all (`logprobs=None`). `install` makes
it ask for the sampled token's own (`logprobs=0`), keeps them, and once the trainer's pass has scored the same tokens
adds two numbers to the step's metrics, in nats per completion token:

* `sampler/logprob_gap` (alerts.SAMPLER_GAP_KEY): the mean of |trainer − sampler|;
* `sampler/logprob_shift` (alerts.SAMPLER_SHIFT_KEY): the mean of trainer − sampler, a lean to one side (e.g. one
  engine applying the temperature and the other not).

runs/alerts.py raises "Sampler drifting from trainer" on them. Nothing is installed when vLLM does not sample: the
transformers path samples with the trainer's own model, and the gap is zero by construction. With several processes
each logs the tokens it sampled; rank 0's numbers are the ones recorded, as for the step timings.
"""

from __future__ import annotations

from ..runs.alerts import SAMPLER_GAP_KEY, SAMPLER_SHIFT_KEY


def token_gap(sampled: list[list[float | None]], trainer: list[list[float]], mask: list[list[int]]) -> tuple[float, float] | None:
    """(mean |trainer − sampler|, mean trainer − sampler) over the completion tokens both scored; None if none.

    `sampled[i][t]`: the sampler's log-probability of completion i's token t (None where it gave none);
    `trainer[i][t]` and `mask[i][t]`: the trainer's, on TRL's padded rows, and TRL's completion mask (1 up to and
    including the end token).

    >>> token_gap([[-1.0, -2.0], [-0.5]], [[-1.1, -1.9, 0.0], [-0.5, 0.0, 0.0]], [[1, 1, 0], [1, 0, 0]])
    (0.06666666666666672, 0.0)
    """
    total_abs = total = 0.0
    count = 0
    for row_sampled, row_trainer, row_mask in zip(sampled, trainer, mask):
        for t, logp in enumerate(row_sampled):
            if logp is None or t >= len(row_trainer) or not row_mask[t]:
                continue
            difference = row_trainer[t] - logp
            total_abs += abs(difference)
            total += difference
            count += 1
    return None if count == 0 else (total_abs / count, total / count)


def install(trainer) -> bool:
    """Log the sampler ↔ trainer gap on `trainer` when vLLM samples its completions; returns whether it was installed."""
    generation = getattr(trainer, "vllm_generation", None)
    if not getattr(trainer, "use_vllm", False) or generation is None:
        return False
    if getattr(generation, "logprobs", None) is None:
        generation.logprobs = 0  # the sampled token's own log-probability, and no others (no extra cost to speak of)
    seen: dict = {"sampled": None, "scoring": False, "trainer": None}
    generate, generate_and_score, logprobs = (generation.generate, trainer._generate_and_score_completions,
                                              trainer._get_per_token_logps_and_entropies)

    def generate_(*args, **kwargs):
        result = generate(*args, **kwargs)
        # (prompt_ids, completion_ids, logprobs, logprob_token_ids); logprobs[i][t] lists the sampled token's first.
        seen["sampled"] = [[(token[0] if token else None) for token in row] for row in result[2]] if result[2] else None
        return result

    def get_per_token_logps_and_entropies(model, *args, **kwargs):
        out = logprobs(model, *args, **kwargs)
        if seen["scoring"] and seen["trainer"] is None:
            seen["trainer"] = out[0]  # the first pass after generation is the trainer's own, on the sampled tokens
        return out

    def generate_and_score_completions(*args, **kwargs):
        seen.update(sampled=None, scoring=True, trainer=None)
        try:
            output = generate_and_score(*args, **kwargs)
        finally:
            seen["scoring"] = False
        trainer_logps, sampled = seen["trainer"], seen["sampled"]
        if trainer_logps is not None and sampled is not None and "completion_mask" in output:
            gap = token_gap(sampled, trainer_logps.float().tolist(), output["completion_mask"].tolist())
            if gap is not None:
                metrics = trainer._metrics["train" if trainer.model.training else "eval"]
                metrics[SAMPLER_GAP_KEY].append(gap[0])
                metrics[SAMPLER_SHIFT_KEY].append(gap[1])
        seen.update(sampled=None, trainer=None)
        return output

    generation.generate = generate_
    trainer._get_per_token_logps_and_entropies = get_per_token_logps_and_entropies
    trainer._generate_and_score_completions = generate_and_score_completions
    return True

"""Dynamic sampling (as in DAPO) around TRL's RLOOTrainer, which has no such option: prompt groups whose completions
all got the same total reward are dropped from the batch and new prompts are sampled to fill it.

RLOO's advantage is a completion's reward minus the mean of the other completions to the same prompt, so a group tied
on reward teaches nothing about the task (with beta > 0 its advantages come from KL alone). The test is on the whole
group — every scored total equal, after `reward_clip_range` as TRL clips it (`scoring.all_equal_groups`, the rule the
no-signal alert and the preview use) — never a per-completion "peers equal" mask: under leave-one-out, in a group of
[1, 1, 1, 0] each 1 has peers that differ, and in [1, 1, 1, 1] each has equal peers, but it is the group that carries
signal or not.

How: `DynamicSampler.install(trainer)` wraps `_generate_and_score_completions` and `_calculate_rewards` on this one
trainer object (TRL's own code runs unchanged). Each generation batch is generated and scored as TRL does; the tied
groups are set aside and further batches of prompts, drawn at random from the training set (seeded by the run's seed
and the step, so a resumed run draws the same), are generated and scored, at most `max_extra_generations` times, until
the batch holds as many informative groups as it had groups. When the cap is reached first, the batch is filled up
with tied groups (trained on as TRL would have). The rows kept are joined, re-padded, into the dict TRL goes on with.

Per step, metrics.jsonl gets `dynamic_sampling/dropped_share` (the share of generated groups left out),
`dynamic_sampling/generations` (batches generated) and `dynamic_sampling/tied_kept_share` (the share of the trained
batch that is tied groups the cap let in). TRL's own reward metrics and the alerts' `no_signal_share` count every
generated group, dropped ones included. samples.jsonl keeps the rows of every batch generated (`round`: its number within
the step), those of a group left out marked `left_out` ("tied", or "extra": an informative group past what the batch holds), which
the samples table says was not trained on. One process only: with several, each rank would drop different groups and the
gathered rewards would no longer line up with the rows.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from ..runs import alerts
from ..rewards.scoring import all_equal_groups, clipped_totals, weighted_totals

DROPPED_KEY, GENERATIONS_KEY, TIED_KEPT_KEY = alerts.DROPPED_SHARE_KEY, alerts.GENERATIONS_KEY, alerts.TIED_KEPT_SHARE_KEY
# Rows TRL returns per completion, padded on the left (prompts) or right (completions), or one value per completion.
_LEFT_PADDED = ("prompt_ids", "prompt_mask")
_RIGHT_PADDED = ("completion_ids", "completion_mask")
_PER_ROW = ("old_logps", "advantages")


def tied_groups(rewards_per_func: Sequence[Sequence[float]], weights: Sequence[float],
                clip_range: Sequence[float] | None, k: int) -> list[bool]:
    """Per prompt group: True when every scored total (weighted, clipped as TRL does) is the same.
    `rewards_per_func` is one row per completion, one column per function (NaN for None), as TRL holds them."""
    columns = [list(col) for col in zip(*rewards_per_func)] if rewards_per_func else []
    totals = clipped_totals(weighted_totals(columns, weights), clip_range)
    return all_equal_groups(totals, k)


def choose(tied_per_round: Sequence[Sequence[bool]], needed: int) -> tuple[list[tuple[int, int]], int]:
    """(round, group) of the groups to train on — informative ones first, in the order generated, then tied ones to
    fill up — and how many tied ones were needed."""
    informative = [(r, g) for r, flags in enumerate(tied_per_round) for g, tied in enumerate(flags) if not tied]
    tied = [(r, g) for r, flags in enumerate(tied_per_round) for g, tied_ in enumerate(flags) if tied_]
    picked = informative[:needed]
    filler = tied[:needed - len(picked)]
    return picked + filler, len(filler)


def join_rows(outputs: Sequence[dict], picks: Sequence[tuple[int, int]], k: int, pad_id: int, torch) -> dict:
    """The picked groups' rows of each round's output, joined into one dict of TRL's shape (padded again: each
    round padded its prompts and completions to its own longest)."""
    out: dict[str, Any] = {}
    for key in outputs[0]:
        parts = [outputs[r][key][g * k:(g + 1) * k] if outputs[r][key] is not None else None for r, g in picks]
        if any(p is None for p in parts):
            out[key] = None
        elif key in _LEFT_PADDED or key in _RIGHT_PADDED:
            width = max(p.shape[1] for p in parts)
            value = pad_id if key.endswith("_ids") else 0
            padded = []
            for p in parts:
                fill = torch.full((p.shape[0], width - p.shape[1]), value, dtype=p.dtype, device=p.device)
                padded.append(torch.cat([fill, p] if key in _LEFT_PADDED else [p, fill], dim=1))
            out[key] = torch.cat(padded, dim=0)
        elif key in _PER_ROW:
            out[key] = torch.cat(parts, dim=0)
        else:
            raise ValueError(f"dynamic sampling cannot join TRL's {key!r} rows (multimodal batches are not supported)")
    return out


class DynamicSampler:
    def __init__(self, max_extra_generations: int, seed: int, active: bool = True, recorder=None):
        self.max_extra = int(max_extra_generations)
        self.seed = int(seed)
        # Off: TRL's step as it is. Installed off for a run that may switch it on (alerts.on_no_signal: dynamic_sampling).
        self.active = active
        # The sample rows' recorder (rewards.runtime.SampleRecorder): it sees every batch generated, and is told which
        # groups were trained on, so the samples table marks the ones left out.
        self.recorder = recorder

    def install(self, trainer, torch) -> None:
        generate_and_score = trainer._generate_and_score_completions
        calculate_rewards = trainer._calculate_rewards
        captured: list = []

        def capture(*args, **kwargs):
            result = calculate_rewards(*args, **kwargs)
            captured.append(result)
            return result

        def generate_score_and_select(inputs):
            if not trainer.model.training or not self.active:
                return generate_and_score(inputs)
            k = int(trainer.num_generations)
            needed = len(inputs) // k
            weights = trainer.reward_weights.tolist()
            clip = getattr(trainer, "reward_clip_range", None)
            draw = random.Random(self.seed * 1_000_003 + int(trainer.state.global_step))
            outputs, tied_per_round = [], []
            batch = inputs
            picks = None
            if self.recorder is not None:
                self.recorder.hold()
            try:
                for _ in range(self.max_extra + 1):
                    captured.clear()
                    outputs.append(generate_and_score(batch))
                    rewards = captured[-1].detach().float().cpu().tolist() if captured else []
                    tied_per_round.append(tied_groups(rewards, weights, clip, k))
                    if sum(not t for flags in tied_per_round for t in flags) >= needed:
                        break
                    size = len(trainer.train_dataset)  # a batch as large as TRL's; fewer rows than that: drawn with repeats
                    rows = draw.sample(range(size), needed) if size >= needed else draw.choices(range(size), k=needed)
                    batch = [trainer.train_dataset[i] for i in rows for _ in range(k)]
                picks, filled = choose(tied_per_round, needed)
            finally:
                if self.recorder is not None:
                    self.recorder.release(None if picks is None else set(picks), tied_per_round)
            generated = sum(len(flags) for flags in tied_per_round)
            metrics = trainer._metrics["train"]
            metrics[DROPPED_KEY].append((generated - needed) / generated if generated else 0.0)
            metrics[GENERATIONS_KEY].append(float(len(outputs)))
            metrics[TIED_KEPT_KEY].append(filled / needed if needed else 0.0)
            if len(outputs) == 1 and picks == [(0, g) for g in range(needed)]:
                return outputs[0]  # the first batch was all informative: TRL's output as it is
            pad_id = trainer.processing_class.pad_token_id if hasattr(trainer.processing_class, "pad_token_id") \
                else trainer.processing_class.tokenizer.pad_token_id
            return join_rows(outputs, picks, k, pad_id, torch)

        trainer._calculate_rewards = capture
        trainer._generate_and_score_completions = generate_score_and_select

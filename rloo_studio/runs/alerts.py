"""Health alerts of a training run: the rules that turn its metric rows into alerts, and the alert records.

`find_alerts(rows, facts, probe_checks, heldout_checks)` reads the metric rows TRL logs (one per step, as in
metrics.jsonl) and the results of the hack-probe and held-out checks made at each saved checkpoint, and
returns every alert episode: what went wrong, the step it began, the step it was raised (the
condition has to last a few steps, so one noisy step raises nothing), the step it ended (None
while it lasts), the numbers behind it, a one-line explanation and what to do. It is a pure
function of its inputs: no files, no torch. The training worker (engine/health.py) calls it after
every logged step and appends what is new to alerts.jsonl; the app and the command line only read
those records back (`current`).

Every threshold below is a named constant with the reason for its value. docs/alerts.md says
what each alert means to the person.

Over 500 lines because each alert rule stands beside its thresholds and the reasons for their values: a rule read
apart from its reason would be a number without a why.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

# ---- thresholds ---------------------------------------------------------------------------------

# No learning signal: RLOO's advantage is a completion's reward minus the mean of the other completions to the
# same prompt, so a group whose completions all got the same total reward (after reward_clip_range) has nothing to
# learn from its rewards. The training worker measures the share of such groups from the reward totals themselves
# (NO_SIGNAL_SHARE_KEY). TRL's own `frac_reward_zero_std` cannot stand in for it when beta > 0: TRL takes that std
# after subtracting beta x KL, which differs between completions, so groups tied on reward read as spread (a run
# with every group tied logged 0.5). With beta > 0 such groups still get advantages, from their KL parts alone:
# they pull the model back towards the start model, and teach nothing about the task. The reward preview warns
# above 50% (preview.LEARNABILITY_WARN) on a handful of prompts; during training the alert waits for 80%, four
# groups in five, because short stretches above half happen in runs that learn (the bundled demo's learning run
# stays between 0% and 20%; a two-group batch reads 50% whenever one group ties).
NO_SIGNAL_SHARE = 0.8
NO_SIGNAL_STEPS = 3  # a few steps in a row, so one unlucky batch raises nothing

# One reward function dominates: the advantage is the leave-one-out difference of the weighted total within one
# prompt's group, so each function's part in it scales with the spread of weight x value among the completions of
# one prompt (GROUP_SPREAD_KEY, measured by the training worker). TRL's `rewards/<name>/std` is the spread over the
# whole batch, which also counts how far apart the prompts are (easy against hard) and moves no advantage. A
# function's share of the total's variance is approximated by its within-group spread squared over the sum of that
# for all functions (the functions treated as uncorrelated). Above 90% the other functions together move the
# ranking of completions by about a third of what this one does (sqrt(0.1/0.9)). reward_clip_range is not in this
# estimate: clipping the total squeezes every function's part alike.
DOMINANCE_SHARE = 0.9
DOMINANCE_STEPS = 5  # the spread of a function changes from batch to batch; wait for a lasting pattern

# Completions at the length limit: TRL's `completions/clipped_ratio` is the share of completions cut off at
# rloo.max_completion_length without an end token. A reward then scores unfinished text, and a reward that pays
# for length pushes every completion there. More than half for several steps is the alert.
CLIPPED_SHARE = 0.5
LENGTH_STEPS = 3
# Length collapse: the mean completion length falls below this share of where the run started (the mean of its
# first BASELINE_STEPS steps), e.g. 40 tokens -> under 12: the model found that saying (almost) nothing pays.
LENGTH_COLLAPSE_SHARE = 0.3
MIN_BASELINE_LENGTH = 4.0  # tokens; completions that start shorter than this have no room to collapse
BASELINE_STEPS = 3  # "where the run started": the first steps' mean, one step alone is noisy

# Entropy (TRL's `entropy`: the mean per-token entropy of the policy on its completions, in nats). Below a fifth of
# its start the model has become nearly deterministic: the k completions of a prompt come out alike, score alike,
# and the learning signal dries up. Above twice its start (and above ENTROPY_HIGH_FLOOR) the model is drifting
# towards random text.
ENTROPY_COLLAPSE_SHARE = 0.2
ENTROPY_BLOWUP_FACTOR = 2.0
ENTROPY_HIGH_FLOOR = 1.0  # nats per token; a model that starts near zero entropy may double without harm
ENTROPY_STEPS = 3

# KL to the start model (TRL's `kl`, logged when beta > 0: the mean per-token KL). Per completion it is about
# `kl` x mean length, the average log-ratio of a completion's probability under the trained and the start model:
# 10 nats means the trained model finds its own completions e^10 (about 22,000) times likelier than the start
# model did. It has moved far from the model beta anchors it to.
KL_COMPLETION_NATS = 10.0
KL_STEPS = 3

# The sampler drifting from the trainer (fast generation only: vLLM samples the completions, the trainer scores them
# again with its own forward pass; engine/sampler_gap.py logs SAMPLER_GAP_KEY, the mean |trainer - sampler|
# log-probability per completion token, and SAMPLER_SHIFT_KEY, its signed mean). RLOO in TRL 1.15 trains as if the
# trainer had sampled: no importance correction for the difference. Two engines computing one model in bf16 differ by
# hundredths of a nat per token; 0.1 nats is a token probability ~10% off (e^0.1 = 1.105) on average, which no
# rounding explains (another temperature, an adapter not handed to vLLM). A gap that grows to 3 times where the run
# started (and past 0.02) means the two copies of the weights are moving apart during training.
SAMPLER_GAP_NATS = 0.1
SAMPLER_DRIFT_FACTOR = 3.0
SAMPLER_DRIFT_FLOOR = 0.02  # nats per token: below it a "3 times" is rounding noise
SAMPLER_STEPS = 3

# A reward function that returns None for most completions ("does not apply"): TRL leaves those out of the
# total, so most completions are scored by the other functions alone, or not at all.
NONE_SHARE = 0.5
NONE_STEPS = 3

# Hack probes (rewards.preview.probe_completions: empty, the prompt echoed, rambling, ...) scored at each saved
# checkpoint. A probe whose weighted total is above the mean total of the real completions of the latest batch
# out-scores what the model writes: training would move the model towards it.
PROBE_MARGIN = 1e-9  # "above", not "equal": a constant reward scores the probes exactly like the real completions
# ... and above by a share of the real totals' spread (their standard deviation): an empty answer at 0 beside real ones
# at 0 and a few at -0.25 (mean -0.01) is not better than what the model writes, only than its occasional penalty; a
# probe half a standard deviation above the mean beats a typical real completion. Found walking the app: that case
# raised "Possible reward hacking" on a run that learned nothing either way.
PROBE_SPREAD_SHARE = 0.5

# Reward rising while a held-out check falls: at each saved checkpoint the worker generates one greedy completion for
# each of the first HELDOUT_PROMPTS held-out prompts and scores them with the run's own rewards (engine/health.py).
# A training reward that keeps rising while that falls means the model learns what scores on the training prompts
# (their answers by heart, or a trick the rewards pay for there) rather than the skill.
HELDOUT_PROMPTS = 8  # one greedy batch: seconds on a CPU, and it runs at every checkpoint
HELDOUT_CHECKS = 3  # two falling intervals in a row: one interval of 8 greedy prompts going down is noise
HELDOUT_MIN_DROP = 0.05  # the held-out mean must fall by at least this much (reward units) over those checks
# Held-out reward stalled (only for a run whose config asks: alerts.on_heldout_plateau, config.AlertActions): the last
# `patience` held-out checks in a row did not beat the best check before them. A tie is no gain: with 8 greedy
# prompts and a 0/1 reward the mean moves in steps of 1/8, so equal means are common and say nothing new.

# The key the training worker adds to each metric row for each reward function: the share of its values in the
# latest generation batch that were None. TRL logs only the mean and std of the others (nanmean, nanstd).
NONE_SHARE_KEY = "rewards/{name}/none_share"
# The keys the training worker adds to a metric row whose step generated completions (the mean over the generation
# batches since the previous row, as TRL averages its own): the share of prompt groups whose reward totals (clipped
# as TRL clips them) are all equal, and per function its within-group spread (scoring.within_group_spread).
NO_SIGNAL_SHARE_KEY = "no_signal_share"
GROUP_SPREAD_KEY = "rewards/{name}/group_spread"
# With dynamic sampling (engine/dynamic_sampling.py), per step: the share of generated prompt groups left out, the
# generation batches made, and the share of the trained batch that is tied groups let in by the cap (the Train tab's
# status line reads them).
DROPPED_SHARE_KEY = "dynamic_sampling/dropped_share"
GENERATIONS_KEY = "dynamic_sampling/generations"
TIED_KEPT_SHARE_KEY = "dynamic_sampling/tied_kept_share"

# The keys engine/sampler_gap.py adds to a metric row when vLLM sampled the step's completions (nats per token).
SAMPLER_GAP_KEY = "sampler/logprob_gap"
SAMPLER_SHIFT_KEY = "sampler/logprob_shift"

NO_SIGNAL, DOMINANT, LENGTH_LIMIT, LENGTH_COLLAPSE = "no_signal", "dominant_reward", "length_limit", "length_collapse"
ENTROPY_COLLAPSE, ENTROPY_BLOWUP, KL_BLOWUP = "entropy_collapse", "entropy_blowup", "kl_blowup"
MOSTLY_NONE, PROBE_WINS, HELDOUT_FALLS = "reward_mostly_none", "probe_outscores", "heldout_falls"
HELDOUT_PLATEAU, SAMPLER_DRIFT = "heldout_plateau", "sampler_drift"
# The badge's title for each kind, in the order the app lists them.
TITLES = {
    NO_SIGNAL: "No learning signal", DOMINANT: "One reward dominates", LENGTH_LIMIT: "Completions hit the length limit",
    LENGTH_COLLAPSE: "Completions collapsing", ENTROPY_COLLAPSE: "Entropy collapsing", ENTROPY_BLOWUP: "Entropy blowing up",
    KL_BLOWUP: "KL blowing up", MOSTLY_NONE: "Reward mostly None", PROBE_WINS: "Possible reward hacking",
    HELDOUT_FALLS: "Held-out reward falling", HELDOUT_PLATEAU: "Held-out reward stalled",
    SAMPLER_DRIFT: "Sampler drifting from trainer",
}


@dataclass(frozen=True)
class RunFacts:
    """What the rules need besides the metric rows: the run's reward functions and its completion length limit."""

    reward_names: Sequence[str]
    reward_weights: Sequence[float]
    max_completion_length: int | None = None
    beta: float = 0.0  # the KL penalty: with beta > 0, TRL's frac_reward_zero_std says nothing about the rewards
    normalize_advantages: bool = False
    reward_clip_range: Sequence[float] | None = None  # TRL clamps each total to it before everything else


@dataclass
class Alert:
    """One alert episode: a condition that held from `began_step`, was raised at `raised_step`, ended at `ended_step`."""

    kind: str
    subject: str | None  # the reward function or probe it is about, if any
    began_step: int
    raised_step: int
    ended_step: int | None
    numbers: dict
    explanation: str
    action: str
    title: str = ""

    def __post_init__(self):
        self.title = self.title or TITLES[self.kind]

    @property
    def key(self) -> tuple:
        return (self.kind, self.subject, self.began_step)

    def record(self, event: str) -> dict:
        """The alerts.jsonl line for `event` ("began" or "ended"); `step` is the step it was written at."""
        return {"event": event, "step": self.raised_step if event == "began" else self.ended_step, "kind": self.kind,
                "subject": self.subject, "title": self.title, "began_step": self.began_step, "ended_step": self.ended_step,
                "numbers": self.numbers, "explanation": self.explanation, "action": self.action}

    def line(self) -> str:
        """The one line the command line prints when the alert begins."""
        return f"alert at step {self.raised_step} (since step {self.began_step}): {self.title}. {self.explanation} What to do: {self.action}"


# ---- helpers -------------------------------------------------------------------------------------

def _number(row: dict, key: str) -> float | None:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _steps(rows: Iterable[dict]) -> list[dict]:
    """Rows that are steps (with an integer `step`), in step order, the last one of a repeated step kept."""
    by_step = {}
    for row in rows:
        step = row.get("step")
        if isinstance(step, (int, float)) and not isinstance(step, bool):
            by_step[int(step)] = row
    return [by_step[s] for s in sorted(by_step)]


def _episodes(rows: list[dict], holds: Callable[[dict], bool | None], min_steps: int):
    """(first row, raising row, ending row or None, the rows up to the raising one) for each episode of `holds`.

    An episode is raised once `holds` is true for `min_steps` rows in a row, and ends only once it has been false for
    `min_steps` rows in a row (the ending row is the first of those): a condition that flickers around its threshold
    is one alert, not a new one every few steps. `holds` returning None (the metric is missing) counts for neither."""
    found, streak, raised, misses = [], [], None, []
    for row in rows:
        verdict = holds(row)
        if verdict is None:
            continue
        if raised is None:
            streak = streak + [row] if verdict else []
            if len(streak) >= min_steps:
                raised = streak[min_steps - 1]
            continue
        if verdict:
            misses = []
        else:
            misses.append(row)
            if len(misses) >= min_steps:
                found.append((streak[0], raised, misses[0], streak))
                streak, raised, misses = [], None, []
    if raised is not None:
        found.append((streak[0], raised, None, streak))
    return found


def _baseline(rows: list[dict], key: str) -> float | None:
    values = [v for v in (_number(r, key) for r in rows[:BASELINE_STEPS]) if v is not None]
    return statistics.fmean(values) if values else None


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _make(kind, subject, episode, numbers_at, explanation_at, action) -> Alert:
    first, raised, end, held = episode
    numbers = numbers_at(raised, held)
    return Alert(kind, subject, int(first["step"]), int(raised["step"]), int(end["step"]) if end else None, numbers,
                 explanation_at(numbers), action(numbers) if callable(action) else action)


# ---- the rules -----------------------------------------------------------------------------------

def no_signal_share(row: dict, facts: RunFacts) -> float | None:
    """The share of prompt groups tied on reward at this row's step: the worker's measure; in a row without it
    (written before the worker measured it), TRL's `frac_reward_zero_std`, which is the same thing only when beta is
    0; else None (not known)."""
    share = _number(row, NO_SIGNAL_SHARE_KEY)
    if share is None and not facts.beta:
        share = _number(row, "frac_reward_zero_std")
    return share


def _no_signal(rows: list[dict], facts: RunFacts) -> list[Alert]:
    def holds(r):
        share = no_signal_share(r, facts)
        return None if share is None else share >= NO_SIGNAL_SHARE

    def numbers(raised, held):
        return {"share": no_signal_share(raised, facts), "threshold": NO_SIGNAL_SHARE, "steps": len(held),
                "frac_reward_zero_std": _number(raised, "frac_reward_zero_std"), "beta": facts.beta,
                "normalize_advantages": facts.normalize_advantages}

    def explain(n):
        line = (f"In {_pct(n['share'])} of the prompt groups every completion got the same total reward, {n['steps']} "
                "steps in a row: those groups teach the model nothing about the task.")
        if facts.beta and facts.normalize_advantages:
            line += (f" With a KL penalty (beta = {facts.beta:g}) their advantages come from the KL parts alone, and "
                     "“Normalise advantages” scales those tiny differences up to the size of real reward differences: "
                     "the model is trained hard on noise.")
        elif facts.beta:
            line += (f" With a KL penalty (beta = {facts.beta:g}) their advantages come from the KL parts alone: they "
                     "only pull the model back towards where it started.")
        return line

    action = ("Check the rewards in the Rewards tab's preview: first that the model writes what they look for at all "
              "(the samples show what it writes), then make a 0/1 reward graded (partial credit), use more completions "
              "per prompt or a higher temperature, or drop prompts that are always or never solved.")
    if facts.beta and facts.normalize_advantages:
        action += " Until the rewards tell completions apart, turn “Normalise advantages” off."
    return [_make(NO_SIGNAL, None, e, numbers, explain, action) for e in _episodes(rows, holds, NO_SIGNAL_STEPS)]


def _dominant(rows: list[dict], facts: RunFacts) -> list[Alert]:
    if len(facts.reward_names) < 2:
        return []
    alerts = []
    pairs = list(zip(facts.reward_names, facts.reward_weights))

    def shares(r) -> dict[str, float] | None:
        parts = {}
        for name, _ in pairs:
            spread = _number(r, GROUP_SPREAD_KEY.format(name=name))  # weight x value, so the weight is in it
            if spread is None:
                return None
            parts[name] = spread ** 2
        total = sum(parts.values())
        return {n: p / total for n, p in parts.items()} if total > 0 else None

    for name, _ in pairs:
        def holds(r, name=name):
            # A step that generated nothing new (num_iterations > 1, or a generation batch spanning several steps)
            # logs no spread: it counts for neither side, as a missing metric does for every alert.
            if any(_number(r, GROUP_SPREAD_KEY.format(name=n)) is None for n, _ in pairs):
                return None
            s = shares(r)
            return False if s is None else s[name] >= DOMINANCE_SHARE

        def numbers(raised, held, name=name):
            s = shares(raised) or {}
            # The others that never told two completions of a prompt apart: no weight gives them a say.
            silent = [n for n, _ in pairs if n != name and all(_number(r, GROUP_SPREAD_KEY.format(name=n)) == 0 for r in held)]
            return {"share": s.get(name), "threshold": DOMINANCE_SHARE, "steps": len(held),
                    "shares": {n: round(v, 4) for n, v in s.items()}, "silent": silent}

        def action(n, name=name):
            if n["silent"]:
                names = ", ".join(f"`{s}`" for s in n["silent"])
                return (f"{names} never told two completions of a prompt apart in these steps (the same score for all of "
                        "them): a weight changes nothing. Check in the preview that the model writes what "
                        f"{'it looks' if len(n['silent']) == 1 else 'they look'} for, or make "
                        f"{'it' if len(n['silent']) == 1 else 'them'} graded; check that `{name}` cannot be maxed out by a trick.")
            return (f"If the other rewards matter, raise their weights or lower `{name}`'s; check in the preview that "
                    f"`{name}` cannot be maxed out by a trick.")

        alerts += [_make(DOMINANT, name, e, numbers,
                         lambda n, name=name: (f"`{name}` makes {_pct(n['share'])} of the spread of the total reward "
                                               "among the completions of one prompt (weight × value), "
                                               f"{n['steps']} steps in a row: the other reward functions barely change "
                                               "which completions are preferred."),
                         action)
                   for e in _episodes(rows, holds, DOMINANCE_STEPS)]
    return alerts


def _length(rows: list[dict], facts: RunFacts) -> list[Alert]:
    limit = facts.max_completion_length
    start_clipped = _baseline(rows, "completions/clipped_ratio")

    def holds(r):
        share = _number(r, "completions/clipped_ratio")
        return None if share is None else share > CLIPPED_SHARE

    def numbers(raised, held):
        return {"clipped_ratio": _number(raised, "completions/clipped_ratio"), "threshold": CLIPPED_SHARE,
                "clipped_ratio_at_start": start_clipped, "mean_length": _number(raised, "completions/mean_length"),
                "max_completion_length": limit, "steps": len(held)}

    def explain(n):
        since = (f"up from {_pct(n['clipped_ratio_at_start'])} at the start" if n["clipped_ratio_at_start"] is not None
                 and n["clipped_ratio_at_start"] <= CLIPPED_SHARE else "as from the start")
        return (f"{_pct(n['clipped_ratio'])} of the completions were cut off at the limit of {limit or '?'} tokens ({since}), "
                f"{n['steps']} steps in a row: the rewards score unfinished answers, and a reward that pays for length pushes "
                "every completion there.")

    suggestion = f" (e.g. {2 * limit})" if limit else ""
    alerts = [_make(LENGTH_LIMIT, None, e, numbers, explain,
                    f"Raise “max completion length” (rloo.max_completion_length){suggestion} if answers need the room; if the "
                    "rewards pay for length (look at the samples), cap or penalise it.")
              for e in _episodes(rows, holds, LENGTH_STEPS)]

    start_length = _baseline(rows, "completions/mean_length")
    if start_length is not None and start_length >= MIN_BASELINE_LENGTH:
        def collapsed(r):
            length = _number(r, "completions/mean_length")
            return None if length is None else length < LENGTH_COLLAPSE_SHARE * start_length

        def numbers_c(raised, held):
            return {"mean_length": _number(raised, "completions/mean_length"), "mean_length_at_start": round(start_length, 3),
                    "threshold_share": LENGTH_COLLAPSE_SHARE, "steps": len(held)}

        alerts += [_make(LENGTH_COLLAPSE, None, e, numbers_c,
                         lambda n: (f"Completions average {n['mean_length']:.1f} tokens, down from {n['mean_length_at_start']:.1f} "
                                    f"at the start, {n['steps']} steps in a row: the model found that saying (almost) nothing "
                                    "pays."),
                         "Look at the latest samples: if short or empty answers score well, make the rewards require a real "
                         "answer (e.g. return 0 or None for an empty one).")
                   for e in _episodes(rows, collapsed, LENGTH_STEPS)]
    return alerts


def _entropy(rows: list[dict], facts: RunFacts) -> list[Alert]:
    start = _baseline(rows, "entropy")
    if start is None or start <= 0:
        return []

    def numbers(raised, held):
        return {"entropy": _number(raised, "entropy"), "entropy_at_start": round(start, 4), "steps": len(held)}

    def low(r):
        value = _number(r, "entropy")
        return None if value is None else value < ENTROPY_COLLAPSE_SHARE * start

    def high(r):
        value = _number(r, "entropy")
        return None if value is None else value > max(ENTROPY_BLOWUP_FACTOR * start, ENTROPY_HIGH_FLOOR)

    return ([_make(ENTROPY_COLLAPSE, None, e, numbers,
                   lambda n: (f"The model's entropy fell to {n['entropy']:.3g} nats per token from {n['entropy_at_start']:.3g} at the "
                              f"start ({n['steps']} steps in a row): it has become nearly deterministic, so the completions to "
                              "a prompt come out alike and stop teaching."),
                   "Lower the learning rate, raise the temperature, or add a KL penalty (beta) to keep it near the start model.")
             for e in _episodes(rows, low, ENTROPY_STEPS)]
            + [_make(ENTROPY_BLOWUP, None, e, numbers,
                     lambda n: (f"The model's entropy rose to {n['entropy']:.3g} nats per token from {n['entropy_at_start']:.3g} "
                                f"at the start ({n['steps']} steps in a row): it is drifting towards random text."),
                     "Lower the learning rate (e.g. to a third), or add a KL penalty (beta); resume from a checkpoint before "
                     "this step.")
               for e in _episodes(rows, high, ENTROPY_STEPS)])


def _kl(rows: list[dict], facts: RunFacts) -> list[Alert]:
    def per_completion(r):
        kl, length = _number(r, "kl"), _number(r, "completions/mean_length")
        return None if kl is None or length is None else kl * length

    def holds(r):
        value = per_completion(r)
        return None if value is None else value > KL_COMPLETION_NATS

    def numbers(raised, held):
        return {"kl": _number(raised, "kl"), "kl_per_completion": per_completion(raised), "threshold": KL_COMPLETION_NATS,
                "steps": len(held)}

    return [_make(KL_BLOWUP, None, e, numbers,
                  lambda n: (f"KL to the start model is {n['kl']:.3g} per token, about {n['kl_per_completion']:.3g} nats per "
                             f"completion ({n['steps']} steps in a row): the model has moved far from where it started, which "
                             "often means it found a way to game the reward."),
                  "Look at the latest samples; raise beta (the KL penalty) or lower the learning rate, and resume from a "
                  "checkpoint before this step if the answers got worse.")
            for e in _episodes(rows, holds, KL_STEPS)]


def _mostly_none(rows: list[dict], facts: RunFacts) -> list[Alert]:
    alerts = []
    for name in facts.reward_names:
        key = NONE_SHARE_KEY.format(name=name)

        def holds(r, key=key):
            share = _number(r, key)
            return None if share is None else share > NONE_SHARE

        def numbers(raised, held, key=key):
            return {"none_share": _number(raised, key), "threshold": NONE_SHARE, "steps": len(held)}

        alerts += [_make(MOSTLY_NONE, name, e, numbers,
                         lambda n, name=name: (f"`{name}` returned None for {_pct(n['none_share'])} of the completions, "
                                               f"{n['steps']} steps in a row: those completions are scored by the other "
                                               "functions only, or not at all."),
                         f"Check `{name}` in the Rewards tab's preview: it may not find what it looks for (a format, a "
                         "dataset column); make it return a number for every completion it can judge.")
                   for e in _episodes(rows, holds, NONE_STEPS)]
    return alerts


def _sampler_drift(rows: list[dict], facts: RunFacts) -> list[Alert]:
    baseline = _baseline(rows, SAMPLER_GAP_KEY)

    def holds(r):
        gap = _number(r, SAMPLER_GAP_KEY)
        if gap is None:
            return None
        grown = baseline is not None and gap > max(SAMPLER_DRIFT_FLOOR, SAMPLER_DRIFT_FACTOR * baseline)
        return gap > SAMPLER_GAP_NATS or grown

    def numbers(raised, held):
        return {"gap": _number(raised, SAMPLER_GAP_KEY), "shift": _number(raised, SAMPLER_SHIFT_KEY), "baseline": baseline,
                "threshold": SAMPLER_GAP_NATS, "steps": len(held)}

    def explanation(n):
        lean = ""
        if n["shift"] is not None and abs(n["shift"]) >= 0.5 * n["gap"]:
            lean = (f" The trainer's log-probabilities are {'lower' if n['shift'] < 0 else 'higher'} than the sampler's "
                    f"by {abs(n['shift']):.2g} on average: one side leans one way, as when the two use another "
                    "temperature.")
        start = f" (it started at {n['baseline']:.2g})" if n["baseline"] is not None else ""
        return (f"The completions are sampled by vLLM and trained on by the trainer, and the two give the same tokens "
                f"probabilities {n['gap']:.2g} nats per token apart{start}, {n['steps']} steps in a row: RLOO trains as "
                f"if the trainer had sampled them, so the updates are off by that much.{lean}")

    return [_make(SAMPLER_DRIFT, None, e, numbers, explanation,
                  "Resume the run with fast generation off (Model tab → Fast generation: off; model.fast_generation: off) "
                  "to compare; if the gap grew during the run, resume from a checkpoint before it grew.")
            for e in _episodes(rows, holds, SAMPLER_STEPS)]


def probe_check(step: int, probe_totals: dict[str, float | None], real_totals: Sequence[float | None]) -> dict:
    """One checkpoint's hack-probe result: each probe's mean weighted total against the real completions' mean."""
    real = [t for t in real_totals if t is not None]
    real_mean = statistics.fmean(real) if real else None
    margin = max(PROBE_MARGIN, PROBE_SPREAD_SHARE * statistics.pstdev(real)) if len(real) > 1 else PROBE_MARGIN
    return {"step": int(step), "real_mean": real_mean,
            "probes": {kind: total for kind, total in probe_totals.items()},
            "winning": sorted(kind for kind, total in probe_totals.items()
                              if total is not None and real_mean is not None and total > real_mean + margin)}


def _probes(checks: Sequence[dict]) -> list[Alert]:
    """One alarm while any probe out-scores the real completions, from the first check where one does."""
    rows = [{"step": c["step"], "check": c} for c in sorted(checks, key=lambda c: c["step"])]

    def numbers(raised, held):
        c = raised["check"]
        return {"winning": {kind: c["probes"][kind] for kind in c["winning"]}, "real_mean": c["real_mean"], "checks": len(held)}

    def explain(n):
        shown = ", ".join(f"'{kind}' {total:.4g}" for kind, total in sorted(n["winning"].items(), key=lambda kv: -kv[1]))
        return (f"At the checkpoint, degenerate completions score above the real completions' mean total of "
                f"{n['real_mean']:.4g} ({shown}): training pushes the model towards them, so the rewards can be gamed.")

    return [_make(PROBE_WINS, None, e, numbers, explain,
                  "Stop and look at the samples; make the rewards give such answers a low score (check them in the Rewards "
                  "tab's preview), then start again or resume from an earlier checkpoint.")
            for e in _episodes(rows, lambda r: bool(r["check"]["winning"]), 1)]


def heldout_check(step: int, heldout_mean: float, train_mean: float | None) -> dict:
    """One checkpoint's held-out result: the held-out prompts' mean total reward, and the training reward's mean over
    the steps since the previous check."""
    return {"step": int(step), "heldout": float(heldout_mean), "train": train_mean}


def _heldout(checks: Sequence[dict]) -> list[Alert]:
    """One alert while, over the last HELDOUT_CHECKS checks, the training reward rose each time and the held-out reward
    fell each time, by HELDOUT_MIN_DROP or more in all."""
    ordered = sorted(checks, key=lambda c: c["step"])
    rows = []
    for i, c in enumerate(ordered):
        window = ordered[i - HELDOUT_CHECKS + 1:i + 1] if i + 1 >= HELDOUT_CHECKS else None
        verdict = None
        if window and all(w.get("train") is not None for w in window):
            train_up = all(b["train"] > a["train"] for a, b in zip(window, window[1:]))
            heldout_down = all(b["heldout"] < a["heldout"] for a, b in zip(window, window[1:]))
            verdict = train_up and heldout_down and window[0]["heldout"] - window[-1]["heldout"] >= HELDOUT_MIN_DROP
        rows.append({"step": c["step"], "window": window, "verdict": verdict})

    def numbers(raised, held):
        w = raised["window"]
        return {"train": [x["train"] for x in w], "heldout": [x["heldout"] for x in w], "steps": [x["step"] for x in w],
                "prompts": HELDOUT_PROMPTS}

    def explain(n):
        return (f"From step {n['steps'][0]} to {n['steps'][-1]} the training reward rose ({n['train'][0]:.3g} → {n['train'][-1]:.3g}) "
                f"while the mean reward on {n['prompts']} held-out prompts fell ({n['heldout'][0]:.3g} → {n['heldout'][-1]:.3g}): "
                "the model is learning what scores on the training prompts, not the skill.")

    return [_make(HELDOUT_FALLS, None, e, numbers, explain,
                  "Evaluate the checkpoints (Evaluate tab, all checkpoints) and keep the best one; use more training data or "
                  "fewer steps, and check the rewards for a trick that pays on the training prompts.")
            for e in _episodes(rows, lambda r: r["verdict"], 1)]


def _heldout_plateau(checks: Sequence[dict], patience: int) -> list[Alert]:
    """One alert while the last `patience` held-out checks in a row did not beat the best check before them."""
    ordered = sorted(checks, key=lambda c: c["step"])
    rows = []
    for i, c in enumerate(ordered):
        verdict = None
        if i >= patience:
            before = ordered[:i - patience + 1]
            best = max(before, key=lambda b: b["heldout"])
            verdict = all(w["heldout"] <= best["heldout"] for w in ordered[i - patience + 1:i + 1])
            rows.append({"step": c["step"], "verdict": verdict, "best": best, "since": ordered[i - patience + 1]["step"]})
        else:
            rows.append({"step": c["step"], "verdict": None})

    def numbers(raised, held):
        best = raised["best"]
        return {"best_step": best["step"], "best": best["heldout"], "checks": patience, "prompts": HELDOUT_PROMPTS}

    def explain(n):
        return (f"The last {n['checks']} held-out checks did not beat the best one, at step {n['best_step']} "
                f"(checkpoint-{n['best_step']}: mean reward {n['best']:.3g} on {n['prompts']} held-out prompts, greedy): "
                "training goes on without getting better where it counts.")

    # The episode begins with the first check that did not beat the best, not with the check that made it `patience`.
    return [_make(HELDOUT_PLATEAU, None, ({"step": first["since"]}, raised, end, held), numbers, explain,
                  f"Keep checkpoint-{numbers(raised, held)['best_step']} (evaluate the checkpoints to confirm it on more "
                  "prompts: Evaluate tab, all checkpoints); stop, or change the data or rewards before training further.")
            for first, raised, end, held in _episodes(rows, lambda r: r["verdict"], 1)]


RULES = (_no_signal, _dominant, _length, _entropy, _kl, _mostly_none, _sampler_drift)


def find_alerts(rows: Iterable[dict], facts: RunFacts, probe_checks: Sequence[dict] = (),
                heldout_checks: Sequence[dict] = (), heldout_patience: int | None = None) -> list[Alert]:
    """Every alert episode in a run's metric rows, probe checks and held-out checks, ordered by the step it was raised.
    `heldout_patience`: look for a held-out plateau of that many checks (only when the run's config asks)."""
    steps = _steps(rows)
    alerts = [a for rule in RULES for a in rule(steps, facts)] + _probes(probe_checks) + _heldout(heldout_checks)
    if heldout_patience:
        alerts += _heldout_plateau(heldout_checks, heldout_patience)
    return sorted(alerts, key=lambda a: (a.raised_step, a.kind, a.subject or ""))


# ---- reading alerts.jsonl --------------------------------------------------------------------------

@dataclass
class Tracker:
    """Which episodes alerts.jsonl already holds, so each is written once when it begins and once when it ends."""

    began: set = field(default_factory=set)
    ended: set = field(default_factory=set)

    @classmethod
    def from_records(cls, records: Iterable[dict]) -> "Tracker":
        t = cls()
        for r in records:
            key = (r.get("kind"), r.get("subject"), r.get("began_step"))
            (t.ended if r.get("event") == "ended" else t.began).add(key)
        return t

    def new_records(self, alerts: Iterable[Alert]) -> tuple[list[Alert], list[dict]]:
        """(alerts that begin now, the records to append) for episodes not yet written."""
        begun, records = [], []
        for a in alerts:
            if a.key not in self.began:
                self.began.add(a.key)
                begun.append(a)
                records.append(a.record("began"))
            if a.ended_step is not None and a.key not in self.ended:
                self.ended.add(a.key)
                records.append(a.record("ended"))
        return begun, records


# The alerts.jsonl line the training worker writes when the run acted on an alert on its own (the config's `alerts:`
# section, engine/health.py): `taken` names what it did ("stop"), `done` says it in words.
ACTION_EVENT = "action"


def action_record(alert: Alert, step: int, taken: str, done: str) -> dict:
    return {"event": ACTION_EVENT, "step": int(step), "kind": alert.kind, "subject": alert.subject,
            "began_step": alert.began_step, "taken": taken, "done": done}


def current(records: Iterable[dict]) -> list[dict]:
    """One entry per alert episode of an alerts.jsonl, its latest record (an "ended" one carries `ended_step`) with
    the step it was raised at (`raised_step`: the numbers of its explanation are that step's), what the run did about it (`taken`, `done`) when it acted, active ones first, then by the step they began."""
    latest: dict[tuple, dict] = {}
    acted: dict[tuple, dict] = {}
    for r in records:
        if not isinstance(r, dict) or "kind" not in r:
            continue
        key = (r.get("kind"), r.get("subject"), r.get("began_step"))
        if r.get("event") == ACTION_EVENT:
            acted[key] = r
        elif r.get("event") == "ended" or key not in latest:
            # The step it was raised at is the "began" record's step: an "ended" record carries it on.
            raised = r.get("step") if r.get("event") == "began" else (latest.get(key) or {}).get("raised_step")
            latest[key] = {**r, "raised_step": raised}
    found = [{**r, **({"taken": acted[key]["taken"], "done": acted[key]["done"]} if key in acted else {})}
             for key, r in latest.items()]
    return sorted(found, key=lambda r: (r.get("ended_step") is not None, r.get("began_step") or 0))

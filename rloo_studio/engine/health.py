"""Live health alerts in the training worker: feeds the run's metric rows and hack-probe checks to `alerts`,
appends each alert to alerts.jsonl when it begins and when it ends, and prints a line when one begins.

`HealthWatch` sees three things during training: every reward function's values for each generation batch
(`on_values`, chained after the sample recorder: the share of None each function returned; from the weighted totals,
clipped as TRL clips them, the share of prompt groups tied on reward and each function's spread within groups; and the
batch itself, kept for the probes), every logged metric row (`on_metrics`, which adds those numbers to the row
before it is written to metrics.jsonl) and every saved checkpoint (`on_checkpoint`, which scores the model's greedy
completions for the first held-out prompts, and the reward preview's hack probes for the latest batch's first
prompts, with the run's own reward functions). The rules
themselves live in `rloo_studio.alerts`; this module only gathers their inputs and writes their output.

It also acts on them when the run's config asks (its `alerts:` section, config.AlertActions), once per alert
episode (a resumed run is not acted on again for the same episode), writing an "action" line to alerts.jsonl (the
badges say what was done) and printing it:
- `stop` (on no learning signal lasting `no_signal_steps` steps, on a hacking alarm, on a held-out plateau): sets
  `stop_reason`, which the trainer's callback treats as a stop request (a clean stop with a checkpoint at the next
  step's end, resumable); the plateau's best checkpoint is kept from its check on;
- `rollback` (hacking): a stop, then `roll_back` sets the checkpoints from the alarm on aside, so a resume continues
  from the last good one;
- `raise_beta` (hacking): a larger KL penalty from the next generation on, training on;
- `dynamic_sampling` (no learning signal): switches engine/dynamic_sampling.py on, training on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from .. import runs
from ..runs import alerts
from ..config import AlertActions
from ..rewards.preview import group_probes, written_completion_ids
from ..rewards.scoring import all_equal_groups, clipped_totals, weighted_totals, within_group_spread

# alerts.on_hacking: raise_beta doubles the KL penalty, and sets one of at least MIN_RAISED_BETA when it was (near) 0:
# 0.02 is within the 0.01-0.05 the form's help line names as keeping the model close to where it started.
BETA_RAISE_FACTOR = 2.0
MIN_RAISED_BETA = 0.02
ROLLED_BACK_DIR = "checkpoints.rolled-back"  # where a rollback moves the suspect checkpoints (run folder)
PROBE_PROMPTS = 3  # prompts of the latest batch whose probes are scored at a checkpoint, as the preview's probes (groups[:3])
# What a run stopped for no learning signal is told: the difficulty scan's advice (docs/scan.md, "What to do"), which
# the scan gives for the prompts it finds never (or always) solved.
NO_SIGNAL_ADVICE = ("The difficulty scan's advice: check that the prompts ask for what the rewards look for "
                    "(`rloo-studio preview CONFIG` says which formats they never ask for); if the model never solves them, "
                    "give partial credit (a graded reward instead of 0/1), raise rloo.temperature or rloo.num_generations, "
                    "start from a bigger model, or keep only the prompts it sometimes solves (`rloo-studio scan CONFIG "
                    "--write-filtered`); if it always solves them, add harder prompts.")
PROBES_CHECK, HELDOUT_CHECK = "probes", "heldout"  # the kinds of the records in runs.CHECKS_FILE
# Which alerts each `alerts:` key acts on.
HACKING_KINDS = (alerts.PROBE_WINS, alerts.HELDOUT_FALLS)


class HealthWatch:
    def __init__(self, run_dir: Path, facts: alerts.RunFacts, num_generations: int,
                 probe_funcs: Sequence[Callable] = (), tokenizer=None, say: Callable[[str], None] = print,
                 actions: AlertActions | None = None, hints: Sequence[str] = ()):
        self.run_dir = Path(run_dir)
        self.facts = facts
        self.k = max(1, int(num_generations))
        self.probe_funcs = list(probe_funcs)  # the run's reward functions, guarded, in facts.reward_names' order
        self.tokenizer = tokenizer
        self.say = say
        self.path = self.run_dir / runs.ALERTS_FILE
        # A resumed run goes on from what the folder holds (its later records were set aside with the metrics').
        self.rows: list[dict] = runs.read_jsonl(self.run_dir / runs.METRICS_FILE)
        self.tracker = alerts.Tracker.from_records(runs.iter_jsonl(self.path))
        self.actions = actions or AlertActions()
        self.hints = list(hints)  # what else the stop's note says (the prompt <-> reward check's suggestions)
        done = [r for r in runs.iter_jsonl(self.path) if r.get("event") == alerts.ACTION_EVENT]
        self.acted = {(r.get("kind"), r.get("subject"), r.get("began_step")) for r in done}
        # Whether dynamic sampling is on: switched on by an action before a resume (the resumed run samples dynamically
        # from its start; the trainer reads this), or by the config (the trainer sets it).
        self.sampling_on = any(r.get("taken") == "dynamic_sampling" for r in done)
        # `switch_on_sampling()`: turns dynamic sampling on (set by the trainer, which installed it switched off).
        self.switch_on_sampling: Callable[[], None] | None = None
        # `set_beta(value)`: the trainer's KL penalty from the next generation on, kept in the run's config (set by the trainer).
        self.set_beta: Callable[[float], None] | None = None
        self.stop_reason: str | None = None  # set when an action stops the run: the trainer's callback stops it
        # With on_hacking: rollback, the first step whose checkpoints the alarm makes suspect: the trainer sets them aside
        # (`roll_back`) once the run has stopped.
        self.rollback_from: int | None = None
        # `formats(completions)` -> the prompt <-> reward check's findings with the completions counted (set by the
        # trainer): on the first batch, the formats warned about before training are checked against what the model writes.
        self.formats: Callable[[list], list[dict]] | None = None
        # `keep_checkpoint(step)`: keeps that checkpoint from being rotated away (set by the trainer); with a held-out
        # plateau looked for, the checkpoint of the best held-out check so far is kept, as the one to use after a stop.
        self.keep_checkpoint: Callable[[int], None] | None = None
        # The checks before a resume, read back (their later records were set aside with the metrics'): without them an
        # alert a check raised could never end, and the best held-out checkpoint would be forgotten.
        kept = runs.read_jsonl(self.run_dir / runs.CHECKS_FILE)
        self.checks: list[dict] = [r["check"] for r in kept if r.get("kind") == PROBES_CHECK]
        self.heldout_checks: list[dict] = [r["check"] for r in kept if r.get("kind") == HELDOUT_CHECK]
        # `heldout()` -> the mean weighted total of greedy completions for the first held-out prompts, with the model as
        # it is now (set by the trainer once the model exists; None when the run holds nothing out).
        self.heldout: Callable[[], float | None] | None = None
        self._lock = threading.Lock()
        self._batch_key = None
        self._values: dict[str, list] = {}
        self._last_batch: tuple[dict, dict[str, list]] | None = None  # kwargs and every function's values
        self._none_share: dict[str, float] = {}
        self._signal: list[dict] = []  # the reward-signal numbers of each generation batch since the last metric row

    # ---- inputs --------------------------------------------------------------------------------

    def on_values(self, name: str, kwargs: dict, values: list) -> None:
        """A reward function's checked values for one generation batch (the `guard` callback)."""
        first = None
        with self._lock:
            key = id(kwargs["completions"])  # TRL passes the same list object to every function of a batch
            if key != self._batch_key:
                self._batch_key, self._values = key, {}
            self._values[name] = values
            if values:
                self._none_share[name] = sum(v is None for v in values) / len(values)
            if len(self._values) == len(self.facts.reward_names):
                self._last_batch = (kwargs, dict(self._values))
                self._measure_signal([self._values[n] for n in self.facts.reward_names])
                first, self.formats = self.formats, None
        if len(self._values) == len(self.facts.reward_names) and first is not None:
            self._check_formats(first, kwargs["completions"])

    def _check_formats(self, formats: Callable[[list], list[dict]], completions: list) -> None:
        """Say, for each format no prompt asks for (warned about before training), how many of the first batch's
        completions write it: at least half (the model writes it unasked) lifts the warning."""
        try:
            findings = formats(completions)
        except Exception as exc:  # noqa: BLE001 - a check that cannot run must not end the run
            self.say(f"[rloo-studio] the prompt <-> reward check on the first batch failed ({type(exc).__name__}); skipped")
            return
        for f in findings:
            if f["note"]:
                self.say(f"[rloo-studio] first batch: {f['matched']} of {f['completions']} completions write "
                         f"{f['looks_for']} unasked, so the warning about `{f['reward']}` above does not apply.")
            elif f["warning"]:
                self.say(f"[rloo-studio] first batch: {f['matched']} of {f['completions']} completions write "
                         f"{f['looks_for']}, which `{f['reward']}` looks for and no prompt asks for.")

    def _measure_signal(self, per_function: list[list]) -> None:
        """What the batch's rewards give RLOO to learn from, before the KL penalty TRL subtracts next: the share of
        prompt groups whose totals (clipped as TRL clips them) are all equal, and each function's spread within
        groups. Only whole groups count: with several processes this process may hold part of one, and it sees only
        its own share of the batch."""
        usable = len(per_function[0]) - len(per_function[0]) % self.k
        if usable == 0 or self.k < 2:
            return
        totals = clipped_totals(weighted_totals([v[:usable] for v in per_function], self.facts.reward_weights),
                                self.facts.reward_clip_range)
        tied = all_equal_groups(totals, self.k)
        spreads = within_group_spread([v[:usable] for v in per_function], self.facts.reward_weights, self.k)
        numbers = {alerts.NO_SIGNAL_SHARE_KEY: sum(tied) / len(tied)}
        numbers.update({alerts.GROUP_SPREAD_KEY.format(name=n): s
                        for n, s in zip(self.facts.reward_names, spreads) if s is not None})
        self._signal.append(numbers)

    def on_metrics(self, row: dict) -> dict:
        """Add each function's None share and the reward-signal numbers to a step's metric row (returned, to be
        written), then check for alerts. The signal numbers are the mean over the generation batches since the last
        row, as TRL averages its own metrics; a row with no new batch gets none (TRL logs no rewards there either)."""
        with self._lock:
            row = {**row, **{alerts.NONE_SHARE_KEY.format(name=n): s for n, s in self._none_share.items()}}
            batches, self._signal = self._signal, []
            for key in dict.fromkeys(k for b in batches for k in b):  # in a fixed order: metrics.jsonl repeats
                values = [b[key] for b in batches if key in b]
                row[key] = sum(values) / len(values)
        self.rows.append(row)
        self._update(row.get("step"))
        return row

    def on_checkpoint(self, step: int) -> dict | None:
        """At a saved checkpoint: the held-out check, then the hack probes; record them and any alert they raise."""
        self._check_heldout(step)
        return self._check_probes(step)

    def _check_heldout(self, step: int) -> None:
        if self.heldout is None:
            return
        try:
            mean = self.heldout()
        except Exception as exc:  # noqa: BLE001 - a failed check must not end the run; it says so and is skipped
            self.say(f"[rloo-studio] held-out check at step {step} failed ({type(exc).__name__}: {exc}); skipped")
            return
        if mean is None:
            return
        since = self.heldout_checks[-1]["step"] if self.heldout_checks else 0
        train = [r["reward"] for r in self.rows if isinstance(r.get("reward"), (int, float)) and since < (r.get("step") or 0) <= step]
        best = max((c["heldout"] for c in self.heldout_checks), default=None)
        self._record(HELDOUT_CHECK, step, alerts.heldout_check(step, mean, sum(train) / len(train) if train else None))
        if self.actions.on_heldout_plateau != "off" and self.keep_checkpoint is not None and (best is None or mean > best):
            # Kept from now on: a save_total_limit rotation at a later checkpoint would otherwise delete it before the
            # plateau that makes it the one to use is seen.
            self.keep_checkpoint(step)
        counted = getattr(self.heldout, "prompts", alerts.HELDOUT_PROMPTS)
        self.say(f"[rloo-studio] held-out check at step {step}: mean reward {mean:.4g} on "
                 + (f"the first {counted} held-out prompts" if counted >= alerts.HELDOUT_PROMPTS else
                    f"all {counted} held-out prompt{'s' if counted != 1 else ''} (few: the check is rough)"))
        self._update(step)

    def _check_probes(self, step: int) -> dict | None:
        """Score the hack probes for the latest batch's first prompts; record the check and any alarm it raises."""
        with self._lock:
            batch = self._last_batch
        if batch is None or not self.probe_funcs:
            return None
        kwargs, values = batch
        n = len(kwargs["completions"])
        # Totals as training goes on with them (clipped to reward_clip_range): a probe above the clip's top is worth no
        # more to training than a real completion at it.
        clip = self.facts.reward_clip_range
        real_totals = clipped_totals(weighted_totals([values[name] for name in self.facts.reward_names],
                                                     self.facts.reward_weights), clip)
        starts = list(range(0, n, self.k))[:PROBE_PROMPTS]
        probe_values: dict[str, list[float]] = {}
        for i in starts:
            row = {c: v[i] for c, v in kwargs.items() if _per_completion(v, n) and c not in ("prompts", "completions", "completion_ids")}
            probes = group_probes({"prompt": kwargs["prompts"][i], "row": row})
            per_function = []
            for func in self.probe_funcs:
                try:
                    per_function.append(_call(func, self._probe_kwargs(kwargs, i, list(probes.values()), n)))
                except Exception as exc:  # noqa: BLE001 - a reward that fails on a probe is not what this check is about
                    self.say(f"[rloo-studio] hack probes at step {step}: `{getattr(func, '__name__', 'reward')}` failed on a "
                             f"probe ({type(exc).__name__}); probes not scored")
                    return None
            totals = clipped_totals(weighted_totals(per_function, self.facts.reward_weights), clip)
            for kind, total in zip(probes, totals):
                if total is not None:
                    probe_values.setdefault(kind, []).append(total)
        probe_means = {kind: sum(v) / len(v) for kind, v in probe_values.items()}
        check = alerts.probe_check(step, probe_means, real_totals)
        self._record(PROBES_CHECK, step, check)
        self._update(step)
        return check

    def _probe_kwargs(self, kwargs: dict, i: int, texts: list[str], n: int) -> dict:
        """The real batch's call for completion i, with the probe texts as its completions (same form, same columns)."""
        conversational = isinstance(kwargs["completions"][i], list)
        out = {}
        for key, value in kwargs.items():
            if key in ("log_extra", "log_metric"):
                out[key] = lambda *a, **k: None  # the probes must not show up in the trainer's logs
            elif _per_completion(value, n):
                out[key] = [value[i]] * len(texts)
            else:
                out[key] = value
        out["completions"] = [[{"role": "assistant", "content": t}] if conversational else t for t in texts]
        out["completion_ids"] = [written_completion_ids(t, self.tokenizer) for t in texts]
        return out

    # ---- output --------------------------------------------------------------------------------

    def _record(self, kind: str, step: int, check: dict) -> None:
        """Keep a check in memory and in the run folder (`runs.CHECKS_FILE`), for a resume to read back."""
        (self.checks if kind == PROBES_CHECK else self.heldout_checks).append(check)
        runs.append_jsonl(self.run_dir / runs.CHECKS_FILE, [{"kind": kind, "step": step, "check": check}])

    def _update(self, step: int | None) -> None:
        patience = self.actions.heldout_patience if self.actions.on_heldout_plateau != "off" else None
        found = alerts.find_alerts(self.rows, self.facts, self.checks, self.heldout_checks, patience)
        begun, records = self.tracker.new_records(found)
        if records:
            runs.append_jsonl(self.path, records)
        for alert in begun:
            self.say(f"[rloo-studio] {alert.line()}")
        if isinstance(step, int):
            self._act(found, step)

    def _act(self, found: Sequence[alerts.Alert], step: int) -> None:
        """Act on each ongoing alert the config's `alerts:` section says to act on, once per episode: switch on dynamic
        sampling, or stop the run (for the first such alert)."""
        for alert in found:
            key = self._action_key(alert, step)
            if key is None or alert.ended_step is not None or alert.key in self.acted or self.stop_reason:
                continue
            self.acted.add(alert.key)
            if getattr(self.actions, key) == "dynamic_sampling":
                if not self.sampling_on:  # on already (the config's dynamic_sampling.enabled): nothing to do
                    self._switch_on_sampling(alert, step)
                continue
            if getattr(self.actions, key) == "raise_beta":
                self._raise_beta(alert, step)
                continue
            # The callback stops at the next step's end (the end of a generation cycle), where a resume continues exactly.
            done = (f"asked the run to stop at step {step}, as its config asks (alerts.{key}: stop); it stops with a "
                    "checkpoint at the end of the next step a resume can continue from")
            advice = [NO_SIGNAL_ADVICE, *self.hints] if alert.kind == alerts.NO_SIGNAL else [alert.action]
            if getattr(self.actions, key) == "rollback":
                self.rollback_from = suspect_from(alert)
                done = (f"asked the run to stop at step {step} and to set aside its checkpoints from step "
                        f"{self.rollback_from} on, as its config asks (alerts.{key}: rollback); --resume continues from "
                        "the last checkpoint before them")
            if alert.kind == alerts.HELDOUT_PLATEAU:  # kept since its check (_check_heldout)
                done += f"; checkpoint-{alert.numbers['best_step']}, the best held-out check, is kept"
            self.stop_reason = (f"{alert.title} since step {alert.began_step}: {done}. {alert.explanation} "
                                + " ".join(advice) + " Change the config and continue with `rloo-studio train --resume "
                                f"{self.run_dir}` (key=value overrides after it change settings).")
            taken = "rollback" if self.rollback_from is not None else "stop"
            runs.append_jsonl(self.path, [alerts.action_record(alert, step, taken, done)])
            self.say(f"[rloo-studio] {self.stop_reason}")

    def _raise_beta(self, alert: alerts.Alert, step: int) -> None:
        old = float(self.facts.beta or 0.0)
        new = max(BETA_RAISE_FACTOR * old, MIN_RAISED_BETA)
        if self.set_beta is not None:
            self.set_beta(new)
        self.facts = dataclasses.replace(self.facts, beta=new)  # the rules read the run's beta
        done = (f"raised beta (the KL penalty) from {old:g} to {new:g} at step {step}, as the run's config asks "
                "(alerts.on_hacking: raise_beta): completions that move far from the start model now score lower; the "
                "run's config.yaml holds the new value, so a resume keeps it")
        runs.append_jsonl(self.path, [alerts.action_record(alert, step, "raise_beta", done)])
        self.say(f"[rloo-studio] {alert.title} since step {alert.began_step}: {done}.")

    def _switch_on_sampling(self, alert: alerts.Alert, step: int) -> None:
        done = (f"switched on dynamic sampling at step {step}, as the run's config asks (alerts.on_no_signal: "
                "dynamic_sampling): prompt groups tied on reward are dropped and new prompts generated in their place, "
                "up to dynamic_sampling.max_extra_generations extra batches per step")
        if self.switch_on_sampling is not None:
            self.switch_on_sampling()
        self.sampling_on = True
        runs.append_jsonl(self.path, [alerts.action_record(alert, step, "dynamic_sampling", done)])
        self.say(f"[rloo-studio] {alert.title} since step {alert.began_step}: {done}.")

    def _action_key(self, alert: alerts.Alert, step: int) -> str | None:
        """The `alerts:` key that asks to act on this alert now (stop, or switch on dynamic sampling), or None."""
        if alert.kind == alerts.NO_SIGNAL and self.actions.on_no_signal in ("stop", "dynamic_sampling"):
            return "on_no_signal" if step - alert.began_step + 1 >= self.actions.no_signal_steps else None
        if alert.kind in HACKING_KINDS and self.actions.on_hacking in ("stop", "rollback", "raise_beta"):
            return "on_hacking"
        if alert.kind == alerts.HELDOUT_PLATEAU and self.actions.on_heldout_plateau == "stop":
            return "on_heldout_plateau"
        return None


def suspect_from(alert: alerts.Alert) -> int:
    """The first step whose weights a hacking alarm makes suspect: the checkpoint where a probe first out-scored the
    real completions; for a falling held-out reward, the first check after the highest one of the falling stretch."""
    if alert.kind == alerts.HELDOUT_FALLS and len(alert.numbers.get("steps") or []) > 1:
        return int(alert.numbers["steps"][1])
    return alert.began_step


def roll_back(run_dir: Path, suspect: int) -> str:
    """Move the checkpoints from step `suspect` on into checkpoints.rolled-back/ (nothing is deleted), so a resume
    continues from the last one before it; say what was done. With no checkpoint before it, nothing is moved."""
    found = runs.checkpoints(run_dir)
    good = [step for step, _ in found if step < suspect]
    if not good:
        return (f"No checkpoint was saved before step {suspect}, so nothing was rolled back: start the run again with "
                "the rewards changed.")
    aside = Path(run_dir) / ROLLED_BACK_DIR
    aside.mkdir(exist_ok=True)
    moved = []
    for step, path in found:
        if step >= suspect:
            target = aside / path.name
            if target.exists():  # rolled back twice past the same step: keep both
                target = aside / f"{path.name}.{int(time.time())}"
            path.rename(target)
            moved.append(path.name)
    runs.update_status(run_dir, last_checkpoint=good[-1])
    return (f"Rolled back to checkpoint-{good[-1]}: {', '.join(moved) or 'no checkpoint'} moved to {ROLLED_BACK_DIR}/; "
            f"`rloo-studio train --resume {run_dir}` continues from checkpoint-{good[-1]} (the final weights saved in "
            "the run folder are the stopped run's, not the rolled-back ones).")


def _per_completion(value, n: int) -> bool:
    return isinstance(value, list) and len(value) == n


def _call(func, kwargs: dict) -> list:
    result = func(**kwargs)
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
    return list(result)

"""The difficulty scan: which training prompts can teach RLOO anything, measured before training.

For each training prompt (all, or `limit` chosen evenly) the scan samples k (= rloo.num_generations)
completions with the run's model and settings and scores them with the run's rewards — the reward
preview's own machinery (`engine.sampling.sample_groups`, `workers.scorer.score`), one
generation batch of a training step at a time. Per prompt it keeps the totals, their mean and
whether the group has any spread, and sorts the prompt into one bucket (`difficulty_bucket`, the
one rule). It saves `scan.jsonl` (one line per prompt) and a summary in a scan folder under the
runs folder, and writes a filtered copy of the data (`write_filtered`) that a run can train on;
the original data file is never changed.

The summary also counts the completions that write each format the rewards look for (`rewards.asks`), whose
`warmup_offer` — the one rule, read by the scan panel and the reward preview — turns a format almost no completion
writes into the sentence that offers the format warm-up (engine/warmup.py) before RLOO.

The sampling is the caller's: the command line samples in its own process, the app in its
inference worker. This module imports neither torch nor Gradio.
"""

from __future__ import annotations

import math
import shutil
import statistics
import time
from pathlib import Path
from typing import Callable

from . import runs
from .config import RunConfig
from .errors import DataError, StudioError
from .protocol import CommandEvent, ScanDone, ScanPlan, ScanProgress
from .rewards.asks import check_asks, rare_format
from .workers import scorer

ALWAYS_SOLVED, NEVER_SOLVED, MIXED = "always solved", "never solved", "mixed"
BUCKETS = (ALWAYS_SOLVED, MIXED, NEVER_SOLVED)
# Where in the scan's range of totals (0 = the lowest total any completion got, 1 = the highest) a group without
# spread counts as solved. A half: a group whose k completions all got the same total is "solved" when that total
# is nearer the best the scan saw than the worst.
SOLVED_FROM = 0.5
SPREAD_TOLERANCE = 1e-9  # totals closer than this are equal (as rewards.scoring.all_equal_groups)
SOLVED_RULE = ("A prompt is *mixed* when its k completions got different total rewards: RLOO learns from it. When all k "
               "got the same total it teaches nothing, and it is *always solved* if that total lies in the upper half of the "
               "scan's range (from the lowest to the highest total of any completion), *never solved* if in the lower half "
               "(or when every completion of the scan got the same total).")
KEEP_MIXED = "mixed"  # the default filter: keep the mixed prompts, drop the always and never solved ones
EXAMPLES_PER_BUCKET = 3


def has_spread(totals: list[float | None]) -> bool:
    """True when the scored totals of one prompt's group differ (None — unscorable — is left out, as in TRL)."""
    scored = [float(t) for t in totals if t is not None and not (isinstance(t, float) and math.isnan(t))]
    return bool(scored) and max(scored) - min(scored) > SPREAD_TOLERANCE


def difficulty_bucket(totals: list[float | None], lowest: float, highest: float) -> str:
    """The one rule (SOLVED_RULE): mixed, always solved or never solved, given the scan's lowest and highest total."""
    if has_spread(totals):
        return MIXED
    scored = [float(t) for t in totals if t is not None and not (isinstance(t, float) and math.isnan(t))]
    if not scored or highest - lowest <= SPREAD_TOLERANCE:
        return NEVER_SOLVED
    return ALWAYS_SOLVED if (scored[0] - lowest) / (highest - lowest) >= SOLVED_FROM else NEVER_SOLVED


def pick_evenly(n_rows: int, limit: int | None) -> list[int]:
    """Indices of `limit` rows spread evenly over `n_rows` (all of them without a limit), in order."""
    if limit is None or limit >= n_rows:
        return list(range(n_rows))
    return [i * n_rows // limit for i in range(limit)]


def check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise StudioError(f"--limit {limit} leaves no prompt to scan", "the scan samples completions for `limit` prompts",
                          "give a positive number, e.g. --limit 50, or leave --limit out to scan every prompt")


def groups_per_generation(cfg: RunConfig) -> int:
    """Prompt groups in one generation batch of training (generation batch / k): the scan samples this many at once.
    It serves steps_per_generation / accumulation optimiser steps (one, unless steps_per_generation is set apart)."""
    plan = cfg.batch_plan()
    return max(1, plan.generation_batch // plan.num_generations)


# ---- running a scan --------------------------------------------------------------------------------

def eta_words(event: ScanProgress) -> str:
    """A progress event in the page's words: "24/64 prompts scanned, about 1 min 10 s left"."""
    done, total, eta = event.done, event.total, event.eta_s
    left = "" if eta is None else f", about {int(eta // 60)} min {int(eta % 60)} s left" if eta >= 60 else f", about {eta:.0f} s left"
    return f"{done}/{total} prompts scanned{left}"


def run_scan(cfg: RunConfig, sample: Callable[[list[dict], int], dict], runs_dir: str | Path, limit: int | None = None,
             progress: Callable[[CommandEvent], None] = lambda event: None, source: str | None = None, timeout_s: float = scorer.SCORE_TIMEOUT_S,
             seed: int = 0) -> Path:
    """Scan the config's training prompts; returns the scan folder (scan.jsonl + summary).

    `sample(rows, seed)` returns what `engine.sampling.sample_groups` returns for those rows (k completions each,
    in order). `source`: the editor's reward code, when the rewards use it. Raises StudioError for bad input and
    when the rewards fail (their words)."""
    from .data import load_rows
    from .rewards.preview import scoring_request

    check_limit(limit)
    started = time.time()
    try:
        train = load_rows(cfg.data, cfg.base_dir, seed=int(cfg.rloo_value("seed"))).train  # training's split: no held-out row
    except DataError as exc:  # named by the config key, which the page turns into its label
        raise DataError(f"data.source: {exc.what}", exc.why, exc.fix) from None
    chosen = pick_evenly(len(train), limit)
    k = int(cfg.rloo_value("num_generations"))
    batch = groups_per_generation(cfg)  # one generation batch of training: memory training needs anyway
    batches = [chosen[i:i + batch] for i in range(0, len(chosen), batch)]
    progress(ScanPlan(prompts=len(chosen), of=len(train), k=k, batches=len(batches)))
    records, probes, functions = [], [], {}
    child, first = None, None
    try:
        for number, indices in enumerate(batches):
            # Each batch's scoring child starts while the model samples: its start-up (imports) costs no waiting.
            child = scorer.start_scorer()
            sampled = sample([train[i] for i in indices], seed + number)
            request = scoring_request(cfg, sampled, source)
            request.probes = number == 0  # the hack probes once: they are about the rewards, not the prompts
            result = scorer.score(request, timeout_s=timeout_s, proc=child)
            _add_batch(records, indices, train, result)
            if number == 0:
                probes = result.get("probes", [])
            for name, summary in result.get("functions", {}).items():
                functions.setdefault(name, []).append(summary.get("mean"))
            done, now = len(records), time.time()
            # The first batch also loads the model: once a second batch is done, the rate leaves the loading out.
            first = first or (now, done)
            rate = (now - first[0]) / (done - first[1]) if done > first[1] else (now - started) / done
            progress(ScanProgress(done=done, total=len(chosen), elapsed_s=round(now - started, 1),
                                  eta_s=round(rate * (len(chosen) - done), 1)))
    finally:
        if child is not None and child.poll() is None:  # sampling failed: the waiting child is not needed
            child.kill()
            child.wait()
    folder = save_scan(cfg, records, runs_dir, of=len(train), probes=probes, seconds=time.time() - started,
                       functions={n: statistics.fmean(v for v in means if v is not None) if any(v is not None for v in means)
                                  else None for n, means in functions.items()})
    progress(ScanDone(seconds=round(time.time() - started, 1), folder=str(folder)))
    return folder


def _add_batch(records: list[dict], indices: list[int], train: list[dict], result: dict) -> None:
    """One batch's scored groups as scan records (group i of the batch is training row indices[i])."""
    if result.get("problems"):
        what, _, rest = result["problems"][0].partition("\n")
        raise StudioError(f"scoring the scan's completions failed: {what}", rest.replace("Why: ", "").split("\nWhat to do: ")[0],
                          "fix the reward (the preview shows the failing completion), then scan again")
    by_group: dict[int, list[dict]] = {}
    for row in result["rows"]:
        by_group.setdefault(row["group"], []).append(row)
    for group, index in enumerate(indices):
        rows = by_group.get(group, [])
        totals = [r["total"] for r in rows]
        scored = [t for t in totals if t is not None]
        records.append({"index": index, "prompt": rows[0]["prompt"] if rows else "", "row": train[index],
                        "totals": totals, "rewards": {n: [r["rewards"][n] for r in rows] for n in result.get("functions", {})},
                        "completions": [r["completion"] for r in rows],
                        "mean_total": statistics.fmean(scored) if scored else None, "spread": has_spread(totals)})


def summarize(records: list[dict], cfg: RunConfig, of: int) -> dict:
    """Buckets (by `difficulty_bucket`), their shares, examples, and what they mean per training step."""
    every = [float(t) for r in records for t in r["totals"] if t is not None]
    lowest, highest = (min(every), max(every)) if every else (0.0, 0.0)
    for r in records:
        r["bucket"] = difficulty_bucket(r["totals"], lowest, highest)
    n = len(records)
    counts = {b: sum(r["bucket"] == b for r in records) for b in BUCKETS}
    useful = counts[MIXED] / n if n else 0.0
    # The prompts an optimiser step trains on: a generation batch (groups_per_generation, the scan's own batch) serves
    # steps_per_generation / accumulation steps, so with steps_per_generation set apart it is not one step's.
    per_step = max(1, round(cfg.batch_plan().prompts_per_step))
    examples = {b: [{"prompt": r["prompt"], "mean_total": r["mean_total"], "completions": r["completions"][:2]}
                    for r in records if r["bucket"] == b][:EXAMPLES_PER_BUCKET] for b in BUCKETS}
    return {
        "prompts": n, "of": of, "k": int(cfg.rloo_value("num_generations")), "rule": SOLVED_RULE,
        "range": {"lowest": lowest, "highest": highest, "solved_from": lowest + SOLVED_FROM * (highest - lowest)},
        "scored": len(every),  # completions some function scored: with none, the range above is no total anyone got
        "buckets": counts, "shares": {b: (counts[b] / n if n else 0.0) for b in BUCKETS},
        "no_spread_share": (counts[ALWAYS_SOLVED] + counts[NEVER_SOLVED]) / n if n else 0.0,
        "groups_per_step": per_step, "useful_share_per_step": useful, "useful_groups_per_step": useful * per_step,
        # Groups of a step are drawn (nearly) independently from the data: P(no mixed group in a step) = (1-p)^G.
        "steps_without_signal": (1 - useful) ** per_step,
        "mean_total": statistics.fmean(r["mean_total"] for r in records if r["mean_total"] is not None)
        if any(r["mean_total"] is not None for r in records) else None,
        "examples": examples,
        "formats": format_counts(records, cfg),
    }


def format_counts(records: list[dict], cfg: RunConfig) -> list[dict]:
    """Per format a reward looks for (rewards.asks): how many of the scan's completions write it ("matched" of
    "completions"), with the reward's name and the format in words."""
    completions = [c for r in records for c in r.get("completions") or []]
    findings = check_asks(cfg.rewards, cfg.base_dir, cfg.data.system_prompt, [r.get("prompt", "") for r in records], completions)
    return [{k: f[k] for k in ("reward", "looks_for", "matched", "completions")} for f in findings]


def save_scan(cfg: RunConfig, records: list[dict], runs_dir: str | Path, of: int, probes: list, seconds: float,
              functions: dict) -> Path:
    """Write scan.jsonl and the summary into a new folder RUNS/scans/<scan-id>/; returns the folder."""
    summary = summarize(records, cfg, of)
    name = Path(cfg.data.source).stem if cfg.data.source != "demo" else "demo"
    folder = runs.create_run_dir(Path(runs_dir).expanduser() / runs.SCANS_DIR, name)
    runs.append_jsonl(folder / runs.SCAN_FILE, [{k: v for k, v in r.items()} for r in records])
    runs.write_json_atomic(folder / runs.SCAN_SUMMARY_FILE, {
        **summary, "scan_id": folder.name, "created_at": time.time(), "seconds": round(seconds, 1),
        "model": cfg.model.name_or_path, "data": cfg.data.source, "functions": functions, "probes": probes,
        "config": cfg.to_dict(), "base_dir": str(Path(cfg.base_dir).resolve())})
    return folder


def read_scan(folder: str | Path) -> tuple[dict, list[dict]]:
    """(summary, records) of a saved scan folder."""
    folder = Path(folder)
    summary = runs.read_json(folder / runs.SCAN_SUMMARY_FILE)
    if not summary or not (folder / runs.SCAN_FILE).is_file():
        raise StudioError(f"{folder} is not a scan folder (no {runs.SCAN_SUMMARY_FILE} or {runs.SCAN_FILE})", "",
                          "scan the data first (`rloo-studio scan CONFIG`)")
    return summary, runs.read_jsonl(folder / runs.SCAN_FILE)


# ---- the filtered data ------------------------------------------------------------------------------

def parse_band(text: str | None) -> tuple[float, float] | None:
    """`--band LO:HI` (mean total reward, both ends kept) → (LO, HI); None without a band."""
    if text is None or not str(text).strip():
        return None
    try:
        low, high = (float(part) for part in str(text).split(":"))
    except ValueError:
        raise StudioError(f"--band {text} is not LO:HI", "the band is a range of mean total reward, both ends kept",
                          "write it like --band 0.2:1.0") from None
    if low > high:
        raise StudioError(f"--band {text} is empty: {low:g} is above {high:g}", "", f"write it as --band {high:g}:{low:g}")
    return low, high


def kept(records: list[dict], band: tuple[float, float] | None = None) -> list[dict]:
    """The records a filter keeps: the mixed ones, or (with a band) those whose mean total lies in it."""
    if band is None:
        return [r for r in records if r.get("bucket") == MIXED]
    return [r for r in records if r["mean_total"] is not None and band[0] <= r["mean_total"] <= band[1]]


def filtered_paths(cfg: RunConfig, scan_folder: Path) -> tuple[Path, Path]:
    """Where the filtered training (and held-out) rows go: next to a local data file, named after the scan;
    for the bundled demo or a hub dataset (no folder of the person's own) in the scan folder."""
    from .data import is_hub_source

    source = cfg.data.source
    if source != "demo" and not is_hub_source(source, cfg.base_dir):
        data = cfg.resolve_path(source)
        data = data if data.is_file() else Path(source).expanduser().resolve()
        stem = f"{data.stem}.{runs.FILTERED_TAG}-{scan_folder.name}"
        return data.with_name(stem + ".jsonl"), data.with_name(stem + ".test.jsonl")
    return scan_folder / runs.FILTERED_FILE, scan_folder / runs.FILTERED_TEST_FILE


def write_filtered(scan_folder: str | Path, band: tuple[float, float] | None = None) -> dict:
    """Write the kept prompts' rows as a new JSONL file (the original is never touched); returns
    {path, test_path, kept, of, overrides}: `overrides` are the config changes that train on it.

    Held-out rows the config names by split (or draws as a fraction) are written beside it too, so a run on
    the filtered file evaluates on the same held-out prompts as before. The scan's summary is copied next to
    the filtered file (`runs.scan_record_for`), and a run on the file copies it into its folder."""
    from .data import _looks_local, load_rows

    scan_folder = Path(scan_folder)
    summary, records = read_scan(scan_folder)
    keep = kept(records, band)
    if not keep:
        what = f"no scanned prompt has a mean total reward in {band[0]:g}..{band[1]:g}" if band else "no scanned prompt is mixed"
        raise StudioError(f"the filtered data would be empty: {what}",
                          "a run needs prompts whose completions get different rewards to learn anything",
                          "choose a wider band of mean reward, or change the rewards or the temperature and scan again")
    cfg = RunConfig.from_dict(summary["config"], summary.get("base_dir") or ".")
    path, test_path = filtered_paths(cfg, scan_folder)
    for target in (path, test_path):
        if target.exists():
            raise StudioError(f"{target} exists already", "the filtered data is written as a new file, never over another",
                              "use that file, or move it away and write again")
    runs.write_text_atomic(path, "".join(runs.to_json_line(r["row"]) for r in sorted(keep, key=lambda r: r["index"])))
    overrides = {"data.source": str(path)}
    if cfg.data.split != "train":
        overrides["data.split"] = "train"
    if cfg.data.config_name:
        overrides["data.config_name"] = None
    held_out_named = cfg.data.test_split and not _looks_local(cfg.data.test_split)
    if held_out_named or (not cfg.data.test_split and cfg.data.test_fraction > 0):
        test = load_rows(cfg.data, cfg.base_dir, seed=int(cfg.rloo_value("seed"))).test or []
        runs.write_text_atomic(test_path, "".join(runs.to_json_line(r) for r in test))
        overrides.update({"data.test_split": str(test_path), "data.test_fraction": 0})
    else:
        test_path = None
    record = {**{k: v for k, v in summary.items() if k not in ("config", "examples")}, "scan_folder": str(scan_folder.resolve()),
              "filter": {"band": list(band) if band else None, "rule": "keep mixed prompts" if band is None
                         else f"keep prompts with mean total reward in {band[0]:g}..{band[1]:g}"},
              "kept": len(keep), "filtered_file": str(path)}
    runs.write_json_atomic(runs.scan_record_for(path), record)
    return {"path": str(path), "test_path": str(test_path) if test_path else None, "kept": len(keep), "of": len(records),
            "unscanned": max(0, int(summary.get("of") or 0) - len(records)), "overrides": overrides}


def unscanned_words(written: dict, how_to_scan_all: str) -> str:
    """What a filtered file leaves out besides the dropped prompts: the training prompts the scan never saw (a scan of
    64 of 7,473 rows writes a file of at most 64). "" when the scan saw them all."""
    n = written.get("unscanned") or 0
    if not n:
        return ""
    return (f"The other {n} training prompt{'s' if n != 1 else ''} {'were' if n != 1 else 'was'} not scanned and "
            f"{'are' if n != 1 else 'is'} not in the file either: to filter the whole data, scan all of it "
            f"({how_to_scan_all}).")


def override_line(overrides: dict) -> str:
    """The config overrides as `key=value` words for the command line."""
    return " ".join(f"{k}={'null' if v is None else v}" for k, v in overrides.items())


def copy_scan_record(data_source: str | Path, run_dir: str | Path) -> bool:
    """A run trained on a filtered file keeps that file's scan record (which prompts, which rule) in its folder."""
    if not Path(data_source).is_file():  # the demo or a hub dataset: never a filtered file
        return False
    record = runs.scan_record_for(data_source)
    if not record.is_file():
        return False
    shutil.copyfile(record, Path(run_dir) / runs.SCAN_SUMMARY_FILE)
    return True


# A prompt solved this often (or this rarely) by one completion: the chance that one scan's k completions all tie on it.
ONE_DRAW_EXAMPLE = 0.8


def limits_words(summary: dict) -> str:
    """What limits the buckets: each prompt was drawn once, k completions, so a prompt the model solves most of the
    time can tie all k in one scan and be put under *always solved* (and one it rarely solves under *never solved*),
    while in training it would still teach; and when every completion of the scan got the same total, the scan
    cannot tell solved from unsolved at all (every prompt is put under *never solved*).

    >>> "solves 80 % of the time gets all 4 right in 41 % of scans" in limits_words({"k": 4, "range": {"lowest": 0, "highest": 1}})
    True
    """
    k, span = int(summary["k"]), summary.get("range") or {}
    if summary.get("scored") == 0:  # (a summary written before "scored" was kept has none: the range then speaks)
        return ("No completion of the scan was scored: every reward function returned None (cannot score this one) for "
                "every completion, so the scan cannot tell solved from unsolved prompts and all of them are under *never "
                "solved*; check the rewards in the preview: what they expect of the completions and the columns.")
    if span and (span.get("highest") or 0.0) - (span.get("lowest") or 0.0) <= SPREAD_TOLERANCE:
        return (f"Every completion of the scan got the same total ({span.get('lowest', 0.0):g}): the scan cannot tell "
                "solved from unsolved prompts, so all of them are under *never solved*; check the rewards in the preview.")
    p = ONE_DRAW_EXAMPLE
    return (f"Each prompt was sampled once, {k} completions: a prompt the model solves {100 * p:.0f} % of the time gets all "
            f"{k} right in {100 * p ** k:.0f} % of scans (and one it solves {100 * (1 - p):.0f} % of the time all {k} wrong "
            f"as often), so some *always* and *never solved* prompts would still teach in training. More completions per "
            "prompt give a surer split.")


def summary_lines(summary: dict) -> list[str]:
    """The scan's summary in words, for the command line."""
    n, k = summary["prompts"], summary["k"]
    lines = [f"Scanned {n} of {summary['of']} training prompts, {k} completions each, in {summary.get('seconds', 0):.0f} s."]
    for b in BUCKETS:
        lines.append(f"  {b:<14} {summary['buckets'][b]:>6}  {100 * summary['shares'][b]:5.1f}%")
    lines.append(f"No spread (teach nothing): {100 * summary['no_spread_share']:.1f}% of the prompts.")
    lines.append(limits_words(summary).replace("*", ""))
    lines.append(f"Per step ({summary['groups_per_step']} prompt groups): on average {summary['useful_groups_per_step']:.1f} "
                 f"groups teach something ({100 * summary['useful_share_per_step']:.1f}%); a step with none: "
                 f"{100 * summary['steps_without_signal']:.1f}% of steps.")
    lines += [f"Hack probe: {p['message']}" for p in summary.get("probes", [])]
    lines.append(f"Rule: {summary['rule']}")
    found = rare_format(summary.get("formats") or [])
    if found is not None:  # warmup_offer's rule, in config words
        first, also = found
        lines.append(f"A format warm-up could help: only {first['matched']} of {first['completions']} sampled completions "
                     f"write `{first['looks_for']}`, which `{first['reward']}` looks for{also}. Set `warmup.enabled: true` "
                     "(and `warmup.template`) in the config: a few dozen supervised steps on replies in that format, then RLOO.")
    return lines

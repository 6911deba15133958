"""A run's folder and what its records say. This module: the run-directory contract (create runs, write and read
their files safely, list them); beside it, what two of its files record, read the same way by the worker that writes
them and by every page and command that reads them: `step_time` (metrics.jsonl's step-time keys and the breakdown in
words) and `alerts` (the health rules that turn metric rows into the records of alerts.jsonl).

Layout (see docs/run-directory.md): config.yaml, rewards.py, status.json, metrics.jsonl,
samples.jsonl, alerts.jsonl, train.log, checkpoints/checkpoint-N/, adapter/, eval.json, exports/, scan-summary.json;
and beside the runs, scans/<scan-id>/ (scan.jsonl, scan-summary.json).

Writers append whole lines and flush; readers skip an incomplete last line, so a reader
never sees half a record even while a worker is writing or after it was killed. status.json
is replaced atomically (temp file + rename). This module never deletes anything a run wrote.
It knows nothing about models or training; it is plain files and the standard library.

Over 500 lines because the run directory is one contract (status, records, checkpoints, evaluations, the listing)
that every process reads and writes; split, its atomic-write and completeness rules would be repeated in each part.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

STATES = ("queued", "running", "stopping", "stopped", "finished", "failed")
ACTIVE_STATES = ("queued", "running", "stopping")
# What Resume continues (workers/jobs.resume_run): not one that trains, not one that finished all its steps.
RESUMABLE_STATES = ("stopped", "failed")

CONFIG_FILE = "config.yaml"
REWARDS_FILE = "rewards.py"
STATUS_FILE = "status.json"
METRICS_FILE = "metrics.jsonl"
SAMPLES_FILE = "samples.jsonl"
ALERTS_FILE = "alerts.jsonl"  # health alerts the worker raised (see alerts.py): one line when each begins and ends
# The health checks at each checkpoint (hack probes, held-out reward) that some alerts are found from: a resumed run
# reads them back, so an alert raised before the resume can end and the best held-out checkpoint stays known.
CHECKS_FILE = "checks.jsonl"
LOG_FILE = "train.log"
# The trainer arguments as the built trainer holds them (engine/trainer_args.py, record_trainer_arguments): what ran, on either backend
TRAINER_ARGS_FILE = "trainer_args.json"
# Set by the app to the run directory whose train.log already receives the worker's output.
LOG_CAPTURED_ENV = "RLOO_STUDIO_LOG_CAPTURED"
STOP_FILE = "STOP"  # its presence asks the worker to stop after the current step
CHECKPOINTS_DIR = "checkpoints"
ADAPTER_DIR = "adapter"
MODEL_DIR = "model"  # full fine-tuning writes the whole model here instead of adapter/
FINAL = "final"  # the name of the run's final adapter/ (or model/) wherever a checkpoint is named (eval, export, chat)
EVAL_FILE = "eval.json"  # what `rloo-studio eval` writes: base vs the chosen weights
EVALS_DIR = "evals"  # the earlier evaluations, each kept when a new one takes eval.json's place
# The difficulty scan (rloo_studio.scan, docs/scan.md): RUNS/scans/<scan-id>/ holds one line per prompt and the summary.
SCANS_DIR = "scans"
SCAN_FILE = "scan.jsonl"
SCAN_SUMMARY_FILE = "scan-summary.json"  # also in a run folder: the scan of the filtered data it trained on
FILTERED_TAG = "filtered"  # a local data file's filtered copy: <stem>.filtered-<scan-id>.jsonl beside it
FILTERED_FILE = "filtered.jsonl"  # ... or, for the demo or a hub dataset, these two in the scan folder
FILTERED_TEST_FILE = "filtered.test.jsonl"


def scan_record_for(data_file: str | Path) -> Path:
    """The scan record beside a filtered data file: which scan, which rule, how many prompts kept."""
    path = Path(data_file)
    return path.with_name(path.name + ".scan.json")


def slugify(text: str, max_len: int = 32) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:max_len].strip("-") or "run"


def new_run_id(name: str) -> str:
    """A sortable id: UTC timestamp to the second, then a short slug of `name`."""
    return f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{slugify(name)}"


# Runs hold the person's reward code, configs, prompts, completions, logs and weights: only their owner may read them.
# Other users of a shared computer are part of the app's threat model (docs/security.md).
PRIVATE_UMASK = 0o077
PRIVATE_DIR_MODE = 0o700


def keep_private() -> None:
    """Everything this process and its children create from now on is owner-only (files 0600, folders 0700).

    Set once by the `rloo-studio` command, for the app and every worker it starts (children inherit the mask),
    so checkpoints, exports and uploads written by libraries are private too. POSIX only: Windows files
    inherit the ACL of the user's profile folder, which other users cannot read."""
    if os.name == "posix":
        os.umask(PRIVATE_UMASK)


def make_private(root: str | Path) -> int:
    """Take group and other access away from `root` and everything inside it; the number of entries changed.

    For a runs folder made before this version, or with another program's umask. Links are left alone (their
    targets may be anyone's); entries that vanish or cannot be changed meanwhile are skipped."""
    root = Path(root)
    if os.name != "posix" or not root.is_dir():
        return 0
    changed = 0
    for folder, dirs, files in os.walk(root):
        for path in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            try:
                st = os.lstat(path)
                if os.path.islink(path) or not st.st_mode & 0o077:
                    continue
                os.chmod(path, st.st_mode & 0o7700)
                changed += 1
            except OSError:
                continue
    return changed


def run_folder(runs_dir: str | Path, run_id: str | None) -> Path | None:
    """The folder of run `run_id` in `runs_dir`, or None when `run_id` names no run folder directly inside it.

    The one check for a run named by the page: a name that climbs out (`..`, a separator, an absolute path) or
    a link leading elsewhere is no run, whatever the page's menus would have allowed, so nothing outside the runs
    folder is read, resumed or deleted."""
    if not isinstance(run_id, str) or not run_id or run_id in (".", "..") or any(c in run_id for c in "/\\\0:"):
        return None
    root = Path(runs_dir).expanduser().resolve()
    folder = root / run_id
    try:
        if folder.is_symlink() or not folder.is_dir() or folder.resolve().parent != root:
            return None
    except OSError:
        return None
    return folder


def make_private_note(root: str | Path) -> str | None:
    """`make_private(root)`, and the sentence that tells the person what changed (None when nothing did)."""
    changed = make_private(root)
    if not changed:
        return None
    return (f"the runs folder {root} could be read by other users of this computer: {changed} files and folders in it "
            "are now private (owner only)")


def create_run_dir(runs_root: str | Path, name: str) -> Path:
    """Make a fresh run directory; never reuses an existing one. A runs folder made here is owner-only."""
    root = Path(runs_root)
    if not root.exists():
        root.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
        os.chmod(root, PRIVATE_DIR_MODE)  # mkdir's mode is masked by the umask
    base = new_run_id(name)
    for n in range(1000):
        path = root / (base if n == 0 else f"{base}-{n + 1:03d}")  # zero-padded: ids keep sorting
        try:
            path.mkdir(mode=PRIVATE_DIR_MODE)
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a new run directory under {root}")


# ---- writing -----------------------------------------------------------------------------------

def _json_default(value: Any):
    if hasattr(value, "item"):  # numpy / torch scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _clean(value: Any) -> Any:
    """JSON has no NaN/inf: store them as null so every reader can parse the line."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def to_json_line(record: dict) -> str:
    return json.dumps(_clean(record), default=_json_default, ensure_ascii=False) + "\n"


def append_jsonl(path: str | Path, records: list[dict] | dict) -> None:
    """Append whole lines in one write and flush them to disk."""
    if isinstance(records, dict):
        records = [records]
    if not records:
        return
    text = "".join(to_json_line(r) for r in records)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def write_text_atomic(path: str | Path, text: str) -> None:
    """Replace the file whole: write a temporary file in the same folder, flush it to disk, rename it over `path`.

    A crash mid-write leaves the previous version whole (a rename within one folder is atomic), and each
    call has its own temporary file, so two writers at once (the editor's autosave and *Check the code*)
    never move each other's file away. The one atomic writer of the package.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, data: dict) -> None:
    write_text_atomic(path, json.dumps(_clean(data), default=_json_default, ensure_ascii=False, indent=2))


# ---- reading -----------------------------------------------------------------------------------

def iter_jsonl(path: str | Path) -> Iterator[dict]:
    """Records of a JSONL file; a torn or unparsable line (e.g. the last one of a killed writer) is skipped."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    break  # still being written, or torn by a crash
                line = line.strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict):
                    yield record
    except FileNotFoundError:
        return


def read_jsonl(path: str | Path) -> list[dict]:
    return list(iter_jsonl(path))


def read_json(path: str | Path) -> dict | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else None
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


# What every eval.json this version writes holds (engine/evaluate.py); a file without them was written by an earlier
# version (before intervals, checkpoints and the decoding record) and is not read as if it were current.
EVAL_KEYS = ("base", "tuned", "tuned_vs_base", "checkpoints", "decoding", "selection")
# Said wherever such a file would have been shown, followed by that place's way to evaluate again.
OLD_EVAL = "this run's evaluation was written by an earlier version of RLOO Studio, in a form this one does not read"


def read_eval(run_dir: str | Path) -> dict | None:
    """The run's eval.json when it is in the shape this version writes; None when there is none, it is unreadable, or
    an earlier version wrote it (`old_eval` tells that case apart)."""
    report = read_json(Path(run_dir) / EVAL_FILE)
    if report is None or not all(key in report for key in EVAL_KEYS):
        return None
    tuned = report["tuned"]
    return report if isinstance(tuned, dict) and "intervals" in tuned and isinstance(report["checkpoints"], list) else None


def write_eval(run_dir: str | Path, report: dict) -> Path | None:
    """Write `report` as the run's eval.json; an evaluation already there moves to evals/eval-<its time>.json first
    (an evaluation is a person's work: a second one with other settings, or on other prompts, must not erase the
    first). Returns where the earlier one now is, None when there was none."""
    path = Path(run_dir) / EVAL_FILE
    kept = None
    if path.exists():
        earlier = read_json(path) or {}
        when = earlier.get("created_at") if isinstance(earlier.get("created_at"), (int, float)) else path.stat().st_mtime
        folder = Path(run_dir) / EVALS_DIR
        folder.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
        kept = folder / f"eval-{stamp}.json"
        n = 1
        while kept.exists():
            n += 1
            kept = folder / f"eval-{stamp}-{n}.json"
        os.replace(path, kept)
    write_json_atomic(path, {**report, **({"previous": str(kept.relative_to(run_dir))} if kept else {})})
    return kept


def old_eval(run_dir: str | Path) -> bool:
    """True when the run has an eval.json that `read_eval` does not take: it must be evaluated again."""
    return (Path(run_dir) / EVAL_FILE).exists() and read_eval(run_dir) is None


# ---- status ------------------------------------------------------------------------------------

def read_status(run_dir: str | Path) -> dict:
    return read_json(Path(run_dir) / STATUS_FILE) or {}


def trained_seconds(status: dict, now: float | None = None, state: str | None = None) -> float | None:
    """Seconds the run has spent training, over all its sessions (a resume adds one): the time it sat stopped between
    them is not counted. `state`: the run's state as the page tells it (`effective_state`: a worker that died leaves
    "running" in the file), else the file's. A session that is not live counts to its last step (`trained_s`, written
    at every step and at the end). Runs recorded before sessions were kept: from its first start (None when it has
    none)."""
    now = time.time() if now is None else now
    state = state or status.get("state")
    session = status.get("session_started_at")
    if session is None:
        started = status.get("started_at")
        if started is None:
            return None
        # Queued: a new run loading (its time counts), or an old run's Resume not yet begun (its last session's end).
        end = now if state in ("running", "stopping") else status.get("finished_at") or (
            now if state == "queued" else status.get("updated_at") or now)
        return max(0.0, end - started)
    before = float(status.get("trained_before_s") or 0.0)
    if state in ("running", "stopping"):
        return before + max(0.0, now - session)
    if status.get("trained_s") is not None:  # the last session's end, written when it stopped or finished
        return float(status["trained_s"])
    return before + max(0.0, (status.get("updated_at") or now) - session)  # a session that ended without saying so


def update_status(run_dir: str | Path, **fields: Any) -> dict:
    """Merge `fields` into status.json (atomically) and stamp updated_at."""
    status = read_status(run_dir)
    status.update(fields)
    status["updated_at"] = time.time()
    write_json_atomic(Path(run_dir) / STATUS_FILE, status)
    return status


def pid_alive(pid: Any) -> bool:
    """True while the worker process `pid` runs (portable: see `procs.pid_alive`)."""
    from ..procs import pid_alive as alive

    return alive(pid)


def effective_state(status: dict) -> str:
    """The state to show: an active state whose worker process is gone means the run was interrupted."""
    state = status.get("state", "unknown")
    if state in ACTIVE_STATES and status.get("pid") and not pid_alive(status.get("pid")):
        return "interrupted"
    return state


def final_stopped_at(run_dir: str | Path) -> tuple[int, int] | None:
    """(step, max_steps) when the run's `final` weights are a stop's, not the end of training; else None.

    A stopped run saves its weights as `final` too (so that Chat, Evaluate and Export have the latest weights to offer);
    whatever is made from them says they are the stop step's."""
    status = read_status(run_dir)
    if effective_state(status) == "stopped" and status.get("step") != status.get("max_steps"):
        return status.get("step"), status.get("max_steps")
    return None


def stopped_final_words(step, max_steps) -> str:
    """`final` weights saved at a stop, in words (the pages, the model card)."""
    return f"{FINAL}: the weights saved when the run was stopped at step {step} of {max_steps}, not the end of training"


def request_stop(run_dir: str | Path) -> None:
    """Ask the worker to stop after the current step (it saves a checkpoint and the adapter)."""
    Path(run_dir, STOP_FILE).write_text(f"{time.time()}\n", encoding="utf-8")


def stop_requested(run_dir: str | Path) -> bool:
    return Path(run_dir, STOP_FILE).exists()


def clear_stop(run_dir: str | Path, older_than: float | None = None) -> None:
    """Remove the stop request; with `older_than` (a time), only one written before it."""
    path = Path(run_dir, STOP_FILE)
    try:
        if older_than is None or path.stat().st_mtime < older_than:
            path.unlink()
    except FileNotFoundError:
        pass


# ---- checkpoints -------------------------------------------------------------------------------

TRAINER_STATE_FILE = "trainer_state.json"
ADAPTER_WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
MODEL_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")

_state_cache: dict[tuple, bool] = {}


def _weights_kind(folder: Path) -> str | None:
    """"adapter" (LoRA files), "model" (full fine-tuning weights) or None: which trained weights `folder` holds."""
    if (folder / "adapter_config.json").is_file() and any((folder / f).is_file() for f in ADAPTER_WEIGHT_FILES):
        return "adapter"
    if (folder / "config.json").is_file() and any((folder / f).is_file() for f in MODEL_WEIGHT_FILES):
        return "model"
    return None


def _trainer_state_whole(folder: Path) -> bool:
    state = folder / TRAINER_STATE_FILE
    try:
        st = state.stat()
    except OSError:
        return False
    key = (str(state), st.st_mtime_ns, st.st_size)  # parse each version once: the app polls this
    if key not in _state_cache:
        try:
            _state_cache[key] = isinstance(json.loads(state.read_text(encoding="utf-8")), dict)
        except (OSError, ValueError):
            _state_cache[key] = False
    return _state_cache[key]


def checkpoint_problem(path: str | Path) -> str | None:
    """None for a complete checkpoint folder, else why it is not: the one rule for resume, eval, export and chat.

    transformers' Trainer (`_save_checkpoint`) writes the weights, optimizer, scheduler and RNG state
    first and trainer_state.json last: a folder without weights, or without a trainer_state.json that parses
    (the disk filled up, or the process died, while writing it), is a save that was cut off. It is neither
    resumed nor evaluated.
    """
    folder = Path(path)
    if _weights_kind(folder) is None:
        return f"no weights ({ADAPTER_WEIGHT_FILES[0]} or {MODEL_WEIGHT_FILES[0]}): its save was cut off"
    if not _trainer_state_whole(folder):
        return f"no whole {TRAINER_STATE_FILE} (the trainer writes it last): its save was cut off"
    return None


def checkpoint_complete(path: str | Path) -> bool:
    """Whether a checkpoint folder was saved to the end (see checkpoint_problem)."""
    return checkpoint_problem(path) is None


def _checkpoint_folders(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(step, path) of every checkpoints/checkpoint-N folder, complete or not, oldest first."""
    root = Path(run_dir) / CHECKPOINTS_DIR
    found = []
    if root.is_dir():
        for path in root.iterdir():
            m = re.fullmatch(r"checkpoint-(\d+)", path.name)
            if m and path.is_dir():
                found.append((int(m.group(1)), path))
    return sorted(found)


def checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(step, path) of every complete checkpoint, oldest first; half-written ones are skipped."""
    return [(step, path) for step, path in _checkpoint_folders(run_dir) if checkpoint_complete(path)]


# Signs of a full disk (or exhausted quota) in the errors writers raise: Python's OSError, safetensors'
# "IoError(Os { code: 28, kind: StorageFull, ... })", and torch.save's "PytorchStreamWriter failed writing
# file ...: file write failed" (torch's writer does not pass the errno on).
_DISK_FULL_TEXT = ("no space left on device", "disk quota exceeded", "storagefull", "file write failed")


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether `exc`, or an exception it was raised from, says the disk (or the quota) is full."""
    import errno

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(text in str(exc).lower() for text in _DISK_FULL_TEXT):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def last_checkpoint(run_dir: str | Path) -> tuple[int, Path] | None:
    found = checkpoints(run_dir)
    return found[-1] if found else None


# ---- evaluable weights (what `rloo-studio eval --checkpoint` can load) ----------------------------



@dataclass(frozen=True)
class EvalCheckpoint:
    """Trained weights of a run that eval can load: a trainer checkpoint or the final adapter/model."""

    name: str  # "checkpoint-N" or FINAL
    step: int
    path: Path
    kind: str  # "adapter" (LoRA files, loaded onto the base model) or "model" (full fine-tuning weights)

    def as_dict(self) -> dict:
        return {"name": self.name, "step": self.step, "path": str(self.path), "kind": self.kind}


def _scan_eval_checkpoints(run_dir: Path) -> tuple[list[EvalCheckpoint], list[dict]]:
    found: list[EvalCheckpoint] = []
    skipped: list[dict] = []
    steps: list[int] = []
    for step, path in _checkpoint_folders(run_dir):
        why = checkpoint_problem(path)
        if why is None:
            found.append(EvalCheckpoint(path.name, step, path, _weights_kind(path)))
            steps.append(step)
        else:
            skipped.append({"name": path.name, "step": step, "why": why})
    for folder in (run_dir / ADAPTER_DIR, run_dir / MODEL_DIR):
        if not folder.is_dir():
            continue
        status = read_status(run_dir)
        # status.json's step is the final weights' step once the run has ended (finished or stopped).
        # While a resumed run trains again, adapter/ is the one from its earlier stop: the newest checkpoint is
        # the best estimate then (a stop always saves a checkpoint at its step).
        if status.get("state") in ("finished", "stopped") and isinstance(status.get("step"), int):
            step = status["step"]
        else:
            step = max(steps, default=int(status.get("step") or 0))
        kind = _weights_kind(folder)
        if kind:
            found.append(EvalCheckpoint(FINAL, step, folder, kind))
        else:
            skipped.append({"name": FINAL, "step": step,
                            "why": f"{folder.name}/ has no weights ({ADAPTER_WEIGHT_FILES[0]} or {MODEL_WEIGHT_FILES[0]}): it was not completely written"})
        break
    found.sort(key=lambda c: (c.step, c.name == FINAL))
    skipped.sort(key=lambda s: (s["step"], s["name"] == FINAL))
    return found, skipped


def evaluable_checkpoints(run_dir: str | Path) -> list[EvalCheckpoint]:
    """Every set of trained weights of a run that eval can load, ordered by step (final after a same-step checkpoint).

    Trainer checkpoints (checkpoints/checkpoint-N/) count when complete (checkpoint_problem: the same rule as
    `checkpoints()`); the final adapter/ (or model/) is named FINAL. Plain file checks: no torch.
    """
    return _scan_eval_checkpoints(Path(run_dir))[0]


def incomplete_checkpoints(run_dir: str | Path) -> list[dict]:
    """Checkpoint folders eval must skip, each as {"name", "step", "why"} (e.g. a save cut off before its weights)."""
    return _scan_eval_checkpoints(Path(run_dir))[1]


def set_aside_after(path: str | Path, step: int) -> int:
    """Keep only records with step <= `step` in a JSONL file; move the rest to `<name>.superseded.jsonl`.

    Used on resume: steps after the checkpoint are trained again, so their old records would be
    duplicates. They are set aside, not deleted. Returns how many records were moved.
    """
    path = Path(path)
    if not path.exists():
        return 0
    keep, moved = [], []
    for record in iter_jsonl(path):
        (moved if isinstance(record.get("step"), (int, float)) and record["step"] > step else keep).append(record)
    if moved:
        append_jsonl(path.with_name(path.stem + ".superseded.jsonl"), moved)
    # Rewrite even when nothing moved: this also drops a torn last line left by a crash.
    write_text_atomic(path, "".join(to_json_line(r) for r in keep))
    return len(moved)


# ---- listing -----------------------------------------------------------------------------------

@dataclass
class RunSummary:
    run_id: str
    path: Path
    state: str
    step: int
    max_steps: int | None
    last_reward: float | None
    model: str | None
    started_at: float | None

    def as_dict(self) -> dict:
        return {
            "run_id": self.run_id, "path": str(self.path), "state": self.state, "step": self.step,
            "max_steps": self.max_steps, "last_reward": self.last_reward, "model": self.model,
            "started_at": self.started_at,
        }


def last_metric(run_dir: str | Path, key: str) -> float | None:
    value = None
    for record in iter_jsonl(Path(run_dir) / METRICS_FILE):
        if record.get(key) is not None:
            value = record[key]
    return value


def summarize_run(run_dir: str | Path) -> RunSummary:
    run_dir = Path(run_dir)
    status = read_status(run_dir)
    return RunSummary(
        run_id=run_dir.name,
        path=run_dir,
        state=effective_state(status) if status else "unknown",
        step=int(status.get("step") or 0),
        max_steps=status.get("max_steps"),
        last_reward=last_metric(run_dir, "reward"),
        model=status.get("model"),
        started_at=status.get("started_at"),
    )


def list_runs(runs_root: str | Path) -> list[RunSummary]:
    """Every run directory under `runs_root` (newest first); folders without status.json are skipped."""
    root = Path(runs_root)
    if not root.is_dir():
        return []
    dirs = [p for p in root.iterdir() if p.is_dir() and (p / STATUS_FILE).exists()]
    summaries = [summarize_run(p) for p in dirs]
    # Start time first (names of runs started in the same second sort by name), then the id.
    return sorted(summaries, key=lambda r: (r.started_at or r.path.stat().st_mtime, r.run_id), reverse=True)


# ---- exports -------------------------------------------------------------------------------------

EXPORTS_DIR = "exports"
EXPORT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def resolve_export_dir(run_dir: str | Path, name: str) -> Path:
    """The folder for an export called `name` (e.g. typed in the app), strictly inside RUN_DIR/exports/.

    `name` must be one plain folder name (letters, digits, `.`, `_`, `-`; no `..`); absolute paths,
    separators and anything that resolves outside RUN_DIR/exports/ through a symlink are refused.
    """
    from ..errors import StudioError

    run_dir = Path(run_dir)

    def refuse(why: str) -> StudioError:
        return StudioError(f"export name {name!r} is not allowed", why,
                           "use a plain folder name such as `merged` or `adapter-step-50` (letters, digits, `.`, `_`, `-`)")

    if not isinstance(name, str) or not EXPORT_NAME.match(name) or ".." in name:
        raise refuse("an export name is one folder inside the run's exports/ folder: no paths, `..`, `/` or `~`")
    run_real = run_dir.resolve()
    root = (run_dir / EXPORTS_DIR).resolve()
    if root.parent != run_real:
        raise refuse(f"{run_dir / EXPORTS_DIR} is a link that leads outside the run directory ({root})")
    target = (root / name).resolve()
    if target.parent != root:
        raise refuse(f"{root / name} is a link that leads outside {root} (to {target})")
    return target


def weights_stamp(run_dir: str | Path, checkpoint: str) -> float | None:
    """The newest modification time among the files of a run's weights `checkpoint` (`final` or `checkpoint-N`).

    A process holding those weights in memory compares it to notice that they were written again
    (a run resumed and re-saved). None when there are no such weights."""
    for found in evaluable_checkpoints(run_dir):
        if found.name == checkpoint:
            try:
                return max(p.stat().st_mtime for p in found.path.iterdir() if p.is_file())
            except (OSError, ValueError):
                return None
    return None

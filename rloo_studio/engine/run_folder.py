"""The run directory a training run writes into, made ready before training: created (or the app's queued
one taken), with the config that reproduces the run from inside it (paths absolute, reward files copied in,
never overwriting a copy the run already has) and, on resume, the config it had before beside the new one.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from .. import runs
from ..config import RunConfig
from ..errors import StudioError


def prepare_run_dir(cfg: RunConfig, run_dir: str | Path | None) -> Path:
    """Create the run directory and write the resolved config, reward-source copies and (for data a scan filtered) the scan record into it."""
    if run_dir is None:
        name = cfg.output.run_name or Path(cfg.model.name_or_path.rstrip("/")).name
        # Relative to the current directory, where `rloo-studio runs`, `eval runs/<id>` and the app look.
        path = runs.create_run_dir(Path(cfg.output.runs_dir).expanduser().resolve(), name)
    else:
        path = Path(run_dir)
        # The app creates the folder first (status `queued`, its config and reward code) so the run
        # shows at once; anything else already in the folder belongs to another run.
        queued_by_app = runs.read_status(path).get("state") == "queued"
        if path.exists() and any(path.iterdir()) and not queued_by_app:
            raise StudioError(f"--run-dir {path} already exists and is not empty",
                              "a run directory holds exactly one run, and nothing a run wrote is overwritten",
                              f"choose a new folder, or continue that run with --resume {path}")
        path.mkdir(parents=True, exist_ok=True)
    resolved = resolved_config(cfg, path)
    resolved.save(path / runs.CONFIG_FILE)
    from ..rewards.library import record_run_rewards

    # Which reward files trained the run, by content hash (a library reward's version): rewards.json.
    record_run_rewards(path, [(cfg.resolve_path(a.file), path / b.file) for a, b in zip(cfg.rewards, resolved.rewards) if a.file])
    from ..scan import copy_scan_record

    copy_scan_record(resolved.data.source, path)  # data filtered by a scan: the run keeps which prompts and why
    return path


def resolved_config(cfg: RunConfig, run_dir: Path) -> RunConfig:
    """A copy of `cfg` that reproduces the run from inside `run_dir`: reward files copied in, paths absolute."""
    out = cfg.with_absolute_paths(run_dir)
    copied: dict[str, str] = {}
    for spec_in, spec_out in zip(cfg.rewards, out.rewards):
        if spec_in.file:
            source = cfg.resolve_path(spec_in.file).resolve()
            if str(source) not in copied:
                if source.parent == run_dir.resolve():  # already the run's copy (e.g. on resume): keep it
                    target = source.name
                else:
                    target = runs.REWARDS_FILE if not copied else f"rewards_{len(copied) + 1}_{source.stem}.py"
                    stem = Path(target).stem
                    n = 2
                    # Never overwrite a different copy the run already has: nothing a run wrote is lost.
                    while (run_dir / target).exists() and (run_dir / target).read_bytes() != source.read_bytes():
                        target, n = f"{stem}.{n}.py", n + 1
                    shutil.copyfile(source, run_dir / target)
                copied[str(source)] = target
            spec_out.file = copied[str(source)]
    return out


def save_resumed_config(cfg: RunConfig, run_dir: Path) -> None:
    """On resume with changed settings (e.g. more steps), keep the old config.yaml beside the new one."""
    config_path = run_dir / runs.CONFIG_FILE
    new_text = resolved_config(cfg, run_dir).to_yaml()
    old_text = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    if new_text != old_text:
        if old_text:
            (run_dir / f"config.before-resume-{time.strftime('%Y%m%d-%H%M%S')}.yaml").write_text(old_text, encoding="utf-8")
        config_path.write_text(new_text, encoding="utf-8")

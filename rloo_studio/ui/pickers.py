"""The run and checkpoint pickers that Chat, Evaluate and Export share, and what they may offer.

A run is offered once it has weights to compare (final weights or a checkpoint); its checkpoints
are offered `final` first, then newest first. Reads run directories through `runs`; loads nothing.
"""

from __future__ import annotations

from pathlib import Path

from .. import jobs, runs

FINAL = "final"


def checkpoint_choices(run_dir: Path) -> list[str]:
    """`final` (when the run saved its weights) and every checkpoint with weights, newest first."""
    found = runs.evaluable_checkpoints(run_dir)
    return [c.name for c in sorted(found, key=lambda c: (c.name != FINAL, -c.step))]


def tuned_runs(runs_dir: Path) -> list[str]:
    """Runs that have something to compare: final weights or a checkpoint."""
    return [r.run_id for r in runs.list_runs(runs_dir) if checkpoint_choices(r.path)]


def busy_message(runs_dir: Path, what: str) -> str | None:
    busy = jobs.active_run(runs_dir)
    if busy is None:
        return None
    return (f"**Run `{busy.name}` is training.** {what} would load a second model beside it, competing for the same "
            "memory and slowing it down. Wait for it to finish, or stop it in the Train tab.")

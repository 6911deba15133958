"""What to tell the person when training runs out of GPU memory or disk: what happened, why, and what to change.

The messages draw on the memory estimate (the largest parts, settings that would fit) and on the run
directory (free space, the size of a checkpoint, the last complete one to resume from).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .. import runs
from ..config import RunConfig
from ..errors import OutOfMemory, StudioError


def out_of_memory_error(step, cfg: RunConfig | None = None, device_gib: float | None = None) -> OutOfMemory:
    """The out-of-memory message, with the estimator's breakdown and concrete changes when it can give them."""
    why = "RL keeps the policy, its gradients and the KV cache of every generated completion in memory at once"
    fix = ("lower rloo.max_completion_length or rloo.per_device_train_batch_size (keep it a multiple of "
           "rloo.num_generations), lower rloo.num_generations, set model.load_in_4bit: true, lower lora.r, "
           "or keep model.gradient_checkpointing: true; `rloo-studio estimate CONFIG` shows what each costs")
    if cfg is not None:
        try:
            from ..machine.vram import estimate_config, shrink_to_fit

            est = estimate_config(cfg, device_gib)
            if est is not None:
                largest = sorted(((v, k) for k, v in est.parts.items()), reverse=True)[:3]
                why += (f"; the estimate for this config is {est.total_gib:.1f} GiB"
                        + (f" on a {device_gib:.1f} GiB GPU" if device_gib else "") + ", mostly "
                        + ", ".join(f"{k} {v:.1f} GiB" for v, k in largest))
                if device_gib:
                    changes, shrunk = shrink_to_fit(cfg, device_gib)
                    if changes and shrunk is not None and shrunk.verdict == "fits":
                        overrides = " ".join(f"{k}={json.dumps(v)}" for k, v in changes.items())
                        fix = (f"resume with smaller settings: `rloo-studio train --resume RUN_DIR {overrides}` "
                               f"(estimated {shrunk.total_gib:.1f} GiB); the checkpoints saved so far stay usable")
        except Exception:  # noqa: BLE001 - advice is a bonus; the plain message stands on its own
            pass
    return OutOfMemory(f"the GPU ran out of memory at step {step}", why, fix)


class DiskFull(StudioError):
    """The disk holding the run directory filled up while the run was writing to it."""


def _size_text(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.0f} MiB"


def disk_full_error(run_dir: Path, doing: str, checkpoint: str | None = None) -> DiskFull:
    """What to say when the disk filled up `doing` something (e.g. "saving checkpoint-4") in `run_dir`."""
    run_dir = Path(run_dir)
    why = []
    try:
        why.append(f"{_size_text(shutil.disk_usage(run_dir).free)} is free on the disk holding {run_dir}")
    except OSError:
        pass
    last = runs.last_checkpoint(run_dir)
    if last:
        size = sum(f.stat().st_size for f in last[1].rglob("*") if f.is_file())
        why.append(f"each checkpoint of this run takes about {_size_text(size)}; checkpoint-{last[0]} is complete and "
                   "is the one a resume continues from")
    half_written = run_dir / runs.CHECKPOINTS_DIR / checkpoint if checkpoint else None
    cleanup = (f" (the half-written {half_written} can be deleted: resume skips it)"
               if half_written is not None and half_written.exists() and not runs.checkpoint_complete(half_written) else "")
    return DiskFull(
        f"the disk is full while {doing}",
        "; ".join(why) or "the disk holding the run directory has no space left",
        f"free space on that disk{cleanup}, or keep fewer checkpoints with rloo.save_total_limit; "
        f"then resume with `rloo-studio train --resume {run_dir}`",
    )

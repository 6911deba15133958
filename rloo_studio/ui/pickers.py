"""The run and checkpoint pickers that Chat, Evaluate and Export share, what they may offer, and the
refusal they share while a run trains.

A run is offered once it has weights to compare (final weights or a checkpoint); its checkpoints
are offered `final` first, then newest first. A refusal is also a toast (`refuse`): the message line
of a tab can sit below the fold, and a button that seems to do nothing is a betrayal. A "run is
training" refusal clears once that run no longer trains (`busy_ended`). Reads run directories
through `runs`; loads nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import gradio as gr

from .. import runs
from ..workers import jobs
from .poller import Poller

FINAL = runs.FINAL


def checkpoint_choices(run_dir: Path) -> list[str]:
    """`final` (when the run saved its weights) and every checkpoint with weights, newest first."""
    found = runs.evaluable_checkpoints(run_dir)
    return [c.name for c in sorted(found, key=lambda c: (c.name != FINAL, -c.step))]


def tuned_runs(runs_dir: Path) -> list[str]:
    """Runs that have something to compare: final weights or a checkpoint."""
    return [r.run_id for r in runs.list_runs(runs_dir) if checkpoint_choices(r.path)]


_BUSY = re.compile(r"\*\*Run `([^`]+)` is training\.\*\*")


def busy_message(runs_dir: Path, what: str) -> str | None:
    busy = jobs.active_run(runs_dir)
    if busy is None:
        return None
    return (f"**Run `{busy.name}` is training.** {what} would load a second model beside it, competing for the same "
            "memory and slowing it down. Wait for it to finish, or stop it in the Train tab.")


def busy_ended(message: str | None, runs_dir: Path) -> bool:
    """True when `message` is a `busy_message` whose run no longer trains: it must not stay on screen."""
    m = _BUSY.search(message or "")
    if m is None:
        return False
    active = jobs.active_run(runs_dir)
    return active is None or active.name != m.group(1)


def refuse(message: str) -> str:
    """`message` shown as a toast too (in sight wherever the page is scrolled); returned for the tab's message line."""
    gr.Warning(message.replace("**", "").replace("`", ""))
    return message


def default_checkpoint(choices: list[str]) -> str | None:
    """`final` when the run saved it, else the newest checkpoint — never a value left over in a widget."""
    names = [c for c in choices if c == FINAL or c.startswith("checkpoint-")]
    return FINAL if FINAL in names else (names[0] if names else None)


def not_final_note(run_dir: Path, checkpoint: str | None) -> str:
    """What a result must say when it used weights other than the end of training ("" when it did not): a stopped run's
    `final` (runs.final_stopped_at), a checkpoint."""
    if checkpoint == FINAL:
        stopped = runs.final_stopped_at(run_dir)
        return runs.stopped_final_words(*stopped) if stopped else ""
    if not checkpoint or not checkpoint.startswith("checkpoint-"):
        return ""
    if FINAL in checkpoint_choices(run_dir):
        return f"{checkpoint}, not the final weights"
    state = runs.effective_state(runs.read_status(run_dir))
    return f"{checkpoint}, not final weights: the run has not saved any yet (it is {state})"


class RunPicker:
    """A Run and a Checkpoint dropdown whose choices and value are derived from the runs folder.

    Built where the tab lays them out. The checkpoint's value is the person's own pick (recorded by
    the dropdown's `input` event, which only a person triggers) while that checkpoint exists, else
    `default_checkpoint` — so a value the person never chose cannot outlive the run's changes.
    `poll` re-reads the folder (on the page's timer, on load, on Refresh) and sends an update only
    when something changed. `extra` is offered after the default (Evaluate's "all checkpoints").
    """

    def __init__(self, runs_dir: Path, prefix: str, extra: str | None = None, checkpoint_info: str | None = None, scale: int = 3):
        self.runs_dir, self.extra = runs_dir, extra
        self.run = gr.Dropdown([], label="Run", elem_id=f"{prefix}-run", scale=scale)
        self.checkpoint = gr.Dropdown([], label="Checkpoint", info=checkpoint_info, elem_id=f"{prefix}-checkpoint", scale=2)
        self.chosen = gr.State({})  # {"run": id, "checkpoint": name} the person picked by hand
        self.shown = gr.State(None)  # what the dropdowns show now: the poll skips unchanged updates

    def checkpoints(self, run_id: str | None) -> list[str]:
        folder = runs.run_folder(self.runs_dir, run_id)
        ckpts = checkpoint_choices(folder) if folder else []
        if self.extra and len(ckpts) > 1:
            ckpts = ckpts[:1] + [self.extra] + ckpts[1:]
        return ckpts

    def resolve(self, run_id: str | None, chosen: dict | None) -> tuple[list[str], str | None, list[str], str | None]:
        """(runs, run, checkpoints, checkpoint) as the folder says now."""
        choices = tuned_runs(self.runs_dir)
        run = run_id if run_id in choices else (choices[0] if choices else None)
        ckpts = self.checkpoints(run)
        chosen = chosen or {}
        own = chosen.get("checkpoint") if chosen.get("run") == run else None
        return choices, run, ckpts, own if own in ckpts else default_checkpoint(ckpts)

    def updates(self, run_id: str | None, chosen: dict | None, shown=None, force: bool = True) -> list:
        """[run update, checkpoint update, shown]: `gr.skip()` for both when nothing changed and not forced."""
        choices, run, ckpts, ckpt = self.resolve(run_id, chosen)
        key = [choices, run, ckpts, ckpt]
        if not force and shown == key:
            return [gr.skip(), gr.skip(), shown]
        return [gr.update(choices=choices, value=run), gr.update(choices=ckpts, value=ckpt), key]

    def wire(self, demo: gr.Blocks, poller: Poller | None, refresh: gr.Button | None = None) -> None:
        """The timer (and Refresh, when given) rebuild the dropdowns; a person's pick is remembered."""
        outputs = [self.run, self.checkpoint, self.shown]
        self.checkpoint.input(lambda run_id, name: {"run": run_id, "checkpoint": name}, inputs=[self.run, self.checkpoint],
                              outputs=self.chosen, api_visibility="private")
        self.run.input(lambda run_id: {"run": run_id, "checkpoint": None}, inputs=self.run, outputs=self.chosen, api_visibility="private")
        if poller is not None:
            poller.tick(lambda run_id, chosen, shown: self.updates(run_id, chosen, shown, force=False),
                       inputs=[self.run, self.chosen, self.shown], outputs=outputs)
        if refresh is not None:
            refresh.click(self.updates, inputs=[self.run, self.chosen], outputs=outputs, api_visibility="private")

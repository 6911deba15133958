"""The page's one timer: every tab's polls in one tick event, only changes sent, seldom ticks while nothing trains.

Why it matters: each event costs the browser its own work on the whole page. Thirteen tick events every two seconds kept
Chromium's renderer busy 22.6 s of every 20 s with nothing training (benchmarks/page_idle_cpu.py measures it).
"""

from __future__ import annotations

import os

import gradio as gr
import pytest

from rloo_studio import runs
from rloo_studio.ui.app import IDLE_POLL_SECONDS, POLL_SECONDS, build_app
from rloo_studio.ui.poller import Poller
from rloo_studio.ui.train_tab import TrainTab

SKIP = gr.skip()


def _tick_events(demo: gr.Blocks) -> list[dict]:
    return [d for d in demo.config["dependencies"] if any(event == "tick" for _, event in d["targets"])]


def test_the_page_has_one_tick_event_over_every_tabs_polls(tmp_path):
    demo = build_app(tmp_path / "runs", detect_hardware=False)
    try:
        ticks = _tick_events(demo)
        assert len(ticks) == 1, f"{len(ticks)} tick events: each costs the browser a pass over the whole page"
        outputs = set(ticks[0]["outputs"])
        ids = {block.elem_id: block_id for block_id, block in demo.blocks.items() if getattr(block, "elem_id", None)}
        # What the tabs show from the run folders is all updated by that one event.
        for elem_id in ("train-status", "train-progress", "health-alerts", "runs-table", "run-banner-text", "chat-run",
                        "eval-checkpoint", "export-checkpoint"):
            if elem_id in ids:
                assert ids[elem_id] in outputs, f"#{elem_id} is not updated by the tick"
        assert {"train-status", "runs-table", "chat-run"} <= set(ids), "the elem_ids above have been renamed"
    finally:
        demo.inference_worker.shutdown()


def _poller(busy=lambda: False):
    with gr.Blocks():
        poller = Poller(2.0, 6.0, busy=busy)
        a, b, c = gr.Markdown(), gr.Markdown(), gr.HTML()
        state = gr.State()
    return poller, a, b, c, state


def test_each_poll_gets_its_own_inputs_and_fills_its_own_outputs_and_a_failing_one_skips_only_its_own():
    poller, a, b, c, state = _poller()
    calls = []

    def first(x, s):
        calls.append(("first", x, s))
        return f"a={x}", s

    def broken(y):
        raise OSError("a run folder vanished")

    poller.tick(first, inputs=[a, state], outputs=[a, state])
    poller.tick(broken, inputs=b, outputs=b)
    poller.tick(lambda y: f"c={y}", inputs=b, outputs=c)
    out = poller.run_all("1", {"k": 1}, "2", "2", 6.0)
    assert calls == [("first", "1", {"k": 1})]
    # a: new text; the state came back unchanged: not sent; b: its poll raised: not sent; c: sent; timer: unchanged.
    assert out == ["a=1", SKIP, SKIP, "c=2", SKIP]
    with pytest.raises(ValueError, match="already updates"):
        poller.tick(lambda: "x", outputs=c)


def test_only_changes_sends_a_text_only_when_it_differs_from_the_page():
    poller, a, _b, c, _state = _poller()
    poller.tick(lambda x: f"<b>{x}</b>", inputs=a, outputs=c, only_changes=True)
    assert poller.run_all("hi", "<b>hi</b>", 6.0)[0] == SKIP
    assert poller.run_all("ho", "<b>hi</b>", 6.0)[0] == "<b>ho</b>"


def test_the_timer_ticks_often_while_busy_and_seldom_when_idle():
    busy = {"now": False}
    poller, a, *_ = _poller(busy=lambda: busy["now"])
    poller.tick(lambda x: x, inputs=a, outputs=a)
    assert poller.run_all("x", 6.0)[-1] == SKIP  # idle and already slow
    busy["now"] = True
    to_fast = poller.run_all("x", 6.0)[-1]
    assert isinstance(to_fast, gr.Timer) and to_fast.value == 2.0
    assert poller.run_all("x", 2.0)[-1] == SKIP
    busy["now"] = False
    assert poller.run_all("x", 2.0)[-1].value == 6.0
    assert POLL_SECONDS < IDLE_POLL_SECONDS


def test_the_app_polls_often_only_while_a_run_trains(tmp_path):
    runs_dir = tmp_path / "runs"
    demo = build_app(runs_dir, detect_hardware=False)
    try:
        tick = demo.fns[_tick_events(demo)[0]["id"]]
        poller = tick.fn.__wrapped__.__self__  # the tick goes through plots.in_order
        assert poller.interval() == IDLE_POLL_SECONDS
        run_dir = runs.create_run_dir(runs_dir, "busy")
        runs.update_status(run_dir, state="running", pid=os.getpid(), step=1, max_steps=9, started_at=1.0)
        assert poller.interval() == POLL_SECONDS
        runs.update_status(run_dir, state="finished", step=9)
        assert poller.interval() == IDLE_POLL_SECONDS
    finally:
        demo.inference_worker.shutdown()


def test_the_train_tab_sends_plots_tables_and_log_only_when_their_files_change(tmp_path):
    run_dir = runs.create_run_dir(tmp_path / "runs", "mine")
    (run_dir / runs.CONFIG_FILE).write_text("model: {name_or_path: demo}\n")
    runs.update_status(run_dir, state="finished", step=2, max_steps=2, started_at=1.0)
    (run_dir / runs.METRICS_FILE).write_text('{"step": 1, "reward": 0.5}\n{"step": 2, "reward": 0.7}\n')
    (run_dir / runs.LOG_FILE).write_text("[rloo-studio] finished at step 2\n")
    with gr.Blocks():
        tab = TrainTab()
    *sent, shown = tab.poll_changes(str(run_dir), None)
    assert SKIP not in sent and "**finished**" in sent[0]  # first look: everything
    *again, same = tab.poll_changes(str(run_dir), shown)
    assert again == [SKIP] * 6 and same == shown  # a finished run whose files did not change: nothing
    with (run_dir / runs.METRICS_FILE).open("a") as f:
        f.write('{"step": 3, "reward": 0.9}\n')
    status, progress, reward_plot, length_plot, samples, log, shown = tab.poll_changes(str(run_dir), shown)
    assert reward_plot != SKIP and length_plot != SKIP  # the metrics changed: the curves are sent
    assert samples == SKIP and log == SKIP  # their files did not
    # A run that trains: its status line counts time, so it is sent on every tick even when no file changed.
    runs.update_status(run_dir, state="running", pid=os.getpid(), step=3, max_steps=9)
    *_, shown = tab.poll_changes(str(run_dir), shown)
    status, progress, reward_plot, *_rest = tab.poll_changes(str(run_dir), shown)
    assert status != SKIP and "training" in status and reward_plot == SKIP
    # Another run watched: everything again.
    other = runs.create_run_dir(tmp_path / "runs", "other")
    runs.update_status(other, state="finished", step=1, max_steps=1, started_at=1.0)
    assert SKIP not in tab.poll_changes(str(other), shown)[:6]

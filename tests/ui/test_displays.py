"""What the page shows, checked on its pieces: a readable log, charts that show a line at 1.0 with distinct colours,
the epochs warning, why a preset trains what it trains, no GPU table without a GPU, and a pin failed by a raising function."""

from __future__ import annotations

import os

import pandas as pd

from rloo_studio.config import RunConfig
from rloo_studio.ui import run_view, text
from rloo_studio.ui.model_tab import estimate_markdown, method_note
from rloo_studio.ui.rewards_tab import pinned_report
from rloo_studio.ui.train_tab import epochs_markdown
from rloo_studio.machine.vram import estimate_config
from rloo_studio.ui.train_tab import TrainTab


def test_the_log_has_no_raw_dicts_or_progress_redraws():
    raw = ("[rloo-studio] backend: Unsloth\n  0%|          | 0/40 [00:00<?, ?it/s]  2%|▎   | 1/40 [00:48<31:32, 48.52s/it]"
           "   {'loss': '3.539e-08', 'grad_norm': '3.594', 'reward': '0.6438', 'completions/mean_length': '9.875'}\n")
    shown = run_view.readable_log(raw)
    assert shown.splitlines() == ["[rloo-studio] backend: Unsloth",
                                  "step metrics: reward 0.6438 · loss 3.539e-08 · mean length 9.875 · grad norm 3.594"]


def test_reward_lines_at_one_are_inside_the_chart_and_colours_differ():
    frame = pd.DataFrame({"step": [1, 2, 1, 2, 1, 2], "value": [0.2, 1.0, 0.0, 1.0, 0.5, 1.0],
                          "series": ["total (weighted)"] * 2 + ["numeric_answer"] * 2 + ["think_format"] * 2})
    update = run_view.plot_update(frame)
    low, high = update["y_lim"]
    assert low < 0.0 and high > 1.0
    assert len(set(update["color_map"].values())) == 3


def test_the_length_chart_starts_at_zero():
    """Lengths of 9.8 to 11 tokens on an axis from 9.8 to 11: a wobble of one token read as a collapse (a walk)."""
    from types import SimpleNamespace

    view = SimpleNamespace(metrics=[{"step": s, "completions/mean_length": v} for s, v in enumerate([10.5, 9.8, 11.0, 10.2], 1)])
    update = run_view.plot_update(run_view.length_frame(view), from_zero=True)
    assert update["y_lim"][0] == 0 and update["y_lim"][1] > 11.0
    assert TrainTab.render(None)[3]["value"].empty  # (the tab's length chart goes through the same update)


def test_the_epochs_are_said_before_start():
    warning = epochs_markdown(54, 8, 104, 150)
    assert warning.startswith("⚠️ 150 steps × 13 new prompts per step ÷ 54 training rows = **36 epochs**")
    assert "“Training steps”" in warning and "(about 12 for 3 epochs)" in warning
    # Two passes over each generation batch: a step draws half as many new prompts from the data.
    assert "1 training row, but" in epochs_markdown(1, 8, 16, 10) and "(1 prompt × 8 completions)" in epochs_markdown(1, 8, 16, 10)
    assert epochs_markdown(54, 8, 104, 150, 2).startswith("⚠️ 150 steps × 6.5 new prompts per step ÷ 54 training rows = **18 epochs**")
    assert not epochs_markdown(2000, 8, 128, 10).startswith("⚠️") and epochs_markdown(None, 8, 128, 10) == ""
    # Under one epoch: the share of prompts seen, not "0 epochs (each prompt seen about 0 times)".
    assert epochs_markdown(2000, 8, 32, 40) == "40 steps × 4 new prompts per step ÷ 2000 training rows = **0.08 epochs** (8 % of the prompts seen once)."


def test_a_batch_the_data_cannot_fill_is_said_before_start():
    """22 rows and a batch of 65536 completions (what Shrink to fit left, keeping the completions per step): the line
    said "⚠️ … = 2979 epochs … use fewer Training steps", when no step could ever be made: the run's own check refuses
    it, as TRL would finish at step 0 (a walk found it)."""
    base = {"config": {"rloo": {"gradient_accumulation_steps": 8192}}}
    line = epochs_markdown(22, 8, 8, 10, 1, base)
    assert line.startswith("⛔ Your data has 22 training rows, but one generation batch needs 8192 prompts"), line
    assert "finish at step 0" in line and "epochs" not in line
    assert "8192 accumulation steps a preset or Shrink to fit set; its Undo puts the batch back" in line
    # Without the hidden accumulation: a batch of 24 completions is 3 prompts, which 22 rows fill.
    assert not epochs_markdown(22, 8, 24, 10).startswith("⛔")
    # With Shrink to fit's 16 accumulation steps (34 rows, a batch of 4096): it said "to 17 (34 prompts × 8 completions)",
    # 17 not the multiple of k the field asks for, and 17 × 16 completions are not 34 × 8 (a walk).
    shrunk = epochs_markdown(34, 8, 4096, 10, 1, {"config": {"rloo": {"gradient_accumulation_steps": 16}}})
    assert ("Lower “Batch per device (completions)” to 16: with the 16 accumulation steps a preset or Shrink to fit set "
            "(no field on this page; Shrink to fit's Undo puts them back), that is 256 completions, 32 prompts × 8.") in shrunk, shrunk
    # The suggestion is a batch that fits: 22 prompts × 8 completions.
    assert "“Batch per device (completions)” to 176 (22 prompts × 8 completions)" in epochs_markdown(22, 8, 256, 10)


def test_shrink_to_fit_says_when_the_settings_that_fit_cannot_make_a_step():
    """"✅ … fits" for 65536 completions a step on 34 rows (a walk): memory fits, but no step can be made."""
    from rloo_studio.ui.model_tab import unfilled_line

    cfg = RunConfig.from_dict({"rloo": {"num_generations": 8, "per_device_train_batch_size": 4096,
                                        "gradient_accumulation_steps": 16}})
    line = unfilled_line(cfg, 34)
    assert "⛔ **But no step can be made:** one generation batch needs 8192 prompts and the data has 34 training rows" in line
    assert unfilled_line(cfg, None) == "" and unfilled_line(cfg, 9000) == ""


def test_the_method_a_preset_chose_is_explained():
    full = RunConfig.from_dict({"model": {"name_or_path": "demo"}})
    full.lora = None
    assert text.METHOD_CHOICES[1] in method_note(full) and text.METHOD_CHOICES[0] in method_note(full)
    assert "rank 16" in method_note(RunConfig.from_dict({"lora": {"r": 16}}))


def test_no_gpu_memory_table_without_a_gpu():
    cfg = RunConfig.from_dict({"model": {"name_or_path": "Qwen/Qwen3-0.6B"}, "lora": {"r": 16}})
    shown = estimate_markdown(estimate_config(cfg, None, True), None)
    assert "| part | GiB |" not in shown and "no GPU here" in shown
    assert "| part | GiB |" in estimate_markdown(estimate_config(cfg, 16, True), "Test GPU")


def test_a_gpu_estimate_says_how_far_the_one_measured_run_was_from_it():
    """An H200 run of Qwen3-0.6B with Unsloth peaked 1.03 GiB above the estimate (56 %): a "fits" is read as a promise."""
    cfg = RunConfig.from_dict({"model": {"name_or_path": "Qwen/Qwen3-0.6B"}, "lora": {"r": 16}})
    assert text.ESTIMATE_GPU_CHECKED in estimate_markdown(estimate_config(cfg, 16, True), "Test GPU")
    assert text.ESTIMATE_GPU_CHECKED not in estimate_markdown(estimate_config(cfg, None, True), None)


def test_a_pin_fails_when_a_function_raised_even_if_the_others_pass():
    groups = [{"prompt": "p", "row": {}, "completions": ["<think>1</think>2"], "range": (1.0, 10.0)}]
    result = {"functions": {"numeric_answer": {"errors": []}, "mine": {"errors": [{"error": "KeyError: 'answer'"}]}},
              "rows": [{"total": 1.3, "rewards": {"numeric_answer": 1.3, "mine": None}}]}
    report = pinned_report(groups, result)
    assert report.startswith("**0/1 pinned examples pass**") and "`mine` raised KeyError: 'answer'" in report
    result["functions"]["mine"]["errors"] = []
    result["rows"][0]["rewards"]["mine"] = 0.0
    assert pinned_report(groups, result).startswith("**1/1 pinned examples pass**")


def test_a_pin_without_an_expected_range_says_so_instead_of_expected_none():
    """A half-typed pinned row (no min, no max) read "passes … (expected None–None)"."""
    result = {"functions": {"mine": {"errors": []}}, "rows": [{"total": 0.5, "rewards": {"mine": 0.5}}]}
    group = {"prompt": "p", "row": {}, "completions": ["hi"]}
    report = pinned_report([{**group, "range": (None, None)}], result)
    assert "None–None" not in report and "no expected range" in report
    assert "(expected at least 1)" in pinned_report([{**group, "range": (1, "")}], result)
    assert "(expected 0–1)" in pinned_report([{**group, "range": (0, 1)}], result)


def test_recent_completions_mark_cut_off_and_looping_answers():
    """Training's completions table: cut off = the whole max_completion_length without an end token (TRL's "clipped")."""
    from pathlib import Path

    from rloo_studio.workers.jobs import RunView
    from rloo_studio.rewards.runtime import SampleRecorder

    written = []
    recorder = SampleRecorder(["r"], [1.0], num_generations=4, groups_per_step=1, write=written.extend, budget=4, end_ids=[2])
    completions = ["a b c d", "ok", "four more ok", "Yes. Yes. Yes. Yes."]
    kwargs = {"completions": completions, "prompts": ["p"] * 4, "completion_ids": [[5, 6, 7, 8], [5, 2], [5, 6, 7, 2], [9, 9, 9, 9]]}
    recorder.on_values("r", kwargs, [0.0, 1.0, 0.5, 0.2])
    recorder.on_trained([0.1, 0.2, 0.3, 0.4], None)
    assert [row["cut_off"] for row in written] == [True, False, False, True]  # an end token on the last allowed one is not cut off
    view = RunView(run_id="r", path=Path("r"), state="finished", status={}, samples=written)
    answers = {row[3].rsplit("\n", 1)[-1]: row[3] for row in run_view.samples_rows(view)}
    assert answers["a b c d"] == "[✂ cut off by the token budget] \na b c d" and answers["ok"] == "ok"
    assert answers["four more ok"] == "four more ok"
    assert answers["Yes. Yes. Yes. Yes."].startswith("[✂ cut off by the token budget] [🔁 repeats “yes.” 4 times")
    # A recorder that was not told the budget (or samples of an earlier version) marks nothing.
    older = SampleRecorder(["r"], [1.0], num_generations=4, groups_per_step=1, write=written.extend)
    assert older._cut_off([5, 6, 7, 8]) is None


def test_a_run_whose_weights_never_moved_says_so_in_its_status():
    from rloo_studio.ui.run_view import weights_unchanged_line

    flat = [{"step": s, "reward": 0.0, "grad_norm": 0.0} for s in range(1, 21)]
    assert "The weights have not changed" in weights_unchanged_line(flat) and "all 20 logged steps" in weights_unchanged_line(flat)
    assert weights_unchanged_line(flat[:-1] + [{"step": 20, "grad_norm": 0.02}]) is None
    assert weights_unchanged_line([{"step": 1, "reward": 0.5}]) is None  # nothing to go on: nothing said


def test_replacing_the_whole_code_keeps_the_ticks_of_the_functions_it_brings_back():
    """Select-all + delete, then paste: between the two the editor holds no function. The table followed it and came
    back with every function unticked (a walk in Chromium: Start then ran without the person's reward)."""
    import gradio as gr

    from rloo_studio.ui.rewards_tab import functions_now

    table = [[True, "polite", 2.0]]
    assert functions_now("", table) == gr.skip()
    assert functions_now("def polite(completions, **kwargs):\n    return [1.0] * len(completions)\n", table) == gr.skip()
    assert functions_now("def other(completions, **kwargs):\n    return [0.0] * len(completions)\n", table)["rows"] == \
        [[False, "other", 1.0]]


def test_recent_completions_mark_an_empty_reply_and_never_show_the_thinking_as_the_reply():
    """A completion that only thinks (`<think>…</think>` and nothing after) showed its whole text, thinking included,
    in the reply cell, and an empty reply carried no mark (a walk found both)."""
    from pathlib import Path

    from rloo_studio.workers.jobs import RunView
    from rloo_studio.rewards.runtime import SampleRecorder

    written = []
    recorder = SampleRecorder(["r"], [1.0], num_generations=3, groups_per_step=1, write=written.extend)
    completions = ["<think>the hours are 9-5</think>", "", "<think>ok</think>Open 9-5."]
    recorder.on_values("r", {"completions": completions, "prompts": ["p"] * 3}, [0.0, 0.0, 1.0])
    recorder.on_trained([-0.5, -0.5, 1.0], None)
    view = RunView(run_id="r", path=Path("r"), state="finished", status={}, samples=written)
    rows = run_view.samples_rows(view)
    by_completion = {c: row for c, row in zip(reversed(completions), rows)}
    thought_only = by_completion["<think>the hours are 9-5</think>"]
    assert thought_only[2] == "the hours are 9-5" and thought_only[3] == "[∅ empty reply] \n"
    assert by_completion[""][3] == "[∅ empty reply] \n"
    assert by_completion["<think>ok</think>Open 9-5."][3] == "Open 9-5."
    assert run_view.reply_mark_list("  ", False) == ["∅ empty reply"] and run_view.reply_mark_list(None, False) == []
    # A chat reply that only thinks: its thinking shows in a collapsed block, and nothing under it.
    assert run_view.reply_mark_list("<think>9 trains a day</think>", False) == ["∅ empty reply"]


def test_a_thought_cut_off_before_it_closed_is_thinking_not_the_reply():
    """A completion cut off inside `<think>` showed "<think>9*2=18…" in the reply cell, tag included, with no mark
    that no reply came: the recorder split it as finished text, where an unclosed thought is no answer at all. Runs
    recorded before keep their records; the table reads them the same way."""
    from pathlib import Path

    from rloo_studio.rewards.runtime import SampleRecorder
    from rloo_studio.workers.jobs import RunView

    written = []
    recorder = SampleRecorder(["r"], [1.0], num_generations=2, groups_per_step=1, write=written.extend)
    completions = ["<think>9*2=18 and then", "<think>ok</think>18"]
    recorder.on_values("r", {"completions": completions, "prompts": ["p"] * 2}, [0.0, 1.0])
    recorder.on_trained([-1.0, 1.0], None)
    assert written[0]["thinking"] == "9*2=18 and then" and written[0]["answer"] == ""
    old = dict(written[0], thinking=None, answer="<think>9*2=18 and then")  # as recorded before
    for record in (written[0], old):
        view = RunView(run_id="r", path=Path("r"), state="finished", status={}, samples=[record])
        row = run_view.samples_rows(view)[0]
        assert row[2] == "9*2=18 and then" and row[3] == "[∅ empty reply: the thinking never closed] \n", row


def test_a_loop_in_the_thinking_is_marked_as_the_thinkings_not_the_replys():
    """"[🔁 repeats “<think>” 9 times (73 % of the reply)] 8": the repetition was in the thinking column, and the reply
    was "8" (a walk, Train tab and Chat)."""
    thought = "<think>" + "<think> " * 9 + "</think>8"
    assert run_view.reply_mark_list(thought, False) == ["🔁 the thinking repeats “<think>” 9 times (100 % of the thinking)"]
    assert run_view.reply_mark_list("<think>ok</think>" + "Yes. " * 5, False) == ["🔁 repeats “yes.” 5 times (100 % of the reply)"]
    assert run_view.reply_mark_list("Yes. " * 5, False) == ["🔁 repeats “yes.” 5 times (100 % of the reply)"]


def test_the_code_check_names_the_ticked_functions_instead_of_asking_to_tick_one():
    """"✅ 2 function(s) found … Tick use to train with one" while both were ticked (a walk)."""
    from rloo_studio.ui.rewards_tab import RewardsTab

    code = "def a(completions, **kwargs):\n    return [1.0] * len(completions)\n\ndef b(completions, **kwargs):\n    return [0.0] * len(completions)\n"
    message, _ = RewardsTab.check_code(code, [[True, "a", 1.0], [True, "b", 0.5]], ["prompt"])
    assert message == "✅ 2 functions found: `a`, `b`. Training uses the ticked ones: `a`, `b`."
    message, _ = RewardsTab.check_code(code, [[False, "a", 1.0], [False, "b", 0.5]], ["prompt"])
    assert message.endswith("Tick **use** to train with one.")


def test_an_ongoing_alert_says_how_long_it_has_held(tmp_path):
    """"No learning signal · since step 1 … 3 steps in a row" still read so after all 15 steps (a walk): the badge
    says how far it held."""
    from rloo_studio import runs

    run_dir = runs.create_run_dir(tmp_path / "runs", "r")
    # As alerts.jsonl writes it: the "began" record's step is the step it was raised at.
    runs.append_jsonl(run_dir / runs.ALERTS_FILE, {"event": "began", "step": 3, "kind": "no_signal", "title": "No learning signal",
                                                  "began_step": 1, "ended_step": None, "explanation": "3 steps in a row",
                                                  "action": "x"})
    runs.update_status(run_dir, state="running", pid=os.getpid(), step=9)
    assert "since step 1, still at step 9" in run_view.alerts_html(run_dir)
    runs.update_status(run_dir, state="finished", step=15)
    assert "steps 1–15, to the run’s last step" in run_view.alerts_html(run_dir)
    # Its numbers are those of the step it was raised at, and say so: "In 100% of the prompt groups" at step 9 read as
    # step 9's share, which was 75 % (a walk).
    assert "At step 3, when raised: 3 steps in a row" in run_view.alerts_html(run_dir)
    runs.update_status(run_dir, state="running", step=3)
    assert "At step 3" not in run_view.alerts_html(run_dir)  # raised now: the numbers are now's
    # Ended: its "ended" record has the step it ended at, and the badge still gives the raising step's numbers as such.
    runs.append_jsonl(run_dir / runs.ALERTS_FILE, {"event": "ended", "step": 8, "kind": "no_signal", "title": "No learning signal",
                                                  "began_step": 1, "ended_step": 8, "explanation": "3 steps in a row",
                                                  "action": "x"})
    assert "steps 1–8, over" in run_view.alerts_html(run_dir) and "At step 3, when raised" in run_view.alerts_html(run_dir)


def test_the_reward_line_compares_steps_with_their_spread():
    """"Reward: 1.016 now (first step 1.000)" over steps that wobbled between 1.000 and 1.062 read as a gain; the
    evaluation found none (a walk). Means of several steps, the per-step range, and chance said when it is as small."""
    from types import SimpleNamespace

    rewards = [1.0, 1.0625, 1.0, 1.0, 1.0625, 1.0, 1.0, 1.0625, 1.0, 1.0, 1.0, 1.0625, 1.0, 1.0, 1.0156]
    view = SimpleNamespace(metrics=[{"step": i, "reward": r} for i, r in enumerate(rewards, 1)])
    line = run_view.reward_line(view.metrics)
    assert line.startswith("Reward: 1.016 at step 15; mean of the last 5 steps 1.016, of the first 5 1.025 (per step "
                           "1.000–1.062)"), line
    assert "the two differ by no more than the step-to-step wobble; Evaluate tells" in line
    rising = [{"step": i, "reward": i / 15} for i in range(1, 16)]
    assert "wobble" not in run_view.reward_line(rising)
    assert run_view.reward_line([{"step": 1, "reward": 0.5}]) == "Reward: 0.500 at step 1"
    flat = [{"step": i, "reward": 1.0} for i in range(1, 16)]
    assert run_view.reward_line(flat) == "Reward: 1.000 at step 15, the same at every step"


def test_lines_that_lie_on_each_other_are_said_under_the_chart():
    """total (weighted) and polite were 0.1 at 14 of 15 steps: the total's line lay under polite's and read as missing
    (a walk). The chart's caption names them."""
    steps = list(range(1, 16))
    polite = [0.1] * 15
    total = [0.1] * 15
    total[7] = 0.23
    frame = pd.DataFrame({"step": steps * 3, "value": total + polite + [0.0] * 7 + [0.13] + [0.0] * 7,
                          "series": ["total (weighted)"] * 15 + ["polite"] * 15 + ["numeric_answer"] * 15})
    assert run_view.overlap_caption(frame) == ("Lines on top of each other: “total (weighted)” and “polite” are equal at "
                                               "14 of 15 steps, where the line drawn last hides the other.")
    apart = frame.assign(value=[0.5] * 15 + polite + [0.0] * 15)
    assert run_view.overlap_caption(apart) is None
    # Said in the run's status lines, above the chart (a caption under a chart of fixed height was cut off).
    metrics = [{"step": s, "reward": t, "rewards/polite/mean": p} for s, t, p in zip(steps, total, polite)]
    from types import SimpleNamespace

    view = SimpleNamespace(run_id="r", state="finished", step=15, max_steps=15, status={}, metrics=metrics, path=None)
    assert "Reward chart: lines on top of each other: “total (weighted)” and “polite” are equal at 14 of 15 steps" in \
        run_view.status_markdown(view)

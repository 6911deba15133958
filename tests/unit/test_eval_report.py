"""Choosing a checkpoint on prompts it is not reported on, and how the app, the CLI and the model card word the result.

The sides are built from per-prompt numbers (no model): the selection and reporting code of
rloo_studio.engine.evaluate is plain arithmetic on them. The end-to-end runs with real models are in
tests/engine/test_eval*.py.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from rloo_studio import stats
from rloo_studio.engine import evaluate
from rloo_studio.engine.export import evaluation_section

SEED = 42


def side(name: str, step: int, totals: list[float], budget: int = 16, truncated: list[float] | None = None) -> evaluate._Side:
    n = len(totals)
    return evaluate._Side(name=name, step=step, budget=budget, texts=[[f"{name}-{i}"] for i in range(n)],
                          sample_totals=[[t] for t in totals], sample_values=[{"r": [t]} for t in totals],
                          values={"r": list(totals)}, totals=list(totals), accuracy=list(totals), formatted=[1.0] * n,
                          truncated=truncated or [0.0] * n, lengths=[5.0] * n, tokens=[[5]] * n)


def test_halves_are_disjoint_seeded_and_cover_every_prompt():
    a, b = evaluate._halves(11, SEED)
    assert sorted(a + b) == list(range(11)) and not set(a) & set(b) and (len(a), len(b)) == (6, 5)
    assert evaluate._halves(11, SEED) == (a, b) and evaluate._halves(11, SEED + 1) != (a, b)


def test_a_checkpoint_lucky_on_one_half_is_reported_on_the_other():
    """`lucky` is perfect on half A and wrong on half B: chosen on A, it must be reported with B's zeros."""
    n = 40
    half_a, half_b = evaluate._halves(n, SEED)
    lucky = side("checkpoint-2", 2, [1.0 if i in half_a else 0.0 for i in range(n)])
    final = side("final", 4, [0.6] * n)
    base = side("base", 0, [0.5] * n)
    record, best = evaluate._cross_fit([lucky, final], base, final, SEED)
    first, second = record["folds"]
    assert (first["chosen_on_prompts"], first["reported_on_prompts"]) == (half_a, half_b)
    assert first["chosen"] == "checkpoint-2" and first["reported"]["mean_reward"] == 0.0  # B's numbers, not A's 1.0
    assert first["reported"]["n"] == len(half_b)
    assert second["chosen"] == "final" and second["reported"]["mean_reward"] == pytest.approx(0.6)
    assert record["chosen"] is None and record["halves_agree"] is False and best is None
    # Out of fold: half B scored by checkpoint-2 (0.0), half A by final (0.6).
    assert record["reported"]["mean_reward"] == pytest.approx(0.6 * len(half_a) / n)
    assert record["reported"]["n"] == n and "no checkpoint stands out" in record["verdict"]


def test_a_clearly_better_checkpoint_is_the_best_and_a_tie_with_final_is_not():
    n = 40
    good = side("checkpoint-2", 2, [1.0] * 36 + [0.0] * 4)
    final = side("final", 4, [0.0] * 36 + [1.0] * 4)
    base = side("base", 0, [0.0] * n)
    record, best = evaluate._cross_fit([good, final], base, final, SEED)
    assert best == "checkpoint-2" and record["chosen"] == "checkpoint-2" and record["chosen_vs_tuned"]["distinguishable"]
    assert record["reported"]["mean_reward"] == pytest.approx(0.9)
    # Both halves chose it: it was chosen on every prompt, so "on prompts it was not chosen on" would be untrue.
    assert record["verdict"] == ("checkpoint-2 is better than final, each half scored by the checkpoint chosen on the "
                                 "other half (both halves chose checkpoint-2)")
    same = side("checkpoint-2", 2, [0.0] * 36 + [1.0] * 4)  # as good as final on every prompt: the earlier step wins the tie
    record, best = evaluate._cross_fit([same, final], base, final, SEED)
    assert record["chosen"] == "checkpoint-2" and best is None and stats.NOT_DISTINGUISHABLE in record["verdict"]


def test_six_prompts_never_name_a_best_checkpoint():
    """The report that once said "Best checkpoint: checkpoint-120" on 6 prompts: better on 5, tied on 1."""
    better = side("checkpoint-120", 120, [1.0, 1.0, 1.0, 1.0, 1.0, 0.5])
    final = side("final", 150, [0.0, 0.0, 0.0, 0.0, 0.0, 0.5])
    base = side("base", 0, [0.0] * 6)
    record, best = evaluate._cross_fit([better, final], base, final, SEED)
    assert record["chosen"] == "checkpoint-120" and best is None
    assert record["chosen_vs_tuned"]["wins"] == 5 and record["chosen_vs_tuned"]["distinguishable"] is False


def test_a_validation_split_chooses_and_the_held_out_prompts_report():
    val_good, val_final = side("checkpoint-2", 2, [1.0] * 10), side("final", 4, [0.0] * 10)
    test_ckpt, test_final = side("checkpoint-2", 2, [0.25] * 20), side("final", 4, [0.5] * 20)
    base = side("base", 0, [0.0] * 20)
    record, best = evaluate._validated([test_ckpt, test_final], [val_good, val_final], base, test_final, "validation", 0, SEED)
    assert record["method"] == "validation split" and record["chosen"] == "checkpoint-2" and record["n_select"] == 10
    assert record["selection_scores"] == {"checkpoint-2": 1.0, "final": 0.0}
    assert record["reported"]["mean_reward"] == 0.25 and record["reported"]["n"] == 20  # the test prompts' number
    assert best is None  # worse than final where it is reported
    assert record["verdict"] == "checkpoint-2 is worse than final on the held-out prompts, none of them used to choose it"


def test_the_best_checkpoints_direction_is_the_sign_tests_not_the_mean_differences():
    """Chosen higher on 1 prompt by 5.0 and lower on 9 by 0.1: the sign test tells them apart, the mean difference is
    +0.41, and the checkpoint was named best while the line above said it scored lower on 9 of 10 (a review)."""
    val_good, val_final = side("checkpoint-2", 2, [1.0] * 10), side("final", 4, [0.0] * 10)
    test_ckpt, test_final = side("checkpoint-2", 2, [5.0] + [0.0] * 9), side("final", 4, [0.0] + [0.1] * 9)
    base = side("base", 0, [0.0] * 10)
    record, best = evaluate._validated([test_ckpt, test_final], [val_good, val_final], base, test_final, "validation", 0, SEED)
    versus = record["chosen_vs_tuned"]
    assert versus["wins"] == 1 and versus["losses"] == 9 and versus["mean_difference"] > 0 and versus["distinguishable"]
    assert best is None and record["verdict"].startswith("checkpoint-2 is worse than final"), record["verdict"]

def test_truncated_means_the_budget_was_hit_without_an_end_token():
    from rloo_studio.rewards.runtime import cut_off  # the one rule of samples, preview and evaluation

    assert cut_off([5, 6, 7], 3, {2}) is True
    assert cut_off([5, 6, 2], 3, {2}) is False  # ended on its last allowed token
    assert cut_off([5, 2], 3, {2}) is False


def test_summary_has_n_intervals_truncation_and_budget():
    s = evaluate._summary(side("base", 0, [1.0, 0.0, 1.0, 1.0], budget=64, truncated=[1.0, 0.0, 0.0, 0.0]), [0, 1, 2, 3], SEED)
    assert s["n"] == 4 and s["max_new_tokens"] == 64 and s["truncation_rate"] == 0.25 and s["answer_accuracy"] == 0.75
    low, high = stats.wilson(3, 4)
    assert s["intervals"]["answer_accuracy"] == {"low": low, "high": high, "n": 4}
    assert s["intervals"]["truncation_rate"]["n"] == 4 and s["intervals"]["mean_reward"]["low"] <= 0.75


# ---- how the result is worded --------------------------------------------------------------------------

def six_prompt_report() -> dict:
    base = side("base", 0, [0.0] * 6, budget=64)
    ckpt = side("checkpoint-120", 120, [1.0, 1.0, 1.0, 1.0, 1.0, 0.5])
    final = side("final", 150, [1.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    record, best = evaluate._cross_fit([ckpt, final], base, final, SEED)
    everything = list(range(6))
    return {"run": "r", "split": "test", "n_prompts": 6,
            "decoding": {"mode": "greedy", "greedy": True, "samples": 1, "temperature": None, "top_p": None, "seed": None,
                         "max_new_tokens": {"base": 64, "tuned": 16}},
            "base": evaluate._summary(base, everything, SEED), "tuned": evaluate._summary(final, everything, SEED),
            "tuned_vs_base": stats.paired(base.totals, final.totals, SEED), "checkpoint": "final",
            "checkpoints": [{"name": s.name, "step": s.step, "summary": evaluate._summary(s, everything, SEED),
                             "tuned_vs_base": stats.paired(base.totals, s.totals, SEED)} for s in (ckpt, final)],
            "selection": record, "best": best, "skipped": [], "reward_weights": {"r": 1.0}, "per_prompt": [], "examples": [],
            "seconds": 1.0}


def test_the_evaluate_tab_does_not_claim_a_win_on_six_prompts():
    from rloo_studio.ui import eval_tab

    report = six_prompt_report()
    assert report["tuned_vs_base"]["wins"] == 5 and report["best"] is None
    text = eval_tab.summary_markdown(report)
    assert "n = 6 held-out prompts" in text and "token budget: base 64, tuned 16" in text
    assert stats.NOT_DISTINGUISHABLE in text and "Best checkpoint" not in text and "is better" not in text
    rows = eval_tab.table(report)
    assert [r[:4] for r in rows] == [["base model", 0, 6, 64], ["checkpoint-120", 120, 6, 16], ["final", 150, 6, 16]]
    assert rows[2][4].startswith("0.833 [") and rows[2][-1] == "not distinguishable (too few to judge)"
    frame = eval_tab.chart_frame(report)
    assert {"mean reward · 95 % low", "mean reward · 95 % high", "answer accuracy · 95 % low"} <= set(frame["metric"])
    assert "n = 6" in eval_tab.chart_title(report)


def test_the_evaluate_tab_says_when_the_weights_never_changed(tmp_path):
    """A run whose every logged step had a gradient of 0 trained nothing: its tuned model is the base model, and the
    verdict's "evaluate on more prompts" cannot separate the two (a walk with my own CSV read that advice, which the
    Train tab's "weights have not changed" line contradicted). The summary says so; a run that moved says nothing."""
    from rloo_studio import runs
    from rloo_studio.ui import eval_tab

    runs.append_jsonl(tmp_path / runs.METRICS_FILE, [{"step": s, "grad_norm": 0.0} for s in (1, 2, 3)])
    text = eval_tab.summary_markdown(six_prompt_report(), tmp_path)
    assert "The weights never changed" in text and "no number of held-out prompts will separate them" in text
    runs.append_jsonl(tmp_path / runs.METRICS_FILE, [{"step": 4, "grad_norm": 0.5}])
    assert "weights never changed" not in eval_tab.summary_markdown(six_prompt_report(), tmp_path)


def test_the_evaluate_tab_names_a_best_checkpoint_when_it_is_distinguishable():
    from rloo_studio.ui import eval_tab

    report = six_prompt_report()
    report["best"] = "checkpoint-120"
    report["selection"]["chosen_vs_tuned"] = {**report["selection"]["chosen_vs_tuned"], "distinguishable": True}
    assert "Best checkpoint: **checkpoint-120**" in eval_tab.summary_markdown(report)


def test_the_model_card_gives_intervals_budgets_and_how_the_weights_were_chosen(tmp_path):
    report = six_prompt_report()
    (tmp_path / "eval.json").write_text(json.dumps(report))
    card = evaluation_section(tmp_path, "checkpoint-120")
    assert "Token budget: base 64, tuned 16" in card and "(n=6)" in card and "| truncated by the token budget |" in card
    assert "How these weights were chosen: checkpoint-120; the evaluation's selection (cross-fit halves" in card
    report["best"] = "checkpoint-120"
    (tmp_path / "eval.json").write_text(json.dumps(report))
    card = evaluation_section(tmp_path, "checkpoint-120")
    assert "checkpoint-120 was chosen by mean reward (cross-fit halves" in card
    assert "reported on each half scored by the checkpoint chosen on the other half" in card
    card = evaluation_section(tmp_path, "final")
    assert stats.NOT_DISTINGUISHABLE in card  # tuned (final) vs base: 5 wins, 1 tie on 6 prompts



def test_the_model_card_of_final_weights_names_the_better_checkpoint_the_evaluation_found(tmp_path):
    """Exporting `final` after the evaluation named checkpoint-120 best: the card said the selection 'found no checkpoint
    distinguishable from the final weights (checkpoint-120 is better than final ...)' (a review)."""
    report = six_prompt_report()
    report["best"] = "checkpoint-120"
    (tmp_path / "eval.json").write_text(json.dumps(report))
    card = evaluation_section(tmp_path, "final")
    assert "found no checkpoint" not in card and "found checkpoint-120 better than final" in card, card


def test_an_evaluation_of_earlier_final_weights_is_not_shown_for_the_weights_saved_since(tmp_path):
    """A run evaluated at step 150, then resumed to step 200, saves `final` again: the card showed the step-150 table
    as these weights' (a review)."""
    (tmp_path / "eval.json").write_text(json.dumps(six_prompt_report()))  # final evaluated at step 150
    (tmp_path / "status.json").write_text(json.dumps({"state": "finished", "step": 150, "max_steps": 200}))
    assert "| metric | base | tuned |" in evaluation_section(tmp_path, "final")
    (tmp_path / "status.json").write_text(json.dumps({"state": "finished", "step": 200, "max_steps": 200}))
    card = evaluation_section(tmp_path, "final")
    assert "| metric | base | tuned |" not in card and "Not evaluated yet for these weights (final, step 200" in card, card
    assert "the evaluation is of step 150" in card


def test_the_model_card_of_a_stopped_run_does_not_call_its_weights_the_end_of_training(tmp_path):
    from rloo_studio.engine.export import weights_words

    (tmp_path / "status.json").write_text(json.dumps({"state": "stopped", "step": 40, "max_steps": 200}))
    assert weights_words(tmp_path, "final") == ("final: the weights saved when the run was stopped at step 40 of 200, "
                                                "not the end of training")
    (tmp_path / "status.json").write_text(json.dumps({"state": "finished", "step": 200, "max_steps": 200}))
    assert weights_words(tmp_path, "final") == "final (end of training)"
    assert weights_words(tmp_path, "checkpoint-20") == "checkpoint-20"

# What an earlier version wrote: no intervals, checkpoints, decoding or selection.
OLDER_EVAL = {"run": "r", "n_prompts": 6, "base": {"mean_reward": 0.1, "answer_accuracy": 0.2},
              "tuned": {"mean_reward": 0.5, "answer_accuracy": 0.6}, "checkpoint": "final", "seconds": 1.0}


def test_an_earlier_versions_eval_json_is_said_to_need_a_new_evaluation_not_misread(tmp_path):
    import gradio as gr

    from rloo_studio import runs
    from rloo_studio.ui.compare_runs import eval_rows
    from rloo_studio.ui.eval_tab import EvalTab

    current, older, none = tmp_path / "current", tmp_path / "older", tmp_path / "none"
    for folder in (current, older, none):
        folder.mkdir()
    (current / runs.EVAL_FILE).write_text(json.dumps(six_prompt_report()))
    (older / runs.EVAL_FILE).write_text(json.dumps(OLDER_EVAL))
    assert runs.read_eval(current)["checkpoint"] == "final" and not runs.old_eval(current)
    assert runs.read_eval(older) is None and runs.old_eval(older)
    assert runs.read_eval(none) is None and not runs.old_eval(none)

    # The model card, the Runs tab's comparison and the Evaluate tab each say so instead of failing on a missing key.
    assert runs.OLD_EVAL in evaluation_section(older) and "Not evaluated yet" in evaluation_section(older)
    assert runs.OLD_EVAL not in evaluation_section(none)
    rows = eval_rows([current, older, none])
    assert rows[0][1] == "final" and rows[1][1].startswith("evaluated by an earlier version") and rows[2][1].startswith("not evaluated")
    with gr.Blocks():
        tab = EvalTab(tmp_path, worker=None)
    summary = tab.show("older")[1]
    assert "written by an earlier version" in summary and "press **Evaluate**" in summary, summary
    assert "n = 6 held-out prompts" in tab.show("current")[1] and "No evaluation yet" in tab.show("none")[1]


def test_the_checkpoint_table_stars_only_a_named_best_checkpoint_as_the_cli_docs_say(capsys):
    """`*` marks report["best"] (named only when distinguishable from the final weights), not the highest mean reward."""
    from pathlib import Path

    from rloo_studio.cli.results import _print_checkpoint_table

    n = 6
    base, higher, final = side("base", 0, [0.0] * n), side("checkpoint-2", 2, [1.0] * n), side("final", 4, [0.5] * n)
    report = {**report_of(base, final), "best": None, "selection": {},
              "checkpoints": [{"name": s.name, "step": s.step, "summary": evaluate._summary(s, list(range(n)), SEED),
                               "tuned_vs_base": stats.paired(base.totals, s.totals, SEED)} for s in (higher, final)]}
    _print_checkpoint_table(report, Path("runs/r"))
    assert "*" not in capsys.readouterr().out  # the highest mean, but no best checkpoint named
    _print_checkpoint_table({**report, "best": "checkpoint-2"}, Path("runs/r"))
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.endswith("  *")] == ["checkpoint-2"]
    docs = " ".join((Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8").split())
    assert "`*` marks the best mean reward" not in docs and "`*` marks the best checkpoint" in docs


# ---- verdicts on cut-off answers, rows a task does not measure, marks on replies ----------------------------------

def report_of(base: evaluate._Side, final: evaluate._Side, reward_weights: dict | None = None, mode: str = "greedy") -> dict:
    """A whole eval.json for base vs final, built by the engine's own report pieces."""
    n = len(base.totals)
    everything = list(range(n))
    found = evaluate._report_verdict(base, final, SEED)
    return {"run": "r", "split": "test", "n_prompts": n,
            "decoding": {"mode": mode, "greedy": mode == "greedy", "samples": 1 if mode == "greedy" else 4,
                         "temperature": None if mode == "greedy" else 1.0, "top_p": None, "seed": None,
                         "max_new_tokens": {"base": base.budget, "tuned": final.budget}},
            "base": evaluate._summary(base, everything, SEED), "tuned": evaluate._summary(final, everything, SEED),
            "tuned_vs_base": stats.paired(base.totals, final.totals, SEED), "verdict": found, "checkpoint": "final",
            "checkpoints": [{"name": "final", "step": 4, "summary": evaluate._summary(final, everything, SEED),
                             "tuned_vs_base": stats.paired(base.totals, final.totals, SEED)}],
            "selection": {"method": "none", "why": "one checkpoint evaluated", "chosen": None}, "best": None, "skipped": [],
            "reward_weights": reward_weights or {"numeric_answer": 1.0, "think_format": 0.2},
            "per_prompt": [{"prompt": f"p{i}", "answer": None, "sides": {s.name: evaluate._prompt_record(s, i) for s in (base, final)}}
                           for i in everything],
            "examples": [{"prompt": f"p{i}", "answer": None, "base": base.texts[i][0], "tuned": final.texts[i][0]} for i in range(min(5, n))],
            "seconds": 1.0}


def all_cut_off_report() -> dict:
    """The report of the issue: tuned higher on 7 of 7 prompts (p = 0.0156), every answer on both sides cut off at 24 tokens,
    and the tuned model saying one sentence over and over."""
    base = side("base", 0, [0.0] * 7, budget=24, truncated=[1.0] * 7)
    final = side("final", 4, [1.0] * 7, budget=24, truncated=[1.0] * 7)
    final.texts = [["The answer is 4. " * 6] for _ in range(7)]
    return report_of(base, final)


def test_all_answers_cut_off_never_reads_better_in_the_tab_or_the_engine():
    from rloo_studio.ui import eval_tab

    report = all_cut_off_report()
    assert report["verdict"]["kind"] == "better" and report["verdict"]["limited"]
    assert "is better" not in report["verdict"]["line"]
    text = eval_tab.summary_markdown(report)
    main = text.split("<details>")[0]
    assert "⚠️ tuned (final) vs base on the same 7 prompts" in main and "is better" not in main
    assert "most answers were cut off by the token budget (tuned (final) 100 % at 24 tokens, base 100 % at 24 tokens)" in main
    assert "larger token budget (e.g. 96)" in main and "sign test" not in main and "pass@1" not in main
    assert "sign test" in text.split("<details>")[1] and "p = 0.0156" in text  # the rule behind the fold
    assert "Replies stuck in a repetition loop (" in main and "tuned (final) 7 of 7" in main and "base 0 of 7" in main
    # Where they are: "(see Examples)" pointed at the first 5 prompts, which held none of a run's loops (a walk).
    assert "(held-out prompts 1, 2, 3, 4, 5, 6, 7 of 7; the Examples show the first 5, eval.json every reply)" in main, main
    assert eval_tab.table(report)[-1][-1] == "higher, mostly cut off"
    tuned_cell = eval_tab.examples(report)[0][3]
    assert tuned_cell.startswith("[✂ cut off at 24 tokens] [🔁 repeats “the answer is 4.” 6 times (100 % of the reply)] \n")
    assert eval_tab.examples(report)[0][2].startswith("[✂ cut off at 24 tokens] \n")


def test_a_checkpoint_is_not_named_best_on_mostly_cut_off_answers():
    n = 40
    good = side("checkpoint-2", 2, [1.0] * 36 + [0.0] * 4, truncated=[1.0] * n)
    final = side("final", 4, [0.0] * 36 + [1.0] * 4, truncated=[1.0] * n)
    record, best = evaluate._cross_fit([good, final], side("base", 0, [0.0] * n), final, SEED)
    assert record["chosen"] == "checkpoint-2" and record["chosen_vs_tuned"]["distinguishable"]
    assert best is None and "most answers were cut off by the token budget" in record["verdict"]


def test_the_command_line_says_cut_off_and_prints_the_command_to_evaluate_again(capsys):
    from rloo_studio.cli import results

    results._print_base_vs_tuned(all_cut_off_report(), "runs/r")
    out = capsys.readouterr().out
    assert "is better" not in out and "most answers were cut off" in out
    assert "Evaluate again: rloo-studio eval runs/r --max-new-tokens 96" in out
    assert "(How this is decided: the exact sign test" in out


def test_rows_a_task_does_not_measure_are_absent_from_the_tab_the_chart_and_the_command_line(capsys):
    """A task scored by length alone: no answer accuracy ("- → -") and no format rate ("0 %"), anywhere."""
    from rloo_studio.cli import results
    from rloo_studio.ui import eval_tab

    base, final = side("base", 0, [0.0] * 6), side("final", 4, [0.5] * 6)
    base.accuracy = final.accuracy = [None] * 6
    base.formatted = final.formatted = [0.0] * 6
    report = report_of(base, final, reward_weights={"length_penalty": 1.0})
    text = eval_tab.summary_markdown(report)
    assert "answer accuracy" not in text and "format rate" not in text and "Mean reward: base" in text
    assert eval_tab.headers(report) == [h for h in eval_tab.TABLE_HEADERS if not h.startswith(("answer accuracy", "format rate"))]
    assert len(eval_tab.table(report)[1]) == len(eval_tab.headers(report))
    assert not {"answer accuracy", "format rate"} & {m.split(" · ")[0] for m in eval_tab.chart_frame(report)["metric"]}
    results._print_base_vs_tuned(report, "runs/r")
    out = capsys.readouterr().out
    assert "answer accuracy" not in out and "format rate" not in out and "mean total reward" in out
    # With the answer and format rewards, both are back.
    assert "answer accuracy" in eval_tab.summary_markdown(all_cut_off_report())
    assert eval_tab.headers(all_cut_off_report()) == eval_tab.TABLE_HEADERS


def test_greedy_or_sampled_is_said_in_the_tab_and_the_command_line():
    from rloo_studio.cli import results
    from rloo_studio.ui import eval_tab

    greedy = all_cut_off_report()
    assert "decoding: greedy (the most likely answer)" in eval_tab.summary_markdown(greedy)
    assert "decoding: greedy (the most likely answer)" in results._decoding_line(greedy)
    sampled = report_of(side("base", 0, [0.0] * 4), side("final", 4, [1.0] * 4), mode="sampled")
    assert "decoding: sampled (4 answers per prompt at temperature 1, scored by their mean)" in eval_tab.summary_markdown(sampled)


def test_compare_runs_names_each_evaluations_decoding_and_does_not_read_better_on_cut_off_answers(tmp_path):
    from rloo_studio import runs
    from rloo_studio.ui.compare_runs import EVAL_HEADERS, NOT_SCORED, eval_rows

    cut, sampled = tmp_path / "cut", tmp_path / "sampled"
    for folder in (cut, sampled):
        folder.mkdir()
    (cut / runs.EVAL_FILE).write_text(json.dumps(all_cut_off_report()))
    base, final = side("base", 0, [0.0] * 8), side("final", 4, [1.0] * 8)
    base.accuracy = final.accuracy = [None] * 8
    (sampled / runs.EVAL_FILE).write_text(json.dumps(report_of(base, final, {"length_penalty": 1.0}, mode="sampled")))
    rows = {row[0]: dict(zip(EVAL_HEADERS, row)) for row in eval_rows([cut, sampled])}
    assert rows["cut"]["vs base"] == "higher, mostly cut off"
    assert rows["cut"]["decoding · token budget"] == "greedy (the most likely answer) · base 24, tuned 24 tokens"
    assert rows["sampled"]["vs base"] == "better" and rows["sampled"]["answer accuracy"] == NOT_SCORED
    assert rows["sampled"]["decoding · token budget"].startswith("sampled (4 answers per prompt at temperature 1")


def test_the_model_card_does_not_call_cut_off_answers_better(tmp_path):
    (tmp_path / "eval.json").write_text(json.dumps(all_cut_off_report()))
    card = evaluation_section(tmp_path, "final")
    assert "is better" not in card and "most answers were cut off by the token budget (Tuned 100 % at 24 tokens" in card


def test_evaluate_again_runs_the_same_evaluation_at_the_suggested_budget_for_both_models(tmp_path, monkeypatch):
    """The button the tab shows beside a verdict on mostly cut-off answers: `--max-new-tokens 96` (4 x 24), base included."""
    import contextlib

    import gradio as gr

    from rloo_studio import runs
    from rloo_studio.ui import eval_tab
    from rloo_studio.workers.commands import Finished

    run = tmp_path / "r"
    run.mkdir()
    (run / runs.CONFIG_FILE).write_text("model: {name_or_path: demo}\n")
    (run / runs.EVAL_FILE).write_text(json.dumps(all_cut_off_report()))
    calls = []

    def fake_cli(args, on_line, cwd=None):
        calls.append(args)
        return Finished(0, json.dumps(all_cut_off_report()), "")

    class Worker:
        reserved = staticmethod(lambda what: contextlib.nullcontext())

    monkeypatch.setattr(eval_tab, "run_cli", fake_cli)
    with gr.Blocks():
        tab = eval_tab.EvalTab(tmp_path, Worker())
    shown = tab.render(runs.read_eval(run))
    assert shown[4]["visible"] is True and shown[4]["value"] == "Evaluate again with a token budget of 96"
    out = tab.run_again("r", "final", 50, "", "greedy", 4, 0, "", progress=lambda *a, **k: None)
    assert calls[-1][calls[-1].index("--max-new-tokens") + 1] == "96" and "--base-max-new-tokens" not in calls[-1]
    assert out[-1] == 96  # the Token budget box shows the budget used
    # A verdict on finished answers offers no re-run.
    base, final = side("base", 0, [0.0] * 7), side("final", 4, [1.0] * 7)
    assert tab.render(report_of(base, final))[4]["visible"] is False


def test_the_model_card_names_the_decoding_and_leaves_out_rows_the_rewards_do_not_measure(tmp_path):
    base, final = side("base", 0, [0.0] * 6), side("final", 4, [0.5] * 6)
    base.accuracy = final.accuracy = [None] * 6
    (tmp_path / "eval.json").write_text(json.dumps(report_of(base, final, {"length_penalty": 1.0}, mode="sampled")))
    card = evaluation_section(tmp_path, "final")
    assert "| answer accuracy |" not in card and "| format rate |" not in card and "| mean total reward |" in card
    assert "Sampled decoding (4 answers per prompt at temperature 1.0, scored by their mean)" in card and "pass@1" not in card


def test_the_command_lines_checkpoint_table_gives_each_verdict_and_only_measured_columns(capsys):
    from rloo_studio.cli import results

    report = six_prompt_report()  # reward "r" alone: an answer column is scored, no format reward
    results._print_checkpoint_table(report, "runs/r")
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert "answer acc [95 %]" in header and "format rate" not in header and "cut off" in header and "vs base" in header
    rows = {line.split()[0]: line for line in out.splitlines()[1:4]}
    assert rows["checkpoint-120"].endswith("6/0/0  better") and rows["final"].endswith("5/1/0  not distinguishable (too few to judge)")
    assert "tuned vs base on the same 6 prompts: tuned scored higher on 5, lower on 0, the same on 1" in out
    assert "(How this is decided: the exact sign test on the 5 prompts where the two differ" in out


def test_an_evaluation_on_prompts_the_run_trained_on_says_so():
    """The training CSV typed into "Held-out data" gave "n = 30 held-out prompts" and nothing said 27 of them had been
    trained on (a walk)."""
    from rloo_studio.config import RunConfig
    from rloo_studio.engine.evaluate import seen_in_training

    folder = Path(tempfile.mkdtemp())
    (folder / "boats.csv").write_text("question,hours\n" + "".join(f"How long for repair {i}?,{i}\n" for i in range(10)))
    cfg = RunConfig.from_dict({"data": {"source": "boats.csv", "prompt_column": "question", "test_fraction": 0.2}}, base_dir=folder)
    rows = [{"question": f"How long for repair {i}?"} for i in range(10)] + [{"question": "A new one?"}]
    assert seen_in_training(cfg, folder, rows) == 8  # 2 of the 10 were held out, and the new one was never seen
    report = {"n_prompts": 11, "seen_in_training": 8, "split": "boats.csv", "decoding": {"mode": "greedy", "greedy": True,
              "samples": 1, "max_new_tokens": {"base": 16, "tuned": 16}}}
    assert stats.seen_in_training_line(report).startswith("8 of these 11 prompts are training prompts of this run")
    assert stats.seen_in_training_line({**report, "seen_in_training": 0}) is None
    assert stats.seen_in_training_line({"n_prompts": 3}) is None  # an evaluation from before the count was kept


def test_a_tuned_model_that_gives_one_reply_to_many_prompts_is_said():
    """The tuned model learned to answer "1": 60 of its 120 sampled replies, against 12 for base, and only 4 of the 30
    repairs take 1 hour. Nothing said it; the examples showed "1" row after row (a walk)."""
    from rloo_studio.ui import eval_tab

    n = 12
    base = side("base", 0, [0.0] * n)
    final = side("final", 4, [0.0] * 9 + [1.0] * 3)
    base.texts = [[f"It takes about {i + 2} hours."] for i in range(n)]
    final.texts = [["1"] if i < 8 else [f"{i} hours"] for i in range(n)]
    report = report_of(base, final)
    main = eval_tab.summary_markdown(report).split("<details>")[0]
    assert "⚠️ **Tuned (final) gives one reply to many prompts:** “1” is 8 of its 12 replies (base's most common reply: 1 of 12)" in main, main
    varied = report_of(base, side("final", 4, [0.0] * n))
    assert "one reply to many prompts" not in eval_tab.summary_markdown(varied)
    # A base that says it as often already: nothing new learned, nothing said.
    base.texts = [["1"] if i < 7 else ["2"] for i in range(n)]
    assert "one reply to many prompts" not in eval_tab.summary_markdown(report_of(base, final))


def test_a_new_evaluation_keeps_the_one_before_it():
    """Three evaluations (greedy, sampled at 6 tokens, the training CSV as held-out data) left only the last in
    eval.json: the proper held-out result was gone (a walk). Each earlier one is kept in evals/, and said."""
    from rloo_studio import runs
    from rloo_studio.ui import eval_tab

    folder = Path(tempfile.mkdtemp())
    first, second = {"n_prompts": 6, "created_at": 1_700_000_000.0}, {"n_prompts": 40, "created_at": 1_700_000_100.0}
    assert runs.write_eval(folder, first) is None
    kept = runs.write_eval(folder, second)
    assert kept.parent.name == runs.EVALS_DIR and json.loads(kept.read_text())["n_prompts"] == 6
    now = json.loads((folder / runs.EVAL_FILE).read_text())
    assert now["n_prompts"] == 40 and now["previous"] == f"{runs.EVALS_DIR}/{kept.name}"
    third = runs.write_eval(folder, {"n_prompts": 3, "created_at": 1_700_000_100.0})  # the same second: its own name
    assert third != kept and len(list((folder / runs.EVALS_DIR).iterdir())) == 2
    assert "the evaluation before it is kept in `evals/" in eval_tab.summary_markdown({**six_prompt_report(), "previous": "evals/eval-1.json"})


def test_the_command_line_says_loops_and_one_reply_to_many_prompts_as_the_tab_does(capsys):
    """`rloo-studio eval` printed the verdict without the tab's loop line and one-reply warning: a tuned model that
    says "1" to 8 of 12 prompts, or one sentence over and over, read as any other result in the terminal."""
    from rloo_studio.cli import results

    results.print_report(all_cut_off_report(), "runs/r")
    out = capsys.readouterr().out
    assert "Replies stuck in a repetition loop" in out and "tuned (final) 7 of 7" in out and "base 0 of 7" in out
    assert "held-out prompts 1, 2, 3, 4, 5, 6, 7 of 7; eval.json has every reply" in out, out
    n = 12
    base, final = side("base", 0, [0.0] * n), side("final", 4, [0.0] * 9 + [1.0] * 3)
    base.texts = [[f"It takes about {i + 2} hours."] for i in range(n)]
    final.texts = [["1"] if i < 8 else [f"{i} hours"] for i in range(n)]
    results.print_report(report_of(base, final), "runs/r")
    out = capsys.readouterr().out
    assert "Warning: tuned (final) gives one reply to many prompts: “1” is 8 of its 12 replies (base's most common reply: 1 of 12)" in out, out
    assert "repetition loop" not in out


def test_the_command_lines_tables_keep_their_columns_apart_when_a_cell_is_long(capsys):
    """Every value the same on both sides gives the longest cells ("1.000 (n=6, every one the same)", 31 characters):
    the table ran them together ("1.000 (n=6, every one the same)1.000 (n=6, every one the same)"; a tester). Each
    column is as wide as its longest cell, with two spaces between columns."""
    import re

    from rloo_studio.cli import results

    n = 6
    base, final = side("base", 0, [1.0] * n), side("final", 4, [1.0] * n)
    report = report_of(base, final)
    results._print_base_vs_tuned(report, "runs/r")
    lines = capsys.readouterr().out.splitlines()
    same = stats.fmt_interval(stats.summary_estimate(report["base"], "mean_reward"))
    assert same == "1.000 (n=6, every one the same)"
    row = next(line for line in lines if line.startswith("mean total reward"))
    assert re.split(r" {2,}", row) == ["mean total reward", same, same], row
    header = lines[0]
    assert header.index("base") + len("base") == row.index(same) + len(same)  # right-aligned under their headings
    assert header.index("tuned") + len("tuned") == len(row)
    checkpoint = side("checkpoint-2", 2, [1.0] * n)
    report = {**report, "checkpoints": [{"name": s.name, "step": s.step, "summary": evaluate._summary(s, list(range(n)), SEED),
                                         "tuned_vs_base": stats.paired(base.totals, s.totals, SEED)} for s in (checkpoint, final)]}
    results._print_checkpoint_table(report, "runs/r")
    lines = capsys.readouterr().out.splitlines()
    headings = re.split(r" {2,}", lines[0])  # the first heading is empty: the column of the names
    for line in lines[1:4]:
        cells = re.split(r" {2,}", line)
        assert len(cells) == len(headings), (headings, cells)
        assert "1.000 (every one the same)" in cells and "same)1" not in line and "%1" not in line


def test_the_evaluations_seconds_say_what_they_count_in_the_tab_and_the_command_line(capsys):
    """"Saved in `eval.json` (0.2 s)" after a command that took several seconds: the 0.2 s left out importing torch,
    transformers and PEFT (a tester). eval.json's `seconds` is the whole evaluation and `load_seconds` its loading; an
    eval.json of an earlier version, without `load_seconds`, says what its seconds leave out."""
    from rloo_studio.cli import results
    from rloo_studio.ui import eval_tab

    n = 6
    report = {**report_of(side("base", 0, [0.0] * n), side("final", 4, [0.5] * n)), "seconds": 6.1, "load_seconds": 5.9}
    said = "the evaluation took 6.1 s, 5.9 s of it loading the libraries and the base model"
    assert f"Saved in `eval.json`; {said}." in eval_tab.summary_markdown(report)
    results.print_report(report, "runs/r")
    assert f"Saved runs/r/eval.json; {said}" in capsys.readouterr().out
    earlier = {k: v for k, v in report.items() if k != "load_seconds"}
    assert "the evaluation took 6.1 s, not counting loading the libraries" in eval_tab.summary_markdown(earlier)

"""Choosing a checkpoint on prompts it is not reported on, and how the app, the CLI and the model card word the result.

The sides are built from per-prompt numbers (no model): the selection and reporting code of
rloo_studio.engine.evaluate is plain arithmetic on them. The end-to-end runs with real models are in
tests/engine/test_eval*.py.
"""

from __future__ import annotations

import json

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


def test_truncated_means_the_budget_was_hit_without_an_end_token():
    assert evaluate._truncated([5, 6, 7], 3, {2}) is True
    assert evaluate._truncated([5, 6, 2], 3, {2}) is False  # ended on its last allowed token
    assert evaluate._truncated([5, 2], 3, {2}) is False


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
    assert rows[2][4].startswith("0.833 [") and rows[2][-1] == "not distinguishable"
    frame = eval_tab.chart_frame(report)
    assert {"mean reward · 95 % low", "mean reward · 95 % high", "answer accuracy · 95 % low"} <= set(frame["metric"])
    assert "n = 6" in eval_tab.chart_title(report)


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

    from rloo_studio.cli import _print_checkpoint_table

    n = 6
    base, higher, final = side("base", 0, [0.0] * n), side("checkpoint-2", 2, [1.0] * n), side("final", 4, [0.5] * n)
    report = {"base": evaluate._summary(base, list(range(n)), SEED), "n_prompts": n, "best": None, "selection": {},
              "checkpoints": [{"name": s.name, "step": s.step, "summary": evaluate._summary(s, list(range(n)), SEED),
                               "tuned_vs_base": stats.paired(base.totals, s.totals, SEED)} for s in (higher, final)]}
    _print_checkpoint_table(report)
    assert "*" not in capsys.readouterr().out  # the highest mean, but no best checkpoint named
    _print_checkpoint_table({**report, "best": "checkpoint-2"})
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.endswith("  *")] == ["checkpoint-2"]
    docs = " ".join((Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8").split())
    assert "`*` marks the best mean reward" not in docs and "`*` marks the best checkpoint" in docs

"""`rloo-studio eval`: base vs tuned on held-out prompts with identical greedy decoding."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import ADDITION_ROWS, run_cli, run_code

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained_run(trained_tiny_run):
    return trained_tiny_run


def test_eval_reports_base_and_tuned_and_writes_eval_json(trained_run):
    run_dir, model_dir = trained_run
    result = run_cli("eval", run_dir, "--json", cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report == json.loads((run_dir / "eval.json").read_text())
    n_test = round(len(ADDITION_ROWS) * 0.25)
    assert report["n_prompts"] == n_test
    assert report["decoding"]["mode"] == "greedy" and report["decoding"]["max_new_tokens"] == {"base": 12, "tuned": 12}
    for side in ("base", "tuned"):
        summary = report[side]
        assert set(summary["rewards"]) == {"numeric_answer", "think_format", "think_length", "short_answer"}
        assert 0.0 <= summary["answer_accuracy"] <= 1.0 and 0.0 <= summary["format_rate"] <= 1.0
        assert summary["answer_accuracy"] == summary["rewards"]["numeric_answer"]
    wtl = report["tuned_vs_base"]
    assert wtl["wins"] + wtl["ties"] + wtl["losses"] == n_test == wtl["n"]

    # Fairness: the base side must be exactly what a fresh load of the base model generates.
    example = report["examples"][0]
    code = f"""
import json
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(model_dir)!r})
model = AutoModelForCausalLM.from_pretrained({str(model_dir)!r})
ids = tok.apply_chat_template([{{"role": "user", "content": {example['prompt']!r}}}], add_generation_prompt=True, return_tensors="pt", return_dict=True)
out = model.generate(**ids, max_new_tokens=12, do_sample=False, pad_token_id=tok.pad_token_id)
print(json.dumps(tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)))
"""
    fresh = run_code(code, stack="plain", timeout=300)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert json.loads(fresh.stdout.strip().splitlines()[-1]) == example["base"]

    table = run_cli("eval", run_dir, "--limit", "4", cwd=run_dir.parent)
    assert table.returncode == 0, table.stderr[-2000:]
    assert "answer accuracy" in table.stdout and "format rate" in table.stdout and "short_answer" in table.stdout
    assert json.loads((run_dir / "eval.json").read_text())["n_prompts"] == 4


def test_eval_needs_held_out_data_or_split(trained_run, tmp_path):
    run_dir, _ = trained_run
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config["data"]["test_fraction"] = 0.0
    other = tmp_path / "copy"
    other.mkdir()
    (other / "config.yaml").write_text(yaml.safe_dump(config))
    (other / "rewards.py").write_text((run_dir / "rewards.py").read_text())
    (other / "adapter").symlink_to(run_dir / "adapter")
    result = run_cli("eval", other, cwd=tmp_path)
    assert result.returncode == 2
    assert "no held-out prompts" in result.stderr and "--split" in result.stderr

    data = run_dir.parent.parent / "data.jsonl"
    result = run_cli("eval", other, "--split", data, "--limit", "3", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["n_prompts"] == 3
    # That file is the training data itself: its prompts were trained on, which the report counts and the log says.
    from rloo_studio.config import RunConfig
    from rloo_studio.data import load_rows

    cfg = RunConfig.load(other / "config.yaml")
    trained = {r[cfg.data.prompt_column] for r in load_rows(cfg.data, other, seed=int(cfg.rloo_value("seed"))).train}
    first = [json.loads(line)[cfg.data.prompt_column] for line in data.read_text().splitlines()[:3]]
    seen = sum(p in trained for p in first)
    assert seen == 3 and json.loads(result.stdout)["seen_in_training"] == seen
    assert "3 of these 3 prompts are training prompts of this run" in result.stderr, result.stderr[-2000:]


def test_eval_refuses_a_limit_below_one_and_honours_an_explicit_test_split(trained_run, tmp_path):
    run_dir, _ = trained_run
    result = run_cli("eval", run_dir, "--limit", "0", cwd=tmp_path)
    assert result.returncode == 2 and "--limit 0 leaves nothing to evaluate" in result.stderr
    # The run holds out a fraction, not a split named `test`: asking for `--split test` must not be ignored.
    result = run_cli("eval", run_dir, "--split", "test", cwd=tmp_path)
    assert result.returncode == 2 and "data.test_split `test` names a split" in result.stderr


def test_eval_of_a_folder_that_is_not_a_run(tmp_path):
    result = run_cli("eval", tmp_path, cwd=tmp_path)
    assert result.returncode == 2 and "is not a run directory" in result.stderr


def test_base_max_new_tokens_gives_the_base_a_larger_budget(trained_run, tmp_path):
    """The tiny model rarely emits its end token: each side runs to its own budget, and says so."""
    run_dir, _ = trained_run
    result = run_cli("eval", run_dir, "--limit", "4", "--base-max-new-tokens", "40", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "token budget: base 40, tuned 12" in result.stdout
    report = json.loads((run_dir / "eval.json").read_text())
    assert report["decoding"]["max_new_tokens"] == {"base": 40, "tuned": 12}
    assert report["base"]["max_new_tokens"] == 40 and report["tuned"]["max_new_tokens"] == 12
    base_tokens = [row["sides"]["base"]["tokens"] for row in report["per_prompt"]]
    tuned_tokens = [row["sides"]["final"]["tokens"] for row in report["per_prompt"]]
    assert max(base_tokens) > 12 and max(base_tokens) <= 40 and max(tuned_tokens) <= 12
    # Truncation is measured against each side's own budget.
    for row in report["per_prompt"]:
        assert row["sides"]["base"]["truncated"] in (0.0, 1.0)
        if row["sides"]["base"]["tokens"] < 40:
            assert row["sides"]["base"]["truncated"] == 0.0
    assert report["base"]["truncation_rate"] == sum(r["sides"]["base"]["truncated"] for r in report["per_prompt"]) / 4


def test_max_new_tokens_sets_both_budgets_and_cut_off_answers_get_no_verdict(trained_run, tmp_path):
    """At 6 tokens the base model finishes no answer: the command says so instead of a verdict, and prints the re-run."""
    run_dir, _ = trained_run
    result = run_cli("eval", run_dir, "--limit", "3", "--max-new-tokens", "6", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads((run_dir / "eval.json").read_text())
    assert report["decoding"]["max_new_tokens"] == {"base": 6, "tuned": 6}
    assert report["base"]["truncation_rate"] == 1.0  # the trained side finishes some short answers; the base none
    assert report["verdict"]["limited"] and "is better" not in result.stdout and "most answers were cut off" in result.stdout
    assert f"Evaluate again: rloo-studio eval {run_dir} --max-new-tokens 24" in result.stdout


def test_sampled_pass_at_1_scores_the_mean_of_k_samples(trained_run, tmp_path):
    run_dir, _ = trained_run
    result = run_cli("eval", run_dir, "--limit", "3", "--decoding", "sampled", "--samples", "2", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["decoding"]["mode"] == "sampled" and report["decoding"]["samples"] == 2
    assert report["decoding"]["temperature"] == 1.0  # the run's temperature: TRL's default, not set in its config
    for row in report["per_prompt"]:
        for side in ("base", "final"):
            record = row["sides"][side]
            assert len(record["samples"]) == 2 and record["completion"] == record["samples"][0]["completion"]
            assert record["total"] == pytest.approx(sum(s["total"] for s in record["samples"]) / 2)
    sides = [line.split()[2] for line in result.stderr.splitlines() if line.startswith("[eval] base ")]
    assert f"{2 * 3}/{2 * 3}" in sides  # a side counts k x prompts completions


def test_eval_options_are_checked_before_any_model_loads(trained_run, tmp_path):
    run_dir, _ = trained_run
    result = run_cli("eval", run_dir, "--samples", "3", cwd=tmp_path)
    assert result.returncode == 2 and "--samples 3 needs sampled decoding" in result.stderr and "--decoding sampled" in result.stderr
    result = run_cli("eval", run_dir, "--base-max-new-tokens", "0", cwd=tmp_path)
    assert result.returncode == 2 and "leaves the base no tokens" in result.stderr
    result = run_cli("eval", run_dir, "--max-new-tokens", "0", cwd=tmp_path)
    assert result.returncode == 2 and "leaves the tuned model no tokens" in result.stderr
    result = run_cli("eval", run_dir, "--decoding", "beam", cwd=tmp_path)
    assert result.returncode == 2 and "greedy, sampled" in result.stderr


def test_the_evaluations_seconds_count_loading_the_libraries_and_the_model(trained_run):
    """eval.json's `seconds` read 0.2 s for a command that took several: importing torch, transformers and PEFT came
    before its clock started (a tester). Here the import is made to take 1000 s by moving the clock on, so no real
    duration is compared: the whole evaluation and its loading must both count them."""
    run_dir, _ = trained_run
    code = """
import json, sys, time
from rloo_studio.engine import evaluate, stack
real, moved = time.monotonic, [0.0]
imported = stack.import_training_stack
def import_taking_1000_s(*args, **kwargs):
    moved[0] = 1000.0
    return imported(*args, **kwargs)
stack.import_training_stack = import_taking_1000_s
time.monotonic = lambda: real() + moved[0]
report = evaluate.evaluate_run(sys.argv[1], limit=2)
print(json.dumps({"seconds": report["seconds"], "load_seconds": report.get("load_seconds")}))
"""
    result = run_code(code, run_dir, stack="transformers", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    timed = json.loads(result.stdout.strip().splitlines()[-1])
    assert timed["load_seconds"] is not None and 1000 <= timed["load_seconds"] <= timed["seconds"], timed

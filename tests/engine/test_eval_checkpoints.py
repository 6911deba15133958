"""`rloo-studio eval --checkpoint`: every checkpoint against one base pass, numbers recomputable by hand.

One run of the bundled demo model (a 0.8M-parameter model that already answers arithmetic in the
`<think>47+28</think>75` format, so its greedy answers vary from prompt to prompt and some are right)
is trained per module with LoRA (4 steps, a checkpoint every 2) and evaluated once with
`--checkpoint all` (table + progress lines + eval.json) and once with the default `final`.
The hand computation below reads the completion texts in eval.json's `per_prompt` and scores
them with explicit code written here, not with rloo_studio's reward or scoring code.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml
from helpers import ROOT, only_run_dir, run_cli, run_code

from rloo_studio import stats

pytestmark = pytest.mark.slow

LENGTH_REWARD = '''
def length_rule(completions, **kwargs):
    """min(len(text), 10) / 10; None for an empty completion (unscorable)."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [None if not t else min(len(t), 10) / 10 for t in texts]
'''
WEIGHTS = {"exact_match": 1.0, "think_format": 0.5, "length_rule": 0.25}
MAX_TOKENS = 16
N_PROMPTS = 12  # --limit: the first 12 rows of the demo's test split
DEMO_MODEL = ROOT / "assets" / "demo-model"
TEST_ROWS = [json.loads(line) for line in (ROOT / "assets" / "demo-data" / "test.jsonl").read_text().splitlines()[:N_PROMPTS]]
SIDE_LINE = re.compile(r"^\[eval\] (base|final|checkpoint-\d+) (\d+)/(\d+)$")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("eval-ckpt-run")
    (folder / "rewards.py").write_text(LENGTH_REWARD)
    config = {
        "model": {"name_or_path": "demo", "dtype": "float32", "max_seq_length": 256},
        "lora": {"r": 8, "alpha": 16},
        "data": {"source": "demo", "test_split": "test"},
        "rewards": [{"name": "exact_match", "weight": WEIGHTS["exact_match"]},
                    {"name": "think_format", "weight": WEIGHTS["think_format"]},
                    {"file": "rewards.py", "function": "length_rule", "weight": WEIGHTS["length_rule"]}],
        # A high learning rate so that 2 and 4 steps already change some greedy answers.
        "rloo": {"num_generations": 4, "per_device_train_batch_size": 16, "max_completion_length": MAX_TOKENS,
                 "learning_rate": 1e-2, "max_steps": 4, "save_steps": 2, "beta": 0.0},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    result = run_cli("train", "config.yaml", cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = only_run_dir(folder / "runs")
    # A save cut off before its weights were written (as a crash mid-save leaves it): eval must skip it.
    cut = run_dir / "checkpoints" / "checkpoint-3"
    cut.mkdir()
    (cut / "adapter_config.json").write_text((run_dir / "adapter" / "adapter_config.json").read_text())
    return run_dir, DEMO_MODEL


@pytest.fixture(scope="module")
def eval_all(run):
    """`eval --checkpoint all` as a person runs it: the table on stdout, progress on stderr, eval.json on disk."""
    run_dir, _ = run
    result = run_cli("eval", run_dir, "--checkpoint", "all", "--limit", N_PROMPTS, cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    return result, json.loads((run_dir / "eval.json").read_text())


# ---- hand computation (deliberately independent of rloo_studio.rewards) -----------------------------

PUNCT = " \t\n\"'`.,;:!?*_\u201c\u201d\u2018\u2019"


def hand_exact_match(text: str, reference: str) -> float:
    answer = text.partition("</think>")[2] if "</think>" in text else text
    normalize = lambda s: " ".join(s.lower().split()).strip(PUNCT)  # noqa: E731
    return 1.0 if normalize(answer) == normalize(reference) else 0.0


def hand_think_format(text: str) -> float:
    if text.count("</think>") != 1:
        return 0.0
    head, tail = text.split("</think>")
    if "<think>" in tail:
        return 0.0
    opened = head.lstrip().startswith("<think>")
    thinking = head.lstrip()[len("<think>"):] if opened else head
    return 1.0 if opened and thinking.strip() and tail.strip() else 0.5


def hand_length(text: str):
    return None if not text else min(len(text), 10) / 10


def hand_side(per_prompt: list[dict], side: str) -> dict:
    values = {"exact_match": [], "think_format": [], "length_rule": []}
    totals, texts = [], []
    for row in per_prompt:
        text = row["sides"][side]["completion"]
        texts.append(text)
        v = {"exact_match": hand_exact_match(text, row["answer"]), "think_format": hand_think_format(text),
             "length_rule": hand_length(text)}
        for name in values:
            values[name].append(v[name])
        present = [WEIGHTS[name] * v[name] for name in ("exact_match", "think_format", "length_rule") if v[name] is not None]
        totals.append(sum(present) if present else None)

    def mean(xs):
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if xs else None

    n = len(texts)
    return {
        "summary": {
            "answer_accuracy": mean(values["exact_match"]),
            "format_rate": sum(1 for v in values["think_format"] if v == 1.0) / n,
            "mean_reward": mean(totals),
            "rewards": {name: mean(vs) for name, vs in values.items()},
            "mean_length_chars": sum(len(t) for t in texts) / n,
        },
        "totals": totals,
    }


HAND_KEYS = ("answer_accuracy", "format_rate", "mean_reward", "mean_length_chars")


def flat(summary: dict) -> dict:
    """pytest.approx compares flat dicts only: rewards/<name> keys instead of the nested dict (intervals: checked apart)."""
    out = {k: summary[k] for k in HAND_KEYS}
    out.update({f"rewards/{k}": v for k, v in summary["rewards"].items()})
    return out


def hand_versus(base_totals, totals) -> dict:
    wins = ties = losses = 0
    for b, t in zip(base_totals, totals):
        b, t = b or 0.0, t or 0.0
        if t > b:
            wins += 1
        elif t == b:
            ties += 1
        else:
            losses += 1
    return {"wins": wins, "ties": ties, "losses": losses}


def test_every_number_matches_a_hand_computation(eval_all):
    _, report = eval_all
    assert report["n_prompts"] == N_PROMPTS == len(report["per_prompt"])
    assert [(r["prompt"], r["answer"]) for r in report["per_prompt"]] == [(r["prompt"], r["answer"]) for r in TEST_ROWS]
    for row in report["per_prompt"]:
        assert set(row["sides"]) == {"base", "checkpoint-2", "checkpoint-4", "final"}
    base = hand_side(report["per_prompt"], "base")
    assert 0.0 < base["summary"]["answer_accuracy"] < 1.0  # the demo model gets some answers right, not all
    assert flat(report["base"]) == pytest.approx(flat(base["summary"]), rel=1e-12)
    for row, total in zip(report["per_prompt"], base["totals"]):
        assert row["sides"]["base"]["total"] == pytest.approx(total, rel=1e-12)
    for entry in report["checkpoints"]:
        mine = hand_side(report["per_prompt"], entry["name"])
        assert flat(entry["summary"]) == pytest.approx(flat(mine["summary"]), rel=1e-12), entry["name"]
        versus = {k: entry["tuned_vs_base"][k] for k in ("wins", "ties", "losses")}
        assert versus == hand_versus(base["totals"], mine["totals"]), entry["name"]
        for row, total in zip(report["per_prompt"], mine["totals"]):
            assert row["sides"][entry["name"]]["total"] == pytest.approx(total, rel=1e-12)
    final = hand_side(report["per_prompt"], "final")
    assert report["checkpoint"] == "final"
    assert flat(report["tuned"]) == pytest.approx(flat(final["summary"]), rel=1e-12)
    wtl = report["tuned_vs_base"]
    assert {k: wtl[k] for k in ("wins", "ties", "losses")} == hand_versus(base["totals"], final["totals"])
    assert wtl["n"] == N_PROMPTS and (wtl["win_share"] is None or wtl["win_share_low"] <= wtl["win_share"] <= wtl["win_share_high"])


def test_n_intervals_truncation_and_budgets_for_every_side(eval_all):
    _, report = eval_all
    assert report["decoding"] == {"mode": "greedy", "greedy": True, "samples": 1, "temperature": None, "top_p": None, "seed": None,
                                  "max_new_tokens": {"base": MAX_TOKENS, "tuned": MAX_TOKENS}}
    for name, summary in [("base", report["base"])] + [(e["name"], e["summary"]) for e in report["checkpoints"]]:
        assert summary["n"] == N_PROMPTS and summary["max_new_tokens"] == MAX_TOKENS, name
        flags = [row["sides"][name]["truncated"] for row in report["per_prompt"]]
        for row in report["per_prompt"]:  # a completion that stopped before the budget was not cut off
            record = row["sides"][name]
            assert record["tokens"] <= MAX_TOKENS and (record["tokens"] == MAX_TOKENS or record["truncated"] == 0.0)
        assert summary["truncation_rate"] == sum(flags) / N_PROMPTS, name
        hits = round(summary["answer_accuracy"] * N_PROMPTS)
        low, high = stats.wilson(hits, N_PROMPTS)
        assert summary["intervals"]["answer_accuracy"] == {"low": low, "high": high, "n": N_PROMPTS}, name
        low, high = stats.wilson(sum(flags), N_PROMPTS)
        assert summary["intervals"]["truncation_rate"] == {"low": low, "high": high, "n": N_PROMPTS}, name
        interval = summary["intervals"]["mean_reward"]
        assert interval["n"] == N_PROMPTS and interval["low"] <= summary["mean_reward"] <= interval["high"], name


def test_the_best_checkpoint_is_chosen_on_one_half_and_reported_on_the_other(eval_all):
    _, report = eval_all
    selection = report["selection"]
    assert selection["method"] == "cross-fit halves" and selection["criterion"] == "mean_reward"
    names = [e["name"] for e in report["checkpoints"]]
    totals = {name: hand_side(report["per_prompt"], name)["totals"] for name in names}

    def hand_mean(name, indices):
        xs = [totals[name][i] for i in indices if totals[name][i] is not None]
        return sum(xs) / len(xs)

    first, second = selection["folds"]
    assert first["chosen_on_prompts"] == second["reported_on_prompts"] and first["reported_on_prompts"] == second["chosen_on_prompts"]
    assert not set(first["chosen_on_prompts"]) & set(first["reported_on_prompts"])
    assert sorted(first["chosen_on_prompts"] + first["reported_on_prompts"]) == list(range(N_PROMPTS))
    for fold in (first, second):
        scores = [hand_mean(name, fold["chosen_on_prompts"]) for name in names]
        assert fold["chosen"] == names[scores.index(max(scores))]  # the highest on its own half (ties: earliest step)
        assert fold["reported"]["n"] == len(fold["reported_on_prompts"])
        assert fold["reported"]["mean_reward"] == pytest.approx(hand_mean(fold["chosen"], fold["reported_on_prompts"]), rel=1e-12)
    # The reported number: every prompt scored by the checkpoint chosen on the other half.
    out_of_fold = [None] * N_PROMPTS
    for fold in (first, second):
        for i in fold["reported_on_prompts"]:
            out_of_fold[i] = totals[fold["chosen"]][i]
    assert selection["reported"]["mean_reward"] == pytest.approx(sum(out_of_fold) / N_PROMPTS, rel=1e-12)
    versus = selection["chosen_vs_tuned"]
    assert versus["tuned"] == "final" and versus["n"] == N_PROMPTS
    assert report["best"] in (None, selection["chosen"])
    assert (report["best"] is not None) == bool(versus["distinguishable"] and versus["mean_difference"] > 0
                                                  and selection["chosen"] not in (None, "final"))


def test_all_orders_checkpoints_by_step_generates_base_once_and_skips_a_cut_off_save(eval_all):
    result, report = eval_all
    assert [(e["name"], e["step"]) for e in report["checkpoints"]] == [("checkpoint-2", 2), ("checkpoint-4", 4), ("final", 4)]
    assert [s["name"] for s in report["skipped"]] == ["checkpoint-3"] and "cut off" in report["skipped"][0]["why"]

    lines = [line for line in result.stderr.splitlines() if line.startswith("[eval]")]
    n = report["n_prompts"]
    assert lines[0] == f"[eval] plan prompts={n} checkpoints=checkpoint-2,checkpoint-4,final"
    assert lines[1].startswith("[eval] skip checkpoint-3: ")
    assert lines[-1].startswith("[eval] done seconds=")
    sides = [SIDE_LINE.match(line).groups() for line in lines if SIDE_LINE.match(line)]
    finished = [name for name, done, total in sides if done == total == str(n)]
    assert finished == ["base", "checkpoint-2", "checkpoint-4", "final"]  # base generated once, then each checkpoint
    for name in finished:  # progress moves batch by batch, from 0 up to n
        counts = [int(done) for side, done, _ in sides if side == name]
        assert counts[0] == 0 and counts[-1] == n and counts == sorted(counts) and len(counts) >= 3

    # The table: one row per checkpoint; the best marked only when the selection found one.
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.split() and line.split()[0] in
            ("base", "checkpoint-2", "checkpoint-4", "final")}
    assert set(rows) == {"base", "checkpoint-2", "checkpoint-4", "final"}
    assert sum(line.rstrip().endswith("*") for line in rows.values()) == (1 if report["best"] else 0)
    if report["best"]:
        assert rows[report["best"]].rstrip().endswith("*")
    assert f"token budget: base {MAX_TOKENS}, tuned {MAX_TOKENS}" in result.stdout
    assert f"n = {n} prompts" in result.stdout and "Selection (cross-fit halves" in result.stdout
    for entry in report["checkpoints"]:
        v = entry["tuned_vs_base"]
        assert f"{v['wins']}/{v['ties']}/{v['losses']}" in rows[entry["name"]]
        assert f"{entry['summary']['mean_reward']:.3f}" in rows[entry["name"]]
    assert "skipped checkpoint-3" in result.stdout


def test_final_alone_reports_what_all_reports_for_final(run, eval_all):
    run_dir, _ = run
    _, everything = eval_all
    result = run_cli("eval", run_dir, "--limit", N_PROMPTS, "--json", cwd=run_dir.parent)  # --checkpoint final is the default
    assert result.returncode == 0, result.stderr[-3000:]
    alone = json.loads(result.stdout)
    assert alone == json.loads((run_dir / "eval.json").read_text())
    assert alone["checkpoint"] == "final" and alone["skipped"] == []
    assert [(e["name"], e["step"]) for e in alone["checkpoints"]] == [("final", 4)]
    for a, b in zip(alone["per_prompt"], everything["per_prompt"]):
        assert a["prompt"] == b["prompt"]
        assert a["sides"]["base"] == b["sides"]["base"]
        assert a["sides"]["final"] == b["sides"]["final"]
    assert alone["tuned"] == everything["checkpoints"][-1]["summary"] == everything["tuned"]
    assert alone["tuned_vs_base"] == everything["checkpoints"][-1]["tuned_vs_base"]
    assert alone["base"] == everything["base"]


def test_six_prompts_name_no_best_checkpoint(run):
    """Halves of 3 prompts cannot separate two checkpoints (the sign test's smallest p on 3 is 0.25)."""
    run_dir, _ = run
    result = run_cli("eval", run_dir, "--checkpoint", "all", "--limit", 6, cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((run_dir / "eval.json").read_text())
    assert report["n_prompts"] == 6 and report["best"] is None
    assert [len(f["chosen_on_prompts"]) for f in report["selection"]["folds"]] == [3, 3]
    assert not report["selection"]["chosen_vs_tuned"]["distinguishable"] and not report["tuned_vs_base"]["distinguishable"]
    assert stats.NOT_DISTINGUISHABLE in result.stdout and "best checkpoint" not in result.stdout
    assert not any(line.rstrip().endswith("*") for line in result.stdout.splitlines())


def test_a_validation_split_chooses_and_the_held_out_prompts_report(run, tmp_path):
    run_dir, _ = run
    validation = tmp_path / "validation.jsonl"
    later = (ROOT / "assets" / "demo-data" / "test.jsonl").read_text().splitlines()[N_PROMPTS:N_PROMPTS + 4]  # not in --limit 4
    validation.write_text("\n".join(later) + "\n")
    result = run_cli("eval", run_dir, "--checkpoint", "all", "--limit", 4, "--select-split", validation, "--json", "--events",
                     cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    selection = report["selection"]
    assert selection["method"] == "validation split" and selection["select_split"] == str(validation)
    assert selection["n_select"] == 4 and selection["overlap_prompts"] == 0
    scores = selection["selection_scores"]
    assert selection["chosen"] == max(scores, key=scores.get)  # chosen on the validation prompts' scores...
    chosen = next(e for e in report["checkpoints"] if e["name"] == selection["chosen"])
    assert selection["reported"] == chosen["summary"] and selection["reported"]["n"] == 4  # ...reported on the held-out ones
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]  # --events: what the app reads
    assert events[0]["event"] == "plan" and events[-1]["event"] == "done"
    assert {"event": "side", "side": "checkpoint-2", "validation": True, "done": 4, "total": 4} in events
    assert not any(line.startswith("[eval]") for line in result.stderr.splitlines())
    refused = run_cli("eval", run_dir, "--select-split", validation, cwd=run_dir.parent)
    assert refused.returncode == 2 and "add --checkpoint all" in refused.stderr


def test_checkpoint_completions_equal_a_fresh_peft_load_of_the_folder(run, eval_all):
    run_dir, model_dir = run
    _, report = eval_all
    prompts = [row["prompt"] for row in report["per_prompt"]]
    folders = {"checkpoint-2": str(run_dir / "checkpoints" / "checkpoint-2"), "final": str(run_dir / "adapter")}
    code = f"""
import json
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(model_dir)!r})
out = {{}}
for name, folder in {folders!r}.items():
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained({str(model_dir)!r}), folder).eval()
    texts = []
    for prompt in {prompts!r}:
        ids = tok.apply_chat_template([{{"role": "user", "content": prompt}}], add_generation_prompt=True, return_tensors="pt", return_dict=True)
        gen = model.generate(**ids, max_new_tokens={MAX_TOKENS}, do_sample=False, pad_token_id=tok.pad_token_id)
        texts.append(tok.decode(gen[0, ids["input_ids"].shape[1]:], skip_special_tokens=True))
    out[name] = texts
print(json.dumps(out))
"""
    fresh = run_code(code, stack="plain", timeout=600, cwd=ROOT)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    expected = json.loads(fresh.stdout.strip().splitlines()[-1])
    for name in folders:
        assert [row["sides"][name]["completion"] for row in report["per_prompt"]] == expected[name], name
    # The premise that makes this a test of adapter switching: the two adapters answer differently.
    assert expected["checkpoint-2"] != expected["final"]


def test_checkpoint_listing_needs_no_torch(run):
    run_dir, _ = run
    code = ("import json, sys; from rloo_studio import runs; "
            f"found = [c.as_dict() for c in runs.evaluable_checkpoints({str(run_dir)!r})]; "
            f"cut = runs.incomplete_checkpoints({str(run_dir)!r}); "
            "print(json.dumps({'found': found, 'cut': cut, 'torch': 'torch' in sys.modules}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    listing = json.loads(result.stdout)
    assert listing["torch"] is False
    assert [(c["name"], c["step"], c["kind"]) for c in listing["found"]] == [
        ("checkpoint-2", 2, "adapter"), ("checkpoint-4", 4, "adapter"), ("final", 4, "adapter")]
    assert listing["found"][0]["path"] == str(run_dir / "checkpoints" / "checkpoint-2")
    assert listing["found"][-1]["path"] == str(run_dir / "adapter")
    assert [c["name"] for c in listing["cut"]] == ["checkpoint-3"]


def test_checkpoint_errors_say_what_exists(run, tmp_path):
    run_dir, _ = run
    result = run_cli("eval", run_dir, "--checkpoint", "checkpoint-7", cwd=tmp_path)
    assert result.returncode == 2
    assert "no checkpoint `checkpoint-7`" in result.stderr and "checkpoint-2, checkpoint-4, final" in result.stderr
    assert "Traceback" not in result.stderr

    result = run_cli("eval", run_dir, "--checkpoint", "checkpoint-3", cwd=tmp_path)
    assert result.returncode == 2 and "cut off" in result.stderr and "checkpoint-2, checkpoint-4, final" in result.stderr

    # A run that has not saved anything yet: no adapter/, no checkpoint.
    fresh = tmp_path / "fresh-run"
    fresh.mkdir()
    (fresh / "config.yaml").write_text((run_dir / "config.yaml").read_text())
    result = run_cli("eval", fresh, cwd=tmp_path)
    assert result.returncode == 2 and "has no trained model yet" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("eval", fresh, "--checkpoint", "all", cwd=tmp_path)
    assert result.returncode == 2 and "has no trained model yet" in result.stderr

    # A run still training: checkpoints but no final adapter yet.
    (fresh / "checkpoints").symlink_to(run_dir / "checkpoints")
    result = run_cli("eval", fresh, cwd=tmp_path)
    assert result.returncode == 2 and "no final adapter yet" in result.stderr
    assert "checkpoint-2, checkpoint-4" in result.stderr and "--checkpoint all" in result.stderr

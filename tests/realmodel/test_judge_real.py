"""The judge reward with a real judge: SmolLM2-135M-Instruct as a local judge, and the same model behind an
OpenAI-compatible HTTP server on 127.0.0.1 (tests/realmodel/judge_server.py) called by the server judge,
including a short training run whose metrics log the judge like any reward and whose run folder holds no key.

Model work runs in child processes (the local judge, the server), so this process never imports the model stack.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from realtask import run_cli, run_python

from rloo_studio import runs
from rloo_studio.workers import jobs
from rloo_studio.config import RunConfig
from rloo_studio.rewards import build_rewards
from rloo_studio.rewards.judge import RUBRICS, SECONDS_METRIC, judge_time_share
from rloo_studio.ui.run_view import status_markdown

HERE = Path(__file__).resolve().parent
KEY_VAR = "H20_JUDGE_TEST_KEY"
KEY = "sk-test-1f2e3d4c5b6a"  # a made-up key: it must reach the server and nowhere else

LOCAL_JUDGE = r'''
import json, sys
from rloo_studio.engine.stack import import_training_stack
import_training_stack("transformers")
from rloo_studio.config import RunConfig
from rloo_studio.rewards import build_rewards
from rloo_studio.rewards.judge import RUBRICS

cfg = RunConfig.from_dict({"rewards": [{"judge": sys.argv[1], "rubric": RUBRICS["correct_vs_reference"].text,
                                        "scale": [0, 10]}]})
[loaded] = build_rewards(cfg.rewards, dataset_columns=["prompt", "answer"])
prompts = [[{"role": "user", "content": "What is 3 + 4?"}]] * 3 + [[{"role": "user", "content": "What is 9 + 8?"}]]
completions = [[{"role": "assistant", "content": c}] for c in ("7", "The answer is 12.", "7", "9 + 8 = 17")]
scores = loaded.func(prompts=prompts, completions=completions, answer=["7", "7", "7", "17"])
verdicts = [v.__dict__ for v in loaded.func.last_verdicts]
print(json.dumps({"name": loaded.name, "scores": scores, "verdicts": verdicts, "calls": loaded.func.calls}))
'''


def test_a_local_judge_scores_completions_with_the_real_model(real_model_dir):
    out = json.loads(run_python(LOCAL_JUDGE, real_model_dir, timeout=1800, stack="transformers"))
    assert out["name"] == "judge_" + real_model_dir.name.replace("-", "_")
    assert out["calls"] == 3  # the repeated (prompt, completion) is judged once
    assert out["scores"][0] == out["scores"][2]
    for score, verdict in zip(out["scores"], out["verdicts"]):
        assert verdict["reply"].strip(), verdict  # the judge's own words are kept
        if score is None:
            assert verdict["problem"], verdict
        else:
            assert 0.0 <= score <= 1.0 and verdict["problem"] == ""
    assert any(s is not None for s in out["scores"])


def _requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_the_server_judge_scores_real_model_output_sends_the_key_and_caches_within_a_step(judge_server, monkeypatch):
    url, log = judge_server
    monkeypatch.setenv(KEY_VAR, KEY)
    before = len(_requests(log))
    spec = RunConfig.from_dict({"rewards": [{"judge": {"url": url, "model": "smollm2", "api_key_env": KEY_VAR},
                                             "rubric": RUBRICS["helpful_concise"].text}]}).rewards
    [loaded] = build_rewards(spec, dataset_columns=["prompt"])
    judge = loaded.func
    prompts = ["Name a fruit."] * 3
    completions = ["Apple.", "Apple.", "I like cars and trucks and many other vehicles."]
    step = type("State", (), {"global_step": 0})()
    scores = judge(prompts=prompts, completions=completions, trainer_state=step)
    new = _requests(log)[before:]
    assert len(new) == 2  # the repeated completion is asked once
    assert all(r["authorization"] == f"Bearer {KEY}" and r["model"] == "smollm2" for r in new)
    # What the judge read is what the real model wrote, served over HTTP (requests run concurrently: match by completion).
    served = {c: r["reply"].strip() for r in new for c in completions if f"Answer to grade:\n{c}\n" in r["messages"][0]["content"]}
    assert len(served) == 2 and [v.reply for v in judge.last_verdicts] == [served[c] for c in completions]
    assert all(r["messages"][-1] == {"role": "assistant", "content": "Score:"} for r in new)
    for score, verdict in zip(scores, judge.last_verdicts):
        assert (score is None and verdict.problem) or (0.0 <= score <= 1.0 and not verdict.problem), verdict

    judge(prompts=prompts, completions=completions, trainer_state=step)
    assert len(_requests(log)) == before + 2  # same step: all from the cache
    step.global_step = 1
    judge(prompts=prompts, completions=completions, trainer_state=step)
    assert len(_requests(log)) == before + 4  # a new step asks again: the cache lives for one step


def test_a_run_with_a_server_judge_trains_and_logs_it_like_any_reward(judge_server, workspace):
    url, log = judge_server
    # Scale 0-100: this tiny judge, shown the tiny policy's noise, often replies with a number above 10, which a 0-10
    # scale rightly refuses (a whole batch of refusals stops the run); the test is about the run, not the judge's sense.
    judge_entry = {"judge": {"url": url, "model": "smollm2", "api_key_env": KEY_VAR}, "rubric": RUBRICS["helpful_concise"].text,
                   "scale": [0, 100], "weight": 1.0}
    config = workspace.write_config(
        rewards=[{"name": "numeric_answer", "weight": 1.0}, judge_entry],
        rloo={"num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 8, "max_steps": 2,
              "save_steps": 2, "beta": 0.0, "learning_rate": 1e-3})
    before = len(_requests(log))
    done = run_cli("train", config, cwd=workspace.path, env={KEY_VAR: KEY})
    assert done.returncode == 0, done.stderr[-4000:]
    [run_dir] = [p for p in (workspace.path / "runs").iterdir() if p.is_dir()]
    metrics = runs.read_jsonl(run_dir / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2]
    for row in metrics:
        assert isinstance(row["rewards/judge_smollm2/mean"], float) and 0.0 <= row["rewards/judge_smollm2/mean"] <= 1.0
        assert "rewards/numeric_answer/mean" in row
        # The judge's own time in the step (logged through TRL's log_metric), part of the step's time.
        assert 0.0 < row[SECONDS_METRIC.format(name="judge_smollm2")] <= row["step_time"], row
    judged, total = judge_time_share(metrics)
    assert total == sum(m["step_time"] for m in metrics) and 0.0 < judged < total
    # Shown with the run's status, as the Train and Runs tabs show it.
    shown = status_markdown(jobs.view(run_dir))
    assert f"Judge: {100 * judged / total:.0f} % of the training time" in shown, shown
    asked = _requests(log)[before:]
    assert asked and all(r["authorization"] == f"Bearer {KEY}" for r in asked)
    samples = runs.read_jsonl(run_dir / "samples.jsonl")
    assert samples and all("judge_smollm2" in s["rewards"] for s in samples)

    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert [r for r in saved["rewards"] if "judge" in r][0]["judge"] == {"url": url, "model": "smollm2", "api_key_env": KEY_VAR}
    for path in run_dir.rglob("*"):  # the key is read from the environment and written nowhere in the run
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path

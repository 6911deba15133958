"""SmolLM2-135M-Instruct trained and previewed through the command line: a 1-step fp32-LoRA run with
`rloo-studio train`, and `rloo-studio preview` sampling with the chat template.
"""

from __future__ import annotations

import json

from realtask import run_cli
from realtask import task_folder as _task_folder

from rloo_studio import runs

SPECIAL_TEXT = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")


def _texts(completions) -> list[str]:
    return [c[0]["content"] for c in completions]


def test_fp32_lora_training_sees_chat_messages_ended_by_the_end_of_turn_token(real_run):
    run_dir, reward_log = real_run
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "finished" and status["step"] == 1 and status["backend"] == "unsloth"
    log = (run_dir / "train.log").read_text()
    assert "(LoRA, float32)" in log  # not "(LoRA, float32, 4-bit)"
    metrics = runs.read_jsonl(run_dir / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1]
    assert all("rewards/numeric_answer/mean" in m and "rewards/exact_match/mean" in m for m in metrics)

    calls = [json.loads(line) for line in reward_log.read_text().splitlines()]
    # TRL's call for the step, with the step's 4 completions; then the health checks at the step's checkpoint call the
    # same reward (docs/alerts.md): the held-out prompts' greedy completions, one each, and the hack probes.
    step_call, *checkpoint_calls = calls
    assert len(step_call["completions"]) == 4
    questions = [json.loads(line)["prompt"] for line in (run_dir.parent.parent / "test.jsonl").read_text().splitlines()]
    held_out = [c for c in checkpoint_calls if [p[-1]["content"] for p in c["prompts"]] == questions]
    assert len(held_out) == 1 and len(held_out[0]["completions"]) == len(questions)
    for call in [step_call, held_out[0]]:  # what the model wrote (the probes are made-up completions)
        # Conversational prompts: TRL applied the chat template, and completions come back as assistant messages.
        assert all(isinstance(p, list) and p[-1]["role"] == "user" for p in call["prompts"])
        assert all(isinstance(c, list) and c[0]["role"] == "assistant" for c in call["completions"])
        for text in _texts(call["completions"]):
            assert not any(s in text for s in SPECIAL_TEXT), text  # decoded without special tokens
            assert "\nuser\n" not in text and "\nassistant\n" not in text, text  # generation stopped at the end of its turn
    samples = runs.read_jsonl(run_dir / "samples.jsonl")
    assert samples and all(s["completion"] in set(_texts(step_call["completions"])) for s in samples)
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()


def test_reward_preview_samples_chat_completions_that_end_at_the_end_of_turn(tmp_path, real_model_dir):
    config = _task_folder(tmp_path, real_model_dir)
    reward_log = tmp_path / "reward-calls.jsonl"
    result = run_cli("preview", config, "rloo.max_completion_length=24", "rloo.num_generations=4", "--num-prompts", "2",
                     # (the reward logs its calls to a file: outside the reward sandbox, which allows no such write)
                     "--json", cwd=tmp_path, env={"REALMODEL_REWARD_LOG": str(reward_log), "RLOO_STUDIO_SANDBOX": "off"})
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    rows = report["rows"]
    assert len(rows) == 8 and {r["group"] for r in rows} == {0, 1}
    for row in rows:
        assert not any(s in row["completion"] for s in SPECIAL_TEXT), row["completion"]
        assert "\nuser\n" not in row["completion"] and "\nassistant\n" not in row["completion"], row["completion"]
        assert set(row["rewards"]) == {"numeric_answer", "exact_match", "digit_share"}
    assert report["learnability"]["groups"] == 2
    # The reward functions got what training gives them: chat prompts and assistant-message completions.
    first = json.loads(reward_log.read_text().splitlines()[0])
    assert _texts(first["completions"]) == [r["completion"] for r in rows]
    assert all(isinstance(p, list) and p[-1]["role"] == "user" for p in first["prompts"])
    print("preview completions:", [r["completion"] for r in rows])

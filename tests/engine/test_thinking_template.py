"""A model whose chat template opens `<think>` in the prompt, through the real stack: the bundled demo model given the
tiny thinking template (tinymodel.THINKING_CHAT_TEMPLATE), its `<think>` token suppressed, writes
`reasoning</think>answer`, without an opening tag.
Training's rewards, the sampled reward preview and the evaluation's format rate read its completions after the
prompt's `<think>`: such a completion is in the full format (think_format 1.0), not a partial one (0.5)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from helpers import ADDITION_ROWS, run_cli

from rloo_studio import runs
from rloo_studio.paths import DEMO_MODEL_DIR
from rloo_studio.demo.tinymodel import SPECIAL_TOKENS, THINKING_CHAT_TEMPLATE

pytestmark = pytest.mark.slow
THINK_ID = SPECIAL_TOKENS.index("<think>")  # the demo model's character tokenizer (tinymodel.build_char_tokenizer)


def _full_format(text: str) -> bool:
    """`reasoning</think>answer` as the demo model writes it after the prompt's <think> (the rule, written out here)."""
    head, _, answer = text.partition("</think>")
    return text.count("</think>") == 1 and "<think>" not in text and bool(head.strip()) and bool(answer.strip())


@pytest.fixture(scope="module")
def thinking_workspace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("thinking")
    model = folder / "thinking-demo-model"
    shutil.copytree(DEMO_MODEL_DIR, model)
    (model / "chat_template.jinja").write_text(THINKING_CHAT_TEMPLATE)  # what the tokenizer loads as its template
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ADDITION_ROWS))
    config = {"model": {"name_or_path": str(model), "max_seq_length": 128}, "lora": {"r": 8, "alpha": 16},
              "data": {"source": "data.jsonl", "test_fraction": 0.25},
              "rewards": [{"name": "numeric_answer"}, {"name": "think_format", "weight": 0.2}],
              # The demo model learnt to open its thought itself; a model made for a thinking template never writes the
              # tag (the prompt has it): its token is suppressed here, as TRL passes generation_kwargs to generate.
              "rloo": {"num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 24,
                       "learning_rate": 1e-5, "max_steps": 1, "save_steps": 1, "beta": 0.0,
                       "generation_kwargs": {"suppress_tokens": [THINK_ID]}},
              "output": {"runs_dir": "runs", "samples_per_step": 4}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


def test_the_preview_reads_completions_after_the_prompts_think(thinking_workspace):
    done = run_cli("preview", "config.yaml", "--num-prompts", "2", "--json", cwd=thinking_workspace)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])["rows"]
    formatted = [r for r in rows if _full_format(r["completion"])]
    assert formatted, [r["completion"] for r in rows]  # the demo model closes the thought the prompt opened
    assert all(r["rewards"]["think_format"] == 1.0 for r in formatted), rows


def test_training_and_the_evaluation_read_completions_after_the_prompts_think(thinking_workspace):
    done = run_cli("train", "config.yaml", cwd=thinking_workspace)
    assert done.returncode == 0, done.stderr[-3000:]
    [run_dir] = [p for p in (thinking_workspace / "runs").iterdir() if p.is_dir()]
    samples = runs.read_jsonl(run_dir / "samples.jsonl")
    texts = {s["completion"]: s["rewards"]["think_format"] for s in samples if _full_format(s["completion"])}
    assert texts and set(texts.values()) == {1.0}, samples

    evaluated = run_cli("eval", str(run_dir), "--limit", "4", "--json", cwd=thinking_workspace)
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    report = json.loads(evaluated.stdout)
    base = [e["base"] for e in report["examples"]]
    assert len(base) == 4 and report["n_prompts"] == 4, report["examples"]
    assert report["base"]["format_rate"] == sum(map(_full_format, base)) / 4 > 0, (report["base"], base)

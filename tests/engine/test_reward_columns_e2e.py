"""The person's own CSV (`question,order_id`, prompt column `question`) through every road that calls the rewards, each
a real `rloo-studio` command on the tiny local model: the preview, the difficulty scan, training (TRL's RLOOTrainer
calls the rewards) and evaluation. A probe reward records the names of the keyword arguments of every call; a reward
reading `order_id` runs beside it. Every road must pass the same ones: TRL's own and every column by its own name, the
prompt column as the data holds it (data.reward_kwargs; unit tests in tests/unit/test_reward_columns.py).
"""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import only_run_dir, run_cli

pytestmark = pytest.mark.slow

QUESTIONS = [f"Where is order {letter}-{n}?" for letter in "ABCD" for n in range(1, 5)]  # 16 rows
EXPECTED = sorted(["prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "question", "order_id"])

REWARDS = '''import json, pathlib

KEYS_FILE = pathlib.Path(__file__).with_name("keys.jsonl")


def polite(completions, order_id, **kwargs):
    texts = [c if isinstance(c, str) else c[0]["content"] for c in completions]
    return [1.0 if str(o) in t else 0.0 for t, o in zip(texts, order_id)]


def probe(completions, **kwargs):
    with open(KEYS_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"keys": sorted(["completions", *kwargs]), "question": kwargs.get("question")}) + "\\n")
    return [float(len(c if isinstance(c, str) else c[0]["content"])) for c in completions]
'''


@pytest.fixture(scope="module")
def module_outside_the_sandbox():
    """The probe writes what it was given next to its file: outside the reward sandbox (conftest's outside_the_sandbox,
    for the whole module: the roads run once)."""
    from rloo_studio import sandbox

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(sandbox.SANDBOX_ENV, "off")
        patch.setattr(sandbox, "_status", None)
        yield
    sandbox._status = None


@pytest.fixture(scope="module")
def roads(tmp_path_factory, tiny_model_dir, module_outside_the_sandbox) -> dict[str, list[dict]]:
    """{road: the probe's recorded calls} for preview, scan, train and eval, run one after the other."""
    folder = tmp_path_factory.mktemp("columns")
    (folder / "orders.csv").write_text("question,order_id\n" + "".join(f"{q},{q.split()[-1][:-1]}\n" for q in QUESTIONS),
                                       encoding="utf-8")
    # The probe writes keys.jsonl next to the file it is loaded from: the run's copy of rewards.py lives in the run folder.
    (folder / "rewards.py").write_text(REWARDS, encoding="utf-8")
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump({
        "model": {"name_or_path": str(tiny_model_dir), "backend": "auto", "max_seq_length": 128},
        "lora": {"r": 8, "alpha": 16},
        "data": {"source": "orders.csv", "prompt_column": "question", "test_fraction": 0.25},
        "rewards": [{"file": "rewards.py", "function": "polite"}, {"file": "rewards.py", "function": "probe", "weight": 0.01}],
        "rloo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 8, "max_steps": 1,
                 "save_steps": 1, "beta": 0.0},
        "output": {"runs_dir": "runs", "samples_per_step": 2},
    }, sort_keys=False))
    found: dict[str, list[dict]] = {}

    def road(name: str, *args) -> None:
        result = run_cli(*args, cwd=folder)
        assert result.returncode == 0, (name, result.stderr[-3000:])
        files = [folder / "keys.jsonl", *folder.glob("runs/*/keys.jsonl")]
        found[name] = [json.loads(line) for f in files if f.is_file() for line in f.read_text().splitlines()]
        for f in files:
            f.unlink(missing_ok=True)

    road("preview", "preview", config, "--num-prompts", "2", "--json")
    road("scan", "scan", config, "--limit", "2", "--runs-dir", folder / "scans", "--json")
    road("train", "train", config)
    road("eval", "eval", only_run_dir(folder / "runs"), "--limit", "2")
    run_dir = only_run_dir(folder / "runs")
    found["eval.json"] = json.loads((run_dir / "eval.json").read_text())
    # The same run with its answer column set (data.answer_column, as the Data tab now writes it), evaluated again.
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    saved["data"]["answer_column"] = "order_id"
    (run_dir / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    road("eval with an answer column", "eval", run_dir, "--limit", "1")
    found["eval.json with an answer column"] = json.loads((run_dir / "eval.json").read_text())
    return found


@pytest.mark.parametrize("name", ["preview", "scan", "train", "eval"])
def test_every_road_passes_every_column_by_its_own_name(roads, name):
    calls = roads[name]
    assert calls, f"{name}: the probe reward was never called"
    for call in calls:
        assert call["keys"] == EXPECTED, (name, call["keys"])
        # The prompt column's own values, as the data holds them (not the chat messages TRL passes as `prompts`).
        assert all(q in QUESTIONS for q in call["question"]), (name, call["question"])


def test_an_evaluation_shows_each_examples_reference_from_the_rows(roads):
    """No reward compares with an answer column and the rows have no `answer`: each example showed no reference (None);
    it shows what the row holds beside the prompt, `order_id=A-1`, under "reference" (ui.eval_tab.examples_headers)."""
    report = roads["eval.json"]
    for example in report["examples"] + report["per_prompt"]:
        assert example["answer"] == f"order_id={example['prompt'].split()[-1][:-1]}", example
    assert report["answer_column"] is None


def test_an_evaluation_names_the_answer_column_the_data_sets(roads):
    """A run whose config sets data.answer_column (no reward compares with it): each example's reference is that column's
    value and the report names the column (the Examples table's header); it was None, and the row's other columns shown."""
    report = roads["eval.json with an answer column"]
    assert report["answer_column"] == "order_id"
    for example in report["examples"] + report["per_prompt"]:
        assert example["answer"] == example["prompt"].split()[-1][:-1], example


def test_preview_exits_1_when_a_reward_fails_and_warns_of_one_that_scores_none(tmp_path):
    """`rloo-studio preview` exited 0 when a reward failed on every completion, and said nothing of a reward that
    returned None for all of them."""
    from rloo_studio.paths import DEMO_MODEL_DIR

    (tmp_path / "orders.csv").write_text("question,order_id\nWhere is order A-1?,A-1\n", encoding="utf-8")
    (tmp_path / "completions.jsonl").write_text(
        "".join(json.dumps({"prompt": "Where is order A-1?", "completion": c}) + "\n" for c in ("A-1 ships.", "Soon.")))
    (tmp_path / "rewards.py").write_text("def broken(completions, order_id, **kwargs):\n    return [o[9] for o in order_id]\n\n"
                                         "def never(completions, **kwargs):\n    return [None for _ in completions]\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"model": {"name_or_path": str(DEMO_MODEL_DIR)},
                                      "data": {"source": "orders.csv", "prompt_column": "question"},
                                      "rewards": [{"file": "rewards.py"}]}))
    result = run_cli("preview", config, "--completions", tmp_path / "completions.jsonl", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "error: reward function `broken` failed on the previewed completions" in result.stderr
    assert "Why: a reward function that raises fails its whole batch" in result.stderr and "What to do: fix it" in result.stderr
    assert "Learnability: Not known: no function scored any completion (`broken`, `never`)" in result.stdout, result.stdout
    assert "Warning: `never` returned None for all 2 completions" in result.stdout, result.stdout


def test_preview_of_written_completions_shapes_their_prompt_as_training(tmp_path):
    """`rloo-studio preview --completions`: hand-written completions are written text, as the page's pasted completions
    and pinned examples are, and their prompt reaches the rewards as training shapes the data's (here chat messages
    with the data's system prompt); it reached them as the bare string."""
    from rloo_studio.paths import DEMO_MODEL_DIR

    (tmp_path / "orders.csv").write_text("question,order_id\nWhere is order A-1?,A-1\n", encoding="utf-8")
    (tmp_path / "completions.jsonl").write_text(
        "".join(json.dumps({"prompt": "Where is order A-1?", "completion": c, "order_id": "A-1"}) + "\n"
                for c in ("A-1 ships.", "Soon.")))
    (tmp_path / "rewards.py").write_text(
        "def sees_system(prompts, completions, **kwargs):\n"
        "    return [float(isinstance(p, list) and p[0]['content'] == 'Be brief.') for p in prompts]\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"model": {"name_or_path": str(DEMO_MODEL_DIR)},
                                      "data": {"source": "orders.csv", "prompt_column": "question", "prompt_format": "chat",
                                               "system_prompt": "Be brief."},
                                      "rewards": [{"file": "rewards.py"}]}))
    result = run_cli("preview", config, "--completions", tmp_path / "completions.jsonl", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(result.stdout.strip().splitlines()[-1])["rows"]
    assert [row["rewards"]["sees_system"] for row in rows] == [1.0, 1.0]

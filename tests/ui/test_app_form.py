"""The app's form through its named API endpoints (gradio_client): presets, data preview, reward code,
config view and the problems that keep Start from starting. No training here (see test_app_training)."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from gradio_client import handle_file

from helpers.app import Form, connect, served_app
from rloo_studio.ui import text


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One app for the module's form tests (building and launching one took seconds per test); (url, runs_dir)."""
    runs_dir = tmp_path_factory.mktemp("form-app") / "runs"
    with served_app(runs_dir) as url:
        yield url, runs_dir


@pytest.fixture
def runs_dir(served):
    """The served app's runs folder (shared by this module's tests: checks compare it before and after)."""
    return served[1]


@pytest.fixture
def app(served):
    """A new client, so a new session of the shared app: no form state carries over from another test."""
    return connect(served[0])


def run_folders(runs_dir) -> set:
    """The run folders under `runs_dir` (the app's own .studio folder is not a run)."""
    return {p.name for p in runs_dir.iterdir() if p.name != ".studio"} if runs_dir.exists() else set()


def test_building_the_app_imports_no_model_library(tmp_path):
    import subprocess

    code = ("import sys, json; from rloo_studio.ui.app import build_app; build_app(sys.argv[1], detect_hardware=False); "
            "print(json.dumps([m for m in ('torch', 'transformers', 'trl', 'unsloth', 'peft') if m in sys.modules]))")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_each_tab_shows_each_field_once(tmp_path):
    # A widget created in a loop by mistake appears several times on the page while only one copy is wired
    # (seen: the run name, three times under the Train tab). Labels repeat across tabs, never within one.
    import gradio as gr

    from rloo_studio.ui.app import build_app

    demo = build_app(tmp_path / "runs", detect_hardware=False)

    def fields(block):
        for child in getattr(block, "children", []) or []:
            if isinstance(child, gr.components.Component) and getattr(child, "label", None):
                yield child.label
            yield from fields(child)

    tabs = [b for b in demo.blocks.values() if isinstance(b, gr.Tab)]
    assert len(tabs) >= 8
    for tab in tabs:
        labels = list(fields(tab))
        assert labels and len(labels) == len(set(labels)), (tab.label, sorted(l for l in labels if labels.count(l) > 1))


def test_the_form_opens_on_the_cpu_demo_preset(app):
    form = Form(app)
    assert "the cpu-demo preset" in form.notes
    assert form[text.MODEL] == "demo"
    assert form[text.METHOD] == text.METHOD_CHOICES[1]          # the preset trains the whole tiny model
    assert form[text.PRECISION] == text.PRECISION_CHOICES[2]    # fp32 on the CPU
    assert form[text.SOURCE] == text.SOURCE_CHOICES[0]
    assert form["Training steps"] == 200 and form["Completions per prompt (k)"] == 8
    ticked = {row[1]: row for row in form[text.BUILTIN_TABLE]["data"] if row[0]}
    assert set(ticked) == {"numeric_answer", "think_format", "think_length"}
    assert json.loads(ticked["think_length"][3]) == {"min_tokens": 3, "max_tokens": 16, "missing_close_penalty": -1.0}


def test_show_config_turns_the_form_into_the_preset_config(app, runs_dir):
    form = Form(app)
    problems, command, config_text = form.call("/show_config")
    assert problems == ""
    cfg = yaml.safe_load(config_text)
    assert "lora" not in cfg  # full fine-tuning, as in the preset
    assert cfg["model"]["dtype"] == "float32" and cfg["data"]["test_split"] == "test"
    assert cfg["rloo"]["lr_scheduler_type"] == "constant"  # a preset key no widget shows is kept
    assert cfg["rloo"]["learning_rate"] == pytest.approx(3e-4) and cfg["rloo"]["max_steps"] == 200
    assert [r["name"] for r in cfg["rewards"]] == ["numeric_answer", "think_format", "think_length"]
    assert cfg["output"]["runs_dir"] == str(runs_dir.resolve())
    assert command.startswith("rloo-studio train ") and command.split()[-1].endswith("draft-config.yaml")


def test_lora_and_precision_choices_reach_the_config(app):
    form = Form(app)
    form[text.METHOD] = text.METHOD_CHOICES[0]
    form[text.LORA_R] = 8
    form[text.LORA_TARGETS] = "q_proj, v_proj"
    cfg = yaml.safe_load(form.call("/show_config")[2])
    assert cfg["lora"] == {"r": 8, "alpha": 32, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    form[text.METHOD] = text.METHOD_CHOICES[1]
    form[text.PRECISION] = text.PRECISION_CHOICES[0]
    problems = form.call("/show_config")[0]
    # Once (the config check's problem), in the page's words: what to choose, not which section to add.
    assert problems.count("4-bit weights cannot be trained directly") == 1
    assert f"choose “{text.METHOD_CHOICES[0]}” under “{text.METHOD}”" in problems and "load_in_4bit" not in problems


def test_start_refuses_a_form_with_problems_and_starts_nothing(app, runs_dir):
    before = run_folders(runs_dir)
    form = Form(app)
    table = form[text.BUILTIN_TABLE]
    table["data"] = [[False] + row[1:] for row in table["data"]]  # no reward ticked
    form[text.BUILTIN_TABLE] = table
    form["Batch per device (completions)"] = 12  # not a multiple of 8 completions per prompt
    problems = form.call("/start_training")[0]
    assert problems.count("Rewards: none chosen") == 1
    # Once, in the page's words: the config's own check ("rewards: no reward functions; add at least one (e.g. `- {name:
    # numeric_answer}`)") said it again below, in YAML (a walk).
    assert "no reward functions" not in problems and "{name:" not in problems, problems
    # In the page's words, with values to use; the config keys stay on the command line.
    assert "“Batch per device (completions)” 12 is not divisible by “Completions per prompt (k)” 8" in problems and "use 8 or 16" in problems
    assert "per_device_train_batch_size" not in problems and "num_generations" not in problems
    assert run_folders(runs_dir) == before


def test_bad_reward_parameters_are_reported_by_name(app):
    form = Form(app)
    table = form[text.BUILTIN_TABLE]
    for row in table["data"]:
        if row[1] == "think_length":
            row[3] = "{min_tokens: 3"
    form[text.BUILTIN_TABLE] = table
    problems = form.call("/show_config")[0]
    assert "the parameters of `think_length` are not a JSON object" in problems


def test_preview_of_the_demo_data(app):
    form = Form(app)
    summary, table, prompt_column, answer_column = form.call("/preview_data")
    assert "**2000 training rows**, 300 held out" in summary and "✅ Ready to train." in summary
    assert table["headers"] == ["prompt", "answer", "kind"] and len(table["data"]) == 20


def test_uploaded_csv_is_stored_safely_and_previewed(app, tmp_path, runs_dir):
    csv_file = tmp_path / "my data.csv"
    csv_file.write_text("question,solution\nWhat is 2+2?,4\nWhat is 3+5?,8\n", encoding="utf-8")
    stored = app.predict(handle_file(str(csv_file)), api_name="/upload_data")
    assert stored == str((runs_dir / ".studio" / "uploads" / "my_data.csv").resolve())
    form = Form(app)
    form[text.SOURCE] = text.SOURCE_CHOICES[1]
    form[text.LOCAL_PATH] = stored
    summary, table, prompt_column, answer_column = form.call("/preview_data")
    assert "**2 rows** in the data" in summary  # the demo's split name is no split of this file: not split yet (said below)
    # The preset's columns are not in this file: likely ones are chosen, and the summary says so.
    assert f"“{text.PROMPT_COLUMN}” was `prompt`, which this data does not have" in summary and "it is now `question`" in summary
    assert f"“{text.ANSWER_COLUMN}” was `answer`" in summary and "it is now `solution` (numeric_answer compare" in summary
    assert table["headers"] == ["question", "solution"]
    assert prompt_column["value"] == "question" and answer_column["value"] == "solution"
    form[text.PROMPT_COLUMN] = "question"
    form[text.ANSWER_COLUMN] = "solution"
    form[text.TEST_SPLIT] = ""
    summary, *_ = form.call("/preview_data")
    assert "✅ Ready to train." in summary
    cfg = yaml.safe_load(form.call("/show_config")[2])
    assert cfg["data"]["source"] == stored and cfg["data"]["prompt_column"] == "question"
    assert cfg["rewards"][0] == {"name": "numeric_answer", "weight": 1.0, "params": {"answer_column": "solution"}}


def test_a_missing_local_file_is_explained(app):
    form = Form(app)
    form[text.SOURCE] = text.SOURCE_CHOICES[1]
    form[text.LOCAL_PATH] = "/nowhere/data.jsonl"
    summary, *_ = form.call("/preview_data")
    assert "data file not found: /nowhere/data.jsonl" in summary


def test_reward_code_is_checked_in_a_child_process(app):
    empty = {"headers": ["use", "function", "weight"], "data": []}
    good = "def brevity(completions, **kwargs):\n    return [1.0 for _ in completions]\n"
    message, found = app.predict(good, empty, api_name="/check_rewards")
    assert "1 function found: `brevity`" in message
    # The table the page merges with its own (its ticks made meanwhile kept: rewards_tab.MERGE_FUNCTIONS_JS).
    assert found["rows"] == [[False, "brevity", 1.0]]
    message, _ = app.predict("def broken(completions, **kwargs):\n    return [1.0\n", empty, api_name="/check_rewards")
    assert "syntax error at rewards.py:2" in message
    message, _ = app.predict("import sys\nsys.exit(3)\ndef r(completions, **kwargs):\n    return []\n", empty, api_name="/check_rewards")
    assert "SystemExit" in message and "rewards.py:2" in message
    assert app.predict(api_name="/list_runs")  # the app itself is still there after the code called sys.exit


def test_an_unknown_preset_is_refused_with_the_known_ones(app):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="nope is not in the list of choices.*cpu-demo"):
        app.predict("nope", *Form(app).values, api_name="/apply_preset")


def test_delete_needs_the_confirmation(app, runs_dir):
    from rloo_studio import runs

    run_dir = runs.create_run_dir(runs_dir, "old")
    runs.update_status(run_dir, state="finished", step=3, max_steps=3, started_at=1.0)
    app.predict(api_name="/list_runs")
    message = app.predict(run_dir.name, False, api_name="/delete_run")[0]
    assert "Tick" in message and run_dir.exists()
    message = app.predict(run_dir.name, True, api_name="/delete_run")[0]
    assert message == f"Deleted run `{run_dir.name}`." and not run_dir.exists()


def _gpu(gb: float):
    from rloo_studio.machine.hardware import Gpu, Hardware

    return Hardware(gpus=[Gpu(index=0, name="Test GPU", total_gb=gb, free_gb=gb, capability="8.9", bf16=True)], cpu_cores=8, ram_gb=32)


def test_a_gpu_gets_the_largest_preset_that_fits_and_a_live_estimate(tmp_path):
    with served_app(tmp_path / "runs", known_hardware=_gpu(15.6)) as url:
        form = Form(connect(url))
        assert "Test GPU" in form.device
        assert "the gpu-16gb preset — the largest preset that fits your 16 GB GPU" in form.notes
        assert form[text.MODEL] == "Qwen/Qwen2.5-7B-Instruct" and form[text.PRECISION] == text.PRECISION_CHOICES[0]
        estimate = form.call("/estimate")
        assert "— fits** on Test GPU (15.6 GB)" in estimate and "| writing the completions (KV cache) |" in estimate


def test_without_a_gpu_the_estimate_is_held_against_ram_and_shrink_to_fit_fits_it(tmp_path):
    from rloo_studio.machine.hardware import Hardware

    with served_app(tmp_path / "runs", known_hardware=Hardware(gpus=[], cpu_cores=2, ram_gb=24.0)) as url:
        form = Form(connect(url))
        form[text.MODEL] = "HuggingFaceTB/SmolLM2-135M-Instruct"
        form["Batch per device (completions)"] = 512
        estimate = form.call("/estimate")
        assert "**Estimated peak memory:" in estimate and "— more than** this computer's RAM (24.0 GiB)" in estimate, estimate
        assert "no GPU here: training runs on the CPU, in RAM" in estimate and "Shrink to fit" in estimate
        assert "| Python, PyTorch and the libraries |" in estimate and "CUDA" not in estimate
        message, *new_values = form.call("/shrink_to_fit")
        assert "“Batch per device (completions)” to " in message and "now fits" in message, message
        assert "load_in_4bit" not in message  # 4-bit weights are slower on a CPU and small next to the activations


def test_an_oversized_config_is_stopped_and_shrink_to_fit_proposes_one_that_fits(tmp_path):
    runs_dir = tmp_path / "runs"  # an app of its own (another GPU), so a folder of its own
    with served_app(runs_dir, known_hardware=_gpu(8)) as url:
        client = connect(url)
        form = Form(client)
        assert "gpu-8gb" in form.notes
        form[text.MODEL] = "Qwen/Qwen3-4B"
        form[text.PRECISION] = text.PRECISION_CHOICES[1]   # 16-bit weights: 7.5 GiB alone
        form["Max completion length (tokens)"] = 1024
        assert "— exceeds** on Test GPU" in form.call("/estimate")
        refused = form.call("/start_training")[0]
        assert "This will not fit Test GPU (8.0 GB)" in refused and "Shrink to fit" in refused
        assert not runs_dir.exists() or not [p for p in runs_dir.iterdir() if p.name != ".studio"]

        message, *new_values = form.call("/shrink_to_fit")
        assert f"“{text.PRECISION}” to “{text.PRECISION_CHOICES[0]}”" in message and "now fits" in message
        form.values = new_values
        assert form[text.PRECISION] == text.PRECISION_CHOICES[0]
        assert "— fits** on Test GPU" in form.call("/estimate")


def test_a_local_judge_is_in_the_estimate_and_start_says_when_its_copy_does_not_fit(tmp_path):
    with served_app(tmp_path / "runs", known_hardware=_gpu(15.6)) as url:
        form = Form(connect(url))
        assert "— fits** on Test GPU" in form.call("/estimate")
        form[text.JUDGE_USE] = True
        form[text.JUDGE_RUBRIC] = "The answer is correct."
        estimate = form.call("/estimate")  # the run's base model as judge: a second, 4-bit copy of the 7B model
        assert "| judge model weights (Qwen/Qwen2.5-7B-Instruct) |" in estimate
        assert "— tight** on Test GPU" in estimate and "the judge's weights are what make this tight" in estimate
        form[text.JUDGE_SOURCE] = text.JUDGE_FOLDER_CHOICE
        form[text.JUDGE_FOLDER] = "Qwen/Qwen3-14B"  # 9.2 GiB in 4-bit beside the policy: too much
        estimate = form.call("/estimate")
        assert "| judge model weights (Qwen/Qwen3-14B) |" in estimate and "— exceeds** on Test GPU" in estimate
        refused = form.call("/start_training")[0]
        assert "This will not fit Test GPU (15.6 GB)" in refused and "the LLM judge's own copy of its weights included" in refused
        assert f"“{text.JUDGE_SERVER_CHOICE}” (Rewards tab)" in refused


def test_start_refuses_reward_code_that_the_lint_flags(app, runs_dir):
    before = run_folders(runs_dir)
    form = Form(app)
    form[text.CODE] = "def brief(completions, **kwargs):\n    return [1.0 if lenn(c) < 9 else 0.0 for c in completions]\n"
    form[text.USER_TABLE] = {"headers": ["use", "function", "weight"], "data": [[True, "brief", 1.0]]}
    problems = form.call("/start_training")[0]
    assert "`lenn` is not defined (in brief)" in problems and text.CODE in problems
    assert run_folders(runs_dir) == before
    form[text.CODE] = "def brief(completions, **kwargs):\n    return [1.0 if len(c) < 9 else 0.0 for c in completions\n"
    assert "syntax error at line 2" in form.call("/show_config")[0]

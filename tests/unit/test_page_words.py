"""Problems written in config words reach the page in its own labels, with a value to use; the CLI keeps config words."""

from __future__ import annotations

from rloo_studio.config import RunConfig
from rloo_studio.ui import text
from rloo_studio.ui.text import CONFIG_LABELS, page_words


def test_the_batch_problem_names_the_page_fields_and_values_to_use():
    problems = RunConfig.from_dict({"rloo": {"num_generations": 8, "per_device_train_batch_size": 100}}).validate()
    cli = [p for p in problems if "not divisible" in p]
    assert cli and "num_generations 8" in cli[0]  # the command line keeps the config's words
    page = page_words(cli[0])
    assert page.startswith("“Batch per device (completions)” 100 is not divisible by “Completions per prompt (k)” 8:")
    assert page.endswith("use 96 or 104") and "num_generations" not in page


def test_config_keys_and_cli_flags_become_labels():
    assert page_words("set data.prompt_column to the column that holds the prompts") == \
        f"set “{text.PROMPT_COLUMN}” to the column that holds the prompts"
    assert page_words("rloo.max_steps: 0 trains nothing") == "“Training steps”: 0 trains nothing"
    assert "the Export tab's Format “merged”" in page_words("export it with --format merged (a copy)")
    assert text.ANSWER_COLUMN in page_words("the dataset has no column `answer` — set params.answer_column")


def test_file_names_that_look_like_keys_are_left_alone():
    assert page_words("data file not found: /nowhere/data.jsonl") == "data file not found: /nowhere/data.jsonl"
    assert page_words("see data.jsonl") == "see data.jsonl"


def test_fields_that_mean_the_same_share_one_help_line_with_the_config():
    """The page's help under LoRA rank, alpha, sequence length, checkpointing, prompt column and system prompt is the
    config's own field help: one text per field, not two that drift apart."""
    from rloo_studio.config import field_help
    from rloo_studio.ui import text

    shared = {text.LORA_R_INFO: ("lora", "r"), text.LORA_ALPHA_INFO: ("lora", "alpha"),
              text.MAX_SEQ_INFO: ("model", "max_seq_length"), text.GRAD_CKPT_INFO: ("model", "gradient_checkpointing"),
              text.PROMPT_COLUMN_INFO: ("data", "prompt_column"), text.SYSTEM_PROMPT_INFO: ("data", "system_prompt"),
              # RLOO switches dropout off (disable_dropout): the field said 0.1 while training ran with 0.
              text.LORA_DROPOUT_INFO: ("lora", "dropout")}
    for shown, (section, name) in shared.items():
        assert shown == field_help(section, name)
        assert "`" not in shown  # page words: no config syntax


def test_the_4bit_problem_says_what_to_choose_on_the_page():
    """The config check's 4-bit-without-LoRA problem: config words on the command line, the page's choices on the page."""
    cli = RunConfig.from_dict({"model": {"load_in_4bit": True}}).validate()
    cli = [p for p in cli if p.startswith("model.load_in_4bit:")]
    assert len(cli) == 1 and "add a `lora:` section" in cli[0]
    page = page_words(cli[0])
    assert page.startswith(f"“{text.PRECISION}”: 4-bit weights cannot be trained directly")
    assert f"choose “{text.METHOD_CHOICES[0]}” under “{text.METHOD}”" in page
    assert "lora:" not in page and "load_in_4bit" not in page and "`" not in page


def test_the_estimate_notes_4bit_without_lora_in_page_words():
    from rloo_studio.ui.model_tab import estimate_markdown
    from rloo_studio.machine.vram import KNOWN_MODELS, Settings, estimate

    for device_gib, device in ((16, "Test GPU"), (None, None)):  # with a GPU, and on a CPU (no memory breakdown there)
        est = estimate(KNOWN_MODELS["Qwen/Qwen3-0.6B"], Settings(load_in_4bit=True, lora_r=None), device_gib=device_gib)
        shown = estimate_markdown(est, device)
        assert f"\n\n⛔ “{text.PRECISION}”: 4-bit weights cannot be trained directly; choose “{text.METHOD_CHOICES[0]}” under " \
               f"“{text.METHOD}”" in shown and "load_in_4bit" not in shown, shown  # the same line with and without a GPU
    fine = estimate_markdown(estimate(KNOWN_MODELS["Qwen/Qwen3-0.6B"], Settings(load_in_4bit=True, lora_r=16)), None)
    assert "⛔" not in fine and text.METHOD not in fine


def test_a_config_fields_label_is_written_once_in_the_config():
    """The form's label for a config field comes from `config.field_label`: ui/text.py holds no copy of one, so the page
    and the messages in page words (CONFIG_LABELS) cannot drift apart."""
    import ast

    from rloo_studio.config import field_labels
    from rloo_studio.paths import PROJECT_ROOT

    source = (PROJECT_ROOT / "rloo_studio" / "ui" / "text.py").read_text(encoding="utf-8")
    literals = {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    labels = field_labels()
    assert not literals & set(labels.values()), literals & set(labels.values())
    assert all(CONFIG_LABELS[key] == label for key, label in labels.items())
    assert text.LORA_R == labels["lora.r"] and text.RLOO_FIELDS["num_generations"][0] == labels["rloo.num_generations"]


def test_an_emptied_model_tab_number_is_said_not_replaced_by_a_default():
    """A cleared LoRA rank ran with r = 16 while the field showed nothing; the Train tab already said "is empty"."""
    from rloo_studio.ui.model_tab import ModelTab

    lora = text.METHOD_CHOICES[0]
    values = ["demo", text.PRECISION_CHOICES[1], lora, None, 32, 0.0, "all-linear", 512, "auto", True, "auto"]
    assert ModelTab.apply({}, values) == [f"Model: “{text.LORA_R}” is empty"]
    full = [*values[:2], text.METHOD_CHOICES[1], None, None, None, *values[6:]]
    assert ModelTab.apply({}, full) == []  # the LoRA fields do not count without LoRA
    filled = {}
    assert ModelTab.apply(filled, [*values[:3], 8, *values[4:]]) == [] and filled["lora"]["r"] == 8


def test_the_presets_what_to_train_line_follows_the_forms_choice():
    """After the demo's preset, a person who chose LoRA read "What to train: Full fine-tuning (tiny models only) — every
    weight is trained" above a form that said LoRA (walked in Chromium, 2026-12-04)."""
    from rloo_studio.config import RunConfig
    from rloo_studio.ui.model_tab import method_note, with_method

    notes = f"The form shows the cpu-demo preset.\n\n{method_note(RunConfig())}\n\nmore"
    assert f"**{text.METHOD}: {text.METHOD_CHOICES[1]}**" in notes
    lora = with_method(notes, True, 8)
    assert f"**{text.METHOD}: {text.METHOD_CHOICES[0]}**" in lora and "(LoRA rank 8)" in lora
    assert text.METHOD_CHOICES[1] not in lora.split("\n\n")[1] and lora.endswith("\n\nmore")
    assert with_method(lora, False, 8) == notes and with_method("no such line", True, 8) == "no such line"

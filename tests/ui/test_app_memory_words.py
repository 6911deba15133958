"""The memory estimate, Shrink to fit and the Train tab's optimiser line in the page's own words (issue 38): a person
reads plain labels, with the technical name after them in brackets or behind the "details" fold; Shrink to fit says
when the settings already fit, with the numbers."""

from __future__ import annotations

import re

from helpers.app import Form, connect, served_app
from rloo_studio.ui import text

# The estimator's and the trainer's own names: on the page only in brackets after a plain label, or behind "details".
TECHNICAL = ("KV cache", "activations", "logits", "allocator slack", "CUDA context", "gradient accumulation", "per-device",
             "trainable parameters", "LoRA parameters", "optimizer", "adamw", "paged_adamw", "weight decay", "gradient_checkpointing",
             "load_in_4bit")
CONFIG_KEY = re.compile(r"\b(?:rloo|model|lora|data)\.[a-z_]+")


def _cpu():
    from rloo_studio.machine.hardware import Hardware

    return Hardware(gpus=[], cpu_cores=2, ram_gb=24.0)


def _gpu(gb: float):
    from rloo_studio.machine.hardware import Gpu, Hardware

    return Hardware(gpus=[Gpu(index=0, name="Test GPU", total_gb=gb, free_gb=gb, capability="8.9", bf16=True)], cpu_cores=8, ram_gb=32)


def outside_brackets_and_details(markdown: str) -> str:
    """What a person reads without opening the fold: the text before "<details>", with every bracketed name taken out."""
    shown = markdown.split("<details>")[0]
    return re.sub(r"\([^()]*\)", "", shown)


def jargon(markdown: str) -> list[str]:
    shown = outside_brackets_and_details(markdown)
    return [word for word in TECHNICAL if word.lower() in shown.lower()] + CONFIG_KEY.findall(shown)


def test_shrink_to_fit_says_the_settings_already_fit_with_the_numbers(tmp_path):
    """Shrink to fit on settings that fit said nothing of it: the estimate came back as if nothing had been pressed."""
    with served_app(tmp_path / "cpu", known_hardware=_cpu()) as url:
        form = Form(connect(url))
        peak = re.search(r"Estimated peak memory: ([\d.]+) GiB — fits", form.call("/estimate")).group(1)
        message, *values = form.call("/shrink_to_fit")
        assert f"Nothing to shrink: these settings already fit — about {peak} GiB of 24.0 GiB" in message, message
        assert "this computer's memory" in message and values == form.values
    with served_app(tmp_path / "gpu", known_hardware=_gpu(15.6)) as url:
        form = Form(connect(url))
        peak = re.search(r"Estimated peak GPU memory: ([\d.]+) GiB — fits", form.call("/estimate")).group(1)
        message, *values = form.call("/shrink_to_fit")
        assert f"Nothing to shrink: these settings already fit — about {peak} GiB of 15.6 GiB on Test GPU" in message, message


def test_the_memory_table_and_shrink_to_fit_speak_in_the_pages_words(tmp_path):
    with served_app(tmp_path / "runs", known_hardware=_gpu(8)) as url:
        form = Form(connect(url))
        form[text.MODEL] = "Qwen/Qwen3-4B"
        form[text.PRECISION] = text.PRECISION_CHOICES[1]  # 16-bit weights: does not fit 8 GB
        estimate = form.call("/estimate")
        assert "— exceeds** on Test GPU" in estimate
        assert jargon(estimate) == [], estimate
        # Each part under a plain label with the estimator's name after it; the estimator's own lines behind the fold.
        assert "| writing the completions (KV cache) |" in estimate and "| the model itself (weights) |" in estimate
        assert "LoRA parameters, gradients, optimizer" in estimate.split("<details>")[1]
        message, *values = form.call("/shrink_to_fit")
        assert "now fits" in message and jargon(message) == [], message
        assert f"“{text.PRECISION}” to “{text.PRECISION_CHOICES[0]}”" in message, message


def test_on_a_cpu_the_estimates_advice_names_the_pages_fields(tmp_path):
    with served_app(tmp_path / "runs", known_hardware=_cpu()) as url:
        form = Form(connect(url))
        form[text.MODEL] = "HuggingFaceTB/SmolLM2-135M-Instruct"
        form["Batch per device (completions)"] = 512
        estimate = form.call("/estimate")
        assert "— more than** this computer's RAM" in estimate and jargon(estimate) == [], estimate
        assert "“Batch per device (completions)”" in estimate.split("<details>")[0]
        message, *values = form.call("/shrink_to_fit")
        assert "now fits" in message and jargon(message) == [], message


def test_the_train_tabs_optimiser_line_says_it_in_words_with_the_name_in_brackets():
    from rloo_studio.ui.train_tab import batch_summary

    line = batch_summary(8, 8, 1, {"config": {"rloo": {"optim": "paged_adamw_8bit", "weight_decay": 0.1}}, "base_dir": "."})
    assert jargon(line) == [], line
    shown = line.split("<details>")[0]
    assert "(paged_adamw_8bit)" in shown and "8 bits" in shown and "(weight decay 0.1)" in shown, shown
    assert "Optimiser paged_adamw_8bit, weight decay 0.1" in line.split("<details>")[1]  # the trainer's own names, folded
    plain = batch_summary(4, 4, 1)
    assert jargon(plain) == [] and "(adamw_torch_fused)" in plain and "(linear schedule)" in plain, plain


def test_the_adapters_rank_is_named_as_its_size():
    from rloo_studio.config import RunConfig
    from rloo_studio.ui.model_tab import method_note

    note = method_note(RunConfig.from_dict({"lora": {"r": 16}}))
    assert "the adapter's size (LoRA rank 16)" in note and "(rank 16)" not in note, note


def test_estimate_times_trainer_lines_go_behind_the_fold():
    """Estimate time's answer listed "as the trial's trainer ran it: … Optimiser adamw_torch_fused, …" and "the trainer
    used fp16 = True" among the plain lines."""
    from rloo_studio.batching import effective_line
    from rloo_studio.config import RunConfig
    from rloo_studio.ui.train_tab import time_markdown
    from rloo_studio.workers.trial import Measurement

    m = Measurement(trial_steps=2, timed_steps=1, seconds_per_step=10.0, load_s=20.0, warmup_s=10.0, run_steps=40, run_s=420.0,
                    epochs=2.0, train_rows=30, new_prompts_per_step=1.5, peak_gpu_gib=None, peak_rss_gib=1.8,
                    trainer_line=effective_line(RunConfig().effective_rloo()), trainer_changed={"fp16": [False, True]},
                    trial_s=40.0)
    shown = time_markdown(m, minutes=10)
    assert jargon(shown) == [] and "fp16" not in shown.split("<details>")[0], shown
    folded = shown.split("<details>")[1]
    assert "as the trial's trainer ran it:" in folded and "Optimiser adamw_torch_fused" in folded
    assert "the trainer used fp16 = True, not the False the settings give" in folded
    assert "peak memory of the training process: 1.80 GiB" in shown.split("<details>")[0]
    assert "the trainer used a value other than the settings give for 1 of its arguments" in shown.split("<details>")[0]

"""The cpu-small-real preset: a real instruct model on a CPU, with its data shipped in assets/."""

from __future__ import annotations

import json
import re

from rloo_studio.presets import PRESETS_DIR, get_preset, list_presets, recommend

ROOT = PRESETS_DIR.parent


def test_the_preset_names_the_hub_model_and_ships_its_data():
    preset = get_preset("cpu-small-real")
    cfg = preset.load()
    assert cfg.model.name_or_path == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert preset.tier_gb is None and "rloo-studio train presets/cpu-small-real.yaml" in preset.notes
    train, test = cfg.resolve_path(cfg.data.source), cfg.resolve_path(cfg.data.test_split)
    train_rows = [json.loads(line) for line in train.read_text().splitlines()]
    test_rows = [json.loads(line) for line in test.read_text().splitlines()]
    assert len(train_rows) == 490 and len(test_rows) == 210
    assert all(set(r) == {"prompt", "answer"} for r in train_rows + test_rows)
    # Held-out sums are asked about pairs of digits never seen in training.
    pairs = lambda rows: {tuple(re.findall(r"\d+", r["prompt"])) for r in rows}  # noqa: E731
    assert {len(p) for p in pairs(train_rows) | pairs(test_rows)} == {2} and len(pairs(test_rows)) == 30
    assert not pairs(train_rows) & pairs(test_rows)
    assert [r.name for r in cfg.rewards] == ["numeric_answer", "exact_match"]


def test_the_cpu_demo_stays_the_default_without_a_gpu():
    presets = list_presets()
    assert presets[0].name == "cpu-demo" and "cpu-small-real" in [p.name for p in presets]
    assert recommend(presets, None).name == "cpu-demo"


def test_the_preset_model_has_a_memory_estimate_offline():
    from rloo_studio.machine.vram import estimate_config, find_shape

    shape = find_shape("HuggingFaceTB/SmolLM2-135M-Instruct", allow_download=False)
    assert shape is not None and (shape.vocab_size, shape.hidden_size, shape.num_layers) == (49152, 576, 30)
    assert abs(shape.params - 134_515_008) / 134_515_008 < 0.001  # the model's parameter count
    assert estimate_config(get_preset("cpu-small-real").load(), device_gib=8) is not None


def test_the_preset_shows_the_gain_and_time_its_benchmark_measured():
    """The app lists presets by their title line: its numbers are the committed benchmark's."""
    result = json.loads((ROOT / "benchmarks" / "results" / "real_model_learning.json").read_text())
    assert result["meets_target"] and result["intervals_separated"]
    title = get_preset("cpu-small-real").title
    assert f"+{round(result['gain_points'])} points" in title and f"{round(result['minutes'])} min" in title

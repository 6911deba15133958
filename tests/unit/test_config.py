"""Unit tests for rloo_studio.config: building, loading, saving, overriding and validating a RunConfig."""

import pytest

from rloo_studio.config import (
    LoraConfig,
    RewardSpec,
    RunConfig,
    apply_overrides,
    field_help,
)
from rloo_studio.errors import ConfigError

# A small but complete config that validates cleanly.
GOOD = {
    "model": {"name_or_path": "Qwen/Qwen3-0.6B", "max_seq_length": 512},
    "lora": {"r": 8, "alpha": 16},
    "data": {"source": "data.jsonl", "prompt_column": "question"},
    "rewards": [{"name": "numeric_answer", "weight": 1.0}, {"file": "rewards.py", "function": "short", "weight": 0.5}],
    "rloo": {"num_generations": 4, "per_device_train_batch_size": 8, "learning_rate": 1e-4, "max_steps": 10},
    "output": {"runs_dir": "runs", "samples_per_step": 1},
}

# A stand-in for the keys trl.RLOOConfig accepts, with their defaults.
RLOO_FIELDS = {
    "num_generations": 2, "per_device_train_batch_size": 8, "learning_rate": 1e-6, "max_steps": -1,
    "max_completion_length": 256, "logging_steps": 10, "report_to": "all", "save_steps": 500, "seed": 42,
    "beta": 0.05, "gradient_accumulation_steps": 1, "steps_per_generation": None, "generation_batch_size": None,
    "output_dir": None, "logging_dir": None, "reward_weights": None, "temperature": 1.0,
}


def cfg_with(**sections) -> RunConfig:
    data = {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v) for k, v in GOOD.items()}
    for key, value in sections.items():
        if value is None:
            data.pop(key, None)
        elif isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return RunConfig.from_dict(data)


def config_error(data) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict(data)
    return info.value


# ------------------------------------------------------------------------------ from_dict


def test_from_dict_builds_sections_and_specs():
    cfg = RunConfig.from_dict(GOOD, base_dir="/some/where")
    assert cfg.model.name_or_path == "Qwen/Qwen3-0.6B"
    assert cfg.model.max_seq_length == 512
    assert cfg.model.backend == "auto"  # default kept
    assert cfg.lora == LoraConfig(r=8, alpha=16)
    assert cfg.data.prompt_column == "question"
    assert cfg.rewards == [RewardSpec(name="numeric_answer", weight=1.0),
                           RewardSpec(file="rewards.py", function="short", weight=0.5)]
    assert cfg.rloo["num_generations"] == 4
    assert cfg.base_dir == "/some/where"
    assert cfg.validate(RLOO_FIELDS) == []


def test_from_dict_reward_shorthand_string_is_builtin_name():
    cfg = cfg_with(rewards=["think_format", {"name": "numeric_answer", "weight": 2}])
    assert cfg.rewards[0] == RewardSpec(name="think_format")
    assert cfg.rewards[1].weight == 2


def test_from_dict_reports_every_unknown_key_at_once_with_did_you_mean():
    err = config_error({
        "modle": {"name_or_path": "x"},
        "model": {"name_or_pth": "x", "backend": "auto"},
        "lora": {"rank": 8},
        "data": {"prompt_colum": "q"},
        "rewards": [{"nmae": "numeric_answer"}],
        "output": {"run_dir": "runs"},
    })
    problems = err.problems
    assert len(problems) == 6, problems
    joined = "\n".join(problems)
    assert "modle: unknown key — did you mean `model`?" in joined
    assert "model.name_or_pth: unknown key — did you mean `name_or_path`?" in joined
    assert "data.prompt_colum: unknown key — did you mean `prompt_column`?" in joined
    assert "rewards[0].nmae: unknown key — did you mean `name`?" in joined
    assert "output.run_dir: unknown key — did you mean `runs_dir`?" in joined
    # `rank` is not close to any LoRA key: no guess, but the known keys are listed.
    lora = next(p for p in problems if p.startswith("lora.rank"))
    assert "did you mean" not in lora
    assert "(known: r, alpha, dropout, target_modules)" in lora
    # The message counts them and says what to do.
    assert "has 6 problems" in err.what
    assert "What to do:" in err.message()


def test_from_dict_reports_wrong_types():
    err = config_error({
        "model": {"max_seq_length": "long", "load_in_4bit": "yes"},
        "lora": {"dropout": "none"},
        "data": {"test_fraction": True},
        "rewards": [{"name": "numeric_answer", "weight": "heavy"}, 5],
        "output": {"samples_per_step": 1.5},
    })
    joined = "\n".join(err.problems)
    assert "model.max_seq_length: 'long' has the wrong type (expected int)" in joined
    assert "model.load_in_4bit: 'yes' has the wrong type (expected bool)" in joined
    assert "lora.dropout: 'none' has the wrong type (expected float)" in joined
    assert "data.test_fraction: True has the wrong type (expected float)" in joined
    assert "rewards[0].weight: 'heavy' has the wrong type (expected float)" in joined
    assert "rewards[1]: expected a mapping like {name: numeric_answer}, got 5" in joined
    assert "output.samples_per_step: 1.5 has the wrong type (expected int)" in joined
    assert len(err.problems) == 7


def test_from_dict_optional_fields_accept_none_and_their_type():
    cfg = cfg_with(data={"system_prompt": None, "max_train_samples": 5, "test_split": "test"})
    assert cfg.data.system_prompt is None
    assert cfg.data.max_train_samples == 5
    err = config_error({**GOOD, "data": {"max_train_samples": "all"}})
    assert err.problems == ["data.max_train_samples: 'all' has the wrong type (expected int or null)"]


def test_from_dict_sections_must_be_mappings_and_rewards_a_list():
    err = config_error({"model": "Qwen/Qwen3-0.6B", "rewards": {"name": "numeric_answer"}, "rloo": [1, 2]})
    assert err.problems == [
        "model: expected a mapping of settings, got str",
        "rewards: expected a list of rewards, got dict",
        "rloo: expected a mapping of RLOOConfig options, got list",
    ]


def test_from_dict_refuses_non_mapping_top_level():
    err = config_error(["model", "data"])
    assert len(err.problems) == 1
    assert "expected a mapping of sections" in err.problems[0]
    assert "got list" in err.problems[0]


def test_exponent_strings_in_rloo_become_floats():
    cfg = cfg_with(rloo={"learning_rate": "5e-5", "beta": "1E-3", "weight_decay": "+2.5e-2", "report_to": "none",
                         "run_name": "1e5x"})
    assert cfg.rloo["learning_rate"] == 5e-5 and isinstance(cfg.rloo["learning_rate"], float)
    assert cfg.rloo["beta"] == 1e-3
    assert cfg.rloo["weight_decay"] == 0.025
    assert cfg.rloo["report_to"] == "none"  # other strings stay strings
    assert cfg.rloo["run_name"] == "1e5x"


def test_lora_absent_or_false_means_full_fine_tuning_and_empty_means_defaults():
    assert cfg_with(lora=None).lora is None
    assert RunConfig.from_dict({"lora": False}).lora is None  # explicit full fine-tuning
    # An empty `lora:` (everything commented out) is LoRA with defaults, never silent full fine-tuning.
    assert RunConfig.from_dict({"lora": None}).lora == LoraConfig()
    cfg = RunConfig.from_dict({"lora": {}})
    assert cfg.lora == LoraConfig()
    assert (cfg.lora.r, cfg.lora.alpha, cfg.lora.dropout, cfg.lora.target_modules) == (16, 32, 0.0, "all-linear")
    # to_dict leaves the lora section out when there is none.
    assert "lora" not in cfg_with(lora=None).to_dict()


# ------------------------------------------------------------------------------ load / save


def test_load_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert info.value.problems == [f"no such file: {path}"]
    assert str(path) in info.value.what


def test_load_malformed_yaml_names_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model:\n  name_or_path: demo\ndata:\n  source: [unclosed\n  split: train\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    (problem,) = info.value.problems
    assert problem.startswith("not valid YAML at line ")
    assert "at line 5" in problem
    assert str(path) in info.value.what


def test_load_non_mapping_yaml(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- model\n- data\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert "expected a mapping of sections" in info.value.problems[0]
    assert "got list" in info.value.problems[0]


def test_load_non_utf8(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes("model:\n  name_or_path: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert info.value.problems == ["the file is not UTF-8 text (byte 26 cannot be decoded): a run config is a YAML text file — "
                                   "save it as UTF-8 in a text editor, or start again from a file in presets/"]


def test_save_then_load_round_trips(tmp_path):
    cfg = cfg_with(rloo={"learning_rate": "5e-5"}, data={"system_prompt": "Think first."})
    path = tmp_path / "sub" / "config.yaml"
    path.parent.mkdir()
    cfg.save(path)
    loaded = RunConfig.load(path)
    assert loaded.to_dict() == cfg.to_dict()
    assert loaded == cfg
    assert loaded.base_dir == str(path.parent.resolve())
    assert loaded.rloo["learning_rate"] == 5e-5
    # Reward specs are written compactly: no null fields, weight always present.
    assert cfg.to_dict()["rewards"] == [{"name": "numeric_answer", "weight": 1.0},
                                        {"file": "rewards.py", "function": "short", "weight": 0.5}]


def test_load_applies_overrides(tmp_path):
    path = tmp_path / "config.yaml"
    cfg_with().save(path)
    loaded = RunConfig.load(path, ["rloo.max_steps=3", "rewards.1.weight=0.25", "model.load_in_4bit=true"])
    assert loaded.rloo["max_steps"] == 3
    assert loaded.rewards[1].weight == 0.25
    assert loaded.model.load_in_4bit is True


def test_resolve_path_is_relative_to_base_dir(tmp_path):
    cfg = RunConfig.from_dict({}, base_dir=tmp_path)
    assert cfg.resolve_path("data.jsonl") == tmp_path / "data.jsonl"
    assert cfg.resolve_path("/abs/file.csv").as_posix() == "/abs/file.csv"


# ------------------------------------------------------------------------------ overrides


def test_apply_overrides_nested_list_and_yaml_values():
    data = {"model": {"name_or_path": "demo"}, "rewards": [{"name": "a"}, {"name": "b", "weight": 1.0}]}
    out = apply_overrides(data, [
        "model.max_seq_length=2048",
        "rewards.0.weight=2",
        "rloo.learning_rate=1.0e-5",
        "lora.target_modules=[q_proj, v_proj]",
        "data.system_prompt=",
        "output.run_name=a=b",
    ])
    assert out["model"] == {"name_or_path": "demo", "max_seq_length": 2048}
    assert out["rewards"][0] == {"name": "a", "weight": 2}
    assert out["rewards"][1] == {"name": "b", "weight": 1.0}
    assert out["rloo"] == {"learning_rate": 1e-5}
    assert out["lora"] == {"target_modules": ["q_proj", "v_proj"]}
    assert out["data"] == {"system_prompt": ""}
    assert out["output"] == {"run_name": "a=b"}
    # The input is not modified.
    assert data == {"model": {"name_or_path": "demo"}, "rewards": [{"name": "a"}, {"name": "b", "weight": 1.0}]}


def test_apply_overrides_reports_every_bad_override():
    data = {"model": {"name_or_path": "demo"}, "rewards": [{"name": "a"}]}
    with pytest.raises(ConfigError) as info:
        apply_overrides(data, ["rloo.max_steps", "=3", "rewards.5.weight=1", "rewards.x.weight=1",
                               "model.name_or_path.sub=1", "rloo.seed=1"])
    problems = info.value.problems
    assert problems == [
        "override 'rloo.max_steps': expected key.sub=value, e.g. rloo.max_steps=20",
        "override '=3': expected key.sub=value, e.g. rloo.max_steps=20",
        "override 'rewards.5.weight=1': rewards.5.weight does not name a setting in this config",
        "override 'rewards.x.weight=1': rewards.x.weight does not name a setting in this config",
        "override 'model.name_or_path.sub=1': model.name_or_path.sub does not name a setting in this config",
    ]
    assert "the command-line overrides has 5 problems" in info.value.what


# ------------------------------------------------------------------------------ validate


def test_validate_num_generations_below_two():
    problems = cfg_with(rloo={"num_generations": 1}).validate(RLOO_FIELDS)
    assert len(problems) == 1
    assert problems[0].startswith("rloo.num_generations: 1; RLOO needs at least 2 completions per prompt")


def test_validate_generation_batch_not_divisible():
    problems = cfg_with(rloo={"num_generations": 4, "per_device_train_batch_size": 6}).validate(RLOO_FIELDS)
    assert len(problems) == 1
    p = problems[0]
    assert "per_device_train_batch_size 6 x 1 process(es) x steps_per_generation 1 = 6" in p
    assert "not divisible by num_generations 4" in p
    assert p.endswith("— use per_device_train_batch_size 4 or 8")  # the nearest sizes that hold whole groups


def test_the_suggested_batch_sizes_hold_whole_groups_with_processes_and_accumulation():
    from rloo_studio.config import batch_sizes_around

    assert batch_sizes_around(6, 1, 4) == (4, 8)
    assert batch_sizes_around(3, 1, 8) == (0, 8)  # nothing below: only the size above
    assert batch_sizes_around(3, 2, 8) == (0, 4)  # two processes: 4 × 2 = 8 holds one group
    assert batch_sizes_around(100, 1, 8) == (96, 104)
    problems = cfg_with(rloo={"num_generations": 8, "per_device_train_batch_size": 6}).validate(RLOO_FIELDS, num_processes=2)
    assert problems[0].endswith("— use per_device_train_batch_size 4 or 8")


def test_validate_generation_batch_counts_processes_and_steps():
    cfg = cfg_with(rloo={"num_generations": 4, "per_device_train_batch_size": 3, "gradient_accumulation_steps": 2})
    problems = cfg.validate(RLOO_FIELDS, num_processes=2)
    assert problems == []  # 3 x 2 x 2 = 12, a multiple of 4
    problems = cfg.validate(RLOO_FIELDS, num_processes=1)
    assert len(problems) == 1 and "steps_per_generation 2 = 6" in problems[0]
    cfg = cfg_with(rloo={"num_generations": 4, "generation_batch_size": 10})
    (p,) = cfg.validate(RLOO_FIELDS)
    assert "(generation_batch_size = 10) is not divisible by num_generations 4" in p


def test_validate_non_positive_values():
    cfg = cfg_with(model={"max_seq_length": 0}, rloo={"max_completion_length": 0, "learning_rate": -1e-5})
    problems = cfg.validate(RLOO_FIELDS)
    assert "model.max_seq_length: 0 must be greater than 0" in problems
    assert "rloo.max_completion_length: 0 must be greater than 0" in problems
    assert "rloo.learning_rate: -1e-05 must be greater than 0" in problems
    assert len(problems) == 3


def test_validate_non_number_rloo_value():
    problems = cfg_with(rloo={"learning_rate": "fast"}).validate(RLOO_FIELDS)
    assert problems == ["rloo.learning_rate: 'fast' is not a number"]


def test_validate_unknown_rloo_key_with_fields():
    cfg = cfg_with(rloo={"num_generation": 4, "temprature": 0.7})
    problems = cfg.validate(RLOO_FIELDS)
    assert "rloo.num_generation: not an option of trl.RLOOConfig — did you mean `num_generations`?" in problems
    assert "rloo.temprature: not an option of trl.RLOOConfig — did you mean `temperature`?" in problems
    # Without the list of fields, unknown keys cannot be judged.
    assert not any("not an option" in p for p in cfg.validate(None))


def test_validate_reserved_rloo_keys():
    problems = cfg_with(rloo={"output_dir": "/tmp/x", "reward_weights": [1, 2]}).validate(RLOO_FIELDS)
    assert "rloo.output_dir: cannot be set here (checkpoints always go to <run-dir>/checkpoints)" in problems
    assert "rloo.reward_weights: cannot be set here (set `weight:` on each entry of `rewards` instead)" in problems
    assert len(problems) == 2  # reserved keys are not reported a second time as unknown


def test_validate_4bit_needs_lora():
    problems = cfg_with(lora=None, model={"load_in_4bit": True}).validate(RLOO_FIELDS)
    assert len(problems) == 1
    assert problems[0].startswith("model.load_in_4bit:")
    assert "add a `lora:` section" in problems[0]
    assert cfg_with(model={"load_in_4bit": True}).validate(RLOO_FIELDS) == []


def test_validate_reward_spec_kinds():
    cfg = cfg_with(rewards=[{"name": "numeric_answer", "file": "r.py"}, {"weight": 1.0},
                            {"file": "r.py", "params": {"a": 1}}, {"name": "x", "function": "f"}])
    problems = cfg.validate(RLOO_FIELDS)
    assert problems == [
        "rewards[0]: give exactly one of name, file, model or judge (got name, file)",
        "rewards[1]: give exactly one of name, file, model or judge (got none)",
        "rewards[2].params: only builtin rewards (`name`) and judges take params",
        "rewards[3].function: only meaningful together with `file`",
    ]


def test_validate_no_rewards():
    problems = cfg_with(rewards=[]).validate(RLOO_FIELDS)
    assert problems == ["rewards: no reward functions; add at least one (e.g. `- {name: numeric_answer}`)"]


def test_validate_reports_several_problems_together():
    cfg = cfg_with(
        model={"backend": "unslot", "dtype": "bf16"},
        lora={"dropout": 1.5, "target_modules": []},
        data={"prompt_format": "chatml", "test_fraction": 1.0},
        rewards=[],
        rloo={"num_generations": 1, "max_steps": 0, "beta": -0.1, "logging_dir": "x"},
        output={"samples_per_step": -1},
    )
    problems = cfg.validate(RLOO_FIELDS)
    expected_starts = [
        "model.backend: 'unslot' is not one of auto, unsloth, transformers — did you mean `unsloth`?",
        "model.dtype: 'bf16' is not one of",
        "lora.dropout: 1.5 is outside [0, 1)",
        "lora.target_modules: [] must be",
        "data.prompt_format: 'chatml' is not one of auto, chat, plain",
        "data.test_fraction: 1.0 is outside [0, 1)",
        "rewards: no reward functions",
        "output.samples_per_step: -1 must be 0 or more",
        "rloo.logging_dir: cannot be set here",
        "rloo.num_generations: 1;",
        "rloo.max_steps: 0 trains nothing",
        "rloo.beta: -0.1 must be 0",
    ]
    assert len(problems) == len(expected_starts), problems
    for start in expected_starts:
        assert any(p.startswith(start) for p in problems), (start, problems)


def test_rloo_value_precedence():
    cfg = cfg_with(rloo={"seed": 7})
    assert cfg.rloo_value("seed") == 7                      # the config's own value
    assert cfg.rloo_value("logging_steps", RLOO_FIELDS) == 1  # ours over TRL's 10
    assert cfg.rloo_value("temperature", RLOO_FIELDS) == 1.0  # TRL's default
    assert cfg.rloo_value("gradient_accumulation_steps") == 1  # fallback when TRL is absent


# ------------------------------------------------------------------------------ field_help


def test_field_help():
    assert field_help("lora", "r") == "LoRA rank: higher learns more, costs more memory; 16 is a good start."
    assert field_help("rewards", "weight") == "Weight of this reward in the total that RLOO optimises."
    assert "RLOOConfig" in field_help("", "rloo")
    assert field_help("data", "prompt_column").startswith("Column holding the prompt text")
    with pytest.raises(KeyError):
        field_help("model", "no_such_field")


def test_a_reward_weight_that_is_not_a_finite_number_is_refused():
    """A NaN weight (a cleared number cell) made every preview total NaN, while TRL's nansum drops that function in
    training: refused, in config words, on both roads."""
    from rloo_studio.ui.rewards_tab import _weight

    cfg = RunConfig.from_dict({"model": {"name_or_path": "demo"}, "data": {"source": "demo"},
                               "rewards": [{"name": "numeric_answer", "weight": float("nan")}]})
    assert any(p.startswith("rewards[0].weight: nan is not a finite number") for p in cfg.validate()), cfg.validate()
    problems: list[str] = []
    assert _weight(float("nan"), "numeric_answer", problems) == 1.0 and "is not a number" in problems[0]

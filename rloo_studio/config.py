"""The run configuration: dataclasses with help text, YAML load/save, overrides, validation, and the effective
value of every trainer argument (`RunConfig.effective_rloo`, `RunConfig.batch_plan`: the one place they are computed).

A `RunConfig` is everything needed to reproduce a training run. It is plain data: this module
imports only the standard library, PyYAML and the batch arithmetic (`batching`), so the UI can build and check
configs without loading torch. Checks that need other layers (which reward names exist, which keys TRL's
`RLOOConfig` accepts, which columns a dataset has) are passed in by the caller —
see `rloo_studio.engine.preflight`, which combines them so every problem is reported at once.

Over 500 lines because each field carries its help, form label and default with its reason, and validation sees
every section at once to report every problem together.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from .batching import BatchPlan, batch_plan, trained_steps_for_epochs
from .errors import ConfigError

BACKENDS = ("auto", "unsloth", "transformers")
FAST_GENERATION = ("off", "auto", "on")  # engine/fast_generation.py decides what `auto` means on the worker's device
SHARE_PREFILL = ("off", "auto", "on")    # engine/prefill.py decides what `auto` means on the worker's device
# Settings whose words are off/auto/on. YAML 1.1 reads a bare `off` or `on` (also no/yes) as a boolean: these get
# their word back instead of a "wrong type" for exactly what their help says to write.
ON_OFF_SETTINGS = {"model.fast_generation", "model.share_prefill"}
DTYPES = ("auto", "bfloat16", "float16", "float32")
PROMPT_FORMATS = ("auto", "chat", "plain")

# Values we set in trl.RLOOConfig unless the config says otherwise, each with its reason.
RLOO_DEFAULTS: dict[str, Any] = {
    # TRL logs every 10 steps by default; the live curves and metrics.jsonl want every step.
    "logging_steps": 1,
    # TRL's 1e-6 is tuned for full fine-tuning of large models; LoRA adapters need ~10x more.
    "learning_rate": 1e-5,
    # No experiment trackers: the run directory is the record, and the app works offline.
    "report_to": "none",
    "save_steps": 50,
    "max_steps": 100,
    "num_generations": 4,
    "per_device_train_batch_size": 4,
    "max_completion_length": 256,
    "seed": 42,
    # TRL's default is False. With dropout on (LoRA dropout > 0, or a model whose config has dropout), the
    # log-probabilities of the same tokens differ between the generation pass, the update and the KL
    # reference: the ratio and the KL term pick up noise that is not the policy changing.
    "disable_dropout": True,
}

# Keys of RLOOConfig that the run directory decides; a config may not set them.
RLOO_RESERVED = {
    "output_dir": "checkpoints always go to <run-dir>/checkpoints",
    "logging_dir": "logs always go to <run-dir>/train.log",
    "reward_weights": "set `weight:` on each entry of `rewards` instead",
}

# TRL 1.15's own defaults of the other trainer arguments that matter, passed to RLOOConfig explicitly as well. Under
# `import unsloth` on a GPU, TRL's RLOOConfig is replaced by Unsloth's (unsloth/models/rl.py rewrites its defaults: 2
# accumulation steps, 8-bit AdamW, weight decay 0.001, a 10 % warm-up, seed 3407, ...): a key left unset would
# train differently there than on the transformers backend and than the page says. tests/unit/test_trl_defaults.py
# checks these against the installed TRL, tests/engine/test_trainer_parity.py that Unsloth's patch changes none of
# a run's arguments. They also serve where TRL is not importable (validating in the app's process).
TRL_DEFAULTS: dict[str, Any] = {
    "beta": 0.05,
    "normalize_advantages": False,
    "num_iterations": 1,
    "gradient_accumulation_steps": 1,
    "steps_per_generation": None,
    "generation_batch_size": None,
    "temperature": 1.0,
    "top_p": 1.0,
    "epsilon": 0.2,
    "optim": "adamw_torch_fused",
    "weight_decay": 0.0,
    "warmup_steps": 0,
    "lr_scheduler_type": "linear",
    "max_grad_norm": 1.0,
    "num_train_epochs": 3.0,
    "per_device_eval_batch_size": 8,
    "eval_accumulation_steps": None,
    "torch_empty_cache_steps": None,
    "logging_nan_inf_filter": True,
    "include_num_input_tokens_seen": "no",
    "generation_kwargs": None,
}


def rloo_default(key: str) -> Any:
    """What RLOOConfig gets for `key` when a config leaves it out: the effective value of a config without an `rloo`
    section (RunConfig.effective_rloo); None for a key it does not decide (TRL's own default, unknown here)."""
    return RunConfig().rloo_value(key)


# The `rloo:` options the app's form shows, with their label and help line: `rloo` is a free mapping of RLOOConfig
# options (no dataclass fields to hold them), so these live in a table; `field_label`/`field_help` read it.
RLOO_FIELDS: dict[str, tuple[str, str]] = {
    "num_generations": ("Completions per prompt (k)", "Each completion is compared with the mean of the other k−1. Higher: a steadier baseline, slower steps."),
    "per_device_train_batch_size": ("Batch per device (completions)", "A multiple of k. A step uses this × accumulation steps × processes (the line below the form). Higher: smoother updates, more memory."),
    "max_completion_length": ("Max completion length (tokens)", "Longer allows more reasoning, costs memory and time."),
    "learning_rate": ("Learning rate", "How big each update is. Too high breaks the model; LoRA on real models: 1e-5 to 1e-4."),
    "beta": ("KL penalty (beta)", "0 = none (faster). 0.01–0.05 keeps the model close to where it started: beta × each completion's KL to the start model is subtracted from its reward before the baseline."),
    "temperature": ("Sampling temperature", "Higher: more varied completions (more to learn from); lower: more focused."),
    "max_steps": ("Training steps", "Optimiser updates. With one pass per batch each step samples new completions, scores them and updates the model once."),
    "num_iterations": ("Passes per batch", "1 = plain RLOO; N reuses each batch of completions for N steps with clipping (new completions and reward logs every N steps)."),
    "epsilon": ("Clipping range (epsilon)", "How far one update may move a completion's probability. Matters only for completions trained on after the model changed: more than one pass per batch, or steps_per_generation above gradient_accumulation_steps."),
    "normalize_advantages": ("Normalise advantages", "Standardise the advantages over the batch (minus the mean, divided by the std). With beta > 0, prompts whose completions tie on reward keep advantages from KL alone, and this scales that noise up to full size."),
    "top_p": ("Top-p", "Sample only from the most likely tokens that make up this probability (1 = all)."),
    "seed": ("Seed", "Same seed and settings: the same run."),
    "save_steps": ("Checkpoint every N steps", "Stop and resume continue from the last checkpoint. With several passes per batch, checkpoints and stops wait for the end of a batch's passes."),
}


def _help(text: str, label: str | None = None, **kw) -> Any:
    """A config field with its help line and, for a field the app's form shows, the form's label for it: a setting's
    label and help are written here once, for the page (ui.text) as for the config's own messages."""
    return field(metadata={"help": text, **({"label": label} if label else {})}, **kw)


@dataclass
class ModelConfig:
    name_or_path: str = _help("Hugging Face model id (e.g. Qwen/Qwen3-0.6B), a local model folder, or `demo`.", "Model", default="demo")
    backend: str = _help("`auto` (Unsloth when importable, else transformers+PEFT), `unsloth`, or `transformers`.", "Backend",
                         default="auto")
    load_in_4bit: bool = _help("Load the base weights in 4-bit (bitsandbytes NF4): QLoRA. Needs LoRA.", default=False)
    dtype: str = _help("Compute dtype: auto (bf16 on GPUs that support it, fp16 on older GPUs, fp32 on CPU), bfloat16, float16, float32.", default="auto")
    max_seq_length: int = _help("Longest prompt + completion, in tokens, the model is prepared for.", "Max sequence length (tokens)",
                                default=1024)
    gradient_checkpointing: bool = _help("Recompute activations in the backward pass: much less memory, ~30% slower. Off for tiny models.",
                                         "Gradient checkpointing", default=True)
    trust_remote_code: bool = _help("Allow model code from the model's repository to run (only for models you trust).", default=False)
    fast_generation: str = _help("Sample completions with vLLM on the GPU: `auto` (where vLLM is installed and the GPU can run it), `on` "
                                 "(refuse to start without it), `off`. Not yet measured on a GPU.", "Fast generation (vLLM)",
                                 default="auto")
    # `auto`: on where its completions were checked to be plain generation's, token for token (a CPU); a prompt's
    # prefill is then computed once instead of k times (demo and cpu-small-real: benchmarks/prefill_sharing.py).
    share_prefill: str = _help("Compute each prompt's prefill once for its k completions instead of k times (the same completions, "
                               "faster): `auto` (on a CPU; never with vLLM), `on` (on a GPU too, where it is not yet checked), `off`.",
                               default="auto")


@dataclass
class LoraConfig:
    r: int = _help("LoRA rank: higher learns more, costs more memory; 16 is a good start.", "LoRA rank (r)", default=16)
    alpha: int = _help("Scales the adapter (its effective scale is alpha/r); 2×r is common.", "LoRA alpha", default=32)
    dropout: float = _help("Dropout on the LoRA path; 0 is usual for RL. RLOO training itself switches every dropout off "
                           "(TRL's disable_dropout, which RLOO Studio turns on: dropout makes the same tokens' log-probabilities "
                           "differ between passes), so this applies to the format warm-up only, unless a config turns "
                           "disable_dropout off.", "LoRA dropout", default=0.0)
    target_modules: Any = _help("`all-linear` or a list of module names such as [q_proj, v_proj].", "LoRA target modules",
                                default="all-linear")


@dataclass
class DataConfig:
    source: str = _help("`demo`, a local .jsonl/.json/.csv/.parquet file, or a Hugging Face dataset id.", default="demo")
    config_name: str | None = _help("Hub dataset configuration (subset) name, if it has several.", "Subset (configuration)", default=None)
    split: str = _help("Split used for training.", "Training split", default="train")
    prompt_column: str = _help("Column holding the prompt text (or a list of chat messages).", "Prompt column", default="prompt")
    # One setting for every reader of the reference answer (data.answer_column): the answer-checking builtins and a judge,
    # evaluation's reference, the pinned examples' answer cell, the warm-up's replies. A person's own reward that reads
    # another column needs it here too, else evaluation and a new page fall back to `answer`.
    answer_column: str | None = _help("Column holding the reference answers: numeric_answer, exact_match and a judge compare "
                                      "with it, evaluation shows it beside each reply. Empty = the column named `answer`, if "
                                      "any. A reward's own params.answer_column wins for that reward.",
                                      "Answer column (for answer-checking rewards)", default=None)
    system_prompt: str | None = _help("A system message put before every prompt, e.g. the answer format you expect.",
                                      "System prompt (optional)", default=None)
    prompt_format: str = _help("`auto` (chat when the tokenizer has a chat template), `chat`, or `plain` text.", "Prompt format",
                               default="auto")
    test_split: str | None = _help("Held-out data: a split name of the dataset, or a local file path.",
                                   "Held-out split or file (for evaluation)", default=None)
    test_fraction: float = _help("When there is no test split: the fraction of rows held out for evaluation (0 = none).",
                                 "Held-out fraction", default=0.0)
    max_train_samples: int | None = _help("Use at most this many training rows (after shuffling); empty = all.",
                                          "Use at most this many training rows (0 = all)", default=None)


# A reward call gets this long on one batch before training gives up on it. Generous: a builtin takes
# milliseconds, a reward model or a judge on a large batch seconds to a minute; a hang takes forever.
REWARD_TIMEOUT_S = 120.0
# A judge's scale when its entry gives none: 0-10 is the range judges are most often prompted with.
DEFAULT_JUDGE_SCALE = (0, 10)
JUDGE_SERVER_KEYS = ("url", "model", "api_key_env")


@dataclass
class RewardSpec:
    name: str | None = _help("A builtin reward's name (see `rloo-studio rewards`).", default=None)
    file: str | None = _help("A Python file with reward functions (relative to the config file).", default=None)
    function: str | None = _help("With `file`: the function to use; empty = every public function in the file.", default=None)
    model: str | None = _help("A sequence-classification reward model (folder or hub id) whose score is the reward.", default=None)
    judge: Any = _help("An LLM judge: a local model folder or hub id, or an OpenAI-compatible server "
                       "{url: http://127.0.0.1:11434/v1, model: NAME, api_key_env: VARIABLE} (see docs/judge.md).", default=None)
    rubric: str | None = _help("With judge: what a good completion is, in words; the judge scores by it.", default=None)
    scale: list | None = _help("With judge: the [lowest, highest] score the judge gives; normalised to 0-1. Default [0, 10].", default=None)
    template: str | None = _help("With judge: the judge's prompt with {rubric}, {prompt}, {completion}, {reference}, {low}, "
                                 "{high}; empty = the default template.", default=None)
    weight: float = _help("Weight of this reward in the total that RLOO optimises.", default=1.0)
    params: dict = _help("Parameters of a builtin reward, e.g. {answer_column: answer}; a judge takes answer_column only.",
                         default_factory=dict)
    timeout_s: float = _help("Training: the longest one call of this reward on one batch may take, in seconds; a longer call "
                             "ends the run as failed (its last checkpoint stays resumable) instead of hanging it.",
                             default=REWARD_TIMEOUT_S)
    sandbox: bool = _help("With file: run this code in the reward sandbox where the system has one (no network, files "
                          "read-only except the run's folder). false runs it in the training process with your rights and "
                          "network access — only for code you trust that must call a server.", default=True)

    def label(self) -> str:
        if self.name:
            return self.name
        if self.file:
            return f"{self.file}:{self.function or '*'}"
        if self.judge is not None:
            return f"judge:{self.judge.get('model') if isinstance(self.judge, dict) else self.judge}"
        return f"model:{self.model}"

    def judge_problems(self, where: str) -> list[str]:
        """What is wrong with this entry's judge settings (judge, rubric, scale, template), in config words."""
        problems: list[str] = []
        if self.judge is None:
            for key in ("rubric", "scale", "template"):
                if getattr(self, key) is not None:
                    problems.append(f"{where}.{key}: only meaningful together with `judge`")
            return problems
        judge = self.judge
        if isinstance(judge, dict):
            unknown = [k for k in judge if k not in JUDGE_SERVER_KEYS]
            for k in unknown:
                problems.append(f"{where}.judge.{k}: unknown key{did_you_mean(str(k), JUDGE_SERVER_KEYS)} "
                                f"(known: {', '.join(JUDGE_SERVER_KEYS)})")
            url = judge.get("url")
            if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
                problems.append(f"{where}.judge.url: {url!r} is not an http(s) address; give the server's OpenAI-compatible "
                                "base, e.g. http://127.0.0.1:11434/v1 (Ollama)")
            if not isinstance(judge.get("model"), str) or not judge.get("model", "").strip():
                problems.append(f"{where}.judge.model: give the name of the model the server serves, e.g. qwen2.5:7b")
            env = judge.get("api_key_env")
            if env is not None and not (isinstance(env, str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", env)):
                problems.append(f"{where}.judge.api_key_env: {env!r} is not an environment variable name; name the "
                                "variable that holds the key, e.g. JUDGE_API_KEY (never the key itself)")
        elif not isinstance(judge, str) or not judge.strip():
            problems.append(f"{where}.judge: {judge!r} is neither a model (folder or hub id) nor a server "
                            "{url: ..., model: ...}")
        if not isinstance(self.rubric, str) or not self.rubric.strip():
            problems.append(f"{where}.rubric: a judge needs a rubric, the words it scores by, e.g. rubric: \"The answer is "
                            "correct and says only what was asked.\"")
        scale = self.scale
        if scale is not None:
            numbers = isinstance(scale, list) and len(scale) == 2 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in scale)
            if not numbers or not scale[0] < scale[1]:
                problems.append(f"{where}.scale: {scale!r} must be [lowest, highest] with lowest < highest, e.g. [0, 10]")
        if self.template is not None and (not isinstance(self.template, str) or not self.template.strip()):
            # Its fields are checked with the rewards (rewards.judge.check_template), which know the template's fields.
            problems.append(f"{where}.template: must be the judge's prompt text; remove it to use the default")
        extra = [k for k in self.params if k != "answer_column"]
        if extra:
            problems.append(f"{where}.params: a judge takes only answer_column (the reference answer's column), "
                            f"not {', '.join(map(str, extra))}")
        return problems


@dataclass
class OutputConfig:
    runs_dir: str = _help("Folder that holds the run directories.", default="runs")
    run_name: str | None = _help("Short name put into the run id; empty = derived from the model name.", "Run name (optional)",
                                 default=None)
    samples_per_step: int = _help("How many prompt groups of completions to keep in samples.jsonl per step.", default=2)


ALERT_ACTIONS = ("warn", "stop")


@dataclass
class AlertActions:
    """What a run does on its own when a health alert is raised, once per alert (docs/alerts.md; engine/health.py acts):
    `warn` shows the alert only; `stop` also stops the run cleanly, as a stop request does (a checkpoint, resumable with
    --resume); `rollback`, `raise_beta` and `dynamic_sampling` as their help lines say."""
    on_no_signal: str = _help("When 'No learning signal' has lasted no_signal_steps steps: `warn`, `stop` the run with "
                              "the difficulty scan's advice, or switch on `dynamic_sampling` (one process only).",
                              default="warn")
    no_signal_steps: int = _help("Steps of no learning signal before on_no_signal acts (the alert itself is raised after "
                                 "3; a smaller number acts then).", default=3)
    on_hacking: str = _help("When 'Possible reward hacking' (a hack probe out-scores the real completions at a checkpoint) "
                            "or 'Held-out reward falling' is raised: `warn`, `stop` the run, `rollback`: stop and set "
                            "aside the checkpoints from the alarm on, so --resume continues from the last one before it, "
                            "or `raise_beta`: double the KL penalty (at least 0.02) and train on (one process).",
                            default="warn")
    on_heldout_plateau: str = _help("When the held-out check (runs with held-out prompts) has not beaten its best for "
                                    "heldout_patience checkpoints: `off` (no such alert), `warn`, or `stop` early and keep "
                                    "the best checkpoint.", default="off")
    heldout_patience: int = _help("Held-out checks in a row (one per saved checkpoint) without a new best before "
                                  "on_heldout_plateau acts.", default=3)

    def problems(self, num_processes: int, no_reference: bool) -> list[str]:
        """What is wrong with these settings; `no_reference`: full fine-tuning with beta 0 (TRL loads no reference model)."""
        problems: list[str] = []
        _check_choice(problems, "alerts.on_no_signal", self.on_no_signal, (*ALERT_ACTIONS, "dynamic_sampling"))
        _check_choice(problems, "alerts.on_hacking", self.on_hacking, (*ALERT_ACTIONS, "rollback", "raise_beta"))
        _check_choice(problems, "alerts.on_heldout_plateau", self.on_heldout_plateau, ("off", *ALERT_ACTIONS))
        _check_positive(problems, "alerts.no_signal_steps", self.no_signal_steps)
        _check_positive(problems, "alerts.heldout_patience", self.heldout_patience)
        for key, value in (("on_hacking", "raise_beta"), ("on_no_signal", "dynamic_sampling")):
            if getattr(self, key) == value and num_processes > 1:  # only the first process acts on alerts
                problems.append(f"alerts.{key}: '{value}' works on one process, not {num_processes} — use warn or stop, "
                                "or train on one process")
        if self.on_hacking == "raise_beta" and no_reference:
            problems.append("alerts.on_hacking: 'raise_beta' needs a reference model, which full fine-tuning with "
                            "rloo.beta 0 does not load — start with a small rloo.beta (e.g. 0.01) or train a LoRA adapter")
        return problems


@dataclass
class DynamicSampling:
    """Dynamic sampling (engine/dynamic_sampling.py): prompt groups tied on reward are dropped and new prompts sampled."""
    enabled: bool = _help("Drop prompt groups whose completions all got the same total reward and sample new prompts to "
                          "fill the batch (as DAPO does). Costs extra generation; one process only.", default=False)
    max_extra_generations: int = _help("At most this many extra generation batches per step; when they are used up, "
                                       "the batch is filled with tied groups.", default=2)

    def problems(self, num_processes: int) -> list[str]:
        problems: list[str] = []
        if self.max_extra_generations < 0:
            problems.append(f"dynamic_sampling.max_extra_generations: {self.max_extra_generations} must be 0 or more (e.g. 2)")
        if self.enabled and num_processes > 1:  # each rank would drop other groups than the rewards gathered over all
            problems.append(f"dynamic_sampling.enabled: works on one process, not {num_processes} — set it to false "
                            "or train on one process")
        return problems


WARMUP_SOURCES = ("answer_column", "pinned", "table")
ANSWER_SLOT = "{answer}"  # where warmup.template puts the data's answer


@dataclass
class FormatWarmup:
    """The format warm-up (engine/warmup.py): a few supervised LoRA steps on replies in the target format, before RLOO,
    for a base model that never writes the format the rewards look for (every group then ties: nothing to learn)."""
    enabled: bool = _help("Before RLOO, train the adapter for a few supervised steps on replies in the format the rewards "
                          "look for. For a model that (almost) never writes that format on its own.", default=False)
    steps: int = _help("Supervised optimiser steps of the warm-up (a few dozen: enough to show the format, too few to "
                       "teach the answers).", default=30)
    learning_rate: float = _help("The warm-up's learning rate (constant; AdamW on the LoRA adapter).", default=2e-4)
    batch_size: int = _help("Prompt-reply pairs per warm-up step.", default=4)
    source: str = _help("Where the replies come from: `answer_column` (the data's answer put into `template`), `pinned` "
                        "(the pinned examples expected to score above 0), or `table` (the replies in `examples`).",
                        default="answer_column")
    answer_column: str | None = _help("The data column whose value `template` puts into the target format (source "
                                      "answer_column); empty = the data's answer column (data.answer_column, else `answer`).",
                                      default=None)
    template: str = _help("The target reply, with {answer} where the column's value goes (source answer_column), "
                          "e.g. <answer>{answer}</answer>.", default="<answer>{answer}</answer>")
    examples: list = _help("For source `table`: a list of {prompt: ..., reply: ...} written by hand.", default_factory=list)

    def problems(self, num_processes: int, lora: bool) -> list[str]:
        if not self.enabled:
            return []
        problems: list[str] = []
        if isinstance(self.steps, int) and self.steps <= 0:
            problems.append(f"warmup.steps: {self.steps} trains nothing; use a few dozen (e.g. 30), or set warmup.enabled: false")
        _check_positive(problems, "warmup.learning_rate", self.learning_rate)
        _check_positive(problems, "warmup.batch_size", self.batch_size)
        _check_choice(problems, "warmup.source", self.source, WARMUP_SOURCES)
        if self.source == "answer_column":
            if ANSWER_SLOT not in self.template:
                problems.append(f"warmup.template: {self.template!r} has no {ANSWER_SLOT} — the column's value would be left "
                                f"out of every reply; write where it goes, e.g. <answer>{ANSWER_SLOT}</answer>")
            if self.answer_column is not None and not str(self.answer_column).strip():
                problems.append("warmup.answer_column: empty — name the data column that holds the answers (e.g. answer), "
                                "or leave it out to use the data's answer column")
        if self.source == "table":
            if not self.examples:
                problems.append("warmup.examples: source `table` needs replies written by hand — add a few "
                                "{prompt: ..., reply: ...} entries, or use source answer_column")
            for i, ex in enumerate(self.examples):
                if not (isinstance(ex, Mapping) and isinstance(ex.get("prompt"), str) and ex.get("prompt").strip()
                        and isinstance(ex.get("reply"), str) and ex.get("reply").strip()):
                    problems.append(f"warmup.examples[{i}]: {ex!r} is not a {{prompt: ..., reply: ...}} pair of non-empty "
                                    "texts")
        if not lora:
            problems.append("warmup.enabled: the warm-up trains a LoRA adapter, and this run fine-tunes all weights — add a "
                            "`lora:` section, or set warmup.enabled: false")
        if num_processes > 1:
            problems.append(f"warmup.enabled: the warm-up runs on one process, not {num_processes} — train on one process, "
                            "or set warmup.enabled: false")
        return problems


def as_mapping(value) -> dict:
    """A dict-valued RLOOConfig option, given as a mapping or (as RLOOConfig also accepts) a JSON string; {} when unset."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        import json

        value = json.loads(value)
    return dict(value)


def batch_sizes_around(batch: int, factor: int, k: int) -> tuple[int, int]:
    """The per-device batch sizes next below (0 if none) and above `batch` whose generation batch
    (batch × `factor`: processes × steps per generation) holds whole groups of `k` completions."""
    step = k // math.gcd(k, factor)
    return batch // step * step, (batch // step + 1) * step


def four_bit_without_lora(load_in_4bit: bool, lora: LoraConfig | dict | None) -> bool:
    """The one rule on 4-bit weights: they are frozen (bitsandbytes NF4 has no gradient), so only a LoRA adapter
    beside them can learn; 4-bit without LoRA trains nothing. `RunConfig.validate` refuses it with FOUR_BIT_NEEDS_LORA
    (the page says it in its words: ui/text.py), so the engine only ever loads allowed configs; the memory
    estimate asks here too, to note it and never to propose it."""
    return bool(load_in_4bit) and lora is None


# The problem four_bit_without_lora reports, in config words: the command line shows it as is, the page translates it.
NO_REWARDS = "rewards: no reward functions; add at least one (e.g. `- {name: numeric_answer}`)"  # the page: its own words
FOUR_BIT_NEEDS_LORA = ("model.load_in_4bit: 4-bit weights cannot be trained directly; add a `lora:` section (QLoRA) "
                       "or set load_in_4bit: false")


def local_judge_in_4bit() -> bool:
    """The one rule on a local judge's weights on a CUDA GPU, for the worker (rewards/judge.py) and the memory estimate:
    4-bit NF4 whenever bitsandbytes is installed (the CUDA install has it). The judge shares the GPU with the policy,
    so it takes about a quarter of its 16-bit size, and greedy scoring of a few tokens loses little to the
    quantisation. On a CPU the judge runs in float32."""
    import importlib.util

    return importlib.util.find_spec("bitsandbytes") is not None


# Every config field that may name a local file or folder, by section (`rewards`: in each entry), with what it names:
# a file, a folder (or a file), or an output folder. The one table RunConfig.with_absolute_paths walks, for the app
# (a run's or a preview's config) and the engine (the run's saved config) alike.
PATH_FIELDS: dict[str, dict[str, str]] = {
    "model": {"name_or_path": "folder"},
    "data": {"source": "file", "test_split": "file"},
    "rewards": {"file": "file", "model": "folder", "judge": "folder"},
    "output": {"runs_dir": "output"},
}


@dataclass
class RunConfig:
    model: ModelConfig = _help("The model to fine-tune and how to load it.", default_factory=ModelConfig)
    lora: LoraConfig | None = _help("LoRA adapter settings; leave the section out (or write `lora: false`) for full fine-tuning (small models only). An empty `lora:` means LoRA with defaults.", default=None)
    data: DataConfig = _help("The prompts to train on.", default_factory=DataConfig)
    rewards: list = _help("Reward functions and their weights.", default_factory=list)
    rloo: dict = _help("Passed to trl.RLOOConfig by name: anything RLOOConfig accepts may appear here.", default_factory=dict)
    output: OutputConfig = _help("Where runs are written.", default_factory=OutputConfig)
    alerts: AlertActions = _help("What the run does on its own when a health alert is raised.", default_factory=AlertActions)
    dynamic_sampling: DynamicSampling = _help("Drop reward-tied prompt groups and sample new prompts in their place.",
                                              default_factory=DynamicSampling)
    warmup: FormatWarmup = _help("A short supervised warm-up in the target format before RLOO.", default_factory=FormatWarmup)
    # Folder relative paths in the config (reward files, data files, model folders) resolve against.
    base_dir: str = field(default=".", repr=False, compare=False, metadata={"help": "", "internal": True})

    # ---- YAML ------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base_dir: str | Path = ".", source: str = "the config") -> "RunConfig":
        """Build a config from plain data; every unknown key and wrong type is reported at once."""
        problems: list[str] = []
        if not isinstance(data, Mapping):
            raise ConfigError([f"expected a mapping of sections (model, data, rewards, rloo, ...), got {type(data).__name__}"], source)
        cfg = _build(cls, data, "", problems)
        if cfg is not None:
            cfg.base_dir = str(base_dir)
        if problems:
            raise ConfigError(problems, source)
        return cfg

    @classmethod
    def load(cls, path: str | Path, overrides: list[str] | None = None) -> "RunConfig":
        path = Path(path)
        if not path.is_file():
            raise ConfigError([f"no such file: {path}"], f"config {path}")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            data = {} if data is None else data
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = f"not valid YAML{where}: {getattr(exc, 'problem', exc)}"
            if "'\\t'" in problem:  # PyYAML's words for a tab; editors insert them silently
                problem += (" — YAML allows only spaces there, not a tab: replace the tab with spaces (indent "
                            "two per level, lined up with the lines around it)")
            raise ConfigError([problem], f"config {path}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError([f"the file is not UTF-8 text (byte {exc.start} cannot be decoded): a run config is a YAML text "
                               "file — save it as UTF-8 in a text editor, or start again from a file in presets/"],
                              f"config {path}") from None
        if _larger_than(data, MAX_CONFIG_VALUES):
            raise ConfigError([f"{path.name} expands to more than {MAX_CONFIG_VALUES:,} values: YAML anchors and aliases "
                               "(`&name` … `*name`) repeat parts of it, here so often that reading it would never end — a "
                               "run config has a few hundred values: write each value out, or start again from a file in "
                               "presets/"], f"config {path}")
        if overrides:
            data = apply_overrides(data, overrides)
        return cls.from_dict(data, base_dir=path.parent.resolve(), source=f"config {path}")

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            if f.metadata.get("internal"):
                continue
            value = getattr(self, f.name)
            if dataclasses.is_dataclass(value):
                value = dataclasses.asdict(value)
            elif f.name == "rewards":
                # Unset fields and the default time limit stay out: a saved config reads like the one written by hand.
                value = [{k: v for k, v in dataclasses.asdict(r).items()
                          if (v not in (None, {}) or k == "weight") and not (k == "timeout_s" and v == REWARD_TIMEOUT_S)
                          and not (k == "sandbox" and v is True)}
                         for r in value]
            elif f.name == "lora" and value is None:
                continue
            out[f.name] = copy.deepcopy(value)
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_yaml(), encoding="utf-8")

    # ---- derived values -------------------------------------------------------------------
    def effective_rloo(self) -> dict:
        """Every trainer argument the config decides, with the value training passes to RLOOConfig: the config's own
        `rloo` value, else ours (RLOO_DEFAULTS), else TRL's (TRL_DEFAULTS). The one place these values are computed:
        training passes all of them explicitly (engine/trainer_args.py, `rloo_arguments`), and the page, the memory estimate,
        the time trial, the exported script and the docs read them here. The run folder records what the trainer made
        of them (trainer_args.json)."""
        return {**TRL_DEFAULTS, **RLOO_DEFAULTS, **copy.deepcopy(self.rloo)}

    def batch_plan(self, processes: int = 1) -> BatchPlan:
        """How the effective values group completions into steps and generation cycles on `processes` processes."""
        return batch_plan(self.effective_rloo(), processes)

    def trained_steps(self, train_rows: int | None, plan: BatchPlan | None = None) -> int | None:
        """The optimiser steps the run trains (what `trainer_state.max_steps` holds): max_steps, or for a run by epochs
        (max_steps -1) the steps num_train_epochs make over `train_rows` as TRL counts them, with `plan` (default: this
        config's on one process); None when that needs the row count and it is not known."""
        max_steps = int(self.rloo_value("max_steps") or -1)
        if max_steps > 0:
            return max_steps
        if not train_rows:
            return None
        return trained_steps_for_epochs(train_rows, plan or self.batch_plan(), float(self.rloo_value("num_train_epochs")))

    def rloo_value(self, key: str, trl_defaults: Mapping[str, Any] | None = None) -> Any:
        """One effective RLOOConfig value (see `effective_rloo`); for a key outside its tables, TRL's default from
        `trl_defaults` when given (else None)."""
        effective = self.effective_rloo()
        if key in effective:
            return effective[key]
        return trl_defaults.get(key) if trl_defaults is not None else None

    def chat_template_kwargs(self) -> dict:
        """`rloo.chat_template_kwargs`: what TRL passes to every `apply_chat_template` call; {} when unset."""
        return as_mapping(self.rloo.get("chat_template_kwargs"))

    def resolve_path(self, value: str) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else Path(self.base_dir) / path

    def with_absolute_paths(self, base_dir: str | Path, keep: tuple[str, ...] = ()) -> "RunConfig":
        """A copy to be saved in `base_dir` that reads the same files from there: every field of PATH_FIELDS whose
        relative value names an existing file or folder (in this config's folder first, then the current directory,
        as the loaders look) becomes absolute; hub ids, split names, `demo` and judge servers stay as they are;
        `output.runs_dir` is always made absolute from the current directory (where `rloo-studio runs` looks).
        `keep`: values left as written (the run's own reward copy, written beside the saved config)."""
        out = RunConfig.from_dict(self.to_dict(), base_dir=base_dir)

        def absolute(value: Any, kind: str) -> Any:
            if not isinstance(value, str) or not value or value == "demo" or value in keep:
                return value
            if kind == "output":
                return str(Path(value).expanduser().resolve())
            for candidate in (self.resolve_path(value), Path(value).expanduser()):
                if candidate.is_file() if kind == "file" else candidate.exists():
                    return str(candidate.resolve())
            return value

        for section, names in PATH_FIELDS.items():
            for part in (out.rewards if section == "rewards" else [getattr(out, section)]):
                for name, kind in names.items():
                    setattr(part, name, absolute(getattr(part, name), kind))
        return out

    # ---- validation -----------------------------------------------------------------------
    def validate(self, rloo_fields: Mapping[str, Any] | None = None, num_processes: int = 1) -> list[str]:
        """Every structural problem of this config (empty list = fine).

        `rloo_fields` maps each key trl.RLOOConfig accepts to its default; when given, unknown
        `rloo` keys are reported with a "did you mean". Data- and reward-dependent checks live
        in `rloo_studio.engine.preflight`.
        """
        problems: list[str] = []
        m = self.model
        if not str(m.name_or_path).strip():
            problems.append("model.name_or_path: empty; give a hub id, a local folder or `demo`")
        _check_choice(problems, "model.backend", m.backend, BACKENDS)
        _check_choice(problems, "model.dtype", m.dtype, DTYPES)
        _check_choice(problems, "model.fast_generation", m.fast_generation, FAST_GENERATION)
        _check_choice(problems, "model.share_prefill", m.share_prefill, SHARE_PREFILL)
        _check_positive(problems, "model.max_seq_length", m.max_seq_length)
        if self.lora is not None:
            _check_positive(problems, "lora.r", self.lora.r)
            _check_positive(problems, "lora.alpha", self.lora.alpha)
            if not (0 <= self.lora.dropout < 1):
                problems.append(f"lora.dropout: {self.lora.dropout} is outside [0, 1)")
            tm = self.lora.target_modules
            if not (tm == "all-linear" or (isinstance(tm, list) and tm and all(isinstance(t, str) for t in tm))):
                problems.append(f"lora.target_modules: {tm!r} must be `all-linear` or a non-empty list of module names")
        elif four_bit_without_lora(m.load_in_4bit, self.lora):
            problems.append(FOUR_BIT_NEEDS_LORA)

        d = self.data
        if not str(d.source).strip():
            problems.append("data.source: empty; give `demo`, a file path or a hub dataset id")
        if not str(d.prompt_column).strip():
            problems.append("data.prompt_column: empty; name the column that holds the prompts")
        if d.answer_column is not None and not str(d.answer_column).strip():
            problems.append("data.answer_column: empty; name the column that holds the reference answers (e.g. answer), "
                            "or leave it out")
        _check_choice(problems, "data.prompt_format", d.prompt_format, PROMPT_FORMATS)
        if not (0 <= d.test_fraction < 1):
            problems.append(f"data.test_fraction: {d.test_fraction} is outside [0, 1)")
        if d.max_train_samples is not None:
            _check_positive(problems, "data.max_train_samples", d.max_train_samples)

        if not self.rewards:
            problems.append(NO_REWARDS)
        for i, spec in enumerate(self.rewards):
            chosen = [k for k in ("name", "file", "model", "judge") if getattr(spec, k) is not None and getattr(spec, k) != ""]
            if len(chosen) != 1:
                problems.append(f"rewards[{i}]: give exactly one of name, file, model or judge (got {', '.join(chosen) or 'none'})")
            if spec.function and not spec.file:
                problems.append(f"rewards[{i}].function: only meaningful together with `file`")
            if not isinstance(spec.sandbox, bool):
                problems.append(f"rewards[{i}].sandbox: {spec.sandbox!r} must be true or false")
            elif not spec.sandbox and not spec.file:
                problems.append(f"rewards[{i}].sandbox: only meaningful together with `file` (the app's own rewards need none)")
            if spec.params and not spec.name and spec.judge is None:
                problems.append(f"rewards[{i}].params: only builtin rewards (`name`) and judges take params")
            problems.extend(spec.judge_problems(f"rewards[{i}]"))
            weight = spec.weight
            # A NaN weight (a cleared number cell) made every total NaN in the preview, while TRL's nansum quietly
            # drops that function in training: neither is what the person meant.
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
                problems.append(f"rewards[{i}].weight: {weight!r} is not a finite number; give a number, e.g. 1.0")
            if not isinstance(spec.timeout_s, (int, float)) or isinstance(spec.timeout_s, bool) or not spec.timeout_s > 0:
                problems.append(f"rewards[{i}].timeout_s: {spec.timeout_s!r} is not a positive number of seconds; "
                                f"use e.g. {REWARD_TIMEOUT_S:g} (the default) or more for a slow reward")

        if self.output.samples_per_step < 0:
            problems.append(f"output.samples_per_step: {self.output.samples_per_step} must be 0 or more")
        problems.extend(self.alerts.problems(num_processes, no_reference=self.lora is None and not self.rloo_value("beta")))
        problems.extend(self.dynamic_sampling.problems(num_processes))
        problems.extend(self.warmup.problems(num_processes, lora=self.lora is not None))

        problems.extend(self._validate_rloo(rloo_fields, num_processes))
        return problems

    def unknown_rloo_keys(self, rloo_fields: Mapping[str, Any]) -> list[str]:
        """The `rloo` keys that are no option of trl.RLOOConfig (`rloo_fields`: its keys), as problems: the one check
        `validate` leaves to the training worker once TRL is imported (importing it costs the app seconds)."""
        return [f"rloo.{key}: not an option of trl.RLOOConfig{did_you_mean(key, rloo_fields)}"
                for key in self.rloo if key not in rloo_fields and key not in RLOO_RESERVED]

    def _validate_rloo(self, rloo_fields: Mapping[str, Any] | None, num_processes: int) -> list[str]:
        problems: list[str] = []
        for key, reason in RLOO_RESERVED.items():
            if key in self.rloo:
                problems.append(f"rloo.{key}: cannot be set here ({reason})")
        if rloo_fields is not None:
            problems.extend(self.unknown_rloo_keys(rloo_fields))
        value = lambda k: self.rloo_value(k, rloo_fields)  # noqa: E731

        def as_number(key):
            v = value(key)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                problems.append(f"rloo.{key}: {v!r} is not a number")
                return None
            return v

        k = as_number("num_generations")
        if k is not None and k < 2:
            problems.append(f"rloo.num_generations: {k}; RLOO needs at least 2 completions per prompt (the baseline is the mean of the others)")
        for key in ("max_completion_length", "per_device_train_batch_size", "learning_rate"):
            v = as_number(key)
            if v is not None and v <= 0:
                problems.append(f"rloo.{key}: {v} must be greater than 0")
        max_steps = as_number("max_steps")
        if max_steps is not None and max_steps == 0:
            problems.append("rloo.max_steps: 0 trains nothing; use a positive number, or -1 to train for num_train_epochs")
        beta = as_number("beta")
        if beta is not None and beta < 0:
            problems.append(f"rloo.beta: {beta} must be 0 (no KL penalty) or more")

        batch = as_number("per_device_train_batch_size")
        if k and k >= 2 and batch and batch > 0:
            gen_batch = as_number("generation_batch_size")
            steps_per_gen = as_number("steps_per_generation") or as_number("gradient_accumulation_steps") or 1
            if gen_batch is None:
                gen_batch = batch * num_processes * steps_per_gen
                how = f"per_device_train_batch_size {batch} x {num_processes} process(es) x steps_per_generation {steps_per_gen}"
            else:
                how = "generation_batch_size"
            if gen_batch % k and how == "generation_batch_size":
                problems.append(f"rloo: the generation batch ({how} = {gen_batch}) is not divisible by num_generations {k}; "
                                f"every prompt needs all its {k} completions in one batch — choose a num_generations that divides {gen_batch}")
            elif gen_batch % k:
                low, high = batch_sizes_around(batch, num_processes * steps_per_gen, k)
                use = f"{low} or {high}" if low else f"{high}"
                problems.append(
                    f"rloo: the generation batch ({how} = {gen_batch}) is not divisible by num_generations {k}; "
                    f"every prompt needs all its {k} completions in one batch — use per_device_train_batch_size {use}"
                )
        return problems


# ---- helpers ---------------------------------------------------------------------------------

_SECTION_TYPES = {"model": ModelConfig, "lora": LoraConfig, "data": DataConfig, "output": OutputConfig, "alerts": AlertActions,
                  "dynamic_sampling": DynamicSampling, "warmup": FormatWarmup}


def did_you_mean(key: str, choices) -> str:
    close = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.6)
    return f" — did you mean `{close[0]}`?" if close else ""


def _check_choice(problems, path, value, choices):
    if value not in choices:
        problems.append(f"{path}: {value!r} is not one of {', '.join(choices)}{did_you_mean(str(value), choices)}")


def _check_positive(problems, path, value):
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
        problems.append(f"{path}: {value} must be greater than 0")


def _type_ok(value: Any, annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return True
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_type_ok(value, a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, dict):
        return isinstance(value, origin)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True


def _build(cls, data: Mapping[str, Any], prefix: str, problems: list[str]):
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if key not in known:
            problems.append(f"{path}: unknown key{did_you_mean(str(key), known)} (known: {', '.join(known)})")
            continue
        if cls is RunConfig and key in _SECTION_TYPES:
            if key == "lora" and value is False:  # explicit full fine-tuning
                kwargs[key] = None
                continue
            if key == "lora" and value is None:  # `lora:` with everything commented out: LoRA with defaults,
                value = {}                         # never a silent switch to full fine-tuning
            if not isinstance(value, Mapping):
                problems.append(f"{path}: expected a mapping of settings, got {type(value).__name__}")
                continue
            kwargs[key] = _build(_SECTION_TYPES[key], value, f"{path}.", problems)
        elif cls is RunConfig and key == "rewards":
            if not isinstance(value, list):
                problems.append(f"{path}: expected a list of rewards, got {type(value).__name__}")
                continue
            specs = []
            for i, item in enumerate(value):
                if isinstance(item, str):  # shorthand: a builtin name alone
                    item = {"name": item}
                if not isinstance(item, Mapping):
                    problems.append(f"{path}[{i}]: expected a mapping like {{name: numeric_answer}}, got {item!r}")
                    continue
                spec = _build(RewardSpec, item, f"{path}[{i}].", problems)
                if spec is not None:
                    specs.append(spec)
            kwargs[key] = specs
        elif cls is RunConfig and key == "rloo":
            if not isinstance(value, Mapping):
                problems.append(f"{path}: expected a mapping of RLOOConfig options, got {type(value).__name__}")
                continue
            kwargs[key] = {k: _yaml_number(v) for k, v in value.items()}
        else:
            if isinstance(value, bool) and path in ON_OFF_SETTINGS:
                value = "on" if value else "off"
            if not _type_ok(value, hints[key]):
                problems.append(f"{path}: {value!r} has the wrong type (expected {_type_name(hints[key])})")
                continue
            kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:  # pragma: no cover - all keys were checked above
        problems.append(f"{prefix or 'config'}: {exc}")
        return None


_FLOAT_TEXT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


def _yaml_number(value: Any) -> Any:
    """PyYAML reads `5e-5` (no dot) as a string, a classic trap for learning rates: read it as a number."""
    if isinstance(value, str) and _FLOAT_TEXT.match(value.strip()):
        return float(value)
    return value


def _type_name(annotation) -> str:
    args = typing.get_args(annotation)
    if args:
        return " or ".join(_type_name(a) for a in args)
    return "null" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


# The most values (mappings, lists and scalars, counted as YAML aliases expand them) a config may hold. The largest
# preset has under 200; nine levels of nine aliases — a few hundred bytes — expand to 387 million, which validation
# (it formats values into its messages) would never finish.
MAX_CONFIG_VALUES = 100_000


def _larger_than(value: Any, limit: int) -> bool:
    """Whether `value` holds more than `limit` values, counting a shared (aliased) part at each place it appears;
    stops counting at the limit, so a bomb costs no more than `limit` steps."""
    seen, stack = 0, [value]
    while stack:
        item = stack.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False


def apply_overrides(data: Mapping[str, Any], overrides: list[str]) -> dict:
    """Apply `key.sub=value` overrides (value parsed as YAML; list items by index: rewards.0.weight=2)."""
    data = copy.deepcopy(dict(data))
    problems = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            problems.append(f"override {item!r}: expected key.sub=value, e.g. rloo.max_steps=20")
            continue
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node: Any = data
        parts = key.strip().split(".")
        try:
            for part in parts[:-1]:
                if isinstance(node, list):
                    node = node[int(part)]
                else:
                    if node.get(part) is None:  # absent, or an empty section such as `lora:`
                        node[part] = {}
                    node = node[part]
            last = parts[-1]
            if isinstance(node, list):
                node[int(last)] = value
            else:
                node[last] = value
        except (ValueError, IndexError, TypeError, AttributeError):
            problems.append(f"override {item!r}: {key} does not name a setting in this config")
    if problems:
        raise ConfigError(problems, "the command-line overrides")
    return data


def _field_metadata(section: str, name: str) -> Mapping[str, str]:
    if section == "rloo":
        label, help_text = RLOO_FIELDS[name]
        return {"label": label, "help": help_text}
    cls = _SECTION_TYPES.get(section, RewardSpec if section == "rewards" else RunConfig)
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.metadata
    raise KeyError(f"{section}.{name}")


def field_help(section: str, name: str) -> str:
    """Help text of one field, for the UI and the docs (e.g. field_help('lora', 'r'))."""
    return _field_metadata(section, name).get("help", "")


def field_label(section: str, name: str) -> str:
    """The app form's label of one field (e.g. field_label('lora', 'r') == 'LoRA rank (r)'); KeyError if the form has none."""
    label = _field_metadata(section, name).get("label")
    if not label:
        raise KeyError(f"{section}.{name} has no label: the form does not show it")
    return label


def field_labels() -> dict[str, str]:
    """`section.key` -> the form's label, for every field the form shows under its own name."""
    labels = {f"rloo.{key}": label for key, (label, _help_text) in RLOO_FIELDS.items()}
    for section, cls in _SECTION_TYPES.items():
        labels.update({f"{section}.{f.name}": f.metadata["label"] for f in dataclasses.fields(cls) if "label" in f.metadata})
    return labels

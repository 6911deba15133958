"""Every label, help line and message the app shows, in one place (so wording stays consistent).

A field that means the same on the page and in a config file takes its label and help line from the config's own
(`config.field_label`, `config.field_help`), so the two never drift apart. Fields typed differently on the page (a
model or data choice, comma-separated module names, a dropdown instead of `auto`/`chat`/`plain`) keep a page-worded
help line here.

And the page's words for problems written in config words (`page_words`, `label`, at the end): config validation,
the data check and the export speak to the command line (`rloo.num_generations`, `set data.prompt_column`,
`--format merged`); the page shows the same problem with its own labels (“Completions per prompt (k)”, “Prompt
column”, the Export tab's Format) and, where one fits, a value to use. The labels come from the config's fields
(`config.field_labels`) and the ones here, so each is written once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..config import FOUR_BIT_NEEDS_LORA, NO_REWARDS, batch_sizes_around, field_help, field_label, field_labels
from ..rewards.scoring import NONE_COUNTS_AS_ZERO

TITLE = "RLOO Studio"
INTRO = (
    "Fine-tune a language model with **RLOO** (REINFORCE Leave-One-Out): for every prompt the model writes "
    "several answers, your reward functions score them, and each answer is pushed up or down by how much "
    "better it scored than the *other* answers to the same prompt. Go through the tabs from left to right; "
    "every setting has a short explanation, and the defaults train the bundled demo in about five minutes."
)

# ---- Model & hardware -------------------------------------------------------------------------
DEVICE_DETECTING = "Detecting the GPU… (a child process asks PyTorch; this page stays usable meanwhile)"
PRESET = "Start from a preset"
PRESET_INFO = "A complete, tested set of settings; pick one, then adjust anything below."
MODEL = field_label("model", "name_or_path")
MODEL_INFO = "`demo` is the bundled 0.8M-parameter model (works offline). Or a Hugging Face id such as Qwen/Qwen3-0.6B, or a local folder."
PRECISION = "Weights"
PRECISION_CHOICES = ("4-bit (QLoRA: least memory)", "16-bit (bf16/fp16 LoRA: faster, more memory)", "32-bit (CPU and tiny models)")
PRECISION_INFO = "4-bit stores the base model in a quarter of the memory; it needs LoRA and a CUDA GPU to be fast."
METHOD = "What to train"
METHOD_CHOICES = ("LoRA adapter (recommended)", "Full fine-tuning (tiny models only)")
METHOD_INFO = "LoRA trains small added matrices and leaves the model untouched; full fine-tuning changes every weight."
LORA_R = field_label("lora", "r")
LORA_R_INFO = field_help("lora", "r")
LORA_ALPHA = field_label("lora", "alpha")
LORA_ALPHA_INFO = field_help("lora", "alpha")
LORA_DROPOUT = field_label("lora", "dropout")
LORA_DROPOUT_INFO = field_help("lora", "dropout")
LORA_TARGETS = field_label("lora", "target_modules")
LORA_TARGETS_INFO = "`all-linear`, or names separated by commas (q_proj, v_proj, …)."
MAX_SEQ = field_label("model", "max_seq_length")
MAX_SEQ_INFO = field_help("model", "max_seq_length")
BACKEND = field_label("model", "backend")
BACKEND_INFO = "auto: Unsloth when it can be imported (its own GPU kernels), else plain transformers + PEFT. Both train with the same settings."
FAST_GENERATION = field_label("model", "fast_generation")
FAST_GENERATION_INFO = ("vLLM writes the completions on an NVIDIA GPU (auto: where `python launch.py --setup-fast-generation` "
                        "was run). Not yet measured on a GPU. Nothing changes on a computer without one.")
GRAD_CKPT = field_label("model", "gradient_checkpointing")
GRAD_CKPT_INFO = field_help("model", "gradient_checkpointing")
ESTIMATE_PENDING = "Memory estimate: computing…"
# What limits a GPU estimate, from the GPU measurements so far (benchmarks/results/gpu_check_h200_speed.md).
ESTIMATE_GPU_CHECKED = ("This is arithmetic, checked against one GPU run so far: training Qwen3-0.6B with Unsloth took "
                        "1.0 GiB more than it said (with plain transformers, 0.2 GiB less). Leave some room.")
ESTIMATE_UNKNOWN = ("Memory estimate: this model's shape is unknown (not a local folder, not in the Hugging Face cache, not in "
                    "the built-in table of popular models). It will be known once the model has been downloaded.")
SHRINK = "Shrink to fit"
SHRINK_UNDO = "Undo shrink to fit"
SHRINK_ADVICE = "This will not fit: press **Shrink to fit** for settings that do (4-bit, fewer or shorter completions, a smaller batch)."
SHRINK_ADVICE_RAM = ("This may not fit in this computer's memory (it would swap, or the run would be killed): press **Shrink to "
                     "fit** for settings that do (a smaller batch with the same completions per step, then less memory per "
                     "layer, fewer or shorter completions).")

# ---- Data ---------------------------------------------------------------------------------------
SOURCE = "Where the prompts come from"
SOURCE_CHOICES = ("Bundled demo (arithmetic word problems)", "A file on this computer", "A Hugging Face dataset")
UPLOAD = "Upload a .jsonl, .json, .csv or .parquet file"
LOCAL_PATH = "File path"
LOCAL_PATH_INFO = "Filled in by the upload, or type the path of a file on this computer."
HUB_ID = "Dataset id"
HUB_ID_INFO = "e.g. openai/gsm8k (needs the network the first time; cached afterwards)."
HUB_CONFIG = field_label("data", "config_name")
HUB_CONFIG_INFO = "Only for datasets with several, e.g. `main` for openai/gsm8k."
SPLIT = field_label("data", "split")
PROMPT_COLUMN = field_label("data", "prompt_column")
PROMPT_COLUMN_INFO = field_help("data", "prompt_column")
ANSWER_COLUMN = field_label("data", "answer_column")
ANSWER_COLUMN_INFO = ("The builtin rewards that check answers (numeric_answer, exact_match) compare the model's answer with this "
                      "column: their answer_column in the Rewards tab follows it. Every column reaches your reward functions by name.")
SYSTEM_PROMPT = field_label("data", "system_prompt")
SYSTEM_PROMPT_INFO = field_help("data", "system_prompt")
PROMPT_FORMAT = field_label("data", "prompt_format")
PROMPT_FORMAT_INFO = "auto: chat messages when the model has a chat template, else plain text."
TEST_SPLIT = field_label("data", "test_split")
TEST_SPLIT_INFO = "A split name (e.g. test) or a file path (the upload below fills it in); left empty, the fraction is held out instead."
TEST_UPLOAD = "Upload a held-out file (.jsonl, .json, .csv or .parquet, the same columns as the training data)"
TEST_FRACTION = field_label("data", "test_fraction")
MAX_TRAIN = field_label("data", "max_train_samples")
PREVIEW_DATA = "Load and check the data"

# ---- Rewards --------------------------------------------------------------------------------------
REWARDS_INTRO = (
    "The reward is what the model learns to increase. Tick the builtin rewards you want and give each a weight; "
    "the total reward is the weighted sum. Parameters are JSON (`{}` = the defaults). Your own functions go in the "
    "code box: `def my_reward(completions, **kwargs) -> list[float | None]`, one score per completion. "
    + NONE_COUNTS_AS_ZERO + "."
)
BUILTIN_TABLE = "Builtin rewards"
CODE = "Your reward functions (Python; saved with the run)"
CODE_TEMPLATE = '''# Your reward functions: TRL's contract. Each gets the completions (and every dataset column,
# e.g. `answer`, by keyword) and returns one float (or None) per completion.
# Tick "use" next to a function's name in the table below to train with it.

def short_answer(completions, **kwargs):
    """1.0 when the text after </think> is at most 6 characters long."""
    scores = []
    for completion in completions:
        text = completion[0]["content"] if isinstance(completion, list) else completion
        answer = text.split("</think>")[-1].strip()
        scores.append(1.0 if len(answer) <= 6 else 0.0)
    return scores
'''
USER_TABLE = "Functions found in your code"
PREVIEW_INTRO = ("The model writes k completions per prompt (the Train tab's settings), every ticked reward scores them, and "
                 "each completion's **advantage** is its total minus the mean total of the *other* completions to the same "
                 "prompt — what RLOO pushes up or down. Your code runs in a separate process with a time limit.")
CHECK_CODE = "Check the code"
# The judge: a reward written in words, scored by a language model (rewards.judge).
JUDGE_USE = "Score with an LLM judge (a rubric in words)"
JUDGE_RUBRIC_TEMPLATE = "Rubric template"
JUDGE_RUBRIC = "Judge rubric (what a good completion is, in words)"
JUDGE_SOURCE = "Judge model"
JUDGE_BASE, JUDGE_FOLDER_CHOICE, JUDGE_SERVER_CHOICE = "the run's base model", "a local model folder", "an OpenAI-compatible server"
JUDGE_FOLDER = "Judge model folder"
JUDGE_URL = "Judge server URL"
JUDGE_SERVER_MODEL = "Judge server's model name"
JUDGE_KEY_ENV = "API key variable (its name, never the key)"
JUDGE_WEIGHT = "Judge weight"
JUDGE_LOW, JUDGE_HIGH = "Judge scale from", "Judge scale to"
JUDGE_TEMPLATE = "Judge prompt template"
JUDGE_INTRO = ("### An LLM judge\nWhen what you want is easier to say in words than to write in Python, a judge model scores each "
               "completion by your rubric; its score on your scale becomes 0–1 and counts like any reward. The preview below "
               "shows each score with the judge's own words. A small judge is a weak one: check what it scores before training.")
SCAN_KEEP_MIXED = "Only the mixed prompts (drop always and never solved)"
SCAN_KEEP_BAND = "Prompts whose mean total reward lies in a band"

# ---- Train ----------------------------------------------------------------------------------------
RLOO_MAIN = ("num_generations", "per_device_train_batch_size", "max_completion_length", "learning_rate", "beta", "temperature", "max_steps")
RLOO_ADVANCED = ("num_iterations", "epsilon", "normalize_advantages", "top_p", "seed", "save_steps")
RLOO_FIELDS = {key: (field_label("rloo", key), field_help("rloo", key)) for key in RLOO_MAIN + RLOO_ADVANCED}  # key: (label, help)
RUN_NAME = field_label("output", "run_name")
START = "Start training"
STOP = "Stop"
RESUME = "Resume"
NO_RUN = "No run yet. Choose your settings in the tabs, then press **Start training**."
ONE_AT_A_TIME = "Another run is training; one run trains at a time."

STATE_TEXT = {
    "queued": "starting — loading the model and data",
    "running": "training",
    "stopping": "stopping after the current step (a checkpoint is saved)",
    "stopped": "stopped — press Resume to continue from the last checkpoint",
    "finished": "finished",
    "failed": "failed",
    "interrupted": "failed — the training process ended unexpectedly (crash, kill or shutdown); Resume continues from the last checkpoint",
    "unknown": "unknown (status.json is missing or unreadable)",
}

# A stop asked mid-cycle waits for the generation cycle's end (num_iterations > 1): a resume then continues exactly.
STOPPING_AT = "stopping at step {step}, where this generation cycle ends (a checkpoint is saved)"

# ---- Runs -----------------------------------------------------------------------------------------
RUNS_HEADERS = ["run", "state", "step", "reward (last)", "started", "model"]
DELETE_CONFIRM = "Yes, delete this run and every file in it"


# ---- the page's words for problems written in config words ----





CONFIG_LABELS = {
    **field_labels(),  # every field the form shows under its own name
    # Fields the form shows through a widget of its own: one choice for precision and dtype, one for the data's source.
    "model.load_in_4bit": PRECISION, "model.dtype": PRECISION, "data.source": SOURCE,
    "params.answer_column": ANSWER_COLUMN, "answer_column": ANSWER_COLUMN,
}
_KEY = re.compile(r"(?<![\w./])(?:(?:rloo|model|lora|data|output)\.[a-z_0-9]+|params\.answer_column|answer_column)(?![\w])")
_FORMAT = re.compile(r"--format (\w+)")
_GEN_BATCH = re.compile(r"rloo: the generation batch \((?:per_device_train_batch_size (\d+) x (\d+) process\(es\) x "
                        r"steps_per_generation (\d+)|generation_batch_size) = (\d+)\) is not divisible by num_generations (\d+)[^\n]*")


def label(key: str) -> str:
    return f"“{CONFIG_LABELS[key]}”" if key in CONFIG_LABELS else f"`{key}`"


# Problems the page says whole, naming what to choose where instead of the config's sections and values.
_WHOLE = {
    NO_REWARDS: f"Rewards: none chosen — tick at least one builtin reward, one of your functions, or “{JUDGE_USE}”",
    FOUR_BIT_NEEDS_LORA: f"{label('model.load_in_4bit')}: 4-bit weights cannot be trained directly; choose "
                         f"“{METHOD_CHOICES[0]}” under “{METHOD}”, or 16-bit or 32-bit {label('model.load_in_4bit')} "
                         "for full fine-tuning",
}


def _batch_problem(m: re.Match) -> str:
    k = int(m.group(5))
    k_label, batch_label = label("rloo.num_generations"), label("rloo.per_device_train_batch_size")
    if m.group(1) is None:  # a preset's generation_batch_size, which no widget shows
        return f"the preset's generation batch {m.group(4)} is not divisible by {k_label} {k}: choose a k that divides it"
    batch, factor = int(m.group(1)), int(m.group(2)) * int(m.group(3))
    low, high = batch_sizes_around(batch, factor, k)
    use = f"use {low} or {high}" if low > 0 else f"use {high}"
    return (f"{batch_label} {batch} is not divisible by {k_label} {k}: every prompt needs all its {k} completions in one "
            f"step — {use}")


def page_words(problem: str) -> str:
    """The problem with config keys replaced by the page's labels (the CLI keeps the original)."""
    if problem in _WHOLE:
        return _WHOLE[problem]
    problem = _GEN_BATCH.sub(lambda m: _batch_problem(m), problem)
    problem = re.sub(r"^\s*(?:rloo|model|lora|data|output)\.[a-z_0-9]+(?=:)", lambda m: label(m.group(0).strip()), problem)
    problem = _FORMAT.sub(lambda m: f"the Export tab's Format “{m.group(1)}”", problem)
    return _KEY.sub(lambda m: label(m.group(0)) if m.group(0) in CONFIG_LABELS else m.group(0), problem)


_KEY_IN_BRACKETS = re.compile(r" \((?:rloo|model|lora|data|output)\.[a-z_0-9]+\)")


def without_config_keys(message: str) -> str:
    """A message that names a setting by its label and its config key in brackets ("“max completion length”
    (rloo.max_completion_length)"), as the command line prints it, without the key: the page says the label only."""
    return _KEY_IN_BRACKETS.sub("", message)


# A preset's note says what it downloads; once a local folder is the model, the page says that folder instead, in a
# form that turns back into the preset's words when the model is no longer a local folder.
_DOWNLOADS_MODEL = re.compile(r"Downloads (\S+) (\([^)]*\) )?once")
_DOWNLOADS_MODEL_AND = re.compile(r"downloads the model and (.+?) once")
_LOCAL_MODEL = re.compile(r"Uses the local folder `[^`]*` instead of downloading (\S+) (\([^)]*\) )?once")
_LOCAL_MODEL_AND = re.compile(r"the model is the local folder `[^`]*`; downloads (.+?) once")


def preset_notes_for(notes: str | None, model: str | None) -> str | None:
    """The preset's note for the model now chosen: a local folder is not downloaded, so the note names the folder. No
    note yet (a change event read the notes before the page's load wrote them): skipped, so that its answer, coming
    after the load's, does not wipe them."""
    if not notes:
        import gradio as gr  # (only here: the rest of this module is words)

        return gr.skip()
    notes = _LOCAL_MODEL.sub(lambda m: f"Downloads {m.group(1)} {m.group(2) or ''}once", notes)
    notes = _LOCAL_MODEL_AND.sub(lambda m: f"downloads the model and {m.group(1)} once", notes)
    folder = (model or "").strip()
    if not folder or not Path(folder).expanduser().is_dir():
        return notes
    notes = _DOWNLOADS_MODEL.sub(lambda m: f"Uses the local folder `{folder}` instead of downloading {m.group(1)} "
                                           f"{m.group(2) or ''}once", notes)
    return _DOWNLOADS_MODEL_AND.sub(lambda m: f"the model is the local folder `{folder}`; downloads {m.group(1)} once", notes)


# ---- the memory estimate and the optimiser in the page's words ----
# The estimator speaks the command line's words (`rloo-studio estimate`: KV cache, logits, allocator slack); the Model &
# hardware tab shows each part under a plain label with that name after it, and its own lines behind "details".
MEMORY_PARTS = {
    "weights": "the model itself (weights)",
    "LoRA parameters, gradients, optimizer": "what training changes: the adapter and its update state (LoRA parameters, "
                                             "gradients, optimizer)",
    "gradients and optimizer (full fine-tuning)": "what training changes: every weight's update state (gradients and "
                                                  "optimizer, full fine-tuning)",
    "reference model (beta > 0, no LoRA)": "a second copy of the model to stay close to (reference model, KL penalty > 0)",
    "KV cache (generation)": "writing the completions (KV cache)",
    "vLLM share (generation)": "writing the completions with fast generation (vLLM share)",
    "activations (training)": "learning from the completions: intermediate results (activations)",
    "logits (training)": "learning from the completions: a score for every word (logits)",
    "CUDA context": "the GPU's driver and libraries (CUDA context)",
    "allocator slack": "room PyTorch holds back (allocator slack)",
}
MEMORY_PEAK_NOTES = {  # vram's line on where the peak lies → what lowers it, in the form's fields
    "the peak is during generation (KV cache); fewer or shorter completions per step lower it most":
        f"Most memory is needed while the completions are written: fewer {label('rloo.num_generations')} or a smaller "
        f"{label('rloo.max_completion_length')} lower it most.",
    "the peak is during the training pass (activations and logits); a smaller per-device batch with gradient accumulation "
    "lowers it most":
        f"Most memory is needed while the model learns from the completions: a smaller "
        f"{label('rloo.per_device_train_batch_size')} lowers it most (Shrink to fit keeps the completions per step the same "
        "by learning from them in more passes).",
}
_TRAINABLE = re.compile(r"^([\d,]+) trainable parameters of ([\d,]+)$")
# Settings Shrink to fit changes, named as the page names them (a field's label, else what it does; the name after it).
SETTING_WORDS = {
    "model.gradient_checkpointing": f"recomputing instead of keeping intermediate results ({field_label('model', 'gradient_checkpointing')}, Model tab, Advanced)",
    "rloo.gradient_accumulation_steps": "passes per step (gradient accumulation steps; no field on this page: kept with the settings)",
    "lora.r": f"the adapter's size ({field_label('lora', 'r')})",
}
# The trainer's optimisers (TRL/transformers names) in words; the name follows in brackets.
OPTIMISERS = {
    "adamw_torch": "the usual optimiser", "adamw_torch_fused": "the usual optimiser", "adamw_hf": "the usual optimiser",
    "adamw_8bit": "the usual optimiser, its state kept in 8 bits to save memory",
    "adamw_bnb_8bit": "the usual optimiser, its state kept in 8 bits to save memory",
    "paged_adamw_8bit": "the usual optimiser, its state kept in 8 bits and moved to the computer's memory when the GPU runs short",
    "paged_adamw_32bit": "the usual optimiser, its state moved to the computer's memory when the GPU runs short",
    "adafactor": "a low-memory optimiser", "sgd": "plain gradient steps",
}
SCHEDULES = {"linear": "then falling steadily to 0", "cosine": "then falling along a curve to 0", "constant": "then constant",
             "constant_with_warmup": "then constant", "cosine_with_restarts": "then falling to 0 and rising again, several times"}


def memory_part(name: str) -> str:
    """An estimate part under the page's label (the estimator's name in brackets); a part it does not list, as it is."""
    return MEMORY_PARTS.get(name, name)


def memory_note(note: str) -> str:
    """One of the estimator's notes in the page's words: where the peak lies and what lowers it, how much is trained;
    any other note with its config keys turned into labels (`page_words`)."""
    if note in MEMORY_PEAK_NOTES:
        return MEMORY_PEAK_NOTES[note]
    trained = _TRAINABLE.match(note)
    if trained:
        part, whole = (int(n.replace(",", "")) for n in trained.groups())
        if part == whole:
            return f"Training changes every one of the model's {whole:,} numbers."
        share = f"{part / whole:.1%}".replace("%", " %") if whole else "?"
        return f"Training changes {part:,} numbers: {share} as many as the model holds ({whole:,})."
    return page_words(note)


def setting_words(key: str) -> str:
    """A setting (`section.key`) as the page names it: its field's label, or what it does with its name in brackets."""
    if key in SETTING_WORDS:
        return SETTING_WORDS[key]
    if key in CONFIG_LABELS:
        return label(key)
    return f"{key.partition('.')[2].replace('_', ' ')} (no field on this page: kept with the settings)"


def value_words(key: str, value) -> str:
    """A setting's value as the page shows it: 4-bit weights as the Weights choice, on/off for a switch, else the number."""
    if key == "model.load_in_4bit":
        return f"“{PRECISION_CHOICES[0]}”" if value else "16- or 32-bit"
    if isinstance(value, bool):
        return "on" if value else "off"
    return json.dumps(value)


def optimiser_words(rloo: dict) -> str:
    """The trainer's optimiser, learning-rate schedule, weight decay and seed in words, each name in brackets
    (`batching.plan_words` is the command line's line of the same values)."""
    optim = str(getattr(rloo["optim"], "value", rloo["optim"]))
    schedule = str(getattr(rloo["lr_scheduler_type"], "value", rloo["lr_scheduler_type"]))
    warmup, decay = float(rloo["warmup_steps"]), float(rloo["weight_decay"])
    if 0 < warmup < 1:  # transformers 5 reads a warmup_steps below 1 as a fraction of the run's steps
        start = f"the learning rate rising over the first {100 * warmup:g} % of the steps (warm-up)"
    elif warmup >= 1:
        start = f"the learning rate rising over the first {warmup:g} steps (warm-up)"
    else:
        start = "the full learning rate from the first step (no warm-up)"
    pull = f"weights pulled a little towards 0 (weight decay {decay:g})" if decay else "no pull towards 0 (weight decay 0)"
    return (f"Updates: {OPTIMISERS.get(optim, 'an optimiser')} ({optim}); {start}, {SCHEDULES.get(schedule, 'then as scheduled')} "
            f"({schedule} schedule); {pull}; random seed {rloo['seed']}.")


def as_written(words: str) -> str:
    """`words` (a model's reply, a reward's error, a tag it looks for) as Markdown that shows it as written: the page's
    Markdown takes `<think>` for an HTML tag and drops it ("it reads 'Score: +17601'" for "Score: +17</think>601").
    Not for text inside a code span, which shows the escapes themselves."""
    return words.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

"""The page's words for problems written in config words: a config key becomes the label the page shows.

Config validation, the data check and the export speak to the command line (`rloo.num_generations`,
`set data.prompt_column`, `--format merged`); the page shows the same problem with its own labels
(“Completions per prompt (k)”, “Prompt column”, the Export tab's Format) and, where one fits, a
value to use. The labels come from the config's fields (`config.field_labels`) and `text`, so each is written once.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..config import FOUR_BIT_NEEDS_LORA, batch_sizes_around, field_labels
from . import text

CONFIG_LABELS = {
    **field_labels(),  # every field the form shows under its own name
    # Fields the form shows through a widget of its own: one choice for precision and dtype, one for the data's source.
    "model.load_in_4bit": text.PRECISION, "model.dtype": text.PRECISION, "data.source": text.SOURCE,
    "params.answer_column": text.ANSWER_COLUMN, "answer_column": text.ANSWER_COLUMN,
}
_KEY = re.compile(r"(?<![\w./])(?:(?:rloo|model|lora|data|output)\.[a-z_0-9]+|params\.answer_column|answer_column)(?![\w])")
_FORMAT = re.compile(r"--format (\w+)")
_GEN_BATCH = re.compile(r"rloo: the generation batch \((?:per_device_train_batch_size (\d+) x (\d+) process\(es\) x "
                        r"steps_per_generation (\d+)|generation_batch_size) = (\d+)\) is not divisible by num_generations (\d+)[^\n]*")


def label(key: str) -> str:
    return f"“{CONFIG_LABELS[key]}”" if key in CONFIG_LABELS else f"`{key}`"


# Problems the page says whole, naming what to choose where instead of the config's sections and values.
_WHOLE = {
    FOUR_BIT_NEEDS_LORA: f"{label('model.load_in_4bit')}: 4-bit weights cannot be trained directly; choose "
                         f"“{text.METHOD_CHOICES[0]}” under “{text.METHOD}”, or 16-bit or 32-bit {label('model.load_in_4bit')} "
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
    """The preset's note for the model now chosen: a local folder is not downloaded, so the note names the folder."""
    if not notes:
        return notes
    notes = _LOCAL_MODEL.sub(lambda m: f"Downloads {m.group(1)} {m.group(2) or ''}once", notes)
    notes = _LOCAL_MODEL_AND.sub(lambda m: f"downloads the model and {m.group(1)} once", notes)
    folder = (model or "").strip()
    if not folder or not Path(folder).expanduser().is_dir():
        return notes
    notes = _DOWNLOADS_MODEL.sub(lambda m: f"Uses the local folder `{folder}` instead of downloading {m.group(1)} "
                                           f"{m.group(2) or ''}once", notes)
    return _DOWNLOADS_MODEL_AND.sub(lambda m: f"the model is the local folder `{folder}`; downloads {m.group(1)} once", notes)

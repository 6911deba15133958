"""What a model folder holds: the tokenizer files, and the checks that a local folder is complete before loading it.

Both the engine (training's pre-flight, export) and the reward preview's scoring child use these, and the
preview may not import the engine, so they live in this light module (no torch).
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import ModelError

# Any of these beside config.json makes a loadable tokenizer (fast, sentencepiece, BPE or WordPiece files).
LOADABLE_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model")
# Everything of a tokenizer worth copying with the weights (an export, a merged model): the loadable files, the chat
# template and the special-token maps.
TOKENIZER_FILES = LOADABLE_TOKENIZER_FILES + ("special_tokens_map.json", "chat_template.jinja", "chat_template.json",
                                             "merges.txt", "added_tokens.json")


def missing_tokenizer_error(folder: str | Path):
    """A ModelError when a local model folder has weights but no tokenizer files, else None.

    Checked before anything is loaded (training's pre-flight, the preview's scoring child), because
    transformers' own error for this ("Couldn't instantiate the backend tokenizer from one of: .")
    does not say which files are missing.
    """
    folder = Path(folder)
    if not folder.is_dir() or any((folder / name).is_file() for name in LOADABLE_TOKENIZER_FILES):
        return None
    present = sorted(p.name for p in folder.iterdir())
    shown = ", ".join(present[:8]) + (", ..." if len(present) > 8 else "")
    return ModelError(
        f"the model folder {folder} has no tokenizer (it holds {shown or 'nothing'})",
        "training and the reward preview turn text into tokens with the tokenizer saved beside the weights: "
        f"one of {', '.join(LOADABLE_TOKENIZER_FILES)}",
        "copy the tokenizer files of the model these weights came from into the folder (e.g. "
        "`AutoTokenizer.from_pretrained(BASE).save_pretrained(FOLDER)`), or point model.name_or_path at the original model",
    )


def missing_shards_error(folder: Path) -> ModelError | None:
    """A ModelError when a sharded model's index (`*.safetensors.index.json`, `*.bin.index.json`) lists
    weight files the folder lacks — an interrupted download or copy — else None."""
    for index in sorted(folder.glob("*.index.json")):
        try:
            files = sorted(set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values()))
        except (OSError, ValueError, AttributeError):
            return ModelError(f"the model folder {folder} has an unreadable {index.name}",
                              "it lists which file holds each weight, and it is not valid JSON",
                              "download or copy the model folder again")
        absent = [f for f in files if not (folder / f).is_file()]
        if absent:
            shown = ", ".join(absent[:3]) + (f" and {len(absent) - 3} more" if len(absent) > 3 else "")
            return ModelError(f"the model folder {folder} is missing {shown} ({len(absent)} of the {len(files)} weight files "
                              f"that {index.name} lists)",
                              "a download or copy of the model stopped before the end",
                              "download or copy the missing file(s) into the folder again (or the whole model)")
    return None

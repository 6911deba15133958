"""A tokenizer llama.cpp's converter can read, for a character-level tokenizer it cannot.

One job: given the merged model folder, say whether its tokenizer needs translating for the GGUF
converter and, if so, write the converter's input folder with the translation in it.

llama.cpp knows SentencePiece, BPE and WordPiece vocabularies. A character-level `WordLevel`
tokenizer (the bundled demo model's: every character of its alphabet is one token, plus a few whole
tokens such as `<|im_start|>`, `<think>` and the chat roles) is none of them, and the converter
refuses it. It is, exactly, a SentencePiece `CHAR` model: one piece per character, the whole tokens
as control pieces (special ones) or user-defined pieces (the others, matched anywhere in the text as
the Hugging Face tokenizer matches them), the space written as SentencePiece's "▁" (U+2581), no dummy
prefix, no whitespace normalisation, no byte fallback. So for such a tokenizer we write that
`tokenizer.model` (pieces in id order, so every id stays the same) into a copy of the folder that only
the converter reads, and the converter takes its SentencePiece path, as for Llama 2 or Mistral.

In that copy's `tokenizer_config.json` we also state what the Hugging Face tokenizer does implicitly:
no beginning token added (`add_bos_token: false`), no end token added, no space put before the text
(`add_prefix_space: false`). Without them llama.cpp assumes SentencePiece's usual defaults (a BOS
token, id 1 here, before every prompt, and a leading space) and the GGUF model would read different
tokens than the model was trained on.

Other tokenizers pass through unchanged (the converter reads the merged folder itself), and a
tokenizer that is neither convertible nor character-level is left for the converter to refuse.
`merged/` itself is never changed: it is also the export's Hugging Face copy of the model.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..errors import StudioError

SPIECE_SPACE = "\u2581"  # SentencePiece's visible space, the form spaces take inside its pieces
INPUT_DIR = "gguf-input"  # the converter's input folder, beside merged/, removed after converting


def _load(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def character_vocab(tokenizer_json: dict) -> list[tuple[str, str]] | None:
    """The pieces of a character-level WordLevel tokenizer, in id order, as (text, kind); None for any other tokenizer.

    kind is "unknown" (its unk token), "control" (special added tokens), "user" (other added tokens) or "char".
    Character-level means: WordLevel; a pre-tokenizer that isolates every single character (Split on the
    regex `.`); no normalizer; a decoder that only joins the pieces (Fuse); nothing added around the text by
    the post-processor; every vocabulary entry that is not an added token is one character; ids 0..n-1, each
    used once. Anything else is not something a CHAR model reproduces exactly, so it is not translated.
    """
    model = tokenizer_json.get("model") or {}
    if model.get("type") != "WordLevel" or tokenizer_json.get("normalizer") is not None:
        return None
    pre = tokenizer_json.get("pre_tokenizer") or {}
    if pre.get("type") != "Split" or (pre.get("pattern") or {}).get("Regex") != "." or pre.get("behavior") != "Isolated" or pre.get("invert"):
        return None
    if (tokenizer_json.get("decoder") or {}).get("type") != "Fuse":
        return None
    post = tokenizer_json.get("post_processor")
    if post is not None and not (post.get("type") == "TemplateProcessing" and post.get("single") == [{"Sequence": {"id": "A", "type_id": 0}}]):
        return None
    added = {t["id"]: t for t in tokenizer_json.get("added_tokens") or [] if isinstance(t, dict) and isinstance(t.get("id"), int)}
    by_id: dict[int, str] = {}
    for text, i in (model.get("vocab") or {}).items():
        if i in by_id:
            return None
        by_id[i] = text
    for i, token in added.items():
        if by_id.get(i, token.get("content")) != token.get("content"):
            return None
        by_id[i] = token["content"]
    if not by_id or sorted(by_id) != list(range(len(by_id))):
        return None
    unk = model.get("unk_token")
    pieces = []
    for i in range(len(by_id)):
        text = by_id[i]
        if text == unk:
            kind = "unknown"
        elif i in added:
            kind = "control" if added[i].get("special") else "user"
        elif len(text) == 1:
            kind = "char"
        else:
            return None  # a multi-character entry that is not an added token: not character-level
        pieces.append((text, kind))
    if sum(kind == "unknown" for _, kind in pieces) != 1:
        return None  # SentencePiece needs exactly one unknown piece
    if " " in by_id.values() and SPIECE_SPACE in by_id.values():
        return None  # both would become the same piece
    return pieces


def sentencepiece_model(pieces: list[tuple[str, str]]) -> bytes:
    """The serialized SentencePiece CHAR model with these pieces (ids = list positions)."""
    from sentencepiece import sentencepiece_model_pb2 as spm_pb2

    proto = spm_pb2.ModelProto()
    types = {"unknown": proto.SentencePiece.UNKNOWN, "control": proto.SentencePiece.CONTROL,
             "user": proto.SentencePiece.USER_DEFINED, "char": proto.SentencePiece.NORMAL}
    for text, kind in pieces:
        piece = proto.pieces.add()
        piece.piece = text.replace(" ", SPIECE_SPACE) if kind == "char" else text
        piece.type = types[kind]
        piece.score = 0.0  # a CHAR model never merges, so scores choose nothing
    spec = proto.trainer_spec
    spec.model_type = spm_pb2.TrainerSpec.CHAR
    spec.vocab_size = len(pieces)
    spec.byte_fallback = False
    spec.unk_id = next(i for i, (_, kind) in enumerate(pieces) if kind == "unknown")
    spec.bos_id = spec.eos_id = spec.pad_id = -1  # the Hugging Face files name these for the converter
    spec.unk_piece = pieces[spec.unk_id][0]
    norm = proto.normalizer_spec
    norm.name = "identity"
    norm.add_dummy_prefix = False
    norm.remove_extra_whitespaces = False
    norm.escape_whitespaces = True
    return proto.SerializeToString()


def _check_same_ids(tokenizer_file: Path, model_file: Path, pieces: list[tuple[str, str]]) -> None:
    """SentencePiece must read every character and user-defined token of the vocabulary as the original tokenizer does.

    Control tokens are left out: SentencePiece never matches them in text (llama.cpp does, when it parses special
    tokens, by their text, which the converter copies unchanged).
    """
    import sentencepiece
    from tokenizers import Tokenizer

    sample = "".join(text for text, kind in pieces if kind in ("char", "user"))
    sample = f"{sample} {sample[::-1]}"  # every piece, in two orders, with spaces and newlines between
    want = Tokenizer.from_file(str(tokenizer_file)).encode(sample, add_special_tokens=False).ids
    got = sentencepiece.SentencePieceProcessor(model_file=str(model_file)).encode(sample)
    if got != want:
        at = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
        raise StudioError(f"the tokenizer could not be translated for the GGUF converter: the SentencePiece model reads the "
                          f"vocabulary differently from the model's own tokenizer (first difference at token {at}: "
                          f"{want[at:at + 3]} vs {got[at:at + 3]})",
                          "a character-level tokenizer is written as a SentencePiece character model with the same ids, "
                          "and is checked before converting",
                          "export --format merged (a Hugging Face folder) instead")


def converter_input(merged_dir: Path, progress=print) -> Path:
    """The folder to hand the converter: `merged_dir` itself, or a translated copy beside it for a character tokenizer."""
    tokenizer_json = _load(merged_dir / "tokenizer.json")
    pieces = character_vocab(tokenizer_json) if tokenizer_json and not (merged_dir / "tokenizer.model").exists() else None
    if pieces is None:
        return merged_dir
    progress(f"[export] the tokenizer is character-level ({len(pieces)} tokens): writing it as a SentencePiece "
             "character model for the converter (same ids)")
    folder = merged_dir.parent / INPUT_DIR
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for item in merged_dir.iterdir():
        if item.is_file():
            try:
                os.link(item, folder / item.name)  # the weights unchanged, without a second copy on disk
            except OSError:
                shutil.copy2(item, folder / item.name)
    (folder / "tokenizer.model").write_bytes(sentencepiece_model(pieces))
    _check_same_ids(merged_dir / "tokenizer.json", folder / "tokenizer.model", pieces)
    config = _load(merged_dir / "tokenizer_config.json") or {}
    config.update(add_bos_token=False, add_eos_token=False, add_prefix_space=False)
    # The converter types whole tokens by this table (special: control, else user-defined), not by the pieces'
    # SentencePiece types, which it reads only for unknown/control/byte: without it `user` would be a normal
    # piece that llama.cpp never forms from text.
    config["added_tokens_decoder"] = {str(t["id"]): t for t in tokenizer_json.get("added_tokens") or []}
    (folder / "tokenizer_config.json").unlink(missing_ok=True)  # a hard link: never write through it into merged/
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return folder

"""Checking a written GGUF file against the merged model it came from.

One job: after the converter wrote `X.gguf` from `merged/`, say whether the file is what it should be.

* `read_back` opens the file with the real `gguf` package (the reader llama.cpp's own tools use) and
  compares what matters with the merged folder: architecture, file type, layer count, tensor count,
  vocabulary size, the chat template and the end-of-sequence token. A file that fails these is refused; when the
  end token differs because the model's own files disagree (tokenizer_config.json's token vs config.json's id), the
  refusal names those files and their values instead of the converter.
* `compare_greedy` loads the GGUF through transformers (`gguf_file=`, dequantized to float32) and the
  merged model, and compares greedy tokens on a few chat prompts until the merged model's end token.
  The GGUF load may lack the generation config's end ids, so both stop at the merged model's ids.
  f16 and q8_0 round the weights, so a token can legitimately differ where two candidates are nearly
  tied; the report says where the first difference is, and the export does not fail on it.

This module does not convert and does not write the model card; `export` does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import StudioError

# Only compare tokens for models this small: both copies are loaded in float32 at once (8 bytes per
# parameter), so 600M parameters need ~5 GB of RAM on top of the export — what a laptop can spare.
# SmolLM2-360M and Qwen2.5-0.5B fit; RLOO_STUDIO_GGUF_CHECK_MAX_PARAMS overrides (0 turns it off).
TOKEN_CHECK_MAX_PARAMS = 600_000_000
CHECK_PROMPTS = ("What is 12 + 7?", "Name one colour of the sky.", "Write one short sentence about the sea.")
CHECK_MAX_NEW_TOKENS = 48  # enough for a short answer to each prompt; generation stops earlier at the end token
FILE_TYPES = {"f16": 1, "q8_0": 7}  # llama.cpp's LLAMA_FTYPE_MOSTLY_F16 / _Q8_0, as written in general.file_type


def _field(reader, key):
    field = reader.fields.get(key)
    if field is None:
        return None
    try:
        return field.contents()
    except Exception:  # noqa: BLE001 - an unreadable field counts as absent
        return None


def _hf_tensor_count(merged_dir: Path) -> int | None:
    index = merged_dir / "model.safetensors.index.json"
    try:
        if index.is_file():
            names = json.loads(index.read_text(encoding="utf-8"))["weight_map"].keys()
        else:
            from safetensors import safe_open

            names = []
            for part in sorted(merged_dir.glob("*.safetensors")):
                with safe_open(str(part), "pt") as f:
                    names += list(f.keys())
    except (OSError, ValueError, KeyError):
        return None
    return sum(1 for n in names if not n.endswith("rotary_emb.inv_freq")) or None


def _eos_by_file(merged_dir: Path) -> dict[str, list[int]]:
    """The end ids each of generation_config.json and config.json names (a file without them left out)."""
    found: dict[str, list[int]] = {}
    for name in ("generation_config.json", "config.json"):
        try:
            value = json.loads((merged_dir / name).read_text(encoding="utf-8")).get("eos_token_id")
        except (OSError, ValueError, AttributeError):
            continue
        ids = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, int)]
        if ids:
            found[name] = ids
    return found


def _eos_ids(merged_dir: Path) -> list[int]:
    return list(dict.fromkeys(i for ids in _eos_by_file(merged_dir).values() for i in ids))


def tokenizer_end_token(merged_dir: Path) -> tuple[str, int | None] | None:
    """(text, id) of the end token tokenizer_config.json names, the id looked up in its added tokens or tokenizer.json;
    None when it names none. The converter writes this token into the GGUF, not config.json's eos_token_id."""
    try:
        config = json.loads((merged_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    token = config.get("eos_token") if isinstance(config, dict) else None
    token = token.get("content") if isinstance(token, dict) else token
    if not isinstance(token, str):
        return None
    for key, entry in (config.get("added_tokens_decoder") or {}).items():
        if isinstance(entry, dict) and entry.get("content") == token and str(key).isdigit():
            return token, int(key)
    try:
        tokenizer = json.loads((merged_dir / "tokenizer.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return token, None
    for entry in tokenizer.get("added_tokens") or []:
        if isinstance(entry, dict) and entry.get("content") == token and isinstance(entry.get("id"), int):
            return token, entry["id"]
    vocab = (tokenizer.get("model") or {}).get("vocab")
    return token, vocab.get(token) if isinstance(vocab, dict) and isinstance(vocab.get(token), int) else None


def _folder_disagrees(merged_dir: Path, gguf_eos: int) -> StudioError | None:
    """The refusal when the file's end token is the tokenizer's and the model's own config files name another: the
    model folder disagrees with itself, which no converter can settle, so it names the files and their values."""
    end = tokenizer_end_token(merged_dir)
    by_file = _eos_by_file(merged_dir)
    if end is None or end[1] != gguf_eos or not by_file or any(gguf_eos in ids for ids in by_file.values()):
        return None
    others = "; ".join(f"{name} says eos_token_id {ids[0] if len(ids) == 1 else ids}" for name, ids in by_file.items())
    return StudioError(
        f"the model's files disagree on the end token: tokenizer_config.json names {end[0]!r} (id {end[1]}), but {others}",
        "the GGUF file takes its end token from the tokenizer, while the merged model stops at config.json's, so the "
        "exported model would not stop where the tuned one does",
        f"in the base model's folder, set eos_token_id to {end[1]} in config.json and generation_config.json (or make "
        "tokenizer_config.json's eos_token the token the config names), then export again; or export with --format merged")


def merged_chat_template(merged_dir: Path) -> str | None:
    jinja = merged_dir / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    try:
        template = json.loads((merged_dir / "tokenizer_config.json").read_text(encoding="utf-8")).get("chat_template")
    except (OSError, ValueError):
        return None
    return template if isinstance(template, str) else None


def read_back(gguf_path: Path, merged_dir: Path, outtype: str) -> dict:
    """Open the file and compare it with the merged model; returns a report, raises StudioError if it is wrong."""
    try:
        import gguf
    except ImportError as exc:
        raise StudioError("the `gguf` package is not installed, so the GGUF file cannot be checked",
                          "RLOO Studio reads every GGUF file back after writing it", "install it: `pip install gguf==0.19.0`") from exc
    try:
        reader = gguf.GGUFReader(str(gguf_path))
    except Exception as exc:  # noqa: BLE001 - any parse failure means the file is not usable
        raise StudioError(f"the converter wrote {gguf_path.name}, but it cannot be read back as GGUF ({type(exc).__name__}: {exc})",
                          "the file is truncated or not a GGUF file; llama.cpp, Ollama and LM Studio would refuse it too",
                          "check the disk space and export again; if it persists, use --format merged") from None
    config = json.loads((merged_dir / "config.json").read_text(encoding="utf-8"))
    arch = _field(reader, "general.architecture")
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    report = {
        "file": gguf_path.name, "bytes": gguf_path.stat().st_size, "outtype": outtype,
        "architecture": arch, "file_type": _field(reader, "general.file_type"),
        "tensor_count": len(reader.tensors), "merged_tensor_count": _hf_tensor_count(merged_dir),
        "block_count": _field(reader, f"{arch}.block_count") if arch else None, "merged_layers": config.get("num_hidden_layers"),
        "vocab_tokens": len(tokens.data) if tokens is not None else 0,
        "chat_template": _field(reader, "tokenizer.chat_template"),
        "eos_token_id": _field(reader, "tokenizer.ggml.eos_token_id"), "merged_eos_ids": _eos_ids(merged_dir),
        "tensor_types": sorted({t.tensor_type.name for t in reader.tensors}),
    }
    problems = []
    if not arch:
        problems.append("it names no architecture (general.architecture)")
    if report["file_type"] != FILE_TYPES[outtype]:
        problems.append(f"its general.file_type is {report['file_type']}, not {FILE_TYPES[outtype]} ({outtype})")
    if not report["tensor_count"]:
        problems.append("it holds no tensors")
    elif report["merged_tensor_count"] and report["tensor_count"] < report["merged_tensor_count"]:
        # More is fine (llama.cpp adds e.g. rope_freqs for Llama 3); fewer means weights were dropped.
        problems.append(f"it holds {report['tensor_count']} tensors, fewer than the merged model's {report['merged_tensor_count']}")
    if report["merged_layers"] is not None and report["block_count"] != report["merged_layers"]:
        problems.append(f"it has {report['block_count']} layers ({arch}.block_count), the merged model {report['merged_layers']}")
    if not report["vocab_tokens"]:
        problems.append("it has no tokenizer vocabulary (tokenizer.ggml.tokens)")
    if report["eos_token_id"] is None:
        problems.append("it has no end-of-sequence token (tokenizer.ggml.eos_token_id)")
    eos_differs = report["eos_token_id"] is not None and bool(report["merged_eos_ids"]) and \
        report["eos_token_id"] not in report["merged_eos_ids"]
    if eos_differs:
        problems.append(f"its end-of-sequence token is {report['eos_token_id']}, the merged model's {report['merged_eos_ids']}")
    template = merged_chat_template(merged_dir)
    if template and report["chat_template"] != template:
        problems.append("its chat template is missing or differs from the merged model's" if report["chat_template"] is None
                        else "its chat template differs from the merged model's")
    if outtype == "q8_0" and "Q8_0" not in report["tensor_types"]:
        problems.append("no tensor is stored as Q8_0")
    report["problems"] = problems
    # The end token alone differs, and the model's own files disagree on it: the folder's fault, not the converter's.
    disagreement = _folder_disagrees(merged_dir, report["eos_token_id"]) if len(problems) == 1 and eos_differs else None
    if disagreement is not None:
        raise disagreement
    if problems:
        raise StudioError(f"the GGUF file {gguf_path.name} was written but does not match the merged model: " + "; ".join(problems),
                          "RLOO Studio reads every GGUF file back and compares it with the model it came from; a mismatch "
                          "means the converter does not handle this model correctly",
                          "use --format merged (a Hugging Face folder), or a newer llama.cpp checkout (set LLAMA_CPP_DIR)")
    return report


def parameter_count(merged_dir: Path) -> int | None:
    try:
        from safetensors import safe_open

        total = 0
        for part in sorted(merged_dir.glob("*.safetensors")):
            with safe_open(str(part), "pt") as f:
                for name in f.keys():
                    n = 1
                    for d in f.get_slice(name).get_shape():
                        n *= d
                    total += n
        return total or None
    except (OSError, ValueError, ImportError):
        return None


def token_check_limit() -> int:
    try:
        return int(float(os.environ.get("RLOO_STUDIO_GGUF_CHECK_MAX_PARAMS", TOKEN_CHECK_MAX_PARAMS)))
    except ValueError:
        return TOKEN_CHECK_MAX_PARAMS


def compare_greedy(gguf_path: Path, merged_dir: Path, system_prompt: str | None = None, prompts=CHECK_PROMPTS,
                   max_new_tokens: int = CHECK_MAX_NEW_TOKENS, progress=print) -> dict:
    """Greedy tokens of the GGUF (through transformers) against the merged model, per prompt, up to its end token."""
    params = parameter_count(merged_dir)
    limit = token_check_limit()
    if params is None or params > limit:
        return {"skipped": f"the model has {params or 'an unknown number of'} parameters, above the {limit:,} this check loads "
                           "twice in float32 (RLOO_STUDIO_GGUF_CHECK_MAX_PARAMS raises it)"}
    from .stack import import_training_stack

    stack = import_training_stack("transformers")
    transformers, torch = stack.transformers, stack.torch
    progress(f"[export] comparing greedy tokens of the GGUF file with the merged model on {len(prompts)} prompts")
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(merged_dir))
        merged = transformers.AutoModelForCausalLM.from_pretrained(str(merged_dir), dtype=torch.float32).eval()
        from_gguf = transformers.AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                                      dtype=torch.float32).eval()
    except Exception as exc:  # noqa: BLE001 - transformers reads fewer architectures from GGUF than llama.cpp runs
        return {"skipped": f"transformers could not load the GGUF file back ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"}
    eos = _eos_ids(merged_dir) or ([tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (eos[0] if eos else 0)
    rows = []
    for prompt in prompts:
        messages = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [{"role": "user", "content": prompt}]
        if tokenizer.chat_template:
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        else:
            ids = tokenizer(prompt, return_tensors="pt")
        outs = []
        for model in (merged, from_gguf):
            with torch.inference_mode():
                gen = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=eos or None,
                                     pad_token_id=pad)
            outs.append(gen[0, ids["input_ids"].shape[1]:].tolist())
        want, got = outs
        first_diff = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), None)
        if first_diff is None and len(want) != len(got):
            first_diff = min(len(want), len(got))
        # Both models read the merged model's answer (teacher forcing): how far apart are their next-token scores,
        # and how close was the merged model's own choice where the answers part? A near tie (a margin of the size
        # of the logit difference) is rounding; a wide margin would mean a conversion error.
        full = torch.tensor([ids["input_ids"][0].tolist() + want])
        with torch.inference_mode():
            a = merged(input_ids=full).logits[0, ids["input_ids"].shape[1] - 1:-1].float()
            b = from_gguf(input_ids=full).logits[0, ids["input_ids"].shape[1] - 1:-1].float()
        margin = None
        if first_diff is not None and first_diff < a.shape[0]:
            top2 = a[first_diff].topk(2).values
            margin = float(top2[0] - top2[1])
        rows.append({"prompt": prompt, "merged_tokens": want, "gguf_tokens": got, "same": first_diff is None,
                     "first_difference": first_diff, "margin_at_difference": margin,
                     "max_logit_difference": float((a - b).abs().max()) if a.numel() else 0.0,
                     "logit_scale": float(a.abs().max()) if a.numel() else 0.0,
                     "text": tokenizer.decode(want, skip_special_tokens=True)[:200]})
    return {"prompts": rows, "all_same": all(r["same"] for r in rows), "parameters": params, "max_new_tokens": max_new_tokens,
            "max_logit_difference": max(r["max_logit_difference"] for r in rows), "logit_scale": max(r["logit_scale"] for r in rows)}


def card_section(report: dict, tokens: dict) -> str:
    """The model card's account of both checks."""
    lines = [f"Read back with the `gguf` package after writing: architecture `{report['architecture']}`, "
             f"{report['tensor_count']} tensors (merged model: {report['merged_tensor_count']}), {report['block_count']} layers, "
             f"{report['vocab_tokens']} vocabulary entries, types {', '.join(report['tensor_types'])}, "
             f"end-of-sequence token {report['eos_token_id']}, chat template "
             f"{'present' if report['chat_template'] else 'absent (the merged model has none)'}.", ""]
    if tokens.get("skipped"):
        lines.append(f"Greedy tokens were not compared: {tokens['skipped']}.")
    else:
        same = sum(r["same"] for r in tokens["prompts"])
        lines.append(f"Greedy tokens of this file (loaded with transformers) against the merged model, up to the end token "
                     f"(at most {tokens['max_new_tokens']}): **{same} of {len(tokens['prompts'])} prompts identical**.")
        lines += ["", "| prompt | tokens | result | max logit difference |", "|---|---|---|---|"]
        for r in tokens["prompts"]:
            result = "identical" if r["same"] else (
                f"first difference at token {r['first_difference']}"
                + (f", where the merged model's top two scores were {r['margin_at_difference']:.3g} apart" if r["margin_at_difference"] is not None else ""))
            lines.append(f"| {r['prompt']} | {len(r['merged_tokens'])} | {result} | {r['max_logit_difference']:.3g} |")
        lines += ["", f"Largest next-token score difference on the merged model's answers: {tokens['max_logit_difference']:.3g} "
                      f"(scores reach {tokens['logit_scale']:.3g}); {report['outtype']} rounds every weight, so tokens can part "
                      "where two candidates are nearly tied."]
    return "\n".join(lines) + "\n"

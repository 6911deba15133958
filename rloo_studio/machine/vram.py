"""Peak GPU memory of an RLOO step, estimated by arithmetic alone (no torch), with a readable breakdown.

What an RLOO step holds at its peak, and how each part is counted here:

* **weights** — 4-bit (NF4 with its quantisation constants), bf16/fp16 or fp32; the
  embeddings, the LM head and the norms stay in 16-bit when the rest is quantised;
* **trainable state** — LoRA matrices (fp32) with their gradients and AdamW states, or, for full
  fine-tuning, a gradient and two AdamW states for every weight;
* **activations** of the training forward/backward for one micro-batch, with or without gradient
  checkpointing;
* **generation** — the KV cache for the whole generation batch at full length (prompt +
  max_completion_length), from the model's layers, KV heads and head size;
* **logits** — tokens × vocabulary for the training micro-batch (this dominates for 150k–260k
  vocabularies), less when the loss is computed in chunks;
* a **reference model** when beta > 0 without LoRA (with LoRA the reference is the base model
  with the adapter switched off: no copy);
* a **local judge**'s weights (a `judge:` reward entry naming a model): the training worker loads
  each such entry's model as its own copy, in 4-bit when bitsandbytes is installed (else in the dtype its
  config.json names), never shared with the policy, even when it is the policy's base model
  (config.local_judge_in_4bit, rewards/judge.py `LocalJudge._load`). A judge on a server adds nothing here;
* the **CUDA context** and the allocator's slack;
* with **fast generation** (vLLM, `model.fast_generation`): vLLM takes its share of the GPU (`FAST_GPU_MEMORY_SHARE` of
  it, the base weights shared with the trainer inside it) for the generation phase in place of the KV cache above, and
  gives it back during the training pass (Standby / sleep mode). Not yet measured on a GPU.

Generation and the training backward do not peak at the same moment, so the peak is weights +
trainable state + the larger of (KV cache + generation logits) and (activations + training logits),
plus the fixed overheads. Every rule of thumb is a named constant with its reason. Model shapes come
from a `config.json` (local folder or hub cache) or from the built-in table `KNOWN_MODELS`.

Over 500 lines because the estimate is one formula whose terms (weights, trainable state, KV cache, logits,
activations, a local judge) each need their reason beside them, and shrink-to-fit walks the same terms.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config import FOUR_BIT_NEEDS_LORA, LoraConfig, ModelConfig, RunConfig, four_bit_without_lora, local_judge_in_4bit, rloo_default
from ..paths import DEMO_MODEL_DIR, fast_python

# vLLM's share of the GPU under fast generation (engine/fast_generation.py GPU_MEMORY_SHARE, Unsloth's own default).
FAST_GPU_MEMORY_SHARE = 0.5

GIB = 1024**3

# ---- bytes per parameter ----------------------------------------------------------------------------
# bitsandbytes NF4: 4 bits per weight, plus one absmax per block of 64 weights. With double
# quantisation (what Unsloth and QLoRA use) the absmax is stored in 8 bits, with one fp32 constant
# per 256 blocks: 0.5 + 1/64 + 4/(64*256) bytes. (Dettmers et al. 2023, QLoRA, section 3.)
NF4_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
# PEFT keeps LoRA weights in fp32 (autocast_adapter_dtype=True) even on a 16-bit or 4-bit base.
LORA_PARAM_BYTES = 4
# AdamW keeps two fp32 moments per trainable parameter; bitsandbytes' 8-bit AdamW keeps two 8-bit ones.
ADAMW_STATE_BYTES = {"adamw": 8, "adamw_8bit": 2}

# ---- activations ------------------------------------------------------------------------------------
# Per token and layer, a transformer layer keeps about 34*h bytes of 16-bit activations for the
# backward pass when attention uses a fused (flash / SDPA) kernel (Korthikanti et al. 2022,
# "Reducing Activation Recomputation", eq. 2 without the 5as/h attention-score term). The MLP's
# share of that grows with the intermediate size; we scale the 34h by (h*10 + 3*ffn*8/3) / (h*18)
# — see `_layer_activation_bytes`.
ACTIVATION_BYTES_PER_HIDDEN = 34
# With gradient checkpointing only each layer's input (2 bytes per hidden unit, 16-bit) is kept,
# plus one layer's full activations while it is recomputed.
CHECKPOINT_BYTES_PER_HIDDEN = 2
# Unsloth's "unsloth" gradient checkpointing moves the kept layer inputs to CPU RAM, asynchronously;
# what stays on the GPU is about one layer's input in flight. We count 2 layers' worth for safety.
UNSLOTH_OFFLOAD_LAYERS_ON_GPU = 2

# ---- logits -----------------------------------------------------------------------------------------
# Training logits: the 16-bit logits, their fp32 log-softmax for the selected tokens' log-probs,
# and the gradient of the logits in the backward: about 2 + 4 + 4 bytes per token per vocab entry.
TRAIN_LOGIT_BYTES = 10
# Unsloth (its fused/chunked cross-entropy) and TRL's selective log-softmax process the vocabulary
# in chunks; the printed "chunked CE = True" confirms it on the Unsloth path. We count a quarter of
# the full logits as live at once on that path (a conservative reading of 4+ chunks).
CHUNKED_LOGITS_FRACTION = 0.25
# Checked against one GPU measurement so far (H200, Qwen3-0.6B's shape, bf16 LoRA, 16 completions of 64 tokens;
# benchmarks/results/gpu_check_h200_speed.md): Unsloth's peak (2.88 GiB reserved) was above this estimate without the
# context (1.85 GiB) and above plain transformers' (1.68 GiB). One shape is too few to refit these constants by.
# Generation keeps only the last position's logits per sequence (fp32 for sampling).
GENERATION_LOGIT_BYTES = 4

# ---- fixed overheads --------------------------------------------------------------------------------
# The CUDA context, cuBLAS/cuDNN workspaces and kernels loaded by torch: ~0.5-0.9 GB per device
# on recent drivers; Unsloth/Triton kernels add their compiled code.
CUDA_CONTEXT_GIB = 0.8
# On a CPU the same arithmetic holds in RAM, with the process's own libraries in place of the CUDA context: measured
# 1.15 GiB resident after importing Unsloth, TRL, transformers and PEFT on a CPU; the tokenizer and datasets add to it.
CPU_LIBRARIES_GIB = 1.5
CPU_LIBRARIES_PART = "Python, PyTorch and the libraries"
# The caching allocator's fragmentation: PyTorch reports reserved memory typically 5-15 % above
# what is allocated during RL (variable-length batches fragment more than SFT).
ALLOCATOR_OVERHEAD_FRACTION = 0.10
# When the prompt length is not known from the data, assume this many tokens (a chat template plus
# a question of a few sentences).
DEFAULT_PROMPT_TOKENS = 256

# ---- verdicts ---------------------------------------------------------------------------------------
# Below 85 % of the device: fits, with room for memory spikes we do not model (long prompts in a
# batch, other programs on the GPU). Up to 100 %: tight. Above: exceeds.
FITS_FRACTION = 0.85
# Shrinking stops here: shorter completions cannot hold a worked answer.
MIN_COMPLETION_TOKENS = 64


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs to know about a model's architecture."""
    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool
    note: str = ""
    # The dtype the checkpoint's config.json names ("" when it names none): what transformers' dtype="auto" loads, which is
    # how a local judge is loaded. Not part of the shape's identity.
    dtype: str = field(default="", compare=False)

    def linear_params_per_layer(self) -> int:
        h, hd = self.hidden_size, self.head_dim
        attention = h * self.num_heads * hd * 2 + h * self.num_kv_heads * hd * 2  # q, o; k, v
        mlp = 3 * h * self.intermediate_size                                      # gate, up, down
        return attention + mlp

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tie_embeddings else 2)

    @property
    def params(self) -> int:
        norms = (2 * self.num_layers + 1) * self.hidden_size
        return self.num_layers * self.linear_params_per_layer() + self.embedding_params + norms

    def lora_params(self, r: int, targets: Any = "all-linear") -> int:
        """LoRA adds r*(in+out) per adapted linear layer."""
        h, hd, ffn = self.hidden_size, self.head_dim, self.intermediate_size
        shapes = {
            "q_proj": (h, self.num_heads * hd), "k_proj": (h, self.num_kv_heads * hd), "v_proj": (h, self.num_kv_heads * hd),
            "o_proj": (self.num_heads * hd, h), "gate_proj": (h, ffn), "up_proj": (h, ffn), "down_proj": (ffn, h),
        }
        names = list(shapes) if targets in (None, "all-linear") else [t for t in targets if t in shapes]
        if targets not in (None, "all-linear") and not names:
            names = list(shapes)  # names we do not know (other architectures): assume all linear layers
        return self.num_layers * sum(r * (a + b) for a, b in (shapes[n] for n in names))


def _shape(name, h, layers, heads, kv, hd, ffn, vocab, tie, note="") -> ModelShape:
    return ModelShape(name, h, layers, heads, kv, hd, ffn, vocab, tie, note)


# From each model's config.json on the Hugging Face hub (hidden_size, num_hidden_layers,
# num_attention_heads, num_key_value_heads, head_dim, intermediate_size, vocab_size,
# tie_word_embeddings). Gemma 3 4B: the language model only (its vision tower is not trained here).
KNOWN_MODELS: dict[str, ModelShape] = {s.name: s for s in (
    _shape("HuggingFaceTB/SmolLM2-135M-Instruct", 576, 30, 9, 3, 64, 1536, 49152, True),
    _shape("Qwen/Qwen3-0.6B", 1024, 28, 16, 8, 128, 3072, 151936, True),
    _shape("Qwen/Qwen3-1.7B", 2048, 28, 16, 8, 128, 6144, 151936, True),
    _shape("Qwen/Qwen3-4B", 2560, 36, 32, 8, 128, 9728, 151936, True),
    _shape("Qwen/Qwen3-8B", 4096, 36, 32, 8, 128, 12288, 151936, False),
    _shape("Qwen/Qwen3-14B", 5120, 40, 40, 8, 128, 17408, 151936, False),
    _shape("Qwen/Qwen2.5-0.5B-Instruct", 896, 24, 14, 2, 64, 4864, 151936, True),
    _shape("Qwen/Qwen2.5-1.5B-Instruct", 1536, 28, 12, 2, 128, 8960, 151936, True),
    _shape("Qwen/Qwen2.5-3B-Instruct", 2048, 36, 16, 2, 128, 11008, 151936, True),
    _shape("Qwen/Qwen2.5-7B-Instruct", 3584, 28, 28, 4, 128, 18944, 152064, False),
    _shape("meta-llama/Llama-3.2-1B-Instruct", 2048, 16, 32, 8, 64, 8192, 128256, True),
    _shape("meta-llama/Llama-3.2-3B-Instruct", 3072, 28, 24, 8, 128, 8192, 128256, True),
    _shape("meta-llama/Llama-3.1-8B-Instruct", 4096, 32, 32, 8, 128, 14336, 128256, False),
    _shape("google/gemma-3-1b-it", 1152, 26, 4, 1, 256, 6912, 262144, True),
    _shape("google/gemma-3-4b-it", 2560, 34, 8, 4, 256, 10240, 262208, True, "language model only"),
    _shape("microsoft/phi-4", 5120, 40, 40, 10, 128, 17920, 100352, False),
    _shape("mistralai/Mistral-7B-Instruct-v0.3", 4096, 32, 32, 8, 128, 14336, 32768, False),
)}
# Other spellings of the same models (base vs instruct, Unsloth's re-uploads, 4-bit re-uploads).
_ALIASES = {
    "huggingfacetb/smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct",
    "qwen/qwen2.5-0.5b": "Qwen/Qwen2.5-0.5B-Instruct", "qwen/qwen2.5-1.5b": "Qwen/Qwen2.5-1.5B-Instruct",
    "qwen/qwen2.5-3b": "Qwen/Qwen2.5-3B-Instruct", "qwen/qwen2.5-7b": "Qwen/Qwen2.5-7B-Instruct",
    "meta-llama/llama-3.2-1b": "meta-llama/Llama-3.2-1B-Instruct", "meta-llama/llama-3.2-3b": "meta-llama/Llama-3.2-3B-Instruct",
    "meta-llama/llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/meta-llama-3.1-8b-instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "google/gemma-3-1b-pt": "google/gemma-3-1b-it", "google/gemma-3-4b-pt": "google/gemma-3-4b-it",
    "mistralai/mistral-7b-v0.3": "mistralai/Mistral-7B-Instruct-v0.3",
}


def _normalise_id(model_id: str) -> str:
    name = model_id.strip().rstrip("/").lower()
    for suffix in ("-unsloth-bnb-4bit", "-bnb-4bit", "-4bit"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.startswith("unsloth/"):
        tail = name.split("/", 1)[1]
        for known in list(KNOWN_MODELS) + list(_ALIASES):
            if known.lower().split("/", 1)[1] == tail:
                return known.lower()
    return name


def shape_from_config(config: dict, name: str) -> ModelShape:
    """A ModelShape from a config.json's contents (text_config for multimodal models)."""
    c = config.get("text_config") or config
    heads = c.get("num_attention_heads") or c.get("n_head")
    hidden = c.get("hidden_size") or c.get("n_embd")
    if not hidden or not heads or not c.get("num_hidden_layers") or not c.get("vocab_size", config.get("vocab_size")):
        raise ValueError(f"{name}: config.json lacks hidden_size/num_hidden_layers/num_attention_heads/vocab_size")
    return ModelShape(
        name=name, hidden_size=hidden, num_layers=c["num_hidden_layers"], num_heads=heads,
        num_kv_heads=c.get("num_key_value_heads") or heads, head_dim=c.get("head_dim") or hidden // heads,
        intermediate_size=c.get("intermediate_size") or 4 * hidden, vocab_size=c.get("vocab_size") or config["vocab_size"],
        tie_embeddings=bool(config.get("tie_word_embeddings", c.get("tie_word_embeddings", False))),
        dtype=str(config.get("dtype") or config.get("torch_dtype") or c.get("dtype") or c.get("torch_dtype") or ""),
    )


def _hub_cached_config(model_id: str) -> Path | None:
    """config.json from the local Hugging Face cache, without touching the network."""
    cache = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub")
    folder = cache / ("models--" + model_id.replace("/", "--")) / "snapshots"
    if folder.is_dir():
        for snapshot in sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
            if (snapshot / "config.json").is_file():
                return snapshot / "config.json"
    return None


def _download_config(model_id: str) -> Path | None:
    """Only config.json (a few kB) from the hub, when online; None when offline or not found."""
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(model_id, "config.json", etag_timeout=5))
    except Exception:  # noqa: BLE001 - offline, gated or unknown: fall back to the built-in table
        return None


def find_shape(model: str, base_dir: str | Path = ".", allow_download: bool = True) -> ModelShape | None:
    """The shape of `model` (a local folder, `demo`, or a hub id): folder, hub cache, the built-in table, then
    (online, for models it does not know) the hub's config.json."""
    candidates = [DEMO_MODEL_DIR] if model == "demo" else [Path(model).expanduser(), Path(base_dir) / model]
    for folder in candidates:
        if (folder / "config.json").is_file():
            return shape_from_config(json.loads((folder / "config.json").read_text(encoding="utf-8")), model)
    cached = _hub_cached_config(model) if "/" in model else None
    if cached:
        return shape_from_config(json.loads(cached.read_text(encoding="utf-8")), model)
    key = _normalise_id(model)
    for name, shape in KNOWN_MODELS.items():
        if name.lower() == key:
            return shape
    if key in _ALIASES:
        return KNOWN_MODELS[_ALIASES[key]]
    # Unknown here: fetch its config.json once (it is cached afterwards), unless offline.
    if "/" in model and allow_download and not os.environ.get("HF_HUB_OFFLINE"):
        downloaded = _download_config(model)
        if downloaded:
            return shape_from_config(json.loads(downloaded.read_text(encoding="utf-8")), model)
    return None


def _steps_per_generation(cfg: RunConfig) -> int:
    """Micro-batches one generation batch is split into, as the run's batch plan derives it (RunConfig.batch_plan)."""
    return cfg.batch_plan().steps_per_generation


def _optimizer(optim) -> str:
    """The optimizer's kind for its state size (ADAMW_STATE_BYTES): bitsandbytes' 8-bit AdamW variants, or AdamW."""
    return "adamw_8bit" if "8bit" in str(optim) else "adamw"


@dataclass
class Settings:
    """The configuration choices that move memory, read from a RunConfig (see `settings_from_config`).

    The defaults are the config's own (ModelConfig, LoraConfig, config.rloo_default for the RLOO values), never
    numbers of their own: Settings() is what a config with an empty `lora:` section gets on a bf16 GPU."""
    load_in_4bit: bool = ModelConfig.load_in_4bit
    dtype: str = "bfloat16"
    lora_r: int | None = LoraConfig.r  # None: full fine-tuning
    lora_targets: Any = LoraConfig.target_modules
    gradient_checkpointing: bool = ModelConfig.gradient_checkpointing
    unsloth: bool = True              # Unsloth's offloaded checkpointing and chunked logits
    num_generations: int = rloo_default("num_generations")
    per_device_train_batch_size: int = rloo_default("per_device_train_batch_size")
    steps_per_generation: int = RunConfig().batch_plan().steps_per_generation
    max_completion_length: int = rloo_default("max_completion_length")
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS
    beta: float = rloo_default("beta")
    optimizer: str = _optimizer(rloo_default("optim"))
    fast_generation: bool = False     # vLLM generates (its memory share replaces the KV cache during generation)

    @property
    def generation_batch(self) -> int:
        return self.per_device_train_batch_size * self.steps_per_generation


def unsloth_expected(backend: str) -> bool:
    """Whether a run of `backend` trains with Unsloth: `unsloth`, or `auto` where Unsloth is installed (found, not
    imported: the app stays light). Installed but failing to import on odd hardware, `auto` falls back to transformers
    at the run's start (its log says so); that the estimate cannot see without importing it."""
    if backend == "auto":
        import importlib.util

        return importlib.util.find_spec("unsloth") is not None
    return backend == "unsloth"


def settings_from_config(cfg: RunConfig, gpu_bf16: bool = True) -> Settings:
    dtype = cfg.model.dtype if cfg.model.dtype != "auto" else ("bfloat16" if gpu_bf16 else "float16")
    return Settings(
        load_in_4bit=cfg.model.load_in_4bit, dtype=dtype,
        lora_r=cfg.lora.r if cfg.lora else None, lora_targets=cfg.lora.target_modules if cfg.lora else None,
        gradient_checkpointing=cfg.model.gradient_checkpointing, unsloth=unsloth_expected(cfg.model.backend),
        num_generations=int(cfg.rloo_value("num_generations")), per_device_train_batch_size=int(cfg.rloo_value("per_device_train_batch_size")),
        steps_per_generation=_steps_per_generation(cfg),
        max_completion_length=int(cfg.rloo_value("max_completion_length")),
        prompt_tokens=min(DEFAULT_PROMPT_TOKENS, max(16, cfg.model.max_seq_length - int(cfg.rloo_value("max_completion_length")))),
        beta=float(cfg.rloo_value("beta")), optimizer=_optimizer(cfg.rloo_value("optim")),
        fast_generation=fast_generation_expected(cfg),
    )


def fast_generation_expected(cfg: RunConfig) -> bool:
    """Whether a run of `cfg` on a GPU would generate with vLLM: `on`, or `auto` where the fast environment was set up
    (the worker makes the final decision on its device; LoRA is needed)."""
    return cfg.lora is not None and (cfg.model.fast_generation == "on"
                                     or (cfg.model.fast_generation == "auto" and fast_python() is not None))


# A judge whose config.json names no dtype (or that comes from the built-in table, whose models all publish bfloat16
# weights): transformers' dtype="auto" then takes the checkpoint's stored dtype, 16-bit for the published chat models.
JUDGE_DEFAULT_DTYPE = "bfloat16"


def judge_weight_bytes(shape: ModelShape) -> float:
    """Bytes of a local judge's weights as the worker loads them on a GPU (config.local_judge_in_4bit): 4-bit like a
    4-bit policy, or else the whole model in its checkpoint's dtype."""
    if local_judge_in_4bit():
        return weight_bytes(shape, load_in_4bit=True, dtype_bytes=2)
    return shape.params * DTYPE_BYTES.get(shape.dtype or JUDGE_DEFAULT_DTYPE, 2)


def judge_precision(shape: ModelShape) -> str:
    """How a local judge's weights are held, in words for the estimate's notes."""
    return "4-bit NF4" if local_judge_in_4bit() else f"{shape.dtype or JUDGE_DEFAULT_DTYPE}, not 4-bit (bitsandbytes is not installed)"


def weight_bytes(shape: ModelShape, load_in_4bit: bool, dtype_bytes: float) -> float:
    """A model's weights in memory: NF4 for the linear layers' weights when 4-bit (embeddings, LM head and norms stay
    16-bit under bitsandbytes), else every parameter at `dtype_bytes`."""
    if load_in_4bit:
        linear = shape.num_layers * shape.linear_params_per_layer()
        return linear * NF4_BYTES_PER_PARAM + (shape.params - linear) * 2
    return shape.params * dtype_bytes


def judge_part_name(model: str) -> str:
    """The breakdown's line for one local judge entry."""
    return f"judge model weights ({model})"


@dataclass
class Estimate:
    model: str
    params: int
    parts: dict[str, float]           # GiB per part, in the order shown
    total_gib: float
    device_gib: float | None = None
    notes: list[str] = field(default_factory=list)
    on_cpu: bool = False               # the memory is the computer's RAM (training on the CPU), not a GPU's
    free_gib: float | None = None      # on the CPU: the RAM free now (other programs hold the rest), read with the estimate

    @property
    def verdict(self) -> str | None:
        if self.device_gib is None:
            return None
        if self.total_gib <= FITS_FRACTION * self.device_gib:
            return "fits"
        return "tight" if self.total_gib <= self.device_gib else "exceeds"

    @property
    def beyond_free(self) -> bool:
        """On the CPU: the run fits the computer's RAM, but needs more than is free now."""
        return self.verdict in ("fits", "tight") and self.free_gib is not None and self.total_gib > self.free_gib

    def free_line(self) -> str:
        """What `beyond_free` means, and what to do."""
        return (f"only {self.free_gib:.1f} GiB of it is free now: other programs hold the rest, and a run that needs "
                f"{self.total_gib:.1f} GiB would push memory to disk (very slow) or be stopped by the system. Close other "
                "programs, or lower the batch until the estimate is under what is free")

    def to_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict}

    def table(self) -> str:
        width = max(len(k) for k in self.parts) + 2
        lines = [f"{name:<{width}}{gib:8.2f} GiB" for name, gib in self.parts.items()]
        lines.append(f"{'total (peak)':<{width}}{self.total_gib:8.2f} GiB")
        if self.device_gib is not None:
            lines.append(f"{'device':<{width}}{self.device_gib:8.2f} GiB  → {self.verdict}")
        return "\n".join(lines)


def _layer_activation_bytes(shape: ModelShape) -> float:
    """Bytes kept per token for one layer's backward (no checkpointing), scaled for the MLP width."""
    h, ffn = shape.hidden_size, shape.intermediate_size
    # 34h assumes a 4h MLP (18h of the 34h are attention and norms, 16h the MLP at ffn = 4h).
    return h * (18 + 16 * ffn / (4 * h)) * ACTIVATION_BYTES_PER_HIDDEN / 34


def estimate(shape: ModelShape, s: Settings, device_gib: float | None = None,
             judges: dict[str, ModelShape | None] | None = None, on_cpu: bool = False) -> Estimate:
    """The estimate for `shape` trained with settings `s`; `judges` maps each local judge entry's model to its shape
    (None when unknown: not counted, and said so). `on_cpu`: the run's memory is RAM (`device_gib` is the computer's),
    with the libraries' own memory in place of the CUDA context."""
    notes: list[str] = []
    dtype_bytes = DTYPE_BYTES.get(s.dtype, 2)
    weights = weight_bytes(shape, s.load_in_4bit, dtype_bytes)
    parts: dict[str, float] = {"weights": weights}

    adam = ADAMW_STATE_BYTES[s.optimizer]
    if s.lora_r:
        lora = shape.lora_params(s.lora_r, s.lora_targets)
        parts["LoRA parameters, gradients, optimizer"] = lora * (LORA_PARAM_BYTES * 2 + adam)
        trainable = lora
    else:
        if four_bit_without_lora(s.load_in_4bit, s.lora_r):
            notes.append(FOUR_BIT_NEEDS_LORA)  # the config check's own problem: this run could not train
        parts["gradients and optimizer (full fine-tuning)"] = shape.params * (dtype_bytes + adam)
        trainable = shape.params
    if s.beta > 0 and not s.lora_r:
        parts["reference model (beta > 0, no LoRA)"] = weights
    for model, judge_shape in (judges or {}).items():
        if judge_shape is None:
            notes.append(f"the judge model {model!r} has an unknown shape: its weights are NOT counted; download it once "
                         "(or its config.json) for a full estimate")
            continue
        parts[judge_part_name(model)] = judge_weight_bytes(judge_shape)
        notes.append(f"the judge {model} is loaded as its own copy ({judge_shape.params / 1e9:.2f}B parameters, "
                     f"{judge_precision(judge_shape)}, not shared with the policy) on the same GPU")

    # Generation: K and V for every layer, for the whole generation batch at full length.
    seq = s.prompt_tokens + s.max_completion_length
    kv = 2 * shape.num_layers * shape.num_kv_heads * shape.head_dim * 2 * s.generation_batch * seq
    gen_logits = s.generation_batch * shape.vocab_size * GENERATION_LOGIT_BYTES
    generation = kv + gen_logits
    fast = s.fast_generation and not on_cpu and device_gib is not None
    if fast:
        # vLLM reserves its share up front (weights shared with the trainer inside it, the rest KV cache), however small
        # the batch; Standby hands it back for the training pass, so it competes with training, not with the weights.
        generation = max(generation, FAST_GPU_MEMORY_SHARE * device_gib * GIB - weights)
        notes.append(f"fast generation (vLLM, not yet measured on a GPU) reserves {FAST_GPU_MEMORY_SHARE:.0%} of the GPU "
                     "for generation and returns it during the training pass")

    # Training forward/backward for one micro-batch.
    tokens = s.per_device_train_batch_size * seq
    per_layer = _layer_activation_bytes(shape)
    if s.gradient_checkpointing:
        # Unsloth's checkpointing moves the kept activations to the CPU's RAM: off the GPU, but not off a CPU run.
        kept_layers = UNSLOTH_OFFLOAD_LAYERS_ON_GPU if s.unsloth and not on_cpu else shape.num_layers
        activations = tokens * (kept_layers * CHECKPOINT_BYTES_PER_HIDDEN * shape.hidden_size + per_layer)
    else:
        activations = tokens * shape.num_layers * per_layer
    completion_tokens = s.per_device_train_batch_size * s.max_completion_length
    logits = completion_tokens * shape.vocab_size * TRAIN_LOGIT_BYTES * (CHUNKED_LOGITS_FRACTION if s.unsloth else 1.0)
    training = activations + logits

    parts["vLLM share (generation)" if fast else "KV cache (generation)"] = generation - gen_logits if fast else kv
    parts["activations (training)"] = activations
    parts["logits (training)"] = logits
    peak_dynamic = max(generation, training)
    notes.append(f"generation ({generation / GIB:.2f} GiB) and the training pass ({training / GIB:.2f} GiB) take turns: the "
                 "peak counts the larger, so the parts add up to more than it")
    if generation >= training:
        notes.append("the peak is during generation (KV cache); fewer or shorter completions per step lower it most")
    else:
        notes.append("the peak is during the training pass (activations and logits); a smaller per-device batch with "
                     "gradient accumulation lowers it most")
    static = weights + sum(v for k, v in parts.items() if k.startswith(("LoRA", "gradients", "reference", "judge")))
    allocated = static + peak_dynamic
    fixed = CPU_LIBRARIES_PART if on_cpu else "CUDA context"
    parts[fixed] = (CPU_LIBRARIES_GIB if on_cpu else CUDA_CONTEXT_GIB) * GIB
    parts["allocator slack"] = allocated * ALLOCATOR_OVERHEAD_FRACTION
    total = allocated + parts[fixed] + parts["allocator slack"]
    judge_bytes = sum(v for k, v in parts.items() if k.startswith("judge"))
    if judge_bytes and device_gib is not None and total > FITS_FRACTION * device_gib * GIB \
            and total - judge_bytes * (1 + ALLOCATOR_OVERHEAD_FRACTION) <= FITS_FRACTION * device_gib * GIB:
        over = "not fit" if total > device_gib * GIB else "tight"  # the verdict's own words (Estimate.verdict)
        notes.append(f"the judge's weights are what make this {over}: choose a smaller judge model, or run the judge on a "
                     "server ({url, model}), which takes nothing from this GPU")
    if shape.note:
        notes.append(shape.note)
    notes.append(f"{trainable:,} trainable parameters of {shape.params:,}")
    return Estimate(model=shape.name, params=shape.params, parts={k: v / GIB for k, v in parts.items()},
                    total_gib=total / GIB, device_gib=device_gib, notes=notes, on_cpu=on_cpu)


# What `dtype: auto` means on a CPU (engine.model.choose_dtype): said where the estimate counts it.
CPU_LOADS_32_BIT = ("on this CPU the weights load as 32-bit (float32), as counted here: 16-bit weights need a CUDA GPU, "
                    "so the run trains in 32-bit")


def estimate_config(cfg: RunConfig, device_gib: float | None = None, gpu_bf16: bool = True,
                    on_cpu: bool = False) -> Estimate | None:
    """The estimate for a RunConfig; None when the model's shape is unknown (offline, not in the table). `on_cpu`:
    against the computer's RAM (`device_gib`), with `dtype: auto` meaning float32 as the engine loads it there."""
    shape = find_shape(cfg.model.name_or_path, cfg.base_dir)
    if shape is None:
        return None
    settings = settings_from_config(cfg, gpu_bf16)
    if on_cpu and cfg.model.dtype == "auto":
        settings = replace(settings, dtype="float32")
    found = estimate(shape, settings, device_gib, local_judges(cfg), on_cpu=on_cpu)
    if on_cpu and cfg.model.dtype == "auto" and not cfg.model.load_in_4bit:
        found.notes.insert(0, CPU_LOADS_32_BIT)  # the page's "16-bit" choice is not what this machine trains
    if on_cpu:
        from .hardware import free_ram_gb

        found.free_gib = free_ram_gb()
    return found


def local_judges(cfg: RunConfig) -> dict[str, ModelShape | None]:
    """The shape of each local judge entry's model (a `judge:` naming a model, not a server), in the config's order.

    Each entry loads its own copy, so two entries naming the same model count twice (keyed `MODEL #2`)."""
    found: dict[str, ModelShape | None] = {}
    for spec in cfg.rewards:
        if spec.judge is None or isinstance(spec.judge, dict):
            continue
        model = str(spec.judge)
        key, n = model, 1
        while key in found:
            n += 1
            key = f"{model} #{n}"
        found[key] = find_shape(model, cfg.base_dir)
    return found


def shrink_to_fit(cfg: RunConfig, device_gib: float, gpu_bf16: bool = True,
                  on_cpu: bool = False) -> tuple[dict[str, Any], Estimate | None]:
    """Concrete overrides (`key.sub: value`) that bring the estimate under `fits`, most effective first.

    Tries, in order: 4-bit weights with LoRA (not on a CPU, where 4-bit weights are slower than fp32 and small
    next to the activations); gradient checkpointing; a smaller per-device batch with gradient accumulation
    (same completions per step); fewer generations; shorter completions. `on_cpu`: against RAM (`device_gib`).
    """
    from ..config import apply_overrides

    changes: dict[str, Any] = {}

    def current() -> tuple[RunConfig, Estimate | None]:
        data = apply_overrides(cfg.to_dict(), [f"{k}={json.dumps(v)}" for k, v in changes.items()])
        trial = RunConfig.from_dict(data, base_dir=cfg.base_dir)
        return trial, estimate_config(trial, device_gib, gpu_bf16, on_cpu)

    trial, est = current()
    if est is None or est.verdict == "fits":
        return changes, est

    def still_over() -> bool:
        nonlocal trial, est
        trial, est = current()
        return est is not None and est.verdict != "fits"

    if not trial.model.load_in_4bit and not on_cpu:
        changes["model.load_in_4bit"] = True
        if four_bit_without_lora(True, trial.lora):  # propose only what the config check accepts: 4-bit with LoRA
            changes["lora.r"] = LoraConfig.r
        if not still_over():
            return changes, est
    k = int(trial.rloo_value("num_generations"))
    batch = int(trial.rloo_value("per_device_train_batch_size"))
    accumulation = int(trial.rloo_value("gradient_accumulation_steps"))

    def checkpointing() -> bool:
        """True when checkpointing brought it under `fits`."""
        if trial.model.gradient_checkpointing:
            return False
        changes["model.gradient_checkpointing"] = True
        return not still_over()

    # On a GPU checkpointing first (it costs ~30 % more compute, less than many small batches cost in generation);
    # on a CPU, whose generation is no faster in large batches, smaller batches first: they cost no extra compute.
    if not on_cpu and checkpointing():
        return changes, est
    while batch > k and batch % 2 == 0 and (batch // 2) % k == 0:
        batch //= 2
        accumulation *= 2
        changes["rloo.per_device_train_batch_size"] = batch
        changes["rloo.gradient_accumulation_steps"] = accumulation
        if not still_over():
            return changes, est
    if on_cpu and checkpointing():
        return changes, est
    while k > 4:
        k //= 2
        changes["rloo.num_generations"] = k
        if batch % k:
            changes["rloo.per_device_train_batch_size"] = batch = max(k, batch - batch % k)
        if not still_over():
            return changes, est
    length = int(trial.rloo_value("max_completion_length"))
    while length > MIN_COMPLETION_TOKENS:
        length = max(MIN_COMPLETION_TOKENS, length // 2)
        changes["rloo.max_completion_length"] = length
        if not still_over():
            return changes, est
    return changes, est

"""Tiny causal language models built locally: for tests, the demo model and GPU dry runs.

`build_char_tokenizer` makes a character-level fast tokenizer with `<think>`/`</think>` as
special tokens and a Qwen3-style chat template; `build_tiny_model` makes a randomly initialised
Llama- or Qwen3-architecture model around it and saves both to a folder that Unsloth's
FastLanguageModel and plain transformers load like any hub model. Nothing is downloaded.
"""

from __future__ import annotations

import string
from pathlib import Path

CONTROL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# <think>/</think> are single tokens but not "special" in the decoding sense, as in Qwen3: TRL decodes
# completions with skip_special_tokens=True, which would otherwise erase them from the text rewards see.
THINK_TOKENS = ["<think>", "</think>"]
SPECIAL_TOKENS = CONTROL_TOKENS + THINK_TOKENS
# The chat roles are whole tokens (as in any subword tokenizer), so the template costs ~7 tokens, not ~20.
ROLE_TOKENS = ["system", "user", "assistant"]
PAD_TOKEN, EOS_TOKEN = "<|endoftext|>", "<|im_end|>"

# Qwen3's template shape (im_start/im_end turns); the assistant turn is left open for generation.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# A thinking template's shape (Qwen3-Thinking-2507, DeepSeek-R1 distills): the generation prompt opens the thought, so the
# model's completion starts inside it; `enable_thinking: false` closes an empty one instead, as Qwen3's template does.
THINKING_CHAT_TEMPLATE = CHAT_TEMPLATE.replace(
    "<|im_start|>assistant\n{% endif %}",
    "<|im_start|>assistant\n{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}")


def build_char_tokenizer(extra_chars: str = "", chat_template: str = CHAT_TEMPLATE):
    """A fast tokenizer with one token per printable ASCII character (plus `extra_chars`); `chat_template` may be
    THINKING_CHAT_TEMPLATE, for a model whose prompts open its thought."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in string.digits + string.ascii_letters + string.punctuation + " \n" + extra_chars:
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=PAD_TOKEN))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()  # characters join back without spaces
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in CONTROL_TOKENS])
    core.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS + ROLE_TOKENS])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN, unk_token=PAD_TOKEN)
    tokenizer.chat_template = chat_template
    return tokenizer


def build_tiny_model(folder: str | Path, architecture: str = "llama", hidden_size: int = 64, num_layers: int = 2,
                     num_heads: int = 4, num_kv_heads: int = 2, intermediate_size: int = 128,
                     max_position_embeddings: int = 512, seed: int = 0, tokenizer=None, initializer_range: float = 0.02) -> Path:
    """Save a randomly initialised tiny model and its tokenizer to `folder`; returns the folder.

    A larger `initializer_range` gives larger, better separated next-token scores (fewer near ties).
    """
    import torch
    import transformers

    folder = Path(folder)
    tokenizer = tokenizer or build_char_tokenizer()
    common = dict(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
        initializer_range=initializer_range,
    )
    if architecture == "llama":
        config = transformers.LlamaConfig(**common)
        model_cls = transformers.LlamaForCausalLM
    elif architecture == "qwen3":
        config = transformers.Qwen3Config(head_dim=hidden_size // num_heads, **common)
        model_cls = transformers.Qwen3ForCausalLM
    else:
        raise ValueError(f"architecture must be 'llama' or 'qwen3', got {architecture!r}")
    torch.manual_seed(seed)
    model = model_cls(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_random_adapter(model_dir: str | Path, folder: str | Path, seed: int = 0, r: int = 8, scale: float = 0.5) -> Path:
    """Save a LoRA adapter with random (non-zero) weights for the model in `model_dir`.

    A freshly initialised LoRA adapter is a no-op (its B matrices are zero); tests that must
    tell "adapter on" from "adapter off" need one that changes the outputs for sure.
    """
    import peft
    import torch
    import transformers

    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir))
    lora = peft.LoraConfig(r=r, lora_alpha=2 * r, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
                           init_lora_weights=False, task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, lora)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.normal_(0.0, scale)
    folder = Path(folder)
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(str(model_dir)).save_pretrained(folder)
    return folder


# A few lines of the kind of text the demo task uses, to learn a small SentencePiece vocabulary from.
_SPM_CORPUS = [f"What is {a} + {b}? <think>{a} plus {b} is {a + b}</think> The answer is {a + b}." for a in range(0, 60, 7) for b in range(1, 30, 4)]
_SPM_CORPUS += ["Name one colour of the sky. Blue.", "Write one short sentence about the sea. The sea is wide and deep.",
                string.ascii_letters + string.digits + string.punctuation]


def build_sentencepiece_tokenizer(folder: str | Path, vocab_size: int = 400):
    """A Llama-style tokenizer (SentencePiece BPE with byte fallback) learnt locally, with this module's chat template.

    llama.cpp's converter reads this kind directly (the character-level tokenizer only after the export
    translates it), so models built with it test the GGUF export's usual path. Byte fallback takes 256 of the
    `vocab_size` entries. Returns a transformers tokenizer; `folder` keeps the `tokenizer.model`.
    """
    import io

    import sentencepiece as spm
    from transformers import AutoTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_SPM_CORPUS), model_writer=model, vocab_size=vocab_size, model_type="bpe", byte_fallback=True,
        character_coverage=1.0, user_defined_symbols=THINK_TOKENS, control_symbols=CONTROL_TOKENS[1:], unk_id=0, bos_id=1,
        eos_id=2, pad_id=-1, add_dummy_prefix=False, remove_extra_whitespaces=False, split_digits=True,
        normalization_rule_name="identity", num_threads=1, minloglevel=2)
    (folder / "tokenizer.model").write_bytes(model.getvalue())
    (folder / "tokenizer_config.json").write_text(
        '{"tokenizer_class": "LlamaTokenizer", "add_bos_token": false, "legacy": false, "add_prefix_space": false}')
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.eos_token, tokenizer.pad_token = EOS_TOKEN, "<unk>"
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer

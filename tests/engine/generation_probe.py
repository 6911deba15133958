"""Child process for test_generation_path.py: what eval, the preview and the chat feed `generate`, next to TRL's own.

Run as `python generation_probe.py FOLDER`; prints one JSON line. It builds tiny models whose tokenizer and
generation config differ the way real models' do, makes a run directory for each case, builds a real
`trl.RLOOTrainer` from each run's config (TRL's end ids, generation settings and `_tokenize_prompts`), then runs
the app's evaluation, reward-preview sampling and chat on the same run while recording every `generate` call
(the real method runs; the recorder only copies its inputs and outputs).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from rloo_studio.engine.stack import import_training_stack

stack = import_training_stack("transformers")  # before transformers, as in every model process

import torch  # noqa: E402
import transformers  # noqa: E402
import yaml  # noqa: E402
from tokenizers import processors  # noqa: E402

from rloo_studio.demo import tinymodel  # noqa: E402

# Qwen3's shape for `enable_thinking: false`: the generation prompt carries an empty thought.
THINK_TEMPLATE = tinymodel.CHAT_TEMPLATE.replace(
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and enable_thinking is false %}"
    "<think>\n\n</think>\n\n{% endif %}{% endif %}")
ROWS = [{"prompt": f"What is {a} + {b}?", "answer": str(a + b)} for a in range(3, 30, 3) for b in (2, 5)]
STEP_REWARD = ("def step_seen(completions, trainer_state, **kwargs):\n"
               "    return [float(trainer_state.global_step) for _ in completions]\n")
MAX_TOKENS = 12


def tokenizer():
    """The character tokenizer with a BOS that plain-text tokenisation adds (as Llama's does) and the thinking template."""
    tok = tinymodel.build_char_tokenizer()
    tok.add_special_tokens({"bos_token": "<s>"})
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tok.convert_tokens_to_ids("<s>"))])
    tok.chat_template = THINK_TEMPLATE
    return tok


def models(root: Path) -> dict[str, Path]:
    tok = tokenizer()
    base = tinymodel.build_tiny_model(root / "base", tokenizer=tok, seed=3)
    # Gemma-2-it's layout: generation_config.eos_token_id lists ids the tokenizer's EOS is not among. Here every
    # letter and digit ends a generation, so a tiny random model reaches one within a few tokens.
    ends = shutil.copytree(base, root / "ends")
    end_ids = [tok.convert_tokens_to_ids(c) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"]
    config = transformers.GenerationConfig.from_pretrained(ends)
    config.eos_token_id = end_ids
    config.save_pretrained(ends)
    # A generation_config with its own sampling choices (top_k 1, repetition_penalty 1.3): TRL ignores them.
    settings = shutil.copytree(base, root / "settings")
    config = transformers.GenerationConfig.from_pretrained(settings)
    config.update(do_sample=True, top_k=1, repetition_penalty=1.3, temperature=0.2)
    config.save_pretrained(settings)
    return {"base": base, "ends": ends, "settings": settings}


def make_run(root: Path, name: str, model_dir: Path, prompt_format: str) -> Path:
    run_dir = root / "runs" / f"20260101-000000-{name}"
    run_dir.mkdir(parents=True)
    (run_dir / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS[:12]))
    (run_dir / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS[12:]))
    (run_dir / "rewards.py").write_text(STEP_REWARD)
    config = {
        "model": {"name_or_path": str(model_dir), "max_seq_length": 128, "backend": "transformers"},
        "lora": {"r": 8, "alpha": 16},
        "data": {"source": "data.jsonl", "test_split": "test.jsonl", "prompt_format": prompt_format,
                 "system_prompt": "Answer briefly."},
        "rewards": [{"name": "numeric_answer"}, {"file": "rewards.py"}],
        "rloo": {"num_generations": 6, "per_device_train_batch_size": 6, "max_completion_length": MAX_TOKENS,
                 "max_steps": 2, "beta": 0.0, "temperature": 1.0, "chat_template_kwargs": {"enable_thinking": False}},
    }
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    (run_dir / "status.json").write_text(json.dumps({"state": "finished", "step": 2, "max_steps": 2}))
    tinymodel.save_random_adapter(model_dir, run_dir / "adapter", seed=1)
    return run_dir


def trl_reference(run_dir: Path, prompt_lists: dict[str, list]) -> dict:
    """What a real RLOOTrainer built from this run's config uses: end ids, generation settings, prompt ids."""
    from rloo_studio.config import RunConfig
    from rloo_studio.data import to_trl_dataset
    from rloo_studio.engine.model import load_model
    from rloo_studio.engine.trainer_args import rloo_arguments

    cfg = RunConfig.load(run_dir / "config.yaml")
    loaded = load_model(cfg.model, None, stack, cfg.base_dir, for_training=False)
    dataset = to_trl_dataset(ROWS[:12], cfg.data, loaded.tokenizer)
    args = stack.trl.RLOOConfig(**rloo_arguments(cfg, stack, run_dir, loaded.dtype))
    trainer = stack.trl.RLOOTrainer(model=loaded.model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
                                    args=args, train_dataset=dataset, processing_class=loaded.tokenizer)
    kwargs = {k: v for k, v in trainer.generation_kwargs.items()}
    return {"eos_token_ids": list(trainer.eos_token_ids), "generation_kwargs": kwargs,
            "disable_dropout": args.disable_dropout, "length_check": length_check(cfg, trainer, dataset["prompt"]),
            "prompt_ids": {name: trainer._tokenize_prompts(prompts)[0] for name, prompts in prompt_lists.items()}}


def length_check(cfg, trainer, prompts) -> dict:
    """The prompt-length check with exactly enough room for TRL's longest training prompt, and one token less."""
    import copy

    from rloo_studio.engine.trainer_args import check_prompt_lengths
    from rloo_studio.errors import DataError

    longest = max(len(ids) for ids in trainer._tokenize_prompts(list(prompts))[0])
    verdicts = {"longest": longest}
    for label, room in (("fits", longest), ("one_short", longest - 1)):
        tight = copy.deepcopy(cfg)
        tight.model.max_seq_length = room + MAX_TOKENS
        try:
            check_prompt_lengths(prompts, trainer.processing_class, tight)
            verdicts[label] = "accepted"
        except DataError as exc:
            verdicts[label] = exc.message()
    return verdicts


CALLS: list[dict] = []
_real_generate = transformers.GenerationMixin.generate


def _recording_generate(self, *args, **kwargs):
    out = _real_generate(self, *args, **kwargs)
    ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
    config = kwargs["generation_config"].to_dict()
    CALLS.append({"prompt_ids": [[t for t, m in zip(r, mr) if m] for r, mr in zip(ids.tolist(), mask.tolist())],
                  "generated": out[:, ids.shape[1]:].tolist(), "config": {k: config.get(k) for k in CONFIG_KEYS}})
    return out


CONFIG_KEYS = ("do_sample", "max_new_tokens", "pad_token_id", "bos_token_id", "eos_token_id", "temperature", "top_p", "top_k",
               "min_p", "repetition_penalty", "no_repeat_ngram_size")


def taken(fn) -> tuple:
    """Run fn and return (its result, the generate calls it made)."""
    start = len(CALLS)
    result = fn()
    return result, CALLS[start:]


def main(root: Path) -> None:
    from rloo_studio.config import RunConfig
    from rloo_studio.data import build_prompt
    from rloo_studio.engine.evaluate import evaluate_run
    from rloo_studio.engine.chat_model import ChatModel, Sampling
    from rloo_studio.engine.sampling import sample_groups

    transformers.GenerationMixin.generate = _recording_generate
    folders = models(root)
    cases = {"chat_ends": (folders["ends"], "chat"), "chat_settings": (folders["settings"], "chat"),
             "chat_base": (folders["base"], "chat"), "plain_base": (folders["base"], "plain")}
    messages = [{"role": "user", "content": "What is 12 + 7?"}]
    out = {}
    for name, (folder, prompt_format) in cases.items():
        run_dir = make_run(root, name, folder, prompt_format)
        cfg = RunConfig.load(run_dir / "config.yaml")
        chat = prompt_format == "chat"
        prompts = {"eval": [build_prompt(r["prompt"], cfg.data, chat) for r in ROWS[12:16]],
                   "preview": [build_prompt(r["prompt"], cfg.data, chat) for r in ROWS[:2]],
                   "chat": [build_prompt(messages if chat else messages[-1]["content"], cfg.data, chat)]}
        case = {"trl": trl_reference(run_dir, prompts)}
        report, calls = taken(lambda: evaluate_run(run_dir, limit=4, progress=lambda line: None))
        case["eval"] = {"calls": calls, "per_prompt": report["per_prompt"]}
        sampled, calls = taken(lambda: sample_groups(cfg, [dict(r) for r in ROWS[:2]], progress=lambda m: None, seed=0))
        case["preview"] = {"calls": calls, "groups": sampled["groups"]}
        model = ChatModel()
        model.load(run_dir)
        replies = {}
        for label, sampling in (("greedy", Sampling(temperature=0.0, max_new_tokens=MAX_TOKENS)),
                                ("sampled", Sampling(temperature=1.0, top_p=1.0, max_new_tokens=MAX_TOKENS, seed=5))):
            for side in ("base", "tuned"):
                reply, calls = taken(lambda: model.reply(messages, side, sampling, system_prompt="Answer briefly."))
                replies[f"{label}/{side}"] = {"token_ids": reply["token_ids"], "finished": reply["finished"], "calls": calls}
        case["chat"] = replies
        out[name] = case
    print(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

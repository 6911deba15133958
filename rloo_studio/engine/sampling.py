"""Sampling completions for the reward preview: k per prompt from the config's base model, as training would.

Loads the model with plain transformers (no LoRA: the preview shows what the model does before
training) and samples `num_generations` completions per prompt through `engine.generate`, the
path training takes: the same prompt tokens (chat template, system prompt, the run's
`rloo.chat_template_kwargs`), end tokens and generation settings (temperature, top-p, top-k,
min-p, repetition penalty from the run's config). Each group keeps its completions' token ids,
so rewards get the `completion_ids` TRL would give them. Scoring is not done here:
`workers.scorer.score` runs the person's reward code in its own process.
"""

from __future__ import annotations

import random
from pathlib import Path

from ..config import RunConfig
from ..data import answer_column, row_from_cell
from ..errors import OutOfMemory, StudioError


def pick_rows(cfg: RunConfig, num_prompts: int, seed: int = 0) -> list[dict]:
    from ..data import load_rows

    rows = load_rows(cfg.data, cfg.base_dir, seed=int(cfg.rloo_value("seed"))).train  # training's split, by the run's seed
    if num_prompts < 1:
        raise StudioError(f"--num-prompts {num_prompts} leaves nothing to preview", "", "give a positive number")
    return random.Random(seed).sample(rows, min(num_prompts, len(rows)))


def data_column_names(cfg: RunConfig) -> list[str]:
    """The data's columns, for written prompts and completions that name only some: [] when the data cannot be read
    (its own problem is reported where it is read for sampling or training)."""
    from ..data import load_rows

    try:
        return load_rows(cfg.data, cfg.base_dir).columns
    except StudioError:
        return []


def with_every_column(row: dict, columns: list[str]) -> dict:
    """A written row with every data column (None where it gives none): rewards get the keyword arguments they get in
    training (`data.reward_kwargs`), and one that reads a column the row lacks fails where the preview shows it."""
    return {**{c: None for c in columns}, **row}


def typed_rows(cfg: RunConfig, prompt: str, answer: str | None = None) -> list[dict]:
    """The one data row of a prompt typed for the preview: the prompt, what its answer cell gives (`data.row_from_cell`:
    `symbol=Au; atomic_number=79`, or the answer column's value alone, as a pinned example's cell), and every other
    column of the data."""
    columns = data_column_names(cfg)
    typed = {**row_from_cell(answer, columns, answer_column(cfg)), cfg.data.prompt_column: prompt}
    return [with_every_column(typed, columns)]


def sample_groups(cfg: RunConfig, rows: list[dict], progress=print, seed: int = 0) -> dict:
    """What scoring needs of the sampled completions for `rows` (`rewards.preview.scoring_request` takes it):

    groups: [{prompt, row, completions, completion_ids, cut_off, probe_completion_ids}], conversational,
    tokenizer (its source), think_end_token_id, prompt_opens_think (rewards.thinking). The token ids,
    the `</think>` id and whether the prompts open a thought come from the tokenizer loaded here, so the
    scoring child need not load one (importing transformers takes seconds: the difference between a
    live preview and a wait)."""
    from .stack import import_training_stack
    from .warm import load_preview_model

    stack = import_training_stack("transformers")
    loaded = load_preview_model(cfg, stack, progress)  # kept loaded between previews in the inference worker
    return sample_with(loaded.model, loaded.tokenizer, cfg, rows, progress, seed)


def sample_with(model, tokenizer, cfg: RunConfig, rows: list[dict], progress=print, seed: int = 0) -> dict:
    """`sample_groups` with a model already loaded: the format warm-up scans its run's adapter with it."""
    from ..data import to_trl_dataset, use_chat_format
    from ..rewards import think_end_token_id
    from ..rewards.thinking import prompt_opens_think
    from ..rewards.preview import group_probes, written_completion_ids
    from ..rewards.runtime import cut_off
    from .generate import end_token_ids, generate_completions
    from .model import resolve_model_source

    k = int(cfg.rloo_value("num_generations"))
    max_new_tokens = int(cfg.rloo_value("max_completion_length"))
    temperature = cfg.rloo_value("temperature")
    prompts = list(to_trl_dataset(rows, cfg.data, tokenizer)["prompt"])
    conversational = use_chat_format(cfg.data, tokenizer) or isinstance(prompts[0], list)
    repeated = [p for p in prompts for _ in range(k)]  # TRL's order: the k completions of a prompt are consecutive
    progress(f"[preview] sampling {k} completions for each of {len(prompts)} prompts (temperature {temperature}, "
             f"up to {max_new_tokens} tokens)")
    try:
        out = generate_completions(model.eval(), tokenizer, repeated, do_sample=True, seed=seed, cfg=cfg)
    except (RuntimeError, MemoryError) as exc:
        if "out of memory" not in str(exc).lower() and type(exc).__name__ != "OutOfMemoryError":
            raise
        raise preview_out_of_memory(cfg, len(prompts), exc) from None
    end_ids = end_token_ids(model, tokenizer)
    groups = [{"prompt": prompts[i], "row": dict(rows[i]),  # every column, the prompt's too: rewards get them all
               "completions": out.texts[i * k:(i + 1) * k], "completion_ids": out.completion_ids[i * k:(i + 1) * k],
               "cut_off": [cut_off(ids, max_new_tokens, end_ids) for ids in out.completion_ids[i * k:(i + 1) * k]]}
              for i in range(len(prompts))]
    for group in groups:
        group["probe_completion_ids"] = {kind: written_completion_ids(text, tokenizer)
                                         for kind, text in group_probes(group).items()}
    return {"groups": groups, "conversational": conversational,
            "tokenizer": str(resolve_model_source(cfg.model.name_or_path, cfg.base_dir)),
            "think_end_token_id": think_end_token_id(tokenizer),
            "prompt_opens_think": prompt_opens_think(prompts, tokenizer, cfg.chat_template_kwargs())}


def preview_out_of_memory(cfg: RunConfig, num_prompts: int, exc: BaseException) -> OutOfMemory:
    """Sampling ran out of memory: say how big the generation batch was and what makes it smaller."""
    from ..machine.vram import estimate_config

    k = int(cfg.rloo_value("num_generations"))
    why = (f"the preview generates {num_prompts} prompts × {k} completions × up to "
           f"{cfg.rloo_value('max_completion_length')} tokens at once, and their KV cache did not fit ({str(exc).splitlines()[0][:160]})")
    try:
        est = estimate_config(cfg, None)
        if est is not None and "KV cache (generation)" in est.parts:
            why += f"; the estimator puts the training batch's KV cache at {est.parts['KV cache (generation)']:.1f} GiB of {est.total_gib:.1f} GiB"
    except Exception:  # noqa: BLE001 - advice is a bonus
        pass
    return OutOfMemory("the GPU ran out of memory while sampling completions for the preview", why,
                       "preview fewer prompts, or lower rloo.num_generations or rloo.max_completion_length (training needs "
                       "that memory too: `rloo-studio estimate CONFIG` shows the breakdown); the preview's process has ended "
                       "and freed its memory, so the app is usable as before")


def read_completions_file(path: str | Path) -> tuple[list[dict], int]:
    """Hand-written completions: JSONL lines {"prompt", "completion"} (grouped by prompt, in order) or
    {"prompt", "completions": [...]}, plus any dataset columns; returns (groups, k)."""
    import json

    path = Path(path)
    if not path.is_file():
        raise StudioError(f"completions file not found: {path}", "", "give a .jsonl file with prompt and completion fields")
    groups: dict[str, dict] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise StudioError(f"{path.name} line {number} is not valid JSON ({exc.msg})", "", "fix that line") from None
        if not isinstance(item, dict) or "prompt" not in item or not ("completion" in item or "completions" in item):
            raise StudioError(f"{path.name} line {number} needs `prompt` and `completion` (or `completions`)", "",
                              'write lines like {"prompt": "...", "completion": "...", "answer": "42"}')
        prompt = item["prompt"]
        key = json.dumps(prompt, sort_keys=True)
        group = groups.setdefault(key, {"prompt": prompt, "row": {}, "completions": []})
        group["row"].update({c: v for c, v in item.items() if c not in ("prompt", "completion", "completions")})
        group["completions"].extend(item["completions"] if "completions" in item else [item["completion"]])
    sizes = {len(g["completions"]) for g in groups.values()}
    if not groups:
        raise StudioError(f"{path.name} has no completions", "", "add lines with prompt and completion")
    if len(sizes) != 1 or min(sizes) < 2:
        raise StudioError(f"{path.name}: every prompt needs the same number (at least 2) of completions; found {sorted(sizes)}",
                          "RLOO compares each completion with the others of its prompt", "give each prompt k completions")
    return list(groups.values()), sizes.pop()

"""Does a format warm-up get RLOO off zero reward? SmolLM2-135M-Instruct asked for `<answer>…</answer>`.

    python benchmarks/format_warmup.py                 # 4 RLOO steps per side, 30 held-out prompts (fits ~30 min on a busy 2-core machine)
    python benchmarks/format_warmup.py --steps 2 --limit 8 --warmup-steps 4     # smoke test (results/format_warmup_smoke.json)

The task: the single-digit sums of the cpu-small-real preset (assets/addition-data), with the prompts' own format
request ("Answer with the number only.") removed and a system prompt that asks for the answer inside
`<answer></answer>` tags. The reward (a reward file written here, `answer_in_tags`) is 1.0 for the right sum inside the
tags, 0.2 for the tags around another number, 0 without the tags: a model that never writes the tags earns 0 on every
completion, every group ties, and RLOO has nothing to learn from.

Two runs of `rloo-studio train` on the model scripts/build_real_model.py builds, with the same RLOO settings and the
same number of RLOO steps (the budget):

* plain — RLOO alone;
* warm-up — `warmup.enabled` (source answer_column, template `<answer>{answer}</answer>`) and then the same RLOO.

Each is then evaluated with `rloo-studio eval --limit N` (greedy, held-out prompts of test.jsonl: pairs of digits never
seen in training): the base model and the final weights, scored by the run's reward — mean reward with its bootstrap
interval and the share of answers in the tags with its Wilson interval (rloo_studio/stats.py), and the paired verdict
tuned vs base. The warm-up's own before/after check (a handful of held-back prompts) is reported as the run recorded
it. Wall time per side includes its warm-up (said apart). Torch threads: OMP_NUM_THREADS (default 1: the machine is
shared). Writes benchmarks/results/format_warmup.json and prints a Markdown table.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, machine, save, shown, table

sys.path.insert(0, str(ROOT))

DATA = ROOT / "assets" / "addition-data"
SYSTEM_PROMPT = "Give the final answer inside <answer></answer> tags."
FORMAT_REQUEST = re.compile(r"\s*Answer with the number only\.\s*$")
TAGGED = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)
REWARD = '''"""The benchmark's reward: the right sum inside <answer></answer> tags."""
import re

TAG = re.compile(r"<answer>\\s*(-?\\d+)\\s*</answer>")


def answer_in_tags(completions, answer, **kwargs):
    """1.0 for the right sum inside the tags, 0.2 for the tags around another number, 0.0 without the tags."""
    scores = []
    for completion, expected in zip(completions, answer):
        text = completion[0]["content"] if isinstance(completion, list) else completion
        found = TAG.search(text)
        scores.append(0.0 if found is None else 1.0 if int(found.group(1)) == int(expected) else 0.2)
    return scores
'''


def write_task(folder: Path) -> None:
    """The data without the prompts' own format request, and the reward file."""
    for name in ("train.jsonl", "test.jsonl"):
        rows = [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]
        (folder / name).write_text("".join(json.dumps({**r, "prompt": FORMAT_REQUEST.sub("", r["prompt"])}) + "\n" for r in rows))
    (folder / "reward.py").write_text(REWARD)


def config(model_dir: Path, steps: int, warmup_steps: int | None) -> dict:
    cfg = {
        "model": {"name_or_path": str(model_dir), "backend": "auto", "dtype": "float32", "max_seq_length": 256,
                  "gradient_checkpointing": False},
        "lora": {"r": 16, "alpha": 32},
        "data": {"source": "train.jsonl", "prompt_column": "prompt", "test_split": "test.jsonl", "system_prompt": SYSTEM_PROMPT},
        "rewards": [{"file": "reward.py", "weight": 1.0}],
        "rloo": {"num_generations": 4, "per_device_train_batch_size": 16, "max_completion_length": 16, "temperature": 1.0,
                 "learning_rate": 2.0e-4, "lr_scheduler_type": "constant", "beta": 0.0, "max_steps": steps,
                 "save_steps": steps, "logging_steps": 1, "seed": 42},
        "output": {"runs_dir": "runs", "samples_per_step": 1},
    }
    if warmup_steps:
        cfg["warmup"] = {"enabled": True, "steps": warmup_steps, "source": "answer_column", "answer_column": "answer",
                         "template": "<answer>{answer}</answer>"}  # the section's defaults otherwise
    return cfg


def cli(args: list, cwd: Path, threads: int) -> float:
    started = time.time()
    done = subprocess.run([sys.executable, "-m", "rloo_studio.cli", *map(str, args)], cwd=cwd, stdout=sys.stderr,
                          env={**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        sys.exit(f"rloo-studio {' '.join(map(str, args))} failed (exit {done.returncode}); see above")
    return time.time() - started


def side_result(run_dir: Path, eval_s: float, train_s: float) -> dict:
    from rloo_studio import stats

    report = json.loads((run_dir / "eval.json").read_text())
    texts = {name: [p["sides"][name]["completion"] for p in report["per_prompt"]] for name in ("base", report["checkpoint"])}
    tagged = {name: stats.rate([1.0 if TAGGED.search(t) else 0.0 for t in ts]) for name, ts in texts.items()}
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    rewards = [m["reward"] for m in metrics if isinstance(m.get("reward"), (int, float))]
    warm = json.loads((run_dir / "warmup" / "warmup.json").read_text()) if (run_dir / "warmup" / "warmup.json").is_file() else None
    return {
        "train_wall_s": round(train_s, 1), "warmup_s": warm["seconds"] if warm else 0.0, "eval_wall_s": round(eval_s, 1),
        "training_reward_per_step": [round(r, 3) for r in rewards],
        "base": {"mean_reward": {"value": report["base"]["mean_reward"], **report["base"]["intervals"]["mean_reward"]},
                 "in_tags": tagged["base"]},
        "tuned": {"mean_reward": {"value": report["tuned"]["mean_reward"], **report["tuned"]["intervals"]["mean_reward"]},
                  "in_tags": tagged[report["checkpoint"]]},
        "tuned_vs_base": report["tuned_vs_base"], "verdict": report["verdict"], "eval_says": report.get("warmup"),
        "warmup_check": warm["check"] if warm else None,
        "examples": {"base": texts["base"][:3], "tuned": texts[report["checkpoint"]][:3]},
    }


def main(argv: list[str]) -> int:
    from rloo_studio import stats

    opts = {"--steps": 4, "--limit": 30, "--warmup-steps": 30}
    while argv[:1] and argv[0] in opts:
        opts[argv[0]] = int(argv[1])
        argv = argv[2:]
    steps, limit, warmup_steps = opts["--steps"], opts["--limit"], opts["--warmup-steps"]
    sys.path.insert(0, str(ROOT / "scripts"))
    from build_real_model import build_real_model

    import yaml

    model_dir = build_real_model()
    threads = int(os.environ.get("OMP_NUM_THREADS") or 1)
    load_start = [round(x, 2) for x in os.getloadavg()]
    sides = {}
    with tempfile.TemporaryDirectory(prefix="rloo-format-warmup-") as tmp:
        folder = Path(tmp)
        write_task(folder)
        for name, warm in (("plain", None), ("warm-up", warmup_steps)):
            (folder / f"{name}.yaml").write_text(yaml.safe_dump(config(model_dir, steps, warm), sort_keys=False))
            run_dir = folder / "runs" / name
            train_s = cli(["train", f"{name}.yaml", "--run-dir", run_dir], folder, threads)
            eval_s = cli(["eval", run_dir, "--limit", limit], folder, threads)
            sides[name] = side_result(run_dir, eval_s, train_s)
            print(f"[bench] {name}: trained in {train_s:.0f} s, evaluated in {eval_s:.0f} s", file=sys.stderr, flush=True)

    plain, warmed = sides["plain"]["tuned"], sides["warm-up"]["tuned"]
    separated = (warmed["mean_reward"]["low"] or 0) > (plain["mean_reward"]["high"] or 0)
    result = {
        "what": "SmolLM2-135M-Instruct asked (system prompt) for the answer inside <answer></answer>; single-digit sums; "
                "plain RLOO vs a format warm-up then the same RLOO; greedy answers on held-out prompts",
        "command": "python benchmarks/format_warmup.py " + " ".join(f"{k} {v}" for k, v in opts.items()),
        "machine": machine(), "threads": threads, "load_average_start": load_start,
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "rloo_steps_per_side": steps, "warmup_steps": warmup_steps, "held_out_prompts": limit,
        "reward": "answer_in_tags: 1.0 right sum in the tags, 0.2 tags around another number, 0 without tags",
        "intervals": "95 %: Wilson for the share in tags, percentile bootstrap over prompts for the mean reward (rloo_studio/stats.py)",
        "sides": sides,
        "warmup_beats_plain": {"mean_reward_intervals_separated": separated,
                               "difference": round((warmed["mean_reward"]["value"] or 0) - (plain["mean_reward"]["value"] or 0), 4)},
    }
    path = save("format_warmup" + ("_smoke" if steps < 4 or limit < 20 else ""), result)
    rows = []
    for name, s in sides.items():
        for who in ("base", "tuned"):
            rows.append([name, who, stats.fmt_interval(s[who]["mean_reward"]), stats.fmt_interval(s[who]["in_tags"], True),
                         f"{s['train_wall_s']:.0f} s (warm-up {s['warmup_s']:.0f} s)" if who == "tuned" else ""])
    print(table(["side", "model", "mean reward", "answers in <answer> tags", "training"], rows))
    print(f"\nwarm-up vs plain (tuned): {result['warmup_beats_plain']}; written to {shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The `rloo-studio` command line: train, runs, eval, export, preview, scan, estimate, rewards (and the reward library), ui.

Each subcommand parses its arguments, calls one function of the engine, the runs layer or (training
in several processes) data_parallel, and turns a StudioError into one clear message on stderr with
a non-zero exit code (2 for bad input, 1 for a failed run) — never a bare traceback. `--json`
prints one JSON document on stdout and nothing else there. Heavy imports (torch, TRL) happen only inside `train`.
Here: the parser, `train`, `estimate`, `models` and `ui`; the commands about what runs left are in results.py,
those about rewards in rewards.py, how a command ends in exits.py. `python -m rloo_studio.cli` runs __main__.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .. import runs
from .data_parallel import train_data_parallel
from ..machine.distributed import LAUNCHER_PID_ENV, is_launched_rank, rank
from ..errors import StudioError
from ..paths import DEMO_PRESET, PROJECT_ROOT
from .exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, fail
from .results import cmd_eval, cmd_export, cmd_runs
from .rewards import cmd_preview, cmd_rewards, cmd_scan


# ---- train --------------------------------------------------------------------------------------

def cmd_train(args: argparse.Namespace) -> int:
    from ..config import RunConfig

    overrides = list(args.overrides)
    config_path = args.config
    if config_path and "=" in config_path and not Path(config_path).exists():
        overrides.insert(0, config_path)  # `train --resume DIR key=value`: the first override landed here
        config_path = None
    accelerate = None
    if args.accelerate_config and not is_launched_rank():
        from ..machine.distributed import read_accelerate_config

        try:
            if args.num_processes != 1:
                raise StudioError("--num-processes and --accelerate-config were both given",
                                  "the accelerate config says how many processes to start (num_processes)",
                                  "leave out --num-processes")
            accelerate = read_accelerate_config(args.accelerate_config)
        except StudioError as exc:
            return fail(exc)
    if args.resume:
        run_dir = Path(args.resume)
        if not (run_dir / runs.CONFIG_FILE).is_file():
            return fail(StudioError(f"{run_dir} is not a run directory (no {runs.CONFIG_FILE})",
                                     "--resume takes a folder under runs/ made by an earlier `rloo-studio train`",
                                     "list runs with `rloo-studio runs`"))
        status = runs.read_status(run_dir)
        # The app marks a run `queued` before it starts this very process: that is not a second worker.
        launched_for_us = status.get("state") == "queued" and status.get("pid") in (None, os.getpid())
        # Nor is the launcher of `--num-processes N`, whose pid its ranks carry (status holds it while they train).
        launched_for_us |= status.get("pid") is not None and str(status.get("pid")) == os.environ.get(LAUNCHER_PID_ENV)
        # Only rank 0 (on machine 0) answers for the run: other ranks and other machines' launchers join it.
        launched_for_us |= (is_launched_rank() and rank() != 0) or bool(accelerate and accelerate.machine_rank > 0)
        if runs.effective_state(status) in runs.ACTIVE_STATES and not launched_for_us:
            return fail(StudioError(f"run {run_dir.name} is still {status.get('state')} (process {status.get('pid')})",
                                     "two workers must not write one run directory",
                                     f"stop it first (`touch {run_dir / runs.STOP_FILE}`) and wait for it to end"))
        config_path = config_path or str(run_dir / runs.CONFIG_FILE)
    if not config_path:
        if not DEMO_PRESET.is_file():
            return fail(StudioError("no config file given", "", "run `rloo-studio train CONFIG.yaml` (e.g. presets/cpu-demo.yaml)"))
        config_path = str(DEMO_PRESET)
        print(f"No config given: training the bundled demo ({DEMO_PRESET.relative_to(PROJECT_ROOT)}): a tiny model that "
              "learns arithmetic word problems on the CPU in about five minutes. Pass a config to train your own.", flush=True)
    if (args.num_processes != 1 or accelerate) and not is_launched_rank():
        try:
            return train_data_parallel(config_path, overrides, num_processes=args.num_processes, accelerate=accelerate,
                                       accelerate_config=args.accelerate_config, resume=args.resume, given_run_dir=args.run_dir)
        except StudioError as exc:  # refused before any process started
            if not (accelerate and accelerate.machine_rank > 0):  # machine 0 answers for the run; the others only join it
                _mark_queued_run_failed(args.run_dir, exc)
            return fail(exc)
    try:
        cfg = RunConfig.load(config_path, overrides)
        from ..engine.train import run_training

        run_dir = run_training(cfg, args.resume or args.run_dir, resume=bool(args.resume))
    except StudioError as exc:
        _mark_queued_run_failed(args.run_dir, exc)
        return fail(exc)
    except KeyboardInterrupt:
        print("\nerror: interrupted; the run can be continued with --resume from its last checkpoint.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one clear line; the traceback is in train.log
        _mark_queued_run_failed(args.run_dir, StudioError(f"training failed: {type(exc).__name__}: {exc}", "an unexpected error before training began",
                                                          "read train.log; set RLOO_STUDIO_DEBUG=1 for the traceback"))
        print(f"\nerror: training failed: {type(exc).__name__}: {exc}\n"
              "The full traceback is in the run's train.log if the run directory was created (see `rloo-studio runs`); "
              "set RLOO_STUDIO_DEBUG=1 to print it here.", file=sys.stderr)
        if os.environ.get("RLOO_STUDIO_DEBUG"):
            raise
        return EXIT_FAILED
    status = runs.read_status(run_dir)
    if status.get("state") == "stopped" and not is_launched_rank():  # with several processes the launcher says it
        print(f"Stopped at step {status.get('step')}. Continue with: rloo-studio train --resume {run_dir}")
    return EXIT_OK


def _mark_queued_run_failed(run_dir: str | None, exc: StudioError) -> None:
    """A run the app queued but that failed before training began (e.g. a missing data column): say why in its status."""
    if is_launched_rank() and rank() != 0:
        return  # with several processes only rank 0 (and the launcher) write the run's status
    if run_dir and runs.read_status(run_dir).get("state") == "queued":
        runs.update_status(run_dir, state="failed", pid=None, error=exc.as_dict())


# ---- estimate -----------------------------------------------------------------------------------

def cmd_estimate(args: argparse.Namespace) -> int:
    from ..config import RunConfig

    if args.list_models:
        return cmd_models(args)
    if not args.config:
        return fail(StudioError("no config file given", "", "run `rloo-studio estimate CONFIG.yaml [--gpu-gb N]`, e.g. presets/gpu-16gb.yaml"))
    from ..machine.vram import estimate_config, shrink_to_fit

    try:
        cfg = RunConfig.load(args.config, list(args.overrides))
    except StudioError as exc:
        return fail(exc)
    device_gib, device_name, bf16 = args.gpu_gb, f"{args.gpu_gb:g} GB (given)" if args.gpu_gb else None, True
    on_cpu = False
    if device_gib is None:
        from ..machine.hardware import detect

        hw = detect()
        if hw.gpus:
            gpu = hw.gpus[0]
            device_gib, device_name, bf16 = gpu.total_gb, f"{gpu.name}, {gpu.total_gb:.1f} GB", gpu.bf16
        elif hw.ram_gb:  # no GPU: the run trains on the CPU, in RAM
            device_gib, device_name, bf16, on_cpu = hw.ram_gb, f"this computer's RAM, {hw.ram_gb:.1f} GiB", False, True
    est = estimate_config(cfg, device_gib, bf16, on_cpu)
    if args.measure:
        return _estimate_measured(args, cfg, est, device_name)
    if est is None:
        return fail(StudioError(f"the shape of model {cfg.model.name_or_path!r} is unknown",
                                 "it is not a local folder with a config.json, not in the Hugging Face cache, and not in the built-in table",
                                 "download the model once (or its config.json), or estimate with a model of the same size from "
                                 "`rloo-studio estimate --list-models`"))
    advice = None
    if est.verdict in ("exceeds", "tight"):
        changes, shrunk = shrink_to_fit(cfg, device_gib, bf16, on_cpu)
        advice = {"changes": changes, "estimate": shrunk.to_dict() if shrunk else None}
    import dataclasses

    from ..batching import effective_line
    from ..rewards.judge import judge_calls_per_step, judge_cost_line

    plan = cfg.batch_plan()
    if args.json:
        print(json.dumps({**est.to_dict(), "device": device_name, "shrink_to_fit": advice,
                          "judge_calls_per_step": judge_calls_per_step(cfg.rewards, plan),
                          "trainer_arguments": cfg.effective_rloo(), "batch_plan": dataclasses.asdict(plan)}))
        return EXIT_OK
    memory = "memory (RAM: no GPU here, so the run trains on the CPU)" if on_cpu else "GPU memory"
    print(f"Estimated peak {memory} for one RLOO step: {cfg.model.name_or_path} ({est.params / 1e9:.2f}B parameters)\n")
    print(est.table())
    if device_gib is None:
        print("\nNo CUDA GPU detected: pass --gpu-gb N for a verdict against a card of N GB.")
    elif on_cpu:
        print(f"\nIn {device_name}: {est.verdict} (fits: under {100 * 0.85:.0f}% of it; other programs need some too). No "
              "CUDA GPU detected: pass --gpu-gb N for a verdict against a card of N GB.")
        if est.beyond_free:
            print(f"warning: {est.free_line()}.")
    else:
        print(f"\nOn {device_name}: {est.verdict} (fits: under {100 * 0.85:.0f}% of the device; tight: up to 100%).")
    for note in est.notes:
        print(f"- {note}")
    # The step this estimate is for, in the effective values training passes to the trainer (one process).
    print(f"\n{effective_line(cfg.effective_rloo())}")
    cost = judge_cost_line(cfg.rewards, plan)
    if cost:
        print(f"\n{cost}")
    if advice and advice["changes"]:
        overrides = " ".join(f"{k}={json.dumps(v)}" for k, v in advice["changes"].items())
        after = advice["estimate"]
        if after and after["verdict"] == "fits":
            print(f"\nTo fit, change: {overrides}\n  → {after['total_gib']:.2f} GiB, {after['verdict']}"
                  f"\n  e.g. rloo-studio train {args.config} {overrides}")
        else:
            judge = any(k.startswith("judge") for k in est.parts)
            print(f"\nEven with {overrides} this {'model with its judge' if judge else 'model'} needs {after['total_gib']:.2f} GiB: "
                  f"it does not fit {'this computer' if on_cpu else 'this GPU'}. Choose a smaller model (the presets name one "
                  "per GPU size: presets/gpu-<N>gb.yaml)"
                  + (", a smaller judge, or a judge server ({url, model})." if judge else "."))
    return EXIT_OK


def _estimate_measured(args: argparse.Namespace, cfg, est, device_name: str | None) -> int:
    """`estimate --measure`: a short trial run of the config, timed, with the plan for `--minutes`; the memory
    estimate beside its measured peak."""
    from ..data import load_rows
    from ..errors import DataError
    from ..workers.trial import measure, plan_words, steps_for, summary_lines

    try:
        train_rows = len(load_rows(cfg.data, cfg.base_dir, seed=int(cfg.rloo_value("seed"))).train)
    except DataError as exc:
        return fail(exc)
    said = {"stage": None}

    def progress(now) -> None:  # each stage once, as it begins, with the seconds so far
        if now.stage != said["stage"]:
            said["stage"] = now.stage
            print(f"[estimate] {now.stage} (at {now.total_s:.0f} s)", file=sys.stderr, flush=True)

    try:
        m = measure(cfg, train_rows=train_rows, on_progress=progress)
    except StudioError as exc:
        print(f"error: {exc.message()}", file=sys.stderr)
        return EXIT_FAILED
    print(f"[estimate] done at {m.trial_s or 0:.0f} s", file=sys.stderr, flush=True)
    predicted = est.total_gib if est is not None else None
    if args.json:
        print(json.dumps({"measured": m.to_dict(), "estimated_peak_gib": predicted, "device": device_name,
                          "minutes": args.minutes, "steps_for_minutes": steps_for(m, args.minutes * 60),
                          "plan": plan_words(m, args.minutes)}))
        return EXIT_OK
    print(f"Measured with a {m.trial_steps}-step trial run of {args.config} (removed afterwards):")
    for line in summary_lines(m, args.minutes):
        print(f"- {line}")
    if predicted is not None and m.peak_gpu_gib is not None:
        print(f"- the memory estimator predicted {predicted:.2f} GiB for this GPU; the trial's peak was {m.peak_gpu_gib:.2f} GiB")
    return EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    from ..machine.vram import KNOWN_MODELS

    for name, shape in KNOWN_MODELS.items():
        print(f"{name:<38} {shape.params / 1e9:6.2f}B  layers {shape.num_layers:>2}  vocab {shape.vocab_size:,}")
    return EXIT_OK


# ---- ui -----------------------------------------------------------------------------------------

def cmd_ui(args: argparse.Namespace) -> int:
    from ..web.serve import check_exposure, launch_token, read_auth_file, saved_launches

    relink = "rloo-studio ui --print-url" + (f" --runs-dir {args.runs_dir}" if args.runs_dir != "runs" else "")
    if args.print_url:
        found = saved_launches(args.runs_dir)
        if not found:
            return fail(StudioError(f"no RLOO Studio is running from the runs folder {args.runs_dir}",
                                     "each running app leaves its link in RUNS/.studio/launch/ and removes it when it stops",
                                     "start it with `rloo-studio ui` (or `python launch.py`), or pass the --runs-dir it was started with"))
        for entry in found:
            print(entry["url"])
        return EXIT_OK
    try:
        if args.auth:
            print("warning: --auth puts the password on the command line, where `ps` shows it to every user of this "
                  "computer; set RLOO_STUDIO_AUTH=USER:PASSWORD or use --auth-file FILE (chmod 600) instead",
                  file=sys.stderr, flush=True)
        login = read_auth_file(args.auth_file) if args.auth_file else (args.auth or os.environ.get("RLOO_STUDIO_AUTH"))
        credentials = check_exposure(args.host, login, share=args.share, no_token=args.no_token)
        token = launch_token(args.no_token)
    except StudioError as exc:
        return fail(exc)
    note = runs.make_private_note(args.runs_dir)
    if note:
        print(f"[rloo-studio] {note}", file=sys.stderr, flush=True)
    from ..ui.app import serve

    try:
        return serve(args.host, args.port, args.runs_dir, credentials, share=args.share, inbrowser=args.inbrowser,
                     token=token, allowed_hosts=tuple(args.allowed_host), relink_command=relink)
    except StudioError as exc:
        return fail(exc)
    except KeyboardInterrupt:
        return EXIT_OK


# ---- parser -------------------------------------------------------------------------------------

def _positive_minutes(value: str) -> float:
    """--minutes: a time budget above zero (argparse says the problem in its own error line)."""
    try:
        minutes = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of minutes, e.g. 30") from None
    if not minutes > 0:
        raise argparse.ArgumentTypeError(f"{value} minutes leave no time to train: give more than 0, e.g. 30")
    return minutes


def build_parser() -> argparse.ArgumentParser:
    from ..workers.scorer import SCORE_TIMEOUT_S
    from ..workers.trial import DEFAULT_MINUTES

    parser = argparse.ArgumentParser(prog="rloo-studio", description="RLOO fine-tuning of language models (Unsloth + TRL).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("train", help="train one run from a config file", description=(
        "Train with RLOO. Overrides like rloo.max_steps=20 or model.load_in_4bit=true change the config for this run."))
    p.add_argument("config", nargs="?", help="the run config (YAML); optional with --resume")
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, e.g. rloo.max_steps=20")
    p.add_argument("--run-dir", help="write the run into this new folder instead of runs/<timestamp>-<name>")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a stopped or interrupted run from its last checkpoint")
    p.add_argument("--num-processes", type=int, default=1, metavar="N", help=(
        "train data-parallel in N processes through `accelerate launch`, one per GPU (default 1); "
        "per_device_train_batch_size x N must be a multiple of rloo.num_generations"))
    p.add_argument("--accelerate-config", metavar="FILE", help=(
        "launch the training processes with this accelerate config file, unchanged (FSDP, DeepSpeed ZeRO, several "
        "machines: run the same command on each, with its machine_rank, and the same --run-dir on a shared folder)"))
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("runs", help="list runs with their state, step and last reward")
    p.add_argument("--runs-dir", default="runs", help="the folder holding run directories (default: runs)")
    p.add_argument("--show", metavar="RUN", help="one run (its id under --runs-dir, or its folder): its state and where "
                                                 "its steps' time goes (generation, rewards, log-prob passes, optimizer, other)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("eval", help="compare base and tuned model on held-out prompts with the run's rewards")
    p.add_argument("run_dir", help="a run directory under runs/")
    p.add_argument("--split", help="held-out data: a split name or a file (default: the run's test split / fraction)")
    p.add_argument("--limit", type=int, help="evaluate at most this many prompts")
    p.add_argument("--checkpoint", default=runs.FINAL, metavar=f"{runs.FINAL}|checkpoint-N|all",
                   help="which weights to compare with base: the final adapter (default), one trainer checkpoint, "
                        "or all of them (base generated once) to pick the best")
    p.add_argument("--decoding", default="greedy", metavar="greedy|sampled",
                   help="greedy: one most-likely completion per prompt (default); sampled: --samples completions per prompt "
                        "at the run's training temperature, each prompt scored by their mean (pass@1)")
    p.add_argument("--samples", type=int, default=1, metavar="K", help="completions per prompt with --decoding sampled (e.g. 4)")
    p.add_argument("--max-new-tokens", type=int, metavar="N",
                   help="the token budget of the tuned side, and of the base unless --base-max-new-tokens is given (default: "
                        "the run's max_completion_length); a larger one lets answers finish that the budget cut off")
    p.add_argument("--base-max-new-tokens", type=int, metavar="N",
                   help="the base model's token budget (default: the tuned side's); "
                        "a larger one keeps a wordy base from being cut off before its answer")
    p.add_argument("--select-split", metavar="SPLIT|FILE",
                   help="with --checkpoint all: choose the best checkpoint on this split or file, and report it on the held-out "
                        "prompts (default: cross-fit two halves of the held-out prompts)")
    p.add_argument("--json", action="store_true", help="print one JSON document (progress lines still go to stderr)")
    p.add_argument("--events", action="store_true", help="print progress on stderr as one JSON object per line (for programs)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("export", help="export a run: LoRA adapter, merged model, GGUF file or a standalone training script")
    p.add_argument("run_dir", help="a run directory under runs/")
    p.add_argument("--format", required=True, metavar="adapter|merged|gguf|script",
                   help="adapter: the LoRA files; merged: a full Hugging Face model; gguf: one GGUF file for llama.cpp, Ollama and "
                        "LM Studio, with an Ollama Modelfile (the converter is downloaded once on first use); "
                        "script: a folder that reproduces the run with Unsloth + TRL only")
    p.add_argument("--gguf-type", default="f16", choices=("f16", "q8_0"),
                   help="for --format gguf: f16 (half precision) or q8_0 (8-bit, half the size, nearly lossless); "
                        "for Q4_K_M see docs/export.md")
    p.add_argument("--out", help="the folder to write (must not exist or be empty; default: RUN_DIR/exports/FORMAT[-checkpoint-N])")
    p.add_argument("--checkpoint", default=runs.FINAL, metavar=f"{runs.FINAL}|checkpoint-N", help=f"which weights to export (default: {runs.FINAL})")
    p.add_argument("--json", action="store_true", help="print one JSON document (progress lines still go to stderr)")
    p.add_argument("--events", action="store_true", help="print progress on stderr as one JSON object per line (for programs)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("preview", help="score sampled (or given) completions with the rewards: advantages, learnability, hack probes")
    p.add_argument("config", help="the run config (YAML)")
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, e.g. rloo.temperature=1.2")
    p.add_argument("--rewards", metavar="FILE.py", help="score with the functions in this file (instead of the config's reward files)")
    p.add_argument("--completions", metavar="FILE.jsonl", help="score these completions instead of sampling from the model")
    p.add_argument("--num-prompts", type=int, default=4, help="how many prompts to sample completions for (default 4)")
    p.add_argument("--prompt", help="sample completions for this prompt instead of the dataset's")
    p.add_argument("--answer", help="with --prompt: the reference answer (the `answer` column the rewards see)")
    p.add_argument("--seed", type=int, default=0, help="which prompts are picked and how sampling goes")
    p.add_argument("--timeout", type=float, default=SCORE_TIMEOUT_S,
                   help=f"seconds one reward call on one batch may take (default {SCORE_TIMEOUT_S:g})")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_preview)

    p = sub.add_parser("scan", help="before training: which prompts are always solved, never solved, or mixed (learnable)", description=(
        "Sample k (rloo.num_generations) completions for each training prompt with the config's model and score them with "
        "its rewards; saves scans/<id>/scan.jsonl and scan-summary.json under the runs folder (see docs/scan.md)."))
    p.add_argument("config", help="the run config (YAML)")
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, e.g. rloo.temperature=1.2")
    p.add_argument("--limit", type=int, help="scan this many prompts, chosen evenly over the data (default: all)")
    p.add_argument("--write-filtered", action="store_true",
                   help="also write the data without the always and never solved prompts, as a new file (the original stays)")
    p.add_argument("--band", metavar="LO:HI", help="write the prompts whose mean total reward lies in LO..HI instead")
    p.add_argument("--runs-dir", help="the folder holding runs, where scans/ goes (default: the config's output.runs_dir)")
    p.add_argument("--seed", type=int, default=0, help="how sampling goes")
    p.add_argument("--timeout", type=float, default=SCORE_TIMEOUT_S,
                   help=f"seconds one reward call on one batch may take (default {SCORE_TIMEOUT_S:g})")
    p.add_argument("--json", action="store_true", help="print one JSON document (progress lines still go to stderr)")
    p.add_argument("--events", action="store_true", help="print progress on stderr as one JSON object per line (for programs)")
    p.set_defaults(func=cmd_scan)

    p = sub.add_parser("estimate", help="estimate the peak GPU memory of a config, with a breakdown and a verdict")
    p.add_argument("config", nargs="?", help="the run config (YAML)")
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, e.g. rloo.num_generations=4")
    p.add_argument("--gpu-gb", type=float, help="judge against a GPU with this much memory (default: the detected GPU)")
    p.add_argument("--list-models", action="store_true", help="list the models whose shapes are built in (work offline)")
    p.add_argument("--measure", action="store_true",
                   help="also run a short trial of the config (two generation cycles, in a temporary folder) and report "
                        "the loading time, seconds per step, the steps that fit --minutes, the whole run's time, its epochs "
                        "and the measured peak memory")
    p.add_argument("--minutes", type=_positive_minutes, default=DEFAULT_MINUTES,
                   help=f"with --measure: the time you have; says how many steps fit it (default {DEFAULT_MINUTES})")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_estimate)

    p = sub.add_parser("rewards", help="list the builtin reward functions; keep reward files in your library (import, export, list, build)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_rewards, action=None)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    a = actions.add_parser("import", help="check a reward file (header, columns, pinned examples) and keep it in your library")
    a.add_argument("file", help="a reward file (.py with a REWARD header; see docs/rewards.md)")
    a.add_argument("--config", help="check the columns against this run config's data, and score the examples as it trains "
                                    "(chat or plain prompts, its tokenizer)")
    a.add_argument("--replace", action="store_true", help="replace a different reward of the same name in the library")
    a.add_argument("--timeout", type=float, default=SCORE_TIMEOUT_S, help="seconds one reward call may take")
    a.add_argument("--json", action="store_true", help="print one JSON document")
    a = actions.add_parser("list", help="the rewards in your library and the bundled templates")
    a.add_argument("--search", metavar="WORDS", help="only those whose name, description, tags or columns hold every word")
    a.add_argument("--json", action="store_true", help="print one JSON document")
    a = actions.add_parser("export", help="write a library reward (or a bundled template) as a file to share")
    a.add_argument("name", help="its name in `rloo-studio rewards list`")
    a.add_argument("--out", metavar="FILE.py", help="where to write it (default: its name as a file here)")
    a = actions.add_parser("build", help="write a reward file from a rule set (YAML: name, description, tags, combine, function, "
                                         "blocks, examples)")
    a.add_argument("rules", help="the rule set (YAML or JSON; see `rloo-studio rewards blocks` and docs/rewards.md)")
    a.add_argument("--out", metavar="FILE.py", help="where to write it (default: its name as a file here)")
    a = actions.add_parser("blocks", help="the rule builder's blocks: what each checks, its parameters, a worked example")
    a.add_argument("--json", action="store_true", help="print one JSON document")
    a = actions.add_parser("duplicate", help="copy a library reward (or a template) under a new name")
    a.add_argument("name")
    a.add_argument("new_name")
    a = actions.add_parser("delete", help="remove a reward from your library (runs keep their copies)")
    a.add_argument("name")

    p = sub.add_parser("ui", help="start the web app on this machine")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: only this machine)")
    p.add_argument("--port", type=int, default=7860, help="port (the next free one is used if taken)")
    p.add_argument("--auth-file", metavar="FILE", help=(
        "require the login USER:PASSWORD written in FILE (needed to bind beyond localhost); the file must be readable "
        "by you alone (chmod 600). Or set RLOO_STUDIO_AUTH=USER:PASSWORD"))
    p.add_argument("--auth", metavar="USER:PASS", help=(
        "require this login; shows the password to every user in `ps`: prefer --auth-file or RLOO_STUDIO_AUTH"))
    p.add_argument("--runs-dir", default="runs", help="the folder holding run directories")
    p.add_argument("--share", action="store_true", help="also create a public gradio.live link (needs a login and the internet)")
    p.add_argument("--inbrowser", action="store_true", help=(
        "open the page in the default browser (through a file only you can read, so the token is not on the browser's "
        "command line)"))
    p.add_argument("--no-token", action="store_true", help=(
        "serve without the launch token (not recommended: then any web page you visit and any user of this "
        "machine can run code through the app; refused with --host beyond localhost and with --share); "
        "RLOO_STUDIO_TOKEN sets a known token (128 random bits at least) instead"))
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME", help=(
        "also answer requests addressed to this host name (repeatable); by default only localhost, 127.0.0.1, "
        "[::1] and the --host address"))
    p.add_argument("--print-url", action="store_true", help="print the link (with its token) of the app running from --runs-dir, then exit")
    p.set_defaults(func=cmd_ui)
    return parser


def main(argv: list[str] | None = None) -> int:
    runs.keep_private()  # before anything is written: runs, exports and uploads are the person's alone
    parser = build_parser()
    # Overrides may come after options (`train c.yaml --run-dir D rloo.max_steps=5`); argparse leaves
    # such trailing positionals unparsed, so collect them here.
    args, extra = parser.parse_known_args(argv)
    stray = [e for e in extra if e.startswith("-") or "=" not in e or getattr(args, "command", None) != "train"]
    if stray:
        parser.error(f"unrecognized arguments: {' '.join(stray)}")
    if extra:
        args.overrides = list(args.overrides) + extra
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    return args.func(args)


"""The `rloo-studio` command line: train, runs, eval, export, preview, scan, estimate, rewards (and the reward library), ui.

Each subcommand parses its arguments, calls one function of the engine, the runs layer or (training
in several processes) data_parallel, and turns a StudioError into one clear message on stderr with
a non-zero exit code (2 for bad input, 1 for a failed run) — never a bare traceback. `--json`
prints one JSON document on stdout and nothing else there. Heavy imports (torch, TRL) happen only inside `train`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from . import runs
from .data_parallel import train_data_parallel
from .distributed import LAUNCHER_PID_ENV, is_launched_rank, rank
from .errors import StudioError
from .paths import DEMO_PRESET, PROJECT_ROOT

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _fail(exc: StudioError) -> int:
    # Starts on a fresh line: a progress bar may have left the cursor mid-line.
    print(f"\nerror: {exc.message()}", file=sys.stderr)
    return EXIT_BAD_INPUT


# ---- train --------------------------------------------------------------------------------------

def _fail_unexpected(doing: str, exc: Exception, why: str, fix: str) -> int:
    """An error no check foresaw: its first line, the likely why and what to do; the traceback with RLOO_STUDIO_DEBUG=1."""
    if os.environ.get("RLOO_STUDIO_DEBUG"):
        raise exc
    first = str(exc).splitlines()[0] if str(exc) else ""
    print(f"\nerror: {doing} failed: {type(exc).__name__}: {first}\nWhy: {why}.\n"
          f"What to do: {fix}; set RLOO_STUDIO_DEBUG=1 for the traceback.", file=sys.stderr)
    return EXIT_FAILED


def cmd_train(args: argparse.Namespace) -> int:
    from .config import RunConfig

    overrides = list(args.overrides)
    config_path = args.config
    if config_path and "=" in config_path and not Path(config_path).exists():
        overrides.insert(0, config_path)  # `train --resume DIR key=value`: the first override landed here
        config_path = None
    accelerate = None
    if args.accelerate_config and not is_launched_rank():
        from .distributed import read_accelerate_config

        try:
            if args.num_processes != 1:
                raise StudioError("--num-processes and --accelerate-config were both given",
                                  "the accelerate config says how many processes to start (num_processes)",
                                  "leave out --num-processes")
            accelerate = read_accelerate_config(args.accelerate_config)
        except StudioError as exc:
            return _fail(exc)
    if args.resume:
        run_dir = Path(args.resume)
        if not (run_dir / runs.CONFIG_FILE).is_file():
            return _fail(StudioError(f"{run_dir} is not a run directory (no {runs.CONFIG_FILE})",
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
            return _fail(StudioError(f"run {run_dir.name} is still {status.get('state')} (process {status.get('pid')})",
                                     "two workers must not write one run directory",
                                     f"stop it first (`touch {run_dir / runs.STOP_FILE}`) and wait for it to end"))
        config_path = config_path or str(run_dir / runs.CONFIG_FILE)
    if not config_path:
        if not DEMO_PRESET.is_file():
            return _fail(StudioError("no config file given", "", "run `rloo-studio train CONFIG.yaml` (e.g. presets/cpu-demo.yaml)"))
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
            return _fail(exc)
    try:
        cfg = RunConfig.load(config_path, overrides)
        from .engine.train import run_training

        run_dir = run_training(cfg, args.resume or args.run_dir, resume=bool(args.resume))
    except StudioError as exc:
        _mark_queued_run_failed(args.run_dir, exc)
        return _fail(exc)
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


# ---- runs ---------------------------------------------------------------------------------------

def _fmt_time(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


SHOW_STEPS = 10  # `runs --show` states the step-time breakdown as the mean of this many last logged steps


def _show_run(args: argparse.Namespace) -> int:
    """`runs --show RUN`: one run's state, reward and where its steps' time goes."""
    from . import step_time

    run_dir = Path(args.show)
    if not (run_dir / runs.STATUS_FILE).exists():
        run_dir = Path(args.runs_dir) / args.show
    if not (run_dir / runs.STATUS_FILE).exists():
        return _fail(StudioError(f"no run {args.show!r}: neither it nor {run_dir} is a run directory",
                                 f"a run directory holds {runs.STATUS_FILE}",
                                 f"pick a RUN from `rloo-studio runs{' --runs-dir ' + str(args.runs_dir) if args.runs_dir != 'runs' else ''}`"))
    summary = runs.summarize_run(run_dir)
    breakdown = step_time.mean_breakdown(runs.read_jsonl(run_dir / runs.METRICS_FILE)[-SHOW_STEPS:])
    if args.json:
        print(json.dumps({**summary.as_dict(), "step_time": breakdown}))
        return EXIT_OK
    step = f"{summary.step}/{summary.max_steps}" if summary.max_steps else str(summary.step)
    reward = f"{summary.last_reward:.3f}" if isinstance(summary.last_reward, (int, float)) else "-"
    print(f"run {summary.run_id}: {summary.state}, step {step}, last reward {reward}, model {summary.model or '-'}")
    if breakdown is None:
        print("step time: not recorded (no step logged yet, or a run from a version that did not record it)")
        return EXIT_OK
    steps = int(breakdown["steps"])
    print(f"step time, mean of the last {steps} logged step{'s' if steps != 1 else ''}: {step_time.breakdown_line(breakdown)}")
    total = float(breakdown[step_time.STEP_KEY]) or 1.0
    for part in step_time.PARTS:
        seconds = float(breakdown[f"time/{part}"])
        print(f"  {step_time.WORDS[part]:<32} {seconds:8.2f} s  {100 * seconds / total:5.1f} %")
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    if args.show:
        return _show_run(args)
    found = runs.list_runs(args.runs_dir)
    if args.json:
        print(json.dumps([r.as_dict() for r in found]))
        return EXIT_OK
    if not found:
        print(f"No runs in {args.runs_dir}/ yet. Start one with: rloo-studio train presets/cpu-demo.yaml")
        return EXIT_OK
    header = f"{'RUN':<40} {'STATE':<12} {'STEP':>11} {'REWARD':>8}  {'STARTED':<16}  MODEL"
    print(header)
    for r in found:
        step = f"{r.step}/{r.max_steps}" if r.max_steps else str(r.step)
        reward = f"{r.last_reward:.3f}" if isinstance(r.last_reward, (int, float)) else "-"
        print(f"{r.run_id:<40} {r.state:<12} {step:>11} {reward:>8}  {_fmt_time(r.started_at):<16}  {r.model or '-'}")
    return EXIT_OK


# ---- eval ---------------------------------------------------------------------------------------

def _pct(value) -> str:
    return f"{100 * value:6.1f}%" if isinstance(value, (int, float)) else "      -"


def _num(value) -> str:
    return f"{value:7.3f}" if isinstance(value, (int, float)) else "      -"


def cmd_eval(args: argparse.Namespace) -> int:
    try:
        from .engine.evaluate import evaluate_run, progress_text

        # Progress goes to stderr even with --json (stdout then holds only the JSON document); --events makes each
        # event one JSON line, which the app reads.
        def progress(event: dict) -> None:
            print(json.dumps(event) if args.events else progress_text(event), file=sys.stderr, flush=True)

        report = evaluate_run(args.run_dir, split=args.split, limit=args.limit, progress=progress, checkpoint=args.checkpoint,
                              decoding=args.decoding, samples=args.samples, base_max_new_tokens=args.base_max_new_tokens,
                              select_split=args.select_split, max_new_tokens=args.max_new_tokens)
    except StudioError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("\nerror: interrupted; nothing was written.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - e.g. a half-written adapter/ folder
        return _fail_unexpected("evaluation", exc, f"the run's model files could not be loaded or used (is {args.run_dir}/adapter, "
                                "or the checkpoint, complete?)", "resume or re-run training to save the model again")
    if args.json:
        print(json.dumps(report))
        return EXIT_OK
    print(f"Run {report['run']}: {_decoding_line(report)}\n")
    if len(report["checkpoints"]) > 1:
        _print_checkpoint_table(report, args.run_dir)
    else:
        _print_base_vs_tuned(report, args.run_dir)
    for s in report.get("skipped", []):
        print(f"skipped {s['name']}: {s['why']}")
    print(f"Saved {Path(args.run_dir) / runs.EVAL_FILE}")
    return EXIT_OK


def _decoding_line(report: dict) -> str:
    """How the completions were made: n, decoding, and each side's token budget."""
    from .stats import decoding_text

    d = report["decoding"]
    budget = d["max_new_tokens"]
    return (f"{report['n_prompts']} held-out prompts ({report['split']}), decoding: {decoding_text(d)}; token budget: "
            f"base {budget['base']}, tuned {budget['tuned']}")


def _verdict_lines(report: dict, comparison: dict, summary: dict, name: str, run_dir) -> list[str]:
    """The verdict of `name` vs base in config words: the line, the rule behind it, and the command that evaluates
    again with a larger budget when most answers were cut off."""
    from .stats import verdict

    budgets = report["decoding"]["max_new_tokens"]
    found = verdict(comparison, "tuned", "base", cut_off={"tuned": summary.get("truncation_rate"),
                                                         "base": report["base"].get("truncation_rate")},
                    budgets={"tuned": summary.get("max_new_tokens") or budgets["tuned"], "base": budgets["base"]})
    lines = [found["line"], f"({found['details']})"]
    if found["limited"] and found["suggested_budget"]:
        which = "" if name == runs.FINAL else f" --checkpoint {name}"
        lines.append(f"Evaluate again: rloo-studio eval {run_dir}{which} --max-new-tokens {found['suggested_budget']}")
    return lines


def _print_base_vs_tuned(report: dict, run_dir) -> None:
    from .stats import fmt_interval, measured, summary_estimate

    base, tuned = report["base"], report["tuned"]
    shown = measured(report)  # no answer accuracy or format rate for a task whose rewards score neither
    rows = [row for row in (("answer accuracy", "answer_accuracy", True), ("format rate (<think>..)", "format_rate", True),
                            ("cut off (hit the budget)", "truncation_rate", True), ("mean total reward", "mean_reward", False))
            if shown.get(row[1], True)]
    print(f"{'':28}{'base':>30}{'tuned':>30}   (tuned = {report['checkpoint']}; 95 % intervals, n prompts)")
    for label, key, percent in rows:
        print(f"{label:28}{fmt_interval(summary_estimate(base, key), percent):>30}{fmt_interval(summary_estimate(tuned, key), percent):>30}")
    for name in base["rewards"]:
        print(f"{'  ' + name:28}{_num(base['rewards'][name]):>30}{_num(tuned['rewards'][name]):>30}")
    print("\n" + "\n".join(_verdict_lines(report, report["tuned_vs_base"], tuned, report["checkpoint"], run_dir)))


def _print_checkpoint_table(report: dict, run_dir) -> None:
    """One row per checkpoint (base first); `*` marks the best checkpoint, only when the selection found one. Answer
    accuracy and format rate only where the run's rewards score them; "vs base" is `stats.verdict`'s label."""
    from .stats import fmt_interval, fmt_paired, measured, summary_estimate, verdict

    shown = measured(report)
    width = max(len(c["name"]) for c in report["checkpoints"]) + 2
    print(f"{'':{width}}{'step':>6}{'mean reward [95 %]':>24}" + (f"{'answer acc [95 %]':>24}" if shown["answer_accuracy"] else "")
          + (f"{'format rate':>13}" if shown["format_rate"] else "") + f"{'cut off':>9}{'wins/ties/losses':>18}  vs base")

    def row(name, step, s, wtl, versus="-", mark=""):
        mean_reward = fmt_interval({**summary_estimate(s, "mean_reward"), "n": None})
        accuracy = fmt_interval({**summary_estimate(s, "answer_accuracy"), "n": None}, True)
        print(f"{name:{width}}{step:>6}{mean_reward:>24}" + (f"{accuracy:>24}" if shown["answer_accuracy"] else "")
              + (f"{_pct(s['format_rate']):>13}" if shown["format_rate"] else "")
              + f"{_pct(s.get('truncation_rate')):>9}{wtl:>18}  {versus}{mark}")

    base = report["base"]
    row("base", 0, base, "-")
    for c in report["checkpoints"]:
        v, s = c["tuned_vs_base"], c["summary"]
        label = verdict(v, cut_off={"tuned": s.get("truncation_rate"), "base": base.get("truncation_rate")})["label"]
        row(c["name"], c["step"], s, f"{v['wins']}/{v['ties']}/{v['losses']}", label, "  *" if c["name"] == report.get("best") else "")
    print(f"(n = {report['n_prompts']} prompts on every row; wins/ties/losses: per prompt against base)")
    final = next((c for c in report["checkpoints"] if c["name"] == report["checkpoint"]), report["checkpoints"][-1])
    print("\n" + "\n".join(_verdict_lines(report, final["tuned_vs_base"], final["summary"], final["name"], run_dir)))
    selection = report.get("selection", {})
    if selection.get("method") in ("cross-fit halves", "validation split"):
        folds = "; ".join(f"chosen on {f['chosen_on']}: {f['chosen']}" for f in selection["folds"])
        print(f"\nSelection ({selection['method']}, by mean reward): {folds}.")
        print(f"Reported on {selection['reported_on']}: mean reward {fmt_interval(summary_estimate(selection['reported'], 'mean_reward'))}.")
        print(fmt_paired(selection["chosen_vs_tuned"], "chosen", selection["chosen_vs_tuned"]["tuned"]))
        print(f"Verdict: {selection.get('verdict')}.")
    if report.get("best"):
        print(f"* best checkpoint: {report['best']}")


# ---- export -------------------------------------------------------------------------------------

def cmd_export(args: argparse.Namespace) -> int:
    from .engine.export import export_run, list_files

    def progress(message: str) -> None:  # on stderr even with --json, as eval's; --events: one JSON object a line
        print(json.dumps({"event": "step", "text": message}) if args.events else message, file=sys.stderr, flush=True)

    started = time.time()
    try:
        folder = export_run(args.run_dir, args.format, out=args.out, checkpoint=args.checkpoint, gguf_type=args.gguf_type,
                            progress=progress)
    except StudioError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("\nerror: interrupted; nothing was written (the unfinished export folder was removed).", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - e.g. a half-written adapter/ folder or a model PEFT cannot merge
        return _fail_unexpected("export", exc, f"the run's model files could not be loaded, merged or written (is "
                                f"{args.run_dir}/adapter complete? is the disk full?)",
                                "try --format adapter, or re-save the model by resuming the run")
    gguf = json.loads((folder / "gguf-check.json").read_text(encoding="utf-8")) if args.format == "gguf" else None
    if args.json:
        report = {"run": Path(args.run_dir).name, "format": args.format, "checkpoint": args.checkpoint or runs.FINAL,
                  "out": str(folder.resolve()), "files": list_files(folder), "seconds": round(time.time() - started, 1)}
        if gguf:
            report["gguf"] = gguf
        print(json.dumps(report))
        return EXIT_OK
    print(f"Exported {args.format} to {folder}\nSee {folder / 'README.md'} for how to use it.")
    if gguf:
        tokens = gguf["tokens"]
        checked = (f"greedy tokens identical to the merged model on {sum(r['same'] for r in tokens['prompts'])} of "
                   f"{len(tokens['prompts'])} prompts" if not tokens.get("skipped") else f"tokens not compared: {tokens['skipped']}")
        template = "chat template present" if gguf["read_back"]["chat_template"] else "no chat template (the model has none)"
        print(f"Checked: read back ({gguf['read_back']['tensor_count']} tensors, end token {gguf['read_back']['eos_token_id']}, "
              f"{template}); {checked}.\n"
              f"Ollama, in one step:  cd {folder} && {gguf['ollama_command']}\n"
              f"LM Studio needs only the file: {folder / gguf['read_back']['file']}")
    return EXIT_OK


# ---- preview ------------------------------------------------------------------------------------

def _cell(value, width: int = 8) -> str:
    if value is None:
        return "None".rjust(width)
    return f"{value + 0.0:{width}.3f}" if isinstance(value, (int, float)) else str(value)[:width].rjust(width)  # + 0.0: no "-0.000"


def cmd_preview(args: argparse.Namespace) -> int:
    from .config import RewardSpec, RunConfig
    from .rewards.preview import probes_line, score_in_child, scoring_request

    quiet = (lambda *a, **k: None) if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    try:
        cfg = RunConfig.load(args.config, list(args.overrides))
        source = None
        if args.rewards:
            path = Path(args.rewards)
            if not path.is_file():
                raise StudioError(f"reward file not found: {path}", "", "give the path of a .py file with reward functions")
            source = path.read_text(encoding="utf-8")
            cfg.rewards = [s for s in cfg.rewards if not s.file] + [RewardSpec(file=runs.REWARDS_FILE, weight=1.0)]
        from .engine.sampling import (data_column_names, pick_rows, read_completions_file, sample_groups, typed_rows,
                                      with_every_column)

        if args.completions:
            groups, k = read_completions_file(args.completions)
            columns = data_column_names(cfg)
            groups = [{**g, "row": with_every_column(g["row"], columns)} for g in groups]
            from .engine.model import resolve_model_source

            try:
                tokenizer = str(resolve_model_source(cfg.model.name_or_path, cfg.base_dir))
            except StudioError:
                tokenizer = None  # no model at hand: completion_ids fall back to characters
            sampled = {"groups": groups, "num_generations": k, "conversational": isinstance(groups[0]["prompt"], list),
                       "tokenizer": tokenizer}
        else:
            if args.prompt:
                rows = typed_rows(cfg, args.prompt, args.answer)
            else:
                rows = pick_rows(cfg, args.num_prompts, args.seed)
            sampled = sample_groups(cfg, rows, quiet, args.seed)
        request = scoring_request(cfg, sampled, source)
        groups, k = request["groups"], request["num_generations"]
        quiet(f"[preview] scoring {sum(len(g['completions']) for g in groups)} completions in a separate process")
        result = score_in_child(request, timeout_s=args.timeout)
    except StudioError as exc:
        return _fail(exc)
    if result.get("problems"):
        return _fail(StudioError(result["problems"][0].split("\n")[0], "\n".join(result["problems"][0].split("\n")[1:]).replace("Why: ", ""), ""))
    if args.json:
        print(json.dumps(result, default=str))
        return _preview_exit(result)
    names = list(result["functions"])
    print(f"{'#':>3}  {'completion':<40}" + "".join(f"{n[:12]:>13}" for n in names) + f"{'total':>9}{'baseline':>9}{'advantage':>10}")
    for i, row in enumerate(result["rows"]):
        if i % k == 0:
            print(f"\nprompt {row['group'] + 1}: {row['prompt'][:100]!r}")
        text = row["completion"].replace("\n", " ")
        print(f"{i % k + 1:>3}  {text[:40]:<40}" + "".join(f"{_cell(row['rewards'][n], 13)}" for n in names)
              + f"{_cell(row['total'], 9)}{_cell(row['baseline'], 9)}{_cell(row['advantage'], 10)}")
        for name, said in row.get("reasons", {}).items():  # a judge's own words under its score
            print(f"{'':5}{name} says: {said[:200]!r}")
    print(f"\n{'function':<24}{'weight':>8}{'mean':>8}{'std':>8}{'min':>8}{'max':>8}{'None':>6}  errors")
    for name, f in result["functions"].items():
        print(f"{name[:24]:<24}{_cell(f['weight'])}{_cell(f['mean'])}{_cell(f['std'])}{_cell(f['min'])}{_cell(f['max'])}{f['none']:>6}  "
              + ("; ".join(e["error"] for e in f["errors"]) or "-"))
        for e in f["errors"]:
            for line in e["lines"]:
                print(f"{'':26}at {line}")
            print(f"{'':26}on the completion {e['completion'][:80]!r}")
    print(f"\nLearnability: {result['learnability']['verdict']}")
    if result.get("agreement"):
        from .rewards.preview import agreement_sentence

        print(f"Agreement: {agreement_sentence(result['agreement'])}")
    if result.get("advantage_note"):
        print(f"Advantages in training: {result['advantage_note']}")
    for check in result.get("judge_checks") or []:
        print(f"Judge check: {check['message']}")
    for probe in result["probes"]:
        print(f"Hack probe: {probe['message']}")
    if not result["probes"]:
        print(probes_line(result))
    for ask in result.get("asks", []):  # the prompt <-> reward check: a format nobody asks for
        if ask["warning"] or ask["note"]:
            print(f"{'Warning' if ask['warning'] else 'Note'}: {ask['warning'] or ask['note']}")
    for warning in result.get("warnings", []):
        print(f"Warning: {warning}")
    return _preview_exit(result)


def _preview_exit(result: dict) -> int:
    """EXIT_FAILED, with what failed, when a reward function failed (training would stop at its first batch); else EXIT_OK.
    A function that returned None for every completion is a warning in the output, not a failure."""
    failed = [name for name, f in result.get("functions", {}).items() if f.get("errors")]
    if not failed:
        return EXIT_OK
    names = ", ".join(f"`{n}`" for n in failed)
    exc = StudioError(f"reward function {names} failed on the previewed completions, so it scored none of them",
                      "a reward function that raises fails its whole batch: training would stop at its first step",
                      "fix it (the preview's output shows its error and the line), then preview again")
    print(f"\nerror: {exc.message()}", file=sys.stderr)
    return EXIT_FAILED


# ---- scan ---------------------------------------------------------------------------------------

def cmd_scan(args: argparse.Namespace) -> int:
    from .config import RunConfig
    from .scan import check_limit, parse_band, progress_text, read_scan, run_scan, summary_lines, write_filtered
    from .scan import override_line

    def progress(event: dict) -> None:  # on stderr even with --json, as eval's
        print(json.dumps(event) if args.events else progress_text(event), file=sys.stderr, flush=True)

    try:
        check_limit(args.limit)
        band = parse_band(args.band)
        cfg = RunConfig.load(args.config, list(args.overrides))
        from .engine.sampling import sample_groups

        quiet = lambda msg: None  # noqa: E731 - the scan's own progress lines say enough
        folder = run_scan(cfg, lambda rows, seed: sample_groups(cfg, rows, quiet, seed), args.runs_dir or cfg.output.runs_dir,
                          limit=args.limit, progress=progress, timeout_s=args.timeout, seed=args.seed)
        filtered = write_filtered(folder, band) if (args.write_filtered or band) else None
    except StudioError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("\nerror: interrupted; nothing was saved.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - e.g. a model folder that cannot be loaded
        return _fail_unexpected("the scan", exc, f"the model of {args.config} (model.name_or_path) could not be loaded or sampled",
                                "check model.name_or_path with `rloo-studio preview CONFIG`")
    summary, _ = read_scan(folder)
    if args.json:
        print(json.dumps({**{k: v for k, v in summary.items() if k != "config"}, "folder": str(folder), "filtered": filtered}))
        return EXIT_OK
    print("\n".join(summary_lines(summary)))
    print(f"Saved {folder / runs.SCAN_FILE} and {folder / runs.SCAN_SUMMARY_FILE}")
    if filtered:
        print(f"Wrote {filtered['path']}: {filtered['kept']} of {filtered['of']} scanned prompts (the original data is unchanged)."
              f"\nTrain on it with: rloo-studio train {args.config} {override_line(filtered['overrides'])}")
    else:
        print("Write the data without the always and never solved prompts: add --write-filtered (or --band LO:HI).")
    return EXIT_OK


# ---- estimate -----------------------------------------------------------------------------------

def cmd_estimate(args: argparse.Namespace) -> int:
    from .config import RunConfig

    if args.list_models:
        return cmd_models(args)
    if not args.config:
        return _fail(StudioError("no config file given", "", "run `rloo-studio estimate CONFIG.yaml [--gpu-gb N]`, e.g. presets/gpu-16gb.yaml"))
    from .vram import estimate_config, shrink_to_fit

    try:
        cfg = RunConfig.load(args.config, list(args.overrides))
    except StudioError as exc:
        return _fail(exc)
    device_gib, device_name, bf16 = args.gpu_gb, f"{args.gpu_gb:g} GB (given)" if args.gpu_gb else None, True
    on_cpu = False
    if device_gib is None:
        from .hardware import detect

        hw = detect()
        if hw.gpus:
            gpu = hw.gpus[0]
            device_gib, device_name, bf16 = gpu.total_gb, f"{gpu.name}, {gpu.total_gb:.1f} GB", gpu.bf16
        elif hw.ram_gb:  # no GPU: the run trains on the CPU, in RAM
            device_gib, device_name, bf16, on_cpu = hw.ram_gb, f"this computer's RAM, {hw.ram_gb:.1f} GB", False, True
    est = estimate_config(cfg, device_gib, bf16, on_cpu)
    if args.measure:
        return _estimate_measured(args, cfg, est, device_name)
    if est is None:
        return _fail(StudioError(f"the shape of model {cfg.model.name_or_path!r} is unknown",
                                 "it is not a local folder with a config.json, not in the Hugging Face cache, and not in the built-in table",
                                 "download the model once (or its config.json), or estimate with a model of the same size from "
                                 "`rloo-studio estimate --list-models`"))
    advice = None
    if est.verdict in ("exceeds", "tight"):
        changes, shrunk = shrink_to_fit(cfg, device_gib, bf16, on_cpu)
        advice = {"changes": changes, "estimate": shrunk.to_dict() if shrunk else None}
    import dataclasses

    from .batching import effective_line
    from .rewards.judge import judge_calls_per_step, judge_cost_line

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
    from .data import load_rows
    from .errors import DataError
    from .trial import measure, plan_words, steps_for, summary_lines

    try:
        train_rows = len(load_rows(cfg.data, cfg.base_dir, seed=int(cfg.rloo_value("seed"))).train)
    except DataError as exc:
        return _fail(exc)
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
    from .vram import KNOWN_MODELS

    for name, shape in KNOWN_MODELS.items():
        print(f"{name:<38} {shape.params / 1e9:6.2f}B  layers {shape.num_layers:>2}  vocab {shape.vocab_size:,}")
    return EXIT_OK


# ---- rewards ------------------------------------------------------------------------------------

def cmd_rewards(args: argparse.Namespace) -> int:
    from .rewards import builtin_catalog

    if getattr(args, "action", None):
        try:
            return REWARD_ACTIONS[args.action](args)
        except StudioError as exc:
            return _fail(exc)
    catalog = builtin_catalog()
    if args.json:
        print(json.dumps(catalog))
    else:
        for name, text in catalog.items():
            print(f"{name:<16} {text}")
    return EXIT_OK


def _config_lines(reward, path) -> str:
    """The config entries that train with a library reward at its default weights."""
    return "\n".join(f"  - file: {path}\n    function: {fn}\n    weight: {reward.weights[fn]:g}" for fn in reward.functions)


def rewards_import(args: argparse.Namespace) -> int:
    """Check a reward file (header, size, the config's data columns, its pinned examples in the scoring child) and
    copy it into the library only when all of that passes."""
    from .rewards import library

    reward = library.read(args.file)
    cfg, problems = None, []
    if args.config:
        from .config import RunConfig
        from .data import load_rows

        cfg = RunConfig.load(args.config)
        problems = library.column_problems(reward, load_rows(cfg.data, cfg.base_dir).columns)
    checked = library.check_examples(reward, cfg, timeout_s=args.timeout) if not problems else None
    passed = checked is not None and checked["passed"]
    saved = library.save(reward, replace=args.replace) if passed else None
    if args.json:
        print(json.dumps({"reward": reward.summary(), "column_problems": problems, "examples": checked,
                          "saved": str(saved) if saved else None}))
    else:
        weights = ", ".join(f"{fn} (weight {w:g})" for fn, w in reward.weights.items())
        print(f"{args.file}: \"{reward.name}\", version {library.short_hash(reward.hash)}; functions {weights}")
        if checked is not None and not checked["problems"]:
            print(f"Pinned examples (completion_ids: {checked['tokens']}):")
            for v in checked["verdicts"]:
                total = "None" if v["total"] is None else f"{v['total']:.3f}"
                print(f"  {'pass' if v['ok'] else 'FAIL'}  {v['completion'][:50]!r} -> total {total} "
                      f"(expected {v['expected'][0]}..{v['expected'][1]})" + (f": {v['why']}" if v["why"] else ""))
        if saved:
            print(f"All {len(reward.examples)} pinned examples pass. Saved in the library: {saved}\n"
                  f"Train with it: add to the config's rewards:\n{_config_lines(reward, saved)}")
    if saved:
        return EXIT_OK
    if problems:
        raise StudioError(f"{args.file} needs data the config's dataset lacks: " + "; ".join(problems),
                          "TRL passes each dataset column to the reward by name; a missing one fails the first step",
                          "add the column to the data, or point the reward at one the data has; nothing was imported")
    if checked["problems"]:
        raise StudioError(f"the pinned examples of {args.file} could not be scored: {checked['problems'][0]}",
                          "importing runs the reward's own tests before it is used", "fix the reward; nothing was imported")
    failed = sum(1 for v in checked["verdicts"] if not v["ok"])
    raise StudioError(f"{failed} of {len(checked['verdicts'])} pinned examples of {args.file} fail",
                      "the file's own tests say the reward does not score as its author expected (see the lines above)",
                      "fix the reward or its examples' expected totals; nothing was imported")


def rewards_list(args: argparse.Namespace) -> int:
    from .rewards import library

    listed = library.search(args.search or "")
    _, problems = library.entries(with_bundled=False)
    if args.json:
        print(json.dumps({"library": str(library.library_dir()), "rewards": [r.summary() for r in listed],
                          "problems": problems}))
        return EXIT_OK
    print(f"Library: {library.library_dir()}")
    for r in listed:
        where = "bundled" if r.origin == library.BUNDLED else "library"
        print(f"  {r.name:<40} {library.short_hash(r.hash)}  {where:<8} columns: {', '.join(r.columns) or '-':<10} {r.description[:60]}")
    for problem in problems:
        print(f"  unreadable: {problem.splitlines()[0]}", file=sys.stderr)
    if not listed:
        print("  nothing matches" if args.search else "  empty: `rloo-studio rewards import FILE` adds a reward file")
    return EXIT_OK


def _new_file(out: str | None, name: str) -> Path:
    target = Path(out) if out else Path(f"{runs.slugify(name, 48)}.py")
    if target.exists():
        raise StudioError(f"{target} already exists", "exporting never overwrites a file", "give another --out")
    return target


def rewards_export(args: argparse.Namespace) -> int:
    """Write a library entry (or a bundled template) as a reward file to share."""
    from .rewards import library

    reward = library.find(args.name)
    target = _new_file(args.out, reward.name)
    target.write_text(reward.source, encoding="utf-8")
    print(f"Wrote {target}: \"{reward.name}\", version {library.short_hash(reward.hash)} "
          f"(import it elsewhere with `rloo-studio rewards import {target}`)")
    return EXIT_OK


def rewards_build(args: argparse.Namespace) -> int:
    """A reward file from a rule set (YAML or JSON: name, description, tags, combine, blocks, examples)."""
    import yaml

    from .rewards import library, rules

    try:
        spec = yaml.safe_load(Path(args.rules).read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudioError(f"cannot read the rule set {args.rules}: {exc.strerror}", "", "give the path of a YAML or JSON file") from None
    except yaml.YAMLError as exc:
        raise StudioError(f"the rule set {args.rules} is not YAML: {str(exc).splitlines()[0]}", "", "fix the file") from None
    if not isinstance(spec, dict) or not spec.get("name"):
        raise StudioError(f"the rule set {args.rules} has no `name`", "the name becomes the reward's name in the library",
                          "add e.g. `name: answer in a box`, with `blocks:` (see `rloo-studio rewards blocks`)")
    # `function`: with combine all/any, the one function's name
    rule_set = {"combine": spec.get("combine", "sum"), "blocks": spec.get("blocks"), "name": spec.get("function")}
    text = rules.build_file(rule_set, spec["name"], spec.get("description", ""), spec.get("tags"), spec.get("examples"))
    reward = library.parse(text, args.rules)  # the examples' form is checked here; `import` scores them
    target = _new_file(args.out, reward.name)
    target.write_text(text, encoding="utf-8")
    print(f"Wrote {target}: functions {', '.join(reward.functions)}. Check its pinned examples and keep it with "
          f"`rloo-studio rewards import {target}`")
    return EXIT_OK


def rewards_blocks(args: argparse.Namespace) -> int:
    from .rewards import rules

    catalog = rules.catalog()
    if args.json:
        print(json.dumps({"blocks": catalog, "combine": rules.COMBINES}))
        return EXIT_OK
    for b in catalog:
        ex = b["example"]
        print(f"{b['id']:<11} {b['title']}\n            {b['explanation']}\n            parameters: {json.dumps(b['params'])}"
              f"\n            e.g. {ex['reply']!r} with {json.dumps({**ex['columns'], **ex['params']}, ensure_ascii=False)} "
              f"scores {ex['score']:g}")
    print("combine: " + "; ".join(f"{k}: {v}" for k, v in rules.COMBINES.items()))
    return EXIT_OK


def rewards_duplicate(args: argparse.Namespace) -> int:
    from .rewards import library

    print(f"Wrote {library.duplicate(args.name, args.new_name)}")
    return EXIT_OK


def rewards_delete(args: argparse.Namespace) -> int:
    from .rewards import library

    print(f"Deleted {library.delete(args.name)} (runs that used it keep their own copy)")
    return EXIT_OK


REWARD_ACTIONS = {"import": rewards_import, "list": rewards_list, "export": rewards_export, "build": rewards_build,
                  "blocks": rewards_blocks, "duplicate": rewards_duplicate, "delete": rewards_delete}


# ---- ui -----------------------------------------------------------------------------------------

def cmd_ui(args: argparse.Namespace) -> int:
    from .serve import check_exposure, launch_token, read_auth_file, saved_launches

    relink = "rloo-studio ui --print-url" + (f" --runs-dir {args.runs_dir}" if args.runs_dir != "runs" else "")
    if args.print_url:
        found = saved_launches(args.runs_dir)
        if not found:
            return _fail(StudioError(f"no RLOO Studio is running from the runs folder {args.runs_dir}",
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
        return _fail(exc)
    note = runs.make_private_note(args.runs_dir)
    if note:
        print(f"[rloo-studio] {note}", file=sys.stderr, flush=True)
    from .ui.app import serve

    try:
        return serve(args.host, args.port, args.runs_dir, credentials, share=args.share, inbrowser=args.inbrowser,
                     token=token, allowed_hosts=tuple(args.allowed_host), relink_command=relink)
    except StudioError as exc:
        return _fail(exc)
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
    from .rewards.preview import SCORE_TIMEOUT_S
    from .trial import DEFAULT_MINUTES

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


if __name__ == "__main__":
    sys.exit(main())

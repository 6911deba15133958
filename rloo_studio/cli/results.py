"""The commands about what runs left: `runs` (the list, and one run with --show), `eval` (base against checkpoints,
with intervals and the verdict), `export`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import runs
from ..errors import StudioError
from ..protocol import ExportStep
from .exits import EXIT_OK, fail, fail_unexpected, progress_printer


def _fmt_time(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


SHOW_STEPS = 10  # `runs --show` states the step-time breakdown as the mean of at least this many last logged steps
# (whole generation cycles: step_time.recent)


def _show_run(args: argparse.Namespace) -> int:
    """`runs --show RUN`: one run's state, reward and where its steps' time goes."""
    from ..runs import step_time

    run_dir = Path(args.show)
    if not (run_dir / runs.STATUS_FILE).exists():
        run_dir = Path(args.runs_dir) / args.show
    if not (run_dir / runs.STATUS_FILE).exists():
        return fail(StudioError(f"no run {args.show!r}: neither it nor {run_dir} is a run directory",
                                 f"a run directory holds {runs.STATUS_FILE}",
                                 f"pick a RUN from `rloo-studio runs{' --runs-dir ' + str(args.runs_dir) if args.runs_dir != 'runs' else ''}`"))
    summary = runs.summarize_run(run_dir)
    from ..workers.jobs import cycle_ends

    breakdown = step_time.mean_breakdown(step_time.recent(runs.read_jsonl(run_dir / runs.METRICS_FILE), SHOW_STEPS,
                                                          cycle_ends(run_dir)))
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


def _pct(value) -> str:
    return f"{100 * value:6.1f}%" if isinstance(value, (int, float)) else "      -"


def _num(value) -> str:
    return f"{value:7.3f}" if isinstance(value, (int, float)) else "      -"


def cmd_eval(args: argparse.Namespace) -> int:
    try:
        from ..engine.evaluate import evaluate_run

        report = evaluate_run(args.run_dir, split=args.split, limit=args.limit, progress=progress_printer(args.events),
                              checkpoint=args.checkpoint,
                              decoding=args.decoding, samples=args.samples, base_max_new_tokens=args.base_max_new_tokens,
                              select_split=args.select_split, max_new_tokens=args.max_new_tokens)
    except StudioError as exc:
        return fail(exc)
    except KeyboardInterrupt:
        print("\nerror: interrupted; nothing was written.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - e.g. a half-written adapter/ folder
        return fail_unexpected("evaluation", exc, f"the run's model files could not be loaded or used (is {args.run_dir}/adapter, "
                                "or the checkpoint, complete?)", "resume or re-run training to save the model again")
    from ..stats import seen_in_training_line

    trained_on = seen_in_training_line(report)
    if trained_on:  # on standard error, so that --json's standard output stays one JSON document
        print(f"warning: {trained_on} (data.test_split / data.test_fraction, or --split with a file of other prompts)",
              file=sys.stderr)
    if args.json:
        print(json.dumps(report))
        return EXIT_OK
    print_report(report, args.run_dir)
    return EXIT_OK


def print_report(report: dict, run_dir) -> None:
    """The evaluation in config words: the table, the verdict, and what the replies show that a score cannot (a
    repetition loop, one reply to many prompts), as the Evaluate tab says them."""
    from ..rewards.replies import loops_sentence, one_reply, one_reply_sentence
    from ..stats import evaluation_time

    print(f"Run {report['run']}: {_decoding_line(report)}\n")
    if len(report["checkpoints"]) > 1:
        _print_checkpoint_table(report, run_dir)
    else:
        _print_base_vs_tuned(report, run_dir)
    found = one_reply(report)
    if found:
        headline, rest = one_reply_sentence(found, f"the replies in {runs.EVAL_FILE}")
        print(f"\nWarning: {headline}: {rest}")
    looped = loops_sentence(report, f"{runs.EVAL_FILE} has every reply")
    if looped:
        print(f"\n{looped}")
    for s in report.get("skipped", []):
        print(f"skipped {s['name']}: {s['why']}")
    took = evaluation_time(report)
    print(f"Saved {Path(run_dir) / runs.EVAL_FILE}" + (f"; {took}" if took else "")
          + (f" (the evaluation before it is kept in {Path(run_dir) / report['previous']})" if report.get("previous") else ""))


def _decoding_line(report: dict) -> str:
    """How the completions were made: n, decoding, and each side's token budget."""
    from ..stats import decoding_text

    d = report["decoding"]
    budget = d["max_new_tokens"]
    return (f"{report['n_prompts']} held-out prompts ({report['split']}), decoding: {decoding_text(d)}; token budget: "
            f"base {budget['base']}, tuned {budget['tuned']}")


def _verdict_lines(report: dict, comparison: dict, summary: dict, name: str, run_dir) -> list[str]:
    """The verdict of `name` vs base in config words: the line, the rule behind it, and the command that evaluates
    again with a larger budget when most answers were cut off."""
    from ..stats import verdict

    budgets = report["decoding"]["max_new_tokens"]
    found = verdict(comparison, "tuned", "base", cut_off={"tuned": summary.get("truncation_rate"),
                                                         "base": report["base"].get("truncation_rate")},
                    budgets={"tuned": summary.get("max_new_tokens") or budgets["tuned"], "base": budgets["base"]})
    lines = [found["line"], f"({found['details']})"]
    if report.get("warmup"):  # engine/warmup.py: the tuned side's adapter was warmed up before RLOO
        lines.append(f"{report['warmup']} The tuned side includes it; the base side is the model without an adapter.")
    if found["limited"] and found["suggested_budget"]:
        which = "" if name == runs.FINAL else f" --checkpoint {name}"
        lines.append(f"Evaluate again: rloo-studio eval {run_dir}{which} --max-new-tokens {found['suggested_budget']}")
    return lines


# Between two columns of a table: a cell as long as its column still stands apart from the next one.
COLUMN_GAP = "  "


def _table(rows: list[list[str]], left: tuple[int, ...] = (0,)) -> list[str]:
    """`rows` (the heading row first) as lines of columns, each as wide as its longest cell and COLUMN_GAP apart: cells
    right-aligned but in the `left` columns. Fixed widths ran a long cell ("1.000 (n=6, every one the same)") into the
    next one."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [COLUMN_GAP.join(f"{cell:<{widths[i]}}" if i in left else f"{cell:>{widths[i]}}"
                            for i, cell in enumerate(row)).rstrip() for row in rows]


def _print_base_vs_tuned(report: dict, run_dir) -> None:
    from ..stats import fmt_interval, measured, summary_estimate

    base, tuned = report["base"], report["tuned"]
    shown = measured(report)  # no answer accuracy or format rate for a task whose rewards score neither
    rows = [row for row in (("answer accuracy", "answer_accuracy", True), ("format rate (<think>..)", "format_rate", True),
                            ("cut off (hit the budget)", "truncation_rate", True), ("mean total reward", "mean_reward", False))
            if shown.get(row[1], True)]
    cells = [["", "base", "tuned"]]
    cells += [[label, fmt_interval(summary_estimate(base, key), percent), fmt_interval(summary_estimate(tuned, key), percent)]
              for label, key, percent in rows]
    cells += [["  " + name, _num(base["rewards"][name]).strip(), _num(tuned["rewards"][name]).strip()] for name in base["rewards"]]
    heading, *lines = _table(cells)
    print(f"{heading}   (tuned = {report['checkpoint']}; 95 % intervals, n prompts)")
    print("\n".join(lines))
    print("\n" + "\n".join(_verdict_lines(report, report["tuned_vs_base"], tuned, report["checkpoint"], run_dir)))


def _print_checkpoint_table(report: dict, run_dir) -> None:
    """One row per checkpoint (base first); `*` marks the best checkpoint, only when the selection found one. Answer
    accuracy and format rate only where the run's rewards score them; "vs base" is `stats.verdict`'s label."""
    from ..stats import fmt_interval, fmt_paired, measured, summary_estimate, verdict

    shown = measured(report)
    cells = [["", "step", "mean reward [95 %]"] + (["answer acc [95 %]"] if shown["answer_accuracy"] else [])
             + (["format rate"] if shown["format_rate"] else []) + ["cut off", "wins/ties/losses", "vs base"]]

    def row(name, step, s, wtl, versus="-", mark=""):
        mean_reward = fmt_interval({**summary_estimate(s, "mean_reward"), "n": None})
        accuracy = fmt_interval({**summary_estimate(s, "answer_accuracy"), "n": None}, True)
        cells.append([name, str(step), mean_reward] + ([accuracy] if shown["answer_accuracy"] else [])
                     + ([_pct(s["format_rate"]).strip()] if shown["format_rate"] else [])
                     + [_pct(s.get("truncation_rate")).strip(), wtl, versus + mark])

    base = report["base"]
    row("base", 0, base, "-")
    for c in report["checkpoints"]:
        v, s = c["tuned_vs_base"], c["summary"]
        label = verdict(v, cut_off={"tuned": s.get("truncation_rate"), "base": base.get("truncation_rate")})["label"]
        row(c["name"], c["step"], s, f"{v['wins']}/{v['ties']}/{v['losses']}", label, "  *" if c["name"] == report.get("best") else "")
    print("\n".join(_table(cells, left=(0, len(cells[0]) - 1))))
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


def cmd_export(args: argparse.Namespace) -> int:
    from ..engine.export import export_run, list_files

    printer = progress_printer(args.events)

    def progress(message: str) -> None:  # the export's steps are said in words all the way down (gguf_check, ...)
        printer(ExportStep(text=message))

    started = time.time()
    try:
        folder = export_run(args.run_dir, args.format, out=args.out, checkpoint=args.checkpoint, gguf_type=args.gguf_type,
                            progress=progress)
    except StudioError as exc:
        return fail(exc)
    except KeyboardInterrupt:
        print("\nerror: interrupted; nothing was written (the unfinished export folder was removed).", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - e.g. a half-written adapter/ folder or a model PEFT cannot merge
        return fail_unexpected("export", exc, f"the run's model files could not be loaded, merged or written (is "
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

"""The commands about rewards: `preview` (completions scored with a config's rewards), `scan` (the data's difficulty
for the model) and `rewards` (the builtins, the reward library: import, list, export, build, blocks, duplicate, delete)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import runs
from ..errors import StudioError
from .exits import EXIT_FAILED, EXIT_OK, fail, fail_unexpected, progress_printer


def _cell(value, width: int = 8) -> str:
    if value is None:
        return "None".rjust(width)
    return f"{value + 0.0:{width}.3f}" if isinstance(value, (int, float)) else str(value)[:width].rjust(width)  # + 0.0: no "-0.000"


def cmd_preview(args: argparse.Namespace) -> int:
    from ..config import RewardSpec, RunConfig
    from ..rewards.preview import scoring_request
    from ..workers import scorer

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
        from ..engine.sampling import data_column_names, pick_rows, read_completions_file, sample_groups, typed_rows

        if args.completions:  # written text, shaped as training shapes the data's, as the page's pasted completions
            from dataclasses import replace

            from ..engine.model import resolve_model_source
            from ..rewards.preview import written_request

            groups, k = read_completions_file(args.completions)
            request = written_request(cfg, groups, source, data_column_names(cfg), num_generations=k)
            try:
                resolve_model_source(cfg.model.name_or_path, cfg.base_dir)
            except StudioError:
                request = replace(request, tokenizer=None)  # no model at hand: completion_ids fall back to characters
        else:
            if args.prompt:
                rows = typed_rows(cfg, args.prompt, args.answer)
            else:
                rows = pick_rows(cfg, args.num_prompts, args.seed)
            request = scoring_request(cfg, sample_groups(cfg, rows, quiet, args.seed), source)
        groups, k = request.groups, request.num_generations
        quiet(f"[preview] scoring {sum(len(g['completions']) for g in groups)} completions in a separate process")
        result = scorer.score(request, timeout_s=args.timeout)
    except StudioError as exc:
        return fail(exc)
    if result.get("problems"):
        return fail(StudioError(result["problems"][0].split("\n")[0], "\n".join(result["problems"][0].split("\n")[1:]).replace("Why: ", ""), ""))
    if args.json:
        print(json.dumps(result, default=str))
        return _preview_exit(result)
    print_preview(result, k)
    return _preview_exit(result)


def print_preview(result: dict, k: int) -> None:
    """The preview's table and findings, in config words."""
    from ..rewards.preview import agreement_sentence, cut_off_lines, none_as_zero_lines, probes_line

    names = list(result["functions"])
    print(f"{'#':>3}  {'completion':<40}" + "".join(f"{n[:12]:>13}" for n in names) + f"{'total':>9}{'baseline':>9}{'advantage':>10}")
    for i, row in enumerate(result["rows"]):
        if i % k == 0:
            print(f"\nprompt {row['group'] + 1}: {row['prompt'][:100]!r}")
        # The marks of every completions table: cut off by the budget, empty (rows of a sampled preview carry cut_off).
        text = ("[cut off] " if row.get("cut_off") else "[empty] " if not row["completion"].strip() else "") \
            + row["completion"].replace("\n", " ")
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
    cut = sum(1 for r in result["rows"] if r.get("cut_off"))
    if cut:
        print(f"\nCut off: {cut} of {len(result['rows'])} completions hit the token budget (rloo.max_completion_length) before "
              "they ended: a reward that reads the answer at the end scores them as if it were wrong.")
        for line in cut_off_lines(result):
            print(line.replace("⚠️ ", "Warning: "))
    print(f"\nLearnability: {result['learnability']['verdict']}")
    for line in none_as_zero_lines(result):
        print(line)
    if result.get("agreement"):
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


def cmd_scan(args: argparse.Namespace) -> int:
    from ..config import RunConfig
    from ..scan import check_limit, override_line, parse_band, read_scan, run_scan, summary_lines, unscanned_words, write_filtered

    try:
        check_limit(args.limit)
        band = parse_band(args.band)
        cfg = RunConfig.load(args.config, list(args.overrides))
        from ..engine.sampling import sample_groups

        quiet = lambda msg: None  # noqa: E731 - the scan's own progress lines say enough
        folder = run_scan(cfg, lambda rows, seed: sample_groups(cfg, rows, quiet, seed), args.runs_dir or cfg.output.runs_dir,
                          limit=args.limit, progress=progress_printer(args.events), timeout_s=args.timeout, seed=args.seed)
        filtered = write_filtered(folder, band) if (args.write_filtered or band) else None
    except StudioError as exc:
        return fail(exc)
    except KeyboardInterrupt:
        print("\nerror: interrupted; nothing was saved.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - e.g. a model folder that cannot be loaded
        return fail_unexpected("the scan", exc, f"the model of {args.config} (model.name_or_path) could not be loaded or sampled",
                                "check model.name_or_path with `rloo-studio preview CONFIG`")
    summary, _ = read_scan(folder)
    if args.json:
        print(json.dumps({**{k: v for k, v in summary.items() if k != "config"}, "folder": str(folder), "filtered": filtered}))
        return EXIT_OK
    print("\n".join(summary_lines(summary)))
    print(f"Saved {folder / runs.SCAN_FILE} and {folder / runs.SCAN_SUMMARY_FILE}")
    if filtered:
        print(f"Wrote {filtered['path']}: {filtered['kept']} of {filtered['of']} scanned prompts (the original data is unchanged)."
              + (f" {unscanned_words(filtered, 'leave out --limit')}" if filtered.get("unscanned") else "")
              + f"\nTrain on it with: rloo-studio train {args.config} {override_line(filtered['overrides'])}")
    else:
        print("Write the data without the always and never solved prompts: add --write-filtered (or --band LO:HI).")
    return EXIT_OK


def cmd_rewards(args: argparse.Namespace) -> int:
    from ..rewards import builtin_catalog

    if getattr(args, "action", None):
        try:
            return REWARD_ACTIONS[args.action](args)
        except StudioError as exc:
            return fail(exc)
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
    from ..rewards import library
    from ..workers import scorer

    reward = library.read(args.file)
    cfg, problems = None, []
    if args.config:
        from ..config import RunConfig
        from ..data import load_rows

        cfg = RunConfig.load(args.config)
        problems = library.column_problems(reward, load_rows(cfg.data, cfg.base_dir).columns)
    checked = scorer.check_examples(reward, cfg, timeout_s=args.timeout) if not problems else None
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
    from ..rewards import library

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
    from ..rewards import library

    reward = library.find(args.name)
    target = _new_file(args.out, reward.name)
    target.write_text(reward.source, encoding="utf-8")
    print(f"Wrote {target}: \"{reward.name}\", version {library.short_hash(reward.hash)} "
          f"(import it elsewhere with `rloo-studio rewards import {target}`)")
    return EXIT_OK


def rewards_build(args: argparse.Namespace) -> int:
    """A reward file from a rule set (YAML or JSON: name, description, tags, combine, blocks, examples)."""
    import yaml

    from ..rewards import library, rules

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
    from ..rewards import rules

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
    from ..rewards import library

    print(f"Wrote {library.duplicate(args.name, args.new_name)}")
    return EXIT_OK


def rewards_delete(args: argparse.Namespace) -> int:
    from ..rewards import library

    print(f"Deleted {library.delete(args.name)} (runs that used it keep their own copy)")
    return EXIT_OK


REWARD_ACTIONS = {"import": rewards_import, "list": rewards_list, "export": rewards_export, "build": rewards_build,
                  "blocks": rewards_blocks, "duplicate": rewards_duplicate, "delete": rewards_delete}

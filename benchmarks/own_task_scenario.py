"""A small shop's own task, from page open to exported model, in a real browser on the cpu-small-real preset.

    python benchmarks/own_task_scenario.py                  # the whole path; training steps from Estimate time's plan
    python benchmarks/own_task_scenario.py --minutes 15     # another time budget for Estimate time
    python benchmarks/own_task_scenario.py --steps 2        # a dry run: 2 training steps whatever the plan says

The path a person new to RLOO takes with their own data (issue 38's scenario), walked by Chromium through Playwright on
the app as `rloo-studio ui` serves it (behind its launch token; its children started as the product starts them):

1. Model: the preset cpu-small-real picked in the menu and used, the model pointed at the local SmolLM2-135M-Instruct
   folder that scripts/build_real_model.py builds (the real-model tests' model).
2. Data: a shop's CSV written here, `question,order_id,channel` (40 customer questions, each naming its order number),
   uploaded; the prompt column `question`, no answer column; a held-out file of 10 other questions uploaded.
3. Rewards: the person's own reward typed into the editor ("one short polite sentence that contains the order number":
   it reads the `order_id` column by name), ticked; a pinned example (order number given as `order_id=...`) that must
   pass; the preview (Sample and score), whose learnability verdict is recorded.
4. Train: Estimate time for a budget (default 10 minutes), then Start with the steps it suggests; wait for the end.
5. Evaluate: base vs tuned on the held-out file; the verdict line and the cut-off shares the page shows. When the page
   offers "Evaluate again with a larger token budget" (most answers cut off), that is pressed too and recorded.
6. Export: the format the Export tab preselects for the run (the LoRA adapter: no merging, offline), until it says
   "Exported".

Each phase is timed from the first click of it to the page showing its result; the total runs from opening the page to
the export's result. The driver clicks and types at once: a person's reading and typing time is not in these numbers,
only the page's and the machine's. The verdict is checked against the cut-off shares by this script's own rule: when
more than half of either side's answers were cut off, a plain "better" is a wrong verdict.

The machine's load average is recorded at the start, every 30 s, and at the end: on a machine shared with other work
every time here is longer than on an idle one. Writes benchmarks/results/own_task_scenario.json and .md (`--report` writes the
.md again from the .json); screenshots of each phase's end go to a temporary folder (printed). When a phase fails, the
result says where and why, and the run folder is kept for a look (its path in the result). A run that stops with no
Stop pressed is a finding too: its own log lines are recorded and it is resumed once, as the page says to.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import RESULTS, ROOT, machine, save, shown, table

sys.path.insert(0, str(ROOT))  # rloo_studio from this checkout, also when it is not installed
sys.path.insert(0, str(ROOT / "tests"))  # the browser tests' Chromium flags and cell typing (tests/helpers/browser.py)
sys.path.insert(0, str(ROOT / "scripts"))

PRESET = "cpu-small-real"
DEFAULT_MINUTES = 10.0
GOAL_MINUTES = 30.0
TOKEN = "benchmark-token"
# Generous limits: on a shared 2-core machine each wait can be many times its idle length; none decides a result.
MINUTE_MS = 60_000
PHASES = ("open", "model", "data", "rewards", "estimate", "train", "evaluate", "evaluate again", "export")

# The shop's customers, their questions and order numbers (written here, not the demo's data). Order numbers are
# letters and digits, so that the CSV reader keeps them as text.
NAMES = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"]
ASKS = ["Where is my order {id}? It has been a week.",
        "Hi, can you tell me when order {id} will arrive?",
        "My parcel for order {id} has not shown up yet. What is happening?",
        "I would like to cancel order {id}, is that still possible?",
        "Order {id} arrived damaged. What can I do?",
        "Can I change the delivery address for order {id}?",
        "I was charged twice for order {id}. Please check.",
        "Has order {id} been shipped already?",
        "The tracking link for order {id} does not work.",
        "Could you send me the invoice for order {id}?"]
CHANNELS = ["email", "chat", "phone", "web form"]


def shop_rows(first: int, count: int) -> list[tuple[str, str, str]]:
    """(question, order_id, channel) rows; `first` keeps the held-out questions' order numbers apart from training's."""
    rows = []
    for i in range(first, first + count):
        order = f"SO-{4100 + 37 * i}"
        ask = ASKS[(i * 3) % len(ASKS)].format(id=order)
        rows.append((f"{NAMES[i % len(NAMES)]} asks: {ask}", order, CHANNELS[i % len(CHANNELS)]))
    return rows


def write_csv(path: Path, rows) -> Path:
    import csv

    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["question", "order_id", "channel"])
        writer.writerows(rows)
    return path


# The person's own reward, as typed into the editor: it reads the order_id column by name.
REWARD = '''import re

POLITE = ("please", "thank", "sorry", "happy to", "glad", "apolog")


def polite_order(completions, order_id, **kwargs):
    """One short polite sentence with the order number: 1 for the number, 0.5 for a polite word,
    minus 0.5 for each sentence after the first and for more than 25 words."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    scores = []
    for text, order in zip(texts, order_id):
        sentences = [s for s in re.split(r"[.!?]+", text) if s.strip()]
        score = 1.0 if str(order) in text else 0.0
        score += 0.5 if any(word in text.lower() for word in POLITE) else 0.0
        score -= 0.5 * max(0, len(sentences) - 1)
        score -= 0.5 if len(text.split()) > 25 else 0.0
        scores.append(score)
    return scores
'''
# prompt · completion · answer (or column=value) · min · max: a good reply must score 1.5 (number + polite word).
PIN = ["Where is my order SO-9001?", "Thank you for asking, order SO-9001 ships tomorrow.", "order_id=SO-9001", "1.5", "1.5"]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoadSampler:
    """The 1-minute load average every 30 s while the scenario runs (the machine is shared)."""

    def __init__(self):
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(30):
            self.samples.append(round(os.getloadavg()[0], 2))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()


class Enough(Exception):
    """The phase `--until` names has ended: the rest is not walked."""


class Scenario:
    """The page, the phases' clock and what the page said."""

    def __init__(self, page, shots: Path, until: str | None = None):
        self.page, self.shots, self.until = page, shots, until
        self.phases: dict[str, float] = {}
        self.said: dict[str, str] = {}
        self.opened = time.time()
        self.current = None
        self.out: dict = {}  # what the walk found, kept when it stops early

    def phase(self, name: str):
        scenario = self

        class Timed:
            def __enter__(self):
                scenario.current = name
                self.started = time.time()
                print(f"[{time.strftime('%H:%M:%S')}] {name}…", file=sys.stderr, flush=True)

            def __exit__(self, kind, exc, tb):
                scenario.shot(name if kind is None else f"{name}-failed")
                if kind is None:
                    scenario.phases[name] = round((time.time() - self.started) / 60, 2)
                    print(f"[{time.strftime('%H:%M:%S')}] {name}: {scenario.phases[name]} min", file=sys.stderr, flush=True)
                    if name == scenario.until:
                        raise Enough(name)
                return False

        return Timed()

    def shot(self, name: str) -> None:
        try:
            self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)
        except Exception as exc:  # a screenshot is a help, never the result
            print(f"(no screenshot {name}: {exc})", file=sys.stderr)

    def text(self, selector: str) -> str:
        return self.page.locator(selector).inner_text().strip()


def choose(page, elem_id: str, option: str) -> None:
    """Pick `option` in a dropdown, as a person does: open it, click the option."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


from helpers.browser import fill_field as fill  # noqa: E402 (the browser tests' own ways of typing)
from helpers.browser import type_code  # noqa: E402


def cut_off_shares(summary: str) -> dict | None:
    """The cut-off shares the summary shows ("cut off by the token budget: 100.0 % [..] → 95.0 % [..]"), as fractions."""
    found = re.search(r"cut off by the token budget: ([\d.]+) ?%[^→]*→ ([\d.]+) ?%", summary)
    return {"base": float(found[1]) / 100, "tuned": float(found[2]) / 100} if found else None


def verdict_line(summary: str) -> str:
    """The summary's verdict line: the one that compares tuned with base on the same prompts."""
    return next((line.strip() for line in summary.splitlines() if " vs base on the same " in line), "")


def judged(summary: str) -> dict:
    """The verdict as the page shows it, and whether it is consistent: no plain "better" when most answers were cut off."""
    line, shares = verdict_line(summary), cut_off_shares(summary)
    mostly_cut = bool(shares) and max(shares.values()) > 0.5
    plain_better = bool(re.search(r" is better\b", line)) and "cut off" not in line
    better = bool(re.search(r"\bis better\b|scored higher only on cut-off", line))
    return {"verdict_line": line, "cut_off_share": shares, "mostly_cut_off": mostly_cut, "claims_better": better,
            "consistent": bool(line) and shares is not None and not (mostly_cut and plain_better),
            "rule": "consistent = the page shows a verdict line and the cut-off shares, and no plain 'is better' when more "
                    "than half of either side's answers were cut off"}


def log_lines(run_dir: Path) -> list[str]:
    """The run's own lines in its train.log ("[rloo-studio] ..."): what it says of a stop, a failure, an alert."""
    try:
        text = (run_dir / "train.log").read_text(errors="replace")
    except OSError:
        return []
    return [line.strip()[:500] for line in re.split(r"[\r\n]", text) if "[rloo-studio]" in line][-15:]


def walk(s: Scenario, folder: Path, model_dir: Path, runs_dir: Path, minutes: float, steps_override: int | None) -> dict:
    from helpers.browser import fill_cell
    from playwright.sync_api import expect

    from rloo_studio import runs
    from rloo_studio.presets import get_preset

    page, out = s.page, s.out
    train_csv = write_csv(folder / "shop-questions.csv", shop_rows(0, 40))
    held_csv = write_csv(folder / "shop-held-out.csv", shop_rows(40, 10))

    with s.phase("model"):
        page.get_by_role("tab", name="1 · Model & hardware").click()
        choose(page, "preset", f"{PRESET} — {get_preset(PRESET).title}")
        page.locator("#apply-preset").click()
        expect(page.locator("#preset-notes")).to_contain_text("Your data and rewards are kept", timeout=2 * MINUTE_MS)
        name = page.locator("#model-name input")
        name.fill(str(model_dir))
        name.press("Enter")
        expect(name).to_have_value(str(model_dir))
        page.wait_for_timeout(1000)  # the memory estimate and the notes follow the model
        s.said["preset_notes"] = s.text("#preset-notes")
        s.said["memory_estimate"] = s.text("#memory-estimate")

    with s.phase("data"):
        page.get_by_role("tab", name="2 · Data").click()
        page.get_by_label("A file on this computer").check()
        page.locator("#data-upload input[type=file]").set_input_files(str(train_csv))
        expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(re.compile(r"shop-questions\.csv$"),
                                                                                           timeout=2 * MINUTE_MS)
        for elem_id, value in (("prompt-column", "question"), ("answer-column", "(none)")):
            box = page.locator(f"#{elem_id} input")
            box.fill(value)
            box.press("Enter")
        page.get_by_role("button", name="Held-out data and limits").click()
        page.locator("#data-test-upload input[type=file]").set_input_files(str(held_csv))
        expect(page.locator("#data-test-split input, #data-test-split textarea").first).to_have_value(
            re.compile(r"shop-held-out\.csv$"), timeout=2 * MINUTE_MS)
        page.locator("#preview-data").click()
        expect(page.locator("#data-summary")).to_contain_text("40 training rows", timeout=3 * MINUTE_MS)
        s.said["data_summary"] = s.text("#data-summary")

    with s.phase("rewards"):
        page.get_by_role("tab", name="3 · Rewards").click()
        for box in page.locator("#builtin-rewards input[type=checkbox]").all():  # only the person's own reward
            if box.is_checked():
                box.uncheck()
        expect(page.locator("#reward-receives")).to_contain_text("order_id", timeout=MINUTE_MS)
        s.said["reward_receives"] = s.text("#reward-receives")
        type_code(page, REWARD)
        expect(page.locator("#code-lint")).to_contain_text("syntax is fine", timeout=MINUTE_MS)
        page.locator("#check-code").click()
        expect(page.locator("#code-check")).to_contain_text("1 function(s) found: polite_order", timeout=5 * MINUTE_MS)
        page.locator("#user-rewards").get_by_label("Toggle all: use").check()
        page.locator("#pinned-add").click()
        expect(page.locator("#pinned [data-testid=cell-0-0]")).to_be_visible()
        for column, value in enumerate(PIN):
            fill_cell(page, "#pinned", 0, column, value)
        page.locator("#check-code").click()
        # The result of the check of the whole row (each cell's edit queues a check of its own: an earlier one shows
        # the row as it was then, without the expected range).
        pinned = page.locator("#pinned-result")
        expect(pinned).to_contain_text(f"(expected {PIN[3]}–{PIN[4]})", timeout=10 * MINUTE_MS)
        expect(pinned).not_to_contain_text("processing", timeout=10 * MINUTE_MS)
        s.said["pinned"] = s.text("#pinned-result")
        if "1/1 pinned examples pass" not in s.said["pinned"]:
            raise RuntimeError(f"the pinned example fails: {s.said['pinned']}")
        page.locator("#preview-run").click()
        expect(page.locator("#preview-status")).to_contain_text("Scored", timeout=15 * MINUTE_MS)
        s.said["preview_status"] = s.text("#preview-status")
        findings = s.text("#preview-findings")
        s.said["preview_findings"] = findings
        out["learnability"] = next((line.strip() for line in findings.splitlines() if "Learnability" in line), None)

    with s.phase("estimate"):
        page.get_by_role("tab", name="4 · Train").click()
        fill(page, "estimate-minutes", f"{minutes:g}")
        page.locator("#estimate-time").click()
        plan = page.locator("#time-estimate")
        expect(plan).to_contain_text(re.compile(r"use \d+ steps|are not enough"), timeout=30 * MINUTE_MS)
        s.said["time_estimate"] = s.text("#time-estimate")
        suggested = re.search(r"use (\d+) steps", s.said["time_estimate"])
        out["suggested_steps"] = int(suggested[1]) if suggested else None
        if not suggested and steps_override is None:
            raise RuntimeError(f"Estimate time suggested no step count: {s.said['time_estimate']}")

    steps = steps_override or out["suggested_steps"]
    out["steps"] = steps
    with s.phase("train"):
        fill(page, "rloo-max-steps", steps)
        page.locator("#start-training").click()
        status = page.locator("#train-status")
        confirm = page.locator("#start-confirm")
        expect(status.filter(has_text=re.compile(r"— (starting|training)")).or_(confirm.filter(has_text="pinned"))).to_be_visible(
            timeout=10 * MINUTE_MS)
        if confirm.is_visible() and confirm.inner_text().strip():
            s.said["start_confirm"] = confirm.inner_text().strip()
            page.locator("#start-anyway").click()
        s.said["start_problems"] = s.text("#start-problems")
        ended = re.compile(r"— (finished|failed|stopped|interrupted)")
        expect(status).to_contain_text(ended, timeout=90 * MINUTE_MS)
        s.said["train_status"] = s.text("#train-status")
        run_dirs = [p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists()]
        if len(run_dirs) != 1:
            raise RuntimeError(f"one Start made {len(run_dirs)} runs: {[p.name for p in run_dirs]}")
        run_dir = run_dirs[0]
        out["run"] = run_dir.name
        if runs.effective_state(runs.read_status(run_dir)) in ("stopped", "interrupted"):
            # Nothing here pressed Stop: a finding. What the run folder says of it is kept, and the person does what
            # the page says (Resume), once.
            out["unasked_stop"] = {"page": s.said["train_status"], "status": runs.read_status(run_dir),
                                   "stop_file": runs.stop_requested(run_dir), "log": log_lines(run_dir)}
            s.shot("train-unasked-stop")
            page.locator("#resume-training").click()
            expect(status).to_contain_text(re.compile(r"— (starting|training|queued)"), timeout=10 * MINUTE_MS)
            expect(status).to_contain_text(ended, timeout=90 * MINUTE_MS)
            s.said["train_status"] = s.text("#train-status")
        state = runs.effective_state(runs.read_status(run_dir))
        if state != "finished":
            raise RuntimeError(f"the run ended {state}: {s.said['train_status']}")

    with s.phase("evaluate"):
        page.get_by_role("tab", name="6 · Evaluate").click()
        expect(page.locator("#eval-run input")).to_have_value(out["run"], timeout=MINUTE_MS)
        page.locator("#eval-start").click()
        summary = page.locator("#eval-summary")
        expect(summary).to_contain_text("Saved in", timeout=30 * MINUTE_MS)
        expect(summary).to_contain_text("held-out prompts")
        s.said["eval_summary"] = s.text("#eval-summary")
        out["evaluation"] = judged(s.said["eval_summary"])
    again = page.locator("#eval-again")
    if again.is_visible():  # most answers cut off: the page offers a larger budget, and a person takes it
        with s.phase("evaluate again"):
            budget = re.search(r"larger token budget \(e\.g\. (\d+)\)", out["evaluation"]["verdict_line"])
            again.click()
            # Done when the summary is the new evaluation's alone: at the larger budget, no progress line over it.
            expect(summary).to_contain_text(re.compile(rf"token budget: base \d+, tuned {budget[1] if budget else ''}"),
                                            timeout=60 * MINUTE_MS)
            expect(summary).not_to_contain_text("Starting the evaluation", timeout=MINUTE_MS)
            s.said["eval_summary_again"] = s.text("#eval-summary")
            out["evaluation_again"] = judged(s.said["eval_summary_again"])

    with s.phase("export"):
        page.get_by_role("tab", name="7 · Export").click()
        expect(page.locator("#export-run input")).to_have_value(out["run"], timeout=MINUTE_MS)
        out["export_format"] = page.locator("#export-format input:checked").get_attribute("value")
        page.locator("#export-start").click()
        expect(page.locator("#export-result")).to_contain_text("Exported", timeout=30 * MINUTE_MS)
        s.said["export_result"] = s.text("#export-result")
    return out


def markdown(result: dict) -> str:
    """The result as a short page: the phases' minutes, the total, the verdicts and the load it was measured under."""
    load = result["load_average"]
    rows = [[name, minutes] for name, minutes in result["minutes"].items()]
    rows.append(["**total, page open to exported model**", f"**{result['total_minutes']}**"])
    lines = [f"# {result['what']}", "",
             f"`{result['command'].strip()}` on {result['machine']}. Load average (1, 5, 15 min) {load['start']} at the start, "
             f"{load['end']} at the end; the 1-minute one sampled every 30 s: mean {load['mean_1min']}, max {load['max_1min']}. "
             + result["shared_machine"], "",
             table(["phase", "minutes"], rows), "",
             (f"Goal: under {result['goal_minutes']:g} minutes: {'met' if result['under_goal'] else 'not met'}"
              f" ({result['total_minutes_without_evaluating_again']} min without evaluating again)."), "",
             (f"- Steps trained: {result.get('steps')} (Estimate time suggested {result.get('suggested_steps')} for "
              f"{result['minutes_budget']:g} minutes)."),
             f"- The preview says: {result.get('learnability')}"]
    for key, what in (("evaluation", "Evaluate"), ("evaluation_again", "Evaluate again with a larger token budget")):
        ev = result.get(key)
        if ev:
            lines += [f"- {what}: {ev['verdict_line']}",
                      (f"  Cut off (share of answers): {ev['cut_off_share']}; most cut off: {ev['mostly_cut_off']}; "
                       f"consistent (no plain 'better' on mostly cut-off answers): {ev['consistent']}.")]
    if result.get("unasked_stop"):
        lines.append(f"- The run stopped with no Stop pressed, and was resumed: {result['unasked_stop']}")
    lines += [f"- {note}" for note in result.get("notes", [])]  # said of this result afterwards, by whoever ran it
    if result.get("failed"):
        lines += ["", f"**Failed** in phase {result['failed']['phase']}: {result['failed']['error']}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES, help="the time budget given to Estimate time")
    parser.add_argument("--steps", type=int, default=None, help="train this many steps instead of the plan's (a dry run)")
    parser.add_argument("--name", default="own_task_scenario", help="the results' file name (a dry run: another name)")
    parser.add_argument("--until", choices=PHASES, help="stop after this phase (to check the script's first phases)")
    parser.add_argument("--report", action="store_true", help="only write the .md again from the saved .json")
    args = parser.parse_args(argv)
    if args.report:
        import json

        (RESULTS / f"{args.name}.md").write_text(markdown(json.loads((RESULTS / f"{args.name}.json").read_text())))
        return 0

    from build_real_model import build_real_model
    from helpers.browser import CHROMIUM, CHROMIUM_ARGS, WIDTH
    from playwright.sync_api import expect, sync_playwright

    from rloo_studio.ui.app import build_app, launch

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    model_dir = build_real_model()
    load_start = [round(x, 2) for x in os.getloadavg()]
    shots = Path(tempfile.mkdtemp(prefix="own-task-scenario-shots-"))
    out, failed = {}, None
    folder = Path(tempfile.mkdtemp(prefix="own-task-scenario-"))  # removed at the end, kept when a phase failed
    with LoadSampler() as load:
        runs_dir = folder / "runs"
        demo = build_app(runs_dir, detect_hardware=True)
        link = launch(demo, token=TOKEN, port=_free_port(), runs_dir=runs_dir, block=False)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
                page.set_default_timeout(2 * MINUTE_MS)
                s = Scenario(page, shots, args.until)
                try:
                    with s.phase("open"):
                        page.goto(link)
                        expect(page.locator("#preset-notes")).to_contain_text("The form shows", timeout=5 * MINUTE_MS)
                    out = walk(s, folder, model_dir, runs_dir, args.minutes, args.steps)
                except Enough:
                    out = s.out
                except Exception as exc:  # a broken step is a finding: recorded with where it broke
                    out = s.out
                    failed = {"phase": s.current, "error": f"{type(exc).__name__}: {str(exc)[:2000]}",
                              "screenshot": str(shots / f"{s.current}-failed.png")}
                    print(f"error in phase {s.current}: {exc}", file=sys.stderr)
                total = round((time.time() - s.opened) / 60, 2)
                browser.close()
        finally:
            demo.close()
            demo.inference_worker.shutdown()
    samples = load.samples or [load_start[0]]
    result = {
        "what": "A small shop's own task in the browser (own CSV with an order_id column, own reward reading it, pinned "
                "example, preview, Estimate time, train, evaluate, export) on presets/cpu-small-real.yaml with "
                "SmolLM2-135M-Instruct from a local folder",
        "command": "python benchmarks/own_task_scenario.py " + " ".join(argv),
        "machine": machine(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "load_average": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()],
                         "max_1min": max(samples), "mean_1min": round(sum(samples) / len(samples), 2)},
        "shared_machine": "The machine is shared: the load averages count other work on it, so every time here is longer "
                          "than on an idle machine. The driver clicks at once: no reading or typing time of a person is counted.",
        "minutes_budget": args.minutes, "minutes": s.phases, "total_minutes": total,
        "total_minutes_without_evaluating_again": round(total - s.phases.get("evaluate again", 0.0), 2),
        "goal_minutes": GOAL_MINUTES, "under_goal": failed is None and total < GOAL_MINUTES,
        **out, "page_said": s.said,
    }
    if failed:
        result["failed"] = {**failed, "kept": str(folder), "screenshots": str(shots)}
    else:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    path = save(args.name, result)
    (RESULTS / f"{args.name}.md").write_text(markdown(result))
    ev = out.get("evaluation") or {}
    print(f"total {total} min ({s.phases}); verdict: {ev.get('verdict_line')}; cut off {ev.get('cut_off_share')}; "
          f"consistent: {ev.get('consistent')}; load average {load_start} -> {result['load_average']['end']}. "
          f"Written {shown(path)}; screenshots in {shots}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Make the documentation's screenshots of the app from a real demo run.

    python scripts/docs_screenshots.py [--runs-dir DIR] [--out docs] [--steps 200] [--shots train,rewards,chat,eval]

Trains the bundled demo (`presets/cpu-demo.yaml`, about five minutes on two cores) into
--runs-dir (or a scratch runs folder, removed at the end), serves the app on it, and drives
Debian's Chromium: the Train tab showing that run (docs/train-tab.png), the reward preview sampling the demo's prompts
(docs/reward-preview.png; down to the pinned example, checked: docs/images/rewards-tab.png),
the Chat tab with a held-out question (greedy, so the picture is reproducible; it tries a few
questions and keeps the first on which base and tuned answer differently: docs/compare-chat.png) and the Evaluate tab with every checkpoint on 100 held-out
prompts (docs/eval-chart.png). `--shots` takes some of them only.
Needs the test extras (playwright) and `chromium`; nothing leaves the machine.
"""


from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ("train", "rewards", "chat", "eval")
sys.path.insert(0, str(ROOT / "tests"))  # the tests' helpers (helpers.app)
os.environ.update(HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False", HF_HUB_DISABLE_TELEMETRY="1")


def train_demo(runs_dir: Path, steps: int) -> Path:
    runs_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "rloo_studio.cli", "train", str(ROOT / "presets" / "cpu-demo.yaml"),
           f"output.runs_dir={runs_dir}", f"rloo.max_steps={steps}"]
    print("training:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    return max((p for p in runs_dir.iterdir() if (p / "status.json").exists()), key=lambda p: p.stat().st_mtime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, help="reuse a runs folder holding a finished demo run (skips training)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--shots", default=",".join(SHOTS), help="which pictures to take, comma-separated: " + ", ".join(SHOTS))
    args = parser.parse_args()
    shots = [s.strip() for s in args.shots.split(",") if s.strip()]
    unknown = sorted(set(shots) - set(SHOTS))
    if unknown:
        parser.error(f"unknown --shots {', '.join(unknown)}; choose from {', '.join(SHOTS)}")

    from helpers.app import page_url, served_app
    from playwright.sync_api import expect, sync_playwright

    # Without --runs-dir the demo run is trained into a scratch folder, removed at the end whether or not the
    # pictures were taken: nothing outside --out and --runs-dir is left behind.
    scratch = None if args.runs_dir else Path(tempfile.mkdtemp(prefix="rloo-docs-"))
    runs_dir = args.runs_dir or scratch / "runs"
    try:
        if any(runs_dir.glob("*/status.json")):
            run_dir = max((p for p in runs_dir.iterdir() if (p / "status.json").exists()), key=lambda p: p.stat().st_mtime)
        else:
            run_dir = train_demo(runs_dir, args.steps)
        questions = [json.loads(line) for line in (ROOT / "assets" / "demo-data" / "test.jsonl").read_text().splitlines()[:40]]
        args.out.mkdir(parents=True, exist_ok=True)
        chromium = shutil.which("chromium") or "/usr/bin/chromium"
        with served_app(runs_dir) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(page_url(url))
            expect(page.locator("#model-name input")).to_have_value("demo")
            written = []

            if "train" in shots:  # the page opens on the newest run: the Train tab shows it
                page.get_by_role("tab", name="4 · Train").click()
                expect(page.locator("#train-status")).to_contain_text(f"{run_dir.name} — finished")
                page.wait_for_timeout(3000)  # the charts draw after the status
                page.locator("#tab-train").screenshot(path=str(args.out / "train-tab.png"))
                written.append("train-tab.png")

            if "rewards" in shots:  # the preview on three of the demo's prompts, from its heading to its findings
                page.get_by_role("tab", name="3 · Rewards").click()
                page.locator("#preview-run").click()
                expect(page.locator("#preview-status")).to_contain_text("Scored", timeout=600_000)
                page.wait_for_timeout(2000)
                top = page.locator("#preview-prompts").bounding_box()
                bottom = page.locator("#preview-findings").bounding_box()
                scroll = page.evaluate("window.scrollY")
                page.screenshot(path=str(args.out / "reward-preview.png"), full_page=True,
                                clip={"x": 0, "y": top["y"] + scroll - 60, "width": 1400,
                                      "height": bottom["y"] + bottom["height"] - top["y"] + 80})
                written.append("reward-preview.png")
                # The whole tab's lower half for docs/app.md: the preview and the pinned example, checked.
                page.locator("#check-code").click()
                expect(page.locator("#pinned-result")).to_contain_text("pinned examples pass", timeout=300_000)
                top, bottom = page.locator("#preview-prompts").bounding_box(), page.locator("#pinned-result").bounding_box()
                scroll = page.evaluate("window.scrollY")
                (args.out / "images").mkdir(exist_ok=True)
                page.screenshot(path=str(args.out / "images" / "rewards-tab.png"), full_page=True,
                                clip={"x": 0, "y": top["y"] + scroll - 60, "width": 1400,
                                      "height": bottom["y"] + bottom["height"] - top["y"] + 80})
                written.append("images/rewards-tab.png")

            if "chat" in shots:
                chat_pictures(page, expect, run_dir, questions, args.out)
                written.append("compare-chat.png")
            if "eval" in shots:
                eval_pictures(page, expect, run_dir, args.out)
                written.append("eval-chart.png")
            browser.close()
        if "eval" in shots:
            report = json.loads((run_dir / "eval.json").read_text())
            print("evaluation:", json.dumps({e["name"]: round(e["summary"]["mean_reward"], 3) for e in report["checkpoints"]}),
                  "base:", round(report["base"]["mean_reward"], 3))
        where = f"the run is in {run_dir}" if scratch is None else "the scratch run is removed (pass --runs-dir DIR to keep it)"
        print(f"wrote {', '.join(str(args.out / name) for name in written)}; {where}")
        return 0
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def chat_pictures(page, expect, run_dir: Path, questions: list[dict], out: Path) -> None:
    page.get_by_role("tab", name="5 · Chat").click()
    page.locator("#chat-refresh").click()
    expect(page.locator("#chat-run input")).to_have_value(run_dir.name)
    page.locator("#chat-settings button").first.click()  # open the settings: greedy, for a reproducible picture
    page.locator("#chat-temperature input[type=number]").fill("0")
    page.locator("#chat-temperature input[type=number]").press("Enter")
    page.locator("#chat-settings button").first.click()
    for row in questions:
        page.locator("#chat-clear").click()
        page.locator("#chat-prompt textarea").fill(row["prompt"])
        page.locator("#chat-send").click()
        expect(page.locator("#chat-status")).to_contain_text("Both replies use seed", timeout=300_000)
        left, right = page.locator("#chat-left").inner_text(), page.locator("#chat-right").inner_text()
        if left != right and row["answer"] in right.split("Thinking")[-1]:
            print(f"chat: {row['prompt']!r}: base and tuned differ, tuned is right ({row['answer']})")
            break
    page.locator("#tab-chat").screenshot(path=str(out / "compare-chat.png"))


def eval_pictures(page, expect, run_dir: Path, out: Path) -> None:
    page.get_by_role("tab", name="6 · Evaluate").click()
    page.locator("#eval-refresh").click()
    expect(page.locator("#eval-run input")).to_have_value(run_dir.name)
    page.locator("#eval-checkpoint").click()
    page.get_by_role("option", name="all checkpoints").click()
    limit = page.locator("#eval-limit input")
    limit.fill("100")
    limit.press("Tab")
    page.locator("#eval-start").click()
    expect(page.locator("#eval-summary")).to_contain_text("100 held-out prompts", timeout=900_000)
    page.wait_for_timeout(2000)
    page.locator("#tab-evaluate").screenshot(path=str(out / "eval-chart.png"))


if __name__ == "__main__":
    sys.exit(main())

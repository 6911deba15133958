"""A new user's first run in a real browser (Playwright driving Debian's Chromium).

Opens the page, keeps the bundled demo model and data, starts training, watches the reward plot
and the progress bar advance, stops, finds the run in the Runs tab, chats with base and tuned side
by side in the Chat tab, and runs a batch evaluation in the Evaluate tab. Screenshots go to
test-artifacts/browser/ (or $RLOO_STUDIO_ARTIFACTS). Every request the page makes is recorded:
none may leave 127.0.0.1.
"""

from __future__ import annotations

from urllib.parse import urlparse

from helpers.browser import ARTIFACTS, BROWSER_MARKS, animation_frames, coloured_pixels, opened_page

from rloo_studio import runs

pytestmark = BROWSER_MARKS


def test_first_run_in_a_browser(runs_dir):
    from playwright.sync_api import expect

    requests: list[str] = []
    with opened_page(runs_dir, detect_hardware=True, on_request=lambda request: requests.append(request.url)) as page:
        # 1 · Model & hardware: the device is detected, the demo model is chosen.
        expect(page.locator("#device-info")).to_contain_text("CPU", timeout=90_000)
        expect(page.locator("#model-name input")).to_have_value("demo")
        page.screenshot(path=str(ARTIFACTS / "1-model.png"), full_page=True)
        # The loaded page does not keep the browser drawing (ui/frame_pacing.py): without the frame pacing, Gradio's
        # loading indicator went on requesting 60 frames a second (174 and 181 frames in 3 s, measured; 22 and 25 with).
        frames = animation_frames(page, 3)
        assert frames < 60, f"the idle page drew {frames} animation frames in 3 s"
        # A chain of frames keeps its full rate for its first second, then gets a frame every 250 ms.
        first_60_ms, next_4_ms = page.evaluate("""() => new Promise(done => {
            const at = [];
            const frame = (t) => { at.push(t); if (at.length < 65) requestAnimationFrame(frame); else done([at[59] - at[0], at[64] - at[60]]); };
            requestAnimationFrame(frame);
        })""")
        assert first_60_ms < 7000 and next_4_ms >= 4 * 240, (first_60_ms, next_4_ms)  # slowed throughout: 59 x 250 ms

        # 2 · Data: the bundled demo, checked.
        page.get_by_role("tab", name="2 · Data").click()
        expect(page.get_by_label("Bundled demo (arithmetic word problems)")).to_be_checked()
        page.locator("#preview-data").click()
        expect(page.locator("#data-summary")).to_contain_text("2000 training rows")
        expect(page.locator("#data-summary")).to_contain_text("Ready to train")
        page.screenshot(path=str(ARTIFACTS / "2-data.png"), full_page=True)

        # 3 · Rewards: the preset's three builtin rewards are ticked.
        page.get_by_role("tab", name="3 · Rewards").click()
        expect(page.locator("#builtin-rewards")).to_contain_text("numeric_answer")
        page.screenshot(path=str(ARTIFACTS / "3-rewards.png"), full_page=True)

        # 4 · Train: smaller steps than the preset, then Start. Stop ends the run, so the step count only has to leave
        # room: the checks below take as long as 30 of the demo's steps on a busy 2-core machine (40 steps ended first).
        page.get_by_role("tab", name="4 · Train").click()
        for elem_id, value in (("rloo-per-device-train-batch-size", "32"), ("rloo-max-steps", "200")):
            box = page.locator(f"#{elem_id} input")
            box.fill(value)
            box.press("Tab")
        page.locator("#start-training").click()
        expect(page.locator("#train-status")).to_contain_text("training", timeout=120_000)

        def progress_step() -> int:
            return int(page.locator("#train-progress").get_attribute("data-step") or 0)

        page.wait_for_function("Number(document.querySelector('#train-progress')?.dataset.step || 0) >= 3", timeout=180_000)
        # The reward plot draws its lines: coloured pixels (the axes and grid are grey) in the chart.
        plot = page.locator("#reward-plot")
        expect(plot.locator(".vega-embed").first).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1500)
        assert coloured_pixels(plot.screenshot(path=str(ARTIFACTS / "reward-plot.png"))) > 150
        first_step = progress_step()
        page.wait_for_function(f"Number(document.querySelector('#train-progress')?.dataset.step || 0) > {first_step}", timeout=120_000)
        assert progress_step() > first_step
        expect(page.locator("#samples")).to_contain_text("numeric_answer=")
        page.screenshot(path=str(ARTIFACTS / "4-train-mid-run.png"), full_page=True)

        # Stop: a checkpoint is saved and the state says so.
        page.locator("#stop-training").click()
        expect(page.locator("#train-status")).to_contain_text("stopped", timeout=120_000)
        run_dir = next(p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists())
        status = runs.read_status(run_dir)
        assert status["state"] == "stopped" and status["step"] < status["max_steps"], status
        assert runs.last_checkpoint(run_dir) is not None

        # Runs: the run is listed with its state.
        page.get_by_role("tab", name="Runs").click()
        page.locator("#runs-refresh").click()
        expect(page.locator("#runs-table")).to_contain_text(run_dir.name)
        expect(page.locator("#runs-table")).to_contain_text("stopped")
        page.screenshot(path=str(ARTIFACTS / "5-runs.png"), full_page=True)

        # 5 · Chat: the stopped run's adapter against the base model, side by side.
        page.get_by_role("tab", name="5 · Chat").click()
        page.locator("#chat-refresh").click()
        expect(page.locator("#chat-run input")).to_have_value(run_dir.name, timeout=30_000)
        page.locator("#chat-prompt textarea").fill("A shop has 103 books and gets 146 more. How many now?")
        page.locator("#chat-send").click()
        # The demo preset trains every weight: the badges name the folder each side's weights came from.
        expect(page.locator("#chat-left-badge")).to_contain_text("✓ base model · weights from demo-model (checked", timeout=180_000)
        expect(page.locator("#chat-right-badge")).to_contain_text(f"✓ tuned · weights from {run_dir.name}/model (checked", timeout=180_000)
        for pane in ("#chat-left", "#chat-right"):  # the question and a reply in each pane
            expect(page.locator(f"{pane} .message-row")).to_have_count(2, timeout=60_000)
            expect(page.locator(pane)).to_contain_text("How many now?")
        page.screenshot(path=str(ARTIFACTS / "6-chat.png"), full_page=True)

        # 6 · Evaluate: base and the run on held-out prompts, with the chart.
        page.get_by_role("tab", name="6 · Evaluate").click()
        page.locator("#eval-refresh").click()
        expect(page.locator("#eval-run input")).to_have_value(run_dir.name, timeout=30_000)
        limit = page.locator("#eval-limit input")
        limit.fill("20")
        limit.press("Tab")
        page.locator("#eval-start").click()
        expect(page.locator("#eval-summary")).to_contain_text("20 held-out prompts", timeout=300_000)
        expect(page.locator("#eval-table")).to_contain_text("base model")
        chart = page.locator("#eval-chart")
        expect(chart.locator(".vega-embed").first).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1500)
        assert coloured_pixels(chart.screenshot(path=str(ARTIFACTS / "eval-chart.png"))) > 50
        page.screenshot(path=str(ARTIFACTS / "7-evaluate.png"), full_page=True)
        assert (run_dir / "eval.json").is_file()

    outside = sorted({u for u in requests if urlparse(u).scheme in ("http", "https", "ws", "wss")
                      and urlparse(u).hostname not in ("127.0.0.1", "localhost")})
    assert outside == [], f"the page made requests beyond this machine: {outside[:10]}"
    assert len(requests) > 10  # the log really recorded the page's traffic

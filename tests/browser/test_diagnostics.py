"""Know before you train, and while you train, in a real browser (Playwright driving Debian's Chromium, 1400 px wide).

On the bundled demo: scan the data and train on the filtered file, estimate the time before Start, see a health alert
appear while the run trains (completions cut at a tiny length limit), then compare that run with a second one side by
side in the Runs tab. Screenshots go to test-artifacts/browser/diagnostics-*.png.
"""

from __future__ import annotations

from helpers.browser import ARTIFACTS, BROWSER_MARKS, coloured_pixels, drawn_steps, open_tab, opened_page

from rloo_studio import runs
from rloo_studio.runs import alerts

pytestmark = BROWSER_MARKS

SCANNED = 8
# The length-limit alert is raised once completions were cut for LENGTH_STEPS steps in a row: one step more.
FIRST_STEPS = alerts.LENGTH_STEPS + 1


def fill(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input")
    box.fill(str(value))
    box.press("Tab")


def test_scan_estimate_alert_and_compare_in_a_browser(runs_dir):
    from playwright.sync_api import expect

    with opened_page(runs_dir) as page:

        # Scan: a few prompts of the demo, their buckets, then the filtered file becomes the Data tab's.
        open_tab(page, "3 · Rewards")
        fill(page, "scan-limit", SCANNED)
        page.locator("#scan-run").click()
        expect(page.locator("#scan-status")).to_contain_text(f"Scanned {SCANNED} of 2000 training prompts", timeout=300_000)
        expect(page.locator("#scan-chart .vega-embed").first).to_be_visible(timeout=30_000)
        page.locator("#scan-use").click()
        expect(page.locator("#scan-use-status")).to_contain_text("The Data tab now trains on", timeout=60_000)
        filtered = page.locator("#scan-use-status code").first.inner_text()
        page.screenshot(path=str(ARTIFACTS / "diagnostics-scan.png"), full_page=True)
        open_tab(page, "2 · Data")
        expect(page.locator("#data-path input, #data-path textarea").first).to_have_value(filtered)

        # Time before Start, then a run whose completions are cut at 4 tokens: the length-limit alert shows while it trains.
        open_tab(page, "4 · Train")
        fill(page, "rloo-per-device-train-batch-size", 16)
        fill(page, "rloo-max-steps", FIRST_STEPS)
        fill(page, "rloo-max-completion-length", 4)
        page.locator("#estimate-time").click()
        estimate = page.locator("#time-estimate")
        expect(estimate).to_contain_text("Measured:", timeout=300_000)
        expect(estimate).to_contain_text("s per step")
        expect(estimate).to_contain_text(f"for {FIRST_STEPS} steps")
        estimate.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "diagnostics-estimate.png"), full_page=True)
        page.locator("#start-training").click()
        expect(page.locator("#train-alerts")).to_contain_text("Completions hit the length limit", timeout=300_000)
        page.locator("#train-alerts").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "diagnostics-alert.png"), full_page=False)
        expect(page.locator("#train-status")).to_contain_text("finished", timeout=300_000)
        first = next(p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists())
        assert filtered in (first / runs.CONFIG_FILE).read_text()  # the run trained on the filtered file

        # A second run with another learning rate and the usual length.
        fill(page, "rloo-max-completion-length", 16)
        fill(page, "rloo-max-steps", 2)
        fill(page, "rloo-learning-rate", 0.0005)
        page.locator("#start-training").click()
        page.wait_for_function("document.querySelector('#train-status')?.innerText.includes('finished') && "
                               f"!document.querySelector('#train-status')?.innerText.includes('{first.name}')", timeout=300_000)
        second = next(p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists() and p != first)
        # The finished run's chart holds its last step: Gradio drew a chart whose settings changed (here its steps) with
        # the data it had before, one update behind, and a finished run sends no more updates.
        page.wait_for_timeout(1500)
        assert drawn_steps(page, "reward-plot") == ["1", "2"], drawn_steps(page, "reward-plot")

        # Runs: the alert on the open run, and the two runs side by side.
        open_tab(page, "Runs")
        page.locator("#runs-refresh").click()
        picker = page.locator("#run-picker input")
        picker.click()
        picker.fill(first.name)
        page.get_by_role("option", name=first.name).click()
        expect(page.locator("#run-detail-alerts")).to_contain_text("Completions hit the length limit", timeout=30_000)
        page.wait_for_timeout(1500)
        assert drawn_steps(page, "run-detail-plot") == [str(s) for s in range(1, FIRST_STEPS + 1)]
        picker.click()
        picker.fill(second.name)
        page.get_by_role("option", name=second.name).click()
        expect(page.locator("#run-detail-status")).to_contain_text(second.name, timeout=30_000)
        page.wait_for_timeout(1500)
        assert drawn_steps(page, "run-detail-plot") == ["1", "2"], drawn_steps(page, "run-detail-plot")  # not the first run's
        page.locator("#compare-runs").get_by_text("Compare runs side by side").click()
        pick = page.locator("#compare-pick input")
        for run in (first, second):
            pick.click()
            page.get_by_role("option", name=run.name).click()
        expect(page.locator("#compare-note")).to_contain_text("settings differ", timeout=30_000)
        expect(page.locator("#compare-config")).to_contain_text("Learning rate")  # the page's label, not the config key
        chart = page.locator("#compare-plot")
        expect(chart.locator(".vega-embed").first).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1500)
        chart.scroll_into_view_if_needed()
        assert coloured_pixels(chart.screenshot(path=str(ARTIFACTS / "diagnostics-compare-chart.png"))) > 100
        page.screenshot(path=str(ARTIFACTS / "diagnostics-compare.png"), full_page=True)

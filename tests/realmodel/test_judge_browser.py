"""A rubric in words, checked in a real browser: on the bundled demo, the Rewards tab's judge section is ticked, a
template rubric picked and the judge pointed at the OpenAI-compatible test server (tests/realmodel/judge_server.py,
backed by SmolLM2-135M-Instruct); pasted completions are previewed, and the page shows the judge's score column, its
own words (the server's very replies), the advantages, the judge's agreement with numeric_answer and the hack-probe
verdict. Screenshot: test-artifacts/browser/judge-preview.png."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))  # the browser tests' setup

from test_app_judge_real import ANSWER, JUDGE, PASTED, PROMPT, judged_completion, requests  # noqa: E402
from test_first_run import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, pytestmark  # noqa: E402,F401 - same browser, same skip rule

from apphelpers import page_url, served_app  # noqa: E402

from rloo_studio.ui import text  # noqa: E402
from rloo_studio.ui.rewards_tab import REASON_SUFFIX  # noqa: E402


def test_a_rubric_previewed_in_the_browser_shows_scores_words_advantages_agreement_and_probes(runs_dir, judge_server):
    from playwright.sync_api import expect, sync_playwright

    server_url, log = judge_server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with served_app(runs_dir) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(60_000)
        page.goto(page_url(url))
        expect(page.locator("#model-name input")).to_have_value("demo", timeout=120_000)
        page.get_by_role("tab", name="3 · Rewards").click()

        # The judge section: ticked, a template rubric, the test server by its URL and model name.
        page.locator("#judge-use").get_by_label(text.JUDGE_USE).check()
        page.locator("#judge-rubric-template input").click()
        page.get_by_role("option", name="correct_vs_reference").click()
        expect(page.locator("#judge-rubric textarea")).not_to_have_value("", timeout=30_000)
        expect(page.locator("#judge-limits")).to_contain_text("Limits of correct_vs_reference", timeout=30_000)
        page.locator("#judge-source").get_by_label(text.JUDGE_SERVER_CHOICE).check()
        page.locator("#judge-url").get_by_role("textbox").fill(server_url)
        page.locator("#judge-server-model").get_by_role("textbox").fill("smollm2")

        # A typed prompt, its answer and pasted completions, scored instead of sampled.
        page.locator("#preview-prompt").get_by_role("textbox").fill(PROMPT)
        page.locator("#preview-answer").get_by_role("textbox").fill(ANSWER)
        page.locator("#preview-pasted").get_by_role("textbox").fill("\n".join(PASTED))
        page.locator("#preview-run").click()
        expect(page.locator("#preview-status")).to_contain_text(f"Scored {len(PASTED)} completions", timeout=600_000)

        table = page.locator("#preview-table")
        for header in (JUDGE, JUDGE + REASON_SUFFIX, "numeric_answer", "advantage"):
            expect(table.get_by_role("columnheader", name=header, exact=True)).to_have_count(1, timeout=30_000)
        # The table as the page shows it: one row per pasted completion, in the order pasted.
        headers = [" ".join(h.split()) for h in table.get_by_role("columnheader").all_inner_texts()]
        score, said, advantage = (headers.index(h) for h in (JUDGE, JUDGE + REASON_SUFFIX, "advantage"))
        rows = [[table.locator(f"[data-testid=cell-{i}-{j}]").inner_text().strip() for j in range(advantage + 1)]
                for i in range(len(PASTED))]
        assert said == score + 1, headers  # the judge's words beside its score
        # The judge's own words: what the server replied about each completion, in that completion's row.
        replies = {judged_completion(r): r["reply"].strip() for r in requests(log)}
        for row, completion in zip(rows, PASTED):
            assert replies.get(completion) and replies[completion] in row[said], (row[said], replies.get(completion))
            assert row[score] or "not scored:" in row[said], row
        assert abs(sum(float(row[advantage]) for row in rows)) < 0.01, rows  # leave-one-out advantages of one prompt
        findings = page.locator("#preview-findings")
        expect(findings).to_contain_text(re.compile(rf"Agreement: judge {JUDGE} (agrees|disagrees) with numeric_answer: "
                                                    rf"r = -?\d\.\d\d over \d completions"), timeout=30_000)
        expect(findings).to_contain_text(re.compile(r"Hack probes?:"), timeout=30_000)
        table.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "judge-preview.png"), full_page=True)
        browser.close()

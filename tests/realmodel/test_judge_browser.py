"""A rubric in words, checked in a real browser: on the bundled demo, the Rewards tab's judge section is ticked, a
template rubric picked and the judge pointed at the OpenAI-compatible test server (tests/realmodel/judge_server.py,
backed by SmolLM2-135M-Instruct); pasted completions are previewed, and the page shows the judge's score column, its
own words (the server's very replies), the advantages, the judge's agreement with numeric_answer and the hack-probe
verdict. Screenshot: test-artifacts/browser/judge-preview.png."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from helpers.browser import ARTIFACTS, BROWSER_MARKS, fill_cell, open_tab, opened_page
from test_app_judge_real import ANSWER, JUDGE, PASTED, PROMPT, judged_completion, requests

from rloo_studio.rewards.judge import RUBRICS, judged_text
from rloo_studio.ui import text
from rloo_studio.ui.judge_panel import FIRST_RUBRIC, OWN_RUBRIC
from rloo_studio.ui.rewards_tab import REASON_SUFFIX

pytestmark = BROWSER_MARKS

# Records, at every change inside the element `selector` (its loading overlay shown or hidden, its value set), whether
# a person could click its input there: the input is enabled and is what lies at its centre (elementFromPoint).
# `window.outOfReach` lists what was in the way each time it was not.
WATCH_REACH = """(selector) => {
  const block = document.querySelector(selector);
  window.outOfReach = [];
  const look = () => {
    const input = block.querySelector('input');
    const box = input.getBoundingClientRect();
    const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    if (input.disabled || !(top === input || input.contains(top)))
      window.outOfReach.push(input.disabled ? 'disabled' : (top ? top.tagName + '.' + (top.className.baseVal ?? top.className) : 'nothing'));
  };
  new MutationObserver(look).observe(block, {subtree: true, childList: true, attributes: true, characterData: true});
}"""


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    """One served app and page for both tests (each opened its own: ~15 s of the file on a busy machine, and the second
    app's preview and training started its children anew). The second test sets every field it relies on."""
    runs_dir = tmp_path_factory.mktemp("judge-browser") / "runs"
    with opened_page(runs_dir) as page:
        yield SimpleNamespace(page=page, runs_dir=runs_dir)


def test_a_rubric_previewed_in_the_browser_shows_scores_words_advantages_agreement_and_probes(studio, judge_server):
    from playwright.sync_api import expect

    server_url, log = judge_server
    page = studio.page
    open_tab(page, "3 · Rewards")

    # The judge section: ticked, a template rubric, the test server by its URL and model name. The tick fills in the
    # first template, and the template menu stays within reach throughout: not disabled, and not covered (by a
    # loading overlay while the server answers) at any moment until the template's rubric is filled in.
    menu = page.locator("#judge-rubric-template")
    menu.scroll_into_view_if_needed()
    page.evaluate(WATCH_REACH, "#judge-rubric-template")
    page.locator("#judge-use").get_by_label(text.JUDGE_USE).check()
    expect(page.locator("#judge-rubric textarea")).to_have_value(RUBRICS[FIRST_RUBRIC].text, timeout=60_000)
    assert page.evaluate("() => window.outOfReach") == [], "the template menu was out of reach after the tick"
    expect(menu.locator("input")).to_have_value(FIRST_RUBRIC)
    menu.locator("input").click()
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
        reply = replies.get(judged_text(completion))  # the judge is shown the answer after </think>, not the thinking
        assert reply and reply in row[said], (row[said], reply)
        assert row[score] or "not scored:" in row[said], row
    assert abs(sum(float(row[advantage]) for row in rows)) < 0.01, rows  # leave-one-out advantages of one prompt
    findings = page.locator("#preview-findings")
    expect(findings).to_contain_text(re.compile(rf"Agreement: judge {JUDGE} (agrees|disagrees) with numeric_answer: "
                                                rf"r = -?\d\.\d\d over \d completions"), timeout=30_000)
    expect(findings).to_contain_text(re.compile(r"Hack probes?:"), timeout=30_000)
    table.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "judge-preview.png"), full_page=True)


RUBRIC = "The answer ends with the correct result of the sum. A wrong or missing result scores the lowest."
PINS = [["What is 2 + 2?", "<think>2+2</think>4", "4", 0.0, 200.0],
        ["What is 5 + 6?", "<think>5+6</think>I am not sure.", "11", 0.0, 200.0]]


def _fill(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    box.fill(str(value))
    box.press("Tab")


def test_a_rubric_written_in_the_page_is_previewed_on_samples_pinned_and_trained_with(studio, judge_server):
    """The judge's whole path in the browser: a rubric in the person's words, previewed on completions the demo model
    samples, two pinned examples judged, a short run trained with the judge, whose metrics log it like any reward and
    whose page says the judge's calls per step and its share of the training time."""
    from playwright.sync_api import expect

    from rloo_studio import runs
    from rloo_studio.rewards.judge import SECONDS_METRIC

    server_url, log = judge_server
    asked_before = len(requests(log))
    page, runs_dir = studio.page, studio.runs_dir

    # Small steps: k = 4 completions of 1 prompt a step, 2 steps (each completion is a judge call on the CPU).
    open_tab(page, "4 · Train")
    for elem_id, value in (("rloo-num-generations", 4), ("rloo-per-device-train-batch-size", 4), ("rloo-max-steps", 2)):
        _fill(page, elem_id, value)

    # The rubric in the person's own words; the judge is the test server. Scale 0-100: this tiny judge often
    # answers above 10 about the tiny policy's noise, which a 0-10 scale rightly refuses.
    open_tab(page, "3 · Rewards")
    page.locator("#judge-use").get_by_label(text.JUDGE_USE).check()
    # The tick fills in the first template (a judge that works as it is: the first test's check, on this page already
    # ticked when that test ran first); the person then writes their own.
    expect(page.locator("#judge-rubric textarea")).not_to_have_value("", timeout=30_000)
    _fill(page, "judge-rubric", RUBRIC)
    expect(page.locator("#judge-rubric textarea")).to_have_value(RUBRIC, timeout=30_000)
    # Ticked again, a written rubric and the chosen menu entry are kept: the tick chooses only when nothing is written.
    menu = page.locator("#judge-rubric-template input")
    menu.click()
    page.get_by_role("option", name=OWN_RUBRIC).click()
    expect(menu).to_have_value(OWN_RUBRIC)
    use = page.locator("#judge-use").get_by_label(text.JUDGE_USE)
    use.uncheck()
    use.check()
    expect(menu).to_have_value(OWN_RUBRIC)
    expect(page.locator("#judge-rubric textarea")).to_have_value(RUBRIC)
    page.locator("#judge-source").get_by_label(text.JUDGE_SERVER_CHOICE).check()
    _fill(page, "judge-url", server_url)
    _fill(page, "judge-server-model", "smollm2")
    _fill(page, "judge-high", 100)

    # Previewed on sampled completions: one prompt from the data, k = 4 answers the demo model writes (no typed prompt
    # and no pasted completions: the first test leaves them in the page).
    for elem_id in ("preview-prompt", "preview-answer", "preview-pasted"):
        page.locator(f"#{elem_id}").get_by_role("textbox").fill("")
    page.locator("#preview-prompts input[type=number]").fill("1")
    page.locator("#preview-prompts input[type=number]").press("Tab")
    page.locator("#preview-run").click()
    expect(page.locator("#preview-status")).to_contain_text("Scored 4 completions (4 per prompt sampled", timeout=600_000)
    table = page.locator("#preview-table")
    headers = [" ".join(h.split()) for h in table.get_by_role("columnheader").all_inner_texts()]
    assert JUDGE in headers and JUDGE + REASON_SUFFIX in headers and "advantage" in headers, headers
    said, advantage = headers.index(JUDGE + REASON_SUFFIX), headers.index("advantage")
    rows = [[table.locator(f"[data-testid=cell-{i}-{j}]").inner_text().strip() for j in range(advantage + 1)] for i in range(4)]
    sampled = [r for r in requests(log)[asked_before:] if RUBRIC in r["messages"][0]["content"]]
    # Each different sampled completion put to the judge once (the same completion twice is asked once).
    shown = [h for h in ("thinking", "reply") if h in headers]
    distinct = {tuple(row[headers.index(h)] for h in shown) for row in rows}
    assert len(sampled) == len(distinct), (len(sampled), distinct)
    for row in rows:  # the judge's own words in each row
        assert any(r["reply"].strip() and r["reply"].strip() in row[said] for r in sampled), row[said]
    assert abs(sum(float(row[advantage]) for row in rows)) < 0.01, rows
    findings = page.locator("#preview-findings")
    expect(findings).to_contain_text(re.compile(r"Hack probes?:"), timeout=30_000)
    expect(findings).to_contain_text(f"Agreement: judge {JUDGE}", timeout=30_000)

    # Two pinned examples: the starting one replaced and one added, both judged.
    for i, pin in enumerate(PINS):
        if i:
            page.locator("#pinned-add").click()
            # (queued behind the judged check of the first row's edits on a busy machine)
            expect(page.locator(f"#pinned [data-testid=cell-{i}-0]")).to_be_visible(timeout=120_000)
        for column, value in enumerate(pin):
            fill_cell(page, "#pinned", i, column, value)
    page.locator("#check-code").click()
    result = page.locator("#pinned-result")
    expect(result).to_contain_text("2/2 pinned examples pass", timeout=600_000)
    judged = {judged_completion(r) for r in requests(log)[asked_before:]}
    assert {judged_text(pin[1]) for pin in PINS} <= judged, "the pinned examples' answers were not put to the judge"

    # Trained with it: the Train tab prices the judge per step, the run logs it, the page shows its share of the time.
    open_tab(page, "4 · Train")
    expect(page.locator("#judge-cost")).to_contain_text("Judge calls per training step: 4 (", timeout=60_000)  # 4 new completions a step
    page.locator("#start-training").click()
    expect(page.locator("#train-status")).to_contain_text("finished", timeout=900_000)
    expect(page.locator("#start-problems")).to_have_text("", timeout=30_000)  # (read once Start has answered: it shows a timer till then)
    run_dir = next(p for p in runs_dir.iterdir() if (p / runs.STATUS_FILE).exists())
    metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    assert [m["step"] for m in metrics] == [1, 2], metrics
    for row in metrics:
        assert 0.0 <= row[f"rewards/{JUDGE}/mean"] <= 1.0 and row[SECONDS_METRIC.format(name=JUDGE)] > 0, row
    expect(page.locator("#train-status")).to_contain_text(re.compile(r"Judge: \d+ % of the training time"), timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "judge-trained.png"), full_page=True)

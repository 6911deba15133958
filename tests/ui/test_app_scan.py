"""*Scan the data* through the app's named endpoints: the scan samples in the app's inference worker and shows
its buckets, and *Use the filtered data* writes a new file and points the Data tab at it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.app import Form, connect, served_app
from rloo_studio.paths import DEMO_DATA_DIR
from rloo_studio.ui import text


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with served_app(tmp_path_factory.mktemp("scan-app") / "runs") as url:
        yield url


@pytest.mark.slow
def test_scan_then_use_the_filtered_data(served):
    app = connect(served)
    form = Form(app)  # the bundled demo, as the page opens on a CPU
    status, chart, examples = app.predict(8, *form.values, api_name="/scan_data")
    assert status.startswith("Scanned **8 of 2000** training prompts, 8 completions each"), status
    assert chart["columns"] == ["bucket", "prompts"]
    counts = {row[0]: row[1] for row in chart["data"]}
    assert set(counts) == {"always solved", "mixed", "never solved"} and sum(counts.values()) == 8
    scan_dir = Path(status.split("Saved in `")[1].split("`")[0])
    lines = [json.loads(line) for line in (scan_dir / "scan.jsonl").read_text().splitlines()]
    assert {b: sum(line["bucket"] == b for line in lines) for b in counts} == counts  # the chart shows the saved scan
    assert {row[0] for row in examples["data"]} == {b for b, n in counts.items() if n}  # examples from each bucket found
    # The band that keeps every prompt (the demo's totals lie in 0..1.3), so the filtered file is never empty by chance.
    message, kind, path, test_split, fraction = app.predict(text.SCAN_KEEP_BAND, 0, 1.3, api_name="/use_filtered_data")
    assert message.startswith(f"**The Data tab now trains on `{path}`**: 8 of the 8 scanned prompts"), message
    assert kind == text.SOURCE_CHOICES[1] and Path(path).parent == scan_dir
    assert len(Path(path).read_text().splitlines()) == 8
    assert test_split == str(scan_dir / "filtered.test.jsonl") and fraction == 0
    assert Path(test_split).read_text().splitlines() == (DEMO_DATA_DIR / "test.jsonl").read_text().splitlines()


def test_errors_in_the_pages_words(served):
    app = connect(served)
    form = Form(app)
    message = app.predict(text.SCAN_KEEP_MIXED, 0, 1, api_name="/use_filtered_data")[0]
    assert message == "Press **Scan the data** first: the filtered data keeps prompts the scan saw."
    status = app.predict(None, *form.values, api_name="/scan_data")[0]  # an emptied field (the page refuses below 0 itself)
    assert status.startswith("**Prompts to scan** must be 0")
    form[text.SOURCE] = text.SOURCE_CHOICES[1]
    form[text.LOCAL_PATH] = "/no/such/file.jsonl"
    status = app.predict(4, *form.values, api_name="/scan_data")[0]
    assert status.startswith("**Scan failed:**") and f"“{text.SOURCE}”: data file not found: /no/such/file.jsonl" in status, status

"""The Evaluate and Export tabs through the app's API, on a run with random (non-zero) adapters."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest
from helpers.app import connect, served_app

pytestmark = pytest.mark.slow

RUN_ID = "20260101-000000-compare"


@pytest.fixture(scope="module")
def compare_runs_dir(tmp_path_factory, adapter_run):
    runs_dir = tmp_path_factory.mktemp("app-compare") / "runs"
    adapter_run(runs_dir / RUN_ID)
    return runs_dir


def test_evaluate_all_checkpoints_fills_the_table_and_chart(compare_runs_dir):
    with served_app(compare_runs_dir) as url:
        client = connect(url)
        run_update, ckpt_update = client.predict(None, api_name="/eval_runs")
        assert run_update["value"] == RUN_ID
        assert [c[0] for c in ckpt_update["choices"]] == ["final", "all checkpoints", "checkpoint-1"]
        summary, chart, table, examples = client.predict(RUN_ID, "all checkpoints", 4, "test", "greedy", 4, 24, "", 6,
                                                                api_name="/evaluate")
        report = json.loads((compare_runs_dir / RUN_ID / "eval.json").read_text())
        assert report["n_prompts"] == 4 and [e["name"] for e in report["checkpoints"]] == ["checkpoint-1", "final"]
        assert report["decoding"]["max_new_tokens"]["base"] == 24  # the tab's base token budget reached the command
        assert report["decoding"]["max_new_tokens"]["tuned"] == 6  # and the tuned one, the tab's Token budget
        # Random adapters at 6 tokens never finish an answer: the verdict says so and offers 4 x 24 tokens.
        assert report["tuned"]["truncation_rate"] == 1.0 and report["verdict"]["limited"]
        main = summary.split("<details>")[0]
        assert "most answers were cut off by the token budget (tuned (final) 100 % at 6 tokens" in main
        assert "is better" not in main and "sign test" not in main and "pass@1" not in main
        assert "decoding: greedy (the most likely answer)" in main
        assert "larger token budget (e.g. 96)" in main  # the button that offers it is not in the API: tests/unit/test_eval_report.py
        assert all(row[3].startswith("[✂ cut off at 6 tokens] ") for row in examples["data"])
        table = table["value"]  # an update: the columns depend on what the run's rewards score
        rows = table["data"]
        assert [r[0] for r in rows] == ["base model", "checkpoint-1", "final"]
        assert [r[2] for r in rows] == [4, 4, 4] and rows[0][3] == 24  # n and the token budget on every row
        # Mean reward with its interval, or (every prompt scored the same) the words that say why it has none.
        assert rows[0][4].startswith(f"{report['base']['mean_reward']:.3f} [") or rows[0][4].endswith("(every one the same)")
        # The run's only reward scores the answer: no format rate column (nor chart line) for a format nothing scores.
        assert table["headers"] == ["model", "step", "n", "token budget", "mean reward [95 %]", "answer accuracy [95 %]",
                                    "cut off [95 %]", "wins", "ties", "losses", "vs base"]
        assert rows[2][7] + rows[2][8] + rows[2][9] == 4  # wins + ties + losses over the 4 prompts
        assert rows[2][10].endswith("mostly cut off")
        # 4 prompts (halves of 2) can never show a difference: no best checkpoint, and the summary says why.
        assert "n = 4 held-out prompts" in summary and "token budget: base 24" in summary
        assert "not distinguishable at this size" in summary and "Best checkpoint" not in summary and report["best"] is None
        points = chart["value"]["data"]  # an update (data and title); long format: step, metric, value — base at step 0, then each checkpoint's step
        metrics = {p[1] for p in points}
        assert {"mean reward", "answer accuracy", "answer accuracy · 95 % low", "answer accuracy · 95 % high"} <= metrics
        # A mean reward's bounds are drawn where it has an interval (none where every prompt scored the same).
        spread = any(s["intervals"]["mean_reward"].get("low") is not None
                     for s in [report["base"]] + [c["summary"] for c in report["checkpoints"]])
        assert ({"mean reward · 95 % low", "mean reward · 95 % high"} <= metrics) == spread
        assert not any(m.startswith("format rate") for m in metrics) and "format rate" not in main
        assert {p[0] for p in points} == {"0", "1", "2"} and chart["sort"] == ["0", "1", "2"]  # whole steps on the axis, in order
        assert [p[2] for p in points if p[0] == "0" and p[1] == "mean reward"] == [pytest.approx(report["base"]["mean_reward"])]

        # Reopening the run shows the saved evaluation without running it again.
        shown = client.predict(RUN_ID, api_name="/eval_show")
        assert shown[3]["value"]["data"] == rows


def test_export_adapter_into_exports_and_refuse_paths_that_escape(compare_runs_dir):
    run_dir = compare_runs_dir / RUN_ID
    with served_app(compare_runs_dir) as url:
        client = connect(url)
        client.predict(None, api_name="/export_runs")
        result, existing = client.predict(RUN_ID, "final", "adapter", "", api_name="/export")
        assert "Exported `adapter`" in result and "adapter_model.safetensors" in result and "README.md" in result
        assert (run_dir / "exports" / "adapter" / "adapter_config.json").is_file()
        assert ["adapter"] == [r[0] for r in existing["data"]]

        again, _ = client.predict(RUN_ID, "final", "adapter", "", api_name="/export")
        assert "already exists and is not empty" in again  # never overwritten

        unique = f"escaped-{os.getpid()}-{time.time_ns()}"
        absolute = Path(tempfile.gettempdir()) / unique
        for name in (f"../../{unique}", str(absolute), "a/b", "..", "~root"):
            refused, _ = client.predict(RUN_ID, "final", "adapter", name, api_name="/export")
            assert "is not allowed" in refused, name
        (run_dir / "exports" / "link").symlink_to(compare_runs_dir.parent)
        refused, _ = client.predict(RUN_ID, "final", "adapter", "link", api_name="/export")
        assert "leads outside" in refused
        # Where each refused name would really have written: exports/../../NAME is the runs folder, the
        # absolute name lies in the system temp folder, ".." is the run folder, the link is the runs folder's parent.
        assert not (compare_runs_dir / unique).exists() and not absolute.exists()
        assert not (run_dir / "adapter_config.json").exists() and not (run_dir / "exports" / "a").exists()
        assert not any(compare_runs_dir.parent.glob("adapter_config.json"))

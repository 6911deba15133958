"""Runs side by side in the Runs tab, through the app's API: two really trained runs overlaid per curve, the settings
that differ, and their evaluations (one evaluated by `rloo-studio eval`, one not)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from helpers.app import connect, served_app
from helpers import only_run_dir, run_cli

from rloo_studio import runs
from rloo_studio.ui.text import label

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, trained_tiny_folder):
    """runs/ with the session's tiny run (4 steps, β 0, evaluated on 4 prompts) and a second run of 2 steps with β 0.02."""
    folder = tmp_path_factory.mktemp("compare-runs")
    shutil.copytree(trained_tiny_folder, folder / "ws")
    first = only_run_dir(folder / "ws" / "runs")
    evaluated = run_cli("eval", first, "--limit", "4", cwd=folder)
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    config = yaml.safe_load((folder / "ws" / "config.yaml").read_text())
    config["rloo"].update(beta=0.02, learning_rate=1e-3, max_steps=2)
    config["output"] = {"run_name": "beta"}
    (folder / "ws" / "second.yaml").write_text(yaml.safe_dump(config))
    trained = run_cli("train", "second.yaml", cwd=folder / "ws")
    assert trained.returncode == 0, trained.stderr[-3000:]
    second = next(p for p in (folder / "ws" / "runs").iterdir() if p != first)
    return folder / "ws" / "runs", first.name, second.name


def series_points(plot: dict) -> dict[str, list[tuple[int, float]]]:
    """{series: [(step, value), …]} from a LinePlot update (long format: step, value, series; a short run's steps are
    the axis's labels, whole numbers as text)."""
    out: dict[str, list] = {}
    for step, value, series in plot["value"]["data"]:
        out.setdefault(series, []).append((int(step), value))
    return out


def logged(run_dir, key: str) -> list[tuple[int, float]]:
    return [(r["step"], pytest.approx(r[key])) for r in runs.read_jsonl(run_dir / runs.METRICS_FILE) if isinstance(r.get(key), (int, float))]


def test_two_runs_overlay_with_their_differences_and_evaluations(two_runs):
    runs_dir, first, second = two_runs
    with served_app(runs_dir) as url:
        client = connect(url)
        note, plot, config, evals = client.predict([first, second], "Reward (total)", api_name="/compare_runs")
        points = series_points(plot)
        assert set(points) == {first, second}
        assert points[first] == logged(runs_dir / first, "reward") and len(points[first]) == 4
        assert points[second] == logged(runs_dir / second, "reward") and len(points[second]) == 2

        differ = {row[0]: row[1:] for row in config["data"]}
        assert config["headers"] == ["setting", first, second]
        # Named by the page's labels, not config keys.
        assert differ[label("rloo.beta")] == ["0.0", "0.02"] and differ[label("rloo.max_steps")] == ["4", "2"]
        assert label("rloo.num_generations") not in differ and label("output.runs_dir") not in differ  # same in both: not listed
        assert f"{len(differ)} settings differ." == note

        report = json.loads((runs_dir / first / runs.EVAL_FILE).read_text())
        rows = {row[0]: row for row in evals["data"]}
        assert rows[first][1] == "final" and rows[first][2].startswith(f"{report['tuned']['mean_reward']:.3f} [")
        assert rows[first][2].endswith("(n=4)")
        assert rows[second][1].startswith("not evaluated")

        # KL is logged only with β > 0: the first run is named as having none, not drawn as a flat line.
        note, plot, _, _ = client.predict([first, second], "KL to the start model", api_name="/compare_runs")
        assert set(series_points(plot)) == {second} and f"`{first}`" in note and "KL penalty" in note

        _, plot, _, _ = client.predict([first, second], "Reward per function", api_name="/compare_runs")
        assert f"{second} · numeric_answer" in series_points(plot) and f"{first} · short_answer" in series_points(plot)
        assert series_points(plot)[f"{first} · numeric_answer"] == logged(runs_dir / first, "rewards/numeric_answer/mean")

        note, plot, config, _ = client.predict([first], "Reward (total)", api_name="/compare_runs")
        assert note.startswith("Pick two to 4 runs") and config["data"] == []
        note, _, _, _ = client.predict([first, "no-such-run"], "Reward (total)", api_name="/compare_runs")
        assert note.startswith("Pick two to 4 runs") and "No run named `no-such-run`" in note

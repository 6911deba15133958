"""Dynamic sampling in a real training run on the tiny model: prompt groups tied on reward are dropped and new prompts
generated in their place, and metrics.jsonl shows per step the share dropped and the batches generated."""

from __future__ import annotations

import pytest
from helpers import only_run_dir, run_cli

from rloo_studio import runs
from rloo_studio.engine.dynamic_sampling import DROPPED_KEY, GENERATIONS_KEY, TIED_KEPT_KEY

pytestmark = pytest.mark.slow

# Prompts with an even answer: every completion scores 0 (a tied group); odd: the completion's length, which differs.
HALF_TIED = '''
def half_tied(completions, answer, **kwargs):
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [0.0 if int(a) % 2 == 0 else float(len(t)) for t, a in zip(texts, answer)]
'''


def test_tied_groups_are_dropped_and_refilled_in_training(workspace):
    (workspace.path / "rewards.py").write_text(HALF_TIED)
    config = workspace.write_config(rewards=[{"file": "rewards.py"}], dynamic_sampling={"enabled": True, "max_extra_generations": 3},
                                    rloo={"max_steps": 3, "save_steps": 3, "max_completion_length": 8})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    assert runs.read_status(run_dir)["state"] == "finished"
    metrics = [m for m in runs.read_jsonl(run_dir / runs.METRICS_FILE) if DROPPED_KEY in m]
    assert len(metrics) == 3
    # The tied share of what was generated (the alerts' measure) is what was dropped, less what the cap let back in.
    for m in metrics:
        assert 0.0 <= m[DROPPED_KEY] < 1.0 and m[GENERATIONS_KEY] >= 1 and 0.0 <= m[TIED_KEPT_KEY] <= 1.0
    assert any(m[DROPPED_KEY] > 0 and m[GENERATIONS_KEY] >= 2 for m in metrics), metrics
    # The samples table: a group left out was shown as if trained on, under the step (an audit). Each generated batch's
    # rows are kept, those of a left-out group marked (tied, or informative but past a full batch), and the page says
    # they were not trained on.
    samples = runs.read_jsonl(run_dir / runs.SAMPLES_FILE)
    left_out = [s for s in samples if s.get("left_out")]
    assert left_out, samples
    groups: dict = {}
    for s in samples:
        groups.setdefault((s["step"], s.get("round", 0), s["group"]), []).append(s)
    for rows in groups.values():
        assert len({bool(s.get("left_out")) for s in rows}) == 1  # a whole group is left out or kept
        if rows[0].get("left_out") == "tied":
            assert len({s["total"] for s in rows}) == 1, rows
        elif rows[0].get("left_out"):  # an informative group generated after the batch was full
            assert rows[0]["left_out"] == "extra" and len({s["total"] for s in rows}) > 1, rows
    assert any(s["left_out"] == "tied" for s in left_out), left_out
    from rloo_studio.ui.run_view import samples_rows
    from rloo_studio.workers import jobs

    shown = samples_rows(jobs.view(run_dir, samples_tail=len(samples)), limit=len(samples))
    marked = [row for row in shown if "not trained on" in row[3]]
    assert len(marked) == len(left_out), (len(marked), len(left_out))


def test_no_signal_switches_dynamic_sampling_on_when_the_config_asks(workspace):
    """A constant reward: every group is tied, the alert is raised at step 3 and switches dynamic sampling on; from step 4
    each generation makes the extra batch the cap allows and, finding nothing but tied groups, trains on them (said)."""
    (workspace.path / "rewards.py").write_text("def constant(completions, **kwargs):\n    return [1.0 for _ in completions]\n")
    config = workspace.write_config(rewards=[{"file": "rewards.py"}], alerts={"on_no_signal": "dynamic_sampling"},
                                    dynamic_sampling={"max_extra_generations": 1},
                                    rloo={"max_steps": 5, "save_steps": 5, "max_completion_length": 8})
    result = run_cli("train", config, cwd=workspace.path)
    assert result.returncode == 0, result.stderr[-4000:]
    run_dir = only_run_dir(workspace.path / "runs")
    assert runs.read_status(run_dir)["state"] == "finished"
    assert "switched on dynamic sampling at step 3" in result.stdout
    metrics = runs.read_jsonl(run_dir / runs.METRICS_FILE)
    assert [m["step"] for m in metrics if DROPPED_KEY in m] == [4, 5]
    assert all(m[GENERATIONS_KEY] == 2.0 and m[TIED_KEPT_KEY] == 1.0 and m[DROPPED_KEY] == 0.5
               for m in metrics if DROPPED_KEY in m)

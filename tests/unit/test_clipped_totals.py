"""reward_clip_range where totals and advantages are shown: TRL clamps each weighted total before the KL penalty and
the leave-one-out baseline, so samples.jsonl and the reward preview show the clipped totals and the advantages
they give."""

from __future__ import annotations

from types import SimpleNamespace

from rloo_studio.workers import scorer
from rloo_studio.rewards.runtime import SampleRecorder
from rloo_studio.rewards.scoring import clipped_totals, leave_one_out_advantages

LENGTH = "def length(completions, **kwargs):\n    return [float(len(c)) for c in completions]\n"


def test_samples_record_the_clipped_total_trl_trains_on_and_the_one_before():
    written = []
    recorder = SampleRecorder(["r"], [0.5], num_generations=2, groups_per_step=1, write=written.append,
                              clip_range=[-1.0, 1.0])
    kwargs = {"prompts": ["p", "p"], "completions": ["a", "b"], "trainer_state": SimpleNamespace(global_step=0)}
    recorder.on_values("r", kwargs, [4.0, -0.4])
    recorder.on_trained([1.2, -1.2], None)
    [rows] = written
    assert [r["total"] for r in rows] == [1.0, -0.2]
    assert [r["total_before_clip"] for r in rows] == [2.0, -0.2]
    # What TRL trained on is the leave-one-out of the clipped totals: 1 - (-0.2) = 1.2.
    assert leave_one_out_advantages([r["total"] for r in rows], 2) == [r["advantage"] for r in rows]


def test_the_preview_clips_the_totals_and_its_advantages_follow():
    request = {"groups": [{"prompt": "p", "row": {}, "completions": ["a" * 3, "a" * 1, "a" * 2]}], "num_generations": 3,
               "source": LENGTH, "rewards": [{"file": "rewards.py", "weight": 0.5}], "reward_clip_range": [0.0, 1.0],
               "probes": False}
    result = scorer.score(request)
    # 0.5 x length: 1.5, 0.5, 1.0, clipped to 1.0, 0.5, 1.0, as training goes on with them.
    assert [r["total"] for r in result["rows"]] == [1.0, 0.5, 1.0]
    assert [r["advantage"] for r in result["rows"]] == [0.25, -0.5, 0.25]
    assert [r["baseline"] for r in result["rows"]] == [0.75, 1.0, 0.75]
    assert "clipped to [0, 1]" in result["advantage_note"]
    assert clipped_totals([1.5, 0.5, None], None) == [1.5, 0.5, None]

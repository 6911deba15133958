"""benchmarks/trainer_parity.py's verdict: an argument the two backends' RLOOConfigs hold differently is named, per preset."""

from __future__ import annotations

import sys

from helpers import ROOT


def test_the_verdict_names_each_differing_argument(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.delitem(sys.modules, "trainer_parity", raising=False)
    import trainer_parity

    plain = {"optim": "adamw_torch_fused", "gradient_accumulation_steps": 1, "seed": 42}
    sides = {"transformers": {"presets": {"a": {"dtype": "bfloat16", "args": plain},
                                          "b": {"dtype": "bfloat16", "args": plain}}},
             "unsloth": {"presets": {"a": {"dtype": "bfloat16", "args": dict(plain)},
                                     "b": {"dtype": "bfloat16", "args": {**plain, "optim": "adamw_8bit",
                                                                         "gradient_accumulation_steps": 2}}}}}
    results, rows = trainer_parity.compare(sides)
    assert [r["differ"] for r in results] == [{}, {"optim": ["adamw_torch_fused", "adamw_8bit"],
                                                   "gradient_accumulation_steps": [1, 2]}]
    verdicts = [row[-1] for row in rows if row[1] == "verdict"]
    assert verdicts == ["same arguments", "2 argument(s) differ"]
    assert ["b", "optim", "adamw_torch_fused", "adamw_8bit", "  ← differs"] in rows

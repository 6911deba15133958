"""The TRL defaults a run passes to RLOOConfig explicitly (and the app shows when TRL is not imported) are TRL's own."""

from __future__ import annotations

import dataclasses

from rloo_studio.config import TRL_DEFAULTS


def test_the_pinned_defaults_are_the_installed_trls():
    import trl

    defaults = {f.name: f.default for f in dataclasses.fields(trl.RLOOConfig)}
    assert {key: defaults[key] for key in TRL_DEFAULTS} == TRL_DEFAULTS

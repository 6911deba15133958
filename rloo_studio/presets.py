"""The presets: the run configs under presets/*.yaml that people start from (no torch).

A preset opens with a comment: its first line names it and says what it is for
(`# cpu-demo — the bundled demo on a laptop CPU: ...`); the following comment lines say for
which hardware and how to run it. This module lists them with that description and loads them
as `RunConfig`s; the memory estimates for each preset live in `vram`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .config import RunConfig
from .errors import ConfigError
from .paths import PRESETS_DIR

DEFAULT_CPU_PRESET = "cpu-demo"


@dataclass
class Preset:
    name: str         # the file stem, e.g. "cpu-demo"
    title: str        # the first comment line after the name
    notes: str        # the rest of the opening comment block
    path: Path

    def load(self) -> RunConfig:
        return RunConfig.load(self.path)

    @property
    def tier_gb(self) -> float | None:
        """The GPU memory the preset is made for (`# Tier: 16 GB GPU`); None for CPU presets."""
        m = re.search(r"Tier:\s*(\d+(?:\.\d+)?)\s*GB", self.notes)
        return float(m.group(1)) if m else None


def _opening_comment(path: Path) -> list[str]:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return lines


def read_preset(path: Path) -> Preset:
    comment = _opening_comment(path)
    first = comment[0] if comment else path.stem
    # "cpu-demo — what it is for": keep what follows the dash.
    title = first.split("—", 1)[1].strip() if "—" in first else first
    return Preset(name=path.stem, title=title, notes="\n".join(comment[1:]).strip(), path=path)


def list_presets(presets_dir: Path = PRESETS_DIR) -> list[Preset]:
    """Every preset: the CPU demo first, then by GPU tier, then by name."""
    found = [read_preset(p) for p in sorted(presets_dir.glob("*.yaml"))]
    return sorted(found, key=lambda p: (p.name != DEFAULT_CPU_PRESET, p.tier_gb or 0, p.name))


def get_preset(name: str, presets_dir: Path = PRESETS_DIR) -> Preset:
    path = presets_dir / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(p.name for p in list_presets(presets_dir)) or "none"
        raise ConfigError([f"there is no preset named {name!r} (known: {known})"], "the preset choice")
    return read_preset(path)


# A card sold as "8 GB" reports a little less usable memory (7.6-7.8 GiB): accept tiers up to this factor above.
TIER_TOLERANCE = 1.08


def recommend(presets: list[Preset], gpu_gib: float | None) -> Preset | None:
    """The preset for the largest tier that fits `gpu_gib` (None = no GPU: the CPU demo)."""
    if not gpu_gib:
        return next((p for p in presets if p.tier_gb is None), None)
    fitting = [p for p in presets if p.tier_gb is not None and p.tier_gb <= gpu_gib * TIER_TOLERANCE]
    if not fitting:
        return next((p for p in presets if p.tier_gb is None), None)
    # The largest tier; among presets of one tier, the general one before a specialised variant (shorter name).
    return max(fitting, key=lambda p: (p.tier_gb, -len(p.name)))

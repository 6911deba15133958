"""Where the project's bundled files are: the project root and its demo model, demo data, presets and assets.

The one place that knows the package sits one folder below the project root; every module that needs a
bundled file takes its path from here. A leaf: it imports nothing from the package.
"""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
ASSETS_DIR = PROJECT_ROOT / "assets"
DEMO_MODEL_DIR = ASSETS_DIR / "demo-model"  # what `model.name_or_path: demo` means
DEMO_DATA_DIR = ASSETS_DIR / "demo-data"  # what `data.source: demo` means
PRESETS_DIR = PROJECT_ROOT / "presets"
DEMO_PRESET = PRESETS_DIR / "cpu-demo.yaml"  # what `rloo-studio train` without a config trains
BOOTSTRAP_SCRIPT = PROJECT_ROOT / "bootstrap.py"  # the installer, for hardware's install advice
# The opt-in environment with vLLM (`python launch.py --setup-fast-generation` makes it; bootstrap.py FAST_VENV_DIR).
FAST_VENV_DIR = PROJECT_ROOT / ".venv-fast"
FAST_PYTHON_ENV = "RLOO_STUDIO_FAST_PYTHON"  # another interpreter with vLLM, instead of the folder above


def fast_python() -> Path | None:
    """The interpreter of the environment that has vLLM, where one was set up; None where none was."""
    import os

    named = os.environ.get(FAST_PYTHON_ENV)
    if named:
        return Path(named) if Path(named).exists() else None
    for candidate in (FAST_VENV_DIR / "bin" / "python", FAST_VENV_DIR / "Scripts" / "python.exe"):
        if candidate.exists():
            return candidate
    return None

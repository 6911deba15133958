"""Helpers shared by the benchmark scripts: machine description, running the CLI, tables."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where results are written; tests point it at a temporary folder so they never read stale committed
# results nor overwrite them.
RESULTS = Path(os.environ.get("RLOO_BENCH_RESULTS") or ROOT / "benchmarks" / "results")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def cli(*args, cwd=ROOT, check=True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "rloo_studio.cli", *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if check and result.returncode != 0:
        sys.exit(f"rloo-studio {' '.join(map(str, args))} failed:\n{result.stderr[-3000:]}")
    return result


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def save(name: str, data: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def shown(path: Path) -> str:
    """A results path as printed: relative to the repository when it lies inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)

"""Does the fast-generation environment install in a clean virtualenv? Runs the installer `python launch.py
--setup-fast-generation` uses (bootstrap.install_fast_environment: vLLM and its torch from the default index, then this
project with torch held at vLLM's pin) into a new virtualenv in a temporary folder, then imports the stack there and
trains two steps of the demo on the CPU with it (vLLM off), and writes what was installed and the run's outcome to
benchmarks/results/fast_env_install.json.

    python benchmarks/fast_env_install.py             # needs the package index; downloads ~7 GB; 10-30 minutes
    python benchmarks/fast_env_install.py --keep DIR  # install into DIR and keep it (to try a run from it by hand)

The app offers this environment only with an NVIDIA GPU (bootstrap.plan_fast_generation); this script skips that check
on purpose, to show on any Linux x86_64 machine that the pins install together and import. Without a GPU nothing is
generated: vLLM's engine and Unsloth's GPU kernels need one, so "not yet measured on a GPU" stands until
benchmarks/gpu_check.sh has run there. pip reads no local configuration (PIP_CONFIG_FILE=/dev/null; no find-links or
extra index), so a local CPU-only torch file cannot stand in for the CUDA build a GPU machine gets.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bootstrap
from benchmarks._common import ROOT, machine, save, shown

# What the installed environment must import: the generation engine and its torch, and the training stack the worker
# starts with. Unsloth is imported apart: without a GPU it refuses to import by design (that refusal is recorded).
IMPORTS = ("torch", "torchvision", "vllm", "transformers", "trl", "peft", "accelerate", "rloo_studio.engine.fast_generation")
CHECK = r"""
import importlib, json, sys
found = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    found[name] = getattr(module, "__version__", "imported")
import torch
found["torch.version.cuda"] = torch.version.cuda
try:
    import unsloth
    found["unsloth"] = unsloth.__version__
except Exception as error:  # no GPU: Unsloth says so on import
    found["unsloth"] = f"refused to import here: {type(error).__name__}: {str(error)[:200]}"
print(json.dumps(found))
"""


def folder_gib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1024**3


def demo_run(python: Path) -> dict:
    """Two steps of the demo preset trained by the new environment's Python on this machine's CPU (vLLM off: it needs a
    GPU): the training stack at vLLM's torch trains as the app's own environment does."""
    with tempfile.TemporaryDirectory(prefix="rloo-fast-env-run-") as tmp:
        run_dir = Path(tmp) / "run"
        started = time.time()
        done = subprocess.run([str(python), "-m", "rloo_studio.cli", "train", str(ROOT / "presets" / "cpu-demo.yaml"),
                               "--run-dir", str(run_dir), "rloo.max_steps=2", "rloo.logging_steps=1", "rloo.save_steps=2",
                               "model.fast_generation=off"], check=False, capture_output=True, text=True, cwd=ROOT)
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()] \
            if (run_dir / "metrics.jsonl").exists() else []
        steps = [r for r in rows if "step" in r and "loss" in r]
        return {"exit": done.returncode, "seconds": round(time.time() - started), "steps": len(steps),
                "reward": [r.get("reward") for r in steps], "error": done.stderr[-1500:] if done.returncode else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", metavar="DIR", help="install into DIR and keep it (default: a temporary folder, removed)")
    args = parser.parse_args()
    # No local pip configuration: the default index only, as on a person's machine.
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        del os.environ[key]
    os.environ["PIP_CONFIG_FILE"] = os.devnull
    os.environ["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    target = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="rloo-fast-env-")) / "venv"
    started = time.time()
    try:
        python = bootstrap.install_fast_environment(target)
        install_s = time.time() - started
        checked = subprocess.run([str(python), "-c", CHECK, *IMPORTS], check=False, capture_output=True, text=True, cwd=ROOT,
                                 env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if checked.returncode != 0:
            result = {"installed": True, "imports": False, "error": checked.stderr[-3000:]}
        else:
            result = {"installed": True, "imports": True, "versions": json.loads(checked.stdout.strip().splitlines()[-1])}
        if result["imports"]:
            result["demo_run"] = demo_run(python)
        frozen = subprocess.run([str(python), "-m", "pip", "freeze"], check=False, capture_output=True, text=True).stdout.splitlines()
        result.update(install_s=round(install_s), size_gib=round(folder_gib(target), 2), packages=len(frozen))
    finally:
        if not args.keep:
            shutil.rmtree(target.parent, ignore_errors=True)
    result.update(asked=bootstrap.FAST_PACKAGES, python=platform.python_version(), machine=machine(),
                  checked_on=f"{platform.system()} {platform.machine()}, {time.strftime('%Y-%m-%d')}",
                  command="python benchmarks/fast_env_install.py",
                  note="installed and imported in a clean virtualenv with no GPU; nothing generated: not yet measured on a GPU")
    print(json.dumps(result, indent=1))
    path = save("fast_env_install", result)
    print(f"written {shown(path)}")
    return 0 if result.get("imports") and result.get("demo_run", {}).get("exit") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Do the fast-generation environment's pins install together? Asks pip's resolver (no download of the wheels, no GPU
needed) for Linux x86_64 and this Python: bootstrap.py's FAST_PACKAGES (vLLM and the torch it pins) with every
dependency of pyproject.toml, and writes what it chose to benchmarks/results/fast_env_resolve.json.

    python benchmarks/fast_env_resolve.py        # needs the package index (pypi.org); takes a few minutes

pip runs with --isolated so a local index configuration (a CPU-only torch, say) does not stand in for the Linux
CUDA wheels a GPU machine would get.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bootstrap  # noqa: E402
from benchmarks._common import ROOT, save  # noqa: E402

# Every manylinux tag a current x86_64 Linux accepts (glibc 2.5-2.39), so pip picks what such a machine would.
PLATFORMS = ["linux_x86_64", "manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64",
             *(f"manylinux_2_{n}_x86_64" for n in range(5, 40))]
SHOWN = ("torch", "torchvision", "vllm", "transformers", "trl", "unsloth", "unsloth_zoo", "peft", "xformers", "triton",
         "bitsandbytes", "flashinfer-python")


def main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = bootstrap.FAST_PACKAGES + [d for d in project if not d.startswith(("torch", "torchvision"))]
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--ignore-installed", "--quiet",
               "--report", str(report), "--only-binary", ":all:", "--python-version", python, "--target", str(Path(tmp) / "t"),
               *(a for p in PLATFORMS for a in ("--platform", p)), *wanted]
        started = time.time()
        done = subprocess.run(cmd, capture_output=True, text=True)
        took = time.time() - started
        if done.returncode != 0:
            result = {"resolved": False, "error": done.stderr[-3000:]}
        else:
            chosen = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
            result = {"resolved": True, "packages": len(chosen), "versions": {k: chosen[k] for k in SHOWN if k in chosen}}
    result.update(asked=wanted, python=python, platform="Linux x86_64 (manylinux up to glibc 2.39)", seconds=round(took),
                  checked_on=f"{platform.system()} {platform.machine()}, {time.strftime('%Y-%m-%d')}",
                  note="pip's resolver only: installs together; not yet run on a GPU")
    print(json.dumps(result, indent=1))
    save("fast_env_resolve", result)
    if not result["resolved"]:
        sys.exit("the fast-generation pins do not resolve together: see the error above")


if __name__ == "__main__":
    main()

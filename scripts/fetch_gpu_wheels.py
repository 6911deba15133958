"""Download and slim the packages the GPU check needs beyond a stock CUDA PyTorch image.

    python scripts/fetch_gpu_wheels.py [--cuda 130] [--out gpu-wheels]

For a GPU machine without internet access whose image has torch, transformers, peft, accelerate
and triton (a stock CUDA PyTorch image), but not the packages in WHEELS: run this on a computer that
has internet access, then copy the repository, OUT included, to the GPU machine. It downloads the
packages' Linux x86-64 / CPython 3.12 wheels from PyPI (no dependencies resolved: the list is the whole set),
unpacks them into OUT/site/ and drops what the check never loads — Unsloth's `studio` GUI package
(~80 MB) and bitsandbytes' libraries for other CUDA versions — which leaves about 51 MiB to copy.
OUT is git-ignored. On the GPU machine, `benchmarks/gpu_check.sh` puts OUT/site on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Pinned like pyproject.toml; the rest are what unsloth/unsloth_zoo/trl import that the image lacks.
WHEELS = [
    "unsloth==2026.10.9", "unsloth_zoo==2026.10.9", "trl==1.15.0", "bitsandbytes>=0.50,<0.51", "datasets>=3.4,<5",
    "cut_cross_entropy", "tyro", "msgspec", "torchao", "docstring_parser", "shtab", "typeguard",
    "xxhash", "multiprocess", "dill",
]
PLATFORMS = ["manylinux_2_34_x86_64", "manylinux_2_31_x86_64", "manylinux_2_28_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "linux_x86_64", "any"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "gpu-wheels")
    parser.add_argument("--cuda", default="130", help="the machine's CUDA version without the dot (torch.version.cuda 13.0 → 130)")
    parser.add_argument("--python", default="3.12")
    args = parser.parse_args()
    downloads, site = args.out / "downloads", args.out / "site"
    downloads.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", args.python,
           "--implementation", "cp", "-d", str(downloads)]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    subprocess.run(cmd + WHEELS, check=True)
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    for wheel in sorted(downloads.glob("*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(site)
    # Unsloth Studio, the GUI product (AGPL, ~80 MB), ships as a top-level `studio` package in the wheel; training never imports it.
    for gui in (site / "studio", site / "unsloth" / "studio"):
        shutil.rmtree(gui, ignore_errors=True)
    keep = f"libbitsandbytes_cuda{args.cuda}.so"
    for lib in (site / "bitsandbytes").glob("libbitsandbytes_*"):
        if lib.name != keep:
            lib.unlink()
    if not (site / "bitsandbytes" / keep).exists():
        print(f"warning: bitsandbytes has no {keep}; check --cuda against torch.version.cuda on the machine", file=sys.stderr)
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    print(f"{site}: {size / 1024**2:.1f} MiB from {len(list(downloads.glob('*.whl')))} wheels")
    return 0


if __name__ == "__main__":
    sys.exit(main())

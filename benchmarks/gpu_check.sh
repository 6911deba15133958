#!/usr/bin/env bash
# The GPU check on a machine with a CUDA PyTorch image and no internet:
#   python scripts/fetch_gpu_wheels.py          (on a computer with internet: fills gpu-wheels/site)
#   copy the repository, gpu-wheels/ included, to the GPU machine; there, from the repository root:
#   bash benchmarks/gpu_check.sh [gpu_check.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/gpu-wheels/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
# The install plan `python launch.py` would choose on this machine (driver, GPUs, CUDA build, index);
# printed and kept beside the other results. It installs nothing; a plan that refuses (driver too old)
# is recorded too, so the check goes on.
mkdir -p benchmarks/results
python3 bootstrap.py --print-install-plan | tee benchmarks/results/install_plan.txt || true
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
# Every preset's trainer arguments on both backends (on CUDA `import unsloth` patches TRL itself); its verdict is kept,
# and the GPU check runs whatever it says.
parity=0
python3 benchmarks/trainer_parity.py || parity=$?
python3 benchmarks/gpu_check.py "$@"
exit "$parity"

#!/usr/bin/env bash
# The GPU check on a machine with a CUDA PyTorch image and no internet:
#   python scripts/fetch_gpu_wheels.py          (here, with internet: fills gpu-wheels/site)
#   then on the GPU machine, from the repository root, with gpu-wheels carried along:
#   bash benchmarks/gpu_check.sh [gpu_check.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/gpu-wheels/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
python3 benchmarks/gpu_check.py "$@"

"""A run of several processes ends together and leaves its process group (engine.train._leave_process_group).

Two real gloo processes on 127.0.0.1 each call the function the engine calls after the last step. Rank 0 first
does what it does there (saves the final weights and status; here: writes a file, after a pause). Rank 1 must come
back only after that, with the group closed. A rank that exits with the group still open can abort in gloo's
threads at interpreter exit ("terminate called without an active exception"), and its launcher then reports the
whole run as failed: seen in 2 of 15 such exits here, never with the group left first.
"""

from __future__ import annotations

import socket
import subprocess
import sys

RANK = """
import os, sys, time, pathlib
import torch, torch.distributed as dist
from rloo_studio.engine.train import _leave_process_group
rank, port, saved = int(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
t = torch.ones(4)
dist.all_reduce(t)  # the group has been used, as training uses it
if rank == 0:
    time.sleep(1.0)  # the final save takes a while
    saved.write_text("saved")
_leave_process_group()
print(f"rank {rank}: saved before the end: {saved.exists()}; group still open: {dist.is_initialized()}", flush=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_rank_waits_for_rank_0s_save_then_leaves_the_group(tmp_path):
    port, saved = str(_free_port()), tmp_path / "saved"
    ranks = [subprocess.Popen([sys.executable, "-c", RANK, str(r), port, str(saved)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in (0, 1)]
    try:
        outputs = [p.communicate(timeout=120)[0] for p in ranks]
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in ranks] == [0, 0], outputs
    for r, out in enumerate(outputs):
        assert f"rank {r}: saved before the end: True; group still open: False" in out, out

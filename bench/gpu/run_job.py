"""COMMAND for bench/gpu/run.sh: what a job run by `gpuslate run` sees.

Usage: run_job.py READY_FILE DONE_FILE GIB
Reads the GPU's free memory before touching it (torch.cuda.mem_get_info:
the driver's figure), allocates GIB, writes "free_before_mib=..." and
"pid=..." to READY_FILE, then waits (bounded, 120 s) until DONE_FILE exists
and exits 0.
"""
import os
import sys
import time

import torch


def main():
    ready, done, gib = sys.argv[1], sys.argv[2], float(sys.argv[3])
    free, total = torch.cuda.mem_get_info(0)
    x = torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, device="cuda:0")
    x.fill_(1)
    torch.cuda.synchronize()
    tmp = ready + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"pid={os.getpid()}\nfree_before_mib={free >> 20}\ntotal_mib={total >> 20}\n")
    os.rename(tmp, ready)
    deadline = time.monotonic() + 120
    while not os.path.exists(done) and time.monotonic() < deadline:
        time.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main())

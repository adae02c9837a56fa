"""Real GPU holders for gpuslate's checks on a GPU machine (bench/gpu/).

Usage: holder.py MODE READY_FILE [GIB] [HOST_GIB]
Modes: plain, pinned, fork, ignore_term, monitor, context.
Writes "pid=..." (and "child=...") to READY_FILE once it holds the memory, then
waits. A test harness starts it, waits for the file, and acts.
"""
import os
import signal
import sys
import time


def ready(path, **pids):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for k, v in pids.items():
            f.write(f"{k}={v}\n")
    os.rename(tmp, path)


def wait_forever():
    while True:
        signal.pause()


def main():
    mode, path = sys.argv[1], sys.argv[2]
    gib = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    host_gib = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0

    if mode == "monitor":
        # An NVML-only monitor (like an exporter): no CUDA context.
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        ready(path, pid=os.getpid())
        while True:
            pynvml.nvmlDeviceGetMemoryInfo(h)
            time.sleep(0.5)

    import torch
    if mode == "ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    n = int(gib * (1 << 30))
    x = torch.empty(n, dtype=torch.uint8, device="cuda:0") if n else torch.zeros(1, device="cuda:0")
    x.fill_(1)
    pinned = None
    if host_gib:
        pinned = torch.empty(int(host_gib * (1 << 30)), dtype=torch.uint8, pin_memory=True)
        pinned.fill_(1)
    torch.cuda.synchronize()

    if mode == "fork":
        child = os.fork()
        if child == 0:
            # Inherits the parent's fds and mappings; touches no CUDA.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            wait_forever()
        ready(path, pid=os.getpid(), child=child)
        wait_forever()
    ready(path, pid=os.getpid())
    wait_forever()


if __name__ == "__main__":
    main()

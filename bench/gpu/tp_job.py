"""A two-rank tensor-parallel stand-in for bench/gpu/multi.sh: started by
torchrun, one process per GPU, NCCL all-reduce, then holds memory.
Writes rank<N>=<pid> to $READY_DIR/rank<N> when it holds its GPU."""
import os
import signal
import torch
import torch.distributed as dist

rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
x = torch.ones(int(4 * (1 << 30)) // 4, device=f"cuda:{rank}")
dist.all_reduce(x)
torch.cuda.synchronize()
path = os.path.join(os.environ["READY_DIR"], f"rank{rank}")
with open(path + ".tmp", "w") as f:
    f.write(f"pid={os.getpid()}\n")
os.rename(path + ".tmp", path)
while True:
    signal.pause()

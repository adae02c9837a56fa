#!/bin/bash
# Issue 8: checks on a host with two or more GPUs (nvidia-h200-x2 or larger).
#  1. which /dev/nvidia* a CUDA process opens and maps, with and without
#     CUDA_VISIBLE_DEVICES, and after it also initialises NVML; gpuslate's
#     per-process GPUs against nvidia-smi --query-compute-apps=pid,gpu_uuid;
#  2. reclaim -y -g 1 ends GPU 1's holders and leaves GPU 0's running;
#  3. a two-rank torchrun job (NCCL, NCCL_NVLS_ENABLE=0) reclaimed whole,
#     timed beside the floor.
# Usage: bench/gpu/multi.sh OUTDIR. Changes no GPU setting.
set -u
OUTD=${1:-/tmp/gpuslate-multi}
mkdir -p "$OUTD"
. bench/gpu/lib.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
n=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[ "$n" -ge 2 ] || { echo "needs 2 GPUs, this host has $n"; exit 77; }

nodes() { # PID: NVIDIA nodes open and mapped
	echo "fds: $(ls -l /proc/$1/fd 2>/dev/null | grep -o '/dev/nvidia[0-9]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';') maps: $(grep -o '/dev/nvidia[0-9]*' /proc/$1/maps | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
}
{
echo "## 1. device nodes"
CUDA_VISIBLE_DEVICES= start_holder plain 2 && A=$HPID
echo "no CUDA_VISIBLE_DEVICES, tensor on cuda:0: $(nodes $A)"
CUDA_VISIBLE_DEVICES=1 start_holder plain 2 && B=$HPID
echo "CUDA_VISIBLE_DEVICES=1: $(nodes $B)"
python3 -c "import pynvml; pynvml.nvmlInit()" >/dev/null 2>&1
CUDA_VISIBLE_DEVICES=1 python3 - "$WORK/ready.nvml" <<'PY' &
import os, signal, sys, torch, pynvml
x = torch.ones(1 << 28, device="cuda:0"); torch.cuda.synchronize()
pynvml.nvmlInit()
open(sys.argv[1], "w").write(f"pid={os.getpid()}\n")
signal.pause()
PY
while [ ! -s "$WORK/ready.nvml" ]; do sleep 0.1; done
C=$(sed -n 's/pid=//p' "$WORK/ready.nvml")
echo "CUDA_VISIBLE_DEVICES=1 then nvmlInit: $(nodes $C)"
echo; echo "nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory:"
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader | sort
echo "gpuslate (pid: gpus by index):"
$GS status --json | python3 -c "import json,sys; d=json.load(sys.stdin); [print(p['pid'], p['role'], p['gpus'], p['memory_mib']) for p in d['processes']]"
$GS status --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader | sort >"$OUTD/gs_apps"
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader | sort >"$OUTD/smi_apps"
cmp -s "$OUTD/gs_apps" "$OUTD/smi_apps" && echo "compute apps: identical" || diff "$OUTD/smi_apps" "$OUTD/gs_apps"

echo; echo "## 2. reclaim -y -g 1"
$GS reclaim -y -g 1; echo "exit $?"
for p in $A $B $C; do kill -0 $p 2>/dev/null && echo "$p alive" || echo "$p gone"; done
$GS reclaim -y -q >/dev/null

echo; echo "## 3. two-rank torchrun job"
export READY_DIR=$WORK/tp; mkdir -p "$READY_DIR"
torchrun --nproc_per_node=2 bench/gpu/tp_job.py >"$OUTD/torchrun.log" 2>&1 &
i=0; while [ ! -f "$READY_DIR/rank0" ] || [ ! -f "$READY_DIR/rank1" ]; do i=$((i+1)); [ $i -gt 1800 ] && break; sleep 0.1; done
$GS status
t0=$(now); $GS reclaim -y --json >"$OUTD/tp.json"; rc=$?; t1=$(now)
echo "gpuslate: exit $rc in $(secs $t0 $t1) s"
python3 -c "import json; d=json.load(open('$OUTD/tp.json')); print(d['verdict'], [(p['pid'], p['comm'], p['outcome']) for p in d['processes']], d['respawns'], [(g['index'], g['released_after_s']) for g in d['gpus']])"
idle=0
rm -f "$READY_DIR"/rank*
torchrun --nproc_per_node=2 bench/gpu/tp_job.py >>"$OUTD/torchrun.log" 2>&1 &
i=0; while [ ! -f "$READY_DIR/rank0" ] || [ ! -f "$READY_DIR/rank1" ]; do i=$((i+1)); [ $i -gt 1800 ] && break; sleep 0.1; done
echo "floor (SIGKILL both ranks, poll GPU 0): $($FLOOR --kill 0 16 $(cat "$READY_DIR"/rank* | sed -n 's/pid=//p')) s"
$GS reclaim -y -q >/dev/null
} 2>&1 | tee "$OUTD/multi-report.txt"
rm -rf "$WORK"

#!/bin/bash
# Issue 11 item 4 on a real GPU: gpuslate now counts NVML's word for a PID
# only when that process maps /dev/nvidia<N> (a CUDA context maps it; an
# open fd alone is what monitors have). This checks that every PID the real
# NVML lists does map the node, for the kinds of process that get listed:
#  1. a plain CUDA context, and a forked child of one (the fork case);
#  2. an MPS client (nvidia-cuda-mps-control -d in a private pipe directory;
#     the daemon is ended at the end; no GPU setting is changed);
#  3. an NVML-only monitor (must NOT be listed, and must stay a client).
# For each: fds and mappings of /dev/nvidia*, NVML's lists (nvidia-smi), and
# gpuslate's role. Then reclaim -y must stop the context holders and the MPS
# client and end clean (or say why).
# Usage: bench/gpu/nvml-confirm.sh OUTDIR
set -u
OUTD=${1:-/tmp/gpuslate-nvml-confirm}
mkdir -p "$OUTD"
. bench/gpu/lib.sh

nodes() { # PID: NVIDIA nodes open and mapped
	echo "fds: $(ls -l /proc/$1/fd 2>/dev/null | grep -o '/dev/nvidia[0-9a-z-]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';') maps: $(grep -o '/dev/nvidia[0-9a-z-]*' /proc/$1/maps 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
}
roles() { # gpuslate's view: pid role gpus memory nvml_listed maps_gpu
	$GS status --json | python3 -c "import json,sys; d=json.load(sys.stdin); [print(' ', p['pid'], p['comm'], p['role'], p['gpus'], p['memory_mib'], 'nvml_listed' if p['nvml_listed'] else '-', 'maps' if p['maps_gpu'] else '-') for p in d['processes']]"
}
{
echo "## 1. plain context, fork case"
start_holder plain 1 && A=$HPID
echo "plain $A: $(nodes $A)"
start_holder fork 1 && F=$HPID FC=$HCHILD
echo "fork parent $F: $(nodes $F)"
echo "fork child $FC: $(nodes $FC)"

echo; echo "## 3. NVML-only monitor"
start_holder monitor 0 && M=$HPID
echo "monitor $M: $(nodes $M)"

echo; echo "## 2. MPS client"
export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps-pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
if nvidia-cuda-mps-control -d; then
	start_holder plain 1 && C=$HPID
	echo "mps client $C: $(nodes $C)"
	for s in $(pgrep -f nvidia-cuda-mps-server); do echo "mps server $s: $(nodes $s)"; done
else
	echo "nvidia-cuda-mps-control -d failed: no MPS check"
	C=
fi

echo; echo "NVML (nvidia-smi --query-compute-apps=pid,used_memory):"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
echo "gpuslate status: pid comm role gpus MiB listed maps"
roles

echo; echo "## reclaim -y (holders and the MPS client; the monitor and the MPS daemon stay)"
$GS reclaim -y --json >"$OUTD/reclaim.json"; rc=$?
echo "exit $rc"
python3 -c "import json; d=json.load(open('$OUTD/reclaim.json')); print(d['verdict'], d['summary']); [print(' left alone', l['pid'], l['comm'], l['role'], l['reason']) for l in d['plan']['left_alone']]; [print(' stopped', p['pid'], p['comm'], p['outcome']) for p in d['processes']]"
for p in $A $F $FC ${C:-} $M; do st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/$p/status 2>/dev/null); [ -n "$st" ] && [ "$st" != Z ] && echo "$p alive" || echo "$p gone"; done
[ -n "${C:-}" ] && echo quit | nvidia-cuda-mps-control
kill "$M" 2>/dev/null
$GS reclaim -y -q >/dev/null
} 2>&1 | tee "$OUTD/nvml-confirm-report.txt"
rm -rf "$WORK"

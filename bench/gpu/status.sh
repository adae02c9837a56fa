#!/bin/bash
# gpuslate status beside nvidia-smi with real PyTorch holders: a plain
# holder, a forked child holding its dead parent's memory, an NVML-only
# monitor, nvidia-smi -l as a client. Writes everything under $1.
set -u
OUTD=${1:-/tmp/gpuslate-status}
mkdir -p "$OUTD"
. bench/gpu/lib.sh

{
echo "## host"; nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv; uname -r
idle=$($FLOOR --used); echo "idle used MiB: $idle"
python3 -c "import pynvml as n; n.nvmlInit(); h=n.nvmlDeviceGetHandleByIndex(0); m=n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2); print('v2 bytes: total', m.total, 'reserved', m.reserved, 'used', m.used, 'free', m.free)"

start_holder plain 3 || exit 1; P_PLAIN=$HPID
start_holder fork 2 || exit 1; P_FORK=$HPID; P_CHILD=$HCHILD
start_holder context 0 || exit 1; P_CTX=$HPID
start_holder monitor 0 || exit 1; P_MON=$HPID
nvidia-smi -l 1 >/dev/null 2>&1 & P_SMI=$!
kill -9 "$P_FORK"; wait "$P_FORK" 2>/dev/null; wait_gone "$P_FORK"
echo "pids: plain=$P_PLAIN fork-parent(dead)=$P_FORK fork-child=$P_CHILD context=$P_CTX monitor=$P_MON nvidia-smi-l=$P_SMI"

echo; echo "## NVIDIA fds and mappings per process"
for p in $P_PLAIN $P_CHILD $P_CTX $P_MON $P_SMI; do
	fds=$(ls -l /proc/$p/fd 2>/dev/null | grep -o '/dev/nvidia[^ ]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	maps=$(grep -o '/dev/nvidia[^ ]*' /proc/$p/maps 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	echo "$p $(cat /proc/$p/comm): fds:$fds maps:$maps"
done

echo; echo "## gpuslate status"; $GS status
echo; echo "## nvidia-smi"; nvidia-smi
for q in "index,memory.used,memory.reserved,memory.total" "index,uuid,name,memory.used" ; do
	for f in csv,noheader csv csv,noheader,nounits; do
		nvidia-smi --query-gpu=$q --format=$f >"$OUTD/smi.txt"
		$GS status --query-gpu=$q --format=$f >"$OUTD/gs.txt"
		if cmp -s "$OUTD/smi.txt" "$OUTD/gs.txt"; then r=identical; else r=DIFFERENT; fi
		echo "--query-gpu=$q --format=$f: $r"; [ $r = DIFFERENT ] && diff "$OUTD/smi.txt" "$OUTD/gs.txt"
	done
done
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | sort >"$OUTD/smi_apps.txt"
$GS status --query-compute-apps=pid,used_memory --format=csv,noheader | sort >"$OUTD/gs_apps.txt"
if cmp -s "$OUTD/smi_apps.txt" "$OUTD/gs_apps.txt"; then r=identical; else r=DIFFERENT; fi
echo "--query-compute-apps=pid,used_memory: $r"; cat "$OUTD/smi_apps.txt"; [ $r = DIFFERENT ] && diff "$OUTD/smi_apps.txt" "$OUTD/gs_apps.txt"
$GS status --json >"$OUTD/status.json"

echo; echo "## speed: 20 runs each of the same query"
t0=$(now); for i in $(seq 20); do nvidia-smi --query-gpu=index,memory.used --format=csv,noheader >/dev/null; done; t1=$(now)
for i in $(seq 20); do $GS status --query-gpu=index,memory.used --format=csv,noheader >/dev/null; done; t2=$(now)
for i in $(seq 20); do $GS status >/dev/null; done; t3=$(now)
echo "nvidia-smi --query-gpu: $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.4f", (b-a)/20}') s/run; gpuslate --query-gpu: $(awk -v a=$t1 -v b=$t2 'BEGIN{printf "%.4f", (b-a)/20}') s/run; gpuslate status (with the /proc scan): $(awk -v a=$t2 -v b=$t3 'BEGIN{printf "%.4f", (b-a)/20}') s/run; nvidia-smi / gpuslate query: $(awk -v a=$t0 -v b=$t1 -v c=$t2 'BEGIN{printf "%.1f", (b-a)/(c-b)}')x"
echo; echo "## clean-up with gpuslate reclaim -y --include-clients"
$GS reclaim -y --include-clients --grace 5; echo "exit $?"
nvidia-smi --query-gpu=index,memory.used --format=csv,noheader
} 2>&1 | tee "$OUTD/status-report.txt"
rm -rf "$WORK"

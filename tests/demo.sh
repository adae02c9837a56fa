#!/bin/bash
# `make demo`: gpuslate on a simulated GPU host (no GPU needed). Builds a fake
# host with two GPUs (fake NVML + fake device nodes, see docs/testing.md),
# starts the holders of the seed's situation, then runs status, reclaim and
# status again. Every process it starts is ended by PID at the end.
set -u
B=${GPUSLATE_BUILD:-$PWD/build}
GS=$B/gpuslate
HOLDER=$B/fakes/gs-holder
HOST=$(mktemp -d "${TMPDIR:-/tmp}/gpuslate-demo.XXXXXX")
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$HOST"
}
trap cleanup EXIT

bash tests/fakes/mkhost.sh "$HOST" 2
export FAKE_NVML_STATE=$HOST/nvml GPUSLATE_DEV_ROOT=$HOST/dev GPUSLATE_NVML_LIB=$B/fakes/libnvidia-ml.so.1
# Its own lock and last-reclaim record: the demo must not feed this
# machine's gpuslate_last_reclaim_* metrics with a simulated reclaim.
export GPUSLATE_LOCK_FILE=$HOST/lock GPUSLATE_STATE_FILE=$HOST/last-reclaim

# start NAME SHOWN OPTIONS...: run a holder (as NAME, its command line NAME
# SHOWN, as a real server's), wait until it holds the GPU. The holder reads
# its OPTIONS from GS_HOLDER_ARGS (tests/fakes/holder.c), split at blanks.
start() {
	local name=$1 shown=$2 rf=$HOST/ready.$1; shift 2
	# A copy named NAME: what a process is rests on its executable.
	[ -x "$HOST/$name" ] || install -m 0755 "$HOLDER" "$HOST/$name"
	# Started outside this shell's job table, so that the shell does not
	# chatter when gpuslate kills one; the ready file gives the PIDs.
	# shellcheck disable=SC2086 # SHOWN is words
	( GS_HOLDER_ARGS="--ready-file $rf $*" exec -a "$name" "$HOST/$name" $shown </dev/null & )
	for _ in $(seq 200); do [ -f "$rf" ] && break; sleep 0.01; done
	[ -f "$rf" ] || { echo "demo: $name did not start" >&2; exit 1; }
	for p in $(sed -n 's/^[a-z]*=//p' "$rf"); do pids+=("$p"); done
}

echo "== A GPU host after a benchmark run: an inference server on GPU 0, a"
echo "== training rank on GPU 1 that forked a data-loader worker and died,"
echo "== a tuning job that ignores SIGTERM, nvidia-persistenced and an exporter."
start python3 "-m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-72B-Instruct --port 8000" \
	--gpu 0 --mib 61440
start torchrun "--nproc-per-node=1 train.py --config llama3-8b.yaml" \
	--gpu 1 --mib 40960 --fork-child --exit-after-fork
start autotune "--kernel gemm --trials 500" --gpu 0 --mib 8192 --sigign-term
start nvidia-persistenced "--user nvidia-persistenced" --client --gpu 0 --gpu 1
start dcgm-exporter "-f /etc/dcgm-exporter/default-counters.csv" --client --gpu 0 --gpu 1
start node-exporter "--collector.textfile.directory=/var/lib/node_exporter" --client --gpu 0
echo
echo "\$ gpuslate status"
"$GS" status
echo
echo "\$ gpuslate reclaim -y --grace 1"
"$GS" reclaim -y --grace 1
rc=$?
echo "(exit status $rc)"
echo
echo "\$ gpuslate status --query-gpu=index,memory.used --format=csv,noheader"
"$GS" status --query-gpu=index,memory.used --format=csv,noheader
exit $rc

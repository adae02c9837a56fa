#!/bin/bash
# Issue 15 item 2 on a real GPU: NVML runs in a helper process now; the fast
# path must stay within 1.1x of nvidia-smi.
#
#   bench/gpu/nvml_child.sh OUTDIR [RUNS]
#
# 1. `gpuslate status --query-gpu=index,memory.used --format=csv,noheader`
#    against nvidia-smi with the same arguments, RUNS times each (default
#    200), interleaved so that both see the same machine; the same output
#    checked first. Prints median, mean and 90th percentile of each and the
#    ratios: the goal is gpuslate / nvidia-smi <= 1.10 (median and mean).
# 2. bench/gpu/nvml_overhead.c on the real driver: opening NVML in a helper
#    against in this process (fork, the hand-over), info() of every GPU, and
#    one memory poll of every GPU (the wait loop's 5 ms beat).
# Needs the release build (make) in $GPUSLATE_BUILD (default ./build) and a C
# compiler. Changes nothing on the GPU. Writes OUTDIR/nvml-child.txt.
set -u
OUTD=${1:-/tmp/gpuslate-nvml-child}
RUNS=${2:-200}
B=${GPUSLATE_BUILD:-$PWD/build}
GS=$B/gpuslate
mkdir -p "$OUTD" "$B/bench"
Q=(--query-gpu=index,memory.used --format=csv,noheader)

[ -x "$B/bench/nvml_overhead" ] || cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o "$B/bench/nvml_overhead" bench/gpu/nvml_overhead.c \
	"$B/libgpuslate.a" -ldl -lpthread || exit 1

# stats FILE: median mean p90 of one number (ms) per line.
stats() {
	sort -n "$1" | awk '{ v[NR] = $1; s += $1 } END {
		printf "median %.2f ms, mean %.2f ms, p90 %.2f ms", v[int((NR + 1) / 2)], s / NR, v[int(NR * 0.9)] }'
}
ms_since() { # ms_since T0 (EPOCHREALTIME)
	local now=$EPOCHREALTIME
	awk -v a="$1" -v b="$now" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
}

{
	echo "## host"
	nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
	uname -r; nproc
	echo
	echo "## same output"
	nvidia-smi "${Q[@]}" >"$OUTD/smi.txt"
	"$GS" status "${Q[@]}" >"$OUTD/gs.txt"
	if cmp -s "$OUTD/smi.txt" "$OUTD/gs.txt"; then echo identical; else echo DIFFERENT; diff "$OUTD/smi.txt" "$OUTD/gs.txt"; fi
	echo
	echo "## speed: $RUNS runs each, interleaved"
	: >"$OUTD/smi.ms"
	: >"$OUTD/gs.ms"
	for _ in 1 2 3; do nvidia-smi "${Q[@]}" >/dev/null; "$GS" status "${Q[@]}" >/dev/null; done # warm caches
	for _ in $(seq "$RUNS"); do
		t=$EPOCHREALTIME; nvidia-smi "${Q[@]}" >/dev/null; ms_since "$t" >>"$OUTD/smi.ms"
		t=$EPOCHREALTIME; "$GS" status "${Q[@]}" >/dev/null; ms_since "$t" >>"$OUTD/gs.ms"
	done
	echo "nvidia-smi: $(stats "$OUTD/smi.ms")"
	echo "gpuslate:   $(stats "$OUTD/gs.ms")"
	med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
	mean() { awk '{ s += $1 } END { print s / NR }' "$1"; }
	awk -v a="$(med "$OUTD/smi.ms")" -v b="$(med "$OUTD/gs.ms")" -v c="$(mean "$OUTD/smi.ms")" -v d="$(mean "$OUTD/gs.ms")" \
		'BEGIN { printf "gpuslate / nvidia-smi: median %.3fx, mean %.3fx (goal <= 1.10x): %s\n", b / a, d / c,
			(b / a <= 1.10 && d / c <= 1.10) ? "PASS" : "FAIL" }'
	echo
	echo "## the helper's own cost (bench/gpu/nvml_overhead.c, 50 opens, 2 s of polls)"
	"$B/bench/nvml_overhead" 50 2
} 2>&1 | tee "$OUTD/nvml-child.txt"

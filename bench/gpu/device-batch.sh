#!/bin/bash
# Runs bench/gpu scripts on the GPU machine in one call and packs what they
# wrote into $OUT/results.tgz (the device tool brings back few files), with
# every script's console output in $OUT/console.txt.
#   bench/gpu/device-batch.sh 'query.sh' 'nvml_child.sh 200' ...
# The release build comes from $GPUSLATE_BUILD (default .devbuild, built on
# the development machine: make, then bench/gpu/prepare-devbuild.sh).
set -u
export GPUSLATE_BUILD=${GPUSLATE_BUILD:-$PWD/.devbuild}
OUT=${OUT:-/tmp/gpuslate-batch}
R=$(mktemp -d)
{
	echo "== $(date -u +%FT%TZ) $(hostname)"
	nvidia-smi --query-gpu=index,name,driver_version,memory.used,memory.total --format=csv 2>&1
	for s in "$@"; do
		set -- $s
		name=${1%.sh}
		echo "=========== $s"
		start=$(date +%s.%N)
		timeout 500 bash "bench/gpu/$1" "$R/$name" "${@:2}" 2>&1
		echo "=========== $s: exit $? after $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
		nvidia-smi --query-gpu=memory.used --format=csv,noheader
	done
} >"$OUT/console.txt" 2>&1
tar -C "$R" -czf "$OUT/results.tgz" .

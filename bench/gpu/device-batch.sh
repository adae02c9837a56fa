#!/bin/bash
# Runs bench/gpu scripts on the GPU machine in one call and packs what they
# wrote into $OUT/results.tgz (the device tool brings back few files), with
# every script's console output in $OUT/console.txt. Unpack it into a
# directory of its own (mkdir D && tar -C D -xzf results.tgz).
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
# The members only, no "./": extracting an archive with "./" as root gives
# the directory it is extracted into the mode of $R (mktemp -d: 0700).
# Unpacked into /tmp that made /tmp 0700 (test_holderscan's uid 65534 child
# could no longer reach its directory), and faults.bats's walk up then 0705.
find "$R" -mindepth 1 -maxdepth 1 -printf '%P\0' | tar -C "$R" --null -T - -czf "$OUT/results.tgz"

#!/usr/bin/env bash
# Holder-scan benchmark: N processes with 8 fds each, one in EVERY holding a
# fake /dev/nvidia0 (a plain file). Times fuser, lsof -t and gpuslate's scan
# side by side (best of RUNS each, interleaved), checks that all three find
# the same pids, and prints the ratios. Needs root (to read every /proc/PID/fd).
#
#   bench/scan/run.sh            # N=3000, EVERY=10, RUNS=3
#   N=500 RUNS=5 bench/scan/run.sh
set -euo pipefail

N=${N:-3000}
EVERY=${EVERY:-10}
RUNS=${RUNS:-3}
GOAL=${GOAL:-4}

cd "$(dirname "$0")/../.."
ROOT=$PWD
B=$ROOT/build/bench
mkdir -p "$B"

if [ "$(id -u)" != 0 ]; then
	echo "run.sh: needs root (fuser, lsof and the scan must see every process)" >&2
	exit 1
fi
for t in fuser lsof cc; do
	command -v "$t" >/dev/null || { echo "run.sh: $t not found" >&2; exit 1; }
done

# Build: the driver links the release library.
CFLAGS_B="-std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -O2 -Wall -Wextra -Werror -Isrc"
make -s build/libgpuslate.a >/dev/null
cc $CFLAGS_B -o "$B/gs_scan_bench" bench/scan/gs_scan_bench.c build/libgpuslate.a -lpthread -ldl -lm
cc $CFLAGS_B -o "$B/spawn" bench/scan/spawn.c

TMP=$(mktemp -d "${TMPDIR:-/tmp}/gs-bench.XXXXXX")
SPAWN_PID=
cleanup() {
	if [ -n "$SPAWN_PID" ]; then
		# The children die with it (lifeline pipe EOF, PR_SET_PDEATHSIG).
		kill "$SPAWN_PID" 2>/dev/null || true
		wait "$SPAWN_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

mkdir -p "$TMP/dev" "$TMP/other"
for n in nvidia0 nvidia1 nvidiactl nvidia-uvm; do : >"$TMP/dev/$n"; done
others=()
for i in 1 2 3 4 5 6 7; do
	: >"$TMP/other/f$i"
	others+=("$TMP/other/f$i")
done
GPU=$TMP/dev/nvidia0

echo "starting $N processes (1 in $EVERY holds $GPU) ..."
coproc SPAWN { exec "$B/spawn" "$N" "$EVERY" "$GPU" "${others[@]}" "$TMP/holders.expected"; }
SPAWN_PID=$SPAWN_PID
read -r line <&"${SPAWN[0]}" || { echo "run.sh: spawner failed" >&2; exit 1; }
[ "$line" = ready ] || { echo "run.sh: spawner said '$line'" >&2; exit 1; }
sort -n -o "$TMP/holders.expected" "$TMP/holders.expected"
echo "processes in /proc: $(ls /proc | grep -c '^[0-9]')"

now_ns() { date +%s%N; }

# run NAME CMD...: time one run, keep the sorted pid list of the last run.
declare -A best
run() {
	local name=$1 t0 t1 dt
	shift
	t0=$(now_ns)
	"$@" >"$TMP/$name.raw" 2>"$TMP/$name.err" || true
	t1=$(now_ns)
	dt=$(( (t1 - t0) / 1000 ))
	tr -s ' \t' '\n\n' <"$TMP/$name.raw" | grep -E '^[0-9]+$' | sort -n >"$TMP/$name.pids" || true
	if [ -z "${best[$name]:-}" ] || [ "$dt" -lt "${best[$name]}" ]; then
		best[$name]=$dt
	fi
}

for r in $(seq "$RUNS"); do
	run fuser fuser "$GPU"
	run lsof lsof -t "$GPU"
	run gpuslate "$B/gs_scan_bench" "$TMP/dev"
done

status=0
for name in fuser lsof gpuslate; do
	if ! cmp -s "$TMP/$name.pids" "$TMP/holders.expected"; then
		echo "MISMATCH: $name found $(wc -l <"$TMP/$name.pids") pids, expected $(wc -l <"$TMP/holders.expected")" >&2
		diff "$TMP/holders.expected" "$TMP/$name.pids" | head -5 >&2 || true
		status=1
	fi
done

ms() { awk -v us="$1" 'BEGIN { printf "%.1f", us / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "holders: $(wc -l <"$TMP/holders.expected") of $N processes; all three agree: $([ $status = 0 ] && echo yes || echo NO)"
printf '%-10s %10s\n' tool "best ms"
for name in fuser lsof gpuslate; do
	printf '%-10s %10s\n' "$name" "$(ms "${best[$name]}")"
done
echo "gpuslate in-process: $(cat "$TMP/gpuslate.err")"
echo "fuser/gpuslate: $(ratio "${best[fuser]}" "${best[gpuslate]}")x   lsof/gpuslate: $(ratio "${best[lsof]}" "${best[gpuslate]}")x   (goal: >= ${GOAL}x vs fuser)"
if awk -v a="${best[fuser]}" -v b="${best[gpuslate]}" -v g="$GOAL" 'BEGIN { exit !(a / b >= g) }'; then
	echo "goal: met"
else
	echo "goal: NOT met"
	status=1
fi
exit $status

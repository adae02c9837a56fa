#!/usr/bin/env bash
# Intel memory poll benchmark (docs/amd-intel.md section 6): N processes
# with 8 fds each, one in EVERY holding the simulated Intel GPU's render node
# with a fixture of 64 MiB of VRAM (its own client); times one poll of the
# GPU's memory (the watched fds' fdinfo) against a full snapshot.
#
#   bench/drm/run.sh              # N=200, EVERY=10, RUNS=50
#   N=2000 EVERY=20 bench/drm/run.sh
set -euo pipefail

N=${N:-200}
EVERY=${EVERY:-10}
RUNS=${RUNS:-50}

cd "$(dirname "$0")/../.."
ROOT=$PWD
B=$ROOT/build/bench
mkdir -p "$B"
CFLAGS_B="-std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -O2 -Wall -Wextra -Werror -Isrc"
make -s build/libgpuslate.a >/dev/null
cc $CFLAGS_B -o "$B/intel_poll" bench/drm/intel_poll.c build/libgpuslate.a -ljansson -lpthread -ldl -lm
cc $CFLAGS_B -o "$B/spawn" bench/scan/spawn.c

TMP=$(mktemp -d "${TMPDIR:-/tmp}/gs-bench-drm.XXXXXX")
SPAWN_PID=
cleanup() {
	if [ -n "$SPAWN_PID" ]; then
		kill "$SPAWN_PID" 2>/dev/null || true
		wait "$SPAWN_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

bash tests/fakes/mkdrm.sh host "$TMP/host" --amd 0 --intel 1
NODE=$TMP/host/dev/dri/renderD128
mkdir -p "$TMP/other" "$TMP/host/fdinfo"
others=()
for i in 1 2 3 4 5 6 7; do
	: >"$TMP/other/f$i"
	others+=("$TMP/other/f$i")
done

echo "starting $N processes (1 in $EVERY holds the Intel render node) ..."
coproc SPAWN { exec "$B/spawn" "$N" "$EVERY" "$NODE" "${others[@]}" "$TMP/holders"; }
SPAWN_PID=$SPAWN_PID
read -r line <&"${SPAWN[0]}" || { echo "run.sh: spawner failed" >&2; exit 1; }
[ "$line" = ready ] || { echo "run.sh: spawner said '$line'" >&2; exit 1; }
id=0
while read -r pid; do
	for l in /proc/"$pid"/fd/*; do
		[ "$(readlink "$l")" = "$NODE" ] || continue
		id=$((id + 1))
		bash tests/fakes/mkdrm.sh fdinfo "$TMP/host" "$pid" "${l##*/}" xe 0000:83:00.0 "$id" --vram-mib 64
	done
done <"$TMP/holders"
echo "$id holders with fixtures"
"$B/intel_poll" "$TMP/host/sys" "$TMP/host/dev" "$TMP/host/fdinfo" "$RUNS"

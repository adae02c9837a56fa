#!/bin/bash
# bench/fanout/run.sh: fleet fan-out against namespace hosts on this machine.
#
#   bench/fanout/run.sh [--sizes "32 64"] [--runs N] [--fanout F]
#
# For each size, the same hosts in the same run, each variant N times
# (median reported), all doing `gpuslate --remote status` over real OpenSSH:
#   gpuslate  gpuslate -w HOSTS -f F status       (this tool's fan-out)
#   pdsh      pdsh -R ssh -f F -w HOSTS gpuslate --remote status
#   serial    for h in HOSTS; do ssh h gpuslate --remote status; done
# Prints the times, the ratios, and the slowest single host seen by
# gpuslate (the floor for any fan-out). Hosts come from tests/fleet/mkhosts.sh
# (one network namespace and one idle sshd each) and are removed at the end.
#
# Needs root, iproute2, openssh-server, pdsh, jq, and `make` (build/gpuslate
# and the fakes).
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
sizes="32 64"
runs=3
fanout=32
while [ $# -gt 0 ]; do
	case $1 in
	--sizes) sizes=$2; shift ;;
	--runs) runs=$2; shift ;;
	--fanout) fanout=$2; shift ;;
	*) echo "usage: run.sh [--sizes \"32 64\"] [--runs N] [--fanout F]" >&2; exit 2 ;;
	esac
	shift
done
for p in pdsh jq ssh ip; do
	command -v "$p" >/dev/null || { echo "run.sh: needs $p" >&2; exit 1; }
done
make -C "$root" -s build/gpuslate fakes >/dev/null

export GPUSLATE_BIN=$root/build/gpuslate GPUSLATE_BUILD=$root/build
T=$(mktemp -d /tmp/gs-fanout.XXXXXX)
cleanup() { exec 8<&- 2>/dev/null || true; "$root/tests/fleet/mkhosts.sh" down "$T"; rm -rf "$T"; }
trap cleanup EXIT

max=0
for s in $sizes; do [ "$s" -gt "$max" ] && max=$s; done
"$root/tests/fleet/mkhosts.sh" up "$T"
for i in $(seq 1 "$max"); do
	"$root/tests/fleet/mkhosts.sh" add "$T" "$(printf 'b%03d' "$i")" --gpus 8
done

export GPUSLATE_SSH="ssh -F $T/ssh_config"
export PDSH_SSH_ARGS_APPEND="-F $T/ssh_config -o BatchMode=yes"
export PDSH_RCMD_TYPE=ssh

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# time_ms CMD...: wall time of CMD in ms; its output goes to $T/last.
time_ms() {
	local t0 t1
	t0=$(now_ms)
	"$@" >"$T/last" 2>"$T/last.err" || true
	t1=$(now_ms)
	echo $((t1 - t0))
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# The remote mode ends itself when its stdin reaches EOF, so each ssh of
# the loop reads from a FIFO this script holds open (pdsh keeps ssh's stdin
# open in the same way; gpuslate -w gives each ssh a pipe).
mkfifo "$T/stdin"
exec 8<>"$T/stdin"
serial() {
	local h
	for h in $(seq -f 'b%03g' 1 "$1"); do
		ssh -F "$T/ssh_config" -o BatchMode=yes "$h" -- gpuslate --remote status <&8 || return 1
	done
}

printf '%-6s %-8s %10s %10s %10s %14s %14s %12s\n' hosts fanout gpuslate pdsh serial "pdsh/gpuslate" "serial/gpuslate" slowest-host
for n in $sizes; do
	list="b[001-$(printf '%03d' "$n")]"
	: >"$T/g" ; : >"$T/p" ; : >"$T/s" ; : >"$T/slow"
	for _ in $(seq 1 "$runs"); do
		time_ms "$GPUSLATE_BIN" -w "$list" -f "$fanout" --json status >>"$T/g"
		jq -r '[.hosts[].elapsed_s] | max * 1000 | floor' "$T/last" >>"$T/slow"
		ok=$(jq -r '.summary.clean' "$T/last")
		[ "$ok" = "$n" ] || { echo "run.sh: gpuslate: only $ok of $n hosts clean" >&2; cat "$T/last.err" >&2; exit 1; }
		time_ms pdsh -R ssh -f "$fanout" -w "$list" gpuslate --remote status >>"$T/p"
		ok=$(grep -c '"schema_version"' "$T/last" || true)
		[ "$ok" = "$n" ] || { echo "run.sh: pdsh: $ok of $n hosts answered" >&2; cat "$T/last.err" >&2; exit 1; }
		time_ms serial "$n" >>"$T/s"
		ok=$(grep -c '"schema_version"' "$T/last" || true)
		[ "$ok" = "$n" ] || { echo "run.sh: serial: $ok of $n hosts answered" >&2; cat "$T/last.err" >&2; exit 1; }
	done
	g=$(median <"$T/g")
	p=$(median <"$T/p")
	s=$(median <"$T/s")
	slow=$(median <"$T/slow")
	printf '%-6s %-8s %8s ms %8s ms %8s ms %14s %14s %9s ms\n' "$n" "$fanout" "$g" "$p" "$s" \
		"$(awk -v a="$p" -v b="$g" 'BEGIN { printf "%.2f", a / b }')" \
		"$(awk -v a="$s" -v b="$g" 'BEGIN { printf "%.2f", a / b }')" "$slow"
done
echo "(median of $runs runs each; $(nproc) CPUs; $(ssh -V 2>&1 | cut -d, -f1); $(pdsh -V 2>&1 | head -1))"

#!/bin/bash
# make failalloc: the release build under tests/fakes/failalloc.c, with the
# N-th allocation failing, for every N from 1 to the number of allocations a
# whole run makes (counted first with FAILALLOC_COUNT=1), for
#   gpuslate status            (must never signal anything), and
#   gpuslate reclaim -y -g 0   (one target on GPU 0; a bystander on GPU 1,
#                               nvidia-persistenced and an NVML client on
#                               GPU 0 must survive every run).
# Each run must end with a documented exit status (0-5, never a signal or a
# hang; never 3, the driver being fine: out of memory is 1), say why on
# stderr ("gpuslate: ...") when it fails, and never claim
# clean (exit 0) while the target still runs. The target surviving a failed
# run is acceptable. The failures are injected into gpuslate's own calls
# (FAILALLOC_SCOPE=main, see failalloc.c: glibc's NSS crashes on its own
# internal allocation failures, which no caller can handle).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
TOOL=failalloc
. tests/analysis/fakehost.sh
FA=$PWD/$B/fakes/failalloc.so
fail=0
reap_dead() { wait -n 2>/dev/null || :; }

bystander=$(holder bystander "$HOLDER" --gpu 1 --mib 512)
persistenced=$(holder persistenced "$T/bin/nvidia-persistenced" --gpu 0 --mib 100)
client=$(holder client "$HOLDER" --gpu 0 --client)
keep=("$bystander" "$persistenced" "$client")
target=$(holder target "$HOLDER" --gpu 0 --mib 2048)

count() { # count ARGS...: allocations of one whole run
	FAILALLOC_COUNT=1 LD_PRELOAD=$FA "$GS" "$@" 2>&1 >/dev/null | sed -n 's/^failalloc: \([0-9]*\) allocations$/\1/p' | tail -n 1
}

# check NAME N RC ERRFILE: the common assertions; returns 1 on a failure.
check() {
	local name=$1 n=$2 rc=$3 err=$4 p
	if [ "$rc" -gt 5 ]; then
		echo "FAIL $name N=$n: exit $rc (signal or hang; documented: 0-5)"
		sed 's/^/    /' "$err" | tail -n 5
		return 1
	fi
	if [ "$rc" -ne 0 ] && ! grep -q '^gpuslate: ' "$err"; then
		echo "FAIL $name N=$n: exit $rc without a message"
		return 1
	fi
	# The simulated driver never fails here: an exit 3 would send an
	# operator to reset a GPU for our own lack of memory (exit 1).
	if [ "$rc" -eq 3 ]; then
		echo "FAIL $name N=$n: out of memory reported as a driver failure (exit 3)"
		sed 's/^/    /' "$err" | tail -n 3
		return 1
	fi
	for p in "${keep[@]}"; do
		if ! alive "$p"; then
			echo "FAIL $name N=$n: non-target $p was killed"
			return 1
		fi
	done
	return 0
}

ks=$(count status)
kr=$(count reclaim -y -g 0 --grace 1 --timeout 10)
alive "$target" && { echo "FAIL: the counting reclaim left the target alive"; exit 1; }
target=$(holder target "$HOLDER" --gpu 0 --mib 2048)
echo "allocations in a run: status $ks, reclaim $kr"
if ! [ "${ks:-0}" -gt 0 ] || ! [ "${kr:-0}" -gt 0 ]; then echo "FAIL: could not count allocations"; exit 1; fi

declare -A seen=()
for n in $(seq 1 $((ks + 5))); do
	rc=0
	timeout 30 env FAILALLOC_N="$n" LD_PRELOAD="$FA" "$GS" status >/dev/null 2>"$T/err" || rc=$?
	check status "$n" "$rc" "$T/err" || fail=1
	alive "$target" || { echo "FAIL status N=$n: the target was killed by status"; fail=1; }
	seen["status $rc"]=$((${seen["status $rc"]:-0} + 1))
done

for n in $(seq 1 $((kr + 5))); do
	rc=0
	timeout 60 env FAILALLOC_N="$n" LD_PRELOAD="$FA" "$GS" reclaim -y -g 0 --grace 1 --timeout 10 >/dev/null 2>"$T/err" || rc=$?
	check reclaim "$n" "$rc" "$T/err" || fail=1
	if [ "$rc" -eq 0 ] && alive "$target"; then
		echo "FAIL reclaim N=$n: exit 0 (clean) while the target $target still runs"
		fail=1
	fi
	seen["reclaim $rc"]=$((${seen["reclaim $rc"]:-0} + 1))
	if ! alive "$target"; then
		wait "$target" 2>/dev/null
		target=$(holder target "$HOLDER" --gpu 0 --mib 2048)
	fi
done
for k in "${!seen[@]}"; do echo "  $k: ${seen[$k]} run(s)"; done | sort
[ "$fail" -eq 0 ] && echo "failalloc: ok"
exit $fail

#!/bin/bash
# `make check`: every unit test binary, then the end-to-end suite (bats), all
# against the ASan+UBSan builds. Prints one closing line with the totals.
set -u
B=${GPUSLATE_BUILD:-$PWD/build}
# The bats files to run (a directory); the project's suite unless a test of
# this script points it at a toy one.
E2E=${GS_E2E_DIR:-tests/e2e}
pass=0 fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for t in "$B"/san/tests/test_*; do
	[ -x "$t" ] || continue
	echo "== $t"
	"$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	pass=$((pass + ${p:-0}))
	fail=$((fail + ${f:-0}))
	# A binary that crashed before cmocka's summary counts as one failure.
	[ "$rc" -ne 0 ] && [ -z "$f" ] && fail=$((fail + 1))
done

# The containers' root filesystem (LXC tests), built once here, before bats,
# where a failure is reported once with its cause and the command to retry;
# the container tests then fail at once (GS_WORLD_ROOTFS_FAILED) instead of
# each file trying the build again. Only where the world can run LXC at all
# (root, lxc and mmdebstrap installed): elsewhere those tests skip, saying why.
if [ "$E2E" = tests/e2e ] && [ "$(id -u)" = 0 ] && command -v lxc-start >/dev/null && command -v mmdebstrap >/dev/null; then
	echo "== the containers' root filesystem (${GS_WORLD_CACHE:-/var/cache/gpuslate-tests})"
	t0=$SECONDS
	if rootfs_err=$(tests/world/build-rootfs 2>&1 >/dev/null); then
		echo "ready after $((SECONDS - t0)) s"
	else
		export GS_WORLD_ROOTFS_FAILED=1
		echo "world: cannot build the containers' root filesystem (mmdebstrap failed):"
		printf '%s\n' "$rootfs_err" | tail -n 15 | sed 's/^/  /'
		echo "  retry with: GS_WORLD_CACHE=${GS_WORLD_CACHE:-/var/cache/gpuslate-tests} tests/world/build-rootfs"
		echo "  the LXC and fleet-container tests will fail"
	fi
fi

echo "== end-to-end (bats)"
t0=$SECONDS
GPUSLATE_BIN=$B/gpuslate-san GPUSLATE_BUILD=$B bats --print-output-on-failure "$E2E" 2>&1 | tee "$log"
# bats plans every test first (1..N); a file whose setup_file fails runs
# none of its tests and prints one "not ok" for them all. Whatever was
# planned and never reported counts as failed, so a closing line cannot
# hide tests that did not run; no plan at all (bats did not start) is a
# failure too.
echo "bats took $((SECONDS - t0)) s"
planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$log" | head -n 1)
reported=$(grep -c '^\(not \)\{0,1\}ok ' "$log")
notrun=0
if [ -z "$planned" ]; then
	echo "bats printed no plan: the end-to-end suite did not start"
	notrun=1
elif [ "$reported" -lt "$planned" ]; then
	notrun=$((planned - reported))
	echo "not executed: $notrun of $planned planned tests (counted as failed)"
fi
# A skipped test is reported as "ok N ... # skip REASON": counted apart, so
# that a piece of the test world this machine could not run shows.
p=$(grep -c '^ok ' "$log")
s=$(grep -c '^ok .* # skip' "$log")
f=$(grep -c '^not ok ' "$log")
pass=$((pass + p - s))
fail=$((fail + f + notrun))

if [ "$s" -gt 0 ]; then
	echo "skipped:"
	sed -n 's/^ok [0-9]* \(.*\) # skip/  \1:/p' "$log"
fi
echo "$pass passed, $fail failed, $s skipped"
[ "$fail" -eq 0 ]

#!/bin/bash
# `make check`: every unit test binary, then the end-to-end suite (bats), all
# against the ASan+UBSan builds. Prints one closing line with the totals.
set -u
B=${GPUSLATE_BUILD:-$PWD/build}
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

echo "== end-to-end (bats)"
GPUSLATE_BIN=$B/gpuslate-san GPUSLATE_BUILD=$B bats --print-output-on-failure tests/e2e 2>&1 | tee "$log"
# A skipped test is reported as "ok N ... # skip REASON": counted apart, so
# that a piece of the test world this machine could not run shows.
p=$(grep -c '^ok ' "$log")
s=$(grep -c '^ok .* # skip' "$log")
f=$(grep -c '^not ok ' "$log")
pass=$((pass + p - s))
fail=$((fail + f))

if [ "$s" -gt 0 ]; then
	echo "skipped:"
	sed -n 's/^ok [0-9]* \(.*\) # skip/  \1:/p' "$log"
fi
echo "$pass passed, $fail failed, $s skipped"
[ "$fail" -eq 0 ]

#!/bin/bash
# make valgrind: end-to-end commands of the release build (build/gpuslate)
# under Valgrind memcheck against the simulated GPU host (tests/fakes/
# mkhost.sh, build/fakes/gs-holder): status, status --json, reclaim --dry-run,
# reclaim -y, wait, run, restore, and a fleet status through an ssh stub (the remote
# commands run the release binary outside Valgrind: --trace-children=no). Any memcheck
# error or leak (definite/possible) fails; so does a wrong exit status or a
# process that should have survived and did not.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
TOOL=valgrind
. tests/analysis/fakehost.sh
fail=0
ln -s "$GS" "$T/bin/gpuslate"
export PATH=$T/bin:$PATH

# shellcheck disable=SC2054 # the comma is inside one option
VG=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,possible
	--trace-children=no --track-fds=no --num-callers=30)

# vg WANT_STATUS NAME ARGS...: gpuslate ARGS under memcheck.
vg() {
	local want=$1 name=$2 rc=0 t0 t1
	shift 2
	t0=${EPOCHREALTIME/./}
	"${VG[@]}" --log-file="$T/vg-$name.log" "$GS" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null || rc=$?
	t1=${EPOCHREALTIME/./}
	# Valgrind 3.19 does not know pidfd_open (434) and says so on "--PID--"
	# lines; the call fails with ENOSYS and gpuslate takes its start-time
	# guarded fallback. Memcheck's own reports are the "==PID==" lines.
	if [ "$rc" -eq 99 ] || grep -q '^==[0-9]*==' "$T/vg-$name.log"; then
		echo "FAIL $name: memcheck errors:"
		cat "$T/vg-$name.log"
		fail=1
	elif [ "$rc" -ne "$want" ]; then
		echo "FAIL $name: exit $rc, expected $want"
		sed 's/^/    /' "$T/$name.err"
		fail=1
	else
		printf 'ok   %-20s exit %d  %d ms\n' "$name" "$rc" $(((t1 - t0) / 1000))
	fi
}

a=$(holder a "$HOLDER" --gpu 0 --mib 2048)
b=$(holder b "$HOLDER" --gpu 1 --mib 1024 --ignore-term --workers 1)
c=$(holder c "$HOLDER" --gpu 1 --client)
d=$(holder d "$T/bin/nvidia-persistenced" --gpu 0 --mib 100)

vg 0 status status
vg 0 status-json status --json
vg 0 query status --query-gpu=index,memory.used --format=csv,noheader
vg 0 dry-run reclaim --dry-run
vg 1 wait-busy wait --timeout 0.5
vg 0 reclaim reclaim -y --grace 1 --timeout 20 --json
for p in "$a" "$b"; do alive "$p" && { echo "FAIL reclaim: target $p survived"; fail=1; }; done
for p in "$c" "$d"; do alive "$p" || { echo "FAIL reclaim: $p (client/protected) was killed"; fail=1; }; done
vg 0 wait-clean wait --timeout 5
# run: a reclaim, COMMAND (not under valgrind), the intruder watch and the
# --restore path (nothing recorded here), with the one JSON document.
vg 3 run run -y --json --restore -- sh -c 'exit 3'
vg 0 restore restore -y --json
vg 2 usage reclaim --grace nonsense
# Fleet: two "hosts" through the ssh stub; each runs the release binary
# (not under valgrind: --trace-children=no) and gpuslate merges the reports.
GPUSLATE_SSH=$PWD/tests/analysis/ssh-stub vg 0 fleet-status -w vg1,vg2 status
GPUSLATE_SSH=$PWD/tests/analysis/ssh-stub vg 0 fleet-json -w vg[1-3] status --json
GPUSLATE_SSH=/nonexistent/ssh vg 4 fleet-nossh -w vg1 status
exit $fail

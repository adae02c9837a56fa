#!/usr/bin/env bats
# More targets than open files (issue 11 item 13): gpuslate holds a pidfd per
# target, and a pidfd_open that fails with EMFILE once marked the target
# "already-gone", never signalled (1100 targets under ulimit -n 1024 left 86
# running). Now the soft limit is raised to the hard one at start, targets
# beyond the descriptors left are parked (a pidfd opened for each signal,
# the start time checked again) and every one is stopped; only the kernel's
# word (ESRCH) makes a target gone. A hard limit of 64 with 100 targets makes
# the same shortage quickly.

load helpers

# bash -c "$UNDER_LIMIT" _ SOFT HARD CMD...: CMD (the same process) with
# RLIMIT_NOFILE set so.
UNDER_LIMIT='ulimit -Sn "$1" && ulimit -Hn "$2" && shift 2 && exec "$@"'

@test "fd limit: 100 targets under a hard open-file limit of 64: every one stopped, none taken for gone" {
	# A launcher and its 99 workers, every one mapping GPU 0: 100 targets.
	start_holder job --gpu 0 --mib 4096 --workers 99
	pids=$(sed -n 's/^[a-z]*=//p' "$BATS_TEST_TMPDIR/job.ready" | sort -n)
	assert_eq "$(wc -l <<<"$pids")" 100 "processes started"

	run --separate-stderr bash -c "$UNDER_LIMIT" _ 64 64 "$GPUSLATE_BIN" reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.processes[].pid] | sort | map(tostring) | join(" ")')" "$(tr '\n' ' ' <<<"$pids" | sed 's/ $//')" \
		"targets"
	assert_eq "$(jqo '[.processes[].outcome] | unique | join(",")')" exited-after-term "outcomes"
	assert_eq "$(jqo '[.processes[] | select(.signals | index("SIGTERM") | not)] | length')" 0 "targets without SIGTERM"
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "true 0" "GPU 0"
	# shellcheck disable=SC2086
	assert_dead $pids
}

@test "fd limit: the soft open-file limit is raised to the hard one at start" {
	start_holder stubborn --gpu 0 --mib 1024 --ignore-term
	# The grace period keeps gpuslate running while its limits are read.
	bg reclaim bash -c "$UNDER_LIMIT" _ 64 4096 "$GPUSLATE_BIN" reclaim -y --grace 3
	wait_for 10 limit_is "$BG_PID" 4096
	bg_wait reclaim 30
	assert_eq "$BG_STATUS" 0 "exit status"
	assert_dead "$(rpid stubborn)"
}
# limit_is PID N: the soft "Max open files" of PID is N.
limit_is() { [ "$(awk '/^Max open files/ { print $4 }' "/proc/$1/limits" 2>/dev/null)" = "$2" ]; }

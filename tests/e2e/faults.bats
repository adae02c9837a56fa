#!/usr/bin/env bats
# Fault matrix (issue 7): faults that the other suites (status, reclaim,
# safety) do not already cover. NVML missing / failing at init / failing or
# hanging mid-wait, PID reuse, Ctrl-C and hostile NVML process lists
# (garbage_processes) are in reclaim.bats, status.bats and safety.bats.
# Here: /proc entries vanishing mid-scan, a target that exits between plan
# and signal, a target that becomes a zombie, permission denied (gpuslate as
# an unprivileged user against root's holders), and SIGTERM/SIGHUP to
# gpuslate during the grace period and during the memory wait. For each:
# a clear message, the documented exit status, and no process other than the
# targets signalled.

load helpers

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }

# churn NAME: a process that keeps starting and reaping short-lived children,
# so /proc entries appear and vanish while gpuslate scans. Sets CHURN_PID.
churn() {
	bg "$1" bash -c 'while :; do for i in 1 2 3 4 5 6 7 8; do /bin/true & done; wait; done'
	CHURN_PID=$BG_PID
}

@test "faults: /proc entries vanishing mid-scan: status and reclaim see no error" {
	start_holder a --gpu 0 --mib 1024
	start_holder by --gpu 1 --mib 512
	a=$(rpid a)
	by=$(rpid by)
	churn churn1
	churn churn2
	for i in 1 2 3 4 5; do
		run --separate-stderr gs status --json
		assert_status 0
		assert_eq "$(error_lines "$stderr")" "" "errors from status (round $i)"
		assert_eq "$(jqo '[.processes[] | select(.role == "compute") | .pid] | sort | map(tostring) | join(",")')" \
			"$(printf '%s\n' "$a" "$by" | sort -n | paste -sd,)" "compute holders (round $i)"
	done
	run --separate-stderr gs reclaim -y -g 0 --grace 2 --json
	assert_status 0
	assert_eq "$(error_lines "$stderr")" "" "errors from reclaim"
	assert_eq "$(jqo '[.processes[].pid] | map(tostring) | join(",")')" "$a" "signalled"
	assert_dead "$a"
	assert_alive "$by" "$CHURN_PID"
}

@test "faults: a target that exits between plan and signal: already-gone, nothing else signalled" {
	start_holder a --gpu 0 --mib 1024
	start_holder by --gpu 1 --mib 512
	a=$(rpid a)
	by=$(rpid by)
	# On a terminal gpuslate plans, prints the plan and asks; the target
	# ends on its own (here: the test ends it) before the answer.
	pty_start confirm "GPUSLATE_NO_PROGRESS=1 $GPUSLATE_BIN reclaim -g 0 --json >$BATS_TEST_TMPDIR/confirm.json"
	wait_for 20 pty_shows confirm '\[y/N\]'
	kill -KILL "$a"
	wait_for 5 dead "$a"
	pty_type confirm y
	bg_wait confirm 30
	output=$(cat "$BATS_TEST_TMPDIR/confirm.json")
	assert_eq "$BG_STATUS" 0 "exit status"
	assert_eq "$(proc_json "$a" '"\(.outcome) \(.signals | length)"')" "already-gone 0" "the target"
	assert_eq "$(jqo '[.processes[].pid] | map(tostring) | join(",")')" "$a" "processes acted on"
	assert_eq "$(jqo .verdict)" clean "verdict"
	assert_alive "$by"
}

@test "faults: a target that becomes a zombie (parent never reaps) counts as gone" {
	# The holder's parent execs a program that never waits for children.
	rf=$BATS_TEST_TMPDIR/z.ready
	echo "$rf" >>"$GS_READY_LIST"
	bg zparent bash -c "\"\$1\" --gpu 0 --mib 1024 --ready-file \"\$2\" & exec sleep 600" _ "$GS_HOLDER" "$rf"
	parent=$BG_PID
	wait_for 10 test -f "$rf"
	z=$(ready_values "$rf" pid)
	track "$z"
	start_holder by --gpu 1 --mib 512
	by=$(rpid by)
	t0=$(now_ms)
	run --separate-stderr gs reclaim -y -g 0 --grace 10 --timeout 20 --json
	t1=$(now_ms)
	assert_status 0
	assert_eq "$(jqo .verdict)" clean "verdict"
	assert_match "$(proc_json "$z" .outcome)" '^(exited-after-term|already-gone)$' "the zombie's outcome"
	assert_eq "$(proc_state "$z")" Z "state of the target now"
	# A zombie holds nothing: no grace period spent waiting for it, no SIGKILL.
	assert_eq "$(proc_json "$z" '.signals | index("SIGKILL")')" null "SIGKILL sent"
	[ $((t1 - t0)) -lt 8000 ] || { echo "took $((t1 - t0)) ms" >&2; false; }
	# Its parent holds nothing and is no target; GPU 1 was not selected.
	assert_eq "$(jqo '[.processes[].pid] | map(tostring) | join(",")')" "$z" "processes acted on"
	assert_alive "$parent" "$by"
}

# as_nobody CMD...: runs CMD as user nobody in a new session (so that not even
# the kernel's same-session SIGCONT exception applies), with the simulated
# host readable by it.
as_nobody() {
	setsid setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
require_nobody() {
	[ "$(id -u)" = 0 ] || skip "needs root (to start root's holders and drop to nobody)"
	command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	# nobody must reach the binary, the fakes and the host (not the holders' /proc).
	# Only bats's own directories (mktemp -d: 0700) are opened to others:
	# nothing above them is changed (this walk went up to /, so a /tmp left
	# 0700 became 0705). Where /tmp is closed, the check below skips.
	open_test_dirs
	chmod -R o+rX "$GS_HOST"
	as_nobody test -x "$GPUSLATE_BIN" -a -r "$GS_NVML" -a -r "$FAKE_NVML_STATE/gpus" ||
		skip "user nobody cannot reach the build or the test directory"
}

@test "faults: permission denied: as nobody, root's holders are reported unseen and never signalled" {
	require_nobody
	start_holder a --gpu 0 --mib 1024
	start_holder pd --as nvidia-persistenced --gpu 0 --mib 100
	a=$(rpid a)
	pd=$(rpid pd)
	chmod -R o+rX "$GS_HOST"

	# status: NVML accounts every GPU's memory to processes it sees (the
	# holders are listed), so what it could not inspect is no warning (issue
	# 15); -v says it, the JSON always does. Exit 0.
	run --separate-stderr as_nobody "$GPUSLATE_BIN" status --json
	assert_status 0
	assert_no_match "$stderr" 'could not inspect' "stderr"
	assert_eq "$(jqo '"\(.visibility.as_root) \(.visibility.processes_denied > 0) \(.visibility.denied_matter)"')" \
		"false true false" "visibility"
	run --separate-stderr as_nobody "$GPUSLATE_BIN" status -v
	assert_status 0
	assert_match "$stderr" '^gpuslate: note: could not inspect [0-9]+ of [0-9]+ processes \(permission denied\).*; run as root to see every holder$' "note"

	# reclaim with the default lock file of a root-only directory: refused
	mkdir -m 0700 "$BATS_TEST_TMPDIR/rootonly"
	GPUSLATE_LOCK_FILE=$BATS_TEST_TMPDIR/rootonly/lock run --separate-stderr as_nobody "$GPUSLATE_BIN" reclaim -y
	assert_status 5
	assert_one_error "$stderr" "lock file.*Permission denied"
	assert_alive "$a" "$pd"

	# reclaim with a lock it may take: it tries, is denied, says so, exit 1
	mkdir -m 1777 "$BATS_TEST_TMPDIR/shared"
	GPUSLATE_LOCK_FILE=$BATS_TEST_TMPDIR/shared/lock run --separate-stderr as_nobody "$GPUSLATE_BIN" \
		reclaim -y --grace 1 --timeout 2 --json
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean "verdict"
	assert_eq "$(proc_json "$a" '"\(.outcome) \(.signals | length)"')" "permission-denied 0" "root's holder"
	# nobody cannot read the daemon's executable, and it runs in no unit
	# of its own here: its name alone protects nothing, so it is a compute
	# holder, and root's, so it is denied too.
	assert_eq "$(proc_json "$pd" '"\(.outcome) \(.signals | length)"')" "permission-denied 0" "root's daemon"
	assert_eq "$(jqo '[.processes[].pid] | sort | map(tostring) | join(",")')" "$(printf '%s\n' "$a" "$pd" | sort -n | paste -sd,)" "processes acted on"
	assert_match "$(jqo .summary)" "not clean: GPU 0 .*held by .*$a" "summary"
	assert_alive "$a" "$pd"
}

@test "faults: not root: the plan marks root's holder not permitted, and the verdict comes at once with 'run as root'" {
	require_nobody
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	chmod -R o+rX "$GS_HOST"
	mkdir -m 1777 "$BATS_TEST_TMPDIR/shared"
	export GPUSLATE_LOCK_FILE=$BATS_TEST_TMPDIR/shared/lock

	# The plan says so before anything is tried.
	run --separate-stderr as_nobody "$GPUSLATE_BIN" reclaim -n -g 0
	assert_status 0
	assert_match "$output" "^ +$a .*signal process \\[not permitted: uid 0's process; run as root\\]" "plan"
	run --separate-stderr as_nobody "$GPUSLATE_BIN" reclaim -n -g 0 --json
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $a) | .permitted")" false "permitted"

	# Every target denied: no waiting out --timeout (60 s by default).
	t0=$(now_ms)
	run --separate-stderr as_nobody "$GPUSLATE_BIN" reclaim -y -g 0 --json
	t1=$(now_ms)
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean "verdict"
	assert_eq "$(proc_json "$a" .outcome)" permission-denied "root's holder"
	assert_match "$(jqo .summary)" "1 process not permitted to signal: run as root \\(sudo gpuslate \\.\\.\\.\\)" "summary"
	[ $((t1 - t0)) -lt 30000 ] || { echo "took $((t1 - t0)) ms: waited out --timeout" >&2; false; }
	run --separate-stderr as_nobody "$GPUSLATE_BIN" reclaim -y -g 0
	assert_status 1
	assert_match "$output" "run as root \\(sudo gpuslate" "text report"
	assert_alive "$a"
}

@test "faults: SIGTERM to gpuslate during the grace period: stops escalating, reports, interrupted, exit 143" {
	start_holder stubborn --gpu 0 --mib 1024 --ignore-term
	start_holder by --gpu 1 --mib 512
	p=$(rpid stubborn)
	by=$(rpid by)
	# Stopped, so its state shows when gpuslate's SIGCONT (right after
	# SIGTERM) arrived: the grace period has begun.
	kill -STOP "$p"
	wait_for 5 eval '[ "$(proc_state "$p")" = T ]'
	# TERM at its default whatever this shell inherited (under nohup
	# it is ignored, and gpuslate keeps a signal ignored at start).
	bg term env --default-signal=TERM "$GPUSLATE_BIN" reclaim -y -g 0 --json --grace 60
	wait_for 20 eval '[ "$(proc_state "$p")" != T ]'
	kill -TERM "$BG_PID"
	bg_wait term 20
	output=$BG_OUT
	assert_eq "$BG_STATUS" 143 "exit status"
	assert_eq "$(jqo '"\(.verdict) \(.interrupted)"')" "interrupted true" "verdict, interrupted"
	# CONT and TERM (or only the first, when the signal came between them),
	# never KILL
	assert_eq "$(proc_json "$p" .outcome)" interrupted "the holder's outcome"
	assert_match "$(proc_json "$p" '.signals | join(",")')" '^SIG(CONT|TERM)(,SIG(CONT|TERM))?$' "signals sent"
	# With --json the report (interrupted: true) is the message; stderr
	# carries no error. (It used to be checked for any "gpuslate:" line,
	# which only the unrelated "could not inspect PID 1" warning gave.)
	assert_eq "$(error_lines "$BG_ERR")" "" "errors on stderr"
	assert_alive "$p" "$by"
}

@test "faults: SIGHUP to gpuslate during the memory wait: reports what was stopped, interrupted, exit 129" {
	# The target exits on SIGTERM but its memory takes 60 s to come back.
	start_holder slow --gpu 0 --mib 1024 --release-ms 60000
	start_holder by --gpu 1 --mib 512
	p=$(rpid slow)
	by=$(rpid by)
	# HUP at its default whatever this shell inherited (under nohup
	# it is ignored, and gpuslate keeps a signal ignored at start).
	bg hup env --default-signal=HUP "$GPUSLATE_BIN" reclaim -y -g 0 --json --grace 5 --timeout 120
	wait_for 20 dead "$p"
	# In the wait stage now (the target is gone, the memory is not back).
	kill -HUP "$BG_PID"
	bg_wait hup 20
	output=$BG_OUT
	assert_eq "$BG_STATUS" 129 "exit status"
	assert_eq "$(jqo '"\(.verdict) \(.interrupted)"')" "interrupted true" "verdict, interrupted"
	assert_eq "$(proc_json "$p" .outcome)" exited-after-term "the target"
	assert_eq "$(jqo '[.processes[].pid] | map(tostring) | join(",")')" "$p" "processes acted on"
	assert_eq "$(error_lines "$BG_ERR")" "" "errors on stderr"
	assert_alive "$by"
}

@test "faults: the lock file is private (0600): another user cannot hold it and refuse every reclaim" {
	require_nobody
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	# An older gpuslate left a world-readable lock file: flock(2) needs no
	# write permission, so any user could open it and hold the lock.
	install -m 0644 /dev/null "$GPUSLATE_LOCK_FILE"
	run --separate-stderr gs reclaim -y --grace 2
	assert_status 0
	assert_eq "$(stat -c %a "$GPUSLATE_LOCK_FILE")" 600 "lock file mode"
	assert_dead "$a"
	run as_nobody flock -n -x "$GPUSLATE_LOCK_FILE" true
	[ "$status" -ne 0 ] || { echo "user nobody could take the lock" >&2; false; }
}

@test "faults: a hung container runtime is asked once per container, and all questions share one deadline" {
	require_cgroups
	a=$(printf 'a%.0s' $(seq 64))
	b=$(printf 'b%.0s' $(seq 64))
	holder_in_cgroup a1 "system.slice/docker-$a.scope" --gpu 0 --mib 512
	a1=$PID
	holder_in_cgroup a2 "system.slice/docker-$a.scope" --gpu 0 --mib 512
	a2=$PID
	holder_in_cgroup b1 "system.slice/docker-$b.scope" --gpu 1 --mib 512
	b1=$PID
	# A docker client whose daemon never answers: every call hangs.
	cat >"$BATS_TEST_TMPDIR/docker" <<-'EOS'
		#!/bin/bash
		echo "$*" >>"${0%/*}/docker.calls"
		exec sleep 60
	EOS
	chmod +x "$BATS_TEST_TMPDIR/docker"

	GPUSLATE_DOCKER=$BATS_TEST_TMPDIR/docker run --separate-stderr gs reclaim -y --json --timeout 2
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_dead "$a1" "$a2" "$b1"
	# The first question used up the plan's 2 s; the rest were not asked
	# (before: one 2 s question per target, 6 s in all).
	assert_eq "$(wc -l <"$BATS_TEST_TMPDIR/docker.calls")" 1 "docker calls: $(cat "$BATS_TEST_TMPDIR/docker.calls")"
	assert_eq "$(jqo '[.plan.targets[].owner.kind] | unique | join(",")')" docker "owner"
}

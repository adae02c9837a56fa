#!/usr/bin/env bats
# No grace period where SIGTERM cannot work (issue 15 item 1): a process that
# set SIGTERM to SIG_IGN, or that is PID 1 of its own PID namespace without a
# SIGTERM handler (a container's main process started without an init), never
# sees SIGTERM; gpuslate sends SIGKILL at once instead of waiting out the
# grace period. A handler keeps the grace period, and so does a SIGTERM that
# is only blocked (it is delivered once unblocked). Real processes, real
# signals, real PID namespaces; --grace 30s makes a wasted grace period fail
# the time bound.

load helpers

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }
target_json() { jqo ".plan.targets[] | select(.pid == $1) | $2"; }

# Well under the 30 s grace period, with room for a loaded 2-core machine.
BOUND_MS=10000

# ns_holder NAME [gs-holder options]: a holder that is PID 1 of a new PID
# namespace (unshare --pid --fork), as a container's main process is. Its
# host PID (what gpuslate and the driver see) goes to NSHOST. The holder
# writes its own namespace's pid (1) into its ready file, so the file is
# never given to launch/track by pid; the host pid is tracked instead.
ns_holder() {
	local name=$1 rf u kids
	shift
	rf=$BATS_TEST_TMPDIR/$name.nsready
	bg "$name" env FAKE_NVML_PID_FROM_LOCK=1 unshare --pid --fork --mount-proc --kill-child \
		"$GS_HOLDER" --ready-file "$rf" "$@"
	u=$BG_PID
	wait_for 10 test -f "$rf"
	assert_eq "$(ready_values "$rf" pid)" 1 "pid inside the namespace"
	kids=$(cat "/proc/$u/task/$u/children")
	NSHOST=${kids%% *}
	[ -n "$NSHOST" ] && [ "$NSHOST" != 1 ]
	track "$NSHOST"
	# The kernel's view: the last NSpid field is 1.
	assert_match "$(grep '^NSpid:' "/proc/$NSHOST/status")" "[[:space:]]1\$" "NSpid of $NSHOST"
}

@test "sigterm: a holder that sets SIGTERM to SIG_IGN gets SIGKILL at once, not after --grace" {
	start_holder ign --gpu 0 --mib 4096 --sigign-term
	p=$(rpid ign)

	run --separate-stderr gs reclaim --dry-run --grace 30s
	assert_status 0
	assert_match "$output" "^ *$p +root .* SIGTERM ignored: SIGKILL at once\$" "plan line"

	t0=$(now_ms)
	run --separate-stderr gs reclaim -y --grace 30s --json
	t1=$(now_ms)
	assert_status 0
	[ $((t1 - t0)) -lt $BOUND_MS ] || { echo "took $((t1 - t0)) ms with --grace 30s" >&2; false; }
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(target_json "$p" '"\(.action) \(.sigterm_dropped)"')" "kill ignored" "plan target"
	assert_eq "$(proc_json "$p" '"\(.action) \(.sigterm_dropped) \(.signals | join(",")) \(.outcome)"')" \
		"kill ignored SIGKILL killed" "stop result"
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "true 0" "GPU 0"
	assert_dead "$p"
}

@test "sigterm: the report says why there was no SIGTERM" {
	start_holder ign --gpu 1 --mib 1024 --sigign-term
	p=$(rpid ign)

	run --separate-stderr gs reclaim -y --grace 30s
	assert_status 0
	assert_match "$output" "^ *$p +gs-holder +signals KILL +killed in [0-9.]+ s \(SIGTERM ignored: SIGKILL at once\)\$" \
		"process line"
	assert_dead "$p"
}

@test "sigterm: PID 1 of its own PID namespace without a handler gets SIGKILL at once" {
	require_pidns
	ns_holder nsinit --gpu 0 --mib 4096 --term-default
	p=$NSHOST

	run --separate-stderr gs reclaim --dry-run --grace 30s
	assert_match "$output" "^ *$p +root .* PID 1 of its namespace without a SIGTERM handler: SIGKILL at once\$" \
		"plan line"

	t0=$(now_ms)
	run --separate-stderr gs reclaim -y --grace 30s --json
	t1=$(now_ms)
	assert_status 0
	[ $((t1 - t0)) -lt $BOUND_MS ] || { echo "took $((t1 - t0)) ms with --grace 30s" >&2; false; }
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(target_json "$p" '"\(.action) \(.sigterm_dropped)"')" "kill namespace-init" "plan target"
	assert_eq "$(proc_json "$p" '"\(.action) \(.sigterm_dropped) \(.signals | join(",")) \(.outcome)"')" \
		"kill namespace-init SIGKILL killed" "stop result"
	assert_dead "$p"
	bg_wait nsinit 10
}

@test "sigterm: PID 1 of its own PID namespace with a handler keeps its grace and exits on SIGTERM" {
	require_pidns
	ns_holder nshandler --gpu 0 --mib 2048
	p=$NSHOST

	t0=$(now_ms)
	run --separate-stderr gs reclaim -y --grace 30s --json
	t1=$(now_ms)
	assert_status 0
	[ $((t1 - t0)) -lt $BOUND_MS ] || { echo "took $((t1 - t0)) ms with --grace 30s" >&2; false; }
	assert_eq "$(target_json "$p" '"\(.action) \(.sigterm_dropped)"')" "signal null" "plan target"
	assert_eq "$(proc_json "$p" '"\(.action) \(.signals | join(",")) \(.outcome)"')" \
		"signal SIGTERM,SIGCONT exited-after-term" "stop result"
	assert_dead "$p"
	# The holder's handler exits 0: the namespace ended by SIGTERM, not SIGKILL.
	bg_wait nshandler 10
	assert_eq "$BG_STATUS" 0 "exit status of the namespace"
}

@test "sigterm: a holder that only blocks SIGTERM still gets SIGTERM and the grace period" {
	start_holder blk --gpu 0 --mib 1024 --block-term
	p=$(rpid blk)
	assert_match "$(grep '^SigBlk:' "/proc/$p/status")" "[0-9a-f]*[4-7c-f][0-9a-f]{3}\$" "SIGTERM blocked"

	t0=$(now_ms)
	run --separate-stderr gs reclaim -y --grace 1 --json
	t1=$(now_ms)
	assert_status 0
	assert_eq "$(target_json "$p" '"\(.action) \(.sigterm_dropped)"')" "signal null" "plan target"
	assert_eq "$(proc_json "$p" '"\(.action) \(.signals | join(",")) \(.outcome)"')" \
		"signal SIGTERM,SIGCONT,SIGKILL killed" "stop result"
	awk -v e="$(proc_json "$p" .exited_after_s)" 'BEGIN { exit !(e >= 1) }' ||
		{ echo "exited after $(proc_json "$p" .exited_after_s) s, before the 1 s grace" >&2; false; }
	[ $((t1 - t0)) -ge 1000 ] || { echo "took $((t1 - t0)) ms, less than the grace period" >&2; false; }
	assert_dead "$p"
}

@test "sigterm: decided on the dispositions at the signal: a handler installed after the plan gets SIGTERM" {
	command -v script >/dev/null || skip "script (util-linux) is not installed"
	start_holder late --gpu 0 --mib 1024 --sigign-term --handle-term-on-usr1
	p=$(rpid late)
	out=$BATS_TEST_TMPDIR/late.json

	# The plan is made and shown; gpuslate waits for the answer.
	pty_start confirm "$GPUSLATE_BIN reclaim --grace 30s --json >$out"
	wait_for 20 pty_shows confirm "Proceed?"
	# Now the holder installs a SIGTERM handler (bit 15 of SigCgt).
	kill -USR1 "$p"
	wait_for 5 eval 'grep -Eq "^SigCgt:.*[4-7c-f][0-9a-f]{3}\$" "/proc/$p/status"'
	t0=$(now_ms)
	pty_type confirm y
	bg_wait confirm 30
	t1=$(now_ms)
	assert_eq "$BG_STATUS" 0 "exit status"
	[ $((t1 - t0)) -lt $BOUND_MS ] || { echo "took $((t1 - t0)) ms with --grace 30s" >&2; false; }
	output=$(cat "$out")
	assert_eq "$(target_json "$p" '"\(.action) \(.sigterm_dropped)"')" "kill ignored" "plan target (at the plan)"
	assert_eq "$(proc_json "$p" '"\(.action) \(.sigterm_dropped) \(.signals | join(",")) \(.outcome)"')" \
		"signal null SIGTERM,SIGCONT exited-after-term" "stop result (at the signal)"
	assert_dead "$p"
}

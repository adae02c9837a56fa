#!/usr/bin/env bats
# Review of the restarter changes (issue 14): a launcher between a target
# and the loop that restarts it. Real processes and signals; the restarted
# holder takes 3 s to open the GPU, as a PyTorch process importing does.

load helpers

# wrapped NAME LAUNCHER...: a bash loop script that runs
# `LAUNCHER... gs-holder` again each time it ends (the shape of
# `while true; do timeout 600 python train.py; done`). Writes
# NAME.ready when a holder holds. Sets SUP (the loop) and FIRST.
wrapped() {
	local name=$1 d=$BATS_TEST_TMPDIR
	shift
	cat >"$d/$name.sh" <<-'EOF'
		name=$1
		shift
		while true; do
			"$@" "$GS_HOLDER" --gpu 0 --mib 1024 --delay-open-ms 3000 --ready-file "$name.ready" \
				-- python3 train.py
			sleep 0.2
		done
	EOF
	GS_HOLDER=$GS_HOLDER bash "$d/$name.sh" "$d/$name" "$@" </dev/null >"$d/$name.log" 2>&1 3>&- &
	SUP=$!
	track "$SUP"
	wait_for 15 test -f "$d/$name.ready"
	FIRST=$(rpid "$name")
	track "$FIRST"
}

# holders_under PID: gs-holder processes descending from PID, other than FIRST.
new_holder_under() {
	local p
	for p in $(descendants "$1" | cut -d" " -f1); do
		if [ "$p" != "$FIRST" ] && [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$GS_HOLDER")" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

@test "rv14: a bash loop restarting 'timeout 600 holder': the loop is seen through the launcher, not clean" {
	wrapped sup timeout 600
	launcher=$(awk '{print $4}' "/proc/$FIRST/stat")
	assert_eq "$(cat "/proc/$launcher/comm")" timeout "the holder's parent"

	run --separate-stderr gs reclaim -y --json
	wait_for 10 new_holder_under "$SUP"
	second=$(new_holder_under "$SUP")
	track "$second"
	assert_dead "$FIRST"
	# What a user sees after trusting the verdict: the GPU held again.
	wait_for 10 eval '[ "$(gpu_used 0)" = 1024 ]'
	assert_eq "$(jqo .verdict)" not-clean "verdict (GPU 0 is held again 3 s later by $second)"
	assert_status 1
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $FIRST) | .restarter | \"\(.kind) \(.pid) \(.handling)\"")" \
		"parent $SUP watched" "restarter in the plan: the loop above timeout"
	assert_eq "$(jqo '.respawns[0] | "\(.by) \(.stop_with) \(.before_gpu)"')" "parent $SUP (bash) --include-parent true" \
		"respawned by (the new timeout, before its holder opened the GPU)"
}

@test "rv14: --include-parent stops the loop above 'timeout 600 holder': clean, and it stays clean" {
	wrapped sup timeout 600

	run --separate-stderr gs reclaim -y --include-parent --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$SUP,$FIRST" "targets, the loop first"
	assert_dead "$SUP" "$FIRST"
	# Longer than the loop's pause and a new holder's 3 s before opening.
	stays_for 4.5 eval '[ "$(gpu_used 0)" = 0 ] && ! new_holder_under "$SUP"'
}

@test "rv14: 'while true; do timeout 600 holder; done' typed at an interactive shell: watched through timeout, not clean, the shell never stopped" {
	pty_start sh "bash --norc --noprofile -i"
	pty_type sh "while true; do timeout 600 '$GS_HOLDER' --gpu 0 --mib 1024 --delay-open-ms 3000 --ready-file '$BATS_TEST_TMPDIR/h.ready' -- python3 train.py; done"
	wait_for 15 test -f "$BATS_TEST_TMPDIR/h.ready"
	FIRST=$(rpid h)
	track "$FIRST"
	launcher=$(awk '{print $4}' "/proc/$FIRST/stat")
	shell=$(awk '{print $4}' "/proc/$launcher/stat")
	track "$shell" sup
	assert_eq "$(cat "/proc/$launcher/comm") $(cat "/proc/$shell/comm")" "timeout bash" "the holder's parent and grandparent"

	run --separate-stderr gs reclaim -y --include-parent --json
	wait_for 10 new_holder_under "$shell"
	track "$(new_holder_under "$shell")"
	assert_dead "$FIRST"
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_status 1
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$FIRST" "targets: never the shell"
	assert_match "$(jqo '.respawns[0].by')" "^parent $shell \\(bash\\)$" "respawned by"
	assert_alive "$shell"
}

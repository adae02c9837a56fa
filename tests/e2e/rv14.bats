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
}

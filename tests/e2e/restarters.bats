#!/usr/bin/env bats
# What brings a target back (issue 14, section 1): a supervising parent (a
# bash `while true` loop, the shape of supervisord, torchrun's elastic agent
# or a Ray raylet) restarts its holder; the restarted process imports for
# seconds before it opens the GPU (gs-holder --delay-open-ms), so a watch
# for new GPU holders alone would call the GPUs clean. Real processes, real
# signals; the respawn must be reported, or the parent stopped with
# --include-parent, and the verdict must hold afterwards.

load helpers

# loop NAME PAUSE DELAY_MS: a bash loop (a script, as supervisors are run)
# that starts a holder of GPU 0 whose open takes DELAY_MS, waits for it to
# end, sleeps PAUSE and starts it again. Every start writes NAME.child (its
# pid, once running) and, once holding, NAME.ready. Sets SUP (the loop's
# pid) and FIRST (the first holder's).
loop() {
	local name=$1 d=$BATS_TEST_TMPDIR
	cat >"$d/$name.sh" <<-'EOF'
		while true; do
			"$GS_HOLDER" --gpu 0 --mib 2048 --delay-open-ms "$3" --ready-file "$1.ready" \
				-- python3 train.py --model llama &
			echo $! >"$1.child"
			wait $!
			sleep "$2"
		done
	EOF
	GS_HOLDER=$GS_HOLDER bash "$d/$name.sh" "$d/$name" "$2" "$3" </dev/null >"$d/$name.log" 2>&1 3>&- &
	SUP=$!
	track "$SUP"
	wait_for 15 test -f "$d/$name.ready"
	FIRST=$(cat "$d/$name.child")
	track "$FIRST"
}

# child_of NAME: the loop's current holder pid.
child_of() { cat "$BATS_TEST_TMPDIR/$1.child"; }

@test "restarters: a bash loop whose child takes 3 s to reopen the GPU: respawn reported at once, not clean, exit 1" {
	loop sup 0.2 3000

	run --separate-stderr gs reclaim -y --json
	wait_for 10 eval '[ "$(child_of sup)" != "$FIRST" ]'
	second=$(child_of sup)
	track "$second"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '.respawn_watch_s >= 2.5')" true "a supervising parent's watch: $(jqo .respawn_watch_s) s"
	assert_dead "$FIRST"
	assert_alive "$SUP" "$second"
	assert_eq "$(jqo '[.respawns[].pid] | map(tostring) | join(",")')" "$second" "respawns"
	assert_eq "$(jqo '.respawns[0] | "\(.by) \(.stop_with) \(.before_gpu)"')" "parent $SUP (bash) --include-parent true" \
		"respawned by"
	# Seen before it opened the GPU: the new holder held nothing yet.
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib) \(.held_by | length)"')" \
		"true 0 0" "GPU 0 at the verdict"
	assert_match "$(jqo .summary)" "not clean: $second respawned by parent $SUP \\(bash\\), --include-parent would stop it" \
		summary
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $FIRST) | .restarter | \"\(.kind) \(.pid) \(.name) \(.handling)\"")" \
		"parent $SUP bash watched" "restarter in the plan"
	# ... and the loop does bring the memory back.
	wait_for 10 eval '[ "$(gpu_used 0)" = 2048 ]'
}

@test "restarters: --include-parent stops the bash loop first, then its holder: clean, and it stays clean" {
	loop sup 0.2 3000

	run --separate-stderr gs reclaim -y --include-parent --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$SUP,$FIRST" "targets, the parent first"
	assert_eq "$(jqo '.plan.targets[0] | "\(.why) \(.why_pid) \(.restarter.handling)"')" \
		"supervising parent of a target (--include-parent) $FIRST stopped (--include-parent)" "the parent"
	assert_eq "$(jqo '.respawns | length')" 0 respawns
	assert_dead "$SUP" "$FIRST"
	# Longer than the loop's pause and its child's 3 s before opening.
	stays_for 4.5 eval '[ "$(gpu_used 0)" = 0 ] && [ "$(child_of sup)" = "$FIRST" ]'
}

@test "restarters: a supervisor that sleeps 1 s before restarting is still caught by the watch" {
	# 1 s: 1.5 s of room below a supervising parent's 2.5 s watch on a
	# loaded machine.
	loop sup 1 1000

	run --separate-stderr gs reclaim -y --json
	wait_for 10 eval '[ "$(child_of sup)" != "$FIRST" ]'
	second=$(child_of sup)
	track "$second"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '[.respawns[].pid] | map(tostring) | join(",")')" "$second" "respawns"
	assert_match "$(jqo '.respawns[0].by')" "^parent $SUP " "respawned by"
}

@test "restarters: the watch ends early when the watched parent exits (nothing can restart through it)" {
	# A parent that runs its holder once: `bash -c` is not typed into, so
	# it is a supervising parent and watched; it exits after its child.
	launch once bash -c '"$1" --gpu 0 --mib 1024 --ready-file "$2"; exit 0' _ "$GS_HOLDER" "$BATS_TEST_TMPDIR/once.ready"
	child=$(rpid once)
	parent=$(awk '{print $4}' "/proc/$child/stat")

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo ".plan.targets[0].restarter | \"\(.kind) \(.pid) \(.handling)\"")" "parent $parent watched" restarter
	assert_dead "$child" "$parent"
	# Without the early end the watch alone would take 2.5 s.
	assert_match "$(jqo .elapsed_s)" "^[01]\\." "elapsed (s)"
}

@test "restarters: a holder started from an interactive shell: the shell is no restarter, no false respawn, clean" {
	pty_start sh "bash --norc --noprofile -i"
	pty_type sh "'$GS_HOLDER' --gpu 0 --mib 1024 --ready-file '$BATS_TEST_TMPDIR/h.ready' -- python3 notebook.py"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/h.ready"
	h=$(rpid h)
	track "$h"
	shell=$(awk '{print $4}' "/proc/$h/stat")
	assert_eq "$(cat "/proc/$shell/comm")" bash "the holder's parent"

	run --separate-stderr gs reclaim -y --include-parent --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$h" "targets: never the shell"
	assert_eq "$(jqo '.plan.targets[0].restarter')" null restarter
	assert_eq "$(jqo '.respawns | length')" 0 respawns
	assert_dead "$h"
}

@test "restarters: a holder whose parent only launched it (timeout) gets no respawn watch" {
	timeout 600 "$GS_HOLDER" --gpu 0 --mib 1024 --ready-file "$BATS_TEST_TMPDIR/t.ready" -- python3 job.py \
		</dev/null >/dev/null 2>&1 3>&- &
	launcher=$!
	track "$launcher"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	h=$(rpid t)
	track "$h"
	assert_eq "$(awk '{print $4}' "/proc/$h/stat")" "$launcher" "the holder's parent"

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '.plan.targets[0].restarter')" null restarter
	# timeout runs its program once: nothing can bring the holder back.
	assert_eq "$(jqo .respawn_watch_s)" 0 "respawn watch"
	assert_dead "$h"
}

# shell_child SHELL HOLDER: a child of SHELL running gs-holder, other than HOLDER.
shell_child() {
	local c
	for c in $(cat "/proc/$1/task/$1/children" 2>/dev/null); do
		if [ "$c" != "$2" ] && [ "$(readlink "/proc/$c/exe")" = "$(readlink -f "$GS_HOLDER")" ]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

@test "restarters: a loop typed at an interactive shell restarts its holder: the shell is watched, never named or stopped; not clean, exit 1" {
	# The restarted holder takes 3 s to open the GPU: longer than the
	# 1 s holder watch, so only its identity can give it away.
	pty_start sh "bash --norc --noprofile -i"
	pty_type sh "while true; do '$GS_HOLDER' --gpu 0 --mib 1024 --delay-open-ms 3000 --ready-file '$BATS_TEST_TMPDIR/h.ready' -- python3 train.py; done"
	wait_for 15 test -f "$BATS_TEST_TMPDIR/h.ready"
	h=$(rpid h)
	track "$h"
	shell=$(awk '{print $4}' "/proc/$h/stat")
	track "$shell" sup
	assert_eq "$(cat "/proc/$shell/comm")" bash "the holder's parent"

	run --separate-stderr gs reclaim -y --include-parent --json
	wait_for 10 shell_child "$shell" "$h"
	second=$(shell_child "$shell" "$h")
	track "$second"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$h" "targets: never the shell"
	assert_eq "$(jqo '.plan.targets[0].restarter')" null "restarter (an interactive shell is none)"
	assert_eq "$(jqo '[.respawns[] | "\(.pid) \(.by) \(.before_gpu)"] | join(";")')" "$second parent $shell (bash) true" respawns
	assert_match "$(jqo .summary)" "not clean: $second respawned by parent $shell \\(bash\\)" summary
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | .memory_after_mib')" 0 "GPU 0 at the verdict: nothing held yet"
	assert_dead "$h"
	assert_alive "$shell" "$second"
}

@test "restarters: the plan shows the supervising parent (text and JSON) and a dry run changes nothing" {
	loop sup 0.2 0

	run --separate-stderr gs reclaim --dry-run
	assert_status 0
	assert_match "$output" "Restarters \\(what would bring a target back\\):" "text plan"
	assert_match "$output" "parent $SUP \\(bash\\) restarts $FIRST: watched \\(stop it with --include-parent\\)" "text plan"

	run --separate-stderr gs reclaim --dry-run --include-parent --json
	assert_status 0
	assert_eq "$(jqo '.plan.targets[0] | "\(.pid) \(.action) \(.restarter.kind) \(.restarter.handling)"')" \
		"$SUP signal parent stopped (--include-parent)" "JSON plan"
	assert_alive "$SUP" "$FIRST"
}

@test "restarters: --include-parent leaves alone a parent whose end would end a holder of an unselected GPU" {
	# A supervisor that ends all its workers on SIGTERM (torchrun's agent,
	# a Ray raylet do): stopping it for the GPU 0 worker would end GPU 1's.
	cat >"$BATS_TEST_TMPDIR/sup.sh" <<-'EOF2'
		"$1" --gpu 0 --mib 1024 --ready-file "$2/a.ready" & a=$!
		"$1" --gpu 1 --mib 2048 --ready-file "$2/b.ready" & b=$!
		trap 'kill $a $b; exit 0' TERM
		wait
	EOF2
	bash "$BATS_TEST_TMPDIR/sup.sh" "$GS_HOLDER" "$BATS_TEST_TMPDIR" </dev/null >"$BATS_TEST_TMPDIR/sup.log" 2>&1 3>&- &
	track $!
	wait_for 10 test -f "$BATS_TEST_TMPDIR/a.ready" -a -f "$BATS_TEST_TMPDIR/b.ready"
	a=$(rpid a); b=$(rpid b)
	track "$a"; track "$b"
	sup=$(awk '{print $4}' "/proc/$a/stat")
	track "$sup"

	run --separate-stderr gs reclaim -y -g 0 --include-parent --json
	assert_status 0
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$a" "targets: never the supervisor"
	assert_eq "$(jqo '.plan.targets[0].restarter | "\(.kind) \(.pid) \(.handling)"')" "parent $sup watched" restarter
	assert_dead "$a"
	stays_for 1 assert_alive "$sup" "$b"
	assert_eq "$(gpu_used 1)" 2048 "GPU 1 still held by its job"
}

@test "restarters: a loop restarted by an outer loop: --include-parent's verdict holds" {
	# The parent stopped with --include-parent is itself restarted by its
	# own parent: its end must not end the watch early.
	cat >"$BATS_TEST_TMPDIR/inner.sh" <<-'EOF2'
		while true; do "$1" --gpu 0 --mib 1024 --delay-open-ms 800 --ready-file "$2/in.ready"; sleep 0.1; done
	EOF2
	cat >"$BATS_TEST_TMPDIR/outer.sh" <<-'EOF2'
		while true; do bash "$2/inner.sh" "$1" "$2"; sleep 0.1; done
	EOF2
	bash "$BATS_TEST_TMPDIR/outer.sh" "$GS_HOLDER" "$BATS_TEST_TMPDIR" </dev/null >"$BATS_TEST_TMPDIR/outer.log" 2>&1 3>&- &
	track $!
	wait_for 10 test -f "$BATS_TEST_TMPDIR/in.ready"
	first=$(rpid in)
	track "$first"
	outer=$(awk '{print $4}' "/proc/$(awk '{print $4}' "/proc/$first/stat")/stat")
	# A supervisor: teardown ends it first, then what it started (a
	# plain kill here left the inner loop it had restarted running).
	track "$outer" sup

	run --separate-stderr gs reclaim -y --include-parent --json
	assert_dead "$first"
	if [ "$(jqo .verdict)" = clean ]; then
		assert_status 0
		stays_for 3 eval '[ "$(gpu_used 0)" = 0 ]'
	else
		assert_status 1
		assert_match "$(jqo '.respawns | length')" "^[1-9]" respawns
	fi
}

# A launcher between a target and the loop that restarts it.
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

@test "restarters: a bash loop restarting 'timeout 600 holder': the loop is seen through the launcher, not clean" {
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

@test "restarters: --include-parent stops the loop above 'timeout 600 holder': clean, and it stays clean" {
	wrapped sup timeout 600

	run --separate-stderr gs reclaim -y --include-parent --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$SUP,$FIRST" "targets, the loop first"
	assert_dead "$SUP" "$FIRST"
	# Longer than the loop's pause and a new holder's 3 s before opening.
	stays_for 4.5 eval '[ "$(gpu_used 0)" = 0 ] && ! new_holder_under "$SUP"'
}

@test "restarters: 'while true; do timeout 600 holder; done' typed at an interactive shell: watched through timeout, not clean, the shell never stopped" {
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

# wrapper_loop: `while true; do bash train.sh; sleep 0.2; done`, where
# train.sh runs the holder without exec (its last line follows it), the
# holder taking 3 s to open the GPU. Sets SUP (the loop), WRAPPER (the
# train.sh shell) and FIRST (the holder).
wrapper_loop() {
	local d=$BATS_TEST_TMPDIR
	cat >"$d/train.sh" <<-'EOF'
		"$GS_HOLDER" --gpu 0 --mib 1024 --delay-open-ms 3000 --ready-file "$1.ready" -- python3 train.py
		echo "train.sh: the job ended ($?)"
	EOF
	cat >"$d/loop.sh" <<-'EOF'
		while true; do bash "$2/train.sh" "$1"; sleep 0.2; done
	EOF
	GS_HOLDER=$GS_HOLDER bash "$d/loop.sh" "$d/w" "$d" </dev/null >"$d/loop.log" 2>&1 3>&- &
	SUP=$!
	track "$SUP" sup
	wait_for 15 test -f "$d/w.ready"
	FIRST=$(rpid w)
	track "$FIRST"
	WRAPPER=$(awk '{print $4}' "/proc/$FIRST/stat")
	track "$WRAPPER"
	assert_eq "$(awk '{print $4}' "/proc/$WRAPPER/stat")" "$SUP" "the wrapper's parent is the loop"
}

@test "restarters: a loop around a wrapper script (no exec): the loop is the restarter, seen through the wrapper; not clean" {
	wrapper_loop

	run --separate-stderr gs reclaim -y --json
	wait_for 10 new_holder_under "$SUP"
	track "$(new_holder_under "$SUP")"
	assert_dead "$FIRST"
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_status 1
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $FIRST) | .restarter | \"\(.kind) \(.pid) \(.handling)\"")" \
		"parent $SUP watched" "restarter: the loop above the wrapper"
	assert_eq "$(jqo '.respawns[0] | "\(.by) \(.before_gpu)"')" "parent $SUP (bash) true" "respawned by the loop"
}

@test "restarters: --include-parent stops the loop, then the wrapper script, then the holder: clean, and it stays clean" {
	wrapper_loop

	run --separate-stderr gs reclaim -y --include-parent --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$SUP,$WRAPPER,$FIRST" "targets, outermost first"
	assert_dead "$SUP" "$WRAPPER" "$FIRST"
	stays_for 4.5 eval '[ "$(gpu_used 0)" = 0 ] && ! new_holder_under "$SUP"'
}

@test "restarters: a loop typed at an interactive shell that pauses 1.5 s before restarting is still caught (2.5 s watch)" {
	pty_start sh "bash --norc --noprofile -i"
	pty_type sh "while true; do '$GS_HOLDER' --gpu 0 --mib 1024 --ready-file '$BATS_TEST_TMPDIR/h.ready' -- python3 train.py; sleep 1.5; done"
	wait_for 15 test -f "$BATS_TEST_TMPDIR/h.ready"
	FIRST=$(rpid h)
	track "$FIRST"
	shell=$(awk '{print $4}' "/proc/$FIRST/stat")
	track "$shell" sup

	run --separate-stderr gs reclaim -y --json
	wait_for 10 new_holder_under "$shell"
	track "$(new_holder_under "$shell")"
	assert_dead "$FIRST"
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_status 1
	assert_match "$(jqo '.respawns[0].by')" "^parent $shell \\(bash\\)$" "respawned by"
}

# Issue 24: supervisors restart with new arguments (run ids, ports, seeds),
# through launchers, or later than the watch.

# argloop NAME PAUSE SCRIPT_BODY: a bash loop script NAME.sh running
# SCRIPT_BODY ($H is gs-holder, $R the ready file) then sleeping PAUSE, for
# ever. Sets SUP and FIRST (once the first holder is ready).
argloop() {
	local name=$1 pause=$2 body=$3 d=$BATS_TEST_TMPDIR
	printf 'H=$1 R=$2\nwhile true; do\n%s\nsleep %s\ndone\n' "$body" "$pause" >"$d/$name.sh"
	bash "$d/$name.sh" "$GS_HOLDER" "$d/$name.ready" </dev/null >"$d/$name.log" 2>&1 3>&- &
	SUP=$!
	track "$SUP" sup
	wait_for 15 test -f "$d/$name.ready"
	FIRST=$(rpid "$name")
	track "$FIRST"
}

# end_loop: the loop first (it starts nothing more), then whatever it started.
end_loop() {
	local p
	kill -KILL "$SUP" 2>/dev/null || true
	wait_for 10 dead "$SUP"
	while p=$(new_holder_under_any); do kill -KILL "$p"; wait_for 10 dead "$p"; done
}
new_holder_under_any() {
	local p
	for p in $(pgrep -f -- "--ready-file $BATS_TEST_TMPDIR/" || true); do
		[ "$p" != "$FIRST" ] && [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$GS_HOLDER")" ] &&
			{ echo "$p"; return 0; }
	done
	return 1
}

@test "restarters: a loop that restarts its job with new arguments (a run id) is caught by the program: not clean, exit 1" {
	argloop sup 0.2 '"$H" --gpu 0 --mib 1024 --delay-open-ms 3000 --ready-file "$R" -- python3 train.py --run $RANDOM'

	run --separate-stderr gs reclaim -y --json
	wait_for 10 new_holder_under "$SUP"
	second=$(new_holder_under "$SUP")
	track "$second"
	assert_dead "$FIRST"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean "verdict"
	assert_eq "$(jqo '.respawns[0] | "\(.by) \(.before_gpu)"')" "parent $SUP (bash) true" "respawned by the loop, before the GPU"
	end_loop
}

@test "restarters: a restart through new launchers (timeout, nice) with new arguments is the program again: not clean" {
	argloop sup 0.2 'timeout 600 nice -n 1 "$H" --gpu 0 --mib 1024 --delay-open-ms 3000 --ready-file "$R" -- python3 train.py --port $((20000 + RANDOM % 1000))'

	run --separate-stderr gs reclaim -y --json
	wait_for 10 new_holder_under "$SUP"
	track "$(new_holder_under "$SUP")"
	assert_dead "$FIRST"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean "verdict"
	assert_eq "$(jqo '.respawns[0].by')" "parent $SUP (bash)" "respawned by the loop"
	end_loop
}

@test "restarters: a script that goes on to a second GPU program once the first is stopped: not clean" {
	d=$BATS_TEST_TMPDIR
	# train, then eval: the script is the first one's supervising parent.
	cat >"$d/job.sh" <<-'EOF'
		"$1" --gpu 0 --mib 1024 --ready-file "$2" -- python3 train.py
		"$1" --gpu 0 --mib 1024 --delay-open-ms 3000 --ready-file "$2.eval" -- python3 eval.py
	EOF
	bash "$d/job.sh" "$GS_HOLDER" "$d/job.ready" </dev/null >"$d/job.log" 2>&1 3>&- &
	SUP=$!
	track "$SUP" sup
	wait_for 15 test -f "$d/job.ready"
	FIRST=$(rpid job)
	track "$FIRST"

	run --separate-stderr gs reclaim -y --json
	wait_for 10 new_holder_under "$SUP"
	track "$(new_holder_under "$SUP")"
	assert_dead "$FIRST"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean "verdict (the GPU is about to be held by eval)"
	end_loop
}

@test "restarters: a loop that restarts after 6 s: clean, with the loop named on its own line and in JSON; --respawn-watch 10s catches it" {
	# date and sleep run meanwhile: helpers of the loop, never a respawn.
	argloop sup 6 '"$H" --gpu 0 --mib 1024 --ready-file "$R" -- python3 train.py --run $RANDOM
date >/dev/null; echo restarting'

	run --separate-stderr gs reclaim -y
	assert_status 0
	assert_match "$output" "^Verdict: clean" "verdict"
	assert_match "$output" "Restarter still running: $SUP \\(bash\\) may start its program again after the 2\\.5 s watched; --include-parent stops it, --respawn-watch TIME" "named"
	assert_dead "$FIRST"
	end_loop

	argloop sup2 6 '"$H" --gpu 0 --mib 1024 --ready-file "$R" -- python3 train.py --run $RANDOM
date >/dev/null; echo restarting'
	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo '.restarters_alive | map("\(.pid) \(.comm) \(.restarted) \(.stop_with)") | join(",")')" \
		"$SUP bash false --include-parent" "restarters_alive"
	assert_eq "$(jqo '.respawns | length')" 0 "no respawn: date and sleep are the loop's helpers"
	end_loop

	argloop sup3 6 '"$H" --gpu 0 --mib 1024 --delay-open-ms 3000 --ready-file "$R" -- python3 train.py --run $RANDOM
date >/dev/null; echo restarting'
	run --separate-stderr gs reclaim -y --respawn-watch 10s --json
	assert_status 1
	assert_eq "$(jqo '"\(.verdict) \(.respawn_watch_s)"')" "not-clean 10" "verdict, watched"
	assert_eq "$(jqo '.respawns[0].by')" "parent $SUP (bash)" "respawned by the loop"
	assert_eq "$(jqo '.restarters_alive[0].restarted')" true "the loop restarted it"
	end_loop
}

@test "restarters: a loop around a job script (train; eval): eval, started by the old script, is the GPU about to be held again: not clean" {
	d=$BATS_TEST_TMPDIR
	cat >"$d/job.sh" <<-'EOF2'
		"$1" --gpu 0 --mib 1024 --ready-file "$2" -- python3 train.py
		"$1" --gpu 0 --mib 1024 --delay-open-ms 4000 --ready-file "$2.eval" -- python3 eval.py
	EOF2
	argloop sup 30 'bash '"$d"'/job.sh "$H" "$R"'

	run --separate-stderr gs reclaim -y --json
	assert_dead "$FIRST"
	wait_for 10 test -f "$d/sup.ready.eval"
	# eval holds the GPU now, ~4 s after the stop.
	assert_eq "$(gpu_used 0)" 1024 "GPU 0 after the verdict"
	assert_eq "$(jqo .verdict)" not-clean "verdict (eval was started by job.sh during the watch)"
	assert_status 1
	end_loop
}

@test "restarters: --respawn-watch longer than --timeout is a usage error naming both (the wait would cut the watch short)" {
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	run --separate-stderr gs reclaim -y --respawn-watch 20s --timeout 3 --json
	assert_status 2
	assert_one_error "$stderr" "--respawn-watch 20s is longer than --timeout 3s"
	assert_alive "$a"
}

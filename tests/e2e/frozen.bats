#!/usr/bin/env bats
# Holders frozen by the cgroup freezer (issue 11 item 16): `docker pause`,
# `podman pause`, or a write to cgroup.freeze / freezer.state. Measured on
# this project's test machines (kernel 6.x):
#   cgroup v2: a frozen task sleeps (state S) in the signal code; a handled
#     SIGTERM waits for the thaw, SIGKILL ends it at once.
#   cgroup v1: a frozen task sleeps in state D (the refrigerator); even
#     SIGKILL waits until the cgroup is thawed, then takes effect.
# So gpuslate does not wait the grace period for a frozen target (SIGTERM
# cannot be handled), sends SIGKILL at once, and never thaws anything (a thaw
# resumes every process of the cgroup, selected or not, and undoes someone's
# pause). What SIGKILL cannot end (v1) is reported as "frozen", with the
# cgroup and the command that frees it, never as "only a GPU reset or reboot
# frees it".

load helpers

setup_file() {
	export WORLD_SHARED=$BATS_FILE_TMPDIR/shared
	export GS_HOST_BASE=$WORLD_SHARED
	mkdir -p "$WORLD_SHARED"
	export WORLD_DOCKER_REASON DOCKER
	WORLD_DOCKER_REASON=$(world_runtime_reason docker)
	[ -n "$WORLD_DOCKER_REASON" ] || world_docker_start "$BATS_FILE_TMPDIR/docker"
}

teardown_file() { world_teardown_file; }

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }

# in_cgroup PID DIR: moves PID into the cgroup directory DIR.
in_cgroup() { echo "$1" >"$2/cgroup.procs"; }

v2_frozen() { grep -qx 'frozen 1' "$1/cgroup.events"; }
v1_frozen() { [ "$(cat "$1/freezer.state")" = FROZEN ]; }

# require_v1_freezer: a cgroup of this test in the v1 freezer hierarchy, in
# V1_CG (its path in the hierarchy) and V1_DIR; thawed and removed at
# teardown, after the processes (the cgroup must be empty to go).
require_v1_freezer() {
	local root=/sys/fs/cgroup/freezer
	[ -f "$root/cgroup.procs" ] && [ ! -f "$root/cgroup.controllers" ] || skip "no cgroup v1 freezer hierarchy mounted"
	V1_CG=/gs-e2e-frozen-$$-$BATS_TEST_NUMBER
	V1_DIR=$root$V1_CG
	mkdir "$V1_DIR" || skip "cannot create a cgroup in $root"
	echo "echo THAWED >$V1_DIR/freezer.state" >>"$GS_WORLD_CLEANUP"
	echo "$V1_DIR" >>"$GS_CGROUPS"
}

@test "frozen (cgroup v2): SIGKILL at once without waiting the grace period; the cgroup is left frozen; GPU clean" {
	require_cgroups
	[ -f "$GS_CGROOT/cgroup.controllers" ] || skip "no cgroup v2 hierarchy"
	rel=gs-e2e-frozen-$$-$BATS_TEST_NUMBER/job
	cg=$(make_cgroup "$rel")
	echo "echo 0 >$cg/cgroup.freeze" >>"$GS_WORLD_CLEANUP"
	# gs-holder handles SIGTERM: frozen, the handler cannot run.
	start_holder job --gpu 0 --mib 2048
	p=$(rpid job)
	in_cgroup "$p" "$cg"
	echo 1 >"$cg/cgroup.freeze"
	wait_for 5 v2_frozen "$cg"

	T0=$(now_ms)
	run --separate-stderr gs reclaim -y --json --grace 60
	took=$(($(now_ms) - T0))
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(proc_json "$p" '"\(.outcome) \(.signals | join(","))"')" "killed SIGTERM,SIGCONT,SIGKILL" "outcome, signals"
	assert_eq "$(proc_json "$p" '"\(.frozen.freezer) \(.frozen.cgroup)"')" "v2 /$rel" "frozen by"
	assert_eq "$(proc_json "$p" .frozen.thaw)" "echo 0 > $cg/cgroup.freeze" "thaw command"
	[ "$took" -lt 30000 ] || { echo "took $took ms: the 60 s grace period was waited for" >&2; return 1; }
	assert_dead "$p"
	# gpuslate thawed nothing.
	assert_eq "$(cat "$cg/cgroup.freeze")" 1 "cgroup.freeze after the reclaim"
}

@test "frozen (cgroup v1 freezer): outcome frozen, not d-state; the report names the cgroup and the thaw; the thaw ends it" {
	require_v1_freezer
	start_holder job --gpu 1 --mib 1024
	p=$(rpid job)
	in_cgroup "$p" "$V1_DIR"
	echo FROZEN >"$V1_DIR/freezer.state"
	wait_for 5 v1_frozen "$V1_DIR"

	T0=$(now_ms)
	run --separate-stderr gs reclaim -y --json --grace 60 --timeout 1
	took=$(($(now_ms) - T0))
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(proc_json "$p" '"\(.outcome) \(.signals | join(","))"')" "frozen SIGTERM,SIGCONT,SIGKILL" "outcome, signals"
	assert_eq "$(proc_json "$p" '"\(.frozen.freezer) \(.frozen.cgroup)"')" "v1 $V1_CG" "frozen by"
	assert_eq "$(proc_json "$p" .frozen.thaw)" "echo THAWED > $V1_DIR/freezer.state" "thaw command"
	# Neither the grace period nor the wait after SIGKILL (5 s) for a
	# process that cannot die before the thaw.
	[ "$took" -lt 30000 ] || { echo "took $took ms" >&2; return 1; }
	assert_eq "$(proc_state "$p")" D "state of the frozen holder"

	run --separate-stderr gs reclaim -y --grace 60 --timeout 1
	assert_status 1
	assert_match "$output" "^ *$p +gs-holder +signals TERM\+CONT,KILL +frozen \(frozen by cgroup $V1_CG, cgroup v1 freezer: its SIGKILL is pending and ends it once thawed: echo THAWED > $V1_DIR/freezer.state\)\$" \
		"process line"
	assert_no_match "$output" "reset or reboot" "report"

	# What the report says frees it does.
	echo THAWED >"$V1_DIR/freezer.state"
	wait_for 5 dead "$p"
	assert_eq "$(gpu_used 1)" 0 "GPU 1 after the thaw"
}

@test "frozen (docker pause): the report says docker unpause <id>, and that frees it" {
	[ -z "$WORLD_DOCKER_REASON" ] || skip "$WORLD_DOCKER_REASON"
	world_container_run docker paused -- "$GS_HOLDER" --gpu 0 --mib 1500 --ready-file "$GS_HOST/p.ready"
	wait_for 10 test -f "$GS_HOST/p.ready"
	p=$CONTAINER_PID
	$DOCKER pause "$WORLD_CNAME" >/dev/null

	run --separate-stderr gs reclaim -y --json --grace 60 --timeout 1
	assert_eq "$(proc_json "$p" .frozen.thaw)" "docker unpause $CONTAINER_ID" "thaw command"
	case $(proc_json "$p" .frozen.freezer) in
	v1)
		# SIGKILL waits for the thaw: not clean until docker unpauses.
		assert_status 1
		assert_eq "$(proc_json "$p" .outcome)" frozen outcome
		assert_alive "$p"
		$DOCKER unpause "$WORLD_CNAME" >/dev/null
		wait_for 10 dead "$p"
		;;
	v2)
		assert_status 0
		assert_eq "$(proc_json "$p" .outcome)" killed outcome
		;;
	*)
		echo "frozen: $(proc_json "$p" .frozen)" >&2
		return 1
		;;
	esac
	assert_dead "$p"
	assert_eq "$(gpu_used 0)" 0 "GPU 0 at the end"
}

# A descendant taken with its target (--match selects only the parent)
# that survives the stop must keep the verdict from being clean: once its
# parent is gone it is no longer "a descendant of a target", and the wait's
# re-plan must not excuse its memory as a process left alone. Found by an
# adversarial review (a frozen survivor; the same path serves d-state,
# permission-denied and not-signalled ones).
survivor_under_match() { # EXTRA options for the descendant
	require_v1_freezer
	launch job setsid bash -c '"$1" --gpu 0 --mib 512 '"$*"' --ready-file "$2.child" -- otherjob &
		until [ -f "$2.child" ]; do sleep 0.01; done
		exec "$1" --gpu 0 --mib 1024 --ready-file "$2" -- trainjob' _ "$GS_HOLDER" "$BATS_TEST_TMPDIR/job.ready"
	parent=$(rpid job)
	child=$(ready_values "$BATS_TEST_TMPDIR/job.ready.child" pid)
	track "$child"
	run --separate-stderr gs reclaim -n --json --match trainjob
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $child) | .why")" "descendant of a target" "the child, planned"
	in_cgroup "$child" "$V1_DIR"
	echo FROZEN >"$V1_DIR/freezer.state"
	wait_for 5 v1_frozen "$V1_DIR"

	run --separate-stderr gs reclaim -y --json --match trainjob --grace 1 --timeout 2
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(proc_json "$child" .outcome)" frozen "the child's outcome"
	assert_eq "$(jqo ".gpus[] | select(.index == 0) | \"\(.clean) \(.held_by | map(tostring) | join(\",\"))\"")" \
		"false $child" "GPU 0"
	assert_dead "$parent"
	assert_alive "$child"
}

@test "frozen descendant of a --match target survives the stop: not clean, held by it (not excused as left alone)" {
	survivor_under_match
}

@test "frozen client-role descendant of a --match target survives the stop: not clean, never 'clean'" {
	survivor_under_match --client
}

#!/usr/bin/env bats
# gpuslate and real Docker and Podman containers (issue 13): for the file, a
# private dockerd (own data root, exec root, socket and containerd) and
# Podman with private storage (cgroupfs manager), no network, the image
# gs-world:1 imported from a tarball made here, containers holding the
# simulated GPU through a bind mount, with and without a restart policy.
# Each scenario runs for both runtimes; a runtime this machine cannot run
# skips its tests with the reason.

load helpers

setup_file() {
	export WORLD_SHARED=$BATS_FILE_TMPDIR/shared
	export GS_HOST_BASE=$WORLD_SHARED
	mkdir -p "$WORLD_SHARED"
	export WORLD_DOCKER_REASON WORLD_PODMAN_REASON DOCKER PODMAN
	WORLD_DOCKER_REASON=$(world_runtime_reason docker)
	[ -n "$WORLD_DOCKER_REASON" ] || world_docker_start "$BATS_FILE_TMPDIR/docker"
	WORLD_PODMAN_REASON=$(world_runtime_reason podman)
	[ -n "$WORLD_PODMAN_REASON" ] || world_podman_start "$BATS_FILE_TMPDIR/podman"
	# gpuslate asks and stops containers with the runtimes' own clients,
	# pointed at this file's daemon and storage.
	export GPUSLATE_DOCKER=${DOCKER:-} GPUSLATE_PODMAN=${PODMAN:-}
}

teardown_file() { world_teardown_file; }

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }

# use RUNTIME: skips unless it runs here; sets RT (its client command).
use() {
	local reason
	reason=$([ "$1" = docker ] && echo "$WORLD_DOCKER_REASON" || echo "$WORLD_PODMAN_REASON")
	[ -z "$reason" ] || skip "$reason"
	RUNTIME=$1
	RT=$(world_rt "$1")
}
running() { $RT inspect -f '{{.State.Running}} {{.RestartCount}}' "$1"; }
stays_down() { [ "$(running "$1")" = "false 0" ] && [ "$(gpu_used "$2")" = 0 ]; }

status_shows_owner() { # RUNTIME CGROUP-PREFIX
	use "$1"
	world_container_run "$RUNTIME" holder -- "$GS_HOLDER" --gpu 0 --mib 1500 --ready-file "$GS_HOST/h.ready"
	wait_for 10 test -f "$GS_HOST/h.ready"
	assert_eq "$(sed -n 's/^0:://p' "/proc/$CONTAINER_PID/cgroup")" "$2$CONTAINER_ID" "cgroup"

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo ".processes[] | select(.pid == $CONTAINER_PID) | \"\(.owner.kind) \(.owner.name) \(.memory_mib)\"")" \
		"$RUNTIME $CONTAINER_ID 1500" "owner and memory (listed under the host PID)"
}

stops_plain_container() {
	use "$1"
	world_container_run "$RUNTIME" plain -- "$GS_HOLDER" --gpu 1 --mib 2048 --ready-file "$GS_HOST/p.ready"
	wait_for 10 test -f "$GS_HOST/p.ready"
	p=$CONTAINER_PID

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(proc_json "$p" .outcome)" exited-after-term outcome
	assert_eq "$(jqo '.gpus[] | select(.index == 1) | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 2048 0" "GPU 1"
	assert_dead "$p"
	wait_for 10 eval '[ "$(running "$WORLD_CNAME")" = "false 0" ]'
	assert_eq "$($RT inspect -f '{{.State.ExitCode}}' "$WORLD_CNAME")" 0 "exit code"
}

# Whatever gpuslate does with a --restart=always container, its verdict must
# agree with what follows: clean only if the container stays down and the
# GPU stays free; otherwise the respawn is reported.
verdict_holds_with_restart_always() {
	use "$1"
	world_container_run "$RUNTIME" always --restart=always -- "$GS_HOLDER" --gpu 0 --mib 4096 --ready-file "$GS_HOST/a.ready"
	wait_for 10 test -f "$GS_HOST/a.ready"
	first=$CONTAINER_PID

	run --separate-stderr gs reclaim -y --json
	assert_dead "$first"
	if [ "$(jqo .verdict)" = clean ]; then
		assert_status 0
		stays_for 3 stays_down "$WORLD_CNAME" 0
	else
		assert_status 1
		wait_for 10 eval '[ "$(running "$WORLD_CNAME")" = "true 1" ]'
		second=$($RT inspect -f '{{.State.Pid}}' "$WORLD_CNAME")
		track "$second"
		assert_eq "$(jqo '[.respawns[].pid] | map(tostring) | join(",")')" "$second" "respawn reported"
	fi
}

stops_restart_always_through_runtime() {
	use "$1"
	world_container_run "$RUNTIME" always --restart=always -- "$GS_HOLDER" --gpu 0 --mib 4096 --ready-file "$GS_HOST/a.ready"
	wait_for 10 test -f "$GS_HOST/a.ready"
	first=$CONTAINER_PID
	t0=$(date +%s)

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '.respawns | length')" 0 respawns
	# The record says when: restore compares it with the container's
	# last exit.
	at=$(jq -r '.stopped[0].stopped_at' "$GPUSLATE_STATE_FILE.stopped")
	[ "$at" -ge "$t0" ] && [ "$at" -le "$(date +%s)" ] || { echo "stopped_at $at, not in [$t0, now]" >&2; return 1; }
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $first) | \"\(.action) \(.restarter.kind) \(.restarter.runtime) \(.restarter.policy) \(.restarter.handling)\"")" \
		"stop-container container $RUNTIME always stopped through its runtime" "plan"
	assert_match "$(jqo '.units[0] | "\(.runtime) \(.unit) \(.stopped) \(.command)"')" \
		"^$RUNTIME $CONTAINER_ID true .* stop -t 10 $CONTAINER_ID\$" "stopped through the runtime"
	assert_eq "$(proc_json "$first" .outcome)" stopped-with-unit outcome
	assert_dead "$first"
	stays_for 3 stays_down "$WORLD_CNAME" 0

	# What the reclaim stopped through the runtime, the runtime starts again.
	rm -f "$GS_HOST/a.ready"
	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_match "$(jqo '[.. | objects | select(has("runtime")) | .runtime] | join(",")')" "$RUNTIME" "restored through"
	wait_for 10 test -f "$GS_HOST/a.ready"
	assert_eq "$(running "$WORLD_CNAME" | cut -d' ' -f1)" true "running again"
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'
}

@test "docker: status shows a container's holder: owner docker <id>, its host PID, its memory" {
	status_shows_owner docker /docker/
}
@test "podman: status shows a container's holder: owner podman <id>, its host PID, its memory" {
	status_shows_owner podman /libpod_parent/libpod-
}
@test "docker: reclaim of a container without a restart policy: its process stops, the container exits, GPU clean" {
	stops_plain_container docker
}
@test "podman: reclaim of a container without a restart policy: its process stops, the container exits, GPU clean" {
	stops_plain_container podman
}
@test "docker --restart=always: never a clean verdict while docker brings the container back" {
	verdict_holds_with_restart_always docker
}
@test "podman --restart=always: never a clean verdict while podman brings the container back" {
	verdict_holds_with_restart_always podman
}
@test "docker --restart=always is stopped through docker, not respawned; the GPU stays clean" {
	stops_restart_always_through_runtime docker
}
@test "podman --restart=always is stopped through podman, not respawned; the GPU stays clean" {
	stops_restart_always_through_runtime podman
}

# restore (issue 14, section 3) starts a container again through its
# runtime. The record is written here as reclaim writes it for a container
# it stopped with `docker stop` / `podman stop` (docs/json.md, "The
# stopped-state file"); the runtime's client command comes from
# GPUSLATE_DOCKER / GPUSLATE_PODMAN, as for the stop.
restores_container() {
	use "$1"
	world_container_run "$RUNTIME" web -- "$GS_HOLDER" --gpu 0 --mib 1000 --ready-file "$GS_HOST/w.ready"
	wait_for 10 test -f "$GS_HOST/w.ready"
	first=$CONTAINER_PID
	$RT stop -t 1 "$WORLD_CNAME" >/dev/null
	wait_for 10 eval '[ "$(gpu_used 0)" = 0 ]'
	jq -n --arg rt "$RUNTIME" --arg id "$CONTAINER_ID" --arg name "$WORLD_CNAME" --argjson at "$(date +%s)" \
		'{schema_version: 1, stopped: [{kind: "container", runtime: $rt, name: $name, id: $id, container: null,
		  stopped_at: $at, reclaim: {started_at: $at, reason: null}, state_before: "running", enabled_before: null}]}' \
		>"$BATS_TEST_TMPDIR/stopped.json"
	install -m 0600 "$BATS_TEST_TMPDIR/stopped.json" "$GPUSLATE_STATE_FILE.stopped"
	export GPUSLATE_DOCKER=$DOCKER GPUSLATE_PODMAN=$PODMAN

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.outcome) \(.state_now) \(.command) \(.exit_status)"')" \
		"started stopped $RT start $CONTAINER_ID 0" "the start"
	assert_eq "$($RT inspect -f '{{.State.Running}}' "$WORLD_CNAME")" true "running again"
	track "$($RT inspect -f '{{.State.Pid}}' "$WORLD_CNAME")"
	wait_for 10 eval '[ "$(gpu_used 0)" = 1000 ]'
	[ ! -e "$GPUSLATE_STATE_FILE.stopped" ]

	# Recorded again while it runs: reported, not started twice.
	install -m 0600 "$BATS_TEST_TMPDIR/stopped.json" "$GPUSLATE_STATE_FILE.stopped"
	pid=$($RT inspect -f '{{.State.Pid}}' "$WORLD_CNAME")
	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.outcome) \(.state_now) \(.command)"')" "already-running running null" "item"
	assert_eq "$($RT inspect -f '{{.State.Pid}}' "$WORLD_CNAME")" "$pid" "same process"
	assert_dead "$first"
}

# run --guard (issue 28): an intruder in a --restart=always container is
# stopped through the runtime, as reclaim would, and stays stopped; a
# signal would have the runtime restart it, and the guard signal it again
# on every scan.
guards_restart_always() {
	use "$1"
	local d=$BATS_TEST_TMPDIR
	bg job gs run -y --guard --grace 1 --json -- \
		bash -c ': >"$1/started"; while [ ! -e "$1/go" ]; do sleep 0.1; done' _ "$d"
	wait_for 15 test -e "$d/started"
	world_container_run "$RUNTIME" intruder --restart=always -- "$GS_HOLDER" --gpu 0 --mib 1000 \
		--ready-file "$GS_HOST/i.ready"
	first=$CONTAINER_PID
	wait_for 20 eval '[ "$(running "$WORLD_CNAME")" = "false 0" ]'
	stays_for 2 stays_down "$WORLD_CNAME" 0
	: >"$d/go"
	bg_wait job 30
	assert_eq "$BG_STATUS" 9 "exit status (an intruder came)"
	output=$BG_OUT
	assert_eq "$(jqo '[.run.intruders[] | "\(.pid) \(.stopped) \(.outcome)"] | join(";")')" \
		"$first true stopped: stopped-with-unit" "one intruder, stopped through the runtime"
	assert_dead "$first"
}

@test "docker: run --guard stops an intruder of a --restart=always container through docker, once; it stays stopped" {
	guards_restart_always docker
}

@test "podman: run --guard stops an intruder of a --restart=always container through podman, once; it stays stopped" {
	guards_restart_always podman
}

# A container the reclaim stopped (its record 10 s before now) that the
# operator started and stopped again since: theirs, not started; a record
# of one removed since: gone, dropped.
leaves_container_stopped_since() {
	use "$1"
	world_container_run "$RUNTIME" web -- "$GS_HOLDER" --gpu 0 --mib 1000 --ready-file "$GS_HOST/w.ready"
	wait_for 10 test -f "$GS_HOST/w.ready"
	$RT stop -t 1 "$WORLD_CNAME" >/dev/null
	wait_for 10 eval '[ "$(gpu_used 0)" = 0 ]'
	jq -n --arg rt "$RUNTIME" --arg id "$CONTAINER_ID" --arg name "$WORLD_CNAME" --argjson at "$(($(date +%s) - 10))" \
		'{schema_version: 1, stopped: [{kind: "container", runtime: $rt, name: $name, id: $id, container: null,
		  stopped_at: $at, reclaim: {started_at: $at, reason: null}, state_before: "running", enabled_before: null},
		 {kind: "container", runtime: $rt, name: null, id: ("f" * 64), container: null,
		  stopped_at: $at, reclaim: {started_at: $at, reason: null}, state_before: "running", enabled_before: null}]}' \
		>"$BATS_TEST_TMPDIR/stopped.json"
	install -m 0600 "$BATS_TEST_TMPDIR/stopped.json" "$GPUSLATE_STATE_FILE.stopped"
	export GPUSLATE_DOCKER=$DOCKER GPUSLATE_PODMAN=$PODMAN

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '[.items[] | "\(.outcome) \(.will_start) \(.command)"] | join(";")')" \
		"stopped-since false null;gone false null" "items"
	assert_match "$(jqo '.items[0].error')" "started and stopped again since the reclaim" "why"
	assert_eq "$($RT inspect -f '{{.State.Running}}' "$WORLD_CNAME")" false "still stopped"
	[ ! -e "$GPUSLATE_STATE_FILE.stopped" ] || { echo "records kept: $(cat "$GPUSLATE_STATE_FILE.stopped")" >&2; return 1; }
}

@test "restore: a docker container stopped again by the operator since the reclaim is not started; a removed one is gone" {
	leaves_container_stopped_since docker
}

@test "restore: a podman container stopped again by the operator since the reclaim is not started; a removed one is gone" {
	leaves_container_stopped_since podman
}

@test "restore: a docker container is started again with docker start; one running again is not started twice" {
	restores_container docker
}

@test "restore: a podman container is started again with podman start; one running again is not started twice" {
	restores_container podman
}

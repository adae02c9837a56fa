#!/usr/bin/env bats
# User units are units (issue 28): a `systemd --user` manager (root's,
# user@0.service, as tests/world/systemd-manager.sh runs it with
# world_systemd_start --user) is reached only as a user's manager is, with
# `systemctl --user` as that user and XDG_RUNTIME_DIR=/run/user/UID. What
# the host's units get, its units get: the unit stop, the unit-main rule,
# the restarter and its watch, restore.

load helpers

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }
target_json() { jqo ".plan.targets[] | select(.pid == $1) | $2"; }
unit_state() {
	echo "$(sd show -p ActiveState --value "$1") $(sd show -p SubState --value "$1") $(sd show -p MainPID --value "$1")"
}
unit_down() { [ "$(unit_state "$1")" = "inactive dead 0" ] && [ "$(gpu_used "$2")" = 0 ]; }
user_cgroup() { echo "$WORLD_SD_CGROUP/app.slice/$1"; }

@test "user unit: a Restart=always user unit is stopped through the user's manager and stays stopped; clean" {
	world_systemd_start --user
	world_unit --slice app.slice --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 \
		--ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	main=$UNIT_MAIN
	assert_eq "$(sed -n 's/^0:://p' "/proc/$main/cgroup")" "$(user_cgroup trainer.service)" "cgroup"

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(target_json "$main" '"\(.owner.kind) \(.owner.name)"')" "user-unit trainer.service" "owner"
	assert_eq "$(target_json "$main" '"\(.action) \(.unit) \(.user)"')" "stop-unit trainer.service 0" "plan"
	assert_eq "$(jqo '.units[0] | "\(.command) \(.exit_status) \(.user)"')" \
		"setpriv --reuid=0 --regid=0 --clear-groups -- env XDG_RUNTIME_DIR=/run/user/0 systemctl --user stop -- trainer.service 0 0" \
		"unit stop through the user's manager"
	assert_eq "$(target_json "$main" '.restarter | "\(.kind) \(.name) \(.policy) \(.handling)"')" \
		"unit trainer.service always stopped through systemd" "restarter"
	assert_eq "$(proc_json "$main" '.signals | join(",")')" "" "signals from gpuslate"
	assert_dead "$main"
	stays_for 3 unit_down trainer.service 0
}

@test "user unit --no-units: a Restart=always user unit restarted by its manager is seen: not clean, exit 1" {
	world_systemd_start --user
	world_unit --slice app.slice --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 --delay-open-ms 3000 \
		--ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	first=$UNIT_MAIN

	run --separate-stderr gs reclaim -y --no-units --json
	wait_for 10 eval '[ "$(sd show -p NRestarts --value trainer.service)" = 1 ]'
	track "$(sd show -p MainPID --value trainer.service)"
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_status 1
	assert_eq "$(target_json "$first" '.restarter | "\(.kind) \(.name) \(.policy) \(.handling) \(.user)"')" \
		"unit trainer.service always watched 0" "restarter"
	assert_match "$(jqo '.respawns[0].by')" "trainer.service" "respawn"
	assert_dead "$first"
}

@test "user unit whose manager cannot be asked: still a unit that may restart (policy unknown), watched; its restart is seen, not clean" {
	world_systemd_start --user
	world_unit --slice app.slice --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 --delay-open-ms 3000 \
		--ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	first=$UNIT_MAIN

	# Outside the manager's mount namespace: /run/user/0 has no bus, so
	# `systemctl --user` reaches no manager (a user's manager out of reach).
	run --separate-stderr "$GPUSLATE_BIN" reclaim -y --no-units --json
	wait_for 10 eval '[ "$(sd show -p NRestarts --value trainer.service)" = 1 ]'
	track "$(sd show -p MainPID --value trainer.service)"
	assert_eq "$(target_json "$first" '.restarter | "\(.kind) \(.name) \(.policy) \(.handling)"')" \
		"unit trainer.service unknown watched" "restarter (stderr: $stderr)"
	assert_eq "$(jqo .verdict)" not-clean "verdict"
	assert_status 1
	assert_match "$(jqo '.respawns[0].by')" "trainer.service" "respawn"
	assert_dead "$first"
}

@test "user unit -g 1: the unit's main process holds GPU 1, a process moved into the unit GPU 0: main left alone, exit 6" {
	world_systemd_start --user
	world_unit --slice app.slice trainer -- "$GS_HOLDER" --gpu 1 --mib 2048 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	main=$UNIT_MAIN
	launch other bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --gpu 0 --mib 500 --ready-file "$3"' \
		_ "$(world_cgroup2)$(user_cgroup trainer.service)" "$GS_HOLDER" "$BATS_TEST_TMPDIR/other.ready"
	other=$(rpid other)

	run --separate-stderr gs reclaim -g 1 -y --json
	assert_status 6
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $main) | .would_end")" "$other" "the main process left alone"
	assert_eq "$(jqo '.plan.targets | length')" 0 "targets"
	assert_alive "$main" "$other"
	assert_eq "$(unit_state trainer.service)" "active running $main" "trainer.service"
}

@test "user unit: reclaim records the user unit it stopped; restore -y starts it through the user's manager" {
	world_systemd_start --user
	world_unit --slice app.slice --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096
	first=$UNIT_MAIN
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'
	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_dead "$first"
	assert_eq "$(jq -r '.stopped[0] | "\(.kind) \(.name) \(.container) \(.user) \(.state_before)"' "$GPUSLATE_STATE_FILE.stopped")" \
		"unit trainer.service null 0 active" "record"

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.outcome) \(.user) \(.command)"')" \
		"started 0 setpriv --reuid=0 --regid=0 --clear-groups -- env XDG_RUNTIME_DIR=/run/user/0 systemctl --user start -- trainer.service" \
		"the start"
	wait_for 10 eval '[ "$(sd show -p ActiveState --value trainer.service)" = active ]'
	track "$(sd show -p MainPID --value trainer.service)"
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'
	[ ! -e "$GPUSLATE_STATE_FILE.stopped" ]
}

# user_unit_through LAUNCHER...: a user unit whose ExecStart is LAUNCHER...
# gs-holder (GPU 1): MainPID is the launcher ($main), the holder its child
# ($job); a process moved into the unit holds GPU 0 ($other). -g 1 must
# leave the job alone: the launcher exits with it, and the user's manager
# then stops the unit and kills $other.
user_unit_through() {
	world_systemd_start --user
	world_unit --slice app.slice trainer -- "$@" "$GS_HOLDER" --gpu 1 --mib 2048 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	main=$UNIT_MAIN
	job=$(ready_values "$BATS_TEST_TMPDIR/t.ready" pid)
	track "$job"
	[ "$job" != "$main" ] || { echo "the launcher exec'd the job" >&2; return 1; }
	launch other bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --gpu 0 --mib 500 --ready-file "$3"' \
		_ "$(world_cgroup2)$(user_cgroup trainer.service)" "$GS_HOLDER" "$BATS_TEST_TMPDIR/other.ready"
	other=$(rpid other)

	run --separate-stderr gs reclaim -g 1 -y --json
	assert_status 6
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $job) | .would_end")" "$other" "the job, left alone"
	assert_eq "$(jqo '.plan.targets | length')" 0 "targets"
	assert_alive "$main" "$job" "$other"
	assert_eq "$(unit_state trainer.service)" "active running $main" "trainer.service"
}

@test "user unit -g 1: ExecStart=tini -s -- JOB: the job is the main process through tini, left alone, exit 6" {
	command -v tini >/dev/null || skip "tini is not installed"
	user_unit_through "$(command -v tini)" -s --
}

@test "user unit -g 1: ExecStart=dbus-run-session -- JOB: the job is the main process through it, left alone, exit 6" {
	command -v dbus-run-session >/dev/null || skip "dbus-run-session is not installed"
	user_unit_through "$(command -v dbus-run-session)" --
}

@test "user unit -g 1: ExecStart=env nice timeout 1d JOB: the job is the main process through the chain, left alone, exit 6" {
	user_unit_through /usr/bin/env /usr/bin/nice /usr/bin/timeout 1d
}

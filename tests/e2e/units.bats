#!/usr/bin/env bats
# gpuslate and a real systemd (issue 13): each test runs its own systemd
# manager (tests/world/systemd-manager.sh), reached by the unmodified
# systemctl that gpuslate runs, with units holding the simulated GPU. What a
# fake manager cannot answer: whether Restart= really leaves a unit stopped
# after `systemctl stop`, what KillMode=process really leaves behind, which
# cgroup paths systemd really makes.

load helpers

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }
target_json() { jqo ".plan.targets[] | select(.pid == $1) | $2"; }
signals_of() { proc_json "$1" '.signals | join(",")'; }

# unit_state UNIT: "ActiveState SubState MainPID" as systemd reports them.
unit_state() {
	echo "$(sd show -p ActiveState --value "$1") $(sd show -p SubState --value "$1") $(sd show -p MainPID --value "$1")"
}

unit_down() { [ "$(unit_state "$1")" = "inactive dead 0" ] && [ "$(gpu_used "$2")" = 0 ]; }

# unit_with_member GPU MIB GPU2 MIB2: trainer.service, whose main process
# ($main) holds GPU, and a second process ($other) moved into the unit's
# cgroup, holding GPU2.
unit_with_member() {
	world_systemd_start
	world_unit trainer -- "$GS_HOLDER" --gpu "$1" --mib "$2" --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	main=$UNIT_MAIN
	launch other bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --gpu "$3" --mib "$4" --ready-file "$5"' \
		_ "$(world_cgroup2)$WORLD_SD_CGROUP/system.slice/trainer.service" "$GS_HOLDER" "$3" "$4" "$BATS_TEST_TMPDIR/other.ready"
	other=$(rpid other)
}

@test "reclaim: a Restart=always unit is stopped through systemd and stays stopped; the GPU stays clean" {
	world_systemd_start
	world_unit --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	main=$UNIT_MAIN
	assert_eq "$(ready_values "$BATS_TEST_TMPDIR/t.ready" pid)" "$main" "holder is the unit's main process"
	assert_eq "$(sed -n 's/^0:://p' "/proc/$main/cgroup")" "$WORLD_SD_CGROUP/system.slice/trainer.service" "cgroup"

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(target_json "$main" '"\(.action) \(.unit)"')" "stop-unit trainer.service" "plan"
	assert_eq "$(jqo '.units[0] | "\(.command) \(.exit_status)"')" "systemctl stop -- trainer.service 0" "unit stop"
	assert_eq "$(signals_of "$main")" "" "signals from gpuslate"
	assert_eq "$(proc_json "$main" .outcome)" stopped-with-unit outcome
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "true 0" "GPU 0"
	assert_eq "$(jqo '.respawns | length')" 0 respawns
	assert_eq "$(target_json "$main" '.restarter | "\(.kind) \(.name) \(.policy) \(.pid) \(.handling)"')" \
		"unit trainer.service always $main stopped through systemd" "restarter"
	assert_dead "$main"
	# systemd itself: stopped by a job, so Restart=always does not apply.
	# Many times its RestartSec=100ms.
	stays_for 3 unit_down trainer.service 0
	assert_eq "$(sd show -p Result --value trainer.service)" success "unit result"
}

@test "reclaim --no-units: killing a Restart=always unit's process makes systemd restart it: respawn, exit 1" {
	world_systemd_start
	world_unit --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096
	first=$UNIT_MAIN
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'

	run --separate-stderr gs reclaim -y --no-units --json
	wait_for 10 eval '[ "$(sd show -p NRestarts --value trainer.service)" = 1 ]'
	second=$(sd show -p MainPID --value trainer.service)
	track "$second"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(signals_of "$first")" SIGTERM,SIGCONT "signals"
	assert_eq "$(jqo '[.respawns[] | "\(.pid) \(.by)"] | join(";")')" "$second unit trainer.service" respawns
	assert_eq "$(jqo '.respawns[0].stop_with')" "a reclaim without --no-units" "what would stop the unit"
	assert_eq "$(target_json "$first" '.restarter | "\(.kind) \(.policy) \(.restart_s) \(.handling)"')" \
		"unit always 0.1 watched" "restarter"
	assert_eq "$(jqo '.units | length')" 0 "units stopped"
	assert_dead "$first"
	assert_alive "$second"
}

@test "reclaim: KillMode=process leaves a forked child in the unit's cgroup; gpuslate signals it" {
	world_systemd_start
	world_unit --kill-mode process loader -- "$GS_HOLDER" --gpu 1 --mib 2048 --fork-child --ready-file "$BATS_TEST_TMPDIR/l.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/l.ready"
	main=$UNIT_MAIN child=$(ready_values "$BATS_TEST_TMPDIR/l.ready" child)
	track "$child"

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(proc_json "$main" '"\(.outcome) \(.signals | join(","))"')" "stopped-with-unit " "main process"
	assert_eq "$(proc_json "$child" '"\(.outcome) \(.signals | join(","))"')" "exited-after-term SIGTERM,SIGCONT" "leftover child"
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '.gpus[] | select(.index == 1) | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 2048 0" "GPU 1"
	assert_dead "$main" "$child"
	assert_eq "$(unit_state loader.service)" "inactive dead 0" "unit"
}

@test "reclaim: a cgroup named like a unit that systemd does not know: no unit is stopped, the process is signalled" {
	require_cgroups
	world_systemd_start
	cg=$(make_cgroup "$(world_uid gs-e2e)/system.slice/ghost.service")
	launch ghost bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --gpu 0 --ready-file "$3"' \
		_ "$cg" "$GS_HOLDER" "$BATS_TEST_TMPDIR/ghost.ready"
	p=$(rpid ghost)

	run --separate-stderr gs reclaim -y --json --grace 1
	assert_status 0
	# Asking systemd first (it knows no ghost.service) or trying the stop
	# (refused: not loaded) are both right; a stop that succeeds is not.
	assert_eq "$(jqo '[.units[] | select(.exit_status == 0)] | length')" 0 "units stopped"
	assert_eq "$(jqo '[.units[] | select((.error // "") | test("not loaded") | not)] | length')" 0 "other unit errors"
	assert_eq "$(proc_json "$p" '"\(.outcome) \(.signals | join(","))"')" "exited-after-term SIGTERM,SIGCONT" "process"
	assert_eq "$(sd show -p LoadState --value ghost.service)" not-found "systemd's view"
	assert_dead "$p"
}

@test "reclaim --unit selects one unit; the other unit keeps running" {
	world_systemd_start
	world_unit trainer -- "$GS_HOLDER" --gpu 0 --mib 100 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	trainer=$UNIT_MAIN
	world_unit server -- "$GS_HOLDER" --gpu 0 --mib 200 --ready-file "$BATS_TEST_TMPDIR/s.ready"
	server=$UNIT_MAIN
	for f in t s; do wait_for 10 test -f "$BATS_TEST_TMPDIR/$f.ready"; done

	run --separate-stderr gs reclaim -y --json --unit trainer
	# What the selection left alone still holds the GPU: selection-gone (6).
	assert_status 6
	assert_eq "$(jqo .verdict)" selection-gone verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$trainer" "targets"
	assert_eq "$(jqo '[.units[].command] | join(";")')" "systemctl stop -- trainer.service" "systemctl calls"
	assert_dead "$trainer"
	assert_alive "$server"
	assert_eq "$(unit_state trainer.service)" "inactive dead 0" "trainer"
	assert_eq "$(unit_state server.service)" "active running $server" "server"
}

@test "reclaim -g: a unit that also holds an unselected GPU is not stopped; only its selected holder is signalled" {
	# Stopping trainer.service would end its main process, which holds
	# GPU 0 and -g 1 leaves alone: gpuslate signals the unit's GPU 1
	# holder instead, and the unit keeps running.
	unit_with_member 0 500 1 2048

	run --separate-stderr gs reclaim -g 1 -y --json
	assert_status 0
	assert_eq "$(target_json "$other" '"\(.action) \(.unit)"')" "signal null" "plan for the GPU 1 holder"
	assert_eq "$(jqo "[.plan.targets[] | select(.pid == $main)] | length")" 0 "GPU 0 holder targeted"
	assert_eq "$(jqo '.units | length')" 0 "units stopped"
	assert_eq "$(jqo '.gpus[] | select(.index == 1) | .clean')" true "GPU 1"
	assert_dead "$other"
	assert_alive "$main"
	assert_eq "$(unit_state trainer.service)" "active running $main" "trainer.service"
}

@test "reclaim -g: the main process of a unit holds the selected GPU, another process of the unit an unselected one" {
	# Real systemd: when a unit's main process dies, the unit is stopped
	# and every process left in its cgroup is killed (KillMode=
	# control-group), so signalling the main process ends the GPU 0
	# holder too.
	unit_with_member 1 2048 0 500

	run --separate-stderr gs reclaim -g 1 -y --json
	# The main process is left alone and holds GPU 1: selection-gone.
	assert_status 6
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $main) | \"\\(.would_end) \\(.reason)\"")" \
		"$other may be the main process of its unit: when it exits the manager stops the unit, which would end a process left alone too (stop the unit, or select both)" "the main process"
	assert_alive "$main" "$other"
	assert_eq "$(sd show -p ActiveState --value trainer.service)" active "trainer.service"

	# With both GPUs selected the unit is stopped through systemd.
	run --separate-stderr gs reclaim -g 0,1 -y --json
	assert_status 0
	assert_dead "$main" "$other"
}

@test "reclaim: a user's shell that only looks like the unit (same program, same slice) is not stopped with it" {
	# A login session of the same manager (user.slice/.../session-N.scope,
	# made here as logind would) runs the same program as the unit. --unit
	# must stop the unit only; the look-alike is no part of it.
	world_systemd_start
	world_unit --restart always infer -- "$GS_HOLDER" --gpu 0 --mib 1000 --ready-file "$BATS_TEST_TMPDIR/u.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/u.ready"
	unit_main=$UNIT_MAIN
	root=$(world_cgroup2)
	scope=$root$WORLD_SD_CGROUP/user.slice/user-1000.slice/session-7.scope
	mkdir -p "$scope"
	launch shell bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --gpu 0 --mib 1000 --ready-file "$3"' \
		_ "$scope" "$GS_HOLDER" "$BATS_TEST_TMPDIR/shell.ready"
	shell=$(rpid shell)
	assert_eq "$(tr '\0' ' ' <"/proc/$shell/cmdline" | cut -d' ' -f1-5)" "$(tr '\0' ' ' <"/proc/$unit_main/cmdline" | cut -d' ' -f1-5)" "same command"

	run --separate-stderr gs status --json
	assert_eq "$(jqo ".processes[] | select(.pid == $shell) | .owner | \"\(.kind) \(.name)\"")" "session 7" "look-alike's owner"
	assert_eq "$(jqo ".processes[] | select(.pid == $unit_main) | .owner | \"\(.kind) \(.name)\"")" "unit infer.service" "unit's owner"

	run --separate-stderr gs reclaim -y --json --unit infer
	# What the selection left alone still holds the GPU: selection-gone (6).
	assert_status 6
	assert_eq "$(jqo .verdict)" selection-gone verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$unit_main" "targets"
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $shell) | .reason")" "not selected" "look-alike"
	assert_dead "$unit_main"
	assert_alive "$shell"
	stays_for 0.5 eval '[ "$(unit_state infer.service)" = "inactive dead 0" ]'

	# Without a selection it is a target of its own: signalled, and no
	# unit is stopped for it.
	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(target_json "$shell" .action)" signal "look-alike's action"
	assert_eq "$(jqo '.units | length')" 0 "units stopped"
	assert_dead "$shell"
}

@test "reclaim: the unit stops together take at most --timeout; one cut short or not tried says so, its process is signalled" {
	# Two units whose process ignores SIGTERM: systemd waits out
	# TimeoutStopSec (10 s) for each before its SIGKILL. Each stop used to
	# get --grace + 90 s, one after the other; all of them get --timeout.
	world_systemd_start
	world_unit slow1 -- "$GS_HOLDER" --gpu 0 --mib 100 --sigign-term --ready-file "$BATS_TEST_TMPDIR/1.ready"
	one=$UNIT_MAIN
	world_unit slow2 -- "$GS_HOLDER" --gpu 0 --mib 200 --sigign-term --ready-file "$BATS_TEST_TMPDIR/2.ready"
	two=$UNIT_MAIN
	wait_for 10 test -f "$BATS_TEST_TMPDIR/1.ready" -a -f "$BATS_TEST_TMPDIR/2.ready"

	run --separate-stderr gs reclaim -y --json --timeout 2 --grace 1
	assert_status 0
	assert_eq "$(jqo '[.plan.targets[].action] | join(",")')" "stop-unit,stop-unit" "plan"
	assert_eq "$(jqo '[.units[].timed_out] | join(",")')" "true,true" "units timed out"
	assert_eq "$(jqo '[.units[].stopped] | join(",")')" "false,false" "units stopped"
	assert_match "$(jqo '.units[0].error')" "--timeout" "first unit's error"
	assert_eq "$(jqo '.units[1].command')" null "second unit's stop not run"
	assert_match "$(jqo '.units[1].error')" "^not stopped: .*--timeout" "second unit's error"
	# the bound, with a margin for a loaded machine: the units' own
	# TimeoutStopSec alone would be 20 s
	assert_match "$(jqo '[.units[].seconds] | add | . < 4')" true "seconds spent on unit stops"
	assert_eq "$(signals_of "$one") $(signals_of "$two")" "SIGKILL SIGKILL" "signals from gpuslate"
	assert_dead "$one" "$two"
	assert_match "$(jqo .summary)" "^gpuslate: clean .*; unit slow1.service not stopped within --timeout, its processes signalled; unit slow2.service not stopped within --timeout" "summary"
}

@test "reclaim -g 0: a unit whose holder is a PID namespace's init is not stopped when a process that joined the namespace from outside the unit holds GPU 1" {
	# The unit runs its GPU 0 job as the init of a new PID namespace (as
	# PrivatePIDs= or a container runtime does); a process outside the
	# unit's cgroup entered that namespace (nsenter, `docker exec`) and
	# holds GPU 1. Stopping the unit ends the init, and the kernel ends
	# every process of the namespace with it.
	world_systemd_start
	world_unit nsjob -- unshare -p -f "$GS_HOLDER" --gpu 0 --mib 2048 --ready-file "$BATS_TEST_TMPDIR/n.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/n.ready"
	init=$(tr -d " \n" </proc/"$UNIT_MAIN"/task/"$UNIT_MAIN"/children)
	track "$init"
	assert_eq "$(awk '/^NSpid/ { print $NF }' /proc/"$init"/status)" 1 "the init's PID inside"
	start_ns_holder other "$init" --gpu 1 --mib 1024
	other=$(rpid other)
	assert_eq "$(readlink /proc/"$other"/ns/pid)" "$(readlink /proc/"$init"/ns/pid)" "one namespace"
	assert_no_match "$(cat /proc/"$other"/cgroup)" "nsjob.service" "the joined process's cgroup"

	run --separate-stderr gs reclaim -y -g 0 --json
	assert_status 6
	assert_eq "$(jqo '"\(.plan.targets | length) \(.units | length)"')" "0 0" "targets and units"
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $init) | .would_end")" "$other" "the init"
	stays_for 1 assert_alive "$init" "$other"
	assert_eq "$(sd show -p ActiveState --value nsjob.service)" active "nsjob.service"

	# Both GPUs: the unit through systemd, the joined process by signal.
	run --separate-stderr gs reclaim -y -g 0,1 --json
	assert_status 0
	assert_eq "$(target_json "$init" .action)" stop-unit "the init's action"
	assert_dead "$init" "$other"
}

@test "reclaim -g: an orphan of the unit, reaped by its manager, is signalled: the manager's MainPID says it is not the main process" {
	# The orphan's parent is the manager, as the main process's is: only
	# the MainPID systemd reports tells them apart. The main process holds
	# GPU 1 (not selected) and must keep running, and so must the unit.
	world_systemd_start
	world_unit trainer -- bash -c '("$0" --gpu 0 --mib 1024 --ready-file "$1.orphan" &); exec "$0" --gpu 1 --mib 2048 --ready-file "$1.main"' \
		"$GS_HOLDER" "$BATS_TEST_TMPDIR/t"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.main"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.orphan"
	main=$UNIT_MAIN
	orphan=$(ready_values "$BATS_TEST_TMPDIR/t.orphan" pid)
	track "$orphan"
	assert_eq "$(ready_values "$BATS_TEST_TMPDIR/t.main" pid)" "$main" "the main process"
	assert_eq "$(cat "/proc/$(awk '{print $4}' "/proc/$orphan/stat")/comm")" systemd "the orphan's parent"

	run --separate-stderr gs reclaim -g 0 -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$orphan" "targets"
	assert_eq "$(target_json "$orphan" .action)" signal "the orphan is signalled, no unit stop"
	assert_dead "$orphan"
	assert_alive "$main"
	assert_eq "$(unit_state trainer.service)" "active running $main" "trainer.service"
}

@test "reclaim --no-units: a Restart=always unit whose process takes 3 s to reopen the GPU: the restart is seen at once, not clean" {
	# RestartSec=100ms: systemd starts it again long before it holds
	# anything; a watch for GPU holders alone would say clean.
	world_systemd_start
	world_unit --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 --delay-open-ms 3000
	first=$UNIT_MAIN
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'

	run --separate-stderr gs reclaim -y --no-units --json
	wait_for 10 eval '[ "$(sd show -p NRestarts --value trainer.service)" = 1 ]'
	second=$(sd show -p MainPID --value trainer.service)
	track "$second"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '[.respawns[] | "\(.pid) \(.by) \(.before_gpu)"] | join(";")')" "$second unit trainer.service true" respawns
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | .memory_after_mib')" 0 "GPU 0 at the verdict: nothing held yet"
	assert_dead "$first"
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'
}

@test "reclaim --no-units: a Restart=always unit whose RestartSec outlasts --timeout: systemd's scheduled restart makes it not clean" {
	# RestartSec=30s, --timeout 5s: no watch can last until the restart;
	# systemd says it is coming (SubState=auto-restart).
	world_systemd_start
	world_unit --restart always --restart-sec 30s trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	first=$UNIT_MAIN

	run --separate-stderr gs reclaim -y --no-units --timeout 5s --json
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_dead "$first"
	assert_eq "$(unit_state trainer.service)" "activating auto-restart 0" "trainer.service"
	assert_eq "$(jqo '[.respawns[] | "\(.pid) \(.by) \(.scheduled)"] | join(";")')" \
		"null unit trainer.service true" respawns
	assert_match "$(jqo '.respawns[0].stop_with')" "systemctl stop trainer.service" "what would stop it"
	assert_match "$(jqo '.respawns[0].stop_with')" "without --no-units" "what would stop it"
	assert_match "$(jqo .summary)" "not clean: unit trainer.service: systemd will restart it \\(activating/auto-restart\\), systemctl stop trainer.service" summary
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "true 0" "GPU 0 at the verdict"
}

@test "reclaim --no-units: a Restart=always unit still stopping its other processes at the verdict: its restart follows, not clean" {
	# A helper of the unit ignores SIGTERM: after its main process is
	# killed systemd waits TimeoutStopSec=20s on it (deactivating
	# stop-sigterm), past --timeout 5s, and restarts the unit only then.
	# 20 s, not world_unit's 10 s: the state is read after gpuslate's wait
	# and watch, which a loaded machine stretches.
	# Only the first start has that helper: the restarted unit stops cleanly.
	cat >"$BATS_TEST_TMPDIR/helper.sh" <<-'EOF2'
		[ -e "$1" ] && exit 0
		: >"$1"
		(trap '' TERM; exec sleep 60) &
	EOF2
	world_systemd_start
	world_unit --restart always --service-set "ExecStartPost=/bin/sh $BATS_TEST_TMPDIR/helper.sh $BATS_TEST_TMPDIR/helper.flag" \
		--service-set TimeoutStopSec=20s trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	first=$UNIT_MAIN

	run --separate-stderr gs reclaim -y --no-units --timeout 5s --json
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_dead "$first"
	assert_eq "$(unit_state trainer.service)" "deactivating stop-sigterm 0" "trainer.service"
	assert_eq "$(jqo '[.respawns[] | "\(.pid) \(.by) \(.scheduled) \(.unit_state)"] | join(";")')" \
		"null unit trainer.service true deactivating/stop-sigterm" respawns
	# ... and systemd does restart it once the helper is killed
	# (TimeoutStopSec=20s after the main process died).
	wait_for 30 eval '[ "$(sd show -p NRestarts --value trainer.service)" = 1 ]'
	track "$(sd show -p MainPID --value trainer.service)"
}

# unit_through LAUNCHER...: trainer.service whose ExecStart is LAUNCHER...
# gs-holder (holding GPU 1): MainPID is the launcher ($main), the holder
# its child ($job); a process moved into the unit holds GPU 0 ($other).
unit_through() {
	world_systemd_start
	world_unit trainer -- "$@" "$GS_HOLDER" --gpu 1 --mib 2048 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	main=$UNIT_MAIN
	job=$(ready_values "$BATS_TEST_TMPDIR/t.ready" pid)
	track "$job"
	[ "$job" != "$main" ] || { echo "the launcher exec'd the job" >&2; return 1; }
	launch other bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --gpu 0 --mib 500 --ready-file "$3"' \
		_ "$(world_cgroup2)$WORLD_SD_CGROUP/system.slice/trainer.service" "$GS_HOLDER" "$BATS_TEST_TMPDIR/other.ready"
	other=$(rpid other)
}

# The job's end ends the launcher, the unit's main process: its manager
# stops the unit and kills the GPU 0 holder that -g 1 leaves alone.
job_left_alone_as_main() {
	run --separate-stderr gs reclaim -g 1 -y --json
	assert_status 6
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $job) | .would_end")" "$other" "the job, left alone"
	assert_eq "$(jqo '.plan.targets | length')" 0 "targets"
	assert_alive "$main" "$job" "$other"
	assert_eq "$(unit_state trainer.service)" "active running $main" "trainer.service"
}

@test "reclaim -g 1: ExecStart=timeout 1d JOB: the job is the unit's main process through timeout, left alone, exit 6" {
	unit_through /usr/bin/timeout 1d
	assert_eq "$(cat "/proc/$main/comm")" timeout "MainPID"
	job_left_alone_as_main
}

@test "reclaim -g 1: ExecStart=bash -c 'cd / && JOB; exit' : the job is the unit's main process through the shell, left alone, exit 6" {
	unit_through /bin/bash -c 'cd / && "$@"; exit $?' sh
	assert_eq "$(cat "/proc/$main/comm")" bash "MainPID"
	job_left_alone_as_main
}

# Review of issue 28: a supervisor below a launcher is the unit's main
# process as surely as one the manager started itself. --include-parent
# must not stop it: its end ends timeout, MainPID, and the manager then
# stops the unit and kills the GPU 0 holder that -g 1 leaves alone.
@test "reclaim -g 1 --include-parent: ExecStart=timeout 1d SUPERVISOR: the supervisor is not stopped, the unit's GPU 0 holder lives" {
	world_systemd_start
	world_unit trainer -- /usr/bin/timeout 1d "$GS_HOLDER" --supervise --gpu 1 --mib 2048 \
		--ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 eval '[ -n "$(ready_values "$BATS_TEST_TMPDIR/t.ready" child)" ]'
	main=$UNIT_MAIN
	sup=$(ready_values "$BATS_TEST_TMPDIR/t.ready" pid)
	job=$(ready_values "$BATS_TEST_TMPDIR/t.ready" child | head -n 1)
	track "$sup" sup
	track "$job"
	assert_eq "$(cat "/proc/$main/comm")" timeout "MainPID"
	assert_eq "$(awk '{print $4}' "/proc/$sup/stat")" "$main" "the supervisor's parent"
	launch other bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --gpu 0 --mib 500 --ready-file "$3"' \
		_ "$(world_cgroup2)$WORLD_SD_CGROUP/system.slice/trainer.service" "$GS_HOLDER" "$BATS_TEST_TMPDIR/other.ready"
	other=$(rpid other)

	run --separate-stderr gs reclaim -g 1 -y --include-parent --json
	assert_eq "$(jqo "[.plan.targets[].pid] | index($sup)")" null "the supervisor is no target"
	assert_eq "$(target_json "$job" '.restarter | "\(.kind) \(.pid) \(.handling)"')" "parent $sup watched" "restarter"
	assert_alive "$main" "$sup" "$other"
	stays_for 1 eval '[ "$(unit_state trainer.service)" = "active running $main" ] && alive "$other"'
	[ "$status" -ne 0 ]
}

@test "units: reclaim -g 0 of one process of a Restart=always unit: a surviving sibling's fork (same program) during the watch is no respawn" {
	# trainer.service: its main process supervises a GPU 1 worker (the
	# same program: a rank's DataLoader workers, a supervisor's worker);
	# a process moved into the unit holds GPU 0, the one reclaimed.
	world_systemd_start
	world_unit --restart always trainer -- "$GS_HOLDER" --supervise --gpu 1 --mib 500 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	main=$UNIT_MAIN
	w1=$(rpid t child)
	launch other bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --gpu 0 --mib 2048 --ready-file "$3"' \
		_ "$(world_cgroup2)$WORLD_SD_CGROUP/system.slice/trainer.service" "$GS_HOLDER" "$BATS_TEST_TMPDIR/other.ready"
	other=$(rpid other)

	bg rc sd_exec "$GPUSLATE_BIN" reclaim -g 0 -y --json
	wait_for 10 dead "$other"
	# The GPU 1 worker ends meanwhile; the unit's main process (old, never
	# a target) forks a new one: nothing of GPU 0 comes back.
	kill -KILL "$w1"
	wait_for 10 eval '[ "$(rpid t child)" != "$w1" ]'
	track "$(rpid t child)"
	bg_wait rc
	output=$BG_OUT
	echo "exit $BG_STATUS stderr: $BG_ERR"; echo "$output" | jq -c ".notes, .warnings, .plan.notes" || true; systemctl --version | head -1
	echo "$output" | jq -c '{verdict, respawn_watch_s, respawns, t: [.plan.targets[] | {pid, action, restarter}]}'
	assert_eq "$(jqo .verdict)" clean "verdict (GPU 0 stays free: $(gpu_used 0) MiB)"
	assert_eq "$(gpu_used 0)" 0 "GPU 0"
}

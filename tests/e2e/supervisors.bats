#!/usr/bin/env bats
# Process supervisors as owners (issue 24, items 3 and 4): a GPU holder that
# supervisord, runit (runsv) or s6 (s6-supervise) runs is stopped through
# the supervisor's own tool (supervisorctl stop, sv force-stop, s6-svc -d),
# so that it stays stopped; `gpuslate restore` starts it again. The real
# daemons run here, each with its own config, socket or service directory
# in the test's directory; only the GPU is simulated. A failing control
# tool must never give a clean verdict that the supervisor undoes.

load helpers
load supervisors

# ---- supervisord ---------------------------------------------------------------

# sd_start: a supervisord of the test's own (config, socket and logs in the
# test's directory) running program "llm" (a holder of 2 GiB on GPU 0,
# restarted whenever it exits) and program "web" (no GPU: must never be
# touched). Sets SD (supervisord's pid), SD_CONF, LLM (the holder's pid).
sd_start() {
	local d=$BATS_TEST_TMPDIR
	sd_conf "[program:llm]
command=$GS_HOLDER --gpu 0 --mib 2048 --ready-file $d/llm.ready -- python3 -m vllm.entrypoints.openai.api_server
autorestart=true
startsecs=0
stopwaitsecs=5
[program:web]
command=sleep 100000
autorestart=true
startsecs=0"
	sd_run
	wait_for 20 test -f "$d/llm.ready"
	LLM=$(ready_values "$d/llm.ready" pid)
	wait_for 10 eval '[ "$(sd_state web)" = RUNNING ]'
}

@test "supervisors: a supervisord program holding the GPU is stopped with supervisorctl: clean, it stays stopped, restore starts it" {
	sd_start
	web=$(sd_pid web)

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $LLM) | \"\(.action) \(.restarter.kind) \(.restarter.handling)\"")" \
		"stop-supervised supervisor stopped through its supervisor" "the plan"
	assert_eq "$(jqo '.units[0] | "\(.runtime) \(.unit) \(.stopped)"')" "supervisord llm:llm true" "stopped through"
	assert_match "$(jqo '.units[0].command')" "^supervisorctl -c $SD_CONF stop llm:llm$" "the command"
	assert_dead "$LLM"
	assert_alive "$SD"
	# Stopped for good: supervisord does not start it again (autorestart
	# applies to exits it did not ask for) ...
	stays_for 3 eval '[ "$(sd_state llm)" = STOPPED ] && [ "$(gpu_used 0)" = 0 ]'
	# ... and its other program was never touched.
	assert_eq "$(sd_state web) $(sd_pid web)" "RUNNING $web" "the other program"

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.kind) \(.runtime) \(.name) \(.outcome)"')" "supervised supervisord llm:llm started" \
		"restored"
	wait_for 15 eval '[ "$(sd_state llm)" = RUNNING ] && [ "$(gpu_used 0)" = 2048 ]'
}

@test "supervisors: the text plan and report name the supervisord program and the tool's command" {
	sd_start

	run --separate-stderr gs reclaim --dry-run
	assert_status 0
	assert_match "$output" "stop supervisord program llm:llm" "plan action"
	assert_match "$output" "supervisord $SD, its program llm:llm restarts $LLM: stopped through its supervisor" \
		"restarters"
	assert_eq "$(sd_state llm)" RUNNING "after a dry run"

	run --separate-stderr gs reclaim -y
	assert_status 0
	assert_match "$output" "supervisord program llm:llm: supervisorctl -c $SD_CONF stop llm:llm: done in" "stopped"
}

@test "supervisors: a supervisorctl that fails falls back to signals; supervisord restarts the program: not clean, exit 1" {
	sd_start
	# The tool answers the question, then cannot stop (a socket that went
	# away, a permission): exit 2 with an error.
	cat >"$GS_BIN/supervisorctl" <<-'EOF'
		#!/bin/sh
		case " $* " in
		*" stop "*) echo "error: <class 'PermissionError'>, [Errno 13] Permission denied: file: /usr/lib/python3/dist-packages/supervisor/xmlrpc.py" >&2; exit 2 ;;
		esac
		exec /usr/bin/supervisorctl "$@"
	EOF
	chmod +x "$GS_BIN/supervisorctl"

	run --separate-stderr gs reclaim -y --json
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '.units[0].stopped')" false "stopped through the tool"
	assert_match "$(jqo '.units[0].error')" "Permission denied" "the tool's error"
	assert_dead "$LLM"
	# The fallback killed it, and supervisord did what it does.
	wait_for 15 eval '[ "$(gpu_used 0)" = 2048 ]'
	assert_eq "$(sd_state llm)" RUNNING "after the fallback"
	assert_match "$(jqo .summary)" "respawned by parent $SD \\(supervisord\\), supervisorctl -c $SD_CONF stop llm:llm would stop it" \
		summary
}

@test "supervisors: a supervisorctl that hangs is bounded by --timeout: not clean, nothing waits forever" {
	sd_start
	cat >"$GS_BIN/supervisorctl" <<-'EOF'
		#!/bin/sh
		case " $* " in
		*" stop "*) exec sleep 1000 ;;
		esac
		exec /usr/bin/supervisorctl "$@"
	EOF
	chmod +x "$GS_BIN/supervisorctl"

	t0=$(now_ms)
	run --separate-stderr gs reclaim -y --timeout 6s --json
	took=$(($(now_ms) - t0))
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '.units[0] | "\(.stopped) \(.timed_out)"')" "false true" "the stop"
	# Bounded, not forever (the tool would sleep 1000 s): the 6 s the unit
	# stops share, the ladder and the respawn watch, with room for a
	# loaded 2-core machine.
	[ "$took" -lt 30000 ] || { echo "took $took ms" >&2; false; }
}

@test "supervisors: a program name that supervisord says is another process is never stopped through the tool" {
	sd_start
	# The name is a claim: here supervisorctl says llm:llm runs as PID 1
	# (a config reloaded since, another program of that name).
	cat >"$GS_BIN/supervisorctl" <<-EOF
		#!/bin/sh
		echo "\$*" >>"$BATS_TEST_TMPDIR/ctl.calls"
		case " \$* " in
		*" pid "*) echo 1; exit 0 ;;
		esac
		exec /usr/bin/supervisorctl "\$@"
	EOF
	chmod +x "$GS_BIN/supervisorctl"

	run --separate-stderr gs reclaim -y --json
	assert_eq "$(jqo '.units[0] | "\(.stopped) \(.command)"')" "false null" "the stop"
	assert_match "$(jqo '.units[0].error')" "supervisord's llm:llm is PID 1, not PID $LLM" "why not"
	assert_no_match "$(cat "$BATS_TEST_TMPDIR/ctl.calls")" " stop " "supervisorctl stop was never run"
	assert_eq "$(sd_state web)" RUNNING "the other program"
}

@test "supervisors: a process that claims supervisord's environment under a forged 'supervisord' is no supervised program" {
	# comm and argv[0] say supervisord; the executable is bash.
	mkdir -p "$GS_BIN/forged"
	ln -sf "$(command -v bash)" "$GS_BIN/forged/supervisord"
	cat >"$BATS_TEST_TMPDIR/loop.sh" <<-EOF
		while true; do
			SUPERVISOR_ENABLED=1 SUPERVISOR_GROUP_NAME=llm SUPERVISOR_PROCESS_NAME=llm \
				SUPERVISOR_SERVER_URL=unix://$BATS_TEST_TMPDIR/none.sock \
				$GS_HOLDER --gpu 0 --mib 1024 --ready-file $BATS_TEST_TMPDIR/h.ready -- python3 train.py
		done
	EOF
	"$GS_BIN/forged/supervisord" "$BATS_TEST_TMPDIR/loop.sh" </dev/null >/dev/null 2>&1 3>&- &
	sup=$!
	track "$sup" sup
	wait_for 15 test -f "$BATS_TEST_TMPDIR/h.ready"
	h=$(ready_values "$BATS_TEST_TMPDIR/h.ready" pid)

	run --separate-stderr gs reclaim --dry-run --json
	assert_status 0
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $h) | \"\(.action) \(.restarter.kind)\"")" "signal parent" \
		"a supervising parent, not a supervisord program"
	assert_eq "$(jqo '.plan.units | length')" 0 "stop entries"
}

# ---- runit -----------------------------------------------------------------------

# rs_start: runsvdir over a service directory of the test's own with
# service "llm" (a holder of 2 GiB on GPU 0). Sets RSV_DIR (the service
# directory, resolved), LLM.
rs_start() {
	local d=$BATS_TEST_TMPDIR
	mkdir -p "$d/sv/llm"
	service_run "$d/sv/llm/run" "$d/llm.ready"
	RSV_DIR=$(readlink -f "$d/sv/llm")
	runsvdir_start llm
	wait_for 20 test -f "$d/llm.ready"
	LLM=$(ready_values "$d/llm.ready" pid)
}

@test "supervisors: a runit service holding the GPU is stopped with sv: clean, it stays down, restore brings it up" {
	rs_start

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '.units[0] | "\(.runtime) \(.unit) \(.stopped)"')" "runit $RSV_DIR true" "stopped through"
	assert_match "$(jqo '.units[0].command')" "^sv -w [0-9]+ force-stop $RSV_DIR$" "the command"
	assert_dead "$LLM"
	stays_for 3 eval 'sv status "$RSV_DIR" | grep -q "^down: " && [ "$(gpu_used 0)" = 0 ]'

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.runtime) \(.name) \(.outcome)"')" "runit $RSV_DIR started" "restored"
	wait_for 15 eval 'sv status "$RSV_DIR" | grep -q "^run: " && [ "$(gpu_used 0)" = 2048 ]'
}

@test "supervisors: a runit service whose run script ignores SIGTERM is killed by sv force-stop within the grace: clean" {
	local d=$BATS_TEST_TMPDIR
	mkdir -p "$d/sv/llm"
	service_run "$d/sv/llm/run" "$d/llm.ready" "trap '' TERM"
	runsvdir_start llm
	wait_for 20 test -f "$d/llm.ready"
	llm=$(ready_values "$d/llm.ready" pid)

	run --separate-stderr gs reclaim -y --grace 1s --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '.units[0].stopped')" true "down through sv"
	assert_dead "$llm"
	stays_for 2 eval 'sv status "$d/sv/llm" | grep -q "^down: "'
}

# ---- s6 ----------------------------------------------------------------------------

# s6_start: s6-svscan over a scan directory of the test's own with
# service "llm" (a holder of 2 GiB on GPU 0). Sets S6_DIR, LLM.
s6_start() {
	local d=$BATS_TEST_TMPDIR
	mkdir -p "$d/scan/llm"
	service_run "$d/scan/llm/run" "$d/llm.ready"
	S6_DIR=$(readlink -f "$d/scan/llm")
	s6-svscan "$d/scan" </dev/null >/dev/null 2>&1 3>&- &
	track "$!" sup
	wait_for 20 test -f "$d/llm.ready"
	LLM=$(ready_values "$d/llm.ready" pid)
}

@test "supervisors: an s6 service holding the GPU is stopped with s6-svc -d: clean, it stays down, restore brings it up" {
	s6_start

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '.units[0] | "\(.runtime) \(.unit) \(.stopped)"')" "s6 $S6_DIR true" "stopped through"
	assert_match "$(jqo '.units[0].command')" "^s6-svc -wd -T [0-9]+ -d $S6_DIR$" "the command"
	assert_dead "$LLM"
	stays_for 3 eval '[ "$(s6-svstat -o up "$S6_DIR")" = false ] && [ "$(gpu_used 0)" = 0 ]'

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.runtime) \(.name) \(.outcome)"')" "s6 $S6_DIR started" "restored"
	wait_for 15 eval '[ "$(s6-svstat -o up "$S6_DIR")" = true ] && [ "$(gpu_used 0)" = 2048 ]'
}

@test "supervisors: an s6-svc that is missing falls back to signals; s6-supervise restarts the service: not clean" {
	s6_start
	# Only s6-svc is gone (a host with s6-overlay's tools elsewhere).
	printf '#!/bin/sh\necho "s6-svc: fatal: unable to control %s: supervisor not listening" >&2\nexit 111\n' "$S6_DIR" \
		>"$GS_BIN/s6-svc"
	chmod +x "$GS_BIN/s6-svc"

	run --separate-stderr gs reclaim -y --json
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '.units[0].stopped')" false "stopped through the tool"
	wait_for 15 eval '[ "$(gpu_used 0)" = 2048 ]'
}

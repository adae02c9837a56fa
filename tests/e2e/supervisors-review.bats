#!/usr/bin/env bats
# review24b: defects of the process-supervisor owners (supervisord, runit,
# s6). Real daemons, simulated GPU, as tests/e2e/supervisors.bats.

load helpers
load supervisors

# A supervisord program with stopasgroup=true (what its docs advise for a
# shell that starts workers) whose command left a worker behind on GPU 1:
# the worker's parent is gone (reparented away from the program), but it
# stays in the program's process group, which supervisord signals as a
# whole. The user reclaims GPU 0 only: the worker on GPU 1 was never
# selected, and supervisorctl stop must not be what ends it.
@test "review24b: supervisorctl stop with stopasgroup kills a holder of an unselected GPU in the program's process group" {
	local d=$BATS_TEST_TMPDIR
	cat >"$d/llm.sh" <<-EOF
		($GS_HOLDER --gpu 1 --mib 1024 --ready-file $d/side.ready -- python3 side.py &)
		exec $GS_HOLDER --gpu 0 --mib 2048 --ready-file $d/llm.ready -- python3 serve.py
	EOF
	sd_conf "[program:llm]
command=/bin/sh $d/llm.sh
stopasgroup=true
autorestart=true
startsecs=0
stopwaitsecs=5"
	sd_run
	wait_for 20 test -f "$d/llm.ready"
	wait_for 20 test -f "$d/side.ready"
	llm=$(ready_values "$d/llm.ready" pid)
	side=$(ready_values "$d/side.ready" pid)
	track "$side"
	# The worker: no longer below the program, but in its process group.
	[ "$(ps -o pgid= -p "$side" | tr -d ' ')" = "$llm" ]
	[ "$(ps -o ppid= -p "$side" | tr -d ' ')" != "$llm" ]

	run --separate-stderr gs reclaim -y -g 0 --json
	assert_dead "$llm"
	# The holder on GPU 1 was not selected: it must still run.
	assert_alive "$side"
	# Not through supervisorctl (its group stop would end it): signalled,
	# and supervisord watched (it restarts the program: not clean).
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $llm) | \"\(.action) \(.restarter.handling)\"")" \
		"signal watched" "the plan"
	assert_eq "$(jqo '.units | length')" 0 "no stop through the tool"
}

# A runit service that serves the whole host (sshd, as on Void Linux or an
# image that runs sshd under runsv) with a user's GPU job in one of its
# login sessions: the job is the selection, sshd is not. gpuslate never
# stops sshd.service for such a job (infrastructure units); sv force-stop
# on the sshd service ends every session.
@test "review24b: a GPU job in an ssh session of a runit-supervised sshd stops the whole sshd service" {
	local d=$BATS_TEST_TMPDIR
	mkdir -p "$d/sv/sshd"
	# "sshd" listening, with one session: a login shell that runs the job.
	cat >"$d/session.sh" <<-EOF
		#!/bin/bash
		$(holder_env)
		$GS_HOLDER --gpu 0 --mib 2048 --ready-file $d/job.ready -- python3 train.py
		echo session goes on
	EOF
	chmod +x "$d/session.sh"
	{
		echo '#!/bin/bash'
		printf 'exec -a /usr/sbin/sshd bash -c %q\n' "$d/session.sh & while :; do sleep 1; done"
	} >"$d/sv/sshd/run"
	chmod +x "$d/sv/sshd/run"
	svdir=$(readlink -f "$d/sv/sshd")
	runsvdir_start sshd
	wait_for 20 test -f "$d/job.ready"
	job=$(ready_values "$d/job.ready" pid)
	sshd=$(sv status "$svdir" | sed -n 's/^run: [^(]*(pid \([0-9]*\)).*/\1/p')
	[ -n "$sshd" ]

	run --separate-stderr gs reclaim -y --json
	assert_dead "$job"
	# sshd itself was never selected and holds no GPU.
	assert_eq "$(jqo '[.units[] | select(.runtime == "runit")] | length')" 0 "sv stops"
	assert_alive "$sshd"
	sv status "$svdir" | grep -q '^run: '
}

# A user's own runsv (runsv is root's executable: trusted) over a service
# directory the user owns, its program a GPU job. Root's gpuslate hands
# that directory to sv, which writes its command into supervise/control
# as root: the user made that a symlink to the control pipe of a root
# service that holds no GPU. The tool's answer about the PID reads the
# user's own files (supervise/status), so the PID check passes; sv's "d"
# goes to root's service.
@test "review24b: a user's runsv directory whose supervise/control points elsewhere makes root's sv stop another service" {
	[ "$(id -u)" = 0 ] || skip "needs root"
	command -v setpriv >/dev/null || skip "no setpriv"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	local d=$BATS_TEST_TMPDIR
	open_test_dirs
	chmod -R o+rwX "$GS_HOST"
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$GS_HOLDER" -a -r "$FAKE_NVML_STATE/gpus" ||
		skip "user nobody cannot reach the build or the test directory"
	# Root's service "victim": no GPU.
	mkdir -p "$d/sv/victim"
	printf '#!/bin/sh\nexec sleep 100000\n' >"$d/sv/victim/run"
	chmod +x "$d/sv/victim/run"
	runsvdir_start victim
	wait_for 20 eval 'sv status "$d/sv/victim" | grep -q "^run: "'
	victim=$(sv status "$d/sv/victim" | sed -n 's/^run: [^(]*(pid \([0-9]*\)).*/\1/p')
	# nobody's service "job", under nobody's own runsv.
	mkdir -p "$d/user/job"
	service_run "$d/user/job/run" "$d/user/job.ready"
	chown -R nobody "$d/user"
	setsid setpriv --reuid=nobody --regid=nogroup --clear-groups runsv "$d/user/job" </dev/null >/dev/null 2>&1 3>&- &
	track "$!" sup
	wait_for 20 test -f "$d/user/job.ready"
	job=$(ready_values "$d/user/job.ready" pid)
	# nobody points its control pipe at root's service's.
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		sh -c "ln -s '$d/sv/victim/supervise/control' '$d/user/job/supervise/c2' && mv -f '$d/user/job/supervise/c2' '$d/user/job/supervise/control'"

	run --separate-stderr gs reclaim -y --grace 2s --json
	# Root's service was never selected and holds no GPU.
	assert_alive "$victim"
	sv status "$d/sv/victim" | grep -q '^run: '
	setpriv --reuid=nobody --regid=nogroup --clear-groups kill "$job" 2>/dev/null || true
}

# A supervisord program whose command clears its environment (env -i, as
# some wrappers do) carries none of supervisord's SUPERVISOR_* words: its
# name cannot be read. supervisord still restarts it, so it is watched,
# never stopped through a guess (nor, where supervisord runs in a unit,
# through that unit, which would end every other program).
@test "review24b: a supervisord program that cleared its environment is watched: the restart is reported, the other program untouched" {
	local d=$BATS_TEST_TMPDIR
	sd_conf "[program:llm]
command=env -i FAKE_NVML_STATE=$FAKE_NVML_STATE GPUSLATE_DEV_ROOT=$GPUSLATE_DEV_ROOT GPUSLATE_NVIDIA_PROCFS=$GPUSLATE_NVIDIA_PROCFS $GS_HOLDER --gpu 0 --mib 2048 --ready-file $d/llm.ready -- python3 serve.py
autorestart=true
startsecs=0
[program:web]
command=sleep 100000
autorestart=true
startsecs=0"
	sd_run
	wait_for 20 test -f "$d/llm.ready"
	wait_for 10 eval '[ "$(sd_state web)" = RUNNING ]'
	llm=$(ready_values "$d/llm.ready" pid)
	web=$(sd_pid web)

	run --separate-stderr gs reclaim -y --json
	assert_eq "$(jqo ".plan.targets[] | select(.pid == $llm) | \"\(.action) \(.restarter.kind) \(.restarter.handling) \(.restarter.pid)\"")" \
		"signal supervisor watched $SD" "the plan"
	assert_eq "$(jqo '.units | length')" 0 "unit or tool stops"
	assert_match "$(jqo ".plan.targets[] | select(.pid == $llm) | .restarter.stop_with")" \
		"^supervisorctl stop \\(the program running PID $llm\\)$" "how to stop it"
	assert_dead "$llm"
	# supervisord restarts it: that is a respawn, never clean.
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(sd_state web) $(sd_pid web)" "RUNNING $web" "the other program"
}

# root's supervisorctl reads the config named on supervisord's command line
# for the socket to stop through: one that another user may write could
# point it elsewhere. Such a config is not used; the server URL supervisord
# gave its program is.
@test "review24b: a supervisord config that others may write is not given to supervisorctl; the program's server URL is" {
	local d=$BATS_TEST_TMPDIR
	sd_conf "[program:llm]
command=$GS_HOLDER --gpu 0 --mib 2048 --ready-file $d/llm.ready -- python3 serve.py
autorestart=true
startsecs=0"
	chmod 666 "$SD_CONF"
	sd_run
	wait_for 20 test -f "$d/llm.ready"
	llm=$(ready_values "$d/llm.ready" pid)

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_match "$(jqo '.units[0].command')" "^supervisorctl -s unix://$d/sd.sock stop llm:llm$" "the command"
	assert_dead "$llm"
	stays_for 2 eval '[ "$(sd_state llm)" = STOPPED ]'
}

#!/usr/bin/env bats
# review24b: defects of the process-supervisor owners (supervisord, runit,
# s6). Real daemons, simulated GPU, as tests/e2e/supervisors.bats.

load helpers

holder_env() {
	printf 'export FAKE_NVML_STATE=%q GPUSLATE_DEV_ROOT=%q GPUSLATE_NVIDIA_PROCFS=%q\n' \
		"$FAKE_NVML_STATE" "$GPUSLATE_DEV_ROOT" "$GPUSLATE_NVIDIA_PROCFS"
}

# sd_conf PROGRAM-SECTIONS: a supervisord config of the test's own, with
# the given program sections appended; sets SD_CONF.
sd_conf() {
	local d=$BATS_TEST_TMPDIR
	SD_CONF=$d/supervisord.conf
	cat >"$SD_CONF" <<-EOF
		[unix_http_server]
		file=$d/sd.sock
		[supervisord]
		nodaemon=true
		logfile=$d/supervisord.log
		pidfile=$d/supervisord.pid
		childlogdir=$d
		[rpcinterface:supervisor]
		supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface
		[supervisorctl]
		serverurl=unix://$d/sd.sock
	EOF
	printf '%s\n' "$1" >>"$SD_CONF"
}
sd_run() {
	supervisord -c "$SD_CONF" </dev/null >"$BATS_TEST_TMPDIR/supervisord.out" 2>&1 3>&- &
	SD=$!
	track "$SD" sup
}
sd_state() { supervisorctl -c "$SD_CONF" status "$1" 2>/dev/null | awk '{ print $2 }'; }

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
	mkdir -p "$d/sv/sshd" "$d/service"
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
	ln -s "$d/sv/sshd" "$d/service/sshd"
	svdir=$(readlink -f "$d/sv/sshd")
	runsvdir "$d/service" </dev/null >/dev/null 2>&1 3>&- &
	track "$!" sup
	wait_for 20 test -f "$d/job.ready"
	job=$(ready_values "$d/job.ready" pid)
	sshd=$(sv status "$svdir" | sed -n 's/^run: [^(]*(pid \([0-9]*\)).*/\1/p')
	[ -n "$sshd" ]

	run --separate-stderr gs reclaim -y --json
	echo "$output" | jq -c '.plan.targets, .units' >&2
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
	local d=$BATS_TEST_TMPDIR x=$BATS_TEST_TMPDIR
	while [[ $x == "$BATS_RUN_TMPDIR"/* ]]; do
		chmod o+rx "$x"
		x=${x%/*}
	done
	chmod o+rx "$BATS_RUN_TMPDIR"
	chmod -R o+rwX "$GS_HOST"
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$GS_HOLDER" -a -r "$FAKE_NVML_STATE/gpus" ||
		skip "user nobody cannot reach the build or the test directory"
	# Root's service "victim": no GPU.
	mkdir -p "$d/sv/victim" "$d/service"
	printf '#!/bin/sh\nexec sleep 100000\n' >"$d/sv/victim/run"
	chmod +x "$d/sv/victim/run"
	ln -s "$d/sv/victim" "$d/service/victim"
	runsvdir "$d/service" </dev/null >/dev/null 2>&1 3>&- &
	track "$!" sup
	wait_for 20 eval 'sv status "$d/sv/victim" | grep -q "^run: "'
	victim=$(sv status "$d/sv/victim" | sed -n 's/^run: [^(]*(pid \([0-9]*\)).*/\1/p')
	# nobody's service "job", under nobody's own runsv.
	mkdir -p "$d/user/job"
	{
		echo '#!/bin/sh'
		holder_env
		printf 'exec %q --gpu 0 --mib 2048 --ready-file %q -- python3 train.py\n' "$GS_HOLDER" "$d/user/job.ready"
	} >"$d/user/job/run"
	chmod +x "$d/user/job/run"
	chown -R nobody "$d/user"
	setsid setpriv --reuid=nobody --regid=nogroup --clear-groups runsv "$d/user/job" </dev/null >/dev/null 2>&1 3>&- &
	track "$!" sup
	wait_for 20 test -f "$d/user/job.ready"
	job=$(ready_values "$d/user/job.ready" pid)
	# nobody points its control pipe at root's service's.
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		sh -c "ln -s '$d/sv/victim/supervise/control' '$d/user/job/supervise/c2' && mv -f '$d/user/job/supervise/c2' '$d/user/job/supervise/control'"

	run --separate-stderr gs reclaim -y --grace 2s --json
	echo "$output" | jq -c '.plan.targets, .units' >&2
	# Root's service was never selected and holds no GPU.
	assert_alive "$victim"
	sv status "$d/sv/victim" | grep -q '^run: '
	setpriv --reuid=nobody --regid=nogroup --clear-groups kill "$job" 2>/dev/null || true
}

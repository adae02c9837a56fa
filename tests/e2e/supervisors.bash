# Shared by supervisors.bats and supervisors-review.bats: the real process
# supervisors (supervisord, runit, s6), each run by the test in its own
# directory, over holders of the simulated GPU.

# The environment a holder needs to see the simulated GPU, for run scripts
# (runsv and s6-supervise pass theirs on, but a run script says it itself,
# as real ones do).
holder_env() {
	printf 'export FAKE_NVML_STATE=%q GPUSLATE_DEV_ROOT=%q GPUSLATE_NVIDIA_PROCFS=%q\n' \
		"$FAKE_NVML_STATE" "$GPUSLATE_DEV_ROOT" "$GPUSLATE_NVIDIA_PROCFS"
}

# service_run FILE READY [LINE]: a runit/s6 run script that execs a holder
# of 2 GiB on GPU 0 (ready file READY), after LINE when given.
service_run() {
	{
		echo '#!/bin/sh'
		holder_env
		[ -z "${3:-}" ] || printf '%s\n' "$3"
		printf 'exec %q --gpu 0 --mib 2048 --ready-file %q -- python3 serve.py\n' "$GS_HOLDER" "$2"
	} >"$1"
	chmod +x "$1"
}

# runsvdir_start NAME: runsvdir over $BATS_TEST_TMPDIR/service with service
# NAME (its directory $BATS_TEST_TMPDIR/sv/NAME, made by the caller).
runsvdir_start() {
	local d=$BATS_TEST_TMPDIR
	mkdir -p "$d/service"
	ln -s "$d/sv/$1" "$d/service/$1"
	runsvdir "$d/service" </dev/null >/dev/null 2>&1 3>&- &
	track "$!" sup
}

# sd_conf PROGRAM-SECTIONS: a supervisord config of the test's own (socket,
# logs and pid file in the test's directory) with the given program
# sections; sets SD_CONF. sd_run starts supervisord on it (SD: its pid).
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
# sd_state PROGRAM: what supervisord says of it (RUNNING, STOPPED, ...).
sd_state() { supervisorctl -c "$SD_CONF" status "$1" 2>/dev/null | awk '{ print $2 }'; }
sd_pid() { supervisorctl -c "$SD_CONF" pid "$1" 2>/dev/null; }

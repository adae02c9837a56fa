#!/usr/bin/env bats
# Scripting safety (issue 26): a mistyped filter, an empty selection value,
# a COMMAND that cannot run, a user who is not root, a host without a
# driver, signals sent to run's process group and Ctrl-C during a reclaim.
# Each must give a script the right answer and cost no job.

load helpers

@test "scripting: --match that names nothing is 'no match' (exit 7) with NVML in use; the holder lives" {
	start_holder a --gpu 0 --mib 2048
	a=$(rpid a)
	run --separate-stderr gs reclaim -y -g 0 --match zzq --json
	assert_status 7
	assert_eq "$(jqo .verdict)" no-match verdict
	assert_alive "$a"
	run --separate-stderr gs reclaim -n -g 0 --match zzq
	assert_status 7
	assert_match "$output$stderr" "Nothing matched" "dry run says so"
	assert_alive "$a"
}

# nvml_helper PID: the NVML helper of the gpuslate with that PID.
nvml_helper() { pgrep -P "$1" -x gpuslate-nvml; }

@test "scripting: the NVML helper is named gpuslate-nvml and carries none of gpuslate's arguments" {
	start_holder a --gpu 0 --mib 2048 --ignore-term
	a=$(rpid a)
	bg rc "$GPUSLATE_BIN" reclaim -y --json --match 'gs-holder' --grace 5
	wait_for 10 nvml_helper "$BG_PID"
	h=$(nvml_helper "$BG_PID")
	assert_eq "$(tr '\0' ' ' <"/proc/$h/cmdline" | sed 's/ *$//')" gpuslate-nvml "helper's command line"
	bg_wait rc 60
	assert_eq "$BG_STATUS" 0 "reclaim (stderr: $BG_ERR)"
	output=$BG_OUT
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$a" "the holder is the only target"
	assert_dead "$a"
}

@test "scripting: an empty selection value (-g \"\$UNSET\", -u, --unit, --container, --match, -w) is a usage error; nothing stopped" {
	start_holder a --gpu 0 --mib 2048
	a=$(rpid a)
	for opt in -g -u --unit --container --match -w; do
		run --separate-stderr gs reclaim -y "$opt" "" --json
		assert_status 2
		assert_match "$stderr" "^gpuslate: (-./)?$opt(/--[a-z]+)? '': empty value" "$opt named"
		assert_eq "$(grep -c "^gpuslate: " <<<"$stderr")" 1 "one error line for $opt"
		assert_alive "$a"
	done
	run --separate-stderr gs reclaim -y --gpus= --json
	assert_status 2
	assert_match "$stderr" "^gpuslate: -g/--gpus '': empty value" "--gpus= named"
	# Blanks only: "$A $B" with both unset (--match ' ' matched every
	# holder with an argument).
	run --separate-stderr gs reclaim -y --match " " --json
	assert_status 2
	assert_match "$stderr" "^gpuslate: --match ' ': empty value" "--match ' ' named"
	assert_alive "$a"
}

@test "scripting: run with a COMMAND that cannot run exits 127/126 before the reclaim; nothing stopped" {
	start_holder a --gpu 0 --mib 2048
	a=$(rpid a)
	run -127 --separate-stderr gs run -y -g 0 -- pythn3 bench.py
	assert_status 127
	assert_match "$stderr" "^gpuslate: cannot run 'pythn3': command not found in PATH; nothing was stopped\$" "said"
	assert_alive "$a"
	assert_eq "$(gpu_used 0)" 2048 "GPU 0 still held"
	printf '#!/bin/sh\nexit 0\n' >"$BATS_TEST_TMPDIR/noexec.sh"
	chmod 0644 "$BATS_TEST_TMPDIR/noexec.sh"
	run -126 --separate-stderr gs run -y -g 0 --json -- "$BATS_TEST_TMPDIR/noexec.sh"
	assert_status 126
	assert_eq "$(jqo '"\(.exit_status) \(.run.started) \(.processes | length)"')" "126 false 0" "JSON: status, not started, nothing stopped"
	assert_alive "$a"
	# A dry run says the same.
	run -127 --separate-stderr gs run -n -g 0 -- pythn3
	assert_status 127
	assert_alive "$a"
}

# lock_hold: another reclaim holds the host lock (flock(1), as gpuslate
# takes it; -o: the lock stays flock's, not its child's); lock_release.
lock_hold() {
	bg locker flock -o -x "$GPUSLATE_LOCK_FILE" sleep 600
	LOCKER=$BG_PID
	wait_for 10 eval '! flock -n "$GPUSLATE_LOCK_FILE" true'
}
lock_release() {
	pkill -KILL -P "$LOCKER" sleep
	wait_for 10 dead "$LOCKER"
}

@test "scripting: without a GPU driver reclaim exits 3 and writes no lock file, no state file" {
	export GPUSLATE_NVML_LIB=$BATS_TEST_TMPDIR/nonexistent/libnvidia-ml.so.1
	rm -rf "$GPUSLATE_NVIDIA_PROCFS"
	run --separate-stderr gs reclaim -y
	assert_status 3
	assert_match "$stderr" "no NVIDIA GPU driver" "said"
	[ ! -e "$GPUSLATE_LOCK_FILE" ] || { echo "lock file written without a driver" >&2; false; }
	[ ! -e "$GPUSLATE_STATE_FILE" ] || { echo "state file written without a driver" >&2; false; }
}

@test "scripting: a dry run takes no lock: it answers while another reclaim holds it, and writes nothing" {
	start_holder a --gpu 0 --mib 2048
	a=$(rpid a)
	lock_hold
	run --separate-stderr timeout 20 "$GPUSLATE_BIN" reclaim -n --json
	lock_release
	assert_status 0
	assert_eq "$(jqo .verdict)" dry-run verdict
	assert_no_match "$stderr" "another gpuslate reclaim" "no waiting for the lock"
	assert_alive "$a"
	rm -f "$GPUSLATE_LOCK_FILE"
	run --separate-stderr gs reclaim -n
	[ ! -e "$GPUSLATE_LOCK_FILE" ] || { echo "a dry run created the lock file" >&2; false; }
	[ ! -e "$GPUSLATE_STATE_FILE" ] || { echo "a dry run wrote the state file" >&2; false; }
}

@test "scripting: a reclaim that waited for the lock plans from what the host holds after the wait" {
	start_holder a --gpu 0 --mib 2048
	a=$(rpid a)
	lock_hold
	bg rc "$GPUSLATE_BIN" reclaim -y --json --timeout 30
	wait_for 15 file_has "$BATS_TEST_TMPDIR/rc.err" "another gpuslate reclaim is running"
	# Meanwhile the other reclaim ends a, and a new job starts.
	kill -KILL "$a"
	wait_for 5 dead "$a"
	start_holder b --gpu 1 --mib 1024
	b=$(rpid b)
	lock_release
	bg_wait rc 60
	output=$BG_OUT
	assert_eq "$BG_STATUS" 0 "exit status (stderr: $BG_ERR)"
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$b" "the job started during the wait is the target"
	assert_dead "$b"
}

# term_pending PID: SIGTERM is pending for PID (sent, blocked).
term_pending() {
	local m
	for m in $(sed -n 's/^\(SigPnd\|ShdPnd\):[[:space:]]*//p' "/proc/$1/status"); do
		(((0x$m >> 14) & 1)) && return 0
	done
	return 1
}

@test "scripting: Ctrl-C during a reclaim's grace period is 'interrupted', exit 130, not 'not clean'" {
	# SIGTERM blocked: it stays pending, which shows it was sent.
	start_holder stubborn --gpu 0 --mib 2048 --block-term
	p=$(rpid stubborn)
	# As a terminal runs its foreground job: SIGINT at its default (a
	# script's background job has it ignored, and gpuslate keeps that).
	bg rc env --default-signal=INT "$GPUSLATE_BIN" reclaim -y --json --grace 30
	wait_for 15 term_pending "$p"
	kill -INT "$BG_PID"
	bg_wait rc 20
	output=$BG_OUT
	assert_eq "$BG_STATUS" 130 "exit status (stderr: $BG_ERR)"
	assert_eq "$(jqo '"\(.verdict) \(.exit_status) \(.interrupted)"')" "interrupted 130 true" "verdict"
	assert_eq "$(jqo ".processes[] | select(.pid == $p) | .signals | join(\",\")")" SIGTERM,SIGCONT "what was sent so far"
	# No SIGKILL after the interruption: the grace period was not over.
	assert_alive "$p"
}

# count_job D: a COMMAND that counts the SIGINTs it gets in D/count and
# exits with the count once D/go appears.
count_job() {
	cat >"$1/job.sh" <<-SH
		n=0
		trap 'n=\$((n+1)); echo \$n >"$1/count"' INT
		echo pid=\$\$ >"$1/j.started"
		while [ ! -e "$1/go" ]; do sleep 0.05; done
		exit \$n
	SH
}
job_started() { [ -s "$BATS_TEST_TMPDIR/$1.started" ]; }

@test "scripting: SIGINT to run's whole process group (kill -INT -- -PGID) reaches COMMAND once" {
	local d=$BATS_TEST_TMPDIR
	count_job "$d"
	# Its own session and group, as a supervisor starts it (stopasgroup).
	bg job setsid env --default-signal=INT "$GPUSLATE_BIN" run -y -- bash "$d/job.sh"
	g=$BG_PID
	wait_for 20 job_started j
	assert_eq "$(ps -o pgid= -p "$g" | tr -d ' ')" "$g" "gpuslate leads its group"
	kill -INT -- -"$g"
	wait_for 10 test -s "$d/count"
	# Time for a second delivery, had it come.
	stays_for 1 grep -qx 1 "$d/count"
	touch "$d/go"
	bg_wait job
	assert_eq "$BG_STATUS" 1 "exit status (COMMAND's count of SIGINTs)"
	assert_match "$BG_ERR" "^  signals +SIGINT passed on to COMMAND \(1\)$" "summary"
}

@test "scripting: SIGKILL to run's process group ends COMMAND too (a supervisor's killasgroup)" {
	local d=$BATS_TEST_TMPDIR
	bg job setsid "$GPUSLATE_BIN" run -y -- bash -c "trap '' TERM INT; echo pid=\$\$ >'$d/j.started'; while :; do sleep 0.05; done"
	g=$BG_PID
	wait_for 20 job_started j
	c=$(ready_values "$d/j.started" pid)
	kill -KILL -- -"$g"
	wait_for 10 dead "$g"
	wait_for 10 dead "$c"
}

# A script whose interpreter is gone fails exec with ENOENT although the
# script is there: found before the reclaim, not after it stopped the GPU.
@test "scripting: run with a script whose interpreter is missing stops nothing (exit 127 before the reclaim)" {
	start_holder a --gpu 0 --mib 2048
	a=$(rpid a)
	# A venv's entry point whose python is gone, or a CRLF shebang.
	printf '#!/nonexistent/venv/bin/python3\nprint(1)\n' >"$BATS_TEST_TMPDIR/torchrun"
	chmod 0755 "$BATS_TEST_TMPDIR/torchrun"
	run -127 --separate-stderr gs run -y -g 0 -- "$BATS_TEST_TMPDIR/torchrun"
	assert_alive "$a"
	assert_status 127
	assert_one_error "$stderr" "cannot run '.*/torchrun': its interpreter '/nonexistent/venv/bin/python3' does not exist; nothing was stopped"
}

# Under nohup (SIGHUP ignored, as the user asked) a hang-up must
# not cut the reclaim short (reclaim.c install_handlers overrides SIG_IGN).
@test "scripting: nohup gpuslate reclaim: a SIGHUP (ssh disconnect) does not interrupt it" {
	start_holder stubborn --gpu 0 --mib 2048 --block-term
	p=$(rpid stubborn)
	bg rc nohup "$GPUSLATE_BIN" reclaim -y --json --grace 2
	wait_for 15 term_pending "$p"
	kill -HUP "$BG_PID"
	bg_wait rc 30
	output=$BG_OUT
	assert_eq "$BG_STATUS" 0 "exit status (stderr: $BG_ERR)"
	assert_dead "$p"
}


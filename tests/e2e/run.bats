#!/usr/bin/env bats
# gpuslate run [options] -- COMMAND (issue 14 §2): reclaim, then COMMAND
# under the reclaim lock while the selected GPUs are watched for intruders.
# Real processes and signals on the simulated GPU host; COMMAND is a real
# shell, intruders are real gs-holder processes.

load helpers

# job_script NAME: a COMMAND that says it started (NAME.started, with its
# pid), then waits until the test creates NAME.go and exits with the number
# in it (default 0). Bounded: it gives up after 60 s.
job_script() {
	local d=$BATS_TEST_TMPDIR
	echo "echo pid=\$\$ >'$d/$1.started'; i=0; while [ ! -e '$d/$1.go' ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i+1)); done; exit \$(cat '$d/$1.go' 2>/dev/null || echo 0)"
}
job_started() { [ -s "$BATS_TEST_TMPDIR/$1.started" ]; }
job_go() { echo "${2:-0}" >"$BATS_TEST_TMPDIR/$1.go.tmp" && mv "$BATS_TEST_TMPDIR/$1.go.tmp" "$BATS_TEST_TMPDIR/$1.go"; }

@test "run: reclaims, then COMMAND sees clean GPUs; its exit status 0 is gpuslate's" {
	start_holder a --gpu 0 --mib 2048
	a=$(rpid a)

	run --separate-stderr gs run -y -- sh -c \
		"'$GPUSLATE_BIN' status --query-gpu=index,memory.used --format=csv,noheader,nounits >'$BATS_TEST_TMPDIR/seen'"
	assert_status 0
	assert_dead "$a"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/seen")" "0, 0
1, 0" "what COMMAND saw"
	assert_eq "$output" "" "gpuslate's stdout (COMMAND's own)"
	assert_match "$stderr" "^Verdict: clean" "the reclaim report on stderr"
	assert_match "$stderr" "^  ran +[0-9.]+ s, exit status 0$" "summary"
	assert_match "$stderr" "^  intruders +none$" "summary"
}

@test "run: COMMAND's exit status passes through: 3, and 128+N when signal N ends it" {
	run --separate-stderr gs run -y -- sh -c 'exit 3'
	assert_status 3
	run --separate-stderr gs run -y -- sh -c 'kill -KILL $$'
	assert_status 137
	assert_match "$stderr" "killed by signal 9 \(SIGKILL\)" "summary"
	run -127 --separate-stderr gs run -y -- /nonexistent/command
	assert_status 127
	assert_one_error "$stderr" "cannot run '/nonexistent/command'"
}

@test "run: COMMAND's own arguments are its own, options and all" {
	run --separate-stderr gs run -y -- sh -c 'printf "%s|" "$@"' sh -y --json -g 1 --
	assert_status 0
	assert_eq "$output" "-y|--json|-g|1|--|" "COMMAND's argv"
}

@test "run: not clean, COMMAND is not run and the reclaim's status is gpuslate's" {
	# Its memory stays 5 s after it exits: not released within --timeout.
	start_holder slow --gpu 0 --mib 1024 --release-ms 5000
	run --separate-stderr gs run -y --timeout 0.3 -- touch "$BATS_TEST_TMPDIR/ran"
	assert_status 1
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_match "$(error_lines "$stderr")" "^gpuslate: COMMAND not run: the reclaim's verdict is not-clean$" "error line"
}

@test "run: --dry-run shows the plan and what would run; nothing is stopped or run" {
	start_holder a --gpu 0 --mib 1024
	run --separate-stderr gs run --dry-run -- touch "$BATS_TEST_TMPDIR/ran"
	assert_status 0
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_alive "$(rpid a)"
	assert_match "$stderr" "^Will stop:" "plan"
	assert_match "$stderr" "would run: touch " "what would run"
}

@test "run: without a terminal and without -y, refused; COMMAND not run" {
	start_holder a --gpu 0 --mib 1024
	run --separate-stderr gs run -- touch "$BATS_TEST_TMPDIR/ran"
	assert_status 5
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_alive "$(rpid a)"
}

@test "run: an intruder is reported once on stderr and left running; COMMAND's 0 becomes 9" {
	bg job gs run -y -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	start_holder intruder --gpu 0 --mib 512
	i=$(rpid intruder)
	wait_for 10 file_has "$BATS_TEST_TMPDIR/job.err" "intruder on GPU 0: PID $i (gs-holder) of $(id -un), 512 MiB"
	# It stays: reported, not stopped.
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 9 "exit status"
	assert_alive "$i"
	assert_eq "$(grep -c "intruder on GPU 0: PID $i " <<<"$BG_ERR")" 1 "reports of the intruder"
	assert_match "$BG_ERR" "PID $i \(gs-holder\) of .* on GPU 0 after [0-9.]+ s: left running" "summary"
}

@test "run: an intruder with COMMAND failing keeps COMMAND's status" {
	bg job gs run -y -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	start_holder intruder --gpu 0 --mib 512
	wait_for 10 file_has "$BATS_TEST_TMPDIR/job.err" "intruder on GPU 0: PID $(rpid intruder) "
	job_go j 4
	bg_wait job
	assert_eq "$BG_STATUS" 4 "exit status"
}

@test "run: --guard stops an intruder as reclaim would; COMMAND goes on" {
	bg job gs run -y --guard --grace 2 -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	start_holder intruder --gpu 1 --mib 512
	i=$(rpid intruder)
	wait_for 10 dead "$i"
	wait_for 10 file_has "$BATS_TEST_TMPDIR/job.err" "intruder PID $i (gs-holder): stopped: exited-after-term"
	assert_alive "$(ready_values "$BATS_TEST_TMPDIR/j.started" pid)"
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 9 "exit status"
}

@test "run: --guard leaves a protected daemon alone; a client is no intruder" {
	bg job gs run -y --guard -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	start_holder pd --as nvidia-persistenced --gpu 0 --client
	start_holder mon --gpu 0 --client
	start_holder intruder --gpu 0 --mib 256
	i=$(rpid intruder)
	# The intruder's report comes from a scan that saw the others too.
	wait_for 10 file_has "$BATS_TEST_TMPDIR/job.err" "intruder PID $i (gs-holder): stopped"
	job_go j 0
	bg_wait job
	assert_alive "$(rpid pd)" "$(rpid mon)"
	assert_no_match "$BG_ERR" "PID $(rpid pd) |PID $(rpid mon) " "reports"
}

@test "run: COMMAND's own children holding the GPU are no intruders, double-forked ones included" {
	local d=$BATS_TEST_TMPDIR
	# COMMAND starts a holder as a child and one that double-forks away
	# (its parent exits at once), then waits for go and ends both.
	bg job gs run -y --guard -- bash -c "
		'$GS_HOLDER' --gpu 0 --mib 128 --ready-file '$d/kid.ready' >/dev/null 2>&1 &
		( '$GS_HOLDER' --gpu 1 --mib 128 --ready-file '$d/orphan.ready' >/dev/null 2>&1 & )
		$(job_script j)"
	wait_for 10 job_started j
	wait_for 10 test -s "$d/kid.ready"
	wait_for 10 test -s "$d/orphan.ready"
	kid=$(rpid kid)
	orphan=$(rpid orphan)
	track "$kid"
	track "$orphan"
	# A later intruder: the scan that reports it saw COMMAND's holders too.
	start_holder intruder --gpu 0 --mib 256
	wait_for 10 file_has "$d/job.err" "intruder PID $(rpid intruder) (gs-holder): stopped"
	assert_alive "$kid" "$orphan"
	assert_no_match "$(cat "$d/job.err")" "PID ($kid|$orphan) " "reports"
	kill "$kid" "$orphan"
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 9 "exit status (the intruder)"
}

@test "run: -g 0: a holder of another GPU is none of run's business, before or during COMMAND" {
	start_holder before --gpu 1 --mib 512
	bg job gs run -y -g 0 -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	start_holder during --gpu 1 --mib 512
	start_holder intruder --gpu 0 --mib 256
	# The scan that reports the intruder on GPU 0 saw the other two.
	wait_for 10 file_has "$BATS_TEST_TMPDIR/job.err" "intruder on GPU 0: PID $(rpid intruder) "
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 9 "exit status"
	assert_alive "$(rpid before)" "$(rpid during)"
	assert_no_match "$BG_ERR" "PID ($(rpid before)|$(rpid during)) " "reports"
}

@test "run: SIGINT and SIGTERM sent to gpuslate reach COMMAND first; the run ends with its status" {
	local d=$BATS_TEST_TMPDIR sig
	for sig in INT TERM; do
		rm -f "$d/j.started" "$d/got"
		# env --default-signal: a background job of a script starts with
		# SIGINT ignored, and COMMAND inherits what gpuslate was given.
		bg job env --default-signal=INT "$GPUSLATE_BIN" run -y -- bash -c \
			"trap 'echo $sig >\"$d/got\"; exit 42' $sig; echo pid=\$\$ >'$d/j.started'; while :; do sleep 0.05; done"
		g=$BG_PID
		wait_for 10 job_started j
		kill -"$sig" "$g"
		bg_wait job
		assert_eq "$BG_STATUS" 42 "exit status after SIG$sig"
		assert_eq "$(cat "$d/got")" "$sig" "what COMMAND got"
		assert_match "$BG_ERR" "^  ran +[0-9.]+ s, exit status 42$" "summary"
		assert_match "$BG_ERR" "^  signals +SIG$sig passed on to COMMAND \(1\)$" "summary"
	done
}

@test "run: a COMMAND that ignores SIGTERM keeps gpuslate waiting; SIGKILL to it ends the run with 137" {
	local d=$BATS_TEST_TMPDIR
	bg job "$GPUSLATE_BIN" run -y -- bash -c "trap '' TERM; echo pid=\$\$ >'$d/j.started'; while :; do sleep 0.05; done"
	g=$BG_PID
	wait_for 10 job_started j
	c=$(ready_values "$d/j.started" pid)
	kill -TERM "$g"
	stays_for 1 alive "$g"
	assert_alive "$c"
	kill -KILL "$c"
	bg_wait job
	assert_eq "$BG_STATUS" 137 "exit status"
}

@test "run: the reclaim lock is held while COMMAND runs; a concurrent reclaim waits and gives up" {
	bg job "$GPUSLATE_BIN" run -y -- bash -c "$(job_script j)"
	g=$BG_PID
	wait_for 10 job_started j
	assert_eq "$(cat "$GPUSLATE_LOCK_FILE")" "$g" "the lock's holder"
	run --separate-stderr gs reclaim -y --timeout 0.3
	assert_status 5
	assert_one_error "$stderr" "another gpuslate reclaim still holds the lock"
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 0 "exit status"
	run --separate-stderr gs reclaim -y --timeout 0.3
	assert_status 0
}

@test "run: --json prints one document after COMMAND's own output, with the run keys" {
	start_holder a --gpu 0 --mib 1024
	run --separate-stderr gs run -y --json -- sh -c 'echo from-command; exit 3'
	assert_status 3
	assert_eq "$(head -n 1 <<<"$output")" from-command "COMMAND's stdout first"
	output=$(sed 1d <<<"$output")
	assert_eq "$(jqo .command)" run command
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo .exit_status)" 3 exit_status
	assert_eq "$(jqo '.run.command | join(" ")')" "sh -c echo from-command; exit 3" "run.command"
	assert_eq "$(jqo '.run.started')" true "run.started"
	assert_eq "$(jqo '.run.exit_status')" 3 "run.exit_status"
	assert_eq "$(jqo '.run.signal')" null "run.signal"
	assert_eq "$(jqo '.run.run_ms | type')" number "run.run_ms"
	assert_eq "$(jqo '.run.intruders | length')" 0 "run.intruders"
	assert_eq "$(jqo .run.restore)" null "run.restore without --restore"
	assert_eq "$(jqo '.processes | length')" 1 "the reclaim's processes"
}

@test "run: --json-file FILE: the document in FILE, written whole; stdout is COMMAND's alone" {
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	f=$BATS_TEST_TMPDIR/report.json
	echo stale >"$f"
	# COMMAND sees the old file until the document replaces it whole.
	run --separate-stderr gs run -y --json-file "$f" -- sh -c "cat '$f'; echo from-command; exit 3"
	assert_status 3
	assert_eq "$output" "stale
from-command" "stdout: COMMAND's own, no document"
	assert_dead "$a"
	assert_eq "$(jq -r .command "$f")" run command
	assert_eq "$(jq -r .verdict "$f")" clean verdict
	assert_eq "$(jq -r .run.exit_status "$f")" 3 "run.exit_status"
	assert_eq "$(jq -r '.processes | map(.pid) | .[0]' "$f")" "$a" "the reclaim's process"
	# No temporary file is left beside it.
	assert_eq "$(ls "$BATS_TEST_TMPDIR" | grep -c '^report\.json')" 1 "files named report.json*"
	# A FILE that cannot be written is refused before anything is stopped or run.
	start_holder b --gpu 1 --mib 512
	run --separate-stderr gs run -y --json-file "$BATS_TEST_TMPDIR/nodir/r.json" -- touch "$BATS_TEST_TMPDIR/ran"
	assert_status 2
	assert_one_error "$stderr" "--json-file '$BATS_TEST_TMPDIR/nodir/r.json': cannot write there: No such file or directory"
	assert_eq "$output" "" "stdout"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_alive "$(rpid b)"
	# An early failure's document goes to FILE too.
	run --separate-stderr gs run -y -g 7 --json-file "$f" -- true
	assert_status 2
	assert_eq "$output" "" "stdout"
	assert_eq "$(jq -r .verdict "$f")" usage-error "the early failure's document"
}

@test "run: --json when not clean says COMMAND did not start" {
	start_holder slow --gpu 0 --mib 1024 --release-ms 5000
	run --separate-stderr gs run -y --json --timeout 0.3 -- true
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo .run.started)" false "run.started"
	assert_eq "$(jqo .run.exit_status)" null "run.exit_status"
}

@test "run: --restore reports what it restored (nothing to restore here)" {
	start_holder a --gpu 0 --mib 1024
	run --separate-stderr gs run -y --restore -- true
	assert_status 0
	assert_match "$stderr" "^  restored +nothing$" "summary"
}

@test "run: usage errors: -w, no COMMAND, COMMAND without --, --guard outside run" {
	run --separate-stderr gs -w node1 run -y -- true
	assert_status 2
	assert_one_error "$stderr" "'run' is local only"
	run --separate-stderr gs run -y
	assert_status 2
	assert_one_error "$stderr" "no COMMAND given"
	run --separate-stderr gs run -y true
	assert_status 2
	assert_one_error "$stderr" "put COMMAND after '--'"
	run --separate-stderr gs reclaim -y --guard
	assert_status 2
	assert_one_error "$stderr" "option --guard is not valid for 'reclaim'"
}

@test "run: Ctrl-C at a terminal reaches COMMAND once (gpuslate does not pass on what the terminal sent it)" {
	local d=$BATS_TEST_TMPDIR
	# COMMAND counts the SIGINTs it gets, then exits with the count when
	# go appears.
	cat >"$d/job.sh" <<-SH
		n=0
		trap 'n=\$((n+1)); echo \$n >"$d/count"' INT
		echo pid=\$\$ >"$d/j.started"
		while [ ! -e "$d/go" ]; do sleep 0.05; done
		exit \$n
	SH
	pty_start tty "env --default-signal=INT '$GPUSLATE_BIN' run -y -- bash '$d/job.sh'"
	wait_for 20 job_started j
	local var=PTY_FD_tty
	printf '\003' >&"${!var}"
	wait_for 10 test -s "$d/count"
	# Time for a second delivery, had gpuslate passed it on.
	stays_for 1 grep -qx 1 "$d/count"
	touch "$d/go"
	pty_type tty ""
	bg_wait tty
	assert_eq "$BG_STATUS" 1 "exit status (COMMAND's count of SIGINTs)"
	# The terminal sent it to the whole foreground group, COMMAND included.
	assert_no_match "$(cat "$d/tty.tty")" "passed on to COMMAND" "summary"
	assert_match "$(cat "$d/tty.tty")" "exit status +1" "summary"
}

@test "run: --json when the lock stays taken: the early-failure document, COMMAND not started" {
	launch locker bash -c 'exec 9>>"$1"; flock -x 9; echo "pid=$$" >"$2"; exec sleep 600' \
		_ "$GPUSLATE_LOCK_FILE" "$BATS_TEST_TMPDIR/locker.ready"
	run --separate-stderr gs run -y --json --timeout 0.2 -- touch "$BATS_TEST_TMPDIR/ran"
	assert_status 5
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_eq "$(jqo .command)" run command
	assert_eq "$(jqo .verdict)" refused verdict
	assert_eq "$(jqo .run.started)" false "run.started"
	assert_eq "$(jqo '.run.command | join(" ")')" "touch $BATS_TEST_TMPDIR/ran" "run.command"
}

@test "run: a process that held a selected GPU without memory as COMMAND started, then allocates, is an intruder" {
	local d=$BATS_TEST_TMPDIR
	# A client of GPU 0 (the device open, no context: a launcher that
	# checked the GPU), left alone by the reclaim; once go appears it
	# becomes a compute holder of GPU 0 under the same PID (exec).
	launch early bash -c "exec 3<'$GPUSLATE_DEV_ROOT/nvidia0' 4<'$GPUSLATE_DEV_ROOT/nvidiactl'
		echo pid=\$\$ >'$d/early.ready'
		while [ ! -e '$d/early.go' ]; do sleep 0.05; done
		exec 3<&- 4<&-
		exec '$GS_HOLDER' --gpu 0 --mib 512 --ready-file '$d/early.compute'"
	e=$(rpid early)
	bg job gs run -y -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	touch "$d/early.go"
	wait_for 10 test -s "$d/early.compute"
	assert_eq "$(ready_values "$d/early.compute" pid)" "$e" "the same process"
	wait_for 10 file_has "$d/job.err" "intruder on GPU 0: PID $e (gs-holder)"
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 9 "exit status"
}

@test "run: SIGTERM to gpuslate while --guard waits out an intruder's grace reaches COMMAND at once; the intruder is not escalated" {
	local d=$BATS_TEST_TMPDIR
	bg job env --default-signal=INT "$GPUSLATE_BIN" run -y --guard --grace 60 -- bash -c \
		"trap 'echo TERM >\"$d/got\"; exit 42' TERM; echo pid=\$\$ >'$d/j.started'; while :; do sleep 0.05; done"
	g=$BG_PID
	wait_for 10 job_started j
	# Its SIGTERM handler carries on: only the end of --grace would end it.
	start_holder intruder --gpu 0 --mib 256 --ignore-term
	i=$(rpid intruder)
	wait_for 10 file_has "$d/job.err" "intruder on GPU 0: PID $i "
	kill -TERM "$g"
	# Far below the 60 s grace: passed on as soon as it came.
	wait_for 10 test -s "$d/got"
	bg_wait job 10
	assert_eq "$BG_STATUS" 42 "exit status (COMMAND's)"
	assert_alive "$i"
	assert_match "$BG_ERR" "intruder PID $i \(gs-holder\): not stopped: interrupted" "the guard's outcome"
	assert_match "$BG_ERR" "^  signals +SIGTERM passed on to COMMAND \(1\)$" "summary"
}

@test "run --guard: an intruder that is its unit's main process is not signalled while the unit holds a process the guard leaves alone" {
	local d=$BATS_TEST_TMPDIR
	world_systemd_start
	# The reclaim's target.
	start_holder victim --gpu 0 --mib 512 --note victim
	# svc.service: its main process starts a holder of GPU 0 that --match
	# leaves alone (a context, no memory yet: the reclaim is clean beside it);
	# once go appears the main process becomes a holder of GPU 0 itself.
	world_unit svc -- bash -c "'$GS_HOLDER' --gpu 0 --mib 0 --note keep --ready-file '$d/keep.ready' & \
		while [ ! -e '$d/svc.go' ]; do sleep 0.05; done; \
		exec '$GS_HOLDER' --gpu 0 --mib 256 --ready-file '$d/svc.ready'"
	main=$UNIT_MAIN
	wait_for 10 test -s "$d/keep.ready"
	keep=$(rpid keep)
	track "$keep"
	bg job gs run -y --guard --match victim -- bash -c "$(job_script j)"
	wait_for 20 job_started j
	assert_dead "$(rpid victim)"
	touch "$d/svc.go"
	wait_for 10 file_has "$d/job.err" "intruder on GPU 0: PID $main "
	wait_for 10 file_has "$d/job.err" "intruder PID $main (gs-holder): "
	# Its end would make systemd stop svc.service, keep and all.
	assert_match "$(cat "$d/job.err")" "intruder PID $main \(gs-holder\): not stopped" "the guard's outcome"
	assert_alive "$main" "$keep"
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 9 "exit status"
	assert_alive "$keep"
}

@test "run --json: a COMMAND that cannot be executed has no PID, and the man page names the restore key --json prints" {
	run -127 --separate-stderr gs run -y --json -- /nonexistent/command
	assert_status 127
	assert_eq "$(jqo '.run.started')" false "run.started"
	assert_eq "$(jqo '.run.exit_status')" 127 "run.exit_status"
	assert_eq "$(jqo '.run.pid')" null "run.pid"
	run --separate-stderr gs run -y --json --restore -- true
	assert_status 0
	assert_eq "$(jqo '.run.restore.verdict')" nothing-to-restore "run.restore"
	# What --restore's entry in the man page sends a script to.
	local man=$BATS_TEST_DIRNAME/../../man/gpuslate.1.scd
	assert_match "$(sed -n '/^\*--restore\*$/,/^$/p' "$man")" "JSON \*run\.restore\*" "the man page's --restore"
}

@test "run: an intruder that NVML lists with memory but that maps only the control node is reported" {
	bg job gs run -y -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	# nvidiactl open and mapped, no /dev/nvidia0: the fd scan cannot tie
	# it to GPU 0, NVML lists it there with 512 MiB.
	start_holder intruder --gpu 0 --mib 512 --ctl-only
	i=$(rpid intruder)
	wait_for 10 file_has "$BATS_TEST_TMPDIR/job.err" "intruder on GPU 0: PID $i (gs-holder) of $(id -un), 512 MiB"
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 9 "exit status"
	assert_alive "$i"
	kill "$i"
	wait_for 10 dead "$i"
	# --guard: NVML's word alone stops nothing, as in reclaim's plan.
	rm -f "$BATS_TEST_TMPDIR/j.started" "$BATS_TEST_TMPDIR/j.go"
	bg job gs run -y --guard -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	start_holder intruder2 --gpu 0 --mib 512 --ctl-only
	i=$(rpid intruder2)
	wait_for 10 file_has "$BATS_TEST_TMPDIR/job.err" "intruder PID $i (gs-holder): not stopped: the plan leaves it alone"
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 9 "exit status"
	assert_alive "$i"
}

# zombies_of PID: how many zombie children PID has.
zombies_of() { ps -o stat= --ppid "$1" | grep -c '^Z' || true; }
no_zombies_of() { [ "$(zombies_of "$1")" = 0 ]; }

@test "run: COMMAND's short-lived double-forked processes are reaped while it runs (gpuslate is their subreaper)" {
	local d=$BATS_TEST_TMPDIR
	# Twenty ( cmd & ) that end at once: orphans handed to gpuslate that
	# die before any scan sees them.
	bg job "$GPUSLATE_BIN" run -y -- bash -c "for i in \$(seq 20); do ( true & ); done; $(job_script j)"
	g=$BG_PID
	wait_for 10 job_started j
	wait_for 10 no_zombies_of "$g"
	job_go j 0
	bg_wait job
	assert_eq "$BG_STATUS" 0 "exit status"
}

@test "run: when NVML fails while COMMAND runs, the watch is blind: COMMAND's 0 is not passed on as clean, and --json says why" {
	bg job gs run -y --json -- bash -c "$(job_script j)"
	wait_for 10 job_started j
	echo "fail nvmlDeviceGetComputeRunningProcesses_v3 999" >"$FAKE_NVML_STATE/inject"
	# A holder the fd scan alone would see: the scans fail before it.
	start_holder intruder --gpu 0 --mib 512
	# Nothing outside gpuslate shows that a scan failed (the summary
	# comes at the end): ten scan periods, room for a loaded 2-core
	# machine running the sanitizer build.
	sleep 5
	job_go j 0
	bg_wait job
	rm -f "$FAKE_NVML_STATE/inject"
	assert_eq "$BG_STATUS" 3 "exit status (NVML failed: the GPUs were not watched)"
	assert_match "$BG_ERR" "^  watch +incomplete: " "summary"
	output=$BG_OUT
	assert_eq "$(jqo '.exit_status')" 3 "exit_status"
	assert_eq "$(jqo '.run.exit_status')" 0 "run.exit_status (COMMAND's own)"
	assert_eq "$(jqo '.run.watch_error | type')" string "run.watch_error"
}

#!/usr/bin/env bats
# Daily use (issue 27): what the tool says while it waits, -q, tables that
# fit the terminal, the words of the report and of the errors. Terminal
# output is real: the command runs under script(1) on a pseudo-terminal.

load helpers

# tty_run NAME CMD: runs the shell command CMD on a terminal (script), with
# the progress line allowed; its terminal output goes to NAME.tty.
tty_run() {
	command -v script >/dev/null || skip "script (util-linux) is not installed"
	script -q -e -c "env -u GPUSLATE_NO_PROGRESS $2" /dev/null </dev/null >"$BATS_TEST_TMPDIR/$1.tty" 2>&1
}

@test "daily: the grace period shows a progress line on a terminal, naming who is left" {
	start_holder slow --gpu 0 --mib 2048 --ignore-term
	p=$(rpid slow)

	run tty_run grace "$GPUSLATE_BIN reclaim -y --grace 3s"
	assert_status 0
	tty=$(tr '\r' '\n' <"$BATS_TEST_TMPDIR/grace.tty")
	assert_match "$tty" "GPU 0: waiting for 1 of 1 process, SIGKILL in [1-3] s: gs-holder $p" "progress line"
	assert_dead "$p"
}

@test "daily: no progress line when stderr is not a terminal, nor with -q" {
	start_holder slow --gpu 0 --mib 2048 --ignore-term
	p=$(rpid slow)
	run --separate-stderr env -u GPUSLATE_NO_PROGRESS "$GPUSLATE_BIN" reclaim -y --grace 2s
	assert_status 0
	assert_dead "$p"
	if [[ $stderr == *"SIGKILL in"* || $stderr == *$'\r'* ]]; then
		echo "progress on a pipe: $stderr" >&2
		false
	fi

	start_holder slow2 --gpu 0 --mib 2048 --ignore-term
	p=$(rpid slow2)
	run tty_run quiet "$GPUSLATE_BIN reclaim -y -q --grace 2s"
	assert_status 0
	assert_dead "$p"
	if grep -q "SIGKILL in" "$BATS_TEST_TMPDIR/quiet.tty"; then
		echo "progress with -q:" >&2
		cat "$BATS_TEST_TMPDIR/quiet.tty" >&2
		false
	fi
}

@test "daily: a unit's stop shows a progress line on a terminal while systemctl waits" {
	world_systemd_start
	# Deaf to SIGTERM: systemd waits its TimeoutStopSec (3 s) before SIGKILL.
	world_unit --service-set TimeoutStopSec=3s trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 --ignore-term \
		--ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	main=$UNIT_MAIN

	run tty_run unit "nsenter -t $WORLD_SD_PID -m -- env -u GPUSLATE_NO_PROGRESS $GPUSLATE_BIN reclaim -y"
	assert_status 0
	tty=$(tr '\r' '\n' <"$BATS_TEST_TMPDIR/unit.tty")
	assert_match "$tty" "stopping trainer\.service, [0-9]+ s of [0-9]+ s: gs-holder $main" "progress line"
	assert_match "$tty" "stopped with its unit|stopped-with-unit|killed" "report"
	assert_dead "$main"
}

# one_line TEXT REGEX: TEXT is a single line, matching REGEX.
one_line() {
	assert_eq "$(wc -l <<<"$1")" 1 "lines in [$1]"
	assert_match "$1" "$2" "the only line"
}
# only_verdict TEXT: TEXT is one line, the verdict's.
only_verdict() { one_line "$1" "^Verdict: clean \([0-9.]+ s\)\$"; }

@test "daily: reclaim -y -q and wait -q print the verdict line only" {
	start_holder h --gpu 0 --mib 2048
	p=$(rpid h)
	run --separate-stderr gs reclaim -y -q
	assert_status 0
	only_verdict "$output"
	assert_eq "$stderr" "" "stderr"
	assert_dead "$p"

	run --separate-stderr gs wait -q
	assert_status 0
	only_verdict "$output"
	assert_eq "$stderr" "" "stderr"

	# Without -q, the same commands print the plan and the tables.
	run --separate-stderr gs wait
	assert_status 0
	assert_match "$output" "^GPU +NAME" "wait's table"
}

@test "daily: run -q prints the verdict line only, COMMAND's output stays" {
	start_holder h --gpu 1 --mib 2048
	p=$(rpid h)
	run --separate-stderr gs run -y -q -- echo the-job
	assert_status 0
	assert_eq "$output" "the-job" "COMMAND's stdout"
	only_verdict "$stderr"
	assert_dead "$p"
}

@test "daily: restore -q prints its result line only" {
	world_systemd_start
	world_unit trainer -- "$GS_HOLDER" --gpu 0 --mib 4096 --ready-file "$BATS_TEST_TMPDIR/t.ready"
	wait_for 10 test -f "$BATS_TEST_TMPDIR/t.ready"
	run --separate-stderr gs reclaim -y -q
	assert_status 0
	only_verdict "$output"

	run --separate-stderr gs restore -y -q
	assert_status 0
	one_line "$output" "^Restore: 1 started, .*\.\$"
	assert_eq "$stderr" "" "stderr"
	track "$(sd show -p MainPID --value trainer.service)"
}

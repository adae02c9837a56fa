#!/usr/bin/env bats
# Daily use (issue 27): what the tool says while it waits, -q, tables that
# fit the terminal, the words of the report and of the errors. Terminal
# output is real: the command runs under script(1) on a pseudo-terminal.

load helpers
load supervisors

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
	assert_match "$tty" "^ +$main +gs-holder .* stopped with its unit trainer\.service in [0-9.]+ s" "report"
	assert_dead "$main"
}

@test "daily: a supervisor's stop (supervisorctl stop) shows a progress line on a terminal" {
	command -v supervisord >/dev/null || skip "supervisor is not installed (tools/install-deps test installs it)"
	local d=$BATS_TEST_TMPDIR
	# Deaf to SIGTERM: supervisord waits its stopwaitsecs (3 s) before SIGKILL.
	sd_conf "[program:llm]
command=$GS_HOLDER --gpu 0 --mib 2048 --ignore-term --ready-file $d/llm.ready -- python3 serve.py
startsecs=0
stopwaitsecs=3"
	sd_run
	wait_for 20 test -f "$d/llm.ready"
	llm=$(ready_values "$d/llm.ready" pid)

	run tty_run sd "$GPUSLATE_BIN reclaim -y"
	assert_status 0
	tty=$(tr '\r' '\n' <"$d/sd.tty")
	assert_match "$tty" "stopping supervisord program llm:llm, [0-9]+ s of [0-9]+ s: gs-holder $llm" "progress line"
	assert_match "$tty" "^ +$llm +gs-holder .* stopped with its program llm:llm in [0-9.]+ s" "report"
	assert_dead "$llm"
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

# A serving job's command line, longer than any terminal's COMMAND column.
LONG_ARGS=(-- python3 -m sglang.launch_server --model-path /models/Qwen2.5-72B-Instruct-GPTQ-Int4 --port 30000
	--tp-size 2 --mem-fraction-static 0.88 --served-model-name qwen-72b-instruct --trust-remote-code)
LONG_TAIL="--served-model-name qwen-72b-instruct --trust-remote-code"

# term NAME COLS CMD: the shell command CMD on a terminal of COLS columns;
# its output, without the carriage returns, in NAME.tty.
term() {
	command -v script >/dev/null || skip "script (util-linux) is not installed"
	script -q -e -c "stty cols $2; $3" /dev/null </dev/null >"$BATS_TEST_TMPDIR/$1.raw" 2>&1
	tr -d '\r' <"$BATS_TEST_TMPDIR/$1.raw" >"$BATS_TEST_TMPDIR/$1.tty"
}

# longest FILE: the length of its longest line.
longest() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }

@test "daily: the plan and status take the terminal's width, cut with an ellipsis" {
	start_holder job --gpu 0 --mib 2048 "${LONG_ARGS[@]}"
	p=$(rpid job)

	for cols in 160 100; do
		run term plan$cols "$cols" "$GPUSLATE_BIN reclaim --dry-run; $GPUSLATE_BIN status"
		assert_status 0
		f=$BATS_TEST_TMPDIR/plan$cols.tty
		# (the lines the table cut follow it whole: they may wrap)
		n=$(sed '/^Command lines in full:/,/^$/d' "$f" | longest /dev/stdin)
		[ "$n" -le "$cols" ] || { echo "a line of $n columns on a $cols-column terminal:" >&2; cat "$f" >&2; false; }
		# The COMMAND column takes what the others leave: the row fills
		# the terminal (less the gaps of its last column).
		row=$(grep -E "^ +$p +root " "$f" | head -n 1)
		[ "${#row}" -ge $((cols - 8)) ] || { echo "plan row of ${#row} columns on $cols: $row" >&2; false; }
		assert_match "$row" "gs-holder .*\.\.\..*remote-code " "plan row, cut in the middle"
	done
	# COLUMNS stands in for a terminal that cannot say its size, on a pipe too.
	run env COLUMNS=100 "$GPUSLATE_BIN" status
	assert_status 0
	n=$(longest /dev/stdin <<<"$output")
	[ "$n" -le 100 ] || { echo "COLUMNS=100, a line of $n: $output" >&2; false; }
	row=$(grep -E "^ +$p +root " <<<"$output")
	[ "${#row}" -ge 92 ] || { echo "status row of ${#row} columns with COLUMNS=100: $row" >&2; false; }
	assert_match "$row" "\.\.\..*remote-code " "status row, cut in the middle"
}

@test "daily: on a pipe, and with --wide, command lines are whole" {
	start_holder job --gpu 0 --mib 2048 "${LONG_ARGS[@]}"
	p=$(rpid job)
	full=$(tr '\0' ' ' <"/proc/$p/cmdline")
	full=${full% }
	full=${full#"$GS_HOLDER"}

	run --separate-stderr gs reclaim --dry-run
	assert_status 0
	assert_match "$output" "^ +$p +root +gs-holder.*$LONG_TAIL " "plan row on a pipe"
	assert_no_match "$output" "\.\.\." "an ellipsis on a pipe"
	assert_no_match "$output" "Command lines in full" "plan on a pipe"
	run --separate-stderr gs status
	assert_match "$output" "^ +$p +root +gs-holder.*$LONG_TAIL " "status row on a pipe"

	for cmd in "reclaim --dry-run -W" "status --wide"; do
		run term wide 80 "$GPUSLATE_BIN $cmd"
		assert_status 0
		grep -qF -- "gs-holder$full " "$BATS_TEST_TMPDIR/wide.tty" ||
			{ echo "$cmd: no whole command line:" >&2; cat "$BATS_TEST_TMPDIR/wide.tty" >&2; false; }
	done
}

@test "daily: the question never asks about a command line that is not shown in full" {
	start_holder job --gpu 0 --mib 2048 "${LONG_ARGS[@]}"
	p=$(rpid job)
	full=$(tr '\0' ' ' <"/proc/$p/cmdline")
	full=${full% }
	full=${full#"$GS_HOLDER"}

	pty_start ask "stty cols 100; $GPUSLATE_BIN reclaim"
	wait_for 20 pty_shows ask "Proceed?"
	tty=$(tr -d '\r' <"$BATS_TEST_TMPDIR/ask.tty")
	assert_match "$tty" "^ +$p +root +gs-holder.*\.\.\." "the row is cut"
	assert_match "$tty" "^Command lines in full:" "the full lines' heading"
	grep -qF -- "$p gs-holder$full" <<<"$tty" || { echo "no full line before the question: $tty" >&2; false; }
	pty_type ask n
	bg_wait ask 20
	alive "$p"
}

@test "daily: a long GPU name is whole where it fits, else cut with an ellipsis" {
	name="NVIDIA H100 80GB HBM3"
	bash "$GS_FAKES/mkhost.sh" "$BATS_TEST_TMPDIR/h100" 2 --name "$name"
	export FAKE_NVML_STATE=$BATS_TEST_TMPDIR/h100/nvml GPUSLATE_DEV_ROOT=$BATS_TEST_TMPDIR/h100/dev \
		GPUSLATE_NVIDIA_PROCFS=$BATS_TEST_TMPDIR/h100/driver

	run --separate-stderr gs status
	assert_status 0
	assert_match "$output" "^0 +$name +GPU-" "GPU 0 on a pipe"
	run term wide 160 "$GPUSLATE_BIN status"
	assert_match "$(cat "$BATS_TEST_TMPDIR/wide.tty")" "^0 +$name +GPU-" "GPU 0 on 160 columns"
	run term narrow 80 "$GPUSLATE_BIN status"
	assert_match "$(cat "$BATS_TEST_TMPDIR/narrow.tty")" "^0 +NVIDIA H100 [^ ]*\.\.\. +GPU-" "GPU 0 on 80 columns"
}

@test "daily: the report's words: ALLOWED, sentences in Stopped (tokens in JSON), wait's header" {
	start_holder h --gpu 0 --mib 2048
	p=$(rpid h)
	run --separate-stderr gs reclaim -y -g 0
	assert_status 0
	assert_match "$output" "^GPU +NAME +BEFORE +AFTER +ALLOWED +RESULT\$" "report header"
	assert_no_match "$output" "BASELINE" "the old header"
	assert_match "$output" "^ +$p +gs-holder +signals TERM\+CONT +exited after SIGTERM in [0-9.]+ s\$" "stopped line"
	assert_no_match "$output" "exited-after-term" "the JSON token in text"
	assert_dead "$p"

	start_holder h2 --gpu 1 --mib 1024
	p=$(rpid h2)
	run --separate-stderr gs reclaim -y -g 1 --json
	assert_eq "$(jqo ".processes[] | select(.pid == $p) | .outcome")" exited-after-term "JSON outcome"

	# wait's first line is reclaim's.
	run --separate-stderr gs reclaim --dry-run -g 0
	want=$(head -n 1 <<<"$output")
	assert_match "$want" "^Host [^ ]+, GPUs 0\$" "reclaim's header"
	run --separate-stderr gs wait -g 0
	assert_status 0
	assert_eq "$(head -n 1 <<<"$output")" "$want" "wait's header"
}

@test "daily: errors name what failed: the directory, the lock's holder, the valid fields" {
	run --separate-stderr gs --dev-root "$BATS_TEST_TMPDIR/nodev" status
	assert_status 2
	assert_one_error "$stderr" "cannot open the device directory '$BATS_TEST_TMPDIR/nodev' \(--dev-root or GPUSLATE_DEV_ROOT\): No such file or directory\$"
	run --separate-stderr gs --proc-root "$BATS_TEST_TMPDIR/noproc" reclaim --dry-run
	assert_status 2
	assert_one_error "$stderr" "cannot open the process directory '$BATS_TEST_TMPDIR/noproc' \(--proc-root\): No such file or directory\$"

	run --separate-stderr gs status --query-gpu=index,bogus --format=csv
	assert_status 2
	assert_one_error "$stderr" "Field \"bogus\" is not a valid field to query\. Valid fields: index, uuid, .*memory\.used, memory\.free\$"
	run --separate-stderr gs status --query-compute-apps=pid,bogus --format=csv
	assert_status 2
	assert_one_error "$stderr" "Valid fields: pid, process_name, .*used_gpu_memory\$"

	# The lock, held by another gpuslate: one waiting for its answer.
	start_holder h --gpu 0 --mib 1024
	pty_start first "$GPUSLATE_BIN reclaim"
	wait_for 20 pty_shows first "Proceed?"
	l=$(cat "$GPUSLATE_LOCK_FILE")
	run --separate-stderr gs reclaim -y --timeout 0
	assert_status 5
	assert_one_error "$stderr" "another gpuslate reclaim still holds the lock after 0 s: PID $l \($GPUSLATE_BIN reclaim\)\$"
	pty_type first n
	bg_wait first 20
	alive "$(rpid h)"
}

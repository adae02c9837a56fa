#!/usr/bin/env bats
# --json prints a document on every exit (issue 11 item 17): a usage error,
# the lock held by another reclaim, no NVML and no driver procfs, NVML hung
# or failing during discovery. Each document carries the schema version,
# the verdict, the exit status and the reason (docs/json.md, "Early
# failures"); the exit status and the one error line on stderr are what
# they were without --json. And a fleet shows a host's early failure with
# the reason from that host's document.

load helpers

SSH_STUB=$BATS_TEST_DIRNAME/../analysis/ssh-stub

# early_doc VERDICT STATUS REASON_REGEX: $output is one document of an
# early failure with these values, and nothing else is on stdout.
early_doc() {
	jq -e . <<<"$output" >/dev/null || { echo "stdout is not one JSON document: [$output]" >&2; return 1; }
	assert_eq "$(jq -s length <<<"$output")" 1 "documents on stdout"
	assert_eq "$(jqo '"\(.schema_version) \(.tool) \(.verdict) \(.exit_status)"')" "1 gpuslate $1 $2" \
		"schema, tool, verdict, exit status"
	assert_match "$(jqo .reason)" "$3" reason
	assert_match "$(jqo .error)" "$3" error
	assert_eq "$(jqo .summary)" "gpuslate: $(jqo .error)" summary
}

@test "early json: usage errors after --json print a usage-error document, exit 2, and the same one error line" {
	check() { # check ERROR_REGEX ARGS...
		local want=$1
		shift
		run --separate-stderr gs "$@" </dev/null
		assert_status 2 || { echo "for: gpuslate $*" >&2; return 1; }
		assert_one_error "$stderr" "$want" || { echo "for: gpuslate $*" >&2; return 1; }
		early_doc usage-error 2 "$want" || { echo "for: gpuslate $*" >&2; return 1; }
	}
	check "unknown option '--bogus'" reclaim --json --bogus
	# --json after the bad option counts too
	check "unknown option '--bogus'" reclaim --bogus --json
	check "invalid --grace 'abc'" --json reclaim -y --grace abc
	check "option --dry-run is not valid for 'wait'" wait --json --dry-run
	check "no GPU with index 7" status --json -g 7
	check "no GPU with index 9" reclaim -y --json -g 9
	check "unknown command 'frobnicate'" --json frobnicate
	check "no command given" --json
	check "invalid --match" reclaim -y --json --match '('
	# the command is named when it was understood, null when not
	run --separate-stderr gs reclaim --json --bogus
	assert_eq "$(jqo '"\(.command) \(.plan) \(.processes | length)"')" "reclaim null 0" "reclaim's lists"
	run --separate-stderr gs --json frobnicate
	assert_eq "$(jqo .command)" null "an unknown command"
}

@test "early json: without --json a usage error prints nothing on stdout" {
	run --separate-stderr gs reclaim --bogus
	assert_status 2
	assert_eq "$output" "" stdout
}

@test "early json: another reclaim holding the lock: refused document, exit 5, --reason leads, nothing stopped" {
	start_holder a --gpu 0 --mib 1024
	launch locker bash -c 'exec 9>>"$1"; flock -x 9; echo "pid=$$" >"$2"; exec sleep 600' \
		_ "$GPUSLATE_LOCK_FILE" "$BATS_TEST_TMPDIR/locker.ready"

	run --separate-stderr gs reclaim -y --json --timeout 0.2 --reason "slurm epilog job=42"
	assert_status 5
	assert_one_error "$stderr" "another gpuslate reclaim still holds the lock"
	early_doc refused 5 "another gpuslate reclaim still holds the lock"
	assert_eq "$(jqo .reason)" "slurm epilog job=42: gpuslate: $(jqo .error)" "reason after --reason"
	assert_eq "$(jqo '"\(.plan) \(.processes | length) \(.units | length) \(.gpus | length)"')" "null 0 0 0" \
		"nothing planned or stopped"
	assert_alive "$(rpid a)"
}

@test "early json: no NVML and no driver procfs: driver-failure document, exit 3, for reclaim, wait and status" {
	start_holder a --gpu 0 --mib 1024
	export GPUSLATE_NVML_LIB=/nonexistent/libnvidia-ml.so.1
	export GPUSLATE_NVIDIA_PROCFS=$BATS_TEST_TMPDIR/no-driver

	for cmd in "reclaim -y" wait; do
		# shellcheck disable=SC2086
		run --separate-stderr gs $cmd --json
		assert_status 3
		assert_one_error "$stderr" "no NVIDIA GPU driver"
		early_doc driver-failure 3 "no NVIDIA GPU driver: NVML unusable .*/nonexistent/libnvidia-ml.so.1"
	done
	# status has its own document (no GPUs, the warning), now with the
	# verdict, exit status and reason of the failure
	run --separate-stderr gs status --json
	assert_status 3
	assert_eq "$(jqo '"\(.verdict) \(.exit_status) \(.gpus | length)"')" "driver-failure 3 0" "status document"
	assert_match "$(jqo .reason)" "^gpuslate: no NVIDIA GPU driver" "status reason"
	assert_alive "$(rpid a)"
}

@test "early json: NVML hung or failing during discovery: driver-failure document naming the call, exit 3" {
	start_holder a --gpu 0 --mib 1024
	echo "hang nvmlInit_v2" >"$FAKE_NVML_STATE/inject"
	for cmd in "reclaim -y" wait status; do
		# shellcheck disable=SC2086
		run --separate-stderr gs $cmd --json --nvml-timeout 0.5
		assert_status 3
		assert_one_error "$stderr" "nvmlInit_v2 did not return within 0\.5 s"
		early_doc driver-failure 3 "nvmlInit_v2 did not return within 0\.5 s: the GPU driver is hung"
	done
	# A call that fails (an unknown error) while the GPUs are read
	echo "fail nvmlDeviceGetMemoryInfo_v2 999" >"$FAKE_NVML_STATE/inject"
	run --separate-stderr gs reclaim -y --json
	assert_status 3
	assert_one_error "$stderr" "cannot read GPU state"
	early_doc driver-failure 3 "cannot read GPU state"
	assert_alive "$(rpid a)"
}

@test "early json: a fleet whose host list is bad prints a fleet document, exit 2" {
	run --separate-stderr gs -w 'gpu01,bad!host' --json status
	assert_status 2
	assert_one_error "$stderr" "invalid character '!'"
	assert_eq "$(jqo '"\(.schema_version) \(.verdict) \(.exit_status) \(.hosts | length) \(.summary.hosts)"')" \
		"1 usage-error 2 0 0" "fleet document"
	assert_match "$(jqo .reason)" "invalid character '!' in 'bad!host'" reason
	# an unknown option with -w: the same fleet document
	run --separate-stderr gs -w gpu01 --json reclaim --bogus
	assert_status 2
	assert_eq "$(jqo '"\(.verdict) \(.hosts | length) \(.summary.failed)"')" "usage-error 0 0" "fleet document"
}

@test "early json: a fleet shows a host's early failure with the reason from its document, not 'gpuslate failed (exit N)'" {
	start_holder a --gpu 0 --mib 1024
	launch locker bash -c 'exec 9>>"$1"; flock -x 9; echo "pid=$$" >"$2"; exec sleep 600' \
		_ "$GPUSLATE_LOCK_FILE" "$BATS_TEST_TMPDIR/locker.ready"
	# Two "hosts" through an ssh stand-in that runs the remote command
	# here: both meet the lock this test holds.
	run --separate-stderr gs -w gpu01,gpu02 --ssh "$SSH_STUB" --remote-cmd "$GPUSLATE_BIN" reclaim -y --timeout 0.2
	assert_status 4
	assert_match "$output" "^gpu01: refused \(exit 5\): another gpuslate reclaim still holds the lock" "gpu01's line"
	assert_match "$output" "^gpu02: refused \(exit 5\): another gpuslate reclaim still holds the lock" "gpu02's line"
	assert_no_match "$output" "gpuslate failed" "the old wording"

	run --separate-stderr gs -w gpu01 --ssh "$SSH_STUB" --remote-cmd "$GPUSLATE_BIN" --json status -g 7
	assert_status 4
	assert_eq "$(jqo '.hosts[0] | "\(.ok) \(.verdict) \(.failure) \(.exit_status)"')" "false failed remote-error 2" \
		"the host"
	assert_eq "$(jqo '.hosts[0].error')" "usage error (exit 2): no GPU with index 7 (this host has 2 GPUs)" "its reason"
	assert_alive "$(rpid a)"
}

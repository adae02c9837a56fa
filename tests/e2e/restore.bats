#!/usr/bin/env bats
# gpuslate restore (issue 14, section 3) against a real systemd manager per
# test (tests/world): reclaim stops a unit through systemd and records it in
# the stopped-state file; restore starts it again. The file is beside the
# test's last-reclaim record (GPUSLATE_STATE_FILE + ".stopped", helpers.bash
# puts that in the test's directory), never in /run.

load helpers

stopped_file() { echo "$GPUSLATE_STATE_FILE.stopped"; }
stopped_json() { jq -r "$1" "$(stopped_file)"; }
active_state() { sd show -p ActiveState --value "$1"; }
unit_inactive() { [ "$(active_state "$1")" = inactive ]; }
main_pid() { sd show -p MainPID --value "$1"; }

# trainer.service (Restart=always) holding 4096 MiB of GPU 0, stopped by a
# reclaim: what restore has to undo.
reclaimed_trainer() {
	world_systemd_start
	world_unit --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096
	first=$UNIT_MAIN
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'
	run --separate-stderr gs reclaim -y --json --reason "autotune job 7"
	assert_status 0
	assert_eq "$(jqo .verdict)" clean "reclaim verdict"
	assert_dead "$first"
	unit_inactive trainer.service
}

# The unit runs again with a new main process, and that holds the GPU again.
trainer_back() {
	local m
	[ "$(active_state trainer.service)" = active ] || return 1
	m=$(main_pid trainer.service)
	[ -n "$m" ] && [ "$m" != 0 ] && [ "$m" != "$first" ] || return 1
	[ "$(gpu_used 0)" = 4096 ]
}

@test "reclaim records the unit it stopped; restore -y starts it again and forgets it" {
	reclaimed_trainer
	run stat -c '%a %U %F' "$(stopped_file)"
	assert_eq "$output" "600 root regular file" "the state file"
	assert_eq "$(stopped_json '.schema_version')" 1 "schema"
	assert_eq "$(stopped_json '.stopped | length')" 1 "records"
	assert_eq "$(stopped_json '.stopped[0] | "\(.kind) \(.runtime) \(.name) \(.container) \(.state_before)"')" \
		"unit systemd trainer.service null active" "the record"
	assert_eq "$(stopped_json '.stopped[0].reclaim.reason')" "autotune job 7" "the reclaim's reason"
	assert_match "$(stopped_json '.stopped[0].enabled_before')" '^[a-z-]+$' "UnitFileState before"

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" restored verdict
	assert_eq "$(jqo '.items[0] | "\(.outcome) \(.command) \(.exit_status)"')" \
		"started systemctl start -- trainer.service 0" "the start"
	wait_for 10 trainer_back
	track "$(main_pid trainer.service)"
	[ ! -e "$(stopped_file)" ] || { echo "the record was not consumed: $(cat "$(stopped_file)")" >&2; return 1; }

	# Restored means forgotten: a second restore has nothing to do.
	run --separate-stderr gs restore -y
	assert_status 0
	assert_match "$output" "^Nothing to restore" "second restore"
}

@test "restore with nothing recorded: 'nothing to restore', exit 0, text and JSON" {
	run --separate-stderr gs restore
	assert_status 0
	assert_match "$output" "^Nothing to restore: .*$(stopped_file)" "text"
	assert_eq "$stderr" "" "stderr"
	run --separate-stderr gs restore --json
	assert_status 0
	assert_eq "$(jqo '"\(.command) \(.verdict) \(.exit_status) \(.items | length)"')" "restore nothing-to-restore 0 0" "document"
	# A reclaim that stopped nothing through a manager leaves no file.
	start_holder plain --gpu 1 --mib 100
	run --separate-stderr gs reclaim -y
	assert_status 0
	[ ! -e "$(stopped_file)" ]
}

@test "restore without -y and without a terminal refuses (exit 5); nothing is started, the record is kept" {
	reclaimed_trainer
	run --separate-stderr gs restore </dev/null
	assert_status 5
	assert_one_error "$stderr" "refusing to start 1 unit or container without confirmation: no terminal \(use -y\)"
	assert_match "$output" "start +unit trainer.service, stopped .* \(autotune job 7\)" "what it would start"
	stays_for 1 unit_inactive trainer.service
	assert_eq "$(stopped_json '.stopped | length')" 1 "records kept"
}

@test "restore on a terminal asks; 'n' starts nothing" {
	reclaimed_trainer
	pty_start ask "$(printf '%q ' nsenter -t "$WORLD_SD_PID" -m -- "$GPUSLATE_BIN" restore)"
	wait_for 10 pty_shows ask "Start 1 again?"
	pty_type ask n
	bg_wait ask 20
	assert_eq "$BG_STATUS" 5 "exit status"
	pty_shows ask "not confirmed: nothing was started"
	unit_inactive trainer.service
	assert_eq "$(stopped_json '.stopped | length')" 1 "records kept"
}

@test "restore --dry-run shows what it would start and starts nothing" {
	reclaimed_trainer
	run --separate-stderr gs restore --dry-run
	assert_status 0
	assert_match "$output" "start +unit trainer.service" "plan"
	assert_match "$output" "Dry run: nothing was started" "dry run"
	run --separate-stderr gs restore -n --json
	assert_status 0
	assert_eq "$(jqo '"\(.verdict) \(.items[0].will_start) \(.items[0].outcome) \(.items[0].command)"')" "dry-run true pending null" "document"
	stays_for 1 unit_inactive trainer.service
	assert_eq "$(stopped_json '.stopped | length')" 1 "records kept"
}

@test "a unit already running again is reported, not started twice; the record is consumed" {
	reclaimed_trainer
	sd start trainer.service
	second=$(main_pid trainer.service)
	track "$second"
	since=$(sd show -p ExecMainStartTimestampMonotonic --value trainer.service)

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.outcome) \(.state_now) \(.will_start) \(.command)"')" "already-running active false null" "item"
	assert_eq "$(jqo .verdict)" restored verdict
	assert_eq "$(main_pid trainer.service)" "$second" "same main process"
	assert_eq "$(sd show -p ExecMainStartTimestampMonotonic --value trainer.service)" "$since" "not started again"
	[ ! -e "$(stopped_file)" ]
}

@test "a start that fails: exit 8, the error named, its record kept; the other unit is started" {
	reclaimed_trainer
	# A second record, of a unit whose start fails.
	printf '[Service]\nType=oneshot\nExecStart=/bin/false\n' >"$WORLD_SD_DIR/config/systemd/user/broken.service"
	sd daemon-reload
	jq '.stopped += [.stopped[0] | .name = "broken.service"]' "$(stopped_file)" >"$BATS_TEST_TMPDIR/s.json"
	install -m 0600 "$BATS_TEST_TMPDIR/s.json" "$(stopped_file)"

	run --separate-stderr gs restore -y --json
	assert_status 8
	assert_eq "$(jqo .verdict)" not-restored verdict
	assert_eq "$(jqo '[.items[] | "\(.name)=\(.outcome)"] | join(" ")')" "trainer.service=started broken.service=failed" "items"
	assert_one_error "$stderr" "cannot start unit broken.service: .*broken.service"
	wait_for 10 trainer_back
	track "$(main_pid trainer.service)"
	assert_eq "$(stopped_json '[.stopped[].name] | join(" ")')" broken.service "records kept"
}

@test "a record of a unit its manager no longer has is reported once as gone and dropped: exit 0, not 8 forever" {
	reclaimed_trainer
	jq '.stopped += [.stopped[0] | .name = "gone.service"]' "$(stopped_file)" >"$BATS_TEST_TMPDIR/s.json"
	install -m 0600 "$BATS_TEST_TMPDIR/s.json" "$(stopped_file)"

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" restored verdict
	assert_eq "$(jqo '[.items[] | "\(.name)=\(.outcome)"] | join(" ")')" "trainer.service=started gone.service=gone" "items"
	assert_match "$(jqo '.items[1].error')" "no such unit any more" "why"
	wait_for 10 trainer_back
	track "$(main_pid trainer.service)"
	[ ! -e "$(stopped_file)" ] || { echo "record kept: $(cat "$(stopped_file)")" >&2; return 1; }
}

@test "a transient unit (systemd-run) the reclaim stopped is not recorded; run --restore keeps COMMAND's 0" {
	world_systemd_start
	sd_exec systemd-run --quiet --unit=tjob -E "FAKE_NVML_STATE=$FAKE_NVML_STATE" -E "GPUSLATE_DEV_ROOT=$GPUSLATE_DEV_ROOT" \
		"$GS_HOLDER" --gpu 0 --mib 1024
	track "$(main_pid tjob.service)"
	wait_for 10 eval '[ "$(gpu_used 0)" = 1024 ]'
	assert_eq "$(sd show -p UnitFileState --value tjob.service)" transient "tjob.service"

	run --separate-stderr gs run -y --restore --json -- true
	assert_status 0
	assert_eq "$(jqo '.units[0] | "\(.unit) \(.exit_status)"')" "tjob.service 0" "stopped through systemd"
	assert_eq "$(jqo .run.exit_status)" 0 "COMMAND's status"
	assert_match "$stderr" "tjob.service is a transient unit" "note"
	[ ! -e "$(stopped_file)" ] || { echo "recorded: $(cat "$(stopped_file)")" >&2; return 1; }
}

@test "a state file others may write, a symbolic link, or one with a name no manager gives is refused; nothing is started" {
	reclaimed_trainer
	f=$(stopped_file)
	cp "$f" "$BATS_TEST_TMPDIR/good.json"

	chmod 0666 "$f"
	run --separate-stderr gs restore -y
	assert_status 5
	assert_one_error "$stderr" "refusing the stopped-state file '$f': others may write it"
	chmod 0600 "$f"

	mv "$f" "$BATS_TEST_TMPDIR/elsewhere.json"
	ln -s "$BATS_TEST_TMPDIR/elsewhere.json" "$f"
	run --separate-stderr gs restore -y
	assert_status 5
	assert_one_error "$stderr" "refusing the stopped-state file '$f': it is a symbolic link"
	rm "$f"

	jq '.stopped[0].name = "--now trainer.service"' "$BATS_TEST_TMPDIR/good.json" >"$BATS_TEST_TMPDIR/bad.json"
	install -m 0600 "$BATS_TEST_TMPDIR/bad.json" "$f"
	run --separate-stderr gs restore -y --json
	assert_status 5
	assert_one_error "$stderr" "refusing the stopped-state file '$f': record 1: not a systemd unit gpuslate could have stopped"
	assert_eq "$(jqo '"\(.verdict) \(.exit_status)"')" "refused 5" "the early document"

	printf 'not json' >"$f"
	run --separate-stderr gs restore -y
	assert_status 5
	assert_one_error "$stderr" "refusing the stopped-state file '$f': not a JSON object"
	stays_for 1 unit_inactive trainer.service
	# A reclaim does not merge into (or replace) a file it may not trust,
	# and says so; its verdict stays what the GPUs say.
	sd start trainer.service
	track "$(main_pid trainer.service)"
	run --separate-stderr gs reclaim -y
	assert_status 0
	assert_match "$stderr" "warning: not recorded for 'gpuslate restore': cannot use '$f': not a JSON object" "the note"
	assert_eq "$(cat "$f")" "not json" "left for someone to look at"
}

@test "GPUSLATE_STOPPED_FILE names the file; a second reclaim merges its records into it" {
	export GPUSLATE_STOPPED_FILE=$BATS_TEST_TMPDIR/elsewhere/stopped.json
	mkdir -p "$BATS_TEST_TMPDIR/elsewhere"
	world_systemd_start
	world_unit trainer -- "$GS_HOLDER" --gpu 0 --mib 100
	world_unit server -- "$GS_HOLDER" --gpu 1 --mib 200
	wait_for 10 eval '[ "$(gpu_used 1)" = 200 ]'
	run --separate-stderr gs reclaim -y -g 0
	assert_status 0
	run --separate-stderr gs reclaim -y -g 1
	assert_status 0
	assert_eq "$(jq -r '[.stopped[].name] | join(" ")' "$GPUSLATE_STOPPED_FILE")" "trainer.service server.service" "merged"
	[ ! -e "$(stopped_file)" ]

	run --separate-stderr gs restore -y
	assert_status 0
	assert_match "$output" "Restore: 2 started, 0 already running, 0 failed" "report"
	for u in trainer server; do
		assert_eq "$(active_state $u.service)" active "$u"
		track "$(main_pid $u.service)"
	done
	[ ! -e "$GPUSLATE_STOPPED_FILE" ]
}

@test "restore waits for a running reclaim's lock, and gives up after --timeout (exit 5); --dry-run needs no lock" {
	reclaimed_trainer
	# One process (tracked, ended by PID) holding the lock as a reclaim does.
	bg locker bash -c 'exec 9>"$1" && flock 9 && exec sleep 60' _ "$GPUSLATE_LOCK_FILE"
	wait_for 10 eval '! flock -n "$GPUSLATE_LOCK_FILE" true'
	run --separate-stderr gs restore -y --timeout 0.5
	assert_status 5
	assert_match "$stderr" "warning: another gpuslate reclaim is running on this host; waiting up to 0 s" "the note"
	assert_one_error "$stderr" "another gpuslate reclaim still holds the lock after 0 s"
	unit_inactive trainer.service
	run --separate-stderr gs restore --dry-run
	assert_status 0
	assert_match "$output" "start +unit trainer.service" "dry run under the lock"
	kill "$(cat "$BATS_TEST_TMPDIR/locker.pid")"
}

@test "run --restore: COMMAND runs on the freed GPU, then the unit this reclaim stopped runs again; an earlier reclaim's record is left for restore" {
	world_systemd_start
	world_unit --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096
	first=$UNIT_MAIN
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'
	# What an earlier reclaim left: a unit this manager does not know, so
	# a start of it would fail (exit 8) and show.
	jq -n '{schema_version: 1, stopped: [{kind: "unit", runtime: "systemd", name: "older.service", id: null,
		container: null, stopped_at: 1764810000, reclaim: {started_at: 1764809999, reason: null},
		state_before: "active", enabled_before: "enabled"}]}' >"$BATS_TEST_TMPDIR/s.json"
	install -m 0600 "$BATS_TEST_TMPDIR/s.json" "$(stopped_file)"

	run --separate-stderr gs run -y --restore --json -- \
		"$GPUSLATE_BIN" status --query-gpu=index,memory.used --format=csv,noheader,nounits
	assert_status 0
	assert_eq "$(head -n 1 <<<"$output")" "0, 0" "GPU 0 as COMMAND saw it"
	output=$(sed '/^[0-9], /d' <<<"$output")
	assert_eq "$(jqo .verdict)" clean "reclaim verdict"
	assert_eq "$(jqo .run.exit_status)" 0 "COMMAND's status"
	assert_eq "$(jqo .run.restore.verdict)" restored "restore verdict"
	assert_eq "$(jqo '[.run.restore.items[] | "\(.name)=\(.outcome)"] | join(" ")')" "trainer.service=started" \
		"only this reclaim's unit"
	assert_dead "$first"
	wait_for 10 trainer_back
	track "$(main_pid trainer.service)"
	assert_eq "$(stopped_json '[.stopped[].name] | join(" ")')" older.service "the earlier record, kept"

	# Text: the summary names what was started again.
	sd stop trainer.service
	run --separate-stderr gs run -y --restore -- true
	assert_status 0
	if grep -q 'trainer\.service' <<<"$stderr"; then
		echo "a unit that was not running was stopped or restored: $stderr" >&2
		return 1
	fi
	assert_match "$stderr" "^  restored +nothing$" "summary"
}

@test "a unit started and stopped again by someone else after the reclaim is theirs: not started, record dropped" {
	world_systemd_start
	world_unit --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096
	first=$UNIT_MAIN
	# Wanted by another unit, as an enabled service is by its target: a
	# stopped unit nothing refers to is unloaded, and forgets its times.
	world_unit --unit-set "Wants=trainer.service" keeper -- sleep 600
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'
	run --separate-stderr gs reclaim -y -g 0 --json
	assert_status 0
	assert_dead "$first"
	unit_inactive trainer.service
	stopped=$(stopped_json '.stopped[0].stopped_at')
	# The operator starts it, then stops it on purpose, later than the
	# reclaim's stop (the check allows 5 s for clocks).
	wait_for 15 eval '[ "$(date +%s)" -gt "$((stopped + 6))" ]'
	sd start trainer.service
	track "$(main_pid trainer.service)"
	sd stop trainer.service
	unit_inactive trainer.service

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.outcome) \(.will_start) \(.command)"')" "stopped-since false null" "item"
	assert_match "$(jqo '.items[0].error')" "started and stopped again since the reclaim" "why"
	unit_inactive trainer.service
	[ ! -e "$(stopped_file)" ] || { echo "record kept: $(cat "$(stopped_file)")" >&2; return 1; }
}

@test "run --restore when the reclaim is not clean: COMMAND does not run, and the unit it stopped runs again" {
	world_systemd_start
	world_unit --restart always trainer -- "$GS_HOLDER" --gpu 0 --mib 4096
	first=$UNIT_MAIN
	# A second holder whose memory the driver gives back only after 5 s:
	# the reclaim's --timeout 0.5 ends not clean.
	start_holder slow --gpu 1 --mib 1024 --release-ms 5000
	wait_for 10 eval '[ "$(gpu_used 0)" = 4096 ]'

	run --separate-stderr gs run -y --restore --json --timeout 0.5 -- touch "$BATS_TEST_TMPDIR/ran"
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean "reclaim verdict"
	assert_eq "$(jqo .run.started)" false "run.started"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ] || { echo "COMMAND ran" >&2; return 1; }
	assert_dead "$first"
	assert_eq "$(jqo '.run.restore.verdict')" restored "restore verdict"
	assert_eq "$(jqo '[.run.restore.items[] | "\(.name)=\(.outcome)"] | join(" ")')" "trainer.service=started" "restored"
	wait_for 10 trainer_back
	track "$(main_pid trainer.service)"
}

#!/usr/bin/env bats
# False "clean" verdicts found by an adversarial review (issue 11, items 5,
# 7 and 9): each test reproduces the situation with real processes on the
# simulated host and checks the verdict, the exit status and what stays.

load helpers

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }

@test "reclaim: a Restart=always unit whose stop is refused: its processes are signalled, the restart is caught (not clean)" {
	world_systemd_start
	# systemd refuses `systemctl stop` of this unit ("may be requested by
	# dependency only"), as polkit or a unit not loaded would.
	world_unit --restart always --unit-set RefuseManualStop=yes trainer -- "$GS_HOLDER" --gpu 0 --mib 4096
	first=$UNIT_MAIN
	wait_for 10 eval '[ -n "$(ls "$FAKE_NVML_STATE/ctx")" ]'

	run --separate-stderr gs reclaim -y --json --grace 1
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '.units[0] | "\(.unit) \(.stopped)"')" "trainer.service false" "unit stop"
	assert_match "$(jqo '.units[0].exit_status')" '^[1-9][0-9]*$' "systemctl's exit status"
	assert_match "$(jqo '.units[0].error')" "refused|dependency only" "unit stop error"
	assert_eq "$(proc_json "$first" .outcome)" exited-after-term "the first main process"
	wait_for 10 eval '[ "$(sd show -p NRestarts --value trainer.service)" -ge 1 ]'
	second=$(sd show -p MainPID --value trainer.service)
	assert_match "$second" '^[1-9][0-9]*$' "restarted main pid"
	[ "$second" != "$first" ]
	track "$second"
	assert_eq "$(jqo '[.respawns[] | "\(.pid) \(.by)"] | join(";")')" "$second unit trainer.service" respawns
	assert_match "$(jqo .summary)" "$second respawned by unit trainer.service" summary
}

@test "reclaim: a job left alone that ends during the wait does not hide the target's memory still being torn down" {
	# The target frees 4 GiB 2.5 s after it dies (pinned host memory); a
	# job the selection leaves alone ends while the target is in its grace
	# period and frees its 4 GiB at once. Against the plan-time baseline
	# (that job's 4 GiB) the GPU read "clean, released in 0.1 s" with the
	# target's 4 GiB still held.
	start_holder target --gpu 0 --mib 4096 --release-ms 2500 --ignore-term --note the-target
	start_holder bystander --gpu 0 --mib 4096 --note the-bystander
	target=$(rpid target) by=$(rpid bystander)
	# Stopped: its state shows when gpuslate's SIGCONT arrived (planned,
	# grace period begun).
	kill -STOP "$target"
	wait_for 5 eval '[ "$(proc_state "$target")" = T ]'

	bg rc "$GPUSLATE_BIN" reclaim -y --json --match the-target --grace 2 --timeout 30
	wait_for 20 eval '[ "$(proc_state "$target")" != T ]'
	kill -TERM "$by"
	wait_for 10 dead "$by"
	bg_wait rc 60
	output=$BG_OUT
	assert_eq "$BG_STATUS" 0 "exit status"
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$target" targets
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $by) | .reason")" "not selected" bystander
	assert_eq "$(jqo ".processes[] | select(.pid == $target) | .outcome")" killed "the target"
	# SIGKILL at 2 s, then 2.5 s of teardown.
	r=$(jqo '.gpus[] | select(.index == 0) | .released_after_s')
	awk -v r="$r" 'BEGIN { exit !(r >= 4.5) }' || { echo "released_after_s $r: before the target's memory was freed" >&2; false; }
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.memory_after_mib) \(.baseline_mib)"')" "0 16" "GPU 0 after"
	assert_dead "$target"
}

@test "reclaim: the selection is gone but a job it left alone holds the GPU: verdict selection-gone, exit 6, naming it" {
	start_holder mine --as train --gpu 0 --mib 2048
	start_holder theirs --as serve --gpu 0 --mib 8192
	mine=$(rpid mine) theirs=$(rpid theirs)

	run --separate-stderr gs reclaim -y --match train
	assert_status 6
	assert_match "$output" "^0 +NVIDIA H200 +10240 MiB +8192 MiB +8208 MiB +not free: 8192 MiB held by processes left alone: $theirs \(serve\)\$" "GPU 0 line"
	assert_match "$output" "^Verdict: selection-gone " verdict
	assert_match "$output" "^gpuslate: selection gone, but processes left alone hold memory: GPU 0 8192 MiB held by $theirs \(serve\)\$" summary
	assert_dead "$mine"
	assert_alive "$theirs"

	# With nothing left alone holding memory, the same selection is clean.
	kill -TERM "$theirs"
	wait_for 10 dead "$theirs"
	start_holder mine2 --as train --gpu 0 --mib 2048
	run --separate-stderr gs reclaim -y --json --match train
	assert_status 0
	assert_eq "$(jqo '"\(.verdict) \(.gpus[0].left_alone_holders | length)"')" "clean 0" verdict
}

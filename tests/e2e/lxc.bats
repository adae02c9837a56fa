#!/usr/bin/env bats
# gpuslate and a real LXC container in the Proxmox VE layout (issue 13): one
# privileged container for the file (tests/world/world.bash), cgroup
# lxc/<vmid>/ns, systemd as its init, the simulated GPU bind-mounted, units
# of its own systemd holding it. `pct exec` is tests/world/pct, which runs
# lxc-attach as Proxmox's pct does.

load helpers

setup_file() {
	export WORLD_SHARED=$BATS_FILE_TMPDIR/shared
	export GS_HOST_BASE=$WORLD_SHARED
	mkdir -p "$WORLD_SHARED"
	world_lxc_start "$BATS_FILE_TMPDIR/lxc" "$WORLD_SHARED"
	export WORLD_CT WORLD_LXC_PATH PCT_LXC_PATH=$WORLD_LXC_PATH
}

teardown_file() { world_teardown_file; }

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }
target_json() { jqo ".plan.targets[] | select(.pid == $1) | $2"; }

ct_state() { ct_exec systemctl show -p ActiveState --value "$1"; }
ct_unit_down() { [ "$(ct_state "$1")" = inactive ]; }

@test "the container: Proxmox cgroup layout, systemd as init, the simulated GPU inside" {
	run pct status "$WORLD_CT"
	assert_eq "$output" "status: running" "pct status"
	world_lxc_unit probe -- "$GS_HOLDER" --gpu 0 --mib 64 --ready-file "$GS_HOST/probe.ready"
	wait_for 10 test -f "$GS_HOST/probe.ready"
	assert_eq "$(sed -n 's/^0:://p' "/proc/$UNIT_MAIN/cgroup")" "/lxc/$WORLD_CT/ns/system.slice/probe.service" "host's view of the cgroup"
	assert_eq "$(ct_exec cat /proc/1/comm)" systemd "the container's init"
	# The holder inside opened the host's files: the same device identity.
	assert_eq "$(stat -L -c %d:%i "/proc/$UNIT_MAIN/fd/$(ls -l "/proc/$UNIT_MAIN/fd" | awk -v f="$GPUSLATE_DEV_ROOT/nvidia0" '$NF == f { print $9; exit }')")" \
		"$(stat -c %d:%i "$GPUSLATE_DEV_ROOT/nvidia0")" "device identity"
}

@test "status shows the owner of a unit inside the CT: lxc VMID and the unit" {
	world_lxc_unit infer -- "$GS_HOLDER" --gpu 1 --ready-file "$GS_HOST/infer.ready"
	wait_for 10 test -f "$GS_HOST/infer.ready"
	infer=$UNIT_MAIN

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo ".processes[] | select(.pid == $infer) | .owner | \"\(.kind) \(.name) \(.unit)\"")" \
		"lxc $WORLD_CT infer.service" "container owner"
	assert_eq "$(jqo ".processes[] | select(.pid == $infer) | .memory_mib")" 1024 "memory listed by NVML under the host PID"
	run --separate-stderr gs status
	assert_match "$output" "^ *$infer(\([0-9]+\))? .* compute +lxc $WORLD_CT: infer.service\$" "container row"
}

@test "reclaim: a Restart=always unit in the CT is stopped with pct exec VMID -- systemctl stop and stays stopped" {
	world_lxc_unit --restart always infer -- "$GS_HOLDER" --gpu 1 --mib 16384 --ready-file "$GS_HOST/i.ready"
	wait_for 10 test -f "$GS_HOST/i.ready"
	main=$UNIT_MAIN

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(target_json "$main" '"\(.action) \(.unit) \(.container)"')" "stop-unit infer.service $WORLD_CT" "plan"
	assert_eq "$(jqo '.units[0] | "\(.command) \(.exit_status)"')" "pct exec $WORLD_CT -- systemctl stop -- infer.service 0" "unit stop"
	assert_eq "$(proc_json "$main" '"\(.outcome) \(.signals | join(","))"')" "stopped-with-unit " "main process"
	assert_eq "$(jqo '.gpus[] | select(.index == 1) | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 16384 0" "GPU 1"
	assert_dead "$main"
	stays_for 1 ct_unit_down infer.service
	assert_eq "$(ct_exec systemctl show -p Result --value infer.service)" success "unit result"
}

@test "reclaim --container VMID stops the CT's unit and leaves the host's holder alone" {
	start_holder host --gpu 0 --mib 300
	host=$(rpid host)
	world_lxc_unit infer -- "$GS_HOLDER" --gpu 0 --mib 400 --ready-file "$GS_HOST/i.ready"
	wait_for 10 test -f "$GS_HOST/i.ready"
	infer=$UNIT_MAIN

	run --separate-stderr gs reclaim -y --json --container "$WORLD_CT"
	# What the selection left alone still holds the GPU: selection-gone (6).
	assert_status 6
	assert_eq "$(jqo .verdict)" selection-gone verdict
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$infer" "targets"
	assert_eq "$(jqo '[.units[].command] | join(";")')" "pct exec $WORLD_CT -- systemctl stop -- infer.service" "unit stops"
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $host) | .reason")" "not selected" "host holder"
	assert_dead "$infer"
	assert_alive "$host"
}

@test "reclaim --no-units: killing a Restart=always unit in the CT makes its systemd restart it: respawn, exit 1" {
	world_lxc_unit --restart always infer -- "$GS_HOLDER" --gpu 0 --mib 512
	first=$UNIT_MAIN
	wait_for 10 eval '[ -n "$(ls "$FAKE_NVML_STATE/ctx")" ]'

	run --separate-stderr gs reclaim -y --no-units --json
	wait_for 10 eval '[ "$(ct_exec systemctl show -p NRestarts --value infer.service)" = 1 ]'
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean verdict
	assert_eq "$(jqo '.units | length')" 0 "units stopped"
	assert_match "$(jqo '[.respawns[].by] | join(";")')" "infer.service" "respawned by"
	assert_dead "$first"
}

@test "gpuslate inside the CT (pct exec VMID -- gpuslate reclaim): the container's own systemctl stops the unit" {
	world_lxc_unit --restart always infer -- "$GS_HOLDER" --gpu 1 --mib 2048 --ready-file "$GS_HOST/i.ready"
	wait_for 10 test -f "$GS_HOST/i.ready"
	main=$UNIT_MAIN
	inner=$(ready_values "$GS_HOST/i.ready" pid)

	run --separate-stderr pct exec "$WORLD_CT" -- gpuslate reclaim -y --json
	assert_status 0
	assert_eq "$(jqo '[.plan.targets[] | "\(.pid) \(.action) \(.unit) \(.owner.kind)"] | join(";")')" \
		"$inner stop-unit infer.service unit" "plan inside (the container's PIDs and cgroups)"
	assert_eq "$(jqo '.units[0] | "\(.command) \(.exit_status)"')" "systemctl stop -- infer.service 0" "unit stop inside"
	assert_eq "$(jqo '.gpus[] | select(.index == 1) | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 2048 0" "GPU 1"
	assert_dead "$main"
	stays_for 1 ct_unit_down infer.service
}

@test "restore: a unit in the CT stopped by reclaim is started again with pct exec VMID -- systemctl start" {
	world_lxc_unit --restart always infer -- "$GS_HOLDER" --gpu 1 --mib 2048 --ready-file "$GS_HOST/i.ready"
	wait_for 10 test -f "$GS_HOST/i.ready"
	main=$UNIT_MAIN
	run --separate-stderr gs reclaim -y
	assert_status 0
	assert_dead "$main"
	assert_eq "$(jq -r '.stopped[0] | "\(.name) \(.container) \(.state_before)"' "$GPUSLATE_STATE_FILE.stopped")" \
		"infer.service $WORLD_CT active" "the record"

	run --separate-stderr gs restore -y --json
	assert_status 0
	assert_eq "$(jqo '.items[0] | "\(.outcome) \(.command)"')" \
		"started pct exec $WORLD_CT -- systemctl start -- infer.service" "the start"
	assert_eq "$(ct_state infer.service)" active "the CT's systemd"
	wait_for 10 eval '[ "$(gpu_used 1)" = 2048 ]'
	track "$(world_host_pid "$(world_cgroup2)/lxc/$WORLD_CT/ns/system.slice/infer.service" \
		"$(ct_exec systemctl show -p MainPID --value infer.service)")"
}

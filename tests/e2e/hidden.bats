#!/usr/bin/env bats
# Holders that /proc/PID/fd does not show (issue 11 item 12): a process that
# mapped /dev/nvidia<N> and then closed its fds (the mapping, its CUDA
# context, keeps the memory), and a thread that holds the device in an fd
# table of its own (unshare(CLONE_FILES)). NVML lists both; gpuslate must
# find them, call them compute and stop them, never "listed by NVML but holds
# no NVIDIA device: the PID was reused". A monitor with only an fd open stays
# a client.

load helpers

proc_json() { jqo ".processes[] | select(.pid == $1) | $2"; }
status_json() { jqo ".processes[] | select(.pid == $1) | $2"; }
left_reason() { jqo ".plan.left_alone[] | select(.pid == $1) | .reason"; }

# no_nvidia_fds PID: no fd of the process (any thread) names a node under
# the dev root, as the test set it up.
no_nvidia_fds() {
	! ls -l "/proc/$1/fd/" 2>/dev/null | grep -q -- "$GPUSLATE_DEV_ROOT/nvidia"
}

@test "hidden holder: mapped the GPU and closed its fds: found as compute, stopped, GPU clean" {
	start_holder closed --gpu 0 --mib 3072 --close-fds
	p=$(rpid closed)
	no_nvidia_fds "$p"
	grep -q -- "$GPUSLATE_DEV_ROOT/nvidia0" "/proc/$p/maps"

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(status_json "$p" '"\(.role) \(.gpus | map(tostring) | join(",")) \(.maps_gpu) \(.nvidia_fds) \(.memory_mib)"')" \
		"compute 0 true 0 3072" "role, GPUs, mapping, fds, memory in status"

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(proc_json "$p" .outcome)" exited-after-term outcome
	assert_eq "$(left_reason "$p")" "" "left alone"
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" \
		"true 3072 0" "GPU 0"
	assert_dead "$p"
}

@test "hidden holder: a thread with its own fd table holds the GPU: found as compute, stopped, GPU clean" {
	start_holder threaded --gpu 1 --mib 2048 --thread-fds
	p=$(rpid threaded)
	# The process's table (what /proc/PID/fd shows) has no device; one
	# of its threads' does.
	no_nvidia_fds "$p"
	ls -l /proc/"$p"/task/*/fd/ | grep -q -- "$GPUSLATE_DEV_ROOT/nvidia1"

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(status_json "$p" '"\(.role) \(.gpus | map(tostring) | join(",")) \(.nvidia_fds)"')" \
		"compute 1 3" "role, GPUs, NVIDIA fds (ctl, uvm, nvidia1) in status"

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(proc_json "$p" .outcome)" exited-after-term outcome
	assert_eq "$(jqo '.gpus[] | select(.index == 1) | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" \
		"true 2048 0" "GPU 1"
	assert_dead "$p"
}

@test "hidden holder: both kinds beside a monitor: both stopped, the monitor (fd only) stays a client, untouched" {
	start_holder closed --gpu 0 --mib 1024 --close-fds
	start_holder threaded --gpu 0 --mib 1024 --thread-fds
	start_holder monitor --gpu 0 --client
	c=$(rpid closed)
	t=$(rpid threaded)
	m=$(rpid monitor)

	run --separate-stderr gs reclaim -y --json -g 0
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(jqo '[.processes[].pid] | sort | map(tostring) | join(",")')" "$(printf '%s\n' "$c" "$t" | sort -n | paste -sd,)" \
		"stopped"
	assert_eq "$(jqo "[.plan.left_alone[] | select(.pid == $m) | .role, .reason] | join(\" / \")")" \
		"client / client holding no GPU memory (--include-clients to stop it)" "monitor left alone"
	assert_dead "$c" "$t"
	assert_alive "$m"
}

@test "hidden holder: the text report no longer blames PID reuse for a holder that closed its fds" {
	start_holder closed --gpu 0 --mib 1024 --close-fds
	p=$(rpid closed)

	run --separate-stderr gs reclaim -y
	assert_status 0
	assert_no_match "$output" "holds no NVIDIA device" "report"
	assert_match "$output" "^ *$p +gs-holder +signals TERM\+CONT +exited after SIGTERM" "process line"
	assert_dead "$p"
}

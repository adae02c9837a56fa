#!/usr/bin/env bats
# Drivers whose NVML differs from the current one's, on the simulated host:
# - v1 memory figures only (issue 11 item 10): libraries before R510 have no
#   nvmlDeviceGetMemoryInfo_v2 (the r470 build of the fake), and some GPUs
#   answer it NOT_SUPPORTED; v1's used includes the driver's reservation. An
#   idle GPU must read clean, memory that is not released must not, and the
#   report says how the baseline was obtained.
# - a GPU that NVML refuses (issue 11 item 14): count includes it, its handle
#   is NO_PERMISSION; the others keep NVML's own index and work.

load helpers

GS_NVML_R470=$GPUSLATE_BUILD/fakes/r470/libnvidia-ml.so.1

gpu_json() { jqo ".gpus[] | select(.index == $1) | $2"; }

@test "v1-only NVML (no v2 symbol): an idle GPU reads clean at once, and says how its baseline was obtained" {
	export GPUSLATE_NVML_LIB=$GS_NVML_R470
	run --separate-stderr gs wait --json --timeout 20
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	awk -v w="$(jqo .waited_s)" 'BEGIN { exit !(w < 10) }' || { echo "waited $(jqo .waited_s) s" >&2; false; }
	assert_eq "$(gpu_json 0 '"\(.memory_after_mib) \(.memory_basis) \(.memory_reserved_mib)"')" "0 v1-estimated 615" "GPU 0"

	run --separate-stderr gs status --json
	assert_eq "$(gpu_json 1 '"\(.memory_used_mib) \(.memory_basis) \(.memory_reserved_mib)"')" "0 v1-estimated 615" "status GPU 1"
	# The nvidia-smi compatible query shows what nvidia-smi would: v1's used.
	run gs status --query-gpu=index,memory.used --format=csv,noheader
	assert_eq "$output" $'0, 615 MiB\n1, 615 MiB' "query"
}

@test "v1-only NVML (v2 NOT_SUPPORTED): reclaim stops the holder, clean once its memory is back; the text says how" {
	echo "fail nvmlDeviceGetMemoryInfo_v2 3" >"$FAKE_NVML_STATE/inject"
	start_holder a --gpu 0 --mib 4096 --release-ms 300
	a=$(rpid a)
	run --separate-stderr gs reclaim -y --json --timeout 20
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(gpu_json 0 '"\(.memory_before_mib) \(.memory_after_mib) \(.memory_basis)"')" "4096 0 v1-estimated" "GPU 0"
	awk -v r="$(gpu_json 0 .released_after_s)" 'BEGIN { exit !(r >= 0.3) }' || { echo "released after $(gpu_json 0 .released_after_s) s, before its 0.3 s teardown" >&2; false; }
	assert_dead "$a"

	start_holder b --gpu 1 --mib 1024
	run gs reclaim -y
	assert_status 0
	assert_match "$output" "^GPU 1: NVML has v1 memory figures only: used is v1's less the driver's reservation, estimated at 615 MiB" "note"
}

@test "v1-only NVML: memory its holder leaves behind is not clean (the estimate never takes it for the reservation)" {
	export GPUSLATE_NVML_LIB=$GS_NVML_R470
	start_holder a --gpu 0 --mib 4096 --release-ms 60000
	run --separate-stderr gs reclaim -y --json --timeout 1
	assert_status 1
	assert_eq "$(jqo '"\(.verdict) \(.timed_out)"')" "not-clean true" verdict
	assert_eq "$(gpu_json 0 '"\(.clean) \(.memory_after_mib) \(.unattributed)"')" "false 4096 true" "GPU 0"
	assert_eq "$(gpu_json 1 .clean)" true "GPU 1"

	# And a later command, started while that memory is still held, does
	# not call it reserved either: the driver (here the fake) still lists
	# the dead holder with its memory, so the estimate stays 615 MiB. (A
	# driver that stopped listing it would have it estimated as reserved:
	# the limit docs/json.md states for v1-estimated figures.)
	run --separate-stderr gs wait --json --timeout 0.5
	assert_status 1
	assert_eq "$(gpu_json 0 '"\(.clean) \(.memory_after_mib)"')" "false 4096" "wait: GPU 0"
}

@test "v1-only NVML with a process whose memory the driver does not report: unverified (exit 3), never clean" {
	export GPUSLATE_NVML_LIB=$GS_NVML_R470
	start_holder a --gpu 1 --mib 2048 --mem-unknown
	a=$(rpid a)
	run --separate-stderr gs reclaim -y --json
	assert_status 3
	assert_eq "$(jqo '"\(.verdict) \(.memory_verified)"')" "unverified false" verdict
	assert_match "$(jqo .summary)" "driver's reservation could not be estimated" summary
	assert_eq "$(gpu_json 1 '"\(.memory_basis) \(.memory_after_mib)"')" "v1 null" "GPU 1"
	assert_dead "$a"
}

@test "a GPU NVML refuses (NO_PERMISSION) is named; the others keep NVML's index and work, its holders are left alone" {
	echo "fail nvmlDeviceGetHandleByIndex_v2 4 gpu=0" >"$FAKE_NVML_STATE/inject"
	start_holder on0 --gpu 0 --mib 1000
	start_holder on1 --gpu 1 --mib 2000
	on0=$(rpid on0)
	on1=$(rpid on1)

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo '[.gpus[].index] | map(tostring) | join(",")')" 1 "GPUs listed"
	assert_eq "$(gpu_json 1 .memory_used_mib)" 2000 "GPU 1 memory"
	assert_eq "$(jqo ".processes[] | select(.pid == $on1) | .gpus | map(tostring) | join(\",\")")" 1 "GPU 1's holder"
	assert_match "$(jqo '.warnings | join(" ")')" "GPU 0: the driver refuses access \(NVML: no permission\); left out" warnings
	assert_match "$stderr" "warning: GPU 0: the driver refuses access" "stderr"

	run --separate-stderr gs reclaim -y -g 1 --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean verdict
	assert_eq "$(gpu_json 1 '"\(.memory_before_mib) \(.memory_after_mib)"')" "2000 0" "GPU 1"
	assert_dead "$on1"

	# Everything this gpuslate may see: GPU 0 is not among it, nor its holder.
	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo '[.gpus[].index] | map(tostring) | join(",")')" 1 "reclaim's GPUs"
	assert_alive "$on0"
}

#!/usr/bin/env bats
# gpuslate status on a simulated GPU host: GPUs, holders, roles, owners, the
# fork case, JSON, nvidia-smi compatible CSV, GPU selection, and the paths
# without NVML. Nothing here stops anything: every holder must survive.

load helpers

UUID0=GPU-a2983c1e-0000-4000-8000-000000000000
UUID1=GPU-a2983c1e-0000-4000-8000-000000000001

@test "status: table shows each GPU's memory and every holder with its role" {
	start_holder train --gpu 0 --mib 2048
	start_holder mon --as nvidia-smi --client --gpu 0
	start_holder pd --as nvidia-persistenced --client --gpu 0 --gpu 1
	train=$(rpid train) mon=$(rpid mon) pd=$(rpid pd)

	run --separate-stderr gs status
	assert_status 0
	# GPU rows: index, name, UUID, used, reserved, total, holder count.
	assert_match "$output" "^0 +NVIDIA H200 +$UUID0 +2048 MiB +615 MiB +143771 MiB +3\$" "GPU 0 row"
	assert_match "$output" "^1 +NVIDIA H200 +$UUID1 +0 MiB +615 MiB +143771 MiB +1\$" "GPU 1 row"
	# Holder rows: PID, user, command, GPUs, memory, role.
	assert_match "$output" "^ *$train +root +.*gs-holder.* +0 +2048 MiB +compute " "compute holder row"
	assert_match "$output" "^ *$mon +root +.*nvidia-smi.* +0 +- +client " "client row"
	assert_match "$output" "^ *$pd +root +.*nvidia-persiste.* +0,1 +- +protected " "protected row"
	assert_eq "$(grep -c 'gs-holder\|nvidia-' <<<"$output")" 3 "holder rows"
	assert_alive "$train" "$mon" "$pd"
}

@test "status: the fork case shows the dead creator NVML lists and the child that holds its memory" {
	start_holder fork --gpu 1 --mib 4096 --exit-after-fork
	creator=$(rpid fork) child=$(rpid fork child)
	assert_dead "$creator"

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo ".processes[] | select(.pid == $creator) | .alive")" false "creator alive"
	assert_eq "$(jqo ".processes[] | select(.pid == $creator) | .held_by | join(\",\")")" "$child" "creator held_by"
	assert_eq "$(jqo ".processes[] | select(.pid == $creator) | .memory_mib")" 4096 "creator memory"
	assert_eq "$(jqo ".processes[] | select(.pid == $child) | [.alive, .role, (.gpus | join(\",\"))] | join(\" \")")" \
		"true compute 1" "child"
	assert_eq "$(jqo '.gpus[] | select(.index == 1) | .memory_used_mib')" 4096 "GPU 1 used"

	run --separate-stderr gs status
	assert_status 0
	assert_match "$output" "^ *$creator +- +\(gone\) +1 +4096 MiB +compute +memory held by $child\$" \
		"creator row"
	assert_eq "$(awk 'length > 100' <<<"$output")" "" "lines over 100 columns"
	assert_match "$output" "^ *$child +root " "child row"

	# The dead creator reads "(gone)" in every text view.
	run --separate-stderr gs status --csv
	assert_match "$output" "^$creator,false,,\(gone\),1,4096,compute," "CSV row"
	run --separate-stderr gs reclaim --dry-run -g 1
	assert_match "$output" "^ +$creator +- +\(gone\) +1 +4096 MiB " "plan row"
	assert_alive "$child"
}

@test "status --json: the documented keys and their values" {
	start_holder a --gpu 0 --mib 2048
	start_holder b --gpu 1 --mib 1024
	a=$(rpid a) b=$(rpid b)

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo '.schema_version')" 1 schema_version
	assert_eq "$(jqo '.host')" "$(uname -n)" host
	assert_eq "$(jqo '.gpus | length')" 2 "number of GPUs"
	assert_eq "$(jqo '.gpus[0] | [.index, .uuid, .name, .memory_used_mib, .memory_total_mib] | map(tostring) | join("|")')" \
		"0|$UUID0|NVIDIA H200|2048|143771" "GPU 0"
	assert_eq "$(jqo '.gpus[1] | [.index, .uuid, .name, .memory_used_mib, .memory_total_mib] | map(tostring) | join("|")')" \
		"1|$UUID1|NVIDIA H200|1024|143771" "GPU 1"
	for p in "$a:0" "$b:1"; do
		pid=${p%:*} gpu=${p#*:}
		# The owner depends on where the suite runs (a login session, a
		# CI service, no cgroup at all): its kind is a string, always.
		assert_eq "$(jqo ".processes[] | select(.pid == $pid) | [.alive, .comm, .user, (.gpus | map(tostring) | join(\",\")), .role, (.owner.kind | type), (.owner | has(\"name\"))] | map(tostring) | join(\"|\")")" \
			"true|gs-holder|$(id -un)|$gpu|compute|string|true" "process $pid"
	done
	assert_eq "$(jqo '.processes | length')" 2 "number of processes"
}

@test "status --query-gpu: nvidia-smi's CSV, exactly" {
	start_holder a --gpu 0 --mib 2048

	run --separate-stderr gs status --query-gpu=index,memory.used --format=csv,noheader
	assert_status 0
	assert_eq "$output" $'0, 2048 MiB\n1, 0 MiB' "csv,noheader"

	run --separate-stderr gs status --query-gpu=index,memory.used --format=csv,noheader,nounits
	assert_status 0
	assert_eq "$output" $'0, 2048\n1, 0' "csv,noheader,nounits"

	# nvidia-smi keeps the unit in the header with nounits (H200, docs/gpu-h200.md).
	run --separate-stderr gs status --query-gpu=index,memory.used,memory.free --format=csv,nounits
	assert_status 0
	assert_eq "$output" $'index, memory.used [MiB], memory.free [MiB]\n0, 2048, 141108\n1, 0, 143156' "csv,nounits"

	run --separate-stderr gs status --query-gpu=index,uuid,name,memory.total,memory.reserved,memory.used --format=csv
	assert_status 0
	assert_eq "$output" "index, uuid, name, memory.total [MiB], memory.reserved [MiB], memory.used [MiB]
0, $UUID0, NVIDIA H200, 143771 MiB, 615 MiB, 2048 MiB
1, $UUID1, NVIDIA H200, 143771 MiB, 615 MiB, 0 MiB" "csv with header"

	run --separate-stderr gs status --query-gpu=index,bogus --format=csv
	assert_status 2
	assert_one_error "$stderr" 'bogus'
}

@test "status -g: selection by index, range and UUID" {
	new_host 4
	for g in 0 1 2 3; do start_holder "h$g" --gpu "$g" --mib $((1000 + g)); done

	run --separate-stderr gs status --json -g 1
	assert_status 0
	assert_eq "$(jqo '[.gpus[].index] | map(tostring) | join(",")')" 1 "-g 1 GPUs"
	assert_eq "$(jqo '[.processes[].pid] | map(tostring) | join(",")')" "$(rpid h1)" "-g 1 processes"

	run --separate-stderr gs status --json -g 0,2-3
	assert_status 0
	assert_eq "$(jqo '[.gpus[].index] | map(tostring) | join(",")')" 0,2,3 "-g 0,2-3 GPUs"
	assert_eq "$(jqo '[.processes[].memory_mib] | sort | map(tostring) | join(",")')" 1000,1002,1003 "-g 0,2-3 processes"

	run --separate-stderr gs status --json -g GPU-a2983c1e-0000-4000-8000-000000000002
	assert_status 0
	assert_eq "$(jqo '[.gpus[].index] | map(tostring) | join(",")')" 2 "-g UUID GPUs"
	assert_eq "$(jqo '[.processes[].pid] | map(tostring) | join(",")')" "$(rpid h2)" "-g UUID processes"

	# A prefix must name one GPU; hex digits in either case.
	run --separate-stderr gs status --json -g GPU-a2983c1e-0000-4000-8000-00000000000
	assert_status 2
	assert_one_error "$stderr" "GPU-a2983c1e-0000-4000-8000-00000000000.*matches 4 GPUs"
	# --json: the usage error's document, nothing else
	assert_eq "$(jqo '"\(.verdict) \(.exit_status) \(.processes | length)"')" "usage-error 2 0" "document"
	run --separate-stderr gs status --query-gpu=index --format=csv,noheader -g GPU-A2983C1E-0000-4000-8000-000000000003
	assert_status 0
	assert_eq "$output" 3 "-g upper-case UUID"
}

@test "status -g: a bad selection is a usage error naming the input" {
	start_holder a --gpu 0
	for sel in foo 7 3-1 0,,1 GPU-zz; do
		run --separate-stderr gs status -g "$sel"
		assert_status 2
		assert_one_error "$stderr" "'?$sel'?"
		assert_eq "$output" "" "stdout for -g $sel"
	done
	assert_alive "$(rpid a)"
}

@test "status without NVML: GPUs from /proc/driver/nvidia, holders from the fd scan, a warning, exit 0" {
	start_holder a --gpu 1 --mib 2048
	export GPUSLATE_NVML_LIB=/nonexistent/libnvidia-ml.so.1

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo '.gpu_source')" procfs gpu_source
	assert_eq "$(jqo '[.gpus[] | "\(.index)=\(.uuid)=\(.memory_used_mib)"] | join(" ")')" \
		"0=$UUID0=null 1=$UUID1=null" "GPUs from procfs"
	assert_eq "$(jqo ".processes[] | select(.pid == $(rpid a)) | [.role, (.gpus | map(tostring) | join(\",\"))] | join(\" \")")" \
		"compute 1" "holder from the fd scan"
	assert_eq "$(grep -c '^gpuslate: warning: NVML unusable' <<<"$stderr")" 1 "NVML warning"
	assert_match "$stderr" "/nonexistent/libnvidia-ml.so.1" "warning names the library"
	assert_eq "$(error_lines "$stderr")" "" "errors"
}

@test "status on a host without a driver: one error line, no table, exit 3" {
	start_holder a --gpu 0
	export GPUSLATE_NVML_LIB=/nonexistent/libnvidia-ml.so.1
	export GPUSLATE_NVIDIA_PROCFS=$BATS_TEST_TMPDIR/no-driver

	run --separate-stderr gs status
	assert_status 3
	assert_eq "$output" "" "stdout"
	# One line in all (no warning repeating the same dlopen error), naming
	# the library that failed and the procfs directory that was looked at.
	assert_eq "$(grep -c . <<<"$stderr")" 1 "stderr lines in [$stderr]"
	assert_match "$stderr" "^gpuslate: no NVIDIA GPU driver: .*/nonexistent/libnvidia-ml.so.1.*no GPU under $BATS_TEST_TMPDIR/no-driver\$"

	run --separate-stderr gs reclaim -y
	assert_status 3
	assert_eq "$(grep -c . <<<"$stderr")" 1 "reclaim: stderr lines in [$stderr]"
	assert_match "$stderr" "^gpuslate: no NVIDIA GPU driver: "

	run --separate-stderr gs status --json
	assert_status 3
	assert_eq "$(jqo '.gpus | length')" 0 "GPUs in JSON"
	assert_alive "$(rpid a)"
}

@test "status when nvmlInit fails (driver/library mismatch): procfs fallback, the reason in the warning" {
	start_holder a --gpu 0 --mib 2048
	echo "fail nvmlInit_v2 18" >"$FAKE_NVML_STATE/inject"

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo '.gpu_source')" procfs gpu_source
	assert_eq "$(jqo '.gpus | length')" 2 "GPUs"
	assert_match "$(jqo '.warnings[0]')" "[Mm]ismatch" "JSON warning"
	assert_match "$stderr" "^gpuslate: warning: NVML unusable \(nvmlInit_v2: .*[Mm]ismatch" "stderr warning"
	assert_eq "$(jqo ".processes[] | select(.pid == $(rpid a)) | .role")" compute "holder"
}

@test "status with the early-R535 library (32-byte process entries): the right pids and memory" {
	start_holder a --gpu 0 --mib 1024
	start_holder b --gpu 0 --mib 3072
	start_holder c --gpu 1 --mib 512
	export GPUSLATE_NVML_LIB=$GS_NVML_R535

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo '[.processes[] | "\(.pid):\(.memory_mib):\(.nvml_listed)"] | sort | join(" ")')" \
		"$(printf '%s\n' "$(rpid a):1024:true" "$(rpid b):3072:true" "$(rpid c):512:true" | sort | tr '\n' ' ' | sed 's/ $//')" \
		"processes (pid:MiB:listed)"
	assert_eq "$(jqo '[.gpus[].memory_used_mib] | map(tostring) | join(",")')" 4096,512 "GPU memory"
}

@test "status never shows hostile NVML process entries (pid 0, pid 0xFFFFFFFF, more memory than the GPU)" {
	start_holder a --gpu 0 --mib 1024
	echo garbage_processes >"$FAKE_NVML_STATE/inject"

	run --separate-stderr gs status --json
	# Refusing the list (driver failure) or filtering it are both honest;
	# showing a bogus entry is not.
	if [ "$status" -eq 3 ]; then
		assert_one_error "$stderr" "."
	else
		assert_status 0
		assert_eq "$(jqo '[.processes[].pid] | map(tostring) | join(",")')" "$(rpid a)" "process pids"
		assert_eq "$(jqo '[.processes[] | select(.memory_mib != null and .memory_mib > 143771)] | length')" 0 \
			"processes with more memory than the GPU"
	fi
}


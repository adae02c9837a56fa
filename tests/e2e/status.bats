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

	# As wide as a terminal of 100 columns (on a pipe lines are whole).
	COLUMNS=100 run --separate-stderr gs status
	assert_status 0
	assert_match "$output" "^ *$creator +- +\(gone\) +1 +4096 MiB +compute +memory held by $child\$" \
		"creator row"
	assert_eq "$(awk 'length > 100' <<<"$output")" "" "lines over 100 columns"
	assert_match "$output" "^ *$child +root " "child row"

	# The dead creator reads "(gone)" in every text view.
	run --separate-stderr gs status --csv=processes
	assert_match "$output" "^$creator,false,,\(gone\),\(gone\),,1,4096,compute," "CSV row"
	run --separate-stderr gs reclaim --dry-run -g 1
	assert_match "$output" "^ +$creator +- +\(gone\) +1 +4096 MiB " "plan row"
	assert_alive "$child"
}

@test "status --csv: one table per invocation, the GPUs or the processes, read by python3's csv module" {
	start_holder a --as vllm-serve-qwen2-72b-instruct --gpu 0 --mib 2048
	start_holder b --gpu 1 --mib 1024 --workers 2
	a=$(rpid a) b=$(rpid b)
	run --separate-stderr gs status --csv
	assert_status 0
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/gpus.csv"
	run --separate-stderr gs status --csv=gpus
	assert_eq "$output" "$(cat "$BATS_TEST_TMPDIR/gpus.csv")" "--csv=gpus is --csv"
	run --separate-stderr gs status --csv=processes
	assert_status 0
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/procs.csv"
	python3 - "$BATS_TEST_TMPDIR/gpus.csv" "$BATS_TEST_TMPDIR/procs.csv" "$a" "$b" <<-'PY'
		import csv, sys
		def table(path):
		    with open(path, newline="") as f:
		        rows = list(csv.reader(f))
		    # One table: one header, every row as wide, no blank row.
		    assert rows and all(len(r) == len(rows[0]) for r in rows), rows
		    return [dict(zip(rows[0], r)) for r in rows[1:]]
		gpus = table(sys.argv[1])
		assert [g["gpu_index"] for g in gpus] == ["0", "1"], gpus
		assert gpus[0]["memory_used_mib"] == "2048" and gpus[1]["memory_used_mib"] == "1024", gpus
		procs = {p["pid"]: p for p in table(sys.argv[2])}
		a, b = procs[sys.argv[3]], procs[sys.argv[4]]
		# The whole name, where comm is cut at 15 bytes.
		assert a["name"] == "vllm-serve-qwen2-72b-instruct", a
		assert a["comm"] == "vllm-serve-qwen", a
		assert a["command"].startswith("/") and "--mib 2048" in a["command"], a
		assert a["gpus"] == "0" and a["memory_mib"] == "2048" and a["role"] == "compute", a
		assert b["gpus"] == "1" and b["name"] == "gs-holder", b
	PY
	run -2 --separate-stderr gs status --csv=bogus
	assert_one_error "$stderr" "invalid --csv 'bogus': use --csv \(the GPUs\), --csv=gpus or --csv=processes"
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
	assert_one_error "$stderr" "GPU-a2983c1e-0000-4000-8000-00000000000.*matches 4 GPUs: 0 \(GPU-a2983c1e-0000-4000-8000-000000000000\), 1 \(.*\), 2 \(.*\), 3 \(GPU-a2983c1e-0000-4000-8000-000000000003\)\$"
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


# ---- issue 15: memory no process holds; unreadable processes; exit rule ----

@test "status: memory no process holds is named per GPU (text and unowned_mib), exit 0; gone after a GPU reset" {
	require_pidns
	printf 'gpu=0\nmib=4096\nno_process=1\n' >"$FAKE_NVML_STATE/ctx/leak0"
	in_pidns '
		d=$1
		"$GS_HOLDER" --gpu 1 --mib 1024 --ready-file "$d/a.ready" </dev/null >/dev/null 2>&1 &
		for i in $(seq 1000); do [ -f "$d/a.ready" ] && break; sleep 0.01; done
		"$GPUSLATE_BIN" status >"$d/text" 2>"$d/text.err"; echo $? >"$d/text.rc"
		"$GPUSLATE_BIN" status --json >"$d/json" 2>/dev/null
		rm "$FAKE_NVML_STATE/ctx/leak0" # the "GPU reset"
		"$GPUSLATE_BIN" status >"$d/after" 2>/dev/null
		"$GPUSLATE_BIN" status --json >"$d/after.json" 2>/dev/null'
	d=$BATS_TEST_TMPDIR
	assert_eq "$(cat "$d/text.rc")" 0 "exit status"
	# Nothing here is unreadable: the plain wording, for GPU 0 only.
	assert_eq "$(grep '^GPU [0-9]: ' "$d/text")" \
		"GPU 0: 4096 MiB held with no process (driver-held; a GPU reset or a reboot frees it)" "text"
	assert_eq "$(cat "$d/text.err")" "" "stderr"
	output=$(cat "$d/json")
	assert_eq "$(jqo '[.gpus[] | "\(.index):\(.memory_used_mib):\(.unowned_mib)"] | join(" ")')" \
		"0:4096:4096 1:1024:0" "GPUs: index, used, unowned"
	assert_eq "$(jqo '.visibility | "\(.processes_denied) \(.denied_matter)"')" "0 false" "visibility"
	assert_eq "$(grep -c 'held with no' "$d/after")" 0 "text after the reset"
	output=$(cat "$d/after.json")
	assert_eq "$(jqo '[.gpus[].unowned_mib] | map(tostring) | join(" ")')" "0 0" "unowned after the reset"
}

@test "status: a process it cannot inspect is no warning while every GPU's memory is accounted for; -v notes it; JSON always" {
	require_pidns
	command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
	# gpuslate and the holder without CAP_SYS_PTRACE: a process with more
	# capabilities (this script, PID 1 here, and a sleep) is unreadable to
	# gpuslate, as PID 1 is in many containers and sandboxes.
	in_pidns '
		d=$1
		lo() { setpriv --bounding-set -sys_ptrace "$@"; }
		sleep 600 </dev/null >/dev/null 2>&1 &
		echo $! >"$d/sleep"
		# (a simple command: no subshell of this script in between)
		setpriv --bounding-set -sys_ptrace "$GS_HOLDER" --gpu 0 --mib 2048 --ready-file "$d/a.ready" \
			</dev/null >/dev/null 2>&1 &
		for i in $(seq 1000); do [ -f "$d/a.ready" ] && break; sleep 0.01; done
		lo "$GPUSLATE_BIN" status >/dev/null 2>"$d/plain.err"; echo $? >"$d/plain.rc"
		lo "$GPUSLATE_BIN" status -v >/dev/null 2>"$d/v.err"
		lo "$GPUSLATE_BIN" status --json >"$d/json" 2>"$d/json.err"
		lo "$GPUSLATE_BIN" reclaim -y --json >"$d/reclaim.json" 2>"$d/reclaim.err"; echo $? >"$d/reclaim.rc"
		# Now memory that no visible process accounts for: it matters.
		printf "gpu=1\nmib=4096\nno_process=1\n" >"$FAKE_NVML_STATE/ctx/leak1"
		lo "$GPUSLATE_BIN" status >"$d/leak" 2>"$d/leak.err"; echo $? >"$d/leak.rc"
		lo "$GPUSLATE_BIN" status --json >"$d/leak.json" 2>/dev/null
		rm "$FAKE_NVML_STATE/ctx/leak1"
		kill "$(cat "$d/sleep")"'
	d=$BATS_TEST_TMPDIR
	s=$(cat "$d/sleep")
	assert_eq "$(cat "$d/plain.rc")" 0 "exit status"
	assert_eq "$(cat "$d/plain.err")" "" "plain stderr"
	assert_eq "$(grep -c . "$d/v.err")" 1 "-v: lines on stderr"
	assert_match "$(cat "$d/v.err")" "^gpuslate: note: could not inspect 2 of [0-9]+ processes \(permission denied\): PID 1, $s; every GPU's memory is accounted for by processes gpuslate sees\$" "-v"
	assert_eq "$(cat "$d/json.err")" "" "--json stderr"
	output=$(cat "$d/json")
	assert_eq "$(jqo '.visibility | "\(.processes_denied) \(.denied_pids | map(tostring) | join(",")) \(.denied_matter)"')" \
		"2 1,$s false" "visibility"
	assert_eq "$(cat "$d/reclaim.rc")" 0 "reclaim exit status"
	assert_eq "$(cat "$d/reclaim.err")" "" "reclaim stderr"
	output=$(cat "$d/reclaim.json")
	assert_eq "$(jqo '"\(.verdict) \(.visibility.processes_denied) \(.visibility.denied_matter)"')" "clean 2 false" \
		"reclaim verdict, visibility"

	assert_eq "$(cat "$d/leak.rc")" 0 "exit status with unaccounted memory"
	assert_eq "$(grep -c . "$d/leak.err")" 1 "lines on stderr with unaccounted memory"
	assert_match "$(cat "$d/leak.err")" "^gpuslate: warning: could not inspect 2 of [0-9]+ processes \(permission denied\): PID 1, $s; they may hold GPU memory that no visible process accounts for\$" "warning"
	assert_eq "$(grep '^GPU 1: ' "$d/leak")" "GPU 1: 4096 MiB held with no visible process: driver-held (a GPU reset or a reboot frees it), or held by one of the 2 processes gpuslate could not inspect (PID 1, $s)" "text"
	output=$(cat "$d/leak.json")
	assert_eq "$(jqo '"\(.visibility.denied_matter) \(.gpus[1].unowned_mib)"')" "true 4096" "JSON"
}

@test "status exits 0 whatever holds the GPUs; wait --timeout 0 is the check whether they are free" {
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	run --separate-stderr gs status
	assert_status 0
	run --separate-stderr gs status --json
	assert_status 0
	run --separate-stderr gs status --query-gpu=index,memory.used --format=csv,noheader
	assert_status 0
	run --separate-stderr gs wait --timeout 0 --json
	assert_status 1
	assert_eq "$(jqo '"\(.verdict) \(.gpus[0].held_by | map(tostring) | join(","))"')" "not-clean $a" "wait"
	assert_alive "$a"
	kill -TERM "$a"
	wait_for 10 dead "$a"
	run --separate-stderr gs wait --timeout 0
	assert_status 0
}

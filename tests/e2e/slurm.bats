#!/usr/bin/env bats
# Slurm integration: tools/gpuslate-slurm-epilog (docs/slurm.md).
#
# The first tests run the wrapper directly, the way slurmd runs it (root, the
# variables Slurm gives epilogs), against the simulated GPU host of
# docs/testing.md: GPU selection, shared nodes, deadlines, the log line. They
# need no Slurm. The last one runs tests/slurm/run.sh: a real slurmctld +
# slurmd + munged on this machine; it is skipped only when those are not
# installed (Debian: slurmctld slurmd slurm-client munge) or not root.

setup() {
	REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	BUILD=${GPUSLATE_BUILD:-$REPO/build}
	GS=${GPUSLATE_BIN:-$BUILD/gpuslate}
	HOLDER=$BUILD/fakes/gs-holder
	WRAPPER=$REPO/tools/gpuslate-slurm-epilog
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/gs-slurm.XXXXXX")
	sh "$REPO/tests/fakes/mkhost.sh" "$T/host" 2
	export FAKE_NVML_STATE=$T/host/nvml
	export GPUSLATE_DEV_ROOT=$T/host/dev
	export GPUSLATE_NVML_LIB=$BUILD/fakes/libnvidia-ml.so.1
	export GPUSLATE_LOCK_FILE=$T/lock
	export GPUSLATE_STATE_FILE=$T/last-reclaim
	export GPUSLATE_BIN=$GS
	export GPUSLATE_SLURM_CONF=$T/none.conf
	export GPUSLATE_EPILOG_SYSLOG=no
	export GPUSLATE_EPILOG_LOG_FILE=$T/epilog.log
	export GPUSLATE_EPILOG_GRACE=1
	export GPUSLATE_EPILOG_TIMEOUT=3
	unset SLURM_JOB_GPUS CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL SLURM_SCRIPT_CONTEXT SLURM_JOB_USER
	export SLURM_JOB_ID=42
	PIDS=()
}

teardown() {
	local p
	# supervisors (pid=) first, then the holders they run (child=, rewritten
	# on each respawn), then anything else we started
	for p in $(sed -n 's/^pid=//p' "$T"/*.ready 2>/dev/null) $(sed -n 's/^child=//p' "$T"/*.ready 2>/dev/null) \
		"${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$T"
}

# hold NAME GPU [gs-holder options]: a setsid'd holder; its pid in $NAME_pid
hold() {
	local name=$1 gpu=$2 pid
	shift 2
	"$HOLDER" --setsid --gpu "$gpu" --mib 3590 --ready-file "$T/$name.ready" "$@" </dev/null >/dev/null 2>&1 3>&- &
	for _ in $(seq 200); do [ -s "$T/$name.ready" ] && break; sleep 0.05; done
	pid=$(sed -n 's/^pid=//p' "$T/$name.ready")
	[ -n "$pid" ]
	PIDS+=("$pid")
	printf -v "${name}_pid" '%s' "$pid"
}

alive() {
	local st
	st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

@test "slurm epilog: SLURM_JOB_GPUS=1 reclaims GPU 1 only; GPU 0's holder (another job) survives" {
	hold mine 1
	hold other 0
	SLURM_JOB_GPUS=1 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^gpuslate-epilog\ job=42\ gpus=1:\ clean\ in\ [0-9]+\.[0-9][0-9]s\ \(stopped\ 1\ process:\ [0-9]+\ gs-holder\)$ ]]
	! alive "$mine_pid"
	alive "$other_pid"
	grep -q "gpuslate-epilog job=42 gpus=1: clean" "$T/epilog.log"
}

@test "slurm epilog: falls back to CUDA_VISIBLE_DEVICES, then GPU_DEVICE_ORDINAL, and says so" {
	hold mine 1
	hold other 0
	SLURM_JOB_GPUS=NoDevFiles CUDA_VISIBLE_DEVICES=1 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=1 (from CUDA_VISIBLE_DEVICES): clean in "* ]]
	! alive "$mine_pid"
	alive "$other_pid"
	GPU_DEVICE_ORDINAL=0 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=0 (from GPU_DEVICE_ORDINAL): clean in "*"(stopped 1 process: "[0-9]*" gs-holder)" ]]
	! alive "$other_pid"
}

@test "slurm epilog: GPU UUIDs and ranges are passed through; MIG ids are not used" {
	hold g1 1
	CUDA_VISIBLE_DEVICES=GPU-a2983c1e-0000-4000-8000-000000000001 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	! alive "$g1_pid"
	hold g0 0
	CUDA_VISIBLE_DEVICES=MIG-0f1e2d3c GPUSLATE_EPILOG_DEFAULT_GPUS=none run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=none: no GPU list from Slurm"*"nothing to do" ]]
	alive "$g0_pid"
	SLURM_JOB_GPUS=0-1 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=0-1: clean in "* ]]
	! alive "$g0_pid"
}

@test "slurm epilog: no GPU list: all GPUs on a node with no other job, none beside another job" {
	hold a 0
	hold b 1
	# another job's step daemon on this node (only its name and title matter)
	cp "$(command -v sleep)" "$T/slurmstepd"
	(exec -a "slurmstepd: [77.batch]" "$T/slurmstepd" 60) </dev/null >/dev/null 2>&1 3>&- &
	PIDS+=($!)
	for _ in $(seq 100); do [ "$(cat /proc/$!/comm 2>/dev/null)" = slurmstepd ] && break; sleep 0.05; done
	run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=none: no GPU list from Slurm and other jobs (77) run here: left alone" ]]
	alive "$a_pid"
	alive "$b_pid"
	SLURM_JOB_ID=77 run bash "$WRAPPER" # its own job's step does not count
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=all: clean in "*"(stopped 2 processes: "[0-9]*" gs-holder, "[0-9]*" gs-holder)" ]]
	! alive "$a_pid"
	! alive "$b_pid"
}

@test "slurm epilog: memory not back within the deadline: exit 1 and one drain-safe line" {
	hold slow 1 --release-ms 30000
	hold other 0
	SLURM_JOB_GPUS=1 GPUSLATE_EPILOG_TIMEOUT=1 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" =~ ^gpuslate-epilog\ job=42\ gpus=1:\ NOT\ CLEAN\ after\ [0-9.]+s:\ GPU\ 1\ 3590\ MiB\ used ]]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" != *[\"\'\`\\]* ]]
	! alive "$slow_pid"
	alive "$other_pid"
}

@test "slurm epilog: a holder that respawns: exit 1; the next job's prolog sees it too" {
	# The holder ignores SIGTERM and its memory takes 2 s to come back, so the
	# epilog is still verifying when the supervisor starts a new one (100 ms
	# after the death).
	hold sup 1 --supervise --ignore-term --release-ms 2000
	SLURM_JOB_GPUS=1 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"gpus=1: NOT CLEAN after "*"s: GPU 1 "*" held by "[0-9]*" (gs-holder)"*"respawned by"* ]]
	# Each holder named once (it was "held by 20604 (torchrun) (torchrun)").
	[[ "$output" != *"(gs-holder) ("* ]]
	SLURM_JOB_ID=43 SLURM_JOB_GPUS=1 GPUSLATE_PROLOG_TIMEOUT=0.5 run bash "$WRAPPER" prolog
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"gpuslate-prolog job=43 gpus=1: NOT CLEAN after "*"held by "* ]]
}

@test "slurm epilog: gpuslate past GPUSLATE_EPILOG_DEADLINE is killed: exit 1" {
	printf '#!/bin/sh\nexec sleep 30\n' >"$T/hang"
	chmod +x "$T/hang"
	SLURM_JOB_GPUS=0 GPUSLATE_BIN=$T/hang GPUSLATE_EPILOG_DEADLINE=1 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"gpus=0: NOT CLEAN: gpuslate did not finish within 1s (GPUSLATE_EPILOG_DEADLINE)"* ]]
}

@test "slurm epilog: node without an NVIDIA GPU: nothing to do; bad settings: exit 1, not run" {
	mkdir "$T/empty"
	GPUSLATE_DEV_ROOT=$T/empty run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no NVIDIA GPU on this node, nothing to do" ]]
	GPUSLATE_EPILOG_TIMEOUT=soon run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bad setting: timeout soon is not seconds"* ]]
	run bash "$WRAPPER" bogus
	[ "$status" -eq 2 ]
}

@test "slurm epilog: settings from the config file; the environment wins" {
	hold mine 1
	cat >"$T/gs.conf" <<-EOF
	# comment
	GPUSLATE_EPILOG_DEFAULT_GPUS = none
	GPUSLATE_EPILOG_LOG_FILE="$T/from-file.log"
	GPUSLATE_EPILOG_JSON_DIR='$T/json'
	NOT_OURS=1
	EOF
	# no list + DEFAULT_GPUS=none from the file: nothing done
	GPUSLATE_SLURM_CONF=$T/gs.conf run env -u GPUSLATE_EPILOG_LOG_FILE bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=none: no GPU list"* ]]
	grep -q "gpus=none" "$T/from-file.log"
	alive "$mine_pid"
	# the environment overrides the file
	GPUSLATE_SLURM_CONF=$T/gs.conf GPUSLATE_EPILOG_DEFAULT_GPUS=all run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=all: clean in "* ]]
	! alive "$mine_pid"
	grep -q '^  "reason": "slurm epilog job=42",$' "$T/json/job-42-epilog.json"
}

@test "slurm epilog: GPUSLATE_EPILOG_JOB_USER_ONLY=yes stops only the job user's processes" {
	# For GPUs shared between jobs (gres/shard, MPS): other users' processes
	# on the GPU are left alone and count as its baseline.
	hold theirs 1
	# nobody has no process at all (gpuslate: no match, exit 7), and the
	# GPU is at its baseline: clean for the job.
	SLURM_JOB_GPUS=1 SLURM_JOB_USER=nobody GPUSLATE_EPILOG_JOB_USER_ONLY=yes run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ gpus=1:\ clean\ in\ [0-9.]+s\ \(no\ process\ of\ nobody\ left\)$ ]]
	alive "$theirs_pid"
	SLURM_JOB_GPUS=1 SLURM_JOB_USER=$(id -un) GPUSLATE_EPILOG_JOB_USER_ONLY=yes run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpus=1: clean in "*"(stopped 1 process: "[0-9]*" gs-holder)" ]]
	! alive "$theirs_pid"
}

@test "slurm prolog: checks the job's GPUs without stopping anything" {
	hold busy 1
	SLURM_SCRIPT_CONTEXT=prolog_slurmd SLURM_JOB_GPUS=0 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^gpuslate-prolog\ job=42\ gpus=0:\ clean\ in ]]
	SLURM_SCRIPT_CONTEXT=prolog_slurmd SLURM_JOB_GPUS=1 GPUSLATE_PROLOG_TIMEOUT=0.5 run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"gpuslate-prolog job=42 gpus=1: NOT CLEAN after "*"held by $busy_pid (gs-holder)"* ]]
	alive "$busy_pid"
	SLURM_JOB_GPUS=1 GPUSLATE_PROLOG_ACTION=reclaim run bash "$WRAPPER" prolog
	echo "$output"
	[ "$status" -eq 0 ]
	! alive "$busy_pid"
}

@test "slurm: real slurmctld + slurmd: clean job, orphan reclaimed, shared node, drain on failure" {
	run timeout 300 bash "$REPO/tests/slurm/run.sh" 3>&-
	echo "$output"
	if [ "$status" -eq 77 ]; then
		skip "${lines[0]#SKIP: }"
	fi
	[ "$status" -eq 0 ]
}

@test "slurm epilog: reads gpuslate's JSON by its keys (jq), not its layout; durations with units" {
	hold mine 1
	# A gpuslate whose JSON is on one line: the same document, other layout.
	cat >"$T/compact" <<-EOF
	#!/bin/bash
	set -o pipefail
	"$GS" "\$@" | jq -c .
	EOF
	chmod +x "$T/compact"
	SLURM_JOB_GPUS=1 GPUSLATE_BIN=$T/compact GPUSLATE_EPILOG_TIMEOUT=30s GPUSLATE_EPILOG_GRACE=500ms \
		run bash "$WRAPPER"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^gpuslate-epilog\ job=42\ gpus=1:\ clean\ in\ [0-9]+\.[0-9][0-9]s\ \(stopped\ 1\ process:\ $mine_pid\ gs-holder\)$ ]]
	! alive "$mine_pid"
	# A held GPU, compact JSON: the summary, the holder named once.
	hold busy 1
	SLURM_JOB_ID=44 SLURM_JOB_GPUS=1 GPUSLATE_BIN=$T/compact GPUSLATE_PROLOG_TIMEOUT=500ms run bash "$WRAPPER" prolog
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == "gpuslate-prolog job=44 gpus=1: NOT CLEAN after "*"s: GPU 1 3590 MiB used, held by $busy_pid (gs-holder)" ]]
}

#!/usr/bin/env bats
# A GPU driver that hangs in the kernel (issue 15 item 2), for real: the
# fake NVML reads a file on a FUSE file system whose server takes the request
# and never answers (tests/fakes/hangfs.c), so the NVML call sleeps in the
# kernel, and in state D once killed, as a thread stuck in a driver ioctl
# does. A process with such a thread cannot finish exiting: gpuslate must
# never be that process. Every command has to exit within its deadline with
# exit status 3, the GPU and the call named and "reboot or reset needed",
# leaving the stuck NVML helper to the kernel; a fleet run and the Slurm
# epilog report it.
#
# The mount lives in a mount namespace of the server's own (--private), so no
# other process on the machine can stumble into it; gpuslate runs in it
# through nsenter. Needs root and /dev/fuse.

load helpers

# The shared setup and teardown, wrapped by ours.
eval "$(declare -f setup | sed '1s/^setup/helpers_setup/')"
eval "$(declare -f teardown | sed '1s/^teardown/helpers_teardown/')"

# hangfs_start [--in PID]: the never-answering FUSE server, mounted on
# $HANG_MNT, in a namespace of its own (or in the mount namespace of PID).
hangfs_start() {
	local ready=$BATS_TEST_TMPDIR/hangfs.ready
	[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] || skip "needs root and /dev/fuse"
	command -v nsenter >/dev/null || skip "needs nsenter (util-linux)"
	HANG_MNT=$BATS_TEST_TMPDIR/stuck
	HANG_LOG=$BATS_TEST_TMPDIR/hangfs.log
	mkdir -p "$HANG_MNT"
	rm -f "$ready"
	if [ "${1:-}" = --in ]; then
		nsenter -t "$2" -m -- "$GPUSLATE_BUILD/fakes/gs-hangfs" "$HANG_MNT" --ready-file "$ready" \
			--log "$HANG_LOG" </dev/null >"$BATS_TEST_TMPDIR/hangfs.out" 2>&1 3>&- &
	else
		"$GPUSLATE_BUILD/fakes/gs-hangfs" "$HANG_MNT" --private --ready-file "$ready" \
			--log "$HANG_LOG" </dev/null >"$BATS_TEST_TMPDIR/hangfs.out" 2>&1 3>&- &
	fi
	HANG_SRV=$!
	track "$HANG_SRV"
	wait_for 10 hangfs_settled "$ready" "$HANG_SRV" || return 1
	if [ ! -s "$ready" ]; then
		# A container may refuse FUSE mounts even to root.
		skip "cannot mount a FUSE file system here: $(cat "$BATS_TEST_TMPDIR/hangfs.out")"
	fi
	HANG_SRV=$(sed -n 's/^pid=//p' "$ready")
}
hangfs_settled() { [ -s "$1" ] || dead "$2"; }

# in_hang_ns CMD...: run CMD where the FUSE mount is.
in_hang_ns() { nsenter -t "$HANG_SRV" -m -- "$@"; }

# helper_pid TEXT: the NVML helper gpuslate left behind, from its message.
helper_pid() { sed -n 's/.*NVML helper PID \([0-9][0-9]*\) left to the kernel.*/\1/p' <<<"$1" | head -n 1; }

in_state() { [ "$(proc_state "$1")" = "$2" ]; }

# assert_stuck PID: PID made a request the server never answered and now
# sleeps uninterruptibly: the kernel, not gpuslate, holds it.
assert_stuck() {
	[ -n "$1" ] || { echo "no helper PID in the message" >&2; return 1; }
	awk '{ print $3 }' "$HANG_LOG" | grep -qx "$1" || { echo "helper $1 made no FUSE request" >&2; return 1; }
	wait_for 5 in_state "$1" D ||
		{ echo "helper $1 is in state $(proc_state "$1"), not D" >&2; return 1; }
	STUCK+=("$1")
}

# assert_within MS: the command just run took less than MS (from $T0).
assert_within() {
	local took=$(($(now_ms) - T0))
	[ "$took" -lt "$1" ] || { echo "took $took ms, expected less than $1" >&2; return 1; }
}

setup() {
	helpers_setup
	STUCK=()
}

teardown() {
	local p failed=
	# Ending the server aborts the FUSE connection: every stuck reader's
	# request fails, and the helpers (SIGKILLed by gpuslate) die.
	if [ -n "${HANG_SRV:-}" ] && alive "$HANG_SRV"; then
		kill -TERM "$HANG_SRV" 2>/dev/null || true
		wait_for 10 dead "$HANG_SRV" || kill -KILL "$HANG_SRV" 2>/dev/null || true
	fi
	for p in "${STUCK[@]}"; do
		wait_for 10 dead "$p" || { echo "teardown: NVML helper $p still stuck" >&2; failed=1; }
	done
	if [ -n "${FLEET:-}" ]; then
		"$BATS_TEST_DIRNAME/../fleet/mkhosts.sh" down "$FLEET" || failed=1
	fi
	helpers_teardown || failed=1
	[ -z "$failed" ]
}

@test "driver hang: status with an NVML call stuck in the kernel exits 3 within its deadline, naming the GPU and the call" {
	hangfs_start
	echo "block nvmlDeviceGetMemoryInfo_v2 $HANG_MNT/gpu1 gpu=1" >"$FAKE_NVML_STATE/inject"
	T0=$(now_ms)
	run --separate-stderr in_hang_ns "$GPUSLATE_BIN" status --nvml-timeout 1
	assert_within 6000
	assert_status 3
	assert_one_error "$stderr" "GPU 1: nvmlDeviceGetMemoryInfo_v2 did not return within 1\.0 s: the GPU driver is hung; reboot or reset needed"
	assert_eq "$output" "" "stdout"
	assert_stuck "$(helper_pid "$stderr")"
	# Not a second earlier: the deadline is what it says.
	[ $(($(now_ms) - T0)) -ge 1000 ]
}

@test "driver hang: NVML stuck in nvmlInit: status exits 3, no fallback to the driver's procfs" {
	hangfs_start
	echo "block nvmlInit_v2 $HANG_MNT/init" >"$FAKE_NVML_STATE/inject"
	T0=$(now_ms)
	run --separate-stderr in_hang_ns "$GPUSLATE_BIN" status --json --nvml-timeout 1
	assert_within 6000
	assert_status 3
	assert_one_error "$stderr" "nvmlInit_v2 did not return within 1\.0 s: the GPU driver is hung; reboot or reset needed"
	# --json: the document of the early failure, with the same reason.
	assert_eq "$(jqo '"\(.verdict) \(.exit_status) \(.gpus | length)"')" "driver-failure 3 0" "document"
	assert_match "$(jqo .reason)" "nvmlInit_v2 did not return within 1\.0 s" "reason"
	assert_stuck "$(helper_pid "$stderr")"
}

@test "driver hang: reclaim stuck in discovery exits 3 within its deadline and stops nothing" {
	hangfs_start
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	echo "block nvmlDeviceGetComputeRunningProcesses_v3 $HANG_MNT/procs gpu=0" >"$FAKE_NVML_STATE/inject"
	T0=$(now_ms)
	run --separate-stderr in_hang_ns "$GPUSLATE_BIN" reclaim -y --json --nvml-timeout 1
	assert_within 6000
	assert_status 3
	assert_one_error "$stderr" "GPU 0 \(00000000:18:00\.0\): nvmlDeviceGetComputeRunningProcesses_v3 did not return within 1\.0 s: the GPU driver is hung; reboot or reset needed"
	assert_alive "$a"
	assert_stuck "$(helper_pid "$stderr")"
}

@test "driver hang: reclaim stuck while waiting for the memory exits 3, reporting what it stopped" {
	hangfs_start
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	# Discovery reads the memory of both GPUs; the first poll after that hangs.
	echo "block_after nvmlDeviceGetMemoryInfo_v2 2 $HANG_MNT/mem" >"$FAKE_NVML_STATE/inject"
	T0=$(now_ms)
	run --separate-stderr in_hang_ns "$GPUSLATE_BIN" reclaim -y --json --grace 5 --timeout 60 --nvml-timeout 1
	assert_within 8000
	assert_status 3
	assert_eq "$(jqo '"\(.verdict) \(.exit_status)"')" "driver-failure 3" verdict
	assert_match "$(jqo .driver_error)" "^reading GPU memory failed: GPU 0 \(00000000:18:00\.0\): nvmlDeviceGetMemoryInfo_v2 did not return within 1\.0 s: the GPU driver is hung; reboot or reset needed" driver_error
	assert_match "$(jqo .summary)" "^gpuslate: driver failure: reading GPU memory failed: GPU 0 .*reboot or reset needed" summary
	assert_eq "$(jqo ".processes[] | select(.pid == $a) | .outcome")" exited-after-term "what was stopped"
	assert_dead "$a"
	assert_stuck "$(helper_pid "$(jqo .driver_error)")"
}

@test "driver hang: during the grace period of a holder that ignores SIGTERM: exit 3 at once, no SIGKILL" {
	hangfs_start
	start_holder a --gpu 0 --mib 1024 --ignore-term
	a=$(rpid a)
	echo "block_after nvmlDeviceGetMemoryInfo_v2 2 $HANG_MNT/mem" >"$FAKE_NVML_STATE/inject"
	T0=$(now_ms)
	# The default grace is 10 s: gpuslate must not sit it out.
	run --separate-stderr in_hang_ns "$GPUSLATE_BIN" reclaim -y --json --nvml-timeout 1
	assert_within 6000
	assert_status 3
	assert_eq "$(jqo .verdict)" driver-failure verdict
	assert_eq "$(jqo ".processes[] | select(.pid == $a) | \"\\(.outcome) \\(.signals | join(\",\"))\"")" \
		"driver-failure SIGTERM,SIGCONT" "the holder"
	assert_alive "$a"
	assert_stuck "$(helper_pid "$(jqo .driver_error)")"
}

@test "driver hang: wait exits 3 within its deadline and signals nothing" {
	hangfs_start
	start_holder a --gpu 1 --mib 512
	a=$(rpid a)
	echo "block_after nvmlDeviceGetMemoryInfo_v2 2 $HANG_MNT/mem" >"$FAKE_NVML_STATE/inject"
	T0=$(now_ms)
	run --separate-stderr in_hang_ns "$GPUSLATE_BIN" wait --json --timeout 60 --nvml-timeout 1
	assert_within 6000
	assert_status 3
	assert_eq "$(jqo .verdict)" driver-failure verdict
	assert_match "$(jqo .driver_error)" "nvmlDeviceGetMemoryInfo_v2 did not return within 1\.0 s: the GPU driver is hung; reboot or reset needed" driver_error
	assert_alive "$a"
	assert_stuck "$(helper_pid "$(jqo .driver_error)")"
}

@test "driver hang: the Slurm epilog fails the job's node with the driver failure in its log line, in time" {
	hangfs_start
	start_holder a --gpu 0 --mib 1024
	echo "block nvmlDeviceGetComputeRunningProcesses_v3 $HANG_MNT/procs" >"$FAKE_NVML_STATE/inject"
	T0=$(now_ms)
	SLURM_JOB_ID=42 SLURM_JOB_GPUS=0 GPUSLATE_BIN=$GPUSLATE_BIN GPUSLATE_SLURM_CONF=/nonexistent \
		GPUSLATE_EPILOG_SYSLOG=no GPUSLATE_EPILOG_EXTRA_ARGS="--nvml-timeout 1" \
		run in_hang_ns bash "$BATS_TEST_DIRNAME/../../tools/gpuslate-slurm-epilog" epilog
	assert_within 8000
	assert_status 1
	assert_match "$output" "^gpuslate-epilog job=42 gpus=0: NOT CLEAN: GPU driver failure: cannot read GPU state: GPU 0 \(00000000:18:00\.0\): nvmlDeviceGetComputeRunningProcesses_v3 did not return within 1\.0 s: the GPU driver is hung; reboot or reset needed" "epilog line"
	assert_alive "$(rpid a)"
	assert_stuck "$(awk '$1 == 1 { print $3; exit }' "$HANG_LOG")"
}

@test "driver hang: a fleet run reports the host with the hung driver, the others normally, in time" {
	[ -x /usr/sbin/sshd ] && command -v ip >/dev/null || skip "needs openssh-server and iproute2"
	FLEET=$BATS_TEST_TMPDIR/fleet
	"$BATS_TEST_DIRNAME/../fleet/mkhosts.sh" up "$FLEET"
	"$BATS_TEST_DIRNAME/../fleet/mkhosts.sh" add "$FLEET" gpu01
	"$BATS_TEST_DIRNAME/../fleet/mkhosts.sh" add "$FLEET" stuck01
	# The mount where the host's sessions run: its sshd's mount namespace.
	hangfs_start --in "$(cat "$FLEET/hosts/stuck01/sshd.pid")"
	echo "block nvmlDeviceGetMemoryInfo_v2 $HANG_MNT/mem gpu=1" >"$FLEET/hosts/stuck01/nvml/inject"
	T0=$(now_ms)
	GPUSLATE_SSH="ssh -F $FLEET/ssh_config" run "$GPUSLATE_BIN" -w gpu01,stuck01 --nvml-timeout 1 status
	assert_within 20000
	assert_status 4
	# The reason from the host's own document (its early failure).
	assert_match "$output" "^stuck01: driver failure \(exit 3\): cannot read GPU state: GPU 1: nvmlDeviceGetMemoryInfo_v2 did not return within 1\.0 s: the GPU driver is hung; reboot or reset needed" "stuck01's line"
	assert_match "$output" "^gpu01: clean" "gpu01's line"
	assert_stuck "$(helper_pid "$output")"
}

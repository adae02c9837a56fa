#!/usr/bin/env bats
# Safety rules no selection overrides: gpuslate never signals itself, its
# ancestors, PID 1 or kernel threads; protected daemons and clients only when
# named; bad input is a usage error that changes nothing. PID 1 is only ever
# put in front of gpuslate inside a private PID namespace, where PID 1 is
# this test's own script.

load helpers

# A context file for PID in the fake NVML state, locked by the calling shell
# (fd 8): NVML then lists PID as holding MIB on GPU 0 while the shell lives.
# Content after the lock, as gs-holder does (docs/testing.md).
CTX_SNIPPET='exec 8>"$FAKE_NVML_STATE/ctx/ext-$CTX_PID-0"; flock -s 8; printf "pid=%d\ngpu=0\nmib=%d\nkind=compute\nrelease_ms=0\n" "$CTX_PID" "$CTX_MIB" >&8'

@test "safety: gpuslate's ancestor that holds the GPU is left alone" {
	start_holder victim --gpu 0 --mib 1024
	victim=$(rpid victim)
	# A shell NVML lists as holding 512 MiB runs gpuslate, then stays.
	launch anc bash -c 'CTX_PID=$$ CTX_MIB=512; eval "$1"; echo "pid=$$" >"$2.tmp"; mv "$2.tmp" "$2";
		"$GPUSLATE_BIN" reclaim -y --json >"$3/anc.json" 2>"$3/anc.err"; echo $? >"$3/anc.rc"; exec sleep 600' \
		_ "$CTX_SNIPPET" "$BATS_TEST_TMPDIR/anc.ready" "$BATS_TEST_TMPDIR"
	anc=$(rpid anc)
	wait_for 30 test -s "$BATS_TEST_TMPDIR/anc.rc"
	output=$(cat "$BATS_TEST_TMPDIR/anc.json")
	# The ancestor keeps its 512 MiB: the selection is gone, the GPU is not free.
	assert_eq "$(cat "$BATS_TEST_TMPDIR/anc.rc")" 6 "exit status"
	assert_eq "$(jqo '"\(.verdict) \([.gpus[0].left_alone_holders[].pid] | map(tostring) | join(","))"')" "selection-gone $anc" verdict
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $anc) | .reason")" "an ancestor of gpuslate" "ancestor"
	assert_eq "$(jqo "[.processes[] | select(.pid == $anc)] | length")" 0 "signals to the ancestor"
	assert_eq "$(jqo "[.processes[].pid] | map(tostring) | join(\",\")")" "$victim" "stopped"
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "true 512" "GPU 0"
	assert_alive "$anc"
	assert_dead "$victim"
}

@test "safety: PID 1 listed by NVML is never a target (private PID namespace)" {
	require_pidns
	cat >"$BATS_TEST_TMPDIR/ns.sh" <<-'EOF'
		d=$1
		env true # PID 2, so no holder gets it
		CTX_PID=1 CTX_MIB=300
		eval "$CTX_SNIPPET"
		"$GS_HOLDER" --gpu 0 --mib 1024 --ready-file "$d/h.ready" </dev/null >/dev/null 2>&1 &
		for i in $(seq 1000); do [ -f "$d/h.ready" ] && break; sleep 0.01; done
		"$GPUSLATE_BIN" reclaim -y --json >"$d/out.json" 2>"$d/err"
		echo $? >"$d/rc"
	EOF
	bg ns env GS_HOLDER="$GS_HOLDER" CTX_SNIPPET="$CTX_SNIPPET" unshare --pid --fork --mount-proc --kill-child bash "$BATS_TEST_TMPDIR/ns.sh" "$BATS_TEST_TMPDIR"
	bg_wait ns 60
	assert_eq "$BG_STATUS" 0 "namespace script (PID 1) survived and ended normally"
	output=$(cat "$BATS_TEST_TMPDIR/out.json")
	assert_eq "$(jqo '.plan.left_alone[] | select(.pid == 1) | .reason')" "PID 1" "PID 1"
	assert_eq "$(jqo '[.processes[] | select(.pid == 1)] | length')" 0 "signals to PID 1"
	assert_eq "$(jqo '.processes | length')" 1 "processes stopped"
	# PID 1 keeps what NVML accounts to it: not free, said so (exit 6).
	assert_eq "$(cat "$BATS_TEST_TMPDIR/rc")" 6 "exit status"
	assert_eq "$(jqo '"\(.verdict) \([.gpus[0].left_alone_holders[].pid] | map(tostring) | join(","))"')" "selection-gone 1" verdict
}

@test "safety: a kernel thread listed by NVML is never a target" {
	kt=
	for f in /proc/[0-9]*/stat; do
		s=$(cat "$f" 2>/dev/null) || continue
		p=${s%% *}
		rest=${s##*) }
		# shellcheck disable=SC2086
		set -- $rest
		# flags (field 9) has PF_KTHREAD (0x00200000); not pid 2 itself.
		if [ "$p" != 2 ] && (( $7 & 0x00200000 )); then kt=$p; break; fi
	done
	[ -n "$kt" ] || skip "no kernel thread visible (PID namespace)"
	kst=$(starttime "$kt")
	start_holder victim --gpu 0 --mib 1024
	launch klock bash -c 'CTX_PID=$1 CTX_MIB=200; eval "$2"; echo "pid=$$" >"$3"; exec sleep 600' \
		_ "$kt" "$CTX_SNIPPET" "$BATS_TEST_TMPDIR/klock.ready"

	run --separate-stderr gs reclaim -y --json
	assert_status 6
	assert_eq "$(jqo .verdict)" selection-gone verdict
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $kt) | .reason")" "a kernel thread" "kernel thread $kt"
	assert_eq "$(jqo "[.processes[] | select(.pid == $kt)] | length")" 0 "signals to the kernel thread"
	assert_eq "$(starttime "$kt")" "$kst" "kernel thread $kt start time"
	assert_dead "$(rpid victim)"
}

@test "safety: in a PID namespace, PID 2 and its children are ordinary processes, not kernel threads" {
	# Containers have their own PID 2 (pct exec, docker): a GPU holder
	# there must be stopped, and a verdict must not call its memory clean.
	require_pidns
	cat >"$BATS_TEST_TMPDIR/ns.sh" <<-'EOF'
		d=$1
		# The first process started here gets PID 2.
		"$GS_HOLDER" --gpu 0 --mib 1024 --fork-child --ready-file "$d/h.ready" </dev/null >/dev/null 2>&1 &
		for i in $(seq 1000); do [ -f "$d/h.ready" ] && break; sleep 0.01; done
		"$GPUSLATE_BIN" reclaim -y --json >"$d/out.json" 2>"$d/err"
		echo $? >"$d/rc"
		cp "$d/h.ready" "$d/pids"
		for p in $(sed -n 's/^[a-z]*=//p' "$d/h.ready"); do
			s=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$p/status" 2>/dev/null)
			echo "$p ${s:-gone}"
		done >"$d/states"
	EOF
	bg ns env GS_HOLDER="$GS_HOLDER" unshare --pid --fork --mount-proc --kill-child bash "$BATS_TEST_TMPDIR/ns.sh" "$BATS_TEST_TMPDIR"
	bg_wait ns 60
	assert_eq "$BG_STATUS" 0 "namespace script"
	assert_eq "$(sed -n 's/^pid=//p' "$BATS_TEST_TMPDIR/pids")" 2 "the holder's pid in the namespace"
	output=$(cat "$BATS_TEST_TMPDIR/out.json")
	assert_eq "$(jqo '[.plan.left_alone[] | select(.reason == "a kernel thread") | .pid] | map(tostring) | join(",")')" "" \
		"processes taken for kernel threads"
	assert_eq "$(jqo '[.plan.targets[].pid] | sort | map(tostring) | join(",")')" "$(sed -n 's/^[a-z]*=//p' "$BATS_TEST_TMPDIR/pids" | sort -n | paste -sd,)" targets
	assert_eq "$(cat "$BATS_TEST_TMPDIR/rc")" 0 "exit status"
	assert_eq "$(awk '$2 != "Z" && $2 != "gone"' "$BATS_TEST_TMPDIR/states")" "" "holders still running"
}

@test "safety: a protected daemon or a client is stopped only when named" {
	start_holder pd --as nvidia-persistenced --gpu 0 --mib 64
	start_holder smi --as nvidia-smi --client --gpu 0
	pd=$(rpid pd) smi=$(rpid smi)

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(jqo '.plan.targets | length')" 0 "targets by default"
	assert_alive "$pd" "$smi"

	run --separate-stderr gs reclaim -y --json --include-clients
	assert_status 0
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$smi" "targets with --include-clients"
	assert_dead "$smi"
	assert_alive "$pd"

	run --separate-stderr gs reclaim -y --json --include nvidia-persistenced
	assert_status 0
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$pd" "targets with --include"
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "true 0" "GPU 0"
	assert_dead "$pd"
}

@test "safety: bad input is a usage error (exit 2) with one line naming it, and nothing is killed" {
	start_holder a --gpu 0 --mib 1024 --ignore-term
	a=$(rpid a)
	check() { # check TEXT ARGS...: exit 2, one error line matching TEXT
		local want=$1
		shift
		run --separate-stderr gs "$@" </dev/null
		assert_status 2 || { echo "for: gpuslate $*" >&2; return 1; }
		assert_one_error "$stderr" "$want" || { echo "for: gpuslate $*" >&2; return 1; }
		assert_eq "$output" "" "stdout for gpuslate $*"
	}
	bad=0
	check "--grace 'abc'" reclaim -y --grace abc || bad=$((bad + 1))
	check "--grace '-1'" reclaim -y --grace -1 || bad=$((bad + 1))
	check "--grace ''" reclaim -y --grace '' || bad=$((bad + 1))
	check "--timeout '-1'" reclaim -y --timeout -1 || bad=$((bad + 1))
	check "--timeout '1e9'" reclaim -y --timeout 1e9 || bad=$((bad + 1))
	check "--tolerance 'lots'" reclaim -y --tolerance lots || bad=$((bad + 1))
	check "'--frobnicate'" reclaim -y --frobnicate || bad=$((bad + 1))
	check "'-Z'" reclaim -y -Z || bad=$((bad + 1))
	check "'--unit' needs an argument" reclaim -y --unit || bad=$((bad + 1))
	check "--match '\('" reclaim -y --match '(' || bad=$((bad + 1))
	check "unknown user 'no-such-user-gs'" reclaim -y -u no-such-user-gs || bad=$((bad + 1))
	check "index 9" reclaim -y -g 9 || bad=$((bad + 1))
	check "'bogus'" reclaim -y -g bogus || bad=$((bad + 1))
	check "--grace is not valid for 'status'" status --grace 1 || bad=$((bad + 1))
	check "-y is not valid for 'wait'" wait -y || bad=$((bad + 1))
	check "option --dry-run is not valid for 'wait'" wait --dry-run || bad=$((bad + 1))
	check "option -n is not valid for 'wait'" wait -n || bad=$((bad + 1))
	check "--include 'python3': not a protected daemon; --include takes one of: nvidia-persistenced, " \
		reclaim -y --include python3 || bad=$((bad + 1))
	check "--timeout '2x': expected a duration, e.g. 10, 0.5, 90s, 2m or 500ms" reclaim -y --timeout 2x ||
		bad=$((bad + 1))
	check "--grace '8d': longer than 7 days" reclaim -y --grace 8d || bad=$((bad + 1))
	check "'frobnicate'" frobnicate || bad=$((bad + 1))
	check "'extra'" reclaim -y extra || bad=$((bad + 1))
	assert_alive "$a"
	assert_eq "$(ls "$FAKE_NVML_STATE/ctx" | wc -l)" 1 "contexts"
	assert_eq "$bad" 0 "inputs not reported as documented"
}

@test "safety: a hostile NVML process list (pid 0, pid 0xFFFFFFFF) never leads to a wrong signal" {
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	echo garbage_processes >"$FAKE_NVML_STATE/inject"

	run --separate-stderr gs reclaim -y --json
	# Refusing to act on an untrusted list, or acting on the real holder
	# only: both are safe. Signalling pid 0 would have hit this test's own
	# process group.
	if [ "$status" -eq 3 ]; then
		assert_one_error "$stderr" "."
		assert_alive "$a"
	else
		assert_status 0
		assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$a" "targets"
		assert_eq "$(jqo '[.processes[].pid] | map(tostring) | join(",")')" "$a" "signalled"
		assert_dead "$a"
	fi
}

@test "safety: a live PID NVML lists but that holds no NVIDIA device is never a target (PID reuse, other PID namespace)" {
	# The driver's PIDs are the host's and a moment old: a process with that
	# number but no NVIDIA fd or mapping is someone else. Here a shell that
	# holds no device is listed with 700 MiB (the PID it "reused").
	start_holder victim --gpu 0 --mib 1024
	launch bystander bash -c 'CTX_PID=$$ CTX_MIB=700; eval "$1"; echo "pid=$$" >"$2.tmp"; mv "$2.tmp" "$2"; exec sleep 600' \
		_ "$CTX_SNIPPET" "$BATS_TEST_TMPDIR/bystander.ready"
	by=$(rpid bystander)

	run --separate-stderr gs reclaim -y --json --timeout 0.5
	assert_status 1
	assert_eq "$(jqo ".plan.left_alone[] | select(.pid == $by) | .reason | startswith(\"listed by NVML but holds no NVIDIA device\")")" true "left alone"
	assert_eq "$(jqo "[.processes[] | select(.pid == $by)] | length")" 0 "signals to the bystander"
	# Its 700 MiB is not excused: the GPU is not clean while it is accounted.
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "false 700" "GPU 0"
	assert_alive "$by"
	assert_dead "$(rpid victim)"
}

@test "durations take systemd and timeout(1) suffixes: --timeout 500ms, --grace 2m, --connect-timeout 90s" {
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	t0=$(now_ms)
	# 500ms of waiting for a held GPU, not 500 seconds.
	run --separate-stderr gs wait -g 0 --timeout 500ms --json
	assert_status 1
	elapsed=$(($(now_ms) - t0))
	[ "$elapsed" -lt 30000 ] || { echo "wait --timeout 500ms took $elapsed ms" >&2; return 1; }
	assert_alive "$a"
	# What the fleet passes on is the same duration, in seconds.
	GPUSLATE_FLEET_PRINT_ARGV=1 run --separate-stderr gs -w h1 reclaim -y --grace 2m --timeout 1m30s \
		--connect-timeout 90s
	assert_status 0
	assert_match "$output" "\[ConnectTimeout=90\]"
	assert_match "$output" "'--grace' '120' .*'--timeout' '90'"
}

@test "repeated -g adds up, as repeated -u do" {
	GS_NGPUS=3 new_host 3
	start_holder a --gpu 0 --mib 1024
	start_holder b --gpu 1 --mib 1024
	start_holder c --gpu 2 --mib 1024
	run --separate-stderr gs reclaim -n --json -g 0 -g 2
	assert_status 0
	assert_eq "$(jqo '[.plan.targets[].pid] | sort | map(tostring) | join(",")')" \
		"$(printf '%s\n' "$(rpid a)" "$(rpid c)" | sort -n | paste -sd,)" "targets of -g 0 -g 2"
	assert_alive "$(rpid a)" "$(rpid b)" "$(rpid c)"
}

#!/usr/bin/env bats
# Wrong kills found by an adversarial review (issue 11, items 1-4, 6, 8):
# each test reproduces the situation with real processes on the simulated
# host and checks who lives, who dies, and what the plan said.

load helpers

target_json() { jqo ".plan.targets[] | select(.pid == $1) | $2"; }
left_json() { jqo ".plan.left_alone[] | select(.pid == $1) | $2"; }

@test "reclaim -g 1: a process-group member that holds only GPU 0 is left alone, shown with its GPU" {
	# A launcher's group: the leader (GPU 1), a rank on GPU 0, a log
	# shipper holding nothing. The shell leads the group, starts the rank
	# and the shipper, then becomes the GPU 1 holder (same pid).
	launch group setsid bash -c '"$1" --gpu 0 --mib 2048 --ready-file "$2.rank" </dev/null >/dev/null 2>&1 &
		sleep 600 </dev/null >/dev/null 2>&1 &
		echo "$!" >"$2.shipper"
		until [ -f "$2.rank" ]; do sleep 0.01; done
		exec "$1" --gpu 1 --mib 4096 --ready-file "$2"' _ "$GS_HOLDER" "$BATS_TEST_TMPDIR/group.ready"
	leader=$(rpid group)
	rank=$(ready_values "$BATS_TEST_TMPDIR/group.ready.rank" pid)
	shipper=$(cat "$BATS_TEST_TMPDIR/group.ready.shipper")
	track "$rank"
	track "$shipper"
	assert_eq "$(ps -o pgid= -p "$rank" | tr -d ' ')" "$leader" "the rank's process group"

	run --separate-stderr gs reclaim -y -g 1 --json
	assert_status 0
	assert_eq "$(jqo '[.plan.targets[].pid] | sort | map(tostring) | join(",")')" \
		"$(printf '%s\n' "$leader" "$shipper" | sort -n | paste -sd,)" targets
	assert_eq "$(left_json "$rank" '"\(.gpus | map(tostring) | join(",")) \(.reason)"')" \
		"0 also holds a GPU outside the selection: not taken with the target it belongs to" "the rank"
	assert_eq "$(target_json "$shipper" '"\(.why) \(.gpus | length)"')" "member of a target's process group 0" "the shipper"
	assert_alive "$rank"
	assert_dead "$leader" "$shipper"
	run --separate-stderr gs status --query-gpu=index,memory.used --format=csv,noheader,nounits
	assert_eq "$output" $'0, 2048\n1, 0' "memory after"
}

@test "reclaim: a service inside a container or a delegated subtree is never stopped as the host's unit of the same name" {
	require_cgroups
	u=ollama-$BATS_TEST_NUMBER
	# The host's own unit of that name (a real systemd), holding no GPU.
	world_systemd_start
	world_unit "$u" -- sleep 600
	host_main=$UNIT_MAIN
	# The same name inside: a container booted by systemd-nspawn@.service,
	# a CI runner's delegated subtree, and a layout gpuslate does not
	# know (containerd's cgroupfs driver).
	holder_in_cgroup nspawn "machine.slice/systemd-nspawn@ct1.service/payload/system.slice/$u.service" --gpu 0 --mib 1000
	in_nspawn=$PID
	holder_in_cgroup runner "system.slice/runner.service/job-7/system.slice/$u.service" --gpu 0 --mib 2000
	in_runner=$PID
	holder_in_cgroup ctrd "default/c0ffee$BATS_TEST_NUMBER/system.slice/$u.service" --gpu 1 --mib 3000
	in_ctrd=$PID

	run --separate-stderr gs reclaim -y --json --grace 1
	assert_status 0
	assert_eq "$(jqo '"\(.verdict) \(.processes | length)"')" "clean 3" verdict
	assert_eq "$(target_json "$in_nspawn" '"\(.action) \(.owner.kind) \(.owner.name) \(.owner.unit)"')" \
		"signal nspawn ct1 $u.service" "holder in the nspawn container"
	assert_eq "$(target_json "$in_runner" '"\(.action) \(.owner.kind) \(.owner.name) \(.owner.unit)"')" \
		"signal unit runner.service $u.service" "holder in the runner's subtree"
	# Its owner reads as the host's unit; the host's systemd says its unit
	# of that name is elsewhere: not stopped, signalled.
	assert_eq "$(jqo '.units[] | "\(.unit) \(.stopped) \(.command)"')" "$u.service false null" "unit stop"
	assert_match "$(jqo '.units[0].error')" "^not stopped: its manager's $u.service is $WORLD_SD_CGROUP/system.slice/$u.service, not " "why"
	assert_dead "$in_nspawn" "$in_runner" "$in_ctrd"
	assert_alive "$host_main"
	assert_eq "$(sd show -p ActiveState --value "$u.service") $(sd show -p MainPID --value "$u.service")" \
		"active $host_main" "the host's unit"
}

@test "reclaim --container with a prefix that names two containers is refused (exit 2), naming both; nothing is stopped" {
	require_cgroups
	tail=$(printf '%08x' "$$$BATS_TEST_NUMBER" | cut -c1-8)
	id1=abcd1111${tail}$(printf '0%.0s' {1..48})
	id2=abcd2222${tail}$(printf '0%.0s' {1..48})
	holder_in_cgroup c1 "docker/$id1" --gpu 0 --mib 1000
	p1=$PID
	holder_in_cgroup c2 "docker/$id2" --gpu 0 --mib 2000
	p2=$PID

	run --separate-stderr gs reclaim -y --json --container abcd
	assert_status 2
	assert_one_error "$stderr" "--container 'abcd' is ambiguous: it names docker abcd(1111|2222)${tail:0:4} and docker abcd(2222|1111)${tail:0:4} \(give more of the id\)"
	assert_eq "$(jqo '"\(.verdict) \(.exit_status) \(.plan)"')" "usage-error 2 null" "the usage error's document"
	assert_alive "$p1" "$p2"

	# A prefix that names one: that container only.
	run --separate-stderr gs reclaim -y --json --container abcd1111
	assert_status 6
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$p1" targets
	assert_dead "$p1"
	assert_alive "$p2"
}

@test "reclaim: a monitor NVML names that only has /dev/nvidia0 open (no mapping) is not killed, and its memory is not excused" {
	start_holder job --gpu 0 --mib 1024
	# NVML lists the monitor's PID with 700 MiB (a reused PID, another PID
	# namespace's numbering): a context file locked by its shell, which
	# then becomes the monitor (same pid, the lock inherited).
	launch smi bash -c 'exec 8>"$FAKE_NVML_STATE/ctx/ext-$$-0"; flock -s 8
		printf "pid=%d\ngpu=0\nmib=700\nkind=compute\nrelease_ms=0\n" $$ >&8
		exec "$1" --client --gpu 0 --ready-file "$2"' _ "$GS_HOLDER" "$BATS_TEST_TMPDIR/smi.ready"
	smi=$(rpid smi)

	run --separate-stderr gs reclaim -y --json --timeout 0.5
	assert_status 1
	assert_eq "$(left_json "$smi" '.reason | startswith("listed by NVML but only has the device open, no GPU context mapped")')" true "the monitor"
	assert_eq "$(jqo "[.processes[] | select(.pid == $smi)] | length")" 0 "signals to the monitor"
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "false 700" "GPU 0"
	assert_alive "$smi"
	assert_dead "$(rpid job)"
}

@test "reclaim: a process that calls itself Xorg is a compute holder, flagged in the plan, and stopped; the real daemon is not" {
	start_holder fake --forge Xorg --gpu 0 --mib 40960
	start_holder pd --as nvidia-persistenced --gpu 0 --mib 64
	fake=$(rpid fake) pd=$(rpid pd)
	assert_eq "$(cat "/proc/$fake/comm")" Xorg "the forger's comm"

	run --separate-stderr gs reclaim -y --json
	assert_status 0
	assert_eq "$(target_json "$fake" '"\(.comm) \(.protected_name_unverified)"')" "Xorg true" "the forger"
	assert_eq "$(left_json "$pd" '"\(.role) \(.protected_name_unverified)"')" "protected false" "the real daemon"
	assert_eq "$(jqo '.gpus[] | select(.index == 0) | "\(.clean) \(.memory_after_mib)"')" "true 64" "GPU 0"
	assert_dead "$fake"
	assert_alive "$pd"

	start_holder fake2 --forge nv-hostengine --gpu 1 --mib 1024
	run --separate-stderr gs reclaim --dry-run -g 1
	assert_status 0
	assert_match "$output" "^ *$(rpid fake2) .* signal process \[named like a protected daemon; not one\]\$" "plan line"
	run --separate-stderr gs status --json
	assert_eq "$(jqo ".processes[] | select(.pid == $(rpid fake2)) | \"\(.role) \(.protected_name_unverified)\"")" "compute true" status
}

@test "reclaim --match finds an argument past the first 511 bytes of a long command line; tables show it cut" {
	long=$(printf 'x%.0s' {1..600})
	start_holder qwen --gpu 0 --mib 8192 --note "$long" --note vllm-serve-qwen
	start_holder other --gpu 0 --mib 1024 --note "$long"
	qwen=$(rpid qwen) other=$(rpid other)

	run --separate-stderr gs reclaim -y --json --match 'vllm-serve-qwen'
	assert_status 6
	assert_eq "$(jqo '[.plan.targets[].pid] | map(tostring) | join(",")')" "$qwen" targets
	assert_dead "$qwen"
	assert_alive "$other"
	run --separate-stderr gs status --json
	assert_eq "$(jqo ".processes[] | select(.pid == $other) | .cmdline | length")" 511 "the cut command line"
}

@test "reclaim: a filter that matches nothing says so by name (exit 7); nothing is stopped" {
	start_holder a --gpu 0 --mib 69632
	a=$(rpid a)

	run --separate-stderr gs reclaim -y --json --unit sglang-qwen.service
	assert_status 7
	assert_eq "$(jqo '"\(.verdict) \(.exit_status) \(.unmatched | join(","))"')" "no-match 7 --unit sglang-qwen.service" verdict
	assert_eq "$(jqo .summary)" "gpuslate: nothing matched: --unit sglang-qwen.service matches no process" summary
	assert_eq "$(jqo '.processes | length')" 0 "processes stopped"
	assert_alive "$a"

	run --separate-stderr gs reclaim -y -u 4000123
	assert_status 7
	assert_match "$output" "^Nothing matched: -u 4000123 matches no process\.\$" "plan"
	assert_match "$output" "^Verdict: no-match " "verdict line"

	run --separate-stderr gs reclaim --dry-run --json --match 'no-such-program-[0-9]+'
	assert_status 7
	assert_eq "$(jqo .verdict)" no-match "dry-run verdict"

	# Each matches a process (root has this one, gs-holder is its name),
	# just not the same one.
	run --separate-stderr gs reclaim -y --json -u 4000123 -u root --unit sglang-qwen.service
	assert_status 7
	assert_eq "$(jqo '.unmatched | join(",")')" "-u 4000123,--unit sglang-qwen.service" unmatched
	# One of two values matches: the other is a warning, by name.
	run --separate-stderr gs reclaim -y --json --match 'gs-holder' -u 4000123 -u root
	assert_status 0
	assert_match "$stderr" "gpuslate: warning: -u 4000123 matches no process" warning
	assert_dead "$a"
	assert_eq "$(jqo '.unmatched | join(",")')" "-u 4000123" unmatched
}

@test "reclaim --unit NAME run inside unit NAME (ExecStopPost=) matches itself: nothing to stop, clean, exit 0" {
	require_cgroups
	u=post-$BATS_TEST_NUMBER.service
	cg=$(make_cgroup "gs-e2e-$$-$BATS_TEST_NUMBER/system.slice/$u")
	run --separate-stderr bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" reclaim -y --json --unit "$3"' _ "$cg" "$GPUSLATE_BIN" "$u"
	assert_status 0
	assert_eq "$(jqo '"\(.verdict) \(.plan.targets | length) \(.unmatched | length)"')" "clean 0 0" verdict
}

@test "reclaim -g 0: a PID namespace's init on GPU 0 is left alone when its end would end GPU 1's job in the same namespace" {
	start_ns_holder init - --gpu 0 --mib 2048
	init=$(rpid init)
	start_ns_holder other "$init" --gpu 1 --mib 1024
	other=$(rpid other)
	assert_eq "$(awk '/^NSpid/ { print $NF }' /proc/"$init"/status)" 1 "the init's PID inside"
	assert_eq "$(readlink /proc/"$other"/ns/pid)" "$(readlink /proc/"$init"/ns/pid)" "one namespace"

	run --separate-stderr gs reclaim -y -g 0 --json
	assert_status 6
	assert_eq "$(jqo '.plan.targets | length')" 0 "targets"
	assert_eq "$(left_json "$init" '"\(.would_end) \(.reason)"')" \
		"$other init of a PID namespace that also holds a process left alone: its end would end that process too (stop its container, or select both)" "the init"
	assert_eq "$(jqo '.verdict')" selection-gone verdict
	assert_alive "$init" "$other"

	run --separate-stderr gs reclaim -y -g 0
	assert_status 6
	assert_match "$output" "would end PID $other" "the plan's text"
	assert_alive "$init" "$other"
}

@test "reclaim -g 0,1: with both GPUs selected the namespace's init and its other holder are both stopped" {
	start_ns_holder init - --gpu 0 --mib 2048
	init=$(rpid init)
	start_ns_holder other "$init" --gpu 1 --mib 1024
	other=$(rpid other)

	run --separate-stderr gs reclaim -y -g 0,1 --json
	assert_status 0
	assert_eq "$(jqo '.verdict')" clean verdict
	assert_dead "$init" "$other"
	run --separate-stderr gs status --query-gpu=index,memory.used --format=csv,noheader,nounits
	assert_eq "$output" $'0, 0\n1, 0' "memory after"
}

@test "reclaim -g 0: a PID namespace's init in a target's process group is not taken with it when that would end GPU 1's job" {
	# The group leader holds GPU 0; in its group, `unshare -p -f` started a
	# namespace whose init (a shell holding no GPU) runs the GPU 1 job.
	# Killing that init would make the kernel end the job.
	launch group setsid bash -c '
		unshare -p -f bash -c "\"\$1\" --gpu 1 --mib 256 --ready-file \"\$2.inner\" & wait" _ "$1" "$2" &
		until [ -f "$2.inner" ]; do sleep 0.01; done
		exec "$1" --gpu 0 --mib 1024 --ready-file "$2"' _ "$GS_HOLDER" "$BATS_TEST_TMPDIR/group.ready"
	leader=$(rpid group)
	nsinit= job=
	while read -r p c; do
		track "$p"
		[ "$c" = bash ] && nsinit=$p
		[ "$c" = gs-holder ] && [ "$p" != "$leader" ] && job=$p
	done < <(ps -o pid=,comm= -g "$leader")
	assert_eq "$(awk '/^NSpid/ { print $NF }' /proc/"$nsinit"/status)" 1 "the shell is its namespace's init"
	assert_eq "$(awk '/^NSpid/ { print $NF }' /proc/"$job"/status)" 2 "the GPU 1 job lives in that namespace"

	run --separate-stderr gs reclaim -y -g 0 --json
	assert_eq "$(jqo "[.plan.targets[] | select(.pid == $nsinit)] | length")" 0 "the namespace's init, targeted"
	assert_dead "$leader"
	assert_alive "$nsinit" "$job"
	run --separate-stderr gs status --query-gpu=index,memory.used --format=csv,noheader,nounits
	assert_eq "$output" $'0, 0\n1, 256' "memory after"
}

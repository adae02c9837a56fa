#!/usr/bin/env bats
# Review of issue 27 (adversarial): each test reproduces a defect found in
# the change 19451a5..HEAD; it fails on the code as reviewed and passes once
# the defect is fixed.

bats_require_minimum_version 1.5.0
load helpers
load supervisors

@test "review27: run --json-file naming an existing directory is refused before anything is stopped or run" {
	start_holder a --gpu 0 --mib 1024
	a=$(rpid a)
	mkdir "$BATS_TEST_TMPDIR/reports"
	run --separate-stderr gs run -y --json-file "$BATS_TEST_TMPDIR/reports" -- touch "$BATS_TEST_TMPDIR/ran"
	echo "status=$status stderr=$stderr"
	assert_status 2
	# The document can never be written there: known before the reclaim.
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_alive "$a"
}

# --- fleet: real OpenSSH to simulated hosts (tests/fleet/mkhosts.sh), as
# fleet.bats; only what these tests need (one host).
MKHOSTS=$BATS_TEST_DIRNAME/../fleet/mkhosts.sh

setup_file() {
	[ "$(id -u)" = 0 ] && command -v ip >/dev/null && [ -x /usr/sbin/sshd ] || return 0
	export RT=$BATS_FILE_TMPDIR/fleet
	mkdir -p "$RT"
	"$MKHOSTS" up "$RT"
	"$MKHOSTS" add "$RT" gpu01
}

teardown_file() {
	[ -n "${RT:-}" ] && [ -d "$RT" ] && "$MKHOSTS" down "$RT"
	return 0
}

need_fleet() {
	[ -n "${RT:-}" ] && [ -f "$RT/ssh_config" ] || skip "needs root, iproute2 and openssh-server (fleet hosts)"
	export GPUSLATE_SSH="ssh -F $RT/ssh_config"
}

# The fleet asks once, after every host's plan (issue 27 item 5): what it
# shows is all the operator confirms. A host whose plan stops a supervised
# program through supervisorctl (which, with stopasgroup, ends every process
# of the program's group: here a sidecar that holds no GPU and is no target)
# is shown as "would stop PID (gs-holder)" only; the act then runs
# `supervisorctl stop llm:llm` and the sidecar is gone, never shown. The
# plan line must say how the host will stop it (the program, the unit, the
# container), as the single-host plan's ACTION column does.
@test "review27: fleet plan-before-question names a supervised program's stop, not only the PID" {
	need_fleet
	command -v supervisord >/dev/null || skip "supervisord is not installed"
	local d=$BATS_TEST_TMPDIR h=$RT/hosts/gpu01
	cat >"$d/llm.sh" <<-EOF
		sleep 600 &
		echo \$! >$d/sidecar.pid
		exec $GS_HOLDER --gpu 0 --mib 1024 --ready-file $d/llm.ready -- python3 serve.py
	EOF
	sd_conf "[program:llm]
command=/bin/sh $d/llm.sh
stopasgroup=true
autorestart=true
startsecs=0
stopwaitsecs=5"
	# Started through the host's sshd: the host's gpuslate reads a
	# supervisor only in its own mount namespace (ip netns exec makes one).
	$GPUSLATE_SSH gpu01 "setsid supervisord -c $SD_CONF </dev/null >$d/supervisord.out 2>&1 &"
	wait_for 20 test -s "$d/supervisord.pid"
	track "$(cat "$d/supervisord.pid")" sup
	wait_for 20 test -f "$d/llm.ready"
	llm=$(ready_values "$d/llm.ready" pid)
	side=$(cat "$d/sidecar.pid")
	track "$side"
	# The host's own plan says it: a supervisorctl stop of llm:llm.
	run --separate-stderr env -u GPUSLATE_NVML_LIB "$GPUSLATE_BIN" -w gpu01 reclaim -n -v
	echo "$output"
	[[ "$output" == *"llm:llm"* ]]
	run script -qec "env -u GPUSLATE_NVML_LIB $GPUSLATE_BIN -w gpu01 reclaim --grace 1" /dev/null <<<"y"
	echo "$output"
	shown=${output%%Proceed\?*}
	[[ "$output" == *"Proceed?"* ]]
	# What the operator confirmed names the program that will be stopped.
	[[ "$shown" == *"llm"* ]]
}

# Wrong kill. The fleet's plan line for a host is cut at 4 * GS_LINE_BYTES
# (800 bytes, src/fleet/merge.c: gs_text_dup in judge_document) and ends in
# "...", but the host is then held to --expect with every target of its
# plan. A holder whose process group has 80 workers: the line shows some 50
# of them, the operator answers y, and all 81 are stopped. Whatever is
# stopped must have been shown before the question.
@test "review27: the fleet stops no process that its plan line before the question did not show" {
	need_fleet
	local h=$RT/hosts/gpu01 d=$BATS_TEST_TMPDIR
	cat >"$d/grp.sh" <<-EOF
		for i in \$(seq 80); do sleep 600 & echo \$! >>$d/workers; done
		exec $GS_HOLDER --gpu 0 --mib 512 --ready-file $d/grp.ready -- python3 train.py
	EOF
	( set -a; . "$h/env"; set +a; exec setsid sh "$d/grp.sh" ) </dev/null >/dev/null 2>&1 3>&- &
	wait_for 30 test -f "$d/grp.ready"
	p=$(ready_values "$d/grp.ready" pid)
	track "$p"
	while read -r w; do track "$w"; done <"$d/workers"
	run script -qec "env -u GPUSLATE_NVML_LIB $GPUSLATE_BIN -w gpu01 reclaim --grace 1; echo rc=\$?" /dev/null <<<"y"
	echo "$output"
	[[ "$output" == *"Proceed?"* ]]
	shown=${output%%Proceed\?*}
	# The reclaim verified before it ended: each worker gone was shown.
	unshown_dead=0
	while read -r w; do
		if dead "$w" && ! grep -Eq "^gpu01: +$w .* sleep\$" <<<"${shown//$'\r'/}"; then
			echo "stopped, never shown: $w"
			unshown_dead=$((unshown_dead + 1))
		fi
	done <"$d/workers"
	[ "$unshown_dead" = 0 ]
}

# Issue 27 item 3: "the confirmation never asks about a process whose
# command line the user cannot see in full somewhere". The fleet's one
# question follows lines of "PID (comm)" only: comm is the kernel's 15
# characters (here "gs-holder"); which model, which script, is not said
# anywhere before "Proceed?" (only -v shows the hosts' own plans).
@test "review27: the fleet's question shows the command line of what it will stop" {
	need_fleet
	local h=$RT/hosts/gpu01
	( set -a; . "$h/env"; set +a; exec "$GS_HOLDER" --gpu 0 --mib 512 --ready-file "$BATS_TEST_TMPDIR/m.ready" \
		-- python3 serve.py --model llama-70b ) </dev/null >/dev/null 2>&1 3>&- &
	wait_for 20 test -f "$BATS_TEST_TMPDIR/m.ready"
	p=$(ready_values "$BATS_TEST_TMPDIR/m.ready" pid)
	track "$p"
	run script -qec "env -u GPUSLATE_NVML_LIB $GPUSLATE_BIN -w gpu01 reclaim --grace 1" /dev/null <<<"n"
	echo "$output"
	[[ "$output" == *"Proceed?"* ]]
	shown=${output%%Proceed\?*}
	[[ "$shown" == *"$p"* ]]
	[[ "$shown" == *"serve.py --model llama-70b"* ]]
	assert_alive "$p"
}

# The act's --expect=PID:START,... is one remote word, and a remote word is
# at most GS_REMOTE_WORD_MAX (4096) bytes, while --expect itself takes up to
# GS_EXPECT_MAX (4096) processes and the fleet marks only a host above that
# as "too many targets to confirm". A host with a few hundred targets (a
# holder whose process group has 400 workers) makes the whole fleet stop
# after the plans, before the question, with a usage error (exit 2): no host
# can be reclaimed at all on a terminal.
@test "review27: a host with 400 targets can be confirmed and reclaimed through the fleet's question" {
	need_fleet
	local h=$RT/hosts/gpu01 d=$BATS_TEST_TMPDIR
	cat >"$d/big.sh" <<-EOF
		for i in \$(seq 400); do sleep 600 & echo \$! >>$d/workers; done
		exec $GS_HOLDER --gpu 0 --mib 512 --ready-file $d/big.ready -- python3 big.py
	EOF
	( set -a; . "$h/env"; set +a; exec setsid sh "$d/big.sh" ) </dev/null >/dev/null 2>&1 3>&- &
	wait_for 30 test -f "$d/big.ready"
	p=$(ready_values "$d/big.ready" pid)
	track "$p"
	while read -r w; do track "$w"; done <"$d/workers"
	[ "$(wc -l <"$d/workers")" = 400 ]
	run script -qec "env -u GPUSLATE_NVML_LIB $GPUSLATE_BIN -w gpu01 reclaim --grace 1 --timeout 30; echo rc=\$?" /dev/null <<<"y"
	echo "${output:0:3000}"
	[[ "$output" == *"Proceed?"* ]]
	[[ "$output" == *"rc=0"* ]]
	wait_for 10 dead "$p"
}

#!/usr/bin/env bats
# Fleet mode (gpuslate -w) against real OpenSSH: hosts are network
# namespaces on this machine, each with its own sshd and simulated GPUs
# (tests/fleet/mkhosts.sh). No mock of ssh anywhere. The Proxmox host pve1
# runs a real LXC container (tests/world), reached with pct exec and
# lxc-attach.
#
# Needs root, iproute2, openssh-server, jq (lxc and mmdebstrap for the
# container tests); GPUSLATE_BIN and GPUSLATE_BUILD as set by `make test-e2e`.

bats_require_minimum_version 1.5.0

MKHOSTS=$BATS_TEST_DIRNAME/../fleet/mkhosts.sh
# shellcheck source=../world/world.bash
. "$BATS_TEST_DIRNAME/../world/world.bash"
# What world.bash starts in a test is ended by this file's teardown.
track() { echo "$1" >>"$T/holders"; }

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# wait_for SECONDS CMD...: poll a condition with a bound, never a fixed sleep.
wait_for() {
	local deadline=$(($(now_ms) + $1 * 1000))
	shift
	until "$@"; do
		if [ "$(now_ms)" -ge "$deadline" ]; then
			echo "wait_for: gave up on: $*" >&2
			return 1
		fi
		sleep 0.01
	done
}

pid_gone() { [ ! -e "/proc/$1" ] || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# start_holder ENVFILE ID [gs-holder options]: a GPU holder on a simulated
# host; prints nothing, leaves its pid in $T/ID.ready (pid=...).
start_holder() {
	local envfile=$1 id=$2
	shift 2
	rm -f "$T/$id.ready"
	(
		set -a
		# shellcheck disable=SC1090
		. "$envfile"
		set +a
		exec "$GPUSLATE_BUILD/fakes/gs-holder" --ready-file "$T/$id.ready" "$@"
	) </dev/null >/dev/null 2>&1 3>&- &
	wait_for 10 test -s "$T/$id.ready"
	sed -n 's/^\(pid\|child\|worker\)=//p' "$T/$id.ready" >>"$T/holders"
}

holder_pid() { sed -n 's/^pid=//p' "$T/$1.ready"; }

# Eight hosts' gpuslates (ASan builds) and their NVML helpers share this
# machine's cores with the suite: an NVML call of the simulated driver may
# take longer than the 5 s default under that load, which would read as a
# hung driver. Every command but restore (which reads no GPU) gets more.
gs() {
	case " $* " in
	*" restore "*) "$GPUSLATE_BIN" "$@" ;;
	*) "$GPUSLATE_BIN" --nvml-timeout 30s "$@" ;;
	esac
}

setup_file() {
	# Network namespaces need root; the suite needs the real OpenSSH server.
	if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || [ ! -x /usr/sbin/sshd ] || ! command -v jq >/dev/null; then
		skip "needs root, iproute2, openssh-server and jq"
	fi
	export T=$BATS_FILE_TMPDIR/fleet
	mkdir -p "$T/home" "$T/tools"
	"$MKHOSTS" up "$T"
	for i in 01 02 03 04 05 06 07 08; do
		"$MKHOSTS" add "$T" "gpu$i"
	done
	"$MKHOSTS" add "$T" down01 --no-sshd
	"$MKHOSTS" add "$T" badkey01 --wrong-key
	"$MKHOSTS" add "$T" hang01
	"$MKHOSTS" add "$T" pve1
	"$MKHOSTS" blackhole "$T" drop01
	# hang01's NVML never returns from init: its gpuslate hangs.
	echo "hang nvmlInit_v2" >"$T/hosts/hang01/nvml/inject"

	# Proxmox: a real LXC container on pve1 (tests/world: the Proxmox
	# layout, systemd inside, its own simulated GPUs bind-mounted), started
	# in pve1's network namespace so that pve1's lxc-attach reaches it.
	# pve1 keeps its containers under $T/lxc (its lxc.lxcpath): its
	# lxc-attach says so, and its pct is the test world's (lxc-attach
	# underneath, as Proxmox's pct exec), logging each call.
	: >"$T/pct.log"
	WORLD_CT_REASON=$(world_lxc_reason)
	if [ -z "$WORLD_CT_REASON" ]; then
		export WORLD_LXC_NETNS=gsf$(sed -n 's/^RUN=//p' "$T/net")-$(cut -d. -f4 "$T/hosts/pve1/addr")
		sh "$BATS_TEST_DIRNAME/../fakes/mkhost.sh" "$T/ct/host" 2
		GS_NVML=$GPUSLATE_BUILD/fakes/libnvidia-ml.so.1 FAKE_NVML_STATE=$T/ct/host/nvml \
			GPUSLATE_DEV_ROOT=$T/ct/host/dev GPUSLATE_NVIDIA_PROCFS=$T/ct/host/driver world_sim_env "$T/ct"
		world_lxc_start "$T/lxc" "$T/ct"
		export WORLD_CT WORLD_LXC_PATH
		cat >"$T/hosts/pve1/bin/pct" <<-EOF
			#!/bin/sh
			printf '%s\n' "pct \$*" >>"$T/pct.log"
			PCT_LXC_PATH=$T/lxc exec $GS_WORLD/pct "\$@"
		EOF
		cat >"$T/hosts/pve1/bin/lxc-attach" <<-EOF
			#!/bin/sh
			case " \$* " in *" -P "*) exec /usr/bin/lxc-attach "\$@" ;; esac
			exec /usr/bin/lxc-attach -P $T/lxc "\$@"
		EOF
		chmod +x "$T/hosts/pve1/bin/pct" "$T/hosts/pve1/bin/lxc-attach"
	fi
	export WORLD_CT_REASON

	# Remote commands standing in for broken or instrumented gpuslates.
	cat >"$T/tools/pidwrap" <<-'EOF'
		#!/bin/sh
		# pidwrap PIDFILE CMD...: record our pid (exec keeps it), then run CMD.
		echo $$ >"$1"
		shift
		exec "$@"
	EOF
	cat >"$T/tools/argdump" <<-'EOF'
		#!/bin/sh
		# argdump FILE CMD...: the arguments CMD gets, NUL-separated, in FILE.
		out=$1
		shift
		printf '%s\0' "$@" >"$out"
		exec "$@"
	EOF
	cat >"$T/tools/concwrap" <<-'EOF'
		#!/bin/sh
		# concwrap DIR CMD...: how many run at once, seen at each start.
		d=$1
		shift
		: >"$d/run.$$"
		ls "$d" | grep -c '^run\.' >>"$d/seen"
		"$@"
		rc=$?
		rm -f "$d/run.$$"
		exit $rc
	EOF
	cat >"$T/tools/onhost" <<-EOF
		#!/bin/sh
		# onhost NAME CMD...: run CMD locally as host NAME would (exec= template).
		set -a
		. "$T/hosts/\$1/env"
		set +a
		shift
		exec "\$@"
	EOF
	cat >"$T/tools/garbage" <<-'EOF'
		#!/bin/sh
		printf 'Welcome to \033[31mgpu\033[0m!\n\001 this is not JSON\n'
	EOF
	cat >"$T/tools/oldgs" <<-'EOF'
		#!/bin/sh
		echo "gpuslate: unknown option '--remote'" >&2
		echo "Try 'gpuslate --help' for more information." >&2
		exit 2
	EOF
	cat >"$T/tools/twolines" <<-'EOF'
		#!/bin/sh
		# twolines CMD...: two lines on stderr, then CMD.
		printf 'first line\nsecond\tline\n' >&2
		exec "$@"
	EOF
	cat >"$T/tools/newgs" <<-'EOF'
		#!/bin/sh
		echo '{"schema_version": 2, "command": "status", "hosts": []}'
	EOF
	chmod +x "$T"/tools/*

	cat >"$T/inventory" <<-EOF
		[lab]
		gpu[01-02]
		[pve]
		ct129  via=pve1 pct=${WORLD_CT:-129}
		[lxc]
		ctlxc  via=pve1 lxc=${WORLD_CT:-129}
		[odd]
		hang01 remote-cmd="$T/tools/pidwrap $T/hang.pid gpuslate"
	EOF
	: >"$T/holders"
}

teardown_file() {
	local pid
	[ -n "${T:-}" ] || return 0
	world_teardown_file
	if [ -f "$T/holders" ]; then
		while read -r pid; do
			[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = gs-holder ] && kill -KILL "$pid" 2>/dev/null
		done <"$T/holders"
	fi
	"$MKHOSTS" down "$T"
}

setup() {
	export T=$BATS_FILE_TMPDIR/fleet
	export HOME=$T/home
	export GPUSLATE_SSH="ssh -F $T/ssh_config"
	export GPUSLATE_NO_PROGRESS=1
	unset GPUSLATE_NVML_LIB GPUSLATE_DEV_ROOT FAKE_NVML_STATE
}

# Each test leaves no holder behind.
teardown() {
	local pid
	while read -r pid; do
		if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = gs-holder ]; then
			kill -KILL "$pid" 2>/dev/null || true
			wait_for 5 pid_gone "$pid"
		fi
	done <"$T/holders"
	: >"$T/holders"
}

# Holders on four of the eight hosts, each a different case.
start_eight() {
	start_holder "$T/hosts/gpu03/env" h3 --gpu 0 --mib 1024
	start_holder "$T/hosts/gpu05/env" h5 --gpu 1 --mib 2048 --ignore-term
	start_holder "$T/hosts/gpu06/env" h6 --gpu 0 --gpu 1 --mib 512 --workers 2
	start_holder "$T/hosts/gpu08/env" h8 --gpu 1 --mib 4096
}

@test "status on 8 hosts: identical results folded, the others per host, exit 0; wait --timeout 0 is the busy check" {
	start_eight
	# As on one host: status exits 0 when it could read the GPUs, whatever
	# holds them (issue 15); the report says which are busy.
	run -0 gs -w 'gpu[01-08]' status
	echo "$output"
	[ "${lines[0]}" = "gpu[01-02,04,07]: clean, 2 GPUs, 0 MiB" ]
	[[ "$output" == *"gpu03: not clean, 2 GPUs, 1024 MiB: GPU 0 held by $(holder_pid h3) (gs-holder)"* ]]
	[[ "$output" == *"gpu05: not clean, 2 GPUs, 2048 MiB: GPU 1 held by $(holder_pid h5) (gs-holder)"* ]]
	[[ "$output" == *"gpu06: not clean, 2 GPUs, 1024 MiB: GPU 0 held by"* ]]
	[[ "$output" == *"gpu08: not clean, 2 GPUs, 4096 MiB: GPU 1 held by $(holder_pid h8) (gs-holder)"* ]]
	[ "${lines[-1]}" = "8 hosts: 4 clean, 4 not clean, 0 failed" ]
	run -0 gs -w 'gpu[01-08]' --json status
	jq -e '.exit_status == 0 and .summary.not_clean == 4 and .summary.busy == 4' <<<"$output"
	# The question "are they free?" is wait's, on one host and on many.
	run -1 gs -w 'gpu[01-08]' wait --timeout 0
	[ "${lines[-1]}" = "8 hosts: 4 clean, 4 not clean, 0 failed" ]
	run -0 gs -w 'gpu[01-02,04,07]' wait --timeout 0
}

@test "reclaim -y on 8 hosts: every holder stopped, one folded line, exit 0" {
	start_eight
	run -0 gs -w 'gpu[01-08]' reclaim -y --grace 1
	echo "$output"
	# Hosts where something was stopped say what; the idle ones fold.
	[ "${lines[0]}" = "gpu[01-02,04,07]: clean, 2 GPUs, 0 MiB" ]
	[ "${lines[1]}" = "gpu[03,05,08]: clean, 2 GPUs, 0 MiB, stopped 1 process (gs-holder)" ]
	[ "${lines[2]}" = "gpu06: clean, 2 GPUs, 0 MiB, stopped 3 processes (gs-holder)" ]
	[ "${lines[-1]}" = "8 hosts: 8 clean, 0 not clean, 0 failed" ]
	while read -r pid; do
		pid_gone "$pid"
	done <"$T/holders"
	run -0 gs -w 'gpu[01-08]' status
	[ "${lines[0]}" = "gpu[01-08]: clean, 2 GPUs, 0 MiB" ]
}

@test "--json: one document with every host's own report and a summary" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 0 --mib 1024
	run -4 --separate-stderr gs -w gpu01,gpu02,down01 --json status
	echo "$output"
	jq -e '.schema_version == 1 and .command == "status"' <<<"$output"
	jq -e '.summary == {"hosts": 3, "clean": 1, "not_clean": 1, "dry_run": 0, "failed": 1, "selection_gone": 0, "no_match": 0, "busy": 1}' <<<"$output"
	jq -e '.exit_status == 4' <<<"$output"
	jq -e '.hosts[0] | .host == "gpu01" and .ok and .verdict == "clean" and .report.schema_version == 1' <<<"$output"
	jq -e --argjson p "$(holder_pid h2)" \
		'.hosts[1] | .verdict == "not-clean" and (.report.processes | map(.pid) | index($p)) != null' <<<"$output"
	jq -e '.hosts[2] | .host == "down01" and .ok == false and .failure == "unreachable" and .report == null' <<<"$output"
}

@test "reclaim: no terminal and no -y refuses (exit 5) before contacting any host" {
	start_holder "$T/hosts/gpu01/env" h1 --gpu 0
	: >"$T/pct.log"
	run -5 gs -w gpu01,ct129 --hosts-file "$T/inventory" reclaim </dev/null
	[[ "$output" == *"refusing to reclaim on 2 hosts without confirmation: no terminal (use -y)"* ]]
	[ -e "/proc/$(holder_pid h1)" ]
	[ ! -s "$T/pct.log" ]
}

@test "reclaim on a terminal: every host's plan first, folded, then one question; 'n' stops nothing" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 1 --mib 1024
	p=$(holder_pid h2)
	run -5 script -qec "$GPUSLATE_BIN -w 'gpu[01-03]' reclaim --grace 1" /dev/null <<<"n"
	echo "$output"
	# The plans, folded as the fleet's results are, before the question.
	[[ "$output" == *"gpu[01,03]: dry run, 2 GPUs, 0 MiB: nothing to stop"*"gpu02: dry run, 2 GPUs, 1024 MiB: would stop $p (gs-holder)"*"Proceed? [y/N] "* ]]
	[[ "$output" == *"not confirmed: nothing was stopped on any host"* ]]
	[ "$(grep -c 'Proceed?' <<<"$output")" = 1 ]
	[ -e "/proc/$p" ]
}

@test "reclaim on a terminal, 'y': each host acts on the plan shown; the line says what was stopped" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 1 --mib 1024
	p=$(holder_pid h2)
	run -0 script -qec "$GPUSLATE_BIN -w 'gpu[01-03]' reclaim --grace 1" /dev/null <<<"y"
	echo "$output"
	[[ "$output" == *"would stop $p (gs-holder)"*"Proceed? [y/N] "*"gpu[01,03]: clean, 2 GPUs, 0 MiB"* ]]
	[[ "$output" == *"gpu02: clean, 2 GPUs, 0 MiB, stopped 1 process (gs-holder)"* ]]
	[[ "$output" == *"3 hosts: 3 clean, 0 not clean, 0 failed"* ]]
	wait_for 5 pid_gone "$p"
}

@test "reclaim on a terminal: a host that gained a holder between its plan and the stop stops nothing and says why" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 1 --mib 1024
	p=$(holder_pid h2)
	mkfifo "$T/answer"
	exec 5<>"$T/answer"
	script -qec "$GPUSLATE_BIN -w gpu01,gpu02 reclaim --grace 1; echo rc=\$?" /dev/null <&5 >"$T/term.out" 2>&1 &
	sp=$!
	# The question is asked once every plan is in: then gpu01 gets a new
	# holder, after its plan ("nothing to stop") was shown.
	wait_for 30 grep -q 'Proceed?' "$T/term.out"
	start_holder "$T/hosts/gpu01/env" h1 --gpu 0 --mib 512
	n=$(holder_pid h1)
	echo y >&5
	wait "$sp"
	exec 5>&-
	cat "$T/term.out"
	out=$(tr -d '\r' <"$T/term.out")
	[[ "$out" == *"gpu01: dry run, 2 GPUs, 0 MiB: nothing to stop"*"Proceed?"* ]]
	[[ "$out" == *"gpu01: plan changed, 2 GPUs, 512 MiB: not the confirmed plan: $n (gs-holder) is a new target; nothing was stopped"* ]]
	[[ "$out" == *"gpu02: clean, 2 GPUs, 0 MiB, stopped 1 process (gs-holder)"* ]]
	[[ "$out" == *"2 hosts: 1 clean, 1 not clean, 0 failed"*"rc=1"* ]]
	[ -e "/proc/$n" ]
	wait_for 5 pid_gone "$p"
}

@test "--expect on one host: junk is refused in one line and stops nothing; a new target is plan-changed (exit 10)" {
	start_holder "$T/hosts/gpu01/env" h1 --gpu 0 --mib 512
	p=$(holder_pid h1)
	st=$(cut -d' ' -f22 "/proc/$p/stat")
	onhost() { (set -a; . "$T/hosts/gpu01/env"; set +a; "$GPUSLATE_BIN" "$@"); }
	for junk in 12x "$p:" ":$st" "$p:$st," ",$p:$st" "0:1" "-1:5" "+$p:$st" "0$p:$st" "$p:$st,$p:$st" "4194305:1" \
		"$p:99999999999999999999" "$p :$st" "None" "none,$p:$st"; do
		run -2 --separate-stderr onhost reclaim -y --grace 1 --expect "$junk"
		echo "$junk: $stderr"
		[[ "$stderr" == "gpuslate: invalid --expect"* ]]
		[ "$(wc -l <<<"$stderr")" = 1 ]
		[ -z "$output" ]
		[ -e "/proc/$p" ]
	done
	run -2 --separate-stderr onhost reclaim -y --expect ""
	[ -e "/proc/$p" ]
	# Another process's identity, or none: the plan changed, nothing stopped.
	run -10 --separate-stderr onhost --json reclaim -y --grace 1 --expect none
	jq -e --argjson p "$p" '.verdict == "plan-changed" and .exit_status == 10 and (.plan.targets | map(.pid) == [$p])' <<<"$output"
	[[ "$stderr" == *"not the confirmed plan: $p (gs-holder) is a new target; nothing was stopped"* ]]
	run -10 onhost reclaim -y --grace 1 --expect "$p:$((st + 1))"
	[ -e "/proc/$p" ]
	# Shown with another action than the plan's now (a unit stop that
	# became a signal, or the other way): nothing stopped either.
	run -10 --separate-stderr onhost reclaim -y --grace 1 --expect "$p:$st:stop-unit"
	[[ "$stderr" == *"not the confirmed plan: $p (gs-holder) would be stopped with signal, not stop-unit; nothing was stopped"* ]]
	[ -e "/proc/$p" ]
	run -2 --separate-stderr onhost reclaim -y --grace 1 --expect "$p:$st:reboot"
	[ -e "/proc/$p" ]
	# -w cannot carry one list for every host.
	run -2 gs -w gpu01 reclaim -y --expect none
	[[ "$output" == *"--expect is set for each host by the fleet"* ]]
	# Its own identity (and action): stopped.
	run -0 onhost reclaim -y --grace 1 --expect "$p:$st:signal"
	wait_for 5 pid_gone "$p"
}

@test "reclaim --dry-run passes through: the plan per host, nothing stopped" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 1 --mib 1024
	run -0 gs -w 'gpu[01-02]' reclaim --dry-run
	echo "$output"
	[[ "$output" == *"gpu01: dry run, 2 GPUs, 0 MiB: nothing to stop"* ]]
	[[ "$output" == *"gpu02: dry run, 2 GPUs, 1024 MiB: would stop $(holder_pid h2) (gs-holder)"* ]]
	[ -e "/proc/$(holder_pid h2)" ]
}

@test "a host whose sshd is down is unreachable (connection refused); the rest report" {
	run -4 gs -w gpu01,down01 status
	echo "$output"
	[ "${lines[0]}" = "gpu01: clean, 2 GPUs, 0 MiB" ]
	[[ "${lines[1]}" == "down01: unreachable: ssh: connect to host "*"Connection refused" ]]
	[ "${lines[2]}" = "2 hosts: 1 clean, 0 not clean, 1 failed" ]
}

@test "a host that drops packets: unreachable after --connect-timeout" {
	local t0=$(now_ms)
	run -4 gs -w gpu01,drop01 --connect-timeout 1 status
	echo "$output"
	[[ "$output" == *"drop01: unreachable: ssh: connect to host "*"timed out"* ]]
	[[ "$output" == *"gpu01: clean"* ]]
	[ $(($(now_ms) - t0)) -lt 6000 ]
}

@test "a host whose command hangs: timed out at --command-timeout, remote gpuslate ended" {
	rm -f "$T/hang.pid"
	local t0=$(now_ms)
	run -4 gs -w gpu01,hang01 --hosts-file "$T/inventory" --command-timeout 2 status
	echo "$output"
	[[ "$output" == *"hang01: timed out after 2.0 s; the remote command was ended"* ]]
	[[ "$output" == *"gpu01: clean, 2 GPUs, 0 MiB"* ]]
	[ $(($(now_ms) - t0)) -lt 8000 ]
	# The remote gpuslate (pidwrap execs it: same pid) is gone too.
	[ -s "$T/hang.pid" ]
	wait_for 5 pid_gone "$(cat "$T/hang.pid")"
}

@test "Ctrl-C: hosts not started are reported, running remote commands are ended" {
	rm -f "$T/hang.pid"
	"$GPUSLATE_BIN" -w hang01,gpu01 -f 1 --hosts-file "$T/inventory" status >"$T/int.out" 2>&1 &
	local p=$!
	wait_for 10 test -s "$T/hang.pid"
	kill -INT "$p"
	local rc=0
	wait "$p" || rc=$?
	cat "$T/int.out"
	[ "$rc" -eq 4 ]
	grep -qx "hang01: interrupted; the remote command was ended" "$T/int.out"
	grep -qx "gpu01: not started: interrupted" "$T/int.out"
	grep -q "(interrupted)$" "$T/int.out"
	wait_for 5 pid_gone "$(cat "$T/hang.pid")"
}

@test "a host with a wrong key: authentication refused" {
	run -4 gs -w badkey01 status
	echo "$output"
	[[ "${lines[0]}" == "badkey01: authentication refused: "*"Permission denied (publickey)"* ]]
}

@test "a host without gpuslate: missing" {
	run -4 gs -w gpu01 --remote-cmd /nonexistent/gpuslate status
	echo "$output"
	[[ "${lines[0]}" == "gpu01: gpuslate missing on the host: "*"/nonexistent/gpuslate"* ]]
}

@test "a host that prints garbage: bad output, quoted and sanitized" {
	run -4 gs -w gpu01 --remote-cmd "$T/tools/garbage" status
	echo "$output"
	[[ "${lines[0]}" == 'gpu01: bad output (exit 0, '*'starting "Welcome to \x1b[31mgpu\x1b[0m!\x0a\x01 this is not JSON'* ]]
	# No raw escape or control byte reaches the terminal.
	! printf '%s' "$output" | grep -q $'\x1b'
}

@test "an old gpuslate without --remote, and one that speaks another schema, are refused clearly" {
	run -4 gs -w gpu01 --remote-cmd "$T/tools/oldgs" status
	[ "${lines[0]}" = "gpu01: gpuslate on the host is too old (no --remote mode): install this version there" ]
	run -4 gs -w gpu01 --remote-cmd "$T/tools/newgs" status
	[ "${lines[0]}" = "gpu01: gpuslate on gpu01 speaks schema 2; this gpuslate understands 1" ]
}

@test "hostile unit names and patterns arrive as one argument each" {
	local unit="my unit's \"x\" \$HOME; touch $T/pwned \`id\`" match='^(python3|a b)$; $(touch '"$T"'/pwned)'
	rm -f "$T/argv.bin" "$T/pwned"
	# No such unit there: the host says so (exit 7), by name.
	run -7 gs -w gpu01 --remote-cmd "$T/tools/argdump $T/argv.bin gpuslate" reclaim --dry-run \
		--unit "$unit" --match "$match" --reason "drain: it's \$x"
	echo "$output"
	local -a got
	mapfile -d '' got <"$T/argv.bin"
	printf '[%s]\n' "${got[@]}"
	[ "${got[0]}" = gpuslate ]
	[ "${got[1]}" = --remote ]
	[[ " ${got[*]} " == *" --unit=$unit "* ]]
	[[ " ${got[*]} " == *" --match=$match "* ]]
	[[ " ${got[*]} " == *" --reason=drain: it's \$x "* ]]
	[ "${got[-1]}" = reclaim ]
	[ ! -e "$T/pwned" ]
}

@test "hostile host names and line breaks are refused before anything runs" {
	rm -f "$T/pwned"
	run -2 gs -w "gpu01;touch $T/pwned" status
	[[ "$output" == *"invalid character ';'"* ]]
	run -2 gs -w 'gpu01`id`' status
	run -2 gs -w "\$(touch $T/pwned)" status
	run -2 gs -w gpu01 reclaim --dry-run --unit $'a\nb'
	[[ "$output" == *"line break"* ]]
	[ ! -e "$T/pwned" ]
}

# ct_holder ID [gs-holder options]: a unit of the container's systemd
# holding its simulated GPUs; its pid (the container's number, which the
# gpuslate inside reports) in $T/ID.ready.
ct_holder() {
	local id=$1
	shift
	[ -z "$WORLD_CT_REASON" ] || skip "$WORLD_CT_REASON"
	rm -f "$T/ct/$id.ready"
	FAKE_NVML_STATE=$T/ct/host/nvml GPUSLATE_DEV_ROOT=$T/ct/host/dev \
		world_lxc_unit "$id" -- "$GPUSLATE_BUILD/fakes/gs-holder" --ready-file "$T/ct/$id.ready" "$@"
	wait_for 10 test -s "$T/ct/$id.ready"
	cp "$T/ct/$id.ready" "$T/$id.ready"
}

@test "Proxmox: ssh pve1 -- pct exec VMID -- gpuslate, status and reclaim inside a real container" {
	ct_holder ct --gpu 1 --mib 3000
	: >"$T/pct.log"
	# Plain, not gs(): the test reads the exact command forwarded.
	run "$GPUSLATE_BIN" -w ct129,gpu01 --hosts-file "$T/inventory" status
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == *"ct129: not clean, 2 GPUs, 3000 MiB: GPU 1 held by $(holder_pid ct) (gs-holder)"* ]]
	grep -q "^pct exec $WORLD_CT -- gpuslate --remote status$" "$T/pct.log"
	run -0 gs -w @pve --hosts-file "$T/inventory" reclaim -y --grace 1
	echo "$output"
	[ "${lines[0]}" = "ct129: clean, 2 GPUs, 0 MiB, stopped 1 process (gs-holder)" ]
	# The gpuslate inside stopped the unit with the container's systemctl.
	[ "$(ct_exec systemctl show -p ActiveState --value ct.service)" = inactive ]
}

@test "LXC: ssh pve1 -- lxc-attach -n VMID -- gpuslate, against the same container" {
	ct_holder lx --gpu 0 --mib 700
	run -0 gs -w ctlxc --hosts-file "$T/inventory" --json status
	echo "$output"
	jq -e --argjson p "$(holder_pid lx)" \
		'.hosts[0] | .host == "ctlxc" and .verdict == "not-clean" and (.report.processes | map(.pid) | index($p)) != null' <<<"$output"
	jq -e '.hosts[0].report.processes[0].owner | .kind == "unit" and .name == "lx.service"' <<<"$output"
	run gs -w ctlxc --hosts-file "$T/inventory" reclaim -y
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "ctlxc: clean, 2 GPUs, 0 MiB, stopped 1 process (gs-holder)" ]
	[ "$(ct_exec systemctl show -p ActiveState --value lx.service)" = inactive ]
}

@test "host sources: -w - from stdin, -x, @group, inventory errors" {
	run -0 gs -w - status <<<$'gpu01\ngpu02  # a comment\n\ngpu03'
	[ "${lines[0]}" = "gpu[01-03]: clean, 2 GPUs, 0 MiB" ]
	run -0 gs -w 'gpu[01-08]' -x 'gpu[02-08]' status
	[ "${lines[0]}" = "gpu01: clean, 2 GPUs, 0 MiB" ]
	run -0 gs -w @lab --hosts-file "$T/inventory" status
	[ "${lines[0]}" = "gpu[01-02]: clean, 2 GPUs, 0 MiB" ]
	run -2 gs -w @lab status
	[[ "$output" == *"@lab"* ]]
	run -2 gs -w gpu01 --hosts-file "$T/no-such-file" status
	[[ "$output" == *"no-such-file"* ]]
	run -2 gs -w @nosuch --hosts-file "$T/inventory" status
	[[ "$output" == *"unknown group '@nosuch'"* ]]
	run -2 gs -w gpu01 -x gpu01 status
	[[ "$output" == *"no hosts to run on"* ]]
	run -0 gs -w gpu01 --csv status
	[ "${lines[0]}" = "gpu01: gpu_index,uuid,name,memory_used_mib,memory_reserved_mib,memory_total_mib,holders" ]
	# What scontrol show hostnames and pdsh take: the lower bound's width
	# (gpu[01-3]), empty elements, a duplicate (run once, first place).
	run -0 gs -w 'gpu[01-3],,gpu04,gpu01,' status
	[ "${lines[0]}" = "gpu[01-04]: clean, 2 GPUs, 0 MiB" ]
	[ "${lines[1]}" = "4 hosts: 4 clean, 0 not clean, 0 failed" ]
}

@test "sliding window: -f 2 runs 8 hosts, never more than 2 remote commands at once" {
	rm -rf "$T/conc"
	mkdir -p "$T/conc"
	run -0 gs -w 'gpu[01-08]' -f 2 --remote-cmd "$T/tools/concwrap $T/conc gpuslate" --json status
	jq -e '.summary.clean == 8' <<<"$output"
	cat "$T/conc/seen"
	[ "$(wc -l <"$T/conc/seen")" -eq 8 ]
	[ "$(sort -n "$T/conc/seen" | tail -1)" -le 2 ]
}

@test "wait on a fleet: clean hosts pass, a held GPU is not clean after --timeout" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 0 --mib 1024
	run -1 gs -w 'gpu[01-03]' wait --timeout 1
	echo "$output"
	[[ "$output" == *"gpu[01,03]: clean, 2 GPUs, 0 MiB"* ]]
	[[ "$output" == *"gpu02: not clean, 2 GPUs, 1024 MiB: GPU 0 held by $(holder_pid h2) (gs-holder)"* ]]
}

@test "exec template (pdsh's exec module): %h replaced, remote argv appended as words, no ssh" {
	printf 'gpu04 exec="%s %%h"\n' "$T/tools/onhost" >"$T/inventory.exec"
	start_holder "$T/hosts/gpu04/env" h4 --gpu 1 --mib 512
	run -0 env GPUSLATE_SSH=/nonexistent/ssh "$GPUSLATE_BIN" -w gpu04 --hosts-file "$T/inventory.exec" status
	echo "$output"
	[ "${lines[0]}" = "gpu04: not clean, 2 GPUs, 512 MiB: GPU 1 held by $(holder_pid h4) (gs-holder)" ]
}

# ---- the seed's verification step, fleet-wide (clush/dshbak style) ----

@test "status --query-gpu on a fleet: 'HOST: ' lines in host-list order, failures on stderr, exit 4" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 0 --mib 1024
	run -4 --separate-stderr gs -w gpu02,gpu01,down01 status --query-gpu=index,memory.used --format=csv,noheader
	echo "$output"
	echo "$stderr"
	[ "$output" = "gpu02: 0, 1024 MiB
gpu02: 1, 0 MiB
gpu01: 0, 0 MiB
gpu01: 1, 0 MiB" ]
	[ "$(grep -c . <<<"$stderr")" = 1 ]
	[[ "$stderr" == "gpuslate: down01: unreachable: "* ]]

	# With a header, every host's header line is its own (as clush shows it);
	# all hosts answered, so a fleet status exits 0 though a GPU is held.
	run -0 --separate-stderr gs -w 'gpu[01-02]' status --query-gpu=index,memory.used --format=csv
	[ "${lines[0]}" = "gpu01: index, memory.used [MiB]" ]
	[ "${lines[3]}" = "gpu02: index, memory.used [MiB]" ]
	[ "${lines[4]}" = "gpu02: 0, 1024 MiB" ]
	[ -z "$stderr" ]
}

@test "status --query-compute-apps and --csv on a fleet: each line prefixed; --format prometheus: one exposition with host labels" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 1 --mib 2048
	p=$(holder_pid h2)
	run -0 --separate-stderr gs -w gpu01,gpu02 status --query-compute-apps=pid,used_memory --format=csv,noheader
	[ "$output" = "gpu02: $p, 2048 MiB" ]
	run -0 --separate-stderr gs -w gpu01,gpu02 status --csv
	[ "${lines[0]}" = "gpu01: gpu_index,uuid,name,memory_used_mib,memory_reserved_mib,memory_total_mib,holders" ]
	run -0 --separate-stderr gs -w gpu01,gpu02 status --csv=processes
	[ "${lines[0]}" = "gpu01: pid,alive,user,name,comm,command,gpus,memory_mib,role,owner_kind,owner_name,owner_unit" ]
	grep -q "^gpu02: $p,true," <<<"$output"
	# Prometheus: one exposition, a host label on every sample, read by
	# the client library's own parser (a collector's reading of it).
	run -4 --separate-stderr gs -w gpu01,gpu02,down01 status --format prometheus
	echo "$output"
	[ "$(grep -c '^# TYPE gpuslate_up gauge$' <<<"$output")" = 1 ]
	[ "$(grep -c '^# HELP gpuslate_gpu_memory_used_bytes ' <<<"$output")" = 1 ]
	! grep -q '^gpu0[12]: ' <<<"$output"
	[[ "$stderr" == *"down01: unreachable"* ]]
	printf '%s\n' "$output" >"$T/prom.txt"
	# Debian's python3-prometheus-client (tools/install-deps test).
	/usr/bin/python3 - "$T/prom.txt" <<-'PY'
		import sys
		from prometheus_client.parser import text_string_to_metric_families
		text = open(sys.argv[1]).read()
		fams = {f.name: f for f in text_string_to_metric_families(text)}
		for f in fams.values():
		    for s in f.samples:
		        assert "host" in s.labels, s
		up = {s.labels["host"]: s.value for s in fams["gpuslate_up"].samples}
		assert up == {"gpu01": 1, "gpu02": 1, "down01": 0}, up
		used = {(s.labels["host"], s.labels["gpu"]): s.value for s in fams["gpuslate_gpu_memory_used_bytes"].samples}
		assert used == {("gpu01", "0"): 0, ("gpu01", "1"): 0, ("gpu02", "0"): 0, ("gpu02", "1"): 2147483648}, used
		assert fams["gpuslate_gpu_memory_used_bytes"].type == "gauge"
		held = [s for s in fams["gpuslate_gpu_holders"].samples
		        if s.labels["host"] == "gpu02" and s.labels["role"] == "compute" and s.labels["gpu"] == "1"]
		assert len(held) == 1 and held[0].value == 1, held
	PY
	# A bad field is refused before any host is contacted.
	run -2 --separate-stderr gs -w gpu01,down01 status --query-gpu=index,bogus --format=csv
	[[ $stderr == 'gpuslate: Field "bogus" is not a valid field to query. Valid fields: index, '*'memory.free' ]]
}

@test "-v on a fleet dry run and reclaim: each host's full plan and report, then the merged view" {
	start_holder "$T/hosts/gpu02/env" h2 --gpu 1 --mib 1024
	p=$(holder_pid h2)
	run -0 gs -v -w gpu01,gpu02 reclaim --dry-run
	echo "$output"
	grep -q '^gpu01: Nothing to stop' <<<"$output"
	grep -q '^gpu02: Will stop:' <<<"$output"
	grep -Eq "^gpu02: +$p +[a-z]+ +gs-holder" <<<"$output"
	grep -q '^gpu02: Dry run: nothing was changed.' <<<"$output"
	[ "${lines[-1]}" = "2 hosts: 0 clean, 0 not clean, 0 failed, 2 dry run" ]
	[ -e "/proc/$p" ]

	run -0 gs -v -w gpu01,gpu02 reclaim -y --grace 1
	echo "$output"
	grep -Eq "^gpu02: +$p +gs-holder +signals TERM" <<<"$output"
	grep -q '^gpu02: Verdict: clean' <<<"$output"
	[ "${lines[-1]}" = "2 hosts: 2 clean, 0 not clean, 0 failed" ]
	wait_for 5 pid_gone "$p"
}

@test "--json: a host's stderr keeps its line breaks (JSON escapes, not \\x0a)" {
	run -0 --separate-stderr gs -w gpu01 --json --remote-cmd "$T/tools/twolines gpuslate" status
	jq -e '.hosts[0].stderr == "first line\nsecond\tline\n"' <<<"$output"
	! grep -q 'x0a' <<<"$output"
}

@test "GPUSLATE_FLEET_PRINT_ARGV: each host's command, one bracketed word at a time; nothing is contacted" {
	start_holder "$T/hosts/gpu01/env" h1 --gpu 0 --mib 512
	: >"$T/pct.log"
	run -0 --separate-stderr env GPUSLATE_FLEET_PRINT_ARGV=1 "$GPUSLATE_BIN" -w gpu01,ct129 \
		--hosts-file "$T/inventory" reclaim -y --unit "a b"
	echo "$output"
	[ "${#lines[@]}" = 2 ]
	[[ "${lines[0]}" == "gpu01: [ssh] [-F] [$T/ssh_config] [-o] [BatchMode=yes] [-o] [ConnectTimeout=10] [gpu01] [--] ['gpuslate' '--remote' '--unit=a b' "* ]]
	[[ "${lines[1]}" == "ct129: [ssh] "*" [pve1] [--] ['pct' 'exec' '${WORLD_CT:-129}' '--' 'gpuslate' '--remote' "* ]]
	# Not contacted: the holder lives, pct never ran, no confirmation asked.
	[ -e "/proc/$(holder_pid h1)" ]
	[ ! -s "$T/pct.log" ]
}

@test "--respawn-watch goes to the hosts only when given" {
	run -0 --separate-stderr env GPUSLATE_FLEET_PRINT_ARGV=1 "$GPUSLATE_BIN" -w gpu01 --hosts-file "$T/inventory" reclaim -y
	[[ "$output" != *respawn-watch* ]]
	run -0 --separate-stderr env GPUSLATE_FLEET_PRINT_ARGV=1 "$GPUSLATE_BIN" -w gpu01 --hosts-file "$T/inventory" \
		reclaim -y --respawn-watch 10s
	[[ "$output" == *"'--respawn-watch' '10'"* ]]
}

@test "restore over the fleet: -w @pve restore -y starts again the unit the fleet's reclaim stopped inside the CT" {
	ct_holder rs --gpu 0 --mib 1500
	# The container outlives each test: earlier tests' reclaims recorded
	# their units in its own /run/gpuslate.stopped.
	ct_exec rm -f /run/gpuslate.stopped
	run -0 gs -w @pve --hosts-file "$T/inventory" reclaim -y --grace 1
	[ "$(ct_exec systemctl show -p ActiveState --value rs.service)" = inactive ]
	# The same consent as reclaim: -y, or a terminal to say yes on.
	: >"$T/pct.log"
	run -5 gs -w @pve --hosts-file "$T/inventory" restore </dev/null
	[[ "$output" == *"refusing to restore on 1 host without confirmation: no terminal (use -y)"* ]]
	[ ! -s "$T/pct.log" ]
	run -0 gs -w @pve --hosts-file "$T/inventory" restore --dry-run
	echo "$output"
	[ "${lines[0]}" = "ct129: dry run: would start rs.service" ]
	run -0 gs -w @pve,gpu01 --hosts-file "$T/inventory" restore -y
	echo "$output"
	[ "${lines[0]}" = "ct129: restored: started rs.service" ]
	[ "${lines[1]}" = "gpu01: nothing to restore" ]
	[ "${lines[2]}" = "2 hosts: 2 restored, 0 not restored, 0 failed" ]
	grep -q "^pct exec $WORLD_CT -- gpuslate --remote --yes --timeout 60 restore$" "$T/pct.log"
	[ "$(ct_exec systemctl show -p ActiveState --value rs.service)" = active ]
	run -0 gs -w @pve --hosts-file "$T/inventory" --json restore -y
	echo "$output"
	jq -e '.command == "restore" and .exit_status == 0 and .hosts[0].verdict == "clean" and .hosts[0].report.verdict == "nothing-to-restore"' <<<"$output"
	# The holder the restored unit started must not outlive this test.
	ct_exec systemctl stop rs.service
}

# Shared setup for the end-to-end tests (bats). Each test gets a fresh
# simulated GPU host (tests/fakes/mkhost.sh, docs/testing.md) under
# $BATS_TEST_TMPDIR (or under $GS_HOST_BASE, a directory a file's containers
# share), its own lock file, a PATH with the test world's `pct`, and a
# record of every process it starts. The real service managers and container
# runtimes come from tests/world/world.bash. Teardown ends those processes by
# PID (never by name), after checking each one's start time so a recycled
# PID is never hit, and fails the test when one of them cannot be ended.
#
# Needs: GPUSLATE_BIN (the binary under test) and GPUSLATE_BUILD (the build
# directory with fakes/), as set by `make test-e2e`; bats >= 1.5, jq.

bats_require_minimum_version 1.5.0

: "${GPUSLATE_BIN:?GPUSLATE_BIN must point at the gpuslate binary (run: make test-e2e)}"
: "${GPUSLATE_BUILD:?GPUSLATE_BUILD must point at the build directory (run: make test-e2e)}"
GS_FAKES=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fakes" && pwd)
# shellcheck source=../world/world.bash
. "$(dirname "${BASH_SOURCE[0]}")/../world/world.bash"
GS_HOLDER=$GPUSLATE_BUILD/fakes/gs-holder
GS_NVML=$GPUSLATE_BUILD/fakes/libnvidia-ml.so.1
GS_NVML_R535=$GPUSLATE_BUILD/fakes/r535/libnvidia-ml.so.1

# ---- time and conditions --------------------------------------------------

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# to_ms SECONDS: "2" or "0.5" as milliseconds.
to_ms() {
	local s=$1 int frac
	int=${s%%.*}
	frac=
	[ "$s" != "$int" ] && frac=${s#*.}
	frac=${frac}000
	echo $((10#${int:-0} * 1000 + 10#${frac:0:3}))
}

# wait_for SECONDS CMD [ARG]...: polls CMD (every 10 ms) until it succeeds;
# fails after SECONDS. A bounded wait for a condition, never a fixed sleep.
wait_for() {
	local deadline
	deadline=$(($(now_ms) + $(to_ms "$1")))
	shift
	until "$@"; do
		if [ "$(now_ms)" -ge "$deadline" ]; then
			echo "wait_for: gave up waiting for: $*" >&2
			return 1
		fi
		sleep 0.01
	done
}

# ---- processes -------------------------------------------------------------

# Start time of PID in clock ticks (field 22 of /proc/PID/stat), empty when
# there is no such process. The comm field may hold spaces and parentheses:
# take what follows the last ')'.
starttime() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	# shellcheck disable=SC2086
	set -- $s
	echo "${20}"
}

proc_state() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	echo "${s%% *}"
}

# alive PID: the process runs (a zombie holds nothing and counts as dead) and,
# when this test started it, it is still that process (same start time).
alive() {
	local st want
	st=$(proc_state "$1") || return 1
	case $st in Z | X | x) return 1 ;; esac
	want=$(tracked_starttime "$1")
	[ -z "$want" ] || [ "$want" = "$(starttime "$1")" ]
}
dead() { ! alive "$1"; }

# track PID [KIND]: remember a process this test started (with its start time),
# so teardown can end it. KIND "sup" marks supervisors, ended first.
track() {
	local st
	st=$(starttime "$1") || return 0
	echo "$1 $st ${2:-proc}" >>"$GS_TRACK"
}
tracked_starttime() {
	[ -f "${GS_TRACK:-}" ] || return 0
	awk -v p="$1" '$1 == p { s = $2 } END { if (s != "") print s }' "$GS_TRACK"
}

# Values of KEY (pid, child, worker) in a ready file.
ready_values() { sed -n "s/^$2=//p" "$1"; }

# launch NAME CMD [ARG]...: runs CMD in the background; CMD must write the
# ready file $BATS_TEST_TMPDIR/NAME.ready (gs-holder's format: pid=, child=,
# worker= lines) once it is set up. Waits for that file (bounded), then
# tracks every pid in it. Output goes to NAME.log.
launch() {
	local name=$1 rf pid p
	shift
	rf=$BATS_TEST_TMPDIR/$name.ready
	rm -f "$rf"
	echo "$rf" >>"$GS_READY_LIST"
	"$@" </dev/null >"$BATS_TEST_TMPDIR/$name.log" 2>&1 3>&- &
	pid=$!
	track "$pid"
	if ! wait_for 10 holder_ready "$rf" "$pid" || [ ! -f "$rf" ]; then
		echo "$name did not get ready:" >&2
		cat "$BATS_TEST_TMPDIR/$name.log" >&2
		return 1
	fi
	for p in $(sed -n 's/^[a-z]*=//p' "$rf"); do
		[ "$p" = "$pid" ] || track "$p"
	done
	case " $* " in
	*" --exit-after-fork "*) wait "$pid" ;; # reap the dead creator now
	*) disown "$pid" ;; # no job notices; the shell still reaps it
	esac
	return 0
}

# start_holder NAME [--as COMM | --forge COMM] [gs-holder options]...: starts
# a holder and waits until it is set up. --as COMM: the executable is a copy
# of gs-holder named COMM, owned by root, e.g. nvidia-persistenced (what a
# package installs). --forge COMM: only the name is COMM (a symlink to
# gs-holder: comm and argv[0] say COMM, /proc/PID/exe says gs-holder), as a
# process that renames itself. Read its pids with rpid NAME [KEY].
start_holder() {
	local exe=$GS_HOLDER name=$1
	shift
	if [ "${1:-}" = --as ]; then
		[ -x "$GS_BIN/$2" ] || install -m 0755 "$GS_HOLDER" "$GS_BIN/$2"
		exe=$GS_BIN/$2
		shift 2
	elif [ "${1:-}" = --forge ]; then
		mkdir -p "$GS_BIN/forged"
		ln -sf "$GS_HOLDER" "$GS_BIN/forged/$2"
		exe=$GS_BIN/forged/$2
		shift 2
	fi
	launch "$name" "$exe" --ready-file "$BATS_TEST_TMPDIR/$name.ready" "$@"
}
holder_ready() { [ -f "$1" ] || ! kill -0 "$2" 2>/dev/null; }

# rpid NAME [KEY]: the (first) pid under KEY (default pid) in NAME's ready file.
rpid() { ready_values "$BATS_TEST_TMPDIR/$1.ready" "${2:-pid}" | head -n 1; }
rpids() { ready_values "$BATS_TEST_TMPDIR/$1.ready" "${2:-pid}"; }

# bg NAME CMD [ARG]...: runs CMD in the background (stdout to NAME.out,
# stderr to NAME.err), tracked; sets BG_PID. Collect it with bg_wait NAME.
bg() {
	local name=$1
	shift
	"$@" </dev/null >"$BATS_TEST_TMPDIR/$name.out" 2>"$BATS_TEST_TMPDIR/$name.err" 3>&- &
	BG_PID=$!
	track "$BG_PID"
	echo "$BG_PID" >"$BATS_TEST_TMPDIR/$name.pid"
}
# bg_wait NAME [SECONDS]: waits (bounded) for it to end; sets BG_STATUS,
# BG_OUT and BG_ERR.
bg_wait() {
	local name=$1 pid
	pid=$(cat "$BATS_TEST_TMPDIR/$name.pid")
	wait_for "${2:-30}" dead "$pid" || return 1
	BG_STATUS=0
	wait "$pid" || BG_STATUS=$?
	BG_OUT=$(cat "$BATS_TEST_TMPDIR/$name.out")
	BG_ERR=$(cat "$BATS_TEST_TMPDIR/$name.err")
}

# pty_start NAME CMDLINE: runs the shell command line CMDLINE on a new
# pseudo-terminal (script(1)), tracked; what the terminal shows goes to
# NAME.tty. Type an answer with pty_type NAME TEXT; collect the end with
# bg_wait NAME (BG_STATUS is CMDLINE's exit status).
pty_start() {
	local name=$1 d=$BATS_TEST_TMPDIR fd
	mkfifo "$d/$name.in"
	: >"$d/$name.out"
	: >"$d/$name.err"
	script -q -e -c "$2" /dev/null <"$d/$name.in" >"$d/$name.tty" 2>&1 3>&- &
	BG_PID=$!
	track "$BG_PID"
	echo "$BG_PID" >"$d/$name.pid"
	exec {fd}>"$d/$name.in"
	printf -v "PTY_FD_$name" '%s' "$fd"
}
pty_type() { # pty_type NAME TEXT: types TEXT and Enter, then closes the input
	local var=PTY_FD_$1 fd
	fd=${!var}
	printf '%s\n' "$2" >&"$fd"
	exec {fd}>&-
}
pty_shows() { grep -q -- "$2" "$BATS_TEST_TMPDIR/$1.tty" 2>/dev/null; }
file_has() { grep -q -- "$2" "$1" 2>/dev/null; }

# stays_for SECONDS CMD [ARG]...: CMD holds at every check over SECONDS, for
# what must not happen (a restart after RestartSec=100ms, a respawned
# container): the window is several times what it would take.
stays_for() {
	local end
	end=$(($(now_ms) + $(to_ms "$1")))
	shift
	while [ "$(now_ms)" -lt "$end" ]; do
		"$@" || { echo "stays_for: stopped holding: $*" >&2; return 1; }
		sleep 0.02
	done
}

# open_test_dirs: lets other users (nobody) into this test's directory:
# only bats's own directories (mktemp -d: 0700) are opened, nothing above
# them (a walk up to / once left /tmp 0705).
open_test_dirs() {
	local d=$BATS_TEST_TMPDIR
	while [[ $d == "$BATS_RUN_TMPDIR"/* ]]; do
		chmod o+rx "$d"
		d=${d%/*}
	done
	chmod o+rx "$BATS_RUN_TMPDIR"
}

# ---- gpuslate ----------------------------------------------------------------

# gpuslate under test; in the mount namespace of the test's systemd manager
# once one runs, so that its `systemctl` reaches that manager.
gs() {
	if [ -n "${WORLD_SD_PID:-}" ]; then sd_exec "$GPUSLATE_BIN" "$@"; else "$GPUSLATE_BIN" "$@"; fi
}

# gpu_used INDEX: the MiB in use on that GPU, as the (fake) NVML says.
gpu_used() {
	"$GPUSLATE_BIN" status --query-gpu=index,memory.used --format=csv,noheader,nounits | sed -n "s/^$1, //p"
}

# jqo FILTER: jq -r FILTER on $output (set by `run`).
jqo() { jq -r "$1" <<<"$output"; }

# The lines of stderr that are errors (not warnings) from gpuslate.
error_lines() { grep '^gpuslate: ' <<<"$1" | grep -v '^gpuslate: warning: ' || true; }

# ---- assertions (print what differed, for --print-output-on-failure) ----------

assert_eq() { # assert_eq ACTUAL EXPECTED [WHAT]
	if [ "$1" != "$2" ]; then
		printf '%s: expected [%s], got [%s]\n' "${3:-value}" "$2" "$1" >&2
		return 1
	fi
}
assert_status() {
	if [ "$status" -ne "$1" ]; then
		echo "exit status: expected $1, got $status" >&2
		return 1
	fi
}
assert_match() { # assert_match TEXT REGEX [WHAT]
	if ! grep -Eq -- "$2" <<<"$1"; then
		printf '%s: [%s] does not match /%s/\n' "${3:-text}" "$1" "$2" >&2
		return 1
	fi
}
assert_no_match() {
	if grep -Eq -- "$2" <<<"$1"; then
		printf '%s: [%s] unexpectedly matches /%s/\n' "${3:-text}" "$1" "$2" >&2
		return 1
	fi
}
assert_alive() {
	local p
	for p; do alive "$p" || { echo "process $p should be alive, it is gone" >&2; return 1; }; done
}
assert_dead() {
	local p
	for p; do dead "$p" || { echo "process $p should be gone, it is alive ($(tr '\0' ' ' </proc/"$p"/cmdline))" >&2; return 1; }; done
}
# assert_one_error STDERR TEXT: exactly one error line, naming TEXT.
assert_one_error() {
	local e n
	e=$(error_lines "$1")
	n=$(grep -c . <<<"$e" || true)
	assert_eq "$n" 1 "number of error lines in [$1]" || return 1
	assert_match "$e" "$2" "error line"
}

# ---- cgroups (owners: systemd units, LXC containers) ---------------------

# The cgroup hierarchy where a process's path names its unit: the unified one
# (cgroup v2, or /sys/fs/cgroup/unified on hybrid hosts), else v1's
# name=systemd. Empty when none is mounted.
cgroup_root() {
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo /sys/fs/cgroup
	elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
		echo /sys/fs/cgroup/unified
	elif [ -d /sys/fs/cgroup/systemd ] && [ -f /sys/fs/cgroup/systemd/cgroup.procs ]; then
		echo /sys/fs/cgroup/systemd
	fi
}

# require_cgroups: skips the test unless this machine lets us create a cgroup
# and move a process into it (root, a writable cgroup hierarchy).
require_cgroups() {
	local root probe
	root=$(cgroup_root)
	[ -n "$root" ] || skip "no cgroup v2 or name=systemd hierarchy mounted"
	probe=$root/gs-e2e-probe-$$-$BATS_TEST_NUMBER
	if ! mkdir "$probe" 2>/dev/null; then
		skip "cannot create cgroups under $root (not root, or read-only cgroupfs)"
	fi
	if ! bash -c 'echo $$ >"$1/cgroup.procs"' _ "$probe" 2>/dev/null; then
		rmdir "$probe"
		skip "cannot move a process into a cgroup under $root"
	fi
	wait_for 5 rmdir "$probe" 2>/dev/null
	GS_CGROOT=$root
}

# A GPU holder in cgroup RELPATH (under this test's own cgroup): sets PID.
holder_in_cgroup() {
	local name=$1 rel=$2 cg
	shift 2
	cg=$(make_cgroup "gs-e2e-$$-$BATS_TEST_NUMBER/$rel")
	launch "$name" bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
		"$GS_HOLDER" --ready-file "$BATS_TEST_TMPDIR/$name.ready" "$@"
	PID=$(rpid "$name")
}

# make_cgroup RELPATH: creates RELPATH (e.g. gs-e2e-1/system.slice/x.service)
# under the hierarchy, remembers each directory it created for teardown,
# prints the absolute path.
make_cgroup() {
	local rel=$1 path=$GS_CGROOT part
	local IFS=/
	for part in $rel; do
		[ -n "$part" ] || continue
		path=$path/$part
		if [ ! -d "$path" ]; then
			mkdir "$path" || return 1
			echo "$path" >>"$GS_CGROUPS"
		fi
	done
	echo "$path"
}

# ---- private PID namespace -----------------------------------------------

# require_pidns: skips unless `unshare --pid --fork --mount-proc` works here.
require_pidns() {
	command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
	unshare --pid --fork --mount-proc true 2>/dev/null ||
		skip "cannot create a PID namespace (needs root / CAP_SYS_ADMIN)"
}

# in_pidns SCRIPT: runs the bash SCRIPT (text, with set -e) as PID 1 of a
# new PID namespace with its own /proc; $1 there is this test's directory,
# and $GS_HOLDER and $GPUSLATE_BIN are set. Everything it starts ends with
# it. There every process is the test's, so what gpuslate can or cannot
# inspect is the test's doing (call require_pidns first).
in_pidns() {
	printf '%s\n' "$1" >"$BATS_TEST_TMPDIR/ns.sh"
	bg ns env GS_HOLDER="$GS_HOLDER" unshare --pid --fork --mount-proc --kill-child \
		bash -e "$BATS_TEST_TMPDIR/ns.sh" "$BATS_TEST_TMPDIR"
	bg_wait ns 60
	assert_eq "$BG_STATUS" 0 "namespace script (stderr: $BG_ERR)"
}

# ---- setup and teardown ------------------------------------------------------

# new_host NGPUS: a fresh simulated host, exported for gpuslate and holders.
new_host() {
	GS_HOST=${GS_HOST_BASE:+$GS_HOST_BASE/t$BATS_TEST_NUMBER}
	GS_HOST=${GS_HOST:-$BATS_TEST_TMPDIR}/host$1
	bash "$GS_FAKES/mkhost.sh" "$GS_HOST" "$1"
	export FAKE_NVML_STATE=$GS_HOST/nvml
	export GPUSLATE_DEV_ROOT=$GS_HOST/dev
	export GPUSLATE_NVIDIA_PROCFS=$GS_HOST/driver
}

setup() {
	GS_TRACK=$BATS_TEST_TMPDIR/tracked
	GS_READY_LIST=$BATS_TEST_TMPDIR/ready-files
	GS_CGROUPS=$BATS_TEST_TMPDIR/cgroups
	GS_WORLD_CLEANUP=$BATS_TEST_TMPDIR/world-cleanup
	GS_WORLD_CGROUPS=$BATS_TEST_TMPDIR/world-cgroups
	: >"$GS_TRACK"
	: >"$GS_READY_LIST"
	: >"$GS_CGROUPS"
	: >"$GS_WORLD_CLEANUP"
	: >"$GS_WORLD_CGROUPS"
	new_host "${GS_NGPUS:-2}"
	export GPUSLATE_NVML_LIB=$GS_NVML
	# Nothing a test does is visible outside its directory: not the real
	# /run/gpuslate.lock, not /run/gpuslate.last-reclaim (which feeds this
	# machine's gpuslate_last_reclaim_* metrics).
	export GPUSLATE_LOCK_FILE=$BATS_TEST_TMPDIR/gpuslate.lock
	export GPUSLATE_STATE_FILE=$BATS_TEST_TMPDIR/gpuslate.last-reclaim
	export GPUSLATE_NO_PROGRESS=1
	unset GPUSLATE_SSH
	# First on PATH: the test world's pct (lxc-attach underneath) and
	# holders under other names.
	GS_BIN=$BATS_TEST_TMPDIR/bin
	mkdir -p "$GS_BIN"
	ln -sf "$GS_WORLD/pct" "$GS_BIN/pct"
	export PATH=$GS_BIN:$PATH
	# The gpuslate inside a file's containers uses this test's host.
	if [ -n "${WORLD_SHARED:-}" ]; then world_sim_env "$WORLD_SHARED"; fi
	# Sanitizer reports fail the run loudly.
	export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:exitcode=99}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99}
}

# Identity check for a pid found at teardown that was not tracked when it
# started (a respawned child, a unit's restarted main process): ours only if
# it runs our holder or a fake, or sits in one of our cgroups.
is_ours() {
	local exe cg
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	[ "$exe" = "$(readlink -f "$GS_HOLDER")" ] && return 0
	case $exe in "$GS_BIN"/*) return 0 ;; esac
	tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "$GS_FAKES/" && return 0
	while read -r cg; do
		[ -n "$cg" ] && grep -qx "$1" "$cg/cgroup.procs" 2>/dev/null && return 0
	done <"$GS_CGROUPS"
	return 1
}

# Processes this test started and may have left running, as "pid starttime".
leftovers() {
	local p st kind rf u cg
	# Supervisors first: they would restart what is ended before them.
	while read -r p st kind; do
		if [ "$kind" = sup ]; then echo "$p $st"; fi
	done <"$GS_TRACK"
	while read -r p st kind; do
		if [ "$kind" != sup ]; then echo "$p $st"; fi
	done <"$GS_TRACK"
	# Respawned since they were tracked: children in ready files, units'
	# main processes, anything in our cgroups.
	{
		while read -r rf; do [ -f "$rf" ] && sed -n 's/^[a-z]*=//p' "$rf"; done <"$GS_READY_LIST"
		while read -r cg; do cat "$cg/cgroup.procs" 2>/dev/null; done <"$GS_CGROUPS"
	} | sort -un | while read -r p; do
		if [ -n "$p" ] && [ -z "$(tracked_starttime "$p")" ] && is_ours "$p"; then
			echo "$p $(starttime "$p")"
		fi
	done
	return 0
}

# descendants PID...: every live descendant of these processes, as
# "pid starttime" (children of our processes are ours: a child names its
# live parent). One pass over /proc.
descendants() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v roots="$*" '
		{
			pid = $1
			rest = $0
			sub(/.*\) /, "", rest)
			split(rest, f, " ")
			if (f[1] == "Z" || f[1] == "X") next
			parent[pid] = f[2]
			start[pid] = f[20]
		}
		END {
			n = split(roots, q, " ")
			for (i = 1; i <= n; i++) mine[q[i]] = 1
			do {
				added = 0
				for (p in parent)
					if (!(p in mine) && (parent[p] in mine)) { mine[p] = 1; print p, start[p]; added = 1 }
			} while (added)
		}'
}

# Everything to end: what leftovers lists, then the descendants of those
# still running (a helper a test started inside a holder's shell, say).
to_end() {
	local list p st live=()
	list=$(leftovers) || true
	printf '%s\n' "$list"
	while read -r p st; do
		if [ -n "$p" ] && [ -n "$st" ] && [ "$(starttime "$p")" = "$st" ]; then live+=("$p"); fi
	done <<<"$list"
	if [ ${#live[@]} -gt 0 ]; then descendants "${live[@]}" || true; fi
	return 0
}

teardown() {
	local round p st cg failed= seen=$BATS_TEST_TMPDIR/teardown.seen left=()
	: >"$seen"
	# Service managers and runtimes first: they would restart what is
	# ended before them.
	world_run_cleanups "$GS_WORLD_CLEANUP"
	for round in 1 2 3; do
		# The whole list first: descendants are found through their
		# parents, which must still be alive then.
		to_end >"$seen.round"
		while read -r p st; do
			[ -n "$p" ] && [ -n "$st" ] && [ "$(starttime "$p")" = "$st" ] || continue
			case $(proc_state "$p") in Z | X | x) continue ;; esac
			echo "$p $st" >>"$seen"
			kill -KILL "$p" 2>/dev/null || true
		done <"$seen.round"
	done
	# Reap our own children; wait (bounded) until every process is gone.
	while read -r p st; do
		wait "$p" 2>/dev/null || true
		wait_for 5 gone_since "$p" "$st" || left+=("$p")
	done < <(sort -u "$seen")
	if [ ${#left[@]} -gt 0 ]; then
		echo "teardown: processes still running: ${left[*]}" >&2
		failed=1
	fi
	world_cleanup_cgroups || failed=1
	# Our cgroups, deepest first, once empty.
	if [ -s "${GS_CGROUPS:-/nonexistent}" ]; then
		while read -r cg; do
			wait_for 5 rmdir "$cg" 2>/dev/null || { echo "teardown: cannot remove cgroup $cg" >&2; failed=1; }
		done < <(tac "$GS_CGROUPS")
	fi
	[ -z "$failed" ]
}
gone_since() { # gone_since PID STARTTIME: no process, a zombie, or another process
	local st
	st=$(proc_state "$1") || return 0
	case $st in Z | X | x) return 0 ;; esac
	[ "$(starttime "$1")" != "$2" ]
}

# start_ns_holder NAME NSINIT|- [gs-holder options]...: a holder in a PID
# namespace: a new one (it is that namespace's init, as a container's main
# process started without an init) with "-", or entered into the namespace
# of the host PID NSINIT (as `docker exec` does). Inside, the holder's own
# PID is small (1 for an init): the wrapper writes its host PID to the
# ready file, so that nothing here ever tracks the host's PID 1.
start_ns_holder() {
	local name=$1 ns=$2
	shift 2
	launch "$name" bash -c '
		rf=$1 ns=$2; shift 2
		if [ "$ns" = - ]; then unshare -p -f "$@" --ready-file "$rf.inner" &
		else nsenter -t "$ns" -p -- "$@" --ready-file "$rf.inner" &
		fi
		w=$!
		until [ -f "$rf.inner" ]; do kill -0 "$w" 2>/dev/null || exit 1; sleep 0.01; done
		read -r c </proc/$w/task/$w/children
		echo "pid=$c" >"$rf"
		wait' _ "$BATS_TEST_TMPDIR/$name.ready" "$ns" "$GS_HOLDER" "$@"
}

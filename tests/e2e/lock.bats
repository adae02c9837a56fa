#!/usr/bin/env bats
# The reclaim lock (one reclaim at a time per host) and its wait (issue 11
# item 15): the wait never outlives --timeout, a released lock is taken at
# once, Ctrl-C ends the wait. The lock is held by a real process with
# flock(1), as another gpuslate would hold it.

load helpers

# hold_lock NAME [SCRIPT]: a process that holds the lock file exclusively
# (fd 9) and then runs SCRIPT (default: sleep); its pid is rpid NAME.
hold_lock() {
	launch "$1" bash -c 'exec 9>>"$1"; flock -x 9; echo "pid=$$" >"$2"; eval "$3"' \
		_ "$GPUSLATE_LOCK_FILE" "$BATS_TEST_TMPDIR/$1.ready" "${2:-exec sleep 600}"
}

# lock_taken_by PID: the lock file names PID (gpuslate writes its pid there
# once it holds the lock).
lock_taken_by() { [ "$(cat "$GPUSLATE_LOCK_FILE" 2>/dev/null)" = "$1" ]; }

# require_strace: skips unless strace can trace a child here (ptrace allowed).
require_strace() {
	command -v strace >/dev/null || skip "strace is not installed (tools/install-deps test installs it)"
	strace -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
}

@test "lock: a deadline timer that fires before the wait begins cannot make the wait endless" {
	require_strace
	start_holder a --gpu 0 --mib 1024
	hold_lock locker
	# The race made certain: every syscall that arms a timer (setitimer,
	# timer_settime, timerfd_settime, alarm) returns only after 100 ms,
	# long after a --timeout of 1 or 20 ms fired. A timer armed before a
	# blocking flock() then fires before flock() is entered, and flock()
	# waits for ever (here: until timeout(1), status 124).
	local to st
	for to in 0.001 0.02 0.001 0.02 0; do
		st=0
		# LeakSanitizer cannot run under ptrace; the rest of ASan can.
		ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 timeout -k 2 20 strace -o /dev/null \
			-e inject=setitimer,timer_settime,timerfd_settime,alarm:delay_exit=100000 \
			"$GPUSLATE_BIN" reclaim -y --timeout "$to" >"$BATS_TEST_TMPDIR/w.out" 2>"$BATS_TEST_TMPDIR/w.err" \
			</dev/null || st=$?
		if [ "$st" -ne 5 ]; then
			echo "--timeout $to: the waiter exited $st (124: it waited past its deadline)" >&2
			cat "$BATS_TEST_TMPDIR/w.err" >&2
			return 1
		fi
		assert_one_error "$(cat "$BATS_TEST_TMPDIR/w.err")" "another gpuslate reclaim still holds the lock"
	done
	assert_alive "$(rpid a)" "$(rpid locker)"
}

@test "lock: a waiter whose --timeout passes while the lock stays held returns every time, exit 5" {
	start_holder a --gpu 0 --mib 1024
	hold_lock locker
	# Tiny timeouts are where a timer armed before a blocking flock()
	# fired before flock() was entered and the wait never ended. Three
	# waiters at a time keep the machine busy, as the hangs were seen
	# under load. Each run is bounded by timeout(1): 124 is a hang.
	local n=0 worst=0 t0 dt pids st
	for round in $(seq 1 20); do
		pids=()
		t0=$(now_ms)
		for to in 0 0.001 0.02; do
			timeout -k 2 20 "$GPUSLATE_BIN" reclaim -y -q --timeout "$to" \
				>"$BATS_TEST_TMPDIR/w$round-$to.out" 2>&1 </dev/null &
			pids+=("$!")
		done
		for p in "${pids[@]}"; do
			st=0
			wait "$p" || st=$?
			if [ "$st" -ne 5 ]; then
				echo "round $round: waiter exited $st (124: it hung past its --timeout)" >&2
				cat "$BATS_TEST_TMPDIR/w$round-"*.out >&2
				return 1
			fi
			n=$((n + 1))
		done
		dt=$(($(now_ms) - t0))
		[ "$dt" -le "$worst" ] || worst=$dt
	done
	assert_eq "$n" 60 "waiters that returned"
	# Three ASan-built runs in parallel on a loaded 2-core machine; a
	# hang would take the 20 s of timeout(1).
	[ "$worst" -lt 15000 ] || { echo "slowest round took $worst ms" >&2; false; }
	assert_one_error "$(cat "$BATS_TEST_TMPDIR/w20-0.out")" "another gpuslate reclaim still holds the lock"
	assert_alive "$(rpid a)" "$(rpid locker)"
}

@test "lock: the waiter takes the lock as soon as its holder exits, long before --timeout" {
	start_holder a --gpu 0 --mib 1024 --ignore-term
	hold_lock locker
	bg waiter "$GPUSLATE_BIN" reclaim -y --json --grace 0.2 --timeout 60
	waiter=$BG_PID
	wait_for 10 file_has "$BATS_TEST_TMPDIR/waiter.err" "another gpuslate reclaim is running"

	t0=$(now_ms)
	kill -TERM "$(rpid locker)"
	wait_for 10 lock_taken_by "$waiter"
	dt=$(($(now_ms) - t0))
	# Woken by the holder's close (inotify); 2 s is margin for a loaded
	# machine, not the 60 s the deadline would take.
	[ "$dt" -lt 2000 ] || { echo "the lock was taken $dt ms after its release" >&2; false; }
	bg_wait waiter 30
	assert_eq "$BG_STATUS" 0 "waiter's exit status"
	output=$BG_OUT
	assert_eq "$(jqo .verdict)" clean verdict
	assert_dead "$(rpid a)"
}

@test "lock: a lock released without closing the file (flock -u) is taken within the poll interval" {
	start_holder a --gpu 0 --mib 1024
	# flock -u on its fd: no close for inotify to report.
	hold_lock locker 'trap "flock -u 9" USR1; while :; do sleep 0.05; done'
	bg waiter "$GPUSLATE_BIN" reclaim -y --json --timeout 60
	waiter=$BG_PID
	wait_for 10 file_has "$BATS_TEST_TMPDIR/waiter.err" "another gpuslate reclaim is running"

	t0=$(now_ms)
	kill -USR1 "$(rpid locker)"
	wait_for 10 lock_taken_by "$waiter"
	dt=$(($(now_ms) - t0))
	[ "$dt" -lt 2000 ] || { echo "the lock was taken $dt ms after its release" >&2; false; }
	bg_wait waiter 30
	assert_eq "$BG_STATUS" 0 "waiter's exit status"
	assert_alive "$(rpid locker)"
}

@test "lock: Ctrl-C while waiting for the lock ends the wait at once: refused, exit 5, nothing stopped" {
	start_holder a --gpu 0 --mib 1024
	hold_lock locker
	# As a terminal runs its foreground job: SIGINT at its default (a
	# script's background job has it ignored, and gpuslate keeps that).
	bg waiter env --default-signal=INT "$GPUSLATE_BIN" reclaim -y --json --timeout 60
	waiter=$BG_PID
	wait_for 10 file_has "$BATS_TEST_TMPDIR/waiter.err" "another gpuslate reclaim is running"

	t0=$(now_ms)
	kill -INT "$waiter"
	bg_wait waiter 30
	dt=$(($(now_ms) - t0))
	[ "$dt" -lt 5000 ] || { echo "the waiter took $dt ms to end after Ctrl-C" >&2; false; }
	assert_eq "$BG_STATUS" 5 "waiter's exit status"
	output=$BG_OUT
	assert_eq "$(jqo '"\(.verdict) \(.exit_status)"')" "refused 5" "its document"
	assert_alive "$(rpid a)"
}

#!/bin/bash
# Time to a verified clean GPU, three ways, with real PyTorch holders:
#   floor    SIGKILL and a tight NVML poll (the fastest possible)
#   seed     the hand procedure: kill -9 the PIDs nvidia-smi lists, sleep 3,
#            nvidia-smi --query-gpu=index,memory.used (clean if it shows the idle value)
#   gpuslate gpuslate reclaim -y (default grace 10 s), then an independent
#            NVML read checks the claim ("never claiming clean early")
# Scenarios: plain20 pinned32 fork ignore_term stopped eight, and two where
# SIGTERM is dropped by the kernel (gpuslate sends SIGKILL at once, so they
# should be within 50 ms of the floor): sig_ign (SIGTERM set to SIG_IGN,
# 8 GiB) and ns_init (PID 1 of its own PID namespace without a handler,
# unshare -p -f, 8 GiB).
# Usage: bench/gpu/reclaim.sh OUTDIR [SCENARIO...]
set -u
OUTD=${1:-/tmp/gpuslate-reclaim}; shift || true
mkdir -p "$OUTD"
. bench/gpu/lib.sh
TOL=16
SCEN=${*:-"plain20 pinned32 fork ignore_term stopped eight sig_ign ns_init"}

setup() { # scenario -> $PIDS (to kill for floor/seed), holders running
	PIDS=""
	case $1 in
	plain20) start_holder plain 20 || return 1; PIDS=$HPID ;;
	pinned32) start_holder pinned 4 32 || return 1; PIDS=$HPID ;;
	fork) start_holder fork 4 || return 1; kill -9 "$HPID"; wait_gone "$HPID"; PIDS=$HPID ;;
	ignore_term) start_holder ignore_term 4 || return 1; PIDS=$HPID ;;
	sig_ign) start_holder ignore_term 8 || return 1; PIDS=$HPID ;;
	ns_init) start_ns_holder plain 8 || return 1; PIDS=$HPID ;;
	stopped) start_holder plain 4 || return 1; kill -STOP "$HPID"; PIDS=$HPID ;;
	eight)
		# Eight at once: started together, then each awaited.
		for i in 1 2 3 4 5 6 7 8; do
			python3 "$HOLDER" plain "$WORK/ready.e$i" 10 >"$WORK/holder.e$i.log" 2>&1 &
		done
		for i in 1 2 3 4 5 6 7 8; do
			local k=0
			while [ ! -f "$WORK/ready.e$i" ]; do k=$((k + 1)); [ $k -gt 1200 ] && return 1; sleep 0.1; done
		done
		PIDS=$(cat "$WORK"/ready.e* | sed -n 's/^pid=//p' | tr '\n' ' ') ;;
	esac
}

reset() { # leave nothing behind, wait for the idle baseline
	$GS reclaim -y -q --grace 0 --timeout 60 >/dev/null 2>&1
	$FLOOR --wait "$idle" $TOL >/dev/null
	rm -f "$WORK"/ready.*
}

idle=$($FLOOR --used)
echo "idle used: $idle MiB; scenarios: $SCEN" | tee "$OUTD/reclaim.log"
printf '| scenario | floor (SIGKILL + NVML poll) | seed (kill -9, sleep 3, nvidia-smi) | gpuslate reclaim | gpuslate verdict | checked after |\n|---|---|---|---|---|---|\n' >"$OUTD/reclaim.md"
for s in $SCEN; do
	# floor
	setup "$s" || { echo "$s: setup failed" | tee -a "$OUTD/reclaim.log"; reset; continue; }
	if [ "$s" = fork ]; then
		# The floor needs the real holder: the surviving child.
		PIDS=$(ls "$WORK"/ready.* | xargs cat | sed -n 's/^child=//p')
	fi
	f=$($FLOOR --kill "$idle" $TOL $PIDS)
	reset
	# seed
	setup "$s" || { reset; continue; }
	t0=$(now)
	kill -9 $(nvidia-smi --query-compute-apps=pid --format=csv,noheader) 2>/dev/null
	sleep 3
	used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1 | tr -d ' ')
	t1=$(now)
	if [ "$used" -le $((idle + TOL)) ]; then sd="clean, $(secs $t0 $t1) s"; else sd="NOT clean: $used MiB used after $(secs $t0 $t1) s"; fi
	reset
	# gpuslate
	setup "$s" || { reset; continue; }
	t0=$(now)
	$GS reclaim -y --json >"$OUTD/$s.json" 2>"$OUTD/$s.err"; rc=$?
	t1=$(now)
	$FLOOR --check "$idle" $TOL >"$OUTD/$s.check"; ck=$?
	verdict=$(python3 -c "import json,sys; d=json.load(open('$OUTD/$s.json')); print(d['verdict'] + '; ' + ', '.join(sorted(set(p['outcome'] for p in d['processes']))) + '; GPU released %s s after the signal' % d['gpus'][0]['released_after_s'])" 2>/dev/null)
	if [ $rc = 0 ] && [ $ck = 0 ]; then chk="at baseline"; elif [ $rc = 0 ]; then chk="CLAIMED CLEAN EARLY: $(cat "$OUTD/$s.check") MiB"; else chk="exit $rc"; fi
	printf '| %s | %s s | %s | %s s | %s (exit %s) | %s |\n' "$s" "$f" "$sd" "$(secs $t0 $t1)" "$verdict" "$rc" "$chk" | tee -a "$OUTD/reclaim.md"
	reset
done
cat "$OUTD/reclaim.md" >>"$OUTD/reclaim.log"
rm -rf "$WORK"

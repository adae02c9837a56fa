#!/bin/bash
# Supervisors as users run them (issue 24), on a real GPU with PyTorch
# holders: restarts with new arguments (a run id), a Python supervisor
# (subprocess.run in a loop), the same loop with the same arguments, and a
# 6 s restart delay with and without --respawn-watch 10s. After every
# verdict an independent NVML read (nvidia-smi) once a second for 30 s
# records the most memory seen: a "clean" verdict agrees only when that
# stayed at the idle figure.
#
#   bench/gpu/restarters-args.sh OUTDIR     (as root, from the repository root)
set -u
OUTD=${1:-/tmp/gpuslate-restarters-args}
mkdir -p "$OUTD"
. bench/gpu/lib.sh
IDLE=$(used)

# scenario NAME OPTS SUPERVISOR_PID: reclaim, verdict, NVML for 30 s, then
# the supervisor ended and the GPU cleaned for the next one.
n_scen=0
scenario() {
	local name=$1 opts=$2 sup=$3 t0 t1 rc verdict alive max first agree j
	n_scen=$((n_scen + 1))
	j=$OUTD/scenario$n_scen
	t0=$(now)
	# shellcheck disable=SC2086
	"$GS" reclaim -y --grace 5 $opts --json >"$j.json" 2>"$j.err"; rc=$?
	t1=$(now)
	verdict=$(python3 -c "import json; print(json.load(open('$j.json'))['verdict'])" 2>/dev/null)
	alive=$(python3 -c "import json; d=json.load(open('$j.json')); print(','.join('%d:%s' % (a['pid'], a['comm']) for a in d.get('restarters_alive', [])) or '-')" 2>/dev/null)
	read -r max first <<<"$(watch30)"
	if [ "$verdict" = clean ]; then
		[ "$max" -le "$((IDLE + 2))" ] && agree=yes || agree=NO
	else
		agree=yes
	fi
	printf '| %s | %s | %s | exit %s | %s s | %s | %s MiB | %s | %s |\n' "$name" "${opts:--}" "$verdict" "$rc" \
		"$(secs "$t0" "$t1")" "$alive" "$max" "${first/#0/-}" "$agree" | tee -a "$OUTD/restarters-args.md"
	kill "$sup" 2>/dev/null; wait "$sup" 2>/dev/null
	"$GS" reclaim -y -q --grace 2 >/dev/null 2>&1
}

echo "idle used: $IDLE MiB; gpuslate $("$GS" --version)" | tee "$OUTD/restarters-args.md"
echo '| supervisor | options | verdict | exit | reclaim took | restarters_alive | most used in 30 s | held again after (s) | verdict agrees |' | tee -a "$OUTD/restarters-args.md"
echo '|---|---|---|---|---|---|---|---|---|' | tee -a "$OUTD/restarters-args.md"

# 1. A bash loop passing a new run id every time.
rm -f "$WORK/b.ready"
bash -c 'h=$1 r=$2; while true; do python3 "$h" plain "$r" 4 0 --run $RANDOM; sleep 0.2; done' \
	_ "$HOLDER" "$WORK/b.ready" >"$WORK/b.log" 2>&1 &
S=$!
wait_file "$WORK/b.ready" || tail "$WORK/b.log"
scenario "bash loop, new --run each time" "" "$S"

# 2-5. A Python supervisor: subprocess.run in a loop, restart after DELAY,
# with a new id (or the same arguments) every time.
pysup() { # pysup READY DELAY SAME
	python3 - "$HOLDER" "$1" "$2" "$3" <<-'EOF' >"$WORK/py.log" 2>&1 &
		import subprocess, sys, time, random
		holder, ready, delay, same = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "same"
		while True:
		    run_id = "1" if same else str(random.randrange(1 << 30))
		    subprocess.run([sys.executable, holder, "plain", ready, "4", "0", "--run", run_id])
		    time.sleep(delay)
	EOF
	S=$!
	wait_file "$1" || tail "$WORK/py.log"
}
rm -f "$WORK/p1.ready"; pysup "$WORK/p1.ready" 1 new
scenario "python subprocess.run, new id, 1 s" "" "$S"
rm -f "$WORK/p2.ready"; pysup "$WORK/p2.ready" 1 same
scenario "python subprocess.run, same args, 1 s" "" "$S"
rm -f "$WORK/p3.ready"; pysup "$WORK/p3.ready" 6 new
scenario "python subprocess.run, new id, 6 s" "" "$S"
rm -f "$WORK/p4.ready"; pysup "$WORK/p4.ready" 6 new
scenario "python subprocess.run, new id, 6 s" "--respawn-watch 10s" "$S"
echo "final used: $(used) MiB" | tee -a "$OUTD/restarters-args.md"
rm -rf "$WORK"

#!/bin/bash
# Restarters on a real GPU (issue 14): a holder under a bash-loop supervisor
# and a torchrun job with --max-restarts, each reclaimed twice: plainly
# (the verdict must not be "clean" while the restarter brings the holder
# back) and with --include-parent (the restarter is stopped: clean, and it
# stays clean). After every verdict an independent NVML read (nvidia-smi),
# once a second for 30 s, records the most memory seen: a "clean" verdict
# agrees only if that stayed at the idle figure.
#
#   bench/gpu/restarters.sh OUTDIR     (as root, from the repository root)
set -u
OUTD=${1:-/tmp/gpuslate-restarters}
mkdir -p "$OUTD"
. bench/gpu/lib.sh
IDLE=$(used)

# scenario NAME OPTS: the supervisor is already running and its holder
# ready; reclaim with OPTS, record the verdict and what NVML shows after.
scenario() {
	local name=$1 opts=$2 t0 t1 rc verdict summary max agree
	t0=$(now)
	"$GS" reclaim -y --grace 5 $opts --json >"$OUTD/$name$opts.json" 2>"$OUTD/$name$opts.err"; rc=$?
	t1=$(now)
	verdict=$(python3 -c "import json; print(json.load(open('$OUTD/$name$opts.json'))['verdict'])" 2>/dev/null)
	summary=$(python3 -c "import json; print(json.load(open('$OUTD/$name$opts.json'))['summary'])" 2>/dev/null)
	read -r max _ <<<"$(watch30)"
	if [ "$verdict" = clean ]; then
		[ "$max" -le "$((IDLE + 2))" ] && agree=yes || agree=NO
	else
		agree=yes # not clean: nothing promised
	fi
	printf '| %s | %s | %s | exit %s | %s s | %s MiB | %s |\n' "$name" "${opts:--}" "$verdict" "$rc" \
		"$(secs "$t0" "$t1")" "$max" "$agree" | tee -a "$OUTD/restarters.md"
	echo "  summary: $summary" | tee -a "$OUTD/restarters.md"
}

echo "idle used: $IDLE MiB" | tee "$OUTD/restarters.md"
echo '| scenario | options | verdict | exit | reclaim took | most used in the next 30 s | verdict agrees |' | tee -a "$OUTD/restarters.md"
echo '|---|---|---|---|---|---|---|' | tee -a "$OUTD/restarters.md"

# loop_scenario NAME [LAUNCHER...]: a bash-loop supervisor (the shape of
# supervisord, pm2, docker --restart) restarting a PyTorch holder, through
# LAUNCHER when given; the restarted python spends seconds importing PyTorch
# before it touches the GPU. Reclaimed plainly and with --include-parent.
loop_scenario() {
	local name=$1 opts
	shift
	for opts in "" "--include-parent"; do
		rm -f "$WORK/$name.ready"
		bash -c 'h=$1 r=$2; shift 2; while true; do "$@" python3 "$h" plain "$r" 4; sleep 0.2; done' \
			_ "$HOLDER" "$WORK/$name.ready" "$@" >"$WORK/$name.log" 2>&1 &
		LOOP=$!
		wait_file "$WORK/$name.ready" || { echo "$name holder not ready"; cat "$WORK/$name.log"; }
		scenario "$name" "$opts"
		kill "$LOOP" 2>/dev/null; wait "$LOOP" 2>/dev/null
		"$GS" reclaim -y -q --grace 2 >/dev/null 2>&1
	done
}

# 1. The plain loop; 1b. the same loop restarting its job through a
# launcher (`timeout 600 python3 ...`): the restarter is above the launcher.
loop_scenario bash-loop
loop_scenario timeout-loop timeout 600

# 2. torchrun's elastic agent with --max-restarts=3 restarting its worker.
for opts in "" "--include-parent"; do
	rm -rf "$WORK/tr"; mkdir -p "$WORK/tr"
	READY_DIR=$WORK/tr torchrun --nproc-per-node=1 --max-restarts=3 bench/gpu/tp_job.py \
		>"$WORK/torchrun.log" 2>&1 &
	TR=$!
	wait_file "$WORK/tr/rank0" || { echo "torchrun worker not ready"; tail -20 "$WORK/torchrun.log"; }
	scenario "torchrun --max-restarts=3" "$opts"
	kill "$TR" 2>/dev/null; wait "$TR" 2>/dev/null
	"$GS" reclaim -y -q --grace 2 >/dev/null 2>&1
done
echo "final used: $(used) MiB" | tee -a "$OUTD/restarters.md"
rm -rf "$WORK"

#!/bin/bash
# `gpuslate run` on a real GPU (issue 14 §2): a PyTorch holder is reclaimed,
# then COMMAND (bench/gpu/run_job.py, a real PyTorch job) runs on the clean
# GPU; it records the free memory the driver reported to it before it
# allocated. A second holder started while COMMAND runs is an intruder:
# reported and left running (exit 9), or stopped with --guard (COMMAND goes
# on, the intruder is gone).
#
#   bench/gpu/run.sh OUTDIR     (as root, from the repository root)
set -u
OUTD=${1:-/tmp/gpuslate-run}
mkdir -p "$OUTD"
. bench/gpu/lib.sh
IDLE=$(used)
JOB=$PWD/bench/gpu/run_job.py
# wait_grep FILE REGEX: until FILE has a line matching (bounded, 60 s).
wait_grep() {
	for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
jq_py() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)" 2>/dev/null; }

echo "idle used: $IDLE MiB" | tee "$OUTD/run.md"
echo '| scenario | options | exit | reclaim took | COMMAND saw free | intruders | intruder after | total |' | tee -a "$OUTD/run.md"
echo '|---|---|---|---|---|---|---|---|' | tee -a "$OUTD/run.md"

for opts in "" "--guard"; do
	start_holder plain 8 || exit 1
	victim=$HPID
	rm -f "$WORK/job.ready" "$WORK/job.done"
	t0=$(now)
	"$GS" run -y --grace 5 --json $opts -- python3 "$JOB" "$WORK/job.ready" "$WORK/job.done" 4 \
		>"$OUTD/run$opts.json" 2>"$OUTD/run$opts.err" &
	RUN=$!
	wait_file "$WORK/job.ready" || { echo "COMMAND not ready"; cat "$OUTD/run$opts.err"; }
	# The intruder: a second PyTorch process on the same GPU, not COMMAND's.
	# Not start_holder: under --guard it may be stopped before it is
	# ready (it was, at 14 MiB, still initialising CUDA).
	python3 "$HOLDER" plain "$WORK/intruder.ready" 2 0 >"$WORK/intruder.log" 2>&1 &
	intruder=$!
	wait_grep "$OUTD/run$opts.err" "intruder" || echo "no intruder reported"
	if [ -n "$opts" ]; then
		wait_gone "$intruder" && istate=stopped || istate=RUNNING
	else
		kill -0 "$intruder" 2>/dev/null && istate="left running" || istate=GONE
	fi
	touch "$WORK/job.done"
	wait "$RUN"; rc=$?
	t1=$(now)
	kill "$intruder" 2>/dev/null; wait_gone "$intruder"
	kill -0 "$victim" 2>/dev/null && echo "the reclaimed holder $victim is still alive"
	printf '| run | %s | %s | %s s | %s of %s MiB | %s | %s | %s s |\n' "${opts:--}" "$rc" \
		"$(jq_py "$OUTD/run$opts.json" "'%.3f' % d['elapsed_s']")" \
		"$(sed -n 's/^free_before_mib=//p' "$WORK/job.ready")" "$(sed -n 's/^total_mib=//p' "$WORK/job.ready")" \
		"$(jq_py "$OUTD/run$opts.json" "len(d['run']['intruders'])")" "$istate" "$(secs "$t0" "$t1")" | tee -a "$OUTD/run.md"
	echo "  intruder lines: $(grep -c intruder "$OUTD/run$opts.err")" | tee -a "$OUTD/run.md"
	"$GS" reclaim -y -q --grace 2 >/dev/null 2>&1
done
echo "final used: $(used) MiB" | tee -a "$OUTD/run.md"
rm -rf "$WORK"

#!/bin/bash
# tests/slurm/run.sh: gpuslate as Slurm's Prolog and Epilog, on a real
# one-node cluster (slurmctld + slurmd + munged) started on this machine, with
# the simulated GPU host of docs/testing.md standing for two H200s.
#
# Slurm's gres/gpu is configured for real (gres.conf File= names two device
# nodes that stand for nvidia0 and nvidia1), so jobs get GPUs from Slurm and
# the epilog gets SLURM_JOB_GPUS exactly as on a GPU node. Scenarios:
#   a  a job holds fake GPU memory and ends normally: the prolog finds the GPU
#      clean, the epilog finds nothing to stop, the node stays idle;
#   b  a job leaves a setsid'd, double-forked orphan holding its GPU (it escapes
#      proctrack/linuxproc, as in the field): the epilog stops it, the GPU is
#      clean, the orphan is gone, the node stays idle;
#   s  shared node: job L holds GPU x while job O leaves an orphan on GPU y; O's
#      epilog reclaims y only and L's holder survives; a job with no GPU ends
#      while L runs: its epilog leaves all GPUs alone; L then ends clean;
#   c  an orphan whose memory takes 30 s to come back (fake release_ms) against
#      a 3 s epilog deadline: the epilog exits 1, Slurm drains the node, and
#      the reason shows in `sinfo -R`.
#
# Usage: tests/slurm/run.sh       (root; env GPUSLATE_BUILD, GPUSLATE_BIN)
# Exit status: 0 passed, 1 failed, 77 skipped (no Slurm/munge, or not root).
# Every daemon and process it starts is stopped again by pid. Set
# GPUSLATE_SLURM_KEEP=1 to keep the work directory.
# shellcheck disable=SC2016,SC2317 # checks are eval strings; helpers run indirectly
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${GPUSLATE_BUILD:-$repo/build}
gpuslate=${GPUSLATE_BIN:-$build/gpuslate}
holder=$build/fakes/gs-holder
nvml=$build/fakes/libnvidia-ml.so.1
wrapper=$repo/tools/gpuslate-slurm-epilog

skip() { echo "SKIP: $*"; exit 77; }

missing=
for p in slurmctld slurmd munged sbatch squeue sinfo scontrol scancel; do
	command -v "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] || skip "not installed:$missing (Debian: apt-get install slurmctld slurmd slurm-client munge)"
[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs jobs and the epilog as root)"
for f in "$gpuslate" "$holder" "$nvml"; do
	[ -x "$f" ] || [ -r "$f" ] || { echo "FAIL: $f missing: run make and make fakes first"; exit 1; }
done

T=$(mktemp -d /tmp/gpuslate-slurm-test.XXXXXX) || exit 1
chmod 755 "$T"
node=$(hostname -s)
fails=0
pids=()       # daemons we started, in start order
log() { printf '%s\n' "$*"; }
now() { printf '%s' "${EPOCHREALTIME/[.,]/}"; } # microseconds
secs_since() { local d=$(( $(now) - $1 )); printf '%d.%02d' $((d / 1000000)) $((d % 1000000 / 10000)); }

# Every process started for this test carries this marker in its environment:
# slurmd and the daemons, slurmstepd (it inherits slurmd's), the jobs (sbatch
# exports ours) and the holders they start.
export GPUSLATE_SLURM_TEST=$T
export SLURM_CONF=$T/etc/slurm.conf

ours() { # PIDs whose environment has the marker, except this shell
	local d p
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = $$ ] && continue
		[ "$p" = "$BASHPID" ] && continue
		tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qxF "GPUSLATE_SLURM_TEST=$T" && printf '%s\n' "$p"
	done
}

alive() { # running and not a zombie
	local st
	st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

cleanup() {
	local p n
	trap - EXIT INT TERM
	if [ -n "${ctld_up:-}" ]; then
		scancel --quiet --full "--user=$(id -un)" --partition=test 2>/dev/null
	fi
	# Daemons last-started first, then anything left with our marker.
	for ((n = ${#pids[@]} - 1; n >= 0; n--)); do
		p=${pids[n]}
		kill "$p" 2>/dev/null
		for _ in $(seq 100); do alive "$p" || break; sleep 0.1; done
		alive "$p" && kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for p in $(ours); do kill -9 "$p" 2>/dev/null; done
	if [ "${GPUSLATE_SLURM_KEEP:-0}" = 1 ]; then
		log "# kept $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# wait_until SECS WHAT CMD...: poll CMD every 0.1 s; 0 once it succeeds.
wait_until() {
	local secs=$1 what=$2 t0
	shift 2
	t0=$(now)
	until "$@"; do
		if [ $(( $(now) - t0 )) -gt $((secs * 1000000)) ]; then
			log "# timed out after ${secs}s waiting for: $what"
			return 1
		fi
		sleep 0.1
	done
}

dump_logs() {
	log "# ---- epilog log"; sed 's/^/#   /' "$T/epilog.log" 2>/dev/null
	log "# ---- slurmctld.log (tail)"; tail -n 25 "$T/log/slurmctld.log" 2>/dev/null | sed 's/^/#   /'
	log "# ---- slurmd.log (tail)"; tail -n 40 "$T/log/slurmd.log" 2>/dev/null | sed 's/^/#   /'
	log "# ---- slurmd and slurmctld stdout (errors)"
	grep -h -i -E 'error|fatal' "$T/log/slurmd.out" "$T/log/slurmctld.out" 2>/dev/null | grep -v -E 'pmix|MPI' | tail -n 20 | sed 's/^/#   /'
	log "# ---- sinfo"; sinfo -N -o '%N %T %E' 2>&1 | sed 's/^/#   /'
	log "# ---- squeue"; squeue 2>&1 | sed 's/^/#   /'
}

n_ok=0
ok() { n_ok=$((n_ok + 1)); log "ok - $*"; }
not_ok() { fails=$((fails + 1)); log "not ok - $*"; }
check() { # check DESC CMD...
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
die() { not_ok "$*"; dump_logs; exit 1; }

port_free() {
	local hex
	hex=$(printf ':%04X ' "$1")
	! grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
pick_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		port_free "$p" && port_free $((p + 1)) && { echo "$p"; return 0; }
	done
	return 1
}

# ---- the simulated GPU host ------------------------------------------------
sh "$repo/tests/fakes/mkhost.sh" "$T/host" 2 || die "mkhost.sh failed"
export FAKE_NVML_STATE=$T/host/nvml
export GPUSLATE_DEV_ROOT=$T/host/dev
export GPUSLATE_NVML_LIB=$nvml
export GPUSLATE_LOCK_FILE=$T/gpuslate.lock
export GPUSLATE_STATE_FILE=$T/gpuslate.last-reclaim
# Slurm's gres/gpu wants character devices whose names end in the index; the
# fake nodes are plain files (gs-holder maps them). Stand-ins: links to
# /dev/null and /dev/zero named nvidia0 and nvidia1, in NVML index order.
mkdir -p "$T/gresdev" "$T/etc" "$T/log" "$T/state" "$T/spool" "$T/run" "$T/jobs" "$T/json"
ln -s /dev/null "$T/gresdev/nvidia0"
ln -s /dev/zero "$T/gresdev/nvidia1"

# ---- munge -----------------------------------------------------------------
mkdir -m 700 "$T/munge"
if command -v mungekey >/dev/null 2>&1; then
	mungekey --create --keyfile="$T/munge/munge.key" --bits=1024 >/dev/null 2>&1
fi
[ -s "$T/munge/munge.key" ] || dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
sock=$T/run/munge.sock
munged --foreground --force --socket="$sock" --key-file="$T/munge/munge.key" \
	--pid-file="$T/run/munged.pid" --seed-file="$T/munge/seed" \
	--log-file="$T/log/munged.log" >"$T/log/munged.out" 2>&1 &
pids+=($!)
wait_until 10 "munged socket" test -S "$sock" || die "munged did not start: $(cat "$T/log/munged.out")"

# ---- slurm.conf ------------------------------------------------------------
port=$(pick_port) || die "no free TCP port pair"
cpus=$(nproc)
[ "$cpus" -ge 2 ] || cpus=2 # two one-CPU jobs at once for the shared-node case
cat >"$T/etc/slurm.conf" <<EOF
# Generated by tests/slurm/run.sh
ClusterName=gpuslatetest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=debug
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
Prolog=$T/etc/prolog.sh
Epilog=$T/etc/epilog.sh
PrologEpilogTimeout=60
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=500 Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=10 State=UP
EOF
printf 'NodeName=%s Name=gpu File=%s/gresdev/nvidia[0-1]\n' "$node" "$T" >"$T/etc/gres.conf"
# slurmd loads a cgroup plugin even with proctrack/linuxproc and task/none. On
# a cgroup v2 host without systemd (a CI container) cgroup/v2 cannot ask
# systemd over D-Bus for its scope and slurmd would not start: build the
# hierarchy by hand then. Only read by cgroup/v2. Extra lines for debugging
# from GPUSLATE_SLURM_TEST_CGROUP (e.g. CgroupPlugin=cgroup/v2).
{
	echo "IgnoreSystemdOnFailure=yes"
	printf '%b\n' "${GPUSLATE_SLURM_TEST_CGROUP:-}"
} >"$T/etc/cgroup.conf"

# gpuslate's Slurm settings (the file an admin writes to /etc/gpuslate/slurm.conf)
cat >"$T/etc/gpuslate-slurm.conf" <<EOF
# gpuslate-slurm-epilog settings for this test
GPUSLATE_BIN=$gpuslate
GPUSLATE_EPILOG_GRACE=1
GPUSLATE_EPILOG_TIMEOUT=3
GPUSLATE_PROLOG_TIMEOUT=5
GPUSLATE_EPILOG_LOG_FILE=$T/epilog.log
GPUSLATE_EPILOG_JSON_DIR=$T/json
EOF
# Slurm runs these as root with a minimal environment: set the fake host's
# variables, then the real wrapper (run through bash: no exec bit needed).
for m in prolog epilog; do
	cat >"$T/etc/$m.sh" <<EOF
#!/bin/sh
export GPUSLATE_SLURM_TEST='$T'
export FAKE_NVML_STATE='$FAKE_NVML_STATE' GPUSLATE_DEV_ROOT='$GPUSLATE_DEV_ROOT'
export GPUSLATE_NVML_LIB='$GPUSLATE_NVML_LIB' GPUSLATE_LOCK_FILE='$GPUSLATE_LOCK_FILE'
export GPUSLATE_STATE_FILE='$GPUSLATE_STATE_FILE'
export GPUSLATE_SLURM_CONF='$T/etc/gpuslate-slurm.conf'
exec /bin/bash '$wrapper' $m 2>>'$T/log/$m.stderr'
EOF
	chmod 755 "$T/etc/$m.sh"
done

# ---- start the cluster -----------------------------------------------------
t_start=$(now)
slurmctld -D -i >"$T/log/slurmctld.out" 2>&1 &
pids+=($!)
ctld_up=1
slurmd -D -N "$node" >"$T/log/slurmd.out" 2>&1 &
pids+=($!)

node_state() { sinfo -h -N -n "$node" -o %T 2>/dev/null | head -n 1; }
node_is() { [ "$(node_state)" = "$1" ]; }
ctld_pid=${pids[1]} slurmd_pid=${pids[2]}
up_or_dead() { node_is idle || ! alive "$ctld_pid" || ! alive "$slurmd_pid"; }
wait_until 60 "node $node idle" up_or_dead || die "cluster did not come up"
alive "$slurmd_pid" || die "slurmd exited at start (see its errors below)"
alive "$ctld_pid" || die "slurmctld exited at start (see its errors below)"
ok "one-node cluster up: slurmctld, slurmd, munged; node $node idle in $(secs_since "$t_start")s"

# ---- helpers for jobs ------------------------------------------------------
# Job scripts run as root with our environment (sbatch --export=ALL).
H="$holder --state $FAKE_NVML_STATE --dev-root $GPUSLATE_DEV_ROOT"
submit() { # submit NAME [sbatch options...] -- prints the job id
	local name=$1
	shift
	sbatch --parsable -J "$name" -o "$T/jobs/$name.out" -e "$T/jobs/$name.out" "$@" "$T/jobs/$name.sh"
}
job_line() { grep -E "gpuslate-epilog job=$1 " "$T/epilog.log" 2>/dev/null | tail -n 1; }
prolog_line() { grep -E "gpuslate-prolog job=$1 " "$T/epilog.log" 2>/dev/null | tail -n 1; }
has_epilog_line() { [ -n "$(job_line "$1")" ]; }
job_gone() { [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]; }
settled() { job_gone "$1" && ! node_is completing && ! node_is mixed && ! node_is allocated; }
# wait for a job's epilog line and its completion; prints seconds since $2
finish() {
	local id=$1 t0=$2
	wait_until 60 "epilog of job $id" has_epilog_line "$id" || return 1
	wait_until 30 "job $id to leave the queue" job_gone "$id" || return 1
	secs_since "$t0"
}
exit_code() { scontrol show job "$1" 2>/dev/null | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p'; }
ready_pid() { sed -n "s/^$2=//p" "$1" 2>/dev/null | head -n 1; }
no_reason() { [ -z "$(sinfo -h -R -n "$node" -o %E 2>/dev/null)" ]; }
json_reason_ok() { # the JSON report's reason: ours, one line
	grep -q "^  \"reason\": \"slurm epilog job=$1\",\$" "$T/json/job-$1-epilog.json"
}

# ---- a: a job that holds GPU memory and ends normally ----------------------
cat >"$T/jobs/a.sh" <<EOF
#!/bin/bash
g=\${SLURM_JOB_GPUS%%,*}
$H --gpu "\$g" --mib 2048 --ready-file $T/jobs/a.ready &
h=\$!
for _ in \$(seq 200); do [ -s $T/jobs/a.ready ] && break; sleep 0.05; done
ls $FAKE_NVML_STATE/ctx | grep -q "^\$h-" || { echo "no context"; exit 3; }
kill \$h; wait \$h
echo "gpus=\$SLURM_JOB_GPUS cvd=\$CUDA_VISIBLE_DEVICES done"
EOF
t0=$(now)
id=$(submit a --gres=gpu:1) || die "sbatch a failed"
took=$(finish "$id" "$t0") || die "scenario a: job $id did not finish"
line=$(job_line "$id")
log "# a: $line"
log "# a: $(prolog_line "$id")"
check "a: job $id held fake GPU memory and exited 0" [ "$(exit_code "$id")" = 0:0 ]
check "a: prolog found the job's GPU clean before it started" eval '[[ "$(prolog_line "$id")" == *": clean in "* ]]'
check "a: epilog got the job's GPU from Slurm (SLURM_JOB_GPUS) and found nothing to stop" \
	eval '[[ "$line" =~ gpus=[01]:\ clean\ in\ [0-9.]+s$ ]]'
check "a: JSON report reason is the --reason text" json_reason_ok "$id"
wait_until 20 "node idle" settled "$id"
check "a: node stays idle, no drain reason (job submit to node idle: ${took}s)" eval 'node_is idle && no_reason'

# ---- b: a job that leaves a setsid'd orphan on its GPU ---------------------
cat >"$T/jobs/b.sh" <<EOF
#!/bin/bash
g=\${SLURM_JOB_GPUS%%,*}
# double fork: the holder is reparented and calls setsid(), escaping the job
( $H --setsid --gpu "\$g" --mib 3590 --ready-file $T/jobs/b.ready </dev/null >/dev/null 2>&1 & )
for _ in \$(seq 200); do [ -s $T/jobs/b.ready ] && break; sleep 0.05; done
echo "gpu=\$g orphan=\$(sed -n 's/^pid=//p' $T/jobs/b.ready)"
EOF
t0=$(now)
id=$(submit b --gres=gpu:1) || die "sbatch b failed"
took=$(finish "$id" "$t0") || die "scenario b: job $id did not finish"
line=$(job_line "$id")
orphan=$(ready_pid "$T/jobs/b.ready" pid)
log "# b: $line"
check "b: job $id exited 0, leaving orphan $orphan" eval '[ "$(exit_code "$id")" = 0:0 ] && [ -n "$orphan" ]'
check "b: epilog stopped the orphan and found the GPU clean" \
	eval '[[ "$line" =~ gpus=[01]:\ clean\ in\ [0-9.]+s\ \(stopped\ 1\ process:\ [0-9]+\ gs-holder\)$ ]]'
check "b: the orphan is gone" eval '! alive "$orphan"'
check "b: its fake GPU context is gone" eval '! ls "$FAKE_NVML_STATE/ctx" | grep -q "^$orphan-"'
wait_until 20 "node idle" settled "$id"
check "b: node stays idle, no drain reason (job submit to node idle: ${took}s)" eval 'node_is idle && no_reason'

# ---- s: shared node: two jobs, one GPU each --------------------------------
cat >"$T/jobs/long.sh" <<EOF
#!/bin/bash
g=\${SLURM_JOB_GPUS%%,*}
$H --gpu "\$g" --mib 1000 --ready-file $T/jobs/long.ready &
h=\$!
echo "gpu=\$g" > $T/jobs/long.gpu
for _ in \$(seq 1200); do [ -e $T/jobs/long.stop ] && break; sleep 0.05; done
kill \$h; wait \$h
EOF
cat >"$T/jobs/orph.sh" <<EOF
#!/bin/bash
g=\${SLURM_JOB_GPUS%%,*}
echo "gpu=\$g" > $T/jobs/orph.gpu
( $H --setsid --gpu "\$g" --mib 2000 --ready-file $T/jobs/orph.ready </dev/null >/dev/null 2>&1 & )
for _ in \$(seq 200); do [ -s $T/jobs/orph.ready ] && break; sleep 0.05; done
EOF
cat >"$T/jobs/nogpu.sh" <<EOF
#!/bin/bash
echo "no GPU: SLURM_JOB_GPUS=\${SLURM_JOB_GPUS:-unset}"
EOF
long=$(submit long --gres=gpu:1) || die "sbatch long failed"
wait_until 30 "job $long's holder" test -s "$T/jobs/long.ready" || die "scenario s: job $long did not start its holder"
lholder=$(ready_pid "$T/jobs/long.ready" pid)
t0=$(now)
id=$(submit orph --gres=gpu:1) || die "sbatch orph failed"
took=$(finish "$id" "$t0") || die "scenario s: job $id did not finish"
line=$(job_line "$id")
lg=$(ready_pid "$T/jobs/long.gpu" gpu)
og=$(ready_pid "$T/jobs/orph.gpu" gpu)
orphan=$(ready_pid "$T/jobs/orph.ready" pid)
log "# s: job $long holds GPU $lg (pid $lholder); job $id left orphan $orphan on GPU $og"
log "# s: $line"
check "s: Slurm gave the two jobs different GPUs" eval '[ -n "$lg" ] && [ -n "$og" ] && [ "$lg" != "$og" ]'
check "s: epilog of job $id reclaimed GPU $og only, clean" \
	eval '[[ "$line" == *" gpus=$og: clean in "*"(stopped 1 process: $orphan gs-holder)" ]]'
check "s: the orphan is gone" eval '! alive "$orphan"'
check "s: job $long's holder on GPU $lg survived the other job's epilog" alive "$lholder"
t0=$(now)
id=$(submit nogpu) || die "sbatch nogpu failed"
finish "$id" "$t0" >/dev/null || die "scenario s: job $id did not finish"
line=$(job_line "$id")
log "# s: $line"
check "s: job without GPUs on a shared node: epilog leaves every GPU alone" \
	eval '[[ "$line" == *"gpus=none: no GPU list from Slurm and other jobs ($long) run here: left alone" ]]'
check "s: job $long's holder still alive" alive "$lholder"
: >"$T/jobs/long.stop"
took=$(finish "$long" "$t0") || die "scenario s: job $long did not finish"
line=$(job_line "$long")
log "# s: $line"
check "s: job $long ended normally, its epilog found GPU $lg clean" \
	eval '[[ "$line" =~ gpus=$lg:\ clean\ in\ [0-9.]+s$ ]]'
wait_until 20 "node idle" settled "$long"
check "s: node idle, no drain reason" eval 'node_is idle && no_reason'

# ---- c: an orphan that cannot be cleaned within the deadline ---------------
cat >"$T/jobs/c.sh" <<EOF
#!/bin/bash
g=\${SLURM_JOB_GPUS%%,*}
# Its memory takes 30 s to come back after it dies (pinned host memory),
# against GPUSLATE_EPILOG_TIMEOUT=3.
( $H --setsid --gpu "\$g" --mib 3590 --release-ms 30000 --ready-file $T/jobs/c.ready </dev/null >/dev/null 2>&1 & )
for _ in \$(seq 200); do [ -s $T/jobs/c.ready ] && break; sleep 0.05; done
EOF
drained() { node_is drained; }
t0=$(now)
id=$(submit c --gres=gpu:1) || die "sbatch c failed"
finish "$id" "$t0" >/dev/null || die "scenario c: job $id did not finish"
wait_until 30 "node drained" drained
took=$(secs_since "$t0")
line=$(job_line "$id")
orphan=$(ready_pid "$T/jobs/c.ready" pid)
reason=$(sinfo -h -R -n "$node" -o '%E' 2>/dev/null)
log "# c: $line"
log "# c: sinfo -R: $reason"
check "c: epilog reported NOT CLEAN with the GPU and the memory" \
	eval '[[ "$line" =~ gpus=[01]:\ NOT\ CLEAN\ after\ [0-9.]+s:\ GPU\ [01]\ 3590\ MiB\ used ]]'
check "c: the orphan itself was stopped" eval '! alive "$orphan"'
check "c: node drained (job submit to drained: ${took}s)" drained
check "c: the drain reason shows in sinfo -R ($reason)" eval '[ -n "$reason" ]'
fit_for_reason() { # one line, no quotes or backslashes, at most 240 bytes
	case $1 in *[\"\'\`\\]* | *$'\n'* | '') return 1 ;; esac
	[ ${#1} -le 240 ]
}
check "c: epilog line is one short line without quotes, fit for scontrol reason=" fit_for_reason "$line"

log "# total $(secs_since "$t_start")s"
if [ "$fails" -gt 0 ]; then
	dump_logs
	log "FAIL: $fails of $((n_ok + fails)) checks failed"
	exit 1
fi
log "PASS: $n_ok checks"
exit 0

# Shared by bench/gpu/*.sh: start real GPU holders and wait for them.
B=${GPUSLATE_BUILD:-$PWD/build}
GS=$B/gpuslate
FLOOR=$B/bench/floor
HOLDER=$PWD/bench/gpu/holder.py
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
WORK=$(mktemp -d)
n_ready=0

# start_holder MODE GIB [HOST_GIB]: starts one, sets $HPID and $HCHILD when ready.
start_holder() {
	n_ready=$((n_ready + 1))
	local rf=$WORK/ready.$n_ready
	python3 "$HOLDER" "$1" "$rf" "${2:-1}" "${3:-0}" >"$WORK/holder.$n_ready.log" 2>&1 &
	local launcher=$!
	local i=0
	# A condition, bounded: CUDA init and allocation take seconds.
	while [ ! -f "$rf" ]; do
		if ! kill -0 "$launcher" 2>/dev/null; then
			echo "holder $1 failed:"; cat "$WORK/holder.$n_ready.log"; return 1
		fi
		i=$((i + 1)); [ $i -gt 1200 ] && { echo "holder $1 not ready after 120 s"; return 1; }
		sleep 0.1
	done
	HPID=$(sed -n 's/^pid=//p' "$rf")
	HCHILD=$(sed -n 's/^child=//p' "$rf")
}

# start_ns_holder MODE GIB: a holder that is PID 1 of its own PID namespace
# (unshare --pid --fork, as a container's main process without an init);
# python installs no SIGTERM handler, so the kernel drops a SIGTERM from the
# host. Sets $HPID to its HOST pid (the ready file says pid=1: never use it).
start_ns_holder() {
	n_ready=$((n_ready + 1))
	local rf=$WORK/ready.$n_ready
	# --mount-proc, as a container has its own /proc: CUDA fails to
	# initialise (error 304) in a PID namespace that sees the host's /proc
	# (measured on the H200).
	unshare --pid --fork --kill-child --mount-proc python3 "$HOLDER" "$1" "$rf" "${2:-1}" 0 >"$WORK/holder.$n_ready.log" 2>&1 &
	local launcher=$!
	local i=0
	while [ ! -f "$rf" ]; do
		if ! kill -0 "$launcher" 2>/dev/null; then
			echo "ns holder $1 failed:"; cat "$WORK/holder.$n_ready.log"; return 1
		fi
		i=$((i + 1)); [ $i -gt 1200 ] && { echo "ns holder $1 not ready after 120 s"; return 1; }
		sleep 0.1
	done
	HPID=$(cat "/proc/$launcher/task/$launcher/children" 2>/dev/null | awk '{print $1}')
	HCHILD=
	case $HPID in
	'' | 1 | *[!0-9]*) echo "ns holder $1: no host pid (got '$HPID')"; HPID=; return 1 ;;
	esac
	# The ready file's pid is the namespace's own: overwrite it with the
	# host pid, so nothing below ever reads pid=1.
	echo "pid=$HPID" >"$rf"
}

# wait_gone PID: until the process is gone (bounded).
wait_gone() {
	local i=0
	while kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' /proc/$1/stat 2>/dev/null)" != Z ]; do
		i=$((i + 1)); [ $i -gt 600 ] && return 1
		sleep 0.05
	done
}

now() { date +%s.%N; }

# secs T0 T1: elapsed seconds (no bc on the GPU machine).
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# used: MiB in use on GPU 0, as nvidia-smi (NVML, read on its own) says.
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1; }

# wait_file F: until F exists (bounded, 120 s: CUDA init takes seconds).
wait_file() {
	for _ in $(seq 1200); do [ -f "$1" ] && return 0; sleep 0.1; done
	return 1
}

# watch30: over the next 30 s, once a second, the most memory NVML shows and
# the seconds until the GPU was first held above $IDLE (0: never), as
# "MAX FIRST". The caller sets IDLE=$(used) first.
watch30() {
	local max=0 first=0 u t0
	t0=$(now)
	for _ in $(seq 30); do
		u=$(used)
		[ "$u" -gt "$max" ] && max=$u
		[ "$first" = 0 ] && [ "$u" -gt "$((IDLE + 2))" ] && first=$(secs "$t0" "$(now)")
		sleep 1
	done
	echo "$max $first"
}

# Sourced by tests/analysis/{valgrind,failalloc}.sh: a simulated GPU host
# (tests/fakes/mkhost.sh) in a temporary directory $T, gpuslate's
# environment pointed at it, and holder() / alive() to start and check
# holders. Expects $B (build dir) and $TOOL (name for messages); sets GS,
# HOLDER and T, and a trap that ends every holder by PID.
GS=$PWD/$B/gpuslate
HOLDER=$PWD/$B/fakes/gs-holder
T=$(mktemp -d "/tmp/gs-$TOOL.XXXXXX")
# Holders are started inside $(...) subshells: their pids go to a file.
cleanup() {
	local p
	[ -f "$T/pids" ] && while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$T/pids"
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

sh tests/fakes/mkhost.sh "$T/host" 2 || exit 1
export FAKE_NVML_STATE=$T/host/nvml GPUSLATE_DEV_ROOT=$T/host/dev GPUSLATE_NVIDIA_PROCFS=$T/host/driver \
	GPUSLATE_NVML_LIB=$PWD/$B/fakes/libnvidia-ml.so.1 GPUSLATE_LOCK_FILE=$T/lock GPUSLATE_NO_PROGRESS=1 \
	GPUSLATE_STATE_FILE=$T/state NO_COLOR=1
mkdir -p "$T/bin"
# A copy, not a symlink: a daemon is protected by its executable, not its name.
install -m 0755 "$HOLDER" "$T/bin/nvidia-persistenced"

# holder NAME ARGS...: start a holder, wait (bounded) for its ready file,
# print its pid.
holder() {
	local name=$1
	shift
	rm -f "$T/$name.ready"
	"$@" --ready-file "$T/$name.ready" </dev/null >>"$T/$name.log" 2>&1 &
	echo $! >>"$T/pids"
	for _ in $(seq 500); do [ -f "$T/$name.ready" ] && break; sleep 0.01; done
	[ -f "$T/$name.ready" ] || { echo "$TOOL.sh: holder $name did not start" >&2; cat "$T/$name.log" >&2; exit 1; }
	sed -n 's/^pid=//p' "$T/$name.ready"
}
alive() { [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

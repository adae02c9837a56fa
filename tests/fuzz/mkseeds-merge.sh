#!/bin/bash
# Regenerates tests/fuzz/corpus/merge/ from real gpuslate --json documents
# on the simulated host (needs `make build/gpuslate fakes`). The first two
# bytes of each seed are fuzz_merge's header: command/state, exit code.
set -euo pipefail
cd "$(dirname "$0")/../.."
C=tests/fuzz/corpus/merge
T=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done; wait 2>/dev/null || :; rm -rf "$T"; }
trap cleanup EXIT
sh tests/fakes/mkhost.sh "$T" 2
export FAKE_NVML_STATE=$T/nvml GPUSLATE_DEV_ROOT=$T/dev GPUSLATE_NVIDIA_PROCFS=$T/driver \
	GPUSLATE_NVML_LIB=$PWD/build/fakes/libnvidia-ml.so.1 GPUSLATE_LOCK_FILE=$T/lock GPUSLATE_STATE_FILE=$T/state GPUSLATE_NO_PROGRESS=1
# A root-owned copy: protection rests on the executable, not on a symlink's name.
install -m 0755 "$PWD/build/fakes/gs-holder" "$T/nvidia-persistenced"
build/fakes/gs-holder --gpu 0 --mib 2048 --ready-file "$T/a" & pids+=($!)
build/fakes/gs-holder --gpu 1 --client --ready-file "$T/b" & pids+=($!)
"$T/nvidia-persistenced" --gpu 1 --mib 300 --ready-file "$T/c" & pids+=($!)
for f in a b c; do while [ ! -f "$T/$f" ]; do sleep 0.02; done; done
mkdir -p "$C"
seed() { # seed NAME HEADER(2 bytes, printf escapes) ARGS...
	local name=$1 hdr=$2 rc=0
	shift 2
	{ printf '%b' "$hdr"; build/gpuslate "$@" 2>/dev/null || rc=$?; } >"$C/$name"
	printf '%s: exit %d, %d bytes\n' "$name" "$rc" "$(stat -c %s "$C/$name")"
}
seed status_busy '\000\000' status --json
seed wait_busy '\002\001' wait --timeout 0.3 --json
seed reclaim_dry '\001\000' reclaim --dry-run --json
seed reclaim_no_match '\001\007' reclaim -y --unit no-such.service --json
seed reclaim_clean '\001\000' reclaim -y --grace 2 --json
seed status_clean '\000\000' status --json
echo 'fail nvmlInit_v2 18' >"$T/nvml/inject"
seed status_procfs '\000\000' status --json
# early failures (docs/json.md): a usage error, and the lock held by another reclaim
rm -f "$T/nvml/inject"
seed status_usage_error '\000\002' status -g 7 --json
flock -o -x "$T/lock" sleep 60 & pids+=($!) # -o: ended with flock, the lock goes
while flock -n -x "$T/lock" true; do sleep 0.02; done
seed reclaim_lock_refused '\001\005' reclaim -y --timeout 0.1 --json
# a failed host: ssh's words on stderr after the NUL
printf '\000\377\000ssh: connect to host gpu01 port 22: Connection refused\r\n' >"$C/ssh_refused"

#!/bin/bash
# gpuslate's nvidia-smi compatible queries against nvidia-smi itself, field
# by field, on a real GPU host: every field --query-gpu and
# --query-compute-apps accept, in every --format gpuslate takes, with holders
# started under different argv[0]s (python3 from PATH, an absolute path, a
# name set with exec -a, a symlink) and a forked child whose parent is dead.
# The point is process_name: gpuslate prints argv[0]; this records what
# nvidia-smi prints for each case.
#
#   bench/gpu/query.sh OUTDIR     (run from the repository root, as root,
#                                  after `make build/gpuslate`)
#
# Writes OUTDIR/query-report.txt: one line per comparison, "identical" or
# "DIFFERENT" followed by both outputs. Starts real PyTorch holders
# (bench/gpu/holder.py) and ends them with gpuslate reclaim at the end.
set -u
OUTD=${1:-/tmp/gpuslate-query}
mkdir -p "$OUTD"
. bench/gpu/lib.sh

gpu_fields="index uuid name pci.bus_id driver_version count memory.total memory.reserved memory.used memory.free"
app_fields="pid process_name name gpu_name gpu_uuid gpu_bus_id used_memory used_gpu_memory"
formats="csv csv,noheader csv,nounits csv,noheader,nounits"

# compare LABEL SORT -- ARGS...: nvidia-smi ARGS and gpuslate status ARGS.
compare() {
	local label=$1 sort=$2
	shift 3
	nvidia-smi "$@" >"$OUTD/smi.txt" 2>&1
	"$GS" status -q "$@" >"$OUTD/gs.txt" 2>&1
	if [ "$sort" = sort ]; then
		sort -o "$OUTD/smi.txt" "$OUTD/smi.txt"
		sort -o "$OUTD/gs.txt" "$OUTD/gs.txt"
	fi
	if cmp -s "$OUTD/smi.txt" "$OUTD/gs.txt"; then
		echo "identical: $label"
	else
		echo "DIFFERENT: $label"
		echo "  nvidia-smi:"; sed 's/^/    /' "$OUTD/smi.txt"
		echo "  gpuslate:"; sed 's/^/    /' "$OUTD/gs.txt"
	fi
}

{
echo "## host"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; uname -r

echo; echo "## holders"
# argv[0] "python3" (from PATH)
start_holder plain 1 || exit 1; P_PLAIN=$HPID
# argv[0] an absolute path
PY=$(command -v python3)
n_ready=$((n_ready + 1)); rf=$WORK/ready.$n_ready
"$PY" "$HOLDER" plain "$rf" 1 0 >"$WORK/abs.log" 2>&1 &
for _ in $(seq 1200); do [ -f "$rf" ] && break; sleep 0.1; done
P_ABS=$(sed -n 's/^pid=//p' "$rf")
# Python finds its venv (and PyTorch) from argv[0]: under another argv[0]
# or a symlink elsewhere it would start without it (both holders failed to
# start in the first run), so those two get the venv's site-packages.
VENV_SITE=$("$PY" -c 'import site; print(":".join(site.getsitepackages()))')
# argv[0] set with exec -a (what ps shows, not the executable's path)
n_ready=$((n_ready + 1)); rf=$WORK/ready.$n_ready
PYTHONPATH=$VENV_SITE bash -c 'exec -a my-server "$@"' _ "$PY" "$HOLDER" plain "$rf" 1 0 >"$WORK/execa.log" 2>&1 &
for _ in $(seq 1200); do [ -f "$rf" ] && break; sleep 0.1; done
P_EXECA=$(sed -n 's/^pid=//p' "$rf")
# a symlink with another name
ln -sf "$(readlink -f "$PY")" "$WORK/trainer"
n_ready=$((n_ready + 1)); rf=$WORK/ready.$n_ready
PYTHONPATH=$VENV_SITE "$WORK/trainer" "$HOLDER" plain "$rf" 1 0 >"$WORK/link.log" 2>&1 &
for _ in $(seq 1200); do [ -f "$rf" ] && break; sleep 0.1; done
P_LINK=$(sed -n 's/^pid=//p' "$rf")
# a forked child holding a dead parent's memory
start_holder fork 1 || exit 1; P_FORK=$HPID; P_CHILD=$HCHILD
kill -9 "$P_FORK"; wait "$P_FORK" 2>/dev/null; wait_gone "$P_FORK"
for p in $P_PLAIN $P_ABS $P_EXECA $P_LINK $P_CHILD; do
	printf '%s argv0=%s exe=%s comm=%s\n' "$p" "$(tr '\0' '\n' </proc/$p/cmdline | head -n 1)" \
		"$(readlink /proc/$p/exe)" "$(cat /proc/$p/comm)"
done
echo "dead fork parent: $P_FORK"

echo; echo "## --query-gpu, every field, every format"
for f in $formats; do
	for q in $gpu_fields; do
		compare "--query-gpu=$q --format=$f" keep -- --query-gpu="$q" --format="$f"
	done
	compare "--query-gpu=(all) --format=$f" keep -- --query-gpu="$(echo $gpu_fields | tr ' ' ,)" --format="$f"
done

echo; echo "## --query-compute-apps, every field, every format (lines sorted)"
for f in $formats; do
	for q in $app_fields; do
		compare "--query-compute-apps=pid,$q --format=$f" sort -- --query-compute-apps="pid,$q" --format="$f"
	done
done

echo; echo "## process_name per holder (nvidia-smi, then gpuslate)"
nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | sort
echo "--"
"$GS" status -q --query-compute-apps=pid,process_name --format=csv,noheader | sort

echo; echo "## clean-up"
"$GS" reclaim -y -q --grace 5 >/dev/null; echo "gpuslate reclaim exit $?"
nvidia-smi --query-gpu=index,memory.used --format=csv,noheader
} 2>&1 | tee "$OUTD/query-report.txt"
rm -rf "$WORK"

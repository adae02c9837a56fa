#!/bin/bash
# Process supervisors as owners (issue 24, item 5), on a real GPU with a
# PyTorch holder: a supervisord program with autorestart=true and a runit
# service (runsvdir/runsv), each reclaimed, then read independently through
# nvidia-smi once a second for 30 s (the most memory seen: a "clean" verdict
# agrees only when that stayed at the idle figure), then restored with
# `gpuslate restore -y` (how long until the program holds the GPU again).
# The same supervisord with --no-units (its tool never asked) shows what
# the verdict is when the program is only signalled.
#
# supervisord and runit come from this machine's packages when installed,
# else from .devbuild/sup (bench/gpu/prepare-devbuild.sh copies Debian's
# supervisor package and runit's runsvdir, runsv and sv there).
#
#   bench/gpu/supervisors.sh OUTDIR     (as root, from the repository root)
set -u
OUTD=${1:-/tmp/gpuslate-supervisors}
mkdir -p "$OUTD"
. bench/gpu/lib.sh
IDLE=$(used)
SUP=$PWD/.devbuild/sup
mkdir -p "$WORK/bin"
# The tools, as a package would install them: root's, 0755 (gpuslate
# trusts a supervisor's executable only then).
if ! command -v supervisord >/dev/null && [ -d "$SUP/py/supervisor" ]; then
	# The Python that has torch (the holder's), as the interpreter.
	PY=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
	for t in supervisord supervisorctl; do
		printf '#!%s\nimport sys\nsys.path.insert(0, "%s/py")\nfrom supervisor.%s import main\nsys.exit(main())\n' \
			"$PY" "$SUP" "$t" >"$WORK/bin/$t"
		chmod 0755 "$WORK/bin/$t"
	done
fi
if ! command -v runsv >/dev/null && [ -x "$SUP/bin/runsv" ]; then
	for t in runsvdir runsv sv; do install -o root -g root -m 0755 "$SUP/bin/$t" "$WORK/bin/$t"; done
fi
export PATH=$WORK/bin:$PATH

held_again() { # seconds until the GPU is held again (at most 60)
	local t0 u
	t0=$(now)
	for _ in $(seq 600); do
		u=$(used)
		[ "$u" -gt "$((IDLE + 2))" ] && { secs "$t0" "$(now)"; return; }
		sleep 0.1
	done
	echo never
}
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }

echo "idle used: $IDLE MiB; gpuslate $("$GS" --version); $(supervisord --version 2>/dev/null | head -n 1 | sed 's/^/supervisord /')" | tee "$OUTD/supervisors.md"
echo '| supervisor | options | verdict | exit | reclaim took | stopped through | most used in 30 s | held again after (s) | verdict agrees | restore: held again after (s) |' | tee -a "$OUTD/supervisors.md"
echo '|---|---|---|---|---|---|---|---|---|---|' | tee -a "$OUTD/supervisors.md"

# scenario NAME OPTS STATUS_CMD: reclaim, verdict, 30 s of NVML, restore.
scenario() {
	local name=$1 opts=$2 t0 t1 rc verdict thr max first agree j again=-
	j=$OUTD/$(echo "$name" | tr -c 'a-z0-9\n' _)${opts:+_opts}
	t0=$(now)
	# shellcheck disable=SC2086
	"$GS" reclaim -y --grace 5 $opts --json >"$j.json" 2>"$j.err"; rc=$?
	t1=$(now)
	verdict=$(jget "$j.json" "d['verdict']")
	thr=$(jget "$j.json" "','.join('%s:%s' % (u['runtime'], 'yes' if u['stopped'] else 'no') for u in d['units']) or '-'")
	read -r max first <<<"$(watch30)"
	if [ "$verdict" = clean ]; then [ "$max" -le "$((IDLE + 2))" ] && agree=yes || agree=NO; else agree=yes; fi
	echo "  status after 30 s: $($3 2>&1 | head -n 1)" >>"$OUTD/supervisors.log"
	if [ "$rc" = 0 ]; then
		"$GS" restore -y --json >"$j.restore.json" 2>&1
		again=$(held_again)
	fi
	printf '| %s | %s | %s | exit %s | %s s | %s | %s MiB | %s | %s | %s |\n' "$name" "${opts:--}" "$verdict" "$rc" \
		"$(secs "$t0" "$t1")" "$thr" "$max" "${first/#0/-}" "$agree" "$again" | tee -a "$OUTD/supervisors.md"
}

# supervisord: one program, autorestart=true (restarted on any exit it did
# not ask for), startsecs=0.
if command -v supervisord >/dev/null; then
	cat >"$WORK/sd.conf" <<-CONF
		[unix_http_server]
		file=$WORK/sd.sock
		[supervisord]
		nodaemon=true
		logfile=$WORK/sd.log
		pidfile=$WORK/sd.pid
		childlogdir=$WORK
		[rpcinterface:supervisor]
		supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface
		[supervisorctl]
		serverurl=unix://$WORK/sd.sock
		[program:llm]
		command=python3 $HOLDER plain $WORK/sd.ready 4 0 --run 1
		autorestart=true
		startsecs=0
		environment=PYTHONUNBUFFERED="1"
	CONF
	supervisord -c "$WORK/sd.conf" >"$WORK/sd.out" 2>&1 &
	SD=$!
	wait_file "$WORK/sd.ready" || { cat "$WORK/sd.out" "$WORK/sd.log"; }
	scenario "supervisord program, autorestart=true" "" "supervisorctl -c $WORK/sd.conf status llm"
	rm -f "$WORK/sd.ready"; wait_file "$WORK/sd.ready"
	scenario "supervisord program, autorestart=true" "--no-units" "supervisorctl -c $WORK/sd.conf status llm"
	supervisorctl -c "$WORK/sd.conf" stop all >/dev/null 2>&1
	kill "$SD"; wait "$SD" 2>/dev/null
else
	echo "| supervisord | - | not run: no supervisord here | | | | | | | |" | tee -a "$OUTD/supervisors.md"
fi

# runit: a service directory under runsvdir.
if command -v runsv >/dev/null; then
	mkdir -p "$WORK/sv/llm" "$WORK/service"
	printf '#!/bin/sh\nexec python3 %s plain %s 4 0 --run 1\n' "$HOLDER" "$WORK/rs.ready" >"$WORK/sv/llm/run"
	chmod +x "$WORK/sv/llm/run"
	ln -s "$WORK/sv/llm" "$WORK/service/llm"
	runsvdir "$WORK/service" >/dev/null 2>&1 &
	RS=$!
	wait_file "$WORK/rs.ready"
	scenario "runit service (runsv)" "" "sv status $WORK/sv/llm"
	sv -w 10 force-stop "$WORK/sv/llm" >/dev/null 2>&1
	kill -HUP "$RS"; wait "$RS" 2>/dev/null
else
	echo "| runit | - | not run: no runsv here | | | | | | | |" | tee -a "$OUTD/supervisors.md"
fi
"$GS" reclaim -y -q --grace 2 >/dev/null 2>&1
echo "final used: $(used) MiB" | tee -a "$OUTD/supervisors.md"
cat "$OUTD/supervisors.log" 2>/dev/null
rm -rf "$WORK"

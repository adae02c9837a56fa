#!/usr/bin/env bats
# Help per command: `gpuslate CMD --help` (and `gpuslate help CMD`) lists the
# options that apply to CMD and no other; what it lists is what the parser
# takes for CMD, checked against the parser itself for every option of the
# option table. `gpuslate --help` is the overview. The Slurm wrapper's --help.
#
# Run by `make test-e2e` (GPUSLATE_BIN, GPUSLATE_BUILD).

CMDS="status reclaim wait restore run"
# In no help (and taken by every command): passed by gpuslate itself to the
# far side of a fleet command.
HIDDEN="--remote"

bats_require_minimum_version 1.5.0

setup_file() {
	export ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	export BUILD="${GPUSLATE_BUILD:-$ROOT/build}"
	export BIN="${GPUSLATE_BIN:-$BUILD/gpuslate}"
}

setup() {
	TMP="$(mktemp -d "${BATS_TMPDIR:-/tmp}/gs-help.XXXXXX")"
}

teardown() {
	rm -rf "$TMP"
}

# listed CMD: the long options CMD's help lists, one a line, with the name of
# their argument when they take one ("--grace TIME").
listed() {
	"$BIN" help "$1" | sed -nE 's/^ +(-[a-zA-Z0-9], )?(--[a-z0-9-]+)( ([A-Z]+))?( .*)?$/\2 \4/p' | sed 's/ $//'
}

# The long options of the option table (src/core/options.c).
table_long() {
	sed -n '/gs_options\[\] = {/,/^};/p' "$ROOT/src/core/options.c" | grep -o '{ "[a-z0-9-]*"' |
		cut -d'"' -f2 | sed 's/^/--/' | sort -u
}

# A valid value for an argument name, so that only the option's validity for
# the command decides (a bad value is an error before that check).
value_for() {
	case $1 in
	TIME | MIB | N) echo 1 ;;
	GPUS) echo 0 ;;
	FIELDS) echo index ;;
	FMT) echo prometheus ;;
	CMD) echo false ;;
	'') ;;
	*) echo x ;;
	esac
}

# takes CMD OPTION [VALUE]: whether the parser accepts OPTION for CMD. The
# run can do nothing: an invalid -g (an error found after the check of which
# options a command takes) ends it, and restore, which takes no -g, only
# plans (-n) from an empty state file; a fleet prints what it would run.
takes() {
	local cmd=$1 extra
	shift
	case $cmd in
	restore) extra=(-n) ;;
	*) extra=(-g 'not-a-gpu!') ;;
	esac
	[ "$cmd" = run ] && set -- "$@" "${extra[@]}" -- true || set -- "$@" "${extra[@]}"
	out=$(env GPUSLATE_STATE_FILE="$TMP/state" GPUSLATE_STOPPED_FILE="$TMP/stopped" \
		GPUSLATE_LOCK_FILE="$TMP/lock" GPUSLATE_FLEET_PRINT_ARGV=1 GPUSLATE_SSH=false \
		GPUSLATE_DEV_ROOT="$TMP" timeout 20 "$BIN" "$cmd" "$@" </dev/null 2>&1)
	! grep -q "unknown option" <<<"$out" || { echo "$cmd $*: $out" >&2; return 2; }
	! grep -q "is not valid for '$cmd'" <<<"$out"
}

@test "help: CMD --help and help CMD print the same page, exit 0, on stdout" {
	for c in $CMDS; do
		run "$BIN" "$c" --help
		[ "$status" -eq 0 ] || { echo "$c --help: $status"; return 1; }
		a=$output
		run --separate-stderr "$BIN" help "$c"
		[ "$status" -eq 0 ] && [ -z "$stderr" ] && [ "$output" = "$a" ] || { echo "help $c differs"; return 1; }
		grep -q "^ gpuslate \[options\] $c " <<<"$a" || { echo "$c: no usage line"; return 1; }
		# options before the command word too, as git's
		run "$BIN" -q "$c" -h
		[ "$output" = "$a" ] || { echo "-q $c -h differs"; return 1; }
	done
	# the pages differ: each is its command's
	[ "$("$BIN" help wait)" != "$("$BIN" help run)" ]
}

@test "help: every option a command's help lists is taken by it, and every option it takes is listed" {
	table_long >"$TMP/table"
	[ "$(wc -l <"$TMP/table")" -ge 35 ]
	# first every page: an option's argument is named on the pages that list it
	for c in $CMDS; do
		listed "$c" >"$TMP/$c.listed"
		[ -s "$TMP/$c.listed" ]
		cut -d' ' -f1 "$TMP/$c.listed" | sort -u >"$TMP/$c.names"
	done
	for c in $CMDS; do
		while read -r o; do
			grep -qx -- "$o" <<<"$HIDDEN" && continue
			arg=$(grep -- "^$o " "$TMP"/*.listed | head -n 1 | cut -d' ' -f2)
			v=$(value_for "$arg")
			if takes "$c" "$o" ${v:+"$v"}; then
				grep -qx -- "$o" "$TMP/$c.names" || { echo "$c takes $o, its help does not list it"; return 1; }
			else
				[ $? -eq 1 ] || return 1
				! grep -qx -- "$o" "$TMP/$c.names" || { echo "$c --help lists $o, which $c refuses"; return 1; }
			fi
		done <"$TMP/table"
	done
	# The union of the pages is the table, but the hidden option.
	cat "$TMP"/*.names | sort -u >"$TMP/all"
	missing=$(comm -23 "$TMP/table" "$TMP/all" | grep -vxF -- "$HIDDEN" || :)
	[ -z "$missing" ] || { echo "in no command's help: $missing"; return 1; }
}

@test "help: wait lists no reclaim or run options and no fleet for run; each the issue named" {
	listed wait | cut -d' ' -f1 >"$TMP/wait"
	for o in --guard --include-parent --restore --grace --yes --dry-run --user --match; do
		! grep -qx -- "$o" "$TMP/wait" || { echo "wait lists $o"; return 1; }
	done
	grep -qx -- --timeout "$TMP/wait"
	listed run | cut -d' ' -f1 >"$TMP/run"
	for o in --hosts --exclude --fanout --ssh --proc-root; do
		! grep -qx -- "$o" "$TMP/run" || { echo "run lists $o"; return 1; }
	done
	grep -qx -- --guard "$TMP/run"
	# reclaim's selection names the commands it applies to
	run "$BIN" reclaim --help
	grep -qx "Selection of processes (reclaim, run):" <<<"$output"
	# --query-compute-apps says what it does
	run "$BIN" status --help
	grep -qE -- "^ +--query-compute-apps FIELDS +[a-z]" <<<"$output"
}

@test "help: -w with run is refused with the reason, the fleet options of the others still taken" {
	run "$BIN" -w node1 run -y -- true
	[ "$status" -eq 2 ]
	grep -q "option -w is not valid for 'run': 'run' is local only" <<<"$output"
	run env GPUSLATE_FLEET_PRINT_ARGV=1 "$BIN" -w node1 --ssh false status
	[ "$status" -eq 0 ]
}

@test "help: --help is the overview: commands, the options of every command, where the others are" {
	run --separate-stderr "$BIN" --help
	[ "$status" -eq 0 ]
	for c in $CMDS; do
		grep -qE "^  $c +[a-z]" <<<"$output" || { echo "overview names no $c"; return 1; }
	done
	grep -q "gpuslate help CMD" <<<"$output"
	grep -q -- "--json" <<<"$output"
	# a command's options are not in it
	! grep -qE -- "--(guard|grace|query-gpu) " <<<"$output"
	[ "$("$BIN" help)" = "$output" ]
	run "$BIN" help nosuch
	[ "$status" -eq 2 ]
	grep -q "unknown command 'nosuch'" <<<"$output"
}

@test "help: the Slurm wrapper's --help explains its modes and every setting, on stdout, exit 0" {
	run --separate-stderr "$ROOT/tools/gpuslate-slurm-epilog" --help
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	grep -qE "^  epilog " <<<"$output"
	grep -qE "^  prolog " <<<"$output"
	# every setting the script reads, derived from the script
	grep -oE '\$\{GPUSLATE_[A-Z_]+' "$ROOT/tools/gpuslate-slurm-epilog" | cut -c3- | sort -u >"$TMP/read"
	[ "$(wc -l <"$TMP/read")" -ge 10 ]
	while read -r v; do
		# gpuslate's own variables, passed on to it (gpuslate(1) has them)
		case $v in GPUSLATE_DEV_ROOT | GPUSLATE_NVML_LIB | GPUSLATE_NVIDIA_PROCFS | GPUSLATE_LOCK_FILE) continue ;; esac
		grep -q "$v" <<<"$output" || { echo "--help does not name $v"; return 1; }
	done <"$TMP/read"
	run "$ROOT/tools/gpuslate-slurm-epilog" -h
	[ "$status" -eq 0 ]
	run "$ROOT/tools/gpuslate-slurm-epilog" nosuch
	[ "$status" -eq 2 ]
}

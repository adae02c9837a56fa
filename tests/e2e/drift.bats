#!/usr/bin/env bats
# Drift: what gpuslate accepts, what it says it accepts, and what it reads
# stay one set. Every option of the option table (src/core/options.c) is in
# --help, in the man page and offered by both completions; every variable the
# man page's ENVIRONMENT names is read by the code. The only exceptions are
# listed here, each with its reason.
#
# Run by `make test-e2e` (GPUSLATE_BIN, GPUSLATE_BUILD).

# Not in --help: passed by gpuslate itself to the far side of a fleet command.
HELP_EXCEPT="remote"
# Not offered by completion (and must not be): --remote as above; --proc-root
# reads a /proc copy, for tests. Both are in the man page.
COMPLETION_EXCEPT="remote proc-root"

setup_file() {
	export ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	export BUILD="${GPUSLATE_BUILD:-$ROOT/build}"
	export BIN="${GPUSLATE_BIN:-$BUILD/gpuslate}"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" man >/dev/null
}

setup() {
	TMP="$(mktemp -d "${BATS_TMPDIR:-/tmp}/gs-drift.XXXXXX")"
}

teardown() {
	rm -rf "$TMP"
}

# The entries of the option table (src/core/options.c), which makes the
# parser's getopt tables, --help and the remote command line.
table_entries() {
	sed -n '/gs_options\[\] = {/,/^};/p' "$ROOT/src/core/options.c"
}

# "--name" for each long option of the table, one a line, sorted.
table_long() {
	table_entries | grep -o '{ "[a-z0-9-]*"' | cut -d'"' -f2 | sed 's/^/--/' | sort -u
}

# "-c" for each short option of the table.
table_short() {
	table_entries | grep -o "{ \"[a-z0-9-]*\", '.'" | sed "s/.*'\\(.\\)'/-\\1/" | sort -u
}

except() { # except "a b" : the options to leave out, as --a and --b, a line each
	local o
	for o in $1; do echo "--$o"; done | sort -u
}

# bash_offered: every option the bash completion offers for some command.
bash_offered() {
	local c
	for c in "" status reclaim wait run; do
		bash -c '
			source "$1/completions/gpuslate.bash"; shift
			COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
			COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
			_gpuslate 2>/dev/null
			printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT" gpuslate $c -
	done | sed 's/=$//' | grep '^-' | sort -u
}

# zsh_offered: every option named in an _arguments spec of _gpuslate.
zsh_offered() {
	grep -oE -- "--?[a-zA-Z][a-z0-9-]*[=+]?[]}[,']" "$ROOT/completions/_gpuslate" |
		sed -E 's/[=+]?[]}[,'"'"']$//' | sort -u
}

missing() { # missing WANT HAVE WHAT: fails listing lines of WANT not in HAVE
	local m
	m=$(comm -23 "$1" "$2")
	[ -z "$m" ] || { echo "$3:"; echo "$m"; return 1; }
}

@test "drift: the option table is what the parser takes (sanity of this test)" {
	table_long >"$TMP/long"
	table_short >"$TMP/short"
	[ "$(wc -l <"$TMP/long")" -ge 35 ]
	grep -qx -- --verbose "$TMP/long"
	grep -qx -- -v "$TMP/short"
	# Every one is accepted: the parser never calls it unknown.
	while read -r o; do
		run "$BIN" "$o" 2>&1
		! grep -q "unknown option" <<<"$output" || { echo "$o: $output"; return 1; }
	done <"$TMP/long"
}

@test "drift: every option of the table is in a command's --help (but --remote)" {
	for c in status reclaim wait restore run; do
		"$BIN" "$c" --help || return 1
	done >"$TMP/pages"
	grep -oE -- '(^|[ ,])--?[a-zA-Z][a-z0-9-]*' "$TMP/pages" | sed 's/^[ ,]//' | sort -u >"$TMP/help"
	table_long | comm -23 - <(except "$HELP_EXCEPT") >"$TMP/want"
	missing "$TMP/want" "$TMP/help" "in the option table, not in --help"
	table_short >"$TMP/short"
	missing "$TMP/short" "$TMP/help" "short options not in --help"
	# and the exception really is not there
	! grep -qx -- --remote "$TMP/help"
}

@test "drift: every option of the table has an entry in the man page" {
	awk '/^\.SH /{ on = ($0 ~ /^\.SH "?OPTIONS"?$/) } on && $0 == ".RS 4" { print prev } { prev = $0 }' \
		"$BUILD/gpuslate.1" | grep -o '\\fB-[-a-zA-Z0-9]*\\fR' | sed 's/\\fB//; s/\\fR//' | sort -u >"$TMP/man"
	table_long >"$TMP/long"
	missing "$TMP/long" "$TMP/man" "long options without a man page entry"
	table_short >"$TMP/short"
	missing "$TMP/short" "$TMP/man" "short options without a man page entry"
}

# covers WHAT OFFERED_FILE: every option of the table but the internal ones
# is offered, and none of the internal ones.
covers() {
	table_long | comm -23 - <(except "$COMPLETION_EXCEPT") >"$TMP/want"
	missing "$TMP/want" "$2" "not offered by the $1 completion"
	table_short >"$TMP/short"
	missing "$TMP/short" "$2" "short options not offered by the $1 completion"
	for o in $COMPLETION_EXCEPT; do
		! grep -qx -- "--$o" "$2" || { echo "$1 completion offers the internal --$o"; return 1; }
	done
}

@test "drift: the bash completion offers every option of the table (but --remote and --proc-root), and not those" {
	bash_offered >"$TMP/bash"
	covers bash "$TMP/bash"
}

@test "drift: the zsh completion offers every option of the table (but --remote and --proc-root), and not those" {
	zsh_offered >"$TMP/zsh"
	covers zsh "$TMP/zsh"
}

@test "drift: every environment variable the man page names is read by the code" {
	# The ENVIRONMENT section's entries: bold names on their own line.
	sed -n '/^\.SH "\{0,1\}ENVIRONMENT/,/^\.SH [^E]/p' "$BUILD/gpuslate.1" |
		grep -o '^\\fB[A-Z_][A-Z0-9_]*\\fR$' | sed 's/\\fB//; s/\\fR//' | sort -u >"$TMP/man"
	[ "$(wc -l <"$TMP/man")" -ge 8 ]
	grep -rhoE 'getenv\("[A-Z_][A-Z0-9_]*"\)' "$ROOT/src" | cut -d'"' -f2 | sort -u >"$TMP/read"
	missing "$TMP/man" "$TMP/read" "in the man page's ENVIRONMENT but never read (getenv) by src/"
	# The converse: every GPUSLATE_ variable the code reads is documented.
	grep '^GPUSLATE_' "$TMP/read" >"$TMP/read.gs"
	missing "$TMP/read.gs" "$TMP/man" "read by src/ but not in the man page's ENVIRONMENT"
}

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

# ---- the docs tell the truth (issue 27): each check is generic, over every
# document, so a new lie of the same kind fails it too.

# Paths that look like the tree's but name something elsewhere, each with its
# reason: a remote host's program in an inventory example (/opt/my tools/...).
PATH_EXCEPT="tools/gpuslate"

@test "drift: every file of the tree the docs name exists" {
	for f in "$ROOT/README.md" "$ROOT"/docs/*.md "$ROOT/man/gpuslate.1.scd" "$ROOT/tools/gpuslate-slurm-epilog"; do
		grep -oE '(^|[^A-Za-z0-9_./$-])(tests|src|tools|bench|examples|docs|completions|debian|man|\.ci)/[A-Za-z0-9_./-]*[A-Za-z0-9_]' "$f" |
			sed -E 's/^[^a-z.]//' | sed "s|^|${f#"$ROOT"/}: |"
	done | sort -u >"$TMP/named"
	[ "$(wc -l <"$TMP/named")" -ge 30 ]
	bad=
	while read -r doc p; do
		grep -qxF -- "$p" <<<"${PATH_EXCEPT// /$'\n'}" && continue
		[ -e "$ROOT/$p" ] || bad="$bad $doc $p;"
	done <"$TMP/named"
	[ -z "$bad" ] || { echo "named but not in the tree:$bad"; return 1; }
}

@test "drift: the man page's ENVIRONMENT has each variable once" {
	sed -n '/^# ENVIRONMENT/,/^# [A-Z]/p' "$ROOT/man/gpuslate.1.scd" | grep -E '^\*[A-Z_][A-Z0-9_]*\*' |
		grep -oE '\*[A-Z_][A-Z0-9_]*\*' | tr -d '*' | sort >"$TMP/entries"
	[ "$(wc -l <"$TMP/entries")" -ge 10 ]
	grep -qx GPUSLATE_DOCKER "$TMP/entries"
	dup=$(uniq -d "$TMP/entries")
	[ -z "$dup" ] || { echo "more than one entry for: $dup"; return 1; }
}

# usage_lines FILE_KIND: "CMD line" for every usage line of a command, blanks
# folded, markup (scdoc's * and _) dropped.
usage_norm() { sed -E 's/[*]//g; s/(^|[^A-Za-z0-9])_([A-Za-z][A-Za-z.]*)_/\1\2/g; s/^ +//; s/ +/ /g; s/ +$//'; }

@test "drift: each command's usage lines are the same in --help, CMD --help, the README and the man page" {
	"$BIN" --help | grep -E '^ gpuslate \[options\] ' | usage_norm | sort >"$TMP/help"
	[ "$(wc -l <"$TMP/help")" -ge 6 ]
	for c in status reclaim wait restore run; do
		"$BIN" "$c" --help | grep -E '^ gpuslate \[options\] ' | usage_norm
	done | sort >"$TMP/pages"
	grep -E '^    gpuslate \[options\] ' "$ROOT/README.md" | usage_norm | sort >"$TMP/readme"
	sed -n '/^# SYNOPSIS/,/^# DESCRIPTION/p' "$ROOT/man/gpuslate.1.scd" |
		grep -E '^\*gpuslate\* \[_options_\] ' | usage_norm | sort >"$TMP/man"
	for w in pages readme man; do
		diff -u "$TMP/help" "$TMP/$w" || { echo "usage lines: --help and $w differ"; return 1; }
	done
	# every command has one
	for c in status reclaim wait restore run; do
		grep -q "^gpuslate \[options\] $c " "$TMP/help" || { echo "no usage line for $c"; return 1; }
	done
}

@test "drift: json.md's values are strings of the code, and its command lists every command" {
	# Every quoted value a table of json.md gives is a string in src/.
	grep -E '^\| `' "$ROOT/docs/json.md" | awk -F' \\| ' '{ print $3 }' |
		grep -oE '`"[a-z0-9_+.-]+"`' | tr -d '`"' | sort -u >"$TMP/values"
	[ "$(wc -l <"$TMP/values")" -ge 30 ]
	while read -r v; do
		grep -rqF "\"$v\"" "$ROOT/src" || { echo "json.md documents \"$v\", no such string in src/"; return 1; }
	done <"$TMP/values"
	# The common key command: every command the program has (its --help).
	row=$(grep -E '^\| `command` \| string \|' "$ROOT/docs/json.md" | head -n 1)
	[ -n "$row" ]
	"$BIN" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF && $1 != "help" { print $1 }' >"$TMP/cmds"
	[ "$(wc -l <"$TMP/cmds")" -ge 5 ]
	while read -r c; do
		grep -qF "\`\"$c\"\`" <<<"$row" || { echo "json.md's command omits \"$c\""; return 1; }
	done <"$TMP/cmds"
}

@test "drift: the links of the installed documents point at installed files" {
	docs=$(sed -n 's/^DOCS := //p' "$ROOT/Makefile")
	examples=$(sed -n 's/^EXAMPLES := //p' "$ROOT/Makefile")
	[ -n "$docs" ] && [ -n "$examples" ]
	# installed as DOCDIR/NAME.md and DOCDIR/examples/NAME
	installed=$(for d in $docs; do basename "$d"; done; for e in $examples; do echo "$e"; done)
	for d in $docs; do
		grep -oE '\]\([^)#]+' "$ROOT/$d" | cut -c3- | grep -vE '^[a-z]+:' | while read -r l; do
			grep -qxF -- "$l" <<<"$installed" || echo "$d links $l, which make install does not install"
		done
	done >"$TMP/bad"
	[ ! -s "$TMP/bad" ] || { cat "$TMP/bad"; return 1; }
}

@test "drift: the README's GPU UUIDs select one GPU of make demo's host" {
	host=$TMP/host
	bash "$ROOT/tests/fakes/mkhost.sh" "$host" 2
	grep -oE -- '-g GPU-[0-9a-f-]+' "$ROOT/README.md" | cut -d' ' -f2 | sort -u >"$TMP/uuids"
	[ -s "$TMP/uuids" ]
	while read -r u; do
		run env FAKE_NVML_STATE="$host/nvml" GPUSLATE_DEV_ROOT="$host/dev" \
			GPUSLATE_NVML_LIB="$BUILD/fakes/libnvidia-ml.so.1" "$BIN" status -g "$u" --json
		[ "$status" -eq 0 ] || { echo "-g $u on the demo host: $output"; return 1; }
		[ "$(jq '.gpus | length' <<<"$output")" -eq 1 ] || { echo "-g $u selects $(jq -c '[.gpus[].index]' <<<"$output")"; return 1; }
	done <"$TMP/uuids"
}

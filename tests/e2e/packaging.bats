#!/usr/bin/env bats
# Packaging and shell integration: the man page documents every option the
# binary accepts, completion scripts load and complete, `make install` and
# `make uninstall` handle exactly the listed files, the release binary needs
# only glibc, the Debian package builds and runs, and the live progress
# display and the verdict colour work on a (pseudo-)terminal.
#
# Run by `make test-e2e` (GPUSLATE_BIN: the binary under test, GPUSLATE_BUILD:
# the build directory). The Debian package test runs when dpkg-buildpackage
# and debhelper are installed; GPUSLATE_TEST_DEB=1 makes it mandatory (CI),
# GPUSLATE_TEST_DEB=0 skips it.

setup_file() {
	export ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	export BUILD="${GPUSLATE_BUILD:-$ROOT/build}"
	export BIN="${GPUSLATE_BIN:-$BUILD/gpuslate}"
	export VERSION="$(cat "$ROOT/VERSION")"
	# Nested make: not part of the outer make's jobserver.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" man >/dev/null
}

setup() {
	TMP="$(mktemp -d "${BATS_TMPDIR:-/tmp}/gs-pkg.XXXXXX")"
	HOLDER_PID=
}

teardown() {
	if [ -n "$HOLDER_PID" ] && kill -0 "$HOLDER_PID" 2>/dev/null; then
		kill -KILL "$HOLDER_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}

submake() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" "$@"
}

# Long options of the option table in src/core/options.c.
table_long_opts() {
	sed -n '/gs_options\[\] = {/,/^};/p' "$ROOT/src/core/options.c" |
		grep -o '{ "[a-z0-9-]*"' | cut -d'"' -f2 | sort -u
}

# Short options of the option table (the letter after the long name).
table_short_opts() {
	sed -n '/gs_options\[\] = {/,/^};/p' "$ROOT/src/core/options.c" |
		grep -o "{ \"[a-z0-9-]*\", '.'" | sed "s/.*'\\(.\\)'/\\1/" | sort -u
}

# Options with an entry of their own (a heading) in the man page's OPTIONS.
man_option_entries() {
	awk '/^\.SH /{ on = ($0 ~ /^\.SH "?OPTIONS"?$/) } on && $0 == ".RS 4" { print prev } { prev = $0 }' \
		"$BUILD/gpuslate.1" | grep -o '\\fB-[-a-zA-Z0-9]*\\fR' | sed 's/\\fB//; s/\\fR//' | sort -u
}

# ---------------------------------------------------------------- man page

@test "man page: builds with scdoc and renders" {
	[ -s "$BUILD/gpuslate.1" ]
	grep -q '^\.TH "gpuslate" "1" .*"gpuslate '"$VERSION"'"' "$BUILD/gpuslate.1"
	for s in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS 'EXIT STATUS' ENVIRONMENT FILES EXAMPLES 'SEE ALSO'; do
		grep -Eq "^\.SH \"?$s\"?\$" "$BUILD/gpuslate.1" || { echo "missing section $s"; return 1; }
	done
	if command -v groff >/dev/null; then
		run groff -man -Tutf8 -ww -z "$BUILD/gpuslate.1"
		[ "$status" -eq 0 ]
		[ -z "$output" ] || { echo "groff warnings: $output"; return 1; }
	fi
}

@test "man page: an entry for every long option in the option table and nothing else" {
	table_long_opts | sed 's/^/--/' >"$TMP/table"
	man_option_entries | grep '^--' >"$TMP/man"
	[ "$(wc -l <"$TMP/table")" -ge 30 ]
	run diff "$TMP/table" "$TMP/man"
	[ "$status" -eq 0 ] || { echo "< in the option table only, > in the man page only:"; echo "$output"; return 1; }
}

@test "man page: an entry for every short option" {
	man_option_entries >"$TMP/man"
	[ "$(table_short_opts | wc -l)" -ge 10 ] # the table is read (no vacuous pass)
	for c in $(table_short_opts); do
		grep -qx -- "-$c" "$TMP/man" || { echo "short option -$c not documented"; return 1; }
	done
}

@test "man page: documents every option gpuslate CMD --help lists" {
	for c in status reclaim wait restore run; do
		"$BIN" "$c" --help || return 1
	done | grep -o -- '--[a-z][a-z0-9-]*' | sort -u >"$TMP/help"
	man_option_entries >"$TMP/man"
	[ "$(wc -l <"$TMP/help")" -ge 25 ]
	while read -r o; do
		grep -qx -- "$o" "$TMP/man" || { echo "$o is in --help but not in the man page"; return 1; }
		table_long_opts | grep -qx -- "${o#--}" || { echo "$o is in --help but not accepted"; return 1; }
	done <"$TMP/help"
}

@test "man page: commands, exit statuses and environment variables" {
	text="$(sed 's/\\f[BIRP]//g; s/\\-/-/g; s/\\&//g' "$BUILD/gpuslate.1")"
	for c in status reclaim wait restore; do
		grep -q "^$c\$" <<<"$text" || { echo "command $c has no entry"; return 1; }
	done
	# Every exit status the code names (enum gs_exit), and the verdict
	# names each document may carry (docs/json.md).
	codes=$(sed -n 's/^\tGS_EXIT_[A-Z_]* = \([0-9][0-9]*\),.*/\1/p' "$ROOT/src/core/verdict.h" | sort -un)
	[ "$(wc -w <<<"$codes")" -ge 11 ]
	for n in $codes; do
		sed -n '/^\.SH "\{0,1\}EXIT STATUS/,/^\.SH [^E]/p' "$BUILD/gpuslate.1" | grep -qE "(^|, )\\\\fB$n\\\\fR(,|\$)" ||
			{ echo "exit status $n missing"; return 1; }
	done
	for v in $(sed -n 's/^\t\[GS_VERDICT_[A-Z_]*\] = { "\([a-z-]*\)".*/\1/p' "$ROOT/src/core/verdict.c"); do
		grep -qF "\`$v\`" "$ROOT/docs/json.md" || { echo "verdict $v not in docs/json.md"; return 1; }
	done
	# Every GPUSLATE_ variable the sources read, plus NO_COLOR.
	vars="$(grep -rhoE 'getenv\("GPUSLATE_[A-Z_]+"\)' "$ROOT/src" | cut -d'"' -f2 | sort -u) NO_COLOR"
	for v in $vars; do
		grep -q "$v" <<<"$text" || { echo "environment variable $v not documented"; return 1; }
	done
	for f in /run/gpuslate.lock /run/gpuslate.stopped /etc/gpuslate/hosts '~/.config/gpuslate/hosts' syslog; do
		grep -qF -- "$f" <<<"$text" || { echo "file $f not documented"; return 1; }
	done
	# The seed's situation, and what replaces it.
	grep -qF 'pct exec 129' <<<"$text"
	grep -qF 'gpuslate -w gpu1,pve1 reclaim -y' <<<"$text"
}

@test "--version and --help agree with VERSION and the man page" {
	run "$BIN" --version
	[ "$status" -eq 0 ]
	[ "$output" = "gpuslate $VERSION" ]
	run "$BIN" --help
	[ "$status" -eq 0 ]
	[[ $output == Usage:* ]]
	[[ $output == *"See gpuslate(1)."* ]]
	run "$BIN" help
	[ "$status" -eq 0 ]
	[[ $output == Usage:* ]]
}

# ---------------------------------------------------------------- completion

# Run the bash completion for the words given (the last one is completed) and
# print the candidates, one per line.
bash_complete() {
	bash -c '
		source "$1/completions/gpuslate.bash"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_gpuslate 2>/dev/null
		printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT" "$@"
}

@test "bash completion: loads and registers for gpuslate" {
	run bash -c "source '$ROOT/completions/gpuslate.bash'; complete -p gpuslate"
	[ "$status" -eq 0 ]
	[ "$output" = "complete -F _gpuslate gpuslate" ]
}

@test "bash completion: commands, and options per command" {
	run bash_complete gpuslate ""
	[ "$output" = $'status\nreclaim\nwait\nrestore\nrun\nhelp' ]
	run bash_complete gpuslate rec
	[ "$output" = "reclaim" ]
	run bash_complete gpuslate -q --timeout 5 ""
	[ "$output" = $'status\nreclaim\nwait\nrestore\nrun\nhelp' ]
	run bash_complete gpuslate res
	[ "$output" = "restore" ]
	# restore reads its state file: -y and --dry-run, no GPU options.
	run bash_complete gpuslate restore --dr
	[ "$output" = "--dry-run" ]
	run bash_complete gpuslate restore --nvml
	[ -z "$output" ]
	run bash_complete gpuslate restore --gp
	[ -z "$output" ]
	run bash_complete gpuslate reclaim --dr
	[ "$output" = "--dry-run" ]
	run bash_complete gpuslate run --gu
	[ "$output" = "--guard" ]
	run bash_complete gpuslate reclaim --gu
	[ -z "$output" ]
	# Options only where the command takes them.
	run bash_complete gpuslate status --y
	[ -z "$output" ]
	run bash_complete gpuslate wait --no-u
	[ -z "$output" ]
	run bash_complete gpuslate --unit foo reclaim --no-u
	[ "$output" = "--no-units" ]
	run bash_complete gpuslate status --format ""
	[[ $output == *prometheus* && $output == *csv,noheader* ]]
	run bash_complete gpuslate status --format = pro
	[ "$output" = "prometheus" ]
	run bash_complete gpuslate status --query-gpu = index,memory.u
	[ "$output" = "index,memory.used" ]
	run bash_complete gpuslate reclaim --include nvidia-p
	[ "$output" = "nvidia-persistenced" ]
}

@test "bash completion: @group from --hosts-file or XDG_CONFIG_HOME, groups only after '@', hosts without '@' words" {
	mkdir -p "$TMP/xdg/gpuslate" "$TMP/home"
	printf '[tuning]\ngpu1\n[bench]\ngpu2\n' >"$TMP/xdg/gpuslate/hosts"
	printf '[other]\nbox1\n' >"$TMP/inv"
	mkdir -p "$TMP/home/.ssh"
	printf 'gpu9 ssh-ed25519 AAAA\n' >"$TMP/home/.ssh/known_hosts"
	export HOME="$TMP/home"
	run env XDG_CONFIG_HOME="$TMP/xdg" bash -c '
		source "$1/completions/gpuslate.bash"
		COMP_WORDS=(gpuslate -w @); COMP_CWORD=2; _gpuslate; printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT"
	[ "$output" = $'@tuning\n@bench\n@all' ]
	run env XDG_CONFIG_HOME="$TMP/xdg" bash -c '
		source "$1/completions/gpuslate.bash"
		COMP_WORDS=(gpuslate --hosts-file "$2" -w gpu1,@); COMP_CWORD=4; _gpuslate; printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT" "$TMP/inv"
	[ "$output" = $'gpu1,@other\ngpu1,@all' ]
	# Host names (known hosts, with the bash-completion package): no "@..."
	# word among them.
	[ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion not installed"
	run env XDG_CONFIG_HOME="$TMP/xdg" bash -c '
		source /usr/share/bash-completion/bash_completion
		source "$1/completions/gpuslate.bash"
		COMP_WORDS=(gpuslate -w ""); COMP_CWORD=2; _gpuslate; printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT"
	echo "$output"
	grep -qx gpu9 <<<"$output"
	! grep -q '@' <<<"$output"
}

@test "bash completion: neither --remote nor --proc-root is offered" {
	for c in "" status reclaim wait; do
		run bash_complete gpuslate $c --re
		! grep -qx -- --remote <<<"$output" || return 1
		run bash_complete gpuslate $c --pro
		[ -z "$output" ] || return 1
	done
}

@test "bash completion: -g completes GPU indices from gpuslate status" {
	sh "$ROOT/tests/fakes/mkhost.sh" "$TMP/host" 3
	export FAKE_NVML_STATE="$TMP/host/nvml" GPUSLATE_NVML_LIB="$BUILD/fakes/libnvidia-ml.so.1"
	export GPUSLATE_DEV_ROOT="$TMP/host/dev"
	mkdir -p "$TMP/bin" && ln -s "$BIN" "$TMP/bin/gpuslate"
	run bash_complete "$TMP/bin/gpuslate" reclaim -g ""
	[ "$output" = $'0\n1\n2' ]
	run bash_complete "$TMP/bin/gpuslate" reclaim -g 0,
	[ "$output" = $'0,0\n0,1\n0,2' ]
	# Not for remote hosts: their GPUs are not ours to list.
	run bash_complete "$TMP/bin/gpuslate" -w gpu1 reclaim -g ""
	[ -z "$output" ]
}

@test "bash completion: -g completes indices and UUIDs on every command that takes it" {
	sh "$ROOT/tests/fakes/mkhost.sh" "$TMP/host" 3
	export FAKE_NVML_STATE="$TMP/host/nvml" GPUSLATE_NVML_LIB="$BUILD/fakes/libnvidia-ml.so.1"
	export GPUSLATE_DEV_ROOT="$TMP/host/dev"
	mkdir -p "$TMP/bin" && ln -s "$BIN" "$TMP/bin/gpuslate"
	uuids=$("$BIN" status --query-gpu=uuid --format=csv,noheader)
	[ "$(wc -l <<<"$uuids")" -eq 3 ]
	# the commands whose help lists -g
	for c in status reclaim wait restore run; do
		"$BIN" help "$c" | grep -qE '^ +-g, --gpus ' && echo "$c"
	done >"$TMP/takes-g"
	[ "$(wc -l <"$TMP/takes-g")" -ge 4 ]
	while read -r c; do
		run bash_complete "$TMP/bin/gpuslate" "$c" -g ""
		[ "$output" = $'0\n1\n2' ] || { echo "$c -g: $output"; return 1; }
		run bash_complete "$TMP/bin/gpuslate" "$c" --gpus G
		[ "$output" = "$uuids" ] || { echo "$c --gpus G: $output"; return 1; }
		run bash_complete "$TMP/bin/gpuslate" "$c" -g "0,GPU"
		[ "$output" = "$(sed 's/^/0,/' <<<"$uuids")" ] || { echo "$c -g 0,GPU: $output"; return 1; }
	done <"$TMP/takes-g"
	# silent when gpuslate fails
	run bash -c 'source "$1/completions/gpuslate.bash"
		COMP_WORDS=(/nonexistent/gpuslate reclaim -g ""); COMP_CWORD=3; _gpuslate; echo "${#COMPREPLY[@]}"' _ "$ROOT"
	[ "$output" = 0 ]
}

@test "bash completion: run -- completes a command, then that command's arguments, not gpuslate's" {
	mkdir -p "$TMP/bin" "$TMP/cwd"
	printf '#!/bin/sh\n' >"$TMP/bin/gs-probe-cmd" && chmod +x "$TMP/bin/gs-probe-cmd"
	: >"$TMP/cwd/model-weights.bin"
	cd "$TMP/cwd"
	PATH=$TMP/bin:$PATH run bash_complete gpuslate run -y -- gs-probe-c
	[ "$output" = gs-probe-cmd ]
	PATH=$TMP/bin:$PATH run bash_complete gpuslate -g 0 run -- gs-probe-c
	[ "$output" = gs-probe-cmd ]
	# COMMAND's arguments: files here (no bash-completion loaded), never
	# gpuslate's options or GPUs
	run bash_complete gpuslate run -y -- gs-probe-cmd model-
	[ "$output" = model-weights.bin ]
	run bash_complete gpuslate run -- gs-probe-cmd --gu
	! grep -q -- --guard <<<"$output"
	run bash_complete gpuslate run -- gs-probe-cmd -g ""
	! grep -qx 0 <<<"$output"
	# before "--" it is gpuslate's line
	run bash_complete gpuslate run --gu
	[ "$output" = --guard ]
	# and help takes a command
	run bash_complete gpuslate help re
	[ "$output" = $'reclaim\nrestore' ]
}

@test "bash completion: each command is offered the options its --help lists (but --proc-root)" {
	for c in status reclaim wait restore run; do
		"$BIN" help "$c" | sed -nE 's/^ +(-[a-zA-Z0-9], )?(--[a-z0-9-]+).*/\1\2/p' | tr -d ',' | tr ' ' '\n' |
			grep . | grep -vx -- --proc-root | sort -u >"$TMP/$c.help"
		bash_complete gpuslate "$c" - | sed 's/=.*$//' | sort -u >"$TMP/$c.bash"
		diff -u "$TMP/$c.help" "$TMP/$c.bash" || { echo "$c: --help (-) and the bash completion (+) differ"; return 1; }
	done
}

@test "zsh completion: parses and is a completion function" {
	if command -v zsh >/dev/null; then
		zsh -n "$ROOT/completions/_gpuslate"
	fi
	head -1 "$ROOT/completions/_gpuslate" | grep -qx '#compdef gpuslate'
}

# ---------------------------------------------------------------- install

expected_files() {
	local p=$1
	{
		echo "$p/bin/gpuslate"
		echo "$p/share/man/man1/gpuslate.1"
		echo "$p/share/bash-completion/completions/gpuslate"
		echo "$p/share/zsh/site-functions/_gpuslate"
		echo "$p/share/doc/gpuslate/examples/hosts"
		echo "$p/share/doc/gpuslate/examples/systemd-gpuslate.conf"
		for d in json fleet inventory slurm integrations security; do echo "$p/share/doc/gpuslate/$d.md"; done
		[ ! -f "$ROOT/tools/gpuslate-slurm-epilog" ] || echo "$p/libexec/gpuslate/gpuslate-slurm-epilog"
	} | sort
}

@test "make install DESTDIR PREFIX=/usr installs exactly the listed files; uninstall removes them" {
	submake install DESTDIR="$TMP/root" PREFIX=/usr >/dev/null
	(cd "$TMP/root" && find . ! -type d | sed 's/^\.//' | sort) >"$TMP/got"
	expected_files /usr >"$TMP/want"
	run diff "$TMP/want" "$TMP/got"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ -x "$TMP/root/usr/bin/gpuslate" ]
	[ "$(stat -c %a "$TMP/root/usr/bin/gpuslate")" = 755 ]
	[ "$(stat -c %a "$TMP/root/usr/share/man/man1/gpuslate.1")" = 644 ]
	cmp "$BUILD/gpuslate" "$TMP/root/usr/bin/gpuslate"
	run "$TMP/root/usr/bin/gpuslate" --version
	[ "$output" = "gpuslate $VERSION" ]

	submake uninstall DESTDIR="$TMP/root" PREFIX=/usr >/dev/null
	run find "$TMP/root" ! -type d
	[ -z "$output" ] || { echo "left behind: $output"; return 1; }
	[ ! -e "$TMP/root/usr/share/doc/gpuslate" ]
	[ ! -e "$TMP/root/usr/libexec/gpuslate" ]
}

@test "make install: the man page's documents are installed, and the example unit names the installed binary" {
	submake install DESTDIR="$TMP/root" PREFIX=/opt/gs >/dev/null
	doc=$TMP/root/opt/gs/share/doc/gpuslate
	# Every document the man page names in SEE ALSO and --json is there.
	for f in $(sed -n '/^\.SH "SEE ALSO"/,$p' "$BUILD/gpuslate.1" | grep -o '[a-z]*\.md' | sort -u); do
		[ -s "$doc/$f" ] || { echo "$f named by the man page, not installed"; return 1; }
	done
	# The installed binary's --help names where this installation put the
	# documents (the build was made again for this PREFIX).
	run "$TMP/root/opt/gs/bin/gpuslate" --help
	[[ $output == *"/opt/gs/share/doc/gpuslate/json.md"* ]] || { echo "$output" | grep json.md; return 1; }
	for f in $(grep -o '/opt/gs/share/doc/gpuslate/[a-z.]*' <<<"$output"); do
		[ -s "$TMP/root$f" ] || { echo "--help names $f, not installed"; return 1; }
	done
	grep -qx 'ExecStopPost=+/opt/gs/bin/gpuslate reclaim -y -q --unit %n --timeout 60' "$doc/examples/systemd-gpuslate.conf"
	! grep -q '/usr/bin/gpuslate' "$doc/examples/systemd-gpuslate.conf"
}

@test "make install: PREFIX defaults to /usr/local" {
	submake install DESTDIR="$TMP/root" >/dev/null
	(cd "$TMP/root" && find . ! -type d | sed 's/^\.//' | sort) >"$TMP/got"
	expected_files /usr/local >"$TMP/want"
	run diff "$TMP/want" "$TMP/got"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	submake uninstall DESTDIR="$TMP/root" >/dev/null
	run find "$TMP/root" ! -type d
	[ -z "$output" ]
}

# ---------------------------------------------------------------- runtime deps

@test "release binary depends on glibc only (ldd)" {
	[ -x "$BUILD/gpuslate" ]
	run ldd "$BUILD/gpuslate"
	[ "$status" -eq 0 ]
	echo "$output"
	while read -r lib _; do
		case $lib in
		linux-vdso.so.* | linux-gate.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
			/lib*/ld-linux*.so.* | ld-linux*.so.*) ;;
		*) echo "unexpected run-time dependency: $lib"; return 1 ;;
		esac
	done <<<"$output"
	! grep -q jansson <<<"$output"
}

# ---------------------------------------------------------------- Debian

@test "debian: changelog version matches VERSION" {
	v="$(sed -n '1s/^gpuslate (\([^)]*\)).*/\1/p' "$ROOT/debian/changelog")"
	[ "$v" = "$VERSION" ]
	grep -qx '3.0 (native)' "$ROOT/debian/source/format"
	[ -x "$ROOT/debian/rules" ]
}

@test "debian: the package builds, depends on libc6 only, and gpuslate --version runs from it" {
	if [ "${GPUSLATE_TEST_DEB-}" = 0 ]; then
		skip "GPUSLATE_TEST_DEB=0"
	fi
	if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; then
		[ "${GPUSLATE_TEST_DEB-}" != 1 ] || { echo "dpkg-buildpackage or debhelper missing"; return 1; }
		skip "dpkg-buildpackage or debhelper not installed"
	fi
	run submake deb DEBDIR="$TMP/deb"
	[ "$status" -eq 0 ] || { echo "$output" | tail -40; return 1; }
	deb="$TMP/deb/gpuslate_${VERSION}_$(dpkg --print-architecture).deb"
	[ -f "$deb" ]
	dep="$(dpkg-deb -f "$deb" Depends)"
	echo "Depends: $dep"
	[[ $dep =~ ^libc6(\ \([^\)]*\))?$ ]]
	dpkg-deb -c "$deb" >"$TMP/contents"
	for f in usr/bin/gpuslate usr/share/man/man1/gpuslate.1.gz usr/share/bash-completion/completions/gpuslate \
		usr/share/zsh/site-functions/_gpuslate usr/share/doc/gpuslate/examples/hosts usr/share/doc/gpuslate/copyright \
		usr/share/doc/gpuslate/json.md usr/share/doc/gpuslate/fleet.md; do
		grep -q " \./$f\$" "$TMP/contents" || { echo "$f not in the package"; return 1; }
	done
	dpkg -x "$deb" "$TMP/scratch"
	run "$TMP/scratch/usr/bin/gpuslate" --version
	[ "$status" -eq 0 ]
	[ "$output" = "gpuslate $VERSION" ]
	run "$TMP/scratch/usr/bin/gpuslate" --help
	[ "$status" -eq 0 ]
	# The maintainer address and the rest pass lintian (installed by
	# tools/install-deps test, so CI runs it).
	if command -v lintian >/dev/null; then
		run lintian --allow-root --fail-on error,warning "$TMP/deb/gpuslate_${VERSION}_$(dpkg --print-architecture).changes"
		echo "$output"
		[ "$status" -eq 0 ]
		! grep -q 'bogus-mail-host' <<<"$output"
	elif [ "${GPUSLATE_TEST_DEB-}" = 1 ]; then
		echo "lintian missing"
		return 1
	fi
}

# ---------------------------------------------------------------- terminal

# A simulated host with one holder of 3000 MiB on GPU 0 whose context takes
# RELEASE_MS to tear down after it exits (pinned host memory).
start_slow_holder() {
	sh "$ROOT/tests/fakes/mkhost.sh" "$TMP/host" 2
	export FAKE_NVML_STATE="$TMP/host/nvml" GPUSLATE_DEV_ROOT="$TMP/host/dev"
	export GPUSLATE_NVML_LIB="$BUILD/fakes/libnvidia-ml.so.1" GPUSLATE_LOCK_FILE="$TMP/lock"
	export GPUSLATE_STATE_FILE="$TMP/last-reclaim"
	rm -f "$TMP/ready"
	"$BUILD/fakes/gs-holder" --gpu 0 --mib 3000 --release-ms "${RELEASE_MS:-2000}" \
		--ready-file "$TMP/ready" >"$TMP/holder.log" 2>&1 3>&- &
	HOLDER_PID=$!
	for _ in $(seq 100); do
		[ -s "$TMP/ready" ] && return 0
		sleep 0.05
	done
	echo "holder did not get ready"; cat "$TMP/holder.log"
	return 1
}

# Run a command line on a pseudo-terminal (stdout and stderr both the pty);
# the raw bytes it wrote land in $TMP/typescript.
on_pty() {
	TERM=xterm script -qfec "$1" "$TMP/typescript" </dev/null >/dev/null
}

@test "progress: on a terminal, the waiting line shows per GPU the MiB the driver is still releasing" {
	command -v script >/dev/null || skip "script (util-linux) not installed"
	start_slow_holder
	run on_pty "'$BIN' reclaim -y --no-units -g 0 --timeout 20"
	[ "$status" -eq 0 ] || { cat -v "$TMP/typescript"; return 1; }
	# The holder exited at SIGTERM; its context takes 2 s to tear down:
	# that memory is being released, not held.
	grep -aqE $'\r\033\\[Kwaiting [0-9]+\\.[0-9] s: GPU 0 3000 MiB releasing' "$TMP/typescript" ||
		{ cat -v "$TMP/typescript"; return 1; }
	! grep -aq 'MiB held' "$TMP/typescript"
	# More than one update, and the line is cleared before the report.
	[ "$(grep -ao 'waiting [0-9.]* s:' "$TMP/typescript" | sort -u | wc -l)" -ge 2 ]
	grep -aq 'Verdict: ' "$TMP/typescript"
	run bash -c "grep -a 'Verdict' '$TMP/typescript' | grep -c waiting"
	[ "$output" = 0 ]
}

@test "progress: 'held' while a live holder keeps the memory (wait on a terminal)" {
	command -v script >/dev/null || skip "script (util-linux) not installed"
	start_slow_holder
	run on_pty "'$BIN' wait -g 0 --timeout 1"
	[ "$status" -eq 1 ] || { cat -v "$TMP/typescript"; return 1; }
	grep -aqE 'waiting [0-9]+\.[0-9] s: GPU 0 3000 MiB held' "$TMP/typescript" || { cat -v "$TMP/typescript"; return 1; }
	! grep -aq 'releasing' "$TMP/typescript"
}

@test "progress: the screen shows the waiting line while memory is held (tmux)" {
	command -v tmux >/dev/null || skip "tmux not installed"
	RELEASE_MS=4000 start_slow_holder
	sock="$TMP/tmux.sock"
	env -u TMUX tmux -S "$sock" new-session -d -x 160 -y 20 \
		"env TERM=xterm FAKE_NVML_STATE='$FAKE_NVML_STATE' GPUSLATE_DEV_ROOT='$GPUSLATE_DEV_ROOT' \
		GPUSLATE_NVML_LIB='$GPUSLATE_NVML_LIB' GPUSLATE_LOCK_FILE='$GPUSLATE_LOCK_FILE' GPUSLATE_STATE_FILE='$GPUSLATE_STATE_FILE' \
		'$BIN' reclaim -y --no-units -g 0 --timeout 20; echo EXIT=\$?; sleep 30"
	seen=
	for _ in $(seq 200); do
		screen="$(tmux -S "$sock" capture-pane -p 2>/dev/null)"
		if grep -qE 'waiting [0-9.]+ s: GPU 0 3000 MiB releasing' <<<"$screen"; then
			seen=1
			break
		fi
		sleep 0.05
	done
	for _ in $(seq 200); do
		final="$(tmux -S "$sock" capture-pane -p 2>/dev/null)"
		grep -q 'EXIT=' <<<"$final" && break
		sleep 0.05
	done
	tmux -S "$sock" kill-server 2>/dev/null || true
	echo "$screen"
	[ -n "$seen" ]
	grep -q 'EXIT=0' <<<"$final"
	grep -q 'Verdict: clean' <<<"$final"
	# Cleared: no leftover progress on the final screen.
	! grep -q 'MiB releasing' <<<"$final"
}

@test "progress: off when stderr is not a terminal, with -q and with GPUSLATE_NO_PROGRESS" {
	command -v script >/dev/null || skip "script (util-linux) not installed"
	start_slow_holder
	run "$BIN" reclaim -y --no-units -g 0 --timeout 20
	[ "$status" -eq 0 ]
	! grep -q waiting <<<"$output"
	! grep -q $'\033' <<<"$output"

	start_slow_holder
	on_pty "'$BIN' reclaim -y -q --no-units -g 0 --timeout 20"
	! grep -aq 'waiting' "$TMP/typescript"

	start_slow_holder
	on_pty "GPUSLATE_NO_PROGRESS=1 '$BIN' reclaim -y --no-units -g 0 --timeout 20"
	! grep -aq 'waiting' "$TMP/typescript"
	grep -aq 'Verdict: ' "$TMP/typescript"
}

@test "colour: verdict coloured on a terminal only, and never with NO_COLOR" {
	command -v script >/dev/null || skip "script (util-linux) not installed"
	RELEASE_MS=0 start_slow_holder
	on_pty "'$BIN' reclaim -y -q --no-units -g 0"
	grep -aq $'Verdict: \033\\[1;32mclean\033\\[0m' "$TMP/typescript" || { cat -v "$TMP/typescript"; return 1; }

	RELEASE_MS=0 start_slow_holder
	on_pty "NO_COLOR=1 '$BIN' reclaim -y -q --no-units -g 0"
	grep -aq 'Verdict: clean' "$TMP/typescript"
	! grep -aq $'\033\\[' "$TMP/typescript"

	# Not a terminal: plain text, and JSON is never coloured.
	RELEASE_MS=0 start_slow_holder
	run "$BIN" reclaim -y -q --no-units -g 0
	[ "$status" -eq 0 ]
	grep -q '^Verdict: clean' <<<"$output"
	RELEASE_MS=0 start_slow_holder
	on_pty "'$BIN' reclaim -y -q --no-units -g 0 --json"
	grep -aq '"verdict": "clean"' "$TMP/typescript"
	! grep -aq $'\033\\[' "$TMP/typescript"
}

# ---------------------------------------------------------------- isolation

# in_private_run SCRIPT ARGS...: runs SCRIPT (bash) in a private mount
# namespace whose /run is an empty tmpfs, so that whatever it writes there
# can be listed afterwards without touching (or seeing) the machine's /run.
in_private_run() {
	command -v unshare >/dev/null || skip "unshare (util-linux) not installed"
	unshare --mount --propagation private true 2>/dev/null || skip "cannot create a mount namespace (needs root)"
	unshare --mount --propagation private bash -c 'mount -t tmpfs gs-private-run /run || exit 77; '"$1" _ "${@:2}"
}

@test "make demo writes nothing outside its temporary directory: no /run/gpuslate.lock or .last-reclaim" {
	[ -x "$BUILD/gpuslate" ] && [ -x "$BUILD/fakes/gs-holder" ] || skip "build/gpuslate and the fakes are not built"
	mkdir -p "$TMP/tmp"
	run in_private_run '
		cd "$1" && TMPDIR=$2 GPUSLATE_BUILD=$3 bash tests/demo.sh >"$2/../demo.out" 2>&1
		echo "demo exit $?"
		find /run "$2" -mindepth 1' "$ROOT" "$TMP/tmp" "$BUILD"
	[ "$status" -ne 77 ] || skip "cannot mount a tmpfs on /run"
	echo "$output"
	# The demo ran (and reclaimed), and left nothing in /run or in TMPDIR.
	[ "$output" = "demo exit 0" ] || { cat "$TMP/demo.out"; return 1; }
	grep -q 'Verdict: clean' "$TMP/demo.out"
}

# ---------------------------------------------------------------- quick start

@test "install-deps: the README's first command installs only the demo's needs, the test command the rest" {
	demo=$("$ROOT/tools/install-deps" --list)
	test=$("$ROOT/tools/install-deps" --list test)
	for p in build-essential libjansson-dev; do
		grep -qx "$p" <<<"$demo" || { echo "demo set lacks $p"; return 1; }
	done
	# The suite's servers and analyzers are not the demo's business.
	for p in slurmctld slurmd munge openssh-server valgrind clang clang-tidy cppcheck bats libcmocka-dev lintian; do
		! grep -qx "$p" <<<"$demo" || { echo "demo set installs $p"; return 1; }
		grep -qx "$p" <<<"$test" || { echo "test set lacks $p"; return 1; }
	done
	# The two commands of the README, and .ci/run ends with the second.
	grep -qE '^    tools/install-deps && make demo ' "$ROOT/README.md"
	grep -qE '^    tools/install-deps test && make check ' "$ROOT/README.md"
	[ "$(grep -v '^#' "$ROOT/.ci/run" | grep . | tail -n 1)" = "tools/install-deps test && make check" ]
	run "$ROOT/tools/install-deps" bogus
	[ "$status" -eq 2 ]
}

@test "install-deps: the default set has what make install needs (scdoc), the deb set what make deb needs" {
	build=$("$ROOT/tools/install-deps" --list)
	deb=$("$ROOT/tools/install-deps" --list deb)
	test=$("$ROOT/tools/install-deps" --list test)
	# make install builds the man page with the Makefile's SCDOC
	scdoc=$(sed -n 's/^SCDOC ?= *//p' "$ROOT/Makefile")
	grep -qx "$scdoc" <<<"$build" || { echo "the default set lacks $scdoc"; return 1; }
	[ "$("$ROOT/tools/install-deps" --list demo)" = "$build" ]
	# make deb: debian/control's Build-Depends (debhelper-compat is
	# debhelper's), dpkg-buildpackage (dpkg-dev); the build set too
	sed -n '/^Build-Depends:/,/^[A-Z]/p' "$ROOT/debian/control" | sed 's/^Build-Depends://' |
		tr ',' '\n' | sed -E 's/\(.*//; s/^[[:space:]]+//; s/[[:space:]]+$//; s/^debhelper-compat$/debhelper/' |
		grep -E '^[a-z0-9][a-z0-9.+-]+$' >"$TMP/bdeps"
	[ "$(wc -l <"$TMP/bdeps")" -ge 3 ]
	echo dpkg-dev >>"$TMP/bdeps"
	while read -r p; do
		grep -qx "$p" <<<"$deb" || { echo "the deb set lacks $p"; return 1; }
		grep -qx "$p" <<<"$test" || { echo "the test set lacks $p"; return 1; }
	done <"$TMP/bdeps"
	while read -r p; do
		grep -qx "$p" <<<"$deb" || { echo "the deb set lacks the build set's $p"; return 1; }
	done <<<"$build"
	# The README's install lines start from the sets, and name make deb's packages.
	grep -qE '^    tools/install-deps && make && sudo make install ' "$ROOT/README.md"
	grep -qE '^    tools/install-deps deb && make deb ' "$ROOT/README.md"
	while read -r p; do
		grep -qw -- "$p" "$ROOT/README.md" || { echo "README does not name $p"; return 1; }
	done <<<"$deb"
}

@test "make man: a failing or missing scdoc fails make, names it, and leaves no page and no .tmp" {
	for sc in false "$TMP/no-such-scdoc"; do
		run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" man B="$TMP/b" SCDOC="$sc"
		[ "$status" -ne 0 ] || { echo "SCDOC=$sc: make succeeded"; return 1; }
		grep -qF "$sc" <<<"$output" || { echo "SCDOC=$sc: not named: $output"; return 1; }
		[ ! -e "$TMP/b/gpuslate.1" ] && [ ! -e "$TMP/b/gpuslate.1.tmp" ] ||
			{ echo "SCDOC=$sc left $(ls "$TMP/b")"; return 1; }
	done
	# and a working one writes the page, no .tmp
	run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" man B="$TMP/b"
	[ "$status" -eq 0 ]
	[ -s "$TMP/b/gpuslate.1" ] && [ ! -e "$TMP/b/gpuslate.1.tmp" ]
}

@test "make demo: the holders show real programs' command lines, and the demo ends with its verdict" {
	[ -x "$BUILD/gpuslate" ] && [ -x "$BUILD/fakes/gs-holder" ] || skip "build/gpuslate and the fakes are not built"
	run env -C "$ROOT" TMPDIR="$TMP" GPUSLATE_BUILD="$BUILD" bash tests/demo.sh
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# the first status: the holders' rows
	sed -n '/^\$ gpuslate status$/,/^\$ gpuslate reclaim/p' <<<"$output" >"$TMP/status"
	grep -qE '^ +[0-9]+ +root +python3 -m vllm' "$TMP/status" || { cat "$TMP/status"; return 1; }
	grep -qE '^ +[0-9]+ +root +torchrun --' "$TMP/status"
	grep -qE '^ +[0-9]+ +root +nvidia-persiste' "$TMP/status"
	# none of the fake holder's own options is to be seen anywhere
	! grep -qE -- '--(ready-file|mib|gpu [0-9]|client|fork-child|sigign-term)' <<<"$output"
	grep -q '^Verdict: clean' <<<"$output"
	[ "$(tail -n 2 <<<"$output")" = $'0, 0 MiB\n1, 0 MiB' ]
}

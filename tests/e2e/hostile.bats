#!/usr/bin/env bats
# Names chosen by an adversary (issue 11 item 11): process names with escape
# sequences that retitle and clear the terminal, a newline that forges a
# "Verdict: ok" line, bytes that are not UTF-8 (and a C1 CSI inside valid
# UTF-8), long names, a cgroup (unit) name with the same, a GPU name and a
# host name with them. Every output format must show them escaped
# (docs/security.md, "Reports that lie"): text with no byte outside
# printable ASCII, JSON that parses, is valid UTF-8, holds no control
# character in any string, and keeps every key (comm, owner, summary,
# reason).

load helpers

SSH_STUB=$BATS_TEST_DIRNAME/../analysis/ssh-stub

# The names. comm keeps the first 15 bytes of each.
N_ESC=$'\e]0;pwned\a\e[2J'              # retitles, then clears the screen
N_FORGE=$'x\nVerdict: ok'               # 13 bytes that forged a report line
N_BAD=$'\xff\xfe\xc2\x9b2Jz'            # not UTF-8, then CSI as UTF-8 (C1)
N_UTF8='müller-日本'                    # valid UTF-8: JSON keeps it as it is
# What JSON says for each comm (text says the same, bytes >= 0x80 as \xNN).
J_ESC='\x1b]0;pwned\x07\x1b[2J'
J_FORGE='x\x0aVerdict: ok'
J_BAD='\xff\xfe\xc2\x9b2Jz'

# text_clean FILE: nothing but printable ASCII, newlines and tabs.
text_clean() {
	local bad
	bad=$(LC_ALL=C tr -d '\11\12\40-\176' <"$1" | wc -c)
	if [ "$bad" -ne 0 ]; then
		echo "$1: $bad raw bytes outside printable ASCII:" >&2
		cat -v "$1" >&2
		return 1
	fi
}

# json_clean FILE: one JSON value, valid UTF-8, no raw control byte, and no
# control character (C0, DEL, C1) in any decoded string.
json_clean() {
	local raw n
	jq -e . "$1" >/dev/null || { echo "$1: not JSON:" >&2; cat -v "$1" >&2; return 1; }
	iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 || { echo "$1: not valid UTF-8" >&2; return 1; }
	raw=$(LC_ALL=C tr -d '\11\12\15\40-\176\200-\377' <"$1" | wc -c)
	[ "$raw" -eq 0 ] || { echo "$1: $raw raw control bytes" >&2; return 1; }
	n=$(jq '[.. | strings | select(explode | any(. < 32 or (. >= 127 and . < 160)))] | length' "$1")
	[ "$n" -eq 0 ] || { echo "$1: $n strings hold control characters:" >&2; jq '[.. | strings]' "$1" >&2; return 1; }
}

# out NAME ARGS...: runs gpuslate, stdout to NAME (a file in the test's
# directory, its path in $OUT), stderr checked as text too; sets status.
out() {
	local name=$1
	shift
	OUT=$BATS_TEST_TMPDIR/$name
	status=0
	gs "$@" >"$OUT" 2>"$OUT.err" </dev/null || status=$?
	text_clean "$OUT.err"
}

# A simulated host whose GPUs carry a hostile name, and the holders.
setup_hostile_host() {
	GS_HOST=$BATS_TEST_TMPDIR/hostile
	bash "$GS_FAKES/mkhost.sh" "$GS_HOST" 2 --name $'H200\e[5m\xff'
	export FAKE_NVML_STATE=$GS_HOST/nvml GPUSLATE_DEV_ROOT=$GS_HOST/dev GPUSLATE_NVIDIA_PROCFS=$GS_HOST/driver
	# a long command line, escapes at its end where tables cut it
	start_holder esc --forge "$N_ESC" --gpu 0 --mib 1024 -- "$(printf 'arg%.0s' {1..200})" $'\e[31mred\nline'
	start_holder forge --forge "$N_FORGE" --gpu 0 --mib 512
	start_holder bad --forge "$N_BAD" --gpu 1 --mib 256
	start_holder utf8 --forge "$N_UTF8" --gpu 1 --mib 128
	esc=$(rpid esc) forge=$(rpid forge) bad=$(rpid bad) utf8=$(rpid utf8)
}

comm_of() { jq -r ".processes[] | select(.pid == $2) | .comm" "$1"; }

@test "hostile names: status as a table, CSV, nvidia-smi queries, Prometheus and JSON escapes them all" {
	setup_hostile_host

	for fmt in table csv csv-processes query-gpu query-apps prometheus; do
		case $fmt in
		table) out "$fmt" status ;;
		csv) out "$fmt" status --csv ;;
		csv-processes) out "$fmt" status --csv=processes ;;
		query-gpu) out "$fmt" status --query-gpu=index,name,uuid,pci.bus_id,driver_version --format=csv ;;
		query-apps) out "$fmt" status --query-compute-apps=pid,process_name,gpu_name,used_memory --format=csv ;;
		prometheus) out "$fmt" status --format prometheus ;;
		esac
		assert_eq "$status" 0 "status exit ($fmt)"
		text_clean "$OUT"
	done
	# The escaped names are there, one holder per line; an escape is never
	# cut (COLUMNS: a table as wide as a terminal's, not whole lines).
	COLUMNS=100 out table status
	assert_match "$(cat "$OUT")" "^ *$esc +root +\\\\x1b\]0;pwned\\\\x07\\\\x1b\[2J\.\.\.[arg]+ " "escape-sequence holder's row"
	# (where the cut falls in the run of "arg"s depends on the column's width)
	# the arguments begin after argv[0], whose name holds a space
	assert_match "$(cat "$OUT")" "^ *$forge +root +x\\\\x0aVerdict: ok --read" "forging holder's row"
	assert_match "$(cat "$OUT")" "^0 +H200\\\\x1b\[5m\\\\xff " "GPU name"
	assert_no_match "$(cat "$OUT")" "^Verdict" "a forged line"
	out csv status --csv=processes
	# name, comm, then the command line: each escaped
	assert_match "$(cat "$OUT")" "^$forge,true,root,x\\\\x0aVerdict: ok,x\\\\x0aVerdict: ok,[^,]*/x\\\\x0aVerdict: ok --ready-file [^,]*,0,512,compute," "CSV row"
	assert_match "$(cat "$OUT")" "^$bad,true,root,\\\\xff\\\\xfe\\\\xc2\\\\x9b2Jz,\\\\xff\\\\xfe\\\\xc2\\\\x9b2Jz,[^,]*,1,256,compute," "CSV row"
	out query-apps status --query-compute-apps=pid,process_name --format=csv,noheader
	assert_match "$(cat "$OUT")" "^$esc, .*/forged/\\\\x1b\]0;pwned\\\\x07\\\\x1b\[2J\$" "process_name"

	out json status --json
	json_clean "$OUT"
	assert_eq "$(comm_of "$OUT" "$esc")" "$J_ESC" "comm of the escape-sequence holder"
	assert_eq "$(comm_of "$OUT" "$forge")" "$J_FORGE" "comm of the forging holder"
	assert_eq "$(comm_of "$OUT" "$bad")" "$J_BAD" "comm of the non-UTF-8 holder"
	assert_eq "$(comm_of "$OUT" "$utf8")" "$N_UTF8" "a UTF-8 comm, as it is"
	# no key vanished: every process has its comm, name, cmdline and owner
	assert_eq "$(jq '[.processes[] | select(.comm == null or .name == null or .cmdline == null or .owner == null)] | length' "$OUT")" \
		0 "processes with a missing key"
	assert_eq "$(jq -r '.gpus[0].name' "$OUT")" 'H200\x1b[5m\xff' "GPU name"
	assert_alive "$esc" "$forge" "$bad" "$utf8"
}

@test "hostile names: the plan and the reclaim report cannot be forged, and the JSON keeps summary and reason" {
	setup_hostile_host

	out plan reclaim --dry-run
	assert_eq "$status" 0 "dry run exit"
	text_clean "$OUT"
	assert_no_match "$(cat "$OUT")" "^Verdict" "a forged line in the plan"
	assert_match "$(cat "$OUT")" "^ +$forge +root +x\\\\x0aVerdict: ok " "the forging holder's plan row"
	out plan.json reclaim --dry-run --json
	json_clean "$OUT"
	assert_eq "$(jq -r ".plan.targets[] | select(.pid == $bad) | .comm" "$OUT")" "$J_BAD" "plan comm"

	# GPU 1's holders: the report as text.
	out report reclaim -y -g 1 --grace 2
	assert_eq "$status" 0 "reclaim exit"
	text_clean "$OUT"
	assert_eq "$(grep -c '^Verdict: ' "$OUT")" 1 "Verdict lines"
	# comm in 16 columns, escapes whole
	assert_match "$(cat "$OUT")" "^ +$bad +\\\\xff\\\\xfe\\\\xc2\.\.\. +signals TERM\+CONT " "the stopped holder's line"
	assert_dead "$bad" "$utf8"

	# wait while GPU 0's hostile holders stay: the summary names them.
	out wait.json wait -g 0 --json --timeout 0.3 --reason $'drain\nVerdict: ok \e[2J'
	assert_eq "$status" 1 "wait exit"
	json_clean "$OUT"
	assert_eq "$(jq -r .verdict "$OUT")" not-clean verdict
	assert_match "$(jq -r .summary "$OUT")" "held by .*$esc \(\\\\x1b\]0;pwned\\\\x07\\\\x1b\[2J\)" summary
	assert_match "$(jq -r .summary "$OUT")" "$forge \(x\\\\x0aVerdict: ok\)" summary
	assert_match "$(jq -r .reason "$OUT")" '^drain\\x0aVerdict: ok \\x1b\[2J: gpuslate: not clean' reason
	out wait wait -g 0 --timeout 0.3
	assert_eq "$status" 1 "wait exit (text)"
	text_clean "$OUT"
	assert_eq "$(grep -c '^Verdict: ' "$OUT")" 1 "Verdict lines"

	# GPU 0's holders: reclaim as JSON.
	out reclaim.json reclaim -y -g 0 --grace 2 --json
	assert_eq "$status" 0 "reclaim exit"
	json_clean "$OUT"
	assert_eq "$(jq -r ".processes[] | select(.pid == $esc) | .comm" "$OUT")" "$J_ESC" "stopped comm"
	assert_eq "$(jq -r '[.verdict, .summary, .reason] | join("|")' "$OUT")" \
		"clean|gpuslate: clean (1 GPU)|gpuslate: clean (1 GPU)" "verdict, summary, reason"
	assert_dead "$esc" "$forge"
}

@test "hostile names: a host name with escape sequences reads escaped in the plan and the JSON" {
	unshare -u true 2>/dev/null || skip "cannot create a UTS namespace (needs CAP_SYS_ADMIN)"
	start_holder a --gpu 0 --mib 1024
	run --separate-stderr unshare -u bash -c 'printf "%s" "$1" >/proc/sys/kernel/hostname && shift && exec "$@"' \
		_ $'gpu\e[2J\xff' "$GPUSLATE_BIN" reclaim --dry-run
	assert_status 0
	assert_match "$output" '^Host gpu\\x1b\[2J\\xff, GPUs 0,1$' "plan's host line"
	run --separate-stderr unshare -u bash -c 'printf "%s" "$1" >/proc/sys/kernel/hostname && shift && exec "$@"' \
		_ $'gpu\e[2J\xff' "$GPUSLATE_BIN" status --json
	assert_status 0
	assert_eq "$(jqo .host)" 'gpu\x1b[2J\xff' "host in JSON"
	assert_alive "$(rpid a)"
}

@test "hostile names: a cgroup (unit) name with escape sequences and bad bytes reads escaped as the owner" {
	require_cgroups
	unit=$'\e[2Jevil\xff'$BATS_TEST_NUMBER$(printf 'u%.0s' {1..150}).service
	cg=$(make_cgroup "gs-e2e-$$-$BATS_TEST_NUMBER/system.slice/$unit")
	launch held bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
		"$GS_HOLDER" --ready-file "$BATS_TEST_TMPDIR/held.ready" --gpu 0 --mib 1024
	p=$(rpid held)

	out table status
	text_clean "$OUT"
	assert_match "$(cat "$OUT")" "^ *$p +root .* unit \\\\x1b\[2Jevil\\\\xff$BATS_TEST_NUMBER" "OWNER column"
	out csv status --csv=processes
	text_clean "$OUT"
	out json status --json
	json_clean "$OUT"
	assert_eq "$(jq -r ".processes[] | select(.pid == $p) | .owner.kind" "$OUT")" unit "owner kind"
	assert_match "$(jq -r ".processes[] | select(.pid == $p) | .owner.name" "$OUT")" \
		"^\\\\x1b\[2Jevil\\\\xff${BATS_TEST_NUMBER}u+\.service\$" "owner name"
	assert_match "$(jq -r ".processes[] | select(.pid == $p) | .owner.cgroup" "$OUT")" \
		"/system\.slice/\\\\x1b\[2Jevil\\\\xff" "owner cgroup"
	out plan reclaim --dry-run
	text_clean "$OUT"
	assert_match "$(cat "$OUT")" "stop unit \\\\x1b\[2Jevil\\\\xff$BATS_TEST_NUMBER" "the plan's action"
	# Signals only (no unit of this name exists to be stopped): the report
	# and its JSON name the unit escaped.
	out report.json reclaim -y --no-units --json
	assert_eq "$status" 0 "reclaim exit"
	json_clean "$OUT"
	assert_match "$(jq -r ".plan.targets[] | select(.pid == $p) | .owner.name" "$OUT")" \
		"^\\\\x1b\[2Jevil\\\\xff${BATS_TEST_NUMBER}u+\.service\$" "target's owner"
	assert_dead "$p"
}

@test "hostile names: a fleet's text, its -v and query lines and its JSON escape what the hosts send" {
	setup_hostile_host
	fleet() { gs -w gpu01,gpu02 --ssh "$SSH_STUB" --remote-cmd "$GPUSLATE_BIN" "$@"; }

	OUT=$BATS_TEST_TMPDIR/fleet
	fleet status >"$OUT" 2>"$OUT.err" && st=0 || st=$?
	assert_eq "$st" 0 "fleet status exit (it read the GPUs, whatever holds them: as on one host)"
	text_clean "$OUT"
	text_clean "$OUT.err"
	assert_match "$(cat "$OUT")" "^gpu\[01-02\]: not clean, 2 GPUs, .*$esc \(\\\\x1b\]0;pwned\\\\x07\\\\x1b\[2J\)" "folded line"
	assert_no_match "$(cat "$OUT")" "^Verdict" "a forged line"

	fleet -v reclaim --dry-run >"$OUT" 2>"$OUT.err" || true
	text_clean "$OUT"
	assert_match "$(cat "$OUT")" "^gpu01: +$forge +root +x\\\\x0aVerdict: ok " "a host's own plan row, prefixed"
	assert_no_match "$(cat "$OUT")" "^(gpu0[12]: )?Verdict: ok" "a forged line"

	fleet status --query-compute-apps=pid,process_name --format=csv,noheader >"$OUT" 2>"$OUT.err" || true
	text_clean "$OUT"
	assert_match "$(cat "$OUT")" "^gpu02: $bad, .*/forged/\\\\xff\\\\xfe\\\\xc2\\\\x9b2Jz\$" "a query line"

	fleet --json status >"$OUT" 2>"$OUT.err" || true
	json_clean "$OUT"
	assert_eq "$(jq -r ".hosts[1].report.processes[] | select(.pid == $bad) | .comm" "$OUT")" "$J_BAD" \
		"comm in a host's report"
	assert_eq "$(jq -r ".hosts[0].report.processes[] | select(.pid == $utf8) | .comm" "$OUT")" "$N_UTF8" \
		"a UTF-8 comm in a host's report"
	assert_match "$(jq -r '.hosts[0].summary' "$OUT")" "x\\\\x0aVerdict: ok" "a host's summary"
	assert_alive "$esc" "$forge" "$bad" "$utf8"
}

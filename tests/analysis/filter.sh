#!/bin/bash
# filter.sh SUPPRESSIONS < FINDINGS: prints the findings ("FILE:LINE:COL:
# warning|error: MESSAGE [CHECK...]") that no line of SUPPRESSIONS matches,
# and exits 1 if there are any. SUPPRESSIONS lines are
#   FILE|CHECK|TEXT ON THE FLAGGED SOURCE LINE|reason
# matched by file, check and the flagged line's text (not its number), so
# edits elsewhere keep an entry valid, and a change to the flagged line
# brings the finding back for review.
set -uo pipefail
supp_file=$1
bad=0 supp=0
while IFS= read -r line; do
	file=${line%%:*}
	rest=${line#*:}
	lno=${rest%%:*}
	check=$(sed -nE 's/.*\[-?W?([A-Za-z0-9.=-]+)(,-warnings-as-errors)?\]$/\1/p' <<<"$line")
	rel=${file#"$PWD"/}
	src=$(sed -n "${lno}p" "$rel" 2>/dev/null)
	matched=
	while IFS='|' read -r sf sc stext _; do
		case $sf in '' | '#'*) continue ;; esac
		if [ "$sf" = "$rel" ] && [ "$sc" = "$check" ] && [[ $src == *"$stext"* ]]; then
			matched=1
			break
		fi
	done <"$supp_file"
	if [ -n "$matched" ]; then
		supp=$((supp + 1))
	else
		echo "$line"
		echo "    $src"
		bad=$((bad + 1))
	fi
done < <(grep -E '^[^ :]+:[0-9]+:[0-9]+: (warning|error): ' | sort -u)
echo "$bad finding(s), $supp suppressed as false positives (see $supp_file)"
[ "$bad" -eq 0 ]

# bash completion for gpuslate(1)                          -*- shell-script -*-
#
# Installed as $(PREFIX)/share/bash-completion/completions/gpuslate. Works
# with or without the bash-completion package (it uses _known_hosts_real
# for -w when that is available).

# Options that take an argument (as in the option table, src/core/options.c).
_gpuslate_argopts='-g --gpus -u --user --unit --container --match --include
	--grace --timeout --tolerance --respawn-watch --reason --expect --json-file --query-gpu --query-compute-apps
	--format -w --hosts -x --exclude -f --fanout --hosts-file --ssh --remote-cmd
	--connect-timeout --command-timeout --nvml-lib --dev-root --sys-root
	--proc-root --nvml-timeout'

# Options offered to people, as `gpuslate CMD --help` lists them: not
# --remote (gpuslate passes it to the far side itself) nor --proc-root (for
# reading a /proc copy in tests); both are still accepted and skipped with
# their arguments. The fleet's are not run's (run is local only).
_gpuslate_every='--json -q --quiet -v --verbose -h --help -V --version'
_gpuslate_fleet='-w --hosts -x --exclude -f --fanout --hosts-file --ssh --remote-cmd
	--connect-timeout --command-timeout'
_gpuslate_look='-g --gpus -W --wide --nvml-lib --dev-root --sys-root --no-nvml --nvml-timeout'
_gpuslate_common="$_gpuslate_every $_gpuslate_fleet $_gpuslate_look"

_gpuslate_cmd_opts()
{
	case $1 in
	status)
		echo "$_gpuslate_common --csv --csv=processes --query-gpu= --query-compute-apps= --format"
		;;
	reclaim)
		echo "$_gpuslate_common -u --user --unit --container --match --include-clients
			--include -y --yes -n --dry-run --grace --timeout --tolerance
			--no-units --include-parent --respawn-watch --reason --expect"
		;;
	wait)
		echo "$_gpuslate_common --timeout --tolerance --reason"
		;;
	restore)
		# restore reads its state file, not the GPUs: no GPU options.
		echo "$_gpuslate_every $_gpuslate_fleet -y --yes -n --dry-run --timeout"
		;;
	run)
		echo "$_gpuslate_every $_gpuslate_look -u --user --unit --container --match --include-clients
			--include -y --yes -n --dry-run --grace --timeout --tolerance
			--no-units --include-parent --respawn-watch --reason --guard --restore --json-file"
		;;
	*)
		echo "$_gpuslate_common"
		;;
	esac
}

# Complete a comma-separated list: offer "prefix,item" for the last element.
_gpuslate_list()
{
	local cur=$1 words=$2 pre=
	[[ $cur == *,* ]] && pre=${cur%,*},
	COMPREPLY=($(compgen -P "$pre" -W "$words" -- "${cur##*,}"))
	[[ ${#COMPREPLY[@]} -gt 0 ]] && compopt -o nospace 2>/dev/null
}

# GPU indices (or, for a word starting with G, UUIDs: "GPU-...") from
# gpuslate itself, only when that is cheap: an NVIDIA driver is loaded (or
# NVML is redirected) and no -w on the line (the GPUs of remote hosts are not
# ours to list). At most 2 seconds, nothing on an error.
_gpuslate_gpus()
{
	local field=index
	[[ $1 == G* ]] && field=uuid
	local w
	for w in "${COMP_WORDS[@]}"; do
		case $w in -w | --hosts | --hosts=*) return ;; esac
	done
	[[ -e /proc/driver/nvidia/version || -n ${GPUSLATE_NVML_LIB-} ]] || return
	local args=() i
	for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
		case ${COMP_WORDS[i]} in
		--nvml-lib | --dev-root | --sys-root | --proc-root) args+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]}") ;;
		--nvml-lib=* | --dev-root=* | --sys-root=* | --proc-root=* | --no-nvml) args+=("${COMP_WORDS[i]}") ;;
		esac
	done
	command -v timeout >/dev/null 2>&1 || return
	timeout 2 "${COMP_WORDS[0]}" status -q --nvml-timeout 1 "${args[@]}" \
		--query-gpu=$field --format=csv,noheader 2>/dev/null
}

# The inventory gpuslate would read: --hosts-file on the line, else
# $XDG_CONFIG_HOME/gpuslate/hosts (an absolute XDG_CONFIG_HOME) or
# ~/.config/gpuslate/hosts, else /etc/gpuslate/hosts.
_gpuslate_inventory()
{
	local i w conf=~/.config
	for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == --hosts-file && -n ${COMP_WORDS[i + 1]-} ]]; then
			w=${COMP_WORDS[i + 1]}
			[[ $w == = ]] && w=${COMP_WORDS[i + 2]-}
			printf '%s\n' "${w/#\~/$HOME}"
			return
		fi
		if [[ $w == --hosts-file=?* ]]; then
			w=${w#--hosts-file=}
			printf '%s\n' "${w/#\~/$HOME}"
			return
		fi
	done
	[[ ${XDG_CONFIG_HOME-} == /* ]] && conf=$XDG_CONFIG_HOME
	for w in "$conf/gpuslate/hosts" /etc/gpuslate/hosts; do
		[[ -e $w ]] && { printf '%s\n' "$w"; return; }
	done
}

_gpuslate_groups()
{
	local f
	f=$(_gpuslate_inventory)
	[[ -n $f && -r $f ]] || return
	sed -n 's/^[[:space:]]*\[\([A-Za-z][A-Za-z0-9._-]*\)\].*/@\1/p' "$f" 2>/dev/null
	echo @all
}

_gpuslate_units()
{
	command -v systemctl >/dev/null 2>&1 || return
	systemctl list-units --type=service,scope --no-legend --plain --no-pager 2>/dev/null |
		awk '{ print $1 }'
}

_gpuslate_value()
{
	local opt=$1 cur=$2
	case $opt in
	-g | --gpus)
		_gpuslate_list "$cur" "$(_gpuslate_gpus "${cur##*,}")"
		;;
	--format)
		COMPREPLY=($(compgen -W 'csv csv,noheader csv,nounits csv,noheader,nounits prometheus' -- "$cur"))
		;;
	--query-gpu)
		_gpuslate_list "$cur" "index uuid name pci.bus_id driver_version count
			memory.total memory.reserved memory.used memory.free"
		;;
	--query-compute-apps)
		_gpuslate_list "$cur" "pid process_name gpu_name gpu_uuid gpu_bus_id used_gpu_memory"
		;;
	-u | --user)
		COMPREPLY=($(compgen -u -- "$cur"))
		;;
	--unit)
		COMPREPLY=($(compgen -W "$(_gpuslate_units)" -- "$cur"))
		;;
	--container)
		if command -v pct >/dev/null 2>&1; then
			COMPREPLY=($(compgen -W "$(pct list 2>/dev/null | awk 'NR > 1 { print $1 }')" -- "$cur"))
		fi
		;;
	--include)
		COMPREPLY=($(compgen -W 'nvidia-persistenced nv-hostengine dcgm-exporter
			nv-fabricmanager nvidia-imex nvidia-cuda-mps-control Xorg Xwayland' -- "$cur"))
		;;
	-w | --hosts | -x | --exclude)
		# "@..." is an inventory group and nothing else (known hosts
		# would come back as "@host"); a name is a host.
		local hosts=
		if [[ ${cur##*,} == @* ]]; then
			hosts="$(_gpuslate_groups)"
		elif declare -F _known_hosts_real >/dev/null; then
			_known_hosts_real -- "${cur##*,}"
			hosts="$(printf '%s\n' "${COMPREPLY[@]}" | grep -v '^@')"
		fi
		_gpuslate_list "$cur" "$hosts"
		;;
	--hosts-file | --nvml-lib)
		COMPREPLY=($(compgen -f -- "$cur"))
		compopt -o filenames 2>/dev/null
		;;
	--dev-root | --sys-root | --proc-root)
		COMPREPLY=($(compgen -d -- "$cur"))
		compopt -o filenames 2>/dev/null
		;;
	--ssh | --remote-cmd)
		COMPREPLY=($(compgen -c -- "$cur"))
		;;
	*)
		# Seconds, MiB, counts, text: nothing sensible to offer.
		COMPREPLY=()
		;;
	esac
}

_gpuslate()
{
	local cur prev cword=$COMP_CWORD
	cur=${COMP_WORDS[cword]}
	prev=
	((cword > 0)) && prev=${COMP_WORDS[cword - 1]}
	COMPREPLY=()

	# run's COMMAND: the word after "--" is a command, the later ones are
	# its arguments, completed as that command's (bash-completion's
	# _command_offset, else file names).
	local i
	for ((i = 1; i < cword; i++)); do
		[[ ${COMP_WORDS[i]} == -- ]] || continue
		local j
		for ((j = 1; j < i; j++)); do
			[[ ${COMP_WORDS[j]} == run ]] || continue
			if ((cword == i + 1)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			elif declare -F _command_offset >/dev/null; then
				_command_offset $((i + 1))
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		done
		break
	done

	# "--opt=value": bash splits at '=' (COMP_WORDBREAKS).
	if [[ $cur == = && $prev == --* ]]; then
		_gpuslate_value "$prev" ""
		return
	fi
	if [[ $prev == = ]] && ((cword >= 2)) && [[ ${COMP_WORDS[cword - 2]} == --* ]]; then
		_gpuslate_value "${COMP_WORDS[cword - 2]}" "$cur"
		return
	fi
	if [[ $cur == --*=* ]]; then
		# COMP_WORDBREAKS without '=': complete the value part.
		local opt=${cur%%=*}
		_gpuslate_value "$opt" "${cur#*=}"
		local i
		for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]="$opt=${COMPREPLY[i]}"; done
		return
	fi

	# An option that needs an argument: complete the argument.
	local w
	for w in $_gpuslate_argopts; do
		if [[ $prev == "$w" ]]; then
			_gpuslate_value "$prev" "$cur"
			return
		fi
	done

	# Find the command, skipping options and their arguments.
	local cmd= skip= argopts
	argopts=" $(echo $_gpuslate_argopts) "
	for ((i = 1; i < cword; i++)); do
		w=${COMP_WORDS[i]}
		if [[ -n $skip ]]; then
			skip=
			continue
		fi
		[[ $w == = ]] && { skip=1; continue; }
		case $argopts in
		*" $w "*) skip=1; continue ;;
		esac
		case $w in
		-*) continue ;;
		status | reclaim | wait | restore | run | help) cmd=$w; break ;;
		esac
	done

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_gpuslate_cmd_opts "$cmd")" -- "$cur"))
		[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
		return
	fi
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W 'status reclaim wait restore run help' -- "$cur"))
	elif [[ $cmd == help && ${COMP_WORDS[cword - 1]} == help ]]; then
		# gpuslate help CMD
		COMPREPLY=($(compgen -W 'status reclaim wait restore run' -- "$cur"))
	fi
}

complete -F _gpuslate gpuslate

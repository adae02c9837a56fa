# The test world: real service managers and container runtimes, started and
# torn down by the suite itself (docs/testing.md). Sourced by
# tests/e2e/helpers.bash. Each piece:
#
#   systemd    world_systemd_start / world_unit / sd            (per test)
#   LXC        world_lxc_start ID / world_lxc_unit / pct         (per file)
#   Docker     world_docker_start / world_container_run docker   (per file)
#   Podman     world_podman_start / world_container_run podman   (per file)
#
# Every piece is skipped (bats `skip`, with the reason) only where this
# machine cannot run it: not root, a tool not installed, no writable cgroup
# v2 hierarchy, no overlayfs. Names are unique per run (container IDs,
# cgroups, sockets under the test's own directories), and everything is
# ended by PID or by the runtime's own command for what this run created:
# suites of other checkouts run on the same machine at the same time.

GS_WORLD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The root filesystem for containers is built once per machine (mmdebstrap,
# about 45 s) and shared by every run; never inside the repository.
GS_WORLD_CACHE=${GS_WORLD_CACHE:-/var/cache/gpuslate-tests}

# world_need_root: skips unless root (every piece needs namespaces, mounts
# and cgroups).
world_need_root() {
	[ "$(id -u)" = 0 ] || skip "the test world needs root (namespaces, mounts, cgroups)"
}

# world_cgroup2: the unified (v2) hierarchy: /sys/fs/cgroup on a v2 host,
# /sys/fs/cgroup/unified on a hybrid one; skips when there is none.
world_cgroup2() {
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo /sys/fs/cgroup
	elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
		echo /sys/fs/cgroup/unified
	else
		return 1
	fi
}

# world_uid NAME: a name no other run on this machine uses now.
world_uid() { printf '%s-%d-%d-%04x' "$1" "$$" "${BATS_TEST_NUMBER:-0}" $((RANDOM)); }

# world_rm_cgroup_tree DIR: removes DIR and what is below it, deepest first,
# once empty (after killing what is left in it: only ever a directory this
# run created).
world_rm_cgroup_tree() {
	local d=$1 sub
	[ -d "$d" ] || return 0
	[ -f "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
	while read -r sub; do
		wait_for 5 rmdir "$sub" 2>/dev/null || echo "world: cannot remove cgroup $sub" >&2
	done < <(find "$d" -depth -type d)
	[ ! -d "$d" ]
}

# ---- systemd -----------------------------------------------------------------

# world_systemd_start: a real systemd manager for this test (see
# systemd-manager.sh), reached by `sd` (systemctl) and `sd_exec CMD` (any
# command in its mount namespace, where /run/systemd/private is its socket).
# Sets WORLD_SD_PID, WORLD_SD_DIR, WORLD_SD_CGROUP (relative to the unified
# root, e.g. /gs-world-...: the prefix before system.slice).
#
# world_systemd_start --user: the manager is root's user manager instead
# (user.slice/user-0.slice/user@0.service below the prefix, reached only by
# `systemctl --user` with XDG_RUNTIME_DIR=/run/user/0; `sd` does that).
# Units then go in app.slice (world_unit --slice app.slice) as a user's do.
world_systemd_start() {
	local root cg top mode=system
	[ "${1:-}" = --user ] && mode=user
	world_need_root
	[ -x /lib/systemd/systemd ] || skip "systemd is not installed (/lib/systemd/systemd)"
	command -v nsenter >/dev/null || skip "nsenter (util-linux) is not installed"
	root=$(world_cgroup2) || skip "no cgroup v2 hierarchy (systemd needs one to track units)"
	WORLD_SD_DIR=$BATS_TEST_TMPDIR/systemd
	WORLD_SD_MODE=$mode
	top=/$(world_uid gs-world)
	WORLD_SD_CGROUP=$top
	[ "$mode" = user ] && WORLD_SD_CGROUP=$top/user.slice/user-0.slice/user@0.service
	cg=$root$WORLD_SD_CGROUP
	mkdir -p "$cg" || skip "cannot create a cgroup under $root (read-only cgroupfs?)"
	echo "$root$top" >>"$GS_WORLD_CGROUPS"
	# systemd mirrors its tree into the name=systemd hierarchy on hybrid hosts.
	[ -d /sys/fs/cgroup/systemd ] && [ "$root" != /sys/fs/cgroup ] &&
		echo "/sys/fs/cgroup/systemd$top" >>"$GS_WORLD_CGROUPS"
	mkdir -p "$WORLD_SD_DIR"
	unshare --mount --propagation private "$GS_WORLD/systemd-manager.sh" "$WORLD_SD_DIR" "$cg" "$mode" \
		</dev/null >"$WORLD_SD_DIR/manager.log" 2>&1 3>&- &
	WORLD_SD_PID=$!
	disown "$WORLD_SD_PID"
	echo "world_systemd_stop $WORLD_SD_PID" >>"$GS_WORLD_CLEANUP"
	if ! wait_for 20 world_systemd_ready; then
		cat "$WORLD_SD_DIR/manager.log" >&2
		echo "world: the systemd manager did not start" >&2
		return 1
	fi
	track "$WORLD_SD_PID" sup
}
world_systemd_ready() {
	kill -0 "$WORLD_SD_PID" 2>/dev/null || return 1
	[ -S "$WORLD_SD_DIR/runtime/systemd/private" ] || return 1
	case $(sd is-system-running 2>/dev/null) in running | degraded) return 0 ;; esac
	return 1
}

# sd_exec CMD [ARG]...: CMD in the manager's mount namespace (the rest of
# the machine is the same: PIDs, files, cgroups).
sd_exec() { nsenter -t "$WORLD_SD_PID" -m -- "$@"; }
# sd ARGS...: the unmodified systemctl, talking to the test's manager.
sd() {
	if [ "${WORLD_SD_MODE:-system}" = user ]; then
		sd_exec env XDG_RUNTIME_DIR=/run/user/0 systemctl --user "$@"
	else
		sd_exec systemctl "$@"
	fi
}

# world_systemd_stop PID: ends the manager (it stops its units on SIGTERM),
# then whatever is left in its cgroups.
world_systemd_stop() {
	local pid=$1
	if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = /usr/lib/systemd/systemd ] ||
		[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = /lib/systemd/systemd ]; then
		kill -TERM "$pid" 2>/dev/null
		wait_for 10 dead "$pid" || kill -KILL "$pid" 2>/dev/null
	fi
	return 0
}

# systemd's quoting for one ExecStart= word: double quotes, with its
# specifier (%) and variable ($) characters escaped.
sd_quote() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//%/%%}
	s=${s//\$/\$\$}
	printf '"%s"' "$s"
}

# world_unit [--restart no|always|on-failure] [--restart-sec TIME] [--kill-mode MODE] [--slice S]
#            [--unit-set KEY=VALUE]... [--service-set KEY=VALUE]... NAME -- CMD [ARG]...:
#            defines NAME.service for the test's
# manager (Slice=system.slice, RestartSec=100ms unless given, the simulated host's
# environment) and starts it. Sets UNIT_MAIN (its MainPID) and tracks it.
world_unit() {
	local restart=no restart_sec=100ms kill_mode=control-group slice=system.slice name w exec='' extra='' service=''
	while [ $# -gt 0 ]; do
		case $1 in
		--unit-set) extra="$extra$2"$'\n'; shift 2 ;;
		--service-set) service="$service$2"$'\n'; shift 2 ;;
		--restart) restart=$2; shift 2 ;;
		--restart-sec) restart_sec=$2; shift 2 ;;
		--kill-mode) kill_mode=$2; shift 2 ;;
		--slice) slice=$2; shift 2 ;;
		*) break ;;
		esac
	done
	name=$1
	[ "$2" = -- ] || { echo "world_unit: NAME -- CMD..." >&2; return 1; }
	shift 2
	for w in "$@"; do exec="$exec $(sd_quote "$w")"; done
	cat >"$WORLD_SD_DIR/config/systemd/user/$name.service" <<-EOF
		[Unit]
		$extra
		[Service]
		Slice=$slice
		ExecStart=${exec# }
		Restart=$restart
		RestartSec=$restart_sec
		KillMode=$kill_mode
		TimeoutStopSec=10s
		Environment=FAKE_NVML_STATE=$FAKE_NVML_STATE GPUSLATE_DEV_ROOT=$GPUSLATE_DEV_ROOT
		$service
	EOF
	sd daemon-reload && sd start "$name.service" || return 1
	UNIT_MAIN=$(sd show -p MainPID --value "$name.service")
	[ -n "$UNIT_MAIN" ] && [ "$UNIT_MAIN" != 0 ] || { echo "world_unit: $name has no main process" >&2; return 1; }
	track "$UNIT_MAIN"
}

# ---- LXC in the Proxmox layout ------------------------------------------------

# world_debian_mirror: the Debian mirror apt is configured with.
world_debian_mirror() {
	local m
	m=$(awk '/^URIs:/ { u = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") { print u; exit } }' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null)
	[ -n "$m" ] || m=$(sed -n 's/^deb  *\(\[[^]]*\]  *\)\{0,1\}\([^ ]*\)  *bookworm .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
	echo "${m:-http://deb.debian.org/debian}"
}

# world_without_fds CMD...: CMD with every inherited descriptor above 2
# closed. mmdebstrap hands apt a pipe whose number it writes into a shell
# command (`cat >&N`), and dash reads only one digit there: under bats, fds
# 3-10 are open, the pipe gets 11 and the build fails (issue 23).
world_without_fds() {
	local fd
	for fd in /proc/self/fd/*; do
		fd=${fd##*/}
		[ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
	done
	exec "$@"
}

# world_rootfs: the cached container root filesystem (Debian 12 minbase with
# systemd), built on first use; prints its directory. One builder at a time
# (flock): concurrent suites wait for it instead of building twice. Where
# `make check` already tried and failed (GS_WORLD_ROOTFS_FAILED, set by
# tests/run-all.sh, which reported the cause once), it fails at once instead
# of trying again in every test file.
world_rootfs() {
	local c=$GS_WORLD_CACHE tmp mirror
	if [ -n "${GS_WORLD_ROOTFS_FAILED:-}" ] && [ ! -f "$c/rootfs/.complete" ]; then
		echo "world: the container root filesystem could not be built before the suite (see the start of the log)" >&2
		return 1
	fi
	mkdir -p "$c" || return 1
	(
		flock -x 9
		if [ ! -f "$c/rootfs/.complete" ]; then
			if [ ! -s "$c/rootfs.tar.zst" ]; then
				tmp=$c/rootfs.$$.tmp.tar.zst # mmdebstrap picks the format from the name
				mirror=$(world_debian_mirror)
				# Twice: a mirror's transient failure should not fail the suite.
				# In a subshell each: world_without_fds ends in exec.
				( world_without_fds mmdebstrap --quiet --variant=minbase \
					--include=systemd,systemd-sysv,dbus bookworm "$tmp" "$mirror" >&2 ) ||
					( world_without_fds mmdebstrap --quiet --variant=minbase \
						--include=systemd,systemd-sysv,dbus bookworm "$tmp" "$mirror" >&2 ) ||
					{ rm -rf "$tmp"; exit 1; }
				mv "$tmp" "$c/rootfs.tar.zst"
			fi
			rm -rf "$c/rootfs"
			mkdir "$c/rootfs" && tar --zstd -C "$c/rootfs" -xf "$c/rootfs.tar.zst" || exit 1
			: >"$c/rootfs/.complete"
		fi
	) 9>"$c/.lock" || return 1
	echo "$c/rootfs"
}

# world_lxc_skip_reason: why LXC containers cannot run here (empty: they can).
world_lxc_reason() {
	[ "$(id -u)" = 0 ] || { echo "LXC containers need root"; return; }
	command -v lxc-start >/dev/null || { echo "lxc is not installed"; return; }
	command -v mmdebstrap >/dev/null || [ -f "$GS_WORLD_CACHE/rootfs/.complete" ] ||
		{ echo "mmdebstrap is not installed (builds the containers' root filesystem)"; return; }
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
		{ echo "no overlayfs (the containers' root filesystems)"; return; }
	world_cgroup2 >/dev/null || echo "no cgroup v2 hierarchy"
}

# world_lxc TOOL ARGS...: an lxc-* tool, in the network namespace the
# container was started from (WORLD_LXC_NETNS, a name under /run/netns,
# when the container belongs to a simulated fleet host): LXC's command
# socket is an abstract one, visible in that namespace only.
world_lxc() {
	local tool=$1
	shift
	if [ -n "${WORLD_LXC_NETNS:-}" ]; then
		nsenter --net="/run/netns/$WORLD_LXC_NETNS" "$tool" "$@"
	else
		"$tool" "$@"
	fi
}

# world_lxc_start DIR SHARED: a privileged LXC container configured as
# Proxmox VE configures its CTs (cgroup lxc/<vmid>/ns, systemd as init,
# SIGRTMIN+3 to halt), with a numeric vmid no other run uses, its root
# filesystem an overlay over the cached one (changes under DIR), SHARED and
# the build directory bind-mounted at the same paths (the simulated GPU's
# device files and state, the holder and gpuslate binaries), and a
# `gpuslate` command inside that uses the simulated GPU. Returns once its
# systemd is up. Sets WORLD_CT (the vmid) and WORLD_LXC_PATH.
world_lxc_start() {
	local dir=$1 shared=$2 rootfs reason root id
	reason=$(world_lxc_reason)
	[ -z "$reason" ] || skip "$reason"
	rootfs=$(world_rootfs) || { echo "world: cannot build the container root filesystem" >&2; return 1; }
	root=$(world_cgroup2)
	WORLD_LXC_PATH=$dir
	for _ in $(seq 1 50); do
		id=$((100000 + (RANDOM * 32768 + RANDOM) % 900000))
		[ -e "$root/lxc/$id" ] || [ -e "$root/lxc.monitor/$id" ] || [ -e "$dir/$id" ] || break
	done
	mkdir -p "$dir/$id/delta/usr/local/bin" "$dir/$id/work"
	cat >"$dir/$id/config" <<-EOF
		lxc.uts.name = ct$id
		lxc.rootfs.path = overlay:$rootfs:$dir/$id/delta
		lxc.cgroup.dir.container = lxc/$id
		lxc.cgroup.dir.monitor = lxc.monitor/$id
		lxc.cgroup.dir.container.inner = ns
		lxc.init.cmd = /lib/systemd/systemd
		lxc.signal.halt = SIGRTMIN+3
		lxc.net.0.type = empty
		lxc.apparmor.profile = unconfined
		lxc.mount.auto = proc:mixed sys:mixed cgroup:rw:force
		lxc.autodev = 1
		lxc.tty.max = 0
		lxc.pty.max = 16
		lxc.mount.entry = $shared ${shared#/} none bind,create=dir 0 0
		lxc.mount.entry = $GPUSLATE_BUILD ${GPUSLATE_BUILD#/} none bind,ro,create=dir 0 0
	EOF
	# The simulated GPU as installed in the container: what its driver and
	# NVML would be on a real CT (`pct exec` clears the environment).
	# The simulated host changes with each test: world_sim_env rewrites it.
	cat >"$dir/$id/delta/usr/local/bin/gpuslate" <<-EOF
		#!/bin/sh
		set -a
		. $shared/sim.env
		set +a
		exec $GPUSLATE_BUILD/gpuslate "\$@"
	EOF
	chmod +x "$dir/$id/delta/usr/local/bin/gpuslate"
	WORLD_CT=$id
	echo "WORLD_LXC_NETNS=${WORLD_LXC_NETNS:-} world_lxc_stop $dir $id" >>"$BATS_FILE_TMPDIR/world-cleanup"
	if ! world_lxc lxc-start -P "$dir" -n "$id" -o "$dir/$id.log" -l NOTICE; then
		cat "$dir/$id.log" >&2
		return 1
	fi
	if ! wait_for 60 world_lxc_ready "$id"; then
		cat "$dir/$id.log" >&2
		world_lxc lxc-attach -P "$dir" -n "$id" -- systemctl --failed --no-pager >&2
		echo "world: container $id did not boot" >&2
		return 1
	fi
}
# world_sim_env SHARED: the simulated GPU host of the current test, for the
# `gpuslate` inside containers. Its lock file is the container's own: plain
# lxc-attach passes the caller's environment in, a host's path included.
world_sim_env() {
	cat >"$1/sim.env.tmp" <<-EOF
		GPUSLATE_NVML_LIB=$GS_NVML
		GPUSLATE_DEV_ROOT=$GPUSLATE_DEV_ROOT
		FAKE_NVML_STATE=$FAKE_NVML_STATE
		GPUSLATE_NVIDIA_PROCFS=$GPUSLATE_NVIDIA_PROCFS
		GPUSLATE_NO_PROGRESS=1
		GPUSLATE_LOCK_FILE=/run/gpuslate.lock
	EOF
	mv "$1/sim.env.tmp" "$1/sim.env"
}
world_lxc_ready() {
	case $(world_lxc lxc-attach -P "$WORLD_LXC_PATH" -n "$1" -- systemctl is-system-running 2>/dev/null) in
	running | degraded) return 0 ;;
	esac
	return 1
}

# world_lxc_stop DIR ID: stops the container (its systemd halts; killed
# after 20 s) and removes its directory. LXC removes its cgroups.
world_lxc_stop() {
	local dir=$1 id=$2
	[ -f "$dir/$id/config" ] || return 0
	world_lxc lxc-stop -P "$dir" -n "$id" -t 20 >/dev/null 2>&1 || world_lxc lxc-stop -P "$dir" -n "$id" -k >/dev/null 2>&1
	world_lxc lxc-wait -P "$dir" -n "$id" -s STOPPED -t 20 >/dev/null 2>&1 || true
	if ! findmnt -rn -o TARGET | grep -qF "$dir/$id"; then
		rm -rf "${dir:?}/$id"
	fi
}

# ct_exec CMD...: CMD inside the test's container, as `pct exec` runs it.
ct_exec() { world_lxc lxc-attach -P "$WORLD_LXC_PATH" -n "$WORLD_CT" --clear-env --keep-var TERM -- "$@"; }

# world_lxc_unit [--restart R] NAME -- CMD...: a service of the container's
# own systemd (system.slice/NAME.service inside, so lxc/<vmid>/ns/... on the
# host), started; sets UNIT_MAIN to its main process's host PID.
world_lxc_unit() {
	local restart=no name w exec='' ns
	[ "$1" = --restart ] && { restart=$2; shift 2; }
	name=$1
	shift 2
	for w in "$@"; do exec="$exec $(sd_quote "$w")"; done
	ct_exec sh -c 'cat >"/run/systemd/system/$1.service"' _ "$name" <<-EOF || return 1
		[Service]
		ExecStart=${exec# }
		Restart=$restart
		RestartSec=100ms
		TimeoutStopSec=10s
		Environment=FAKE_NVML_STATE=$FAKE_NVML_STATE GPUSLATE_DEV_ROOT=$GPUSLATE_DEV_ROOT FAKE_NVML_PID_FROM_LOCK=1
	EOF
	echo "WORLD_LXC_NETNS=${WORLD_LXC_NETNS:-} world_lxc_unit_stop $WORLD_LXC_PATH $WORLD_CT $name" >>"${GS_WORLD_CLEANUP:-$BATS_FILE_TMPDIR/world-cleanup}"
	ct_exec systemctl daemon-reload && ct_exec systemctl start "$name.service" || return 1
	# MainPID is the container's number; the host's is in the unit's cgroup.
	ns=$(ct_exec systemctl show -p MainPID --value "$name.service")
	UNIT_MAIN=$(world_host_pid "$(world_cgroup2)/lxc/$WORLD_CT/ns/system.slice/$name.service" "$ns")
	[ -n "$UNIT_MAIN" ] || { echo "world_lxc_unit: no main process for $name" >&2; return 1; }
	track "$UNIT_MAIN"
}
world_lxc_unit_stop() {
	world_lxc lxc-attach -P "$1" -n "$2" --clear-env -- sh -c \
		'systemctl stop "$1.service"; rm -f "/run/systemd/system/$1.service"; systemctl daemon-reload' _ "$3" 2>/dev/null
	return 0
}

# world_host_pid CGROUPDIR NSPID: the host PID of the process in CGROUPDIR
# whose innermost namespace PID is NSPID (/proc/PID/status NSpid).
world_host_pid() {
	local p
	for p in $(cat "$1/cgroup.procs" 2>/dev/null); do
		if [ "$(awk '/^NSpid:/ { print $NF }' "/proc/$p/status" 2>/dev/null)" = "$2" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# ---- Docker and Podman ----------------------------------------------------------

# world_image_tar FILE: the containers' image as a tarball made here, no
# registry: the C library of this machine; the holder and gpuslate come in
# with the bind-mounted build directory.
world_image_tar() {
	local d
	d=$(mktemp -d)
	mkdir -p "$d/lib/x86_64-linux-gnu" "$d/lib64" "$d/tmp"
	cp -L "$(ldd "$GS_HOLDER" | awk '/libc\.so/ { print $3 }')" "$d/lib/x86_64-linux-gnu/" &&
		cp -L "$(ldd "$GS_HOLDER" | awk '/ld-linux/ { print $1 }')" "$d/lib64/" &&
		tar -C "$d" -cf "$1" . || { rm -rf "$d"; return 1; }
	rm -rf "$d"
}

# world_runtime_reason docker|podman: why that runtime cannot run here
# (empty: it can).
world_runtime_reason() {
	local tool=$1
	[ "$tool" = docker ] && tool=dockerd
	[ "$(id -u)" = 0 ] || { echo "$1 needs root here (its own daemon and storage)"; return; }
	command -v "$tool" >/dev/null || { echo "$1 is not installed ($tool)"; return; }
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
		echo "no overlayfs ($1's storage)"
}

# world_docker_start DIR: a private Docker daemon (its own data root, exec
# root, socket and containerd under DIR; no network), with the image
# gs-world:1 imported. Sets DOCKER (the client command, pointed at it) and
# WORLD_DOCKERD_PID.
world_docker_start() {
	local dir=$1
	mkdir -p "$dir"
	DOCKER=$(world_docker_cmd "$dir")
	dockerd --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
		-H "unix://$dir/docker.sock" --bridge=none --iptables=false --ip6tables=false \
		</dev/null >"$dir/dockerd.log" 2>&1 3>&- &
	WORLD_DOCKERD_PID=$!
	disown "$WORLD_DOCKERD_PID"
	echo "world_docker_stop $dir $WORLD_DOCKERD_PID" >>"$BATS_FILE_TMPDIR/world-cleanup"
	if ! wait_for 60 world_docker_ready; then
		tail -n 20 "$dir/dockerd.log" >&2
		echo "world: dockerd did not start" >&2
		return 1
	fi
	world_image_tar "$dir/image.tar" && $DOCKER import "$dir/image.tar" gs-world:1 >/dev/null
}
# Debian's client, matching the daemon (another one may come first on PATH).
world_docker_cmd() {
	if [ -x /usr/bin/docker ]; then echo "/usr/bin/docker -H unix://$1/docker.sock"; else echo "docker -H unix://$1/docker.sock"; fi
}
world_docker_ready() {
	kill -0 "$WORLD_DOCKERD_PID" 2>/dev/null && $DOCKER version >/dev/null 2>&1
}
world_docker_stop() {
	local dir=$1 pid=$2 c
	DOCKER=$(world_docker_cmd "$dir")
	for c in $($DOCKER ps -aq 2>/dev/null); do $DOCKER rm -f "$c" >/dev/null 2>&1; done
	if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--pidfile $dir/dockerd.pid"; then
		kill -TERM "$pid"
		wait_for 20 dead "$pid" || kill -KILL "$pid"
	fi
	return 0
}

# world_podman_start DIR: Podman with private storage under DIR (root,
# runroot, tmpdir, events), the cgroupfs manager (no systemd on the host),
# and the image gs-world:1 imported. Sets PODMAN.
world_podman_start() {
	local dir=$1
	mkdir -p "$dir/tmp"
	PODMAN=$(world_podman_cmd "$dir")
	echo "world_podman_stop $dir" >>"$BATS_FILE_TMPDIR/world-cleanup"
	world_image_tar "$dir/image.tar" && $PODMAN import "$dir/image.tar" gs-world:1 >/dev/null
}
world_podman_cmd() {
	echo "podman --root $1/root --runroot $1/run --tmpdir $1/tmp --cgroup-manager=cgroupfs --events-backend=file --storage-driver=overlay"
}
world_podman_stop() {
	local dir=$1 c
	PODMAN=$(world_podman_cmd "$dir")
	for c in $($PODMAN ps -aq 2>/dev/null); do $PODMAN rm -f -t 0 "$c" >/dev/null 2>&1; done
	$PODMAN rmi -a -f >/dev/null 2>&1
	# podman leaves its storage mounted (our root only).
	if findmnt -rn -o TARGET | grep -qxF "$dir/root/overlay"; then umount "$dir/root/overlay"; fi
	return 0
}

# world_rt docker|podman: the client command of that runtime, as started.
world_rt() { if [ "$1" = docker ]; then echo "$DOCKER"; else echo "$PODMAN"; fi; }

# world_container_run docker|podman NAME [run options] -- CMD...: a detached
# container named NAME-<unique> (WORLD_CNAME) with no network, the simulated
# host and the build directory at the same paths, and the simulated GPU's
# environment; sets CONTAINER_PID (its main process's host PID) and
# CONTAINER_ID. Podman also gets lower open-files and processes limits: the
# host's are above what its OCI runtime may set on these machines.
world_container_run() {
	local rt=$1 name cmd opts=()
	name=$(world_uid "$2")
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	[ "$rt" = podman ] && opts+=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
	cmd=$(world_rt "$rt")
	WORLD_CNAME=$name
	echo "world_container_rm $rt $name" >>"$GS_WORLD_CLEANUP"
	CONTAINER_ID=$($cmd run -d --name "$name" --network=none \
		-v "$WORLD_SHARED:$WORLD_SHARED" -v "$GPUSLATE_BUILD:$GPUSLATE_BUILD:ro" \
		-e "FAKE_NVML_STATE=$FAKE_NVML_STATE" -e "GPUSLATE_DEV_ROOT=$GPUSLATE_DEV_ROOT" \
		-e FAKE_NVML_PID_FROM_LOCK=1 "${opts[@]}" gs-world:1 "$@") || return 1
	CONTAINER_PID=$($cmd inspect -f '{{.State.Pid}}' "$name")
	track "$CONTAINER_PID"
}
world_container_rm() {
	$(world_rt "$1") rm -f "$2" >/dev/null 2>&1
	return 0
}

# ---- setup and teardown hooks -----------------------------------------------------

# world_teardown_file: for a file's teardown_file: ends its containers and
# daemons.
world_teardown_file() { world_run_cleanups "$BATS_FILE_TMPDIR/world-cleanup"; }

# Per-test cleanups (GS_WORLD_CLEANUP) run before helpers.bash's teardown
# ends the test's processes; per-file ones ($BATS_FILE_TMPDIR/world-cleanup) in
# teardown_file. Both newest first, each one line of shell.
world_run_cleanups() {
	local f=$1 line
	[ -s "$f" ] || return 0
	while read -r line; do
		eval "$line" || true
	done < <(tac "$f")
	: >"$f"
	return 0
}

# The cgroups a test's manager made (its own and, on hybrid hosts, the
# name=systemd copy), after the manager is gone.
world_cleanup_cgroups() {
	local cg ok=0
	[ -s "${GS_WORLD_CGROUPS:-/nonexistent}" ] || return 0
	while read -r cg; do
		world_rm_cgroup_tree "$cg" || ok=1
	done < <(tac "$GS_WORLD_CGROUPS")
	: >"$GS_WORLD_CGROUPS"
	return $ok
}

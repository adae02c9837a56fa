#!/bin/bash
# systemd-manager.sh DIR CGROUP: becomes a real systemd service manager for
# the tests, in the mount namespace it was started in (the caller runs it
# under `unshare --mount --propagation private`).
#
# `systemd --user` run as root is a complete manager that needs no boot: it
# only refuses to run unless /run/systemd/system exists. A tmpfs on
# /run/systemd, visible in this namespace only, gives it that directory, and
# /run/systemd/private pointing at its own private socket lets an unmodified
# `systemctl` (system scope, as gpuslate runs it) reach it. The manager runs
# in CGROUP (a directory of the unified hierarchy) and builds its tree below
# it: units get CGROUP/system.slice/NAME.service, as on a host whose systemd
# is itself below a prefix. Units come from DIR/config/systemd/user.
#
# systemd-manager.sh DIR CGROUP user: the same manager as root's user
# manager, user@0.service (CGROUP ends in user.slice/user-0.slice/
# user@0.service), reached only as a user manager is: `systemctl --user`
# with XDG_RUNTIME_DIR=/run/user/0 (a tmpfs on /run/user, in this namespace
# only, links it to the manager's runtime directory). /run/systemd/private
# does not lead to it: a tool that asks the system manager about a user's
# unit gets no answer.
set -eu
dir=$1 cg=$2 mode=${3:-system}
echo $$ >"$cg/cgroup.procs"
mount -t tmpfs -o mode=0755,size=64m gs-world-systemd /run/systemd
mkdir -p /run/systemd/system "$dir/runtime" "$dir/config/systemd/user" "$dir/home"
chmod 0700 "$dir/runtime"
if [ "$mode" = user ]; then
	mkdir -p /run/user
	mount -t tmpfs -o mode=0755,size=1m gs-world-user /run/user
	ln -s "$dir/runtime" /run/user/0
else
	ln -s "$dir/runtime/systemd/private" /run/systemd/private
fi
export XDG_RUNTIME_DIR=$dir/runtime XDG_CONFIG_HOME=$dir/config HOME=$dir/home
unset DBUS_SESSION_BUS_ADDRESS NOTIFY_SOCKET
exec /lib/systemd/systemd --user --log-target=console --log-level=notice

#!/bin/bash
# bench/gpu/drm.sh: what the AMD/Intel readers of issue 17 see on a real
# host without AMD or Intel GPUs (the H200 machine): the DRM cards in sysfs
# (a BMC display, nvidia-drm), that none is taken for an AMD or Intel GPU,
# the drm/kfd majors, and the kernel's fdinfo of DRM fds. Read-only: opens
# /dev/dri nodes and closes them, touches no GPU setting.
#   make && bash bench/gpu/drm.sh      (results also under $OUT when set)
set -u
B=${GPUSLATE_BUILD:-$PWD/build}
out=${OUT:-$(mktemp -d)}
mkdir -p "$B/bench"
[ -x "$B/bench/drm_probe" ] || cc -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -O1 -g -Isrc -o "$B/bench/drm_probe" \
	bench/gpu/drm_probe.c "$B/libgpuslate.a" -ldl -lpthread -lm || exit 1
{
	echo "== uname"; uname -r
	echo "== /proc/devices (drm, kfd, nvidia)"; grep -E ' (drm|kfd|accel|nvidia[a-z-]*)$' /proc/devices
	echo "== /sys/class/drm"; ls -l /sys/class/drm/ 2>&1
	for u in /sys/class/drm/card*/device/uevent; do
		[ -r "$u" ] && { echo "== $u"; cat "$u"; }
	done
	echo "== /sys/class/kfd"; ls /sys/class/kfd/kfd 2>&1
	echo "== /dev/dri"; ls -l /dev/dri 2>&1
	echo "== probe"; "$B/bench/drm_probe"
} 2>&1 | tee "$out/drm.txt"
echo "results: $out/drm.txt"

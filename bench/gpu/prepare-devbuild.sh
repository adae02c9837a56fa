#!/bin/bash
# Fills .devbuild (ignored by git, carried to the GPU machine) with the
# release build and the bench helpers compiled here, so the GPU machine
# needs no compiler or jansson: run after `make`.
set -eu
B=${GPUSLATE_BUILD:-build}
D=.devbuild
mkdir -p "$D/bench"
cp "$B/gpuslate" "$B/libgpuslate.a" "$D/"
for p in floor nvml_overhead drm_probe; do
	cc -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -O2 -Isrc -o "$D/bench/$p" "bench/gpu/$p.c" \
		"$B/libgpuslate.a" -ldl -lpthread -lm
done
# supervisord and runit for bench/gpu/supervisors.sh, where the GPU machine
# has neither: Debian's pure-Python supervisor package and runit's three
# binaries (they need only the C library).
if [ -d /usr/lib/python3/dist-packages/supervisor ]; then
	mkdir -p "$D/sup/py" "$D/sup/bin"
	cp -r /usr/lib/python3/dist-packages/supervisor "$D/sup/py/"
	for t in runsvdir runsv sv; do
		[ -x "/usr/bin/$t" ] && cp "/usr/bin/$t" "$D/sup/bin/"
	done
fi

/* Bench driver: what one poll of an Intel GPU's memory costs during the
 * wait (gs_snapshot_memory: the fdinfo of the DRM fds the last full
 * snapshot saw) against the full snapshot it replaces between re-scans (a
 * /proc pass reading every DRM fd's fdinfo). Prints the Intel GPU's used
 * MiB by both ways and the mean time of each over RUNS.
 *
 * usage: intel_poll SYS_ROOT DEV_ROOT SHADOW_DIR RUNS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/discover.h"
#include "core/snapshot.h"
#include "util/util.h"

int main(int argc, char **argv)
{
	struct gs_discover_opts o = { .no_nvml = true };
	struct gs_discover d;
	struct gs_snapshot s;
	struct gs_gpu_mem m;
	unsigned g = 0;
	uint64_t t0, full_ns = 0, poll_ns = 0, full_used = 0;
	long runs;
	int r;

	if (argc != 5 || (runs = strtol(argv[4], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: intel_poll SYS_ROOT DEV_ROOT SHADOW_DIR RUNS\n");
		return 2;
	}
	o.paths.sys = argv[1];
	o.paths.dev = argv[2];
	o.fdinfo_shadow = argv[3];
	r = gs_discover_open(&d, &o);
	if (r < 0) {
		fprintf(stderr, "gs_discover_open: %s\n", strerror(-r));
		return 1;
	}
	for (long i = 0; i < runs; i++) {
		t0 = gs_now_ns();
		r = gs_snapshot_take(&d, &s);
		full_ns += gs_now_ns() - t0;
		if (r < 0 || !s.n_gpus || s.gpus[0].vendor != GS_VENDOR_INTEL || !s.gpus[0].mem_known) {
			fprintf(stderr, "snapshot: %s, no Intel GPU with a figure\n", strerror(-r));
			return 1;
		}
		full_used = s.gpus[0].mem_used;
		if (i + 1 < runs)
			gs_snapshot_free(&s);
	}
	for (long i = 0; i < runs; i++) {
		t0 = gs_now_ns();
		r = gs_snapshot_memory(&d, &s, &g, 1, &m);
		poll_ns += gs_now_ns() - t0;
		if (r < 0 || m.used_unknown) {
			fprintf(stderr, "poll: %s\n", r < 0 ? strerror(-r) : "no figure");
			return 1;
		}
	}
	printf("processes scanned %zu, DRM fds watched %zu\n", s.n_scanned, gs_drm_fdwatch_count(&d.drm_watch, 0));
	printf("used: full snapshot %llu MiB, poll %llu MiB\n", (unsigned long long)(full_used / GS_MIB),
	       (unsigned long long)(m.used / GS_MIB));
	printf("full snapshot: %.3f ms, poll: %.3f ms (mean of %ld)\n", full_ns / 1e6 / runs, poll_ns / 1e6 / runs,
	       runs);
	gs_snapshot_free(&s);
	gs_discover_close(&d);
	return 0;
}

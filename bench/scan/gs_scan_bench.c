/* Bench driver: one gs_scan_holders pass (maps on) with the dev root given,
 * prints the pids holding GPU minor 0 (fd or mapping), one per line, and
 * the in-process scan time on stderr.  usage: gs_scan_bench DEV_ROOT */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc/devset.h"
#include "proc/holderscan.h"
#include "util/root.h"
#include "util/util.h"

int main(int argc, char **argv)
{
	struct gs_root root;
	struct gs_devset ds;
	struct gs_scan_result res;
	struct gs_scan_opts opts = { .skip_pid = getpid(), .read_maps = true };
	uint64_t t0, t1;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: gs_scan_bench DEV_ROOT\n");
		return 2;
	}
	t0 = gs_now_ns();
	r = gs_root_open(&root, &(struct gs_root_paths){ .dev = argv[1] });
	if (r < 0) {
		fprintf(stderr, "gs_root_open: %s\n", strerror(-r));
		return 1;
	}
	r = gs_devset_load(&root, &ds);
	if (r < 0) {
		fprintf(stderr, "gs_devset_load: %s\n", strerror(-r));
		return 1;
	}
	r = gs_scan_holders(&root, &ds, &opts, &res);
	t1 = gs_now_ns();
	if (r < 0) {
		fprintf(stderr, "gs_scan_holders: %s\n", strerror(-r));
		return 1;
	}
	for (size_t i = 0; i < res.n_procs; i++)
		if (gs_minorset_has(&res.procs[i].fd_gpus, 0) || gs_minorset_has(&res.procs[i].map_gpus, 0))
			printf("%d\n", (int)res.procs[i].pid);
	fprintf(stderr, "scan: %.1f ms, %zu processes, %zu holders, %zu denied\n",
		(double)(t1 - t0) / 1e6, res.n_scanned, res.n_procs, res.n_denied);
	gs_scan_result_free(&res);
	gs_devset_free(&ds);
	gs_root_close(&root);
	return 0;
}

/* The floor for bench/gpu/reclaim.sh: SIGKILL and a tight NVML poll, the
 * fastest any tool can reach a verified clean GPU. Also reads memory once
 * (--used) and checks a claimed clean state (--check).
 *
 *   floor --used                 print GPU 0's v2 used MiB
 *   floor --check BASE_MIB TOL   exit 0 if used <= BASE+TOL, else print it, exit 1
 *   floor --kill BASE_MIB TOL PID...  SIGKILL the pids, poll until used <= BASE+TOL,
 *                                print seconds (or "timeout" after 120 s)
 *   floor --wait BASE_MIB TOL    poll until used <= BASE+TOL (max 120 s)
 */
#include "gpu/nvml.h"
#include "util/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t used_mib(struct gs_gpu_backend *b)
{
	struct gs_gpu_mem m;

	if (b->ops->memory(b, 0, &m) < 0) {
		fprintf(stderr, "floor: NVML memory query failed\n");
		exit(3);
	}
	return m.used / GS_MIB;
}

static double poll_until(struct gs_gpu_backend *b, uint64_t limit, uint64_t t0)
{
	for (;;) {
		if (used_mib(b) <= limit)
			return (gs_now_ns() - t0) / 1e9;
		if (gs_now_ns() - t0 > 120ULL * 1000000000ULL)
			return -1;
	}
}

int main(int argc, char **argv)
{
	struct gs_nvml_opts o = { 0 };
	struct gs_gpu_backend *b;
	char err[256];
	uint64_t base, tol, t0;
	double t;

	if (argc < 2 || gs_nvml_open(&o, NULL, &b, err, sizeof(err)) < 0) {
		fprintf(stderr, "floor: %s\n", argc < 2 ? "usage: see the source" : err);
		return 2;
	}
	if (!strcmp(argv[1], "--used")) {
		printf("%llu\n", (unsigned long long)used_mib(b));
		return 0;
	}
	if (argc < 4)
		return 2;
	base = strtoull(argv[2], NULL, 10);
	tol = strtoull(argv[3], NULL, 10);
	if (!strcmp(argv[1], "--check")) {
		uint64_t u = used_mib(b);

		if (u <= base + tol)
			return 0;
		printf("%llu\n", (unsigned long long)u);
		return 1;
	}
	t0 = gs_now_ns();
	if (!strcmp(argv[1], "--kill"))
		for (int i = 4; i < argc; i++)
			kill(atoi(argv[i]), SIGKILL);
	t = poll_until(b, base + tol, t0);
	if (t < 0)
		printf("timeout\n");
	else
		printf("%.3f\n", t);
	return t < 0;
}

/* What running NVML in a helper process (src/gpu/nvml_child.c) costs, against
 * the same calls made in this process (src/gpu/nvml.c):
 *   - open: fork plus the helper's dlopen and nvmlInit, and its first answer
 *   - the wait loop's poll: memory of every GPU in one exchange
 *   - info() of every GPU (what status --query-gpu asks)
 * Medians over many runs, printed one per line. Built and run by
 * bench/gpu/nvml_child.sh; with the fake NVML on any machine:
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o build/bench/nvml_overhead \
 *      bench/gpu/nvml_overhead.c build/libgpuslate.a -ldl -lpthread
 *   build/bench/nvml_overhead [--lib PATH] [OPENS POLL_SECONDS]
 * (the library: --lib, else $GPUSLATE_NVML_LIB, else libnvidia-ml.so.1)
 */
#include "gpu/nvml.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static double median_us(uint64_t *ns, size_t n)
{
	qsort(ns, n, sizeof(*ns), cmp_u64);
	return n ? ns[n / 2] / 1e3 : 0;
}

static struct gs_gpu_backend *open_backend(bool child, const struct gs_nvml_opts *o)
{
	struct gs_gpu_backend *b = NULL;
	char err[256] = "";
	int r = child ? gs_nvml_child_open(o, &b, err, sizeof(err)) : gs_nvml_open(o, NULL, &b, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "nvml_overhead: %s\n", err[0] ? err : "open failed");
		exit(3);
	}
	return b;
}

/* Median ns of one poll of every GPU's memory, over secs seconds. */
static double poll_us(struct gs_gpu_backend *b, unsigned n, double secs)
{
	static uint64_t t[1u << 20];
	unsigned idx[GS_MAX_GPUS];
	struct gs_gpu_mem m[GS_MAX_GPUS];
	int errs[GS_MAX_GPUS];
	uint64_t start = gs_now_ns(), k = 0;

	for (unsigned i = 0; i < n; i++)
		idx[i] = i;
	while (gs_now_ns() - start < (uint64_t)(secs * 1e9) && k < GS_ARRAY_SIZE(t)) {
		uint64_t t0 = gs_now_ns();

		if (b->ops->memory_many) {
			if (b->ops->memory_many(b, idx, n, m, errs) < 0)
				exit(3);
		} else {
			for (unsigned i = 0; i < n; i++)
				if (b->ops->memory(b, i, &m[i]) < 0)
					exit(3);
		}
		t[k++] = gs_now_ns() - t0;
	}
	return median_us(t, k);
}

int main(int argc, char **argv)
{
	struct gs_nvml_opts o = { 0 };
	int opens = 50;
	double secs = 2;
	uint64_t open_ns[2][1000], info_ns[2][1000];
	unsigned n = 0;

	o.lib_path = getenv("GPUSLATE_NVML_LIB");
	if (argc > 2 && !strcmp(argv[1], "--lib")) {
		o.lib_path = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc > 1)
		opens = atoi(argv[1]);
	if (argc > 2)
		secs = atof(argv[2]);
	if (opens < 1 || opens > 1000)
		return 2;
	for (int i = 0; i < opens; i++) {
		for (int child = 0; child < 2; child++) {
			uint64_t t0 = gs_now_ns(), t1;
			struct gs_gpu_backend *b = open_backend(child, &o);
			struct gs_gpu g;

			t1 = gs_now_ns();
			open_ns[child][i] = t1 - t0;
			(void)b->ops->count(b, &n);
			for (unsigned k = 0; k < n; k++)
				(void)b->ops->info(b, k, &g);
			info_ns[child][i] = gs_now_ns() - t1;
			gs_gpu_backend_close(b);
		}
	}
	printf("gpus: %u\n", n);
	printf("open, in-process (dlopen + nvmlInit): %.0f us median of %d\n", median_us(open_ns[0], (size_t)opens), opens);
	printf("open, helper (fork + the same + first answer): %.0f us median of %d\n", median_us(open_ns[1], (size_t)opens),
	       opens);
	printf("info() of every GPU, in-process: %.0f us; helper: %.0f us\n", median_us(info_ns[0], (size_t)opens),
	       median_us(info_ns[1], (size_t)opens));
	for (int child = 0; child < 2; child++) {
		struct gs_gpu_backend *b = open_backend(child, &o);

		printf("memory poll of every GPU, %s: %.1f us median\n", child ? "helper (one exchange)" : "in-process",
		       poll_us(b, n, secs));
		gs_gpu_backend_close(b);
	}
	return 0;
}

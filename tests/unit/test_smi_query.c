/* nvidia-smi compatible --query-gpu output from literal snapshots: the
 * rounding and header rules measured on a real H200 (docs/gpu-h200.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/snapshot.h"
#include "out/status_out.h"
#include "util/util.h"

/* The H200 of the second query.sh run: 143771 MiB, a 615.0625 MiB
 * reservation, 8201.5 MiB used; NVML's free is the rest. */
static struct gs_gpu h200(void)
{
	struct gs_gpu g = { .index = 0, .minor = 0, .name = "NVIDIA H200", .mem_known = true, .mem_v2 = true,
			    .mem_basis = GS_MEM_V2 };

	strcpy(g.uuid, "GPU-db342db0-212f-1082-f738-4bda6ff539ea");
	g.mem_total = 143771ULL * GS_MIB;
	g.mem_reserved = 644939776ULL; /* 615.0625 MiB */
	g.mem_used = 8201ULL * GS_MIB + GS_MIB / 2;
	g.mem_free = g.mem_total - g.mem_reserved - g.mem_used;
	return g;
}

static char *query(struct gs_gpu *g, const char *fields, const char *format)
{
	struct gs_snapshot s = { .gpus = g, .n_gpus = 1 };
	struct gs_gpuset sel = { { 0 } };
	char err[256] = "", *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	gs_gpuset_add(&sel, 0);
	assert_int_equal(gs_print_smi_query_gpu(f, &s, &sel, fields, format, err, sizeof(err)), 0);
	fclose(f);
	return buf;
}

/* nvidia-smi rounds every MiB figure up: 616 reserved, 8202 used, 134955
 * free where flooring printed 615 (or 616 derived), 8201 and 134954. */
static void test_h200_fractional_mib_rounds_up(void **state)
{
	struct gs_gpu g = h200();
	char *out;

	(void)state;
	out = query(&g, "memory.total,memory.reserved,memory.used,memory.free", "csv,noheader");
	assert_string_equal(out, "143771 MiB, 616 MiB, 8202 MiB, 134955 MiB\n");
	free(out);
}

/* NVML's own free figure is printed, not total - reserved - used. */
static void test_free_is_the_backends_figure(void **state)
{
	struct gs_gpu g = h200();
	char *out;

	(void)state;
	g.mem_free += GS_MIB;
	out = query(&g, "memory.free", "csv,noheader,nounits");
	assert_string_equal(out, "134956\n");
	free(out);
}

/* nounits drops the unit from the values only; the header keeps " [MiB]". */
static void test_nounits_keeps_header_unit(void **state)
{
	struct gs_gpu g = h200();
	char *out;

	(void)state;
	out = query(&g, "index,memory.used", "csv,nounits");
	assert_string_equal(out, "index, memory.used [MiB]\n0, 8202\n");
	free(out);
}

/* A v1-only driver splits out no reservation: nothing to print. */
static void test_v1_reserved_not_available(void **state)
{
	struct gs_gpu g = h200();
	char *out;

	(void)state;
	g.mem_v2 = false;
	g.mem_basis = GS_MEM_V1;
	out = query(&g, "memory.reserved", "csv,noheader");
	assert_string_equal(out, "[N/A]\n");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_h200_fractional_mib_rounds_up),
		cmocka_unit_test(test_free_is_the_backends_figure),
		cmocka_unit_test(test_nounits_keeps_header_unit),
		cmocka_unit_test(test_v1_reserved_not_available),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

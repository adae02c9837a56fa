/* Verdicts from literal hosts: the verdict table (names, exit statuses),
 * status's own verdict (core/status.c) and the -g selections it is judged
 * over (core/gpusel.c). No /proc, no NVML: snapshots written out here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/gpusel.h"
#include "core/snapshot.h"
#include "core/status.h"
#include "core/verdict.h"
#include "util/util.h"

#define MIB GS_MIB

/* The documented words and exit statuses (docs/json.md, gpuslate(1)): each
 * name reads back as its verdict, and gives its status. */
static void test_every_verdict_has_its_documented_name_and_exit_status(void **state)
{
	static const struct {
		const char *name;
		enum gs_verdict v;
		int exit;
	} doc[] = {
		{ "clean", GS_VERDICT_CLEAN, 0 },
		{ "not-clean", GS_VERDICT_NOT_CLEAN, 1 },
		{ "driver-failure", GS_VERDICT_DRIVER_FAILURE, 3 },
		{ "unverified", GS_VERDICT_UNVERIFIED, 3 },
		{ "refused", GS_VERDICT_REFUSED, 5 },
		{ "selection-gone", GS_VERDICT_SELECTION_GONE, 6 },
		{ "no-match", GS_VERDICT_NO_MATCH, 7 },
		{ "dry-run", GS_VERDICT_DRY_RUN, 0 },
		{ "usage-error", GS_VERDICT_USAGE_ERROR, 2 },
		{ "error", GS_VERDICT_ERROR, 1 },
		{ "plan-changed", GS_VERDICT_PLAN_CHANGED, 10 },
	};
	enum gs_verdict v;

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(doc); i++) {
		assert_string_equal(gs_verdict_name(doc[i].v), doc[i].name);
		assert_int_equal(gs_verdict_parse(doc[i].name, &v), 0);
		assert_int_equal(v, doc[i].v);
		assert_int_equal((int)gs_verdict_exit(doc[i].v), doc[i].exit);
	}
	assert_null(gs_verdict_name(GS_VERDICT_NONE));
	assert_int_equal(gs_verdict_parse("clean ", &v), -EINVAL);
	assert_int_equal(gs_verdict_parse("CLEAN", &v), -EINVAL);
	assert_int_equal(gs_verdict_parse(NULL, &v), -EINVAL);
	assert_true(gs_verdict_ok(GS_VERDICT_CLEAN));
	assert_true(gs_verdict_ok(GS_VERDICT_DRY_RUN));
	assert_false(gs_verdict_ok(GS_VERDICT_SELECTION_GONE));
	assert_false(gs_verdict_ok(GS_VERDICT_UNVERIFIED));
	/* An early failure's verdict, from its exit status (--json). */
	assert_int_equal(gs_verdict_of_failure(GS_EXIT_USAGE), GS_VERDICT_USAGE_ERROR);
	assert_int_equal(gs_verdict_of_failure(GS_EXIT_DRIVER), GS_VERDICT_DRIVER_FAILURE);
	assert_int_equal(gs_verdict_of_failure(GS_EXIT_REFUSED), GS_VERDICT_REFUSED);
	assert_int_equal(gs_verdict_of_failure(GS_EXIT_OUT_OF_MEMORY), GS_VERDICT_ERROR);
}

/* A host: GPUs with their memory, holders with roles. */
struct host {
	struct gs_snapshot s;
	struct gs_gpu gpus[4];
	struct gs_holder holders[8];
};

static void host_init(struct host *h, unsigned n_gpus)
{
	memset(h, 0, sizeof(*h));
	for (unsigned g = 0; g < n_gpus; g++) {
		h->gpus[g].index = g;
		snprintf(h->gpus[g].uuid, sizeof(h->gpus[g].uuid), "GPU-a2983c1e-0000-4000-8000-%012x", g);
		h->gpus[g].mem_known = true;
		h->gpus[g].mem_total = 81559 * MIB;
	}
	h->s.gpus = h->gpus;
	h->s.n_gpus = n_gpus;
	h->s.holders = h->holders;
}

static struct gs_holder *hold(struct host *h, pid_t pid, unsigned g, enum gs_role role, uint64_t mib)
{
	struct gs_holder *x = &h->holders[h->s.n_holders++];

	x->pid = pid;
	x->alive = true;
	x->role = role;
	gs_gpuset_add(&x->gpus, g);
	x->mem_known = true;
	x->mem_used = mib * MIB;
	h->gpus[g].mem_used += mib * MIB;
	return x;
}

static enum gs_verdict judge(const struct host *h, const char *gpus)
{
	struct gs_gpuset sel = { 0 };
	char err[128];

	assert_int_equal(gs_gpusel_resolve(gpus, h->s.gpus, h->s.n_gpus, &sel, err, sizeof(err)), 0);
	return gs_status_verdict(&h->s, &sel, gpus == NULL, 16);
}

/* e2e "status: table shows each GPU's memory and every holder with its
 * role": a compute holder makes its GPU not clean; the persistence daemon
 * and a monitor do not; nor does their memory. */
static void test_status_compute_holder_is_not_clean_daemons_and_monitors_are(void **state)
{
	struct host h;

	(void)state;
	host_init(&h, 2);
	hold(&h, 100, 0, GS_ROLE_PROTECTED, 300);
	hold(&h, 200, 0, GS_ROLE_CLIENT, 0);
	h.gpus[0].mem_used += 10 * MIB; /* the driver's own, within the tolerance */
	assert_int_equal(judge(&h, NULL), GS_VERDICT_CLEAN);
	hold(&h, 300, 1, GS_ROLE_COMPUTE, 4000);
	assert_int_equal(judge(&h, NULL), GS_VERDICT_NOT_CLEAN);
	/* -g 0 leaves GPU 1's holder out of the question. */
	assert_int_equal(judge(&h, "0"), GS_VERDICT_CLEAN);
	assert_int_equal(judge(&h, "1"), GS_VERDICT_NOT_CLEAN);
}

/* Memory nobody visible holds (another PID namespace, a leak) beyond the
 * tolerance: not clean, even with no holder at all. */
static void test_status_memory_held_by_no_visible_process_is_not_clean(void **state)
{
	struct host h;

	(void)state;
	host_init(&h, 1);
	h.gpus[0].mem_used = 16 * MIB;
	assert_int_equal(judge(&h, NULL), GS_VERDICT_CLEAN);
	h.gpus[0].mem_used = 17 * MIB;
	assert_int_equal(judge(&h, NULL), GS_VERDICT_NOT_CLEAN);
	/* Unknown memory (procfs, no NVML) judges the holders only. */
	h.gpus[0].mem_known = false;
	assert_int_equal(judge(&h, NULL), GS_VERDICT_CLEAN);
}

/* e2e "status -g: selection by index, range and UUID", and "a bad
 * selection is a usage error naming the input". */
static void test_status_g_selects_by_index_range_and_uuid(void **state)
{
	struct host h;
	struct gs_gpuset sel;
	char err[256];

	(void)state;
	host_init(&h, 4);
	memset(&sel, 0, sizeof(sel));
	assert_int_equal(gs_gpusel_resolve("0,2-3", h.s.gpus, h.s.n_gpus, &sel, err, sizeof(err)), 0);
	assert_true(gs_gpuset_has(&sel, 0) && !gs_gpuset_has(&sel, 1) && gs_gpuset_has(&sel, 2) &&
		    gs_gpuset_has(&sel, 3));
	memset(&sel, 0, sizeof(sel));
	assert_int_equal(gs_gpusel_resolve("GPU-a2983c1e-0000-4000-8000-000000000001", h.s.gpus, h.s.n_gpus, &sel,
					   err, sizeof(err)), 0);
	assert_true(gs_gpuset_has(&sel, 1) && !gs_gpuset_has(&sel, 0));
	/* A prefix that names four GPUs names none of them. */
	assert_true(gs_gpusel_resolve("GPU-a2983c1e", h.s.gpus, h.s.n_gpus, &sel, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "GPU-a2983c1e"));
	assert_true(gs_gpusel_resolve("7", h.s.gpus, h.s.n_gpus, &sel, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "7"));
	assert_true(gs_gpusel_check("0,,x", err, sizeof(err)) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_verdict_has_its_documented_name_and_exit_status),
		cmocka_unit_test(test_status_compute_holder_is_not_clean_daemons_and_monitors_are),
		cmocka_unit_test(test_status_memory_held_by_no_visible_process_is_not_clean),
		cmocka_unit_test(test_status_g_selects_by_index_range_and_uuid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

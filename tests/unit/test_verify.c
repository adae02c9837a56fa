/* The wait and verify stage against a GPU whose memory follows a script:
 * a literal backend (one GPU, its used memory over time) in a discovery
 * session that takes GPU-only snapshots, so the verdicts rest on the memory
 * alone, and a literal plan with its baseline. Named after the e2e
 * scenarios whose memory side they pin down. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/discover.h"
#include "core/plan.h"
#include "core/snapshot.h"
#include "core/verify.h"
#include "util/util.h"

#define MIB GS_MIB

/* One GPU: `before` MiB until `drop_ms` after the script starts, then
 * `after` MiB; from poll number `fail_at` on (0: never) the driver fails. */
struct script {
	struct gs_gpu_backend base; /* first: the backend is the script */
	uint64_t start_ms, drop_ms;
	uint64_t before, after;     /* MiB */
	unsigned polls, fail_at;
};

static uint64_t used_now(const struct script *sc)
{
	return (gs_now_ms() - sc->start_ms >= sc->drop_ms ? sc->after : sc->before) * MIB;
}

static int sc_count(struct gs_gpu_backend *b, unsigned *ret)
{
	(void)b;
	*ret = 1;
	return 0;
}

static int sc_info(struct gs_gpu_backend *b, unsigned i, struct gs_gpu *ret)
{
	const struct script *sc = (const struct script *)b;

	memset(ret, 0, sizeof(*ret));
	ret->index = i;
	ret->minor = i;
	gs_strlcpy(ret->uuid, "GPU-a2983c1e-0000-4000-8000-000000000000", sizeof(ret->uuid));
	gs_strlcpy(ret->name, "NVIDIA H200", sizeof(ret->name));
	ret->mem_known = ret->mem_v2 = true;
	ret->mem_basis = GS_MEM_V2;
	ret->mem_total = 143771 * MIB;
	ret->mem_used = used_now(sc);
	return 0;
}

static int sc_memory(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_mem *ret)
{
	struct script *sc = (struct script *)b;

	(void)i;
	if (sc->fail_at && ++sc->polls >= sc->fail_at) {
		snprintf(b->error, sizeof(b->error), "GPU 0: nvmlDeviceGetMemoryInfo_v2 failed: Unknown Error");
		return -EIO;
	}
	ret->v2 = true;
	ret->total = 143771 * MIB;
	ret->used = used_now(sc);
	ret->reserved = 0;
	return 0;
}

static int sc_processes(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_proc **ret, size_t *ret_n)
{
	(void)b;
	(void)i;
	*ret = NULL;
	*ret_n = 0;
	return 0;
}

static void sc_close(struct gs_gpu_backend *b)
{
	(void)b;
}

static const struct gs_gpu_backend_ops script_ops = {
	.name = "script", .count = sc_count, .info = sc_info, .memory = sc_memory,
	.processes = sc_processes, .close = sc_close,
};

struct world {
	struct script sc;
	struct gs_discover d;
	struct gs_snapshot before;
	struct gs_plan plan;
	struct gs_selection sel;
	struct gs_verify_result vr;
	uint64_t t0_ms;              /* when the wait began */
	char dev[64];
};

/* The session on the real /proc (for the process table), an empty device
 * directory, the script as the backend, GPU-only snapshots. */
static struct world *world(uint64_t before, uint64_t after, uint64_t drop_ms, unsigned fail_at)
{
	struct world *w = calloc(1, sizeof(*w));
	struct gs_root_paths paths = { 0 };

	assert_non_null(w);
	snprintf(w->dev, sizeof(w->dev), "/tmp/gs-test-verify-XXXXXX");
	assert_non_null(mkdtemp(w->dev));
	paths.dev = w->dev;
	assert_int_equal(gs_root_open(&w->d.root, &paths), 0);
	w->sc = (struct script){ .base = { .ops = &script_ops }, .start_ms = gs_now_ms(), .drop_ms = drop_ms,
				 .before = before, .after = after, .fail_at = fail_at };
	w->d.backend = &w->sc.base;
	w->d.gpu_source = "nvml";
	w->d.self = getpid();
	w->d.gpus_only = true;
	assert_int_equal(gs_snapshot_take(&w->d, &w->before), 0);
	assert_int_equal(w->before.n_gpus, 1);
	w->sel.tolerance_mib = 16;
	/* Nothing stays on GPU 0 but the tolerance. */
	gs_gpuset_add(&w->plan.gpus, 0);
	w->plan.baseline[0] = 16 * MIB;
	w->plan.baseline_known[0] = true;
	return w;
}

static void verify(struct world *w, uint64_t timeout_ms)
{
	struct gs_verify_opts o = {
		.timeout_ms = timeout_ms, .t0_ns = gs_now_ns(), .sel = &w->sel,
		.old_plan = &w->plan, .before = &w->before,
	};

	w->t0_ms = gs_now_ms();
	assert_int_equal(gs_verify_wait(&w->d, &o, &w->vr), 0);
}

static void free_world(struct world *w)
{
	gs_verify_result_free(&w->vr);
	gs_snapshot_free(&w->before);
	gs_root_close(&w->d.root);
	rmdir(w->dev);
	free(w);
}

/* e2e "reclaim: slow teardown: waits until the memory is back and reports
 * the time": clean, with a release time no earlier than the teardown. */
static void test_slow_teardown_waits_until_the_memory_is_back(void **state)
{
	struct world *w = world(4000, 0, 300, 0);

	(void)state;
	verify(w, 30000);
	assert_true(w->vr.clean);
	assert_false(w->vr.timed_out);
	assert_false(w->vr.driver_failed);
	assert_int_equal(w->vr.n_gpus, 1);
	assert_true(w->vr.gpus[0].released);
	assert_true(w->vr.gpus[0].clean);
	/* Released no earlier than the drop, 300 ms after the script
	 * started, measured from t0 (2 ms for the two clocks' rounding). */
	assert_true(w->vr.gpus[0].released_ms + (w->t0_ms - w->sc.start_ms) + 2 >= 300);
	assert_int_equal(w->vr.gpus[0].before, 4000 * MIB);
	assert_int_equal(w->vr.gpus[0].after, 0);
	free_world(w);
}

/* e2e "reclaim: memory that never comes back within --timeout: not clean,
 * exit 1, no holder to blame": timed out, the memory unattributed. */
static void test_memory_that_never_comes_back_is_not_clean_and_unattributed(void **state)
{
	struct world *w = world(4000, 4000, 0, 0);

	(void)state;
	verify(w, 300);
	assert_false(w->vr.clean);
	assert_true(w->vr.timed_out);
	assert_true(w->vr.waited_ms >= 300);
	assert_false(w->vr.gpus[0].clean);
	assert_true(w->vr.gpus[0].unattributed);
	assert_true(w->vr.gpus[0].holders_gone);
	assert_int_equal(w->vr.gpus[0].n_held_by, 0);
	free_world(w);
}

/* e2e "reclaim: NVML fails during the wait: exit 3": the wait ends at the
 * failure, names the call, and never says clean. */
static void test_nvml_failing_during_the_wait_is_a_driver_failure(void **state)
{
	struct world *w = world(4000, 4000, 0, 5);

	(void)state;
	verify(w, 30000);
	assert_true(w->vr.driver_failed);
	assert_false(w->vr.clean);
	assert_false(w->vr.timed_out);
	assert_non_null(strstr(w->vr.driver_error, "reading GPU memory failed"));
	assert_non_null(strstr(w->vr.driver_error, "nvmlDeviceGetMemoryInfo_v2"));
	free_world(w);
}

/* e2e "wait: exit 0 once the holder exits on its own", the tolerance side:
 * memory within --tolerance above the baseline is clean at once. */
static void test_memory_within_the_tolerance_is_clean(void **state)
{
	struct world *w = world(16, 16, 0, 0);

	(void)state;
	verify(w, 30000);
	assert_true(w->vr.clean);
	assert_false(w->vr.timed_out);
	assert_true(w->vr.gpus[0].clean);
	free_world(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_teardown_waits_until_the_memory_is_back),
		cmocka_unit_test(test_memory_that_never_comes_back_is_not_clean_and_unattributed),
		cmocka_unit_test(test_nvml_failing_during_the_wait_is_a_driver_failure),
		cmocka_unit_test(test_memory_within_the_tolerance_is_clean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

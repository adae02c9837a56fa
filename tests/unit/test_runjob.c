/* run's intruder decision (core/runjob.c gs_runjob_is_intruder) from
 * literal process tables: who is COMMAND's, who was there before, and
 * what a reused PID is. No processes, no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/runjob.h"

enum { SELF = 100, CHILD = 200, INIT = 1 };

struct world {
	struct gs_pidstat procs[16];
	struct gs_ptable pt;
	struct gs_gpuset sel;
	struct gs_pidset known, tree;
};

/* Processes must be added in pid order (the table is searched by pid). */
static void proc(struct world *w, pid_t pid, pid_t ppid, uint64_t start)
{
	struct gs_pidstat *st = &w->procs[w->pt.n++];

	memset(st, 0, sizeof(*st));
	st->pid = pid;
	st->ppid = ppid;
	st->starttime = start;
	st->state = 'S';
	w->pt.procs = w->procs;
}

static struct gs_holder holder(pid_t pid, uint64_t start, enum gs_role role, unsigned gpu)
{
	struct gs_holder h;

	memset(&h, 0, sizeof(h));
	h.pid = pid;
	h.alive = true;
	h.info_ok = true;
	h.info.st.pid = pid;
	h.info.st.starttime = start;
	h.role = role;
	gs_gpuset_add(&h.gpus, gpu);
	return h;
}

/* init, gpuslate (SELF) and COMMAND (CHILD); GPU 0 selected. */
static void base(struct world *w)
{
	memset(w, 0, sizeof(*w));
	proc(w, INIT, 0, 1);
	proc(w, SELF, INIT, 10);
	proc(w, CHILD, SELF, 20);
	gs_gpuset_add(&w->sel, 0);
}

static bool intruder(struct world *w, const struct gs_holder *h)
{
	return gs_runjob_is_intruder(h, &w->sel, &w->pt, SELF, CHILD, &w->known, &w->tree);
}

static void done(struct world *w)
{
	gs_pidset_free(&w->known);
	gs_pidset_free(&w->tree);
}

static void test_a_stranger_on_a_selected_gpu_is_an_intruder(void **state)
{
	struct world w;
	struct gs_holder h;

	(void)state;
	base(&w);
	proc(&w, 300, INIT, 30);
	h = holder(300, 30, GS_ROLE_COMPUTE, 0);
	assert_true(intruder(&w, &h));
	/* on a GPU that is not selected: none of run's business */
	h = holder(300, 30, GS_ROLE_COMPUTE, 1);
	assert_false(intruder(&w, &h));
	done(&w);
}

static void test_clients_and_protected_daemons_are_no_intruders(void **state)
{
	struct world w;
	struct gs_holder h;

	(void)state;
	base(&w);
	proc(&w, 300, INIT, 30);
	h = holder(300, 30, GS_ROLE_CLIENT, 0);
	assert_false(intruder(&w, &h));
	h = holder(300, 30, GS_ROLE_PROTECTED, 0);
	assert_false(intruder(&w, &h));
	done(&w);
}

/* NVML lists it with memory on GPU 0; the fd scan sees the driver open
 * (the control node) but no node of GPU 0: a client by the scan, an
 * intruder all the same. Without NVML's memory, or without the driver
 * open (a reused PID), it is not. */
static void test_nvml_listed_memory_with_the_driver_open_is_an_intruder(void **state)
{
	struct world w;
	struct gs_holder h;

	(void)state;
	base(&w);
	proc(&w, 300, INIT, 30);
	h = holder(300, 30, GS_ROLE_CLIENT, 0);
	memset(&h.gpus, 0, sizeof(h.gpus));
	gs_gpuset_add(&h.nvml_gpus, 0);
	gs_gpuset_add(&h.nvml_unconfirmed, 0);
	h.n_fds = 1;
	h.mem_known = true;
	h.mem_used = 512u << 20;
	assert_true(intruder(&w, &h));
	h.n_fds = 0;
	assert_false(intruder(&w, &h));
	h.n_fds = 1;
	h.mem_used = 0;
	assert_false(intruder(&w, &h));
	/* listed on a GPU that is not selected */
	h.mem_used = 512u << 20;
	memset(&h.nvml_unconfirmed, 0, sizeof(h.nvml_unconfirmed));
	gs_gpuset_add(&h.nvml_unconfirmed, 1);
	assert_false(intruder(&w, &h));
	done(&w);
}

static void test_commands_descendants_and_adopted_orphans_are_its_own(void **state)
{
	struct world w;
	struct gs_holder h;

	(void)state;
	base(&w);
	proc(&w, 300, CHILD, 30);  /* a child of COMMAND */
	proc(&w, 301, 300, 31);    /* its grandchild */
	proc(&w, 302, SELF, 32);   /* an orphan gpuslate adopted as subreaper */
	h = holder(301, 31, GS_ROLE_COMPUTE, 0);
	assert_false(intruder(&w, &h));
	h = holder(302, 32, GS_ROLE_COMPUTE, 0);
	assert_false(intruder(&w, &h));
	h = holder(CHILD, 20, GS_ROLE_COMPUTE, 0);
	assert_false(intruder(&w, &h));
	done(&w);
}

static void test_a_descendant_seen_before_stays_commands_after_moving_away(void **state)
{
	struct world w;
	struct gs_holder h;

	(void)state;
	base(&w);
	proc(&w, 300, INIT, 30);   /* reparented to init since */
	assert_int_equal(gs_pidset_add(&w.tree, 300, 30), 0);
	h = holder(300, 30, GS_ROLE_COMPUTE, 0);
	assert_false(intruder(&w, &h));
	done(&w);
}

static void test_a_reused_pid_is_judged_as_the_new_process(void **state)
{
	struct world w;
	struct gs_holder h;

	(void)state;
	base(&w);
	proc(&w, 300, INIT, 99);
	/* pid 300 was COMMAND's and a holder before, as another process */
	assert_int_equal(gs_pidset_add(&w.tree, 300, 30), 0);
	assert_int_equal(gs_pidset_add(&w.known, 300, 31), 0);
	h = holder(300, 99, GS_ROLE_COMPUTE, 0);
	assert_true(intruder(&w, &h));
	done(&w);
}

static void test_a_holder_from_before_command_is_no_intruder(void **state)
{
	struct world w;
	struct gs_holder h;

	(void)state;
	base(&w);
	proc(&w, 300, INIT, 30);
	assert_int_equal(gs_pidset_add(&w.known, 300, 30), 0);
	h = holder(300, 30, GS_ROLE_COMPUTE, 0);
	assert_false(intruder(&w, &h));
	done(&w);
}

static void test_a_holder_gone_or_replaced_since_the_snapshot_waits_for_the_next_scan(void **state)
{
	struct world w;
	struct gs_holder h;

	(void)state;
	base(&w);
	proc(&w, 300, INIT, 77);
	h = holder(300, 30, GS_ROLE_COMPUTE, 0); /* the snapshot saw start 30 */
	assert_false(intruder(&w, &h));
	h = holder(400, 40, GS_ROLE_COMPUTE, 0); /* not in the table at all */
	assert_false(intruder(&w, &h));
	h = holder(300, 77, GS_ROLE_COMPUTE, 0);
	h.alive = false;                          /* NVML lists a dead PID */
	assert_false(intruder(&w, &h));
	done(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_stranger_on_a_selected_gpu_is_an_intruder),
		cmocka_unit_test(test_clients_and_protected_daemons_are_no_intruders),
		cmocka_unit_test(test_nvml_listed_memory_with_the_driver_open_is_an_intruder),
		cmocka_unit_test(test_commands_descendants_and_adopted_orphans_are_its_own),
		cmocka_unit_test(test_a_descendant_seen_before_stays_commands_after_moving_away),
		cmocka_unit_test(test_a_reused_pid_is_judged_as_the_new_process),
		cmocka_unit_test(test_a_holder_from_before_command_is_no_intruder),
		cmocka_unit_test(test_a_holder_gone_or_replaced_since_the_snapshot_waits_for_the_next_scan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

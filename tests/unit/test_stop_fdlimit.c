/* The stop stage under the open-file limit: with no descriptor left for a
 * pidfd a target is "not-signalled" (alive, with the reason), never taken
 * for gone; with fewer descriptors than targets, the targets beyond them are
 * parked and still all stopped. Children are real processes, synchronised
 * with pipes, never with sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/stop.h"
#include "proc/procinfo.h"
#include "util/util.h"
#include "waiting_child.h"

static int proc_fd = -1;

static struct child spawn(void)
{
	return spawn_waiting_child(NULL, NULL);
}

/* The lowest free descriptor: every one below it is in use, so a limit
 * of this leaves no room at all. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	assert_true(fd >= 0);
	close(fd);
	return fd;
}

/* A plan of one signalled target per child. */
static void plan_of(struct gs_plan *p, const struct child *c, size_t n)
{
	memset(p, 0, sizeof(*p));
	p->targets = calloc(n, sizeof(*p->targets));
	assert_non_null(p->targets);
	p->n_targets = n;
	for (size_t i = 0; i < n; i++) {
		struct gs_pidstat st;
		struct gs_target *t = &p->targets[i];

		assert_int_equal(gs_pidstat_read(proc_fd, c[i].pid, &st), 0);
		*t = (struct gs_target){ .pid = c[i].pid, .starttime = st.starttime, .holder = -1,
					 .action = GS_ACT_SIGNAL, .unit = -1 };
		gs_strlcpy(t->comm, "child", sizeof(t->comm));
	}
}

static void set_soft_limit(rlim_t soft, struct rlimit *old)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, old), 0);
	rl = *old;
	rl.rlim_cur = soft;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static void test_no_descriptor_left_is_not_gone(void **state)
{
	struct child c = spawn();
	struct gs_stop_opts o = { .grace_ms = 200, .kill_wait_ms = 200 };
	struct gs_stop_result r;
	struct gs_plan p;
	struct rlimit old;
	int status, rc;

	(void)state;
	plan_of(&p, &c, 1);
	/* Not one descriptor more: pidfd_open fails with EMFILE. */
	set_soft_limit((rlim_t)lowest_free_fd(), &old);
	rc = gs_stop_run(&p, proc_fd, &o, &r);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(r.n_procs, 1);
	assert_int_equal(r.procs[0].outcome, GS_OUT_NOT_SIGNALLED);
	assert_string_equal(gs_outcome_str(r.procs[0].outcome), "not-signalled");
	assert_int_equal(r.procs[0].error, EMFILE);
	assert_int_equal(r.procs[0].sent, 0);
	/* It runs on, never signalled: it ends normally when told to. */
	assert_int_equal(kill(c.pid, 0), 0);
	close(c.go_fd);
	assert_int_equal(waitpid(c.pid, &status, 0), c.pid);
	assert_true(WIFEXITED(status));
	gs_stop_result_free(&r);
	free(p.targets);
}

#define N_PARKED 40

static void test_more_targets_than_descriptors(void **state)
{
	struct child c[N_PARKED];
	struct gs_stop_opts o = { .grace_ms = 10000, .kill_wait_ms = 1000 };
	struct gs_stop_result r;
	struct gs_plan p;
	struct rlimit old;
	int rc;

	(void)state;
	for (size_t i = 0; i < N_PARKED; i++)
		c[i] = spawn();
	plan_of(&p, c, N_PARKED);
	/* Room for 5 pidfds beyond the stop stage's reserve of 32. */
	set_soft_limit((rlim_t)lowest_free_fd() + 32 + 5, &old);
	rc = gs_stop_run(&p, proc_fd, &o, &r);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(rc, 0);
	for (size_t i = 0; i < N_PARKED; i++) {
		int status;

		assert_int_equal(r.procs[i].outcome, GS_OUT_EXITED_TERM);
		assert_int_equal(r.procs[i].sent, GS_SENT_CONT | GS_SENT_TERM);
		assert_int_equal(r.procs[i].error, 0);
		assert_int_equal(waitpid(c[i].pid, &status, 0), c[i].pid);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
		close(c[i].go_fd);
	}
	gs_stop_result_free(&r);
	free(p.targets);
}

static int setup(void **state)
{
	(void)state;
	proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return proc_fd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	close(proc_fd);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_descriptor_left_is_not_gone),
		cmocka_unit_test(test_more_targets_than_descriptors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* The stop stage decides between SIGTERM with its grace period and SIGKILL
 * at once on the target's signal dispositions read right before signalling,
 * not on the plan's reading: real children change their dispositions after
 * the "plan" and the ladder follows what they are now. Children are
 * synchronised with pipes, never with sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/plan.h"
#include "core/stop.h"
#include "proc/procinfo.h"
#include "util/util.h"

static int proc_fd = -1;

enum child_term { CHILD_SIG_IGN, CHILD_HANDLER_EXIT, CHILD_BLOCKED_IGN };

static void exit_on_term(int sig)
{
	(void)sig;
	_exit(0);
}

/* A child with the given SIGTERM disposition, set up before it says ready. */
static pid_t spawn(enum child_term how)
{
	int ready[2];
	pid_t pid;
	char b;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa = { 0 };
		sigset_t set;

		sigemptyset(&sa.sa_mask);
		sa.sa_handler = how == CHILD_HANDLER_EXIT ? exit_on_term : SIG_IGN;
		if (sigaction(SIGTERM, &sa, NULL) < 0)
			_exit(5);
		sigemptyset(&set);
		if (how == CHILD_BLOCKED_IGN)
			sigaddset(&set, SIGTERM);
		if (sigprocmask(SIG_SETMASK, &set, NULL) < 0)
			_exit(6);
		close(ready[0]);
		if (write(ready[1], "r", 1) != 1)
			_exit(7);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);
	return pid;
}

/* A plan of one target as discovery would have made it: term is what the
 * plan read (possibly stale). */
static void one_target(struct gs_plan *p, struct gs_target *t, pid_t pid, enum gs_action action,
		       enum gs_term_fate term)
{
	struct gs_pidstat st;

	assert_int_equal(gs_pidstat_read(proc_fd, pid, &st), 0);
	memset(p, 0, sizeof(*p));
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->starttime = st.starttime;
	t->holder = -1;
	t->unit = -1;
	t->action = action;
	t->term = term;
	gs_strlcpy(t->comm, st.comm, sizeof(t->comm));
	p->targets = t;
	p->n_targets = 1;
}

static void run_stop(const struct gs_plan *p, uint64_t grace_ms, struct gs_stop_result *r, uint64_t *ret_ms)
{
	struct gs_stop_opts o = { .grace_ms = grace_ms, .kill_wait_ms = 5000 };
	uint64_t t0 = gs_now_ms();

	assert_int_equal(gs_stop_run(p, proc_fd, &o, r), 0);
	*ret_ms = gs_now_ms() - t0;
	assert_int_equal(r->n_procs, 1);
}

static int reap(pid_t pid)
{
	int st = 0;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* The plan saw a handler; by the stop the process ignores SIGTERM: SIGKILL at
 * once, no SIGTERM, no grace (30 s would fail the test's bound). */
static void test_ignored_now_killed_at_once(void **state)
{
	pid_t pid = spawn(CHILD_SIG_IGN);
	struct gs_target t;
	struct gs_plan p;
	struct gs_stop_result r;
	uint64_t ms;
	int st;

	(void)state;
	one_target(&p, &t, pid, GS_ACT_SIGNAL, GS_TERM_DELIVERED);
	run_stop(&p, 30000, &r, &ms);
	assert_true(r.procs[0].kill_at_once);
	assert_int_equal(r.procs[0].term, GS_TERM_IGNORED);
	assert_int_equal(r.procs[0].sent, GS_SENT_KILL);
	assert_int_equal(r.procs[0].outcome, GS_OUT_KILLED);
	assert_true(ms < 10000);
	st = reap(pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	gs_stop_result_free(&r);
}

/* The plan saw SIGTERM ignored; by the stop the process has a handler: it
 * gets SIGTERM (and exits on it), never SIGKILL. */
static void test_handler_now_gets_term(void **state)
{
	pid_t pid = spawn(CHILD_HANDLER_EXIT);
	struct gs_target t;
	struct gs_plan p;
	struct gs_stop_result r;
	uint64_t ms;
	int st;

	(void)state;
	one_target(&p, &t, pid, GS_ACT_KILL, GS_TERM_IGNORED);
	run_stop(&p, 30000, &r, &ms);
	assert_false(r.procs[0].kill_at_once);
	assert_int_equal(r.procs[0].term, GS_TERM_DELIVERED);
	assert_int_equal(r.procs[0].sent, GS_SENT_TERM | GS_SENT_CONT);
	assert_int_equal(r.procs[0].outcome, GS_OUT_EXITED_TERM);
	st = reap(pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	gs_stop_result_free(&r);
}

/* Blocked (and ignored): SIGTERM is still sent and the grace period given,
 * since the process may change its handler before it unblocks. */
static void test_blocked_keeps_grace(void **state)
{
	pid_t pid = spawn(CHILD_BLOCKED_IGN);
	struct gs_target t;
	struct gs_plan p;
	struct gs_stop_result r;
	uint64_t ms;
	int st;

	(void)state;
	one_target(&p, &t, pid, GS_ACT_SIGNAL, GS_TERM_DELIVERED);
	run_stop(&p, 300, &r, &ms);
	assert_false(r.procs[0].kill_at_once);
	assert_int_equal(r.procs[0].sent, GS_SENT_TERM | GS_SENT_CONT | GS_SENT_KILL);
	assert_int_equal(r.procs[0].outcome, GS_OUT_KILLED);
	assert_true(ms >= 300);
	assert_true(r.procs[0].exited_ms >= 300);
	st = reap(pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	gs_stop_result_free(&r);
}

static int setup(void **state)
{
	(void)state;
	proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return proc_fd < 0 ? -1 : 0;
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
		cmocka_unit_test(test_ignored_now_killed_at_once),
		cmocka_unit_test(test_handler_now_gets_term),
		cmocka_unit_test(test_blocked_keeps_grace),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* The stop stage's ladder on real processes: children of this test, each
 * behaving as one kind of GPU job, a plan written out by hand (pid and the
 * start time read from /proc, as discovery records them), real signals.
 * Named after the e2e scenarios whose ordering they pin down (test_stop.c:
 * SIGTERM or SIGKILL decided on the dispositions at the signal). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/plan.h"
#include "core/stop.h"
#include "proc/procinfo.h"
#include "util/util.h"

enum child_kind {
	CHILD_PLAIN,        /* default SIGTERM: ends at once */
	CHILD_CATCHES_TERM, /* a SIGTERM handler that carries on: only SIGKILL ends it */
	CHILD_STOPPED,      /* SIGSTOPped: must be continued to see SIGTERM */
};

/* A SIGTERM handler that ignores the request (SIG_IGN itself would make
 * the stop stage send SIGKILL at once: test_stop.c). */
static void carry_on(int sig)
{
	(void)sig;
}

/* Start a child of kind k; returns once it is set up (its signal
 * disposition in place, or it is stopped). */
static pid_t child(enum child_kind k)
{
	int p[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (k == CHILD_CATCHES_TERM)
			signal(SIGTERM, carry_on);
		else
			signal(SIGTERM, SIG_DFL);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	if (k == CHILD_STOPPED) {
		int st;

		assert_int_equal(kill(pid, SIGSTOP), 0);
		assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
		assert_true(WIFSTOPPED(st));
	}
	return pid;
}

/* A plan of signal targets, as gs_plan_build makes them. */
static void plan_of(struct gs_plan *p, int proc_fd, const pid_t *pids, size_t n)
{
	memset(p, 0, sizeof(*p));
	p->targets = calloc(n, sizeof(*p->targets));
	assert_non_null(p->targets);
	for (size_t i = 0; i < n; i++) {
		struct gs_pidstat st;

		assert_int_equal(gs_pidstat_read(proc_fd, pids[i], &st), 0);
		p->targets[i] = (struct gs_target){ .pid = pids[i], .starttime = st.starttime, .holder = -1,
						    .action = GS_ACT_SIGNAL, .why = GS_WHY_HOLDER, .unit = -1 };
		gs_strlcpy(p->targets[i].comm, st.comm, sizeof(p->targets[i].comm));
	}
	p->n_targets = n;
}

static void reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* e2e "reclaim: a holder that catches SIGTERM and carries on is killed after
 * --grace": the polite one ends on SIGTERM, the stubborn one gets SIGKILL
 * only once the grace period is over, and a stopped one is continued before
 * SIGTERM so that it ends by it. */
static void test_sigterm_first_sigkill_only_after_the_grace_period(void **state)
{
	pid_t pids[3];
	struct gs_plan p;
	struct gs_stop_result r;
	struct gs_stop_opts o = { .grace_ms = 400, .kill_wait_ms = 5000 };
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	assert_true(proc_fd >= 0);
	pids[0] = child(CHILD_PLAIN);
	pids[1] = child(CHILD_CATCHES_TERM);
	pids[2] = child(CHILD_STOPPED);
	plan_of(&p, proc_fd, pids, 3);
	assert_int_equal(gs_stop_run(&p, proc_fd, &o, &r), 0);

	assert_int_equal(r.procs[0].outcome, GS_OUT_EXITED_TERM);
	assert_int_equal(r.procs[0].sent, GS_SENT_CONT | GS_SENT_TERM);
	assert_int_equal(r.procs[2].outcome, GS_OUT_EXITED_TERM);
	assert_int_equal(r.procs[2].sent, GS_SENT_CONT | GS_SENT_TERM);
	assert_int_equal(r.procs[1].outcome, GS_OUT_KILLED);
	assert_int_equal(r.procs[1].sent, GS_SENT_CONT | GS_SENT_TERM | GS_SENT_KILL);
	/* Not before the grace period (the clock only runs forward; no upper
	 * bound that a loaded machine could break). */
	assert_true(r.procs[1].exited_ms >= o.grace_ms);
	assert_true(r.procs[0].exited_ms < r.procs[1].exited_ms);
	for (size_t i = 0; i < 3; i++)
		reap(pids[i]);
	gs_stop_result_free(&r);
	gs_plan_free(&p);
	close(proc_fd);
}

/* e2e "reclaim: a PID reused between discovery and signal is never
 * signalled": a target whose recorded start time is not the process's
 * gets nothing, and the process lives on. */
static void test_a_reused_pid_is_never_signalled(void **state)
{
	pid_t pid = child(CHILD_PLAIN);
	struct gs_plan p;
	struct gs_stop_result r;
	struct gs_stop_opts o = { .grace_ms = 100, .kill_wait_ms = 1000 };
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	assert_true(proc_fd >= 0);
	plan_of(&p, proc_fd, &pid, 1);
	p.targets[0].starttime += 1; /* the process discovery saw is gone; this is another */
	assert_int_equal(gs_stop_run(&p, proc_fd, &o, &r), 0);
	assert_int_equal(r.procs[0].outcome, GS_OUT_PID_REUSED);
	assert_int_equal(r.procs[0].sent, 0);
	assert_int_equal(kill(pid, 0), 0); /* still alive */
	assert_int_equal(kill(pid, SIGKILL), 0);
	reap(pid);
	gs_stop_result_free(&r);
	gs_plan_free(&p);
	close(proc_fd);
}

/* e2e "reclaim: Ctrl-C during the grace period stops escalating: no
 * SIGKILL": interrupted before the ladder, nothing past SIGTERM is sent. */
static void test_interrupted_stop_sends_no_sigkill(void **state)
{
	static volatile sig_atomic_t interrupted = 1;
	pid_t pid = child(CHILD_CATCHES_TERM);
	struct gs_plan p;
	struct gs_stop_result r;
	struct gs_stop_opts o = { .grace_ms = 100, .kill_wait_ms = 1000, .interrupted = &interrupted };
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	assert_true(proc_fd >= 0);
	plan_of(&p, proc_fd, &pid, 1);
	assert_int_equal(gs_stop_run(&p, proc_fd, &o, &r), 0);
	assert_false(r.procs[0].sent & GS_SENT_KILL);
	assert_int_equal(r.procs[0].outcome, GS_OUT_INTERRUPTED);
	assert_true(r.interrupted);
	assert_int_equal(kill(pid, 0), 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	reap(pid);
	gs_stop_result_free(&r);
	gs_plan_free(&p);
	close(proc_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigterm_first_sigkill_only_after_the_grace_period),
		cmocka_unit_test(test_a_reused_pid_is_never_signalled),
		cmocka_unit_test(test_interrupted_stop_sends_no_sigkill),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Process references: a pidfd is kept only for the process whose start time
 * was recorded; a wrong start time never leads to a signal. Children are
 * synchronised with pipes and waitid(WNOWAIT), never with sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/pidref.h"
#include "util/root.h"
#include "util/util.h"
#include "waiting_child.h"

static int proc_fd = -1;

static struct child spawn(void)
{
	return spawn_waiting_child(NULL, NULL);
}

/* Field 22 of /proc/PID/stat, parsed independently of the library. */
static uint64_t starttime_of(pid_t pid)
{
	char path[64], *text = NULL, *p;
	unsigned long long v = 0;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	assert_int_equal(gs_read_file_at(AT_FDCWD, path, 4096, &text, NULL), 0);
	p = strrchr(text, ')');
	assert_non_null(p);
	p += 2;
	for (field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		assert_non_null(p);
		p++;
	}
	assert_int_equal(sscanf(p, "%llu", &v), 1);
	free(text);
	return v;
}

/* Block until the child has exited, leaving it a zombie (not reaped). */
static void wait_zombie(pid_t pid)
{
	siginfo_t si;

	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
}

static int reap_status(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* Ended normally: it was never signalled. */
static void assert_not_signalled(struct child *c)
{
	int status;

	close(c->go_fd);
	status = reap_status(c->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_kill_and_wait(void **state)
{
	struct child c = spawn();
	struct gs_pidref ref;
	int status;

	(void)state;
	assert_int_equal(gs_pidref_open(&ref, proc_fd, c.pid, starttime_of(c.pid)), 0);
	assert_int_equal(ref.pid, c.pid);
	assert_true(ref.pidfd >= 0);
	assert_false(ref.no_pidfd);
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 0);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 0), 0);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 20), 0);
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, 0), 0);
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGTERM), 0);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 10000), 1);
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 1);
	status = reap_status(c.pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	/* Reaped: the pidfd still says exited; a signal finds nobody. */
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 1);
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGKILL), -ESRCH);
	gs_pidref_close(&ref);
	assert_int_equal(ref.pidfd, -1);
	/* Closed: refuses rather than signalling by bare pid. */
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGKILL), -EBADF);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 0), -EBADF);
	close(c.go_fd);
}

static void test_wrong_starttime(void **state)
{
	struct child c = spawn();
	uint64_t st = starttime_of(c.pid);
	struct gs_pidref ref;

	(void)state;
	assert_int_equal(gs_pidref_open(&ref, proc_fd, c.pid, st + 1), -ESRCH);
	assert_int_equal(ref.pidfd, -1);
	assert_false(ref.no_pidfd);
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGKILL), -EBADF);
	gs_pidref_close(&ref);
	/* Old-kernel path: the start time is checked again before kill(2). */
	ref = (struct gs_pidref){ .pid = c.pid, .starttime = st + 1, .pidfd = -1, .no_pidfd = true };
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGKILL), -ESRCH);
	/* "Exited" from the reference's point of view: its process is gone. */
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 1);
	assert_not_signalled(&c);
}

static void test_gone(void **state)
{
	struct child c = spawn();
	uint64_t st = starttime_of(c.pid);
	struct gs_pidref ref;

	(void)state;
	assert_not_signalled(&c);
	assert_int_equal(gs_pidref_open(&ref, proc_fd, c.pid, st), -ESRCH);
	assert_int_equal(gs_pidref_open(&ref, proc_fd, 0, st), -EINVAL);
	assert_int_equal(gs_pidref_open(&ref, proc_fd, -1, st), -EINVAL);
}

static void test_zombie(void **state)
{
	struct child c = spawn();
	uint64_t st = starttime_of(c.pid);
	struct gs_pidref ref, old;

	(void)state;
	close(c.go_fd);
	wait_zombie(c.pid);
	/* A zombie still has its pid and start time: the reference opens,
	 * and it counts as exited (it holds no files or memory). */
	assert_int_equal(gs_pidref_open(&ref, proc_fd, c.pid, st), 0);
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 1);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 0), 1);
	gs_pidref_close(&ref);
	/* Same through /proc/PID/stat alone (no pidfd). */
	old = (struct gs_pidref){ .pid = c.pid, .starttime = st, .pidfd = -1, .no_pidfd = true };
	assert_int_equal(gs_pidref_exited(&old, proc_fd), 1);
	assert_int_equal(gs_pidref_wait_exit(&old, proc_fd, 1000), 1);
	assert_int_equal(reap_status(c.pid), 0);
	assert_int_equal(gs_pidref_exited(&old, proc_fd), 1);
}

/* The child of spawn_zombie_leader: its main thread has ended, this one
 * says so and runs until EOF on the go pipe. */
struct leader_pipes {
	int ready, go;
};

static void *run_on(void *arg)
{
	struct leader_pipes *lp = arg;
	char b;

	if (write(lp->ready, "r", 1) != 1)
		_exit(5);
	while (read(lp->go, &b, 1) > 0)
		;
	_exit(0);
}

/* /proc/PID/stat's state field. */
static char state_of(pid_t pid)
{
	char path[64], *text = NULL, *p, state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	assert_int_equal(gs_read_file_at(AT_FDCWD, path, 4096, &text, NULL), 0);
	p = strrchr(text, ')');
	assert_non_null(p);
	state = p[2];
	free(text);
	return state;
}

/* A child whose main thread called pthread_exit while another thread runs
 * on: /proc/PID/stat shows the leader 'Z', yet the process keeps its
 * files and memory. Returns once the leader reads 'Z'. */
static struct child spawn_zombie_leader(void)
{
	static struct leader_pipes lp;
	int ready[2], go[2];
	struct child c;
	char b;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		pthread_t t;

		close(ready[0]);
		close(go[1]);
		lp = (struct leader_pipes){ .ready = ready[1], .go = go[0] };
		if (pthread_create(&t, NULL, run_on, &lp) != 0)
			_exit(6);
		pthread_exit(NULL);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);
	c.go_fd = go[1];
	/* The leader's exit is the kernel's, after it said ready: await it. */
	for (uint64_t t0 = gs_now_ms(); state_of(c.pid) != 'Z'; ) {
		struct timespec ts = { .tv_nsec = 1000000 };

		assert_true(gs_now_ms() - t0 < 30000);
		nanosleep(&ts, NULL);
	}
	return c;
}

/* Review 5 item 3: without a pidfd (an old kernel, or a parked reference)
 * exit was read from the leader's state alone, and a leader that is a
 * zombie while another thread runs was taken for gone: its memory was not
 * freed. Alive until the last thread ends, on every path. */
static void test_zombie_leader_with_a_live_thread_is_not_gone(void **state)
{
	struct child c = spawn_zombie_leader();
	uint64_t st = starttime_of(c.pid);
	struct gs_pidref ref, old, parked;

	(void)state;
	assert_int_equal(gs_pidref_open(&ref, proc_fd, c.pid, st), 0);
	assert_int_equal(gs_pidref_open(&parked, proc_fd, c.pid, st), 0);
	assert_int_equal(gs_pidref_park(&parked), 0);
	old = (struct gs_pidref){ .pid = c.pid, .starttime = st, .pidfd = -1, .no_pidfd = true };
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 0);
	assert_int_equal(gs_pidref_exited(&old, proc_fd), 0);
	assert_int_equal(gs_pidref_wait_exit(&old, proc_fd, 0), 0);
	assert_int_equal(gs_pidref_exited(&parked, proc_fd), 0);
	assert_int_equal(gs_pidref_wait_exit(&parked, proc_fd, 0), 0);

	/* The last thread ends: the process is gone (a zombie), on every path. */
	close(c.go_fd);
	wait_zombie(c.pid);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 10000), 1);
	assert_int_equal(gs_pidref_wait_exit(&old, proc_fd, 10000), 1);
	assert_int_equal(gs_pidref_wait_exit(&parked, proc_fd, 10000), 1);
	gs_pidref_close(&ref);
	gs_pidref_close(&parked);
	assert_int_equal(reap_status(c.pid), 0);
}

/* The kill(2) fallback of kernels without pidfds. */
static void test_no_pidfd_fallback(void **state)
{
	struct child c = spawn();
	struct gs_pidref ref = { .pid = c.pid, .starttime = starttime_of(c.pid), .pidfd = -1, .no_pidfd = true };
	int status;

	(void)state;
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 0);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 0), 0);
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGTERM), 0);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 10000), 1);
	status = reap_status(c.pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	close(c.go_fd);
}

/* A parked reference holds no descriptor; each signal opens a pidfd,
 * checking the start time again, and exit is read from /proc. */
static void test_parked(void **state)
{
	struct child c = spawn(), d = spawn();
	struct gs_pidref ref, other;
	int status;

	(void)state;
	assert_int_equal(gs_pidref_open(&ref, proc_fd, c.pid, starttime_of(c.pid)), 0);
	assert_int_equal(gs_pidref_park(&ref), 0);
	assert_true(ref.parked);
	assert_int_equal(ref.pidfd, -1);
	assert_int_equal(gs_pidref_park(&ref), -EBADF);
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 0);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 0), 0);
	/* Back to a held pidfd, and parked again. */
	assert_int_equal(gs_pidref_unpark(&ref, proc_fd), 0);
	assert_false(ref.parked);
	assert_true(ref.pidfd >= 0);
	assert_int_equal(gs_pidref_park(&ref), 0);
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGTERM), 0);
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 10000), 1);
	status = reap_status(c.pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	/* Gone: no signal, no pidfd; unparking says so and closes it. */
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGKILL), -ESRCH);
	assert_int_equal(gs_pidref_exited(&ref, proc_fd), 1);
	assert_int_equal(gs_pidref_unpark(&ref, proc_fd), -ESRCH);
	assert_int_equal(gs_pidref_kill(&ref, proc_fd, SIGKILL), -EBADF);
	close(c.go_fd);

	/* A parked reference whose start time no longer matches (the PID
	 * reused) signals nobody. */
	assert_int_equal(gs_pidref_open(&other, proc_fd, d.pid, starttime_of(d.pid)), 0);
	assert_int_equal(gs_pidref_park(&other), 0);
	other.starttime++;
	assert_int_equal(gs_pidref_kill(&other, proc_fd, SIGKILL), -ESRCH);
	assert_int_equal(gs_pidref_exited(&other, proc_fd), 1);
	gs_pidref_close(&other);
	assert_not_signalled(&d);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A signal to the caller (here SIGALRM, in the tool SIGINT) ends a long
 * wait with -EINTR instead of waiting out the timeout. */
static void test_wait_interrupted(void **state)
{
	struct child c = spawn();
	struct gs_pidref ref;
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct itimerval it = { .it_value = { .tv_usec = 50000 } };
	uint64_t t0;

	(void)state;
	assert_int_equal(gs_pidref_open(&ref, proc_fd, c.pid, starttime_of(c.pid)), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0); /* no SA_RESTART */
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	t0 = gs_now_ms();
	assert_int_equal(gs_pidref_wait_exit(&ref, proc_fd, 60000), -EINTR);
	assert_true(gs_now_ms() - t0 < 30000);
	assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
	gs_pidref_close(&ref);
	assert_not_signalled(&c);
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
		cmocka_unit_test(test_kill_and_wait),
		cmocka_unit_test(test_wrong_starttime),
		cmocka_unit_test(test_gone),
		cmocka_unit_test(test_zombie),
		cmocka_unit_test(test_no_pidfd_fallback),
		cmocka_unit_test(test_zombie_leader_with_a_live_thread_is_not_gone),
		cmocka_unit_test(test_wait_interrupted),
		cmocka_unit_test(test_parked),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

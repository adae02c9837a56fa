/* /proc/PID/stat and status parsers, and the reader on live processes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/procinfo.h"
#include "util/util.h"

static const char *g_argv0;

/* The tail after comm of a real stat line (bash on x86-64, kernel 6.x). */
#define TAIL " 1187 1187 1187 34817 1201 4194304 1473 5231 0 3 2 1 9 4 20 0 1 0 " \
	"9012345 8744960 1305 18446744073709551615 94211 94999 140731 0 0 0 65536 " \
	"3670020 1266777851 1 0 0 17 5 0 0 0 0 0 9500 9600 9700 140732 140733 140734 140735 0\n"

static void test_stat_plain(void **state)
{
	struct gs_pidstat st;

	(void)state;
	assert_int_equal(gs_parse_pidstat("4242 (bash) S" TAIL, &st), 0);
	assert_int_equal(st.pid, 4242);
	assert_string_equal(st.comm, "bash");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1187);
	assert_int_equal(st.pgrp, 1187);
	assert_int_equal(st.session, 1187);
	assert_int_equal(st.flags, 4194304);
	assert_int_equal(st.starttime, 9012345);
}

static void test_stat_hostile_comm(void **state)
{
	struct gs_pidstat st;

	(void)state;
	assert_int_equal(gs_parse_pidstat("7 (a) (b) D" TAIL, &st), 0);
	assert_string_equal(st.comm, "a) (b");
	assert_int_equal(st.state, 'D');
	assert_int_equal(st.starttime, 9012345);

	assert_int_equal(gs_parse_pidstat("7 ()) R" TAIL, &st), 0);
	assert_string_equal(st.comm, ")");
	assert_int_equal(st.state, 'R');

	assert_int_equal(gs_parse_pidstat("7 (() Z" TAIL, &st), 0);
	assert_string_equal(st.comm, "(");

	assert_int_equal(gs_parse_pidstat("7 () S" TAIL, &st), 0);
	assert_string_equal(st.comm, "");

	/* spaces, a newline and a fake tail inside comm */
	assert_int_equal(gs_parse_pidstat("7 (x) R 1 1 1 0 0 0 0 0\n ) S" TAIL, &st), 0);
	assert_string_equal(st.comm, "x) R 1 1 1 0 0 0 0 0\n ");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1187);

	assert_int_equal(gs_parse_pidstat("7 (python3 train.py) R" TAIL, &st), 0);
	assert_string_equal(st.comm, "python3 train.py");

	/* a comm longer than any kernel writes is cut, not overflowed */
	{
		char buf[1024];
		int n = snprintf(buf, sizeof(buf), "9 (");

		for (int i = 0; i < 200; i++)
			buf[n++] = 'c';
		snprintf(buf + n, sizeof(buf) - (size_t)n, ") S" TAIL);
		assert_int_equal(gs_parse_pidstat(buf, &st), 0);
		assert_int_equal(strlen(st.comm), sizeof(st.comm) - 1);
		assert_int_equal(st.starttime, 9012345);
	}
}

static void test_stat_kthread(void **state)
{
	struct gs_pidstat st;

	(void)state;
	assert_int_equal(gs_parse_pidstat("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 "
					  "2 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 "
					  "0 0 0 0 0 0 0 0 0 0 0 0 0\n", &st), 0);
	assert_int_equal(st.pid, 2);
	assert_int_equal(st.ppid, 0);
	assert_int_equal(st.pgrp, 0);
	assert_int_equal(st.session, 0);
	assert_true(st.flags & GS_PF_KTHREAD);
	assert_int_equal(st.starttime, 2);
	assert_int_equal(gs_parse_pidstat("1 (systemd) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 "
					  "18 0 0\n", &st), 0);
	assert_int_equal(st.starttime, 18);
}

static void test_stat_invalid(void **state)
{
	struct gs_pidstat st;
	const char *bad[] = {
		"",
		"4242",
		"4242 (bash",
		"4242 bash) S" TAIL,
		"(bash) S" TAIL,
		" (bash) S" TAIL,
		"4242(bash) S" TAIL,
		"x (bash) S" TAIL,
		"-1 (bash) S" TAIL,
		"0 (bash) S" TAIL,
		"99999999999 (bash) S" TAIL,
		"4242 (bash)",
		"4242 (bash)\n",
		"4242 (bash) ",
		"4242 (bash)S" TAIL,
		"4242 (bash) SS" TAIL,
		"4242 (bash) S  1187 1187",
		/* truncated before, inside and right after starttime */
		"4242 (bash) S 1187 1187 1187 34817 1201 4194304",
		"4242 (bash) S 1187 1187 1187 34817 1201 4194304 1473 5231 0 3 2 1 9 4 20 0 1 0 90123",
		"4242 (bash) S 1187 1187 1187 34817 1201 4194304 1473 5231 0 3 2 1 9 4 20 0 1 0 9012345\n",
		"4242 (bash) S 1187 1187 1187 34817 1201 4194304 1473 5231 0 3 2 1 9 4 20 0 1 0 9012345 ",
		/* numbers that are not numbers */
		"4242 (bash) S -1 1187 1187 34817 1201 4194304 1473 5231 0 3 2 1 9 4 20 0 1 0 9 8 7\n",
		"4242 (bash) S 1187 1187 1187 34817 1201 0x10 1473 5231 0 3 2 1 9 4 20 0 1 0 9 8 7\n",
		"4242 (bash) S 1187 1187 1187 34817 1201 4294967296 1473 5231 0 3 2 1 9 4 20 0 1 0 9 8 7\n",
		"4242 (bash) S 1187 1187 1187 34817 1201 0 1473 5231 0 3 2 1 9 4 20 0 1 0 +9 8 7\n",
		"4242 (bash) S 1187 1187 1187 34817 1201 0 1473 5231 0 3 2 1 9 4 20 0 1 0 "
			"99999999999999999999 8 7\n",
		"4242 (bash) S 2147483648 1187 1187 34817 1201 0 1473 5231 0 3 2 1 9 4 20 0 1 0 9 8 7\n",
		"4242 (bash) S 1187 1187 1187 34817 1201 0 1473 5231 0 3 2 1 9 4 20 0 1 0 "
			"123456789012345678901234567890123 8 7\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = gs_parse_pidstat(bad[i], &st);

		if (r != -EINVAL)
			print_error("accepted: '%s'\n", bad[i]);
		assert_int_equal(r, -EINVAL);
	}
	assert_int_equal(gs_parse_pidstat(NULL, &st), -EINVAL);
	/* the shortest acceptable text: through field 23 */
	assert_int_equal(gs_parse_pidstat("4242 (bash) S 1 2 3 -1 -1 0 0 0 0 0 0 0 0 0 20 -5 1 0 77 0", &st), 0);
	assert_int_equal(st.starttime, 77);
}

static void test_status(void **state)
{
	struct gs_pidstatus s;

	(void)state;
	/* host process: one NSpid entry */
	assert_int_equal(gs_parse_pidstatus(
		"Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t9120\nNgid:\t0\n"
		"Pid:\t9120\nPPid:\t9001\nTracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\n"
		"Gid:\t1000\t1000\t1000\t1000\nFDSize:\t256\nGroups:\t4 27 1000 \n"
		"NStgid:\t9120\nNSpid:\t9120\nNSpgid:\t9120\nNSsid:\t9001\nVmPeak:\t 123 kB\n", &s), 0);
	assert_int_equal(s.uid, 1000);
	assert_true(s.has_nspid);
	assert_int_equal(s.nspid, 9120);

	/* inside a container: host pid first, then the container's */
	assert_int_equal(gs_parse_pidstatus(
		"Name:\tollama\nPid:\t812345\nUid:\t0\t0\t0\t0\nNSpid:\t812345\t57\n", &s), 0);
	assert_int_equal(s.uid, 0);
	assert_int_equal(s.nspid, 57);

	/* docker-in-docker: three levels, innermost last */
	assert_int_equal(gs_parse_pidstatus(
		"Name:\tnode\nUid:\t65534\t65534\t65534\t65534\nNSpid:\t30001\t411\t1\n", &s), 0);
	assert_int_equal(s.uid, 65534);
	assert_int_equal(s.nspid, 1);

	/* setuid: real uid differs from the effective one */
	assert_int_equal(gs_parse_pidstatus("Uid:\t1000\t0\t0\t0\nNSpid:\t5\n", &s), 0);
	assert_int_equal(s.uid, 1000);

	/* old kernel (< 4.1): no NSpid line */
	assert_int_equal(gs_parse_pidstatus("Name:\tx\nUid:\t42\t42\t42\t42\n", &s), 0);
	assert_false(s.has_nspid);
	assert_int_equal(s.uid, 42);

	/* no trailing newline; first Uid: wins; escaped name cannot fake a line */
	assert_int_equal(gs_parse_pidstatus("Name:\tUid:\\n0\nUid:\t7\t7\t7\t7\nUid:\t0\nNSpid:\t9", &s), 0);
	assert_int_equal(s.uid, 7);
	assert_int_equal(s.nspid, 9);
	/* a key in the middle of a line is not a key */
	assert_int_equal(gs_parse_pidstatus("Name:\tx Uid: 0\nUid:\t5\t5\t5\t5\n", &s), 0);
	assert_int_equal(s.uid, 5);
}

static void test_status_sigmasks(void **state)
{
	struct gs_pidstatus s;

	(void)state;
	/* a python job that set SIGTERM to SIG_IGN (bit 14 of SigIgn) */
	assert_int_equal(gs_parse_pidstatus("Name:\tpython3\nUid:\t0\t0\t0\t0\nNSpid:\t4242\n"
					    "SigQ:\t0/96362\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
					    "SigBlk:\t0000000000000000\nSigIgn:\t0000000001004006\n"
					    "SigCgt:\t0000000180000002\n", &s), 0);
	assert_true(s.has_sigmasks);
	assert_int_equal(s.sig_ign, 0x1004006ULL);
	assert_int_equal(s.sig_cgt, 0x180000002ULL);
	assert_int_equal(gs_pidstatus_term_fate(&s), GS_TERM_IGNORED);
	assert_string_equal(gs_term_fate_str(GS_TERM_IGNORED), "ignored");

	/* PID 1 of a container without a SIGTERM handler (docker run python ...) */
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\t0\t0\t0\nNSpid:\t812345\t1\n"
					    "SigBlk:\t0000000000000000\nSigIgn:\t0000000001001000\n"
					    "SigCgt:\t0000000100000002\n", &s), 0);
	assert_int_equal(gs_pidstatus_term_fate(&s), GS_TERM_NS_INIT);
	assert_string_equal(gs_term_fate_str(GS_TERM_NS_INIT), "namespace-init");

	/* the same with a handler: delivered, it keeps its grace */
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\t0\t0\t0\nNSpid:\t812345\t1\n"
					    "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
					    "SigCgt:\t0000000000004000\n", &s), 0);
	assert_int_equal(gs_pidstatus_term_fate(&s), GS_TERM_DELIVERED);
	assert_null(gs_term_fate_str(GS_TERM_DELIVERED));

	/* blocked: queued whatever the disposition, delivered when unblocked */
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\t0\t0\t0\nNSpid:\t9\t1\n"
					    "SigBlk:\t0000000000004000\nSigIgn:\t0000000000004000\n"
					    "SigCgt:\t0000000000000000\n", &s), 0);
	assert_int_equal(gs_pidstatus_term_fate(&s), GS_TERM_DELIVERED);

	/* a host process without a handler: the default action ends it */
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\t0\t0\t0\nNSpid:\t9\n"
					    "SigBlk:\t0\nSigIgn:\t0\nSigCgt:\t0\n", &s), 0);
	assert_int_equal(gs_pidstatus_term_fate(&s), GS_TERM_DELIVERED);

	/* _NSIG 128 (MIPS): 32 digits, the low 64 bits are the last 16 */
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\nSigBlk:\t00000000000000000000000000000000\n"
					    "SigIgn:\tffffffffffffffff0000000000004000\n"
					    "SigCgt:\t00000000000000000000000000000000\n", &s), 0);
	assert_int_equal(s.sig_ign, 0x4000ULL);
	assert_int_equal(gs_pidstatus_term_fate(&s), GS_TERM_IGNORED);

	/* missing or malformed masks: unknown, never a reason to skip grace */
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\nNSpid:\t1\n", &s), 0);
	assert_false(s.has_sigmasks);
	assert_int_equal(gs_pidstatus_term_fate(&s), GS_TERM_UNKNOWN);
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\nSigBlk:\t0\nSigIgn:\t00004000x\nSigCgt:\t0\n", &s), 0);
	assert_false(s.has_sigmasks);
	assert_int_equal(s.sig_ign, 0);
	assert_int_equal(gs_pidstatus_term_fate(&s), GS_TERM_UNKNOWN);
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\nSigBlk:\t0\nSigIgn:\t\nSigCgt:\t0\n", &s), 0);
	assert_false(s.has_sigmasks);
	assert_int_equal(gs_parse_pidstatus("Uid:\t0\nSigBlk:\t0\n"
					    "SigIgn:\t000000000000000000000000000000004000\nSigCgt:\t0\n", &s), 0);
	assert_false(s.has_sigmasks);
}

/* The live reading: this process with SIGTERM ignored, then caught. */
static void on_term_noop(int sig)
{
	(void)sig;
}

static void test_term_fate_read_self(void **state)
{
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct sigaction sa = { 0 }, old;
	struct gs_pidstat st;
	enum gs_term_fate f;

	(void)state;
	assert_true(proc_fd >= 0);
	assert_int_equal(gs_pidstat_read(proc_fd, getpid(), &st), 0);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	assert_int_equal(sigaction(SIGTERM, &sa, &old), 0);
	assert_int_equal(gs_term_fate_read(proc_fd, getpid(), st.starttime, &f), 0);
	assert_int_equal(f, GS_TERM_IGNORED);
	sa.sa_handler = on_term_noop;
	assert_int_equal(sigaction(SIGTERM, &sa, NULL), 0);
	assert_int_equal(gs_term_fate_read(proc_fd, getpid(), st.starttime, &f), 0);
	assert_int_equal(f, GS_TERM_DELIVERED);
	/* another start time: another process, no answer */
	assert_int_equal(gs_term_fate_read(proc_fd, getpid(), st.starttime + 1, &f), -ESRCH);
	assert_int_equal(f, GS_TERM_UNKNOWN);
	assert_int_equal(sigaction(SIGTERM, &old, NULL), 0);
	close(proc_fd);
}

static void test_status_invalid(void **state)
{
	struct gs_pidstatus s;
	const char *bad[] = {
		"",
		"Name:\tx\n",
		"Uid:\n",
		"Uid:\t\n",
		"Uid:\t-1\t0\t0\t0\n",
		"Uid:\tabc\n",
		"Uid:\t4294967296\t0\t0\t0\n",
		"Uid:\t1000000000000000000000000000000\n",
		"Uid:\t0\nNSpid:\n",
		"Uid:\t0\nNSpid:\t12\tx\n",
		"Uid:\t0\nNSpid:\t0\n",
		"Uid:\t0\nNSpid:\t12\t-3\n",
		"Uid:\t0\nNSpid:\t2147483648\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = gs_parse_pidstatus(bad[i], &s);

		if (r != -EINVAL)
			print_error("accepted: '%s'\n", bad[i]);
		assert_int_equal(r, -EINVAL);
	}
	assert_int_equal(gs_parse_pidstatus(NULL, &s), -EINVAL);
}

static int open_pid_dir(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static void test_read_self(void **state)
{
	struct gs_procinfo *pi = calloc(1, sizeof(*pi));
	struct gs_pidstat st;
	int proc_fd, dfd;
	char want[64];

	(void)state;
	assert_non_null(pi);
	proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(proc_fd >= 0);
	dfd = open_pid_dir(getpid());
	assert_true(dfd >= 0);

	assert_int_equal(gs_procinfo_read(dfd, getpid(), pi), 0);
	assert_int_equal(gs_pidstat_read(proc_fd, getpid(), &st), 0);

	assert_int_equal(pi->st.pid, getpid());
	assert_int_equal(pi->st.ppid, getppid());
	assert_int_equal(pi->st.pgrp, getpgrp());
	assert_int_equal(pi->st.session, getsid(0));
	assert_int_equal(pi->st.state, 'R');
	assert_false(pi->st.flags & GS_PF_KTHREAD);
	assert_int_equal(pi->status.uid, getuid());
	assert_int_equal(pi->st.starttime, st.starttime);
	assert_int_equal(st.pid, getpid());
	assert_true(pi->status.nspid > 0);

	gs_strlcpy(want, base(g_argv0), sizeof(want));
	assert_string_equal(pi->name, want);
	assert_non_null(strstr(pi->cmdline, want));
	assert_string_equal(pi->wchan, "");
	assert_true(pi->user[0] != '\0');
	/* comm is the first 15 bytes of the executable's name */
	assert_int_equal(strncmp(pi->st.comm, want, 15), 0);
	if (access("/proc/self/cgroup", R_OK) == 0)
		assert_true(pi->owner.cgroup[0] == '/');

	/* the pid must match the directory */
	assert_int_equal(gs_procinfo_read(dfd, getpid() == 1 ? 2 : 1, pi), -ESRCH);
	assert_int_equal(gs_procinfo_read(dfd, 0, pi), -EINVAL);
	assert_int_equal(gs_pidstat_read(proc_fd, 0, &st), -EINVAL);

	close(dfd);
	close(proc_fd);
	free(pi);
}

static void test_read_child(void **state)
{
	struct gs_procinfo *pi = calloc(1, sizeof(*pi));
	struct gs_pidstat st;
	int proc_fd, dfd, pfd[2], status;
	pid_t pid;
	char c;

	(void)state;
	assert_non_null(pi);
	proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(proc_fd >= 0);
	assert_int_equal(pipe(pfd), 0);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* argv with control bytes and an empty argument; "; :" keeps the
		 * shell from exec'ing sleep in its place */
		char *argv[] = { "/nonexistent/dir/gs\001child", "-c", "sleep 30; :", "a\tb", "", "c", NULL };

		setpgid(0, 0);
		close(pfd[0]);
		if (write(pfd[1], "x", 1) != 1)
			_exit(1);
		execv("/bin/sh", argv);
		_exit(127);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	/* wait until the exec has finished: comm becomes "sh" first, the new
	 * argv (cmdline) a moment later, once the new mm is in place */
	dfd = open_pid_dir(pid);
	assert_true(dfd >= 0);
	for (int i = 0; i < 500; i++) {
		if (gs_procinfo_read(dfd, pid, pi) == 0 && strcmp(pi->st.comm, "sh") == 0 && pi->cmdline[0])
			break;
		usleep(10000);
	}
	assert_int_equal(gs_procinfo_read(dfd, pid, pi), 0);
	assert_string_equal(pi->st.comm, "sh");
	/* The bytes as the process wrote them: outputs escape them
	 * (util/sanitize.h), each for its own format. */
	assert_string_equal(pi->name, "gs\001child");
	assert_string_equal(pi->cmdline, "/nonexistent/dir/gs\001child -c sleep 30; : a\tb  c");
	assert_int_equal(pi->st.ppid, getpid());
	assert_int_equal(pi->st.pgrp, pid);

	/* a zombie: empty cmdline, name falls back to comm */
	kill(-pid, SIGKILL);
	for (int i = 0; i < 200; i++) {
		if (gs_pidstat_read(proc_fd, pid, &st) == 0 && st.state == 'Z')
			break;
		usleep(10000);
	}
	assert_int_equal(gs_procinfo_read(dfd, pid, pi), 0);
	assert_int_equal(pi->st.state, 'Z');
	assert_string_equal(pi->cmdline, "");
	assert_string_equal(pi->name, "sh");

	/* reaped: gone through the old directory fd and by number */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	{
		int r = gs_procinfo_read(dfd, pid, pi);

		assert_true(r == -ENOENT || r == -ESRCH);
		r = gs_pidstat_read(proc_fd, pid, &st);
		assert_true(r == -ENOENT || r == -ESRCH);
	}
	close(dfd);
	close(proc_fd);
	free(pi);
}

static void test_read_kthread(void **state)
{
	struct gs_procinfo *pi = calloc(1, sizeof(*pi));
	int dfd;

	(void)state;
	assert_non_null(pi);
	/* kthreadd is pid 2 on the host; skip inside a pid namespace */
	dfd = open_pid_dir(2);
	if (dfd < 0) {
		free(pi);
		skip();
	}
	if (gs_procinfo_read(dfd, 2, pi) != 0 || !(pi->st.flags & GS_PF_KTHREAD)) {
		close(dfd);
		free(pi);
		skip();
	}
	assert_string_equal(pi->cmdline, "");
	assert_string_equal(pi->name, pi->st.comm);
	assert_int_equal(pi->status.uid, 0);
	close(dfd);
	free(pi);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat_plain),
		cmocka_unit_test(test_stat_hostile_comm),
		cmocka_unit_test(test_stat_kthread),
		cmocka_unit_test(test_stat_invalid),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_status_invalid),
		cmocka_unit_test(test_status_sigmasks),
		cmocka_unit_test(test_term_fate_read_self),
		cmocka_unit_test(test_read_self),
		cmocka_unit_test(test_read_child),
		cmocka_unit_test(test_read_kthread),
	};

	(void)argc;
	g_argv0 = argv[0];
	return cmocka_run_group_tests(tests, NULL, NULL);
}

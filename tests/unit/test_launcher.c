/* Unit tests for src/proc/launcher.c: the one list of launchers and shells,
 * and a process recognised by its executable, not by its comm. Real
 * processes: a root-owned /usr/bin/timeout, a copy anyone may write, and
 * this test renamed "timeout". */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/launcher.h"

static pid_t start(const char *exe)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(exe, exe, "30", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	/* Until the exec has happened: /proc/PID/exe names the new program. */
	for (int i = 0; i < 200; i++) {
		char path[64], buf[512];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		n = readlink(path, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			if (strstr(buf, "timeout"))
				break;
		}
		usleep(10000);
	}
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(gs_launch_kind_of_name("timeout"), GS_LAUNCH_LAUNCHER);
	assert_int_equal(gs_launch_kind_of_name("env"), GS_LAUNCH_LAUNCHER);
	assert_int_equal(gs_launch_kind_of_name("containerd-shim-runc-v2"), GS_LAUNCH_LAUNCHER);
	assert_int_equal(gs_launch_kind_of_name("bash"), GS_LAUNCH_SHELL);
	assert_int_equal(gs_launch_kind_of_name("dash"), GS_LAUNCH_SHELL);
	assert_int_equal(gs_launch_kind_of_name("python3"), GS_LAUNCH_NONE);
	assert_int_equal(gs_launch_kind_of_name("torchrun"), GS_LAUNCH_NONE);
}

static void test_by_executable(void **state)
{
	void *proc = (void *)(intptr_t)open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char copy[] = "/tmp/gs-test-launcher.XXXXXX", exe[600];
	pid_t pid;
	int fd;

	(void)state;
	if (access("/usr/bin/timeout", X_OK) < 0)
		skip();
	/* The administrator's binary: a launcher. */
	pid = start("/usr/bin/timeout");
	assert_int_equal(gs_launch_kind_proc(proc, pid, "timeout"), GS_LAUNCH_LAUNCHER);
	/* comm says nothing: the executable is what counts. */
	assert_int_equal(gs_launch_kind_proc(proc, pid, "python3"), GS_LAUNCH_LAUNCHER);
	stop(pid);

	/* A copy anyone may write is not the administrator's timeout. */
	assert_non_null(mkdtemp(copy));
	snprintf(exe, sizeof(exe), "%s/timeout", copy);
	{
		char cmd[1400];

		snprintf(cmd, sizeof(cmd), "cp /usr/bin/timeout '%s' && chmod 0777 '%s'", exe, exe);
		assert_int_equal(system(cmd), 0);
	}
	pid = start(exe);
	assert_int_equal(gs_launch_kind_proc(proc, pid, "timeout"), GS_LAUNCH_NONE);
	stop(pid);
	unlink(exe);
	rmdir(copy);

	/* A process that only calls itself timeout. */
	{
		char old[17] = "";

		prctl(PR_GET_NAME, old, 0, 0, 0);
		prctl(PR_SET_NAME, "timeout", 0, 0, 0);
		assert_int_equal(gs_launch_kind_proc(proc, getpid(), "timeout"), GS_LAUNCH_NONE);
		prctl(PR_SET_NAME, old, 0, 0, 0);
	}
	/* Gone: only the comm is left to say. */
	assert_int_equal(gs_launch_kind_proc(proc, 999999999, "timeout"), GS_LAUNCH_LAUNCHER);
	fd = (int)(intptr_t)proc;
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_by_executable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

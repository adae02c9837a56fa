/* A real child process for the unit tests that signal or scan one: it
 * runs `setup` (if any), says it is ready, then waits for EOF on its go pipe
 * and exits 0. The test ends it by closing go_fd or by a signal. Include
 * after cmocka.h. */
#ifndef GS_TEST_WAITING_CHILD_H
#define GS_TEST_WAITING_CHILD_H

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

struct child {
	pid_t pid;
	int go_fd;
};

static inline struct child spawn_waiting_child(void (*setup)(void *ud), void *ud)
{
	int ready[2], go[2];
	struct child c;
	char b;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		close(ready[0]);
		close(go[1]);
		if (setup)
			setup(ud);
		if (write(ready[1], "r", 1) != 1)
			_exit(5);
		while (read(go[0], &b, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);
	c.go_fd = go[1];
	return c;
}

#endif

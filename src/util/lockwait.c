/* See lockwait.h. */
#include "util/lockwait.h"
#include "util/util.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

/* Reads what inotify has queued, so the next poll waits for a new event. */
static void drain(int ino)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	while (read(ino, buf, sizeof(buf)) > 0)
		;
}

/* Sleeps ms (or until a signal), on the inotify fd when there is one. */
static void nap(int ino, uint64_t ms)
{
	if (ino >= 0) {
		struct pollfd pfd = { .fd = ino, .events = POLLIN };

		if (poll(&pfd, 1, (int)ms) > 0)
			drain(ino);
	} else {
		struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };

		(void)nanosleep(&ts, NULL);
	}
}

int gs_lock_wait(int fd, const char *path, uint64_t timeout_ms, volatile sig_atomic_t *interrupted,
		 void (*waiting)(void *ud), void *ud)
{
	uint64_t deadline;
	int ino, r;

	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK && errno != EINTR)
		return -errno;
	if (waiting)
		waiting(ud);
	deadline = gs_now_ms() + timeout_ms;
	/* The holder's last close of the file releases its lock and wakes us
	 * at once. The watch is in place before the next try, so a close in
	 * between is seen by that try, never lost. Without inotify (no
	 * instances left) the poll interval alone bounds the delay. */
	ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ino >= 0 && inotify_add_watch(ino, path, IN_CLOSE | IN_DONT_FOLLOW) < 0) {
		close(ino);
		ino = -1;
	}
	for (;;) {
		uint64_t now, left;

		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			r = 0;
			break;
		}
		if (errno != EWOULDBLOCK && errno != EINTR) {
			r = -errno;
			break;
		}
		if (interrupted && *interrupted) {
			r = -EINTR;
			break;
		}
		now = gs_now_ms();
		if (now >= deadline) {
			r = -EBUSY;
			break;
		}
		left = deadline - now;
		nap(ino, left < GS_LOCK_POLL_MS ? left : GS_LOCK_POLL_MS);
	}
	if (ino >= 0)
		close(ino);
	return r;
}

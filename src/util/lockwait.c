/* See lockwait.h. */
#include "util/lockwait.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

int gs_lock_holder(int fd, pid_t *ret_pid)
{
	struct stat st;
	char *txt = NULL, want[64];
	int r = -ENOENT;

	if (fstat(fd, &st) < 0)
		return -errno;
	snprintf(want, sizeof(want), "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
		 (unsigned long long)st.st_ino);
	if (gs_read_file_at(AT_FDCWD, "/proc/locks", 1 << 20, &txt, NULL) < 0)
		return -EIO;
	/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's
	 * line starts "1: -> FLOCK": not a holder. */
	for (char *line = txt, *next; line && *line; line = next) {
		char kind[16], adv[16], mode[16], pidw[16], dev[64];
		pid_t pid;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strstr(line, "->"))
			continue;
		if (sscanf(line, "%*d: %15s %15s %15s %15s %63s", kind, adv, mode, pidw, dev) == 5 &&
		    !strcmp(kind, "FLOCK") && !strcmp(dev, want) && gs_parse_pid(pidw, &pid) == 0 && pid > 0) {
			*ret_pid = pid;
			r = 0;
			break;
		}
	}
	free(txt);
	return r;
}

void gs_lock_holder_text(int fd, char *buf, size_t len)
{
	char path[64], *cmd = NULL;
	size_t n = 0;
	pid_t pid = 0;

	buf[0] = '\0';
	if (gs_lock_holder(fd, &pid) < 0)
		return;
	/* flock(1) takes the lock in a child that exits, leaving it to the
	 * shell that holds the descriptor: a PID that is gone is no answer. */
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (access(path, F_OK) < 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (gs_read_file_at(AT_FDCWD, path, 4096, &cmd, &n) == 0 && n) {
		/* argv's NULs as spaces; escaped by whoever prints it. */
		for (size_t i = 0; i + 1 < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		snprintf(buf, len, "PID %d (%.200s)", (int)pid, cmd);
	} else {
		snprintf(buf, len, "PID %d", (int)pid);
	}
	free(cmd);
}

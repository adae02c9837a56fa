#include "proc/pidref.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Same numbers on every architecture since the unified syscall table. */
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Step of the fallback wait on kernels without pidfds. */
#define NO_PIDFD_POLL_MS 10

/* Read the small /proc file <pid>/<name> into buf (NUL-terminated, at
 * most len - 1 bytes), without allocating: the identity checks before a
 * signal stay allocation-free. Returns 0, -ESRCH when the process is gone. */
static int read_proc_text(int proc_fd, pid_t pid, const char *name, char *buf, size_t len)
{
	_cleanup_close_ int fd = -1;
	char path[48];
	size_t got = 0;

	snprintf(path, sizeof(path), "%d/%s", (int)pid, name);
	fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	while (got < len - 1) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == ESRCH ? -ESRCH : -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return 0;
}

/* Read state (field 3) and starttime (field 22) of <pid>/stat. A private
 * reader rather than gs_pidstat_read (procinfo.c): this is the only identity
 * check before a signal, so it stays small, allocation-free and local.
 * Returns 0, -ESRCH when the process is gone, -EINVAL on unparsable text. */
static int read_identity(int proc_fd, pid_t pid, uint64_t *ret_start, char *ret_state)
{
	char buf[2048], *p;
	uint64_t v = 0;
	int field, r;

	r = read_proc_text(proc_fd, pid, "stat", buf, sizeof(buf));
	if (r < 0)
		return r;
	/* comm may contain spaces and ')': fields start after the LAST ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return -EINVAL;
	*ret_state = p[2];
	p += 3; /* at the space before field 4 */
	for (field = 4; field <= 22; field++) {
		if (*p != ' ')
			return -EINVAL;
		p++;
		if (field < 22) {
			/* Fields 4..21 are numbers, some negative: skip them. */
			if (*p == '\0' || *p == ' ')
				return -EINVAL;
			while (*p && *p != ' ')
				p++;
			continue;
		}
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			unsigned d = (unsigned)(*p - '0');

			if (v > (UINT64_MAX - d) / 10)
				return -EINVAL;
			v = v * 10 + d;
		}
		if (*p != ' ' && *p != '\n' && *p != '\0')
			return -EINVAL;
	}
	*ret_start = v;
	return 0;
}

/* The Threads: count of <pid>/status: the threads of its group that have
 * not been released, a zombie leader included. Returns it, -ESRCH when the
 * process is gone, other -errno. */
static int read_threads(int proc_fd, pid_t pid)
{
	char buf[4096];
	const char *p;
	long v;
	int r;

	r = read_proc_text(proc_fd, pid, "status", buf, sizeof(buf));
	if (r < 0)
		return r;
	p = strstr(buf, "\nThreads:");
	if (!p)
		return -EINVAL;
	p += strlen("\nThreads:");
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (v = 0; *p >= '0' && *p <= '9' && v < INT_MAX / 10; p++)
		v = v * 10 + (*p - '0');
	return (int)v;
}

/* 0 when <pid> is still the process started at starttime, else -ESRCH. */
static int check_identity(int proc_fd, pid_t pid, uint64_t starttime, char *ret_state)
{
	uint64_t start;
	char state;
	int r = read_identity(proc_fd, pid, &start, &state);

	if (r < 0)
		return r;
	if (start != starttime)
		return -ESRCH; /* the PID now names another process */
	if (ret_state)
		*ret_state = state;
	return 0;
}

int gs_pidref_open(struct gs_pidref *ref, int proc_fd, pid_t pid, uint64_t starttime)
{
	int fd, r;

	/* Until verified: pidfd -1 and no_pidfd false make every operation
	 * refuse with -EBADF. */
	*ref = (struct gs_pidref){ .pid = pid, .starttime = starttime, .pidfd = -1, .no_pidfd = false };
	if (pid <= 0)
		return -EINVAL;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0 && errno != ENOSYS)
		return -errno;
	/* After the pidfd exists, so that a PID reused between discovery and
	 * now is caught: the pidfd pins whatever process held the PID, and the
	 * start time read afterwards says whether that is ours. */
	r = check_identity(proc_fd, pid, starttime, NULL);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	ref->pidfd = fd;
	ref->no_pidfd = fd < 0;
	return 0;
}

/* Without a pidfd: re-check the start time right before kill(2). The
 * window between the two is the best an old kernel allows. */
static int kill_checked(struct gs_pidref *ref, int proc_fd, int sig)
{
	int r = check_identity(proc_fd, ref->pid, ref->starttime, NULL);

	if (r < 0)
		return r;
	if (kill(ref->pid, sig) < 0)
		return -errno;
	return 0;
}

int gs_pidref_park(struct gs_pidref *ref)
{
	if (ref->pid <= 0 || ref->pidfd < 0)
		return -EBADF;
	close(ref->pidfd);
	ref->pidfd = -1;
	ref->parked = true;
	return 0;
}

int gs_pidref_unpark(struct gs_pidref *ref, int proc_fd)
{
	struct gs_pidref fresh;
	int r;

	if (ref->pid <= 0 || !ref->parked)
		return -EBADF;
	r = gs_pidref_open(&fresh, proc_fd, ref->pid, ref->starttime);
	if (r == -ESRCH) {
		gs_pidref_close(ref);
		return r;
	}
	if (r < 0)
		return r;
	*ref = fresh;
	return 0;
}

/* A parked reference: a pidfd for this one signal, verified as at
 * discovery (gs_pidref_open), then closed again. */
static int kill_parked(struct gs_pidref *ref, int proc_fd, int sig)
{
	struct gs_pidref once;
	int r = gs_pidref_open(&once, proc_fd, ref->pid, ref->starttime);

	if (r < 0)
		return r;
	r = gs_pidref_kill(&once, proc_fd, sig);
	gs_pidref_close(&once);
	return r;
}

int gs_pidref_kill(struct gs_pidref *ref, int proc_fd, int sig)
{
	if (ref->pid <= 0)
		return -EBADF; /* never opened, or closed: nothing verified */
	if (ref->parked)
		return kill_parked(ref, proc_fd, sig);
	if (ref->pidfd >= 0) {
		if (syscall(SYS_pidfd_send_signal, ref->pidfd, sig, NULL, 0) == 0)
			return 0;
		/* ENOSYS here means a seccomp filter, not an old kernel. */
		if (errno != ENOSYS)
			return -errno;
		return kill_checked(ref, proc_fd, sig);
	}
	if (!ref->no_pidfd)
		return -EBADF;
	return kill_checked(ref, proc_fd, sig);
}

int gs_pidref_exited(struct gs_pidref *ref, int proc_fd)
{
	uint64_t start;
	char state;
	int r;

	if (ref->pid <= 0)
		return -EBADF;
	if (ref->pidfd >= 0) {
		struct pollfd pfd = { .fd = ref->pidfd, .events = POLLIN };
		int n = poll(&pfd, 1, 0);

		if (n > 0)
			return pfd.revents & POLLNVAL ? -EBADF : 1;
		if (n < 0 && errno != EINTR)
			return -errno;
		/* The pidfd turns readable only once the whole thread group is
		 * gone; a leader that shows 'Z' while its other threads run on
		 * still holds its files. Trust the pidfd. */
		if (n == 0)
			return 0;
	} else if (!ref->no_pidfd && !ref->parked) {
		return -EBADF;
	}
	r = read_identity(proc_fd, ref->pid, &start, &state);
	if (r == -ESRCH)
		return 1;
	if (r < 0)
		return r;
	if (start != ref->starttime)
		return 1; /* reaped, and the PID already reused */
	if (state != 'Z' && state != 'X')
		return 0;
	/* A zombie holds no files or memory any more (do_exit released
	 * them), but stat shows the leader's state: a leader that ended
	 * (pthread_exit) while other threads run on reads 'Z' too, and the
	 * process keeps everything. Gone only when it is the last thread. A
	 * PID reaped and reused between the two reads makes this say alive:
	 * the safe way, the next look sees the start time differ. */
	r = read_threads(proc_fd, ref->pid);
	if (r == -ESRCH)
		return 1;
	if (r < 0)
		return r;
	return r <= 1 ? 1 : 0;
}

static uint64_t deadline_after(uint64_t timeout_ms)
{
	uint64_t now = gs_now_ms();

	return timeout_ms > UINT64_MAX - now ? UINT64_MAX : now + timeout_ms;
}

int gs_pidref_wait_exit(struct gs_pidref *ref, int proc_fd, uint64_t timeout_ms)
{
	uint64_t deadline = deadline_after(timeout_ms);

	if (ref->pid <= 0)
		return -EBADF;
	if (ref->pidfd >= 0) {
		for (;;) {
			struct pollfd pfd = { .fd = ref->pidfd, .events = POLLIN };
			uint64_t now = gs_now_ms();
			uint64_t left = now >= deadline ? 0 : deadline - now;
			int n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);

			if (n > 0)
				return pfd.revents & POLLNVAL ? -EBADF : 1;
			/* A signal (SIGINT) ends the wait: the caller decides
			 * whether to go on with the time that is left. */
			if (n < 0)
				return -errno;
			if (gs_now_ms() >= deadline)
				return 0;
			/* Timeouts above INT_MAX ms: poll again for the rest. */
		}
	}
	if (!ref->no_pidfd && !ref->parked)
		return -EBADF;
	for (;;) {
		uint64_t now, step;
		struct timespec ts;
		int r = gs_pidref_exited(ref, proc_fd);

		if (r != 0)
			return r;
		now = gs_now_ms();
		if (now >= deadline)
			return 0;
		step = deadline - now < NO_PIDFD_POLL_MS ? deadline - now : NO_PIDFD_POLL_MS;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(step * 1000000ULL);
		/* The one sleep in gpuslate: a kernel without pidfds (or a
		 * parked reference) gives nothing to wait on, so
		 * /proc/PID/stat is polled in short steps. */
		if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
			return -EINTR;
	}
}

void gs_pidref_close(struct gs_pidref *ref)
{
	if (ref->pidfd >= 0)
		close(ref->pidfd);
	/* pid stays for messages; with neither a pidfd nor no_pidfd every
	 * operation answers -EBADF, so a closed reference never signals. */
	ref->pidfd = -1;
	ref->no_pidfd = false;
	ref->parked = false;
}

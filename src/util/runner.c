/* The fleet's sliding window; see runner.h. */
#include "util/runner.h"
#include "util/spawn.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Once the child is reaped, how long its pipes may stay open: a process it
 * left behind (an ssh ControlPersist master, say) can hold them for ever. */
#define GS_DRAIN_AFTER_EXIT_MS 200

enum slot_phase {
	PH_RUNNING,    /* deadline not reached */
	PH_STDIN_SHUT, /* stdin closed, waiting for it to end on its own */
	PH_TERM_SENT,
	PH_KILL_SENT,
};

struct buf {
	char *p;
	size_t len, max;
	bool truncated;
};

struct slot {
	bool used;
	size_t idx;
	struct gs_child c;
	int pidfd;
	bool reaped;
	int status;
	enum slot_phase phase;
	enum gs_run_state end_state; /* TIMED_OUT / INTERRUPTED once the runner ends it */
	uint64_t start_ms, next_ms, reaped_ms;
	struct buf out, err;
};

static int buf_init(struct buf *b, size_t max)
{
	b->p = malloc(max + 1);
	if (!b->p)
		return -ENOMEM;
	b->p[0] = '\0';
	b->len = 0;
	b->max = max;
	b->truncated = false;
	return 0;
}

/* Read what is there; returns 1 while open, 0 at EOF, -errno. Data past the
 * bound is read and dropped so the child never blocks on a full pipe. */
static int buf_read(int fd, struct buf *b)
{
	char tmp[65536];

	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 1 : -errno;
		}
		if (n == 0)
			return 0;
		if (b->len < b->max) {
			size_t take = (size_t)n;

			if (take > b->max - b->len) {
				take = b->max - b->len;
				b->truncated = true;
			}
			memcpy(b->p + b->len, tmp, take);
			b->len += take;
			b->p[b->len] = '\0';
		} else {
			b->truncated = true;
		}
		if ((size_t)n < sizeof(tmp))
			return 1;
	}
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Room for 5 descriptors per child (three pipes, a pidfd, slack): raise the
 * soft limit to the hard one, and return how many children fit. */
static unsigned fit_fanout(unsigned want)
{
	struct rlimit rl;
	rlim_t avail;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return want;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return want;
	avail = rl.rlim_cur > 64 ? (rl.rlim_cur - 64) / 5 : 1;
	if (avail < 1)
		avail = 1;
	return (rlim_t)want > avail ? (unsigned)avail : want;
}

static int slot_start(struct slot *s, size_t idx, char *const *argv, const struct gs_runner_opts *o,
		      struct gs_run_output *res)
{
	int r;

	memset(s, 0, sizeof(*s));
	s->idx = idx;
	s->pidfd = -1;
	s->start_ms = gs_now_ms();
	r = buf_init(&s->out, o->max_out);
	if (r == 0)
		r = buf_init(&s->err, o->max_err);
	if (r < 0) {
		free(s->out.p);
		free(s->err.p);
		s->out.p = s->err.p = NULL; /* no dangling pointer for slot_abandon */
		return r;
	}
	r = gs_spawn(argv, NULL, GS_SPAWN_CAPTURE | GS_SPAWN_STDIN, &s->c);
	if (r < 0) {
		free(s->out.p);
		free(s->err.p);
		res->state = GS_RUN_SPAWN_FAILED;
		res->spawn_errno = -r;
		res->exit_code = -1;
		return 0;
	}
	(void)fcntl(s->c.out_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(s->c.err_fd, F_SETFL, O_NONBLOCK);
	/* A pidfd wakes poll() when the child exits; without one (old kernel)
	 * the loop looks with WNOHANG on each wake-up, at least every 100 ms. */
	s->pidfd = (int)syscall(SYS_pidfd_open, s->c.pid, 0);
	if (s->pidfd >= 0)
		(void)fcntl(s->pidfd, F_SETFD, FD_CLOEXEC);
	s->used = true;
	s->next_ms = o->deadline_ms ? s->start_ms + o->deadline_ms : UINT64_MAX;
	return 1;
}

static void slot_reap(struct slot *s, uint64_t now)
{
	int st;
	pid_t p;

	if (s->reaped)
		return;
	if (s->end_state) {
		siginfo_t si;

		/* An ended child's group goes too, while its zombie leader
		 * still pins the group id (after the reap it could be reused). */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)s->c.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == s->c.pid)
			gs_child_end_step(s->c.pid, GS_END_KILL);
	}
	do
		p = waitpid(s->c.pid, &st, WNOHANG);
	while (p < 0 && errno == EINTR);
	if (p == s->c.pid || (p < 0 && errno == ECHILD)) {
		s->reaped = true;
		s->status = p == s->c.pid ? st : -1;
		s->reaped_ms = now;
		close_fd(&s->pidfd);
		/* stdin is ours to close now that nobody reads it. */
		close_fd(&s->c.in_fd);
	}
}

/* Begin, or move one step down, the ending ladder. */
static void slot_end_step(struct slot *s, const struct gs_runner_opts *o, uint64_t now, enum gs_run_state why)
{
	uint64_t grace = o->end_grace_ms ? o->end_grace_ms : 2000;

	if (!s->end_state)
		s->end_state = why;
	switch (s->phase) {
	case PH_RUNNING:
		close_fd(&s->c.in_fd);
		s->phase = PH_STDIN_SHUT;
		break;
	case PH_STDIN_SHUT:
		if (!s->reaped)
			gs_child_end_step(s->c.pid, GS_END_TERM);
		s->phase = PH_TERM_SENT;
		break;
	case PH_TERM_SENT:
	case PH_KILL_SENT:
		/* Only while the child is not reaped: then its pid and group
		 * id cannot have been reused. */
		if (!s->reaped)
			gs_child_end_step(s->c.pid, GS_END_KILL);
		s->phase = PH_KILL_SENT;
		break;
	}
	s->next_ms = now + grace;
}

static bool slot_done(const struct slot *s, uint64_t now)
{
	if (!s->reaped)
		return false;
	if (s->c.out_fd < 0 && s->c.err_fd < 0)
		return true;
	return now >= s->reaped_ms + GS_DRAIN_AFTER_EXIT_MS;
}

static void slot_finish(struct slot *s, struct gs_run_output *res, uint64_t now)
{
	if (s->c.out_fd >= 0)
		(void)buf_read(s->c.out_fd, &s->out);
	if (s->c.err_fd >= 0)
		(void)buf_read(s->c.err_fd, &s->err);
	close_fd(&s->c.out_fd);
	close_fd(&s->c.err_fd);
	close_fd(&s->c.in_fd);
	close_fd(&s->pidfd);
	res->state = s->end_state ? s->end_state : GS_RUN_EXITED;
	res->exit_code = s->status >= 0 ? gs_wait_status_code(s->status) : -1;
	res->out = s->out.p;
	res->out_len = s->out.len;
	res->out_truncated = s->out.truncated;
	res->err = s->err.p;
	res->err_len = s->err.len;
	res->err_truncated = s->err.truncated;
	res->elapsed_ms = now - s->start_ms;
	s->out.p = s->err.p = NULL;
	s->used = false;
}

/* Failure of the loop itself: end and reap everything, synchronously. */
static void slot_abandon(struct slot *s)
{
	close_fd(&s->c.in_fd);
	close_fd(&s->c.out_fd);
	close_fd(&s->c.err_fd);
	close_fd(&s->pidfd);
	if (!s->reaped)
		gs_spawn_terminate(&s->c, 1000);
	free(s->out.p);
	free(s->err.p);
	s->out.p = s->err.p = NULL;
	s->used = false;
}

int gs_runner_run(char **const *argvs, size_t n, const struct gs_runner_opts *o, struct gs_run_output *results)
{
	unsigned fanout = fit_fanout(o->fanout ? o->fanout : 1);
	struct slot *slots = NULL;
	struct pollfd *pfd = NULL;
	size_t *pslot = NULL;
	size_t next = 0, done = 0;
	bool stopping = false;
	int r = 0;

	memset(results, 0, n * sizeof(*results));
	for (size_t i = 0; i < n; i++)
		results[i].exit_code = -1;
	if (fanout > n)
		fanout = n ? (unsigned)n : 1;
	slots = calloc(fanout, sizeof(*slots));
	pfd = calloc((size_t)fanout * 3, sizeof(*pfd));
	pslot = calloc((size_t)fanout * 3, sizeof(*pslot));
	if (!slots || !pfd || !pslot) {
		r = -ENOMEM;
		goto out;
	}

	while (done < n) {
		uint64_t now = gs_now_ms(), wake = now + 100;
		size_t np = 0;
		int pr;

		if (!stopping && o->interrupted && *o->interrupted) {
			stopping = true;
			for (unsigned k = 0; k < fanout; k++)
				if (slots[k].used && !slots[k].end_state && !slots[k].reaped)
					slot_end_step(&slots[k], o, now, GS_RUN_INTERRUPTED);
			/* What was never started is finished as it is. */
			for (; next < n; next++) {
				results[next].state = GS_RUN_NOT_STARTED;
				done++;
				if (o->finished)
					o->finished(o->ud, next, &results[next]);
			}
		}
		/* Fill the window. */
		for (unsigned k = 0; k < fanout && next < n && !stopping; k++) {
			int sr;

			if (slots[k].used)
				continue;
			sr = slot_start(&slots[k], next, argvs[next], o, &results[next]);
			if (sr < 0) {
				r = sr;
				goto out;
			}
			if (sr == 0) {
				done++;
				if (o->finished)
					o->finished(o->ud, next, &results[next]);
			}
			next++;
		}
		if (done >= n)
			break;

		/* Deadlines and the ending ladder. */
		for (unsigned k = 0; k < fanout; k++) {
			struct slot *s = &slots[k];

			if (!s->used)
				continue;
			if (!s->reaped && now >= s->next_ms)
				slot_end_step(s, o, now, GS_RUN_TIMED_OUT);
			if (!s->reaped && s->next_ms < wake)
				wake = s->next_ms;
			if (s->reaped && s->reaped_ms + GS_DRAIN_AFTER_EXIT_MS < wake)
				wake = s->reaped_ms + GS_DRAIN_AFTER_EXIT_MS;
			if (s->c.out_fd >= 0) {
				pfd[np] = (struct pollfd){ .fd = s->c.out_fd, .events = POLLIN };
				pslot[np++] = k;
			}
			if (s->c.err_fd >= 0) {
				pfd[np] = (struct pollfd){ .fd = s->c.err_fd, .events = POLLIN };
				pslot[np++] = k;
			}
			if (s->pidfd >= 0) {
				pfd[np] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
				pslot[np++] = k;
			}
		}
		pr = poll(pfd, np, wake > now ? (int)(wake - now) : 0);
		if (pr < 0 && errno != EINTR) {
			r = -errno;
			goto out;
		}
		now = gs_now_ms();
		for (size_t p = 0; pr > 0 && p < np; p++) {
			struct slot *s = &slots[pslot[p]];

			if (!pfd[p].revents)
				continue;
			if (pfd[p].fd == s->c.out_fd) {
				if (buf_read(s->c.out_fd, &s->out) <= 0)
					close_fd(&s->c.out_fd);
			} else if (pfd[p].fd == s->c.err_fd) {
				if (buf_read(s->c.err_fd, &s->err) <= 0)
					close_fd(&s->c.err_fd);
			}
			/* the pidfd: reaped below */
		}
		for (unsigned k = 0; k < fanout; k++) {
			struct slot *s = &slots[k];

			if (!s->used)
				continue;
			slot_reap(s, now);
			if (slot_done(s, now)) {
				size_t idx = s->idx;

				slot_finish(s, &results[idx], now);
				done++;
				if (o->finished)
					o->finished(o->ud, idx, &results[idx]);
			}
		}
		if (o->tick)
			o->tick(o->ud);
	}
out:
	if (slots)
		for (unsigned k = 0; k < fanout; k++)
			if (slots[k].used)
				slot_abandon(&slots[k]);
	free(slots);
	free(pfd);
	free(pslot);
	return r;
}

void gs_run_output_free(struct gs_run_output *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

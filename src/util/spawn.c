#include "util/spawn.h"
#include "util/fdlimit.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern char **environ;

int gs_spawn(char *const argv[], char *const envp[], unsigned flags, struct gs_child *ret)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 }, ex[2] = { -1, -1 };
	pid_t pid;
	int e = 0;
	ssize_t n;

	if ((flags & GS_SPAWN_CAPTURE) && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0))
		goto fail_errno;
	if ((flags & GS_SPAWN_STDIN) && pipe2(in, O_CLOEXEC) < 0)
		goto fail_errno;
	/* Reports an exec failure (errno) back to the parent; closes on exec. */
	if (pipe2(ex, O_CLOEXEC) < 0)
		goto fail_errno;

	pid = fork();
	if (pid < 0)
		goto fail_errno;
	if (pid == 0) {
		int devnull;

		setpgid(0, 0);
		gs_fdlimit_restore();
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (flags & GS_SPAWN_STDIN) {
			dup2(in[0], 0);
		} else {
			devnull = open("/dev/null", O_RDONLY);
			if (devnull >= 0)
				dup2(devnull, 0);
		}
		if (flags & GS_SPAWN_CAPTURE) {
			dup2(out[1], 1);
			dup2(err[1], 2);
		}
		if (envp)
			execvpe(argv[0], argv, envp);
		else
			execvp(argv[0], argv);
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(ex[1]);
	ex[1] = -1;
	/* Put it in its own group from here too, so a signal to the group
	 * cannot race with the child's own setpgid. */
	(void)setpgid(pid, pid);
	do
		n = read(ex[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(ex[0]);
	if (n == (ssize_t)sizeof(e)) {
		(void)waitpid(pid, NULL, 0);
		errno = e;
		goto fail_errno;
	}
	if (flags & GS_SPAWN_CAPTURE) {
		close(out[1]);
		close(err[1]);
	}
	if (flags & GS_SPAWN_STDIN)
		close(in[0]);
	ret->pid = pid;
	ret->out_fd = (flags & GS_SPAWN_CAPTURE) ? out[0] : -1;
	ret->err_fd = (flags & GS_SPAWN_CAPTURE) ? err[0] : -1;
	ret->in_fd = (flags & GS_SPAWN_STDIN) ? in[1] : -1;
	return 0;

fail_errno:
	e = errno;
	for (int *p = &out[0]; p <= &out[1]; p++)
		if (*p >= 0)
			close(*p);
	for (int *p = &err[0]; p <= &err[1]; p++)
		if (*p >= 0)
			close(*p);
	for (int *p = &in[0]; p <= &in[1]; p++)
		if (*p >= 0)
			close(*p);
	if (ex[0] >= 0)
		close(ex[0]);
	if (ex[1] >= 0)
		close(ex[1]);
	return -e;
}

static int reap(pid_t pid, uint64_t timeout_ms, int *ret_status)
{
	uint64_t deadline = gs_now_ms() + timeout_ms;

	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid) {
			*ret_status = st;
			return 1;
		}
		if (r < 0 && errno != EINTR)
			return -errno;
		if (gs_now_ms() >= deadline)
			return 0;
		/* Our own child: a SIGCHLD-free wait by short sleeps keeps this
		 * helper independent of the caller's signal handling. */
		usleep(2000);
	}
}

/* Wait until the child has exited WITHOUT reaping it: its zombie keeps the
 * pid and the process group id from being reused while we signal the group. */
static int exited_unreaped(pid_t pid, uint64_t timeout_ms)
{
	uint64_t deadline = gs_now_ms() + timeout_ms;

	for (;;) {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			return 1;
		if (errno == ECHILD)
			return -ECHILD;
		if (gs_now_ms() >= deadline)
			return 0;
		usleep(2000); /* our own child; see reap() */
	}
}

void gs_child_end_step(pid_t pgid, enum gs_end_step step)
{
	if (pgid <= 1)
		return; /* never a broadcast or init's group */
	if (step == GS_END_TERM) {
		(void)kill(-pgid, SIGTERM);
		(void)kill(-pgid, SIGCONT);
	} else {
		(void)kill(-pgid, SIGKILL);
	}
}

void gs_spawn_terminate(struct gs_child *c, uint64_t grace_ms)
{
	int st;

	if (c->pid <= 0)
		return;
	gs_child_end_step(c->pid, GS_END_TERM);
	if (exited_unreaped(c->pid, grace_ms) != 1)
		(void)exited_unreaped(c->pid, 0);
	/* Before reaping: the zombie leader still pins the group id, so this
	 * reaches only what the child left in its own group. */
	gs_child_end_step(c->pid, GS_END_KILL);
	if (reap(c->pid, 5000, &st) == 1)
		c->pid = -1;
	/* Else it is stuck (uninterruptible sleep): keep the pid so the
	 * caller can still reap it later; never signal its group again. */
}

int gs_wait_status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

struct capbuf {
	char *buf;
	size_t len, max;
};

static int cap_read(int fd, struct capbuf *cb)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -errno;
	if (n == 0)
		return 0;
	if (cb->len < cb->max) {
		size_t take = (size_t)n;

		if (take > cb->max - cb->len)
			take = cb->max - cb->len;
		memcpy(cb->buf + cb->len, tmp, take);
		cb->len += take;
		cb->buf[cb->len] = '\0';
	}
	return 1;
}

int gs_spawn_run(char *const argv[], uint64_t timeout_ms, size_t max_out, struct gs_run_result *ret)
{
	return gs_spawn_run_interruptible(argv, timeout_ms, max_out, NULL, ret);
}

int gs_spawn_run_interruptible(char *const argv[], uint64_t timeout_ms, size_t max_out,
			       volatile sig_atomic_t *interrupted, struct gs_run_result *ret)
{
	return gs_spawn_run_ticking(argv, timeout_ms, max_out, interrupted, NULL, ret);
}

int gs_spawn_run_ticking(char *const argv[], uint64_t timeout_ms, size_t max_out, volatile sig_atomic_t *interrupted,
			 const struct gs_spawn_tick *tick, struct gs_run_result *ret)
{
	uint64_t every = tick && tick->fn && tick->every_ms ? tick->every_ms : 0;
	uint64_t next_tick = gs_now_ms() + every;
	struct gs_child c;
	struct capbuf cap[2];
	uint64_t deadline = gs_now_ms() + timeout_ms;
	int r, st = 0;
	bool open_out = true, open_err = true;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
	for (int i = 0; i < 2; i++) {
		cap[i].buf = calloc(1, max_out + 1);
		cap[i].len = 0;
		cap[i].max = max_out;
		if (!cap[i].buf) {
			free(cap[0].buf);
			return -ENOMEM;
		}
	}
	r = gs_spawn(argv, NULL, GS_SPAWN_CAPTURE, &c);
	if (r < 0) {
		free(cap[0].buf);
		free(cap[1].buf);
		return r;
	}
	while (open_out || open_err) {
		struct pollfd p[2] = { { c.out_fd, POLLIN, 0 }, { c.err_fd, POLLIN, 0 } };
		uint64_t now = gs_now_ms(), beat;
		int pr;

		if (every && now >= next_tick) {
			tick->fn(tick->ud);
			next_tick = now + every;
		}
		if (now >= deadline) {
			ret->timed_out = true;
			break;
		}
		if (interrupted && *interrupted) {
			ret->interrupted = true;
			break;
		}
		if (!open_out)
			p[0].fd = -1;
		if (!open_err)
			p[1].fd = -1;
		beat = deadline - now > 1000 ? 1000 : deadline - now;
		if (every && next_tick - now < beat)
			beat = next_tick > now ? next_tick - now : 0;
		pr = poll(p, 2, (int)beat);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr <= 0)
			continue;
		if (open_out && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			open_out = cap_read(c.out_fd, &cap[0]) > 0;
		if (open_err && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			open_err = cap_read(c.err_fd, &cap[1]) > 0;
	}
	close(c.out_fd);
	close(c.err_fd);
	if (ret->timed_out || ret->interrupted) {
		gs_spawn_terminate(&c, 2000);
	} else {
		uint64_t now = gs_now_ms();

		r = reap(c.pid, deadline > now ? deadline - now : 0, &st);
		if (r == 1)
			ret->exit_code = gs_wait_status_code(st);
		else {
			ret->timed_out = true;
			gs_spawn_terminate(&c, 2000);
		}
	}
	ret->out = cap[0].buf;
	ret->err = cap[1].buf;
	return 0;
}

void gs_run_result_free(struct gs_run_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

bool gs_program_exists(const char *name)
{
	const char *path;
	char buf[4096];

	if (strchr(name, '/'))
		return access(name, X_OK) == 0;
	path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);

		if (len && len + strlen(name) + 2 < sizeof(buf)) {
			struct stat st;

			memcpy(buf, path, len);
			buf[len] = '/';
			strcpy(buf + len + 1, name);
			if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
				return true;
		}
		if (!end)
			break;
		path = end + 1;
	}
	return false;
}

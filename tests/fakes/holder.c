/* gs-holder: a process that "holds GPU memory" on the simulated host.
 *
 * It does what the kernel lets gpuslate observe of a CUDA process: open fds
 * on the device nodes under the dev root and shared mappings of them. Its GPU
 * memory is a context file in the fake NVML state directory, kept alive by a
 * flock(LOCK_SH) that forked children inherit, as they inherit the driver's
 * open files. See docs/testing.md for the options and the state format. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_GPUS 64
#define MAX_WORKERS 1024
#define READY_MAX 65536

/* What SIGTERM does to a holder (docs/testing.md). */
enum term_mode {
	TERM_EXIT,     /* a handler that exits 0 (default) */
	TERM_CATCH,    /* --ignore-term: a handler that carries on */
	TERM_SIG_IGN,  /* --sigign-term: SIG_IGN, the kernel drops it */
	TERM_DEFAULT,  /* --term-default: no handler, the default action */
};

struct opts {
	const char *state;
	const char *dev_root;
	unsigned int gpus[MAX_GPUS];
	size_t ngpus;
	unsigned long long mib;
	unsigned long long release_ms;
	unsigned long long delay_open_ms; /* before opening anything: a framework importing */
	const char *kind;
	bool client, ctl_only, fork_child, exit_after_fork, setsid, supervise, mem_unknown;
	enum term_mode term;
	bool block_term, term_on_usr1;
	bool close_fds, thread_fds;
	unsigned int workers;
	const char *ready_file;
	const char *opens[MAX_GPUS];  /* --open: other device files (AMD/Intel) */
	size_t nopens;
};

/* Lines for the ready file beyond `pid=` (child=, worker=), bounded. */
struct ready {
	char buf[READY_MAX];
	size_t len;
};

/* Write end of the pipe to the supervisor, in a supervised holder: children
 * forked by that holder must close it, or the supervisor never sees EOF. */
static int supervisor_pipe = -1;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("gs-holder: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fputs("usage: gs-holder [--state DIR] [--dev-root DIR] [--gpu MINOR]... [--mib N]\n"
	      "                 [--release-ms N] [--client] [--ctl-only] [--fork-child]\n"
	      "                 [--exit-after-fork] [--workers N] [--ignore-term | --sigign-term |\n"
	      "                 --term-default] [--block-term] [--handle-term-on-usr1] [--setsid]\n"
	      "                 [--supervise] [--ready-file PATH] [--kind compute|graphics|mps]\n"
	      "                 [--mem-unknown] [--close-fds] [--thread-fds] [--note TEXT]\n"
	      "                 [--delay-open-ms N]\n"
	      "                 [--open PATH]...\n"
	      "                 [-- WORDS... (ignored: a realistic command line)]\n",
	      stderr);
	exit(2);
}

static unsigned long long parse_num(const char *opt, const char *s, unsigned long long max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (*s < '0' || *s > '9')
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		goto bad;
	return v;
bad:
	fprintf(stderr, "gs-holder: invalid value for --%s: '%s'\n", opt, s);
	usage();
}

static void ready_add(struct ready *r, const char *key, pid_t pid)
{
	int n = snprintf(r->buf + r->len, sizeof(r->buf) - r->len, "%s=%d\n", key, (int)pid);

	if (n < 0 || (size_t)n >= sizeof(r->buf) - r->len)
		die("ready file content too long");
	r->len += (size_t)n;
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write: %s", strerror(errno));
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* Writes the ready file atomically: tests poll for it, and must never read
 * a half-written one. */
static void write_ready(const char *path, pid_t pid, const struct ready *extra)
{
	char tmp[PATH_MAX];
	char line[32];
	int fd, n;

	if (!path)
		return;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		die("ready file path too long");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("open %s: %s", tmp, strerror(errno));
	n = snprintf(line, sizeof(line), "pid=%d\n", (int)pid);
	write_all(fd, line, (size_t)n);
	write_all(fd, extra->buf, extra->len);
	if (close(fd) < 0)
		die("close %s: %s", tmp, strerror(errno));
	if (rename(tmp, path) < 0)
		die("rename %s: %s", tmp, strerror(errno));
}

/* SIGTERM ends a holder (or supervisor) at once with status 0, so tests can
 * tell "stopped by TERM" from a crash by the exit code. */
static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

/* A program that catches SIGTERM and goes on (a graceful shutdown that
 * never ends): SIGTERM is delivered, only SIGKILL ends it. */
static void on_term_carry_on(int sig)
{
	(void)sig;
}

/* --handle-term-on-usr1: a process that installs its SIGTERM handler late
 * (after gpuslate planned): from SIGUSR1 on, SIGTERM ends it. */
static void on_usr1_install_term(int sig)
{
	struct sigaction sa;

	(void)sig;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
}

/* Only there so SIGCHLD interrupts sigsuspend(); reaping is done outside. */
static void on_chld(int sig)
{
	(void)sig;
}

static void setup_signals(enum term_mode term, bool block_term, bool term_on_usr1, sigset_t *wait_mask)
{
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	switch (term) {
	case TERM_EXIT: sa.sa_handler = on_term; break;
	case TERM_CATCH: sa.sa_handler = on_term_carry_on; break;
	case TERM_SIG_IGN: sa.sa_handler = SIG_IGN; break;
	case TERM_DEFAULT: sa.sa_handler = SIG_DFL; break;
	}
	if (sigaction(SIGTERM, &sa, NULL) < 0)
		die("sigaction: %s", strerror(errno));
	if (term_on_usr1) {
		sa.sa_handler = on_usr1_install_term;
		if (sigaction(SIGUSR1, &sa, NULL) < 0)
			die("sigaction: %s", strerror(errno));
	}
	sa.sa_handler = on_chld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		die("sigaction: %s", strerror(errno));
	/* SIGCHLD stays blocked except inside sigsuspend, so a child exiting
	 * between a waitpid() and the sigsuspend() cannot be missed. */
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	/* --block-term: SIGTERM stays pending for good (SigBlk), also while
	 * waiting; children inherit the mask. */
	if (block_term)
		sigaddset(&block, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &block, wait_mask) < 0)
		die("sigprocmask: %s", strerror(errno));
	sigdelset(wait_mask, SIGCHLD);
	if (block_term)
		sigaddset(wait_mask, SIGTERM);
	else
		sigdelset(wait_mask, SIGTERM);
}

/* Waits forever without spinning; reaps children so killed workers do not
 * linger as zombies (a real framework parent reaps its workers). */
static void wait_forever(const sigset_t *wait_mask) __attribute__((noreturn));
static void wait_forever(const sigset_t *wait_mask)
{
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		sigsuspend(wait_mask);
	}
}

/* ---- Holding ------------------------------------------------------------ */

/* --open: the fds of the other device files, for the ready file. */
static int open_fds[MAX_GPUS];

/* The device fds opened so far (--close-fds closes them). */
static int node_fds[MAX_GPUS + 2];
static size_t n_node_fds;

static void open_node(const struct opts *o, const char *name, bool map)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", o->dev_root, name) >= sizeof(path))
		die("path too long: %s/%s", o->dev_root, name);
	/* Close-on-exec like the real driver's fds; the fd is deliberately
	 * never closed: holding it is the point. */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM))
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	if (map) {
		/* One shared page, as CUDA maps the nodes. The file may be empty:
		 * a mapping beyond EOF is valid as long as it is never touched. */
		void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			die("mmap %s: %s", path, strerror(errno));
	}
	if (n_node_fds < sizeof(node_fds) / sizeof(node_fds[0]))
		node_fds[n_node_fds++] = fd;
}

/* True when nobody holds the lock of an existing ctx file: it is left over
 * from an earlier process with our pid (pid reuse), so it can be replaced. */
static bool ctx_is_stale(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool stale;

	if (fd < 0)
		return false;
	stale = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return stale;
}

static void create_ctx(const struct opts *o, int dirfd, unsigned int minor)
{
	char name[64], content[256];
	struct stat ns;
	bool pid_from_lock;
	int fd, n;

	snprintf(name, sizeof(name), "%d-%u", (int)getpid(), minor);
	pid_from_lock = getenv("FAKE_NVML_PID_FROM_LOCK") != NULL;
	if (pid_from_lock && stat("/proc/self/ns/pid", &ns) == 0)
		/* Each container has its own pid 1: the namespace tells them apart. */
		snprintf(name, sizeof(name), "%d-%u-ns%llu", (int)getpid(), minor, (unsigned long long)ns.st_ino);
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST && ctx_is_stale(dirfd, name)) {
		unlinkat(dirfd, name, 0);
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	}
	if (fd < 0)
		die("create %s/ctx/%s: %s", o->state, name, strerror(errno));
	/* Lock before writing: the fake NVML treats a complete, unlocked file
	 * as a released context and removes it, so the file must never be
	 * complete without the lock. An empty locked-or-not file is ignored. */
	if (flock(fd, LOCK_SH) < 0)
		die("flock %s: %s", name, strerror(errno));
	n = snprintf(content, sizeof(content), "pid=%d\ngpu=%u\nmib=%llu\nkind=%s\nrelease_ms=%llu\n%s",
		     (int)getpid(), minor, o->mib, o->kind, o->release_ms, o->mem_unknown ? "mem_unknown=1\n" : "");
	write_all(fd, content, (size_t)n);
	/* In a container getpid() is not the pid the host (and the driver) knows:
	 * the fake NVML reads the host's pid from the lock instead. */
	if (pid_from_lock)
		write_all(fd, "pid_from_lock=1\n", strlen("pid_from_lock=1\n"));
	/* fd stays open: the lock is the context's lifetime. */
}

static void open_nodes(const struct opts *o)
{
	char name[32];

	open_node(o, "nvidiactl", !o->client);
	if (!o->ctl_only) {
		open_node(o, "nvidia-uvm", !o->client);
		for (size_t i = 0; i < o->ngpus; i++) {
			snprintf(name, sizeof(name), "nvidia%u", o->gpus[i]);
			open_node(o, name, !o->client);
		}
	}
}

/* --thread-fds: a thread with an fd table of its own holds the nodes. */
struct node_thread {
	const struct opts *o;
	int ready[2];
};

static void *node_thread_main(void *arg)
{
	struct node_thread *t = arg;
	sigset_t all;

	/* Signals are the main thread's business. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* From here on this thread's fds are its own: the process's other
	 * threads (and /proc/PID/fd) do not see them. */
	if (unshare(CLONE_FILES) < 0)
		die("unshare(CLONE_FILES): %s", strerror(errno));
	open_nodes(t->o);
	write_all(t->ready[1], "R", 1);
	close(t->ready[1]);
	for (;;)
		pause();
	return NULL;
}

static void open_nodes_in_thread(const struct opts *o)
{
	static struct node_thread t;
	pthread_t th;
	char c;
	int e;

	t.o = o;
	if (pipe2(t.ready, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	e = pthread_create(&th, NULL, node_thread_main, &t);
	if (e)
		die("pthread_create: %s", strerror(e));
	while (read(t.ready[0], &c, 1) < 0)
		if (errno != EINTR)
			die("read: %s", strerror(errno));
	close(t.ready[0]);
}

/* --open PATH (relative: to the dev root): an AMD/Intel node, e.g.
 * dri/renderD129 or kfd. A compute holder maps it and holds a shared flock
 * on PATH.lock, which forked children inherit as they inherit the driver's
 * open file: the simulated driver (mkdrm.sh release) waits for an exclusive
 * lock to know that the last holder is gone. A client only
 * opens it. */
static void open_other(const struct opts *o, size_t i)
{
	char path[PATH_MAX];
	int fd;

	if (o->opens[i][0] == '/')
		snprintf(path, sizeof(path), "%s", o->opens[i]);
	else if ((size_t)snprintf(path, sizeof(path), "%s/%s", o->dev_root, o->opens[i]) >= sizeof(path))
		die("path too long: %s/%s", o->dev_root, o->opens[i]);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	if (!o->client) {
		void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);

		if (p == MAP_FAILED)
			die("mmap %s: %s", path, strerror(errno));
		/* The lock is on a file beside the node, not on the node: the
		 * simulated driver taking it must not become a holder itself. */
		char lock[PATH_MAX + 8];
		int lfd;

		snprintf(lock, sizeof(lock), "%s.lock", path);
		lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (lfd < 0 || flock(lfd, LOCK_SH) < 0)
			die("lock %s: %s", lock, strerror(errno));
	}
	open_fds[i] = fd;
}

static void hold(const struct opts *o)
{
	if (!o->dev_root)
		die("no dev root: use --dev-root or GPUSLATE_DEV_ROOT");
	for (size_t i = 0; i < o->nopens; i++)
		open_other(o, i);
	if (o->nopens && o->ngpus == 0)
		return; /* an AMD/Intel holder only */
	if (o->thread_fds) {
		open_nodes_in_thread(o);
	} else {
		open_nodes(o);
		/* --close-fds: the mappings stay, as after a close of the fds
		 * that made them; nothing in /proc/PID/fd shows the device. */
		for (size_t i = 0; o->close_fds && i < n_node_fds; i++)
			close(node_fds[i]);
	}
	if (o->client)
		return;
	if (!o->state)
		die("no state directory: use --state or FAKE_NVML_STATE");

	char path[PATH_MAX];
	int dirfd;
	if ((size_t)snprintf(path, sizeof(path), "%s/ctx", o->state) >= sizeof(path))
		die("path too long: %s/ctx", o->state);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		die("open %s: %s", path, strerror(errno));
	for (size_t i = 0; i < o->ngpus; i++)
		create_ctx(o, dirfd, o->gpus[i]);
	close(dirfd);
}

/* fork() for processes that inherit the holder: they keep every fd,
 * mapping and lock and just wait. Returns the child's pid in the parent. */
static pid_t fork_waiter(const sigset_t *wait_mask)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		if (supervisor_pipe >= 0)
			close(supervisor_pipe);
		wait_forever(wait_mask);
	}
	return pid;
}

/* A holder, from setup to waiting. Never returns. */
static void run_holder(const struct opts *o, const sigset_t *wait_mask) __attribute__((noreturn));
static void run_holder(const struct opts *o, const sigset_t *wait_mask)
{
	static struct ready extra; /* static: 64 KiB is too much for the stack */

	if (o->delay_open_ms) {
		/* A restarted PyTorch process imports for seconds before it
		 * opens the GPU: nothing of the device is seen meanwhile. */
		struct timespec ts = { (time_t)(o->delay_open_ms / 1000), (long)(o->delay_open_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	hold(o);
	for (size_t i = 0; i < o->nopens; i++) {
		int n = snprintf(extra.buf + extra.len, sizeof(extra.buf) - extra.len, "fd=%s:%d\n", o->opens[i],
				 open_fds[i]);

		if (n < 0 || (size_t)n >= sizeof(extra.buf) - extra.len)
			die("ready file content too long");
		extra.len += (size_t)n;
	}
	/* Workers form a process group led by the holder, as a framework's
	 * launcher does (torchrun, mpirun): gpuslate then stops the group with
	 * its leader. A session leader (--setsid) already leads its group. */
	if (o->workers && getpgrp() != getpid() && setpgid(0, 0) < 0)
		die("setpgid: %s", strerror(errno));
	if (o->fork_child || o->exit_after_fork)
		ready_add(&extra, "child", fork_waiter(wait_mask));
	for (unsigned int i = 0; i < o->workers; i++)
		ready_add(&extra, "worker", fork_waiter(wait_mask));

	if (supervisor_pipe >= 0) {
		/* Supervised: the supervisor writes the ready file. The leading
		 * 'R' tells it "set up", as opposed to EOF from a failed child. */
		write_all(supervisor_pipe, "R", 1);
		write_all(supervisor_pipe, extra.buf, extra.len);
		close(supervisor_pipe);
		supervisor_pipe = -1;
	} else {
		write_ready(o->ready_file, getpid(), &extra);
	}
	if (o->exit_after_fork)
		exit(0);
	wait_forever(wait_mask);
}

/* ---- Supervising --------------------------------------------------------- */

/* Starts a holder child and waits until it is set up. Returns its pid. */
static pid_t spawn_holder(const struct opts *o, const sigset_t *wait_mask, struct ready *extra)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		supervisor_pipe = p[1];
		run_holder(o, wait_mask);
	}
	close(p[1]);
	extra->len = 0;
	bool ok = false;
	for (;;) {
		ssize_t n = read(p[0], extra->buf + extra->len, sizeof(extra->buf) - 1 - extra->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read: %s", strerror(errno));
		if (n == 0)
			break;
		if (!ok && extra->len == 0) {
			/* Drop the marker byte. */
			ok = extra->buf[0] == 'R';
			memmove(extra->buf, extra->buf + 1, (size_t)n - 1);
			n--;
		}
		extra->len += (size_t)n;
		if (extra->len == sizeof(extra->buf) - 1)
			break;
	}
	close(p[0]);
	if (!ok)
		die("holder child %d failed during setup", (int)pid);
	return pid;
}

/* The respawning parent: holds nothing itself, restarts the holder child
 * whenever it dies and keeps the ready file's child= current. */
static void supervise(const struct opts *o, const sigset_t *wait_mask) __attribute__((noreturn));
static void supervise(const struct opts *o, const sigset_t *wait_mask)
{
	static struct ready extra, lines;
	pid_t child = spawn_holder(o, wait_mask, &extra);

	for (;;) {
		lines.len = 0;
		ready_add(&lines, "child", child);
		if (extra.len > sizeof(lines.buf) - lines.len)
			die("ready file content too long");
		memcpy(lines.buf + lines.len, extra.buf, extra.len);
		lines.len += extra.len;
		write_ready(o->ready_file, getpid(), &lines);

		bool dead = false;
		while (!dead) {
			pid_t w;
			while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
				if (w == child)
					dead = true;
			if (!dead)
				sigsuspend(wait_mask);
		}
		/* Back off a little, as service managers do (RestartSec=100ms). */
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		child = spawn_holder(o, wait_mask, &extra);
	}
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	enum { O_STATE = 256, O_DEV_ROOT, O_GPU, O_MIB, O_RELEASE_MS, O_MEM_UNKNOWN, O_CLIENT, O_CTL_ONLY,
	       O_FORK_CHILD, O_EXIT_AFTER_FORK, O_WORKERS, O_IGNORE_TERM, O_SIGIGN_TERM, O_TERM_DEFAULT,
	       O_BLOCK_TERM, O_TERM_ON_USR1, O_SETSID,
	       O_SUPERVISE, O_READY_FILE, O_KIND, O_NOTE, O_CLOSE_FDS, O_THREAD_FDS, O_DELAY_OPEN, O_OPEN };
	static const struct option longopts[] = {
		{ "state", required_argument, NULL, O_STATE },
		{ "dev-root", required_argument, NULL, O_DEV_ROOT },
		{ "gpu", required_argument, NULL, O_GPU },
		{ "mib", required_argument, NULL, O_MIB },
		{ "release-ms", required_argument, NULL, O_RELEASE_MS },
		{ "mem-unknown", no_argument, NULL, O_MEM_UNKNOWN },
		{ "client", no_argument, NULL, O_CLIENT },
		{ "ctl-only", no_argument, NULL, O_CTL_ONLY },
		{ "fork-child", no_argument, NULL, O_FORK_CHILD },
		{ "exit-after-fork", no_argument, NULL, O_EXIT_AFTER_FORK },
		{ "workers", required_argument, NULL, O_WORKERS },
		{ "ignore-term", no_argument, NULL, O_IGNORE_TERM },
		{ "sigign-term", no_argument, NULL, O_SIGIGN_TERM },
		{ "term-default", no_argument, NULL, O_TERM_DEFAULT },
		{ "block-term", no_argument, NULL, O_BLOCK_TERM },
		{ "handle-term-on-usr1", no_argument, NULL, O_TERM_ON_USR1 },
		{ "setsid", no_argument, NULL, O_SETSID },
		{ "supervise", no_argument, NULL, O_SUPERVISE },
		{ "ready-file", required_argument, NULL, O_READY_FILE },
		{ "kind", required_argument, NULL, O_KIND },
		{ "note", required_argument, NULL, O_NOTE },
		{ "close-fds", no_argument, NULL, O_CLOSE_FDS },
		{ "thread-fds", no_argument, NULL, O_THREAD_FDS },
		{ "delay-open-ms", required_argument, NULL, O_DELAY_OPEN },
		{ "open", required_argument, NULL, O_OPEN },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.state = getenv("FAKE_NVML_STATE"),
		.dev_root = getenv("GPUSLATE_DEV_ROOT"),
		.mib = 1024,
		.kind = "compute",
	};
	sigset_t wait_mask;
	int c;
	/* GS_HOLDER_ARGS: the options, split at blanks; the command line is
	 * then only for show, all of it (`exec -a python3 gs-holder -m vllm...`
	 * in make demo), so a holder can look like any program. */
	const char *env_args = getenv("GS_HOLDER_ARGS");
	char *env_copy = NULL, *env_argv[256];

	if (env_args) {
		char *save = NULL;
		int n = 0;

		env_copy = strdup(env_args);
		if (!env_copy)
			die("out of memory");
		env_argv[n++] = argv[0];
		for (char *t = strtok_r(env_copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
			if (n == (int)(sizeof(env_argv) / sizeof(env_argv[0])) - 1)
				die("GS_HOLDER_ARGS: too many words");
			env_argv[n++] = t;
		}
		env_argv[n] = NULL;
		argc = n;
		argv = env_argv;
		unsetenv("GS_HOLDER_ARGS");
	}

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_STATE: o.state = optarg; break;
		case O_DEV_ROOT: o.dev_root = optarg; break;
		case O_GPU:
			if (o.ngpus == MAX_GPUS)
				die("too many --gpu");
			o.gpus[o.ngpus++] = (unsigned int)parse_num("gpu", optarg, 247);
			break;
		case O_MIB: o.mib = parse_num("mib", optarg, 1ULL << 40); break;
		case O_RELEASE_MS: o.release_ms = parse_num("release-ms", optarg, ULLONG_MAX); break;
		case O_MEM_UNKNOWN: o.mem_unknown = true; break;
		case O_CLIENT: o.client = true; break;
		case O_CTL_ONLY: o.ctl_only = true; break;
		case O_FORK_CHILD: o.fork_child = true; break;
		case O_EXIT_AFTER_FORK: o.exit_after_fork = true; break;
		case O_WORKERS: o.workers = (unsigned int)parse_num("workers", optarg, MAX_WORKERS); break;
		case O_IGNORE_TERM: o.term = TERM_CATCH; break;
		case O_SIGIGN_TERM: o.term = TERM_SIG_IGN; break;
		case O_TERM_DEFAULT: o.term = TERM_DEFAULT; break;
		case O_BLOCK_TERM: o.block_term = true; break;
		case O_TERM_ON_USR1: o.term_on_usr1 = true; break;
		case O_SETSID: o.setsid = true; break;
		case O_SUPERVISE: o.supervise = true; break;
		case O_READY_FILE: o.ready_file = optarg; break;
		case O_KIND:
			if (strcmp(optarg, "compute") && strcmp(optarg, "graphics") && strcmp(optarg, "mps"))
				usage();
			o.kind = optarg;
			break;
		case O_NOTE: break; /* only there to be seen in the command line */
		case O_CLOSE_FDS: o.close_fds = true; break;
		case O_THREAD_FDS: o.thread_fds = true; break;
		case O_DELAY_OPEN: o.delay_open_ms = parse_num("delay-open-ms", optarg, 3600000); break;
		case O_OPEN:
			if (o.nopens == MAX_GPUS)
				die("too many --open");
			o.opens[o.nopens++] = optarg;
			break;
		default: usage();
		}
	}
	/* Words after "--" are ignored: they make the command line look like
	 * a real server's (python3 -m sglang.launch_server --model ...). */
	if (optind != argc && strcmp(argv[optind - 1], "--"))
		usage();
	if (o.ngpus == 0 && o.nopens == 0)
		o.gpus[o.ngpus++] = 0;
	if (o.close_fds && (o.client || o.thread_fds))
		die("--close-fds keeps only mappings: not with --client or --thread-fds");
	if (o.setsid && setsid() < 0)
		die("setsid: %s", strerror(errno));

	setup_signals(o.term, o.block_term, o.term_on_usr1, &wait_mask);
	if (o.supervise)
		supervise(&o, &wait_mask);
	run_holder(&o, &wait_mask);
}

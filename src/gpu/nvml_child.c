/* NVML in a helper process, so that a driver that hangs in the kernel cannot
 * hang gpuslate.
 *
 * A thread stuck in a driver ioctl sleeps uninterruptibly, and a process with
 * such a thread cannot finish exiting: whoever waits for it (a Slurm epilog,
 * a fleet run, a shell) waits for ever. Deadlines on threads bound the wait
 * for an answer, not the exit. So every NVML call runs in a child forked
 * (without exec: cheap, and the same image) at open; gpuslate sends it
 * requests over a socket and waits for each answer with a deadline. When one
 * does not come, gpuslate sends the child SIGKILL (it dies if the call ever
 * returns), forgets it and goes on to report; the child is left to the kernel.
 *
 * The deadline is per NVML call, not per request: the child announces every
 * call in a page shared with gpuslate (struct gs_nvml_trace), which also
 * says which call hung, on which GPU.
 *
 * The child keeps nothing of gpuslate's: its stdin, stdout and stderr are
 * /dev/null and every other inherited fd is closed, so a stuck child holds
 * no pipe a caller reads to its end and no lock (the reclaim lock, a fake
 * GPU context). It ignores the terminal's signals (gpuslate reports on
 * Ctrl-C and still needs it) and ends when gpuslate closes the socket or
 * dies (PR_SET_PDEATHSIG). */
#include "gpu/gpu.h"
#include "gpu/nvml.h"
#include "util/proctitle.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_DEFAULT_TIMEOUT_MS 5000u
/* A request that keeps making progress (many calls, each in time) still has
 * an end: this many deadlines in all. */
#define CHILD_REQUEST_DEADLINES 8u
/* The helper's socket, at a fixed fd once everything else is closed. */
#define CHILD_FD 3
/* No answer is larger: a process list of PROC_MAX_ENTRIES (65536) per kind. */
#define CHILD_MAX_REPLY (4u * 65536u * sizeof(struct gs_gpu_proc))

enum child_op { CO_INFO = 1, CO_MEMORY, CO_PROCESSES };

struct child_req_hdr {
	uint32_t op;
	uint32_t n;              /* GPU indices that follow */
};

struct child_reply_hdr {
	int32_t r;               /* 0 or -errno for the request as a whole */
	uint32_t len;            /* bytes that follow */
};

/* The child's first message, once NVML is open (or could not be). */
struct child_hello {
	int32_t r;
	uint32_t count;
	char driver_version[80];
	char err[256];
};

struct child_mem {
	int32_t r;
	struct gs_gpu_mem mem;
};

struct child_backend {
	struct gs_gpu_backend base;  /* first member: ops get it back by cast */
	int fd;                      /* our end of the socket, -1 once given up */
	bool hung;                   /* a call passed its deadline */
	unsigned timeout_ms;
	unsigned count;
	struct gs_nvml_trace *trace; /* shared with the child */
	char pci[GS_MAX_GPUS][32];   /* bus ids from info answers, for messages */
};

/* ---- both sides --------------------------------------------------------- */

/* Move exactly len bytes over the socket, out or in, blocking. In: -EPIPE
 * at end of file (the peer closed its end or is gone). */
static int socket_move(int fd, char *p, size_t len, bool out)
{
	while (len > 0) {
		/* MSG_NOSIGNAL: a peer that is gone is an error, not SIGPIPE. */
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n == 0 && !out)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_all(int fd, const void *buf, size_t len)
{
	/* send() only reads the buffer. */
	return socket_move(fd, (char *)(uintptr_t)buf, len, true);
}

/* ---- the child ------------------------------------------------------------ */

static int child_recv(int fd, void *buf, size_t len)
{
	return socket_move(fd, buf, len, false);
}

static int child_reply(int fd, int r, const void *payload, size_t len)
{
	struct child_reply_hdr h = { .r = r, .len = (uint32_t)len };
	int e = send_all(fd, &h, sizeof(h));

	return e < 0 || !len ? e : send_all(fd, payload, len);
}

/* Close every fd above keep. close_range(2) where the kernel has it (5.9),
 * else what /proc/self/fd lists, pass after pass until nothing is left. */
static void close_fds_above(int keep)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)keep + 1, ~0U, 0) == 0)
		return;
#endif
	for (bool closed = true; closed;) {
		DIR *d = opendir("/proc/self/fd");
		struct dirent *de;

		closed = false;
		if (!d)
			return;
		while ((de = readdir(d))) {
			uint32_t fd;

			if (gs_parse_u32(de->d_name, &fd) == 0 && fd > (uint32_t)keep && (int)fd != dirfd(d)) {
				close(fd);
				closed = true;
			}
		}
		closedir(d);
	}
}

/* Leave gpuslate's fds, signal handlers and terminal behind. */
static int child_detach(int sock, pid_t parent)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
	sigset_t none;
	int devnull;

	if (sock != CHILD_FD && dup2(sock, CHILD_FD) < 0)
		return -errno;
	close_fds_above(CHILD_FD);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		return -errno;
	for (int fd = 0; fd <= 2; fd++)
		if (fd != devnull && dup2(devnull, fd) < 0)
			return -errno;
	if (devnull > 2)
		close(devnull);

	for (size_t i = 0; i < GS_ARRAY_SIZE(ignored); i++)
		signal(ignored[i], SIG_IGN);
	signal(SIGALRM, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	(void)prctl(PR_SET_NAME, "gpuslate-nvml", 0, 0, 0);
	/* Gone before we could ask for the signal: nobody to serve. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		return -ESRCH;
	return 0;
}

static void child_serve(int fd, struct gs_gpu_backend *b, unsigned count)
{
	for (;;) {
		struct child_req_hdr h = { 0 };
		uint32_t idx[GS_MAX_GPUS] = { 0 };
		int r;

		if (child_recv(fd, &h, sizeof(h)) < 0 || h.n > GS_MAX_GPUS ||
		    child_recv(fd, idx, h.n * sizeof(idx[0])) < 0)
			return;
		for (uint32_t k = 0; k < h.n; k++)
			if (idx[k] >= count)
				return; /* not gpuslate talking */
		if (h.op == CO_INFO && h.n == 1) {
			struct gs_gpu g;

			memset(&g, 0, sizeof(g));
			r = b->ops->info(b, idx[0], &g);
			r = child_reply(fd, r, &g, r < 0 ? 0 : sizeof(g));
		} else if (h.op == CO_MEMORY) {
			struct child_mem m[GS_MAX_GPUS];

			memset(m, 0, h.n * sizeof(m[0]));
			for (uint32_t k = 0; k < h.n; k++)
				m[k].r = b->ops->memory(b, idx[k], &m[k].mem);
			r = child_reply(fd, 0, m, h.n * sizeof(m[0]));
		} else if (h.op == CO_PROCESSES && h.n == 1) {
			struct gs_gpu_proc *p = NULL;
			size_t n = 0;

			r = b->ops->processes(b, idx[0], &p, &n);
			r = child_reply(fd, r, p, r < 0 ? 0 : n * sizeof(*p));
			free(p);
		} else {
			return;
		}
		if (r < 0)
			return;
	}
}

static _Noreturn void child_main(int sock, pid_t parent, const struct gs_nvml_opts *opts, struct gs_nvml_trace *trace)
{
	struct child_hello hello;
	struct gs_gpu_backend *b = NULL;
	unsigned count = 0;

	/* Recognisable in the process table, and no longer carrying
	 * gpuslate's argv (its filters) for anyone to match. */
	(void)gs_proctitle_set("gpuslate-nvml");
	if (child_detach(sock, parent) < 0)
		_exit(1);
	memset(&hello, 0, sizeof(hello));
	hello.r = gs_nvml_open(opts, trace, &b, hello.err, sizeof(hello.err));
	if (hello.r == 0) {
		(void)b->ops->count(b, &count);
		hello.count = count;
		gs_strlcpy(hello.driver_version, b->driver_version, sizeof(hello.driver_version));
	}
	if (send_all(CHILD_FD, &hello, sizeof(hello)) == 0 && b)
		child_serve(CHILD_FD, b, count);
	/* gpuslate is done with us (or gone): shut NVML down and end, without
	 * exit handlers or stdio buffers that belong to gpuslate. */
	gs_gpu_backend_close(b);
	_exit(0);
}

/* ---- gpuslate's side ------------------------------------------------------ */

/* The words for a call that passed its deadline, from the shared trace. */
static void describe_hang(struct child_backend *cb, uint64_t waited_ns)
{
	const char *call = atomic_load_explicit(&cb->trace->call, memory_order_acquire);
	int gpu = atomic_load_explicit(&cb->trace->gpu, memory_order_relaxed);
	char where[80] = "", what[160];
	double secs = (double)waited_ns / 1e9;

	if (call && gpu >= 0 && (unsigned)gpu < GS_MAX_GPUS)
		snprintf(where, sizeof(where), cb->pci[gpu][0] ? "GPU %d (%s): " : "GPU %d: ", gpu, cb->pci[gpu]);
	if (call)
		snprintf(what, sizeof(what), "%s did not return within %.1f s", call, secs);
	else
		snprintf(what, sizeof(what), "the NVML helper did not answer within %.1f s", secs);
	snprintf(cb->base.error, sizeof(cb->base.error),
		 "%s%s: the GPU driver is hung; reboot or reset needed (NVML helper PID %d left to the kernel)", where,
		 what, (int)cb->base.helper_pid);
}

/* Stop talking to the child for good. A hung one gets SIGKILL, which ends it
 * if its call ever returns; it is not waited for. */
static void give_up(struct child_backend *cb, bool hung)
{
	if (cb->fd >= 0) {
		close(cb->fd);
		cb->fd = -1;
	}
	if (hung) {
		cb->hung = true;
		(void)kill(cb->base.helper_pid, SIGKILL);
	}
}

/* The socket closes before the exit completes: wait for it, briefly. */
#define CHILD_DEATH_WAIT_MS 1000u

static void describe_death(struct child_backend *cb)
{
	uint64_t end = gs_now_ms() + CHILD_DEATH_WAIT_MS;
	int st = 0;
	pid_t r;

	while ((r = waitpid(cb->base.helper_pid, &st, WNOHANG)) == 0 && gs_now_ms() < end)
		(void)poll(NULL, 0, 1);

	if (r == cb->base.helper_pid && WIFSIGNALED(st))
		snprintf(cb->base.error, sizeof(cb->base.error), "the NVML helper (PID %d) was killed by signal %d (%s)",
			 (int)cb->base.helper_pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(cb->base.error, sizeof(cb->base.error), "the NVML helper (PID %d) ended unexpectedly",
			 (int)cb->base.helper_pid);
}

/* Read exactly len bytes of an answer to a request sent at start_ns. The
 * deadline runs from the start of the NVML call in progress (or the end of
 * the last one): a child that calls on, each call in time, is waited for, up
 * to CHILD_REQUEST_DEADLINES deadlines in all. */
static int parent_recv(struct child_backend *cb, void *buf, size_t len, uint64_t start_ns)
{
	uint64_t timeout_ns = (uint64_t)cb->timeout_ms * 1000000ULL;
	uint64_t cap = start_ns + timeout_ns * CHILD_REQUEST_DEADLINES;
	char *p = buf;

	while (len > 0) {
		uint64_t progress = atomic_load_explicit(&cb->trace->progress_ns, memory_order_relaxed);
		uint64_t deadline = (progress > start_ns ? progress : start_ns) + timeout_ns;
		uint64_t now = gs_now_ns();
		struct pollfd pfd = { .fd = cb->fd, .events = POLLIN };
		ssize_t n;
		int pr;

		if (deadline > cap)
			deadline = cap;
		if (now >= deadline) {
			describe_hang(cb, now - (progress > start_ns ? progress : start_ns));
			give_up(cb, true);
			return -ETIMEDOUT;
		}
		pr = poll(&pfd, 1, (int)((deadline - now + 999999ULL) / 1000000ULL));
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr <= 0)
			continue; /* the deadline again: the child may have moved on */
		n = recv(cb->fd, p, len, MSG_DONTWAIT);
		/* ECONNRESET: it died with our request unread. */
		if (n == 0 || (n < 0 && errno == ECONNRESET)) {
			describe_death(cb);
			give_up(cb, false);
			return -EIO;
		}
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One request and its answer: *ret_payload (malloc'd, *ret_len bytes) and
 * the child's status for it in *ret_r. Returns 0, or -errno when the
 * exchange itself failed (-ETIMEDOUT: hung; -EIO: the child died). */
static int exchange(struct child_backend *cb, enum child_op op, const unsigned *idx, size_t n, int *ret_r,
		    void **ret_payload, size_t *ret_len)
{
	struct {
		struct child_req_hdr h;
		uint32_t idx[GS_MAX_GPUS];
	} q;
	struct child_reply_hdr rh = { 0 };
	_cleanup_free_ void *payload = NULL;
	uint64_t start = gs_now_ns();
	int r;

	if (cb->fd < 0)
		return cb->hung ? -ETIMEDOUT : -EIO;
	if (n > GS_MAX_GPUS)
		return -EINVAL;
	for (size_t k = 0; k < n; k++) {
		if (idx[k] >= cb->count)
			return -EINVAL;
		q.idx[k] = idx[k];
	}
	q.h = (struct child_req_hdr){ .op = op, .n = (uint32_t)n };
	r = send_all(cb->fd, &q, sizeof(q.h) + n * sizeof(q.idx[0]));
	if (r < 0) {
		describe_death(cb);
		give_up(cb, false);
		return -EIO;
	}
	r = parent_recv(cb, &rh, sizeof(rh), start);
	if (r < 0)
		return r;
	if (rh.len > CHILD_MAX_REPLY) {
		snprintf(cb->base.error, sizeof(cb->base.error), "the NVML helper (PID %d) sent a malformed answer",
			 (int)cb->base.helper_pid);
		give_up(cb, true);
		return -EPROTO;
	}
	if (rh.len) {
		payload = malloc(rh.len);
		if (!payload) {
			/* The unread answer would be taken for the next one. */
			snprintf(cb->base.error, sizeof(cb->base.error), "out of memory reading the NVML helper's answer");
			give_up(cb, true);
			return -ENOMEM;
		}
		r = parent_recv(cb, payload, rh.len, start);
		if (r < 0)
			return r;
	}
	*ret_r = rh.r;
	*ret_payload = GS_TAKE_PTR(payload);
	*ret_len = rh.len;
	return 0;
}

static int child_count(struct gs_gpu_backend *b, unsigned *ret)
{
	struct child_backend *cb = (struct child_backend *)b;

	if (cb->fd < 0)
		return cb->hung ? -ETIMEDOUT : -EIO;
	*ret = cb->count;
	return 0;
}

static int child_info(struct gs_gpu_backend *b, unsigned i, struct gs_gpu *ret)
{
	struct child_backend *cb = (struct child_backend *)b;
	_cleanup_free_ void *p = NULL;
	size_t len = 0;
	int r, cr = 0;

	r = exchange(cb, CO_INFO, &i, 1, &cr, &p, &len);
	if (r < 0)
		return r;
	if (cr < 0)
		return cr;
	if (len != sizeof(*ret))
		return -EPROTO;
	memcpy(ret, p, sizeof(*ret));
	gs_strlcpy(cb->pci[i], ret->pci_bus_id, sizeof(cb->pci[i]));
	return 0;
}

static int child_memory_many(struct gs_gpu_backend *b, const unsigned *idx, size_t n, struct gs_gpu_mem *ret,
			     int *errs)
{
	struct child_backend *cb = (struct child_backend *)b;
	_cleanup_free_ void *p = NULL;
	const struct child_mem *m;
	size_t len = 0;
	int r, cr = 0;

	r = exchange(cb, CO_MEMORY, idx, n, &cr, &p, &len);
	if (r < 0)
		return r;
	if (cr < 0)
		return cr;
	if (len != n * sizeof(*m))
		return -EPROTO;
	m = p;
	for (size_t k = 0; k < n; k++) {
		errs[k] = m[k].r;
		ret[k] = m[k].mem;
	}
	return 0;
}

static int child_memory(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_mem *ret)
{
	int err = 0, r = child_memory_many(b, &i, 1, ret, &err);

	return r < 0 ? r : err;
}

static int child_processes(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_proc **ret, size_t *ret_n)
{
	struct child_backend *cb = (struct child_backend *)b;
	void *p = NULL;
	size_t len = 0;
	int r, cr = 0;

	r = exchange(cb, CO_PROCESSES, &i, 1, &cr, &p, &len);
	if (r < 0)
		return r;
	if (cr < 0 || len % sizeof(struct gs_gpu_proc)) {
		free(p);
		return cr < 0 ? cr : -EPROTO;
	}
	*ret = p;
	*ret_n = len / sizeof(struct gs_gpu_proc);
	return 0;
}

static void child_backend_free(struct child_backend *cb)
{
	if (!cb)
		return;
	if (cb->fd >= 0) {
		/* End of file tells the child to shut NVML down and end. It is
		 * reaped here if already gone, else by init after we exit:
		 * waiting for nvmlShutdown would only slow every command. */
		close(cb->fd);
		cb->fd = -1;
	}
	if (!cb->hung && cb->base.helper_pid > 0)
		(void)waitpid(cb->base.helper_pid, NULL, WNOHANG);
	if (cb->trace)
		munmap(cb->trace, sizeof(*cb->trace));
	free(cb);
}

static void child_close(struct gs_gpu_backend *b)
{
	child_backend_free((struct child_backend *)b);
}

static const struct gs_gpu_backend_ops child_ops = {
	.name = "nvml",
	.count = child_count,
	.info = child_info,
	.memory = child_memory,
	.memory_many = child_memory_many,
	.processes = child_processes,
	.close = child_close,
};

int gs_nvml_child_open(const struct gs_nvml_opts *opts, struct gs_gpu_backend **ret, char *errbuf, size_t errlen)
{
	static const struct gs_nvml_opts defaults;
	struct child_backend *cb;
	struct child_hello hello;
	pid_t parent = getpid(), pid;
	int sv[2], r;

	if (!ret)
		return -EINVAL;
	if (!opts)
		opts = &defaults;
	if (errbuf && errlen > 0)
		errbuf[0] = '\0';
	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	cb->base.ops = &child_ops;
	cb->fd = -1;
	cb->timeout_ms = opts->call_timeout_ms ? opts->call_timeout_ms : CHILD_DEFAULT_TIMEOUT_MS;
	cb->trace = mmap(NULL, sizeof(*cb->trace), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cb->trace == MAP_FAILED) {
		r = -errno;
		cb->trace = NULL;
		goto fail;
	}
	atomic_init(&cb->trace->call, NULL);
	atomic_init(&cb->trace->gpu, -1);
	atomic_init(&cb->trace->progress_ns, 0);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		goto fail;
	}
	/* Our stdio buffers would be flushed twice if the child ever ran
	 * them: it never does (_exit only), but empty them anyway. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		goto fail;
	}
	if (pid == 0) {
		struct gs_nvml_trace *trace = cb->trace;

		/* gpuslate's side of the backend is not the child's. */
		free(cb);
		close(sv[0]);
		child_main(sv[1], parent, opts, trace);
	}
	close(sv[1]);
	cb->fd = sv[0];
	cb->base.helper_pid = pid;
	memset(&hello, 0, sizeof(hello));

	r = parent_recv(cb, &hello, sizeof(hello), gs_now_ns());
	if (r < 0) {
		if (errbuf && errlen > 0)
			gs_strlcpy(errbuf, cb->base.error, errlen);
		goto fail;
	}
	hello.err[sizeof(hello.err) - 1] = '\0';
	hello.driver_version[sizeof(hello.driver_version) - 1] = '\0';
	if (hello.r < 0) {
		r = hello.r;
		if (errbuf && errlen > 0)
			gs_strlcpy(errbuf, hello.err, errlen);
		goto fail;
	}
	cb->count = hello.count < GS_MAX_GPUS ? hello.count : GS_MAX_GPUS;
	gs_strlcpy(cb->base.driver_version, hello.driver_version, sizeof(cb->base.driver_version));
	*ret = &cb->base;
	return 0;
fail:
	child_backend_free(cb);
	return r;
}

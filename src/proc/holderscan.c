#include "proc/holderscan.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The kernel's record for getdents64 (glibc only wraps it since 2.30). */
struct gs_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

#define DIRBUF_SIZE (32 * 1024)
#define MAPSBUF_SIZE (64 * 1024)

struct scan_ctx {
	struct gs_devset *ds;
	bool read_maps;
	char *procbuf;  /* getdents64 of /proc; live across the whole pass */
	char *fdbuf;    /* getdents64 of one fd directory, reused */
	char *mapsbuf;  /* one read window of a maps file, reused */
	struct gs_scan_proc *procs;
	size_t n_procs, cap_procs;
	pid_t *denied;
	size_t n_denied, cap_denied;
	size_t n_scanned;
};

static bool is_gone(int e)
{
	/* The process (or one fd of it) went away between listing and opening. */
	return e == ENOENT || e == ESRCH;
}

static bool is_fatal(int e)
{
	/* Our own resource problems: a scan that hides them could miss holders. */
	return e == ENOMEM || e == EMFILE || e == ENFILE;
}

static ssize_t getdents(int fd, char *buf, size_t size)
{
	long n = syscall(SYS_getdents64, fd, buf, size);

	return n < 0 ? -errno : n;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int parse_hex(const char **pp, uint64_t max, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;

	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			break;
		if (v > (max >> 4))
			return -ERANGE;
		v = v << 4 | d;
	}
	if (p == *pp || v > max)
		return -EINVAL;
	*pp = p;
	*ret = v;
	return 0;
}

static int parse_dec(const char **pp, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;

	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (p == *pp)
		return -EINVAL;
	*pp = p;
	*ret = v;
	return 0;
}

/* "start-end perms offset major:minor inode [path]" (proc_pid_maps(5)). */
int gs_parse_maps_line(const char *line, dev_t *ret_dev, ino_t *ret_ino)
{
	const char *p = line;
	uint64_t v, maj, min, ino;

	if (!line)
		return -EINVAL;
	if (parse_hex(&p, UINT64_MAX, &v) < 0 || *p++ != '-')
		return -EINVAL;
	if (parse_hex(&p, UINT64_MAX, &v) < 0 || *p++ != ' ')
		return -EINVAL;
	for (int i = 0; i < 4; i++, p++)
		if (*p == '\0' || *p == ' ')
			return -EINVAL;
	if (*p++ != ' ')
		return -EINVAL;
	if (parse_hex(&p, UINT64_MAX, &v) < 0 || *p++ != ' ')
		return -EINVAL;
	/* Linux majors are 12 bits and minors 20 bits. */
	if (parse_hex(&p, 0xfff, &maj) < 0 || *p++ != ':')
		return -EINVAL;
	if (parse_hex(&p, 0xfffff, &min) < 0 || *p++ != ' ')
		return -EINVAL;
	if (parse_dec(&p, &ino) < 0)
		return -EINVAL;
	if (*p != '\0' && *p != ' ' && *p != '\n')
		return -EINVAL;
	if (ino == 0)
		return -EINVAL; /* anonymous mapping */
	*ret_dev = makedev((unsigned)maj, (unsigned)min);
	*ret_ino = (ino_t)ino;
	return 0;
}

static void match_maps_line(struct scan_ctx *c, const char *line, struct gs_scan_proc *p)
{
	dev_t dev;
	ino_t ino;
	unsigned minor = 0;

	if (gs_parse_maps_line(line, &dev, &ino) < 0)
		return;
	switch (gs_devset_classify_ino(c->ds, dev, ino, &minor)) {
	case GS_NODE_GPU:
		gs_minorset_add(&p->map_gpus, minor);
		break;
	case GS_NODE_CTL:
		p->map_ctl = true;
		break;
	case GS_NODE_UVM:
		p->map_uvm = true;
		break;
	default:
		break;
	}
}

/* Read dirfd/maps. Returns 0 (maps_denied set when unreadable), -ESRCH when
 * the process is gone, or a fatal -errno. */
static int scan_maps(struct scan_ctx *c, int dirfd, struct gs_scan_proc *p)
{
	_cleanup_close_ int fd = -1;
	char *buf = c->mapsbuf;
	size_t have = 0;
	bool skipping = false; /* inside a line longer than the buffer */

	fd = openat(dirfd, "maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (is_gone(errno))
			return -ESRCH;
		if (is_fatal(errno))
			return -errno;
		p->maps_denied = true;
		return 0;
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, MAPSBUF_SIZE - 1 - have);
		char *q, *end, *nl;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (is_gone(errno))
				return -ESRCH;
			p->maps_denied = true;
			return 0;
		}
		if (n == 0) {
			if (have > 0 && !skipping) {
				buf[have] = '\0';
				match_maps_line(c, buf, p);
			}
			return 0;
		}
		have += (size_t)n;
		end = buf + have;
		for (q = buf; (nl = memchr(q, '\n', (size_t)(end - q))); q = nl + 1) {
			*nl = '\0';
			if (!skipping)
				match_maps_line(c, q, p);
			skipping = false;
		}
		have = (size_t)(end - q);
		if (have == MAPSBUF_SIZE - 1) {
			/* No newline in a full window: dev and inode sit at the
			 * start of the line, so match it now and drop the rest. */
			buf[have] = '\0';
			if (!skipping)
				match_maps_line(c, buf, p);
			skipping = true;
			have = 0;
		} else if (have > 0 && q != buf) {
			memmove(buf, q, have);
		}
	}
}

/* List dirfd/fd and classify every fd by the identity of what it points to.
 * Returns 0, -ESRCH (gone), -EACCES (not readable), or a fatal -errno.
 * *ret_entries counts the fds listed, NVIDIA or not. */
static int scan_fds(struct scan_ctx *c, int dirfd, struct gs_scan_proc *p, size_t *ret_entries)
{
	_cleanup_close_ int fd = -1;
	size_t entries = 0;
	bool denied = false;

	fd = openat(dirfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (is_gone(e))
			return -ESRCH;
		return is_fatal(e) ? -e : -EACCES;
	}
	for (;;) {
		ssize_t n = getdents(fd, c->fdbuf, DIRBUF_SIZE);

		if (n < 0) {
			if (is_gone((int)-n))
				return -ESRCH;
			return is_fatal((int)-n) ? (int)n : -EACCES;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct gs_dirent64 *de = (struct gs_dirent64 *)(c->fdbuf + off);
			struct statx stx;
			struct stat st;
			enum gs_node_kind k;
			unsigned minor = 0;
			int r;

			off += de->d_reclen;
			if (de->d_name[0] < '0' || de->d_name[0] > '9')
				continue;
			entries++;
			/* Follows the magic link to the open file. DONT_SYNC: a
			 * network or FUSE file must not make the scan wait on its
			 * server; our nodes' identities never need revalidation. */
			if (statx(fd, de->d_name, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &stx) < 0) {
				int e = errno;

				if (e == EACCES || e == EPERM)
					denied = true;
				else if (is_fatal(e))
					return -e;
				continue; /* closed meanwhile, or an fd we cannot stat */
			}
			memset(&st, 0, sizeof(st));
			st.st_mode = stx.stx_mode;
			st.st_ino = (ino_t)stx.stx_ino;
			st.st_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
			st.st_rdev = makedev(stx.stx_rdev_major, stx.stx_rdev_minor);
			k = gs_devset_classify_stat(c->ds, &st, &minor);
			if (k == GS_NODE_NONE)
				continue;
			p->n_fds++;
			switch (k) {
			case GS_NODE_GPU:
				gs_minorset_add(&p->fd_gpus, minor);
				break;
			case GS_NODE_CTL:
				p->fd_ctl = true;
				break;
			case GS_NODE_UVM:
				p->fd_uvm = true;
				break;
			default:
				break;
			}
			/* So that mappings of this node match, here and in every
			 * later process, even when it was not under the dev root
			 * (a container's own node). */
			r = gs_devset_add(c->ds, st.st_dev, st.st_ino, k, minor);
			if (r < 0)
				return r;
		}
	}
	*ret_entries = entries;
	return denied ? -EACCES : 0;
}

/* The leader of a process whose main thread exited is a zombie with no
 * files or mm while its other threads run on: read those through the first
 * other thread whose fd table lists anything. On success *ret_dirfd is that
 * thread's directory (caller closes), or -1 when there is none. */
static int scan_threads(struct scan_ctx *c, int pid_fd, pid_t pid, struct gs_scan_proc *p, int *ret_dirfd)
{
	_cleanup_close_ int task_fd = -1;
	char buf[4096];

	*ret_dirfd = -1;
	task_fd = openat(pid_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (task_fd < 0)
		return is_fatal(errno) ? -errno : 0;
	for (;;) {
		ssize_t n = getdents(task_fd, buf, sizeof(buf));

		if (n <= 0)
			return n < 0 && is_fatal((int)-n) ? (int)n : 0;
		for (ssize_t off = 0; off < n;) {
			struct gs_dirent64 *de = (struct gs_dirent64 *)(buf + off);
			pid_t tid;
			size_t entries = 0;
			int tfd, r;

			off += de->d_reclen;
			if (!all_digits(de->d_name) || gs_parse_pid(de->d_name, &tid) < 0 || tid == pid)
				continue;
			tfd = openat(task_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (tfd < 0) {
				if (is_fatal(errno))
					return -errno;
				continue;
			}
			r = scan_fds(c, tfd, p, &entries);
			if (r == 0 && entries > 0) {
				*ret_dirfd = tfd;
				return 0;
			}
			close(tfd);
			if (r == -EACCES || (r < 0 && r != -ESRCH))
				return r;
			/* A thread that left mid-listing: forget what it showed. */
			*p = (struct gs_scan_proc){ .pid = pid };
		}
	}
}

static int push_denied(struct scan_ctx *c, pid_t pid)
{
	if (c->n_denied == c->cap_denied) {
		size_t ncap = c->cap_denied ? c->cap_denied * 2 : 16;
		pid_t *n = realloc(c->denied, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->denied = n;
		c->cap_denied = ncap;
	}
	c->denied[c->n_denied++] = pid;
	return 0;
}

static int push_proc(struct scan_ctx *c, const struct gs_scan_proc *p)
{
	if (c->n_procs == c->cap_procs) {
		size_t ncap = c->cap_procs ? c->cap_procs * 2 : 16;
		struct gs_scan_proc *n = realloc(c->procs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->procs = n;
		c->cap_procs = ncap;
	}
	c->procs[c->n_procs++] = *p;
	return 0;
}

static int scan_pid(struct scan_ctx *c, int proc_fd, const char *name, pid_t pid)
{
	_cleanup_close_ int pid_fd = -1;
	_cleanup_close_ int thread_fd = -1;
	struct gs_scan_proc p = { .pid = pid };
	size_t entries = 0;
	int maps_dir, r;

	/* The directory fd pins this process: if the PID is reused later in
	 * the pass, reads through it fail instead of reading the new one. */
	pid_fd = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pid_fd < 0)
		return is_gone(errno) || !is_fatal(errno) ? 0 : -errno;
	c->n_scanned++;
	r = scan_fds(c, pid_fd, &p, &entries);
	if (r == 0 && entries == 0)
		r = scan_threads(c, pid_fd, pid, &p, &thread_fd);
	if (r == -ESRCH)
		return 0;
	if (r == -EACCES) {
		/* Reported as denied; NVIDIA fds seen before a refused one
		 * still make it a holder. */
		r = push_denied(c, pid);
		if (r < 0)
			return r;
	} else if (r < 0) {
		return r;
	}
	if (p.n_fds == 0)
		return 0;
	maps_dir = thread_fd >= 0 ? thread_fd : pid_fd;
	if (c->read_maps) {
		r = scan_maps(c, maps_dir, &p);
		if (r == -ESRCH)
			return 0; /* exited meanwhile: its fds are gone too */
		if (r < 0)
			return r;
	}
	return push_proc(c, &p);
}

static int cmp_proc(const void *a, const void *b)
{
	pid_t x = ((const struct gs_scan_proc *)a)->pid, y = ((const struct gs_scan_proc *)b)->pid;

	return (x > y) - (x < y);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int gs_scan_holders(const struct gs_root *root, struct gs_devset *ds,
		    const struct gs_scan_opts *opts, struct gs_scan_result *ret)
{
	static const struct gs_scan_opts defaults = { .read_maps = true };
	struct scan_ctx c = { .ds = ds };
	_cleanup_free_ char *bufs = NULL;
	_cleanup_close_ int dir_fd = -1;
	int r = 0;

	if (!root || !ds || !ret)
		return -EINVAL;
	if (!opts)
		opts = &defaults;
	c.read_maps = opts->read_maps;
	bufs = malloc(2 * DIRBUF_SIZE + MAPSBUF_SIZE);
	if (!bufs)
		return -ENOMEM;
	c.procbuf = bufs;
	c.fdbuf = bufs + DIRBUF_SIZE;
	c.mapsbuf = bufs + 2 * DIRBUF_SIZE;

	/* A fresh open file description: the root's fd offset stays untouched. */
	dir_fd = openat(root->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = getdents(dir_fd, c.procbuf, DIRBUF_SIZE);

		if (n < 0) {
			r = (int)n;
			goto fail;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct gs_dirent64 *de = (struct gs_dirent64 *)(c.procbuf + off);
			pid_t pid;

			off += de->d_reclen;
			if (!all_digits(de->d_name) || gs_parse_pid(de->d_name, &pid) < 0)
				continue;
			if (opts->skip_pid > 0 && pid == opts->skip_pid)
				continue;
			r = scan_pid(&c, dir_fd, de->d_name, pid);
			if (r < 0)
				goto fail;
		}
	}
	if (c.n_procs > 1)
		qsort(c.procs, c.n_procs, sizeof(*c.procs), cmp_proc);
	if (c.n_denied > 1)
		qsort(c.denied, c.n_denied, sizeof(*c.denied), cmp_pid);
	ret->procs = c.procs;
	ret->n_procs = c.n_procs;
	ret->n_scanned = c.n_scanned;
	ret->n_denied = c.n_denied;
	ret->denied = c.denied;
	return 0;
fail:
	free(c.procs);
	free(c.denied);
	return r;
}

void gs_scan_result_free(struct gs_scan_result *r)
{
	if (!r)
		return;
	free(r->procs);
	free(r->denied);
	r->procs = NULL;
	r->denied = NULL;
	r->n_procs = r->n_scanned = r->n_denied = 0;
}

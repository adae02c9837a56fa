#include "proc/holderscan.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/kcmp.h>
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
#define LINKBUF_SIZE PATH_MAX

/* Work shared by the scan threads. The caller's devset is only appended to
 * (gs_devset_add), under mu; each worker classifies against its own copy
 * (view), brought up to date under mu, so the hot path takes no lock. */
struct scan_shared {
	struct gs_devset *ds;
	pthread_mutex_t mu;    /* guards ds */
	int proc_fd;
	bool read_maps;
	int shadow_fd;         /* fdinfo fixtures, -1: none */
	pid_t skip_pid;
	const pid_t *nvml_pids; /* sorted; gs_scan_opts' listed */
	size_t n_nvml_pids;
	/* The dev root as /proc/PID/fd links write it (symlinks resolved). */
	char dev_prefix[PATH_MAX];
	/* PIDs under proc_fd are ours (kcmp can compare their threads). */
	bool own_pidns;
	/* The pid queue: filled by the lister while the workers already scan. */
	pthread_mutex_t qmu;
	pthread_cond_t qcond;
	pid_t *pids;           /* capacity cap, fixed: workers index it unlocked */
	size_t cap;
	size_t published;      /* pids[0..published) are ready (under qmu) */
	size_t next;           /* next pid to hand out (under qmu) */
	bool listed;           /* the lister is done (under qmu) */
	atomic_int error;      /* first fatal -errno; workers stop on it */
};

struct scan_worker {
	struct scan_shared *sh;
	struct gs_devset view; /* private copy of sh->ds */
	char *fdbuf;           /* getdents64 of one fd directory, reused */
	char *mapsbuf;         /* one read window of a maps file, reused */
	char *linkbuf;         /* one fd's link text, reused */
	struct gs_scan_proc *procs;
	size_t n_procs, cap_procs;
	pid_t *denied;
	size_t n_denied, cap_denied;
	size_t n_scanned;
	int error;
	pthread_t thread;
	bool started;
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

bool gs_scan_link_is_candidate(const char *link, size_t len, const char *dev_prefix)
{
	size_t n = dev_prefix ? strlen(dev_prefix) : 0;

	if (len >= 5 && !memcmp(link, "/dev/", 5))
		return true;
	/* A dev root of "/" (or "") would make every path a candidate. */
	return n > 1 && len > n && !memcmp(link, dev_prefix, n) && link[n] == '/';
}

static bool is_listed(const struct scan_shared *sh, pid_t pid)
{
	size_t lo = 0, hi = sh->n_nvml_pids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sh->nvml_pids[mid] == pid)
			return true;
		if (sh->nvml_pids[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
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

/* Bring the private view up to date with the shared devset. Caller holds mu.
 * Identities are only ever appended, so copying the tail is enough. */
static int view_sync_locked(struct scan_worker *w)
{
	const struct gs_devset *ds = w->sh->ds;

	for (size_t i = w->view.n_ids; i < ds->n_ids; i++) {
		const struct gs_node_id *id = &ds->ids[i];
		int r = gs_devset_add(&w->view, id->dev, id->ino, id->kind, id->minor);

		if (r < 0)
			return r;
	}
	return 0;
}

/* A node identity seen through an fd and not known yet (e.g. a container's
 * own /dev/nvidia0): shared, so that its mappings match in every process. */
static int learn(struct scan_worker *w, dev_t dev, ino_t ino, enum gs_node_kind kind, unsigned minor)
{
	int r;

	pthread_mutex_lock(&w->sh->mu);
	r = gs_devset_add(w->sh->ds, dev, ino, kind, minor);
	if (r == 0)
		r = view_sync_locked(w);
	pthread_mutex_unlock(&w->sh->mu);
	return r;
}

static void match_maps_line(const struct gs_devset *view, const char *line, struct gs_scan_proc *p)
{
	dev_t dev;
	ino_t ino;
	unsigned minor = 0;

	if (gs_parse_maps_line(line, &dev, &ino) < 0)
		return;
	switch (gs_devset_classify_ino(view, dev, ino, &minor)) {
	case GS_NODE_GPU:
		gs_minorset_add(&p->map_gpus, minor);
		break;
	case GS_NODE_CTL:
		p->map_ctl = true;
		break;
	case GS_NODE_UVM:
		p->map_uvm = true;
		break;
	case GS_NODE_DRM:
		gs_minorset_add(&p->drm_map_gpus, minor);
		break;
	case GS_NODE_KFD:
		p->map_kfd = true;
		break;
	default:
		break;
	}
}

/* Count one DRM fd's client in p->drm, and note the fd for the wait loop's
 * cheap re-reads (proc/drm_fdwatch.h). The fdinfo is read only for an fd
 * whose identity was just established, and checked against that inode: an
 * fd number reused meanwhile is -ESTALE, counted as an fd without figures
 * (unknown, never smaller). An fd that is gone by then (closed, or its
 * process exited: -ENOENT, -ESRCH) holds nothing any more and is not
 * counted. Returns 0 or -ENOMEM. */
static int note_drm_client(const struct scan_worker *w, struct gs_scan_proc *p, int fd, ino_t ino, unsigned gpu)
{
	struct gs_drm_fdinfo fi;
	int r = gs_drm_fdinfo_read(w->sh->proc_fd, w->sh->shadow_fd, p->pid, fd, ino, &fi);
	/* An fd on this GPU's node whose fdinfo names no PCI device
	 * (drm-pdev) has figures that belong to no GPU: it counts as an fd
	 * without usage stats, so the GPU's figure is unknown, not smaller. */
	bool usable = r == 0 && fi.pdev_known;
	struct gs_drm_fdref ref = { .pid = p->pid, .fd = fd, .ino = ino, .gpu = gpu, .no_stats = !usable };

	if (r == -ENOMEM)
		return r;
	if (r == -ENOENT || r == -ESRCH)
		return 0;
	r = gs_drm_usage_add(&p->drm, usable ? &fi : NULL);
	if (r == 0)
		r = gs_drm_usage_note_fd(&p->drm, &ref);
	return r;
}

/* Read the maps beside the fd directory fd_dir ("../maps": the parent of an
 * open /proc/PID/fd is that same process's directory even if the PID is
 * reused meanwhile, so this never reads another process). Returns 0
 * (maps_denied set when unreadable), -ESRCH when the process is gone, or a
 * fatal -errno. */
static int scan_maps(struct scan_worker *w, int fd_dir, struct gs_scan_proc *p)
{
	_cleanup_close_ int fd = -1;
	char *buf = w->mapsbuf;
	size_t have = 0;
	bool skipping = false; /* inside a line longer than the buffer */
	int r;

	/* Identities other workers learned meanwhile. */
	pthread_mutex_lock(&w->sh->mu);
	r = view_sync_locked(w);
	pthread_mutex_unlock(&w->sh->mu);
	if (r < 0)
		return r;

	fd = openat(fd_dir, "../maps", O_RDONLY | O_CLOEXEC);
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
				match_maps_line(&w->view, buf, p);
			}
			return 0;
		}
		have += (size_t)n;
		end = buf + have;
		for (q = buf; (nl = memchr(q, '\n', (size_t)(end - q))); q = nl + 1) {
			*nl = '\0';
			if (!skipping)
				match_maps_line(&w->view, q, p);
			skipping = false;
		}
		have = (size_t)(end - q);
		if (have == MAPSBUF_SIZE - 1) {
			/* No newline in a full window: dev and inode sit at the
			 * start of the line, so match it now and drop the rest. */
			buf[have] = '\0';
			if (!skipping)
				match_maps_line(&w->view, buf, p);
			skipping = true;
			have = 0;
		} else if (have > 0 && q != buf) {
			memmove(buf, q, have);
		}
	}
}

/* Classify every fd listed in the open fd directory fd_dir by the identity
 * of what it points to. Returns 0, -ESRCH (gone), -EACCES (some fds could
 * not be read; the NVIDIA ones seen are kept), or a fatal -errno.
 * *ret_entries counts the fds listed, NVIDIA or not. */
static int scan_fds(struct scan_worker *w, int fd_dir, struct gs_scan_proc *p, size_t *ret_entries)
{
	size_t entries = 0;
	bool denied = false;

	*ret_entries = 0;
	for (;;) {
		ssize_t n = getdents(fd_dir, w->fdbuf, DIRBUF_SIZE);

		if (n < 0) {
			if (is_gone((int)-n))
				return -ESRCH;
			return is_fatal((int)-n) ? (int)n : -EACCES;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct gs_dirent64 *de = (struct gs_dirent64 *)(w->fdbuf + off);
			struct statx stx;
			struct stat st;
			enum gs_node_kind k;
			unsigned minor = 0;
			ssize_t len;
			int r;

			off += de->d_reclen;
			if (de->d_name[0] < '0' || de->d_name[0] > '9')
				continue;
			entries++;
			/* The link text comes from the kernel's dentry cache and
			 * never reaches the file's file system; a stat through it
			 * can (NFS revalidates a path reached through a link, a
			 * FUSE file without DONT_SYNC asks its server), and a hung
			 * server would hang the scan. Only device-node paths are
			 * stat'ed. (A cut link still has its prefix.) */
			len = readlinkat(fd_dir, de->d_name, w->linkbuf, LINKBUF_SIZE);
			if (len < 0) {
				int e = errno;

				if (e == EACCES || e == EPERM)
					denied = true;
				else if (is_fatal(e))
					return -e;
				continue; /* closed meanwhile */
			}
			if (!gs_scan_link_is_candidate(w->linkbuf, (size_t)len, w->sh->dev_prefix))
				continue;
			/* Follows the magic link to the open file. DONT_SYNC: even
			 * under /dev, nothing waits on a server; our nodes'
			 * identities never need revalidation. */
			if (statx(fd_dir, de->d_name, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &stx) < 0) {
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
			k = gs_devset_classify_stat(&w->view, &st, &minor);
			if (k == GS_NODE_NONE)
				continue;
			if (k == GS_NODE_DRM || k == GS_NODE_KFD)
				p->n_drm_fds++;
			else
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
			case GS_NODE_DRM: {
				uint32_t fdn;

				gs_minorset_add(&p->drm_fd_gpus, minor);
				if (gs_parse_u32(de->d_name, &fdn) == 0 && fdn <= INT_MAX) {
					r = note_drm_client(w, p, (int)fdn, st.st_ino, minor);
					if (r < 0)
						return r;
				}
				break;
			}
			case GS_NODE_KFD:
				p->fd_kfd = true;
				break;
			default:
				break;
			}
			/* Matched by rdev but not by identity: a node that is not
			 * under the dev root. Learn it before any maps are read. */
			if (gs_devset_classify_ino(&w->view, st.st_dev, st.st_ino, NULL) == GS_NODE_NONE) {
				r = learn(w, st.st_dev, st.st_ino, k, minor);
				if (r < 0)
					return r;
			}
		}
	}
	*ret_entries = entries;
	return denied ? -EACCES : 0;
}

/* The leader of a process whose main thread exited is a zombie with no
 * files or mm while its other threads run on: read those through the first
 * other thread whose fd table lists anything. On success *ret_fd_dir is that
 * thread's fd directory (caller closes), or -1 when there is none. */
static int scan_threads(struct scan_worker *w, int fd_dir, pid_t pid, struct gs_scan_proc *p, int *ret_fd_dir,
			pid_t *ret_tid)
{
	_cleanup_close_ int task_fd = -1;
	char buf[4096];

	*ret_fd_dir = -1;
	task_fd = openat(fd_dir, "../task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (task_fd < 0)
		return is_fatal(errno) ? -errno : 0;
	for (;;) {
		ssize_t n = getdents(task_fd, buf, sizeof(buf));

		if (n <= 0)
			return n < 0 && is_fatal((int)-n) ? (int)n : 0;
		for (ssize_t off = 0; off < n;) {
			struct gs_dirent64 *de = (struct gs_dirent64 *)(buf + off);
			char path[32];
			pid_t tid;
			size_t entries = 0;
			int tfd, r;

			off += de->d_reclen;
			if (!all_digits(de->d_name) || gs_parse_pid(de->d_name, &tid) < 0 || tid == pid)
				continue;
			snprintf(path, sizeof(path), "%d/fd", (int)tid);
			tfd = openat(task_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (tfd < 0) {
				if (is_fatal(errno))
					return -errno;
				if (errno == EACCES || errno == EPERM)
					return -EACCES;
				continue;
			}
			r = scan_fds(w, tfd, p, &entries);
			if (r == 0 && entries > 0) {
				*ret_fd_dir = tfd;
				*ret_tid = tid;
				return 0;
			}
			close(tfd);
			if (r == -EACCES || (r < 0 && r != -ESRCH))
				return r;
			/* A thread that left mid-listing: forget what it showed. */
			gs_drm_usage_free(&p->drm);
			*p = (struct gs_scan_proc){ .pid = pid };
		}
	}
}

/* Fd tables compared with kcmp at most, per process: beyond that (threads
 * that each made their own), every further thread's table is read. */
#define SEEN_TABLES_MAX 16

/* Has tid the same fd table as one of seen[0..n)? Only asked where our
 * PIDs are the proc root's (kcmp takes PIDs of our namespace). */
static bool table_seen(const struct scan_worker *w, const pid_t *seen, size_t n, pid_t tid)
{
	if (!w->sh->own_pidns)
		return false;
	for (size_t k = 0; k < n; k++)
		if (syscall(SYS_kcmp, seen[k], tid, KCMP_FILES, 0, 0) == 0)
			return true;
	/* Different, or kcmp refused (EPERM, ENOSYS): read the table. */
	return false;
}

/* The threads of a listed process that have an fd table of their own
 * (unshare(CLONE_FILES) in a thread): what they hold, the process holds.
 * first is the thread whose table was read already. Returns 0, -ESRCH,
 * -EACCES (some table unreadable) or a fatal -errno. */
static int scan_own_tables(struct scan_worker *w, int fd_dir, pid_t first, struct gs_scan_proc *p)
{
	_cleanup_close_ int task_fd = -1;
	pid_t seen[SEEN_TABLES_MAX];
	size_t n_seen = 0;
	bool denied = false;
	char buf[4096];

	task_fd = openat(fd_dir, "../task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (task_fd < 0)
		return is_gone(errno) ? -ESRCH : is_fatal(errno) ? -errno : -EACCES;
	seen[n_seen++] = first;
	for (;;) {
		ssize_t n = getdents(task_fd, buf, sizeof(buf));

		if (n < 0)
			return is_fatal((int)-n) ? (int)n : 0;
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct gs_dirent64 *de = (struct gs_dirent64 *)(buf + off);
			_cleanup_close_ int tfd = -1;
			char path[32];
			size_t entries = 0;
			pid_t tid;
			int r;

			off += de->d_reclen;
			if (!all_digits(de->d_name) || gs_parse_pid(de->d_name, &tid) < 0 || tid == first)
				continue;
			if (table_seen(w, seen, n_seen, tid))
				continue;
			snprintf(path, sizeof(path), "%d/fd", (int)tid);
			tfd = openat(task_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (tfd < 0) {
				if (is_fatal(errno))
					return -errno;
				denied |= errno == EACCES || errno == EPERM;
				continue; /* a thread that ended */
			}
			r = scan_fds(w, tfd, p, &entries);
			if (r == -EACCES)
				denied = true;
			else if (r < 0 && r != -ESRCH)
				return r;
			if (n_seen < SEEN_TABLES_MAX)
				seen[n_seen++] = tid;
		}
	}
	return denied ? -EACCES : 0;
}

static int push_denied(struct scan_worker *w, pid_t pid)
{
	if (w->n_denied == w->cap_denied) {
		size_t ncap = w->cap_denied ? w->cap_denied * 2 : 16;
		pid_t *n = realloc(w->denied, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->denied = n;
		w->cap_denied = ncap;
	}
	w->denied[w->n_denied++] = pid;
	return 0;
}

static int push_proc(struct scan_worker *w, const struct gs_scan_proc *p)
{
	if (w->n_procs == w->cap_procs) {
		size_t ncap = w->cap_procs ? w->cap_procs * 2 : 16;
		struct gs_scan_proc *n = realloc(w->procs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->procs = n;
		w->cap_procs = ncap;
	}
	w->procs[w->n_procs++] = *p;
	return 0;
}

static bool found_any(const struct gs_scan_proc *p)
{
	return p->n_fds || !gs_minorset_empty(&p->map_gpus) || p->map_ctl || p->map_uvm || p->n_drm_fds ||
	       !gs_minorset_empty(&p->drm_map_gpus) || p->map_kfd;
}

static int scan_pid_into(struct scan_worker *w, pid_t pid, struct gs_scan_proc *pp);

/* Scan one process; what it found is pushed, or its DRM usage freed. */
static int scan_pid(struct scan_worker *w, pid_t pid)
{
	struct gs_scan_proc p = { .pid = pid };
	int r = scan_pid_into(w, pid, &p);

	if (r == 1) {
		r = push_proc(w, &p);
		if (r == 0)
			return 0;
	}
	gs_drm_usage_free(&p.drm);
	return r;
}

/* Returns 1 when p holds something, 0 when not (or gone), or -errno. */
static int scan_pid_into(struct scan_worker *w, pid_t pid, struct gs_scan_proc *pp)
{
	_cleanup_close_ int fd_dir = -1;
	_cleanup_close_ int thread_fd_dir = -1;
	size_t entries = 0;
	pid_t first = pid;
	bool listed = is_listed(w->sh, pid), denied = false;
	char path[32];
	int r;

	/* "<pid>/fd" in one open: the directory fd pins this process (its
	 * parent is this process's directory, used for maps and task), so a
	 * PID reused later in the pass makes reads fail instead of reading
	 * the new process. One open per process instead of two matters here. */
	snprintf(path, sizeof(path), "%d/fd", (int)pid);
	fd_dir = openat(w->sh->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd_dir < 0) {
		int e = errno;

		if (is_gone(e))
			return 0;
		if (is_fatal(e))
			return -e;
		w->n_scanned++;
		return push_denied(w, pid);
	}
	w->n_scanned++;
	r = scan_fds(w, fd_dir, pp, &entries);
	if (r == 0 && entries == 0)
		r = scan_threads(w, fd_dir, pid, pp, &thread_fd_dir, &first);
	/* NVML names this PID: a thread may hold the device in a table of
	 * its own, which neither of the above read. */
	if (listed && (r == 0 || r == -EACCES)) {
		int e = scan_own_tables(w, fd_dir, first, pp);

		if (e == -EACCES)
			denied = true;
		else if (e < 0)
			r = e;
	}
	if (r == -ESRCH)
		return 0;
	if (r == -EACCES || denied) {
		/* Reported as denied; NVIDIA fds seen before a refused one
		 * still make it a holder. */
		r = push_denied(w, pid);
		if (r < 0)
			return r;
	} else if (r < 0) {
		return r;
	}
	/* Maps are read where a GPU fd was seen, and for every PID NVML (or
	 * KFD) lists: a process may map the node and close its fds, and the
	 * mapping (its CUDA or ROCm context) is what keeps the memory. */
	if (pp->n_fds == 0 && pp->n_drm_fds == 0 && !listed)
		return 0;
	if (w->sh->read_maps) {
		r = scan_maps(w, thread_fd_dir >= 0 ? thread_fd_dir : fd_dir, pp);
		if (r == -ESRCH)
			return 0; /* exited meanwhile: its fds are gone too */
		if (r < 0)
			return r;
	}
	return found_any(pp) ? 1 : 0;
}

/* Pids are handed out in chunks: few queue locks, even load. */
#define PID_CHUNK 16

static void set_error(struct scan_shared *sh, int r)
{
	int zero = 0;

	atomic_compare_exchange_strong(&sh->error, &zero, r);
	pthread_mutex_lock(&sh->qmu);
	pthread_cond_broadcast(&sh->qcond);
	pthread_mutex_unlock(&sh->qmu);
}

static void *worker_main(void *arg)
{
	struct scan_worker *w = arg;
	struct scan_shared *sh = w->sh;

	for (;;) {
		size_t i, end;

		pthread_mutex_lock(&sh->qmu);
		while (sh->next >= sh->published && !sh->listed && atomic_load(&sh->error) == 0)
			pthread_cond_wait(&sh->qcond, &sh->qmu);
		i = sh->next;
		end = i + PID_CHUNK < sh->published ? i + PID_CHUNK : sh->published;
		sh->next = end;
		pthread_mutex_unlock(&sh->qmu);
		if (i >= end || atomic_load(&sh->error) != 0)
			return NULL; /* all listed pids handed out, or failed */
		for (; i < end; i++) {
			int r = scan_pid(w, sh->pids[i]);

			if (r < 0) {
				w->error = r;
				set_error(sh, r);
				return NULL;
			}
		}
	}
}

/* List the numeric entries of /proc (except skip_pid) into the queue, one
 * getdents64 batch at a time, so that the workers start on the first batch
 * while the rest is listed. Pids beyond the queue's capacity (processes
 * started since it was sized) are scanned here, by the lister itself. */
static int list_pids(struct scan_worker *w)
{
	struct scan_shared *sh = w->sh;
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -1;
	size_t n = 0;

	buf = malloc(DIRBUF_SIZE);
	if (!buf)
		return -ENOMEM;
	/* A fresh open file description: the root's fd offset stays untouched. */
	fd = openat(sh->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t len = getdents(fd, buf, DIRBUF_SIZE);

		if (len < 0)
			return (int)len;
		if (len == 0)
			return 0;
		for (ssize_t off = 0; off < len;) {
			struct gs_dirent64 *de = (struct gs_dirent64 *)(buf + off);
			pid_t pid;
			int r;

			off += de->d_reclen;
			if (!all_digits(de->d_name) || gs_parse_pid(de->d_name, &pid) < 0)
				continue;
			if (sh->skip_pid > 0 && pid == sh->skip_pid)
				continue;
			if (n < sh->cap) {
				sh->pids[n++] = pid; /* beyond published: no reader yet */
				continue;
			}
			r = scan_pid(w, pid);
			if (r < 0)
				return r;
		}
		pthread_mutex_lock(&sh->qmu);
		sh->published = n;
		pthread_cond_broadcast(&sh->qcond);
		pthread_mutex_unlock(&sh->qmu);
	}
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

/* Below this many processes a thread costs more than it saves. */
#define PIDS_PER_THREAD_MIN 256
#define THREADS_MAX 8

static unsigned n_threads_for(size_t n_pids)
{
	cpu_set_t set;
	long cpus;
	size_t t;

	/* The CPUs we may run on (taskset, cgroup cpusets), not all online. */
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = CPU_COUNT(&set);
	else
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1)
		cpus = 1;
	t = n_pids / PIDS_PER_THREAD_MIN;
	if (t > (size_t)cpus)
		t = (size_t)cpus;
	if (t > THREADS_MAX)
		t = THREADS_MAX;
	return t < 1 ? 1 : (unsigned)t;
}

static int worker_init(struct scan_worker *w, struct scan_shared *sh)
{
	*w = (struct scan_worker){ .sh = sh };
	w->view.nvidia_major = sh->ds->nvidia_major;
	w->view.uvm_major = sh->ds->uvm_major;
	w->view.caps_major = sh->ds->caps_major;
	w->view.kfd_major = sh->ds->kfd_major;
	memcpy(w->view.drm, sh->ds->drm, sizeof(w->view.drm));
	w->view.n_drm = sh->ds->n_drm;
	w->view.drm_gpus = sh->ds->drm_gpus;
	w->fdbuf = malloc(DIRBUF_SIZE + MAPSBUF_SIZE + LINKBUF_SIZE);
	if (!w->fdbuf)
		return -ENOMEM;
	w->mapsbuf = w->fdbuf + DIRBUF_SIZE;
	w->linkbuf = w->mapsbuf + MAPSBUF_SIZE;
	/* Not yet shared with any thread: no lock needed for the first copy. */
	return view_sync_locked(w);
}

static void worker_done(struct scan_worker *w)
{
	/* What collect() did not take over. */
	for (size_t i = 0; i < w->n_procs; i++)
		gs_drm_usage_free(&w->procs[i].drm);
	gs_devset_free(&w->view);
	free(w->fdbuf);
	free(w->procs);
	free(w->denied);
	w->fdbuf = NULL;
	w->procs = NULL;
	w->denied = NULL;
}

/* Concatenate the workers' results, sorted by pid. */
static int collect(struct scan_worker *workers, unsigned n, struct gs_scan_result *ret)
{
	size_t n_procs = 0, n_denied = 0, n_scanned = 0;
	struct gs_scan_proc *procs;
	pid_t *denied;

	for (unsigned i = 0; i < n; i++) {
		n_procs += workers[i].n_procs;
		n_denied += workers[i].n_denied;
		n_scanned += workers[i].n_scanned;
	}
	procs = calloc(n_procs ? n_procs : 1, sizeof(*procs));
	denied = calloc(n_denied ? n_denied : 1, sizeof(*denied));
	if (!procs || !denied) {
		free(procs);
		free(denied);
		return -ENOMEM;
	}
	n_procs = n_denied = 0;
	for (unsigned i = 0; i < n; i++) {
		if (workers[i].n_procs)
			memcpy(procs + n_procs, workers[i].procs, workers[i].n_procs * sizeof(*procs));
		if (workers[i].n_denied)
			memcpy(denied + n_denied, workers[i].denied, workers[i].n_denied * sizeof(*denied));
		n_procs += workers[i].n_procs;
		n_denied += workers[i].n_denied;
		workers[i].n_procs = 0; /* their DRM usage is the result's now */
	}
	qsort(procs, n_procs, sizeof(*procs), cmp_proc);
	qsort(denied, n_denied, sizeof(*denied), cmp_pid);
	ret->procs = procs;
	ret->n_procs = n_procs;
	ret->n_scanned = n_scanned;
	ret->n_denied = n_denied;
	ret->denied = denied;
	return 0;
}

/* The dev root as the kernel writes paths under it in fd links: its
 * directory fd's own link (symlinks in --dev-root resolved), else as given. */
static void dev_prefix(const struct gs_root *root, char *buf, size_t len)
{
	char self[64];
	ssize_t n;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", root->dev_fd);
	n = root->dev_fd >= 0 ? readlink(self, buf, len - 1) : -1;
	if (n > 0 && (size_t)n < len - 1) {
		buf[n] = '\0';
		return;
	}
	gs_strlcpy(buf, root->dev_path, len);
}

/* Do the PIDs under the proc root name the processes our own syscalls
 * name (not a fixture tree, not another namespace's /proc)? */
static bool own_pidns(const struct gs_root *root)
{
	char buf[32];
	ssize_t n = readlinkat(root->proc_fd, "self", buf, sizeof(buf) - 1);
	pid_t pid;

	if (n <= 0)
		return false;
	buf[n] = '\0';
	return gs_parse_pid(buf, &pid) == 0 && pid == getpid();
}

int gs_scan_holders(const struct gs_root *root, struct gs_devset *ds,
		    const struct gs_scan_opts *opts, struct gs_scan_result *ret)
{
	static const struct gs_scan_opts defaults = { .read_maps = true };
	struct scan_shared sh = { .ds = ds };
	struct scan_worker workers[THREADS_MAX];
	_cleanup_free_ pid_t *pids = NULL;
	struct stat st;
	size_t estimate;
	unsigned nt, ready = 0;
	sigset_t all, old;
	int r;

	if (!root || !ds || !ret)
		return -EINVAL;
	if (!opts)
		opts = &defaults;
	/* procfs counts the processes in its root's link count: size the
	 * queue (and the thread count) from it, with room for newcomers. */
	estimate = fstat(root->proc_fd, &st) == 0 ? (size_t)st.st_nlink : 0;
	sh.cap = estimate + 4096;
	pids = malloc(sh.cap * sizeof(*pids));
	if (!pids)
		return -ENOMEM;
	sh.pids = pids;
	sh.proc_fd = root->proc_fd;
	sh.read_maps = opts->read_maps;
	sh.shadow_fd = opts->fdinfo_shadow_fd > 0 ? opts->fdinfo_shadow_fd : -1;
	sh.skip_pid = opts->skip_pid;
	sh.nvml_pids = opts->listed;
	sh.n_nvml_pids = opts->listed ? opts->n_listed : 0;
	dev_prefix(root, sh.dev_prefix, sizeof(sh.dev_prefix));
	sh.own_pidns = own_pidns(root);
	atomic_init(&sh.error, 0);
	r = -pthread_mutex_init(&sh.mu, NULL);
	if (r < 0)
		return r;
	r = -pthread_mutex_init(&sh.qmu, NULL);
	if (r < 0)
		goto out_mu;
	r = -pthread_cond_init(&sh.qcond, NULL);
	if (r < 0)
		goto out_qmu;

	/* The per-fd lookups are kernel work that scales across cores: walk
	 * /proc on all CPUs at once (the bench goal needs it on 2 cores). */
	nt = n_threads_for(estimate);
	for (; ready < nt; ready++) {
		r = worker_init(&workers[ready], &sh);
		if (r < 0) {
			worker_done(&workers[ready]);
			break;
		}
	}
	if (ready == 0)
		goto out;
	/* Workers get no signals: SIGINT and friends stay with the caller's
	 * threads, whatever the caller set up. A worker that fails to start
	 * leaves its share to the others. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 1; i < ready; i++)
		workers[i].started = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	/* This thread lists, then scans like the others. */
	r = list_pids(&workers[0]);
	if (r < 0)
		set_error(&sh, r);
	pthread_mutex_lock(&sh.qmu);
	sh.listed = true;
	pthread_cond_broadcast(&sh.qcond);
	pthread_mutex_unlock(&sh.qmu);
	if (r == 0)
		worker_main(&workers[0]);
	for (unsigned i = 1; i < ready; i++)
		if (workers[i].started)
			pthread_join(workers[i].thread, NULL);
	r = atomic_load(&sh.error);
	if (r == 0)
		r = collect(workers, ready, ret);
out:
	for (unsigned i = 0; i < ready; i++)
		worker_done(&workers[i]);
	pthread_cond_destroy(&sh.qcond);
out_qmu:
	pthread_mutex_destroy(&sh.qmu);
out_mu:
	pthread_mutex_destroy(&sh.mu);
	return r;
}

void gs_scan_result_free(struct gs_scan_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_procs; i++)
		gs_drm_usage_free(&r->procs[i].drm);
	free(r->procs);
	free(r->denied);
	r->procs = NULL;
	r->denied = NULL;
	r->n_procs = r->n_scanned = r->n_denied = 0;
}

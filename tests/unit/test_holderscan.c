/* Holder scan over the real /proc: child processes open and map plain-file
 * fake nodes of a temporary dev root; the scan must attribute each to the
 * right pid, fd vs mapping, and skip our own pid. Children are synchronised
 * with pipes, never with sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/holderscan.h"
#include "util/root.h"
#include "util/util.h"
#include "waiting_child.h"

static char tmpdir[256];

/* What a child opens: names in the dev root; map: also mmap it; close_fd:
 * close the fd after mapping (the mapping alone stays). */
struct open_spec {
	const char *name;
	bool map;
	bool close_fd;
};


/* Parent-side ends of the go pipes of live children. A forked child
 * inherits them (no exec, so O_CLOEXEC does not help) and must close them,
 * or a sibling would never see EOF. */
static int parent_fds[64];
static size_t n_parent_fds;

static void keep_parent_fd(int fd)
{
	assert_true(n_parent_fds < GS_ARRAY_SIZE(parent_fds));
	parent_fds[n_parent_fds++] = fd;
}

static void drop_parent_fd(int fd)
{
	for (size_t i = 0; i < n_parent_fds; i++)
		if (parent_fds[i] == fd) {
			parent_fds[i] = parent_fds[--n_parent_fds];
			return;
		}
}

static void child_close_inherited(void)
{
	for (size_t i = 0; i < n_parent_fds; i++)
		close(parent_fds[i]);
}

static void dev_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
}

static void make_node(const char *name)
{
	char path[512];
	int fd;

	dev_path(path, sizeof(path), name);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0); /* so that mmap has a page */
	close(fd);
}

static void child_open(const struct open_spec *spec, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char path[512];
		int fd;

		dev_path(path, sizeof(path), spec[i].name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(3);
		if (spec[i].map && mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
			_exit(4);
		if (spec[i].close_fd)
			close(fd);
	}
}

struct open_job {
	const struct open_spec *spec;
	size_t n;
};

static void open_in_child(void *ud)
{
	const struct open_job *j = ud;

	child_close_inherited();
	child_open(j->spec, j->n);
}

/* Fork a child that opens spec, says "ready" and waits for EOF on go. */
static struct child spawn(const struct open_spec *spec, size_t n)
{
	struct open_job j = { spec, n };
	struct child c = spawn_waiting_child(open_in_child, &j);

	keep_parent_fd(c.go_fd);
	return c;
}

static void reap(struct child *c)
{
	int status;

	drop_parent_fd(c->go_fd);
	close(c->go_fd);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static const struct gs_scan_proc *find(const struct gs_scan_result *r, pid_t pid)
{
	for (size_t i = 0; i < r->n_procs; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	return NULL;
}

static bool denied(const struct gs_scan_result *r, pid_t pid)
{
	for (size_t i = 0; i < r->n_denied; i++)
		if (r->denied[i] == pid)
			return true;
	return false;
}

static void scan_listed(struct gs_scan_result *res, bool read_maps, pid_t skip, const pid_t *listed, size_t n_listed)
{
	struct gs_root root;
	struct gs_devset ds;
	struct gs_scan_opts opts = { .skip_pid = skip, .read_maps = read_maps, .listed = listed, .n_listed = n_listed };

	assert_int_equal(gs_root_open(&root, &(struct gs_root_paths){ .dev = tmpdir }), 0);
	assert_int_equal(gs_devset_load(&root, &ds), 0);
	assert_int_equal(gs_scan_holders(&root, &ds, &opts, res), 0);
	for (size_t i = 1; i < res->n_procs; i++)
		assert_true(res->procs[i - 1].pid < res->procs[i].pid);
	assert_true(res->n_scanned > 0);
	gs_devset_free(&ds);
	gs_root_close(&root);
}

static void scan(struct gs_scan_result *res, bool read_maps, pid_t skip)
{
	scan_listed(res, read_maps, skip, NULL, 0);
}

static void test_link_candidate(void **state)
{
	static const char *const yes[] = { "/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia0 (deleted)",
					   "/tmp/h/dev/nvidia1", "/tmp/h/dev/x" };
	static const char *const no[] = { "socket:[123]", "pipe:[9]", "anon_inode:[pidfd]", "/devices/x", "/dev",
					  "/tmp/h/devices/nvidia0", "/tmp/h/dev", "/home/u/nvidia0", "/memfd:x (deleted)",
					  "/mnt/nfs/dev/nvidia0" };

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(yes); i++)
		assert_true(gs_scan_link_is_candidate(yes[i], strlen(yes[i]), "/tmp/h/dev"));
	for (size_t i = 0; i < GS_ARRAY_SIZE(no); i++)
		assert_false(gs_scan_link_is_candidate(no[i], strlen(no[i]), "/tmp/h/dev"));
	/* A cut link keeps its prefix; a dev root of "/" adds nothing. */
	assert_true(gs_scan_link_is_candidate("/dev/nvidia0", 5, "/"));
	assert_false(gs_scan_link_is_candidate("/home/x", 7, "/"));
	assert_false(gs_scan_link_is_candidate("/home/x", 7, ""));
	assert_false(gs_scan_link_is_candidate("/home/x", 7, NULL));
}

/* A PID NVML lists gets its mappings read without an NVIDIA fd: a process
 * that mapped the node and closed the fd is a holder then, and only then. */
static void test_listed_maps_without_fds(void **state)
{
	static const struct open_spec spec[] = { { "nvidia1", true, true }, { "nvidiactl", true, true } };
	static const struct open_spec other[] = { { "other", true, false } };
	struct child g = spawn(spec, GS_ARRAY_SIZE(spec)), d = spawn(other, GS_ARRAY_SIZE(other));
	pid_t listed[2] = { g.pid < d.pid ? g.pid : d.pid, g.pid < d.pid ? d.pid : g.pid };
	struct gs_scan_result res;
	const struct gs_scan_proc *p;

	(void)state;
	scan(&res, true, 0);
	assert_null(find(&res, g.pid));
	gs_scan_result_free(&res);

	scan_listed(&res, true, 0, listed, 2);
	p = find(&res, g.pid);
	assert_non_null(p);
	assert_int_equal(p->n_fds, 0);
	assert_true(gs_minorset_has(&p->map_gpus, 1));
	assert_true(p->map_ctl);
	/* Listed but holding nothing of ours: not reported. */
	assert_null(find(&res, d.pid));
	gs_scan_result_free(&res);
	reap(&g);
	reap(&d);
}

static void test_parse_maps_line(void **state)
{
	dev_t dev;
	ino_t ino;

	(void)state;
	assert_int_equal(gs_parse_maps_line("7f0000000000-7f0000001000 rw-s 00000000 00:05 1234     /dev/nvidia0", &dev, &ino), 0);
	assert_int_equal(major(dev), 0);
	assert_int_equal(minor(dev), 5);
	assert_int_equal(ino, 1234);
	assert_int_equal(gs_parse_maps_line("00400000-00452000 r-xp 00001000 fd:01 18446744073709551615 /a b (deleted)\n", &dev, &ino), 0);
	assert_int_equal(major(dev), 0xfd);
	assert_int_equal(minor(dev), 1);
	assert_true(ino == (ino_t)UINT64_MAX);
	assert_int_equal(gs_parse_maps_line("10-20 r--p 0 103:abcde 9", &dev, &ino), 0);
	assert_int_equal(major(dev), 0x103);
	assert_int_equal(minor(dev), 0xabcde);
	assert_int_equal(ino, 9);
	/* Anonymous, malformed or overflowing: rejected. */
	assert_int_equal(gs_parse_maps_line("7ffd0000-7ffd1000 rw-p 00000000 00:00 0      [stack]", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("garbage", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("10-20 rw 0 00:05 12", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("10-20 rw-s 0 00:05", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("10-20 rw-s 0 00:05 12x", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("10-20 rw-s 0 1000:05 12", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("10-20 rw-s 0 00:05 18446744073709551616", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("10000000000000000-20 rw-s 0 00:05 12", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line("10-20 rw-s 0 -1:05 12", &dev, &ino), -EINVAL);
	assert_int_equal(gs_parse_maps_line(NULL, &dev, &ino), -EINVAL);
}

static void test_scan_holders(void **state)
{
	/* A CUDA-like process: fds and mappings of GPU 0 and the ctl node. */
	static const struct open_spec spec_a[] = {
		{ "nvidia0", true, false }, { "nvidiactl", true, false }, { "nvidia-uvm", false, false },
	};
	/* A monitor: only an fd of GPU 1. */
	static const struct open_spec spec_b[] = { { "nvidia1", false, false } };
	/* Several fds on two GPUs, no mapping. */
	static const struct open_spec spec_c[] = {
		{ "nvidia0", false, false }, { "nvidia1", false, false }, { "nvidia1", false, false },
	};
	/* Other files only. */
	static const struct open_spec spec_d[] = { { "other", true, false } };
	/* An fd of ctl, and a mapping of GPU 1 whose fd it closed: matched by
	 * the maps pass because the process holds an NVIDIA fd. */
	static const struct open_spec spec_f[] = { { "nvidiactl", false, false }, { "nvidia1", true, true } };
	/* A mapping alone, no NVIDIA fd: maps are only read for fd holders. */
	static const struct open_spec spec_g[] = { { "nvidia0", true, true } };
	struct child a, b, c, d, e, f, g;
	struct gs_scan_result res;
	const struct gs_scan_proc *p;

	(void)state;
	a = spawn(spec_a, GS_ARRAY_SIZE(spec_a));
	b = spawn(spec_b, GS_ARRAY_SIZE(spec_b));
	c = spawn(spec_c, GS_ARRAY_SIZE(spec_c));
	d = spawn(spec_d, GS_ARRAY_SIZE(spec_d));
	e = spawn(spec_a, GS_ARRAY_SIZE(spec_a)); /* the skipped pid */
	f = spawn(spec_f, GS_ARRAY_SIZE(spec_f));
	g = spawn(spec_g, GS_ARRAY_SIZE(spec_g));

	scan(&res, true, e.pid);
	/* Our own children are readable (other processes may not be: the
	 * host's pid 1 can refuse even root). */
	assert_false(denied(&res, a.pid) || denied(&res, b.pid) || denied(&res, f.pid));

	p = find(&res, a.pid);
	assert_non_null(p);
	assert_true(gs_minorset_has(&p->fd_gpus, 0));
	assert_false(gs_minorset_has(&p->fd_gpus, 1));
	assert_true(gs_minorset_has(&p->map_gpus, 0));
	assert_true(p->fd_ctl && p->fd_uvm && p->map_ctl);
	assert_false(p->map_uvm);
	assert_false(p->maps_denied);
	assert_int_equal(p->n_fds, 3);

	p = find(&res, b.pid);
	assert_non_null(p);
	assert_true(gs_minorset_has(&p->fd_gpus, 1));
	assert_false(gs_minorset_has(&p->fd_gpus, 0));
	assert_true(gs_minorset_empty(&p->map_gpus));
	assert_false(p->fd_ctl || p->fd_uvm || p->map_ctl || p->map_uvm);
	assert_int_equal(p->n_fds, 1);

	p = find(&res, c.pid);
	assert_non_null(p);
	assert_true(gs_minorset_has(&p->fd_gpus, 0) && gs_minorset_has(&p->fd_gpus, 1));
	assert_true(gs_minorset_empty(&p->map_gpus));
	assert_int_equal(p->n_fds, 3);

	assert_null(find(&res, d.pid));
	assert_null(find(&res, e.pid));

	p = find(&res, f.pid);
	assert_non_null(p);
	assert_true(p->fd_ctl);
	assert_true(gs_minorset_empty(&p->fd_gpus));
	assert_true(gs_minorset_has(&p->map_gpus, 1));
	assert_int_equal(p->n_fds, 1);

	assert_null(find(&res, g.pid));
	gs_scan_result_free(&res);

	/* Without maps: same holders, no mapping information. */
	scan(&res, false, 0);
	p = find(&res, a.pid);
	assert_non_null(p);
	assert_true(gs_minorset_empty(&p->map_gpus));
	assert_false(p->map_ctl);
	assert_non_null(find(&res, e.pid)); /* not skipped this time */
	p = find(&res, f.pid);
	assert_non_null(p);
	assert_true(gs_minorset_empty(&p->map_gpus));
	gs_scan_result_free(&res);

	reap(&a);
	reap(&b);
	reap(&c);
	reap(&d);
	reap(&e);
	reap(&f);
	reap(&g);

	/* Gone: no longer reported. */
	scan(&res, true, 0);
	assert_null(find(&res, a.pid));
	gs_scan_result_free(&res);
}

/* Our own fds are never reported when we skip ourselves. */
static void test_skip_self(void **state)
{
	char path[512];
	struct gs_scan_result res;
	int fd;

	(void)state;
	dev_path(path, sizeof(path), "nvidia0");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	scan(&res, true, 0);
	assert_non_null(find(&res, getpid()));
	gs_scan_result_free(&res);
	scan(&res, true, getpid());
	assert_null(find(&res, getpid()));
	gs_scan_result_free(&res);
	close(fd);
}

static int go_fd_for_thread = -1;

static void *thread_wait(void *arg)
{
	char b;

	(void)arg;
	while (read(go_fd_for_thread, &b, 1) > 0)
		;
	_exit(0);
}

/* The main thread exited (zombie leader, no files of its own) while another
 * thread keeps the fds: found through /proc/PID/task. */
static void test_zombie_leader(void **state)
{
	int ready[2], go[2];
	struct child c;
	struct gs_scan_result res;
	const struct gs_scan_proc *p;
	char b;

	(void)state;
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		static const struct open_spec spec[] = { { "nvidia1", true, false } };
		pthread_t t;

		child_close_inherited();
		close(ready[0]);
		close(go[1]);
		child_open(spec, 1);
		go_fd_for_thread = go[0];
		if (pthread_create(&t, NULL, thread_wait, NULL) != 0)
			_exit(6);
		/* Ready, then the main thread leaves; the other thread
		 * keeps the process (and its fds) alive. */
		if (write(ready[1], "r", 1) != 1)
			_exit(5);
		pthread_exit(NULL);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);
	c.go_fd = go[1];
	keep_parent_fd(c.go_fd);

	/* Wait (without sleeping) until the leader shows as a zombie. */
	for (;;) {
		char path[64], *text = NULL;
		const char *s;
		bool zombie;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)c.pid);
		assert_int_equal(gs_read_file_at(AT_FDCWD, path, 4096, &text, NULL), 0);
		s = strrchr(text, ')');
		zombie = s && s[2] == 'Z';
		free(text);
		if (zombie)
			break;
		sched_yield();
	}
	scan(&res, true, 0);
	p = find(&res, c.pid);
	assert_non_null(p);
	assert_true(gs_minorset_has(&p->fd_gpus, 1));
	assert_true(gs_minorset_has(&p->map_gpus, 1));
	gs_scan_result_free(&res);
	reap(&c);
}

static int thread_ready_fd = -1;

/* A thread with an fd table of its own (unshare(CLONE_FILES)) opens GPU 0
 * (no mapping: what it holds is seen only through its table), then waits. */
static void *thread_own_table(void *arg)
{
	static const struct open_spec spec[] = { { "nvidia0", false, false } };

	(void)arg;
	if (unshare(CLONE_FILES) < 0)
		_exit(7);
	child_open(spec, 1);
	if (write(thread_ready_fd, "r", 1) != 1)
		_exit(5);
	return thread_wait(NULL);
}

/* A thread's own fd table is read for a PID NVML lists, and only then. */
static void test_listed_thread_table(void **state)
{
	int ready[2], go[2];
	struct child c;
	struct gs_scan_result res;
	const struct gs_scan_proc *p;
	char b;

	(void)state;
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		pthread_t t;

		child_close_inherited();
		close(ready[0]);
		close(go[1]);
		go_fd_for_thread = go[0];
		thread_ready_fd = ready[1];
		if (pthread_create(&t, NULL, thread_own_table, NULL) != 0)
			_exit(6);
		for (;;)
			pause();
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);
	c.go_fd = go[1];
	keep_parent_fd(c.go_fd);

	scan(&res, true, 0);
	assert_null(find(&res, c.pid));
	gs_scan_result_free(&res);

	scan_listed(&res, true, 0, &c.pid, 1);
	p = find(&res, c.pid);
	assert_non_null(p);
	assert_true(gs_minorset_has(&p->fd_gpus, 0));
	assert_true(gs_minorset_empty(&p->map_gpus));
	assert_int_equal(p->n_fds, 1);
	gs_scan_result_free(&res);
	reap(&c);
}

/* Processes appearing and exiting during the scan are skipped; the stable
 * holders are still found, every time. */
static void test_churn(void **state)
{
	static const struct open_spec spec_a[] = { { "nvidia0", true, false }, { "nvidiactl", false, false } };
	int go[2], ready[2];
	struct child a, churn;
	char b;

	(void)state;
	a = spawn(spec_a, GS_ARRAY_SIZE(spec_a));
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	churn.pid = fork();
	assert_true(churn.pid >= 0);
	if (churn.pid == 0) {
		struct pollfd pfd = { .fd = go[0], .events = POLLIN };

		child_close_inherited();
		close(ready[0]);
		close(go[1]);
		if (write(ready[1], "r", 1) != 1)
			_exit(5);
		/* Short-lived holders until the parent closes go. */
		while (poll(&pfd, 1, 0) == 0) {
			pid_t k = fork();

			if (k == 0) {
				child_open(spec_a, GS_ARRAY_SIZE(spec_a));
				_exit(0);
			}
			if (k > 0)
				waitpid(k, NULL, 0);
		}
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);
	churn.go_fd = go[1];
	keep_parent_fd(churn.go_fd);

	for (int i = 0; i < 30; i++) {
		struct gs_scan_result res;
		const struct gs_scan_proc *p;

		scan(&res, true, 0);
		p = find(&res, a.pid);
		assert_non_null(p);
		assert_true(gs_minorset_has(&p->fd_gpus, 0));
		assert_true(gs_minorset_has(&p->map_gpus, 0));
		assert_false(denied(&res, a.pid));
		gs_scan_result_free(&res);
	}
	reap(&churn);
	reap(&a);
}

/* Exit statuses of test_denied's child that are about this machine, not
 * about the scan. */
#define DENIED_NO_NAMESPACE 17 /* the dev root could not be made reachable */
#define DENIED_UNREACHABLE 18 /* no mount namespace, and nobody cannot reach tmpdir */

/* For test_denied's child, still root: the dev root at a path uid 65534
 * can reach whatever the modes of the directories above tmpdir (a full run
 * once found /tmp 0700, which made gs_root_open fail with EACCES; a TMPDIR
 * under a private home does the same). In a mount namespace of its own, a
 * fresh tmpfs (0755) on /tmp and tmpdir bind-mounted at /tmp/dev: the same
 * files, reached through "/" and that tmpfs only. Returns the path, tmpdir
 * itself where no mount namespace can be made (EPERM: not the real root),
 * NULL on any other failure. */
static const char *reachable_dev_root(void)
{
	char fdpath[64];
	int fd;

	if (unshare(CLONE_NEWNS) < 0)
		return errno == EPERM ? tmpdir : NULL;
	/* Private before anything is mounted: nothing may reach the host's
	 * mount table. tmpdir is opened in this namespace (a bind mount's
	 * source must be in the caller's) and before the tmpfs hides it. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return NULL;
	fd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	if (mount("gs-test-denied", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0 ||
	    mkdir("/tmp/dev", 0755) < 0 || mount(fdpath, "/tmp/dev", NULL, MS_BIND, NULL) < 0)
		return NULL;
	close(fd);
	return "/tmp/dev";
}

/* For test_denied's child, now uid 65534: a process of that user holding
 * GPU 1 through DEV, ready once this returns; *go_fd's EOF ends it. */
static pid_t spawn_own_holder(const char *dev, int *go_fd)
{
	int ready[2], go[2];
	char b;
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char path[512];

		close(ready[0]);
		close(go[1]);
		snprintf(path, sizeof(path), "%s/nvidia1", dev);
		if (open(path, O_RDONLY) < 0 || write(ready[1], "r", 1) != 1)
			_exit(3);
		while (read(go[0], &b, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	if (pid < 0 || read(ready[0], &b, 1) != 1)
		pid = -1;
	close(ready[0]);
	*go_fd = go[1];
	return pid;
}

/* As an unprivileged user, other users' processes are counted as denied
 * (never silently dropped), including a root-owned holder, while that
 * user's own holder is found (so "denied" is about other users, not a scan
 * that sees nothing). */
static void test_denied(void **state)
{
	static const struct open_spec spec_a[] = { { "nvidia0", false, false } };
	struct child a;
	pid_t k;
	int status;

	(void)state;
	if (geteuid() != 0) {
		skip();
		return;
	}
	a = spawn(spec_a, GS_ARRAY_SIZE(spec_a));
	k = fork();
	assert_true(k >= 0);
	if (k == 0) {
		struct gs_root root;
		struct gs_devset ds;
		struct gs_scan_result res;
		const struct gs_scan_proc *p;
		bool seen_a = false, seen_1 = false, seen_own = false;
		const char *dev;
		pid_t own;
		int r, own_go, own_status;

		child_close_inherited();
		dev = reachable_dev_root();
		if (!dev)
			_exit(DENIED_NO_NAMESPACE);
		/* No supplementary groups either: root's would give group
		 * access a real uid 65534 does not have. Dumpable again: a
		 * process that changed its uid is not, which keeps its /proc
		 * entries (and its holder's) root's; one started by uid 65534
		 * is. */
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0 ||
		    prctl(PR_SET_DUMPABLE, 1) < 0)
			_exit(10);
		r = gs_root_open(&root, &(struct gs_root_paths){ .dev = dev });
		if (r == -EACCES && dev == tmpdir)
			_exit(DENIED_UNREACHABLE);
		if (r < 0)
			_exit(11);
		if (gs_devset_load(&root, &ds) < 0)
			_exit(12);
		own = spawn_own_holder(dev, &own_go);
		if (own < 0)
			_exit(19);
		if (gs_scan_holders(&root, &ds, &(struct gs_scan_opts){ .read_maps = true }, &res) < 0)
			_exit(13);
		for (size_t i = 0; i < res.n_denied; i++) {
			seen_a |= res.denied[i] == a.pid;
			seen_1 |= res.denied[i] == 1;
			seen_own |= res.denied[i] == own;
			if (i > 0 && res.denied[i - 1] >= res.denied[i])
				_exit(14);
		}
		if (!seen_a || !seen_1 || seen_own)
			_exit(15);
		if (find(&res, a.pid))
			_exit(16);
		p = find(&res, own);
		if (!p || !gs_minorset_has(&p->fd_gpus, 1) || gs_minorset_has(&p->fd_gpus, 0))
			_exit(20);
		close(own_go);
		if (waitpid(own, &own_status, 0) != own || !WIFEXITED(own_status) || WEXITSTATUS(own_status) != 0)
			_exit(21);
		gs_scan_result_free(&res);
		gs_devset_free(&ds);
		gs_root_close(&root);
		_exit(0);
	}
	assert_int_equal(waitpid(k, &status, 0), k);
	reap(&a);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == DENIED_UNREACHABLE) {
		skip(); /* no mount namespace here, and tmpdir's parents are closed to others */
		return;
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Enough processes for the scan to use several threads: every holder is
 * found exactly once, with its own fds, and the result is sorted. */
#define N_MANY 600

static void test_many_processes(void **state)
{
	static pid_t kids[N_MANY];
	int ready[2], go[2], fd1;
	struct gs_scan_result res;
	char path[512], buf[N_MANY];
	size_t got = 0, found = 0;

	(void)state;
	dev_path(path, sizeof(path), "nvidia1");
	fd1 = open(path, O_RDONLY | O_CLOEXEC); /* inherited by every child */
	assert_true(fd1 >= 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	for (int i = 0; i < N_MANY; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			static const struct open_spec spec[] = { { "nvidia0", true, false } };
			char b;

			child_close_inherited();
			close(ready[0]);
			close(go[1]);
			if (i % 3 == 0)
				child_open(spec, 1);
			if (write(ready[1], "r", 1) != 1)
				_exit(5);
			close(ready[1]);
			while (read(go[0], &b, 1) > 0)
				;
			_exit(0);
		}
	}
	close(fd1);
	close(ready[1]);
	close(go[0]);
	while (got < N_MANY) {
		ssize_t n = read(ready[0], buf, sizeof(buf));

		assert_true(n > 0);
		got += (size_t)n;
	}
	close(ready[0]);

	scan(&res, true, 0);
	for (int i = 0; i < N_MANY; i++) {
		const struct gs_scan_proc *p = find(&res, kids[i]);

		assert_non_null(p);
		assert_true(gs_minorset_has(&p->fd_gpus, 1));
		assert_int_equal(gs_minorset_has(&p->fd_gpus, 0), i % 3 == 0);
		assert_int_equal(gs_minorset_has(&p->map_gpus, 0), i % 3 == 0);
		assert_int_equal(p->n_fds, i % 3 == 0 ? 2 : 1);
		found++;
	}
	assert_int_equal(found, N_MANY);
	gs_scan_result_free(&res);

	close(go[1]);
	for (int i = 0; i < N_MANY; i++) {
		int status;

		assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

static int setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/gs-scan-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
		return -1;
	make_node("nvidia0");
	make_node("nvidia1");
	make_node("nvidiactl");
	make_node("nvidia-uvm");
	make_node("other");
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_maps_line),
		cmocka_unit_test(test_scan_holders),
		cmocka_unit_test(test_link_candidate),
		cmocka_unit_test(test_listed_maps_without_fds),
		cmocka_unit_test(test_skip_self),
		cmocka_unit_test(test_zombie_leader),
		cmocka_unit_test(test_listed_thread_table),
		cmocka_unit_test(test_churn),
		cmocka_unit_test(test_denied),
		cmocka_unit_test(test_many_processes),
	};

	/* Reaped with waitpid: no SIGCHLD handling needed. */
	return cmocka_run_group_tests(tests, setup, teardown);
}

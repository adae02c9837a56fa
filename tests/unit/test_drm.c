/* The AMD/Intel backend over simulated hosts built by tests/fakes/mkdrm.sh:
 * which cards are GPUs, their identities and memory, KFD process lists, and
 * the scenarios of issue 17 with real processes holding the fake nodes (a
 * forked ROCm worker keeping the memory, a client holding none, a shared
 * drm-client-id, an amdgpu without fdinfo memory keys), their fdinfo read
 * through the fixture directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/drm.h"
#include "gpu/kfd.h"
#include "proc/drm_fdinfo.h"
#include "util/root.h"
#include "util/util.h"

#define MiB (1024ULL * 1024ULL)
#define AMD_PCI "0000:c1:00.0"
#define AMD_GPU_ID 51887

/* A real uevent of an amdgpu card, from oneapi-src/level-zero#69. */
static const char uevent_capture[] =
	"DRIVER=amdgpu\n"
	"PCI_CLASS=30000\n"
	"PCI_ID=1002:694C\n"
	"PCI_SUBSYS_ID=8086:2073\n"
	"PCI_SLOT_NAME=0000:01:00.0\n"
	"MODALIAS=pci:v00001002d0000694Csv00008086sd00002073bc03sc00i00\n";

static void test_parse_uevent(void **state)
{
	struct gs_pci_addr pci = { 0 };
	uint16_t vendor = 0, device = 0;
	bool pci_known = false;
	char driver[16], buf[GS_PCI_ADDR_LEN];

	(void)state;
	assert_int_equal(gs_drm_parse_uevent(uevent_capture, driver, sizeof(driver), &pci_known, &pci, &vendor,
					     &device), 0);
	assert_string_equal(driver, "amdgpu");
	assert_true(pci_known);
	gs_pci_addr_format(&pci, buf);
	assert_string_equal(buf, "0000:01:00.0");
	assert_int_equal(vendor, 0x1002);
	assert_int_equal(device, 0x694c);

	/* A platform device (a partition's DRM node): no PCI keys at all. */
	pci_known = false;
	assert_int_equal(gs_drm_parse_uevent("DRIVER=\nOF_NAME=x\n", driver, sizeof(driver), &pci_known, &pci,
					     &vendor, &device), 0);
	assert_string_equal(driver, "");
	assert_false(pci_known);

	assert_int_equal(gs_drm_parse_uevent("PCI_SLOT_NAME=0000:01:00\n", driver, sizeof(driver), &pci_known,
					     &pci, &vendor, &device), -EBADMSG);
	assert_int_equal(gs_drm_parse_uevent("PCI_ID=1002\n", driver, sizeof(driver), &pci_known, &pci, &vendor,
					     &device), -EBADMSG);
	assert_int_equal(gs_drm_parse_uevent("PCI_ID=1002:10000\n", driver, sizeof(driver), &pci_known, &pci,
					     &vendor, &device), -EBADMSG);
	assert_int_equal(gs_drm_parse_uevent("DRIVER=averyveryverylongdrivername\n", driver, sizeof(driver),
					     &pci_known, &pci, &vendor, &device), -EBADMSG);
}

static void test_parse_dev(void **state)
{
	dev_t d;

	(void)state;
	assert_int_equal(gs_drm_parse_dev("226:128\n", &d), 0);
	assert_int_equal(major(d), 226);
	assert_int_equal(minor(d), 128);
	assert_int_equal(gs_drm_parse_dev("226:0", &d), 0);
	assert_int_equal(gs_drm_parse_dev("226:128\n\n", &d), -EINVAL);
	assert_int_equal(gs_drm_parse_dev("226-128\n", &d), -EINVAL);
	assert_int_equal(gs_drm_parse_dev("226:128x\n", &d), -EINVAL);
	assert_int_equal(gs_drm_parse_dev("4096:1\n", &d), -ERANGE);
	assert_int_equal(gs_drm_parse_dev(NULL, &d), -EINVAL);
}

/* ---- a simulated host ------------------------------------------------------ */

struct host {
	char dir[64];
	struct gs_root root;
	struct gs_gpu_backend *b;
	int shadow_fd;
};

/* tests/fakes/mkdrm.sh, found from this binary (build/san/tests/) or the
 * working directory (the repository root under make check). */
static void script_path(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		for (int up = 0; up < 4 && (slash = strrchr(exe, '/')); up++)
			*slash = '\0'; /* test_drm, tests, san, build */
		if ((size_t)snprintf(buf, len, "%.3000s/tests/fakes/mkdrm.sh", exe) < len && access(buf, X_OK) == 0)
			return;
	}
	snprintf(buf, len, "tests/fakes/mkdrm.sh");
}

static void mkdrm(struct host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mkdrm(struct host *h, const char *fmt, ...)
{
	char script[PATH_MAX], args[512], cmd[PATH_MAX + 700];
	va_list ap;

	script_path(script, sizeof(script));
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "'%s' %s", script, args);
	/* The subcommand and DIR come first in every use below. */
	(void)h;
	assert_int_equal(system(cmd), 0);
}

static void host_open(struct host *h, const char *host_args)
{
	struct gs_root_paths paths = { 0 };
	char sys[128], dev[128], shadow[128];

	mkdrm(h, "host '%s' %s", h->dir, host_args);
	snprintf(sys, sizeof(sys), "%s/sys", h->dir);
	snprintf(dev, sizeof(dev), "%s/dev", h->dir);
	snprintf(shadow, sizeof(shadow), "%s/fdinfo", h->dir);
	assert_int_equal(mkdir(shadow, 0755), 0);
	paths.sys = sys;
	paths.dev = dev;
	assert_int_equal(gs_root_open(&h->root, &paths), 0);
	h->shadow_fd = open(shadow, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(h->shadow_fd >= 0);
	assert_int_equal(gs_drm_open(&h->root, &h->b), 0);
}

static int setup(void **state)
{
	struct host *h = calloc(1, sizeof(*h));

	if (!h)
		return -1;
	snprintf(h->dir, sizeof(h->dir), "/tmp/gs-test-drm-XXXXXX");
	if (!mkdtemp(h->dir))
		return -1;
	h->shadow_fd = -1;
	h->root.proc_fd = h->root.sys_fd = h->root.dev_fd = h->root.drv_fd = -1;
	*state = h;
	return 0;
}

static int teardown(void **state)
{
	struct host *h = *state;
	char cmd[128];

	gs_gpu_backend_close(h->b);
	gs_root_close(&h->root);
	if (h->shadow_fd >= 0)
		close(h->shadow_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
	if (system(cmd) != 0)
		return -1;
	free(h);
	return 0;
}

/* Index of the backend GPU at pci, or fail. */
static unsigned gpu_at(struct host *h, const char *pci)
{
	unsigned n;
	struct gs_pci_addr want;

	assert_int_equal(gs_pci_addr_parse(pci, &want), 0);
	assert_int_equal(h->b->ops->count(h->b, &n), 0);
	for (unsigned i = 0; i < n; i++) {
		struct gs_drm_gpu g;

		assert_int_equal(gs_drm_gpu_info(h->b, i, &g), 0);
		if (gs_pci_addr_equal(&g.pci, &want))
			return i;
	}
	fail_msg("no GPU at %s", pci);
	return 0;
}

/* The mixed host: a BMC display, two NVIDIA cards (nvidia-drm), an MI300X
 * and an Intel xe card. Only the last two are this backend's, in PCI order. */
static void test_mixed_host_gpus(void **state)
{
	struct host *h = *state;
	struct gs_drm_gpu dg;
	struct gs_gpu g;
	unsigned n;

	host_open(h, "--nvidia 2");
	assert_string_equal(h->b->ops->name, "drm");
	assert_int_equal(h->b->ops->count(h->b, &n), 0);
	assert_int_equal(n, 2);

	assert_int_equal(h->b->ops->info(h->b, 0, &g), 0);
	assert_int_equal(g.index, 0);
	assert_int_equal(g.minor, UINT_MAX);
	assert_string_equal(g.pci_bus_id, "00000000:83:00.0");
	/* No unique id on Intel: the PCI address stands for it. */
	assert_string_equal(g.uuid, "0000:83:00.0");
	assert_string_equal(g.name, "Intel GPU 8086:e211");
	assert_false(g.mem_known);
	assert_int_equal(gs_drm_gpu_info(h->b, 0, &dg), 0);
	assert_string_equal(dg.vendor, "Intel");
	assert_string_equal(dg.driver, "xe");
	assert_true(dg.vram_total_known);
	assert_int_equal(dg.vram_total, 24ULL << 30);
	assert_false(dg.vram_used_known);
	assert_int_equal(dg.n_kfd, 0);
	assert_int_equal(dg.card, 4);
	assert_true(dg.render_dev_known);
	assert_int_equal(minor(dg.render_dev), 131);

	assert_int_equal(h->b->ops->info(h->b, 1, &g), 0);
	assert_string_equal(g.pci_bus_id, "00000000:C1:00.0");
	assert_string_equal(g.uuid, "GPU-1f9de0957d137940");
	assert_string_equal(g.name, "AMD Instinct MI300X OAM");
	assert_true(g.mem_known);
	assert_int_equal(g.mem_total, 205822885888ULL);
	assert_int_equal(g.mem_used, 280 * MiB);
	assert_int_equal(gs_drm_gpu_info(h->b, 1, &dg), 0);
	assert_string_equal(dg.vendor, "AMD");
	assert_int_equal(dg.vendor_id, 0x1002);
	assert_int_equal(dg.device_id, 0x74a1);
	assert_int_equal(dg.card, 3);
	assert_true(dg.card_dev_known);
	assert_int_equal(major(dg.card_dev), 226);
	assert_int_equal(minor(dg.card_dev), 3);
	assert_int_equal(minor(dg.render_dev), 130);
	assert_int_equal(dg.unique_id, 0x1f9de0957d137940ULL);
	assert_int_equal(dg.n_kfd, 1);
	assert_int_equal(dg.kfd_gpu_ids[0], AMD_GPU_ID);
	assert_int_equal(gs_drm_kfd_state(h->b), 0);

	assert_int_equal(h->b->ops->info(h->b, 2, &g), -EINVAL);
	assert_int_equal(gs_drm_gpu_info(h->b, 2, &dg), -EINVAL);
}

/* The wait loop's poll: amdgpu's used VRAM as the file says now; Intel has
 * no device-wide figure. */
static void test_memory_polls(void **state)
{
	struct host *h = *state;
	struct gs_gpu_mem mem;
	unsigned amd, intel;

	host_open(h, "");
	amd = gpu_at(h, AMD_PCI);
	intel = gpu_at(h, "0000:83:00.0");
	assert_int_equal(h->b->ops->memory(h->b, amd, &mem), 0);
	assert_false(mem.v2);
	assert_int_equal(mem.used, 280 * MiB);
	mkdrm(h, "vram-used '%s' 1 65816", h->dir);
	assert_int_equal(h->b->ops->memory(h->b, amd, &mem), 0);
	assert_int_equal(mem.used, 65816 * MiB);
	assert_int_equal(mem.total, 205822885888ULL);
	assert_int_equal(h->b->ops->memory(h->b, intel, &mem), -EOPNOTSUPP);
	assert_int_equal(h->b->ops->memory(h->b, 9, &mem), -EINVAL);
}

static void test_no_amd_intel_gpu(void **state)
{
	struct host *h = *state;
	struct gs_root_paths paths = { 0 };
	char sys[128];

	mkdrm(h, "host '%s' --nvidia 1 --amd 0 --intel 0", h->dir);
	snprintf(sys, sizeof(sys), "%s/sys", h->dir);
	paths.sys = sys;
	paths.dev = h->dir;
	assert_int_equal(gs_root_open(&h->root, &paths), 0);
	/* Only the BMC and an NVIDIA card: nothing of ours. */
	assert_int_equal(gs_drm_open(&h->root, &h->b), -ENODEV);
	assert_null(h->b);
	gs_root_close(&h->root);
	/* No DRM at all, and no sysfs at all. */
	paths.sys = h->dir;
	assert_int_equal(gs_root_open(&h->root, &paths), 0);
	assert_int_equal(gs_drm_open(&h->root, &h->b), -ENODEV);
	gs_root_close(&h->root);
	paths.sys = "/nonexistent-gs-sys";
	assert_int_equal(gs_root_open(&h->root, &paths), 0);
	assert_int_equal(gs_drm_open(&h->root, &h->b), -ENOENT);
}

static void test_i915_and_no_kfd(void **state)
{
	struct host *h = *state;
	struct gs_drm_gpu dg;
	struct gs_gpu_proc *procs = (void *)1;
	size_t n = 7;

	host_open(h, "--intel-driver i915 --no-kfd");
	assert_int_equal(gs_drm_gpu_info(h->b, gpu_at(h, "0000:83:00.0"), &dg), 0);
	assert_string_equal(dg.driver, "i915");
	assert_false(dg.vram_total_known);
	assert_int_equal(gs_drm_gpu_info(h->b, gpu_at(h, AMD_PCI), &dg), 0);
	assert_int_equal(dg.n_kfd, 0);
	assert_int_equal(gs_drm_kfd_state(h->b), -ENOENT);
	/* No KFD: an empty list, not an error; the fd scan finds holders. */
	assert_int_equal(h->b->ops->processes(h->b, gpu_at(h, AMD_PCI), &procs, &n), 0);
	assert_null(procs);
	assert_int_equal(n, 0);
}

/* ---- processes ------------------------------------------------------------- */

/* A process holding the given nodes open (paths under the host's dev/), with
 * optionally a forked worker that inherits them. The creator may exit and
 * leave the worker holding them: the fork case. */
struct holder {
	pid_t pid, worker;        /* worker 0 when none */
	int fds[4];
	int n_fds;
	int release;              /* write end: closing it ends both */
};

static void child_hold(struct host *h, const char *const *nodes, int n, bool fork_worker, bool creator_exits,
		       int report, int release_rd)
{
	int fds[4];
	pid_t worker = 0;
	char c;

	for (int i = 0; i < n; i++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/dev/%s", h->dir, nodes[i]);
		fds[i] = open(path, O_RDWR | O_CLOEXEC);
		if (fds[i] < 0)
			_exit(10);
	}
	if (fork_worker) {
		worker = fork();
		if (worker < 0)
			_exit(11);
		if (worker == 0) {
			/* The worker: keeps the inherited fds until released. */
			(void)!read(release_rd, &c, 1);
			_exit(0);
		}
	}
	if (write(report, &worker, sizeof(worker)) != sizeof(worker) || write(report, fds, sizeof(int) * (size_t)n) < 0)
		_exit(12);
	if (creator_exits)
		_exit(0);
	(void)!read(release_rd, &c, 1);
	if (worker > 0)
		waitpid(worker, NULL, 0);
	_exit(0);
}

static struct holder hold(struct host *h, const char *const *nodes, int n, bool fork_worker, bool creator_exits)
{
	struct holder ho = { 0 };
	int report[2], release[2];

	assert_true(n <= 4);
	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	assert_int_equal(pipe2(release, O_CLOEXEC), 0);
	ho.pid = fork();
	assert_true(ho.pid >= 0);
	if (ho.pid == 0) {
		close(report[0]);
		close(release[1]);
		child_hold(h, nodes, n, fork_worker, creator_exits, report[1], release[0]);
	}
	close(report[1]);
	close(release[0]);
	assert_int_equal(read(report[0], &ho.worker, sizeof(ho.worker)), sizeof(ho.worker));
	assert_int_equal(read(report[0], ho.fds, sizeof(int) * (size_t)n), (ssize_t)(sizeof(int) * (size_t)n));
	close(report[0]);
	ho.n_fds = n;
	ho.release = release[1];
	if (creator_exits)
		assert_int_equal(waitpid(ho.pid, NULL, 0), ho.pid);
	return ho;
}

static void release(struct holder *ho, bool creator_exited)
{
	close(ho->release);
	if (!creator_exited)
		assert_int_equal(waitpid(ho->pid, NULL, 0), ho->pid);
	/* A worker whose creator exited was reparented: not ours to reap. */
}

static ino_t ino_of(struct host *h, const char *node)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/dev/%s", h->dir, node);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

/* What gpuslate will do per holder: its fds' fdinfo into one usage. */
static void usage_of(struct host *h, pid_t pid, const struct holder *ho, const char *const *nodes,
		     struct gs_drm_usage *u)
{
	for (int i = 0; i < ho->n_fds; i++) {
		struct gs_drm_fdinfo fi;
		int r;

		if (strcmp(nodes[i], "kfd") == 0)
			continue; /* /dev/kfd has no DRM usage stats */
		r = gs_drm_fdinfo_read(h->root.proc_fd, h->shadow_fd, pid, ho->fds[i], ino_of(h, nodes[i]), &fi);
		if (r == -ENODATA) {
			assert_int_equal(gs_drm_usage_add(u, NULL), 0);
			continue;
		}
		assert_int_equal(r, 0);
		assert_int_equal(gs_drm_usage_add(u, &fi), 0);
	}
}

static bool alive(pid_t pid)
{
	return kill(pid, 0) == 0;
}

/* Without NVIDIA cards the AMD GPU is card1 (renderD128), Intel card2
 * (renderD129); the BMC's card0 has no render node. */
static const char *const rocm_nodes[] = { "kfd", "dri/renderD128" };

/* The fork case on AMD: a ROCm job allocates 64 GiB through KFD, forks a
 * data-loader worker and dies. KFD still lists the dead creator (its KFD
 * process lives while the worker's inherited fds do); the worker holds the
 * render node client with the memory. */
static void test_forked_rocm_worker_keeps_memory(void **state)
{
	struct host *h = *state;
	struct gs_drm_usage u = { 0 };
	struct gs_drm_totals t;
	struct gs_gpu_proc *procs = NULL;
	struct gs_pci_addr amd;
	struct holder ho;
	size_t n = 0;

	host_open(h, "");
	ho = hold(h, rocm_nodes, 2, true, true);
	assert_false(alive(ho.pid));
	assert_true(ho.worker > 0 && alive(ho.worker));
	mkdrm(h, "kfd-proc '%s' %d %d 65536", h->dir, (int)ho.pid, AMD_GPU_ID);
	mkdrm(h, "vram-used '%s' 1 65816", h->dir);
	mkdrm(h, "fdinfo '%s' %d %d amdgpu " AMD_PCI " 1377 --vram-mib 65536 --gtt-mib 2", h->dir,
	      (int)ho.worker, ho.fds[1]);

	/* KFD's list, like NVML's: the dead creator, with the memory. */
	assert_int_equal(h->b->ops->processes(h->b, gpu_at(h, AMD_PCI), &procs, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(procs[0].pid, ho.pid);
	assert_int_equal(procs[0].kind, GS_GPU_PROC_COMPUTE);
	assert_true(procs[0].mem_known);
	assert_int_equal(procs[0].mem_used, 64ULL << 30);
	free(procs);
	procs = NULL;
	/* Intel's list is empty: KFD is AMD's. */
	assert_int_equal(h->b->ops->processes(h->b, gpu_at(h, "0000:83:00.0"), &procs, &n), 0);
	assert_int_equal(n, 0);

	/* The worker's render fd shows the client and its VRAM on that GPU. */
	usage_of(h, ho.worker, &ho, rocm_nodes, &u);
	assert_int_equal(gs_pci_addr_parse(AMD_PCI, &amd), 0);
	gs_drm_usage_totals(&u, &amd, &t);
	assert_int_equal(t.n_clients, 1);
	assert_true(t.vram_known);
	assert_int_equal(t.vram, 64ULL << 30);
	gs_drm_usage_free(&u);
	release(&ho, true);
}

/* A monitor (rocm-smi, nvtop) opens the render node and allocates nothing:
 * a client with 0 bytes, and no KFD process. */
static void test_client_holds_no_memory(void **state)
{
	struct host *h = *state;
	static const char *const nodes[] = { "dri/renderD129" };
	struct gs_drm_usage u = { 0 };
	struct gs_drm_totals t;
	struct holder ho;

	host_open(h, "");
	ho = hold(h, nodes, 1, false, false);
	mkdrm(h, "fdinfo '%s' %d %d xe 0000:83:00.0 12", h->dir, (int)ho.pid, ho.fds[0]);
	usage_of(h, ho.pid, &ho, nodes, &u);
	gs_drm_usage_totals(&u, NULL, &t);
	assert_int_equal(t.n_clients, 1);
	assert_true(t.vram_known && t.mem_known);
	assert_int_equal(t.vram, 0);
	assert_int_equal(t.mem, 0);
	gs_drm_usage_free(&u);
	release(&ho, false);
}

/* Parent and forked child share one drm-client-id (the child inherited the
 * fd): per process each shows 6 GiB, the GPU total counts 6 GiB once. */
static void test_shared_client_id_counted_once(void **state)
{
	struct host *h = *state;
	static const char *const nodes[] = { "dri/renderD129" };
	struct gs_drm_usage parent = { 0 }, worker = { 0 }, gpu = { 0 };
	struct gs_drm_totals t;
	struct holder ho;

	host_open(h, "");
	ho = hold(h, nodes, 1, true, false);
	mkdrm(h, "fdinfo '%s' %d %d xe 0000:83:00.0 40 --vram-mib 6144", h->dir, (int)ho.pid, ho.fds[0]);
	mkdrm(h, "fdinfo '%s' %d %d xe 0000:83:00.0 40 --vram-mib 6144", h->dir, (int)ho.worker, ho.fds[0]);
	usage_of(h, ho.pid, &ho, nodes, &parent);
	usage_of(h, ho.worker, &ho, nodes, &worker);
	gs_drm_usage_totals(&parent, NULL, &t);
	assert_int_equal(t.vram, 6ULL << 30);
	gs_drm_usage_totals(&worker, NULL, &t);
	assert_int_equal(t.vram, 6ULL << 30);
	assert_int_equal(gs_drm_usage_merge(&gpu, &parent), 0);
	assert_int_equal(gs_drm_usage_merge(&gpu, &worker), 0);
	gs_drm_usage_totals(&gpu, NULL, &t);
	assert_int_equal(t.n_clients, 1);
	assert_int_equal(t.vram, 6ULL << 30);
	assert_int_equal(gpu.n_fds, 2);
	/* Intel has no usage file: the GPU's used memory is this sum. */
	{
		struct gs_gpu_mem mem;
		unsigned intel = gpu_at(h, "0000:83:00.0"), amd = gpu_at(h, AMD_PCI);

		assert_int_equal(gs_drm_memory_from_usage(h->b, intel, &gpu, &mem), 0);
		assert_int_equal(mem.used, 6ULL << 30);
		assert_int_equal(mem.total, 24ULL << 30);
		/* No client of the AMD GPU among them: nothing held there. */
		assert_int_equal(gs_drm_memory_from_usage(h->b, amd, &gpu, &mem), 0);
		assert_int_equal(mem.used, 0);
		/* A client without memory keys: its share is unknown. */
		{
			struct gs_drm_usage other = { 0 };
			struct gs_drm_fdinfo fi;

			assert_int_equal(gs_drm_fdinfo_parse("drm-driver: xe\ndrm-pdev: 0000:83:00.0\n"
							     "drm-client-id: 99\n", &fi), 0);
			assert_int_equal(gs_drm_usage_add(&other, &fi), 0);
			assert_int_equal(gs_drm_memory_from_usage(h->b, intel, &other, &mem), -ENODATA);
			gs_drm_usage_free(&other);
		}
		/* An fd without usage stats: the sum would be too small. */
		assert_int_equal(gs_drm_usage_add(&gpu, NULL), 0);
		assert_int_equal(gs_drm_memory_from_usage(h->b, intel, &gpu, &mem), -ENODATA);
		assert_int_equal(gs_drm_memory_from_usage(h->b, 5, &gpu, &mem), -EINVAL);
	}
	gs_drm_usage_free(&parent);
	gs_drm_usage_free(&worker);
	gs_drm_usage_free(&gpu);
	release(&ho, false);
}

/* An amdgpu of Linux 5.14-5.18: fdinfo without drm- keys, amdgpu's own
 * ("vram mem"), read as one client; the job's memory is also known from KFD
 * per process and from sysfs per GPU. */
static void test_old_amdgpu_memory_from_kfd_and_sysfs(void **state)
{
	struct host *h = *state;
	struct gs_drm_usage u = { 0 };
	struct gs_drm_totals t;
	struct gs_gpu_proc *procs = NULL;
	struct gs_gpu_mem mem;
	struct holder ho;
	unsigned amd;
	size_t n = 0;

	host_open(h, "");
	amd = gpu_at(h, AMD_PCI);
	ho = hold(h, rocm_nodes, 2, false, false);
	mkdrm(h, "fdinfo '%s' %d %d amdgpu " AMD_PCI " 5 --vram-mib 8192 --amdgpu-5.14", h->dir, (int)ho.pid,
	      ho.fds[1]);
	mkdrm(h, "kfd-proc '%s' %d %d 8192", h->dir, (int)ho.pid, AMD_GPU_ID);
	mkdrm(h, "vram-used '%s' 1 8472", h->dir);

	usage_of(h, ho.pid, &ho, rocm_nodes, &u);
	assert_int_equal(u.n_clients, 1);
	assert_int_equal(u.n_no_stats, 0);
	gs_drm_usage_totals(&u, NULL, &t);
	assert_true(t.vram_known);
	assert_int_equal(t.vram, 8ULL << 30);
	gs_drm_usage_free(&u);

	assert_int_equal(h->b->ops->processes(h->b, amd, &procs, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(procs[0].pid, ho.pid);
	assert_int_equal(procs[0].mem_used, 8ULL << 30);
	free(procs);
	assert_int_equal(h->b->ops->memory(h->b, amd, &mem), 0);
	assert_int_equal(mem.used, 8472 * MiB);
	release(&ho, false);
}

/* The legacy keys alone (amdgpu before drm-resident-*) still give VRAM. */
static void test_legacy_amdgpu_keys(void **state)
{
	struct host *h = *state;
	static const char *const nodes[] = { "dri/renderD128" };
	struct gs_drm_usage u = { 0 };
	struct gs_drm_totals t;
	struct holder ho;

	host_open(h, "");
	ho = hold(h, nodes, 1, false, false);
	mkdrm(h, "fdinfo '%s' %d %d amdgpu " AMD_PCI " 217 --vram-mib 3 --gtt-mib 8 --legacy", h->dir,
	      (int)ho.pid, ho.fds[0]);
	usage_of(h, ho.pid, &ho, nodes, &u);
	gs_drm_usage_totals(&u, NULL, &t);
	assert_int_equal(t.vram, 3 * MiB);
	assert_int_equal(t.mem, 11 * MiB);
	gs_drm_usage_free(&u);
	release(&ho, false);
}

/* Several KFD processes, one of them on two GPUs: each GPU lists those that
 * hold memory on it. */
static void test_kfd_lists_per_gpu(void **state)
{
	struct host *h = *state;
	struct gs_gpu_proc *procs = NULL;
	unsigned g0, g1;
	size_t n = 0;

	host_open(h, "--amd 2 --intel 0");
	g0 = gpu_at(h, "0000:c1:00.0");
	g1 = gpu_at(h, "0000:c2:00.0");
	mkdrm(h, "kfd-proc '%s' 4001 %d 100", h->dir, AMD_GPU_ID);
	mkdrm(h, "kfd-proc '%s' 4001 %d 200", h->dir, AMD_GPU_ID + 1);
	mkdrm(h, "kfd-proc '%s' 4002 %d 0", h->dir, AMD_GPU_ID + 1);
	assert_int_equal(h->b->ops->processes(h->b, g0, &procs, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(procs[0].pid, 4001);
	assert_int_equal(procs[0].mem_used, 100 * MiB);
	free(procs);
	procs = NULL;
	assert_int_equal(h->b->ops->processes(h->b, g1, &procs, &n), 0);
	/* 4002's vram_ file at 0 bytes is no context: kfd_init_apertures()
	 * makes one for every GPU the process may use, so a job on another
	 * GPU has one here too (kfd_flat_memory.c). */
	assert_int_equal(n, 1);
	assert_int_equal(procs[0].pid, 4001);
	assert_int_equal(procs[0].mem_used, 200 * MiB);
	free(procs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_uevent),
		cmocka_unit_test(test_parse_dev),
		cmocka_unit_test_setup_teardown(test_mixed_host_gpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_polls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_amd_intel_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_i915_and_no_kfd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forked_rocm_worker_keeps_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_holds_no_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_client_id_counted_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_amdgpu_memory_from_kfd_and_sysfs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_amdgpu_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kfd_lists_per_gpu, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

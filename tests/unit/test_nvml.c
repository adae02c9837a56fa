/* The NVML backend against the fake libnvidia-ml (tests/fakes/fake_nvml.c,
 * docs/testing.md), through the helper process gpuslate uses (nvml_child.c):
 * identity, memory, process lists and their layouts, fault injection, the
 * per-call deadline, and what the helper keeps of ours. Run from the
 * repository root; the build directory comes from $GPUSLATE_BUILD (default
 * "build"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "gpu/nvml.h"
#include "gpu/nvml_abi.h"
#include "util/util.h"

#define UUID0 "GPU-a2983c1e-0000-4000-8000-000000000000"
#define UUID1 "GPU-a2983c1e-0000-4000-8000-000000000001"

struct fixture {
	char dir[64];      /* the state directory */
	char lib[512];     /* fake library, normal build */
	char lib_r535[512];
	char lib_r470[512];  /* no v2 memory info */
	int ctx_fds[8];    /* open ctx files, each holding LOCK_SH */
	int nctx;
};

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* A GPU context as a holder creates it: the file, kept open with LOCK_SH. */
static void add_ctx(struct fixture *fx, const char *id, pid_t pid, unsigned gpu, unsigned mib, const char *kind)
{
	char path[256], text[256];
	int fd;

	snprintf(path, sizeof(path), "%s/ctx/%s", fx->dir, id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_SH), 0);
	snprintf(text, sizeof(text), "pid=%d\ngpu=%u\nmib=%u\nkind=%s\nrelease_ms=0\n", (int)pid, gpu, mib, kind);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_true(fx->nctx < (int)GS_ARRAY_SIZE(fx->ctx_fds));
	fx->ctx_fds[fx->nctx++] = fd;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	const char *build = getenv("GPUSLATE_BUILD");
	char path[128];

	if (!fx)
		return -1;
	if (!build || !*build)
		build = "build";
	snprintf(fx->lib, sizeof(fx->lib), "%s/fakes/libnvidia-ml.so.1", build);
	snprintf(fx->lib_r535, sizeof(fx->lib_r535), "%s/fakes/r535/libnvidia-ml.so.1", build);
	snprintf(fx->lib_r470, sizeof(fx->lib_r470), "%s/fakes/r470/libnvidia-ml.so.1", build);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/gs-test-nvml-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(path, sizeof(path), "%s/ctx", fx->dir);
	if (mkdir(path, 0755) < 0)
		return -1;
	/* Two GPUs, the second one on a lower PCI bus (NVML order stays as
	 * listed) and with a different minor than its index. */
	write_file(fx->dir, "gpus",
		   "# minor uuid total_mib reserved_mib pci name\n"
		   "0 " UUID0 " 143771 615 00000000:00:06.0 NVIDIA H200\n"
		   "3 " UUID1 " 81559 512 00000000:00:05.0 NVIDIA H100 80GB HBM3\n");
	if (setenv("FAKE_NVML_STATE", fx->dir, 1) < 0)
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	for (int i = 0; i < fx->nctx; i++)
		close(fx->ctx_fds[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return -1;
	free(fx);
	return 0;
}

static struct gs_gpu_backend *open_ok(const char *lib, unsigned timeout_ms)
{
	struct gs_nvml_opts o = { .lib_path = lib, .call_timeout_ms = timeout_ms };
	struct gs_gpu_backend *b = NULL;
	char err[256] = "";
	int r = gs_nvml_child_open(&o, &b, err, sizeof(err));

	if (r < 0)
		print_error("gs_nvml_child_open(%s): %d %s\n", lib, r, err);
	assert_int_equal(r, 0);
	assert_non_null(b);
	assert_string_equal(b->ops->name, "nvml");
	assert_true(b->helper_pid > 0 && b->helper_pid != getpid());
	return b;
}

static const struct gs_gpu_proc *find_pid(const struct gs_gpu_proc *p, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	return NULL;
}

static void test_identity_and_memory(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b = open_ok(fx->lib, 0);
	struct gs_gpu g;
	struct gs_gpu_mem m;
	unsigned n = 0;

	assert_string_equal(b->driver_version, "580.159.04");
	assert_int_equal(b->ops->count(b, &n), 0);
	assert_int_equal(n, 2);

	assert_int_equal(b->ops->info(b, 0, &g), 0);
	assert_int_equal(g.index, 0);
	assert_int_equal(g.minor, 0);
	assert_string_equal(g.uuid, UUID0);
	assert_string_equal(g.name, "NVIDIA H200");
	assert_string_equal(g.pci_bus_id, "00000000:00:06.0");
	assert_true(g.mem_known);
	assert_true(g.mem_v2);
	assert_int_equal(g.mem_total, 143771ULL * GS_MIB);
	assert_int_equal(g.mem_used, 0);
	assert_int_equal(g.mem_reserved, 615ULL * GS_MIB);

	assert_int_equal(b->ops->info(b, 1, &g), 0);
	assert_int_equal(g.index, 1);
	assert_int_equal(g.minor, 3);
	assert_string_equal(g.uuid, UUID1);
	assert_string_equal(g.name, "NVIDIA H100 80GB HBM3");
	assert_string_equal(g.pci_bus_id, "00000000:00:05.0");

	assert_int_equal(b->ops->info(b, 2, &g), -EINVAL);

	/* A context on minor 3 (index 1) shows in v2 used, not in reserved. */
	add_ctx(fx, "mem", getpid(), 3, 1000, "compute");
	assert_int_equal(b->ops->memory(b, 1, &m), 0);
	assert_true(m.v2);
	assert_int_equal(m.used, 1000ULL * GS_MIB);
	assert_int_equal(m.reserved, 512ULL * GS_MIB);
	assert_int_equal(m.total, 81559ULL * GS_MIB);
	assert_int_equal(b->ops->memory(b, 0, &m), 0);
	assert_int_equal(m.used, 0);
	gs_gpu_backend_close(b);
}

static void test_processes(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b = open_ok(fx->lib, 0);
	_cleanup_free_ struct gs_gpu_proc *p = NULL;
	const struct gs_gpu_proc *e;
	size_t n = 99;

	/* No context yet: an empty list. */
	assert_int_equal(b->ops->processes(b, 0, &p, &n), 0);
	assert_int_equal(n, 0);
	free(GS_TAKE_PTR(p));

	/* Our own pid with a compute and a graphics context (merged into one
	 * entry, first kind, larger memory), the parent with an MPS one. Two
	 * pids make a wrong stride visible. */
	add_ctx(fx, "self-c", getpid(), 0, 2048, "compute");
	add_ctx(fx, "self-g", getpid(), 0, 4096, "graphics");
	add_ctx(fx, "parent", getppid(), 0, 100, "mps");
	add_ctx(fx, "other-gpu", getppid(), 3, 7, "compute");

	assert_int_equal(b->ops->processes(b, 0, &p, &n), 0);
	assert_int_equal(n, 2);
	e = find_pid(p, n, getpid());
	assert_non_null(e);
	assert_int_equal(e->kind, GS_GPU_PROC_COMPUTE);
	assert_true(e->mem_known);
	assert_int_equal(e->mem_used, 4096ULL * GS_MIB);
	e = find_pid(p, n, getppid());
	assert_non_null(e);
	assert_int_equal(e->kind, GS_GPU_PROC_MPS);
	assert_int_equal(e->mem_used, 100ULL * GS_MIB);
	free(GS_TAKE_PTR(p));

	assert_int_equal(b->ops->processes(b, 1, &p, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, getppid());
	assert_int_equal(p[0].mem_used, 7ULL * GS_MIB);
	free(GS_TAKE_PTR(p));

	/* The context goes away with its lock: the list follows. */
	close(fx->ctx_fds[--fx->nctx]);
	assert_int_equal(b->ops->processes(b, 1, &p, &n), 0);
	assert_int_equal(n, 0);
	gs_gpu_backend_close(b);
}

/* Early R535: _v3 writes 32-byte entries; the symbol rule must pick them.
 * The older symbols (24/16-byte entries) are made to fail, so only a right
 * reading of the 32-byte _v3 data passes. */
static void test_r535_stride(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	_cleanup_free_ struct gs_gpu_proc *p = NULL;
	const struct gs_gpu_proc *e;
	size_t n = 0;

	write_file(fx->dir, "inject",
		   "fail nvmlDeviceGetComputeRunningProcesses_v2 999\n"
		   "fail nvmlDeviceGetComputeRunningProcesses 999\n");
	b = open_ok(fx->lib_r535, 0);
	add_ctx(fx, "a", getpid(), 0, 1234, "compute");
	add_ctx(fx, "b", getppid(), 0, 4321, "compute");
	add_ctx(fx, "c", 1, 0, 1, "compute");
	assert_int_equal(b->ops->processes(b, 0, &p, &n), 0);
	assert_int_equal(n, 3);
	e = find_pid(p, n, getpid());
	assert_non_null(e);
	assert_int_equal(e->mem_used, 1234ULL * GS_MIB);
	e = find_pid(p, n, getppid());
	assert_non_null(e);
	assert_int_equal(e->mem_used, 4321ULL * GS_MIB);
	e = find_pid(p, n, 1);
	assert_non_null(e);
	assert_int_equal(e->mem_used, 1ULL * GS_MIB);
	gs_gpu_backend_close(b);
}

static void test_garbage_rejected(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	_cleanup_free_ struct gs_gpu_proc *p = NULL;
	size_t n = 0;
	int r;

	add_ctx(fx, "a", getpid(), 0, 64, "compute");
	write_file(fx->dir, "inject", "garbage_processes\n");
	b = open_ok(fx->lib, 0);
	r = b->ops->processes(b, 0, &p, &n);
	if (r == 0) {
		/* Filtering would be acceptable too, if nothing bogus survives. */
		for (size_t i = 0; i < n; i++) {
			assert_true(p[i].pid > 0 && (uint32_t)p[i].pid != 0xFFFFFFFFu);
			assert_true(p[i].mem_used <= 143771ULL * GS_MIB);
		}
	} else
		assert_int_equal(r, -EBADMSG);
	gs_gpu_backend_close(b);
}

static void test_init_version_mismatch(void **state)
{
	struct fixture *fx = *state;
	struct gs_nvml_opts o = { .lib_path = fx->lib };
	struct gs_gpu_backend *b = NULL;
	char err[256] = "";

	write_file(fx->dir, "inject", "fail nvmlInit_v2 18\n");
	assert_int_equal(gs_nvml_child_open(&o, &b, err, sizeof(err)), -EPROTO);
	assert_null(b);
	assert_string_equal(err, "nvmlInit_v2: Driver/library version mismatch");

	/* errbuf may be NULL. */
	assert_int_equal(gs_nvml_child_open(&o, &b, NULL, 0), -EPROTO);
}

static void test_driver_not_loaded(void **state)
{
	struct fixture *fx = *state;
	struct gs_nvml_opts o = { .lib_path = fx->lib };
	struct gs_gpu_backend *b = NULL;
	char err[256] = "";
	char path[128];

	snprintf(path, sizeof(path), "%s/gpus", fx->dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(gs_nvml_child_open(&o, &b, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "nvmlInit_v2: Driver Not Loaded"));
}

static void test_missing_library(void **state)
{
	struct gs_nvml_opts o = { .lib_path = "/nonexistent/gpuslate/libnvidia-ml.so.1" };
	struct gs_gpu_backend *b = NULL;
	char err[256] = "";

	(void)state;
	assert_int_equal(gs_nvml_child_open(&o, &b, err, sizeof(err)), -ENOENT);
	assert_null(b);
	assert_non_null(strstr(err, "/nonexistent/gpuslate/libnvidia-ml.so.1"));
}

/* Memory v2 refused as by an old library: v1 numbers, used includes the
 * reservation, and the backend stops asking for v2. */
static void test_memory_v1_fallback(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	struct gs_gpu g;
	struct gs_gpu_mem m;

	write_file(fx->dir, "inject", "fail nvmlDeviceGetMemoryInfo_v2 13\n");
	b = open_ok(fx->lib, 0);
	assert_int_equal(b->ops->info(b, 0, &g), 0);
	assert_true(g.mem_known);
	assert_false(g.mem_v2);
	assert_int_equal(g.mem_basis, GS_MEM_V1);
	assert_int_equal(g.mem_used, 615ULL * GS_MIB);
	assert_int_equal(g.mem_reserved, 0);
	assert_int_equal(b->ops->memory(b, 1, &m), 0);
	assert_false(m.v2);
	assert_int_equal(m.used, 512ULL * GS_MIB);
	gs_gpu_backend_close(b);
}

/* A library from before R510 has no v2 symbol at all: v1, from the start. */
static void test_memory_no_v2_symbol(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b = open_ok(fx->lib_r470, 0);
	struct gs_gpu g;

	add_ctx(fx, "a", getpid(), 0, 1000, "compute");
	assert_int_equal(b->ops->info(b, 0, &g), 0);
	assert_int_equal(g.mem_basis, GS_MEM_V1);
	assert_int_equal(g.mem_used, (615ULL + 1000) * GS_MIB);
	gs_gpu_backend_close(b);
}

/* count_v2 includes a GPU that HandleByIndex refuses (a container's device
 * cgroup): that GPU fails with -EACCES, and the other one, asked for by its
 * own NVML index, works. */
static void test_no_permission_gpu(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	struct gs_gpu g;
	struct gs_gpu_mem m;
	struct gs_gpu_proc *p = NULL;
	size_t n;
	unsigned count;

	write_file(fx->dir, "inject", "fail nvmlDeviceGetHandleByIndex_v2 4 gpu=0\n");
	add_ctx(fx, "a", getpid(), 3, 700, "compute");
	b = open_ok(fx->lib, 0);
	assert_int_equal(b->ops->count(b, &count), 0);
	assert_int_equal(count, 2);
	assert_int_equal(b->ops->info(b, 0, &g), -EACCES);
	assert_int_equal(b->ops->memory(b, 0, &m), -EACCES);
	assert_int_equal(b->ops->processes(b, 0, &p, &n), -EACCES);
	assert_null(p);
	assert_int_equal(b->ops->info(b, 1, &g), 0);
	assert_int_equal(g.index, 1);
	assert_string_equal(g.uuid, UUID1);
	assert_int_equal(b->ops->memory(b, 1, &m), 0);
	assert_int_equal(m.used, 700ULL * GS_MIB);
	assert_int_equal(b->ops->processes(b, 1, &p, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, getpid());
	free(p);
	gs_gpu_backend_close(b);
}

/* The wait loop's poll: every GPU's memory in one exchange, each with its
 * own status. */
static void test_memory_many(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	const unsigned idx[3] = { 1, 0, 1 };
	struct gs_gpu_mem m[3];
	int errs[3] = { 1, 1, 1 };

	add_ctx(fx, "a", getpid(), 3, 300, "compute");
	add_ctx(fx, "b", getpid(), 0, 200, "compute");
	b = open_ok(fx->lib, 0);
	assert_non_null(b->ops->memory_many);
	assert_int_equal(b->ops->memory_many(b, idx, 3, m, errs), 0);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], 0);
	assert_int_equal(errs[2], 0);
	assert_int_equal(m[0].used, 300ULL * GS_MIB);
	assert_int_equal(m[1].used, 200ULL * GS_MIB);
	assert_int_equal(m[2].used, 300ULL * GS_MIB);
	assert_int_equal(m[1].reserved, 615ULL * GS_MIB);
	assert_int_equal(b->ops->memory_many(b, (const unsigned[]){ 2 }, 1, m, errs), -EINVAL);
	gs_gpu_backend_close(b);
}

/* The helper keeps nothing of ours: a lock we held when it was forked is
 * free once we let go of it (the reclaim lock, a holder's context), and its
 * fds are /dev/null on 0-2 and its socket. */
static void test_helper_keeps_no_fds(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	char path[256], link[256], target[256];
	int lock_fd, other, nfd = 0;

	snprintf(path, sizeof(path), "%s/lock", fx->dir);
	lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(lock_fd >= 0);
	assert_int_equal(flock(lock_fd, LOCK_EX), 0);
	b = open_ok(fx->lib, 0);
	close(lock_fd);
	other = open(path, O_RDWR | O_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), 0);
	close(other);

	for (int fd = 0; fd < 64; fd++) {
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)b->helper_pid, fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		nfd++;
		if (fd <= 2)
			assert_string_equal(target, "/dev/null");
		else
			assert_true(fd == 3 && strncmp(target, "socket:", 7) == 0);
	}
	assert_int_equal(nfd, 4);
	gs_gpu_backend_close(b);
}

/* A helper that dies (a crash in the library): -EIO with the signal named,
 * and every later call fails at once. */
static void test_helper_died(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b = open_ok(fx->lib, 0);
	struct gs_gpu_mem m;
	int st = 0;

	assert_int_equal(kill(b->helper_pid, SIGKILL), 0);
	assert_int_equal(b->ops->memory(b, 0, &m), -EIO);
	assert_non_null(strstr(b->error, "killed by signal 9"));
	assert_int_equal(b->ops->memory(b, 1, &m), -EIO);
	/* Reaped by the backend when it saw the death. */
	assert_int_equal(waitpid(b->helper_pid, &st, WNOHANG), -1);
	gs_gpu_backend_close(b);
}

/* What the helper costs: opening (fork, then NVML's load and init in the
 * child) and one memory() exchange, against the same in this process.
 * Printed for the record (docs/benchmarks.md); the bounds are loose. */
static void test_helper_overhead(void **state)
{
	struct fixture *fx = *state;
	struct gs_nvml_opts o = { .lib_path = fx->lib };
	struct gs_gpu_backend *child, *direct = NULL;
	struct gs_gpu_mem m;
	uint64_t t0, open_child = 0, open_direct = 0, dt_child, dt_direct;
	unsigned calls = 0, direct_calls = 0;
	char err[256];
	const int opens = 20;

	for (int i = 0; i < opens; i++) {
		t0 = gs_now_ns();
		child = open_ok(fx->lib, 0);
		open_child += gs_now_ns() - t0;
		gs_gpu_backend_close(child);
		t0 = gs_now_ns();
		assert_int_equal(gs_nvml_open(&o, NULL, &direct, err, sizeof(err)), 0);
		open_direct += gs_now_ns() - t0;
		gs_gpu_backend_close(direct);
	}

	child = open_ok(fx->lib, 0);
	assert_int_equal(gs_nvml_open(&o, NULL, &direct, err, sizeof(err)), 0);
	t0 = gs_now_ns();
	while (gs_now_ns() - t0 < 300000000ULL) {
		assert_int_equal(child->ops->memory(child, 0, &m), 0);
		calls++;
	}
	dt_child = gs_now_ns() - t0;
	t0 = gs_now_ns();
	while (gs_now_ns() - t0 < 300000000ULL) {
		assert_int_equal(direct->ops->memory(direct, 0, &m), 0);
		direct_calls++;
	}
	dt_direct = gs_now_ns() - t0;

	double us_child = dt_child / 1e3 / calls, us_direct = dt_direct / 1e3 / direct_calls;
	fprintf(stderr, "# open: helper %.0f us, in-process %.0f us (fork and hand-over %.0f us); memory(): helper"
		" %.1f us/call, in-process %.1f us/call (exchange %.1f us)\n",
		open_child / 1e3 / opens, open_direct / 1e3 / opens, (double)(open_child - open_direct) / 1e3 / opens,
		us_child, us_direct, us_child - us_direct);
	/* The wait loop polls every 5 ms: an exchange must stay far below. */
	assert_true(us_child < 1000.0);
	gs_gpu_backend_close(child);
	gs_gpu_backend_close(direct);
}

/* A hung driver call: -ETIMEDOUT at the deadline, the call and the GPU named,
 * the helper killed (a user-space hang dies of it) and not waited for; then
 * every call fails at once, and close() returns at once. */
static void test_hang_deadline(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	struct gs_gpu_mem m;
	struct gs_gpu g;
	struct gs_gpu_proc *p = NULL;
	size_t n;
	unsigned count;
	uint64_t t0, dt;
	pid_t helper;
	int st = 0;

	write_file(fx->dir, "inject", "hang nvmlDeviceGetMemoryInfo_v2 gpu=1\n");
	b = open_ok(fx->lib, 300);
	helper = b->helper_pid;
	assert_int_equal(b->ops->info(b, 0, &g), 0);
	t0 = gs_now_ms();
	assert_int_equal(b->ops->memory(b, 1, &m), -ETIMEDOUT);
	dt = gs_now_ms() - t0;
	assert_true(dt >= 290 && dt < 1500);
	assert_non_null(strstr(b->error, "GPU 1: nvmlDeviceGetMemoryInfo_v2 did not return within 0.3 s"));
	assert_non_null(strstr(b->error, "reboot or reset needed"));

	t0 = gs_now_ms();
	assert_int_equal(b->ops->memory(b, 0, &m), -ETIMEDOUT);
	assert_int_equal(b->ops->info(b, 1, &g), -ETIMEDOUT);
	assert_int_equal(b->ops->processes(b, 1, &p, &n), -ETIMEDOUT);
	assert_int_equal(b->ops->count(b, &count), -ETIMEDOUT);
	gs_gpu_backend_close(b);
	assert_true(gs_now_ms() - t0 < 50);
	/* Killed, not reaped: it is ours to reap here. */
	assert_int_equal(waitpid(helper, &st, 0), helper);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* A hang during open: open fails with -ETIMEDOUT instead of blocking, and
 * the reason names the call. */
static void test_hang_in_open(void **state)
{
	struct fixture *fx = *state;
	struct gs_nvml_opts o = { .lib_path = fx->lib_r535, .call_timeout_ms = 200 };
	struct gs_gpu_backend *b = NULL;
	char err[256] = "";
	uint64_t t0 = gs_now_ms();

	write_file(fx->dir, "inject", "hang nvmlDeviceGetCount_v2\n");
	assert_int_equal(gs_nvml_child_open(&o, &b, err, sizeof(err)), -ETIMEDOUT);
	assert_true(gs_now_ms() - t0 < 1500);
	assert_null(b);
	assert_non_null(strstr(err, "nvmlDeviceGetCount_v2 did not return within 0.2 s"));
}

/* The deadline is per call: info() makes five calls of 150 ms each, 750 ms
 * in all, and passes on a 400 ms deadline; one call of 600 ms does not. */
static void test_deadline_per_call(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	struct gs_gpu g;

	write_file(fx->dir, "inject",
		   "delay nvmlDeviceGetMinorNumber 150\n"
		   "delay nvmlDeviceGetUUID 150\n"
		   "delay nvmlDeviceGetName 150\n"
		   "delay nvmlDeviceGetPciInfo_v3 150\n"
		   "delay nvmlDeviceGetMemoryInfo_v2 150 gpu=0\n"
		   "delay nvmlDeviceGetMemoryInfo_v2 600 gpu=1\n");
	b = open_ok(fx->lib, 400);
	assert_int_equal(b->ops->info(b, 0, &g), 0);
	assert_string_equal(g.uuid, UUID0);
	assert_int_equal(b->ops->info(b, 1, &g), -ETIMEDOUT);
	assert_non_null(strstr(b->error, "GPU 1: nvmlDeviceGetMemoryInfo_v2 did not return within 0.4 s"));
	gs_gpu_backend_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity_and_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_r535_stride, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_version_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_not_loaded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_library, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_v1_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_no_v2_symbol, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_permission_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_helper_keeps_no_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_helper_died, setup, teardown),
		cmocka_unit_test_setup_teardown(test_helper_overhead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deadline_per_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang_in_open, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

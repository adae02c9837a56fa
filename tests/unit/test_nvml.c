/* The NVML backend against the fake libnvidia-ml (tests/fakes/fake_nvml.c,
 * docs/testing.md): identity, memory, process lists and their layouts, fault
 * injection and the per-call deadline. Run from the repository root; the
 * build directory comes from $GPUSLATE_BUILD (default "build"). */
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
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "gpu/nvml_abi.h"
#include "util/util.h"

#define UUID0 "GPU-a2983c1e-0000-4000-8000-000000000000"
#define UUID1 "GPU-a2983c1e-0000-4000-8000-000000000001"

struct fixture {
	char dir[64];      /* the state directory */
	char lib[512];     /* fake library, normal build */
	char lib_r535[512];
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
	int r = gs_nvml_open(&o, &b, err, sizeof(err));

	if (r < 0)
		print_error("gs_nvml_open(%s): %d %s\n", lib, r, err);
	assert_int_equal(r, 0);
	assert_non_null(b);
	assert_string_equal(b->ops->name, "nvml");
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
	assert_int_equal(gs_nvml_open(&o, &b, err, sizeof(err)), -EPROTO);
	assert_null(b);
	assert_string_equal(err, "nvmlInit_v2: Driver/library version mismatch");

	/* errbuf may be NULL. */
	assert_int_equal(gs_nvml_open(&o, &b, NULL, 0), -EPROTO);
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
	assert_int_equal(gs_nvml_open(&o, &b, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "nvmlInit_v2: Driver Not Loaded"));
}

static void test_missing_library(void **state)
{
	struct gs_nvml_opts o = { .lib_path = "/nonexistent/gpuslate/libnvidia-ml.so.1" };
	struct gs_gpu_backend *b = NULL;
	char err[256] = "";

	(void)state;
	assert_int_equal(gs_nvml_open(&o, &b, err, sizeof(err)), -ENOENT);
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
	assert_int_equal(g.mem_used, 615ULL * GS_MIB);
	assert_int_equal(g.mem_reserved, 0);
	assert_int_equal(b->ops->memory(b, 1, &m), 0);
	assert_false(m.v2);
	assert_int_equal(m.used, 512ULL * GS_MIB);
	gs_gpu_backend_close(b);
}

/* count_v2 includes GPUs that HandleByIndex refuses: listed, not usable. */
static void test_no_permission_gpu(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b;
	struct gs_gpu g;
	struct gs_gpu_mem m;
	struct gs_gpu_proc *p = NULL;
	size_t n;
	unsigned count;

	write_file(fx->dir, "inject", "fail nvmlDeviceGetHandleByIndex_v2 4\n");
	b = open_ok(fx->lib, 0);
	assert_int_equal(b->ops->count(b, &count), 0);
	assert_int_equal(count, 2);
	assert_int_equal(b->ops->info(b, 0, &g), -EACCES);
	assert_int_equal(b->ops->memory(b, 1, &m), -EACCES);
	assert_int_equal(b->ops->processes(b, 1, &p, &n), -EACCES);
	assert_null(p);
	gs_gpu_backend_close(b);
}

/* Throughput of the deadline worker: memory() through the backend against
 * the same fake call made directly. Printed for the record; the bound is
 * loose (the wait loop polls every few ms). */
static void test_worker_throughput(void **state)
{
	struct fixture *fx = *state;
	struct gs_gpu_backend *b = open_ok(fx->lib, 0);
	nvmlDeviceGetMemoryInfo_v2_fn mem_v2;
	nvmlDeviceGetHandleByIndex_fn by_index;
	nvmlDevice_t dev;
	struct gs_gpu_mem m;
	uint64_t t0, dt_worker, dt_direct;
	unsigned calls = 0, direct = 0;
	void *dl;

	t0 = gs_now_ns();
	while (gs_now_ns() - t0 < 300000000ULL) {
		assert_int_equal(b->ops->memory(b, 0, &m), 0);
		calls++;
	}
	dt_worker = gs_now_ns() - t0;

	/* The backend's init is still counted: direct calls work. */
	dl = dlopen(fx->lib, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(dl);
	*(void **)&mem_v2 = dlsym(dl, "nvmlDeviceGetMemoryInfo_v2");
	*(void **)&by_index = dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
	assert_non_null(mem_v2);
	assert_int_equal(by_index(0, &dev), NVML_SUCCESS);
	t0 = gs_now_ns();
	while (gs_now_ns() - t0 < 300000000ULL) {
		nvmlMemory_v2_t v = { .version = nvmlMemory_v2 };

		assert_int_equal(mem_v2(dev, &v), NVML_SUCCESS);
		direct++;
	}
	dt_direct = gs_now_ns() - t0;
	dlclose(dl);

	double rate = calls / (dt_worker / 1e9), rate_direct = direct / (dt_direct / 1e9);
	fprintf(stderr, "# memory() through the worker: %.0f calls/s (%.1f us/call); direct: %.0f calls/s"
		" (%.1f us/call); worker overhead %.1f us/call\n",
		rate, 1e6 / rate, rate_direct, 1e6 / rate_direct, 1e6 / rate - 1e6 / rate_direct);
	assert_true(rate > 1000.0);
	gs_gpu_backend_close(b);
}

/* A hung driver call: -ETIMEDOUT at the deadline, then every call fails at
 * once, and close() returns. The stuck library stays loaded for the rest of
 * this process, so this test runs last. */
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

	write_file(fx->dir, "inject", "hang nvmlDeviceGetMemoryInfo_v2\n");
	b = open_ok(fx->lib, 300);
	t0 = gs_now_ms();
	assert_int_equal(b->ops->memory(b, 0, &m), -ETIMEDOUT);
	dt = gs_now_ms() - t0;
	assert_true(dt >= 290 && dt < 1500);

	t0 = gs_now_ms();
	assert_int_equal(b->ops->memory(b, 0, &m), -ETIMEDOUT);
	assert_int_equal(b->ops->info(b, 1, &g), -ETIMEDOUT);
	assert_int_equal(b->ops->processes(b, 1, &p, &n), -ETIMEDOUT);
	assert_int_equal(b->ops->count(b, &count), -ETIMEDOUT);
	gs_gpu_backend_close(b);
	assert_true(gs_now_ms() - t0 < 50);
}

/* A hang during open: open fails with -ETIMEDOUT instead of blocking. Also
 * leaves a stuck thread, so it runs in the last group too. */
static void test_hang_in_open(void **state)
{
	struct fixture *fx = *state;
	struct gs_nvml_opts o = { .lib_path = fx->lib_r535, .call_timeout_ms = 200 };
	struct gs_gpu_backend *b = NULL;
	char err[256] = "";
	uint64_t t0 = gs_now_ms();

	write_file(fx->dir, "inject", "hang nvmlDeviceGetCount_v2\n");
	assert_int_equal(gs_nvml_open(&o, &b, err, sizeof(err)), -ETIMEDOUT);
	assert_true(gs_now_ms() - t0 < 1500);
	assert_null(b);
	assert_non_null(strstr(err, "nvmlDeviceGetCount_v2"));
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
		cmocka_unit_test_setup_teardown(test_no_permission_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worker_throughput, setup, teardown),
		/* Last: they leave a library with a thread stuck inside it. */
		cmocka_unit_test_setup_teardown(test_hang_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang_in_open, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

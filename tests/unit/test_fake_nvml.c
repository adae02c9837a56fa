/* Tests of the fake NVML (tests/fakes/fake_nvml.c): the simulated host is
 * only useful if it behaves like the real library where gpuslate depends on
 * it, so this checks those behaviours through dlopen(), as gpuslate loads it.
 * The state directory is built here in C; contexts are held with flock()
 * from this process, exactly as gs-holder holds them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu/nvml_abi.h"

#define TOTAL_MIB 143771ULL
#define RESERVED_MIB 615ULL

struct lib {
	void *dl;
	nvmlInit_fn init;
	nvmlShutdown_fn shutdown;
	nvmlErrorString_fn error_string;
	nvmlSystemGetDriverVersion_fn driver_version;
	nvmlSystemGetDriverVersion_fn nvml_version; /* same signature */
	nvmlDeviceGetCount_fn count_v2, count_v1;
	nvmlDeviceGetHandleByIndex_fn handle;
	nvmlDeviceGetName_fn name;
	nvmlDeviceGetUUID_fn uuid;
	nvmlDeviceGetPciInfo_fn pci;
	nvmlDeviceGetMinorNumber_fn minor;
	nvmlDeviceGetMemoryInfo_fn mem_v1;
	nvmlDeviceGetMemoryInfo_v2_fn mem_v2;
	nvmlDeviceGetProcesses_fn compute_v3, compute_v2, compute_v1, graphics_v3;
};

static struct lib L;
static char state[PATH_MAX];

/* ---- Helpers ------------------------------------------------------------- */

static void lib_path(char *buf, size_t size, const char *rel)
{
	const char *b = getenv("GPUSLATE_BUILD");

	snprintf(buf, size, "%s/%s", b && *b ? b : "build", rel);
}

static void *sym(void *dl, const char *name)
{
	void *p = dlsym(dl, name);

	if (!p)
		fail_msg("fake NVML lacks %s", name);
	return p;
}

static void write_file(const char *rel, const char *content)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 80];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", state, rel);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(content, f);
	assert_int_equal(fclose(f), 0);
	/* rename: a new inode, so the fake sees a change even within one mtime tick */
	assert_int_equal(rename(tmp, path), 0);
}

static void remove_file(const char *rel)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", state, rel);
	unlink(path);
}

static bool ctx_exists(const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/ctx/%s", state, name);
	return access(path, F_OK) == 0;
}

/* Creates ctx/<name> as gs-holder does (lock, then content) and returns the
 * fd holding the lock. */
static int hold_ctx(const char *name, unsigned int pid, unsigned int gpu, unsigned int mib,
		    unsigned int release_ms)
{
	char path[PATH_MAX + 64];
	char content[256];
	int fd, n;

	snprintf(path, sizeof(path), "%s/ctx/%s", state, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_SH), 0);
	n = snprintf(content, sizeof(content), "pid=%u\ngpu=%u\nmib=%u\nkind=compute\nrelease_ms=%u\n",
		     pid, gpu, mib, release_ms);
	assert_int_equal(write(fd, content, (size_t)n), n);
	return fd;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static nvmlDevice_t dev(unsigned int index)
{
	nvmlDevice_t d = NULL;

	assert_int_equal(L.handle(index, &d), NVML_SUCCESS);
	assert_non_null(d);
	return d;
}

static unsigned long long used_v2_mib(nvmlDevice_t d)
{
	nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };

	assert_int_equal(L.mem_v2(d, &m), NVML_SUCCESS);
	return m.used >> 20;
}

/* ---- Fixtures -------------------------------------------------------------- */

static int group_setup(void **st)
{
	char path[PATH_MAX + 64];
	char gpus[512];
	(void)st;

	snprintf(state, sizeof(state), "/tmp/gs-test-fake-nvml-XXXXXX");
	if (!mkdtemp(state))
		return -1;
	snprintf(path, sizeof(path), "%s/ctx", state);
	if (mkdir(path, 0755) < 0)
		return -1;
	snprintf(gpus, sizeof(gpus),
		 "# minor uuid total_mib reserved_mib pci_bus_id name\n"
		 "0 GPU-a2983c1e-0000-4000-8000-000000000000 %llu %llu 00000000:18:00.0 NVIDIA H200\n"
		 "\n"
		 "1 GPU-a2983c1e-0000-4000-8000-000000000001 %llu %llu 00000000:2A:00.0 NVIDIA H200\n",
		 TOTAL_MIB, RESERVED_MIB, TOTAL_MIB, RESERVED_MIB);
	write_file("gpus", gpus);
	setenv("FAKE_NVML_STATE", state, 1);

	lib_path(path, sizeof(path), "fakes/libnvidia-ml.so.1");
	L.dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!L.dl) {
		fprintf(stderr, "cannot load %s (%s): run `make fakes` first\n", path, dlerror());
		return -1;
	}
	L.init = (nvmlInit_fn)sym(L.dl, "nvmlInit_v2");
	L.shutdown = (nvmlShutdown_fn)sym(L.dl, "nvmlShutdown");
	L.error_string = (nvmlErrorString_fn)sym(L.dl, "nvmlErrorString");
	L.driver_version = (nvmlSystemGetDriverVersion_fn)sym(L.dl, "nvmlSystemGetDriverVersion");
	L.nvml_version = (nvmlSystemGetDriverVersion_fn)sym(L.dl, "nvmlSystemGetNVMLVersion");
	L.count_v2 = (nvmlDeviceGetCount_fn)sym(L.dl, "nvmlDeviceGetCount_v2");
	L.count_v1 = (nvmlDeviceGetCount_fn)sym(L.dl, "nvmlDeviceGetCount");
	L.handle = (nvmlDeviceGetHandleByIndex_fn)sym(L.dl, "nvmlDeviceGetHandleByIndex_v2");
	L.name = (nvmlDeviceGetName_fn)sym(L.dl, "nvmlDeviceGetName");
	L.uuid = (nvmlDeviceGetUUID_fn)sym(L.dl, "nvmlDeviceGetUUID");
	L.pci = (nvmlDeviceGetPciInfo_fn)sym(L.dl, "nvmlDeviceGetPciInfo_v3");
	L.minor = (nvmlDeviceGetMinorNumber_fn)sym(L.dl, "nvmlDeviceGetMinorNumber");
	L.mem_v1 = (nvmlDeviceGetMemoryInfo_fn)sym(L.dl, "nvmlDeviceGetMemoryInfo");
	L.mem_v2 = (nvmlDeviceGetMemoryInfo_v2_fn)sym(L.dl, "nvmlDeviceGetMemoryInfo_v2");
	L.compute_v3 = (nvmlDeviceGetProcesses_fn)sym(L.dl, "nvmlDeviceGetComputeRunningProcesses_v3");
	L.compute_v2 = (nvmlDeviceGetProcesses_fn)sym(L.dl, "nvmlDeviceGetComputeRunningProcesses_v2");
	L.compute_v1 = (nvmlDeviceGetProcesses_fn)sym(L.dl, "nvmlDeviceGetComputeRunningProcesses");
	L.graphics_v3 = (nvmlDeviceGetProcesses_fn)sym(L.dl, "nvmlDeviceGetGraphicsRunningProcesses_v3");
	return 0;
}

static int group_teardown(void **st)
{
	char cmd[PATH_MAX + 32];
	(void)st;

	if (L.dl)
		dlclose(L.dl);
	/* Our own mkdtemp() directory, nothing else. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	return system(cmd) == 0 ? 0 : -1;
}

/* Every test starts initialised, with no contexts and no faults. */
static int setup(void **st)
{
	(void)st;
	remove_file("inject");
	setenv("FAKE_NVML_STATE", state, 1);
	return L.init() == NVML_SUCCESS ? 0 : -1;
}

static int teardown(void **st)
{
	(void)st;
	remove_file("inject");
	return L.shutdown() == NVML_SUCCESS ? 0 : -1;
}

/* ---- Tests ----------------------------------------------------------------- */

static void test_uninitialized_and_refcount(void **st)
{
	unsigned int n = 0;
	(void)st;

	assert_int_equal(L.count_v2(&n), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(L.shutdown(), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(L.init(), NVML_SUCCESS);
	assert_int_equal(L.init(), NVML_SUCCESS);
	assert_int_equal(L.shutdown(), NVML_SUCCESS);
	assert_int_equal(L.count_v2(&n), NVML_SUCCESS); /* still one reference */
	assert_int_equal(L.shutdown(), NVML_SUCCESS);
	assert_int_equal(L.count_v2(&n), NVML_ERROR_UNINITIALIZED);
}

static void test_no_state_and_error_strings(void **st)
{
	(void)st;

	unsetenv("FAKE_NVML_STATE");
	assert_int_equal(L.init(), NVML_ERROR_DRIVER_NOT_LOADED);
	setenv("FAKE_NVML_STATE", state, 1);
	assert_string_equal(L.error_string(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");
	assert_string_equal(L.error_string(NVML_ERROR_LIB_RM_VERSION_MISMATCH), "Driver/library version mismatch");
	assert_string_equal(L.error_string(12345), "Unknown Error");
}

static void test_counts_and_identity(void **st)
{
	unsigned int n = 0, minor = 99;
	char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	nvmlPciInfo_t pci;
	nvmlDevice_t d = NULL;
	(void)st;

	assert_int_equal(L.count_v2(&n), NVML_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(L.count_v1(&n), NVML_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(L.handle(2, &d), NVML_ERROR_INVALID_ARGUMENT);

	d = dev(1);
	assert_int_equal(L.uuid(d, buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "GPU-a2983c1e-0000-4000-8000-000000000001");
	assert_int_equal(L.uuid(d, buf, 8), NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(L.name(d, buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "NVIDIA H200");
	assert_int_equal(L.minor(d, &minor), NVML_SUCCESS);
	assert_int_equal(minor, 1);
	assert_int_equal(L.pci(d, &pci), NVML_SUCCESS);
	assert_string_equal(pci.busId, "00000000:2A:00.0");
	assert_string_equal(pci.busIdLegacy, "0000:2A:00.0");
	assert_int_equal(pci.bus, 0x2a);
	assert_int_equal(L.driver_version(buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "580.159.04");
}

static void test_memory_v2_version_check(void **st)
{
	nvmlMemory_v2_t m = { .version = 2 };
	(void)st;

	/* The documented "2" is wrong: the real library rejects it with 13. */
	assert_int_equal(L.mem_v2(dev(0), &m), NVML_ERROR_FUNCTION_NOT_FOUND);
	memset(&m, 0, sizeof(m));
	m.version = nvmlMemory_v2;
	assert_int_equal(L.mem_v2(dev(0), &m), NVML_SUCCESS);
	assert_int_equal(m.total, TOTAL_MIB << 20);
	assert_int_equal(m.reserved, RESERVED_MIB << 20);
	assert_int_equal(m.used, 0);
	assert_int_equal(m.free, (TOTAL_MIB - RESERVED_MIB) << 20);
}

static void test_memory_v1_used_includes_reserved(void **st)
{
	nvmlMemory_t m;
	(void)st;

	assert_int_equal(L.mem_v1(dev(0), &m), NVML_SUCCESS);
	assert_int_equal(m.total, TOTAL_MIB << 20);
	assert_int_equal(m.used, RESERVED_MIB << 20);
	assert_int_equal(m.free, (TOTAL_MIB - RESERVED_MIB) << 20);
}

static void test_context_held_by_flock(void **st)
{
	unsigned int n = 0;
	nvmlProcessInfo_v2_t p[4];
	int fd = hold_ctx("5001-0", 5001, 0, 2048, 0);
	(void)st;

	assert_int_equal(used_v2_mib(dev(0)), 2048);
	assert_int_equal(used_v2_mib(dev(1)), 0);
	/* size query: 0 entries -> INSUFFICIENT_SIZE with the count needed */
	assert_int_equal(L.compute_v3(dev(0), &n, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, 1);
	n = 4;
	assert_int_equal(L.compute_v3(dev(0), &n, p), NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, 5001);
	assert_int_equal(p[0].usedGpuMemory, 2048ULL << 20);
	/* not a graphics context; and GPU 1 has none: SUCCESS with 0 */
	n = 0;
	assert_int_equal(L.graphics_v3(dev(0), &n, NULL), NVML_SUCCESS);
	assert_int_equal(n, 0);
	assert_int_equal(L.compute_v3(dev(1), &n, NULL), NVML_SUCCESS);
	assert_int_equal(n, 0);

	/* Closing the last holder releases the context at once (release_ms=0). */
	close(fd);
	assert_int_equal(used_v2_mib(dev(0)), 0);
	n = 0;
	assert_int_equal(L.compute_v3(dev(0), &n, NULL), NVML_SUCCESS);
	assert_int_equal(n, 0);
	assert_false(ctx_exists("5001-0"));
}

static void test_release_delay(void **st)
{
	char path[PATH_MAX + 64];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int fd = hold_ctx("5002-1", 5002, 1, 4096, 400);
	(void)st;

	assert_int_equal(used_v2_mib(dev(1)), 4096);
	close(fd);
	/* Slow teardown: still counted right after the holder is gone... */
	assert_int_equal(used_v2_mib(dev(1)), 4096);
	snprintf(path, sizeof(path), "%s/ctx/5002-1", state);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(getdelim(&buf, &len, '\0', f) > 0);
	fclose(f);
	assert_non_null(strstr(buf, "\nfreed_at_ms="));
	free(buf);
	/* ...and gone once release_ms have passed. */
	sleep_ms(500);
	assert_int_equal(used_v2_mib(dev(1)), 0);
	assert_false(ctx_exists("5002-1"));
}

static void test_process_entry_strides(void **st)
{
	unsigned char buf[4 * 32];
	unsigned int n = 1, pid;
	unsigned long long mem;
	int fd1 = hold_ctx("6001-0", 6001, 0, 1000, 0);
	int fd2 = hold_ctx("6002-0", 6002, 0, 3000, 0);
	(void)st;

	/* too small: INSUFFICIENT_SIZE and the count needed */
	assert_int_equal(L.compute_v3(dev(0), &n, buf), NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, 2);

	/* _v3 and _v2: 24-byte entries, MIG ids 0xFFFFFFFF, nothing past 2 entries */
	nvmlDeviceGetProcesses_fn fns[] = { L.compute_v3, L.compute_v2 };
	for (size_t f = 0; f < 2; f++) {
		memset(buf, 0xAB, sizeof(buf));
		n = 4;
		assert_int_equal(fns[f](dev(0), &n, buf), NVML_SUCCESS);
		assert_int_equal(n, 2);
		unsigned int pids = 0;
		for (unsigned int i = 0; i < 2; i++) {
			nvmlProcessInfo_v2_t p;
			memcpy(&p, buf + i * 24, sizeof(p));
			assert_true(p.pid == 6001 || p.pid == 6002);
			assert_int_equal(p.usedGpuMemory, (p.pid == 6001 ? 1000ULL : 3000ULL) << 20);
			assert_int_equal(p.gpuInstanceId, 0xFFFFFFFFu);
			assert_int_equal(p.computeInstanceId, 0xFFFFFFFFu);
			pids += p.pid;
		}
		assert_int_equal(pids, 6001 + 6002);
		assert_int_equal(buf[48], 0xAB);
	}

	/* unversioned: 16-byte entries */
	memset(buf, 0xAB, sizeof(buf));
	n = 4;
	assert_int_equal(L.compute_v1(dev(0), &n, buf), NVML_SUCCESS);
	assert_int_equal(n, 2);
	memcpy(&pid, buf + 16, sizeof(pid));
	memcpy(&mem, buf + 24, sizeof(mem));
	assert_true(pid == 6001 || pid == 6002);
	assert_int_equal(mem, (pid == 6001 ? 1000ULL : 3000ULL) << 20);
	assert_int_equal(buf[32], 0xAB);

	close(fd1);
	close(fd2);
	assert_int_equal(used_v2_mib(dev(0)), 0);
}

static void test_inject_fail(void **st)
{
	nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
	char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	nvmlDevice_t d = dev(0);
	(void)st;

	write_file("inject", "# comment\nfail nvmlDeviceGetMemoryInfo_v2 15\n");
	assert_int_equal(L.mem_v2(d, &m), NVML_ERROR_GPU_IS_LOST);
	/* re-read when it changes */
	write_file("inject", "\n");
	assert_int_equal(L.mem_v2(d, &m), NVML_SUCCESS);
	/* fail_after counts this process's calls of that symbol (only this test
	 * calls nvmlSystemGetNVMLVersion) */
	write_file("inject", "fail_after nvmlSystemGetNVMLVersion 2 999\n");
	assert_int_equal(L.nvml_version(buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "13.580.159.04");
	assert_int_equal(L.nvml_version(buf, sizeof(buf)), NVML_SUCCESS);
	assert_int_equal(L.nvml_version(buf, sizeof(buf)), NVML_ERROR_UNKNOWN);
	/* init itself can fail, e.g. after a driver upgrade without reboot */
	write_file("inject", "fail nvmlInit_v2 18\n");
	assert_int_equal(L.init(), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
}

static void test_inject_garbage_processes(void **st)
{
	nvmlProcessInfo_v2_t p[8];
	unsigned int n = 8;
	bool pid0 = false, pidmax = false, huge = false;
	int fd = hold_ctx("7001-0", 7001, 0, 100, 0);
	(void)st;

	write_file("inject", "garbage_processes\n");
	assert_int_equal(L.compute_v3(dev(0), &n, p), NVML_SUCCESS);
	assert_int_equal(n, 4);
	for (unsigned int i = 0; i < n; i++) {
		pid0 |= p[i].pid == 0;
		pidmax |= p[i].pid == 0xFFFFFFFFu;
		huge |= p[i].usedGpuMemory > (TOTAL_MIB << 20);
	}
	assert_true(pid0 && pidmax && huge);
	close(fd);
}

/* The early-R535 variant: 32-byte _v3 entries and no DetailList symbol. */
static void test_early_r535_variant(void **st)
{
	char path[PATH_MAX];
	unsigned char buf[2 * 32];
	unsigned int n = 2;
	nvmlProcessDetail_v1_t e;
	void *dl;
	int fd = hold_ctx("8001-0", 8001, 0, 512, 0);
	(void)st;

	lib_path(path, sizeof(path), "fakes/r535/libnvidia-ml.so.1");
	/* Both files are named libnvidia-ml.so.1 but have no DT_SONAME, so
	 * glibc tells them apart by path and file identity. */
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail_msg("cannot load %s: %s", path, dlerror());
	assert_null(dlsym(dl, "nvmlDeviceGetRunningProcessDetailList"));
	assert_non_null(dlsym(dl, "nvmlDeviceGetConfComputeMemSizeInfo"));
	assert_non_null(dlsym(L.dl, "nvmlDeviceGetRunningProcessDetailList"));
	assert_true(dl != L.dl);

	nvmlInit_fn init = (nvmlInit_fn)sym(dl, "nvmlInit_v2");
	nvmlShutdown_fn shutdown = (nvmlShutdown_fn)sym(dl, "nvmlShutdown");
	nvmlDeviceGetHandleByIndex_fn handle = (nvmlDeviceGetHandleByIndex_fn)sym(dl, "nvmlDeviceGetHandleByIndex_v2");
	nvmlDeviceGetProcesses_fn v3 = (nvmlDeviceGetProcesses_fn)sym(dl, "nvmlDeviceGetComputeRunningProcesses_v3");
	nvmlDevice_t d = NULL;
	assert_int_equal(init(), NVML_SUCCESS);
	assert_int_equal(handle(0, &d), NVML_SUCCESS);
	memset(buf, 0xAB, sizeof(buf));
	assert_int_equal(v3(d, &n, buf), NVML_SUCCESS);
	assert_int_equal(n, 1);
	memcpy(&e, buf, sizeof(e));
	assert_int_equal(e.pid, 8001);
	assert_int_equal(e.usedGpuMemory, 512ULL << 20);
	assert_int_equal(e.usedGpuCcProtectedMemory, 0);
	assert_int_equal(buf[32], 0xAB);
	assert_int_equal(shutdown(), NVML_SUCCESS);
	dlclose(dl);
	close(fd);
}

/* The teardown lasts at least release_ms by any clock: the memory is still
 * counted by every call made less than release_ms after the call that first
 * saw the holder gone (issue 15: a 1.499 s "slow teardown" of 1.5 s). */
static void test_release_never_early(void **st)
{
	struct timespec ts;
	(void)st;

	for (int i = 0; i < 10; i++) {
		char name[32];
		uint64_t before, after;
		int fd;

		snprintf(name, sizeof(name), "5100-%d", i);
		fd = hold_ctx(name, 5100, 1, 64, 20);
		close(fd);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		before = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		/* This call sees the lock free and starts the teardown. */
		assert_int_equal(used_v2_mib(dev(1)), 64);
		while (used_v2_mib(dev(1)) != 0)
			;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		after = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		if (after - before < 20000000ULL)
			fail_msg("released after %.3f ms, before its 20 ms teardown", (after - before) / 1e6);
	}
}

/* gpu=N limits a fault to one GPU; delay slows a call; block reads a file
 * first (here an ordinary one: the call then goes on). */
static void test_inject_per_gpu_delay_block(void **st)
{
	nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
	char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE], text[PATH_MAX + 128];
	nvmlDevice_t d = NULL;
	struct timespec t0, t1;
	(void)st;

	write_file("inject", "fail nvmlDeviceGetMemoryInfo_v2 15 gpu=1\nfail nvmlDeviceGetHandleByIndex_v2 4 gpu=0\n");
	assert_int_equal(L.handle(0, &d), NVML_ERROR_NO_PERMISSION);
	assert_int_equal(L.mem_v2(dev(1), &m), NVML_ERROR_GPU_IS_LOST);
	write_file("inject", "fail nvmlDeviceGetMemoryInfo_v2 15 gpu=1\n");
	assert_int_equal(L.mem_v2(dev(0), &m), NVML_SUCCESS);

	write_file("inject", "delay nvmlDeviceGetUUID 100 gpu=0\n");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(L.uuid(dev(0), buf, sizeof(buf)), NVML_SUCCESS);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 100);

	snprintf(text, sizeof(text), "block nvmlDeviceGetUUID %s/gpus gpu=1\n", state);
	write_file("inject", text);
	assert_int_equal(L.uuid(dev(1), buf, sizeof(buf)), NVML_SUCCESS);
	assert_string_equal(buf, "GPU-a2983c1e-0000-4000-8000-000000000001");
}

/* A context with mem_unknown=1: listed, its memory NVML_VALUE_NOT_AVAILABLE
 * (while v2 used still counts it). */
static void test_mem_unknown(void **st)
{
	char path[PATH_MAX + 64];
	nvmlProcessInfo_v2_t p[2];
	unsigned int n = 2;
	int fd;
	(void)st;

	snprintf(path, sizeof(path), "%s/ctx/5200-0", state);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_SH), 0);
	assert_true(dprintf(fd, "pid=5200\ngpu=0\nmib=300\nkind=compute\nmem_unknown=1\n") > 0);
	assert_int_equal(L.compute_v3(dev(0), &n, p), NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, 5200);
	assert_true(p[0].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE_ULL);
	assert_int_equal(used_v2_mib(dev(0)), 300);
	close(fd);
}

/* no_process=1: memory the driver keeps with no process (after an Xid, a
 * leak): counted whatever the lock, in no process list, never released by
 * the library; removing the file is the "GPU reset". */
static void test_no_process_memory(void **st)
{
	nvmlProcessInfo_v2_t p[2];
	unsigned int n = 2;
	(void)st;

	write_file("ctx/leak-1", "gpu=1\nmib=4096\nno_process=1\n");
	assert_int_equal(used_v2_mib(dev(1)), 4096);
	assert_int_equal(L.compute_v3(dev(1), &n, p), NVML_SUCCESS);
	assert_int_equal(n, 0);
	/* unlocked, and still there on the next reads (no teardown) */
	assert_int_equal(used_v2_mib(dev(1)), 4096);
	assert_true(ctx_exists("leak-1"));
	assert_int_equal(used_v2_mib(dev(0)), 0);
	remove_file("ctx/leak-1");
	assert_int_equal(used_v2_mib(dev(1)), 0);
}

/* The pre-R510 variant: no v2 memory symbol; v1 used includes the reservation. */
static void test_no_memory_v2_variant(void **st)
{
	char path[PATH_MAX];
	nvmlMemory_t m;
	nvmlDevice_t d = NULL;
	void *dl;
	(void)st;

	lib_path(path, sizeof(path), "fakes/r470/libnvidia-ml.so.1");
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail_msg("cannot load %s: %s", path, dlerror());
	assert_null(dlsym(dl, "nvmlDeviceGetMemoryInfo_v2"));
	nvmlInit_fn init = (nvmlInit_fn)sym(dl, "nvmlInit_v2");
	nvmlShutdown_fn shutdown = (nvmlShutdown_fn)sym(dl, "nvmlShutdown");
	nvmlDeviceGetHandleByIndex_fn handle = (nvmlDeviceGetHandleByIndex_fn)sym(dl, "nvmlDeviceGetHandleByIndex_v2");
	nvmlDeviceGetMemoryInfo_fn mem = (nvmlDeviceGetMemoryInfo_fn)sym(dl, "nvmlDeviceGetMemoryInfo");
	assert_int_equal(init(), NVML_SUCCESS);
	assert_int_equal(handle(1, &d), NVML_SUCCESS);
	assert_int_equal(mem(d, &m), NVML_SUCCESS);
	assert_int_equal(m.used, RESERVED_MIB << 20);
	assert_int_equal(shutdown(), NVML_SUCCESS);
	dlclose(dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uninitialized_and_refcount),
		cmocka_unit_test(test_no_state_and_error_strings),
		cmocka_unit_test_setup_teardown(test_counts_and_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_v2_version_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_v1_used_includes_reserved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context_held_by_flock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_release_delay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_process_entry_strides, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inject_fail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inject_garbage_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_early_r535_variant, setup, teardown),
		cmocka_unit_test_setup_teardown(test_release_never_early, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inject_per_gpu_delay_block, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mem_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_process_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_memory_v2_variant, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* A fake libnvidia-ml.so.1 for CI machines without a GPU.
 *
 * It speaks the real NVML ABI (the declarations in gpu/nvml_abi.h, shared with
 * the real backend) and simulates the GPUs described by the state directory
 * $FAKE_NVML_STATE, as specified in docs/testing.md:
 *   gpus            the GPU table, read at the first nvmlInit*
 *   driver_version  optional, read at the first nvmlInit*
 *   ctx/<id>        GPU contexts; alive while someone holds a flock on them
 *   inject          fault injection, re-read whenever it changes
 *
 * The library is thread-safe like the real one: one mutex guards all state.
 * Hangs requested through `inject` happen outside that mutex, so a thread
 * stuck in a "hung" call does not wedge other threads, as with a real driver
 * that blocks one ioctl.
 *
 * Built three times: normally; with -DFAKE_EARLY_R535 to reproduce the early
 * R535 drivers that wrote 32-byte entries into _v3 buffers and lacked
 * nvmlDeviceGetRunningProcessDetailList; and with -DFAKE_NO_MEMORY_V2, a
 * library from before R510 that has only v1 memory info (whose used includes
 * the driver's reservation). */
#include "gpu/nvml_abi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* ---- Types nvml_abi.h does not declare (the backend only dlsym()s them) */

/* nvmlProcessDetailList_v1_t of nvml.h. */
typedef struct {
	unsigned int version;
	unsigned int mode;
	unsigned int numProcArrayEntries;
	nvmlProcessDetail_v1_t *procArray;
} fake_process_detail_list_t;
#define FAKE_PROCESS_DETAIL_LIST_V1 NVML_STRUCT_VERSION(sizeof(fake_process_detail_list_t), 1)
_Static_assert(sizeof(fake_process_detail_list_t) == 24, "nvmlProcessDetailList_v1_t layout");
_Static_assert(FAKE_PROCESS_DETAIL_LIST_V1 == 0x01000018, "nvmlProcessDetailList_v1 constant");

/* nvmlConfComputeMemSizeInfo_t of nvml.h. */
typedef struct {
	unsigned long long protectedMemSizeKib;
	unsigned long long unprotectedMemSizeKib;
} fake_conf_compute_mem_size_info_t;

/* ---- Prototypes of the exported symbols (the real signatures) ---------- */

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
#ifndef FAKE_NO_MEMORY_V2
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
#endif
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount, void *infos);
nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t device, fake_conf_compute_mem_size_info_t *memInfo);
#ifndef FAKE_EARLY_R535
nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, fake_process_detail_list_t *plist);
#endif

/* The backend calls these through the typedefs of nvml_abi.h: make the
 * compiler prove that our definitions have exactly those types. */
#define FAKE_SAME_TYPE(fn, type) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type), #fn " signature")
FAKE_SAME_TYPE(nvmlInit_v2, nvmlInit_fn);
FAKE_SAME_TYPE(nvmlShutdown, nvmlShutdown_fn);
FAKE_SAME_TYPE(nvmlErrorString, nvmlErrorString_fn);
FAKE_SAME_TYPE(nvmlSystemGetDriverVersion, nvmlSystemGetDriverVersion_fn);
FAKE_SAME_TYPE(nvmlDeviceGetCount_v2, nvmlDeviceGetCount_fn);
FAKE_SAME_TYPE(nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByIndex_fn);
FAKE_SAME_TYPE(nvmlDeviceGetName, nvmlDeviceGetName_fn);
FAKE_SAME_TYPE(nvmlDeviceGetUUID, nvmlDeviceGetUUID_fn);
FAKE_SAME_TYPE(nvmlDeviceGetPciInfo_v3, nvmlDeviceGetPciInfo_fn);
FAKE_SAME_TYPE(nvmlDeviceGetMinorNumber, nvmlDeviceGetMinorNumber_fn);
FAKE_SAME_TYPE(nvmlDeviceGetMemoryInfo, nvmlDeviceGetMemoryInfo_fn);
#ifndef FAKE_NO_MEMORY_V2
FAKE_SAME_TYPE(nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetMemoryInfo_v2_fn);
#endif
FAKE_SAME_TYPE(nvmlDeviceGetComputeRunningProcesses_v3, nvmlDeviceGetProcesses_fn);

/* ---- Symbols, for fault injection and per-process call counters -------- */

#define FAKE_SYMBOLS(X) \
	X(nvmlInit_v2) X(nvmlInit) X(nvmlInitWithFlags) X(nvmlShutdown) \
	X(nvmlSystemGetDriverVersion) X(nvmlSystemGetNVMLVersion) X(nvmlSystemGetProcessName) \
	X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetCount) \
	X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetHandleByIndex) X(nvmlDeviceGetHandleByUUID) \
	X(nvmlDeviceGetName) X(nvmlDeviceGetUUID) \
	X(nvmlDeviceGetPciInfo_v3) X(nvmlDeviceGetPciInfo_v2) X(nvmlDeviceGetPciInfo) \
	X(nvmlDeviceGetMinorNumber) X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetMemoryInfo_v2) \
	X(nvmlDeviceGetComputeRunningProcesses_v3) X(nvmlDeviceGetComputeRunningProcesses_v2) \
	X(nvmlDeviceGetComputeRunningProcesses) \
	X(nvmlDeviceGetGraphicsRunningProcesses_v3) X(nvmlDeviceGetGraphicsRunningProcesses_v2) \
	X(nvmlDeviceGetGraphicsRunningProcesses) \
	X(nvmlDeviceGetMPSComputeRunningProcesses_v3) X(nvmlDeviceGetMPSComputeRunningProcesses_v2) \
	X(nvmlDeviceGetMPSComputeRunningProcesses) \
	X(nvmlDeviceGetConfComputeMemSizeInfo) X(nvmlDeviceGetRunningProcessDetailList)

#define FAKE_SYM_ENUM(name) SYM_##name,
#define FAKE_SYM_NAME(name) #name,
enum fake_sym { FAKE_SYMBOLS(FAKE_SYM_ENUM) SYM_COUNT };
static const char *const sym_names[SYM_COUNT] = { FAKE_SYMBOLS(FAKE_SYM_NAME) };

/* ---- Limits: every buffer is bounded, oversized state is an error ------ */

#define FAKE_MAX_GPUS 64
#define FAKE_MAX_DIRECTIVES 64
#define FAKE_MAX_CTX 65536        /* contexts considered per scan */
#define FAKE_MAX_STATE_FILE 65536 /* gpus, inject */
#define FAKE_MAX_CTX_FILE 4096
#define FAKE_DEFAULT_DRIVER "580.159.04"
#define FAKE_MIG_NONE 0xFFFFFFFFu
/* PCI ids of an H200 SXM (device 0x2335, vendor 0x10de): cosmetic only. */
#define FAKE_PCI_DEVICE_ID 0x233510DEu
#define FAKE_PCI_SUBSYS_ID 0x18BE10DEu

struct fake_gpu {
	unsigned int minor;
	unsigned long long total_mib;
	unsigned long long reserved_mib;
	unsigned int domain, bus, dev, fn;
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
};

enum fake_kind { KIND_COMPUTE, KIND_GRAPHICS, KIND_MPS, KIND_ALL };

enum directive_type { DIR_FAIL, DIR_FAIL_AFTER, DIR_HANG, DIR_HANG_AFTER, DIR_BLOCK, DIR_BLOCK_AFTER, DIR_DELAY };

#define FAKE_MAX_BLOCK_PATH 512

struct directive {
	enum directive_type type;
	enum fake_sym sym;
	unsigned long long after; /* *_after: calls that still behave; delay: ms */
	nvmlReturn_t code;
	int gpu;                  /* gpu=N: only calls about GPU index N; -1: any */
	char path[FAKE_MAX_BLOCK_PATH]; /* block*: the file the call reads first */
};

struct inject_state {
	bool present; /* the file existed at the last check */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	size_t ndirectives;
	struct directive directives[FAKE_MAX_DIRECTIVES];
	bool garbage_processes;
};

/* Everything below is guarded by `lock`. Handles are pointers into `gpus`;
 * they stay valid across shutdown/init because the array is static, and
 * check_device() rejects those beyond the current count. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int init_refs;
static char state_dir[PATH_MAX];
static char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
static unsigned int ngpus;
static struct fake_gpu gpus[FAKE_MAX_GPUS];
static struct inject_state inject;
static unsigned long long call_counts[SYM_COUNT];

/* ---- Small helpers ----------------------------------------------------- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Whole-string unsigned decimal parse; rejects signs, junk and overflow. */
static bool parse_ull(const char *s, unsigned long long max, unsigned long long *ret)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*ret = v;
	return true;
}

/* Whole-string signed decimal parse, for return codes. */
static bool parse_code(const char *s, nvmlReturn_t *ret)
{
	char *end;
	long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < INT_MIN || v > INT_MAX)
		return false;
	*ret = (nvmlReturn_t)v;
	return true;
}

/* Reads a whole (small) file into a NUL-terminated malloc'd buffer.
 * Returns 0 or -errno; -EFBIG when it exceeds max. */
static int read_small_fd(int fd, size_t max, char **ret)
{
	char *buf = malloc(max + 1);
	size_t len = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + len, max + 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(buf);
			return -EFBIG;
		}
	}
	buf[len] = '\0';
	*ret = buf;
	return 0;
}

static int read_small_file(const char *path, size_t max, char **ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = read_small_fd(fd, max, ret);
	close(fd);
	return r;
}

static char *strip(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* Copies a string into a caller buffer with NVML's size rules. */
static nvmlReturn_t copy_out(char *dst, unsigned int length, const char *src)
{
	size_t n = strlen(src);

	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, n + 1);
	return NVML_SUCCESS;
}

/* ---- Fault injection ---------------------------------------------------- */

static bool lookup_sym(const char *name, enum fake_sym *ret)
{
	for (int i = 0; i < SYM_COUNT; i++)
		if (strcmp(sym_names[i], name) == 0) {
			*ret = (enum fake_sym)i;
			return true;
		}
	return false;
}

/* Parses one directive line. Bad lines are ignored rather than failing every
 * call: a typo in a test should show up as "the fault did not happen". */
static void parse_directive(char *line)
{
	char *save = NULL;
	char *words[6] = { 0 };
	size_t n = 0;
	struct directive d = { .gpu = -1 };
	unsigned long long after = 0, gpu;

	for (char *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (n == sizeof(words) / sizeof(words[0]))
			return;
		words[n++] = w;
	}
	if (n == 0 || words[0][0] == '#')
		return;
	/* A trailing gpu=N limits any fault to the calls about GPU N. */
	if (n > 2 && strncmp(words[n - 1], "gpu=", 4) == 0) {
		if (!parse_ull(words[n - 1] + 4, FAKE_MAX_GPUS - 1, &gpu))
			return;
		d.gpu = (int)gpu;
		n--;
	}
	if (strcmp(words[0], "garbage_processes") == 0 && n == 1) {
		inject.garbage_processes = true;
		return;
	}
	if (n < 2 || !lookup_sym(words[1], &d.sym))
		return;
	if (strcmp(words[0], "fail") == 0 && n == 3 && parse_code(words[2], &d.code)) {
		d.type = DIR_FAIL;
	} else if (strcmp(words[0], "fail_after") == 0 && n == 4 &&
		   parse_ull(words[2], ULLONG_MAX, &after) && parse_code(words[3], &d.code)) {
		d.type = DIR_FAIL_AFTER;
	} else if (strcmp(words[0], "hang") == 0 && n == 2) {
		d.type = DIR_HANG;
	} else if (strcmp(words[0], "hang_after") == 0 && n == 3 &&
		   parse_ull(words[2], ULLONG_MAX, &after)) {
		d.type = DIR_HANG_AFTER;
	} else if (strcmp(words[0], "delay") == 0 && n == 3 && parse_ull(words[2], 3600000, &after)) {
		d.type = DIR_DELAY;
	} else if (strcmp(words[0], "block") == 0 && n == 3 && strlen(words[2]) < sizeof(d.path)) {
		d.type = DIR_BLOCK;
		strcpy(d.path, words[2]);
	} else if (strcmp(words[0], "block_after") == 0 && n == 4 && parse_ull(words[2], ULLONG_MAX, &after) &&
		   strlen(words[3]) < sizeof(d.path)) {
		d.type = DIR_BLOCK_AFTER;
		strcpy(d.path, words[3]);
	} else {
		return;
	}
	d.after = after;
	if (inject.ndirectives < FAKE_MAX_DIRECTIVES)
		inject.directives[inject.ndirectives++] = d;
}

/* Re-reads `inject` when its identity, size or mtime changed since the last
 * call (tests rewrite it between commands of a running scenario). */
static void inject_refresh(void)
{
	const char *dir = init_refs ? state_dir : getenv("FAKE_NVML_STATE");
	char path[PATH_MAX + 32];
	struct stat st;
	char *buf = NULL;

	if (!dir || !*dir || (size_t)snprintf(path, sizeof(path), "%s/inject", dir) >= sizeof(path) ||
	    stat(path, &st) < 0) {
		inject.present = false;
		inject.ndirectives = 0;
		inject.garbage_processes = false;
		return;
	}
	if (inject.present && inject.dev == st.st_dev && inject.ino == st.st_ino &&
	    inject.size == st.st_size && inject.mtime.tv_sec == st.st_mtim.tv_sec &&
	    inject.mtime.tv_nsec == st.st_mtim.tv_nsec)
		return;
	inject.present = true;
	inject.dev = st.st_dev;
	inject.ino = st.st_ino;
	inject.size = st.st_size;
	inject.mtime = st.st_mtim;
	inject.ndirectives = 0;
	inject.garbage_processes = false;
	if (read_small_file(path, FAKE_MAX_STATE_FILE, &buf) < 0)
		return;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		parse_directive(line);
	free(buf);
}

/* Blocks the calling thread forever, as a driver call stuck in the kernel
 * would. Signal handlers still run; the call just never returns. */
static _Noreturn void hang_forever(void)
{
	for (;;)
		pause();
}

/* Reads a file, as a driver call waits on the kernel: on a FUSE file system
 * whose server never answers (tests/fakes/hangfs.c) the calling thread sleeps
 * in the kernel, and once killed sleeps uninterruptibly (state D), exactly
 * like a thread stuck in a driver ioctl. Whatever the read gives, the call
 * then goes on. */
static void block_on(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
}

/* Counts the call and applies injected faults for a call about GPU index gpu
 * (-1: none). Returns NVML_SUCCESS when the call should go on normally.
 * Never returns when it must hang. */
static nvmlReturn_t inject_check(enum fake_sym sym, int gpu)
{
	nvmlReturn_t r = NVML_SUCCESS;
	bool hang = false;
	char block[FAKE_MAX_BLOCK_PATH] = "";
	unsigned long long calls, delay_ms = 0;

	pthread_mutex_lock(&lock);
	calls = ++call_counts[sym];
	inject_refresh();
	for (size_t i = 0; i < inject.ndirectives; i++) {
		const struct directive *d = &inject.directives[i];
		if (d->sym != sym || (d->gpu >= 0 && d->gpu != gpu))
			continue;
		if (d->type == DIR_HANG || (d->type == DIR_HANG_AFTER && calls > d->after)) {
			hang = true;
			break;
		}
		if (d->type == DIR_DELAY) {
			delay_ms = d->after;
			break;
		}
		if (d->type == DIR_BLOCK || (d->type == DIR_BLOCK_AFTER && calls > d->after)) {
			memcpy(block, d->path, sizeof(block));
			break;
		}
		if (d->type == DIR_FAIL || (d->type == DIR_FAIL_AFTER && calls > d->after)) {
			r = d->code;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (hang)
		hang_forever();
	if (block[0])
		block_on(block);
	if (delay_ms) {
		struct timespec ts = { (time_t)(delay_ms / 1000), (long)(delay_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	return r;
}

/* The index of a handle in the GPU table, -1 if it is none of ours. Only
 * addresses are compared: no lock needed. */
static int device_index(nvmlDevice_t device)
{
	struct fake_gpu *g = (struct fake_gpu *)(void *)device;

	for (int i = 0; i < FAKE_MAX_GPUS; i++)
		if (g == &gpus[i])
			return i;
	return -1;
}

/* Entry of every function that needs an initialised library: faults first
 * (so `fail` works even before init), then the init check. On success the
 * lock is held and the caller must call leave(). gpu: the GPU index the call
 * is about, -1 for none. */
static nvmlReturn_t enter_gpu(enum fake_sym sym, int gpu)
{
	nvmlReturn_t r = inject_check(sym, gpu);

	if (r != NVML_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	if (!init_refs) {
		pthread_mutex_unlock(&lock);
		return NVML_ERROR_UNINITIALIZED;
	}
	return NVML_SUCCESS;
}

static nvmlReturn_t enter(enum fake_sym sym)
{
	return enter_gpu(sym, -1);
}

static nvmlReturn_t enter_dev(enum fake_sym sym, nvmlDevice_t device)
{
	return enter_gpu(sym, device_index(device));
}

static nvmlReturn_t leave(nvmlReturn_t r)
{
	pthread_mutex_unlock(&lock);
	return r;
}

static struct fake_gpu *check_device(nvmlDevice_t device)
{
	struct fake_gpu *g = (struct fake_gpu *)(void *)device;

	for (unsigned int i = 0; i < ngpus; i++)
		if (g == &gpus[i])
			return g;
	return NULL;
}

/* ---- State: the GPU table ---------------------------------------------- */

/* `<minor> <uuid> <total_mib> <reserved_mib> <pci_bus_id> <name ...>` */
static bool parse_gpu_line(char *line, struct fake_gpu *g)
{
	char *save = NULL;
	char *minor = strtok_r(line, " \t", &save);
	char *uuid = strtok_r(NULL, " \t", &save);
	char *total = strtok_r(NULL, " \t", &save);
	char *reserved = strtok_r(NULL, " \t", &save);
	char *pci = strtok_r(NULL, " \t", &save);
	char *name = save ? strip(save) : NULL;
	unsigned long long v;
	unsigned int dom, bus, dev, fn;
	int consumed = 0;

	memset(g, 0, sizeof(*g));
	if (!parse_ull(minor, 247, &v)) /* 0-247: GPU minors of the real driver */
		return false;
	g->minor = (unsigned int)v;
	if (!uuid || strlen(uuid) >= sizeof(g->uuid))
		return false;
	strcpy(g->uuid, uuid);
	if (!parse_ull(total, 1ULL << 40, &g->total_mib) ||
	    !parse_ull(reserved, g->total_mib, &g->reserved_mib))
		return false;
	if (!pci || sscanf(pci, "%8x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &consumed) != 4 ||
	    pci[consumed] != '\0')
		return false;
	g->domain = dom;
	g->bus = bus;
	g->dev = dev;
	g->fn = fn;
	if (!name || !*name || strlen(name) >= sizeof(g->name))
		return false;
	strcpy(g->name, name);
	return true;
}

/* Loads gpus and driver_version. Returns the NVML code for nvmlInit. */
static nvmlReturn_t load_state(unsigned int flags)
{
	const char *dir = getenv("FAKE_NVML_STATE");
	char path[PATH_MAX + 32];
	char *buf = NULL;
	unsigned int n = 0;
	int r;

	if (!dir || !*dir)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	if (strlen(dir) >= sizeof(state_dir) - 32)
		return NVML_ERROR_UNKNOWN;
	snprintf(path, sizeof(path), "%s/gpus", dir);
	r = read_small_file(path, FAKE_MAX_STATE_FILE, &buf);
	if (r == -ENOENT || r == -ENOTDIR)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	if (r == -EACCES || r == -EPERM)
		return NVML_ERROR_NO_PERMISSION;
	if (r < 0)
		return NVML_ERROR_UNKNOWN;

	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line = strip(line);
		if (!*line || *line == '#')
			continue;
		if (n == FAKE_MAX_GPUS || !parse_gpu_line(line, &gpus[n])) {
			free(buf);
			return NVML_ERROR_UNKNOWN; /* a corrupt table: no sane answer */
		}
		n++;
	}
	free(buf);
	/* Like nvmlInit_v2 on a host whose driver found no GPU, unless the
	 * caller asked for NVML_INIT_FLAG_NO_GPUS. */
	if (n == 0 && !(flags & NVML_INIT_FLAG_NO_GPUS))
		return NVML_ERROR_DRIVER_NOT_LOADED;

	snprintf(driver_version, sizeof(driver_version), "%s", FAKE_DEFAULT_DRIVER);
	snprintf(path, sizeof(path), "%s/driver_version", dir);
	if (read_small_file(path, 4096, &buf) == 0) {
		char *v;
		buf[strcspn(buf, "\n")] = '\0'; /* the first line only */
		v = strip(buf);
		if (*v && strlen(v) < sizeof(driver_version))
			snprintf(driver_version, sizeof(driver_version), "%s", v);
		free(buf);
	}
	snprintf(state_dir, sizeof(state_dir), "%s", dir);
	ngpus = n;
	return NVML_SUCCESS;
}

/* ---- State: contexts ------------------------------------------------- */

struct fake_ctx {
	unsigned int pid;
	unsigned int gpu;
	unsigned long long mib;
	enum fake_kind kind;
	bool mem_unknown;
	bool no_process;          /* memory the driver keeps with no process: in no list */
};

struct ctx_list {
	struct fake_ctx *v;
	size_t n, cap;
};

struct ctx_file {
	bool has_pid, has_gpu, has_mib;
	unsigned long long pid, gpu, mib, release_ms;
	bool mem_unknown;         /* the driver does not say how much this process uses */
	bool no_process;          /* no_process=1: driver-held memory, see ctx_counts */
	bool freed;
	unsigned long long freed_at_ms;
	enum fake_kind kind;
};

/* Parses a ctx file. Returns false while it is incomplete or unparseable
 * (a holder may be writing it right now): such files are left alone. */
static bool parse_ctx(char *buf, struct ctx_file *c)
{
	char *save = NULL;

	memset(c, 0, sizeof(*c));
	c->kind = KIND_COMPUTE;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *key = strip(line);
		char *val = strip(eq + 1);
		if (strcmp(key, "pid") == 0)
			c->has_pid = parse_ull(val, UINT_MAX, &c->pid);
		else if (strcmp(key, "gpu") == 0)
			c->has_gpu = parse_ull(val, UINT_MAX, &c->gpu);
		else if (strcmp(key, "mib") == 0)
			c->has_mib = parse_ull(val, 1ULL << 40, &c->mib);
		else if (strcmp(key, "mem_unknown") == 0)
			c->mem_unknown = strcmp(val, "1") == 0;
		else if (strcmp(key, "no_process") == 0)
			c->no_process = strcmp(val, "1") == 0;
		else if (strcmp(key, "release_ms") == 0) {
			if (!parse_ull(val, ULLONG_MAX, &c->release_ms))
				return false;
		} else if (strcmp(key, "freed_at_ms") == 0 && !c->freed) {
			/* Two libraries may both append; the first one counts. */
			c->freed = parse_ull(val, ULLONG_MAX, &c->freed_at_ms);
		} else if (strcmp(key, "kind") == 0) {
			if (strcmp(val, "compute") == 0)
				c->kind = KIND_COMPUTE;
			else if (strcmp(val, "graphics") == 0)
				c->kind = KIND_GRAPHICS;
			else if (strcmp(val, "mps") == 0)
				c->kind = KIND_MPS;
			else
				return false;
		}
	}
	return (c->has_pid || c->no_process) && c->has_gpu && c->has_mib;
}

/* The pid /proc/locks gives for the flock on fd's file: the process that
 * took it, as this process's pid namespace numbers it (the host's, where
 * gpuslate runs), as the driver records a container process's host pid.
 * fallback when there is no such lock or the kernel shows no pid. */
static unsigned long long lock_owner_pid(int fd, unsigned long long fallback)
{
	char line[256];
	struct stat st;
	unsigned long long found = fallback;
	FILE *f;

	if (fstat(fd, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return fallback;
	while (fgets(line, sizeof(line), f)) {
		unsigned int maj, min;
		unsigned long long pid, ino;

		/* "1: FLOCK  ADVISORY  READ  7354 fd:00:1234567 0 EOF"; waiters
		 * ("1: -> FLOCK ...") do not hold it. */
		if (sscanf(line, "%*u: FLOCK %*s %*s %llu %x:%x:%llu", &pid, &maj, &min, &ino) == 4 &&
		    ino == (unsigned long long)st.st_ino && maj == major(st.st_dev) && min == minor(st.st_dev) &&
		    pid > 0) {
			found = pid;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Decides whether one ctx file counts, doing the teardown bookkeeping.
 * Liveness is the holder's flock(LOCK_SH): if we can take LOCK_EX on a
 * fresh open file description, no process holds the context any more. While
 * we hold LOCK_EX, other readers see the file as locked and count it, so only
 * one of them appends freed_at_ms. */
static bool ctx_counts(int dirfd, const char *name, struct fake_ctx *out)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct ctx_file c;
	char *buf = NULL;
	bool alive, counts = false, pid_from_lock;

	if (fd < 0)
		return false;
	alive = flock(fd, LOCK_EX | LOCK_NB) < 0; /* EWOULDBLOCK, or in doubt: alive */
	if (read_small_fd(fd, FAKE_MAX_CTX_FILE, &buf) < 0)
		goto out;
	/* A holder in a container wrote its own namespace's pid (gs-holder with
	 * FAKE_NVML_PID_FROM_LOCK). */
	pid_from_lock = strstr(buf, "\npid_from_lock=1\n") != NULL;
	if (!parse_ctx(buf, &c))
		goto out;
	if (pid_from_lock && alive)
		c.pid = lock_owner_pid(fd, c.pid);
	if (c.no_process) {
		/* Memory the driver keeps after its process is gone (an Xid
		 * error, a leak): counted for as long as the file exists,
		 * whatever its lock; only removing it (a "GPU reset") frees it. */
		counts = true;
	} else if (alive) {
		counts = true;
	} else {
		uint64_t now = mono_ms();
		if (!c.freed) {
			int afd = openat(dirfd, name, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
			if (afd >= 0) {
				dprintf(afd, "freed_at_ms=%" PRIu64 "\n", now);
				close(afd);
			}
			c.freed_at_ms = now;
		}
		/* Slow teardown: the memory stays in use for release_ms. Both
		 * readings are whole milliseconds, floored: only a difference
		 * above release_ms proves that release_ms have really passed
		 * (at exactly release_ms, up to 1 ms less may have). */
		if (c.release_ms == 0 || (now >= c.freed_at_ms && now - c.freed_at_ms > c.release_ms))
			unlinkat(dirfd, name, 0);
		else
			counts = true;
	}
	if (counts) {
		out->pid = (unsigned int)c.pid;
		out->gpu = (unsigned int)c.gpu;
		out->mib = c.mib;
		out->kind = c.kind;
		out->mem_unknown = c.mem_unknown;
		out->no_process = c.no_process;
	}
out:
	free(buf);
	close(fd); /* drops our LOCK_EX, if we had it */
	return counts;
}

/* Collects the counted contexts. A missing ctx/ directory means none. */
static nvmlReturn_t scan_ctx(struct ctx_list *l)
{
	char path[PATH_MAX + 32];
	DIR *d;
	struct dirent *de;

	l->v = NULL;
	l->n = l->cap = 0;
	snprintf(path, sizeof(path), "%s/ctx", state_dir);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
	while ((de = readdir(d))) {
		struct fake_ctx c;
		if (de->d_name[0] == '.')
			continue;
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		if (!ctx_counts(dirfd(d), de->d_name, &c))
			continue;
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			struct fake_ctx *v;
			if (cap > FAKE_MAX_CTX || !(v = realloc(l->v, cap * sizeof(*v)))) {
				closedir(d);
				free(l->v);
				l->v = NULL;
				l->n = l->cap = 0;
				return NVML_ERROR_MEMORY;
			}
			l->v = v;
			l->cap = cap;
		}
		l->v[l->n++] = c;
	}
	closedir(d);
	return NVML_SUCCESS;
}

static nvmlReturn_t used_mib(const struct fake_gpu *g, unsigned long long *ret)
{
	struct ctx_list l;
	nvmlReturn_t r = scan_ctx(&l);
	unsigned long long sum = 0;

	if (r != NVML_SUCCESS)
		return r;
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].gpu == g->minor)
			sum += l.v[i].mib;
	free(l.v);
	*ret = sum;
	return NVML_SUCCESS;
}

/* ---- Process lists ------------------------------------------------------ */

struct proc_entry {
	unsigned int pid;
	unsigned long long bytes;
	bool unknown;             /* usedGpuMemory reads NVML_VALUE_NOT_AVAILABLE */
};

/* One entry per (pid, GPU, kind), summing that pid's contexts, as the
 * driver reports one line per process. With garbage_processes, three bad
 * entries follow the real ones. Caller frees *ret. */
static nvmlReturn_t list_processes(const struct fake_gpu *g, enum fake_kind kind,
				   struct proc_entry **ret, unsigned int *ret_n)
{
	struct ctx_list l;
	struct proc_entry *e;
	unsigned int n = 0;
	nvmlReturn_t r = scan_ctx(&l);

	if (r != NVML_SUCCESS)
		return r;
	e = calloc(l.n + 3, sizeof(*e));
	if (!e) {
		free(l.v);
		return NVML_ERROR_MEMORY;
	}
	for (size_t i = 0; i < l.n; i++) {
		unsigned int j;
		if (l.v[i].gpu != g->minor || (kind != KIND_ALL && l.v[i].kind != kind) || l.v[i].no_process)
			continue;
		for (j = 0; j < n && e[j].pid != l.v[i].pid; j++)
			;
		if (j == n)
			e[n++].pid = l.v[i].pid;
		e[j].bytes += l.v[i].mib << 20;
		e[j].unknown |= l.v[i].mem_unknown;
	}
	free(l.v);
	if (inject.garbage_processes) {
		unsigned long long total = g->total_mib << 20;
		unsigned int pid = n ? e[0].pid : (unsigned int)getpid();
		e[n++] = (struct proc_entry){ 0, 1ULL << 30, false };
		e[n++] = (struct proc_entry){ 0xFFFFFFFFu, 1ULL << 30, false };
		e[n++] = (struct proc_entry){ pid, total + (1ULL << 30), false };
	}
	*ret = e;
	*ret_n = n;
	return NVML_SUCCESS;
}

/* Writes entry i in the layout the symbol (and driver) uses. memcpy into
 * the byte offset: the caller's buffer has no alignment promise for odd
 * strides, and padding must be zeroed as the real library does. */
static void put_entry(void *buf, size_t stride, unsigned int i, const struct proc_entry *e)
{
	char *dst = (char *)buf + (size_t)i * stride;

	if (stride == sizeof(nvmlProcessInfo_v1_t)) {
		nvmlProcessInfo_v1_t p;
		memset(&p, 0, sizeof(p));
		p.pid = e->pid;
		p.usedGpuMemory = e->unknown ? NVML_VALUE_NOT_AVAILABLE_ULL : e->bytes;
		memcpy(dst, &p, sizeof(p));
	} else if (stride == sizeof(nvmlProcessInfo_v2_t)) {
		nvmlProcessInfo_v2_t p;
		memset(&p, 0, sizeof(p));
		p.pid = e->pid;
		p.usedGpuMemory = e->unknown ? NVML_VALUE_NOT_AVAILABLE_ULL : e->bytes;
		p.gpuInstanceId = FAKE_MIG_NONE;
		p.computeInstanceId = FAKE_MIG_NONE;
		memcpy(dst, &p, sizeof(p));
	} else {
		nvmlProcessDetail_v1_t p;
		memset(&p, 0, sizeof(p));
		p.pid = e->pid;
		p.usedGpuMemory = e->unknown ? NVML_VALUE_NOT_AVAILABLE_ULL : e->bytes;
		p.gpuInstanceId = FAKE_MIG_NONE;
		p.computeInstanceId = FAKE_MIG_NONE;
		p.usedGpuCcProtectedMemory = 0;
		memcpy(dst, &p, sizeof(p));
	}
}

/* The size-query protocol of nvmlDeviceGet*RunningProcesses*: *count too
 * small (0 with NULL infos included) -> INSUFFICIENT_SIZE and the needed
 * count; no processes -> SUCCESS with 0. */
static nvmlReturn_t get_processes(enum fake_sym sym, nvmlDevice_t device, unsigned int *count,
				  void *infos, size_t stride, enum fake_kind kind)
{
	struct fake_gpu *g;
	struct proc_entry *e = NULL;
	unsigned int n = 0;
	nvmlReturn_t r = enter_dev(sym, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!(g = check_device(device)) || !count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	r = list_processes(g, kind, &e, &n);
	if (r != NVML_SUCCESS)
		return leave(r);
	if (*count < n) {
		r = NVML_ERROR_INSUFFICIENT_SIZE;
	} else if (n > 0 && !infos) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else {
		for (unsigned int i = 0; i < n; i++)
			put_entry(infos, stride, i, &e[i]);
	}
	if (r != NVML_ERROR_INVALID_ARGUMENT)
		*count = n;
	free(e);
	return leave(r);
}

#ifdef FAKE_EARLY_R535
#define FAKE_V3_STRIDE sizeof(nvmlProcessDetail_v1_t)
#else
#define FAKE_V3_STRIDE sizeof(nvmlProcessInfo_v2_t)
#endif
#define FAKE_V2_STRIDE sizeof(nvmlProcessInfo_v2_t)
#define FAKE_V1_STRIDE sizeof(nvmlProcessInfo_v1_t)

#define FAKE_PROCESS_FN(name, stride, kind) \
	nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount, void *infos) \
	{ \
		return get_processes(SYM_##name, device, infoCount, infos, stride, kind); \
	}

FAKE_PROCESS_FN(nvmlDeviceGetComputeRunningProcesses_v3, FAKE_V3_STRIDE, KIND_COMPUTE)
FAKE_PROCESS_FN(nvmlDeviceGetComputeRunningProcesses_v2, FAKE_V2_STRIDE, KIND_COMPUTE)
FAKE_PROCESS_FN(nvmlDeviceGetComputeRunningProcesses, FAKE_V1_STRIDE, KIND_COMPUTE)
FAKE_PROCESS_FN(nvmlDeviceGetGraphicsRunningProcesses_v3, FAKE_V3_STRIDE, KIND_GRAPHICS)
FAKE_PROCESS_FN(nvmlDeviceGetGraphicsRunningProcesses_v2, FAKE_V2_STRIDE, KIND_GRAPHICS)
FAKE_PROCESS_FN(nvmlDeviceGetGraphicsRunningProcesses, FAKE_V1_STRIDE, KIND_GRAPHICS)
FAKE_PROCESS_FN(nvmlDeviceGetMPSComputeRunningProcesses_v3, FAKE_V3_STRIDE, KIND_MPS)
FAKE_PROCESS_FN(nvmlDeviceGetMPSComputeRunningProcesses_v2, FAKE_V2_STRIDE, KIND_MPS)
FAKE_PROCESS_FN(nvmlDeviceGetMPSComputeRunningProcesses, FAKE_V1_STRIDE, KIND_MPS)

#ifndef FAKE_EARLY_R535
/* The R535.98+ home of the 32-byte entries. mode: 0 compute, 1 graphics,
 * 2 MPS, 3 all (13.x headers). */
nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, fake_process_detail_list_t *plist)
{
	static const enum fake_kind kinds[] = { KIND_COMPUTE, KIND_GRAPHICS, KIND_MPS, KIND_ALL };
	struct fake_gpu *g;
	struct proc_entry *e = NULL;
	unsigned int n = 0;
	nvmlReturn_t r = enter_dev(SYM_nvmlDeviceGetRunningProcessDetailList, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!(g = check_device(device)) || !plist)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (plist->version != FAKE_PROCESS_DETAIL_LIST_V1)
		return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	if (plist->mode >= sizeof(kinds) / sizeof(kinds[0]))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	r = list_processes(g, kinds[plist->mode], &e, &n);
	if (r != NVML_SUCCESS)
		return leave(r);
	if (plist->numProcArrayEntries < n) {
		r = NVML_ERROR_INSUFFICIENT_SIZE;
	} else if (n > 0 && !plist->procArray) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else {
		for (unsigned int i = 0; i < n; i++)
			put_entry(plist->procArray, sizeof(nvmlProcessDetail_v1_t), i, &e[i]);
	}
	if (r != NVML_ERROR_INVALID_ARGUMENT)
		plist->numProcArrayEntries = n;
	free(e);
	return leave(r);
}
#endif

/* ---- Init and shutdown ------------------------------------------------ */

static nvmlReturn_t do_init(enum fake_sym sym, unsigned int flags)
{
	nvmlReturn_t r = inject_check(sym, -1);

	if (r != NVML_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	if (init_refs == 0)
		r = load_state(flags);
	if (r == NVML_SUCCESS)
		init_refs++;
	pthread_mutex_unlock(&lock);
	return r;
}

nvmlReturn_t nvmlInit_v2(void)
{
	return do_init(SYM_nvmlInit_v2, 0);
}

nvmlReturn_t nvmlInit(void)
{
	return do_init(SYM_nvmlInit, 0);
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	return do_init(SYM_nvmlInitWithFlags, flags);
}

nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t r = enter(SYM_nvmlShutdown);

	if (r != NVML_SUCCESS)
		return r;
	if (--init_refs == 0)
		ngpus = 0; /* handles from before are now rejected */
	return leave(NVML_SUCCESS);
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	/* The strings the real library returns (nvidia-smi prints them). */
	switch (result) {
	case 0: return "Success";
	case 1: return "Uninitialized";
	case 2: return "Invalid Argument";
	case 3: return "Not Supported";
	case 4: return "Insufficient Permissions";
	case 5: return "Already Initialized";
	case 6: return "Not Found";
	case 7: return "Insufficient Size";
	case 8: return "Insufficient External Power";
	case 9: return "Driver Not Loaded";
	case 10: return "Timeout";
	case 11: return "Interrupt request issue";
	case 12: return "NVML Shared Library Not Found";
	case 13: return "Function Not Found";
	case 14: return "Corrupted infoROM";
	case 15: return "GPU is lost";
	case 16: return "GPU requires restart";
	case 17: return "The operating system has blocked the request.";
	case 18: return "Driver/library version mismatch";
	case 19: return "In use by another client";
	case 20: return "Insufficient Memory";
	case 21: return "No data";
	case 25: return "Argument version mismatch";
	case 26: return "Deprecated";
	case 27: return "System not ready";
	case 28: return "GPU not found";
	case 29: return "Invalid state";
	default: return "Unknown Error";
	}
}

/* ---- System queries ---------------------------------------------------- */

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	nvmlReturn_t r = enter(SYM_nvmlSystemGetDriverVersion);

	if (r != NVML_SUCCESS)
		return r;
	return leave(copy_out(version, length, driver_version));
}

/* NVML's own version is "<CUDA major>.<driver version>", e.g. 13.580.159.04. */
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE + 8];
	unsigned long major;
	nvmlReturn_t r = enter(SYM_nvmlSystemGetNVMLVersion);

	if (r != NVML_SUCCESS)
		return r;
	major = strtoul(driver_version, NULL, 10);
	snprintf(buf, sizeof(buf), "%d.%s", major >= 580 ? 13 : major >= 525 ? 12 : 11, driver_version);
	return leave(copy_out(version, length, buf));
}

/* Like the driver: the name of any process on the host, from procfs
 * (argv[0], else comm); NOT_FOUND when it does not exist. */
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
	char path[64];
	char *buf = NULL;
	nvmlReturn_t r = enter(SYM_nvmlSystemGetProcessName);

	if (r != NVML_SUCCESS)
		return r;
	if (!name || length == 0)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	if (pid == 0 || read_small_file(path, 4096, &buf) < 0)
		return leave(NVML_ERROR_NOT_FOUND);
	if (!*buf) { /* kernel thread or zombie: fall back to comm */
		free(buf);
		buf = NULL;
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		if (read_small_file(path, 4096, &buf) < 0)
			return leave(NVML_ERROR_NOT_FOUND);
	}
	r = copy_out(name, length, strip(buf));
	free(buf);
	return leave(r);
}

/* ---- Device enumeration and identity ----------------------------------- */

static nvmlReturn_t get_count(enum fake_sym sym, unsigned int *count)
{
	nvmlReturn_t r = enter(sym);

	if (r != NVML_SUCCESS)
		return r;
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*count = ngpus;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	return get_count(SYM_nvmlDeviceGetCount_v2, deviceCount);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
	return get_count(SYM_nvmlDeviceGetCount, deviceCount);
}

static nvmlReturn_t get_handle(enum fake_sym sym, unsigned int index, nvmlDevice_t *device)
{
	nvmlReturn_t r = enter_gpu(sym, index < FAKE_MAX_GPUS ? (int)index : -1);

	if (r != NVML_SUCCESS)
		return r;
	if (!device || index >= ngpus)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*device = (nvmlDevice_t)(void *)&gpus[index];
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	return get_handle(SYM_nvmlDeviceGetHandleByIndex_v2, index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
	return get_handle(SYM_nvmlDeviceGetHandleByIndex, index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	nvmlReturn_t r = enter(SYM_nvmlDeviceGetHandleByUUID);

	if (r != NVML_SUCCESS)
		return r;
	if (!uuid || !device)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	for (unsigned int i = 0; i < ngpus; i++)
		if (strcmp(gpus[i].uuid, uuid) == 0) {
			*device = (nvmlDevice_t)(void *)&gpus[i];
			return leave(NVML_SUCCESS);
		}
	return leave(NVML_ERROR_NOT_FOUND);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	struct fake_gpu *g;
	nvmlReturn_t r = enter_dev(SYM_nvmlDeviceGetName, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!(g = check_device(device)))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	return leave(copy_out(name, length, g->name));
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	struct fake_gpu *g;
	nvmlReturn_t r = enter_dev(SYM_nvmlDeviceGetUUID, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!(g = check_device(device)))
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	return leave(copy_out(uuid, length, g->uuid));
}

/* All three versions fill the same (current) struct; formats are the real
 * ones: busId "%08X:%02X:%02X.0", busIdLegacy "%04X:%02X:%02X.0". */
static nvmlReturn_t get_pci(enum fake_sym sym, nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	struct fake_gpu *g;
	nvmlReturn_t r = enter_dev(sym, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!(g = check_device(device)) || !pci)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X",
		 g->domain & 0xFFFFu, g->bus, g->dev, g->fn);
	snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", g->domain, g->bus, g->dev, g->fn);
	pci->domain = g->domain;
	pci->bus = g->bus;
	pci->device = g->dev;
	pci->pciDeviceId = FAKE_PCI_DEVICE_ID;
	pci->pciSubSystemId = FAKE_PCI_SUBSYS_ID;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return get_pci(SYM_nvmlDeviceGetPciInfo_v3, device, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return get_pci(SYM_nvmlDeviceGetPciInfo_v2, device, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return get_pci(SYM_nvmlDeviceGetPciInfo, device, pci);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
	struct fake_gpu *g;
	nvmlReturn_t r = enter_dev(SYM_nvmlDeviceGetMinorNumber, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!(g = check_device(device)) || !minorNumber)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*minorNumber = g->minor;
	return leave(NVML_SUCCESS);
}

/* ---- Memory ---------------------------------------------------------- */

/* v1: `used` includes the driver's reservation, as on R510+ drivers. */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	struct fake_gpu *g;
	unsigned long long used = 0, total, v1_used;
	nvmlReturn_t r = enter_dev(SYM_nvmlDeviceGetMemoryInfo, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!(g = check_device(device)) || !memory)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	r = used_mib(g, &used);
	if (r != NVML_SUCCESS)
		return leave(r);
	total = g->total_mib << 20;
	v1_used = (used + g->reserved_mib) << 20;
	memory->total = total;
	memory->used = v1_used;
	memory->free = v1_used < total ? total - v1_used : 0;
	return leave(NVML_SUCCESS);
}

#ifndef FAKE_NO_MEMORY_V2
/* v2: the caller must pass version nvmlMemory_v2 (0x02000028). The real
 * library answers FUNCTION_NOT_FOUND to anything else, including the bare 2
 * that the documentation suggests. */
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	struct fake_gpu *g;
	unsigned long long used = 0, total, reserved, taken;
	nvmlReturn_t r = enter_dev(SYM_nvmlDeviceGetMemoryInfo_v2, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!(g = check_device(device)) || !memory)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (memory->version != nvmlMemory_v2)
		return leave(NVML_ERROR_FUNCTION_NOT_FOUND);
	r = used_mib(g, &used);
	if (r != NVML_SUCCESS)
		return leave(r);
	total = g->total_mib << 20;
	reserved = g->reserved_mib << 20;
	taken = reserved + (used << 20);
	memory->total = total;
	memory->reserved = reserved;
	memory->used = used << 20;
	memory->free = taken < total ? total - taken : 0;
	return leave(NVML_SUCCESS);
}
#endif

/* Exported because nvitop-style probes look for it (with the missing
 * nvmlDeviceGetRunningProcessDetailList, it marks early R535). Confidential
 * computing is off on the simulated host. */
nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t device, fake_conf_compute_mem_size_info_t *memInfo)
{
	nvmlReturn_t r = enter_dev(SYM_nvmlDeviceGetConfComputeMemSizeInfo, device);

	if (r != NVML_SUCCESS)
		return r;
	if (!check_device(device) || !memInfo)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	return leave(NVML_ERROR_NOT_SUPPORTED);
}

/* NVIDIA backend through NVML, loaded with dlopen (never linked, so the tool
 * runs on hosts without the driver), called directly in this process.
 *
 * gpuslate runs this in a helper process (nvml_child.c): a driver call that
 * hangs in the kernel cannot be abandoned by a thread of the same process
 * (the process could not even exit), only by leaving a whole process behind.
 * So nothing here waits with a deadline; instead every call is announced in
 * a gs_nvml_trace, which the parent reads to say which call hung.
 *
 * A wrong process-entry layout silently gives wrong PIDs (early R535), and
 * we are about to signal those PIDs. Lists are read with nvitop's symbol
 * rule, every entry is validated, and a list that does not validate with any
 * layout is refused (-EBADMSG) instead of half-trusted.
 *
 * Not thread-safe: one thread at a time per backend. */
#include "gpu/nvml.h"
#include "gpu/nvml_abi.h"
#include "util/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define NVML_DEFAULT_LIB "libnvidia-ml.so.1"
#define NVML_DEFAULT_PID_MAX 4194304u /* PID_MAX_LIMIT on 64-bit */
/* Process buffers are always sized for the largest entry layout, so a driver
 * that writes bigger entries than we asked for cannot overrun the buffer,
 * and the same buffer can be re-read with another stride. */
#define PROC_MAX_STRIDE 32u
#define PROC_RETRIES 5
/* More entries than this from one list is garbage, not a real GPU. */
#define PROC_MAX_ENTRIES 65536u
#define MIG_ID_NONE 0xFFFFFFFFu
#define MIG_ID_MAX 64u

enum { PK_COMPUTE, PK_GRAPHICS, PK_MPS, PK_N };
enum { PV_1, PV_2, PV_3, PV_N }; /* unversioned, _v2, _v3 */

struct nvml_syms {
	nvmlInit_fn init;
	nvmlShutdown_fn shutdown;
	nvmlErrorString_fn error_string;
	nvmlSystemGetDriverVersion_fn driver_version;
	nvmlDeviceGetCount_fn count;
	nvmlDeviceGetHandleByIndex_fn handle_by_index;
	nvmlDeviceGetName_fn name;
	nvmlDeviceGetUUID_fn uuid;
	nvmlDeviceGetPciInfo_fn pci_info;
	nvmlDeviceGetMinorNumber_fn minor;
	nvmlDeviceGetMemoryInfo_fn mem_v1;
	nvmlDeviceGetMemoryInfo_v2_fn mem_v2;
	nvmlDeviceGetProcesses_fn procs[PK_N][PV_N];
	/* Presence only: they pick the _v3 entry size (interfaces.md 1.7). */
	void *conf_compute_mem_size_info;
	void *running_process_detail_list;
};

/* dlsym returns void *; POSIX guarantees it converts to a function pointer.
 * The loader stores it with memcpy into the field at the table's offset. */
_Static_assert(sizeof(void *) == sizeof(nvmlInit_fn), "function pointers are pointer-sized");

enum nvml_sym_id {
	SYM_INIT, SYM_SHUTDOWN, SYM_ERROR_STRING, SYM_DRIVER_VERSION, SYM_COUNT,
	SYM_HANDLE, SYM_NAME, SYM_UUID, SYM_PCI, SYM_MINOR, SYM_MEM_V1, SYM_MEM_V2,
	SYM_COMPUTE_V3, SYM_COMPUTE_V2, SYM_COMPUTE_V1,
	SYM_GRAPHICS_V3, SYM_GRAPHICS_V2, SYM_GRAPHICS_V1,
	SYM_MPS_V3, SYM_MPS_V2, SYM_MPS_V1,
	SYM_CONF_COMPUTE, SYM_DETAIL_LIST,
	SYM_N,
};

struct nvml_sym_spec {
	const char *names[4]; /* newest first, NULL-terminated */
	size_t off;
	bool required;
};

#define SYM_OFF(field) offsetof(struct nvml_syms, field)

static const struct nvml_sym_spec sym_table[SYM_N] = {
	[SYM_INIT] = { { "nvmlInit_v2", "nvmlInit" }, SYM_OFF(init), true },
	[SYM_SHUTDOWN] = { { "nvmlShutdown" }, SYM_OFF(shutdown), true },
	[SYM_ERROR_STRING] = { { "nvmlErrorString" }, SYM_OFF(error_string), false },
	[SYM_DRIVER_VERSION] = { { "nvmlSystemGetDriverVersion" }, SYM_OFF(driver_version), false },
	[SYM_COUNT] = { { "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount" }, SYM_OFF(count), true },
	[SYM_HANDLE] = { { "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex" },
			 SYM_OFF(handle_by_index), true },
	[SYM_NAME] = { { "nvmlDeviceGetName" }, SYM_OFF(name), true },
	[SYM_UUID] = { { "nvmlDeviceGetUUID" }, SYM_OFF(uuid), true },
	[SYM_PCI] = { { "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo" },
		      SYM_OFF(pci_info), true },
	[SYM_MINOR] = { { "nvmlDeviceGetMinorNumber" }, SYM_OFF(minor), true },
	/* At least one of the two memory calls must exist (checked after). */
	[SYM_MEM_V1] = { { "nvmlDeviceGetMemoryInfo" }, SYM_OFF(mem_v1), false },
	[SYM_MEM_V2] = { { "nvmlDeviceGetMemoryInfo_v2" }, SYM_OFF(mem_v2), false },
	/* Each version separately: the version decides the entry layout. At
	 * least one compute and one graphics version must exist; MPS is
	 * optional (pre-Volta libraries lack it). */
	[SYM_COMPUTE_V3] = { { "nvmlDeviceGetComputeRunningProcesses_v3" }, SYM_OFF(procs[PK_COMPUTE][PV_3]), false },
	[SYM_COMPUTE_V2] = { { "nvmlDeviceGetComputeRunningProcesses_v2" }, SYM_OFF(procs[PK_COMPUTE][PV_2]), false },
	[SYM_COMPUTE_V1] = { { "nvmlDeviceGetComputeRunningProcesses" }, SYM_OFF(procs[PK_COMPUTE][PV_1]), false },
	[SYM_GRAPHICS_V3] = { { "nvmlDeviceGetGraphicsRunningProcesses_v3" }, SYM_OFF(procs[PK_GRAPHICS][PV_3]), false },
	[SYM_GRAPHICS_V2] = { { "nvmlDeviceGetGraphicsRunningProcesses_v2" }, SYM_OFF(procs[PK_GRAPHICS][PV_2]), false },
	[SYM_GRAPHICS_V1] = { { "nvmlDeviceGetGraphicsRunningProcesses" }, SYM_OFF(procs[PK_GRAPHICS][PV_1]), false },
	[SYM_MPS_V3] = { { "nvmlDeviceGetMPSComputeRunningProcesses_v3" }, SYM_OFF(procs[PK_MPS][PV_3]), false },
	[SYM_MPS_V2] = { { "nvmlDeviceGetMPSComputeRunningProcesses_v2" }, SYM_OFF(procs[PK_MPS][PV_2]), false },
	[SYM_MPS_V1] = { { "nvmlDeviceGetMPSComputeRunningProcesses" }, SYM_OFF(procs[PK_MPS][PV_1]), false },
	[SYM_CONF_COMPUTE] = { { "nvmlDeviceGetConfComputeMemSizeInfo" }, SYM_OFF(conf_compute_mem_size_info), false },
	[SYM_DETAIL_LIST] = { { "nvmlDeviceGetRunningProcessDetailList" }, SYM_OFF(running_process_detail_list), false },
};

/* One way to read a process list: a symbol and the entry size it writes. */
/* One way to read a process list: a symbol, its name and the entry size it writes. */
struct nvml_proc_try {
	nvmlDeviceGetProcesses_fn fn;
	const char *name;
	unsigned stride;
};

enum nvml_op {
	OP_INIT, OP_SHUTDOWN, OP_DRIVER_VERSION, OP_COUNT, OP_HANDLE, OP_NAME,
	OP_UUID, OP_PCI, OP_MINOR, OP_MEM_V1, OP_MEM_V2, OP_PROCS,
};

/* One NVML call: what to call and where its answer goes. */
struct nvml_req {
	enum nvml_op op;
	int gpu;                 /* NVML index the call concerns, -1 for none (the trace) */
	nvmlDevice_t dev;
	unsigned index;
	nvmlDeviceGetProcesses_fn procs_fn;
	const char *procs_name;
	unsigned count;          /* process lists: capacity in, entries out */
	void *buf;               /* process lists: the backend's buffer */
	nvmlReturn_t ret;
	union {
		unsigned u;
		nvmlDevice_t handle;
		char str[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
		nvmlPciInfo_t pci;
		nvmlMemory_t mem1;
		nvmlMemory_v2_t mem2;
	} out;
};
_Static_assert(NVML_DEVICE_UUID_V2_BUFFER_SIZE <= NVML_DEVICE_NAME_V2_BUFFER_SIZE, "str fits a UUID");
_Static_assert(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE <= NVML_DEVICE_NAME_V2_BUFFER_SIZE, "str fits a version");

struct nvml_gpu {
	int handle_err;          /* cached refusal (-EACCES), 0 otherwise */
	bool have_handle;
	nvmlDevice_t handle;
	uint64_t total;          /* bytes, 0 until known: bounds usedGpuMemory */
};

struct nvml_backend {
	struct gs_gpu_backend base; /* first member: ops get it back by cast */
	void *dl;
	struct nvml_syms sym;
	const char *resolved[SYM_N]; /* the name each symbol was found under */
	struct nvml_proc_try proc_tries[PK_N][PV_N];
	unsigned proc_ntries[PK_N];
	uint32_t pid_max;
	unsigned count;
	bool inited;
	bool mem_v2_ok;          /* cleared when the library refuses the v2 call */
	struct nvml_gpu gpus[GS_MAX_GPUS];
	struct gs_nvml_trace *trace;

	unsigned char *pbuf;     /* process-list buffer, PROC_MAX_STRIDE per entry */
	size_t pbuf_entries;
};

static int nvml_to_errno(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return 0;
	case NVML_ERROR_LIBRARY_NOT_FOUND:
		return -ENOENT;
	case NVML_ERROR_DRIVER_NOT_LOADED:
	case 28: /* NVML_ERROR_GPU_NOT_FOUND */
		return -ENODEV;
	case NVML_ERROR_NO_PERMISSION:
		return -EACCES;
	case NVML_ERROR_TIMEOUT:
		return -ETIMEDOUT;
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return -EPROTO;
	case NVML_ERROR_NOT_SUPPORTED:
		/* memory() promises -EOPNOTSUPP for "unknown" (unified-memory GPUs). */
		return -EOPNOTSUPP;
	case NVML_ERROR_MEMORY:
		return -ENOMEM;
	case NVML_ERROR_GPU_IS_LOST:
	default:
		return -EIO;
	}
}

static const char *nvml_errstr(const struct nvml_backend *nb, nvmlReturn_t r, char *buf, size_t len)
{
	const char *s = nb->sym.error_string ? nb->sym.error_string(r) : NULL;

	if (s && *s)
		return s;
	snprintf(buf, len, "NVML error %d", r);
	return buf;
}

static void set_err(char *errbuf, size_t errlen, const char *fmt, const char *a, const char *b)
{
	if (errbuf && errlen > 0)
		snprintf(errbuf, errlen, fmt, a, b);
}

/* ---- calls ----------------------------------------------------------- */

static const char *op_symbol(const struct nvml_backend *nb, const struct nvml_req *q)
{
	static const enum nvml_sym_id ids[] = {
		[OP_INIT] = SYM_INIT, [OP_SHUTDOWN] = SYM_SHUTDOWN, [OP_DRIVER_VERSION] = SYM_DRIVER_VERSION,
		[OP_COUNT] = SYM_COUNT, [OP_HANDLE] = SYM_HANDLE, [OP_NAME] = SYM_NAME, [OP_UUID] = SYM_UUID,
		[OP_PCI] = SYM_PCI, [OP_MINOR] = SYM_MINOR, [OP_MEM_V1] = SYM_MEM_V1, [OP_MEM_V2] = SYM_MEM_V2,
	};

	if (q->op == OP_PROCS)
		return q->procs_name;
	return nb->resolved[ids[q->op]];
}

static nvmlReturn_t nvml_execute(const struct nvml_syms *s, struct nvml_req *q)
{
	nvmlReturn_t r;

	switch (q->op) {
	case OP_INIT:
		return s->init();
	case OP_SHUTDOWN:
		return s->shutdown();
	case OP_DRIVER_VERSION:
		r = s->driver_version(q->out.str, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
		q->out.str[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE - 1] = '\0';
		return r;
	case OP_COUNT:
		return s->count(&q->out.u);
	case OP_HANDLE:
		return s->handle_by_index(q->index, &q->out.handle);
	case OP_NAME:
		r = s->name(q->dev, q->out.str, sizeof(q->out.str));
		q->out.str[sizeof(q->out.str) - 1] = '\0';
		return r;
	case OP_UUID:
		r = s->uuid(q->dev, q->out.str, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
		q->out.str[NVML_DEVICE_UUID_V2_BUFFER_SIZE - 1] = '\0';
		return r;
	case OP_PCI:
		return s->pci_info(q->dev, &q->out.pci);
	case OP_MINOR:
		return s->minor(q->dev, &q->out.u);
	case OP_MEM_V1:
		return s->mem_v1(q->dev, &q->out.mem1);
	case OP_MEM_V2:
		return s->mem_v2(q->dev, &q->out.mem2);
	case OP_PROCS:
		return q->procs_fn(q->dev, &q->count, q->buf);
	}
	return NVML_ERROR_UNKNOWN;
}

/* Make one call, announced in the trace: the call's name and GPU before it
 * starts, the time on both sides. Sets q->ret to NVML's status. */
static void nvml_call(struct nvml_backend *nb, struct nvml_req *q)
{
	struct gs_nvml_trace *t = nb->trace;

	if (t) {
		atomic_store_explicit(&t->gpu, q->gpu, memory_order_relaxed);
		atomic_store_explicit(&t->progress_ns, gs_now_ns(), memory_order_relaxed);
		atomic_store_explicit(&t->call, op_symbol(nb, q), memory_order_release);
	}
	q->ret = nvml_execute(&nb->sym, q);
	if (t) {
		atomic_store_explicit(&t->call, NULL, memory_order_release);
		atomic_store_explicit(&t->progress_ns, gs_now_ns(), memory_order_relaxed);
	}
}

/* nvml_call plus the errno mapping of NVML's status. */
static int nvml_run(struct nvml_backend *nb, struct nvml_req *q)
{
	nvml_call(nb, q);
	return nvml_to_errno(q->ret);
}

/* ---- teardown -------------------------------------------------------- */

static void nvml_destroy(struct nvml_backend *nb)
{
	if (!nb)
		return;
	if (nb->inited) {
		struct nvml_req q = { .op = OP_SHUTDOWN, .gpu = -1 };

		/* Best effort: a failing shutdown changes nothing for us. */
		nvml_call(nb, &q);
	}
	if (nb->dl)
		dlclose(nb->dl);
	free(nb->pbuf);
	free(nb);
}

static void nvml_close(struct gs_gpu_backend *b)
{
	nvml_destroy((struct nvml_backend *)b);
}

/* ---- devices and memory --------------------------------------------- */

static int nvml_handle(struct nvml_backend *nb, unsigned i, nvmlDevice_t *ret)
{
	struct nvml_gpu *g;
	struct nvml_req q = { .op = OP_HANDLE, .gpu = (int)i, .index = i };
	int r;

	if (i >= nb->count)
		return -EINVAL;
	g = &nb->gpus[i];
	if (g->have_handle) {
		*ret = g->handle;
		return 0;
	}
	if (g->handle_err)
		return g->handle_err;
	r = nvml_run(nb, &q);
	if (r == -EACCES) {
		/* count_v2 includes GPUs we may not use (a container's cgroup
		 * denies them): skip them, every time, without asking again. */
		g->handle_err = r;
		return r;
	}
	if (r < 0)
		return r;
	g->handle = q.out.handle;
	g->have_handle = true;
	*ret = g->handle;
	return 0;
}

static int nvml_mem(struct nvml_backend *nb, unsigned i, nvmlDevice_t dev, struct gs_gpu_mem *ret)
{
	struct nvml_req q;
	int r;

	if (nb->mem_v2_ok) {
		q = (struct nvml_req){ .op = OP_MEM_V2, .gpu = (int)i, .dev = dev };
		/* The struct version, not "2": with 2 the call fails (1.6). */
		q.out.mem2.version = nvmlMemory_v2;
		nvml_call(nb, &q);
		if (q.ret == NVML_SUCCESS) {
			*ret = (struct gs_gpu_mem){
				.v2 = true,
				.total = q.out.mem2.total,
				.used = q.out.mem2.used,
				.reserved = q.out.mem2.reserved,
				.free = q.out.mem2.free,
			};
			nb->gpus[i].total = ret->total;
			return 0;
		}
		if (q.ret == NVML_ERROR_FUNCTION_NOT_FOUND || q.ret == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
			nb->mem_v2_ok = false; /* this library never will: stop asking */
		else if (q.ret != NVML_ERROR_NOT_SUPPORTED || !nb->sym.mem_v1)
			return nvml_to_errno(q.ret);
	}
	if (!nb->sym.mem_v1)
		return -EOPNOTSUPP;
	q = (struct nvml_req){ .op = OP_MEM_V1, .gpu = (int)i, .dev = dev };
	r = nvml_run(nb, &q);
	if (r < 0)
		return r;
	/* v1 used includes the driver's reservation; it cannot be split out
	 * here (gs_discover estimates it). */
	*ret = (struct gs_gpu_mem){
		.v2 = false, .total = q.out.mem1.total, .used = q.out.mem1.used, .free = q.out.mem1.free
	};
	nb->gpus[i].total = ret->total;
	return 0;
}

static int nvml_count(struct gs_gpu_backend *b, unsigned *ret)
{
	struct nvml_backend *nb = (struct nvml_backend *)b;

	*ret = nb->count;
	return 0;
}

static int nvml_memory(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_mem *ret)
{
	struct nvml_backend *nb = (struct nvml_backend *)b;
	nvmlDevice_t dev = NULL;
	int r;

	r = nvml_handle(nb, i, &dev);
	if (r < 0)
		return r;
	return nvml_mem(nb, i, dev, ret);
}

static int nvml_string(struct nvml_backend *nb, enum nvml_op op, unsigned i, nvmlDevice_t dev, char *dst,
		       size_t len)
{
	struct nvml_req q = { .op = op, .gpu = (int)i, .dev = dev };
	int r = nvml_run(nb, &q);

	if (r < 0)
		return r;
	gs_strlcpy(dst, q.out.str, len);
	return 0;
}

static int nvml_info(struct gs_gpu_backend *b, unsigned i, struct gs_gpu *ret)
{
	struct nvml_backend *nb = (struct nvml_backend *)b;
	struct gs_gpu g = { .index = i };
	struct gs_gpu_mem m;
	struct nvml_req q;
	nvmlDevice_t dev = NULL;
	int r;

	r = nvml_handle(nb, i, &dev);
	if (r < 0)
		return r;

	q = (struct nvml_req){ .op = OP_MINOR, .gpu = (int)i, .dev = dev };
	r = nvml_run(nb, &q);
	if (r < 0)
		return r;
	if (q.out.u >= GS_MAX_GPUS)
		return -EBADMSG; /* not a /dev/nvidia<N> minor */
	g.minor = q.out.u;

	r = nvml_string(nb, OP_UUID, i, dev, g.uuid, sizeof(g.uuid));
	if (r < 0)
		return r;
	r = nvml_string(nb, OP_NAME, i, dev, g.name, sizeof(g.name));
	if (r < 0)
		return r;

	q = (struct nvml_req){ .op = OP_PCI, .gpu = (int)i, .dev = dev };
	r = nvml_run(nb, &q);
	if (r < 0)
		return r;
	q.out.pci.busId[sizeof(q.out.pci.busId) - 1] = '\0';
	q.out.pci.busIdLegacy[sizeof(q.out.pci.busIdLegacy) - 1] = '\0';
	gs_strlcpy(g.pci_bus_id, q.out.pci.busId[0] ? q.out.pci.busId : q.out.pci.busIdLegacy,
		   sizeof(g.pci_bus_id));

	r = nvml_mem(nb, i, dev, &m);
	if (r >= 0) {
		g.mem_known = true;
		g.mem_v2 = m.v2;
		g.mem_basis = m.v2 ? GS_MEM_V2 : GS_MEM_V1;
		g.mem_total = m.total;
		g.mem_used = m.used;
		g.mem_reserved = m.reserved;
		g.mem_free = m.free;
	} else if (r != -EOPNOTSUPP)
		return r;

	*ret = g;
	return 0;
}

/* ---- process lists --------------------------------------------------- */

static int pbuf_reserve(struct nvml_backend *nb, size_t entries)
{
	unsigned char *p;

	if (entries > nb->pbuf_entries) {
		p = realloc(nb->pbuf, entries * PROC_MAX_STRIDE);
		if (!p)
			return -ENOMEM;
		nb->pbuf = p;
		nb->pbuf_entries = entries;
	}
	/* Bytes the driver does not write read as pid 0, so a wrong stride
	 * fails validation instead of reading stale entries. */
	memset(nb->pbuf, 0, entries * PROC_MAX_STRIDE);
	return 0;
}

/* Size query, then fetch into nb->pbuf: *ret_n entries, layout not known
 * yet. *ret_nvml is NVML's last status, for callers that treat some
 * failures (NOT_SUPPORTED, FUNCTION_NOT_FOUND) as "try something else". */
static int query_procs(struct nvml_backend *nb, unsigned i, nvmlDevice_t dev, const struct nvml_proc_try *try,
		       unsigned *ret_n, nvmlReturn_t *ret_nvml)
{
	/* First call: count 0 and no buffer asks for the size. */
	struct nvml_req q = { .op = OP_PROCS, .gpu = (int)i, .dev = dev, .procs_fn = try->fn, .procs_name = try->name };
	unsigned want = 0;
	int r;

	for (int attempt = 0;; attempt++) {
		nvml_call(nb, &q);
		*ret_nvml = q.ret;
		if (q.ret == NVML_SUCCESS) {
			if (q.count > want)
				return -EBADMSG; /* claims more than it had room for */
			*ret_n = q.count;
			return 0;
		}
		if (q.ret != NVML_ERROR_INSUFFICIENT_SIZE)
			return nvml_to_errno(q.ret);
		if (attempt >= PROC_RETRIES)
			return -EAGAIN; /* the list keeps outgrowing the buffer */
		if (q.count > PROC_MAX_ENTRIES)
			return -EBADMSG;
		/* The list can grow between calls: room for twice as many. */
		want = q.count * 2 + 8;
		r = pbuf_reserve(nb, want);
		if (r < 0)
			return r;
		q = (struct nvml_req){ .op = OP_PROCS, .gpu = (int)i, .dev = dev, .procs_fn = try->fn,
				       .procs_name = try->name, .count = want, .buf = nb->pbuf };
	}
}

/* Read n entries of the given stride from buf into out[]. Returns -EBADMSG
 * unless every entry is plausible: a wrong stride reads pids out of memory
 * sizes, padding or MIG ids, which these checks catch. */
static int parse_procs(const unsigned char *buf, unsigned n, unsigned stride, uint64_t total,
		       uint32_t pid_max, enum gs_gpu_proc_kind kind, struct gs_gpu_proc *out)
{
	for (unsigned k = 0; k < n; k++) {
		const unsigned char *e = buf + (size_t)k * stride;
		unsigned int pid;
		unsigned long long mem;

		memcpy(&pid, e + offsetof(nvmlProcessInfo_v2_t, pid), sizeof(pid));
		memcpy(&mem, e + offsetof(nvmlProcessInfo_v2_t, usedGpuMemory), sizeof(mem));
		if (pid == 0 || pid == 0xFFFFFFFFu || pid > pid_max)
			return -EBADMSG;
		if (mem != NVML_VALUE_NOT_AVAILABLE_ULL && total && mem > total)
			return -EBADMSG;
		if (stride >= sizeof(nvmlProcessInfo_v2_t)) {
			unsigned int gi, ci;

			memcpy(&gi, e + offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), sizeof(gi));
			memcpy(&ci, e + offsetof(nvmlProcessInfo_v2_t, computeInstanceId), sizeof(ci));
			if (!(gi == MIG_ID_NONE && ci == MIG_ID_NONE) && !(gi < MIG_ID_MAX && ci < MIG_ID_MAX))
				return -EBADMSG;
		}
		out[k] = (struct gs_gpu_proc){
			.pid = (pid_t)pid,
			.mem_known = mem != NVML_VALUE_NOT_AVAILABLE_ULL,
			.mem_used = mem != NVML_VALUE_NOT_AVAILABLE_ULL ? mem : 0,
			.kind = kind,
		};
	}
	return 0;
}

/* Add p to list[0..*n), merging a pid already there (it can be in several
 * lists, or several times in one under MIG): keep the first kind and the
 * largest known memory. */
static void merge_proc(struct gs_gpu_proc *list, size_t *n, const struct gs_gpu_proc *p)
{
	for (size_t k = 0; k < *n; k++) {
		struct gs_gpu_proc *o = &list[k];

		if (o->pid != p->pid)
			continue;
		if (p->mem_known && (!o->mem_known || p->mem_used > o->mem_used)) {
			o->mem_known = true;
			o->mem_used = p->mem_used;
		}
		return;
	}
	list[(*n)++] = *p;
}

static int list_kind(struct nvml_backend *nb, unsigned i, nvmlDevice_t dev, int kind,
		     struct gs_gpu_proc **all, size_t *n_all)
{
	static const unsigned strides[] = { 24, 32, 16 };
	bool saw_garbage = false;

	for (unsigned t = 0; t < nb->proc_ntries[kind]; t++) {
		const struct nvml_proc_try *try = &nb->proc_tries[kind][t];
		_cleanup_free_ struct gs_gpu_proc *tmp = NULL;
		struct gs_gpu_proc *grown;
		nvmlReturn_t st = NVML_SUCCESS;
		unsigned n = 0;
		int r;

		r = query_procs(nb, i, dev, try, &n, &st);
		if (r < 0) {
			/* A versioned symbol the driver does not implement:
			 * the next, older one may work. */
			if (st == NVML_ERROR_FUNCTION_NOT_FOUND && r == -EIO)
				continue;
			/* No graphics or MPS on this GPU: an empty list. */
			if (st == NVML_ERROR_NOT_SUPPORTED && r == -EOPNOTSUPP && kind != PK_COMPUTE)
				return 0;
			return r;
		}
		if (n == 0)
			return 0;
		tmp = calloc(n, sizeof(*tmp));
		if (!tmp)
			return -ENOMEM;
		/* The stride the symbol rule expects first, then the others on
		 * the same buffer (sized for 32-byte entries, so any fits). */
		r = parse_procs(nb->pbuf, n, try->stride, nb->gpus[i].total, nb->pid_max,
				(enum gs_gpu_proc_kind)kind, tmp);
		for (size_t s = 0; r < 0 && s < GS_ARRAY_SIZE(strides); s++)
			if (strides[s] != try->stride)
				r = parse_procs(nb->pbuf, n, strides[s], nb->gpus[i].total, nb->pid_max,
						(enum gs_gpu_proc_kind)kind, tmp);
		if (r < 0) {
			saw_garbage = true;
			continue; /* garbage with every stride: ask an older symbol */
		}
		grown = realloc(*all, (*n_all + n) * sizeof(**all));
		if (!grown)
			return -ENOMEM;
		*all = grown;
		for (unsigned k = 0; k < n; k++)
			merge_proc(*all, n_all, &tmp[k]);
		return 0;
	}
	/* Every answer was garbage: refuse rather than guess which pids. */
	if (saw_garbage)
		return -EBADMSG;
	/* No symbol implemented (or none exported: MPS is optional): the
	 * compute list is essential, the others are just empty. */
	return kind == PK_COMPUTE ? -EOPNOTSUPP : 0;
}

static int nvml_processes(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_proc **ret, size_t *ret_n)
{
	struct nvml_backend *nb = (struct nvml_backend *)b;
	_cleanup_free_ struct gs_gpu_proc *all = NULL;
	size_t n = 0;
	nvmlDevice_t dev = NULL;
	int r;

	r = nvml_handle(nb, i, &dev);
	if (r < 0)
		return r;
	if (nb->gpus[i].total == 0) {
		struct gs_gpu_mem m;

		/* The device size bounds usedGpuMemory; unknown means no bound. */
		r = nvml_mem(nb, i, dev, &m);
		if (r < 0 && r != -EOPNOTSUPP)
			return r;
	}
	for (int kind = 0; kind < PK_N; kind++) {
		r = list_kind(nb, i, dev, kind, &all, &n);
		if (r < 0)
			return r;
	}
	*ret = GS_TAKE_PTR(all);
	*ret_n = n;
	return 0;
}

/* nvitop's rule (interfaces.md 1.7): the 32-byte _v3 entries of early R535
 * only when the library has the confidential-computing call of that era but
 * not yet the detail-list call that came with the fix. */
static void plan_proc_tries(struct nvml_backend *nb)
{
	bool early_r535 = nb->sym.conf_compute_mem_size_info && !nb->sym.running_process_detail_list;
	static const unsigned natural[PV_N] = { [PV_1] = 16, [PV_2] = 24, [PV_3] = 24 };

	for (int k = 0; k < PK_N; k++) {
		nb->proc_ntries[k] = 0;
		for (int v = PV_3; v >= PV_1; v--) {
			nvmlDeviceGetProcesses_fn fn = nb->sym.procs[k][v];

			if (!fn)
				continue;
			nb->proc_tries[k][nb->proc_ntries[k]++] = (struct nvml_proc_try){
				.fn = fn,
				/* sym_table lists each kind's versions newest first. */
				.name = sym_table[SYM_COMPUTE_V3 + k * PV_N + (PV_3 - v)].names[0],
				.stride = v == PV_3 && early_r535 ? 32u : natural[v],
			};
		}
	}
}

/* ---- open ------------------------------------------------------------ */

static uint32_t read_pid_max(void)
{
	_cleanup_free_ char *buf = NULL;
	uint32_t v;

	if (gs_read_file_at(AT_FDCWD, "/proc/sys/kernel/pid_max", 64, &buf, NULL) < 0)
		return NVML_DEFAULT_PID_MAX;
	if (gs_parse_u32(gs_strstrip(buf), &v) < 0 || v == 0)
		return NVML_DEFAULT_PID_MAX;
	return v;
}

static int load_symbols(struct nvml_backend *nb, const char *lib, char *errbuf, size_t errlen)
{
	for (size_t s = 0; s < SYM_N; s++) {
		const struct nvml_sym_spec *spec = &sym_table[s];
		void *p = NULL;

		for (size_t k = 0; !p && k < GS_ARRAY_SIZE(spec->names) && spec->names[k]; k++) {
			p = dlsym(nb->dl, spec->names[k]);
			if (p)
				nb->resolved[s] = spec->names[k];
		}
		if (!p && spec->required) {
			set_err(errbuf, errlen, "%s: missing symbol %s", lib, spec->names[0]);
			return -ELIBBAD;
		}
		memcpy((char *)&nb->sym + spec->off, &p, sizeof(p));
	}
	if (!nb->sym.mem_v1 && !nb->sym.mem_v2) {
		set_err(errbuf, errlen, "%s: missing symbol %s", lib, "nvmlDeviceGetMemoryInfo");
		return -ELIBBAD;
	}
	for (int k = PK_COMPUTE; k <= PK_GRAPHICS; k++) {
		if (!nb->sym.procs[k][PV_3] && !nb->sym.procs[k][PV_2] && !nb->sym.procs[k][PV_1]) {
			set_err(errbuf, errlen, "%s: missing symbol %s", lib,
				sym_table[k == PK_COMPUTE ? SYM_COMPUTE_V1 : SYM_GRAPHICS_V1].names[0]);
			return -ELIBBAD;
		}
	}
	return 0;
}

/* One NVML call during open, with the one-line reason on failure. */
static int open_step(struct nvml_backend *nb, struct nvml_req *q, enum nvml_sym_id sym, char *errbuf, size_t errlen)
{
	char tmp[32];

	nvml_call(nb, q);
	if (q->ret != NVML_SUCCESS) {
		set_err(errbuf, errlen, "%s: %s", nb->resolved[sym], nvml_errstr(nb, q->ret, tmp, sizeof(tmp)));
		return nvml_to_errno(q->ret);
	}
	return 0;
}

static const struct gs_gpu_backend_ops nvml_ops = {
	.name = "nvml",
	.count = nvml_count,
	.info = nvml_info,
	.memory = nvml_memory,
	.processes = nvml_processes,
	.close = nvml_close,
};

int gs_nvml_open(const struct gs_nvml_opts *opts, struct gs_nvml_trace *trace, struct gs_gpu_backend **ret,
		 char *errbuf, size_t errlen)
{
	static const struct gs_nvml_opts defaults;
	struct nvml_backend *nb;
	const char *lib;
	struct nvml_req q;
	int r;

	if (!ret)
		return -EINVAL;
	if (!opts)
		opts = &defaults;
	if (errbuf && errlen > 0)
		errbuf[0] = '\0';
	lib = opts->lib_path ? opts->lib_path : NVML_DEFAULT_LIB;

	nb = calloc(1, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	nb->base.ops = &nvml_ops;
	nb->pid_max = read_pid_max();
	nb->trace = trace;

	nb->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!nb->dl) {
		const char *e = dlerror();

		/* dlerror names the library: "X: cannot open shared object file: ..." */
		set_err(errbuf, errlen, "%s%s", e ? e : lib, e ? "" : ": cannot load");
		r = -ENOENT;
		goto fail;
	}
	r = load_symbols(nb, lib, errbuf, errlen);
	if (r < 0)
		goto fail;
	nb->mem_v2_ok = nb->sym.mem_v2 != NULL;
	plan_proc_tries(nb);

	q = (struct nvml_req){ .op = OP_INIT, .gpu = -1 };
	r = open_step(nb, &q, SYM_INIT, errbuf, errlen);
	if (r < 0)
		goto fail;
	nb->inited = true;

	if (nb->sym.driver_version) {
		q = (struct nvml_req){ .op = OP_DRIVER_VERSION, .gpu = -1 };
		nvml_call(nb, &q);
		/* Only for messages: a failure leaves it empty. */
		if (q.ret == NVML_SUCCESS)
			gs_strlcpy(nb->base.driver_version, q.out.str, sizeof(nb->base.driver_version));
	}

	q = (struct nvml_req){ .op = OP_COUNT, .gpu = -1 };
	r = open_step(nb, &q, SYM_COUNT, errbuf, errlen);
	if (r < 0)
		goto fail;
	if (q.out.u == 0) {
		set_err(errbuf, errlen, "%s: %s", nb->resolved[SYM_COUNT], "no GPU found");
		r = -ENODEV;
		goto fail;
	}
	/* Minors stop at 247, so more GPUs than that cannot be real. */
	nb->count = q.out.u < GS_MAX_GPUS ? q.out.u : GS_MAX_GPUS;

	*ret = &nb->base;
	return 0;
fail:
	nvml_destroy(nb);
	return r;
}
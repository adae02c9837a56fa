/* GPU backends: a small table of functions per vendor. NVIDIA through NVML
 * (dlopen'd, never linked, and run in a helper process: see nvml_child.c)
 * and, when NVML is unusable, the NVIDIA kernel driver's /proc/driver/nvidia
 * files (GPU list only: no memory, no processes). */
#ifndef GS_GPU_H
#define GS_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/root.h"

#define GS_MAX_GPUS 248 /* /dev/nvidia minors 0..247 */

/* What a GPU's used memory means. */
enum gs_mem_basis {
	GS_MEM_NONE,             /* no memory figures */
	GS_MEM_V2,               /* NVML v2: allocated memory, the driver's reservation apart */
	GS_MEM_V1,               /* NVML v1 as it comes: the reservation included (R510+), not separable */
	GS_MEM_V1_ESTIMATED,     /* v1 minus the reservation as gs_discover estimated it (snapshot.h) */
};

/* "v2", "v1", "v1-estimated" (docs/json.md), NULL for none. */
static inline const char *gs_mem_basis_str(enum gs_mem_basis b)
{
	switch (b) {
	case GS_MEM_V2: return "v2";
	case GS_MEM_V1: return "v1";
	case GS_MEM_V1_ESTIMATED: return "v1-estimated";
	case GS_MEM_NONE: break;
	}
	return NULL;
}

/* Who made the GPU. NVIDIA GPUs come from NVML or the driver's procfs;
 * AMD and Intel ones from the DRM backend (gpu/drm.h). */
enum gs_gpu_vendor {
	GS_VENDOR_NVIDIA,
	GS_VENDOR_AMD,
	GS_VENDOR_INTEL,
};

/* "nvidia", "amd", "intel" (docs/json.md). */
static inline const char *gs_gpu_vendor_str(enum gs_gpu_vendor v)
{
	switch (v) {
	case GS_VENDOR_AMD: return "amd";
	case GS_VENDOR_INTEL: return "intel";
	case GS_VENDOR_NVIDIA: break;
	}
	return "nvidia";
}

struct gs_gpu {
	/* The GPU's number for users (-g, output): NVML's own index
	 * (nvidia-smi's), or order in procfs; AMD/Intel GPUs follow the
	 * NVIDIA ones, in PCI order (set by the snapshot). */
	unsigned index;
	unsigned minor;          /* /dev/nvidia<minor>; UINT_MAX for AMD/Intel (no minor set has it) */
	enum gs_gpu_vendor vendor;
	unsigned backend_index;  /* AMD/Intel: the GPU's index in the DRM backend (NVIDIA: index) */
	char driver[16];         /* AMD/Intel: "amdgpu", "xe", "i915"; "" for NVIDIA */
	/* Where used memory comes from: "nvml", "sysfs" (amdgpu
	 * mem_info_vram_used), "fdinfo" (Intel: the clients' resident VRAM),
	 * NULL when unknown. */
	const char *mem_source;
	char uuid[96];
	char name[96];
	char pci_bus_id[32];     /* "00000000:00:06.0" as NVML prints it */
	bool mem_known;          /* memory fields below are valid */
	bool mem_v2;             /* used/reserved come from the v2 call */
	enum gs_mem_basis mem_basis;
	uint64_t mem_total;      /* bytes */
	uint64_t mem_used;       /* bytes, allocated: see mem_basis */
	uint64_t mem_reserved;   /* bytes, the driver's reservation (v2, or the v1 estimate) */
	uint64_t mem_free;       /* bytes, the backend's own free figure: NVML's is not
				  * total - used - reserved to the byte (an H200 read 1 MiB
				  * more), and nvidia-smi prints NVML's */
};

enum gs_gpu_proc_kind {
	GS_GPU_PROC_COMPUTE,
	GS_GPU_PROC_GRAPHICS,
	GS_GPU_PROC_MPS,
};

struct gs_gpu_proc {
	pid_t pid;               /* host PID as the driver reports it (may be dead) */
	bool mem_known;
	uint64_t mem_used;       /* bytes */
	enum gs_gpu_proc_kind kind;
};

struct gs_gpu_mem {
	bool v2;
	uint64_t total, used, reserved;
	uint64_t free;           /* the backend's own figure (see gs_gpu.mem_free) */
	/* No figure at this reading (an Intel GPU, whose used memory is its
	 * clients' fdinfo: a client without usage stats): used means nothing. */
	bool used_unknown;
};

struct gs_gpu_backend;

struct gs_gpu_backend_ops {
	const char *name;        /* "nvml", "procfs" */
	/* Number of GPUs the backend can address. */
	int (*count)(struct gs_gpu_backend *b, unsigned *ret);
	/* Static facts and memory of GPU i (0-based backend order). */
	int (*info)(struct gs_gpu_backend *b, unsigned i, struct gs_gpu *ret);
	/* Memory only: the fast call the wait loop polls. -EOPNOTSUPP if unknown. */
	int (*memory)(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_mem *ret);
	/* Memory of n GPUs in one exchange (the wait loop's poll): ret[k] and
	 * errs[k] (0 or what memory() would return) for GPU idx[k]. Returns 0,
	 * or -errno when the backend failed as a whole (-ETIMEDOUT: hung).
	 * NULL: the caller asks memory() GPU by GPU. */
	int (*memory_many)(struct gs_gpu_backend *b, const unsigned *idx, size_t n, struct gs_gpu_mem *ret,
			   int *errs);
	/* Union of compute, graphics and MPS lists, validated. *ret is malloc'd. */
	int (*processes)(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_proc **ret, size_t *ret_n);
	void (*close)(struct gs_gpu_backend *b);
};

struct gs_gpu_backend {
	const struct gs_gpu_backend_ops *ops;
	char driver_version[80];
	pid_t helper_pid;        /* the process the backend's calls run in, 0: this one */
	/* Why the backend failed as a whole, in words ("" while it works): for
	 * a hang, the call and the GPU, e.g. "GPU 0 (00000000:00:06.0):
	 * nvmlDeviceGetMemoryInfo_v2 did not return within 5.0 s: ...". */
	char error[384];
};

struct gs_nvml_opts {
	const char *lib_path;    /* NULL: "libnvidia-ml.so.1" */
	unsigned call_timeout_ms; /* deadline of every NVML call (0: default 5000) */
};

/* NVML in a helper process (nvml_child.c): gpuslate talks to it over a
 * socket and never waits on the driver itself. A call that passes its
 * deadline leaves the helper to the kernel and fails the backend for good:
 * -ETIMEDOUT from then on, with the call and the GPU in b->error. On failure
 * to open returns -errno and a one-line reason in errbuf (e.g.
 * "libnvidia-ml.so.1: cannot open shared object file", "nvmlInit_v2:
 * Driver/library version mismatch"). Errors: -ENOENT library missing,
 * -ENODEV driver not loaded / no GPU, -ETIMEDOUT a call hung (the reason
 * names it), -EIO other NVML failure or the helper died. */
int gs_nvml_child_open(const struct gs_nvml_opts *opts, struct gs_gpu_backend **ret, char *errbuf, size_t errlen);

/* GPU list from <root->drv_fd>/gpus/<pci>/information (/proc/driver/nvidia). */
int gs_procfs_nvidia_open(const struct gs_root *root, struct gs_gpu_backend **ret);

/* Parse one "information" file's text into ret (index left 0). Pure, for tests. */
int gs_procfs_nvidia_parse_information(const char *text, struct gs_gpu *ret);

static inline void gs_gpu_backend_close(struct gs_gpu_backend *b)
{
	if (b)
		b->ops->close(b);
}

#endif

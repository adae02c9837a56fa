/* A discovery session: the /proc and /dev roots, the device identities and
 * the GPU backend (NVML in its helper process, else the driver's procfs),
 * opened once and used by every snapshot (core/snapshot.c) and by the
 * wait loop's memory polls. Only this module and snapshot.c touch the
 * backend and the root directories; the other stages ask through them. */
#ifndef GS_DISCOVER_H
#define GS_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu/gpu.h"
#include "proc/devset.h"
#include "proc/drm_fdwatch.h"
#include "proc/owner.h"
#include "proc/ptable.h"
#include "util/root.h"

struct gs_discover_opts {
	struct gs_root_paths paths;
	const char *nvml_lib;     /* NULL: libnvidia-ml.so.1 */
	bool no_nvml;             /* skip NVML entirely (tests, --no-nvml) */
	unsigned nvml_timeout_ms;
	/* Test fixtures for the drm- keys of fdinfo (GPUSLATE_FDINFO_SHADOW,
	 * docs/amd-intel.md 5.1); NULL: none. */
	const char *fdinfo_shadow;
};

/* The driver's reservation of one GPU when NVML has only v1 memory info,
 * whose used includes it: v1 used minus what the listed processes use, read
 * while memory held still, the smallest such value seen. It can only be too
 * large by memory that no listed process held at that moment, so it is set
 * by the first full snapshot (before anything is stopped) and after that
 * only lowered: memory being torn down is never taken for the reservation. */
struct gs_v1_reserve {
	bool known;
	uint64_t bytes;
};

/* Long-lived discovery state: the backend and device identities are loaded
 * once and reused by every snapshot and by the wait loop's memory polls.
 * Only this module calls the backend. */
struct gs_discover {
	struct gs_root root;
	struct gs_devset devs;
	struct gs_gpu_backend *backend; /* NVIDIA's; NULL when no NVIDIA GPU information at all */
	const char *gpu_source;   /* NVIDIA's source: "nvml", "procfs", "none" */
	/* AMD and Intel GPUs (gpu/drm.h), NULL when the host has none. Their
	 * snapshot indices follow the NVIDIA ones. */
	struct gs_gpu_backend *drm;
	int fdinfo_shadow_fd;     /* -1: none */
	char gpu_warning[512];
	char error[384];          /* why opening failed (a hung NVML), "" otherwise */
	pid_t self;
	struct gs_owner self_owner; /* gpuslate's own cgroup: its unit is never stopped */
	bool gpus_only;           /* snapshots skip holders (nvidia-smi style GPU queries) */
	unsigned n_full_snapshots;
	struct gs_v1_reserve v1_reserved[GS_MAX_GPUS]; /* by backend index */
	/* amdgpu's mem_info_vram_used counts the driver's own buffers: the
	 * same estimate as v1's, by DRM backend index. */
	struct gs_v1_reserve drm_reserved[GS_DEVSET_DRM_MAX];
	/* The DRM fds of the last full snapshot, re-read by the wait loop's
	 * polls of an Intel GPU's memory (gs_snapshot_memory). */
	struct gs_drm_fdwatch drm_watch;
};

/* Returns 0, or -errno; -ETIMEDOUT when NVML hung while opening (d->error
 * says which call; there is no falling back to the driver's procfs then:
 * the driver itself is stuck); -ENOMEM when memory ran out (ours, not a
 * reason to fall back either). */
int gs_discover_open(struct gs_discover *d, const struct gs_discover_opts *opts);
void gs_discover_close(struct gs_discover *d);

/* Why the GPU backend failed as a whole (a hung call, with the GPU and the
 * call), or "" while it works. */
const char *gs_discover_error(const struct gs_discover *d);

/* The /proc directory discovery reads (the real one or --proc-root): the
 * stages that read or signal processes (filters, stop) go through it. */
int gs_discover_proc_fd(const struct gs_discover *d);
/* The root directories (/proc, /sys, /dev stand-ins) the stop stage reads
 * (the cgroup freezer). */
const struct gs_root *gs_discover_root(const struct gs_discover *d);
/* gs_selection.is_pidns_init for the plan, d being the discover session. */
int gs_discover_is_pidns_init(void *d, pid_t pid, uint64_t starttime);
/* Every process's stat line, from that /proc. */
int gs_discover_ptable(struct gs_discover *d, struct gs_ptable *ret);

/* Can GPU memory be polled (NVML)? */
bool gs_discover_polls_memory(const struct gs_discover *d);

/* Can the memory of this GPU be polled: NVML for NVIDIA, amdgpu's sysfs
 * for AMD, for Intel the fdinfo of the DRM fds the last full snapshot saw
 * on its nodes (its used memory is its clients'). */
bool gs_discover_polls_gpu(const struct gs_discover *d, const struct gs_gpu *g);

/* Forget the drivers' reservations estimated so far (NVML v1, amdgpu): the
 * next snapshot estimates them again, as the first one did. */
void gs_discover_forget_reservations(struct gs_discover *d);

#endif

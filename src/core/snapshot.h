/* The "discover" stage (with core/discover.c): a snapshot of one host's GPUs and of every process
 * that holds them. GPUs and memory come from a backend (NVML, else the
 * driver's procfs); holders are the union of NVML's process lists and a scan of
 * /proc fds and mappings, because each source misses what the other sees
 * (NVML names dead creators in the fork case; the scan cannot see memory). */
#ifndef GS_SNAPSHOT_H
#define GS_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu/gpu.h"
#include "proc/devset.h"
#include "proc/holderscan.h"
#include "proc/procinfo.h"
#include "proc/ptable.h"
#include "util/root.h"
#include "util/set256.h"
#include "core/discover.h"
#include "core/protect.h"

enum gs_role {
	GS_ROLE_COMPUTE,   /* maps /dev/nvidia<N>, or is in NVML's process lists */
	GS_ROLE_CLIENT,    /* fds only, no mappings: monitors, exporters */
	GS_ROLE_PROTECTED, /* persistenced, DCGM, fabric manager, IMEX, MPS control, X */
};

/* Set of snapshot GPU indices (not minors). */
struct gs_gpuset {
	uint64_t bits[GS_SET256_WORDS];
};

static inline void gs_gpuset_add(struct gs_gpuset *s, unsigned i)
{
	gs_set256_add(s->bits, i);
}
static inline bool gs_gpuset_has(const struct gs_gpuset *s, unsigned i)
{
	return gs_set256_has(s->bits, i);
}
static inline bool gs_gpuset_intersects(const struct gs_gpuset *a, const struct gs_gpuset *b)
{
	return gs_set256_intersects(a->bits, b->bits);
}
static inline bool gs_gpuset_empty(const struct gs_gpuset *s)
{
	return gs_set256_empty(s->bits);
}

struct gs_holder {
	pid_t pid;
	bool alive;               /* false: NVML lists it but no such process exists */
	bool info_ok;             /* info below was read */
	struct gs_procinfo info;
	struct gs_gpuset gpus;    /* GPUs it holds (compute: mapped or NVML-listed) */
	bool nvml_listed;         /* NVML's lists name this PID */
	bool kfd_listed;          /* KFD (/sys/class/kfd/kfd/proc) names it: a ROCm context */
	struct gs_gpuset nvml_gpus;        /* the GPUs NVML (or, AMD, KFD) lists it on */
	/* Of those, the GPUs the /proc scan does not back up (a live process
	 * with no fd or mapping of that GPU's node): NVML's PIDs are host PIDs
	 * from a moment ago, so this process may not be the one it means. */
	struct gs_gpuset nvml_unconfirmed;
	struct gs_minorset fd_minors, map_minors; /* /dev/nvidia<N> open / mapped */
	bool maps_gpu;            /* maps a /dev/nvidia<N> node: has a context */
	bool maps_denied;         /* holds NVIDIA fds but its maps were unreadable */
	unsigned n_fds;           /* NVIDIA fds */
	unsigned n_drm_fds;       /* AMD/Intel DRM and KFD fds */
	struct gs_gpuset mapped;  /* GPUs whose device node it maps (any vendor) */
	bool fds_denied;          /* its fds could not be read (permission) */
	bool mem_known;
	uint64_t mem_used;        /* bytes, summed over GPUs, from NVML; AMD/Intel: KFD or DRM fdinfo */
	const char *mem_source;   /* "nvml", "kfd", "fdinfo", "kfd+fdinfo"...; NULL when unknown */
	enum gs_role role;
	/* Calls itself a protected daemon (comm, argv[0] or executable name)
	 * but its executable, unit or uid do not bear that out: a name any
	 * process can take (PR_SET_NAME) never protects it. Role compute or
	 * client, flagged in the plan. */
	bool protected_unverified;
	/* The whole command line (gs_procinfo_read_cmdline), for --match;
	 * NULL when it could not be read. Owned by the snapshot. */
	char *cmdline_full;
};

/* One row of NVML's process lists, kept as the driver reported it (per GPU).
 * AMD/Intel GPUs have rows of the same kind: per process the larger of its
 * KFD VRAM and its DRM clients' resident VRAM (the two can be the same
 * buffers), each DRM client counted once on the host. */
struct gs_nvml_entry {
	pid_t pid;
	unsigned gpu;             /* snapshot GPU index */
	bool mem_known;
	uint64_t mem_used;        /* bytes on that GPU */
	const char *source;       /* "nvml", "kfd", "fdinfo" */
};

struct gs_snapshot {
	char host[256];
	const char *gpu_source;   /* NVIDIA's: "nvml", "procfs" or "none" */
	bool drm;                 /* AMD/Intel GPUs were looked for (the DRM backend is open) */
	char gpu_warning[512];    /* why NVML was not used, "" when it was */
	/* What the AMD/Intel figures lack, in words ("" when nothing): e.g.
	 * DRM clients without memory keys (amdgpu before 5.19). */
	char drm_note[384];
	char driver_version[80];
	struct gs_gpu *gpus;
	size_t n_gpus;
	struct gs_nvml_entry *nvml; /* NVML's lists, GPU by GPU */
	size_t n_nvml;
	struct gs_gpuset nvml_listed; /* GPUs whose process lists were read */
	/* AMD processes whose own share of a GPU is unknown (a client without
	 * usage stats, counted with what stays): should one be a target, that
	 * GPU's figure cannot be held against the baseline. */
	struct gs_unknown_share { pid_t pid; unsigned gpu; } *unknown_shares;
	size_t n_unknown_shares;
	struct gs_holder *holders; /* sorted by pid */
	size_t n_holders;
	size_t n_scanned;         /* processes looked at */
	size_t n_denied;          /* processes whose fds could not be read */
	pid_t denied[8];          /* the first of them, for the warning */
	bool as_root;
	/* GPUs the driver counts but refuses to us (NVML NO_PERMISSION: a
	 * container's device cgroup), by backend index: not in gpus[]. */
	unsigned refused[GS_MAX_GPUS];
	size_t n_refused;
};

/* Memory of the snapshot GPUs gpus[0..n) of s, in one exchange with the
 * driver (the wait loop's poll): ret[k] for gpus[k], used on the same basis
 * as in the snapshot (v1: minus the estimated reservation). Returns 0 or
 * the first failure (-ETIMEDOUT: the driver hung, see gs_discover_error). */
int gs_snapshot_memory(struct gs_discover *d, const struct gs_snapshot *s, const unsigned *gpus, size_t n,
		       struct gs_gpu_mem *ret);

/* Take a full snapshot. Returns 0; -ENODEV when no GPU information at all
 * could be read (the snapshot is still filled with what the scan found);
 * -ETIMEDOUT/-EIO when the driver failed mid-way. */
int gs_snapshot_take(struct gs_discover *d, struct gs_snapshot *ret);
void gs_snapshot_free(struct gs_snapshot *s);

/* Can snapshot GPU g's used memory be held against a baseline, now and in
 * the wait's polls? Yes when the figure is known on a basis without the
 * driver's own reservation (v2, or v1 with the reservation estimated; an
 * Intel GPU's figure is its clients' own) and the wait can read it again.
 * The one test: status, reclaim, wait and run's watch all decide by it. */
bool gs_snapshot_memory_verifiable(const struct gs_discover *d, const struct gs_snapshot *s, size_t g);

/* Memory on snapshot GPU g that no live process holds: used, less what
 * NVML's process lists give the processes that exist (and a dead creator
 * whose memory a live process inherited, the fork case). What a process that
 * is gone still has listed counts as held by no process: the driver holds
 * it (teardown, or for good). False when it cannot be told: no memory
 * figures, v1 figures without an estimate of the reservation (v1-estimated
 * counts what no process held at the first snapshot as the reservation),
 * no process list, or a live process whose memory NVML does not report. */
bool gs_snapshot_unowned(const struct gs_snapshot *s, size_t g, uint64_t *ret);

/* Do the processes gpuslate could not inspect (n_denied) matter? Yes when a
 * GPU's memory is not all accounted for by processes it sees (more than
 * tolerance bytes held by no visible process, or it cannot be told): one of
 * them may hold it. Otherwise they can only be clients holding no memory, or
 * share a context a visible process holds too. */
bool gs_snapshot_denied_matters(const struct gs_snapshot *s, uint64_t tolerance);

/* Memory that counts as held for `status` (which has no --tolerance): the
 * default of reclaim's --tolerance, in MiB. */
#define GS_TOLERANCE_DEFAULT_MIB 16

/* Find a holder by pid (binary search), NULL when absent. */
const struct gs_holder *gs_snapshot_find(const struct gs_snapshot *s, pid_t pid);

/* "compute", "client", "protected" (docs/json.md). */
static inline const char *gs_role_str(enum gs_role r)
{
	switch (r) {
	case GS_ROLE_COMPUTE:
		return "compute";
	case GS_ROLE_CLIENT:
		return "client";
	case GS_ROLE_PROTECTED:
		return "protected";
	}
	return "unknown";
}

/* The GPU sources for output: gpu_source, "+drm" when AMD/Intel GPUs
 * were found ("nvml+drm", "none+drm" is "drm"). */
const char *gs_snapshot_source(const struct gs_snapshot *s, char *buf, size_t len);

/* For a dead NVML- or KFD-listed PID (the fork case): the live holders that still map
 * one of its GPUs without being listed themselves, i.e. the processes that
 * inherited its fds and keep its memory. Returns how many were written. */
size_t gs_snapshot_heirs(const struct gs_snapshot *s, const struct gs_holder *dead,
			 pid_t *ret, size_t max);

#endif

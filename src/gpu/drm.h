/* AMD and Intel GPUs through the kernel's DRM sysfs, one backend with a
 * table per driver (amdgpu, xe, i915): GPUs are the /sys/class/drm/card<N>
 * whose device is bound to one of those drivers; memory from amdgpu's
 * mem_info_vram_* files (Intel has no device-wide usage file: its used memory
 * is the sum of the clients' fdinfo, see proc/drm_fdinfo.h); processes from
 * KFD (ROCm compute) for amdgpu. NVIDIA cards (nvidia-drm), display-only
 * cards (ast on BMCs, simpledrm) and old radeon are not this backend's.
 * Everything is read relative to the sys root (--sys-root). See
 * docs/amd-intel.md for the files and their sources. */
#ifndef GS_GPU_DRM_H
#define GS_GPU_DRM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu/gpu.h"
#include "util/pci.h"
#include "util/root.h"

#define GS_DRM_MAJOR 226u     /* /dev/dri/card<N> (minors 0-63), renderD<128+N> */
#define GS_DRM_KFD_NODES_MAX 8 /* KFD nodes of one card: 8 partitions (MI300X CPX) */

/* What this backend knows of GPU i beyond struct gs_gpu. */
struct gs_drm_gpu {
	const char *vendor;        /* "AMD", "Intel" */
	char driver[16];           /* "amdgpu", "xe", "i915" */
	uint16_t vendor_id, device_id;
	struct gs_pci_addr pci;
	unsigned card;             /* /sys/class/drm/card<card> */
	bool card_dev_known, render_dev_known;
	dev_t card_dev;            /* st_rdev of /dev/dri/card<N>, from sysfs "dev" */
	dev_t render_dev;          /* st_rdev of its /dev/dri/renderD<M> */
	uint64_t unique_id;        /* amdgpu unique_id (GFX9 and newer), 0 when absent */
	bool vram_total_known;
	uint64_t vram_total;       /* bytes: amdgpu mem_info_vram_total, xe tiles' physical size */
	bool vram_used_known;      /* the driver reports device-wide VRAM usage (amdgpu) */
	size_t n_kfd;              /* KFD nodes mapped to this card */
	uint32_t kfd_gpu_ids[GS_DRM_KFD_NODES_MAX];
};

/* Enumerate <sys>/class/drm/card* bound to amdgpu, xe or i915, sorted by
 * PCI address, and map the KFD topology's GPU nodes onto them. GPU i of the
 * backend then reports: index i, minor UINT_MAX (no /dev/nvidia<N>), uuid
 * "GPU-<16 hex digits>" from amdgpu's unique_id (the form ROCm prints) or
 * else the PCI address "0000:c1:00.0", name from amdgpu's product_name or
 * "AMD GPU 1002:74a1", pci_bus_id in NVML's form. Errors: -ENOENT no sysfs,
 * -ENODEV no AMD or Intel GPU, -ENOMEM, other -errno of a failing read. An
 * unreadable or malformed card is skipped, not fatal. */
int gs_drm_open(const struct gs_root *root, struct gs_gpu_backend **ret);

/* The DRM facts of GPU i; -EINVAL if b is not this backend or i is out of
 * range. */
int gs_drm_gpu_info(struct gs_gpu_backend *b, unsigned i, struct gs_drm_gpu *ret);

struct gs_drm_usage;

/* GPU i's memory from its DRM clients, for drivers without a device-wide
 * usage file (Intel): u counts every DRM fd on GPU i's nodes in every
 * process, each client once (proc/drm_fdinfo.h). used = the clients' resident
 * VRAM on GPU i's PCI device; total = the sysfs total, 0 when unknown (i915).
 * -ENODATA when an fd had no usage stats or a client no VRAM figure: then
 * the used memory is unknown, not smaller. Kernel-internal allocations are
 * never in it. */
int gs_drm_memory_from_usage(struct gs_gpu_backend *b, unsigned i, const struct gs_drm_usage *u,
			     struct gs_gpu_mem *ret);

/* Whether KFD processes can be listed: 0 (the topology was read; GPUs
 * without a KFD node have n_kfd 0), -ENOENT (no KFD on this host), or the
 * -errno that made the topology unreadable (then no GPU has KFD nodes). */
int gs_drm_kfd_state(struct gs_gpu_backend *b);

/* Parse a sysfs uevent of a PCI device: DRIVER=, PCI_SLOT_NAME=, PCI_ID=.
 * Missing keys leave their outputs untouched (driver ""); a malformed value
 * is -EBADMSG. Pure, for tests. */
int gs_drm_parse_uevent(const char *text, char *driver, size_t driver_len, bool *ret_pci_known,
			struct gs_pci_addr *ret_pci, uint16_t *ret_vendor, uint16_t *ret_device);

/* Parse a sysfs "dev" attribute, "226:128\n". Pure. */
int gs_drm_parse_dev(const char *text, dev_t *ret);

#endif

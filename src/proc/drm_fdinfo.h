/* DRM client usage stats: what /proc/PID/fdinfo/N says about an fd on a DRM
 * node (/dev/dri/card*, renderD*), per Documentation/gpu/drm-usage-stats.rst:
 * the driver, the device (drm-pdev), the client (drm-client-id) and, per
 * memory region, the bytes of the client's buffers. Several fds (dup, fork,
 * SCM_RIGHTS) can share one client; gs_drm_usage counts each client once.
 * See docs/amd-intel.md for the keys drivers print and the captures. */
#ifndef GS_DRM_FDINFO_H
#define GS_DRM_FDINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/pci.h"

#define GS_DRM_REGIONS_MAX 16

struct gs_drm_region {
	char name[24];          /* "vram", "gtt", "cpu" (amdgpu), "vram0", "system" (xe), "local0" (i915) */
	bool total_known, resident_known;
	uint64_t total;         /* bytes, drm-total-<name>: every buffer created */
	uint64_t resident;      /* bytes, drm-resident-<name>, else drm-memory-<name> */
	bool resident_legacy;   /* resident came from drm-memory-<name> */
};

struct gs_drm_fdinfo {
	char driver[32];        /* drm-driver: "amdgpu", "xe", "i915" */
	bool pdev_known;
	struct gs_pci_addr pdev;
	bool client_id_known;
	uint64_t client_id;
	size_t n_regions;
	struct gs_drm_region regions[GS_DRM_REGIONS_MAX];
	unsigned n_bad;         /* known keys whose value did not parse (ignored) */
};

/* Parse the text of one fdinfo file. Returns 0; -ENODATA when it has no
 * drm-driver key and is not amdgpu's text of Linux 5.14-5.18 (its "pdev",
 * "pasid" and "vram mem: N kB" keys, read as driver amdgpu, the PASID as
 * the client id, the placements as resident bytes): not a DRM fd, or a
 * kernel or driver without usage stats; -EINVAL for NULL. A value
 * that does not parse (unknown unit, overflow) leaves that key unknown and
 * counts in n_bad: a figure is either exact or absent, never guessed. Pure. */
int gs_drm_fdinfo_parse(const char *text, struct gs_drm_fdinfo *ret);

/* Is region the device's own memory (VRAM) for this driver? amdgpu "vram",
 * xe "vram<N>", i915 "local<N>". GTT, system and stolen are host memory. */
bool gs_drm_region_is_vram(const char *driver, const char *region);

/* Device memory of the client: resident bytes summed over its VRAM regions.
 * 0, or -ENODATA when no VRAM region has a resident figure (no memory keys,
 * or an integrated GPU). */
int gs_drm_fdinfo_vram(const struct gs_drm_fdinfo *fi, uint64_t *ret_resident);

/* Read and parse /proc/<pid>/fdinfo/<fd> under proc_fd. expect_ino (when
 * not 0) is the st_ino the caller saw for that fd: a different "ino:" line
 * means the fd number was reused meanwhile, -ESTALE. shadow_fd (when >= 0)
 * is the test fixture directory standing for the drm- keys the kernel would
 * print (GPUSLATE_FDINFO_SHADOW, docs/amd-intel.md 5.1): <shadow>/<pid>/<fd> is
 * used only when its "ino:" and "mnt_id:" lines equal the real file's, so a
 * stale fixture of a reused pid is never believed. Returns what
 * gs_drm_fdinfo_parse returns, or -errno (-ENOENT/-ESRCH: gone). */
int gs_drm_fdinfo_read(int proc_fd, int shadow_fd, pid_t pid, int fd, ino_t expect_ino,
		       struct gs_drm_fdinfo *ret);

/* One DRM client as counted: (pdev, client-id) once however many fds. */
struct gs_drm_client {
	char driver[32];
	bool pdev_known;
	struct gs_pci_addr pdev;
	bool id_known;          /* false: no drm-client-id, cannot be merged */
	uint64_t id;
	unsigned n_fds;         /* fds that showed this client */
	bool vram_known;
	uint64_t vram;          /* resident bytes in VRAM regions */
	bool mem_known;
	uint64_t mem;           /* bytes over all regions (total, else resident) */
};

/* One DRM fd whose fdinfo was read: enough to read it again without a
 * /proc pass (proc/drm_fdwatch.h), and to know it is still the same open
 * file (the inode the scan saw). */
struct gs_drm_fdref {
	pid_t pid;
	int fd;
	ino_t ino;
	unsigned gpu;           /* the DRM backend index of the node it is open on */
	bool no_stats;          /* its fdinfo gave no usage stats when read */
};

struct gs_drm_usage {
	struct gs_drm_client *clients;
	size_t n_clients, cap_clients;
	unsigned n_fds;         /* DRM fds offered (with or without stats) */
	unsigned n_no_stats;    /* of those, fds whose fdinfo had no drm- keys */
	/* The fds it was read from (gs_drm_usage_note_fd); not carried over by
	 * gs_drm_usage_merge: a merged total is of clients, not of fds. */
	struct gs_drm_fdref *refs;
	size_t n_refs, cap_refs;
};

/* Count one DRM fd. fi NULL: an fd whose fdinfo had no usage stats. The same
 * client seen again (another fd, or another process) is not added twice; its
 * figures become the larger of the two reads (they are a few microseconds
 * apart). Clients without drm-client-id cannot be told apart and are each
 * kept. Returns 0 or -ENOMEM (nothing changed). */
int gs_drm_usage_add(struct gs_drm_usage *u, const struct gs_drm_fdinfo *fi);

/* Remember that the fd ref->(pid, fd) was read into u, to read it again.
 * Returns 0 or -ENOMEM. */
int gs_drm_usage_note_fd(struct gs_drm_usage *u, const struct gs_drm_fdref *ref);

/* Add every client of src into dst (a host total from per-process ones). */
int gs_drm_usage_merge(struct gs_drm_usage *dst, const struct gs_drm_usage *src);

struct gs_drm_totals {
	unsigned n_clients;
	bool vram_known;        /* at least one client had a VRAM figure */
	uint64_t vram;          /* resident VRAM bytes over the clients */
	bool mem_known;
	uint64_t mem;
};

/* Sum the clients on device pdev (NULL: all devices). */
void gs_drm_usage_totals(const struct gs_drm_usage *u, const struct gs_pci_addr *pdev, struct gs_drm_totals *ret);

void gs_drm_usage_free(struct gs_drm_usage *u);

#endif

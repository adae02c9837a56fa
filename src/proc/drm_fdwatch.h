/* The DRM fds a full holder scan found, read again without a /proc pass.
 * An Intel GPU has no device-wide "VRAM used" (docs/amd-intel.md 1.3): its
 * used memory is the resident VRAM of its DRM clients, from their fdinfo,
 * and the wait loop polls it every few milliseconds. A full /proc pass per
 * poll would be work on the hot path; instead the list of (pid, fd, inode)
 * the last full scan saw on each GPU's nodes is re-read, and every full scan
 * (the wait loop's re-scan, on its slower beat) replaces the list, which is
 * how new clients are found. A poll never decides a verdict alone: the
 * verdict is always confirmed by a full scan (core/verify.c). */
#ifndef GS_DRM_FDWATCH_H
#define GS_DRM_FDWATCH_H

#include <stddef.h>

#include "proc/drm_fdinfo.h"
#include "proc/holderscan.h"

struct gs_drm_fdwatch {
	struct gs_drm_fdref *refs;
	size_t n;
};

/* Replace the list with the DRM fds of a full scan (those whose fdinfo was
 * read: card and render nodes). Returns 0, or -ENOMEM with w unchanged. */
int gs_drm_fdwatch_set(struct gs_drm_fdwatch *w, const struct gs_scan_result *scan);

/* Re-read the fdinfo of the listed fds on DRM GPU gpu (backend index) into
 * *ret (initialised here; free with gs_drm_usage_free), each client once.
 * Each read is checked against the inode the scan saw. An fd that is gone
 * (its process exited, it was closed, or its number now names another file)
 * no longer references its client: it is dropped from the list, and the
 * next full scan finds whatever took its place. An fd that cannot be read
 * otherwise, or has no usage stats, counts in ret->n_no_stats (the figure is
 * then unknown, never smaller). shadow_fd: the test fixtures, as for
 * gs_drm_fdinfo_read (-1: none). Returns 0 or -ENOMEM. */
int gs_drm_fdwatch_usage(struct gs_drm_fdwatch *w, int proc_fd, int shadow_fd, unsigned gpu,
			 struct gs_drm_usage *ret);

/* How many fds are listed on DRM GPU gpu. */
size_t gs_drm_fdwatch_count(const struct gs_drm_fdwatch *w, unsigned gpu);

void gs_drm_fdwatch_free(struct gs_drm_fdwatch *w);

#endif

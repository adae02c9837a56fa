/* The DRM fds of the last full scan, re-read; see drm_fdwatch.h. */
#include "proc/drm_fdwatch.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gs_drm_fdwatch_set(struct gs_drm_fdwatch *w, const struct gs_scan_result *scan)
{
	struct gs_drm_fdref *refs;
	size_t n = 0;

	for (size_t i = 0; i < scan->n_procs; i++)
		n += scan->procs[i].drm.n_refs;
	refs = malloc((n ? n : 1) * sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < scan->n_procs; i++) {
		const struct gs_drm_usage *u = &scan->procs[i].drm;

		if (u->n_refs)
			memcpy(refs + n, u->refs, u->n_refs * sizeof(*refs));
		n += u->n_refs;
	}
	free(w->refs);
	w->refs = refs;
	w->n = n;
	return 0;
}

int gs_drm_fdwatch_usage(struct gs_drm_fdwatch *w, int proc_fd, int shadow_fd, unsigned gpu,
			 struct gs_drm_usage *ret)
{
	size_t keep = 0;
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < w->n; i++) {
		struct gs_drm_fdref *ref = &w->refs[i];
		struct gs_drm_fdinfo fi;
		int e;

		if (ref->gpu != gpu || r < 0) {
			w->refs[keep++] = *ref;
			continue;
		}
		e = gs_drm_fdinfo_read(proc_fd, shadow_fd, ref->pid, ref->fd, ref->ino, &fi);
		if (e == -ENOENT || e == -ESRCH || e == -ESTALE)
			continue; /* gone: dropped */
		if (e == -ENOMEM) {
			r = e;
			w->refs[keep++] = *ref;
			continue;
		}
		/* Without drm-pdev its memory belongs to no GPU: unknown
		 * here, never left out of the figure. */
		r = gs_drm_usage_add(ret, e == 0 && fi.pdev_known ? &fi : NULL);
		w->refs[keep++] = *ref;
	}
	w->n = keep;
	if (r < 0)
		gs_drm_usage_free(ret);
	return r;
}

size_t gs_drm_fdwatch_count(const struct gs_drm_fdwatch *w, unsigned gpu)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n; i++)
		n += w->refs[i].gpu == gpu;
	return n;
}

void gs_drm_fdwatch_free(struct gs_drm_fdwatch *w)
{
	free(w->refs);
	memset(w, 0, sizeof(*w));
}

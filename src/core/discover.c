/* The discovery session; see discover.h. */
#include "core/discover.h"
#include "gpu/drm.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* AMD and Intel GPUs beside the NVIDIA ones: the DRM backend, and the
 * identities of their nodes for the scan. A host without them (no DRM
 * class, only a BMC's display or NVIDIA cards) has none; a sysfs that
 * cannot be read is said in the warning, not fatal: the NVIDIA GPUs are
 * still there. Returns 0 or -ENOMEM. */
static int open_drm(struct gs_discover *d)
{
	unsigned n = 0;
	int r = gs_drm_open(&d->root, &d->drm);

	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		d->drm = NULL;
		if (r != -ENOENT && r != -ENODEV) {
			size_t len = strlen(d->gpu_warning);

			snprintf(d->gpu_warning + len, sizeof(d->gpu_warning) - len,
				 "%sAMD/Intel GPUs unreadable (%s/class/drm: %s)", len ? "; " : "",
				 d->root.sys_path, strerror(-r));
		}
		return 0;
	}
	/* A host of AMD/Intel GPUs only: no NVIDIA driver is the normal case
	 * there, not something to warn about. */
	if (d->gpu_source && !strcmp(d->gpu_source, "none"))
		d->gpu_warning[0] = '\0';
	(void)d->drm->ops->count(d->drm, &n);
	for (unsigned i = 0; i < n && i < GS_DEVSET_DRM_MAX; i++) {
		struct gs_drm_gpu g = { 0 };
		unsigned render = UINT_MAX;

		if (gs_drm_gpu_info(d->drm, i, &g) < 0)
			continue;
		if (g.render_dev_known)
			render = minor(g.render_dev);
		r = gs_devset_add_drm(&d->devs, d->root.dev_fd, i, g.card, g.card_dev_known ? g.card_dev : 0, render,
				      g.render_dev_known ? g.render_dev : 0);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			/* Its char nodes still match by rdev; a plain-file node
			 * under the dev root may not: said, not hidden. */
			size_t len = strlen(d->gpu_warning);

			snprintf(d->gpu_warning + len, sizeof(d->gpu_warning) - len,
				 "%scard%u's device files under %s/dri: %s", len ? "; " : "", g.card, d->root.dev_path,
				 strerror(-r));
		}
	}
	return 0;
}

static int open_nvidia(struct gs_discover *d, const struct gs_discover_opts *opts);

int gs_discover_open(struct gs_discover *d, const struct gs_discover_opts *opts)
{
	int r;

	memset(d, 0, sizeof(*d));
	d->fdinfo_shadow_fd = -1;
	r = open_nvidia(d, opts);
	if (r < 0)
		return r;
	r = open_drm(d);
	if (r == 0 && opts->fdinfo_shadow && opts->fdinfo_shadow[0]) {
		d->fdinfo_shadow_fd = open(opts->fdinfo_shadow, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d->fdinfo_shadow_fd < 0) {
			r = -errno;
			snprintf(d->error, sizeof(d->error), "GPUSLATE_FDINFO_SHADOW '%.300s': %s", opts->fdinfo_shadow,
				 strerror(-r));
			r = r == -ENOMEM ? r : -EINVAL;
		}
	}
	if (r < 0)
		gs_discover_close(d);
	return r;
}

static int open_nvidia(struct gs_discover *d, const struct gs_discover_opts *opts)
{
	char err[256] = "";
	int r;

	d->self = getpid();
	{
		/* The real /proc, whatever the root: it is this process. */
		char *txt = NULL;

		if (gs_read_file_at(AT_FDCWD, "/proc/self/cgroup", 65536, &txt, NULL) == 0)
			(void)gs_owner_from_cgroup(txt, &d->self_owner);
		free(txt);
	}
	r = gs_root_open(&d->root, &opts->paths);
	if (r < 0)
		return r;
	r = gs_devset_load(&d->root, &d->devs);
	if (r < 0) {
		gs_root_close(&d->root);
		return r;
	}

	if (!opts->no_nvml) {
		struct gs_nvml_opts no = {
			.lib_path = opts->nvml_lib,
			.call_timeout_ms = opts->nvml_timeout_ms,
		};

		r = gs_nvml_child_open(&no, &d->backend, err, sizeof(err));
		if (r >= 0) {
			d->gpu_source = "nvml";
			return 0;
		}
		if (r == -ETIMEDOUT || r == -ENOMEM) {
			/* The driver itself is stuck: its procfs files are no
			 * way around it, and nothing should be acted on. Out of
			 * memory is ours, not NVML's: falling back would hide
			 * it behind an "NVML unusable" warning. */
			gs_strlcpy(d->error, err, sizeof(d->error));
			d->backend = NULL;
			gs_devset_free(&d->devs);
			gs_root_close(&d->root);
			return r;
		}
		snprintf(d->gpu_warning, sizeof(d->gpu_warning), "NVML unusable (%s)",
			 err[0] ? err : strerror(-r));
	} else {
		gs_strlcpy(d->gpu_warning, "NVML not used (--no-nvml)", sizeof(d->gpu_warning));
	}

	/* The kernel driver's own files still list the GPUs when the library
	 * is missing or does not match the loaded driver. */
	r = gs_procfs_nvidia_open(&d->root, &d->backend);
	if (r >= 0) {
		d->gpu_source = "procfs";
		return 0;
	}
	d->backend = NULL;
	d->gpu_source = "none";
	return 0;
}

const char *gs_discover_error(const struct gs_discover *d)
{
	if (d->error[0])
		return d->error;
	return d->backend ? d->backend->error : "";
}

int gs_discover_proc_fd(const struct gs_discover *d)
{
	return d->root.proc_fd;
}

const struct gs_root *gs_discover_root(const struct gs_discover *d)
{
	return &d->root;
}

int gs_discover_is_pidns_init(void *d, pid_t pid, uint64_t starttime)
{
	return gs_pidns_init_read(((const struct gs_discover *)d)->root.proc_fd, pid, starttime);
}

int gs_discover_ptable(struct gs_discover *d, struct gs_ptable *ret)
{
	return gs_ptable_load(d->root.proc_fd, ret);
}

bool gs_discover_polls_memory(const struct gs_discover *d)
{
	return d->backend && d->backend->ops->memory;
}

bool gs_discover_polls_gpu(const struct gs_discover *d, const struct gs_gpu *g)
{
	struct gs_drm_gpu dg = { 0 };

	if (g->vendor == GS_VENDOR_NVIDIA)
		return gs_discover_polls_memory(d);
	if (!d->drm || gs_drm_gpu_info(d->drm, g->backend_index, &dg) < 0)
		return false;
	return dg.vram_used_known || g->vendor == GS_VENDOR_INTEL;
}

void gs_discover_forget_reservations(struct gs_discover *d)
{
	memset(d->v1_reserved, 0, sizeof(d->v1_reserved));
	memset(d->drm_reserved, 0, sizeof(d->drm_reserved));
	d->n_full_snapshots = 0;
}

void gs_discover_close(struct gs_discover *d)
{
	gs_gpu_backend_close(d->backend);
	d->backend = NULL;
	gs_gpu_backend_close(d->drm);
	d->drm = NULL;
	gs_drm_fdwatch_free(&d->drm_watch);
	if (d->fdinfo_shadow_fd > 0) /* 0: a zeroed session that never opened one */
		close(d->fdinfo_shadow_fd);
	d->fdinfo_shadow_fd = -1;
	gs_devset_free(&d->devs);
	gs_root_close(&d->root);
}

/* Turning a request into what the pipeline stages take; see request.h. */
#include "core/request.h"
#include "core/plan.h"
#include "core/snapshot.h"
#include "util/spawn.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void gs_request_selection(const struct gs_request *req, struct gs_selection *sel)
{
	memset(sel, 0, sizeof(*sel));
	sel->gpus = req->gpus;
	sel->tolerance_mib = req->tolerance_mib;
	if (req->cmd == GS_CMD_WAIT)
		return; /* wait: every compute holder of the GPUs must be gone */
	sel->filters.users = req->users;
	sel->filters.n_users = req->n_users;
	sel->filters.units = req->units;
	sel->filters.n_units = req->n_units;
	sel->filters.containers = req->containers;
	sel->filters.n_containers = req->n_containers;
	sel->filters.match = req->match;
	sel->filters.resolve_user = gs_user_uid;
	sel->include_clients = req->include_clients;
	sel->includes = req->includes;
	sel->n_includes = req->n_includes;
	sel->no_units = req->no_units;
	sel->have_pct = gs_program_exists("pct");
	sel->have_lxc_attach = gs_program_exists("lxc-attach");
	sel->uid = geteuid();
	sel->unprivileged = sel->uid != 0;
}

int gs_request_discover_open(const struct gs_request *req, struct gs_discover *d, char *err, size_t errlen)
{
	struct gs_discover_opts o = {
		.paths = { .proc = req->proc_root, .sys = req->sys_root, .dev = req->dev_root,
			   .nvidia_procfs = req->nvidia_procfs },
		.fdinfo_shadow = req->fdinfo_shadow,
		.nvml_lib = req->nvml_lib,
		.no_nvml = req->no_nvml,
		.nvml_timeout_ms = req->nvml_timeout_ms,
	};
	int r = gs_discover_open(d, &o);

	if (r == 0 && req->sys_root && d->root.sys_fd < 0) {
		/* /sys may be absent (a chroot); a directory named on purpose may not. */
		gs_discover_close(d);
		snprintf(err, errlen, "cannot open --sys-root '%s': %s", req->sys_root, strerror(ENOENT));
		return -ENOENT;
	}
	if (r < 0 && d->root.failed == d->root.proc_path)
		snprintf(err, errlen, "cannot open the process directory '%s'%s: %s", d->root.proc_path,
			 req->proc_root ? " (--proc-root)" : "", strerror(-r));
	else if (r < 0 && d->root.failed == d->root.dev_path)
		snprintf(err, errlen, "cannot open the device directory '%s'%s: %s", d->root.dev_path,
			 req->dev_root ? " (--dev-root or GPUSLATE_DEV_ROOT)" : "", strerror(-r));
	else if (r < 0)
		snprintf(err, errlen, "cannot start discovery: %s", d->error[0] ? d->error : strerror(-r));
	return r;
}

void gs_request_no_driver(const struct gs_request *req, const struct gs_snapshot *s, char *buf, size_t len)
{
	/* One line: the reason NVML gave and where else gpuslate looked. */
	snprintf(buf, len, "no NVIDIA GPU driver: %s; no GPU under %s",
		 s->gpu_warning[0] ? s->gpu_warning : "NVML unusable",
		 req->nvidia_procfs ? req->nvidia_procfs : "/proc/driver/nvidia");
}

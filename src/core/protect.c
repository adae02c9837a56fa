/* The protected daemons; see protect.h. */
#include "core/protect.h"
#include "util/util.h"

#include <string.h>
#include <sys/stat.h>

/* Infrastructure that must survive a clean slate unless named explicitly:
 * killing these freezes GPUs (DCGM), breaks NVLink fabrics or the display. */
static const char *const protected_names[] = {
	"nvidia-persistenced",
	"nv-hostengine",
	"dcgm-exporter",
	"nv-fabricmanager",
	"nvidia-fabricmanager",
	"nvidia-imex",
	"nvidia-cuda-mps-control",
	"Xorg",
	"X",
	"Xwayland",
	"rdcd",            /* ROCm Data Center daemon (rdc.service) */
	"xpumd",           /* Intel XPU Manager daemon (xpum.service) */
};

/* comm is the executable name cut to 15 bytes by the kernel. */
static bool comm_matches(const char *comm, const char *name)
{
	size_t n = strlen(name);

	if (n > 15)
		return strlen(comm) == 15 && strncmp(comm, name, 15) == 0;
	return strcmp(comm, name) == 0;
}

bool gs_is_protected_name(const char *comm, const char *argv0_name)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(protected_names); i++) {
		if (comm && comm_matches(comm, protected_names[i]))
			return true;
		if (argv0_name && strcmp(argv0_name, protected_names[i]) == 0)
			return true;
	}
	return false;
}

const char *gs_protected_name(size_t i)
{
	return i < GS_ARRAY_SIZE(protected_names) ? protected_names[i] : NULL;
}

static const char *const drm_monitor_names[] = {
	"rocm-smi", "amd-smi", "amdgpu_top", "nvtop", "radeontop", "xpu-smi", "intel_gpu_top", "pmdaamdgpu",
	/* Wayland compositors, the display servers of a desktop on an AMD or
	 * Intel card. They run as the desktop's user, so they can never pass
	 * as protected (a user's process is not); spared by name instead. */
	"gnome-shell", "kwin_wayland", "kwin_x11", "sway", "weston", "Hyprland",
	/* The X servers: on KMS drivers (amdgpu, i915, xe) Xorg.wrap runs Xorg
	 * as the desktop's user, and Xwayland always runs so; such a one is
	 * no verified protected daemon, and without this it was a compute
	 * holder of the card it drives. */
	"Xorg", "X", "Xwayland",
};

bool gs_is_drm_monitor_name(const char *comm, const char *argv0_name)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(drm_monitor_names); i++) {
		if (comm && comm_matches(comm, drm_monitor_names[i]))
			return true;
		if (argv0_name && strcmp(argv0_name, drm_monitor_names[i]) == 0)
			return true;
	}
	return false;
}

/* Their units, for a process whose executable cannot be read (another
 * user's when gpuslate is not root): only root creates system units. */
static const char *const protected_units[] = {
	"nvidia-persistenced.service",
	"nvidia-fabricmanager.service",
	"nvidia-dcgm.service",
	"dcgm.service",
	"dcgm-exporter.service",
	"nvidia-imex.service",
	"nvidia-mps.service",
	"display-manager.service",
	"gdm.service",
	"gdm3.service",
	"sddm.service",
	"lightdm.service",
	"rdc.service",
	"xpum.service",
};

/* systemd's SYSTEM_UID_MAX: accounts below it are made by packages, not
 * handed to users. */
#define GS_SYSTEM_UID_MAX 999

static bool in_list(const char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], s))
			return true;
	return false;
}

bool gs_claims_protection(const struct gs_procinfo *in)
{
	return gs_is_protected_name(in->st.comm, in->name) ||
	       (in->exe_ok && in_list(protected_names, GS_ARRAY_SIZE(protected_names), in->exe_name));
}

enum gs_protection gs_protection_of(const struct gs_procinfo *in)
{
	const struct gs_owner *o = &in->owner;
	bool exe_named = in->exe_ok && in_list(protected_names, GS_ARRAY_SIZE(protected_names), in->exe_name);
	bool exe_trusted, unit_trusted;

	if (!gs_is_protected_name(in->st.comm, in->name) && !exe_named)
		return GS_PROT_NONE;
	/* A user's copy, hard link or symlink of any binary fails here: the
	 * link resolves, a copy is the user's, a link to root's python3 is
	 * not named so. */
	exe_trusted = exe_named && in->exe_stat_ok && in->exe_uid == 0 && !(in->exe_mode & (S_IWGRP | S_IWOTH));
	unit_trusted = o->kind == GS_OWNER_UNIT && !o->delegated &&
		       in_list(protected_units, GS_ARRAY_SIZE(protected_units), o->name);
	/* Even the real binary protects nothing when a user runs it: any
	 * program can be loaded into it (LD_PRELOAD). */
	if ((exe_trusted || unit_trusted) && (in->status.uid <= GS_SYSTEM_UID_MAX || unit_trusted))
		return GS_PROT_VERIFIED;
	return GS_PROT_UNVERIFIED;
}

bool gs_is_drm_monitor(const struct gs_procinfo *in)
{
	/* By the executable, as protection is: a process that only calls
	 * itself nvtop (PR_SET_NAME, a symlink, exec -a) while it holds VRAM
	 * is a holder like any other, a target and a --guard intruder. */
	return in->exe_ok && in_list(drm_monitor_names, GS_ARRAY_SIZE(drm_monitor_names), in->exe_name) &&
	       in->exe_stat_ok && in->exe_uid == 0 && !(in->exe_mode & (S_IWGRP | S_IWOTH));
}

/* The protected daemons: infrastructure that must survive a clean slate
 * unless named (--include), and the checks that a process calling itself
 * one really is one. */
#ifndef GS_PROTECT_H
#define GS_PROTECT_H

#include <stdbool.h>
#include <stddef.h>

#include "proc/procinfo.h"

/* True if name (comm or argv[0] basename) is one of the protected daemons. */
bool gs_is_protected_name(const char *comm, const char *argv0_name);
/* The i-th protected daemon name, NULL past the last (for messages). */
const char *gs_protected_name(size_t i);

/* Whether it claims a protected name at all (comm, argv[0] or the
 * executable's): only then does the executable's owner matter. */
bool gs_claims_protection(const struct gs_procinfo *in);

/* Is this an AMD/Intel GPU monitor by its name (comm or argv[0]): rocm-smi,
 * amd-smi, amdgpu_top, nvtop, radeontop, xpu-smi, intel_gpu_top, pmdaamdgpu,
 * a Wayland compositor (gnome-shell, kwin_wayland, kwin_x11, sway, weston,
 * Hyprland) or an X server run by a user (Xorg, X, Xwayland: root's are
 * protected daemons)?
 * Such a monitor can hold VRAM through its own DRM client (xpu-smi ps holds
 * 211 MB, intel/xpumanager#116) and is still a client: stopping it frees
 * nothing anyone asked for. A name any process can take, so it only ever
 * spares a process, never makes one a target. */
bool gs_is_drm_monitor_name(const char *comm, const char *argv0_name);
/* A monitor by its executable: named so, root's and writable by nobody
 * else (read with gs_procinfo_read_exe_stat). Only such a one is a client
 * although it holds VRAM; a process that merely takes the name is not. */
struct gs_procinfo;
bool gs_is_drm_monitor(const struct gs_procinfo *in);

enum gs_protection {
	GS_PROT_NONE,        /* does not claim a protected name */
	GS_PROT_VERIFIED,    /* a protected daemon */
	GS_PROT_UNVERIFIED,  /* claims a protected name, fails the checks */
};

/* Whether a process is one of the protected daemons. The name (comm, argv[0]
 * or the executable's) is only the claim; it holds when the executable is a
 * protected daemon's (its file named so, owned by root, writable by no one
 * else) or the process runs in one of their system units, and it runs as a
 * system account (uid below 1000) or in such a unit. */
enum gs_protection gs_protection_of(const struct gs_procinfo *in);

#endif

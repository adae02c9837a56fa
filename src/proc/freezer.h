/* Is a process frozen by the cgroup freezer, and by which cgroup?
 *
 * A frozen process looks stuck: on cgroup v1 it sleeps in state D (the
 * refrigerator) and even SIGKILL waits until it is thawed; on cgroup v2 it
 * sleeps in the signal code, a handled SIGTERM waits for the thaw, while
 * SIGKILL (any fatal signal) ends it at once. `docker pause` and `podman
 * pause` freeze a container's cgroup this way. Thawing is what frees such a
 * process, never a GPU reset; this module says which cgroup to thaw. */
#ifndef GS_FREEZER_H
#define GS_FREEZER_H

#include <stddef.h>
#include <sys/types.h>

#include "util/root.h"

enum gs_freezer {
	GS_FREEZER_NONE = 0, /* not frozen (or no freezer to ask) */
	GS_FREEZER_V2,       /* cgroup.freeze 1 on its cgroup or a parent */
	GS_FREEZER_V1,       /* freezer.state FROZEN or FREEZING */
};

struct gs_frozen {
	enum gs_freezer kind;
	/* The cgroup whose own setting freezes the process (the innermost
	 * one: cgroup.freeze 1, or v1's freezer.self_freezing 1), as a path
	 * in its hierarchy: "/docker/<id>". */
	char cgroup[1024];
	/* The file that thaws it, "0" or "THAWED" written to it:
	 * "/sys/fs/cgroup/docker/<id>/cgroup.freeze". */
	char control[1200];
};

/* The cgroup v2 path (line "0::") and the v1 freezer path (a line whose
 * controllers include "freezer") of /proc/PID/cgroup text. Either is set
 * to "" when absent or unusable (outside the reader's cgroup namespace).
 * Returns 0, or -EINVAL when neither is there. Pure. */
int gs_freezer_parse_cgroup(const char *text, char *v2, size_t v2len, char *v1, size_t v1len);

/* Look pid up: its cgroups from root's /proc, the freezer files under root's
 * /sys/fs/cgroup. Returns 0 with ret->kind NONE when not frozen; -ESRCH when
 * the process is gone; other -errno when nothing could be read. */
int gs_freezer_check(const struct gs_root *root, pid_t pid, struct gs_frozen *ret);

/* "cgroup v2" / "cgroup v1 freezer" / "". */
const char *gs_freezer_str(enum gs_freezer k);

#endif

/* The "plan" stage: selection turns a snapshot into targets, each with an
 * action, and into the list of what is left alone and why. Pure decisions:
 * nothing is signalled here. Safety rules that hold under any input live here:
 * never gpuslate itself or its ancestors, PID 1, kernel threads, protected
 * daemons unless named, clients unless asked. */
#ifndef GS_PLAN_H
#define GS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/filters.h"
#include "core/snapshot.h"
#include "proc/ptable.h"
#include "proc/launcher.h"
#include "core/restarter.h"

enum gs_action {
	GS_ACT_SIGNAL,       /* the signal ladder on this process */
	GS_ACT_SIGNAL_GROUP, /* the ladder on every member of its process group */
	GS_ACT_STOP_UNIT,    /* systemctl stop <unit> (inside a CT: pct exec / lxc-attach) */
	/* SIGKILL at once, no grace: the kernel would drop its SIGTERM
	 * (term says why). The stop stage decides again on a fresh reading. */
	GS_ACT_KILL,
	/* docker/podman stop <id>: a container with a restart policy, stopped
	 * the runtime's own way (plan units[unit], runtime set). */
	GS_ACT_STOP_CONTAINER,
	/* supervisorctl stop, sv force-stop, s6-svc -d: a program of a process
	 * supervisor (proc/supervised.h), stopped through its control tool so
	 * that it stays stopped (plan units[unit], runtime the supervisor's
	 * kind). Set by the restarter stage. */
	GS_ACT_STOP_SUPERVISED,
};

enum gs_why {
	GS_WHY_HOLDER,       /* holds a selected GPU */
	GS_WHY_DESCENDANT,   /* descendant of a target, holds a selected GPU */
	GS_WHY_GROUP_MEMBER, /* member of a target's process group */
	GS_WHY_TARGETED,     /* a target of the plan being carried out, still alive (a re-plan during the wait) */
	GS_WHY_PARENT,       /* supervising parent of a target (--include-parent; restarter.h) */
};

struct gs_target {
	pid_t pid;
	uint64_t starttime;
	int holder;          /* index into the snapshot's holders, -1 if not a holder */
	enum gs_action action;
	enum gs_why why;
	pid_t why_pid;       /* the target it descends from / the group leader */
	int unit;            /* index into plan units for GS_ACT_STOP_UNIT/CONTAINER, else -1 */
	int restarter;       /* index into plan restarters, -1 when none is known */
	/* Its parent when that is an interactive shell (restarter.h): never a
	 * restarter and never stopped, but a loop typed at it restarts the
	 * target, so the respawn watch looks at its new children. 0: none. */
	pid_t shell_parent;
	/* What a SIGTERM would do, from the dispositions read at discovery
	 * (unknown for targets that hold no GPU: group members). */
	enum gs_term_fate term;
	/* Not root, and the process is another user's (owner_uid): the
	 * kernel will refuse the signal. Tried all the same (the stop stage
	 * decides, on its own probe), but the plan says so at once. */
	bool not_permitted;
	uid_t owner_uid;
	char comm[64];
};

struct gs_unit_stop {
	char unit[256];
	/* LXC/Proxmox CT id when the unit runs inside one, "user/UID" for a
	 * user's unit (gs_unit_scope_user), "" on the host */
	char container[256];
	/* The unit's cgroup as its manager must report it (ControlGroup=):
	 * the stop stage stops the unit only when the manager's unit of that
	 * name is the one these processes are in. */
	char cgroup[1024];
	/* "docker" or "podman": a container stopped through its runtime
	 * (unit is then its full id, cgroup its cgroup); "" for a unit. */
	char runtime[16];
	/* A supervised program (runtime "supervisord", "runit" or "s6"):
	 * unit is its name (GROUP:NAME, or the service directory); control_opt
	 * and control how supervisorctl reaches supervisord ("-c" FILE or
	 * "-s" URL). The stop goes through the tool only while the tool names
	 * main_pid (with main_starttime) as that program: a name is a claim. */
	char control_opt[4];
	char control[1024];
	pid_t main_pid;
	uint64_t main_starttime;
};

/* Is this stop entry a supervised program's (not a unit's or container's)? */
bool gs_unit_stop_is_supervised(const struct gs_unit_stop *u);

enum gs_leave {
	GS_LEAVE_SELF,
	GS_LEAVE_ANCESTOR,
	GS_LEAVE_INIT,
	GS_LEAVE_KTHREAD,
	GS_LEAVE_PROTECTED,
	GS_LEAVE_CLIENT,
	GS_LEAVE_NOT_SELECTED,
	GS_LEAVE_DEAD,       /* listed by NVML, no such process: nothing to signal */
	GS_LEAVE_UNKNOWN,    /* could not read its identity (permission) */
	GS_LEAVE_NO_DEVICE,  /* NVML lists the PID, but that process holds no NVIDIA device */
	GS_LEAVE_NO_CONTEXT, /* NVML lists the PID, but it only has the device open (no mapping) */
	GS_LEAVE_OTHER_GPU,  /* descendant or group member of a target that also holds an unselected GPU */
	GS_LEAVE_NS_INIT,    /* init of a PID namespace whose end would end a holder left alone (would_end) */
	GS_LEAVE_UNIT_MAIN,  /* may be its unit's main process: its exit would stop the unit and a holder left alone */
	GS_LEAVE_STARTED_BY_SELF, /* a descendant of gpuslate: its NVML helper, a tool it runs */
};

struct gs_leftalone {
	pid_t pid;
	int holder;
	enum gs_leave why;
	char comm[64];
	pid_t would_end;     /* GS_LEAVE_NS_INIT: a holder left alone that its end would end */
};

struct gs_selection {
	const char *gpus;
	struct gs_filter_spec filters; /* -u, --unit, --container, --match */
	bool include_clients;
	const char *const *includes; size_t n_includes; /* protected names allowed */
	bool no_units;
	bool have_pct, have_lxc_attach; /* which container tools exist (for CT units) */
	/* gpuslate is not root (uid: its effective uid): another user's
	 * process is marked not permitted, and no system or CT unit is
	 * stopped (systemctl would ask polkit, pct needs root): its processes
	 * are signalled where they are the caller's. */
	bool unprivileged;
	uid_t uid;
	uint64_t tolerance_mib;
	/* Whether a process that holds no GPU is the init of its own PID
	 * namespace (1, 0 or -errno): a group member is taken with its leader
	 * only on a 0, since the kernel ends the whole namespace with its init.
	 * NULL: no process is (literal hosts in unit tests). Holders carry the
	 * fact in their procinfo. */
	int (*is_pidns_init)(void *ud, pid_t pid, uint64_t starttime);
	void *is_pidns_init_ud;
	/* The plan being carried out, when this is a re-plan during the wait:
	 * its targets that are still the same processes stay targets, whatever
	 * they would be now (a descendant whose ancestor is gone has lost the
	 * association that made it one, and its memory is still to be freed). */
	const struct gs_plan *targeted;
	/* The MainPID its manager reports for the unit of this owner's cgroup
	 * (0 with *ret, or -errno: unknown). Makes the unit-main rule exact;
	 * NULL or unknown: a child of the manager is taken as main, the safe
	 * way. */
	int (*unit_main_pid)(void *ud, const struct gs_owner *o, pid_t *ret);
	void *unit_main_pid_ud;
	/* What a process is, launcher or shell (proc/launcher.h): the
	 * unit-main rule looks through them. NULL: by comm. */
	gs_launch_kind_fn launch_kind;
	void *launch_kind_ud;
	/* When set, a holder it says no to is left alone as not selected and
	 * never taken by association (as a target's descendant or group
	 * member): run --guard acts on the new intruders only, and the rules
	 * that protect what is left alone (unit-main, namespace init,
	 * contained unit stops) then see every other holder. NULL: any. */
	bool (*selectable)(void *ud, pid_t pid, uint64_t starttime);
	void *selectable_ud;
};

/* Memory a process left alone holds on a selected GPU (NVML's figure). */
struct gs_plan_other {
	pid_t pid;
	unsigned gpu;            /* snapshot index */
	uint64_t mem;            /* bytes */
	char comm[16];
};

struct gs_plan {
	struct gs_gpuset gpus;      /* selected GPUs (snapshot indices) */
	struct gs_target *targets;
	size_t n_targets;
	struct gs_leftalone *left;
	size_t n_left;
	struct gs_unit_stop *units;
	size_t n_units;
	/* Per snapshot GPU: memory that may stay (holders left alone plus the
	 * tolerance). Clean means used <= baseline and no target remains. */
	uint64_t baseline[GS_MAX_GPUS];
	bool baseline_known[GS_MAX_GPUS];
	/* The part of the baseline that processes left alone hold and that
	 * are not protected daemons (not selected, gpuslate's ancestors, ...):
	 * with it the GPUs are not free, whatever the selection says. */
	struct gs_plan_other *others;
	size_t n_others;
	uint64_t tolerance;         /* bytes of the baseline that are --tolerance */
	/* What would bring targets back (restarter.h); filled by
	 * gs_restarters_plan after the plan is built. */
	struct gs_restarter *restarters;
	size_t n_restarters;
};

/* Build the plan. Returns 0, or -EINVAL with a one-line reason in err (bad
 * regex, unknown GPU, unknown user). self is gpuslate's pid; self_owner
 * the owner of gpuslate's own cgroup (its unit is never stopped). */
int gs_plan_build(const struct gs_snapshot *s, const struct gs_ptable *pt, const struct gs_selection *sel,
		  pid_t self, const struct gs_owner *self_owner, struct gs_plan *ret, char *err, size_t errlen);
void gs_plan_free(struct gs_plan *p);

const char *gs_action_str(enum gs_action a);
const char *gs_leave_str(enum gs_leave w);
const char *gs_why_str(enum gs_why w);

/* Units serving the whole host (sshd, cron, slurmd, systemd-*, ...): never
 * stopped by gpuslate; a holder inside one is signalled on its own. */
bool gs_unit_is_infrastructure(const char *unit);

/* Is pid one of the plan's targets? */
const struct gs_target *gs_plan_find_target(const struct gs_plan *p, pid_t pid);

#endif

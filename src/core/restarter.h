/* What would bring a target back after it is stopped, found before acting:
 * a systemd unit with Restart= other than "no", a docker or podman
 * container with a restart policy, a Kubernetes pod (its kubelet), or a
 * supervising parent (a shell loop, an elastic agent, supervisord). Each
 * gets a handling: stopped through its manager, stopped with the targets
 * (--include-parent), watched after the stop, or only reported.
 *
 * The decisions are pure (gs_restarters_plan, from the plan, snapshot and
 * process table plus answers given through callbacks); the questions to
 * systemctl and the container runtimes are asked by gs_restarter_query_*,
 * with deadlines. */
#ifndef GS_RESTARTER_H
#define GS_RESTARTER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/launcher.h"
#include "proc/supervised.h"

struct gs_plan;
struct gs_snapshot;
struct gs_ptable;
struct gs_pidstat;

enum gs_restarter_kind {
	GS_RESTARTER_UNIT,
	GS_RESTARTER_CONTAINER,
	GS_RESTARTER_POD,
	GS_RESTARTER_PARENT,
	/* supervisord, runsv or s6-supervise (proc/supervised.h): a process
	 * that restarts its program, with a control tool that stops it. */
	GS_RESTARTER_SUPERVISOR,
};

enum gs_restarter_handling {
	GS_HANDLE_UNIT_STOP,    /* the unit is stopped through systemd: it stays stopped */
	GS_HANDLE_RUNTIME_STOP, /* the container is stopped through its runtime */
	GS_HANDLE_WATCHED,      /* left running; a restarted target is a respawn */
	GS_HANDLE_PARENT_STOP,  /* stopped before its children (--include-parent) */
	GS_HANDLE_REPORTED,     /* never acted on (a pod): the command that would stop it is named */
	GS_HANDLE_SUPERVISOR_STOP, /* the program is stopped through its supervisor's tool: it stays stopped */
};

struct gs_restarter {
	enum gs_restarter_kind kind;
	enum gs_restarter_handling handling;
	char name[256];          /* unit name, container id, pod uid, the parent's comm */
	char container[256];     /* LXC/Proxmox CT of a unit inside one, else "" */
	char runtime[16];        /* "docker", "podman" for containers; "supervisord", "runit", "s6"; else "" */
	char policy[64];         /* Restart= or the restart policy ("always", "on-failure") */
	uint64_t restart_ms;     /* a unit's RestartUSec, in ms */
	pid_t pid;               /* a parent's or supervisor's PID, a unit's MainPID (0: none known) */
	uint64_t starttime;      /* a parent's start time */
	/* What would stop it for good, for the plan and a respawn's message:
	 * "--include-parent", "--unit ollama.service", "kubectl delete pod ...". */
	char stop_with[320];
};

/* A process that restarts its child (a supervising parent, a process
 * supervisor): the respawn watch looks at its new children. */
static inline bool gs_restarter_is_process(const struct gs_restarter *r)
{
	return r->kind == GS_RESTARTER_PARENT || r->kind == GS_RESTARTER_SUPERVISOR;
}

/* A unit's properties as its manager reports them. */
struct gs_unit_props {
	char restart[64];        /* Restart= */
	uint64_t restart_ms;     /* RestartUSec= */
	pid_t main_pid;          /* MainPID= (0: none) */
	char control_group[1024];/* ControlGroup= */
};

/* The questions the decisions need answered (tests answer from literals). */
struct gs_restarter_env {
	pid_t self;
	bool include_parent;
	bool no_units;           /* --no-units: units are asked about, never stopped */
	/* Unit UNIT (inside CT container when not ""): 0 with props, or -errno
	 * (unknown: no restarter is assumed from it, the old watch applies). */
	int (*unit_props)(void *ud, const char *unit, const char *container, struct gs_unit_props *ret);
	void *unit_ud;
	/* Restart policy of container id of runtime ("no", "always", ...). */
	int (*container_policy)(void *ud, const char *runtime, const char *id, char *ret, size_t len);
	void *container_ud;
	/* A process's command line (argv joined with spaces; malloc'd), its
	 * stdin's target, its cgroup text (as in /proc/PID/...): 0 or -errno. */
	int (*read_cmdline)(void *ud, pid_t pid, char **ret);
	int (*read_stdin)(void *ud, pid_t pid, char *buf, size_t len);
	int (*read_cgroup)(void *ud, pid_t pid, char *buf, size_t len);
	/* As gs_selection's: 1 when pid is the init of its own PID namespace. */
	int (*is_pidns_init)(void *ud, pid_t pid, uint64_t starttime);
	void *pidns_ud;
	/* Launcher, shell or neither (proc/launcher.h); NULL: by comm. */
	gs_launch_kind_fn launch_kind;
	void *launch_ud;
	/* The process supervisor that runs pid (proc/supervised.h): 1 with
	 * *ret, 2 with *ret but no program name, 0 none, -errno. NULL: none is looked for. */
	int (*supervised)(void *ud, const struct gs_ptable *pt, pid_t pid, struct gs_supervised *ret);
	void *supervised_ud;
	/* gpuslate is not root (uid its euid): a supervisor of another user
	 * is not asked to stop anything (its socket is not ours). */
	bool unprivileged;
	uid_t uid;
	void *ud;
};

/* Find every target's restarter (p->restarters, targets[i].restarter),
 * decide its handling, and with include_parent add the supervising parents
 * to the targets, before their children. Returns 0 or -ENOMEM. */
int gs_restarters_plan(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
		       const struct gs_restarter_env *env);

/* Is this command line (with its stdin) an interactive or login shell, one a
 * person types into? Such a parent is never a supervisor. */
bool gs_restarter_is_interactive_shell(const char *comm, const char *cmdline, const char *stdin_target);

/* A systemd time span ("100ms", "1min 30s", "5s", "infinity") in ms;
 * -EINVAL when unreadable. */
int gs_timespan_ms(const char *text, uint64_t *ret);
const char *gs_restarter_kind_str(enum gs_restarter_kind k);
const char *gs_restarter_handling_str(enum gs_restarter_handling h);

/* The real questions: systemctl show (through pct exec / lxc-attach in a
 * CT), docker/podman inspect (the client command from GPUSLATE_DOCKER /
 * GPUSLATE_PODMAN, split on spaces, default "docker" / "podman"). Each
 * ends within timeout_ms. */
struct gs_restarter_query {
	bool have_pct;
	uint64_t timeout_ms;        /* each question at most */
	/* gs_now_ms() after which no question is asked any more (0: none):
	 * the questions of one plan share it, so a hung docker daemon or
	 * systemd costs the plan one deadline, not one per container. */
	uint64_t deadline_ms;
	volatile sig_atomic_t *interrupted;
	int proc_fd;
};
int gs_restarter_query_unit(void *ud, const char *unit, const char *container, struct gs_unit_props *ret);

/* A unit's state now (systemctl show -p ActiveState,SubState), asked after
 * the stop: its manager may have a restart scheduled that no watch can
 * outlast (RestartSec= longer than what is left of --timeout). */
struct gs_unit_state {
	char active[32];         /* ActiveState= */
	char sub[48];            /* SubState= */
};
int gs_restarter_query_unit_state(void *ud, const char *unit, const char *container, struct gs_unit_state *ret);
/* May its manager start it again without being asked: a restart is
 * scheduled (SubState auto-restart, or auto-restart-queued of newer
 * systemd), it is being started already (ActiveState activating), or it is
 * still stopping the rest of its processes after its main process died
 * (ActiveState deactivating: with Restart= not "no", a restart follows once
 * they are gone, unless that end was clean under Restart=on-failure; taken
 * as coming, a false "clean" being the worse mistake)? */
bool gs_unit_restart_pending(const struct gs_unit_state *st);
int gs_restarter_query_container(void *ud, const char *runtime, const char *id, char *ret, size_t len);
int gs_restarter_read_cmdline(void *ud, pid_t pid, char **ret);
int gs_restarter_read_stdin(void *ud, pid_t pid, char *buf, size_t len);
int gs_restarter_read_cgroup(void *ud, pid_t pid, char *buf, size_t len);

/* The words that run systemctl against the manager of a unit whose
 * scope is container (plan.h gs_unit_stop.container): "" the host's
 * (systemctl), an LXC/Proxmox CT's (pct exec CT -- systemctl, or
 * lxc-attach -n CT -- systemctl), "user/UID" that user's (setpriv
 * --reuid=UID --regid=GID --clear-groups -- env XDG_RUNTIME_DIR=/run/user/UID
 * systemctl --user). Words point into buf and argv; argv has room for at
 * least 12. Returns how many, or -errno (-ENOENT: no such user). */
int gs_systemctl_argv(const char *container, bool have_pct, char *buf, size_t len, const char **argv, size_t max);

/* The runtime's client as an argv (from its environment variable), with
 * room for extra words; 0 or -EINVAL. words points into buf. */
int gs_runtime_argv(const char *runtime, char *buf, size_t len, const char **words, size_t max, size_t *n);

/* A process supervisor's control tool (proc/supervised.h) as an argv:
 * what it says the program's PID is, whether it is up, its stop (waiting
 * up to wait_ms, then killing where the tool can: sv force-stop; s6-svc
 * waits only, GS_SUP_VERB_KILL kills), its start. runtime is "supervisord",
 * "runit" or "s6"; control_opt/control supervisorctl's "-c FILE" or "-s
 * URL". Words point into buf and the arguments; argv has room for 12.
 * Returns the number of words, or -EINVAL. */
enum gs_sup_verb {
	GS_SUP_VERB_PID,
	GS_SUP_VERB_STATUS,
	GS_SUP_VERB_STOP,
	GS_SUP_VERB_KILL,
	GS_SUP_VERB_START,
};
int gs_supervisor_argv(const char *runtime, const char *control_opt, const char *control, const char *name,
		       enum gs_sup_verb verb, uint64_t wait_ms, char *buf, size_t len, const char **argv, size_t max);

#endif

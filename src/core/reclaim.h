/* The reclaim pipeline as one call: lock, discover, process table, plan,
 * confirmation, stop (with the memory poll on its beat), wait and verify,
 * the respawn watch, the verdict. `reclaim` and `wait` (locally, for a
 * fleet controller with --remote, and from the Slurm epilog) all run it.
 * It prints nothing: the caller's hooks show the plan, ask, draw progress
 * and print notes; the caller renders the report and exits with its status. */
#ifndef GS_RECLAIM_H
#define GS_RECLAIM_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/filters.h"
#include "core/plan.h"
#include "core/request.h"
#include "core/stopped.h"
#include "core/snapshot.h"
#include "core/stop.h"
#include "core/verdict.h"
#include "core/verify.h"
#include "proc/ptable.h"

/* What a reclaim or wait concluded, for rendering (src/out/reclaim_out.h). */
struct gs_reclaim_report {
	const char *command;           /* "reclaim" or "wait" */
	const struct gs_snapshot *before;
	const struct gs_plan *plan;
	const struct gs_stop_result *stop;     /* NULL: nothing was stopped (dry run, wait) */
	const struct gs_verify_result *verify; /* NULL: not verified (dry run, refused) */
	enum gs_verdict verdict;
	enum gs_exit exit_status;
	bool dry_run;
	bool unprivileged;             /* gpuslate was not root: what it may not do, root could */
	const char *reason;            /* --reason, or one made up from the verdict */
	const char *message;           /* one line for people and logs */
	uint64_t elapsed_ms;
	/* Filter values that matched no process ("--unit x.service"). */
	const char (*unmatched)[320];
	size_t n_unmatched;
};

enum gs_confirm {
	GS_CONFIRM_YES,
	GS_CONFIRM_NO,          /* asked, the answer was no */
	GS_CONFIRM_NO_TERMINAL, /* nobody to ask */
};

struct gs_reclaim;

/* The caller's part. Every hook may be NULL. */
struct gs_reclaim_hooks {
	void *ud;
	/* The snapshot is taken: say what it could not see. */
	void (*snapshot_ready)(void *ud, const struct gs_snapshot *s);
	/* A note for people (lock contention, a filter matching nothing). */
	void (*note)(void *ud, const char *text);
	/* The plan is made: show it (wait: its rep.command is "wait", the
	 * plan has no targets; the GPUs it waits for). no_match: the filters
	 * match nothing on the host, the reclaim's no_match text says so. */
	void (*plan_ready)(void *ud, const struct gs_reclaim *rc);
	/* Ask before stopping anything. NULL: nobody to ask (refused). */
	enum gs_confirm (*confirm)(void *ud, const struct gs_plan *p);
	/* About every 200 ms while waiting for the memory. */
	void (*progress)(void *ud, const struct gs_snapshot *s, const struct gs_gpu_verdict *v, size_t n,
			 uint64_t elapsed_ms);
	/* About once a second while the stop stage waits (a grace period, a
	 * unit's or supervised program's stop, the wait after SIGKILL). */
	void (*stop_progress)(void *ud, const struct gs_reclaim *rc, const struct gs_stop_progress *p);
	/* A wait is over (clear the progress line): after the stop stage and
	 * after the memory wait. */
	void (*progress_end)(void *ud);
};

/* A unit or container gpuslate stopped through its manager, for a record
 * that `restore` can start again: kind "unit" (name, CT id in container
 * when inside an LXC/Proxmox CT) or "container" (name is its id, runtime
 * "docker" or "podman"). */
struct gs_managed_stop {
	const char *kind;
	char name[256];
	char container[256];
	char runtime[16];
};

/* A unit's properties as its manager answered, asked once per run. */
struct gs_unit_answer {
	char unit[256], container[256];
	int r;
	struct gs_unit_props props;
};

struct gs_container_answer {
	char runtime[16], id[128], policy[64];
	int r;
};

/* One run: the report and everything it points to. */
struct gs_reclaim {
	struct gs_reclaim_report rep;
	/* Set when the run failed before reaching a verdict (rep.verdict
	 * GS_VERDICT_NONE): the one-line reason; rep.exit_status says what
	 * kind of failure. Empty when the reason was already told (a hook). */
	char error[512];
	bool no_match;                 /* the filters matched no process on the host */
	char expect_msg[512];          /* why the plan is not the one --expect confirmed */
	char no_match_msg[1024];

	/* Owned state, released by gs_reclaim_free. */
	struct gs_discover d;
	struct gs_snapshot s;
	struct gs_ptable pt;
	struct gs_plan plan;
	struct gs_selection sel;
	struct gs_stop_result stop;
	struct gs_verify_result vr;
	struct gs_respawn_watch watch;
	struct gs_restarter_query query;   /* how systemctl and the runtimes are asked */
	struct gs_unit_answer unit_answers[16];
	size_t n_unit_answers;
	struct gs_container_answer container_answers[16];
	size_t n_container_answers;
	/* What was stopped through its manager (after the stop stage). */
	struct gs_managed_stop *managed;
	size_t n_managed;
	/* The records this reclaim wrote to the stopped-state file: what
	 * `run --restore` starts again (and nothing an earlier reclaim left). */
	struct gs_stopped recorded;
	struct gs_filters_host host;
	char unmatched[16][320];
	const char *resolved[GS_MAX_MULTI];
	char driver_msg[300];
	int lock_fd;
	bool lock_waited;              /* another reclaim held the lock first */
	int64_t started_at;            /* unix seconds, for the stopped-state file */
	unsigned stage;                /* how far set-up went, for gs_reclaim_free */
	const struct gs_reclaim_hooks *hooks;
	const struct gs_request *req;
};

/* Run req (GS_CMD_RECLAIM or GS_CMD_WAIT). Returns 0 with rc->rep filled,
 * a verdict or an error in rc->error; -errno only when the run could not
 * start at all. Always call gs_reclaim_free after rendering: the lock is
 * held until then. SIGINT, SIGTERM and SIGHUP end the wait with a report. */
int gs_reclaim_run(const struct gs_request *req, const struct gs_reclaim_hooks *hooks, struct gs_reclaim *rc);
void gs_reclaim_free(struct gs_reclaim *rc);

/* The host's reclaim lock (GPUSLATE_LOCK_FILE, else /run/gpuslate.lock or
 * /tmp/gpuslate-UID.lock), taken within timeout_ms: reclaim and restore
 * never run at once. 0 with the open, locked fd in *ret_fd (closing it
 * releases the lock), or -errno with one line in err: -EBUSY still held at
 * the deadline, -EINTR *intr was set while waiting. */
int gs_host_lock_take(uint64_t timeout_ms, volatile sig_atomic_t *intr, void (*waiting)(void *ud), void *ud,
		      int *ret_fd, char *err, size_t errlen);
/* Whether SIGINT, SIGTERM or SIGHUP reached the pipeline's handler (run:
 * one that came after the verdict means COMMAND must not start). */
bool gs_reclaim_was_interrupted(void);

/* What would restart plan p's targets (restarter.h), asked as the reclaim
 * rc asks (its caches, a new deadline of rc's question timeout): for the
 * guard's plans (core/runjob.c), whose intruder a container's restart
 * policy would bring back. Returns 0 or -ENOMEM. */
struct gs_plan;
struct gs_snapshot;
struct gs_ptable;
int gs_reclaim_plan_restarters(struct gs_reclaim *rc, struct gs_plan *p, const struct gs_snapshot *s,
			       const struct gs_ptable *pt, bool include_parent);

/* The file holding the last reclaim's verdict (GPUSLATE_STATE_FILE, else
 * /run or /tmp). */
const char *gs_last_reclaim_path(char *buf, size_t len);
/* Keep a reclaim's verdict there (best effort). */
void gs_last_reclaim_record(const struct gs_reclaim_report *rep);

#endif

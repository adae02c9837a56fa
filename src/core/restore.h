/* `gpuslate restore`: start again what reclaims on this host stopped through
 * a manager, from the stopped-state file (core/stopped.h): units with
 * `systemctl start`, units inside an LXC/Proxmox container with `pct exec CT
 * -- systemctl start` (lxc-attach where there is no pct), docker/podman
 * containers with `docker start` / `podman start`. What is running again
 * already is reported and not started twice. The records of what was
 * started (or found running) leave the file; a failed start keeps its
 * record, so restore can be run again.
 *
 * Runs under the host's reclaim lock (a reclaim and a restore never run at
 * once); `gpuslate run --restore`, which holds it already, says so with
 * gs_restore_opts.lock_held. Prints nothing: the caller's hooks show what
 * will be started and ask; the caller renders the result. */
#ifndef GS_RESTORE_H
#define GS_RESTORE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/reclaim.h"
#include "core/request.h"
#include "core/stopped.h"
#include "core/verdict.h"

enum gs_restore_outcome {
	GS_RESTORE_PENDING,         /* not started: dry run, refused, interrupted */
	GS_RESTORE_STARTED,
	GS_RESTORE_ALREADY_RUNNING, /* running again before restore: not started twice */
	GS_RESTORE_NOT_RUNNING_BEFORE, /* was not running before the reclaim: left as it is */
	/* Started and stopped again by someone else after the reclaim (the
	 * unit went inactive after the record's stop): their decision, left
	 * as it is. */
	GS_RESTORE_STOPPED_SINCE,
	GS_RESTORE_FAILED,          /* the start failed (error says why); record kept */
	/* Its manager has no such unit or container any more (a transient
	 * unit, one removed since): it cannot be started again. Said once,
	 * and the record dropped. */
	GS_RESTORE_GONE,
};

struct gs_restore_item {
	struct gs_stopped_rec rec;
	enum gs_restore_outcome outcome;
	bool will_start;            /* after the check: what restore starts */
	char state_now[32];         /* ActiveState or the runtime's, "" unknown */
	bool gone;                  /* the manager has no such unit or container */
	/* A unit's last entry into inactive/failed, a container's last exit
	 * (.State.FinishedAt): unix seconds, 0 unknown. */
	int64_t inactive_since;
	char command[768];          /* the start command, "" when not run */
	int exit_code;              /* of the start command; -1 not run, timed out */
	char error[512];
	uint64_t took_ms;
};

struct gs_restore {
	struct gs_restore_item *items;
	size_t n;
	size_t n_to_start;          /* items with will_start */
	enum gs_verdict verdict;    /* GS_VERDICT_NONE: failed before one (error) */
	enum gs_exit exit_status;
	bool dry_run, interrupted;
	char error[640];            /* the one line of a failure before a verdict */
	char message[256];          /* one line for people and the fleet */
	char path[4096];            /* the stopped-state file */
	uint64_t elapsed_ms;
	/* a write failure of the state file after the starts (a note too) */
	char save_error[512];
	int lock_fd;
	/* Records of other reclaims (gs_restore_opts.only): not
	 * items, written back to the file as they were. */
	struct gs_stopped others;
};

struct gs_restore_hooks {
	void *ud;
	void (*note)(void *ud, const char *text);
	/* What restore found and will start: show it. */
	void (*plan_ready)(void *ud, const struct gs_restore *rs);
	/* Ask before starting anything. NULL: nobody to ask (refused). */
	enum gs_confirm (*confirm)(void *ud, const struct gs_restore *rs);
};

struct gs_restore_opts {
	bool lock_held;             /* the caller holds the host's reclaim lock */
	/* The caller's Ctrl-C flag (gpuslate run): restore then installs no
	 * signal handlers of its own and stops starting when it is set. NULL:
	 * restore's own handlers for SIGINT, SIGTERM and SIGHUP. */
	volatile sig_atomic_t *interrupted;
	/* Not NULL (gpuslate run --restore): only the file's records of the
	 * same unit or container as one of these (the records the run's own
	 * reclaim wrote; a later stop of the same thing replaces a record, so
	 * these are that reclaim's). The rest of the file is left for
	 * `gpuslate restore`. */
	const struct gs_stopped *only;
};

/* Run req (yes, dry_run, timeout_ms: the lock wait and each start's
 * deadline). Returns 0 with rs filled (a verdict, or an error with
 * exit_status); -errno only when it could not start at all. Call
 * gs_restore_free after rendering (the lock is held until then). */
int gs_restore_run(const struct gs_request *req, const struct gs_restore_opts *o, const struct gs_restore_hooks *hooks,
		   struct gs_restore *rs);
void gs_restore_free(struct gs_restore *rs);

/* "pending", "started", "already-running", "not-running-before",
 * "stopped-since", "failed". */
const char *gs_restore_outcome_str(enum gs_restore_outcome o);

#endif

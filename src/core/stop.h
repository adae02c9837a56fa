/* The "stop" stage: units first (through systemd, inside containers through
 * pct or lxc-attach), then the signal ladder on every remaining target:
 * SIGTERM and SIGCONT, wait on the pidfds up to the grace period, SIGKILL,
 * wait again. A process whose SIGTERM the kernel would drop (SIG_IGN, or
 * the init of its own PID namespace without a handler, as its dispositions
 * read just before) gets SIGKILL at once. Each signal goes through a pidfd opened while the recorded
 * start time still matched. A D-state process is reported, never waited on
 * forever; Ctrl-C stops the escalation. */
#ifndef GS_STOP_H
#define GS_STOP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/plan.h"
#include "proc/freezer.h"
#include "util/root.h"

enum gs_outcome {
	GS_OUT_PENDING,
	GS_OUT_EXITED_TERM,      /* exited after SIGTERM */
	GS_OUT_KILLED,           /* exited after SIGKILL */
	GS_OUT_STOPPED_WITH_UNIT,/* exited while its unit was stopped */
	GS_OUT_ALREADY_GONE,     /* exited before any signal */
	GS_OUT_PID_REUSED,       /* the PID now belongs to another process: not signalled */
	GS_OUT_PERMISSION,       /* could not be signalled: permission */
	GS_OUT_D_STATE,          /* still alive after SIGKILL, uninterruptible sleep */
	GS_OUT_SURVIVED,         /* still alive after SIGKILL */
	GS_OUT_INTERRUPTED,      /* not escalated: gpuslate was interrupted */
	GS_OUT_DRIVER_FAILURE,   /* not escalated: the GPU driver failed (hung) meanwhile */
	/* Alive, and no SIGKILL reached it: gpuslate could not signal it
	 * (error says why: EMFILE, ENOMEM). Never taken for gone. */
	GS_OUT_NOT_SIGNALLED,
	/* Alive after SIGKILL because the cgroup freezer holds it (v1: the
	 * SIGKILL is pending until thawed); frozen says which cgroup. */
	GS_OUT_FROZEN,
};

enum {
	GS_SENT_TERM = 1 << 0,
	GS_SENT_CONT = 1 << 1,
	GS_SENT_KILL = 1 << 2,
};

struct gs_proc_result {
	pid_t pid;
	char comm[64];
	unsigned sent;           /* GS_SENT_* */
	enum gs_outcome outcome;
	char wchan[64];          /* for D state */
	uint64_t exited_ms;      /* since the stop stage began, when it exited */
	/* What a SIGTERM would have done, read right before signalling;
	 * futile ones got SIGKILL at once, without SIGTERM or grace. */
	enum gs_term_fate term;
	bool kill_at_once;
	int error;               /* errno of the first signal that failed, 0 if none */
	/* The freezer held it when it was signalled (and, for GS_OUT_FROZEN,
	 * at the end); kind NONE otherwise. */
	struct gs_frozen frozen;
};

struct gs_unit_result {
	char command[768];       /* the stop command's argv, for the report; "" when not run */
	int exit_code;           /* -1: could not run or timed out */
	bool timed_out;
	/* Stopped through its manager. False when the stop failed, or was not
	 * tried because the manager's unit of that name is not the cgroup the
	 * processes are in: their stop then did not go through the manager. */
	bool stopped;
	char error[512];         /* first line of its stderr, or why it was not stopped */
	uint64_t took_ms;
	/* Cut short, or not tried, because the time all unit stops share
	 * (gs_stop_opts.units_budget_ms, --timeout) ran out. */
	bool out_of_time;
	/* What its manager said just before the stop (ActiveState,
	 * UnitFileState), "" unknown: kept for `restore` (core/stopped.h). */
	char state_before[32];
	char enabled_before[32];
	int64_t stopped_at;      /* unix seconds the stop ended, 0 not tried */
};

/* What the stop stage waits for, for a progress line (core prints
 * nothing: the caller renders it). */
enum gs_stop_phase {
	GS_STOP_PHASE_UNIT,      /* a unit, container or supervised program's stop */
	GS_STOP_PHASE_GRACE,     /* SIGTERM sent, SIGKILL at the end of the grace */
	GS_STOP_PHASE_KILL_WAIT, /* SIGKILL sent, waiting for the exits */
};

struct gs_stop_progress {
	enum gs_stop_phase phase;
	const struct gs_unit_stop *unit; /* GS_STOP_PHASE_UNIT: the one being stopped */
	uint64_t elapsed_ms;     /* since the phase (or this unit's stop) began */
	uint64_t timeout_ms;     /* how long it may take at most */
	/* waiting[i]: plan target i is waited for in this phase; its
	 * result->procs[i].outcome is still GS_OUT_PENDING while alive. */
	const bool *waiting;
	const struct gs_stop_result *result;
};

struct gs_stop_opts {
	uint64_t grace_ms;       /* SIGTERM -> SIGKILL */
	uint64_t kill_wait_ms;   /* after SIGKILL (default 5000) */
	uint64_t unit_timeout_ms;/* systemctl stop deadline */
	/* With units_bounded, every unit stop together (the manager's
	 * questions included) ends units_budget_ms after the stop stage
	 * began: N slow units would otherwise take N times unit_timeout_ms
	 * twice over. A unit stop cut short or not tried is a failed one: its
	 * processes get the ladder. */
	bool units_bounded;
	uint64_t units_budget_ms;
	volatile sig_atomic_t *interrupted;
	/* Set (by tick) when the driver failed: stop escalating, as when
	 * interrupted, since nothing can be verified any more. */
	volatile sig_atomic_t *driver_failed;
	bool have_pct;           /* pct exists (else lxc-attach for CT units) */
	/* Where to look for the cgroup freezer (/proc, /sys); NULL: targets
	 * are not checked for it. */
	const struct gs_root *root;
	/* Called every tick_ms while waiting on targets (memory polling). */
	void (*tick)(void *ud);
	void *tick_ud;
	uint64_t tick_ms;
	/* Called about once a second while the stage waits (a grace, a unit
	 * stop, the wait after SIGKILL); NULL: nothing shown. */
	void (*progress)(void *ud, const struct gs_stop_progress *p);
	void *progress_ud;
};

struct gs_stop_result {
	struct gs_proc_result *procs; /* one per plan target, same order */
	size_t n_procs;
	struct gs_unit_result *units; /* one per plan unit */
	size_t n_units;
	bool interrupted;
	uint64_t started_ns;
};

int gs_stop_run(const struct gs_plan *p, int proc_fd, const struct gs_stop_opts *o, struct gs_stop_result *ret);
void gs_stop_result_free(struct gs_stop_result *r);

const char *gs_outcome_str(enum gs_outcome o);

#endif

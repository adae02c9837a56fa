/* Verdicts and exit statuses: one table of what a run concluded, the word
 * that names it (text, JSON, the last-reclaim file, a fleet's reader) and
 * the exit status it gives. Exit statuses are a documented promise
 * (gpuslate(1), docs/json.md); nothing else spells them as numbers. */
#ifndef GS_VERDICT_H
#define GS_VERDICT_H

#include <stdbool.h>

enum gs_exit {
	GS_EXIT_CLEAN = 0,
	GS_EXIT_NOT_CLEAN = 1,
	GS_EXIT_USAGE = 2,
	GS_EXIT_DRIVER = 3,
	GS_EXIT_HOSTS = 4,
	GS_EXIT_REFUSED = 5,
	/* The selection is gone, but processes it left alone (not protected
	 * daemons) still hold memory on the selected GPUs. */
	GS_EXIT_SELECTION_GONE = 6,
	/* A filter (-u, --unit, --container, --match) matched no process. */
	GS_EXIT_NO_MATCH = 7,
	/* restore: something a reclaim stopped could not be started again
	 * (its record is kept, so restore can be run again). */
	GS_EXIT_NOT_RESTORED = 8,
	/* run: COMMAND succeeded (exit 0), but an intruder held a selected
	 * GPU while it ran: its results may not be what a clean GPU gives. */
	GS_EXIT_INTRUDER = 9,
	/* reclaim --expect: the fresh plan has a target that the confirmed
	 * plan did not list (a fleet's host whose holders changed between the
	 * plan it showed and the stop): nothing was stopped (core/expect.h). */
	GS_EXIT_PLAN_CHANGED = 10,
	/* gpuslate ran out of memory: it could not finish, so the GPUs are
	 * not known to be clean (see gs_exit_of_error). */
	GS_EXIT_OUT_OF_MEMORY = GS_EXIT_NOT_CLEAN,
	/* Interrupted (SIGINT, SIGTERM, SIGHUP) before a verdict: what the
	 * shell gives a command that SIGINT ended, 128 + 2. */
	GS_EXIT_INTERRUPTED = 130,
};

enum gs_verdict {
	GS_VERDICT_NONE = 0,        /* no verdict: the run failed before one (an error) */
	GS_VERDICT_CLEAN,
	GS_VERDICT_SELECTION_GONE,
	GS_VERDICT_NOT_CLEAN,
	GS_VERDICT_NO_MATCH,
	GS_VERDICT_REFUSED,
	GS_VERDICT_DRY_RUN,
	GS_VERDICT_DRIVER_FAILURE,
	GS_VERDICT_UNVERIFIED,
	/* The document of an early failure (--json): the run stopped before
	 * it had anything to judge (docs/json.md, "Early failures"). */
	GS_VERDICT_USAGE_ERROR,
	GS_VERDICT_ERROR,           /* any other early failure (out of memory) */
	/* restore (core/restore.h) */
	GS_VERDICT_RESTORED,        /* everything recorded is running again */
	GS_VERDICT_NOTHING_TO_RESTORE,
	GS_VERDICT_NOT_RESTORED,    /* some start failed */
	/* reclaim, wait: a signal ended the stop or the wait; what was
	 * done so far is reported, the GPUs are not verified. */
	GS_VERDICT_INTERRUPTED,
	/* reclaim --expect: the plan is not the one confirmed; nothing was
	 * stopped. */
	GS_VERDICT_PLAN_CHANGED,
};

/* "clean", "selection-gone", ...; NULL for GS_VERDICT_NONE. */
const char *gs_verdict_name(enum gs_verdict v);
/* The exit status a verdict gives. */
enum gs_exit gs_verdict_exit(enum gs_verdict v);
/* The verdict a name stands for; -EINVAL for a name no verdict has. */
int gs_verdict_parse(const char *name, enum gs_verdict *ret);
/* The exit status of a run that failed with -errno err: out of memory is
 * "not clean" (gpuslate could not finish, so it cannot say the GPUs are
 * free; neither the driver nor the input is at fault, and a driver failure
 * would send an operator to reset a GPU); any other error gives otherwise. */
enum gs_exit gs_exit_of_error(int err, enum gs_exit otherwise);

/* The verdict of a run that failed early with this exit status: usage
 * error, driver failure, refused, else error. */
enum gs_verdict gs_verdict_of_failure(enum gs_exit status);

/* Verdicts that say nothing is wrong: clean, and a dry run that changed nothing. */
bool gs_verdict_ok(enum gs_verdict v);

#endif

/* Rendering of a reclaim or wait: the plan, the per-process and per-GPU
 * report, the verdict; as text for people and as versioned JSON. */
#ifndef GS_RECLAIM_OUT_H
#define GS_RECLAIM_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/plan.h"
#include "core/snapshot.h"
#include "core/stop.h"
#include "core/verify.h"

struct gs_reclaim_report {
	const char *command;           /* "reclaim" or "wait" */
	const struct gs_snapshot *before;
	const struct gs_plan *plan;
	const struct gs_stop_result *stop;     /* NULL: nothing was stopped (dry run, wait) */
	const struct gs_verify_result *verify; /* NULL: not verified (dry run, refused) */
	/* "clean", "selection-gone", "not-clean", "no-match", "refused",
	 * "dry-run", "driver-failure", "unverified" */
	const char *verdict;
	int exit_status;
	bool dry_run;
	const char *reason;            /* --reason, or one made up from the verdict */
	const char *message;           /* one line for people and logs */
	uint64_t elapsed_ms;
	/* Filter values that matched no process ("--unit x.service"). */
	const char (*unmatched)[320];
	size_t n_unmatched;
};

void gs_print_plan(FILE *f, const struct gs_snapshot *s, const struct gs_plan *p);
void gs_print_reclaim_report(FILE *f, const struct gs_reclaim_report *r);
json_t *gs_json_reclaim(const struct gs_reclaim_report *r);

/* A one-line drain reason: "gpuslate: GPU 0 not clean: 3590 MiB held by 1234 (python3)". */
void gs_reclaim_summary(const struct gs_reclaim_report *r, char *buf, size_t len);

#endif

/* Rendering of a reclaim or wait: the plan, the per-process and per-GPU
 * report, the verdict; as text for people and as versioned JSON. */
#ifndef GS_RECLAIM_OUT_H
#define GS_RECLAIM_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/reclaim.h"


/* "Host NAME, GPUs 0,1": the first line of the plan, and of wait. */
void gs_print_plan_header(FILE *f, const struct gs_snapshot *s, const struct gs_plan *p);
/* width: the columns the table may take (the terminal's), 0 for no limit.
 * Command lines the table cuts follow it in full. */
void gs_print_plan(FILE *f, const struct gs_snapshot *s, const struct gs_plan *p, size_t width);
void gs_print_reclaim_report(FILE *f, const struct gs_reclaim_report *r);
/* The report for -q: the verdict line, and why when it is not clean. */
void gs_print_reclaim_verdict(FILE *f, const struct gs_reclaim_report *r);
json_t *gs_json_reclaim(const struct gs_reclaim_report *r);

/* A one-line drain reason: "gpuslate: GPU 0 not clean: 3590 MiB held by 1234 (python3)". */
void gs_reclaim_summary(const struct gs_reclaim_report *r, char *buf, size_t len);

#endif

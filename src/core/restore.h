/* The seam between `run --restore` and the restore of issue 14 §3: start
 * again what a reclaim stopped (units through systemctl start, containers
 * through their runtime). `run` calls it once, after COMMAND has ended,
 * still holding the reclaim lock. */
#ifndef GS_RESTORE_H
#define GS_RESTORE_H

#include <stdbool.h>
#include <stddef.h>

struct gs_reclaim;

/* One thing started again (or that could not be). */
struct gs_restored {
	char what[320];   /* "unit inference.service", "container 3f2a..." */
	bool ok;
	char error[256];  /* why not, when !ok */
};

/* Start again what the reclaim rc stopped. Fills up to max entries of ret
 * and *n; returns 0, or -errno when the restore could not be attempted. */
int gs_restore_after_run(const struct gs_reclaim *rc, struct gs_restored *ret, size_t max, size_t *n);

#endif

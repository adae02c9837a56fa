/* The verdict table; see verdict.h. */
#include "core/verdict.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

static const struct {
	const char *name;
	enum gs_exit exit;
} verdicts[] = {
	[GS_VERDICT_NONE] = { NULL, GS_EXIT_USAGE },
	[GS_VERDICT_CLEAN] = { "clean", GS_EXIT_CLEAN },
	[GS_VERDICT_SELECTION_GONE] = { "selection-gone", GS_EXIT_SELECTION_GONE },
	[GS_VERDICT_NOT_CLEAN] = { "not-clean", GS_EXIT_NOT_CLEAN },
	[GS_VERDICT_NO_MATCH] = { "no-match", GS_EXIT_NO_MATCH },
	[GS_VERDICT_REFUSED] = { "refused", GS_EXIT_REFUSED },
	[GS_VERDICT_DRY_RUN] = { "dry-run", GS_EXIT_CLEAN },
	[GS_VERDICT_DRIVER_FAILURE] = { "driver-failure", GS_EXIT_DRIVER },
	/* Holders gone but memory unknown: never "clean", and not a verdict
	 * about the processes either; the driver could not say. */
	[GS_VERDICT_UNVERIFIED] = { "unverified", GS_EXIT_DRIVER },
	[GS_VERDICT_USAGE_ERROR] = { "usage-error", GS_EXIT_USAGE },
	[GS_VERDICT_ERROR] = { "error", GS_EXIT_OUT_OF_MEMORY },
	[GS_VERDICT_RESTORED] = { "restored", GS_EXIT_CLEAN },
	[GS_VERDICT_NOTHING_TO_RESTORE] = { "nothing-to-restore", GS_EXIT_CLEAN },
	[GS_VERDICT_NOT_RESTORED] = { "not-restored", GS_EXIT_NOT_RESTORED },
	[GS_VERDICT_INTERRUPTED] = { "interrupted", GS_EXIT_INTERRUPTED },
	[GS_VERDICT_PLAN_CHANGED] = { "plan-changed", GS_EXIT_PLAN_CHANGED },
};

const char *gs_verdict_name(enum gs_verdict v)
{
	return (size_t)v < sizeof(verdicts) / sizeof(verdicts[0]) ? verdicts[v].name : NULL;
}

enum gs_exit gs_verdict_exit(enum gs_verdict v)
{
	return (size_t)v < sizeof(verdicts) / sizeof(verdicts[0]) ? verdicts[v].exit : GS_EXIT_USAGE;
}

int gs_verdict_parse(const char *name, enum gs_verdict *ret)
{
	for (size_t i = 0; name && i < sizeof(verdicts) / sizeof(verdicts[0]); i++)
		if (verdicts[i].name && !strcmp(verdicts[i].name, name)) {
			*ret = (enum gs_verdict)i;
			return 0;
		}
	return -EINVAL;
}

bool gs_verdict_ok(enum gs_verdict v)
{
	return v == GS_VERDICT_CLEAN || v == GS_VERDICT_DRY_RUN || v == GS_VERDICT_RESTORED ||
	       v == GS_VERDICT_NOTHING_TO_RESTORE;
}

enum gs_exit gs_exit_of_error(int err, enum gs_exit otherwise)
{
	return err == -ENOMEM ? GS_EXIT_OUT_OF_MEMORY : otherwise;
}

enum gs_verdict gs_verdict_of_failure(enum gs_exit status)
{
	switch (status) {
	case GS_EXIT_USAGE: return GS_VERDICT_USAGE_ERROR;
	case GS_EXIT_DRIVER: return GS_VERDICT_DRIVER_FAILURE;
	case GS_EXIT_REFUSED: return GS_VERDICT_REFUSED;
	default: return GS_VERDICT_ERROR;
	}
}

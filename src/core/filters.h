/* The selection filters of reclaim (-u, --unit, --container, --match),
 * compiled once and applied to a process: to GPU holders by the plan, and to
 * every process of the host once before planning, so that a filter that
 * names nothing is reported by name (a typo is not "nothing to stop"), and
 * a container id prefix that names two containers is refused instead of
 * selecting both. */
#ifndef GS_FILTERS_H
#define GS_FILTERS_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/owner.h"
#include "proc/ptable.h"

#define GS_FILTER_MAX 64 /* values per filter (-u, --unit, --container) */

struct gs_filter_spec {
	const char *const *users; size_t n_users;
	const char *const *units; size_t n_units;
	const char *const *containers; size_t n_containers;
	const char *match;          /* POSIX extended regex over the whole command line */
	/* Resolves a -u name to its uid (the system's user database:
	 * gs_user_uid); NULL: only numeric uids. Passed in so that the
	 * plan decides from what it is given. */
	int (*resolve_user)(const char *name, uid_t *ret);
	/* The containers were resolved to full ids or names by
	 * gs_filters_scan_host: match them exactly, never as a prefix. */
	bool containers_exact;
};

struct gs_filters {
	const struct gs_filter_spec *spec;
	uid_t uids[GS_FILTER_MAX];
	regex_t re;
	bool have_re;
};

/* Which value of each filter a process satisfied (bit i: value i). */
struct gs_filter_hits {
	uint64_t users, units, containers;
	bool match;
};

/* Resolve users, compile the regex. Returns 0, or -EINVAL with a one-line
 * reason naming the input in err. */
int gs_filters_compile(const struct gs_filter_spec *spec, struct gs_filters *ret, char *err, size_t errlen);
void gs_filters_free(struct gs_filters *f);

/* Is any filter given? */
bool gs_filters_any(const struct gs_filter_spec *spec);

/* Does a process with this uid, owner and command line pass every filter
 * given (one of its values each)? cmdline NULL: --match fails (gpuslate's
 * own command line holds the pattern). Records the values it satisfied in
 * hits (may be NULL). */
bool gs_filters_test(const struct gs_filters *f, uid_t uid, const struct gs_owner *o, const char *cmdline,
		     struct gs_filter_hits *hits);

struct gs_filters_host {
	bool any_match;             /* some process passes every filter */
	struct gs_filter_hits hits; /* values some process satisfies */
	/* Per --container value: what it names, as a full id or name to match
	 * exactly from now on (storage for gs_filter_spec.containers). */
	char (*resolved)[256];
	size_t n_resolved;
};

/* Apply the filters to every process of the table (read through proc_fd,
 * /proc). self
 * counts as a process of its user, unit and container (gpuslate in a
 * unit's ExecStopPost= names its own unit), never for --match. Resolves
 * each --container value; a prefix that names two containers is refused:
 * -EINVAL with err naming the candidates. Returns 0 or -errno. */
int gs_filters_scan_host(const struct gs_filters *f, int proc_fd, const struct gs_ptable *pt, pid_t self,
			 struct gs_filters_host *ret, char *err, size_t errlen);
void gs_filters_host_free(struct gs_filters_host *h);

/* The values no process satisfied (per hits), in the order given, one per
 * entry of out ("-u 30", "--unit sglang.service", "--match vllm.*qwen").
 * Returns how many (at most max). */
size_t gs_filters_unmatched(const struct gs_filter_spec *spec, const struct gs_filter_hits *hits,
			    char (*out)[320], size_t max);

#endif

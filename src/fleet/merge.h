/* From what each host's command left behind (exit status, stdout, stderr)
 * to one verdict per host, and from those to one report: the human text,
 * with identical results folded into host ranges the way `dshbak -c` does,
 * and one JSON document (docs/fleet.md).
 *
 * Library code: returns 0 or -errno, never prints (the text is returned as
 * a string for the CLI to write). */
#ifndef GS_MERGE_H
#define GS_MERGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/runner.h"

/* The schema of the host documents this build understands. */
#define GS_FLEET_SCHEMA_VERSION 1

enum gs_host_failure {
	GS_HF_NONE = 0,
	GS_HF_UNREACHABLE,   /* no connection: refused, no route, connect timeout, unknown name */
	GS_HF_AUTH,          /* connected, but the login was refused */
	GS_HF_MISSING,       /* no gpuslate (or remote command) on the host */
	GS_HF_TOO_OLD,       /* a gpuslate without --remote */
	GS_HF_SCHEMA,        /* a gpuslate that speaks another schema_version */
	GS_HF_BAD_OUTPUT,    /* output that is not a gpuslate document */
	GS_HF_REMOTE_ERROR,  /* gpuslate ran and failed without a document */
	GS_HF_TIMED_OUT,     /* past the command deadline; ended */
	GS_HF_INTERRUPTED,   /* ended by Ctrl-C */
	GS_HF_NOT_STARTED,   /* never started (Ctrl-C) */
	GS_HF_LOCAL_ERROR,   /* the local command could not run (ssh missing, ...) */
};

enum gs_host_verdict {
	GS_HV_FAILED = 0,
	GS_HV_CLEAN,
	GS_HV_NOT_CLEAN,
	GS_HV_DRY_RUN,       /* reclaim --dry-run: nothing changed, nothing judged */
	GS_HV_SELECTION_GONE,/* the selection is gone; processes it left alone hold memory */
	GS_HV_NO_MATCH,      /* the filters matched no process on the host */
};

struct gs_host_result {
	const char *host;             /* borrowed: the name as listed */
	enum gs_host_failure failure;
	enum gs_host_verdict verdict;
	char *error;                  /* one line for a failure; NULL when none */
	char *line;                   /* "clean, 8 GPUs, 0 MiB" ...; NULL for failures */
	json_t *report;               /* the host's own document (a reference); NULL for failures */
	char *stderr_text;            /* the remote side's stderr, sanitized; NULL if empty */
	json_t *stderr_json;          /* the same for JSON: lines kept, control bytes escaped */
	int exit_code;
	uint64_t elapsed_ms;
	/* A `status` that worked (exit 0 on the host) and found the GPUs held:
	 * verdict not clean, yet no failure of the command (the exit rule). */
	bool status_busy;
};

struct gs_merge_opts {
	const char *command;          /* "status", "reclaim", "wait", "restore" */
	uint64_t deadline_ms;         /* for the "timed out after" message */
	uint64_t tolerance_mib;       /* status: memory above what protected holders account for */
};

/* Judge one host from its run. Fills r (free with gs_host_result_free). */
int gs_host_result_make(struct gs_host_result *r, const char *host, const struct gs_run_output *o,
			const struct gs_merge_opts *m);
void gs_host_result_free(struct gs_host_result *r);

/* "unreachable", "authentication", "missing", "too-old", "schema",
 * "bad-output", "remote-error", "timed-out", "interrupted", "not-started",
 * "local-error"; NULL for GS_HF_NONE. */
const char *gs_host_failure_str(enum gs_host_failure f);

struct gs_fleet_summary {
	size_t hosts, clean, not_clean, dry_run, failed, selection_gone, no_match;
	size_t busy;                  /* of not_clean: status_busy hosts */
};
void gs_fleet_summarize(const struct gs_host_result *r, size_t n, struct gs_fleet_summary *ret);

/* 4 when any host failed; else 1 when some are not clean (a `status` that
 * worked but found the GPUs held does not count: status exits 0 whatever
 * holds the GPUs, on one host and on many); else 6 when on some the
 * selection is gone but what it left alone holds memory; else 7 when the
 * filters matched nothing on any host; else 0 (every host clean, a dry run,
 * a status that worked, or nothing matched there while other hosts had
 * something). */
int gs_fleet_exit_status(const struct gs_fleet_summary *s);
/* The same for command: a restore whose hosts are not all restored (but
 * none failed) exits 8, as restore does on one host. */
int gs_fleet_exit_for(const char *command, const struct gs_fleet_summary *s);

/* The human report: folded results, then failures per host, then a summary
 * line (a restore's says "restored", not "clean"). *ret is malloc'd. */
int gs_fleet_render_text(const char *command, const struct gs_host_result *r, size_t n, bool interrupted,
			 char **ret);
/* The folded results and the failures without the summary line: a
 * fleet's plans before its question. *ret is malloc'd. */
int gs_fleet_render_lines(const struct gs_host_result *r, size_t n, char **ret);
/* Before a fleet's question: every target of each host's dry-run plan on
 * its own line ("HOST:  PID USER ACTION COMMAND"), command lines in full
 * (escaped), under "Will stop:"; "" when no host has one. malloc'd. */
int gs_fleet_render_plans(const struct gs_host_result *r, size_t n, char **ret);
/* The --expect text (core/expect.h) of a host's dry-run plan: its targets'
 * PIDs and start times, "none" for no target. -ENODATA: no plan (a
 * failure); -EPROTO: a target without a PID and start time; -E2BIG. */
int gs_host_result_expect(const struct gs_host_result *r, char **ret);
/* Each host's own text (the "output" its document carries: an nvidia-smi
 * query, CSV, Prometheus, or with -v its plan and report), every line
 * prefixed "HOST: " as clush and dshbak show pdsh output, hosts in list
 * order. Hosts without output (failures) add nothing. *ret is malloc'd. */
int gs_fleet_render_prefixed(const struct gs_host_result *r, size_t n, char **ret);

/* The JSON report: {schema_version, tool, version, command, interrupted,
 * hosts: [{host, ok, verdict, failure, error, exit_status, elapsed_s,
 * stderr, report}], summary}. New reference. */
json_t *gs_fleet_json(const struct gs_host_result *r, size_t n, const char *command, bool interrupted);

#endif

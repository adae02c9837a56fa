/* What the user asked for, as one request: the command, where to look, the
 * selection, the timing, the output form and, for a fleet, the hosts. The
 * command line fills it (src/cli), the pipeline reads it (core/reclaim.c,
 * plan through gs_request_selection) and a fleet turns it back into the
 * remote command line (src/fleet/remote.c). */
#ifndef GS_REQUEST_H
#define GS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gs_cmd { GS_CMD_NONE, GS_CMD_STATUS, GS_CMD_RECLAIM, GS_CMD_WAIT, GS_CMD_RESTORE, GS_CMD_RUN };

#define GS_MAX_MULTI 32

struct gs_request {
	enum gs_cmd cmd;
	const char *cmd_name;

	/* where to look */
	const char *nvml_lib;
	const char *dev_root;
	const char *sys_root;     /* --sys-root, GPUSLATE_SYS_ROOT */
	const char *fdinfo_shadow; /* GPUSLATE_FDINFO_SHADOW (tests only) */
	const char *proc_root;
	const char *nvidia_procfs;
	bool no_nvml;
	unsigned nvml_timeout_ms;

	/* selection */
	const char *gpus;                 /* -g */
	const char *users[GS_MAX_MULTI];  /* -u */
	size_t n_users;
	const char *units[GS_MAX_MULTI];  /* --unit */
	size_t n_units;
	const char *containers[GS_MAX_MULTI]; /* --container */
	size_t n_containers;
	const char *match;                /* --match REGEX */
	bool include_clients;
	const char *includes[GS_MAX_MULTI]; /* --include PROCNAME */
	size_t n_includes;

	/* acting */
	bool yes, dry_run, no_units;
	bool include_parent;      /* also stop supervising parents (restarter.h) */
	uint64_t grace_ms, timeout_ms;
	/* --respawn-watch: how long a live supervising parent is watched;
	 * 0: not given (the watch's own length; forwarded to a fleet's hosts
	 * only when set). */
	uint64_t respawn_watch_ms;
	uint64_t tolerance_mib;
	const char *reason;
	/* --expect PID:STARTTIME,...|none: the targets a fleet controller
	 * showed and had confirmed; the stop happens only if the fresh plan
	 * has no other (core/expect.h). NULL: not given. */
	const char *expect;

	/* run: COMMAND [ARGS...] after "--" (NULL-terminated), and what to do
	 * while it runs and after */
	char *const *run_argv;
	bool guard;                       /* --guard: stop intruders */
	bool restore;                     /* --restore: start again what was stopped */
	const char *json_file;            /* --json-file: the document there, not on stdout */

	/* output */
	bool json, csv, quiet, prometheus;
	bool csv_processes;               /* --csv=processes: that table, not the GPUs' */
	bool verbose;                     /* -v: with -w, each host's own report */
	bool wide;                        /* -W: whole command lines in the tables */
	bool remote;                      /* --remote: run for a fleet controller */
	const char *query_gpu, *query_apps, *format;

	/* fleet */
	const char *hosts[GS_MAX_MULTI];  /* -w, repeatable */
	size_t n_hosts;
	const char *excludes[GS_MAX_MULTI]; /* -x */
	size_t n_excludes;
	unsigned fanout;
	const char *hosts_file;
	const char *ssh_cmd;
	const char *remote_cmd;
	uint64_t connect_timeout_ms, command_timeout_ms;
};

struct gs_selection;
struct gs_discover;
struct gs_snapshot;

/* The plan's selection from the request: `wait` selects every compute
 * holder of the GPUs (no filters); reclaim takes the filters and what the
 * host has to stop units inside containers with. */
void gs_request_selection(const struct gs_request *req, struct gs_selection *sel);

/* Open discovery with the request's paths. Returns 0 or -errno with a
 * one-line reason in err; -ENOENT/-ENOTDIR: a root directory named in the
 * request does not exist (a usage error), anything else: the driver. */
int gs_request_discover_open(const struct gs_request *req, struct gs_discover *d, char *err, size_t errlen);

/* The one line for a host without a usable NVIDIA driver. */
void gs_request_no_driver(const struct gs_request *req, const struct gs_snapshot *s, char *buf, size_t len);

#endif

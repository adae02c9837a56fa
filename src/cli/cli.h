/* The command-line layer: the only place that prints to the user and decides
 * exit statuses. Options of every command live in one struct gs_cli. */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

/* Exit statuses: a documented promise (docs/json.md, gpuslate(1)). */
enum {
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
};

enum gs_cmd { GS_CMD_NONE, GS_CMD_STATUS, GS_CMD_RECLAIM, GS_CMD_WAIT };

#define GS_MAX_MULTI 32

/* Values of the long-only options in gs_cli_long_opts. */
enum {
	OPT_UNIT = 0x100, OPT_CONTAINER, OPT_MATCH, OPT_INCLUDE_CLIENTS, OPT_INCLUDE,
	OPT_GRACE, OPT_TIMEOUT, OPT_TOLERANCE, OPT_NO_UNITS, OPT_REASON, OPT_JSON, OPT_CSV,
	OPT_QUERY_GPU, OPT_QUERY_APPS, OPT_FORMAT, OPT_HOSTS_FILE, OPT_SSH, OPT_REMOTE_CMD,
	OPT_CONNECT_TIMEOUT, OPT_COMMAND_TIMEOUT, OPT_NVML_LIB, OPT_DEV_ROOT, OPT_PROC_ROOT,
	OPT_NO_NVML, OPT_NVML_TIMEOUT, OPT_REMOTE,
};

/* The option table, one for the parser (main.c) and for the tests that read
 * back what a remote gpuslate will parse (tests/unit/test_remote.c). */
extern const struct option gs_cli_long_opts[];

struct gs_cli {
	enum gs_cmd cmd;
	const char *cmd_name;

	/* where to look */
	const char *nvml_lib;
	const char *dev_root;
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
	uint64_t grace_ms, timeout_ms;
	uint64_t tolerance_mib;
	const char *reason;

	/* output */
	bool json, csv, quiet, prometheus;
	bool verbose;                     /* -v: with -w, each host's own report */
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

int gs_cmd_status(const struct gs_cli *cli);
int gs_cmd_reclaim(const struct gs_cli *cli);
int gs_cmd_wait(const struct gs_cli *cli);
int gs_cmd_fleet(const struct gs_cli *cli, int argc, char **argv);

/* Shared by the commands: open discovery with the CLI's paths. Prints the
 * error and returns an exit status (>0) on failure, 0 on success. */
struct gs_discover;
int gs_cli_discover_open(const struct gs_cli *cli, struct gs_discover *d);

/* Warn on stderr about what a snapshot could not see. */
struct gs_snapshot;
void gs_cli_note_visibility(const struct gs_cli *cli, const struct gs_snapshot *s);

/* The one error line for a host without a usable NVIDIA driver. */
void gs_cli_no_driver(const struct gs_cli *cli, const struct gs_snapshot *s);

/* The file holding the last reclaim's verdict (GPUSLATE_STATE_FILE). */
const char *gs_last_reclaim_path(char *buf, size_t len);

/* --remote: end this process when stdin reaches EOF (the controller left). */
void gs_remote_watch_stdin(void);

/* Every --json document goes to stdout through here: the one place that
 * knows whether this run printed one. */
void gs_cli_print_json(json_t *doc);

/* A document that is printed although the command failed (status without
 * a driver) gets the verdict, exit status and reason of the failure. */
void gs_cli_json_failure(json_t *doc, int status);

/* The document of a run that failed before it had one of its own (a usage
 * error, the lock, no driver, NVML failing during discovery): verdict and
 * reason from the exit status and the first error line (docs/json.md,
 * "Early failures"). main() prints it on any such exit with --json. */
void gs_cli_print_early_json(const struct gs_cli *cli, int status);

/* "gpuslate: " + message on stderr, escaped (util/sanitize.h). */
void gs_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

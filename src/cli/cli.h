/* The command-line layer: the only place that prints to the user and decides
 * exit statuses. Options of every command live in one struct gs_request. */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <stdbool.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "core/request.h"
#include "core/verdict.h"

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

int gs_cmd_status(const struct gs_request *cli);
int gs_cmd_reclaim(const struct gs_request *cli);
int gs_cmd_wait(const struct gs_request *cli);
int gs_cmd_fleet(const struct gs_request *cli, int argc, char **argv);

/* Warn on stderr about what a snapshot could not see. */
struct gs_snapshot;
void gs_cli_note_visibility(const struct gs_request *cli, const struct gs_snapshot *s);

/* --remote: end this process when stdin reaches EOF (the controller left). */
void gs_remote_watch_stdin(void);

/* "gpuslate: " + message on stderr. */
void gs_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

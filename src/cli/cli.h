/* The command-line layer: the only place that prints to the user and decides
 * exit statuses. It fills one struct gs_request (core/request.h) from the
 * option table (core/options.c) and renders what the core returns. */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/options.h"
#include "core/request.h"
#include "core/verdict.h"

/* Parse the command line into req (defaults first, then the options, the
 * command, and the checks that span options). Prints the error; -EINVAL
 * on a usage error. --help and --version print and exit. */
int gs_cli_parse(int argc, char **argv, struct gs_request *req);
/* --help without a command: the commands and the options of every command. */
void gs_cli_usage(FILE *f);
/* `gpuslate CMD --help`, `gpuslate help CMD`: the options that apply to
 * CMD, from the option table. -EINVAL for no such command. */
int gs_cli_usage_cmd(FILE *f, enum gs_cmd cmd);
/* getopt_long's tables, made from the option table (core/options.c); the
 * tests read a remote tail back with them as the far side does. */
void gs_cli_getopt_tables(const struct option **ret_long, const char **ret_short);

int gs_cmd_status(const struct gs_request *cli);
int gs_cmd_reclaim(const struct gs_request *cli);
int gs_cmd_wait(const struct gs_request *cli);
int gs_cmd_restore(const struct gs_request *cli);
int gs_cmd_run(const struct gs_request *cli);
int gs_cmd_fleet(const struct gs_request *cli, int argc, char **argv);

/* reclaim's terminal hooks (plan on plan_out, the question, the progress
 * line), for `run`'s reclaim too. cli/cmd_reclaim.c */
struct gs_reclaim_hooks;
void gs_cli_reclaim_hooks(const struct gs_request *req, FILE *plan_out, struct gs_reclaim_hooks *hooks);

/* -q: the plan is not shown (-y and no --dry-run). cli/cmd_reclaim.c */
bool gs_cli_quiet_plan(const struct gs_request *req);

/* Warn on stderr about what a snapshot could not see. */
struct gs_snapshot;
void gs_cli_note_visibility(const struct gs_request *cli, const struct gs_snapshot *s);

/* --remote: end this process when stdin reaches EOF (the controller left). */
void gs_remote_watch_stdin(void);

/* Every --json document goes to stdout through here: the one place that
 * knows whether this run printed one. */
void gs_cli_print_json(json_t *doc);
/* run --json-file: gs_cli_print_json writes FILE (atomically) instead of
 * stdout. 0, or -errno when FILE's directory cannot be written in. */
int gs_cli_set_json_file(const char *path);
/* Writing the document to the --json-file failed (an error was printed). */
bool gs_cli_json_file_failed(void);
bool gs_cli_json_printed(void);

/* A document that is printed although the command failed (status without
 * a driver) gets the verdict, exit status and reason of the failure. */
void gs_cli_json_failure(json_t *doc, int status);

/* The document of a run that failed before it had one of its own (a usage
 * error, the lock, no driver, NVML failing during discovery): verdict and
 * reason from the exit status and the first error line (docs/json.md,
 * "Early failures"). main() prints it on any such exit with --json. */
void gs_cli_print_early_json(const struct gs_request *cli, int status);

/* The columns a table on fd may take: the terminal's (TIOCGWINSZ), else
 * $COLUMNS, else 80 on a terminal and 0 (no limit: whole lines) on a pipe
 * or file. cli/output.c */
size_t gs_cli_term_width(int fd);
/* The width a table printed on f takes: gs_cli_term_width, or no limit
 * with --wide. */
size_t gs_cli_table_width(const struct gs_request *req, FILE *f);
/* "Proceed? [y/N]" on stderr, the answer from stdin: true only for y/yes. */
bool gs_cli_ask_proceed(void);

/* "gpuslate: " + message on stderr, escaped (util/sanitize.h). cli/output.c */
void gs_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

/* What a run writes for people and programs: the error and warning lines
 * on stderr and every --json document on stdout. One place, so that it
 * knows the first error line and whether a document was printed: a --json
 * run that fails early still gets one (docs/json.md, "Early failures"). */
#include "cli/cli.h"
#include "core/json_keys.h"
#include "out/status_out.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The first error line of this run: what a --json document of an early
 * failure gives as its reason (gs_cli_print_early_json). */
static char first_error[1024];
/* A --json document reached stdout: an early failure adds none. */
static bool json_printed;

/* Messages carry names from outside (units, containers, filter values, NVML's
 * and systemctl's words): the whole line is escaped (util/sanitize.h), so
 * nothing in it reaches the terminal raw and it stays one line. */
static void print_message(const char *prefix, const char *fmt, va_list ap, bool remember)
{
	char raw[2048], safe[2048];

	vsnprintf(raw, sizeof(raw), fmt, ap);
	gs_safe(raw, safe, sizeof(safe));
	fprintf(stderr, "%s%s\n", prefix, safe);
	if (remember && !first_error[0])
		gs_strlcpy(first_error, safe, sizeof(first_error));
}

size_t gs_cli_term_width(int fd)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");
	bool tty = isatty(fd);

	/* As ps and systemctl: a COLUMNS in the environment is asked for,
	 * on a terminal or not, and wins over the terminal's size. */
	if (cols && *cols) {
		char *end;
		unsigned long v = strtoul(cols, &end, 10);

		if (!*end && v > 0 && v < 100000)
			return v;
	}
	if (tty && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	/* Not a terminal: a script gets whole lines (ps does the same). */
	return tty ? 80 : 0;
}

/* The one question before acting, on stderr; only "y" or "yes" (any case)
 * is a yes, end of input a no. Shared by reclaim and the fleet. */
bool gs_cli_ask_proceed(void)
{
	char line[64];

	fprintf(stderr, "Proceed? [y/N] ");
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		return false;
	gs_strstrip(line);
	return !strcasecmp(line, "y") || !strcasecmp(line, "yes");
}

size_t gs_cli_table_width(const struct gs_request *req, FILE *f)
{
	return req->wide ? 0 : gs_cli_term_width(fileno(f));
}

void gs_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_message("gpuslate: ", fmt, ap, true);
	va_end(ap);
}

void gs_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_message("gpuslate: warning: ", fmt, ap, false);
	va_end(ap);
}

/* run --json-file: where the document goes instead of stdout (COMMAND
 * keeps stdout), and whether writing it failed. */
static const char *json_file;
static bool json_file_failed;

int gs_cli_set_json_file(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');

	/* Checked before anything is stopped or run: a document that cannot
	 * be written is known now, not after COMMAND's hours. */
	if (!*path || (slash && !slash[1]))
		return -EISDIR;
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	if (access(dir, W_OK | X_OK) < 0)
		return -errno;
	/* The rename would fail over a directory (or replace a device or
	 * pipe's name): only a regular file, or none yet. */
	{
		struct stat st;

		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	json_file = path;
	return 0;
}

bool gs_cli_json_file_failed(void)
{
	return json_file_failed;
}

/* The document into FILE whole or not at all: a temporary file beside it,
 * written, synced, renamed over it. A reader never sees half a document. */
static void write_json_file(json_t *doc)
{
	size_t len = strlen(json_file);
	char *tmp = malloc(len + 8);
	mode_t um = umask(0);
	int fd = -1, r = 0;
	FILE *f = NULL;

	umask(um);
	if (!tmp) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(tmp, json_file, len);
	memcpy(tmp + len, ".XXXXXX", 8);
	fd = mkstemp(tmp);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	/* mkstemp makes it 0600; a report is as readable as the umask says. */
	if (fchmod(fd, 0666 & ~um) < 0 || !(f = fdopen(fd, "w"))) {
		r = -errno;
		goto out;
	}
	fd = -1;
	if (json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) < 0 ||
	    fputc('\n', f) == EOF || fflush(f) != 0 || fsync(fileno(f)) < 0)
		r = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !r)
		r = -errno;
	f = NULL;
	if (!r && rename(tmp, json_file) < 0)
		r = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (r && tmp && (fd >= 0 || f || access(tmp, F_OK) == 0))
		unlink(tmp);
	free(tmp);
	if (r) {
		json_file_failed = true;
		gs_err("cannot write the JSON document to %s: %s", json_file, strerror(-r));
	}
}

void gs_cli_print_json(json_t *doc)
{
	json_printed = true;
	if (json_file) {
		write_json_file(doc);
		return;
	}
	json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	fputc('\n', stdout);
}

bool gs_cli_json_printed(void)
{
	return json_printed;
}

void gs_cli_json_failure(json_t *doc, int status)
{
	char err[1100];

	if (first_error[0])
		snprintf(err, sizeof(err), "gpuslate: %s", first_error);
	else
		snprintf(err, sizeof(err), "gpuslate: failed (exit %d)", status);
	json_object_set_new(doc, GS_JK_VERDICT, json_string(gs_verdict_name(gs_verdict_of_failure(status))));
	json_object_set_new(doc, GS_JK_EXIT_STATUS, json_integer(status));
	json_object_set_new(doc, GS_JK_REASON, gs_json_text(err));
}

void gs_cli_print_early_json(const struct gs_request *cli, int status)
{
	json_t *j = json_object();
	char err[1100], summary[1200], reason[2400], host[256];

	if (first_error[0])
		snprintf(err, sizeof(err), "%s", first_error);
	else
		snprintf(err, sizeof(err), "gpuslate failed (exit %d)", status);
	snprintf(summary, sizeof(summary), "gpuslate: %s", err);
	if (cli->reason && *cli->reason)
		snprintf(reason, sizeof(reason), "%s: %s", cli->reason, summary);
	else
		snprintf(reason, sizeof(reason), "%s", summary);
	json_object_set_new(j, GS_JK_SCHEMA_VERSION, json_integer(GS_SCHEMA_VERSION));
	json_object_set_new(j, "tool", json_string("gpuslate"));
	json_object_set_new(j, "version", json_string(GS_VERSION));
	json_object_set_new(j, GS_JK_COMMAND, cli->cmd_name ? gs_json_text(cli->cmd_name) : json_null());
	if (cli->n_hosts && !cli->remote) {
		/* The fleet's document: no host ran, the counts are zero. */
		static const char *const counts[] = { "hosts", "clean", "not_clean", "dry_run", "failed",
						      "selection_gone", "no_match" };
		json_t *sum = json_object();

		for (size_t i = 0; i < GS_ARRAY_SIZE(counts); i++)
			json_object_set_new(sum, counts[i], json_integer(0));
		json_object_set_new(j, "interrupted", json_false());
		json_object_set_new(j, "hosts", json_array());
		json_object_set_new(j, GS_JK_SUMMARY, sum);
	} else {
		if (gethostname(host, sizeof(host)) < 0)
			host[0] = '\0';
		host[sizeof(host) - 1] = '\0';
		json_object_set_new(j, "host", gs_json_text(host));
	}
	json_object_set_new(j, GS_JK_VERDICT, json_string(gs_verdict_name(gs_verdict_of_failure(status))));
	json_object_set_new(j, GS_JK_EXIT_STATUS, json_integer(status));
	if (!cli->n_hosts || cli->remote)
		json_object_set_new(j, GS_JK_SUMMARY, gs_json_text(summary));
	json_object_set_new(j, GS_JK_ERROR, gs_json_text(err));
	json_object_set_new(j, GS_JK_REASON, gs_json_text(reason));
	/* The lists a reclaim or status document has, empty: nothing was
	 * discovered, planned or stopped. */
	if (!cli->n_hosts || cli->remote) {
		json_object_set_new(j, GS_JK_GPUS, json_array());
		json_object_set_new(j, GS_JK_PROCESSES, json_array());
		if (cli->cmd == GS_CMD_RECLAIM || cli->cmd == GS_CMD_WAIT || cli->cmd == GS_CMD_RUN) {
			json_object_set_new(j, "dry_run", json_boolean(cli->dry_run));
			json_object_set_new(j, GS_JK_UNMATCHED, json_array());
			json_object_set_new(j, GS_JK_PLAN, json_null());
			json_object_set_new(j, "units", json_array());
			json_object_set_new(j, GS_JK_RESPAWNS, json_array());
			json_object_set_new(j, "interrupted", json_false());
			if (cli->cmd == GS_CMD_RUN) {
				/* COMMAND never started. */
				json_t *run = json_object(), *argv = json_array();

				for (size_t i = 0; cli->run_argv && cli->run_argv[i]; i++)
					json_array_append_new(argv, gs_json_text(cli->run_argv[i]));
				json_object_set_new(run, "command", argv);
				json_object_set_new(run, "started", json_false());
				json_object_set_new(run, "pid", json_null());
				/* A COMMAND that cannot be executed: the shell's status,
				 * found before anything was stopped. */
				json_object_set_new(run, "exit_status",
						    status == 126 || status == 127 ? json_integer(status) : json_null());
				json_object_set_new(j, "run", run);
			}
		} else if (cli->cmd == GS_CMD_STATUS) {
			json_object_set_new(j, GS_JK_WARNINGS, json_array());
		} else if (cli->cmd == GS_CMD_RESTORE) {
			json_object_set_new(j, "dry_run", json_boolean(cli->dry_run));
			json_object_set_new(j, GS_JK_RESTORE_ITEMS, json_array());
		}
	}
	gs_cli_print_json(j);
	json_decref(j);
	fflush(stdout);
}

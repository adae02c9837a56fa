/* gpuslate restore: start again what reclaims on this host stopped through
 * a manager (core/restore.c): what it will start, the question on a
 * terminal, the report, and the exit status. */
#include "cli/cli.h"
#include "core/json_keys.h"
#include "core/restore.h"
#include "out/restore_out.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static void on_note(void *ud, const char *text)
{
	const struct gs_request *req = ud;

	if (!req->quiet)
		gs_warn("%s", text);
}

static void on_plan(void *ud, const struct gs_restore *rs)
{
	const struct gs_request *req = ud;

	if (!req->json && !gs_cli_quiet_plan(req))
		gs_print_restore_plan(stdout, rs);
}

/* Same rules as reclaim: ask on a terminal, refuse without -y when nobody
 * can answer. */
static enum gs_confirm on_confirm(void *ud, const struct gs_restore *rs)
{
	char line[64];

	(void)ud;
	if (!isatty(STDIN_FILENO)) {
		gs_err("refusing to start %zu unit%s or container%s without confirmation: no terminal (use -y)",
		       rs->n_to_start, rs->n_to_start == 1 ? "" : "s", rs->n_to_start == 1 ? "" : "s");
		return GS_CONFIRM_NO_TERMINAL;
	}
	fflush(stdout);
	fprintf(stderr, "Start %zu again? [y/N] ", rs->n_to_start);
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	gs_strstrip(line);
	if (strcasecmp(line, "y") && strcasecmp(line, "yes")) {
		gs_err("not confirmed: nothing was started");
		return GS_CONFIRM_NO;
	}
	return GS_CONFIRM_YES;
}

/* A fleet's -v: the text this host would print, as "output". */
static void add_remote_text(json_t *j, const struct gs_restore *rs)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&text, &len);

	if (!mf)
		return;
	gs_print_restore_plan(mf, rs);
	gs_print_restore_report(mf, rs);
	if (fclose(mf) == 0)
		json_object_set_new(j, GS_JK_OUTPUT, json_stringn(text, len));
	free(text);
}

int gs_cmd_restore(const struct gs_request *req)
{
	struct gs_restore_hooks hooks = {
		.ud = (void *)req,
		.note = on_note,
		.plan_ready = on_plan,
		.confirm = on_confirm,
	};
	struct gs_restore rs;
	int status;

	if (gs_restore_run(req, NULL, &hooks, &rs) < 0) {
		gs_err("'restore' cannot run");
		return GS_EXIT_USAGE;
	}
	status = rs.exit_status;
	if (rs.verdict == GS_VERDICT_NONE) {
		gs_err("%s", rs.error);
	} else {
		for (size_t i = 0; i < rs.n; i++) {
			char name[700];

			if (rs.items[i].outcome != GS_RESTORE_FAILED)
				continue;
			gs_restore_item_name(&rs.items[i].rec, name, sizeof(name));
			gs_err("cannot start %s: %s", name, rs.items[i].error);
		}
		if (req->json) {
			json_t *j = gs_json_restore(&rs);

			if (req->remote && req->verbose)
				add_remote_text(j, &rs);
			gs_cli_print_json(j);
			json_decref(j);
		} else if (req->quiet) {
			gs_print_restore_verdict(stdout, &rs);
		} else {
			gs_print_restore_report(stdout, &rs);
		}
		fflush(stdout);
	}
	gs_restore_free(&rs);
	return status;
}

/* Rendering of a restore; see restore_out.h. */
#include "out/restore_out.h"
#include "core/json_keys.h"
#include "out/status_out.h"
#include "proc/owner.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

void gs_restore_item_name(const struct gs_stopped_rec *r, char *buf, size_t len)
{
	if (r->kind == GS_STOPPED_SUPERVISED)
		snprintf(buf, len, "%s %s %s", r->runtime, strcmp(r->runtime, "supervisord") ? "service" : "program",
			 r->name);
	else if (r->kind == GS_STOPPED_CONTAINER)
		snprintf(buf, len, "%s container %s%s%.12s%s", r->runtime, r->name[0] ? r->name : "",
			 r->name[0] ? " (" : "", r->id, r->name[0] ? ")" : "");
	else {
		char where[96];

		snprintf(buf, len, "unit %s%s", r->name, gs_unit_scope_text(r->container, where, sizeof(where)));
	}
}

static void when(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "at an unknown time");
}

void gs_print_restore_plan(FILE *f, const struct gs_restore *rs)
{
	if (!rs->n)
		return;
	fprintf(f, "Stopped by gpuslate reclaim on this host (%s):\n", GS_SAFE(rs->path));
	for (size_t i = 0; i < rs->n; i++) {
		const struct gs_restore_item *it = &rs->items[i];
		char name[700], t[64];

		gs_restore_item_name(&it->rec, name, sizeof(name));
		when(it->rec.stopped_at, t, sizeof(t));
		fprintf(f, "  %-16s %s, stopped %s", it->will_start ? "start" : gs_restore_outcome_str(it->outcome),
			GS_SAFE(name), t);
		if (it->rec.reason[0])
			fprintf(f, " (%s)", GS_SAFE(it->rec.reason));
		if (it->outcome == GS_RESTORE_ALREADY_RUNNING)
			fprintf(f, ": %s again, not started twice", GS_SAFE(it->state_now));
		else if (it->outcome == GS_RESTORE_NOT_RUNNING_BEFORE || it->outcome == GS_RESTORE_STOPPED_SINCE ||
			 it->outcome == GS_RESTORE_GONE)
			fprintf(f, ": %s", GS_SAFE(it->error));
		fputc('\n', f);
	}
}

void gs_print_restore_verdict(FILE *f, const struct gs_restore *rs)
{
	if (rs->verdict == GS_VERDICT_NOTHING_TO_RESTORE || rs->verdict == GS_VERDICT_DRY_RUN ||
	    rs->verdict == GS_VERDICT_REFUSED) {
		gs_print_restore_report(f, rs);
		return;
	}
	fprintf(f, "Restore: %s.\n", GS_SAFE(rs->message));
}

void gs_print_restore_report(FILE *f, const struct gs_restore *rs)
{
	if (rs->verdict == GS_VERDICT_NOTHING_TO_RESTORE) {
		fprintf(f, "Nothing to restore: no reclaim on this host stopped a unit or container that is not started again (%s).\n",
			GS_SAFE(rs->path));
		return;
	}
	if (rs->verdict == GS_VERDICT_DRY_RUN) {
		fprintf(f, "\nDry run: nothing was started.\n");
		return;
	}
	if (rs->verdict == GS_VERDICT_REFUSED)
		return;
	fputc('\n', f);
	for (size_t i = 0; i < rs->n; i++) {
		const struct gs_restore_item *it = &rs->items[i];
		char name[700];

		if (!it->will_start)
			continue;
		gs_restore_item_name(&it->rec, name, sizeof(name));
		fprintf(f, "  %-16s %s", gs_restore_outcome_str(it->outcome), GS_SAFE(name));
		if (it->outcome == GS_RESTORE_STARTED)
			fprintf(f, " (%.1f s)", it->took_ms / 1000.0);
		else if (it->error[0])
			fprintf(f, ": %s", GS_SAFE(it->error));
		fputc('\n', f);
	}
	fprintf(f, "Restore: %s.\n", GS_SAFE(rs->message));
}

static json_t *str_or_null(const char *s)
{
	return s && s[0] ? gs_json_text(s) : json_null();
}

json_t *gs_json_restore(const struct gs_restore *rs)
{
	json_t *j = json_object(), *items = json_array();
	char host[256];

	if (gethostname(host, sizeof(host)) < 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	json_object_set_new(j, GS_JK_SCHEMA_VERSION, json_integer(GS_SCHEMA_VERSION));
	json_object_set_new(j, "tool", json_string("gpuslate"));
	json_object_set_new(j, "version", json_string(GS_VERSION));
	json_object_set_new(j, GS_JK_COMMAND, json_string("restore"));
	json_object_set_new(j, "host", gs_json_text(host));
	json_object_set_new(j, GS_JK_VERDICT, json_string(gs_verdict_name(rs->verdict)));
	json_object_set_new(j, GS_JK_EXIT_STATUS, json_integer(rs->exit_status));
	json_object_set_new(j, "dry_run", json_boolean(rs->dry_run));
	json_object_set_new(j, GS_JK_SUMMARY, gs_json_text(rs->message));
	json_object_set_new(j, "state_file", gs_json_text(rs->path));
	json_object_set_new(j, "state_file_error", str_or_null(rs->save_error));
	json_object_set_new(j, "interrupted", json_boolean(rs->interrupted));
	json_object_set_new(j, "elapsed_s", json_real(rs->elapsed_ms / 1000.0));
	for (size_t i = 0; i < rs->n; i++) {
		const struct gs_restore_item *it = &rs->items[i];
		json_t *o = json_object(), *rc = json_object();

		json_object_set_new(o, "kind", json_string(gs_stopped_kind_str(it->rec.kind)));
		json_object_set_new(o, "runtime", gs_json_text(it->rec.runtime));
		json_object_set_new(o, GS_JK_RESTORE_NAME, str_or_null(it->rec.name));
		json_object_set_new(o, "id", str_or_null(it->rec.id));
		{
			unsigned uid;
			bool user = gs_unit_scope_is_user(it->rec.container, &uid);

			json_object_set_new(o, "container", user ? json_null() : str_or_null(it->rec.container));
			json_object_set_new(o, "user", user ? json_integer(uid) : json_null());
		}
		if (it->rec.kind == GS_STOPPED_SUPERVISED) {
			json_object_set_new(o, "control_option", str_or_null(it->rec.control_opt));
			json_object_set_new(o, "control", str_or_null(it->rec.control));
		}
		json_object_set_new(o, "stopped_at", json_integer(it->rec.stopped_at));
		json_object_set_new(rc, "started_at", json_integer(it->rec.reclaim_at));
		json_object_set_new(rc, GS_JK_REASON, str_or_null(it->rec.reason));
		json_object_set_new(o, "reclaim", rc);
		json_object_set_new(o, "state_before", str_or_null(it->rec.state_before));
		json_object_set_new(o, "enabled_before", str_or_null(it->rec.enabled_before));
		json_object_set_new(o, "state_now", str_or_null(it->state_now));
		json_object_set_new(o, "will_start", json_boolean(it->will_start));
		json_object_set_new(o, GS_JK_OUTCOME, json_string(gs_restore_outcome_str(it->outcome)));
		json_object_set_new(o, "command", str_or_null(it->command));
		json_object_set_new(o, GS_JK_EXIT_STATUS, it->command[0] ? json_integer(it->exit_code) : json_null());
		json_object_set_new(o, GS_JK_ERROR, str_or_null(it->error));
		json_object_set_new(o, "took_s", json_real(it->took_ms / 1000.0));
		json_array_append_new(items, o);
	}
	json_object_set_new(j, GS_JK_RESTORE_ITEMS, items);
	return j;
}

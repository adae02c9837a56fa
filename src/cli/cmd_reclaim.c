/* gpuslate reclaim and gpuslate wait: the request to the pipeline
 * (core/reclaim.c), the plan, the question and the progress line on the
 * terminal, the report, and the exit status. */
#include "core/json_keys.h"
#include "cli/cli.h"
#include "core/reclaim.h"
#include "core/expect.h"
#include "core/json_keys.h"
#include "out/reclaim_out.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct terminal {
	const struct gs_request *req;
	FILE *out;               /* the plan: stdout, or stderr for `run` */
	bool progress_drawn;
};

static void on_snapshot(void *ud, const struct gs_snapshot *s)
{
	struct terminal *t = ud;

	gs_cli_note_visibility(t->req, s);
}

static void on_note(void *ud, const char *text)
{
	struct terminal *t = ud;

	if (!t->req->quiet)
		gs_warn("%s", text);
}

static void on_plan(void *ud, const struct gs_reclaim *rc)
{
	struct terminal *t = ud;

	if (t->req->json)
		return;
	if (t->req->cmd == GS_CMD_WAIT) {
		/* As reclaim's: which host, which GPUs. */
		if (!t->req->quiet)
			gs_print_plan_header(t->out, rc->rep.before, rc->rep.plan);
		return;
	}
	if (gs_cli_quiet_plan(t->req))
		return;
	gs_print_plan(t->out, rc->rep.before, rc->rep.plan, gs_cli_table_width(t->req, t->out));
	if (rc->no_match)
		fprintf(t->out, "%c%s.\n", toupper((unsigned char)rc->no_match_msg[0]), GS_SAFE(rc->no_match_msg + 1));
}

static enum gs_confirm on_confirm(void *ud, const struct gs_plan *p)
{
	(void)ud;
	if (!isatty(STDIN_FILENO)) {
		gs_err("refusing to stop %zu process%s without confirmation: no terminal (use -y)", p->n_targets,
		       p->n_targets == 1 ? "" : "es");
		return GS_CONFIRM_NO_TERMINAL;
	}
	fflush(stdout);
	if (!gs_cli_ask_proceed()) {
		gs_err("not confirmed: nothing was changed");
		return GS_CONFIRM_NO;
	}
	return GS_CONFIRM_YES;
}

/* The one progress line on stderr: redrawn in place, cut to the terminal
 * (a wrapped line cannot be redrawn with \r), escaped like every message. */
static void draw_line(struct terminal *t, const char *text)
{
	char safe[1024];
	size_t width = gs_cli_term_width(STDERR_FILENO);

	gs_safe(text, safe, sizeof(safe));
	if (width > 1 && strlen(safe) > width - 1)
		safe[width - 1] = '\0';
	fprintf(stderr, "\r\033[K%s", safe);
	fflush(stderr);
	t->progress_drawn = true;
}

static void on_progress(void *ud, const struct gs_snapshot *s, const struct gs_gpu_verdict *v, size_t n,
			uint64_t elapsed_ms)
{
	struct terminal *t = ud;
	char line[512];
	size_t off = 0;

	off = (size_t)snprintf(line, sizeof(line), "waiting %.1f s:", elapsed_ms / 1000.0);
	for (size_t g = 0; g < n && off + 48 < sizeof(line); g++) {
		if (v[g].released && !v[g].n_held_by)
			continue;
		/* No targeted process is left on the GPU: the driver is still
		 * tearing down the context of one that exited. */
		const char *what = v[g].n_held_by ? "held" : "releasing";

		if (v[g].mem_known)
			off += (size_t)snprintf(line + off, sizeof(line) - off, " GPU %u %llu MiB %s",
						s->gpus[v[g].gpu].index, (unsigned long long)(v[g].after / GS_MIB), what);
		else
			off += (size_t)snprintf(line + off, sizeof(line) - off, " GPU %u %s", s->gpus[v[g].gpu].index,
						what);
	}
	draw_line(t, line);
}

/* Appends to a progress line, never past its end. */
static void add(char *line, size_t len, size_t *off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(char *line, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*off >= len - 1)
		return;
	va_start(ap, fmt);
	k = vsnprintf(line + *off, len - *off, fmt, ap);
	va_end(ap);
	if (k > 0)
		*off = *off + (size_t)k < len ? *off + (size_t)k : len - 1;
}

/* "GPU 0,1: waiting for 2 of 3 processes": the GPUs the waited-for
 * targets hold, and how many of them are still alive (one line, short
 * enough for a terminal; the names follow). */
static void add_counts(char *line, size_t len, size_t *off, const struct gs_reclaim *rc,
		       const struct gs_stop_progress *p)
{
	const struct gs_plan *pl = &rc->plan;
	struct gs_gpuset on = { 0 };
	size_t all = 0, left = 0;
	bool first = true;

	for (size_t i = 0; i < pl->n_targets; i++) {
		const struct gs_target *tg = &pl->targets[i];

		if (!p->waiting[i])
			continue;
		all++;
		left += p->result->procs[i].outcome == GS_OUT_PENDING;
		if (tg->holder >= 0)
			for (size_t g = 0; g < rc->s.n_gpus; g++)
				if (gs_gpuset_has(&rc->s.holders[tg->holder].gpus, (unsigned)g))
					gs_gpuset_add(&on, (unsigned)g);
	}
	for (size_t g = 0; g < rc->s.n_gpus; g++) {
		if (!gs_gpuset_has(&on, (unsigned)g))
			continue;
		add(line, len, off, "%s%u", first ? "GPU " : ",", rc->s.gpus[g].index);
		first = false;
	}
	add(line, len, off, "%swaiting for %zu of %zu process%s", first ? "" : ": ", left, all, all == 1 ? "" : "es");
}

/* Who is still waited for: "python 4242, vllm 4250, +3". */
static void add_pending(char *line, size_t len, size_t *off, const struct gs_reclaim *rc,
			const struct gs_stop_progress *p)
{
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < rc->plan.n_targets; i++) {
		if (!p->waiting[i] || p->result->procs[i].outcome != GS_OUT_PENDING)
			continue;
		if (shown == 4) {
			more++;
			continue;
		}
		add(line, len, off, "%s%s %d", shown ? ", " : ": ", rc->plan.targets[i].comm, (int)rc->plan.targets[i].pid);
		shown++;
	}
	if (more)
		add(line, len, off, ", +%zu", more);
}

static unsigned secs_up(uint64_t ms)
{
	return (unsigned)((ms + 999) / 1000);
}

static void on_stop_progress(void *ud, const struct gs_reclaim *rc, const struct gs_stop_progress *p)
{
	struct terminal *t = ud;
	uint64_t left = p->timeout_ms > p->elapsed_ms ? p->timeout_ms - p->elapsed_ms : 0;
	char line[768];
	size_t off = 0;

	switch (p->phase) {
	case GS_STOP_PHASE_UNIT: {
		const struct gs_unit_stop *u = p->unit;

		if (gs_unit_stop_is_supervised(u))
			add(line, sizeof(line), &off, "stopping %s program %s", u->runtime, u->unit);
		else if (u->runtime[0])
			add(line, sizeof(line), &off, "stopping %s container %.12s", u->runtime, u->unit);
		else
			add(line, sizeof(line), &off, "stopping %s", u->unit);
		add(line, sizeof(line), &off, ", %u s of %u s", (unsigned)(p->elapsed_ms / 1000), secs_up(p->timeout_ms));
		break;
	}
	case GS_STOP_PHASE_GRACE:
		add_counts(line, sizeof(line), &off, rc, p);
		add(line, sizeof(line), &off, ", SIGKILL in %u s", secs_up(left));
		break;
	case GS_STOP_PHASE_KILL_WAIT:
		add_counts(line, sizeof(line), &off, rc, p);
		add(line, sizeof(line), &off, " after SIGKILL, %u s left", secs_up(left));
		break;
	}
	add_pending(line, sizeof(line), &off, rc, p);
	draw_line(t, line);
}

static void on_progress_end(void *ud)
{
	struct terminal *t = ud;

	if (t->progress_drawn)
		fprintf(stderr, "\r\033[K");
	t->progress_drawn = false;
}

/* A fleet's -v: the plan and report this host would print, as "output". */
static void add_remote_text(json_t *j, const struct gs_reclaim_report *rep)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&text, &len);

	if (!mf)
		return;
	if (!strcmp(rep->command, "reclaim"))
		gs_print_plan(mf, rep->before, rep->plan, 0);
	if (rep->verdict == GS_VERDICT_DRY_RUN)
		fputs("\nDry run: nothing was changed.\n", mf);
	else
		gs_print_reclaim_report(mf, rep);
	if (fclose(mf) == 0)
		json_object_set_new(j, GS_JK_OUTPUT, json_stringn(text, len));
	free(text);
}

static void emit(const struct gs_request *req, const struct gs_reclaim_report *rep)
{
	if (!strcmp(rep->command, "reclaim") && rep->verdict != GS_VERDICT_DRY_RUN)
		gs_last_reclaim_record(rep);
	if (req->json) {
		json_t *j = gs_json_reclaim(rep);

		if (req->remote && req->verbose)
			add_remote_text(j, rep);
		gs_cli_print_json(j);
		json_decref(j);
	} else if (req->quiet) {
		gs_print_reclaim_verdict(stdout, rep);
	} else {
		gs_print_reclaim_report(stdout, rep);
	}
	fflush(stdout);
}

bool gs_cli_quiet_plan(const struct gs_request *req)
{
	/* -q drops the plan only where nobody is asked about it (-y) and it
	 * is not the result (--dry-run): a question needs its plan. */
	return req->quiet && req->yes && !req->dry_run;
}

void gs_cli_reclaim_hooks(const struct gs_request *req, FILE *plan_out, struct gs_reclaim_hooks *hooks)
{
	static struct terminal term;
	/* For people at a terminal, not with -q. With --json too, as the
	 * fleet's: the document is on stdout, the line on the terminal. */
	bool progress = isatty(STDERR_FILENO) && !req->quiet && !getenv("GPUSLATE_NO_PROGRESS");

	term = (struct terminal){ .req = req, .out = plan_out };
	*hooks = (struct gs_reclaim_hooks){
		.ud = &term,
		.snapshot_ready = on_snapshot,
		.note = on_note,
		.plan_ready = on_plan,
		.confirm = on_confirm,
		.progress = progress ? on_progress : NULL,
		.stop_progress = progress ? on_stop_progress : NULL,
		.progress_end = on_progress_end,
	};
}

static int run(const struct gs_request *req)
{
	struct gs_reclaim_hooks hooks;
	struct gs_reclaim rc;
	int status;

	gs_cli_reclaim_hooks(req, stdout, &hooks);
	if (req->expect) {
		/* Junk is refused before anything is looked at, never read as
		 * "stop whatever is there". */
		struct gs_expect e;
		char err[512];

		if (gs_expect_parse(req->expect, &e, err, sizeof(err)) < 0) {
			gs_err("%s", err);
			return GS_EXIT_USAGE;
		}
		gs_expect_free(&e);
	}

	if (gs_reclaim_run(req, &hooks, &rc) < 0) {
		gs_err("'%s' cannot run the reclaim pipeline", req->cmd_name);
		return GS_EXIT_USAGE;
	}
	status = rc.rep.exit_status;
	switch (rc.rep.verdict) {
	case GS_VERDICT_NONE:
		if (rc.error[0])
			gs_err("%s", rc.error);
		break;
	case GS_VERDICT_REFUSED:
		/* The hook said why on stderr; a program gets the document. */
		if (req->json)
			emit(req, &rc.rep);
		break;
	case GS_VERDICT_PLAN_CHANGED:
		/* Nothing was stopped: the plan shown above is not the one
		 * confirmed. Said where errors go; a program gets the document. */
		gs_err("%s", rc.rep.message);
		if (req->json)
			emit(req, &rc.rep);
		break;
	default:
		/* Out of memory mid-wait: the report says not clean; say why
		 * where errors go too, as every other failure does. */
		if (rc.rep.verdict == GS_VERDICT_NOT_CLEAN && rc.rep.message && *rc.rep.message)
			gs_err("%s", rc.rep.message);
		if (rc.rep.dry_run && !req->json)
			printf("\nDry run: nothing was changed.\n");
		else
			emit(req, &rc.rep);
		break;
	}
	gs_reclaim_free(&rc);
	return status;
}

int gs_cmd_reclaim(const struct gs_request *req)
{
	return run(req);
}

int gs_cmd_wait(const struct gs_request *req)
{
	return run(req);
}

/* Starting again what reclaims stopped; see restore.h. */
#include "core/restore.h"
#include "core/restarter.h"
#include "proc/supervised.h"
#include "util/audit.h"
#include "util/spawn.h"
#include "util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t own_interrupted;
/* The flag in use: restore's own, or the caller's (gs_restore_opts). */
static volatile sig_atomic_t *intr = &own_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	own_interrupted = 1;
}

const char *gs_restore_outcome_str(enum gs_restore_outcome o)
{
	switch (o) {
	case GS_RESTORE_PENDING: return "pending";
	case GS_RESTORE_STARTED: return "started";
	case GS_RESTORE_ALREADY_RUNNING: return "already-running";
	case GS_RESTORE_NOT_RUNNING_BEFORE: return "not-running-before";
	case GS_RESTORE_STOPPED_SINCE: return "stopped-since";
	case GS_RESTORE_FAILED: return "failed";
	case GS_RESTORE_GONE: return "gone";
	}
	return "unknown";
}

static void note(const struct gs_restore_hooks *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const struct gs_restore_hooks *h, const char *fmt, ...)
{
	char text[640];
	va_list ap;

	if (!h->note)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	h->note(h->ud, text);
}

/* The argv that asks about (verb "show") or starts (verb "start") the
 * record's unit or container; words and buf hold it. */
static int build_argv(const struct gs_stopped_rec *r, bool have_pct, bool start, char *buf, size_t len,
		      const char **argv, size_t max)
{
	size_t n = 0;
	int k;

	if (r->kind == GS_STOPPED_SUPERVISED) {
		int w = gs_supervisor_argv(r->runtime, r->control_opt, r->control, r->name,
					   start ? GS_SUP_VERB_START : GS_SUP_VERB_STATUS, 0, buf, len, argv, max);

		return w < 0 ? w : 0;
	}
	if (r->kind == GS_STOPPED_CONTAINER) {
		if (gs_runtime_argv(r->runtime, buf, len, argv, max - 6, &n) < 0)
			return -EINVAL;
		if (start) {
			argv[n++] = "start";
		} else {
			/* When it last exited: a stop by someone else since the
			 * reclaim's is theirs to keep. */
			argv[n++] = "inspect";
			argv[n++] = "-f";
			argv[n++] = "{{.State.Running}} {{.State.FinishedAt}}";
		}
		argv[n++] = r->id;
		argv[n] = NULL;
		return 0;
	}
	/* As stop.c stopped it: through the host's manager, the CT's (pct,
	 * or lxc-attach where there is no pct), or the user's. */
	k = gs_systemctl_argv(r->container, have_pct, buf, len, argv, max);
	if (k < 0)
		return k;
	n = (size_t)k;
	if (start) {
		argv[n++] = "start";
	} else {
		/* The monotonic stamp: every systemd has it (--timestamp=unix
		 * came with 248, and a CT may run an older one). */
		argv[n++] = "show";
		argv[n++] = "-p";
		argv[n++] = "ActiveState";
		argv[n++] = "-p";
		argv[n++] = "LoadState";
		argv[n++] = "-p";
		argv[n++] = "InactiveEnterTimestampMonotonic";
	}
	/* A unit name never starts with '-' (stopped.c checks), but "--"
	 * costs nothing. */
	argv[n++] = "--";
	argv[n++] = r->name;
	argv[n] = NULL;
	return 0;
}

static void argv_text(const char *const *argv, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; argv[i] && off + 2 < len; i++) {
		int k = snprintf(buf + off, len - off, "%s%s", i ? " " : "", argv[i]);

		if (k < 0)
			break;
		off += (size_t)k;
	}
}

static void first_line(const char *text, char *buf, size_t len)
{
	const char *nl;

	buf[0] = '\0';
	if (!text)
		return;
	nl = strchr(text, '\n');
	snprintf(buf, len, "%.*s", nl ? (int)(nl - text) : (int)strlen(text), text);
}

/* systemctl show's "ActiveState=..." and "InactiveEnterTimestampMonotonic=
 * USEC" lines. The monotonic stamp becomes unix time through the clocks
 * now: the host's and its containers' CLOCK_MONOTONIC are one clock. */
static void read_unit_show(struct gs_restore_item *it, char *text)
{
	char *cur = text, *line, *eq;

	while (gs_next_property(&cur, &line, &eq)) {
		char *end;
		unsigned long long usec;

		if (!strcmp(line, "ActiveState")) {
			gs_strlcpy(it->state_now, eq, sizeof(it->state_now));
		} else if (!strcmp(line, "LoadState")) {
			/* No unit file and not loaded: a transient unit after its
			 * stop, or a unit removed since. Nothing to start. */
			it->gone = !strcmp(eq, "not-found");
		} else if (!strcmp(line, "InactiveEnterTimestampMonotonic")) {
			struct timespec mono, real;

			errno = 0;
			usec = strtoull(eq, &end, 10);
			if (errno || end == eq || usec == 0 || clock_gettime(CLOCK_MONOTONIC, &mono) < 0 ||
			    clock_gettime(CLOCK_REALTIME, &real) < 0)
				continue;
			it->inactive_since = (int64_t)real.tv_sec -
					     ((int64_t)mono.tv_sec - (int64_t)(usec / 1000000ULL));
		}
	}
}

/* A container's FinishedAt in unix seconds: docker prints RFC 3339
 * ("2026-12-05T22:40:01.123456789Z"), podman Go's default ("2026-12-05
 * 22:40:01.123456789 +0000 UTC"); an offset "+01:00" or "+0100". 0 when
 * unreadable, or the zero time of a container that never exited. */
static int64_t finished_at_seconds(const char *s)
{
	struct tm tm = { 0 };
	const char *p = strptime(s, "%Y-%m-%d", &tm);
	int64_t t;

	if (!p || (*p != 'T' && *p != ' '))
		return 0;
	p = strptime(p + 1, "%H:%M:%S", &tm);
	if (!p || tm.tm_year < 71)
		return 0;
	t = (int64_t)timegm(&tm);
	if (*p == '.')
		while (*++p >= '0' && *p <= '9')
			;
	while (*p == ' ')
		p++;
	if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9') {
		const char *m = p[3] == ':' ? p + 4 : p + 3;
		int off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600;

		if (m[0] >= '0' && m[0] <= '9' && m[1] >= '0' && m[1] <= '9')
			off += ((m[0] - '0') * 10 + (m[1] - '0')) * 60;
		t += *p == '+' ? -off : off;
	}
	return t;
}

/* "true|false FINISHED_AT" of docker/podman inspect. */
static void read_container_inspect(struct gs_restore_item *it, char *text)
{
	char *sp = strchr(text, ' ');

	if (sp)
		*sp++ = '\0';
	gs_strlcpy(it->state_now, !strcmp(text, "true") ? "running" : !strcmp(text, "false") ? "stopped" : "",
		   sizeof(it->state_now));
	if (sp)
		it->inactive_since = finished_at_seconds(gs_strstrip(sp));
}

/* A supervised program's status from its tool: "running" or "stopped". */
static void read_supervised_status(struct gs_restore_item *it, const char *text)
{
	int up = gs_sup_parse_up(gs_sup_kind_from_str(it->rec.runtime), text);

	gs_strlcpy(it->state_now, up == 1 ? "running" : up == 0 ? "stopped" : "", sizeof(it->state_now));
}

/* Is it running now? Fills state_now ("" when the manager could not say:
 * then restore tries the start, and the start says what is wrong). */
static void check_now(struct gs_restore_item *it, bool have_pct, uint64_t timeout_ms)
{
	const char *argv[32];
	char buf[512];
	struct gs_run_result rr;

	it->state_now[0] = '\0';
	if (build_argv(&it->rec, have_pct, false, buf, sizeof(buf), argv, GS_ARRAY_SIZE(argv)) < 0)
		return;
	if (gs_spawn_run_interruptible((char *const *)argv, timeout_ms, 4096, intr, &rr) < 0)
		return;
	if (!rr.timed_out && !rr.interrupted && rr.exit_code == 0 && rr.out) {
		char *v = gs_strstrip(rr.out);

		if (it->rec.kind == GS_STOPPED_CONTAINER)
			read_container_inspect(it, v);
		else if (it->rec.kind == GS_STOPPED_SUPERVISED)
			read_supervised_status(it, v);
		else
			read_unit_show(it, v);
	} else if (!rr.timed_out && !rr.interrupted && it->rec.kind == GS_STOPPED_SUPERVISED) {
		/* supervisorctl status exits 3 for a program that is not
		 * running; "no such process": removed from its config; sv: no
		 * service directory any more. */
		const char *all = rr.out && rr.out[0] ? rr.out : rr.err ? rr.err : "";

		if (strcasestr(all, "no such process") || strstr(all, "unable to change to service directory") ||
		    (rr.err && strstr(rr.err, "unable to change to service directory")))
			it->gone = true;
		else if (rr.out)
			read_supervised_status(it, gs_strstrip(rr.out));
	} else if (!rr.timed_out && !rr.interrupted && it->rec.kind == GS_STOPPED_CONTAINER && rr.exit_code != 0 &&
		   rr.err && strcasestr(rr.err, "no such")) {
		/* docker's "No such object", podman's "no such container":
		 * removed since; an id is never used again. */
		it->gone = true;
	}
	gs_run_result_free(&rr);
}

static bool running_state(const char *s)
{
	/* Up, or on its way up: a second start would only queue behind it. */
	return !strcmp(s, "active") || !strcmp(s, "activating") || !strcmp(s, "reloading") || !strcmp(s, "running");
}

/* What to do with each record: start it, or report why not. */
static void decide(struct gs_restore *rs, bool have_pct, uint64_t timeout_ms)
{
	for (size_t i = 0; i < rs->n && !*intr; i++) {
		struct gs_restore_item *it = &rs->items[i];

		/* Only what the reclaim undid: a record of something that was
		 * not running then (a state the manager reported) is not
		 * started now. */
		if (it->rec.state_before[0] && !running_state(it->rec.state_before)) {
			it->outcome = GS_RESTORE_NOT_RUNNING_BEFORE;
			snprintf(it->error, sizeof(it->error), "was %s before the reclaim: not started",
				 it->rec.state_before);
			continue;
		}
		check_now(it, have_pct, timeout_ms);
		if (running_state(it->state_now)) {
			it->outcome = GS_RESTORE_ALREADY_RUNNING;
			continue;
		}
		if (it->gone) {
			it->outcome = GS_RESTORE_GONE;
			snprintf(it->error, sizeof(it->error),
				 "its manager has no such %s any more (transient, or removed since): record dropped",
				 it->rec.kind == GS_STOPPED_UNIT ? "unit" : it->rec.kind == GS_STOPPED_SUPERVISED ? "program"
				 : "container");
			continue;
		}
		/* Went inactive (a container: exited) after the reclaim's stop
		 * had ended: someone started it and stopped it again since,
		 * and meant to. 5 s: stopped_at is whole seconds, the
		 * monotonic conversion another, and a clock step by NTP must
		 * not read as a stop. */
		if (it->inactive_since && it->rec.stopped_at && it->inactive_since > it->rec.stopped_at + 5) {
			it->outcome = GS_RESTORE_STOPPED_SINCE;
			snprintf(it->error, sizeof(it->error),
				 "started and stopped again since the reclaim (inactive %lld s after it stopped it): not started",
				 (long long)(it->inactive_since - it->rec.stopped_at));
			continue;
		}
		it->will_start = true;
		rs->n_to_start++;
	}
}

static void start_one(struct gs_restore_item *it, bool have_pct, uint64_t timeout_ms)
{
	const char *argv[24];
	char buf[512];
	struct gs_run_result rr;
	uint64_t t0 = gs_now_ms();
	int r;

	it->exit_code = -1;
	if (build_argv(&it->rec, have_pct, true, buf, sizeof(buf), argv, GS_ARRAY_SIZE(argv)) < 0) {
		it->outcome = GS_RESTORE_FAILED;
		snprintf(it->error, sizeof(it->error), "no usable %s command", it->rec.runtime);
		return;
	}
	argv_text(argv, it->command, sizeof(it->command));
	r = gs_spawn_run_interruptible((char *const *)argv, timeout_ms, 4096, intr, &rr);
	it->took_ms = gs_now_ms() - t0;
	if (r < 0) {
		it->outcome = GS_RESTORE_FAILED;
		snprintf(it->error, sizeof(it->error), "cannot run %s: %s", argv[0], strerror(-r));
	} else {
		it->exit_code = rr.timed_out || rr.interrupted ? -1 : rr.exit_code;
		if (rr.interrupted) {
			it->outcome = GS_RESTORE_FAILED;
			snprintf(it->error, sizeof(it->error), "interrupted");
		} else if (rr.timed_out) {
			it->outcome = GS_RESTORE_FAILED;
			snprintf(it->error, sizeof(it->error), "timed out after %.1f s", timeout_ms / 1000.0);
		} else if (rr.exit_code != 0) {
			it->outcome = GS_RESTORE_FAILED;
			first_line(rr.err && rr.err[0] ? rr.err : rr.out, it->error, sizeof(it->error));
			if (!it->error[0])
				snprintf(it->error, sizeof(it->error), "exit status %d", rr.exit_code);
		} else {
			it->outcome = GS_RESTORE_STARTED;
		}
		gs_run_result_free(&rr);
	}
	gs_audit_start(it->rec.kind == GS_STOPPED_UNIT ? "unit" : it->rec.runtime,
		       it->rec.kind == GS_STOPPED_CONTAINER ? it->rec.id : it->rec.name, it->rec.container, it->exit_code);
}

/* The records that stay: what was not started (failed, or never tried). */
static void save_rest(struct gs_restore *rs, const struct gs_restore_hooks *h)
{
	struct gs_stopped set = { 0 };
	int r = 0;

	for (size_t i = 0; i < rs->others.n && r == 0; i++)
		r = gs_stopped_add(&set, &rs->others.recs[i]);
	for (size_t i = 0; i < rs->n && r == 0; i++) {
		enum gs_restore_outcome o = rs->items[i].outcome;

		if (o == GS_RESTORE_PENDING || o == GS_RESTORE_FAILED)
			r = gs_stopped_add(&set, &rs->items[i].rec);
	}
	if (r == 0)
		r = gs_stopped_save(rs->path, &set);
	if (r < 0) {
		snprintf(rs->save_error, sizeof(rs->save_error), "cannot update '%.300s': %s", rs->path, strerror(-r));
		note(h, "%s", rs->save_error);
	}
	gs_stopped_free(&set);
}

static void conclude(struct gs_restore *rs, enum gs_verdict v)
{
	size_t started = 0, running = 0, failed = 0, pending = 0;

	rs->verdict = v;
	rs->exit_status = gs_verdict_exit(v);
	for (size_t i = 0; i < rs->n; i++)
		switch (rs->items[i].outcome) {
		case GS_RESTORE_STARTED: started++; break;
		case GS_RESTORE_ALREADY_RUNNING: running++; break;
		case GS_RESTORE_FAILED: failed++; break;
		case GS_RESTORE_PENDING: pending += rs->items[i].will_start; break;
		case GS_RESTORE_NOT_RUNNING_BEFORE:
		case GS_RESTORE_STOPPED_SINCE:
		case GS_RESTORE_GONE: break;
		}
	switch (v) {
	case GS_VERDICT_NOTHING_TO_RESTORE:
		snprintf(rs->message, sizeof(rs->message), "nothing to restore");
		break;
	case GS_VERDICT_DRY_RUN:
		snprintf(rs->message, sizeof(rs->message), "would start %zu, %zu already running", rs->n_to_start,
			 running);
		break;
	case GS_VERDICT_REFUSED:
		snprintf(rs->message, sizeof(rs->message), "refused: nothing was started");
		break;
	default:
		snprintf(rs->message, sizeof(rs->message), "%zu started, %zu already running, %zu failed%s", started,
			 running, failed + pending, pending ? " (interrupted)" : "");
		break;
	}
}

static int fail(struct gs_restore *rs, enum gs_exit status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct gs_restore *rs, enum gs_exit status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rs->error, sizeof(rs->error), fmt, ap);
	va_end(ap);
	rs->verdict = GS_VERDICT_NONE;
	rs->exit_status = status;
	return 0;
}

static bool in_set(const struct gs_stopped *s, const struct gs_stopped_rec *r)
{
	for (size_t i = 0; i < s->n; i++)
		if (gs_stopped_same(&s->recs[i], r))
			return true;
	return false;
}

struct lock_note {
	const struct gs_restore_hooks *h;
	uint64_t timeout_ms;
};

static void lock_waiting(void *ud)
{
	const struct lock_note *ln = ud;

	note(ln->h, "another gpuslate reclaim is running on this host; waiting up to %.0f s", ln->timeout_ms / 1000.0);
}

static int run(const struct gs_request *req, const struct gs_restore_opts *o, const struct gs_restore_hooks *h,
	       struct gs_restore *rs)
{
	struct gs_stopped set;
	char buf[4096], err[512];
	bool have_pct;
	int r;

	gs_strlcpy(rs->path, gs_stopped_path(buf, sizeof(buf)), sizeof(rs->path));
	if (!req->dry_run && !o->lock_held) {
		struct lock_note ln = { .h = h, .timeout_ms = req->timeout_ms };

		r = gs_host_lock_take(req->timeout_ms, intr, lock_waiting, &ln, &rs->lock_fd, err, sizeof(err));
		if (r < 0)
			return fail(rs, gs_exit_of_error(r, GS_EXIT_REFUSED), "%s", err);
	}
	r = gs_stopped_load(rs->path, &set, err, sizeof(err));
	if (r < 0)
		return fail(rs, gs_exit_of_error(r, GS_EXIT_REFUSED), "refusing the stopped-state file '%s': %s",
			    rs->path, err);
	if (set.n == 0) {
		gs_stopped_free(&set);
		conclude(rs, GS_VERDICT_NOTHING_TO_RESTORE);
		return 0;
	}
	rs->items = calloc(set.n, sizeof(*rs->items));
	if (!rs->items) {
		gs_stopped_free(&set);
		return fail(rs, GS_EXIT_OUT_OF_MEMORY, "out of memory");
	}
	for (size_t i = 0; i < set.n && r == 0; i++) {
		if (o->only && !in_set(o->only, &set.recs[i])) {
			r = gs_stopped_add(&rs->others, &set.recs[i]);
			continue;
		}
		rs->items[rs->n].rec = set.recs[i];
		rs->items[rs->n++].exit_code = -1;
	}
	gs_stopped_free(&set);
	if (r < 0)
		return fail(rs, gs_exit_of_error(r, GS_EXIT_NOT_CLEAN), "%s", strerror(-r));
	if (rs->n == 0) {
		conclude(rs, GS_VERDICT_NOTHING_TO_RESTORE);
		return 0;
	}

	have_pct = gs_program_exists("pct");
	decide(rs, have_pct, req->timeout_ms);
	if (h->plan_ready)
		h->plan_ready(h->ud, rs);
	if (req->dry_run) {
		conclude(rs, GS_VERDICT_DRY_RUN);
		return 0;
	}
	if (rs->n_to_start && !req->yes) {
		enum gs_confirm c = h->confirm ? h->confirm(h->ud, rs) : GS_CONFIRM_NO_TERMINAL;

		if (c != GS_CONFIRM_YES) {
			conclude(rs, GS_VERDICT_REFUSED);
			snprintf(rs->message, sizeof(rs->message), "%s",
				 c == GS_CONFIRM_NO_TERMINAL
					 ? "refused: no terminal to confirm on; use -y to start without confirmation"
					 : "refused: not confirmed");
			return 0;
		}
	}
	for (size_t i = 0; i < rs->n && !*intr; i++)
		if (rs->items[i].will_start)
			start_one(&rs->items[i], have_pct, req->timeout_ms);
	rs->interrupted = *intr != 0;
	save_rest(rs, h);
	{
		bool bad = false;

		for (size_t i = 0; i < rs->n; i++)
			bad |= rs->items[i].outcome == GS_RESTORE_FAILED ||
			       (rs->items[i].will_start && rs->items[i].outcome == GS_RESTORE_PENDING);
		conclude(rs, bad ? GS_VERDICT_NOT_RESTORED : GS_VERDICT_RESTORED);
	}
	return 0;
}

int gs_restore_run(const struct gs_request *req, const struct gs_restore_opts *o, const struct gs_restore_hooks *hooks,
		   struct gs_restore *rs)
{
	static const struct gs_restore_hooks none;
	static const struct gs_restore_opts defaults;
	struct sigaction sa = { .sa_handler = on_interrupt };
	uint64_t t0 = gs_now_ms();
	int r;

	memset(rs, 0, sizeof(*rs));
	rs->lock_fd = -1;
	rs->dry_run = req->dry_run;
	if (o && o->interrupted) {
		intr = o->interrupted;
	} else {
		/* No SA_RESTART: a start in progress ends at Ctrl-C, and what
		 * was not started keeps its record. */
		intr = &own_interrupted;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		signal(SIGPIPE, SIG_IGN);
	}
	r = run(req, o ? o : &defaults, hooks ? hooks : &none, rs);
	rs->elapsed_ms = gs_now_ms() - t0;
	return r;
}

void gs_restore_free(struct gs_restore *rs)
{
	free(rs->items);
	rs->items = NULL;
	rs->n = 0;
	gs_stopped_free(&rs->others);
	if (rs->lock_fd >= 0)
		close(rs->lock_fd);
	rs->lock_fd = -1;
}

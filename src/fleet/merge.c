/* Judging each host and merging the fleet report; see merge.h. */
#include "core/json_keys.h"
#include "core/expect.h"
#include "util/strbuf.h"
#include "core/snapshot.h"
#include "core/verdict.h"
#include "fleet/merge.h"
#include "fleet/remote.h"
#include "util/sanitize.h"
#include "util/util.h"
#include "fleet/hostlist.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How much of a bad output or a stderr line a message quotes. */
#define GS_QUOTE_BYTES 64
#define GS_LINE_BYTES 200
#define GS_STDERR_BYTES 4096

const char *gs_host_failure_str(enum gs_host_failure f)
{
	switch (f) {
	case GS_HF_NONE: return NULL;
	case GS_HF_UNREACHABLE: return "unreachable";
	case GS_HF_AUTH: return "authentication";
	case GS_HF_MISSING: return "missing";
	case GS_HF_TOO_OLD: return "too-old";
	case GS_HF_SCHEMA: return "schema";
	case GS_HF_BAD_OUTPUT: return "bad-output";
	case GS_HF_REMOTE_ERROR: return "remote-error";
	case GS_HF_TIMED_OUT: return "timed-out";
	case GS_HF_INTERRUPTED: return "interrupted";
	case GS_HF_NOT_STARTED: return "not-started";
	case GS_HF_LOCAL_ERROR: return "local-error";
	}
	return "unknown";
}

static const char *verdict_str(enum gs_host_verdict v)
{
	switch (v) {
	case GS_HV_CLEAN: return "clean";
	case GS_HV_NOT_CLEAN: return "not-clean";
	case GS_HV_DRY_RUN: return "dry-run";
	case GS_HV_SELECTION_GONE: return "selection-gone";
	case GS_HV_NO_MATCH: return "no-match";
	case GS_HV_FAILED: return "failed";
	}
	return "failed";
}

/* A host's stderr for JSON: lines kept (JSON escapes them), control bytes
 * and invalid UTF-8 as \xNN, so the string is never refused; "..." marks a
 * cut. NULL on allocation failure. */
static json_t *stderr_json(const char *err, size_t len)
{
	size_t n = len < GS_STDERR_BYTES ? len : GS_STDERR_BYTES, qlen;
	char *q = gs_json_escape_dup(err, n, GS_ESC_LINES, &qlen), *full;
	json_t *j;

	if (!q)
		return NULL;
	full = len > n ? realloc(q, qlen + 4) : q;
	if (!full) {
		free(q);
		return NULL;
	}
	if (len > n) {
		memcpy(full + qlen, "...", 4);
		qlen += 3;
	}
	j = json_stringn(full, qlen);
	free(full);
	return j;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

/* The last line of stderr that says something, sanitized; "" if none. */
static char *last_line(const char *err, size_t len)
{
	size_t end = len, start;

	while (end > 0) {
		while (end > 0 && (err[end - 1] == '\n' || err[end - 1] == '\r' || err[end - 1] == ' '))
			end--;
		start = end;
		while (start > 0 && err[start - 1] != '\n')
			start--;
		/* Warnings (a host key added, a post-quantum notice) are not the
		 * reason anything failed. */
		if (end > start && strncmp(err + start, "Warning:", 8) && strncmp(err + start, "** ", 3))
			return gs_text_dup(err + start, end - start, GS_LINE_BYTES);
		end = start;
	}
	return strdup("");
}

static bool has(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle);
}

static void sum_mib(json_t *gpus, const char *key, const char *fallback, bool *known, long long *sum)
{
	size_t i;
	json_t *g;

	*known = json_array_size(gpus) > 0;
	*sum = 0;
	json_array_foreach(gpus, i, g) {
		json_t *v = json_object_get(g, key);

		if (!json_is_integer(v) && fallback)
			v = json_object_get(g, fallback);
		/* remote numbers: a negative or overflowing sum is not a figure */
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    __builtin_add_overflow(*sum, (long long)json_integer_value(v), sum))
			*known = false;
	}
}

static const char *comm_of(json_t *doc, json_int_t pid)
{
	static const char *const lists[] = { GS_JK_PROCESSES, GS_JK_TARGETS, GS_JK_LEFT_ALONE };

	for (size_t l = 0; l < 3; l++) {
		json_t *arr = json_object_get(doc, lists[l]), *p;
		size_t i;

		if (l > 0)
			arr = json_object_get(json_object_get(doc, GS_JK_PLAN), lists[l]);
		json_array_foreach(arr, i, p) {
			json_t *c = json_object_get(p, GS_JK_COMM);

			if (json_integer_value(json_object_get(p, GS_JK_PID)) == pid && json_is_string(c))
				return json_string_value(c);
		}
	}
	return NULL;
}

static void sb_pid(struct gs_strbuf *b, json_t *doc, json_int_t pid, bool first)
{
	const char *c = comm_of(doc, pid);
	char *safe = c ? gs_text_dup(c, strlen(c), 64) : NULL;

	if (safe) {
		gs_strbuf_addf(b, "%s%lld (%s)", first ? "" : ", ", (long long)pid, safe);
		free(safe);
	} else {
		gs_strbuf_addf(b, "%s%lld", first ? "" : ", ", (long long)pid);
	}
}

/* status: the host's verdict; for hosts older than that, the same rule as
 * gs_status_verdict: not clean when a compute holder holds a selected GPU,
 * or a GPU uses more memory than its protected holders account for plus
 * the tolerance (memory nobody visible holds). */
static enum gs_host_verdict judge_status(json_t *doc, int exit_code, uint64_t tol, struct gs_strbuf *why)
{
	json_t *gpus = json_object_get(doc, GS_JK_GPUS), *procs = json_object_get(doc, GS_JK_PROCESSES), *g, *p;
	enum gs_host_verdict v = GS_HV_CLEAN;
	const char *word = json_string_value(json_object_get(doc, GS_JK_VERDICT));
	enum gs_verdict said = GS_VERDICT_NONE;
	bool host_judged = word && gs_verdict_parse(word, &said) == 0;
	size_t i, k;

	if (host_judged ? said == GS_VERDICT_DRIVER_FAILURE : exit_code == GS_EXIT_DRIVER) {
		json_t *w = json_array_get(json_object_get(doc, GS_JK_WARNINGS), 0);

		gs_strbuf_addf(why, "GPU driver failure%s%s", json_is_string(w) ? ": " : "",
			json_is_string(w) ? json_string_value(w) : "");
		return GS_HV_NOT_CLEAN;
	}
	json_array_foreach(gpus, i, g) {
		json_int_t idx = json_integer_value(json_object_get(g, GS_JK_INDEX));
		json_t *used = json_object_get(g, GS_JK_MEMORY_USED_MIB);
		long long protected_mib = 0, limit;
		bool first = true;

		json_array_foreach(procs, k, p) {
			json_t *pg = json_object_get(p, GS_JK_GPUS), *x;
			const char *role = json_string_value(json_object_get(p, GS_JK_ROLE));
			bool on = false;
			size_t m;

			json_array_foreach(pg, m, x)
				if (json_integer_value(x) == idx)
					on = true;
			if (!on || !role)
				continue;
			if (!strcmp(role, gs_role_str(GS_ROLE_PROTECTED))) {
				json_int_t pm = json_integer_value(json_object_get(p, GS_JK_MEMORY_MIB));

				if (pm > 0 && __builtin_add_overflow(protected_mib, (long long)pm, &protected_mib))
					protected_mib = LLONG_MAX;
			} else if (!strcmp(role, gs_role_str(GS_ROLE_COMPUTE))) {
				if (first)
					gs_strbuf_addf(why, "%sGPU %lld held by ", why->len ? "; " : "", (long long)idx);
				sb_pid(why, doc, json_integer_value(json_object_get(p, GS_JK_PID)), first);
				first = false;
				v = GS_HV_NOT_CLEAN;
			}
		}
		if (__builtin_add_overflow(protected_mib, (long long)(tol > LLONG_MAX ? LLONG_MAX : tol), &limit))
			limit = LLONG_MAX;
		if (first && json_is_integer(used) && json_integer_value(used) > limit) {
			json_t *unowned = json_object_get(g, GS_JK_UNOWNED_MIB);

			gs_strbuf_addf(why, "%sGPU %lld: %lld MiB used by no visible process", why->len ? "; " : "",
				(long long)idx, (long long)json_integer_value(used));
			/* the host's own account (docs/json.md): the driver's */
			if (json_is_integer(unowned) && json_integer_value(unowned) > 0)
				gs_strbuf_addf(why, ", %lld MiB held with no process (driver-held)",
					(long long)json_integer_value(unowned));
			v = GS_HV_NOT_CLEAN;
		}
	}
	/* A host that writes its own verdict (core/status.c) is taken at its
	 * word; the loop above only names what holds the GPUs. Older hosts
	 * are judged by the same rule from their document. */
	if (host_judged && said == GS_VERDICT_CLEAN) {
		gs_strbuf_release(why); /* nothing to name on a clean host */
		return GS_HV_CLEAN;
	}
	if (host_judged)
		return GS_HV_NOT_CLEAN;
	return v;
}

static enum gs_host_verdict judge_reclaim(json_t *doc, struct gs_strbuf *why)
{
	const char *word = json_string_value(json_object_get(doc, GS_JK_VERDICT));
	json_t *gpus = json_object_get(doc, GS_JK_GPUS), *g, *x;
	enum gs_verdict verdict = GS_VERDICT_NONE;
	size_t i, k;

	if (!word)
		return GS_HV_FAILED;
	/* A word this gpuslate does not know: the host's own summary says why. */
	(void)gs_verdict_parse(word, &verdict);
	if (verdict == GS_VERDICT_CLEAN)
		return GS_HV_CLEAN;
	if (verdict == GS_VERDICT_DRY_RUN) {
		json_t *targets = json_object_get(json_object_get(doc, GS_JK_PLAN), GS_JK_TARGETS);

		if (!json_array_size(targets))
			gs_strbuf_addf(why, "nothing to stop");
		json_array_foreach(targets, i, x) {
			if (i == 0)
				gs_strbuf_addf(why, "would stop ");
			sb_pid(why, doc, json_integer_value(json_object_get(x, GS_JK_PID)), i == 0);
		}
		return GS_HV_DRY_RUN;
	}
	if (verdict == GS_VERDICT_SELECTION_GONE) {
		/* Named with the processes left alone that keep each GPU busy. */
		json_array_foreach(gpus, i, g) {
			json_t *others = json_object_get(g, GS_JK_LEFT_ALONE_HOLDERS);

			if (!json_array_size(others))
				continue;
			gs_strbuf_addf(why, "%sGPU %lld held by ", why->len ? "; " : "",
				(long long)json_integer_value(json_object_get(g, GS_JK_INDEX)));
			json_array_foreach(others, k, x) {
				sb_pid(why, doc, json_integer_value(json_object_get(x, GS_JK_PID)), k == 0);
			}
			gs_strbuf_addf(why, " (left alone)");
		}
		return GS_HV_SELECTION_GONE;
	}
	if (verdict == GS_VERDICT_NO_MATCH) {
		json_array_foreach(json_object_get(doc, GS_JK_UNMATCHED), i, x) {
			const char *u = json_string_value(x);
			char *safe = u ? gs_text_dup(u, strlen(u), 64) : NULL;

			if (safe)
				gs_strbuf_addf(why, "%s%s", i ? ", " : "nothing matched: ", safe);
			free(safe);
		}
		if (why->len)
			gs_strbuf_addf(why, " %s no process", json_array_size(json_object_get(doc, GS_JK_UNMATCHED)) == 1 ? "matches" : "match");
		else
			gs_strbuf_addf(why, "nothing matched the filters");
		return GS_HV_NO_MATCH;
	}
	if (verdict == GS_VERDICT_NOT_CLEAN) {
		json_array_foreach(gpus, i, g) {
			json_t *held = json_object_get(g, GS_JK_HELD_BY);

			if (json_is_true(json_object_get(g, GS_JK_CLEAN)))
				continue;
			gs_strbuf_addf(why, "%sGPU %lld", why->len ? "; " : "", (long long)json_integer_value(json_object_get(g, GS_JK_INDEX)));
			json_array_foreach(held, k, x) {
				if (k == 0)
					gs_strbuf_addf(why, " held by ");
				sb_pid(why, doc, json_integer_value(x), k == 0);
			}
			if (!json_array_size(held)) {
				json_t *after = json_object_get(g, GS_JK_MEMORY_AFTER_MIB);
				json_t *unowned = json_object_get(g, GS_JK_UNOWNED_MIB);

				if (json_is_integer(after))
					gs_strbuf_addf(why, ": %lld MiB still used", (long long)json_integer_value(after));
				if (json_is_integer(unowned) && json_integer_value(unowned) > 0)
					gs_strbuf_addf(why, ", %lld MiB held with no process (driver-held)",
						(long long)json_integer_value(unowned));
			}
		}
		json_array_foreach(json_object_get(doc, GS_JK_RESPAWNS), i, x) {
			const char *by = json_string_value(json_object_get(x, GS_JK_BY));
			json_t *pid = json_object_get(x, GS_JK_PID);

			/* No pid: not a process yet, a restart its unit's manager
			 * has scheduled. */
			if (json_is_integer(pid))
				gs_strbuf_addf(why, "%s%lld respawned", why->len ? "; " : "",
					       (long long)json_integer_value(pid));
			else
				gs_strbuf_addf(why, "%srestart scheduled", why->len ? "; " : "");
			if (by) {
				char *safe = gs_text_dup(by, strlen(by), 64);

				if (safe)
					gs_strbuf_addf(why, " by %s", safe);
				free(safe);
			}
		}
		return GS_HV_NOT_CLEAN;
	}
	/* refused, driver-failure, unverified: the host's own one-liner says why */
	{
		const char *sum = json_string_value(json_object_get(doc, GS_JK_SUMMARY));

		if (sum) {
			char *safe;

			if (!strncmp(sum, "gpuslate: ", 10))
				sum += 10;
			safe = gs_text_dup(sum, strlen(sum), GS_LINE_BYTES);
			if (safe)
				gs_strbuf_addf(why, "%s", safe);
			free(safe);
		}
	}
	return GS_HV_NOT_CLEAN;
}

/* restore: restored and nothing-to-restore count as clean (every record
 * is running again), not-restored and refused as not clean; the line
 * names what was started, found running or failed. */
static enum gs_host_verdict judge_restore(json_t *doc, struct gs_strbuf *why)
{
	static const char *const outcomes[] = { "started", "already-running", "failed" };
	const char *word = json_string_value(json_object_get(doc, GS_JK_VERDICT));
	enum gs_verdict verdict = GS_VERDICT_NONE;
	json_t *items = json_object_get(doc, GS_JK_RESTORE_ITEMS), *x;
	size_t i;

	if (!word)
		return GS_HV_FAILED;
	(void)gs_verdict_parse(word, &verdict);
	for (size_t k = 0; k < GS_ARRAY_SIZE(outcomes); k++) {
		bool first = true;

		json_array_foreach(items, i, x) {
			const char *o = json_string_value(json_object_get(x, GS_JK_OUTCOME));
			const char *name = json_string_value(json_object_get(x, GS_JK_RESTORE_NAME));
			bool pending = verdict == GS_VERDICT_DRY_RUN && k == 0 && json_is_true(json_object_get(x, "will_start"));
			char *safe;

			if (!pending && (!o || strcmp(o, outcomes[k])))
				continue;
			if (!name)
				name = json_string_value(json_object_get(x, "id"));
			safe = name ? gs_text_dup(name, strlen(name), 64) : NULL;
			gs_strbuf_addf(why, "%s%s%s", first ? (why->len ? "; " : "") : ", ",
				       first ? (pending ? "would start " : k == 0 ? "started " : k == 1 ? "already running " : "failed ")
					     : "",
				       safe ? safe : "?");
			free(safe);
			first = false;
		}
	}
	switch (verdict) {
	case GS_VERDICT_RESTORED:
	case GS_VERDICT_NOTHING_TO_RESTORE:
		return GS_HV_CLEAN;
	case GS_VERDICT_DRY_RUN:
		return GS_HV_DRY_RUN;
	default:
		if (!why->len) {
			const char *sum = json_string_value(json_object_get(doc, GS_JK_SUMMARY));
			char *safe;

			/* the line starts with the verdict already */
			if (sum && !strncmp(sum, "refused: ", 9))
				sum += 9;
			safe = sum ? gs_text_dup(sum, strlen(sum), GS_LINE_BYTES) : NULL;
			if (safe)
				gs_strbuf_addf(why, "%s", safe);
			free(safe);
		}
		return GS_HV_NOT_CLEAN;
	}
}

/* A document of an early failure (docs/json.md): gpuslate ran on the host
 * and stopped before it had anything to judge (a usage error, the lock of
 * another reclaim, no driver, NVML failing or hung during discovery). The
 * host failed, for the reason the document gives: "refused (exit 5):
 * another gpuslate reclaim still holds the lock after 60 s". */
static int judge_early_failure(struct gs_host_result *r, json_t *doc, json_t *err)
{
	const char *v = json_string_value(json_object_get(doc, GS_JK_VERDICT));
	char *why = gs_text_dup(json_string_value(err), json_string_length(err), GS_LINE_BYTES);
	char *word = v ? gs_text_dup(v, strlen(v), 20) : NULL;

	for (char *p = word; p && *p; p++)
		if (*p == '-')
			*p = ' ';
	r->failure = GS_HF_REMOTE_ERROR;
	r->error = why ? xasprintf("%s (exit %d): %s", word && *word ? word : "gpuslate failed", r->exit_code, why)
		       : NULL;
	free(why);
	free(word);
	return r->error ? 0 : -ENOMEM;
}

/* What a reclaim stopped on the host, for its line: ", stopped 2 processes
 * (vllm, python3)". A host where something was stopped must not fold with
 * the idle ones into one "clean, 0 MiB". Names repeat once; "" when the
 * host stopped nothing (or is a dry run). */
static void stopped_words(json_t *doc, struct gs_strbuf *b)
{
	static const char *const stopped[] = { "exited-after-term", "killed", "stopped-with-unit" };
	json_t *procs = json_object_get(doc, GS_JK_PROCESSES), *x;
	const char *names[6] = { NULL };
	size_t n = 0, shown = 0, i;
	bool more = false;

	json_array_foreach(procs, i, x) {
		const char *o = json_string_value(json_object_get(x, "outcome"));
		const char *c = json_string_value(json_object_get(x, GS_JK_COMM));
		bool was = false, seen = false;

		for (size_t k = 0; o && k < GS_ARRAY_SIZE(stopped); k++)
			was = was || !strcmp(o, stopped[k]);
		if (!was)
			continue;
		n++;
		for (size_t k = 0; c && k < shown; k++)
			seen = seen || !strcmp(names[k], c);
		if (!c || seen)
			continue;
		if (shown < GS_ARRAY_SIZE(names))
			names[shown++] = c;
		else
			more = true;
	}
	if (!n)
		return;
	gs_strbuf_addf(b, ", stopped %zu process%s (", n, n == 1 ? "" : "es");
	for (size_t k = 0; k < shown; k++) {
		char *safe = gs_text_dup(names[k], strlen(names[k]), 64);

		gs_strbuf_addf(b, "%s%s", k ? ", " : "", safe ? safe : "?");
		free(safe);
	}
	gs_strbuf_addf(b, "%s)", more ? ", ..." : "");
}

static int judge_document(struct gs_host_result *r, json_t *doc, const struct gs_merge_opts *m)
{
	const char *cmd = json_string_value(json_object_get(doc, GS_JK_COMMAND));
	const char *verdict;
	struct gs_strbuf why = { 0 };
	char mem[48], vword[32];
	bool known;
	long long mib;
	size_t ngpus = json_array_size(json_object_get(doc, GS_JK_GPUS));

	if (json_is_string(json_object_get(doc, GS_JK_ERROR)))
		return judge_early_failure(r, doc, json_object_get(doc, GS_JK_ERROR));
	if (!cmd || !m->command || strcmp(cmd, m->command)) {
		/* the remote's word is quoted sanitized, as all remote text */
		char *safe = cmd ? gs_text_dup(cmd, strlen(cmd), 20) : NULL;

		r->failure = GS_HF_BAD_OUTPUT;
		r->error = xasprintf("bad output: a '%s' document where '%s' was asked for", safe ? safe : "?",
				     m->command ? m->command : "?");
		free(safe);
		return r->error ? 0 : -ENOMEM;
	}
	if (!strcmp(cmd, "restore")) {
		/* No GPUs: the line is the verdict and what became of each record. */
		r->verdict = judge_restore(doc, &why);
		if (r->verdict == GS_HV_FAILED) {
			free(why.p);
			r->failure = GS_HF_BAD_OUTPUT;
			r->error = strdup("bad output: a document without a verdict");
			return r->error ? 0 : -ENOMEM;
		}
		verdict = json_string_value(json_object_get(doc, GS_JK_VERDICT));
		snprintf(vword, sizeof(vword), "%s", verdict);
		for (char *p = vword; *p; p++)
			if (*p == '-')
				*p = ' ';
			else if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				*p = '?';
		{
			char *safe = why.p ? gs_text_dup(why.p, why.len, 4 * GS_LINE_BYTES) : NULL;

			r->line = xasprintf("%s%s%s", vword, safe && *safe ? ": " : "", safe && *safe ? safe : "");
			free(safe);
		}
		free(why.p);
		return r->line ? 0 : -ENOMEM;
	}
	if (!strcmp(cmd, "status")) {
		r->verdict = judge_status(doc, r->exit_code, m->tolerance_mib, &why);
		r->status_busy = r->verdict == GS_HV_NOT_CLEAN && r->exit_code == GS_EXIT_CLEAN;
		sum_mib(json_object_get(doc, GS_JK_GPUS), GS_JK_MEMORY_USED_MIB, NULL, &known, &mib);
		verdict = r->exit_code == GS_EXIT_DRIVER ? "driver failure" : NULL;
	} else {
		r->verdict = judge_reclaim(doc, &why);
		sum_mib(json_object_get(doc, GS_JK_GPUS), GS_JK_MEMORY_AFTER_MIB, GS_JK_MEMORY_BEFORE_MIB, &known, &mib);
		verdict = json_string_value(json_object_get(doc, GS_JK_VERDICT));
	}
	if (r->verdict == GS_HV_FAILED) {
		free(why.p);
		r->failure = GS_HF_BAD_OUTPUT;
		r->error = strdup("bad output: a document without a verdict");
		return r->error ? 0 : -ENOMEM;
	}
	if (!verdict)
		verdict = verdict_str(r->verdict);
	snprintf(vword, sizeof(vword), "%s", verdict);
	for (char *p = vword; *p; p++)
		if (*p == '-')
			*p = ' ';
		else if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?'; /* the remote's verdict word: never raw to a terminal */
	if (known)
		snprintf(mem, sizeof(mem), "%lld MiB", mib);
	else
		snprintf(mem, sizeof(mem), "memory unknown");
	{
		char *safe = why.p ? gs_text_dup(why.p, why.len, 4 * GS_LINE_BYTES) : NULL;
		struct gs_strbuf st = { 0 };

		if (strcmp(cmd, "status"))
			stopped_words(doc, &st);
		r->line = xasprintf("%s, %zu GPU%s, %s%s%s%s", vword, ngpus, ngpus == 1 ? "" : "s", mem,
				    st.p ? st.p : "", safe && *safe ? ": " : "", safe && *safe ? safe : "");
		free(safe);
		free(st.p);
	}
	free(why.p);
	return r->line ? 0 : -ENOMEM;
}

static int classify_failure(struct gs_host_result *r, const struct gs_run_output *o, const struct gs_merge_opts *m)
{
	char *line = last_line(o->err ? o->err : "", o->err_len);
	const char *e = o->err;
	int code = o->exit_code;

	if (!line)
		return -ENOMEM;
	if (code == 255 && (has(e, "Permission denied") || has(e, "Host key verification failed") ||
			    has(e, "Too many authentication failures") || has(e, "No more authentication methods") ||
			    has(e, "REMOTE HOST IDENTIFICATION HAS CHANGED"))) {
		r->failure = GS_HF_AUTH;
		r->error = xasprintf("authentication refused: %s", line);
	} else if (code == 255 && (has(e, "Connection refused") || has(e, "No route to host") || has(e, "timed out") ||
				   has(e, "Could not resolve") || has(e, "Name or service not known") ||
				   has(e, "Network is unreachable") || has(e, "Connection closed") ||
				   has(e, "Connection reset") || has(e, "kex_exchange_identification"))) {
		r->failure = GS_HF_UNREACHABLE;
		r->error = xasprintf("unreachable: %s", line);
	} else if (code == GS_EXIT_USAGE && has(e, "unknown option '--remote'")) {
		r->failure = GS_HF_TOO_OLD;
		r->error = strdup("gpuslate on the host is too old (no --remote mode): install this version there");
	} else if (code == 127 || (o->out_len == 0 && !gs_startswith(line, "gpuslate: ") &&
				   (has(e, "not found") || has(e, "No such file or directory")))) {
		/* "sh: gpuslate: not found", not gpuslate's own error about a
		 * missing file (that one starts with "gpuslate: "). */
		r->failure = GS_HF_MISSING;
		r->error = xasprintf("gpuslate missing on the host: %s", *line ? line : "command not found");
	} else if (code == 255 && o->out_len == 0) {
		r->failure = GS_HF_UNREACHABLE;
		r->error = xasprintf("unreachable: %s", *line ? line : "ssh failed (exit 255)");
	} else if (o->out_len == 0) {
		r->failure = GS_HF_REMOTE_ERROR;
		r->error = xasprintf("gpuslate failed (exit %d)%s%s", code, *line ? ": " : "", line);
	} else {
		char *first = gs_text_dup(o->out, o->out_len, GS_QUOTE_BYTES);

		r->failure = GS_HF_BAD_OUTPUT;
		r->error = first ? xasprintf("bad output (exit %d, %zu bytes%s), starting \"%s\"", code, o->out_len,
					     o->out_truncated ? ", cut" : "", first)
				 : NULL;
		free(first);
	}
	(void)m;
	free(line);
	return r->error ? 0 : -ENOMEM;
}

int gs_host_result_make(struct gs_host_result *r, const char *host, const struct gs_run_output *o,
			const struct gs_merge_opts *m)
{
	json_t *doc, *sv;
	json_error_t jerr;

	memset(r, 0, sizeof(*r));
	r->host = host;
	r->exit_code = o->exit_code;
	r->elapsed_ms = o->elapsed_ms;
	r->verdict = GS_HV_FAILED;
	if (o->err_len) {
		r->stderr_text = gs_text_dup(o->err, o->err_len, GS_STDERR_BYTES);
		if (!r->stderr_text)
			return -ENOMEM;
		r->stderr_json = stderr_json(o->err, o->err_len);
		if (!r->stderr_json)
			return -ENOMEM;
	}
	switch (o->state) {
	case GS_RUN_NOT_STARTED:
		r->failure = GS_HF_NOT_STARTED;
		r->error = strdup("not started: interrupted");
		return r->error ? 0 : -ENOMEM;
	case GS_RUN_SPAWN_FAILED:
		r->failure = GS_HF_LOCAL_ERROR;
		r->error = xasprintf("cannot run the transport command: %s", strerror(o->spawn_errno));
		return r->error ? 0 : -ENOMEM;
	case GS_RUN_TIMED_OUT:
		r->failure = GS_HF_TIMED_OUT;
		r->error = xasprintf("timed out after %.1f s; the remote command was ended", m->deadline_ms / 1000.0);
		return r->error ? 0 : -ENOMEM;
	case GS_RUN_INTERRUPTED:
		r->failure = GS_HF_INTERRUPTED;
		r->error = strdup("interrupted; the remote command was ended");
		return r->error ? 0 : -ENOMEM;
	case GS_RUN_EXITED:
		break;
	}

	doc = o->out_len && !o->out_truncated ? json_loadb(o->out, o->out_len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	if (!json_is_object(doc)) {
		json_decref(doc);
		return classify_failure(r, o, m);
	}
	sv = json_object_get(doc, GS_JK_SCHEMA_VERSION);
	if (!json_is_integer(sv)) {
		json_decref(doc);
		return classify_failure(r, o, m);
	}
	if (json_integer_value(sv) != GS_FLEET_SCHEMA_VERSION) {
		r->failure = GS_HF_SCHEMA;
		r->error = xasprintf("gpuslate on %s speaks schema %lld; this gpuslate understands %d", host,
				     (long long)json_integer_value(sv), GS_FLEET_SCHEMA_VERSION);
		json_decref(doc);
		return r->error ? 0 : -ENOMEM;
	}
	r->report = doc;
	{
		int ret = judge_document(r, doc, m);

		if (r->failure) {
			json_decref(r->report);
			r->report = NULL;
		}
		return ret;
	}
}

void gs_host_result_free(struct gs_host_result *r)
{
	free(r->error);
	free(r->line);
	free(r->stderr_text);
	json_decref(r->stderr_json);
	r->stderr_json = NULL;
	json_decref(r->report);
	r->error = r->line = r->stderr_text = NULL;
	r->report = NULL;
}

void gs_fleet_summarize(const struct gs_host_result *r, size_t n, struct gs_fleet_summary *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->hosts = n;
	for (size_t i = 0; i < n; i++) {
		switch (r[i].verdict) {
		case GS_HV_CLEAN: ret->clean++; break;
		case GS_HV_NOT_CLEAN:
			ret->not_clean++;
			ret->busy += r[i].status_busy;
			break;
		case GS_HV_DRY_RUN: ret->dry_run++; break;
		case GS_HV_SELECTION_GONE: ret->selection_gone++; break;
		case GS_HV_NO_MATCH: ret->no_match++; break;
		case GS_HV_FAILED: ret->failed++; break;
		}
	}
}

int gs_fleet_exit_status(const struct gs_fleet_summary *s)
{
	if (s->failed)
		return GS_EXIT_HOSTS;
	if (s->not_clean > s->busy)
		return GS_EXIT_NOT_CLEAN;
	if (s->selection_gone)
		return GS_EXIT_SELECTION_GONE;
	/* A unit or user on some hosts only: nothing there is no failure,
	 * as long as the selection matched somewhere. */
	if (s->no_match && !s->clean && !s->dry_run)
		return GS_EXIT_NO_MATCH;
	return GS_EXIT_CLEAN;
}

int gs_fleet_exit_for(const char *command, const struct gs_fleet_summary *s)
{
	int rc = gs_fleet_exit_status(s);

	if (rc == GS_EXIT_NOT_CLEAN && command && !strcmp(command, "restore"))
		return GS_EXIT_NOT_RESTORED;
	return rc;
}

/* The folded results and the failures, into f. */
static int render_results(FILE *f, const struct gs_host_result *r, size_t n)
{
	bool *shown = calloc(n ? n : 1, sizeof(*shown));
	char **names = calloc(n ? n : 1, sizeof(*names));
	int rc = 0;

	if (!shown || !names) {
		free(shown);
		free(names);
		return -ENOMEM;
	}
	/* Results, identical lines folded into one host range, in the order
	 * of each group's first host. */
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		char *folded = NULL;

		if (shown[i] || r[i].verdict == GS_HV_FAILED)
			continue;
		for (size_t j = i; j < n; j++)
			if (!shown[j] && r[j].verdict == r[i].verdict && r[j].line && r[i].line &&
			    !strcmp(r[j].line, r[i].line)) {
				shown[j] = true;
				names[k++] = (char *)r[j].host;
			}
		if (gs_hostlist_fold(names, k, &folded) < 0) {
			rc = -ENOMEM;
			break;
		}
		fprintf(f, "%s: %s\n", folded, r[i].line);
		free(folded);
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		if (r[i].verdict == GS_HV_FAILED)
			fprintf(f, "%s: %s\n", r[i].host, r[i].error ? r[i].error : "failed");
	free(shown);
	free(names);
	return rc;
}

int gs_fleet_render_lines(const struct gs_host_result *r, size_t n, char **ret)
{
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	int rc;

	if (!f)
		return -ENOMEM;
	rc = render_results(f, r, n);
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(text);
		return rc;
	}
	*ret = text;
	return 0;
}

/* One remote string, escaped, never cut. */
static char *remote_text(json_t *v, const char *none)
{
	const char *s = json_string_value(v);

	if (!s)
		s = none;
	return gs_text_dup(s, strlen(s), strlen(s));
}

/* Each host's targets, every one on its own line with its command line in
 * full and how it is to be stopped: what the question asks about, and
 * exactly the list the host is then held to (gs_host_result_expect). */
static int render_plan_targets(FILE *f, const struct gs_host_result *r)
{
	json_t *targets = json_object_get(json_object_get(r->report, GS_JK_PLAN), GS_JK_TARGETS), *t;
	size_t i, aw = 6, uw = 4;

	json_array_foreach(targets, i, t) {
		const char *a = json_string_value(json_object_get(t, "action_text"));
		const char *u = json_string_value(json_object_get(t, "user"));

		if (!a)
			a = json_string_value(json_object_get(t, "action"));
		if (a && strlen(a) > aw)
			aw = strlen(a) < 60 ? strlen(a) : 60;
		if (u && strlen(u) > uw)
			uw = strlen(u) < 32 ? strlen(u) : 32;
	}
	fprintf(f, "%s: %7s %-*s %-*s %s\n", r->host, "PID", (int)uw, "USER", (int)aw, "ACTION", "COMMAND");
	json_array_foreach(targets, i, t) {
		json_t *a = json_object_get(t, "action_text");
		json_t *c = json_object_get(t, GS_JK_COMMAND);
		char *act = remote_text(json_is_string(a) ? a : json_object_get(t, "action"), "?");
		char *user = remote_text(json_object_get(t, "user"), "-");
		char *cmd = remote_text(json_is_string(c) ? c : json_object_get(t, GS_JK_COMM), "?");

		if (!act || !user || !cmd) {
			free(act);
			free(user);
			free(cmd);
			return -ENOMEM;
		}
		fprintf(f, "%s: %7lld %-*s %-*s %s\n", r->host, (long long)json_integer_value(json_object_get(t, GS_JK_PID)),
			(int)uw, user, (int)aw, act, cmd);
		free(act);
		free(user);
		free(cmd);
	}
	return 0;
}

int gs_fleet_render_plans(const struct gs_host_result *r, size_t n, char **ret)
{
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	int rc = 0;
	bool any = false;

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_t *targets;

		/* The hosts gs_host_result_expect holds to a list: all of
		 * their targets are shown. */
		if (r[i].verdict == GS_HV_FAILED || !r[i].report)
			continue;
		targets = json_object_get(json_object_get(r[i].report, GS_JK_PLAN), GS_JK_TARGETS);
		if (!json_array_size(targets))
			continue;
		if (!any)
			fprintf(f, "Will stop:\n");
		any = true;
		rc = render_plan_targets(f, &r[i]);
	}
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(text);
		return rc;
	}
	*ret = text;
	return 0;
}

int gs_fleet_render_text(const char *command, const struct gs_host_result *r, size_t n, bool interrupted,
			 char **ret)
{
	bool restore = command && !strcmp(command, "restore");
	struct gs_fleet_summary sum;
	char *text = NULL;
	size_t tlen = 0;
	FILE *f;
	int rc = 0;

	f = open_memstream(&text, &tlen);
	if (!f)
		return -ENOMEM;
	rc = render_results(f, r, n);
	gs_fleet_summarize(r, n, &sum);
	/* A restore's hosts are restored or not: "clean" would say
	 * something about their GPUs that nobody checked. */
	fprintf(f, "%zu host%s: %zu %s, %zu %s, %zu failed", sum.hosts, sum.hosts == 1 ? "" : "s", sum.clean,
		restore ? "restored" : "clean", sum.not_clean, restore ? "not restored" : "not clean", sum.failed);
	if (sum.dry_run)
		fprintf(f, ", %zu dry run", sum.dry_run);
	if (sum.selection_gone)
		fprintf(f, ", %zu selection gone", sum.selection_gone);
	if (sum.no_match)
		fprintf(f, ", %zu no match", sum.no_match);
	if (interrupted)
		fprintf(f, " (interrupted)");
	fputc('\n', f);
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(text);
		return rc;
	}
	*ret = text;
	return 0;
}

int gs_fleet_render_prefixed(const struct gs_host_result *r, size_t n, char **ret)
{
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	int rc = 0;

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_t *out = r[i].report ? json_object_get(r[i].report, GS_JK_OUTPUT) : NULL;
		const char *p = json_string_value(out);
		size_t left = json_string_length(out);

		while (p && left) {
			const char *nl = memchr(p, '\n', left);
			size_t ll = nl ? (size_t)(nl - p) : left;
			/* Remote text: control bytes never reach the terminal raw. */
			char *safe = gs_text_dup(p, ll, ll);

			if (!safe) {
				rc = -ENOMEM;
				break;
			}
			fprintf(f, "%s: %s\n", r[i].host, safe);
			free(safe);
			p += ll + (nl ? 1 : 0);
			left -= ll + (nl ? 1 : 0);
		}
	}
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(text);
		return rc;
	}
	*ret = text;
	return 0;
}

json_t *gs_fleet_json(const struct gs_host_result *r, size_t n, const char *command, bool interrupted)
{
	json_t *j = json_object(), *hosts = json_array(), *sj = json_object();
	struct gs_fleet_summary sum;

	json_object_set_new(j, GS_JK_SCHEMA_VERSION, json_integer(GS_FLEET_SCHEMA_VERSION));
	json_object_set_new(j, "tool", json_string("gpuslate"));
	json_object_set_new(j, "version", json_string(GS_VERSION));
	json_object_set_new(j, GS_JK_COMMAND, json_string(command));
	json_object_set_new(j, "interrupted", json_boolean(interrupted));
	for (size_t i = 0; i < n; i++) {
		json_t *h = json_object();
		const char *fs = gs_host_failure_str(r[i].failure);

		json_object_set_new(h, "host", json_string(r[i].host));
		json_object_set_new(h, "ok", json_boolean(r[i].verdict != GS_HV_FAILED));
		json_object_set_new(h, GS_JK_VERDICT, json_string(verdict_str(r[i].verdict)));
		json_object_set_new(h, "failure", fs ? json_string(fs) : json_null());
		json_object_set_new(h, "error", r[i].error ? json_string(r[i].error) : json_null());
		json_object_set_new(h, GS_JK_SUMMARY, r[i].line ? json_string(r[i].line) : json_null());
		json_object_set_new(h, GS_JK_EXIT_STATUS, r[i].exit_code >= 0 ? json_integer(r[i].exit_code) : json_null());
		json_object_set_new(h, "elapsed_s", json_real(r[i].elapsed_ms / 1000.0));
		json_object_set(h, "stderr", r[i].stderr_json ? r[i].stderr_json : json_null());
		json_object_set(h, "report", r[i].report ? r[i].report : json_null());
		json_array_append_new(hosts, h);
	}
	json_object_set_new(j, "hosts", hosts);
	gs_fleet_summarize(r, n, &sum);
	json_object_set_new(sj, "hosts", json_integer((json_int_t)sum.hosts));
	json_object_set_new(sj, "clean", json_integer((json_int_t)sum.clean));
	json_object_set_new(sj, "not_clean", json_integer((json_int_t)sum.not_clean));
	json_object_set_new(sj, "dry_run", json_integer((json_int_t)sum.dry_run));
	json_object_set_new(sj, "failed", json_integer((json_int_t)sum.failed));
	json_object_set_new(sj, "selection_gone", json_integer((json_int_t)sum.selection_gone));
	json_object_set_new(sj, "no_match", json_integer((json_int_t)sum.no_match));
	json_object_set_new(sj, "busy", json_integer((json_int_t)sum.busy));
	json_object_set_new(j, GS_JK_SUMMARY, sj);
	json_object_set_new(j, GS_JK_EXIT_STATUS, json_integer(gs_fleet_exit_for(command, &sum)));
	return j;
}

int gs_host_result_expect(const struct gs_host_result *r, char **ret)
{
	json_t *targets = r->report ? json_object_get(json_object_get(r->report, GS_JK_PLAN), GS_JK_TARGETS) : NULL;
	struct gs_expect_item *items;
	size_t n = json_array_size(targets), i;
	json_t *t;
	int rc;

	if (!r->report || r->verdict == GS_HV_FAILED)
		return -ENODATA;
	if (targets && !json_is_array(targets))
		return -EPROTO;
	_Static_assert(GS_EXPECT_MAX * (GS_EXPECT_ITEM_MAX + 1) + sizeof("--expect=") <= GS_REMOTE_WORD_MAX,
		       "an --expect list of GS_EXPECT_MAX items fits one remote word");
	if (n > GS_EXPECT_MAX)
		return -E2BIG;
	items = calloc(n ? n : 1, sizeof(*items));
	if (!items)
		return -ENOMEM;
	json_array_foreach(targets, i, t) {
		json_t *pid = json_object_get(t, GS_JK_PID), *st = json_object_get(t, GS_JK_START_TIME);

		/* A host without start times (an older gpuslate) cannot be
		 * held to its plan: it is not asked to act. */
		if (!json_is_integer(pid) || !json_is_integer(st) || json_integer_value(pid) < 1 ||
		    json_integer_value(pid) > GS_EXPECT_PID_MAX || json_integer_value(st) < 0) {
			free(items);
			return -EPROTO;
		}
		items[i].pid = (pid_t)json_integer_value(pid);
		items[i].starttime = (uint64_t)json_integer_value(st);
		/* And how it was shown to be stopped: the host stops nothing
		 * if that changed. A word this gpuslate does not know fails
		 * the format (-EINVAL): not asked to act. */
		{
			const char *a = json_string_value(json_object_get(t, "action"));

			if (!a || strlen(a) >= sizeof(items[i].action)) {
				free(items);
				return -EPROTO;
			}
			memcpy(items[i].action, a, strlen(a) + 1);
		}
	}
	rc = gs_expect_format(items, n, ret);
	free(items);
	return rc;
}

/* The per-host command of a fleet run; see remote.h for the shapes. */
#include "fleet/remote.h"
#include "core/options.h"
#include "util/sanitize.h"
#include "util/strv.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int word_ok(const char *w)
{
	if (strlen(w) > GS_REMOTE_WORD_MAX)
		return -EINVAL;
	if (strpbrk(w, "\n\r"))
		return -EINVAL;
	return 0;
}

int gs_sh_quote(const char *word, char **ret)
{
	size_t len = 2, o = 0;
	char *q;

	if (word_ok(word) < 0)
		return -EINVAL;
	for (const char *p = word; *p; p++)
		len += *p == '\'' ? 4 : 1;
	q = malloc(len + 1);
	if (!q)
		return -ENOMEM;
	q[o++] = '\'';
	for (const char *p = word; *p; p++) {
		if (*p == '\'') {
			/* close the quote, an escaped quote, open again */
			memcpy(q + o, "'\\''", 4);
			o += 4;
		} else {
			q[o++] = *p;
		}
	}
	q[o++] = '\'';
	q[o] = '\0';
	*ret = q;
	return 0;
}

int gs_sh_join(char *const *words, char **ret)
{
	char *out = NULL;
	size_t len = 0;

	for (size_t i = 0; words[i]; i++) {
		char *q, *n;
		size_t ql;
		int r = gs_sh_quote(words[i], &q);

		if (r < 0) {
			free(out);
			return r;
		}
		ql = strlen(q);
		n = realloc(out, len + ql + 2);
		if (!n) {
			free(q);
			free(out);
			return -ENOMEM;
		}
		out = n;
		if (len)
			out[len++] = ' ';
		memcpy(out + len, q, ql + 1);
		len += ql;
		free(q);
	}
	if (!out && !(out = strdup("")))
		return -ENOMEM;
	*ret = out;
	return 0;
}

/* Milliseconds as the seconds gs_parse_seconds reads back exactly. */
static int add_secs(struct gs_strv *s, const char *opt, uint64_t ms)
{
	int r = gs_strv_add(s, opt);

	if (r < 0)
		return r;
	if (ms % 1000)
		return gs_strv_addf(s, "%llu.%03llu", (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000));
	return gs_strv_addf(s, "%llu", (unsigned long long)(ms / 1000));
}

/* "--opt=value" keeps an option and its value in one word, so a value that
 * starts with '-' can never be read as another option on the far side. */
static int add_opt(struct gs_strv *s, const char *opt, const char *val)
{
	return gs_strv_addf(s, "%s=%s", opt, val);
}

/* One option of the table as the far side must read it. */
static int add_forwarded(struct gs_strv *s, const struct gs_option *o, const struct gs_request *req)
{
	const char *base = (const char *)req;
	char opt[48];

	snprintf(opt, sizeof(opt), "--%s", o->name);
	if (o->forward == GS_FWD_SPECIAL) {
		switch (o->key) {
		case 'y':
			/* The operator confirmed on this side (or gave -y); the
			 * far side has no terminal to ask on. */
			return req->dry_run ? 0 : gs_strv_add(s, opt);
		case 'v':
			/* The text forms travel inside the JSON document
			 * ("output"); the controller prefixes each line. */
			return req->verbose && !req->json ? gs_strv_add(s, opt) : 0;
		default:
			return -EINVAL;
		}
	}
	switch (o->type) {
	case GS_OT_FLAG:
	case GS_OT_REMOTE:
		return *(const bool *)(base + o->off) ? gs_strv_add(s, opt) : 0;
	case GS_OT_CSV:
		if (!*(const bool *)(base + o->off))
			return 0;
		return req->csv_processes ? add_opt(s, opt, "processes") : gs_strv_add(s, opt);
	case GS_OT_STRING:
	case GS_OT_GPUS:
	case GS_OT_FORMAT: {
		const char *v = *(const char *const *)(base + o->off);

		return v ? add_opt(s, opt, v) : 0;
	}
	case GS_OT_LIST: {
		const char *const *v = (const char *const *)(base + o->off);
		size_t n = *(const size_t *)(base + o->count_off);
		int r = 0;

		for (size_t i = 0; !r && i < n; i++)
			r = add_opt(s, opt, v[i]);
		return r;
	}
	case GS_OT_MS: {
		uint64_t ms = *(const uint64_t *)(base + o->off);

		return ms || o->forward == GS_FWD_ALWAYS ? add_secs(s, opt, ms) : 0;
	}
	case GS_OT_MS_SHORT: {
		unsigned ms = *(const unsigned *)(base + o->off);

		return ms || o->forward == GS_FWD_ALWAYS ? add_secs(s, opt, ms) : 0;
	}
	case GS_OT_MIB:
		return gs_strv_addf(s, "%s=%llu", opt, (unsigned long long)*(const uint64_t *)(base + o->off));
	case GS_OT_FANOUT:
	case GS_OT_HELP:
	case GS_OT_VERSION:
		break;
	}
	return -EINVAL;
}

int gs_remote_tail(const struct gs_request *req, char ***ret, char *err, size_t errlen)
{
	struct gs_strv s = { 0 };
	int r = 0;

	if (req->cmd != GS_CMD_STATUS && req->cmd != GS_CMD_RECLAIM && req->cmd != GS_CMD_WAIT &&
	    req->cmd != GS_CMD_RESTORE) {
		gs_seterr(err, errlen, "no fleet command");
		return -EINVAL;
	}
	r = gs_strv_add(&s, "--remote");
	/* The option table says what travels (core/options.c): what selects,
	 * acts and times, for the commands that take it, never the local
	 * ones (-w, --ssh, --dev-root). */
	for (const struct gs_option *o = gs_options; !r && o->name; o++)
		if (o->forward != GS_FWD_NO && gs_option_valid_for(o, req->cmd))
			r = add_forwarded(&s, o, req);
	if (!r)
		r = gs_strv_add(&s, req->cmd_name);
	if (r < 0) {
		gs_strv_release(&s);
		gs_seterr(err, errlen, "out of memory");
		return r;
	}
	for (size_t i = 0; i < s.n; i++)
		if (word_ok(s.v[i]) < 0) {
		{
			/* The refused word is shown escaped: the line break that
			 * got it refused must not reach the terminal raw. */
			char *shown = gs_text_dup(s.v[i], strlen(s.v[i]), 40);

			gs_seterr(err, errlen, "cannot pass '%s' to the remote hosts: %s", shown ? shown : "?",
			       strlen(s.v[i]) > GS_REMOTE_WORD_MAX ? "too long" : "it contains a line break");
			free(shown);
			gs_strv_release(&s);
			return -EINVAL;
		}
		}
	*ret = gs_strv_take(&s);
	return *ret ? 0 : -ENOMEM;
}

static int split_or_default(const char *s, const char *def, char ***ret, size_t *n)
{
	return gs_inventory_split_words(s && *s ? s : def, ret, n);
}

int gs_remote_ctx_init(struct gs_remote_ctx *ctx, const struct gs_request *req, const struct gs_inventory *inv,
		       char *err, size_t errlen)
{
	size_t n = 0;
	int r;

	memset(ctx, 0, sizeof(*ctx));
	ctx->inv = inv;
	ctx->connect_timeout_ms = req->connect_timeout_ms;
	r = split_or_default(req->ssh_cmd, "ssh", &ctx->ssh, &n);
	if (r < 0 || n == 0) {
		gs_seterr(err, errlen, "invalid ssh command '%s'%s", req->ssh_cmd ? req->ssh_cmd : "",
		       r == -EINVAL ? ": unterminated quote" : ": empty");
		r = r < 0 ? r : -EINVAL;
		goto fail;
	}
	r = split_or_default(req->remote_cmd, "gpuslate", &ctx->remote_cmd, &n);
	if (r < 0 || n == 0) {
		gs_seterr(err, errlen, "invalid --remote-cmd '%s'%s", req->remote_cmd ? req->remote_cmd : "",
		       r == -EINVAL ? ": unterminated quote" : ": empty");
		r = r < 0 ? r : -EINVAL;
		goto fail;
	}
	r = gs_remote_tail(req, &ctx->tail, err, errlen);
	if (r < 0)
		goto fail;
	return 0;
fail:
	gs_remote_ctx_free(ctx);
	return r;
}

void gs_remote_ctx_free(struct gs_remote_ctx *ctx)
{
	gs_strv_free(ctx->ssh);
	gs_strv_free(ctx->remote_cmd);
	gs_strv_free(ctx->tail);
	ctx->ssh = ctx->remote_cmd = ctx->tail = NULL;
}

/* The words that run on the target itself: container entry, then the
 * remote command and its options. */
static int inner_words(const struct gs_remote_ctx *ctx, const struct gs_host_entry *e, char *const *extra,
		       struct gs_strv *in)
{
	int r = 0;

	if (e && e->transport == GS_TRANSPORT_PCT) {
		r = gs_strv_add(in, "pct");
		if (!r)
			r = gs_strv_add(in, "exec");
		if (!r)
			r = gs_strv_addf(in, "%u", e->vmid);
		if (!r)
			r = gs_strv_add(in, "--");
	} else if (e && e->transport == GS_TRANSPORT_LXC) {
		r = gs_strv_add(in, "lxc-attach");
		if (!r)
			r = gs_strv_add(in, "-n");
		if (!r)
			r = gs_strv_add(in, e->container);
		if (!r)
			r = gs_strv_add(in, "--");
	} else if (e && e->transport == GS_TRANSPORT_DOCKER) {
		/* -i: the remote gpuslate watches its stdin for the controller
		 * leaving; without it docker gives it an empty stdin. */
		r = gs_strv_add(in, "docker");
		if (!r)
			r = gs_strv_add(in, "exec");
		if (!r)
			r = gs_strv_add(in, "-i");
		if (!r)
			r = gs_strv_add(in, e->container);
	}
	if (!r)
		r = gs_strv_add_all(in, e && e->remote_cmd ? e->remote_cmd : ctx->remote_cmd);
	/* The tail ends with the command word; a host's own options go
	 * before it, with the others. */
	for (size_t i = 0; !r && ctx->tail[i]; i++) {
		if (!ctx->tail[i + 1])
			for (size_t k = 0; !r && extra && extra[k]; k++)
				r = gs_strv_add(in, extra[k]);
		if (!r)
			r = gs_strv_add(in, ctx->tail[i]);
	}
	return r;
}

static uint64_t connect_secs(uint64_t ms)
{
	uint64_t s = (ms + 999) / 1000;

	return s ? s : 1;
}

int gs_remote_argv(const struct gs_remote_ctx *ctx, const char *host, char ***ret, char *err, size_t errlen)
{
	return gs_remote_argv_with(ctx, host, NULL, ret, err, errlen);
}

int gs_remote_argv_with(const struct gs_remote_ctx *ctx, const char *host, char *const *extra, char ***ret,
			char *err, size_t errlen)
{
	const struct gs_host_entry *e = gs_inventory_find(ctx->inv, host);
	struct gs_strv out = { 0 }, in = { 0 };
	const char *at = strchr(host, '@');
	const char *name = at ? at + 1 : host;
	const char *user = NULL, *target;
	char *cmd = NULL, *user_owned = NULL;
	int r;

	for (size_t k = 0; extra && extra[k]; k++)
		if (word_ok(extra[k]) < 0) {
			gs_seterr(err, errlen, "cannot pass an option that long to %s", host);
			return -EINVAL;
		}
	r = inner_words(ctx, e, extra, &in);
	if (r < 0)
		goto oom;

	if (e && e->transport == GS_TRANSPORT_EXEC) {
		/* pdsh's exec module: the template, then the command as words.
		 * Local argv, no shell, so no quoting. */
		r = gs_strv_add_all(&out, e->exec_argv);
		if (!r)
			r = gs_strv_add_all(&out, in.v);
		if (r < 0)
			goto oom;
		gs_strv_release(&in);
		*ret = gs_strv_take(&out);
		return *ret ? 0 : -ENOMEM;
	}

	target = e && e->via ? e->via : name;
	if (at) {
		if (!(user = user_owned = strndup(host, (size_t)(at - host))))
			goto oom;
	} else if (e && e->user) {
		user = e->user;
	}
	r = gs_strv_add_all(&out, ctx->ssh);
	if (!r)
		r = gs_strv_add(&out, "-o");
	if (!r)
		r = gs_strv_add(&out, "BatchMode=yes");
	if (!r)
		r = gs_strv_add(&out, "-o");
	/* ssh wants whole seconds; round up so 0.5 does not become "no limit" (0). */
	if (!r)
		r = gs_strv_addf(&out, "ConnectTimeout=%llu", (unsigned long long)connect_secs(ctx->connect_timeout_ms));
	if (!r && e)
		r = gs_strv_add_all(&out, e->ssh_opts);
	if (!r && e && e->port) {
		r = gs_strv_add(&out, "-p");
		if (!r)
			r = gs_strv_addf(&out, "%u", e->port);
	}
	/* via=user@host names its own user; -l would fight with it. */
	if (!r && user && !strchr(target, '@')) {
		r = gs_strv_add(&out, "-l");
		if (!r)
			r = gs_strv_add(&out, user);
	}
	free(user_owned);
	user_owned = NULL;
	if (!r)
		r = gs_strv_add(&out, target);
	/* After the destination, "--" ends ssh's option parsing (it parses
	 * options again after the host name). */
	if (!r)
		r = gs_strv_add(&out, "--");
	if (r < 0)
		goto oom;
	r = gs_sh_join(in.v, &cmd);
	if (r < 0) {
		gs_seterr(err, errlen, r == -EINVAL ? "cannot quote the remote command for %s" : "out of memory", host);
		gs_strv_release(&in);
		gs_strv_release(&out);
		return r;
	}
	r = gs_strv_add_owned(&out, cmd);
	if (r < 0)
		goto oom;
	gs_strv_release(&in);
	*ret = gs_strv_take(&out);
	return *ret ? 0 : -ENOMEM;
oom:
	free(user_owned);
	gs_strv_release(&in);
	gs_strv_release(&out);
	gs_seterr(err, errlen, "out of memory");
	return -ENOMEM;
}

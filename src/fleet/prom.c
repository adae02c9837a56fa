/* Merging the hosts' Prometheus expositions; see prom.h. */
#include "fleet/prom.h"
#include "core/json_keys.h"
#include "util/strbuf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The line a gpuslate writes for gpuslate_up (src/out/status_out.c), used
 * when only failed hosts report it. */
#define UP_HELP "1 if gpuslate could read the GPUs, 0 if not (no driver, NVML failed)."

struct family {
	char *name;
	char *help;            /* NULL until a host gives it */
	char *type;
	struct gs_strbuf samples;
};

struct merged {
	struct family *f;
	size_t n, cap;
};

static bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/* Length of a metric name at s (0: none). Label names take no ':'. */
static size_t name_len(const char *s, const char *end, bool label)
{
	size_t n = 0;

	if (s >= end || !name_start(*s) || (label && *s == ':'))
		return 0;
	while (s + n < end && name_char(s[n]) && !(label && s[n] == ':'))
		n++;
	return n;
}

static struct family *family_of(struct merged *m, const char *name, size_t len)
{
	for (size_t i = 0; i < m->n; i++)
		if (strlen(m->f[i].name) == len && !memcmp(m->f[i].name, name, len))
			return &m->f[i];
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct family *nf = realloc(m->f, cap * sizeof(*nf));

		if (!nf)
			return NULL;
		m->f = nf;
		m->cap = cap;
	}
	memset(&m->f[m->n], 0, sizeof(m->f[m->n]));
	m->f[m->n].name = strndup(name, len);
	if (!m->f[m->n].name)
		return NULL;
	return &m->f[m->n++];
}

/* A HELP text or TYPE word: printable ASCII only, as it must stay one line. */
static char *text_dup(const char *s, const char *end)
{
	for (const char *p = s; p < end; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			return NULL;
	return strndup(s, (size_t)(end - s));
}

static const char *const types[] = { "counter", "gauge", "histogram", "summary", "untyped" };

/* "# HELP name text" / "# TYPE name type"; other comments are dropped.
 * -EINVAL for a malformed HELP or TYPE line. */
static int take_comment(struct merged *m, const char *s, const char *end)
{
	bool help = end - s > 7 && !memcmp(s, "# HELP ", 7), type = end - s > 7 && !memcmp(s, "# TYPE ", 7);
	size_t nl;
	struct family *f;
	char *text;

	if (!help && !type)
		return 0;
	s += 7;
	nl = name_len(s, end, false);
	if (!nl || s + nl >= end || s[nl] != ' ')
		return -EINVAL;
	text = text_dup(s + nl + 1, end);
	if (!text)
		return -EINVAL;
	if (type) {
		bool known = false;

		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			known = known || !strcmp(text, types[i]);
		if (!known) {
			free(text);
			return -EINVAL;
		}
	}
	f = family_of(m, s, nl);
	if (!f) {
		free(text);
		return -ENOMEM;
	}
	/* The first host's word stands for every host (the same gpuslate
	 * writes the same); a later one is not repeated. */
	if (help && !f->help)
		f->help = text;
	else if (type && !f->type)
		f->type = text;
	else
		free(text);
	return 0;
}

static int add_host_label(struct gs_strbuf *b, const char *host)
{
	int r = gs_strbuf_addf(b, "host=\"");

	for (const char *p = host; !r && *p; p++) {
		if (*p == '\\' || *p == '"')
			r = gs_strbuf_addf(b, "\\%c", *p);
		else if (*p == '\n')
			r = gs_strbuf_addf(b, "\\n");
		else
			r = gs_strbuf_putc(b, *p);
	}
	return r ? r : gs_strbuf_putc(b, '"');
}

/* A value (and optional timestamp): a float as Go's ParseFloat reads it,
 * or +Inf, -Inf, NaN; checked by its characters, the collector parses it. */
static bool value_ok(const char *s, const char *end)
{
	if (s >= end)
		return false;
	for (const char *p = s; p < end; p++)
		if (!((*p >= '0' && *p <= '9') || strchr("+-.eEInfNa ", *p)))
			return false;
	return *s != ' ';
}

/* One sample line, rewritten with the host label first. -EINVAL: not a
 * well-formed sample. */
static int take_sample(struct merged *m, const char *s, const char *end, const char *host)
{
	size_t nl = name_len(s, end, false);
	const char *p = s + nl;
	struct gs_strbuf out = { 0 };
	struct family *f;
	int r;

	if (!nl)
		return -EINVAL;
	r = gs_strbuf_addf(&out, "%.*s{", (int)nl, s);
	if (!r)
		r = add_host_label(&out, host);
	if (!r && p < end && *p == '{') {
		p++;
		while (!r && p < end && *p != '}') {
			size_t ll = name_len(p, end, true);
			const char *v;

			if (!ll || p + ll + 1 >= end || p[ll] != '=' || p[ll + 1] != '"')
				goto bad;
			r = gs_strbuf_addf(&out, ",%s%.*s=\"", ll == 4 && !memcmp(p, "host", 4) ? "exported_" : "",
					   (int)ll, p);
			v = p + ll + 2;
			while (!r && v < end && *v != '"') {
				if (*v == '\\') {
					if (v + 1 >= end || !strchr("\\\"n", v[1]))
						goto bad;
					r = gs_strbuf_addf(&out, "%c%c", v[0], v[1]);
					v += 2;
					continue;
				}
				/* Printable ASCII only: bytes that are not valid
				 * UTF-8 would make the whole exposition unreadable. */
				if ((unsigned char)*v < 0x20 || (unsigned char)*v >= 0x7f)
					goto bad;
				r = gs_strbuf_putc(&out, *v++);
			}
			if (v >= end)
				goto bad;
			if (!r)
				r = gs_strbuf_putc(&out, '"');
			p = v + 1;
			if (p < end && *p == ',')
				p++;
			else if (p >= end || *p != '}')
				goto bad;
		}
		if (p >= end)
			goto bad;
		p++;
	}
	if (r)
		goto fail;
	if (p >= end || *p != ' ' || !value_ok(p + 1, end))
		goto bad;
	r = gs_strbuf_addf(&out, "}%.*s\n", (int)(end - p), p);
	if (r)
		goto fail;
	f = family_of(m, s, nl);
	if (!f) {
		r = -ENOMEM;
		goto fail;
	}
	r = gs_strbuf_addf(&f->samples, "%s", out.p);
	gs_strbuf_release(&out);
	return r;
bad:
	r = -EINVAL;
fail:
	gs_strbuf_release(&out);
	return r;
}

static int take_host(struct merged *m, const char *text, size_t len, const char *host, size_t *dropped)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		int r = 0;

		if (le > p && le[-1] == '\r')
			le--;
		if (le == p)
			r = 0;
		else if (*p == '#')
			r = take_comment(m, p, le);
		else
			r = take_sample(m, p, le, host);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			(*dropped)++;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int gs_fleet_render_prometheus(const struct gs_host_result *r, size_t n, char **ret, size_t *dropped)
{
	struct merged m = { 0 };
	struct gs_strbuf out = { 0 };
	size_t drop = 0;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		json_t *o = r[i].report ? json_object_get(r[i].report, GS_JK_OUTPUT) : NULL;

		if (json_is_string(o)) {
			rc = take_host(&m, json_string_value(o), json_string_length(o), r[i].host, &drop);
		} else if (r[i].verdict == GS_HV_FAILED) {
			/* No exposition from it: down, for the collector's alerts. */
			struct family *f = family_of(&m, "gpuslate_up", strlen("gpuslate_up"));

			if (!f || (!f->help && !(f->help = strdup(UP_HELP))) || (!f->type && !(f->type = strdup("gauge")))) {
				rc = -ENOMEM;
				break;
			}
			rc = gs_strbuf_addf(&f->samples, "gpuslate_up{");
			if (!rc)
				rc = add_host_label(&f->samples, r[i].host);
			if (!rc)
				rc = gs_strbuf_addf(&f->samples, "} 0\n");
		}
	}
	for (size_t i = 0; i < m.n && !rc; i++) {
		if (m.f[i].help)
			rc = gs_strbuf_addf(&out, "# HELP %s %s\n", m.f[i].name, m.f[i].help);
		if (!rc && m.f[i].type)
			rc = gs_strbuf_addf(&out, "# TYPE %s %s\n", m.f[i].name, m.f[i].type);
		if (!rc && m.f[i].samples.p)
			rc = gs_strbuf_addf(&out, "%s", m.f[i].samples.p);
	}
	for (size_t i = 0; i < m.n; i++) {
		free(m.f[i].name);
		free(m.f[i].help);
		free(m.f[i].type);
		gs_strbuf_release(&m.f[i].samples);
	}
	free(m.f);
	if (rc) {
		gs_strbuf_release(&out);
		return rc;
	}
	*ret = out.p ? out.p : strdup("");
	if (!*ret)
		return -ENOMEM;
	if (dropped)
		*dropped = drop;
	return 0;
}

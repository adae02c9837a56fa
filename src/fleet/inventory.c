/* Inventory file parser: groups and per-host transport. Format in
 * inventory.h and docs/inventory.md. */
#include "fleet/inventory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/sanitize.h"
#include "util/util.h"
#include "util/strbuf.h"
#include "util/strv.h"

#define GROUP_NAME_MAX 64
#define CONTAINER_NAME_MAX 128


/* User text in a message: bounded and escaped (util/sanitize.h), because
 * the message is printed on a terminal. */
static const char *show(char *buf, size_t size, const char *s)
{
	return gs_safe(s, buf, size);
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Letters, digits, . - _ ; first character from first_ok. */
static bool name_ok(const char *s, size_t max, bool (*first_ok)(char))
{
	size_t i;

	if (!s[0] || !first_ok(s[0]))
		return false;
	for (i = 0; s[i]; i++)
		if (i >= max || !(is_alnum(s[i]) || s[i] == '.' || s[i] == '-' || s[i] == '_'))
			return false;
	return true;
}

static bool not_dash(char c)
{
	return c != '-';
}

/* ---- string vectors ---- */

/* Read a double-quoted run starting after the opening quote; *pp ends past
 * the closing one. \" and \\ are the only escapes. */
static int read_dquoted(const char **pp, const char *end, struct gs_strbuf *w)
{
	const char *p = *pp;
	int r;

	for (; p < end && *p != '"'; p++) {
		if (*p == '\\' && p + 1 < end && (p[1] == '"' || p[1] == '\\'))
			p++;
		if ((r = gs_strbuf_putc(w, *p)) < 0)
			return r;
	}
	if (p == end)
		return -EINVAL;
	*pp = p + 1;
	return 0;
}

int gs_inventory_split_words(const char *s, char ***ret, size_t *ret_n)
{
	const char *p = s, *end = s + strlen(s);
	char **v = NULL;
	size_t n = 0;
	int r = 0;

	*ret = NULL;
	if (ret_n)
		*ret_n = 0;
	for (;;) {
		struct gs_strbuf w = { 0 };

		while (p < end && (is_blank(*p) || *p == '\n'))
			p++;
		if (p == end)
			break;
		if ((r = gs_strbuf_putc(&w, 'x')) < 0) /* an empty "" is still a word */
			goto fail;
		w.len = 0;
		w.p[0] = '\0';
		while (p < end && !is_blank(*p) && *p != '\n') {
			if (*p == '"') {
				p++;
				r = read_dquoted(&p, end, &w);
			} else {
				r = gs_strbuf_putc(&w, *p++);
			}
			if (r < 0) {
				free(w.p);
				goto fail;
			}
		}
		if ((r = gs_strv_push(&v, &n, w.p)) < 0)
			goto fail;
	}
	if (!v) {
		/* An empty vector is still a vector: callers test n. */
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	*ret = v;
	if (ret_n)
		*ret_n = n;
	return 0;
fail:
	gs_strv_free(v);
	return r;
}

/* Words of one inventory line: like gs_inventory_split_words, plus '...'
 * literal quotes and '#' comments at the start of a word. */
static int line_words(const char *p, const char *end, char ***ret, size_t *ret_n)
{
	char **v = NULL;
	size_t n = 0;
	int r = 0;

	*ret = NULL;
	*ret_n = 0;
	for (;;) {
		struct gs_strbuf w = { 0 };

		while (p < end && is_blank(*p))
			p++;
		if (p == end || *p == '#')
			break;
		if ((r = gs_strbuf_putc(&w, 'x')) < 0)
			goto fail;
		w.len = 0;
		w.p[0] = '\0';
		while (p < end && !is_blank(*p)) {
			if (*p == '"') {
				p++;
				r = read_dquoted(&p, end, &w);
			} else if (*p == '\'') {
				const char *q = memchr(p + 1, '\'', (size_t)(end - p - 1));

				if (!q) {
					r = -EINVAL;
				} else {
					for (p++; p < q && r == 0; p++)
						r = gs_strbuf_putc(&w, *p);
					p = q + 1;
				}
			} else {
				r = gs_strbuf_putc(&w, *p++);
			}
			if (r < 0) {
				free(w.p);
				goto fail;
			}
		}
		if ((r = gs_strv_push(&v, &n, w.p)) < 0)
			goto fail;
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	gs_strv_free(v);
	return r;
}

/* ---- entries and groups ---- */

static void entry_free(struct gs_host_entry *e)
{
	free(e->name);
	free(e->user);
	gs_strv_free(e->ssh_opts);
	free(e->via);
	free(e->container);
	gs_strv_free(e->exec_argv);
	gs_strv_free(e->remote_cmd);
	memset(e, 0, sizeof(*e));
}

void gs_inventory_free(struct gs_inventory *inv)
{
	size_t i;

	if (!inv)
		return;
	for (i = 0; i < inv->n_entries; i++)
		entry_free(&inv->entries[i]);
	free(inv->entries);
	gs_hostlist_free(&inv->all);
	for (i = 0; i < inv->n_groups; i++) {
		free(inv->groups[i].name);
		gs_hostlist_free(&inv->groups[i].members);
	}
	free(inv->groups);
	free(inv->source);
	memset(inv, 0, sizeof(*inv));
}

static struct gs_inventory_group *group_get(const struct gs_inventory *inv, const char *name)
{
	size_t i;

	for (i = 0; i < inv->n_groups; i++)
		if (strcmp(inv->groups[i].name, name) == 0)
			return &inv->groups[i];
	return NULL;
}

const struct gs_hostlist *gs_inventory_group(const struct gs_inventory *inv, const char *name)
{
	const struct gs_inventory_group *g;

	if (!inv)
		return NULL;
	if (strcmp(name, "all") == 0)
		return &inv->all;
	g = group_get(inv, name);
	return g ? &g->members : NULL;
}

const struct gs_host_entry *gs_inventory_find(const struct gs_inventory *inv, const char *host)
{
	const char *at;
	ssize_t i;

	if (!inv || !host)
		return NULL;
	at = strchr(host, '@');
	i = gs_hostlist_index(&inv->all, at ? at + 1 : host);
	return i < 0 ? NULL : &inv->entries[i];
}

struct resolve_ctx {
	const struct gs_inventory *inv;
	const char *current; /* group being defined (file parse), or NULL */
};

static int resolve_group(void *userdata, const char *name, struct gs_hostlist *into, char *err, size_t errlen)
{
	const struct resolve_ctx *c = userdata;
	const struct gs_hostlist *m;
	int r;

	if (c->current && strcmp(c->current, name) == 0) {
		gs_seterr(err, errlen, "group '%s' cannot include itself", name);
		return -EINVAL;
	}
	m = gs_inventory_group(c->inv, name);
	if (!m) {
		if (c->current)
			gs_seterr(err, errlen, "unknown group '@%s' (groups must be defined above their use)", name);
		else
			gs_seterr(err, errlen, "unknown group '@%s' in %s", name, c->inv->source);
		return -EINVAL;
	}
	r = gs_hostlist_merge(into, m);
	if (r == -ENOMEM)
		gs_seterr(err, errlen, "out of memory");
	return r;
}

int gs_inventory_hostlist_append(const struct gs_inventory *inv, struct gs_hostlist *l, const char *expr,
				 char *err, size_t errlen)
{
	struct resolve_ctx c = { .inv = inv, .current = NULL };

	return gs_hostlist_append_ex(l, expr, inv ? resolve_group : NULL, &c, err, errlen);
}

/* ---- one host line's settings ---- */

struct settings {
	char *user;
	uint16_t port;
	char **ssh_opts;
	size_t n_ssh_opts;
	char *via;
	enum gs_transport transport;
	const char *transport_key; /* which key chose it, for messages */
	uint32_t vmid;
	char *container;
	char *exec_tpl;
	char **remote_cmd;
	size_t n_remote_cmd;
	bool any;
};

static void settings_free(struct settings *s)
{
	free(s->user);
	gs_strv_free(s->ssh_opts);
	free(s->via);
	free(s->container);
	free(s->exec_tpl);
	gs_strv_free(s->remote_cmd);
	memset(s, 0, sizeof(*s));
}

/* Check an exec template: only %h and %% are defined. */
static int exec_tpl_check(const char *t, char *why, size_t whylen)
{
	const char *p;

	for (p = t; *p; p++) {
		if (*p != '%')
			continue;
		if (p[1] == 'h' || p[1] == '%') {
			p++;
			continue;
		}
		if (p[1])
			gs_seterr(why, whylen, "unknown '%%%c' in exec= (only %%h and %%%% are defined)", p[1]);
		else
			gs_seterr(why, whylen, "exec= ends in a lone '%%'");
		return -EINVAL;
	}
	return 0;
}

/* Template with %h replaced by host, %% by %, then split into words. The
 * host is a checked name (no blanks or quotes), so substituting before the
 * split cannot change the word boundaries. */
static int exec_expand(const char *tpl, const char *host, char ***ret, size_t *ret_n)
{
	struct gs_strbuf w = { 0 };
	const char *p;
	int r;

	if ((r = gs_strbuf_putc(&w, 'x')) < 0)
		return r;
	w.len = 0;
	w.p[0] = '\0';
	for (p = tpl; *p && r == 0; p++) {
		if (*p == '%' && p[1] == 'h') {
			const char *h;

			for (h = host; *h && r == 0; h++)
				r = gs_strbuf_putc(&w, *h);
			p++;
		} else if (*p == '%' && p[1] == '%') {
			r = gs_strbuf_putc(&w, '%');
			p++;
		} else {
			r = gs_strbuf_putc(&w, *p);
		}
	}
	if (r == 0)
		r = gs_inventory_split_words(w.p, ret, ret_n);
	free(w.p);
	return r;
}

static int set_transport(struct settings *s, enum gs_transport t, const char *key, char *why, size_t whylen)
{
	if (s->transport_key) {
		gs_seterr(why, whylen, "%s= and %s= cannot be combined", s->transport_key, key);
		return -EINVAL;
	}
	s->transport = t;
	s->transport_key = key;
	return 0;
}

static int words_value(const char *key, const char *val, char ***v, size_t *n, char *why, size_t whylen)
{
	char **w = NULL;
	size_t m = 0, i;
	int r = gs_inventory_split_words(val, &w, &m);

	if (r == -EINVAL) {
		gs_seterr(why, whylen, "unterminated quote in %s= value", key);
		return r;
	}
	if (r < 0)
		return r;
	if (m == 0) {
		gs_strv_free(w);
		gs_seterr(why, whylen, "empty value for %s=", key);
		return -EINVAL;
	}
	/* ssh-opt words are appended (the key may repeat). */
	for (i = 0; i < m; i++) {
		r = gs_strv_push(v, n, w[i]);
		w[i] = NULL;
		if (r < 0)
			break;
	}
	for (; i < m; i++)
		free(w[i]);
	free(w);
	return r;
}

static int parse_setting(struct settings *s, const char *word, unsigned *seen, char *why, size_t whylen)
{
	static const char *const keys[] = { "user", "port", "ssh-opt", "via", "pct", "lxc",
					    "docker", "exec", "remote-cmd" };
	const char *eq = strchr(word, '=');
	const char *val;
	char key[16], sb[80];
	size_t klen, k;
	uint32_t u;
	int r;

	if (!eq) {
		gs_seterr(why, whylen, "expected key=value, got '%s' (list several hosts with commas)",
		       show(sb, sizeof(sb), word));
		return -EINVAL;
	}
	klen = (size_t)(eq - word);
	val = eq + 1;
	for (k = 0; k < GS_ARRAY_SIZE(keys); k++)
		if (strlen(keys[k]) == klen && memcmp(keys[k], word, klen) == 0)
			break;
	if (k == GS_ARRAY_SIZE(keys)) {
		char kb[80];
		_cleanup_free_ char *kcopy = strndup(word, klen);

		if (!kcopy)
			return -ENOMEM;
		gs_seterr(why, whylen, "unknown key '%s'", show(kb, sizeof(kb), kcopy));
		return -EINVAL;
	}
	gs_strlcpy(key, keys[k], sizeof(key));
	if ((*seen & (1u << k)) && strcmp(key, "ssh-opt") != 0) {
		gs_seterr(why, whylen, "%s= given twice", key);
		return -EINVAL;
	}
	*seen |= 1u << k;
	if (!*val) {
		gs_seterr(why, whylen, "empty value for %s=", key);
		return -EINVAL;
	}
	s->any = true;

	if (strcmp(key, "user") == 0) {
		if (!name_ok(val, GS_USERNAME_MAX, not_dash)) {
			gs_seterr(why, whylen, "bad user name '%s'", show(sb, sizeof(sb), val));
			return -EINVAL;
		}
		s->user = strdup(val);
		return s->user ? 0 : -ENOMEM;
	}
	if (strcmp(key, "port") == 0) {
		if (gs_parse_u32(val, &u) < 0 || u == 0 || u > 65535) {
			gs_seterr(why, whylen, "bad port '%s' (1-65535)", show(sb, sizeof(sb), val));
			return -EINVAL;
		}
		s->port = (uint16_t)u;
		return 0;
	}
	if (strcmp(key, "ssh-opt") == 0)
		return words_value(key, val, &s->ssh_opts, &s->n_ssh_opts, why, whylen);
	if (strcmp(key, "via") == 0) {
		if (!gs_hostname_valid(val)) {
			gs_seterr(why, whylen, "bad host name '%s' for via=", show(sb, sizeof(sb), val));
			return -EINVAL;
		}
		s->via = strdup(val);
		return s->via ? 0 : -ENOMEM;
	}
	if (strcmp(key, "pct") == 0) {
		/* Proxmox VMIDs are 100..999999999; 1.. is accepted since only
		 * pct itself can judge. */
		if (gs_parse_u32(val, &u) < 0 || u == 0 || u > 999999999) {
			gs_seterr(why, whylen, "bad container id '%s' for pct=", show(sb, sizeof(sb), val));
			return -EINVAL;
		}
		s->vmid = u;
		return set_transport(s, GS_TRANSPORT_PCT, "pct", why, whylen);
	}
	if (strcmp(key, "lxc") == 0 || strcmp(key, "docker") == 0) {
		bool lxc = key[0] == 'l';

		/* Container names as docker and LXC accept them: a letter or
		 * digit, then letters, digits, . - _ */
		if (!name_ok(val, CONTAINER_NAME_MAX, is_alnum)) {
			gs_seterr(why, whylen, "bad container name '%s' for %s=", show(sb, sizeof(sb), val), key);
			return -EINVAL;
		}
		/* Transport first: lxc= and docker= share s->container. */
		r = set_transport(s, lxc ? GS_TRANSPORT_LXC : GS_TRANSPORT_DOCKER, lxc ? "lxc" : "docker", why,
				  whylen);
		if (r < 0)
			return r;
		s->container = strdup(val);
		return s->container ? 0 : -ENOMEM;
	}
	if (strcmp(key, "exec") == 0) {
		char **w = NULL;
		size_t m = 0;

		r = gs_inventory_split_words(val, &w, &m);
		gs_strv_free(w);
		if (r == -EINVAL) {
			gs_seterr(why, whylen, "unterminated quote in exec= value");
			return r;
		}
		if (r < 0)
			return r;
		if (m == 0) {
			gs_seterr(why, whylen, "empty value for exec=");
			return -EINVAL;
		}
		if ((r = exec_tpl_check(val, why, whylen)) < 0)
			return r;
		s->exec_tpl = strdup(val);
		if (!s->exec_tpl)
			return -ENOMEM;
		return set_transport(s, GS_TRANSPORT_EXEC, "exec", why, whylen);
	}
	/* remote-cmd */
	return words_value(key, val, &s->remote_cmd, &s->n_remote_cmd, why, whylen);
}

/* Combinations that cannot mean anything. */
static int settings_check(const struct settings *s, char *why, size_t whylen)
{
	if ((s->transport == GS_TRANSPORT_PCT || s->transport == GS_TRANSPORT_LXC) && !s->via) {
		gs_seterr(why, whylen, "%s= needs via= (the host that runs the containers)", s->transport_key);
		return -EINVAL;
	}
	if (s->transport == GS_TRANSPORT_EXEC) {
		const char *bad = s->user ? "user" : s->port ? "port" : s->ssh_opts ? "ssh-opt" : s->via ? "via" : NULL;

		if (bad) {
			gs_seterr(why, whylen, "exec= replaces ssh; %s= cannot be combined with it", bad);
			return -EINVAL;
		}
	}
	return 0;
}

/* Give entry e the settings s (deep copies), with user from a user@ prefix. */
static int entry_apply(struct gs_host_entry *e, const struct settings *s, const char *user, unsigned line)
{
	int r;

	e->transport = s->transport;
	e->port = s->port;
	e->vmid = s->vmid;
	e->line = line;
	if (user && !(e->user = strdup(user)))
		return -ENOMEM;
	if (s->via && !(e->via = strdup(s->via)))
		return -ENOMEM;
	if (s->container && !(e->container = strdup(s->container)))
		return -ENOMEM;
	if ((r = gs_strv_copy(s->ssh_opts, s->n_ssh_opts, &e->ssh_opts)) < 0)
		return r;
	e->n_ssh_opts = s->n_ssh_opts;
	if ((r = gs_strv_copy(s->remote_cmd, s->n_remote_cmd, &e->remote_cmd)) < 0)
		return r;
	e->n_remote_cmd = s->n_remote_cmd;
	if (s->exec_tpl && (r = exec_expand(s->exec_tpl, e->name, &e->exec_argv, &e->n_exec_argv)) < 0)
		return r;
	return 0;
}

/* The entry called name, created (bare) when new. */
static int entry_get(struct gs_inventory *inv, const char *name, struct gs_host_entry **ret)
{
	ssize_t i = gs_hostlist_index(&inv->all, name);
	struct gs_host_entry *ne;
	int r;

	if (i >= 0) {
		*ret = &inv->entries[i];
		return 0;
	}
	/* Grow the parallel array first so a failure cannot leave the two out
	 * of step. */
	if (inv->n_entries == inv->cap_entries) {
		size_t cap = inv->cap_entries ? inv->cap_entries * 2 : 16;

		ne = realloc(inv->entries, cap * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		inv->entries = ne;
		inv->cap_entries = cap;
	}
	ne = inv->entries;
	memset(&ne[inv->n_entries], 0, sizeof(*ne));
	ne[inv->n_entries].name = strdup(name);
	if (!ne[inv->n_entries].name)
		return -ENOMEM;
	r = gs_hostlist_add(&inv->all, name);
	if (r < 0) {
		free(ne[inv->n_entries].name);
		ne[inv->n_entries].name = NULL;
		return r;
	}
	*ret = &ne[inv->n_entries++];
	return 0;
}

static int parse_header(struct gs_inventory *inv, char **w, size_t n, unsigned line, size_t *current, char *why,
			size_t whylen)
{
	size_t len = strlen(w[0]);
	struct gs_inventory_group *g, *ng;
	char sb[80];
	_cleanup_free_ char *name = NULL;

	if (len < 2 || w[0][len - 1] != ']') {
		gs_seterr(why, whylen, "group header '%s' lacks its ']'", show(sb, sizeof(sb), w[0]));
		return -EINVAL;
	}
	name = strndup(w[0] + 1, len - 2);
	if (!name)
		return -ENOMEM;
	if (n > 1) {
		gs_seterr(why, whylen, "unexpected '%s' after group header", show(sb, sizeof(sb), w[1]));
		return -EINVAL;
	}
	/* A letter first keeps headers apart from host lists like [01-04]. */
	if (!name_ok(name, GROUP_NAME_MAX, is_alpha)) {
		gs_seterr(why, whylen, "bad group name '%s' (a letter, then letters, digits, . - _)",
		       show(sb, sizeof(sb), name));
		return -EINVAL;
	}
	if (strcmp(name, "all") == 0) {
		gs_seterr(why, whylen, "group name 'all' is reserved (@all is every host)");
		return -EINVAL;
	}
	g = group_get(inv, name);
	if (g) {
		gs_seterr(why, whylen, "duplicate group '%s' (first at line %u)", name, g->line);
		return -EINVAL;
	}
	ng = realloc(inv->groups, (inv->n_groups + 1) * sizeof(*ng));
	if (!ng)
		return -ENOMEM;
	inv->groups = ng;
	ng[inv->n_groups] = (struct gs_inventory_group){ .name = GS_TAKE_PTR(name), .line = line };
	*current = inv->n_groups++;
	return 0;
}

static int parse_host_line(struct gs_inventory *inv, char **w, size_t n, unsigned line, size_t current,
			   char *why, size_t whylen)
{
	struct settings s = { 0 };
	struct gs_hostlist hosts = GS_HOSTLIST_INIT;
	struct resolve_ctx c = { .inv = inv, .current = NULL };
	unsigned seen = 0;
	size_t i;
	int r = 0;

	/* A quoted blank would make the host list split in two: refuse it. */
	if (strpbrk(w[0], " \t\r\v\f")) {
		char sb[80];

		gs_seterr(why, whylen, "invalid character ' ' in host list '%s'", show(sb, sizeof(sb), w[0]));
		return -EINVAL;
	}
	for (i = 1; i < n; i++)
		if ((r = parse_setting(&s, w[i], &seen, why, whylen)) < 0)
			goto out;
	if ((r = settings_check(&s, why, whylen)) < 0)
		goto out;
	if (current != SIZE_MAX)
		c.current = inv->groups[current].name;
	r = gs_hostlist_append_ex(&hosts, w[0], resolve_group, &c, why, whylen);
	if (r < 0)
		goto out;
	for (i = 0; i < hosts.n; i++) {
		const char *h = hosts.hosts[i], *at = strchr(h, '@');
		_cleanup_free_ char *prefix_user = at ? strndup(h, (size_t)(at - h)) : NULL;
		const char *name = at ? at + 1 : h;
		struct gs_host_entry *e;
		char sb[80];

		if (at && !prefix_user) {
			r = -ENOMEM;
			goto out;
		}
		if (prefix_user && s.user) {
			gs_seterr(why, whylen, "user given twice for '%s' (user@ and user=)", show(sb, sizeof(sb), h));
			r = -EINVAL;
			goto out;
		}
		if (prefix_user && s.transport == GS_TRANSPORT_EXEC) {
			gs_seterr(why, whylen, "exec= replaces ssh; '%s' cannot have a user@", show(sb, sizeof(sb), h));
			r = -EINVAL;
			goto out;
		}
		if ((r = entry_get(inv, name, &e)) < 0) {
			if (r == -E2BIG)
				gs_seterr(why, whylen, "more than %d hosts in the inventory", GS_HOSTLIST_MAX);
			goto out;
		}
		if (s.any || prefix_user) {
			if (e->line) {
				gs_seterr(why, whylen, "host '%s' already has settings from line %u",
				       show(sb, sizeof(sb), name), e->line);
				r = -EINVAL;
				goto out;
			}
			if ((r = entry_apply(e, &s, prefix_user ? prefix_user : s.user, line)) < 0)
				goto out;
		}
		if (current != SIZE_MAX && (r = gs_hostlist_add(&inv->groups[current].members, name)) < 0)
			goto out;
	}
out:
	if (r == -ENOMEM)
		gs_seterr(why, whylen, "out of memory");
	gs_hostlist_free(&hosts);
	settings_free(&s);
	return r;
}

int gs_inventory_parse(const char *text, const char *name_for_errors, struct gs_inventory *ret, char *err,
		       size_t errlen)
{
	struct gs_inventory inv = { 0 };
	const char *p = text, *src = name_for_errors ? name_for_errors : "inventory";
	size_t current = SIZE_MAX;
	unsigned line = 0;
	char why[512];
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	inv.source = strdup(src);
	if (!inv.source) {
		gs_seterr(err, errlen, "%s: out of memory", src);
		return -ENOMEM;
	}
	while (*p) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		char **w = NULL;
		size_t n = 0;

		line++;
		why[0] = '\0';
		r = line_words(p, end, &w, &n);
		if (r == -EINVAL)
			gs_seterr(why, sizeof(why), "unterminated quote");
		else if (r == 0 && n > 0 && w[0][0] == '[')
			r = parse_header(&inv, w, n, line, &current, why, sizeof(why));
		else if (r == 0 && n > 0)
			r = parse_host_line(&inv, w, n, line, current, why, sizeof(why));
		gs_strv_free(w);
		if (r < 0) {
			if (r == -ENOMEM)
				gs_strlcpy(why, "out of memory", sizeof(why));
			gs_seterr(err, errlen, "%s:%u: %s", src, line, why);
			gs_inventory_free(&inv);
			return r;
		}
		p = nl ? nl + 1 : end;
	}
	*ret = inv;
	return 0;
}

int gs_inventory_load(const char *path, struct gs_inventory *ret, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	const char *nul;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = gs_read_file_at(AT_FDCWD, path, GS_INVENTORY_MAX_BYTES + 1, &buf, &len);
	if (r < 0) {
		gs_seterr(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (len > GS_INVENTORY_MAX_BYTES) {
		gs_seterr(err, errlen, "%s: larger than %u bytes", path, GS_INVENTORY_MAX_BYTES);
		return -EFBIG;
	}
	/* A NUL would silently end the text early: refuse it where it is. */
	nul = memchr(buf, '\0', len);
	if (nul) {
		unsigned line = 1;
		const char *q;

		for (q = buf; q < nul; q++)
			line += *q == '\n';
		gs_seterr(err, errlen, "%s:%u: NUL byte in file", path, line);
		return -EINVAL;
	}
	return gs_inventory_parse(buf, path, ret, err, errlen);
}

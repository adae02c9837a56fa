/* Host list expressions (Slurm/pdsh syntax): expansion, dedupe, exclude and
 * dshbak-style folding. See hostlist.h for the accepted syntax. */
#include "fleet/hostlist.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/sanitize.h"
#include "util/util.h"

/* 18 decimal digits always fit in a uint64_t, so no overflow checks are
 * needed while reading a bound. */
#define NUM_DIGITS_MAX 18
/* user + '@' + host + NUL */
#define NAME_BUF (GS_USERNAME_MAX + 1 + GS_HOSTNAME_MAX + 1)


/* Copy of user text for an error message: bounded and escaped
 * (util/sanitize.h), because the message ends up on a terminal. */
static const char *show(char *buf, size_t size, const char *s, size_t len)
{
	return gs_text_escape(buf, size, s, len, 0);
}

/* A single offending character, printable or as \xNN. */
static const char *show_char(char buf[8], char c)
{
	unsigned char u = (unsigned char)c;

	if (u >= 0x20 && u < 0x7f && u != '\'')
		snprintf(buf, 8, "'%c'", c);
	else
		snprintf(buf, 8, "\\x%02x", u);
	return buf;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* ---- the list and its hash index ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

ssize_t gs_hostlist_index(const struct gs_hostlist *l, const char *host)
{
	size_t mask, i;

	if (!l->nslots)
		return -1;
	mask = l->nslots - 1;
	for (i = hash_str(host) & mask;; i = (i + 1) & mask) {
		uint32_t v = l->slots[i];

		if (v == 0)
			return -1;
		if (strcmp(l->hosts[v - 1], host) == 0)
			return (ssize_t)(v - 1);
	}
}

static void index_insert(uint32_t *slots, size_t nslots, const char *host, size_t idx)
{
	size_t mask = nslots - 1, i;

	for (i = hash_str(host) & mask; slots[i]; i = (i + 1) & mask)
		;
	slots[i] = (uint32_t)(idx + 1);
}

/* Rebuild the index for at least want entries at load factor <= 1/2. */
static int index_rebuild(struct gs_hostlist *l, size_t want)
{
	size_t nslots = 16, i;
	uint32_t *slots;

	while (nslots < want * 2)
		nslots *= 2;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < l->n; i++)
		index_insert(slots, nslots, l->hosts[i], i);
	free(l->slots);
	l->slots = slots;
	l->nslots = nslots;
	return 0;
}

int gs_hostlist_add(struct gs_hostlist *l, const char *host)
{
	char *copy;
	int r;

	if (gs_hostlist_index(l, host) >= 0)
		return 0;
	if (l->n >= GS_HOSTLIST_MAX)
		return -E2BIG;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **h = realloc(l->hosts, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		l->hosts = h;
		l->cap = cap;
	}
	if ((l->n + 1) * 2 > l->nslots) {
		r = index_rebuild(l, l->n + 1);
		if (r < 0)
			return r;
	}
	copy = strdup(host);
	if (!copy)
		return -ENOMEM;
	l->hosts[l->n] = copy;
	index_insert(l->slots, l->nslots, copy, l->n);
	l->n++;
	return 1;
}

void gs_hostlist_free(struct gs_hostlist *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		free(l->hosts[i]);
	free(l->hosts);
	free(l->slots);
	*l = (struct gs_hostlist)GS_HOSTLIST_INIT;
}

int gs_hostlist_merge(struct gs_hostlist *l, const struct gs_hostlist *src)
{
	size_t i, fresh = 0;

	/* Count first so that a list that would grow too large is left as it is. */
	for (i = 0; i < src->n; i++)
		if (gs_hostlist_index(l, src->hosts[i]) < 0)
			fresh++;
	if (l->n + fresh > GS_HOSTLIST_MAX)
		return -E2BIG;
	for (i = 0; i < src->n; i++) {
		int r = gs_hostlist_add(l, src->hosts[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

int gs_hostlist_exclude(struct gs_hostlist *l, const struct gs_hostlist *x)
{
	size_t i, o = 0;

	if (!x->n || !l->n)
		return 0;
	for (i = 0; i < l->n; i++) {
		const char *h = l->hosts[i], *at = strchr(h, '@');
		bool drop = gs_hostlist_index(x, h) >= 0 || (at && gs_hostlist_index(x, at + 1) >= 0);

		if (drop)
			free(l->hosts[i]);
		else
			l->hosts[o++] = l->hosts[i];
	}
	l->n = o;
	/* A smaller table never needs more memory than the old one, but the
	 * rebuild allocates; on failure keep a correct (if stale-sized) index by
	 * rebuilding in place. */
	if (index_rebuild(l, l->n) < 0) {
		memset(l->slots, 0, l->nslots * sizeof(*l->slots));
		for (i = 0; i < l->n; i++)
			index_insert(l->slots, l->nslots, l->hosts[i], i);
	}
	return 0;
}

/* ---- names ---- */

static bool user_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > GS_USERNAME_MAX || s[0] == '-')
		return false;
	for (i = 0; i < len; i++)
		if (!is_name_char(s[i]))
			return false;
	return true;
}

bool gs_hostname_valid(const char *s)
{
	const char *at = strchr(s, '@'), *h = s;
	size_t i, len;

	if (at) {
		if (!user_valid(s, (size_t)(at - s)))
			return false;
		h = at + 1;
	}
	len = strlen(h);
	if (len == 0 || len > GS_HOSTNAME_MAX || h[0] == '-')
		return false;
	for (i = 0; i < len; i++)
		if (!is_name_char(h[i]))
			return false;
	return true;
}

/* ---- expansion of one element ---- */

struct range {
	uint64_t lo, hi;
	int width; /* 0: natural, else zero-padded to this many digits */
};

struct part {
	const char *lit; /* literal text, or NULL for a bracket group */
	size_t litlen;
	struct range *r; /* bracket group: nr ranges */
	size_t nr;
	size_t count;    /* hosts the group stands for */
};

/* Read "[...]" contents t[0..len) into out (room for every item). */
static int parse_ranges(const char *t, size_t len, const char *el, size_t ellen, struct part *p,
			struct range *out, char *err, size_t errlen)
{
	char sb[80], ib[80];
	size_t i = 0;

	p->r = out;
	p->nr = 0;
	p->count = 0;
	if (len == 0) {
		gs_seterr(err, errlen, "empty range '[]' in '%s'", show(sb, sizeof(sb), el, ellen));
		return -EINVAL;
	}
	while (i <= len) {
		size_t s = i, dash = SIZE_MAX, lo_len, hi_len, k;
		const char *item = t + s;
		struct range *rg = &out[p->nr];
		uint64_t v;

		while (i < len && t[i] != ',')
			i++;
		/* item is t[s..i) */
		if (i == s) {
			gs_seterr(err, errlen, "empty range item in '%s'", show(sb, sizeof(sb), el, ellen));
			return -EINVAL;
		}
		for (k = s; k < i; k++) {
			if (t[k] == '-' && dash == SIZE_MAX) {
				dash = k;
			} else if (!is_digit(t[k])) {
				gs_seterr(err, errlen, "%s range '%s' in '%s'",
				       t[k] == '-' ? "malformed" : "non-numeric",
				       show(ib, sizeof(ib), item, i - s), show(sb, sizeof(sb), el, ellen));
				return -EINVAL;
			}
		}
		lo_len = (dash == SIZE_MAX ? i : dash) - s;
		hi_len = dash == SIZE_MAX ? lo_len : i - dash - 1;
		if (lo_len == 0 || hi_len == 0) {
			gs_seterr(err, errlen, "malformed range '%s' in '%s'", show(ib, sizeof(ib), item, i - s),
			       show(sb, sizeof(sb), el, ellen));
			return -EINVAL;
		}
		if (lo_len > NUM_DIGITS_MAX || hi_len > NUM_DIGITS_MAX) {
			gs_seterr(err, errlen, "number too long in range '%s' in '%s'",
			       show(ib, sizeof(ib), item, i - s), show(sb, sizeof(sb), el, ellen));
			return -EINVAL;
		}
		for (v = 0, k = s; k < s + lo_len; k++)
			v = v * 10 + (uint64_t)(t[k] - '0');
		rg->lo = rg->hi = v;
		/* Slurm's rule: a leading zero on the lower bound fixes the width. */
		rg->width = (lo_len > 1 && item[0] == '0') ? (int)lo_len : 0;
		if (dash != SIZE_MAX) {
			const char *hi = t + dash + 1;

			for (v = 0, k = 0; k < hi_len; k++)
				v = v * 10 + (uint64_t)(hi[k] - '0');
			/* The upper bound's own width does not count: Slurm
			 * (scontrol show hostnames) and pdsh expand n[1-010]
			 * to n1..n10 and n[01-001] to n01. */
			rg->hi = v;
		}
		if (rg->lo > rg->hi) {
			gs_seterr(err, errlen, "reversed range '%s' in '%s'", show(ib, sizeof(ib), item, i - s),
			       show(sb, sizeof(sb), el, ellen));
			return -EINVAL;
		}
		/* Per-group count; a single range can exceed the limit by far. */
		if (rg->hi - rg->lo >= GS_HOSTLIST_MAX || p->count + (rg->hi - rg->lo + 1) > GS_HOSTLIST_MAX) {
			gs_seterr(err, errlen, "'%s' expands to more than %d hosts", show(sb, sizeof(sb), el, ellen),
			       GS_HOSTLIST_MAX);
			return -E2BIG;
		}
		p->count += rg->hi - rg->lo + 1;
		p->nr++;
		i++; /* past ',' (or past the end, which ends the loop) */
	}
	return 0;
}

/* Expand one top-level element s[0..len) (no '@group') into out. *total is
 * the number of hosts the expression has produced so far, before dedupe. */
static int expand_element(const char *s, size_t len, struct gs_hostlist *out, size_t *total, char *err,
			  size_t errlen)
{
	_cleanup_free_ struct part *parts = NULL;
	_cleanup_free_ struct range *ranges = NULL;
	_cleanup_free_ size_t *cur_r = NULL;
	_cleanup_free_ uint64_t *cur_v = NULL;
	char sb[80], cb[8], name[NAME_BUF];
	const char *host = s, *at = memchr(s, '@', len);
	size_t hlen = len, ulen = 0, nparts = 0, nbr = 0, nitems = 0, used = 0, i, prod = 1;

	if (at) {
		ulen = (size_t)(at - s);
		host = at + 1;
		hlen = len - ulen - 1;
		if (ulen == 0) {
			gs_seterr(err, errlen, "empty user name in '%s'", show(sb, sizeof(sb), s, len));
			return -EINVAL;
		}
		if (s[0] == '-') {
			gs_seterr(err, errlen, "user name starts with '-' in '%s'", show(sb, sizeof(sb), s, len));
			return -EINVAL;
		}
		for (i = 0; i < ulen; i++)
			if (!is_name_char(s[i])) {
				gs_seterr(err, errlen, "invalid character %s in user name in '%s'", show_char(cb, s[i]),
				       show(sb, sizeof(sb), s, len));
				return -EINVAL;
			}
		if (ulen > GS_USERNAME_MAX) {
			gs_seterr(err, errlen, "user name too long in '%s'", show(sb, sizeof(sb), s, len));
			return -EINVAL;
		}
	}
	if (hlen == 0) {
		gs_seterr(err, errlen, "empty host name in '%s'", show(sb, sizeof(sb), s, len));
		return -EINVAL;
	}
	if (host[0] == '-') {
		gs_seterr(err, errlen, "host name starts with '-' in '%s'", show(sb, sizeof(sb), s, len));
		return -EINVAL;
	}
	for (i = 0; i < hlen; i++) {
		if (host[i] == '[')
			nbr++;
		if (host[i] == '[' || host[i] == ',')
			nitems++;
	}
	parts = calloc(2 * nbr + 1, sizeof(*parts));
	ranges = calloc(nitems + 1, sizeof(*ranges));
	if (!parts || !ranges)
		return -ENOMEM;

	/* Split into literals and bracket groups, validating as we go. */
	for (i = 0; i < hlen;) {
		if (host[i] == '[') {
			size_t j = i + 1;
			int r;

			while (j < hlen && host[j] != ']' && host[j] != '[')
				j++;
			if (j == hlen || host[j] == '[') {
				gs_seterr(err, errlen, "%s '[' in '%s'", j == hlen ? "unbalanced" : "nested",
				       show(sb, sizeof(sb), s, len));
				return -EINVAL;
			}
			r = parse_ranges(host + i + 1, j - i - 1, s, len, &parts[nparts], ranges + used, err,
					 errlen);
			if (r < 0)
				return r;
			used += parts[nparts].nr;
			/* Both factors are <= GS_HOSTLIST_MAX: no overflow. */
			if (prod * parts[nparts].count > GS_HOSTLIST_MAX) {
				gs_seterr(err, errlen, "'%s' expands to more than %d hosts", show(sb, sizeof(sb), s, len),
				       GS_HOSTLIST_MAX);
				return -E2BIG;
			}
			prod *= parts[nparts].count;
			nparts++;
			i = j + 1;
		} else {
			size_t j = i;

			while (j < hlen && host[j] != '[') {
				if (host[j] == ']') {
					gs_seterr(err, errlen, "unbalanced ']' in '%s'", show(sb, sizeof(sb), s, len));
					return -EINVAL;
				}
				if (!is_name_char(host[j])) {
					gs_seterr(err, errlen, "invalid character %s in '%s'", show_char(cb, host[j]),
					       show(sb, sizeof(sb), s, len));
					return -EINVAL;
				}
				j++;
			}
			parts[nparts].lit = host + i;
			parts[nparts].litlen = j - i;
			nparts++;
			i = j;
		}
	}
	if (*total + prod > GS_HOSTLIST_MAX) {
		gs_seterr(err, errlen, "host list expands to more than %d hosts (at '%s')", GS_HOSTLIST_MAX,
		       show(sb, sizeof(sb), s, len));
		return -E2BIG;
	}
	*total += prod;

	/* Odometer over the groups, last group fastest. */
	cur_r = calloc(nparts, sizeof(*cur_r));
	cur_v = calloc(nparts, sizeof(*cur_v));
	if (!cur_r || !cur_v)
		return -ENOMEM;
	for (i = 0; i < nparts; i++)
		if (!parts[i].lit)
			cur_v[i] = parts[i].r[0].lo;
	for (;;) {
		size_t o = 0, hstart;
		int r;
		ssize_t g;

		if (ulen) {
			memcpy(name, s, ulen);
			name[ulen] = '@';
			o = ulen + 1;
		}
		hstart = o;
		for (i = 0; i < nparts; i++) {
			char num[NUM_DIGITS_MAX + 2];
			const char *piece;
			size_t plen;

			if (parts[i].lit) {
				piece = parts[i].lit;
				plen = parts[i].litlen;
			} else {
				plen = (size_t)snprintf(num, sizeof(num), "%0*" PRIu64,
							parts[i].r[cur_r[i]].width, cur_v[i]);
				piece = num;
			}
			if (o - hstart + plen > GS_HOSTNAME_MAX) {
				gs_seterr(err, errlen, "host name longer than %d characters in '%s'", GS_HOSTNAME_MAX,
				       show(sb, sizeof(sb), s, len));
				return -EINVAL;
			}
			memcpy(name + o, piece, plen);
			o += plen;
		}
		name[o] = '\0';
		r = gs_hostlist_add(out, name);
		if (r < 0)
			return r;

		for (g = (ssize_t)nparts - 1; g >= 0; g--) {
			struct part *p = &parts[g];

			if (p->lit)
				continue;
			if (cur_v[g] < p->r[cur_r[g]].hi) {
				cur_v[g]++;
				break;
			}
			if (cur_r[g] + 1 < p->nr) {
				cur_r[g]++;
				cur_v[g] = p->r[cur_r[g]].lo;
				break;
			}
			cur_r[g] = 0;
			cur_v[g] = p->r[0].lo;
		}
		if (g < 0)
			break;
	}
	return 0;
}

static bool group_name_valid(const char *s, size_t len)
{
	return user_valid(s, len); /* same alphabet, same leading '-' rule */
}

int gs_hostlist_append_ex(struct gs_hostlist *l, const char *expr, gs_hostlist_resolve_fn resolve,
			  void *userdata, char *err, size_t errlen)
{
	struct gs_hostlist tmp = GS_HOSTLIST_INIT;
	const char *p = expr;
	size_t total = 0;

	char sb[80];
	int r = 0;

	if (!expr) {
		gs_seterr(err, errlen, "no host list");
		return -EINVAL;
	}
	for (;;) {
		const char *start;
		int depth = 0;

		/* Separators: whitespace, commas, comments at the start of an element. */
		while (*p) {
			if (is_space(*p)) {
				p++;
			} else if (*p == '#') {
				while (*p && *p != '\n')
					p++;
			} else if (*p == ',') {
				/* Empty elements (n[1-2],,n3, a trailing ',') are
				 * skipped, as Slurm and pdsh skip them. */
				p++;
			} else {
				break;
			}
		}
		if (!*p)
			break;
		start = p;
		/* Commas and blanks inside brackets belong to the range; a newline
		 * always ends the element so a missing ']' cannot swallow the rest
		 * of a file read from stdin. */
		for (; *p && *p != '\n'; p++) {
			if (*p == '[')
				depth++;
			else if (*p == ']')
				depth--;
			else if (depth <= 0 && (*p == ',' || is_space(*p)))
				break;
		}
		if (*start == '@') {
			size_t before = tmp.n, glen = (size_t)(p - start - 1);
			char gname[GS_USERNAME_MAX + 1];

			if (!group_name_valid(start + 1, glen)) {
				gs_seterr(err, errlen, "invalid group name '%s'", show(sb, sizeof(sb), start, (size_t)(p - start)));
				r = -EINVAL;
				goto out;
			}
			if (!resolve) {
				gs_seterr(err, errlen, "group reference '%s' needs an inventory file",
				       show(sb, sizeof(sb), start, (size_t)(p - start)));
				r = -EINVAL;
				goto out;
			}
			memcpy(gname, start + 1, glen);
			gname[glen] = '\0';
			r = resolve(userdata, gname, &tmp, err, errlen);
			if (r == -E2BIG)
				gs_seterr(err, errlen, "host list expands to more than %d hosts (at '@%s')",
				       GS_HOSTLIST_MAX, gname);
			if (r < 0)
				goto out;
			total += tmp.n - before;
			if (total > GS_HOSTLIST_MAX) {
				gs_seterr(err, errlen, "host list expands to more than %d hosts (at '@%s')",
				       GS_HOSTLIST_MAX, gname);
				r = -E2BIG;
				goto out;
			}
		} else {
			r = expand_element(start, (size_t)(p - start), &tmp, &total, err, errlen);
			if (r < 0)
				goto out;
		}
	}
	r = gs_hostlist_merge(l, &tmp);
	if (r == -E2BIG)
		gs_seterr(err, errlen, "host list has more than %d hosts", GS_HOSTLIST_MAX);
out:
	if (r == -ENOMEM)
		gs_seterr(err, errlen, "out of memory");
	gs_hostlist_free(&tmp);
	return r;
}

int gs_hostlist_append(struct gs_hostlist *l, const char *expr, char *err, size_t errlen)
{
	return gs_hostlist_append_ex(l, expr, NULL, NULL, err, errlen);
}

int gs_hostlist_parse(const char *expr, struct gs_hostlist *ret, char *err, size_t errlen)
{
	*ret = (struct gs_hostlist)GS_HOSTLIST_INIT;
	return gs_hostlist_append(ret, expr, err, errlen);
}

/* ---- folding ---- */

struct fitem {
	const char *host;
	size_t pre;        /* prefix: host[0..pre) */
	const char *suf;   /* after the number ("" without one) */
	bool num;
	bool padded;       /* leading zero, more than one digit */
	int ndig;
	int cls;           /* width class: 0 natural, else padded width */
	uint64_t val;
};

static int cmp_key(const struct fitem *a, const struct fitem *b)
{
	size_t m = a->pre < b->pre ? a->pre : b->pre;
	int c = memcmp(a->host, b->host, m);

	if (c)
		return c;
	if (a->pre != b->pre)
		return a->pre < b->pre ? -1 : 1;
	if (a->num != b->num)
		return a->num ? 1 : -1;
	return strcmp(a->suf, b->suf);
}

static int cmp_fitem(const void *pa, const void *pb)
{
	return cmp_key(pa, pb);
}

static int cmp_cls_val(const void *pa, const void *pb)
{
	const struct fitem *a = pa, *b = pb;

	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	if (a->val != b->val)
		return a->val < b->val ? -1 : 1;
	return 0;
}

struct sbuf {
	char *p;
	size_t len, cap;
};

static int sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int sb_num(struct sbuf *b, int width, uint64_t v)
{
	char num[32];
	int n = snprintf(num, sizeof(num), "%0*" PRIu64, width, v);

	return sb_add(b, num, (size_t)n);
}

/* Emit one run of items with the same prefix, suffix and class (sorted by
 * value, duplicates allowed). */
static int emit_group(struct sbuf *b, const struct fitem *it, size_t n)
{
	size_t i, distinct = 1;
	int r;

	for (i = 1; i < n; i++)
		if (it[i].val != it[i - 1].val)
			distinct++;
	if ((r = sb_add(b, it[0].host, it[0].pre)) < 0)
		return r;
	if (distinct == 1) {
		if ((r = sb_num(b, it[0].cls, it[0].val)) < 0)
			return r;
		return sb_add(b, it[0].suf, strlen(it[0].suf));
	}
	if ((r = sb_add(b, "[", 1)) < 0)
		return r;
	for (i = 0; i < n;) {
		size_t j = i;

		/* Extend while the next distinct value is consecutive. */
		while (j + 1 < n && (it[j + 1].val == it[j].val || it[j + 1].val == it[j].val + 1))
			j++;
		if (i > 0 && (r = sb_add(b, ",", 1)) < 0)
			return r;
		if ((r = sb_num(b, it[i].cls, it[i].val)) < 0)
			return r;
		if (it[j].val != it[i].val) {
			if ((r = sb_add(b, "-", 1)) < 0 || (r = sb_num(b, it[j].cls, it[j].val)) < 0)
				return r;
		}
		i = j + 1;
	}
	if ((r = sb_add(b, "]", 1)) < 0)
		return r;
	return sb_add(b, it[0].suf, strlen(it[0].suf));
}

int gs_hostlist_fold(char *const *hosts, size_t n, char **ret)
{
	_cleanup_free_ struct fitem *it = NULL;
	struct sbuf b = { 0 };
	size_t i, k;
	int r;

	*ret = NULL;
	if (sb_add(&b, "", 0) < 0)
		return -ENOMEM;
	if (n == 0) {
		*ret = b.p;
		return 0;
	}
	it = calloc(n, sizeof(*it));
	if (!it) {
		free(b.p);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const char *h = hosts[i], *at = strchr(h, '@');
		const char *hp = at ? at + 1 : h, *e = h + strlen(h), *d = e, *ds;
		size_t nd;

		it[i].host = h;
		/* The last run of digits of the host part (never the user part):
		 * ds..d. */
		while (d > hp && !is_digit(d[-1]))
			d--;
		for (ds = d; ds > hp && is_digit(ds[-1]); ds--)
			;
		nd = (size_t)(d - ds);
		if (nd == 0 || nd > NUM_DIGITS_MAX) {
			it[i].pre = (size_t)(e - h);
			it[i].suf = "";
			continue;
		}
		it[i].num = true;
		it[i].pre = (size_t)(ds - h);
		it[i].suf = d;
		it[i].ndig = (int)nd;
		it[i].padded = nd > 1 && ds[0] == '0';
		for (k = 0; k < nd; k++)
			it[i].val = it[i].val * 10 + (uint64_t)(ds[k] - '0');
	}
	qsort(it, n, sizeof(*it), cmp_fitem);

	for (i = 0; i < n;) {
		size_t j = i + 1;
		uint32_t widths = 0; /* bit w: some padded number has w digits */

		while (j < n && cmp_key(&it[i], &it[j]) == 0)
			j++;
		/* it[i..j): one prefix/suffix. */
		if (i > 0 && (r = sb_add(&b, ",", 1)) < 0)
			goto fail;
		if (!it[i].num) {
			if ((r = sb_add(&b, it[i].host, it[i].pre)) < 0)
				goto fail;
			i = j;
			continue;
		}
		/* Width classes: a padded number sets its width; an unpadded one
		 * joins a padded class of its own length (gpu09 and gpu10 fold
		 * into gpu[09-10]), else it is natural. */
		for (k = i; k < j; k++)
			if (it[k].padded)
				widths |= 1u << it[k].ndig;
		for (k = i; k < j; k++)
			it[k].cls = (widths & (1u << it[k].ndig)) ? it[k].ndig : 0;
		qsort(it + i, j - i, sizeof(*it), cmp_cls_val);
		for (k = i; k < j;) {
			size_t m = k + 1;

			while (m < j && it[m].cls == it[k].cls)
				m++;
			if (k > i && (r = sb_add(&b, ",", 1)) < 0)
				goto fail;
			if ((r = emit_group(&b, it + k, m - k)) < 0)
				goto fail;
			k = m;
		}
		i = j;
	}
	*ret = b.p;
	return 0;
fail:
	free(b.p);
	return r;
}

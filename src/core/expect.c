/* --expect: parsing the confirmed targets and checking a plan; see expect.h. */
#include "core/expect.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Digits only, no leading zero (a "0" alone is a number), no overflow. */
static int parse_u64(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (len == 0 || (s[0] == '0' && len > 1))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*ret = v;
	return 0;
}

/* The bad item, cut and with anything unprintable as '?': it is quoted
 * into a one-line error. */
static void shown(const char *s, size_t len, char *buf, size_t buflen)
{
	size_t n = len < 40 ? len : 40, o = 0;

	for (size_t i = 0; i < n && o + 1 < buflen; i++)
		buf[o++] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
	if (len > n && o + 3 < buflen) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o < buflen ? o : buflen - 1] = '\0';
}

/* The plan's action words (gs_action_str; plan.c is not linked into the
 * parser's fuzzer, and test_expect checks that the two agree). */
static const char *const action_words[] = {
	[GS_ACT_SIGNAL] = "signal",
	[GS_ACT_SIGNAL_GROUP] = "signal-group",
	[GS_ACT_STOP_UNIT] = "stop-unit",
	[GS_ACT_KILL] = "kill",
	[GS_ACT_STOP_CONTAINER] = "stop-container",
	[GS_ACT_STOP_SUPERVISED] = "stop-supervised",
};

const char *gs_expect_action_word(enum gs_action a)
{
	return (size_t)a < GS_ARRAY_SIZE(action_words) && action_words[a] ? action_words[a] : "unknown";
}

static bool known_action(const char *s, size_t len)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(action_words); i++)
		if (action_words[i] && strlen(action_words[i]) == len && !memcmp(action_words[i], s, len))
			return true;
	return false;
}

int gs_expect_parse(const char *text, struct gs_expect *ret, char *err, size_t errlen)
{
	struct gs_expect e = { 0 };
	const char *p = text;
	char item[64];
	size_t cap = 0;

	memset(ret, 0, sizeof(*ret));
	if (!text || !*text) {
		gs_seterr(err, errlen, "invalid --expect '': expected 'none' or PID:STARTTIME[,...]");
		return -EINVAL;
	}
	if (!strcmp(text, "none"))
		return 0;
	for (;;) {
		const char *end = strchr(p, ','), *colon, *colon2 = NULL;
		size_t len = end ? (size_t)(end - p) : strlen(p), stlen = 0, alen = 0;
		uint64_t pid, st;

		colon = memchr(p, ':', len);
		if (colon) {
			stlen = len - (size_t)(colon + 1 - p);
			colon2 = memchr(colon + 1, ':', stlen);
			if (colon2) {
				alen = stlen - (size_t)(colon2 + 1 - (colon + 1));
				stlen = (size_t)(colon2 - (colon + 1));
			}
		}
		if (!colon || parse_u64(p, (size_t)(colon - p), &pid) < 0 || parse_u64(colon + 1, stlen, &st) < 0 ||
		    pid < 1 || pid > GS_EXPECT_PID_MAX || (colon2 && !known_action(colon2 + 1, alen))) {
			shown(p, len, item, sizeof(item));
			gs_seterr(err, errlen,
				  "invalid --expect item '%s': expected PID:STARTTIME[:ACTION] (PID 1 to %d, decimal; "
				  "ACTION a plan action such as signal or stop-unit)",
				  item, GS_EXPECT_PID_MAX);
			goto fail;
		}
		for (size_t i = 0; i < e.n; i++)
			if (e.items[i].pid == (pid_t)pid) {
				gs_seterr(err, errlen, "invalid --expect: PID %llu given twice", (unsigned long long)pid);
				goto fail;
			}
		if (e.n == GS_EXPECT_MAX) {
			gs_seterr(err, errlen, "invalid --expect: more than %d processes", GS_EXPECT_MAX);
			goto fail;
		}
		if (e.n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct gs_expect_item *n = realloc(e.items, ncap * sizeof(*n));

			if (!n) {
				gs_seterr(err, errlen, "out of memory");
				free(e.items);
				return -ENOMEM;
			}
			e.items = n;
			cap = ncap;
		}
		e.items[e.n] = (struct gs_expect_item){ .pid = (pid_t)pid, .starttime = st };
		if (colon2)
			memcpy(e.items[e.n].action, colon2 + 1, alen); /* known_action: shorter than the field */
		e.n++;
		if (!end)
			break;
		p = end + 1;
	}
	*ret = e;
	return 0;
fail:
	free(e.items);
	return -EINVAL;
}

void gs_expect_free(struct gs_expect *e)
{
	free(e->items);
	e->items = NULL;
	e->n = 0;
}

int gs_expect_check(const struct gs_expect *e, const struct gs_plan *p, char *why, size_t whylen)
{
	for (size_t t = 0; t < p->n_targets; t++) {
		const struct gs_target *tg = &p->targets[t];
		const char *now = gs_expect_action_word(tg->action);
		bool listed = false;

		for (size_t i = 0; i < e->n && !listed; i++) {
			const struct gs_expect_item *it = &e->items[i];

			if (it->pid != tg->pid || it->starttime != tg->starttime)
				continue;
			/* Shown, but to be stopped another way now (a signal
			 * that became its unit's stop ends more than it). */
			if (it->action[0] && strcmp(it->action, now)) {
				gs_seterr(why, whylen,
					  "not the confirmed plan: %d (%s) would be stopped with %s, not %s; nothing was stopped",
					  (int)tg->pid, tg->comm, now, it->action);
				return -ESTALE;
			}
			listed = true;
		}
		if (!listed) {
			size_t extra = 0;

			/* Every new target counts: the line says how many. */
			for (size_t u = t + 1; u < p->n_targets; u++) {
				bool l = false;

				for (size_t i = 0; i < e->n && !l; i++)
					l = e->items[i].pid == p->targets[u].pid &&
					    e->items[i].starttime == p->targets[u].starttime;
				extra += !l;
			}
			if (extra)
				gs_seterr(why, whylen,
					  "not the confirmed plan: %d (%s) and %zu more are new targets; nothing was stopped",
					  (int)tg->pid, tg->comm, extra);
			else
				gs_seterr(why, whylen,
					  "not the confirmed plan: %d (%s) is a new target; nothing was stopped",
					  (int)tg->pid, tg->comm);
			return -ESTALE;
		}
	}
	return 0;
}

int gs_expect_format(const struct gs_expect_item *items, size_t n, char **ret)
{
	size_t cap = n * (GS_EXPECT_ITEM_MAX + 1) + 8, o = 0;
	char *s;

	if (n == 0) {
		*ret = strdup("none");
		return *ret ? 0 : -ENOMEM;
	}
	if (n > GS_EXPECT_MAX)
		return -EINVAL;
	s = malloc(cap);
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (items[i].pid < 1 || items[i].pid > GS_EXPECT_PID_MAX) {
			free(s);
			return -EINVAL;
		}
		if (items[i].action[0] && !known_action(items[i].action, strlen(items[i].action))) {
			free(s);
			return -EINVAL;
		}
		o += (size_t)snprintf(s + o, cap - o, "%s%d:%llu%s%s", i ? "," : "", (int)items[i].pid,
				      (unsigned long long)items[i].starttime, items[i].action[0] ? ":" : "",
				      items[i].action);
	}
	*ret = s;
	return 0;
}

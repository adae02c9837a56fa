/* Growing strings; see strbuf.h. */
#include "util/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for `more` bytes and the NUL. */
static int grow(struct gs_strbuf *b, size_t more)
{
	size_t cap;
	char *np;

	if (b->len + more + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 32;
	while (cap < b->len + more + 1)
		cap *= 2;
	np = realloc(b->p, cap);
	if (!np)
		return -ENOMEM;
	b->p = np;
	b->cap = cap;
	return 0;
}

int gs_strbuf_putc(struct gs_strbuf *b, char c)
{
	if (grow(b, 1) < 0)
		return -ENOMEM;
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
	return 0;
}

int gs_strbuf_addf(struct gs_strbuf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	if (grow(b, (size_t)r) < 0) {
		free(s);
		return -ENOMEM;
	}
	memcpy(b->p + b->len, s, (size_t)r + 1);
	b->len += (size_t)r;
	free(s);
	return 0;
}

void gs_strbuf_release(struct gs_strbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* String vectors; see strv.h. */
#include "util/strv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs_strv_add_owned(struct gs_strv *s, char *w)
{
	if (!w)
		return -ENOMEM;
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			free(w);
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = w;
	s->v[s->n] = NULL;
	return 0;
}

int gs_strv_add(struct gs_strv *s, const char *w)
{
	return gs_strv_add_owned(s, strdup(w));
}

int gs_strv_addf(struct gs_strv *s, const char *fmt, ...)
{
	va_list ap;
	char *w;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&w, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	return gs_strv_add_owned(s, w);
}

int gs_strv_add_all(struct gs_strv *s, char *const *words)
{
	for (size_t i = 0; words && words[i]; i++) {
		int r = gs_strv_add(s, words[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

char **gs_strv_take(struct gs_strv *s)
{
	char **v = s->v;

	if (!v)
		v = calloc(1, sizeof(*v));
	s->v = NULL;
	s->n = s->cap = 0;
	return v;
}

void gs_strv_release(struct gs_strv *s)
{
	gs_strv_free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

int gs_strv_push(char ***v, size_t *n, char *w)
{
	char **nv;

	if (!w)
		return -ENOMEM;
	nv = realloc(*v, (*n + 2) * sizeof(**v));
	if (!nv) {
		free(w);
		return -ENOMEM;
	}
	nv[(*n)++] = w;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

int gs_strv_copy(char *const *src, size_t n, char ***ret)
{
	char **v = NULL;
	size_t m = 0;

	*ret = NULL;
	if (!src)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int r = gs_strv_push(&v, &m, strdup(src[i]));

		if (r < 0) {
			gs_strv_free(v);
			return r;
		}
	}
	*ret = v;
	return 0;
}

void gs_strv_free(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

/* String vectors: NULL-terminated arrays of malloc'd strings (argv-like),
 * one owner, freed with gs_strv_free. Built either with a struct gs_strv
 * (growing by doubling) or appended to an existing array and count. */
#ifndef GS_STRV_H
#define GS_STRV_H

#include <stddef.h>

struct gs_strv {
	char **v;        /* NULL-terminated once anything was added */
	size_t n, cap;
};

/* Append a copy of w / w itself (taken over, freed on failure; NULL is
 * -ENOMEM) / a formatted word. 0 or -ENOMEM. */
int gs_strv_add(struct gs_strv *s, const char *w);
int gs_strv_add_owned(struct gs_strv *s, char *w);
int gs_strv_addf(struct gs_strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append a copy of every word of a NULL-terminated array (NULL: none). */
int gs_strv_add_all(struct gs_strv *s, char *const *words);
/* Hand the array over (an empty vector becomes an array of no words);
 * NULL only when that allocation fails. s is empty afterwards. */
char **gs_strv_take(struct gs_strv *s);
/* Free what s holds; s is empty afterwards. */
void gs_strv_release(struct gs_strv *s);

/* Append w (taken over; freed on failure) to the NULL-terminated *v of *n
 * words. 0 or -ENOMEM. */
int gs_strv_push(char ***v, size_t *n, char *w);
/* A copy of the first n words of src (NULL src: *ret NULL). */
int gs_strv_copy(char *const *src, size_t n, char ***ret);
/* Free a NULL-terminated vector and its words (NULL: nothing). */
void gs_strv_free(char **v);

#endif

/* A growing string: appended to a byte or a formatted piece at a time,
 * always NUL-terminated once anything was added. */
#ifndef GS_STRBUF_H
#define GS_STRBUF_H

#include <stddef.h>

struct gs_strbuf {
	char *p;         /* NULL until something is added */
	size_t len, cap;
};

/* Append one byte / a formatted piece. 0, or -ENOMEM with the buffer as
 * it was (what is there stays usable). */
int gs_strbuf_putc(struct gs_strbuf *b, char c);
int gs_strbuf_addf(struct gs_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Free the text; b is empty afterwards. */
void gs_strbuf_release(struct gs_strbuf *b);

#endif

/* The text and JSON escaping of outside text; see sanitize.h. */
#include "util/sanitize.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char hexdigits[] = "0123456789abcdef";

static bool keep_text_byte(unsigned char c, unsigned flags)
{
	if (c >= 0x20 && c < 0x7f)
		return true;
	return (flags & GS_ESC_LINES) && (c == '\n' || c == '\t');
}

/* Writes "\xNN" at q (4 bytes, no NUL). */
static void put_hex(char *q, unsigned char c)
{
	q[0] = '\\';
	q[1] = 'x';
	q[2] = hexdigits[c >> 4];
	q[3] = hexdigits[c & 0xf];
}

/* Length of the escaped text of s, without the NUL. */
static size_t text_escaped_len(const char *s, size_t len, unsigned flags)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += keep_text_byte((unsigned char)s[i], flags) ? 1 : 4;
	return n;
}

char *gs_text_escape(char *dst, size_t size, const char *s, size_t len, unsigned flags)
{
	size_t o = 0, room;
	bool cut;

	if (!size)
		return dst;
	if (!s)
		len = 0;
	cut = text_escaped_len(s, len, flags) > size - 1;
	/* When it does not all fit, keep room for the "..." that says so. */
	room = cut ? (size - 1 >= 3 ? size - 1 - 3 : 0) : size - 1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (keep_text_byte(c, flags)) {
			if (o + 1 > room)
				break;
			dst[o++] = (char)c;
		} else {
			if (o + 4 > room)
				break;
			put_hex(dst + o, c);
			o += 4;
		}
	}
	if (cut)
		for (int k = 0; k < 3 && o < size - 1; k++)
			dst[o++] = '.';
	dst[o] = '\0';
	return dst;
}

const char *gs_safe(const char *s, char *buf, size_t size)
{
	return gs_text_escape(buf, size, s, s ? strlen(s) : 0, 0);
}

char *gs_text_dup(const char *s, size_t len, size_t max)
{
	size_t n = len < max ? len : max, cap;
	char *q;

	if (!s)
		n = len = 0;
	cap = text_escaped_len(s, n, 0) + 4;
	q = malloc(cap);
	if (!q)
		return NULL;
	gs_text_escape(q, cap, s, n, 0);
	if (len > max)
		strcat(q, "...");
	return q;
}

size_t gs_utf8_char(const char *s, size_t len, unsigned *ret_cp)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned cp, min;
	size_t n;

	if (!len)
		return 0;
	if (u[0] < 0x80) {
		*ret_cp = u[0];
		return 1;
	}
	if (u[0] >= 0xc2 && u[0] <= 0xdf) {
		n = 2, cp = u[0] & 0x1f, min = 0x80;
	} else if (u[0] >= 0xe0 && u[0] <= 0xef) {
		n = 3, cp = u[0] & 0x0f, min = 0x800;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		n = 4, cp = u[0] & 0x07, min = 0x10000;
	} else {
		return 0; /* a continuation byte, 0xc0/0xc1 (overlong), above U+10FFFF */
	}
	if (n > len)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (u[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are
	 * not UTF-8, whatever their shape. */
	if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	*ret_cp = cp;
	return n;
}

char *gs_json_escape_dup(const char *s, size_t len, unsigned flags, size_t *ret_len)
{
	size_t o = 0;
	char *q;

	if (!s)
		len = 0;
	/* Every input byte becomes at most 4 output bytes. */
	if (len > (SIZE_MAX - 1) / 4)
		return NULL;
	q = malloc(len * 4 + 1);
	if (!q)
		return NULL;
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		unsigned cp = 0;
		size_t n;

		if (c < 0x80) {
			if (keep_text_byte(c, flags)) {
				q[o++] = (char)c;
			} else {
				put_hex(q + o, c);
				o += 4;
			}
			i++;
			continue;
		}
		n = gs_utf8_char(s + i, len - i, &cp);
		if (n && cp >= 0xa0) {
			memcpy(q + o, s + i, n);
			o += n;
			i += n;
		} else if (n) {
			/* C1 controls: CSI (U+009B) and friends act on some
			 * terminals that print what a program takes from JSON. */
			for (size_t k = 0; k < n; k++, o += 4)
				put_hex(q + o, (unsigned char)s[i + k]);
			i += n;
		} else {
			put_hex(q + o, c);
			o += 4;
			i++;
		}
	}
	q[o] = '\0';
	if (ret_len)
		*ret_len = o;
	return q;
}

json_t *gs_json_textn(const char *s, size_t len, unsigned flags)
{
	size_t n;
	char *q;
	json_t *j;

	if (!s)
		return json_null();
	q = gs_json_escape_dup(s, len, flags, &n);
	if (!q)
		return NULL;
	/* Valid UTF-8 by construction; jansson checks it once more. */
	j = json_stringn(q, n);
	free(q);
	return j;
}

json_t *gs_json_text(const char *s)
{
	return s ? gs_json_textn(s, strlen(s), 0) : json_null();
}

/* How text from outside gpuslate is written out. Process names (comm,
 * cmdline, the executable), cgroup paths and the unit and container names in
 * them, NVML's strings, the error text of the commands gpuslate runs
 * (systemctl, pct), other hosts' output in a fleet, and the operator's own
 * filter values are chosen by someone else: they must not move the cursor,
 * retitle or clear a terminal, forge a report or log line, or make the JSON
 * library refuse a string (jansson's json_string returns NULL on invalid
 * UTF-8, and the key then silently vanishes). docs/security.md and
 * docs/json.md document the rules; this is the one implementation of each.
 *
 * Text (terminals, logs, CSV, nvidia-smi style output, the one-line summary):
 * printable ASCII (0x20-0x7e) as it is, every other byte as the four
 * characters \xNN (lower-case hex): control characters, ESC, DEL, line
 * breaks, and anything from 0x80 up, valid UTF-8 or not. One byte in gives
 * one column out or four, so tables keep their alignment.
 *
 * JSON: well-formed UTF-8 as it is, except control characters (C0, DEL and
 * the C1 range U+0080-U+009F, which some terminals obey); those and every
 * byte that is not part of well-formed UTF-8 (overlong forms, surrogates,
 * truncated sequences, bytes above U+10FFFF) as \xNN text. The result is
 * always valid UTF-8 that jansson accepts.
 *
 * A backslash is kept as it is in both (systemd's own unit names carry
 * \x2d escapes, and they must read as systemd writes them), so "\x1b" in
 * the output may also be those four characters in the original. Both
 * escapings are idempotent: escaping escaped text changes nothing. */
#ifndef GS_SANITIZE_H
#define GS_SANITIZE_H

#include <jansson.h>
#include <stddef.h>

enum {
	/* Multi-line text (a host's stderr, a host's report text): keep
	 * newlines and tabs; still escape carriage returns and every other
	 * control character. */
	GS_ESC_LINES = 1u << 0,
};

/* Text escaping of len bytes of s into dst (size bytes, NUL-terminated).
 * An escape is never cut: text that does not fit ends in "...". Returns dst. */
char *gs_text_escape(char *dst, size_t size, const char *s, size_t len, unsigned flags);

/* The same for a NUL-terminated string (NULL reads as ""); returns buf. */
const char *gs_safe(const char *s, char *buf, size_t size);

/* Escaped text of at most max bytes of s (len bytes); "..." marks a cut.
 * malloc'd; NULL on allocation failure. */
char *gs_text_dup(const char *s, size_t len, size_t max);

/* For an argument of printf and friends: the escaped text of s in a buffer
 * that lives until the end of the enclosing block. */
#define GS_SAFE_SIZE 1024
#define GS_SAFE(s) gs_safe((s), (char[GS_SAFE_SIZE]){ 0 }, GS_SAFE_SIZE)

/* Bytes that form well-formed UTF-8 at s (1 to 4), or 0 when the byte at s
 * does not begin a well-formed sequence within len bytes. *ret_cp gets the
 * code point. */
size_t gs_utf8_char(const char *s, size_t len, unsigned *ret_cp);

/* JSON escaping of len bytes of s: malloc'd, NUL-terminated, its length in
 * *ret_len (when not NULL). NULL on allocation failure. */
char *gs_json_escape_dup(const char *s, size_t len, unsigned flags, size_t *ret_len);

/* A JSON string of outside text, escaped as above; s NULL gives JSON null.
 * NULL only when memory runs out. */
json_t *gs_json_text(const char *s);
json_t *gs_json_textn(const char *s, size_t len, unsigned flags);

#endif

/* Small helpers shared by every module: checked number parsing, cleanup
 * attributes, bounded string copies and monotonic time.
 * Convention: functions return 0 (or a count) on success and -errno on failure. */
#ifndef GS_UTIL_H
#define GS_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define GS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define GS_MIB (1024ULL * 1024ULL)

/* Cleanup attributes: every resource has one owner and one cleanup path. */
static inline void gs_freep(void *p) { free(*(void **)p); }
static inline void gs_closep(int *fd) { if (*fd >= 0) close(*fd); }
#define _cleanup_free_ __attribute__((cleanup(gs_freep)))
#define _cleanup_close_ __attribute__((cleanup(gs_closep)))

/* Hand ownership on: returns the value and leaves the variable empty. */
#define GS_TAKE_PTR(p) ({ __typeof__(p) _t = (p); (p) = NULL; _t; })
#define GS_TAKE_FD(fd) ({ int _t = (fd); (fd) = -1; _t; })

/* Room for element n of a malloc'd array arr of cap elements: doubles cap
 * (from 8) when n reached it. 0, or -ENOMEM with arr and cap untouched. */
#define GS_ARRAY_RESERVE(arr, cap, n)                                                        \
	({                                                                                   \
		int _r = 0;                                                                  \
		if ((n) >= (cap)) {                                                          \
			size_t _nc = (cap) ? (cap) * 2 : 8;                                  \
			__typeof__(arr) _na = reallocarray((arr), _nc, sizeof(*(arr)));       \
			if (_na) {                                                           \
				(arr) = _na;                                                 \
				(cap) = _nc;                                                 \
			} else {                                                             \
				_r = -ENOMEM;                                                \
			}                                                                    \
		}                                                                            \
		_r;                                                                          \
	})

/* Checked parsers: whole string must be consumed, no sign, no overflow.
 * Return 0 or -EINVAL / -ERANGE. */
int gs_parse_u64(const char *s, uint64_t *ret);
int gs_parse_u32(const char *s, uint32_t *ret);
int gs_parse_pid(const char *s, pid_t *ret);
/* A duration as systemd and timeout(1) write it: seconds with an optional
 * fraction ("10", "0.5"), or numbers with units, summed: "90s", "2m",
 * "500ms", "1.5h", "1m30s", "1min 30s" (ms, s, m, h, d and systemd's long
 * names). At most 7 days. Rejects signs, exponents, hex, NaN, a unit alone. */
int gs_parse_duration(const char *s, uint64_t *ret_ms);
/* The same (the older name, kept for callers that say seconds). */
int gs_parse_seconds(const char *s, uint64_t *ret_ms);

/* Write a one-line error message into err (when err is non-NULL and errlen
 * is not 0): the convention of the parsers that explain what they refuse. */
void gs_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* strlcpy-like: always NUL-terminates, returns strlen(src). */
size_t gs_strlcpy(char *dst, const char *src, size_t size);
/* Trim ASCII whitespace at both ends in place; returns s. */
char *gs_strstrip(char *s);
/* The next "KEY=VALUE" line of text (as systemctl show prints them),
 * split in place: *cursor starts at the text and moves on; lines without
 * '=' are skipped. false at the end. */
bool gs_next_property(char **cursor, char **key, char **value);
bool gs_startswith(const char *s, const char *prefix);
bool gs_endswith(const char *s, const char *suffix);

/* Read a whole file relative to dirfd (AT_FDCWD allowed) into a NUL-terminated
 * malloc'd buffer (up to max bytes; larger files are truncated). */
int gs_read_file_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len);

/* opendir() of path relative to dirfd, with its own fd (so the stream's
 * offset is not shared with dirfd). NULL with errno set on failure. */
DIR *gs_opendir_at(int dirfd, const char *path);

/* Read a small file relative to dirfd that holds one unsigned decimal number
 * and a newline (a sysfs attribute such as mem_info_vram_used). Returns 0,
 * -errno of the read, or -EINVAL/-ERANGE when it holds anything else. */
int gs_read_u64_at(int dirfd, const char *path, uint64_t *ret);

/* Read fd to its end into a NUL-terminated malloc'd buffer of at most max
 * bytes: with truncate the rest is ignored, without it -EFBIG. */
int gs_read_fd(int fd, size_t max, bool truncate, char **ret_buf, size_t *ret_len);

/* Monotonic clock in nanoseconds / milliseconds. */
uint64_t gs_now_ns(void);
static inline uint64_t gs_now_ms(void) { return gs_now_ns() / 1000000ULL; }

/* The uid of a user name from the system's user database (NSS); -ENOENT
 * when there is no such user. */
int gs_user_uid(const char *name, uid_t *ret);

#endif

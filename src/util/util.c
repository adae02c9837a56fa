#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int gs_parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

int gs_parse_u32(const char *s, uint32_t *ret)
{
	uint64_t v;
	int r = gs_parse_u64(s, &v);

	if (r < 0)
		return r;
	if (v > UINT32_MAX)
		return -ERANGE;
	*ret = (uint32_t)v;
	return 0;
}

int gs_parse_pid(const char *s, pid_t *ret)
{
	uint64_t v;
	int r = gs_parse_u64(s, &v);

	if (r < 0)
		return r;
	if (v == 0 || v > INT_MAX)
		return -ERANGE;
	*ret = (pid_t)v;
	return 0;
}

/* Duration units as systemd.time(7) and timeout(1) write them. */
static const struct {
	const char *name;
	uint64_t ms;
} duration_units[] = {
	{ "ms", 1 }, { "msec", 1 },
	{ "s", 1000 }, { "sec", 1000 }, { "second", 1000 }, { "seconds", 1000 },
	{ "m", 60000 }, { "min", 60000 }, { "minute", 60000 }, { "minutes", 60000 },
	{ "h", 3600000 }, { "hr", 3600000 }, { "hour", 3600000 }, { "hours", 3600000 },
	{ "d", 86400000 }, { "day", 86400000 }, { "days", 86400000 },
};

#define GS_DURATION_MAX_MS (7ULL * 24 * 3600 * 1000)

int gs_parse_duration(const char *s, uint64_t *ret_ms)
{
	/* Summed in microseconds, so "0.5ms" + "1.5ms" is exact and every
	 * component is rounded once, at the end. */
	uint64_t total_us = 0;
	bool any = false;

	if (!s)
		return -EINVAL;
	for (;;) {
		uint64_t whole = 0, frac = 0, frac_div = 1, unit_ms = 1000, part_us;
		size_t ulen = 0;
		bool digits = false;

		while (*s == ' ')
			s++;
		if (!*s)
			break;
		/* Digits only: no sign, no exponent, no hex, no "inf" (strtod
		 * would take them all). */
		for (; isdigit((unsigned char)*s); s++, digits = true) {
			if (whole > GS_DURATION_MAX_MS)
				return -ERANGE;
			whole = whole * 10 + (uint64_t)(*s - '0');
		}
		if (*s == '.') {
			for (s++; isdigit((unsigned char)*s); s++, digits = true)
				if (frac_div < 1000000ULL) { /* microseconds of a day still fit */
					frac = frac * 10 + (uint64_t)(*s - '0');
					frac_div *= 10;
				}
		}
		if (!digits)
			return -EINVAL;
		while (*s == ' ' && isalpha((unsigned char)s[strspn(s, " ")]))
			s++; /* "1 min", as systemd allows */
		while (isalpha((unsigned char)s[ulen]))
			ulen++;
		if (ulen) {
			size_t i;

			for (i = 0; i < GS_ARRAY_SIZE(duration_units); i++)
				if (strlen(duration_units[i].name) == ulen && !strncmp(s, duration_units[i].name, ulen))
					break;
			if (i == GS_ARRAY_SIZE(duration_units))
				return -EINVAL;
			unit_ms = duration_units[i].ms;
			s += ulen;
		} else if (any) {
			/* Only a lone number may go without a unit ("1m 30"
			 * is a typo, not 1m30s). */
			return -EINVAL;
		}
		if (whole > GS_DURATION_MAX_MS / unit_ms + 1)
			return -ERANGE;
		part_us = whole * unit_ms * 1000 + frac * unit_ms * 1000 / frac_div;
		total_us += part_us;
		if (total_us > GS_DURATION_MAX_MS * 1000)
			return -ERANGE;
		any = true;
		if (!ulen)
			break; /* a bare number ends the duration */
	}
	while (*s == ' ')
		s++;
	if (!any || *s)
		return -EINVAL;
	*ret_ms = (total_us + 500) / 1000;
	return 0;
}

int gs_parse_seconds(const char *s, uint64_t *ret_ms)
{
	return gs_parse_duration(s, ret_ms);
}

void gs_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

size_t gs_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (size > 0) {
		size_t c = n < size - 1 ? n : size - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

char *gs_strstrip(char *s)
{
	char *e;

	while (*s && isspace((unsigned char)*s))
		memmove(s, s + 1, strlen(s));
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

bool gs_next_property(char **cursor, char **key, char **value)
{
	while (*cursor && **cursor) {
		char *line = *cursor, *nl = strchr(line, '\n'), *eq;

		if (nl)
			*nl = '\0';
		*cursor = nl ? nl + 1 : line + strlen(line);
		eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		*key = line;
		*value = eq + 1;
		return true;
	}
	return false;
}

bool gs_startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool gs_endswith(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

int gs_read_fd(int fd, size_t max, bool truncate, char **ret_buf, size_t *ret_len)
{
	size_t cap = max < 4096 ? max : 4096, len = 0;
	char *buf;

	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= max) {
				char probe;

				/* Full: is there more than max? */
				if (truncate)
					break;
				do
					n = read(fd, &probe, 1);
				while (n < 0 && errno == EINTR);
				if (n == 0)
					break;
				free(buf);
				return n < 0 ? -errno : -EFBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}

int gs_read_file_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return gs_read_fd(fd, max, true, ret_buf, ret_len);
}

DIR *gs_opendir_at(int dirfd, const char *path)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return d;
}

int gs_read_u64_at(int dirfd, const char *path, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = gs_read_file_at(dirfd, path, 64, &buf, &len);
	if (r < 0)
		return r;
	/* sysfs prints "%llu\n": the newline goes, nothing else is allowed. */
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return gs_parse_u64(buf, ret);
}

uint64_t gs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int gs_user_uid(const char *name, uid_t *ret)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return -ENOENT;
	*ret = res->pw_uid;
	return 0;
}

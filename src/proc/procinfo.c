/* /proc/PID/{stat,status,cmdline,cgroup,wchan} readers.
 *
 * All of this text is shaped by the process we look at (comm, argv) or by
 * whoever named its cgroup, so nothing here trusts a length, a separator or a
 * number format: fields are cut with explicit bounds and go through the
 * checked parsers of util.h. */
#include "proc/procinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

/* Every stat field after comm is a decimal number, at most 20 digits and a sign. */
#define STAT_TOKEN_MAX 32
/* Tokens after the last ')': token 0 is field 3 (state). */
#define STAT_TOK(field) ((field) - 3)

#define READ_MAX_SMALL 4096           /* stat, status, cmdline, wchan */
#define READ_MAX_CGROUP (64 * 1024)   /* a dozen v1 hierarchies with deep paths */

static int parse_nonneg_pid(const char *s, pid_t *ret)
{
	uint64_t v;
	int r = gs_parse_u64(s, &v);

	/* ppid, pgrp and session are 0 for init, kthreadd and kernel threads */
	if (r < 0)
		return r;
	if (v > INT_MAX)
		return -ERANGE;
	*ret = (pid_t)v;
	return 0;
}

int gs_parse_pidstat(const char *text, struct gs_pidstat *ret)
{
	char tok[STAT_TOKEN_MAX], pidbuf[16];
	const char *open, *close, *p;
	uint64_t v;
	size_t len;

	memset(ret, 0, sizeof(*ret));
	if (!text)
		return -EINVAL;
	/* comm may hold ')', spaces and newlines: it ends at the LAST ')' */
	open = strchr(text, '(');
	close = strrchr(text, ')');
	if (!open || !close || close < open)
		return -EINVAL;

	/* "<pid> (" */
	len = (size_t)(open - text);
	if (len < 2 || len > sizeof(pidbuf) || text[len - 1] != ' ')
		return -EINVAL;
	memcpy(pidbuf, text, len - 1);
	pidbuf[len - 1] = '\0';
	if (gs_parse_pid(pidbuf, &ret->pid) < 0)
		return -EINVAL;

	len = (size_t)(close - open - 1);
	if (len > sizeof(ret->comm) - 1)
		len = sizeof(ret->comm) - 1;
	memcpy(ret->comm, open + 1, len);
	ret->comm[len] = '\0';

	if (close[1] != ' ')
		return -EINVAL;
	p = close + 2;
	/* Walk up to field 23: requiring the field after starttime means a text
	 * cut inside starttime is rejected rather than read as a smaller number. */
	for (int i = 0; i <= STAT_TOK(23); i++) {
		size_t tl = strcspn(p, " \n");

		if (tl == 0 || tl >= sizeof(tok))
			return -EINVAL;
		memcpy(tok, p, tl);
		tok[tl] = '\0';
		p += tl;
		if (*p == ' ')
			p++;
		else if (i < STAT_TOK(23))
			return -EINVAL;

		switch (i) {
		case STAT_TOK(3):
			if (tl != 1)
				return -EINVAL;
			ret->state = tok[0];
			break;
		case STAT_TOK(4):
			if (parse_nonneg_pid(tok, &ret->ppid) < 0)
				return -EINVAL;
			break;
		case STAT_TOK(5):
			if (parse_nonneg_pid(tok, &ret->pgrp) < 0)
				return -EINVAL;
			break;
		case STAT_TOK(6):
			if (parse_nonneg_pid(tok, &ret->session) < 0)
				return -EINVAL;
			break;
		case STAT_TOK(9):
			if (gs_parse_u64(tok, &v) < 0 || v > UINT_MAX)
				return -EINVAL;
			ret->flags = (unsigned)v;
			break;
		case STAT_TOK(22):
			if (gs_parse_u64(tok, &ret->starttime) < 0)
				return -EINVAL;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* The first whitespace-separated token at *p; advances *p past it. */
static size_t next_token(const char **p, const char *end, char *tok, size_t size, bool *too_long)
{
	const char *s = *p;
	size_t len;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	len = 0;
	while (s + len < end && s[len] != ' ' && s[len] != '\t')
		len++;
	*p = s + len;
	*too_long = len >= size;
	if (len == 0 || *too_long)
		return len;
	memcpy(tok, s, len);
	tok[len] = '\0';
	return len;
}

/* A signal mask as the kernel prints it: _NSIG/4 hex digits (16 on most
 * architectures, 32 on MIPS). The low 64 bits are the last 16 digits. */
static bool parse_sigmask(const char *p, const char *end, uint64_t *ret)
{
	char tok[40];
	bool too_long;
	size_t len = next_token(&p, end, tok, sizeof(tok), &too_long);
	uint64_t v = 0;

	if (len == 0 || too_long || len > 32)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = tok[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		v = (v << 4) | d; /* digits beyond 16 shift out: signals above 64 */
	}
	*ret = v;
	return true;
}

int gs_parse_pidstatus(const char *text, struct gs_pidstatus *ret)
{
	bool have_uid = false, have_blk = false, have_ign = false, have_cgt = false;
	bool bad_mask = false;
	const char *line = text;

	memset(ret, 0, sizeof(*ret));
	if (!text)
		return -EINVAL;

	while (*line) {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol : line + strlen(line);
		const char *p;
		char tok[24];
		bool too_long;

		/* The kernel escapes Name:, so a line start is a real key; the
		 * first occurrence of a key wins all the same. */
		if (!have_uid && gs_startswith(line, "Uid:")) {
			uint32_t uid;

			p = line + 4;
			if (next_token(&p, end, tok, sizeof(tok), &too_long) == 0 || too_long ||
			    gs_parse_u32(tok, &uid) < 0)
				return -EINVAL;
			ret->uid = (uid_t)uid;
			have_uid = true;
		} else if (!ret->has_nspid && gs_startswith(line, "NSpid:")) {
			pid_t last = 0;

			/* outermost first, the process's own namespace last */
			p = line + 6;
			while (next_token(&p, end, tok, sizeof(tok), &too_long) > 0) {
				if (too_long || gs_parse_pid(tok, &last) < 0)
					return -EINVAL;
			}
			if (last == 0)
				return -EINVAL;
			ret->nspid = last;
			ret->has_nspid = true;
		} else if (!have_blk && gs_startswith(line, "SigBlk:")) {
			have_blk = true;
			bad_mask |= !parse_sigmask(line + 7, end, &ret->sig_blk);
		} else if (!have_ign && gs_startswith(line, "SigIgn:")) {
			have_ign = true;
			bad_mask |= !parse_sigmask(line + 7, end, &ret->sig_ign);
		} else if (!have_cgt && gs_startswith(line, "SigCgt:")) {
			have_cgt = true;
			bad_mask |= !parse_sigmask(line + 7, end, &ret->sig_cgt);
		}
		if (!eol)
			break;
		line = eol + 1;
	}
	ret->has_sigmasks = have_blk && have_ign && have_cgt && !bad_mask;
	if (!ret->has_sigmasks)
		ret->sig_blk = ret->sig_ign = ret->sig_cgt = 0;
	return have_uid ? 0 : -EINVAL;
}

#define SIGBIT(sig) (1ULL << ((sig) - 1))

enum gs_term_fate gs_pidstatus_term_fate(const struct gs_pidstatus *s)
{
	if (!s->has_sigmasks)
		return GS_TERM_UNKNOWN;
	/* A blocked signal is queued whatever its disposition (the kernel
	 * never ignores one: the handler may change before it is unblocked). */
	if (s->sig_blk & SIGBIT(SIGTERM))
		return GS_TERM_DELIVERED;
	if (s->sig_ign & SIGBIT(SIGTERM))
		return GS_TERM_IGNORED;
	/* The init of a PID namespace gets from outside only the signals it
	 * installed a handler for (and SIGKILL, SIGSTOP). The host's own PID 1
	 * is never a target. */
	if (s->has_nspid && s->nspid == 1 && !(s->sig_cgt & SIGBIT(SIGTERM)))
		return GS_TERM_NS_INIT;
	return GS_TERM_DELIVERED;
}

const char *gs_term_fate_str(enum gs_term_fate f)
{
	switch (f) {
	case GS_TERM_IGNORED: return "ignored";
	case GS_TERM_NS_INIT: return "namespace-init";
	case GS_TERM_UNKNOWN:
	case GS_TERM_DELIVERED:
		break;
	}
	return NULL;
}

/* /proc/PID/status of the process with that start time (a reused PID
 * answers -ESRCH). */
static int pidstatus_read_checked(int proc_fd, pid_t pid, uint64_t starttime, struct gs_pidstatus *ret)
{
	_cleanup_free_ char *buf = NULL;
	struct gs_pidstat st;
	char path[32];
	int r;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "%d/status", (int)pid);
	r = gs_read_file_at(proc_fd, path, READ_MAX_SMALL * 4, &buf, NULL);
	if (r < 0)
		return r;
	r = gs_parse_pidstatus(buf, ret);
	if (r < 0)
		return r;
	/* Read before the identity check: if the start time still matches
	 * after, the text was this process's. */
	r = gs_pidstat_read(proc_fd, pid, &st);
	if (r < 0)
		return r;
	return st.starttime == starttime ? 0 : -ESRCH;
}

int gs_term_fate_read(int proc_fd, pid_t pid, uint64_t starttime, enum gs_term_fate *ret)
{
	struct gs_pidstatus ps;
	int r;

	*ret = GS_TERM_UNKNOWN;
	r = pidstatus_read_checked(proc_fd, pid, starttime, &ps);
	if (r < 0)
		return r;
	*ret = gs_pidstatus_term_fate(&ps);
	return 0;
}

int gs_pidns_init_read(int proc_fd, pid_t pid, uint64_t starttime)
{
	struct gs_pidstatus ps;
	int r = pidstatus_read_checked(proc_fd, pid, starttime, &ps);

	if (r < 0)
		return r;
	return ps.has_nspid && ps.nspid == 1;
}

int gs_pidstat_read(int proc_fd, pid_t pid, struct gs_pidstat *ret)
{
	_cleanup_free_ char *buf = NULL;
	char path[32];
	int r;

	memset(ret, 0, sizeof(*ret));
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	r = gs_read_file_at(proc_fd, path, READ_MAX_SMALL, &buf, NULL);
	if (r < 0)
		return r;
	r = gs_parse_pidstat(buf, ret);
	if (r < 0)
		return r;
	/* The entry must describe the process asked for. */
	if (ret->pid != pid)
		return -ESRCH;
	return 0;
}

/* A bounded copy, bytes as the process wrote them: these are facts, and
 * each output escapes them its own way (util/sanitize.h: \xNN text for
 * terminals and logs, valid UTF-8 for JSON). */
static void copy_bounded(char *dst, size_t size, const char *src, size_t len)
{
	size_t i;

	if (size == 0)
		return;
	for (i = 0; i < len && i < size - 1; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

/* argv as one line: NULs between arguments become spaces. */
static void fill_cmdline(struct gs_procinfo *pi, const char *buf, size_t len)
{
	const char *argv0, *base, *slash;
	size_t a0len, o = 0;

	/* Trailing NULs are the terminator of the last argument, or the padding
	 * left by programs that rewrite their argv (setproctitle). */
	while (len > 0 && buf[len - 1] == '\0')
		len--;
	for (size_t i = 0; i < len && o < sizeof(pi->cmdline) - 1; i++)
		pi->cmdline[o++] = buf[i] == '\0' ? ' ' : buf[i];
	pi->cmdline[o] = '\0';

	argv0 = buf;
	a0len = strnlen(buf, len);
	pi->argv0_len = a0len < o ? a0len : o;
	slash = a0len ? memrchr(argv0, '/', a0len) : NULL;
	base = slash ? slash + 1 : argv0;
	a0len -= (size_t)(base - argv0);
	if (a0len > 0)
		copy_bounded(pi->name, sizeof(pi->name), base, a0len);
}

static void fill_user(struct gs_procinfo *pi)
{
	long sz = sysconf(_SC_GETPW_R_SIZE_MAX);
	size_t size = sz > 0 ? (size_t)sz : 16384;
	struct passwd pw, *res = NULL;
	int r;

	for (;;) {
		_cleanup_free_ char *buf = malloc(size);

		if (!buf)
			break;
		r = getpwuid_r(pi->status.uid, &pw, buf, size, &res);
		if (r == ERANGE && size < 1024 * 1024) {
			size *= 2;
			continue;
		}
		/* A name cut to fit could be another user's: use the number. */
		if (r == 0 && res && res->pw_name && res->pw_name[0] &&
		    strlen(res->pw_name) < sizeof(pi->user)) {
			copy_bounded(pi->user, sizeof(pi->user), res->pw_name, strlen(res->pw_name));
			return;
		}
		break;
	}
	snprintf(pi->user, sizeof(pi->user), "%u", (unsigned)pi->status.uid);
}

/* The executable: the link names the file the kernel runs (a symlink or a
 * renamed copy resolves to what it is). Reading the link never touches the
 * executable's file system. Unreadable (another user's process, a kernel
 * thread): exe_ok stays false. */
static void read_exe(int pid_dirfd, struct gs_procinfo *pi)
{
	static const char deleted[] = " (deleted)";
	char path[4096];
	ssize_t n = readlinkat(pid_dirfd, "exe", path, sizeof(path) - 1);
	const char *base;
	size_t len;

	if (n <= 0)
		return;
	len = (size_t)n;
	path[len] = '\0';
	if (len > sizeof(deleted) - 1 && !strcmp(path + len - (sizeof(deleted) - 1), deleted))
		path[len - (sizeof(deleted) - 1)] = '\0';
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!*base || strlen(base) >= sizeof(pi->exe_name))
		return;
	copy_bounded(pi->exe_name, sizeof(pi->exe_name), base, strlen(base));
	pi->exe_ok = true;
}

int gs_procinfo_read_exe_stat(int pid_dirfd, struct gs_procinfo *pi)
{
	struct statx stx;

	/* Through the link: the file itself, even deleted or in another mount
	 * namespace. DONT_SYNC: the attributes the kernel has, no asking a
	 * server (the owner of a daemon's binary does not change under it). */
	if (statx(pid_dirfd, "exe", AT_STATX_DONT_SYNC, STATX_UID | STATX_MODE, &stx) < 0)
		return -errno;
	pi->exe_uid = stx.stx_uid;
	pi->exe_mode = stx.stx_mode;
	pi->exe_stat_ok = true;
	return 0;
}

int gs_procinfo_read_cmdline(int pid_dirfd, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	*ret = NULL;
	r = gs_read_file_at(pid_dirfd, "cmdline", GS_CMDLINE_MAX, &buf, &len);
	if (r < 0)
		return r;
	while (len > 0 && buf[len - 1] == '\0')
		len--;
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[len] = '\0';
	*ret = buf;
	return 0;
}

int gs_procinfo_read(int pid_dirfd, pid_t pid, struct gs_procinfo *ret)
{
	_cleanup_free_ char *stat = NULL, *status = NULL, *cmdline = NULL, *cgroup = NULL;
	size_t len = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (pid <= 0 || pid_dirfd < 0)
		return -EINVAL;

	r = gs_read_file_at(pid_dirfd, "stat", READ_MAX_SMALL, &stat, NULL);
	if (r < 0)
		return r;
	r = gs_parse_pidstat(stat, &ret->st);
	if (r < 0)
		return r;
	if (ret->st.pid != pid)
		return -ESRCH;

	r = gs_read_file_at(pid_dirfd, "status", READ_MAX_SMALL * 4, &status, NULL);
	if (r < 0)
		return r;
	r = gs_parse_pidstatus(status, &ret->status);
	if (r < 0)
		return r;
	if (!ret->status.has_nspid)
		ret->status.nspid = pid;

	/* cmdline is empty for kernel threads and zombies, and unreadable under
	 * some hidepid setups: the name then falls back to comm. */
	r = gs_read_file_at(pid_dirfd, "cmdline", READ_MAX_SMALL, &cmdline, &len);
	if (r == -ENOMEM)
		return r;
	if (r >= 0)
		fill_cmdline(ret, cmdline, len);
	if (!ret->name[0])
		copy_bounded(ret->name, sizeof(ret->name), ret->st.comm, strlen(ret->st.comm));

	read_exe(pid_dirfd, ret);
	{
		struct stat ns;

		/* stat follows the magic link to the namespace's own inode. */
		if (fstatat(pid_dirfd, "ns/pid", &ns, 0) == 0) {
			ret->pidns_ok = true;
			ret->pidns_dev = ns.st_dev;
			ret->pidns_ino = ns.st_ino;
		}
	}

	r = gs_read_file_at(pid_dirfd, "cgroup", READ_MAX_CGROUP, &cgroup, NULL);
	if (r == -ENOMEM)
		return r;
	if (r >= 0)
		(void)gs_owner_from_cgroup(cgroup, &ret->owner); /* kind none on garbage */

	if (ret->st.state == 'D') {
		_cleanup_free_ char *wchan = NULL;

		if (gs_read_file_at(pid_dirfd, "wchan", READ_MAX_SMALL, &wchan, &len) >= 0) {
			len = strcspn(wchan, "\n");
			/* "0": not sleeping, or the symbol is hidden from us */
			if (!(len == 1 && wchan[0] == '0'))
				copy_bounded(ret->wchan, sizeof(ret->wchan), wchan, len);
		}
	}

	fill_user(ret);
	return 0;
}

#include "proc/supervised.h"
#include "proc/ptable.h"
#include "proc/procinfo.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *gs_sup_kind_str(enum gs_sup_kind k)
{
	switch (k) {
	case GS_SUP_SUPERVISORD: return "supervisord";
	case GS_SUP_RUNIT: return "runit";
	case GS_SUP_S6: return "s6";
	case GS_SUP_NONE: break;
	}
	return "none";
}

enum gs_sup_kind gs_sup_kind_from_str(const char *s)
{
	if (!strcmp(s, "supervisord"))
		return GS_SUP_SUPERVISORD;
	if (!strcmp(s, "runit"))
		return GS_SUP_RUNIT;
	if (!strcmp(s, "s6"))
		return GS_SUP_S6;
	return GS_SUP_NONE;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

int gs_supervisord_config_arg(const char *argv, size_t len, char *buf, size_t buflen)
{
	const char *end = argv + len;

	for (const char *a = argv; a < end;) {
		size_t l = strnlen(a, (size_t)(end - a));
		const char *next = a + l + 1, *file = NULL;

		if (l == (size_t)(end - a))
			return -EINVAL; /* a word the read cut */
		if (!strcmp(a, "-c") || !strcmp(a, "--configuration")) {
			size_t nl;

			if (next >= end)
				return -EINVAL;
			nl = strnlen(next, (size_t)(end - next));
			if (nl == (size_t)(end - next) || !nl)
				return -EINVAL;
			file = next;
		} else if (gs_startswith(a, "--configuration=")) {
			file = a + strlen("--configuration=");
		} else if (a[0] == '-' && a[1] == 'c' && a[2]) {
			file = a + 2;
		}
		if (file)
			return *file && gs_strlcpy(buf, file, buflen) < buflen ? 0 : -EINVAL;
		a = next;
	}
	return -ENOENT;
}

int gs_environ_get(const char *env, size_t len, const char *key, char *buf, size_t buflen)
{
	size_t kl = strlen(key);

	for (size_t off = 0; off < len;) {
		const char *v = env + off;
		size_t vl = strnlen(v, len - off);

		if (vl > kl && !strncmp(v, key, kl) && v[kl] == '=') {
			if (vl - kl - 1 >= buflen)
				return -EINVAL;
			memcpy(buf, v + kl + 1, vl - kl - 1);
			buf[vl - kl - 1] = '\0';
			return 0;
		}
		off += vl + 1;
	}
	return -ENOENT;
}

static int parse_pid_word(const char *s, pid_t *ret)
{
	char word[24];
	size_t n = strspn(s, "-0123456789");

	if (!n || n >= sizeof(word))
		return -EINVAL;
	memcpy(word, s, n);
	word[n] = '\0';
	if (!strcmp(word, "-1") || !strcmp(word, "0")) {
		*ret = 0;
		return 0;
	}
	/* "00", "-5", a number past any PID: not an answer. */
	return gs_parse_pid(word, ret) < 0 ? -EINVAL : 0;
}

int gs_sup_parse_pid(enum gs_sup_kind k, const char *out, pid_t *ret)
{
	const char *p;

	*ret = 0;
	while (*out == ' ' || *out == '\n')
		out++;
	switch (k) {
	case GS_SUP_SUPERVISORD:
	case GS_SUP_S6:
		return parse_pid_word(out, ret);
	case GS_SUP_RUNIT:
		/* "run: DIR: (pid N) Ts[, ...]; run: log: ..." or "down: DIR: ..."
		 * or "finish: DIR: (pid N) ...": only the first part is the
		 * service itself, and only "run" is its program. */
		if (gs_startswith(out, "down: ") || gs_startswith(out, "finish: "))
			return 0;
		if (!gs_startswith(out, "run: "))
			return -EINVAL;
		p = strstr(out, ": (pid ");
		if (!p || (strchr(out, ';') && p > strchr(out, ';')))
			return -EINVAL;
		return parse_pid_word(p + strlen(": (pid "), ret);
	case GS_SUP_NONE:
		break;
	}
	return -EINVAL;
}

int gs_sup_parse_up(enum gs_sup_kind k, const char *out)
{
	while (*out == ' ' || *out == '\n')
		out++;
	switch (k) {
	case GS_SUP_SUPERVISORD: {
		/* "NAME   STATE   details": the second word. */
		const char *s = out + strcspn(out, " \t\n");

		s += strspn(s, " \t");
		if (gs_startswith(s, "RUNNING") || gs_startswith(s, "STARTING") || gs_startswith(s, "BACKOFF"))
			return 1;
		if (gs_startswith(s, "STOPPED") || gs_startswith(s, "EXITED") || gs_startswith(s, "FATAL") ||
		    gs_startswith(s, "STOPPING"))
			return 0;
		return -EINVAL;
	}
	case GS_SUP_RUNIT:
		if (gs_startswith(out, "run: "))
			return 1;
		if (gs_startswith(out, "down: ") || gs_startswith(out, "finish: "))
			return 0;
		return -EINVAL;
	case GS_SUP_S6:
		if (gs_startswith(out, "true"))
			return 1;
		if (gs_startswith(out, "false"))
			return 0;
		return -EINVAL;
	case GS_SUP_NONE:
		break;
	}
	return -EINVAL;
}

/* ---- reading /proc ----------------------------------------------------- */

/* The executable's basename when it is a file root installed (root's,
 * writable by nobody else): what proc/launcher.h trusts. "" otherwise. */
static void trusted_exe(int pid_fd, char *buf, size_t len)
{
	static const char deleted[] = " (deleted)";
	char path[PATH_MAX];
	struct statx st;
	ssize_t n = readlinkat(pid_fd, "exe", path, sizeof(path) - 1);

	buf[0] = '\0';
	if (n <= 0 || statx(pid_fd, "exe", AT_STATX_DONT_SYNC, STATX_UID | STATX_MODE, &st) < 0)
		return;
	path[n] = '\0';
	if ((size_t)n > sizeof(deleted) - 1 && !strcmp(path + n - (sizeof(deleted) - 1), deleted))
		return; /* replaced since: not the supervisor installed now */
	if (st.stx_uid != 0 || (st.stx_mode & (S_IWGRP | S_IWOTH)))
		return;
	gs_strlcpy(buf, base_name(path), len);
}

static int link_at(int pid_fd, const char *what, char *buf, size_t len)
{
	ssize_t n = readlinkat(pid_fd, what, buf, len - 1);

	if (n <= 0 || (size_t)n >= len - 1)
		return -EINVAL;
	buf[n] = '\0';
	return 0;
}

/* Does the process see the file system gpuslate sees (same mount
 * namespace)? Its paths and sockets are then ours to hand to its tool. */
static bool same_mounts(int proc_fd, int pid_fd)
{
	struct stat a, b;

	return fstatat(proc_fd, "self/ns/mnt", &a, 0) == 0 && fstatat(pid_fd, "ns/mnt", &b, 0) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A path a control tool may be handed: absolute, printable, no newline. */
static bool usable_path(const char *s)
{
	if (s[0] != '/')
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static bool python_name(const char *b)
{
	return gs_startswith(b, "python");
}

/* Which supervisor par is, by comm, trusted executable and argv. */
static enum gs_sup_kind supervisor_kind(int pid_fd, const struct gs_pidstat *par, const char *argv, size_t alen)
{
	char exe[256];

	trusted_exe(pid_fd, exe, sizeof(exe));
	if (!exe[0])
		return GS_SUP_NONE;
	if (!strcmp(par->comm, "runsv") && !strcmp(exe, "runsv"))
		return GS_SUP_RUNIT;
	if (!strcmp(par->comm, "s6-supervise") && !strcmp(exe, "s6-supervise"))
		return GS_SUP_S6;
	if (!strcmp(par->comm, "supervisord") && alen) {
		/* A Python script: the interpreter, then the script's path. */
		const char *a0 = argv, *a1 = argv + strnlen(argv, alen) + 1;

		if (!strcmp(exe, "supervisord") && !strcmp(base_name(a0), "supervisord"))
			return GS_SUP_SUPERVISORD;
		if (python_name(exe) && a1 < argv + alen && !strcmp(base_name(a1), "supervisord"))
			return GS_SUP_SUPERVISORD;
	}
	return GS_SUP_NONE;
}

/* supervisord's config as supervisorctl should read it: the file it was
 * started with (relative to its working directory), else the first of its
 * own search list that exists. */
static int supervisord_config(int pid_fd, const char *argv, size_t alen, char *buf, size_t len)
{
	char arg[1024], cwd[PATH_MAX], script[PATH_MAX], dir[PATH_MAX];
	const char *a1 = argv + strnlen(argv, alen) + 1;
	int r = gs_supervisord_config_arg(argv, alen, arg, sizeof(arg));

	if (link_at(pid_fd, "cwd", cwd, sizeof(cwd)) < 0)
		cwd[0] = '\0';
	if (r == 0) {
		int k;

		if (arg[0] == '/')
			k = snprintf(buf, len, "%s", arg);
		else if (cwd[0])
			k = snprintf(buf, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", arg);
		else
			return -ENOENT;
		if (k < 0 || (size_t)k >= len)
			return -EINVAL;
		return access(buf, R_OK) == 0 ? 0 : -ENOENT;
	}
	if (r != -ENOENT)
		return r;
	/* Its search: beside the script's directory, the working
	 * directory, then /etc (supervisord's documented order). */
	snprintf(script, sizeof(script), "%s", a1 < argv + alen ? a1 : argv);
	snprintf(dir, sizeof(dir), "%s", script);
	if (strrchr(dir, '/'))
		*strrchr(dir, '/') = '\0';
	else
		dir[0] = '\0';
	{
		char cand[6][PATH_MAX + 32];
		size_t n = 0;

		if (dir[0] == '/') {
			snprintf(cand[n++], sizeof(cand[0]), "%s/../etc/supervisord.conf", dir);
			snprintf(cand[n++], sizeof(cand[0]), "%s/../supervisord.conf", dir);
		}
		if (cwd[0] == '/') {
			snprintf(cand[n++], sizeof(cand[0]), "%s/supervisord.conf", cwd);
			snprintf(cand[n++], sizeof(cand[0]), "%s/etc/supervisord.conf", cwd);
		}
		snprintf(cand[n++], sizeof(cand[0]), "/etc/supervisord.conf");
		snprintf(cand[n++], sizeof(cand[0]), "/etc/supervisor/supervisord.conf");
		for (size_t i = 0; i < n; i++)
			if (access(cand[i], R_OK) == 0)
				return gs_strlcpy(buf, cand[i], len) < len ? 0 : -EINVAL;
	}
	return -ENOENT;
}

/* A config file supervisorctl may read for us: it names the socket the
 * stop goes to, so only one that nobody but root (or the supervisor's own
 * user) could have written. */
static bool config_trusted(const char *path, uid_t sup_uid)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_uid == 0 || st.st_uid == sup_uid) &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

static int fill_supervisord(int proc_fd, int sup_fd, const char *argv, size_t alen, const struct gs_pidstat *main,
			    struct gs_supervised *ret)
{
	char path[32], group[128], name[128], url[1024];
	char *env = NULL;
	size_t elen = 0;
	int r;

	snprintf(path, sizeof(path), "%d/environ", (int)main->pid);
	r = gs_read_file_at(proc_fd, path, 256 * 1024, &env, &elen);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	/* supervisord's own words to its program: without them it is not
	 * one of its programs (a process it runs some other way). */
	if (gs_environ_get(env, elen, "SUPERVISOR_ENABLED", url, sizeof(url)) < 0 ||
	    gs_environ_get(env, elen, "SUPERVISOR_GROUP_NAME", group, sizeof(group)) < 0 ||
	    gs_environ_get(env, elen, "SUPERVISOR_PROCESS_NAME", name, sizeof(name)) < 0 || !group[0] || !name[0] ||
	    strpbrk(group, ": \t\n") || strpbrk(name, ": \t\n")) {
		free(env);
		return 0;
	}
	snprintf(ret->name, sizeof(ret->name), "%s:%s", group, name);
	if (supervisord_config(sup_fd, argv, alen, ret->control, sizeof(ret->control)) == 0 &&
	    usable_path(ret->control) && config_trusted(ret->control, ret->sup_uid)) {
		gs_strlcpy(ret->control_opt, "-c", sizeof(ret->control_opt));
	} else if (gs_environ_get(env, elen, "SUPERVISOR_SERVER_URL", url, sizeof(url)) == 0 &&
		   (gs_startswith(url, "unix:///") || gs_startswith(url, "http://")) && !strpbrk(url, " \t\n")) {
		gs_strlcpy(ret->control_opt, "-s", sizeof(ret->control_opt));
		gs_strlcpy(ret->control, url, sizeof(ret->control));
	} else {
		ret->control[0] = '\0';
	}
	free(env);
	return ret->control[0] ? 1 : 0;
}

/* runsv runs the service (./run) and its log (./log/run): which one is
 * main says the pid file runsv keeps for each. */
static int fill_runit(int sup_fd, const struct gs_pidstat *main, struct gs_supervised *ret)
{
	char cwd[PATH_MAX], pidfile[PATH_MAX + 32];
	static const char *const sub[] = { "", "/log" };

	if (link_at(sup_fd, "cwd", cwd, sizeof(cwd)) < 0 || !usable_path(cwd))
		return 0;
	for (size_t i = 0; i < GS_ARRAY_SIZE(sub); i++) {
		uint64_t v;

		snprintf(pidfile, sizeof(pidfile), "%s%s/supervise/pid", cwd, sub[i]);
		if (gs_read_u64_at(AT_FDCWD, pidfile, &v) == 0 && v == (uint64_t)main->pid) {
			int k = snprintf(ret->name, sizeof(ret->name), "%s%s", cwd, sub[i]);

			return k > 0 && (size_t)k < sizeof(ret->name) ? 1 : 0;
		}
	}
	return 0;
}

static int fill_s6(int sup_fd, struct gs_supervised *ret)
{
	char cwd[PATH_MAX];

	if (link_at(sup_fd, "cwd", cwd, sizeof(cwd)) < 0 || !usable_path(cwd) || strlen(cwd) >= sizeof(ret->name))
		return 0;
	gs_strlcpy(ret->name, cwd, sizeof(ret->name));
	return 1;
}

int gs_supervised_find(int proc_fd, const struct gs_ptable *pt, pid_t pid, struct gs_supervised *ret)
{
	const struct gs_pidstat *child = gs_ptable_find(pt, pid);

	memset(ret, 0, sizeof(*ret));
	for (int depth = 0; child && depth < 64; depth++) {
		const struct gs_pidstat *par;
		char dir[32], *argv = NULL;
		size_t alen = 0;
		enum gs_sup_kind k;
		int fd, r = 0;

		if (child->ppid <= 1)
			return 0;
		par = gs_ptable_find(pt, child->ppid);
		if (!par)
			return 0;
		/* A service manager's child: its own restarts are the unit's. */
		if (!strcmp(par->comm, "systemd"))
			return 0;
		if (strcmp(par->comm, "supervisord") && strcmp(par->comm, "runsv") && strcmp(par->comm, "s6-supervise")) {
			child = par;
			continue;
		}
		snprintf(dir, sizeof(dir), "%d", (int)par->pid);
		fd = openat(proc_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		if (gs_read_file_at(fd, "cmdline", 64 * 1024, &argv, &alen) < 0) {
			close(fd);
			return 0;
		}
		k = supervisor_kind(fd, par, argv, alen);
		if (k != GS_SUP_NONE && same_mounts(proc_fd, fd)) {
			struct gs_pidstatus status;
			char *txt = NULL;

			ret->kind = k;
			ret->sup_pid = par->pid;
			ret->sup_starttime = par->starttime;
			ret->main_pid = child->pid;
			ret->main_starttime = child->starttime;
			if (gs_read_file_at(fd, "status", 64 * 1024, &txt, NULL) == 0 && gs_parse_pidstatus(txt, &status) == 0)
				ret->sup_uid = status.uid;
			else
				ret->sup_uid = (uid_t)-1;
			free(txt);
			if (k == GS_SUP_SUPERVISORD)
				r = fill_supervisord(proc_fd, fd, argv, alen, child, ret);
			else if (k == GS_SUP_RUNIT)
				r = fill_runit(fd, child, ret);
			else
				r = fill_s6(fd, ret);
			/* The identity must not have moved meanwhile: the
			 * supervisor read is the one the table recorded. */
			if (r == 1) {
				struct gs_pidstat now;

				if (gs_pidstat_read(proc_fd, par->pid, &now) < 0 || now.starttime != par->starttime)
					r = 0;
			}
		}
		free(argv);
		close(fd);
		if (r < 0 || k == GS_SUP_NONE || ret->kind == GS_SUP_NONE) {
			memset(ret, 0, sizeof(*ret));
			return r < 0 ? r : 0;
		}
		/* The nearest supervisor decides, whatever it said. One whose
		 * program could not be named (a program that cleared its
		 * environment, a pid file naming another process) still runs
		 * and restarts it: 2, for a watch, never its unit's stop. */
		if (r != 1) {
			ret->name[0] = '\0';
			ret->control_opt[0] = ret->control[0] = '\0';
			return 2;
		}
		return 1;
	}
	return 0;
}

int gs_supervised_find_proc(void *proc_fd, const struct gs_ptable *pt, pid_t pid, struct gs_supervised *ret)
{
	return gs_supervised_find((int)(intptr_t)proc_fd, pt, pid, ret);
}

#include "proc/freezer.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *gs_freezer_str(enum gs_freezer k)
{
	switch (k) {
	case GS_FREEZER_V2: return "cgroup v2";
	case GS_FREEZER_V1: return "cgroup v1 freezer";
	case GS_FREEZER_NONE: break;
	}
	return "";
}

/* A path we may append to a mount point: absolute, and no component that
 * climbs ("/.." is how the kernel writes a cgroup outside our namespace). */
static bool usable_path(const char *p, size_t len)
{
	if (len == 0 || p[0] != '/')
		return false;
	for (size_t i = 0; i + 3 <= len; i++)
		if (p[i] == '/' && p[i + 1] == '.' && p[i + 2] == '.' && (i + 3 == len || p[i + 3] == '/'))
			return false;
	return true;
}

static bool has_controller(const char *list, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < len;) {
		size_t j = i;

		while (j < len && list[j] != ',')
			j++;
		if (j - i == n && !strncmp(list + i, name, n))
			return true;
		i = j + 1;
	}
	return false;
}

static void copy_span(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size) {
		dst[0] = '\0'; /* a cut path would name another cgroup */
		return;
	}
	memcpy(dst, src, len);
	dst[len] = '\0';
}

int gs_freezer_parse_cgroup(const char *text, char *v2, size_t v2len, char *v1, size_t v1len)
{
	const char *line = text;

	v2[0] = v1[0] = '\0';
	if (!text)
		return -EINVAL;
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;

		if (c2) {
			const char *ctl = c1 + 1, *path = c2 + 1;
			size_t ctl_len = (size_t)(c2 - ctl), path_len = len - (size_t)(path - line);

			if (c1 - line == 1 && line[0] == '0' && ctl_len == 0) {
				if (usable_path(path, path_len))
					copy_span(v2, v2len, path, path_len);
			} else if (has_controller(ctl, ctl_len, "freezer") && usable_path(path, path_len)) {
				copy_span(v1, v1len, path, path_len);
			}
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return v2[0] || v1[0] ? 0 : -EINVAL;
}

/* The first line of a small cgroup file, whitespace stripped, in buf. */
static int read_word(int dirfd, const char *path, char *buf, size_t len)
{
	char *txt = NULL;
	int r = gs_read_file_at(dirfd, path, 256, &txt, NULL);

	if (r < 0)
		return r;
	gs_strlcpy(buf, gs_strstrip(txt), len);
	free(txt);
	return 0;
}

/* Cut the last component off a cgroup path; false at the root. */
static bool parent(char *path)
{
	char *slash = strrchr(path, '/');

	if (!slash || slash == path) {
		if (path[0] && path[1]) {
			path[1] = '\0';
			return true;
		}
		return false;
	}
	*slash = '\0';
	return true;
}

/* Walk from path up to the hierarchy's root under mnt (relative to the
 * /sys fd): the innermost cgroup whose file `name` reads `want`. */
static bool find_setter(int sys_fd, const char *mnt, const char *path, const char *name, const char *want,
			char *ret, size_t len)
{
	char cg[1024], file[1400], word[64];

	gs_strlcpy(cg, path, sizeof(cg));
	for (;;) {
		snprintf(file, sizeof(file), "%s%s/%s", mnt, strcmp(cg, "/") ? cg : "", name);
		if (read_word(sys_fd, file, word, sizeof(word)) == 0 && !strcmp(word, want)) {
			gs_strlcpy(ret, cg, len);
			return true;
		}
		if (!parent(cg))
			return false;
	}
}

static void fill(struct gs_frozen *f, enum gs_freezer kind, const struct gs_root *root, const char *mnt,
		 const char *cg, const char *control)
{
	int n;

	f->kind = kind;
	gs_strlcpy(f->cgroup, cg, sizeof(f->cgroup));
	n = snprintf(f->control, sizeof(f->control), "%s/%s%s/%s", root->sys_path, mnt, strcmp(cg, "/") ? cg : "",
		     control);
	if (n < 0 || (size_t)n >= sizeof(f->control))
		f->control[0] = '\0'; /* a cut path would name another file */
}

/* cgroup v1: freezer.state of its cgroup says FROZEN (or FREEZING, on its
 * way there); freezer.self_freezing names the cgroup that asked. */
static bool frozen_v1(const struct gs_root *root, const char *path, struct gs_frozen *ret)
{
	static const char mnt[] = "fs/cgroup/freezer";
	char file[1400], state[32], setter[1024];

	if (!strcmp(path, "/"))
		return false; /* the root cgroup cannot be frozen */
	snprintf(file, sizeof(file), "%s%s/freezer.state", mnt, path);
	if (read_word(root->sys_fd, file, state, sizeof(state)) < 0)
		return false;
	if (strcmp(state, "FROZEN") && strcmp(state, "FREEZING"))
		return false;
	if (!find_setter(root->sys_fd, mnt, path, "freezer.self_freezing", "1", setter, sizeof(setter)))
		gs_strlcpy(setter, path, sizeof(setter));
	fill(ret, GS_FREEZER_V1, root, mnt, setter, "freezer.state");
	return true;
}

/* cgroup v2: frozen while cgroup.freeze is 1 on its cgroup or any parent
 * (cgroup.events says "frozen 1" only once every task has stopped). */
static bool frozen_v2(const struct gs_root *root, const char *path, struct gs_frozen *ret)
{
	const char *mnt;
	char setter[1024];

	/* The unified hierarchy: /sys/fs/cgroup itself, or its unified/
	 * directory on hybrid hosts. */
	if (faccessat(root->sys_fd, "fs/cgroup/cgroup.controllers", F_OK, 0) == 0)
		mnt = "fs/cgroup";
	else if (faccessat(root->sys_fd, "fs/cgroup/unified/cgroup.controllers", F_OK, 0) == 0)
		mnt = "fs/cgroup/unified";
	else
		return false;
	if (!find_setter(root->sys_fd, mnt, path, "cgroup.freeze", "1", setter, sizeof(setter)))
		return false;
	fill(ret, GS_FREEZER_V2, root, mnt, setter, "cgroup.freeze");
	return true;
}

int gs_freezer_check(const struct gs_root *root, pid_t pid, struct gs_frozen *ret)
{
	char path[32], v2[1024], v1[1024], *txt = NULL;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!root || pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "%d/cgroup", (int)pid);
	r = gs_read_file_at(root->proc_fd, path, 65536, &txt, NULL);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	r = gs_freezer_parse_cgroup(txt, v2, sizeof(v2), v1, sizeof(v1));
	free(txt);
	if (r < 0 || root->sys_fd < 0)
		return 0;
	/* v1 first: where it freezes, SIGKILL waits too. */
	if (v1[0] && frozen_v1(root, v1, ret))
		return 0;
	if (v2[0])
		(void)frozen_v2(root, v2, ret);
	return 0;
}

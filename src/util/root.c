#include "util/root.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

static int open_dir(const char *path, int *ret_fd)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

int gs_root_open(struct gs_root *root, const struct gs_root_paths *paths)
{
	static const struct gs_root_paths none;
	int r;

	if (!paths)
		paths = &none;
	memset(root, 0, sizeof(*root));
	root->proc_fd = root->sys_fd = root->dev_fd = root->drv_fd = -1;
	gs_strlcpy(root->proc_path, paths->proc ? paths->proc : "/proc", sizeof(root->proc_path));
	gs_strlcpy(root->sys_path, paths->sys ? paths->sys : "/sys", sizeof(root->sys_path));
	gs_strlcpy(root->dev_path, paths->dev ? paths->dev : "/dev", sizeof(root->dev_path));
	if (paths->nvidia_procfs)
		gs_strlcpy(root->drv_path, paths->nvidia_procfs, sizeof(root->drv_path));
	else {
		/* Truncation only loses an absurdly long path: the open then fails. */
		int n = snprintf(root->drv_path, sizeof(root->drv_path), "%.4000s/driver/nvidia", root->proc_path);
		(void)n;
	}

	root->failed = root->proc_path;
	r = open_dir(root->proc_path, &root->proc_fd);
	if (r < 0)
		goto fail;
	root->failed = root->dev_path;
	r = open_dir(root->dev_path, &root->dev_fd);
	if (r < 0)
		goto fail;
	root->failed = NULL;
	/* Absent on hosts without the driver or without sysfs: not fatal. */
	(void)open_dir(root->sys_path, &root->sys_fd);
	(void)open_dir(root->drv_path, &root->drv_fd);
	return 0;
fail:
	gs_root_close(root);
	return r;
}

void gs_root_close(struct gs_root *root)
{
	int *fds[] = { &root->proc_fd, &root->sys_fd, &root->dev_fd, &root->drv_fd };

	for (size_t i = 0; i < GS_ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* One root-prefixed context for every read of /proc, /sys and /dev, so tests
 * can point the tool at fixture trees and fake device nodes (--dev-root). */
#ifndef GS_ROOT_H
#define GS_ROOT_H

struct gs_root_paths {
	const char *proc;          /* NULL: /proc */
	const char *sys;           /* NULL: /sys */
	const char *dev;           /* NULL: /dev (--dev-root, GPUSLATE_DEV_ROOT) */
	const char *nvidia_procfs; /* NULL: <proc>/driver/nvidia (GPUSLATE_NVIDIA_PROCFS) */
};

struct gs_root {
	int proc_fd;        /* directory fd of /proc */
	int sys_fd;         /* directory fd of /sys, -1 when absent */
	int dev_fd;         /* directory fd of /dev or the --dev-root */
	int drv_fd;         /* directory fd of /proc/driver/nvidia, -1 when absent */
	char proc_path[4096];
	char sys_path[4096];
	char dev_path[4096];
	char drv_path[4096];
	/* After a failed gs_root_open: proc_path or dev_path, the directory
	 * that could not be opened (NULL otherwise); points into this struct. */
	const char *failed;
};

/* Returns 0 or -errno; on failure nothing stays open. A missing /sys or
 * driver directory is not an error (their fds stay -1). */
int gs_root_open(struct gs_root *root, const struct gs_root_paths *paths);
void gs_root_close(struct gs_root *root);

#endif

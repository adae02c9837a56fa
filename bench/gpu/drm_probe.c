/* drm_probe: the AMD/Intel readers (issue 17) against this machine's real
 * /sys, /proc and /dev, for a host that has no AMD or Intel GPU: which DRM
 * cards sysfs shows and that none is taken for a GPU, the drm and kfd
 * majors, and what the kernel's fdinfo says of a DRM fd opened here.
 *
 *   drm_probe [NODE]...   NODE defaults to every /dev/dri/* */
#include "gpu/drm.h"
#include "gpu/kfd.h"
#include "proc/devset.h"
#include "proc/drm_fdinfo.h"
#include "util/root.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static void probe_node(const struct gs_root *root, const char *path)
{
	struct gs_drm_fdinfo fi;
	struct stat st;
	uint64_t vram;
	char text[4096];
	int fd, r;
	ssize_t n;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		printf("node %s: open: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	printf("node %s: rdev %u:%u\n", path, major(st.st_rdev), minor(st.st_rdev));
	snprintf(text, sizeof(text), "/proc/self/fdinfo/%d", fd);
	{
		int in = open(text, O_RDONLY | O_CLOEXEC);

		n = in >= 0 ? read(in, text, sizeof(text) - 1) : -1;
		if (in >= 0)
			close(in);
	}
	if (n >= 0) {
		text[n] = '\0';
		printf("--- fdinfo\n%s--- end\n", text);
	}
	r = gs_drm_fdinfo_read(root->proc_fd, -1, getpid(), fd, st.st_ino, &fi);
	if (r < 0) {
		printf("parse: %s\n", strerror(-r));
	} else {
		printf("parse: driver=%s pdev_known=%d client_id_known=%d regions=%zu bad=%u", fi.driver,
		       fi.pdev_known, fi.client_id_known, fi.n_regions, fi.n_bad);
		if (gs_drm_fdinfo_vram(&fi, &vram) == 0)
			printf(" vram=%llu", (unsigned long long)vram);
		printf("\n");
	}
	close(fd);
}

int main(int argc, char **argv)
{
	_cleanup_free_ char *devices = NULL;
	struct gs_gpu_backend *b = NULL;
	struct gs_root root;
	unsigned major;
	int r;

	r = gs_root_open(&root, NULL);
	if (r < 0) {
		fprintf(stderr, "drm_probe: root: %s\n", strerror(-r));
		return 1;
	}
	if (gs_read_file_at(root.proc_fd, "devices", 65536, &devices, NULL) == 0) {
		static const char *const names[] = { "drm", "kfd" };

		for (size_t i = 0; i < GS_ARRAY_SIZE(names); i++) {
			if (gs_devset_char_major(devices, names[i], &major) == 0)
				printf("%s major: %u\n", names[i], major);
			else
				printf("%s major: not registered\n", names[i]);
		}
	}
	r = gs_drm_open(&root, &b);
	printf("gs_drm_open: %s\n", r < 0 ? strerror(-r) : "ok");
	if (r == 0) {
		unsigned n = 0;

		b->ops->count(b, &n);
		for (unsigned i = 0; i < n; i++) {
			struct gs_drm_gpu dg;
			struct gs_gpu g;

			if (b->ops->info(b, i, &g) == 0 && gs_drm_gpu_info(b, i, &dg) == 0)
				printf("gpu %u: %s %s %s %s used=%llu total=%llu kfd_nodes=%zu\n", i, dg.vendor, dg.driver,
				       g.pci_bus_id, g.uuid, (unsigned long long)g.mem_used,
				       (unsigned long long)g.mem_total, dg.n_kfd);
		}
		printf("kfd state: %s\n", strerror(-gs_drm_kfd_state(b)));
		gs_gpu_backend_close(b);
	}
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			probe_node(&root, argv[i]);
	} else {
		DIR *d = opendir("/dev/dri");
		struct dirent *de;

		while (d && (de = readdir(d))) {
			char path[300];

			if (de->d_name[0] == '.' || strcmp(de->d_name, "by-path") == 0)
				continue;
			snprintf(path, sizeof(path), "/dev/dri/%s", de->d_name);
			probe_node(&root, path);
		}
		if (d)
			closedir(d);
		else
			printf("/dev/dri: %s\n", strerror(errno));
	}
	gs_root_close(&root);
	return 0;
}

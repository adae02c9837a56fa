/* NVIDIA GPU list from the kernel driver's procfs files, for when NVML is
 * unusable (library missing, version mismatch after a driver upgrade, wedged).
 * It knows GPUs (PCI id, minor, UUID, model) but neither memory nor
 * processes: the fd scan has to find holders on its own. */
#include "gpu/gpu.h"
#include "util/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define INFO_MAX (64 * 1024)

struct procfs_gpu {
	struct gs_gpu gpu;
	unsigned domain, bus, dev, fn; /* sort key */
};

struct procfs_backend {
	struct gs_gpu_backend base; /* first member: ops get it back by cast */
	unsigned n;
	struct procfs_gpu *gpus;
};

/* "0000:00:06.0" (procfs) or "00000000:00:06.0" (NVML); hex, any case. The
 * widths bound each field: "%x" alone wrapped 100000018 to bus 0x18. */
static int parse_pci(const char *s, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *fn)
{
	unsigned d, b, v, f;
	int end = -1;

	if (sscanf(s, "%8x:%2x:%2x.%1x%n", &d, &b, &v, &f, &end) != 4 || end < 0 || s[end] != '\0')
		return -EINVAL;
	if (b > 0xff || v > 0x1f || f > 7)
		return -EINVAL;
	*domain = d;
	*bus = b;
	*dev = v;
	*fn = f;
	return 0;
}

/* One line "Key: value"; key and value are trimmed of spaces and tabs. */
static void trim(char **s, char *end)
{
	while (**s == ' ' || **s == '\t')
		(*s)++;
	while (end > *s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
}

int gs_procfs_nvidia_parse_information(const char *text, struct gs_gpu *ret)
{
	_cleanup_free_ char *copy = NULL;
	struct gs_gpu g = { 0 };
	bool have_minor = false;
	char *line, *save = NULL;

	if (!text || !ret)
		return -EINVAL;
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':'), *key = line, *val;
		unsigned d, b, v, f;
		uint32_t minor;

		/* The first ':' splits: values (bus ids) contain more of them. */
		if (!colon)
			continue;
		*colon = '\0';
		val = colon + 1;
		trim(&key, colon);
		trim(&val, val + strlen(val));

		if (strcmp(key, "Model") == 0)
			gs_strlcpy(g.name, val, sizeof(g.name));
		else if (strcmp(key, "GPU UUID") == 0)
			gs_strlcpy(g.uuid, val, sizeof(g.uuid));
		else if (strcmp(key, "Bus Location") == 0) {
			/* NVML's form, so ids from both backends compare equal. */
			if (parse_pci(val, &d, &b, &v, &f) < 0)
				return -EBADMSG;
			snprintf(g.pci_bus_id, sizeof(g.pci_bus_id), "%08X:%02X:%02X.%X", d, b, v, f);
		} else if (strcmp(key, "Device Minor") == 0) {
			if (gs_parse_u32(val, &minor) < 0 || minor >= GS_MAX_GPUS)
				return -EBADMSG;
			g.minor = minor;
			have_minor = true;
		}
	}
	/* The minor is the join key with /dev/nvidia<N>: useless without it. */
	if (!have_minor)
		return -EBADMSG;
	*ret = g;
	return 0;
}

/* Digits and dots, at least one dot, digits at both ends: "580.159.04". */
static bool is_version(const char *t, size_t n)
{
	bool dot = false;

	if (n == 0 || !isdigit((unsigned char)t[0]) || !isdigit((unsigned char)t[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '.')
			dot = true;
		else if (!isdigit((unsigned char)t[i]))
			return false;
	}
	return dot;
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue ..." (the
 * open module words it differently): the first version-like token of the
 * first line. */
static void parse_driver_version(const char *text, char *dst, size_t len)
{
	const char *p = text, *end = text + strcspn(text, "\n");

	dst[0] = '\0';
	while (p < end) {
		size_t n;

		p += strspn(p, " \t");
		n = strcspn(p, " \t\n");
		if (is_version(p, n)) {
			if (n < len) {
				memcpy(dst, p, n);
				dst[n] = '\0';
			}
			return;
		}
		p += n;
	}
}

static int cmp_gpu(const void *a, const void *b)
{
	const struct procfs_gpu *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return 0;
}

static int procfs_count(struct gs_gpu_backend *b, unsigned *ret)
{
	*ret = ((struct procfs_backend *)b)->n;
	return 0;
}

static int procfs_info(struct gs_gpu_backend *b, unsigned i, struct gs_gpu *ret)
{
	struct procfs_backend *pb = (struct procfs_backend *)b;

	if (i >= pb->n)
		return -EINVAL;
	*ret = pb->gpus[i].gpu;
	return 0;
}

static int procfs_memory(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_mem *ret)
{
	(void)b;
	(void)i;
	(void)ret;
	return -EOPNOTSUPP;
}

static int procfs_processes(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_proc **ret, size_t *ret_n)
{
	struct procfs_backend *pb = (struct procfs_backend *)b;

	if (i >= pb->n)
		return -EINVAL;
	/* The driver's procfs lists no processes: an empty list, not an error,
	 * so callers go on to the fd scan. */
	*ret = NULL;
	*ret_n = 0;
	return 0;
}

static void procfs_close(struct gs_gpu_backend *b)
{
	struct procfs_backend *pb = (struct procfs_backend *)b;

	free(pb->gpus);
	free(pb);
}

static const struct gs_gpu_backend_ops procfs_ops = {
	.name = "procfs",
	.count = procfs_count,
	.info = procfs_info,
	.memory = procfs_memory,
	.processes = procfs_processes,
	.close = procfs_close,
};

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* Read gpus/<dir>/information into out; -EBADMSG etc. for a bad entry. */
static int read_gpu(int gpus_fd, const char *dir, struct procfs_gpu *out)
{
	_cleanup_free_ char *text = NULL;
	char path[300];
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/information", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	r = gs_read_file_at(gpus_fd, path, INFO_MAX, &text, NULL);
	if (r < 0)
		return r;
	r = gs_procfs_nvidia_parse_information(text, &out->gpu);
	if (r < 0)
		return r;
	/* No Bus Location line: the directory is named after the PCI id. */
	if (!out->gpu.pci_bus_id[0]) {
		if (parse_pci(dir, &out->domain, &out->bus, &out->dev, &out->fn) < 0)
			return -EBADMSG;
		snprintf(out->gpu.pci_bus_id, sizeof(out->gpu.pci_bus_id), "%08X:%02X:%02X.%X",
			 out->domain, out->bus, out->dev, out->fn);
		return 0;
	}
	return parse_pci(out->gpu.pci_bus_id, &out->domain, &out->bus, &out->dev, &out->fn) < 0 ? -EBADMSG : 0;
}

int gs_procfs_nvidia_open(const struct gs_root *root, struct gs_gpu_backend **ret)
{
	__attribute__((cleanup(closedirp))) DIR *d = NULL;
	_cleanup_free_ struct procfs_gpu *gpus = NULL;
	_cleanup_free_ char *version = NULL;
	_cleanup_close_ int gpus_fd = -1;
	struct procfs_backend *pb;
	struct dirent *de;
	unsigned n = 0;
	int fd;

	if (!root || !ret)
		return -EINVAL;
	if (root->drv_fd < 0)
		return -ENOENT;
	gpus_fd = openat(root->drv_fd, "gpus", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (gpus_fd < 0)
		return -errno;
	gpus = calloc(GS_MAX_GPUS, sizeof(*gpus));
	if (!gpus)
		return -ENOMEM;
	/* fdopendir takes its own fd: gpus_fd stays ours for openat below. */
	fd = fcntl(gpus_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return -e;
	}
	while ((de = readdir(d)) && n < GS_MAX_GPUS) {
		if (de->d_name[0] == '.')
			continue;
		/* An unreadable or malformed entry loses that GPU, not all. */
		if (read_gpu(gpus_fd, de->d_name, &gpus[n]) == 0)
			n++;
	}
	if (n == 0)
		return -ENODEV;
	qsort(gpus, n, sizeof(*gpus), cmp_gpu);
	for (unsigned i = 0; i < n; i++)
		gpus[i].gpu.index = i;

	pb = calloc(1, sizeof(*pb));
	if (!pb)
		return -ENOMEM;
	pb->base.ops = &procfs_ops;
	pb->n = n;
	pb->gpus = GS_TAKE_PTR(gpus);
	/* Only for messages: a missing version file leaves it empty. */
	if (gs_read_file_at(root->drv_fd, "version", 4096, &version, NULL) == 0)
		parse_driver_version(version, pb->base.driver_version, sizeof(pb->base.driver_version));
	*ret = &pb->base;
	return 0;
}

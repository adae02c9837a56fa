#include "proc/devset.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* Driver minors (open-gpu-kernel-modules nv-chardev-numbers.h). */
#define NV_MAJOR_DEFAULT 195u
#define NV_MINOR_GPU_MAX 247u
#define NV_MINOR_MODESET 254u
#define NV_MINOR_CTL 255u
/* Linux char majors are 12 bits: anything larger is a corrupt line. */
#define GS_MAJOR_MAX 4095u

/* Parse "<major> <name>" of one /proc/devices line; the line is modified. */
static int parse_devices_line(char *line, unsigned *ret_major, const char **ret_name)
{
	char *p = gs_strstrip(line), *name;
	uint32_t major;

	name = strchr(p, ' ');
	if (!name)
		return -EINVAL;
	*name++ = '\0';
	while (*name == ' ')
		name++;
	if (gs_parse_u32(p, &major) < 0 || major == 0 || major > GS_MAJOR_MAX || !*name)
		return -EINVAL;
	*ret_major = major;
	*ret_name = name;
	return 0;
}

/* Call fn for each "<major> <name>" line of the character section of
 * /proc/devices text; stops early when fn returns true. */
static void for_each_char_major(const char *text, bool (*fn)(void *ctx, unsigned major, const char *name),
				void *ctx)
{
	/* The file starts with the character section; a block section that
	 * follows can reuse numbers, so it must not be read as char majors. */
	bool in_char = true;
	const char *p;

	for (p = text; *p;) {
		const char *start = p, *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[256];
		const char *name;
		unsigned major;

		p = nl ? nl + 1 : p + len;
		if (len >= sizeof(line))
			continue; /* no valid line is this long */
		memcpy(line, start, len);
		line[len] = '\0';
		if (gs_startswith(line, "Character devices:")) {
			in_char = true;
			continue;
		}
		if (gs_startswith(line, "Block devices:")) {
			in_char = false;
			continue;
		}
		if (!in_char || parse_devices_line(line, &major, &name) < 0)
			continue;
		if (fn(ctx, major, name))
			return;
	}
}

static bool note_nvidia_major(void *ctx, unsigned major, const char *name)
{
	struct gs_devset *ds = ctx;

	/* Exact names: nvidia-caps-imex-channels, nvidia-nvswitch and
	 * nvidia-nvlink are other drivers' nodes, not ours. */
	if (strcmp(name, "nvidia-frontend") == 0 || strcmp(name, "nvidia") == 0)
		ds->nvidia_major = major;
	else if (strcmp(name, "nvidia-uvm") == 0)
		ds->uvm_major = major;
	else if (strcmp(name, "nvidia-caps") == 0)
		ds->caps_major = major;
	else if (strcmp(name, "kfd") == 0)
		ds->kfd_major = major;
	return false;
}

int gs_devset_parse_proc_devices(const char *text, struct gs_devset *ds)
{
	if (!text || !ds)
		return -EINVAL;
	ds->nvidia_major = NV_MAJOR_DEFAULT;
	ds->uvm_major = 0;
	ds->caps_major = 0;
	ds->kfd_major = 0;
	for_each_char_major(text, note_nvidia_major, ds);
	return 0;
}

struct major_query {
	const char *name;
	unsigned major;
};

static bool match_major(void *ctx, unsigned major, const char *name)
{
	struct major_query *q = ctx;

	if (strcmp(name, q->name) != 0)
		return false;
	q->major = major;
	return true;
}

int gs_devset_char_major(const char *text, const char *name, unsigned *ret)
{
	struct major_query q = { .name = name };

	if (!text || !name || !ret)
		return -EINVAL;
	for_each_char_major(text, match_major, &q);
	if (!q.major)
		return -ENOENT;
	*ret = q.major;
	return 0;
}

/* Kind of a char device by its rdev alone; GS_NODE_NONE if not ours. */
static enum gs_node_kind classify_rdev(const struct gs_devset *ds, dev_t rdev, unsigned *ret_minor)
{
	unsigned maj = major(rdev), min = minor(rdev);

	if (maj == ds->nvidia_major) {
		if (min <= NV_MINOR_GPU_MAX) {
			*ret_minor = min;
			return GS_NODE_GPU;
		}
		if (min == NV_MINOR_MODESET)
			return GS_NODE_MODESET;
		if (min == NV_MINOR_CTL)
			return GS_NODE_CTL;
		return GS_NODE_NONE; /* 248..253: unused by the driver */
	}
	if (ds->uvm_major && maj == ds->uvm_major)
		return GS_NODE_UVM;
	if (ds->caps_major && maj == ds->caps_major)
		return GS_NODE_CAPS;
	/* /dev/kfd only serves the AMD GPUs the DRM backend found: without
	 * them (amdgpu loaded for a display, say) it is not a GPU of ours. */
	if (ds->kfd_major && maj == ds->kfd_major && ds->drm_gpus)
		return GS_NODE_KFD;
	/* DRM: only the nodes of our GPUs; 226 is also a BMC's display. */
	for (size_t i = 0; i < ds->n_drm; i++)
		if (ds->drm[i].rdev == rdev) {
			*ret_minor = ds->drm[i].gpu;
			return GS_NODE_DRM;
		}
	return GS_NODE_NONE;
}

static const struct gs_node_id *find_id(const struct gs_devset *ds, dev_t dev, ino_t ino)
{
	/* Linear: a host has a few dozen nodes at most, and the caller filters
	 * most fds out by this one comparison loop anyway. */
	for (size_t i = 0; i < ds->n_ids; i++)
		if (ds->ids[i].ino == ino && ds->ids[i].dev == dev)
			return &ds->ids[i];
	return NULL;
}

int gs_devset_add(struct gs_devset *ds, dev_t dev, ino_t ino, enum gs_node_kind kind, unsigned minor)
{
	struct gs_node_id *id;

	if (kind == GS_NODE_NONE)
		return -EINVAL;
	if (find_id(ds, dev, ino))
		return 0; /* first identity wins: hard links of one node are one node */
	if (ds->n_ids == ds->cap_ids) {
		size_t ncap = ds->cap_ids ? ds->cap_ids * 2 : 16;
		struct gs_node_id *n = realloc(ds->ids, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ds->ids = n;
		ds->cap_ids = ncap;
	}
	id = &ds->ids[ds->n_ids++];
	id->dev = dev;
	id->ino = ino;
	id->kind = kind;
	id->minor = kind == GS_NODE_GPU || kind == GS_NODE_DRM ? minor : 0;
	return 0;
}

enum gs_node_kind gs_devset_classify_ino(const struct gs_devset *ds, dev_t dev, ino_t ino, unsigned *ret_minor)
{
	const struct gs_node_id *id = find_id(ds, dev, ino);
	unsigned dummy;

	if (!ret_minor)
		ret_minor = &dummy;
	if (!id)
		return GS_NODE_NONE;
	*ret_minor = id->minor;
	return id->kind;
}

enum gs_node_kind gs_devset_classify_stat(const struct gs_devset *ds, const struct stat *st, unsigned *ret_minor)
{
	unsigned dummy;

	if (!ret_minor)
		ret_minor = &dummy;
	if (S_ISCHR(st->st_mode)) {
		enum gs_node_kind k = classify_rdev(ds, st->st_rdev, ret_minor);

		if (k != GS_NODE_NONE)
			return k;
	}
	/* Plain-file fake nodes, and char nodes recorded by identity. */
	return gs_devset_classify_ino(ds, st->st_dev, st->st_ino, ret_minor);
}

/* Kind of a dev-root entry by its name: only used for nodes that are not
 * char devices with an NVIDIA major (the fake nodes of tests). */
static enum gs_node_kind kind_by_name(const char *name, unsigned *ret_minor)
{
	uint32_t n;

	if (strcmp(name, "nvidiactl") == 0)
		return GS_NODE_CTL;
	if (strcmp(name, "nvidia-modeset") == 0)
		return GS_NODE_MODESET;
	if (strcmp(name, "nvidia-uvm") == 0 || strcmp(name, "nvidia-uvm-tools") == 0)
		return GS_NODE_UVM;
	if (gs_startswith(name, "nvidia") && gs_parse_u32(name + 6, &n) == 0 && n <= NV_MINOR_GPU_MAX) {
		/* "nvidia007" is not a node name udev or nvidia-modprobe makes. */
		if (name[6] == '0' && name[7] != '\0')
			return GS_NODE_NONE;
		*ret_minor = n;
		return GS_NODE_GPU;
	}
	return GS_NODE_NONE;
}

/* Record one node. by_name is the kind its name implies (GS_NODE_CAPS for
 * the caps directory). Missing nodes are normal. */
static int load_node(struct gs_devset *ds, int dirfd, const char *name, enum gs_node_kind by_name, unsigned name_minor)
{
	struct stat st;
	enum gs_node_kind k;
	unsigned minor = name_minor;

	if (fstatat(dirfd, name, &st, 0) < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -errno;
	if (S_ISCHR(st.st_mode)) {
		/* A real node: its rdev is the truth, whatever its name says. */
		k = classify_rdev(ds, st.st_rdev, &minor);
		if (k == GS_NODE_NONE) {
			/* uvm/caps majors are dynamic: without /proc/devices we
			 * cannot check them, so trust the name only then. A node
			 * with the NVIDIA major and a non-driver minor, or a
			 * known major mismatch, is not recorded. */
			bool unknown_major = (by_name == GS_NODE_UVM && !ds->uvm_major) ||
					     (by_name == GS_NODE_CAPS && !ds->caps_major);
			if (!unknown_major || major(st.st_rdev) == ds->nvidia_major)
				return 0;
			k = by_name;
		}
	} else if (S_ISREG(st.st_mode)) {
		k = by_name; /* fake node of a --dev-root */
	} else {
		return 0;    /* directories, sockets, fifos: never a node */
	}
	return gs_devset_add(ds, st.st_dev, st.st_ino, k, minor);
}

static int load_dev_root(struct gs_devset *ds, int dev_fd)
{
	static const char *const fixed[] = { "nvidiactl", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools" };
	struct dirent *de;
	DIR *d;
	int r;

	for (size_t i = 0; i < GS_ARRAY_SIZE(fixed); i++) {
		unsigned m = 0;

		r = load_node(ds, dev_fd, fixed[i], kind_by_name(fixed[i], &m), m);
		if (r < 0)
			return r;
	}
	/* nvidia<N>: one directory pass instead of 248 failing stats. */
	d = gs_opendir_at(dev_fd, ".");
	if (!d)
		return -errno;
	r = 0;
	while ((errno = 0, de = readdir(d))) {
		unsigned m = 0;

		if (kind_by_name(de->d_name, &m) != GS_NODE_GPU)
			continue;
		r = load_node(ds, dev_fd, de->d_name, GS_NODE_GPU, m);
		if (r < 0)
			break;
	}
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	if (r < 0)
		return r;

	d = gs_opendir_at(dev_fd, "nvidia-caps");
	if (!d)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -errno;
	while ((errno = 0, de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		r = load_node(ds, dirfd(d), de->d_name, GS_NODE_CAPS, 0);
		if (r < 0)
			break;
	}
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	return r;
}

static int add_drm_rdev(struct gs_devset *ds, dev_t rdev, unsigned gpu)
{
	if (!rdev)
		return 0;
	if (ds->n_drm == GS_ARRAY_SIZE(ds->drm))
		return -ENOSPC;
	ds->drm[ds->n_drm++] = (struct gs_drm_rdev){ .rdev = rdev, .gpu = gpu };
	return 0;
}

/* One DRM node under the dev root: a char device only when its rdev is the
 * one sysfs gave (a stale or foreign node is not ours); a plain file (tests)
 * by its name alone. */
static int load_drm_node(struct gs_devset *ds, int dri_fd, const char *name, dev_t rdev, unsigned gpu)
{
	struct stat st;

	if (fstatat(dri_fd, name, &st, 0) < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -errno;
	if (S_ISCHR(st.st_mode) ? st.st_rdev != rdev || !rdev : !S_ISREG(st.st_mode))
		return 0;
	return gs_devset_add(ds, st.st_dev, st.st_ino, GS_NODE_DRM, gpu);
}

int gs_devset_add_drm(struct gs_devset *ds, int dev_fd, unsigned gpu, unsigned card, dev_t card_dev,
		      unsigned render_minor, dev_t render_dev)
{
	_cleanup_close_ int dri_fd = -1;
	char name[32];
	struct stat st;
	int r;

	ds->drm_gpus = true;
	r = add_drm_rdev(ds, card_dev, gpu);
	if (r == 0)
		r = add_drm_rdev(ds, render_dev, gpu);
	if (r < 0)
		return r;
	if (fstatat(dev_fd, "kfd", &st, 0) == 0 &&
	    (S_ISCHR(st.st_mode) ? ds->kfd_major && major(st.st_rdev) == ds->kfd_major : S_ISREG(st.st_mode))) {
		r = gs_devset_add(ds, st.st_dev, st.st_ino, GS_NODE_KFD, 0);
		if (r < 0)
			return r;
	}
	dri_fd = openat(dev_fd, "dri", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dri_fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -errno;
	snprintf(name, sizeof(name), "card%u", card);
	r = load_drm_node(ds, dri_fd, name, card_dev, gpu);
	if (r < 0 || render_minor == UINT_MAX)
		return r;
	snprintf(name, sizeof(name), "renderD%u", render_minor);
	return load_drm_node(ds, dri_fd, name, render_dev, gpu);
}

int gs_devset_load(const struct gs_root *root, struct gs_devset *ret)
{
	struct gs_devset ds = { 0 };
	_cleanup_free_ char *text = NULL;
	int r;

	r = gs_read_file_at(root->proc_fd, "devices", 64 * 1024, &text, NULL);
	if (r == 0)
		r = gs_devset_parse_proc_devices(text, &ds);
	else if (r == -ENOENT)
		r = gs_devset_parse_proc_devices("", &ds); /* fixture /proc: defaults */
	if (r < 0)
		return r;
	r = load_dev_root(&ds, root->dev_fd);
	if (r < 0) {
		gs_devset_free(&ds);
		return r;
	}
	*ret = ds;
	return 0;
}

void gs_devset_free(struct gs_devset *ds)
{
	if (!ds)
		return;
	free(ds->ids);
	ds->ids = NULL;
	ds->n_ids = ds->cap_ids = 0;
}

#include "gpu/drm.h"
#include "gpu/kfd.h"
#include "proc/drm_fdinfo.h"
#include "util/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define DRM_CLASS "class/drm"
#define MAX_CARDS 256  /* card minors are 0-63 today; room for renumbering */
#define SMALL_FILE 4096

struct drm_gpu;

/* What differs between drivers: who they are and where memory is. */
struct drm_driver_desc {
	const char *driver;
	const char *vendor;
	uint16_t vendor_id;
	/* Static facts from the device directory (ids, total memory). */
	void (*load)(int dev_fd, struct drm_gpu *g);
	/* Device-wide used and total memory; NULL: the driver has none. */
	int (*memory)(int dev_fd, struct gs_gpu_mem *ret);
};

struct drm_gpu {
	struct gs_drm_gpu pub;
	const struct drm_driver_desc *desc;
	int dev_fd;              /* <sys>/class/drm/card<N>/device, for memory polls */
	char name[96];
};

struct drm_backend {
	struct gs_gpu_backend base; /* first member: ops get it back by cast */
	int sys_fd;              /* our own dup of the sys root, for KFD reads */
	int kfd_state;           /* 0, -ENOENT (no KFD), or why the topology was unreadable */
	unsigned n;
	struct drm_gpu *gpus;
};

/* ---- pure parsers --------------------------------------------------------- */

static int parse_hex16(const char *s, uint16_t *ret)
{
	unsigned long v;
	char *end;

	if (!isxdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 16);
	if (errno || *end || v > 0xffff)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

int gs_drm_parse_uevent(const char *text, char *driver, size_t driver_len, bool *ret_pci_known,
			struct gs_pci_addr *ret_pci, uint16_t *ret_vendor, uint16_t *ret_device)
{
	if (!text || !driver || driver_len == 0)
		return -EINVAL;
	driver[0] = '\0';
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		char line[128], *val;
		size_t len = (size_t)(end - p);

		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = '\0';
			val = strchr(line, '=');
			if (val) {
				*val++ = '\0';
				if (strcmp(line, "DRIVER") == 0) {
					if (strlen(val) >= driver_len)
						return -EBADMSG;
					gs_strlcpy(driver, val, driver_len);
				} else if (strcmp(line, "PCI_SLOT_NAME") == 0) {
					if (gs_pci_addr_parse(val, ret_pci) < 0)
						return -EBADMSG;
					*ret_pci_known = true;
				} else if (strcmp(line, "PCI_ID") == 0) {
					char *colon = strchr(val, ':');

					if (!colon)
						return -EBADMSG;
					*colon = '\0';
					if (parse_hex16(val, ret_vendor) < 0 || parse_hex16(colon + 1, ret_device) < 0)
						return -EBADMSG;
				}
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int gs_drm_parse_dev(const char *text, dev_t *ret)
{
	char buf[32], *colon;
	uint32_t maj, min;
	size_t len;

	if (!text)
		return -EINVAL;
	len = strlen(text);
	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	colon = strchr(buf, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	if (gs_parse_u32(buf, &maj) < 0 || gs_parse_u32(colon + 1, &min) < 0)
		return -EINVAL;
	if (maj > 0xfff || min > 0xfffff)
		return -ERANGE;
	*ret = makedev(maj, min);
	return 0;
}

/* ---- sysfs reads ---------------------------------------------------------- */

/* "0x1002\n" (sysfs vendor and device files). */
static int read_hex16_at(int dirfd, const char *path, uint16_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	char *s;
	int r = gs_read_file_at(dirfd, path, 64, &buf, NULL);

	if (r < 0)
		return r;
	s = gs_strstrip(buf);
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	return parse_hex16(s, ret);
}

/* A byte count printed in decimal, or in hex with 0x (xe's tile size). */
static int read_size_at(int dirfd, const char *path, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	unsigned long long v;
	char *s, *end;
	int r = gs_read_file_at(dirfd, path, 64, &buf, NULL);

	if (r < 0)
		return r;
	s = gs_strstrip(buf);
	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return gs_parse_u64(s, ret);
	if (!isxdigit((unsigned char)s[2]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s + 2, &end, 16);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* A one-line text attribute (product_name) when present, printable and not
 * empty; else false. */
static bool read_text_at(int dirfd, const char *path, char *dst, size_t len)
{
	_cleanup_free_ char *buf = NULL;
	char *s;

	if (gs_read_file_at(dirfd, path, SMALL_FILE, &buf, NULL) < 0)
		return false;
	s = gs_strstrip(buf);
	if (!*s || strlen(s) >= len)
		return false;
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			return false;
	gs_strlcpy(dst, s, len);
	return true;
}

/* ---- per-driver facts ----------------------------------------------------- */

static void amdgpu_load(int dev_fd, struct drm_gpu *g)
{
	_cleanup_free_ char *buf = NULL;
	uint64_t v;

	/* "%016llx\n" on GFX9 and newer (Vega, MI series); absent elsewhere. */
	if (gs_read_file_at(dev_fd, "unique_id", 64, &buf, NULL) == 0) {
		char *s = gs_strstrip(buf), *end;
		unsigned long long id;

		errno = 0;
		id = strtoull(s, &end, 16);
		if (*s && isxdigit((unsigned char)*s) && !*end && !errno && strlen(s) <= 16)
			g->pub.unique_id = id;
	}
	if (gs_read_u64_at(dev_fd, "mem_info_vram_total", &v) == 0) {
		g->pub.vram_total = v;
		g->pub.vram_total_known = true;
	}
	g->pub.vram_used_known = true;
	(void)read_text_at(dev_fd, "product_name", g->name, sizeof(g->name));
}

static int amdgpu_memory(int dev_fd, struct gs_gpu_mem *ret)
{
	uint64_t total = 0, used = 0;
	int r;

	r = gs_read_u64_at(dev_fd, "mem_info_vram_total", &total);
	if (r == 0)
		r = gs_read_u64_at(dev_fd, "mem_info_vram_used", &used);
	if (r < 0)
		return r == -ENOENT ? -EOPNOTSUPP : r;
	if (used > total)
		return -EBADMSG;
	ret->v2 = false;
	ret->total = total;
	ret->used = used;
	ret->reserved = 0;
	ret->free = total - used;
	return 0;
}

/* xe: each tile's physical VRAM (tile<N>/physical_vram_size_bytes; newer
 * kernels group tile attributes under tile<N>/memory/). No usage file. */
static void xe_load(int dev_fd, struct drm_gpu *g)
{
	struct dirent *de;
	uint64_t sum = 0;
	bool known = false;
	DIR *d = gs_opendir_at(dev_fd, ".");

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[300];
		uint64_t v;

		if (!gs_startswith(de->d_name, "tile") || !de->d_name[4] ||
		    strspn(de->d_name + 4, "0123456789") != strlen(de->d_name + 4))
			continue;
		snprintf(path, sizeof(path), "%s/physical_vram_size_bytes", de->d_name);
		if (read_size_at(dev_fd, path, &v) < 0) {
			snprintf(path, sizeof(path), "%s/memory/physical_vram_size_bytes", de->d_name);
			if (read_size_at(dev_fd, path, &v) < 0)
				continue;
		}
		if (v > UINT64_MAX - sum)
			break;
		sum += v;
		known = true;
	}
	closedir(d);
	g->pub.vram_total = sum;
	g->pub.vram_total_known = known;
}

static const struct drm_driver_desc drivers[] = {
	{ .driver = "amdgpu", .vendor = "AMD", .vendor_id = 0x1002, .load = amdgpu_load, .memory = amdgpu_memory },
	{ .driver = "xe", .vendor = "Intel", .vendor_id = 0x8086, .load = xe_load },
	/* i915: mainline publishes neither total nor used VRAM in sysfs. */
	{ .driver = "i915", .vendor = "Intel", .vendor_id = 0x8086 },
};

static const struct drm_driver_desc *find_driver(const char *name)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(drivers); i++)
		if (strcmp(drivers[i].driver, name) == 0)
			return &drivers[i];
	return NULL;
}

/* ---- enumeration ---------------------------------------------------------- */

static bool card_name(const char *s, unsigned *ret)
{
	uint32_t n;

	if (!gs_startswith(s, "card") || !s[4] || (s[4] == '0' && s[5]))
		return false;
	if (strspn(s + 4, "0123456789") != strlen(s + 4) || gs_parse_u32(s + 4, &n) < 0)
		return false;
	*ret = n;
	return true;
}

/* The driver a device is bound to: uevent's DRIVER=, else the basename of
 * its "driver" link (the two agree on a real sysfs). */
static int device_driver(int dev_fd, const char *uevent_driver, char *dst, size_t len)
{
	char link[PATH_MAX];
	const char *base;
	ssize_t n;

	if (*uevent_driver) {
		gs_strlcpy(dst, uevent_driver, len);
		return 0;
	}
	n = readlinkat(dev_fd, "driver", link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (strlen(base) >= len)
		return -ENAMETOOLONG;
	gs_strlcpy(dst, base, len);
	return 0;
}

/* The render node that shares the card's device: device/drm/renderD<M>. */
static void find_render(int dev_fd, struct gs_drm_gpu *g)
{
	struct dirent *de;
	DIR *d = gs_opendir_at(dev_fd, "drm");

	if (!d)
		return;
	while ((de = readdir(d))) {
		_cleanup_free_ char *text = NULL;
		char path[300];

		if (!gs_startswith(de->d_name, "renderD"))
			continue;
		snprintf(path, sizeof(path), "drm/%s/dev", de->d_name);
		if (gs_read_file_at(dev_fd, path, 64, &text, NULL) == 0 &&
		    gs_drm_parse_dev(text, &g->render_dev) == 0) {
			g->render_dev_known = true;
			break;
		}
	}
	closedir(d);
}

/* Fill g from class/drm/card<card>. 1: an AMD or Intel GPU; 0: another
 * card (skipped); -errno: unreadable or malformed (skipped too). */
static int load_card(int sys_fd, unsigned card, struct drm_gpu *g)
{
	_cleanup_free_ char *uevent = NULL, *dev = NULL;
	_cleanup_close_ int dev_fd = -1;
	char path[128], udriver[32], driver[32];
	bool pci_known = false;
	int r;

	memset(g, 0, sizeof(*g));
	g->dev_fd = -1;
	snprintf(path, sizeof(path), DRM_CLASS "/card%u/device", card);
	dev_fd = openat(sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dev_fd < 0)
		return -errno;
	r = gs_read_file_at(dev_fd, "uevent", SMALL_FILE, &uevent, NULL);
	if (r < 0)
		return r;
	r = gs_drm_parse_uevent(uevent, udriver, sizeof(udriver), &pci_known, &g->pub.pci,
				&g->pub.vendor_id, &g->pub.device_id);
	if (r < 0)
		return r;
	r = device_driver(dev_fd, udriver, driver, sizeof(driver));
	if (r < 0)
		return r == -ENOENT ? 0 : r; /* no driver bound */
	g->desc = find_driver(driver);
	/* Not ours, or not a PCI function (a partition's platform device:
	 * KFD maps partitions onto the PCI card). */
	if (!g->desc || !pci_known)
		return 0;
	(void)read_hex16_at(dev_fd, "vendor", &g->pub.vendor_id);
	(void)read_hex16_at(dev_fd, "device", &g->pub.device_id);
	if (g->pub.vendor_id != g->desc->vendor_id)
		return 0;
	g->pub.vendor = g->desc->vendor;
	gs_strlcpy(g->pub.driver, driver, sizeof(g->pub.driver));
	g->pub.card = card;
	snprintf(path, sizeof(path), DRM_CLASS "/card%u/dev", card);
	if (gs_read_file_at(sys_fd, path, 64, &dev, NULL) == 0 && gs_drm_parse_dev(dev, &g->pub.card_dev) == 0)
		g->pub.card_dev_known = true;
	find_render(dev_fd, &g->pub);
	if (g->desc->load)
		g->desc->load(dev_fd, g);
	if (!g->name[0])
		snprintf(g->name, sizeof(g->name), "%s GPU %04x:%04x", g->desc->vendor, g->pub.vendor_id,
			 g->pub.device_id);
	g->dev_fd = GS_TAKE_FD(dev_fd);
	return 1;
}

static int cmp_gpu(const void *a, const void *b)
{
	const struct drm_gpu *x = a, *y = b;

	return gs_pci_addr_cmp(&x->pub.pci, &y->pub.pci);
}

/* Attach each KFD GPU node to its card; nodes that fit no card stay
 * unattached (their processes are then on no GPU of ours). */
static int map_kfd(int sys_fd, struct drm_gpu *gpus, unsigned n)
{
	_cleanup_free_ struct gs_kfd_node *nodes = NULL;
	_cleanup_free_ struct gs_kfd_card *cards = NULL;
	_cleanup_free_ unsigned *index = NULL;
	size_t n_nodes = 0, n_cards = 0;
	int r;

	r = gs_kfd_topology_load(sys_fd, &nodes, &n_nodes);
	if (r < 0)
		return r; /* -ENOENT: no KFD, no ROCm compute on this host */
	cards = calloc(n ? n : 1, sizeof(*cards));
	index = calloc(n ? n : 1, sizeof(*index));
	if (!cards || !index)
		return -ENOMEM;
	/* Only amdgpu cards have KFD nodes. */
	for (unsigned i = 0; i < n; i++) {
		const struct gs_drm_gpu *g = &gpus[i].pub;

		if (strcmp(g->driver, "amdgpu") != 0)
			continue;
		cards[n_cards].pci = g->pci;
		cards[n_cards].render_minor_known = g->render_dev_known;
		cards[n_cards].render_minor = minor(g->render_dev);
		index[n_cards++] = i;
	}
	for (size_t k = 0; k < n_nodes; k++) {
		int c = gs_kfd_node_card(&nodes[k], cards, n_cards);
		struct gs_drm_gpu *g;

		if (c < 0)
			continue;
		g = &gpus[index[c]].pub;
		if (g->n_kfd < GS_DRM_KFD_NODES_MAX)
			g->kfd_gpu_ids[g->n_kfd++] = nodes[k].gpu_id;
	}
	return 0;
}

/* ---- backend ops ---------------------------------------------------------- */

static struct drm_gpu *gpu_at(struct gs_gpu_backend *b, unsigned i)
{
	struct drm_backend *db = (struct drm_backend *)b;

	return i < db->n ? &db->gpus[i] : NULL;
}

static int drm_count(struct gs_gpu_backend *b, unsigned *ret)
{
	*ret = ((struct drm_backend *)b)->n;
	return 0;
}

static int drm_memory(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_mem *ret)
{
	struct drm_gpu *g = gpu_at(b, i);

	if (!g)
		return -EINVAL;
	if (!g->desc->memory)
		return -EOPNOTSUPP;
	return g->desc->memory(g->dev_fd, ret);
}

static int drm_info(struct gs_gpu_backend *b, unsigned i, struct gs_gpu *ret)
{
	struct drm_gpu *g = gpu_at(b, i);
	struct gs_gpu out;
	struct gs_gpu_mem mem;
	char pci[GS_PCI_ADDR_LEN];
	int r;

	if (!g)
		return -EINVAL;
	memset(&out, 0, sizeof(out));
	out.index = i;
	out.minor = UINT_MAX; /* no /dev/nvidia<N>: never matches a minor set */
	gs_pci_addr_format(&g->pub.pci, pci);
	if (g->pub.unique_id)
		snprintf(out.uuid, sizeof(out.uuid), "GPU-%016llx", (unsigned long long)g->pub.unique_id);
	else
		gs_strlcpy(out.uuid, pci, sizeof(out.uuid));
	gs_strlcpy(out.name, g->name, sizeof(out.name));
	gs_pci_addr_format_nvml(&g->pub.pci, out.pci_bus_id);
	r = drm_memory(b, i, &mem);
	if (r == 0) {
		out.mem_known = true;
		out.mem_total = mem.total;
		out.mem_used = mem.used;
	} else if (r != -EOPNOTSUPP) {
		return r;
	}
	*ret = out;
	return 0;
}

/* One KFD process's VRAM on GPU g: 1 when it holds some there. KFD gives a
 * process a per-device entry (vram_<gpu_id>) for every GPU when it opens
 * /dev/kfd (kfd_init_apertures), whatever ROCR_VISIBLE_DEVICES hides from
 * it: an entry at 0 bytes is no context, and taking it for one would make a
 * job on one GPU a holder of every other. An unreadable figure still
 * counts (unknown is not nothing). */
static int kfd_proc_on(int sys_fd, pid_t pid, const struct gs_drm_gpu *g, struct gs_gpu_proc *ret)
{
	_cleanup_free_ struct gs_kfd_vram *v = NULL;
	size_t n = 0;
	bool on = false, known = true;
	uint64_t sum = 0;
	int r;

	r = gs_kfd_proc_vram(sys_fd, pid, &v, &n);
	if (r == -ENOENT)
		return 0; /* gone since the listing */
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < g->n_kfd; k++) {
			if (v[i].gpu_id != g->kfd_gpu_ids[k])
				continue;
			if (v[i].known && v[i].bytes == 0)
				continue;
			on = true;
			known &= v[i].known;
			if (v[i].known)
				sum = v[i].bytes > UINT64_MAX - sum ? UINT64_MAX : sum + v[i].bytes;
		}
	if (!on)
		return 0;
	memset(ret, 0, sizeof(*ret));
	ret->pid = pid;
	ret->kind = GS_GPU_PROC_COMPUTE;
	ret->mem_known = known;
	ret->mem_used = known ? sum : 0;
	return 1;
}

static int drm_processes(struct gs_gpu_backend *b, unsigned i, struct gs_gpu_proc **ret, size_t *ret_n)
{
	struct drm_backend *db = (struct drm_backend *)b;
	_cleanup_free_ struct gs_gpu_proc *procs = NULL;
	_cleanup_free_ pid_t *pids = NULL;
	struct drm_gpu *g = gpu_at(b, i);
	size_t n_pids = 0, n = 0;
	int r;

	if (!g)
		return -EINVAL;
	*ret = NULL;
	*ret_n = 0;
	/* Intel, or AMD without KFD: no process list, the fd scan finds them. */
	if (g->pub.n_kfd == 0)
		return 0;
	r = gs_kfd_proc_list(db->sys_fd, &pids, &n_pids);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	procs = calloc(n_pids ? n_pids : 1, sizeof(*procs));
	if (!procs)
		return -ENOMEM;
	for (size_t k = 0; k < n_pids; k++) {
		r = kfd_proc_on(db->sys_fd, pids[k], &g->pub, &procs[n]);
		if (r < 0)
			return r;
		n += (size_t)r;
	}
	if (n)
		*ret = GS_TAKE_PTR(procs);
	*ret_n = n;
	return 0;
}

static void drm_close(struct gs_gpu_backend *b)
{
	struct drm_backend *db = (struct drm_backend *)b;

	for (unsigned i = 0; i < db->n; i++)
		if (db->gpus[i].dev_fd >= 0)
			close(db->gpus[i].dev_fd);
	if (db->sys_fd >= 0)
		close(db->sys_fd);
	free(db->gpus);
	free(db);
}

static const struct gs_gpu_backend_ops drm_ops = {
	.name = "drm",
	.count = drm_count,
	.info = drm_info,
	.memory = drm_memory,
	.processes = drm_processes,
	.close = drm_close,
};

int gs_drm_gpu_info(struct gs_gpu_backend *b, unsigned i, struct gs_drm_gpu *ret)
{
	struct drm_gpu *g;

	if (!b || b->ops != &drm_ops || !ret)
		return -EINVAL;
	g = gpu_at(b, i);
	if (!g)
		return -EINVAL;
	*ret = g->pub;
	return 0;
}

int gs_drm_memory_from_usage(struct gs_gpu_backend *b, unsigned i, const struct gs_drm_usage *u,
			     struct gs_gpu_mem *ret)
{
	struct drm_gpu *g;
	uint64_t used = 0;

	if (!b || b->ops != &drm_ops || !u || !ret)
		return -EINVAL;
	g = gpu_at(b, i);
	if (!g)
		return -EINVAL;
	if (u->n_no_stats)
		return -ENODATA;
	for (size_t k = 0; k < u->n_clients; k++) {
		const struct gs_drm_client *c = &u->clients[k];

		if (!c->pdev_known || !gs_pci_addr_equal(&c->pdev, &g->pub.pci))
			continue;
		if (!c->vram_known)
			return -ENODATA;
		used = c->vram > UINT64_MAX - used ? UINT64_MAX : used + c->vram;
	}
	memset(ret, 0, sizeof(*ret));
	ret->used = used;
	ret->total = g->pub.vram_total_known ? g->pub.vram_total : 0;
	return 0;
}

int gs_drm_kfd_state(struct gs_gpu_backend *b)
{
	if (!b || b->ops != &drm_ops)
		return -EINVAL;
	return ((struct drm_backend *)b)->kfd_state;
}

static void free_gpus(struct drm_gpu *gpus, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (gpus[i].dev_fd >= 0)
			close(gpus[i].dev_fd);
	free(gpus);
}

int gs_drm_open(const struct gs_root *root, struct gs_gpu_backend **ret)
{
	struct drm_gpu *gpus = NULL;
	struct drm_backend *db;
	struct dirent *de;
	unsigned n = 0;
	int r = 0, kfd_state;
	DIR *d;

	if (!root || !ret)
		return -EINVAL;
	if (root->sys_fd < 0)
		return -ENOENT;
	d = gs_opendir_at(root->sys_fd, DRM_CLASS);
	if (!d)
		return errno == ENOENT ? -ENODEV : -errno; /* no DRM driver loaded */
	gpus = calloc(MAX_CARDS, sizeof(*gpus));
	if (!gpus) {
		closedir(d);
		return -ENOMEM;
	}
	while ((de = readdir(d)) && n < MAX_CARDS) {
		unsigned card;

		/* card<N> only: connectors are card<N>-<type>-<i>. */
		if (!card_name(de->d_name, &card))
			continue;
		r = load_card(root->sys_fd, card, &gpus[n]);
		if (r == -ENOMEM)
			break;
		if (r == 1)
			n++;
		r = 0;
	}
	closedir(d);
	if (r == 0 && n == 0)
		r = -ENODEV;
	if (r < 0) {
		free_gpus(gpus, n);
		return r;
	}
	qsort(gpus, n, sizeof(*gpus), cmp_gpu);
	/* A broken KFD topology costs the KFD process lists, not the GPUs:
	 * the fd scan still finds /dev/kfd and render node holders. */
	kfd_state = map_kfd(root->sys_fd, gpus, n);
	if (kfd_state == -ENOMEM) {
		free_gpus(gpus, n);
		return kfd_state;
	}
	db = calloc(1, sizeof(*db));
	if (!db) {
		free_gpus(gpus, n);
		return -ENOMEM;
	}
	db->sys_fd = fcntl(root->sys_fd, F_DUPFD_CLOEXEC, 3);
	if (db->sys_fd < 0) {
		r = -errno;
		free(db);
		free_gpus(gpus, n);
		return r;
	}
	db->base.ops = &drm_ops;
	db->kfd_state = kfd_state;
	db->n = n;
	db->gpus = gpus;
	*ret = &db->base;
	return 0;
}

#include "gpu/kfd.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KFD_TOPOLOGY "class/kfd/kfd/topology/nodes"
#define KFD_PROC "class/kfd/kfd/proc"
#define PROPERTIES_MAX (16 * 1024) /* about 1.2 KiB on an MI300X node */

static bool set_u32(const char *val, uint32_t *ret)
{
	return gs_parse_u32(val, ret) == 0;
}

int gs_kfd_parse_properties(const char *text, struct gs_kfd_node *ret)
{
	struct gs_kfd_node n;
	bool have_domain = false, have_location = false, any = false;

	if (!text || !ret)
		return -EINVAL;
	memset(&n, 0, sizeof(n));
	for (const char *p = text; *p;) {
		const char *start = p, *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		char line[128], *name, *val;
		size_t len = (size_t)(end - start);

		p = nl ? nl + 1 : end;
		if (len >= sizeof(line))
			continue;
		memcpy(line, start, len);
		line[len] = '\0';
		name = gs_strstrip(line);
		val = name + strcspn(name, " \t");
		if (!*val)
			continue;
		*val++ = '\0';
		val = gs_strstrip(val);
		if (strspn(val, "0123456789") != strlen(val) || !*val)
			continue;
		any = true;
		if (strcmp(name, "vendor_id") == 0)
			(void)set_u32(val, &n.vendor_id);
		else if (strcmp(name, "device_id") == 0)
			(void)set_u32(val, &n.device_id);
		else if (strcmp(name, "simd_count") == 0)
			(void)set_u32(val, &n.simd_count);
		else if (strcmp(name, "domain") == 0)
			have_domain = set_u32(val, &n.domain);
		else if (strcmp(name, "location_id") == 0)
			have_location = set_u32(val, &n.location_id);
		else if (strcmp(name, "drm_render_minor") == 0)
			n.render_minor_known = set_u32(val, &n.render_minor);
		else if (strcmp(name, "unique_id") == 0 && gs_parse_u64(val, &n.unique_id) < 0)
			n.unique_id = 0;
	}
	if (!any)
		return -EBADMSG;
	n.location_known = have_domain && have_location;
	*ret = n;
	return 0;
}

int gs_kfd_node_pci(const struct gs_kfd_node *n, struct gs_pci_addr *ret)
{
	if (!n->location_known || n->location_id > 0xffff)
		return -ENOENT;
	ret->domain = n->domain;
	ret->bus = (uint8_t)(n->location_id >> 8);
	ret->dev = (uint8_t)((n->location_id >> 3) & 0x1f);
	ret->fn = (uint8_t)(n->location_id & 7);
	return 0;
}

int gs_kfd_node_card(const struct gs_kfd_node *n, const struct gs_kfd_card *cards, size_t n_cards)
{
	struct gs_pci_addr pci;
	int found = -ENOENT;

	if (n->render_minor_known && n->render_minor)
		for (size_t i = 0; i < n_cards; i++)
			if (cards[i].render_minor_known && cards[i].render_minor == n->render_minor)
				return (int)i;
	if (gs_kfd_node_pci(n, &pci) < 0)
		return -ENOENT;
	for (size_t i = 0; i < n_cards; i++)
		if (gs_pci_addr_equal(&cards[i].pci, &pci))
			return (int)i;
	/* A partition of a multi-node device: its render node is not the
	 * card's, and its location_id carries the node id where the
	 * function number would be. Only a unique function-0 card fits. */
	for (size_t i = 0; i < n_cards; i++) {
		const struct gs_pci_addr *c = &cards[i].pci;

		if (c->domain != pci.domain || c->bus != pci.bus || c->dev != pci.dev || c->fn != 0)
			continue;
		if (found >= 0)
			return -ENOENT;
		found = (int)i;
	}
	return found;
}

/* <sys>/<path> as a directory stream; the sys root may be absent (-1). */
static DIR *opendir_sys(int sys_fd, const char *path)
{
	if (sys_fd < 0) {
		errno = ENOENT;
		return NULL;
	}
	return gs_opendir_at(sys_fd, path);
}

/* A directory entry name that is a plain decimal number (no sign, no
 * leading zero but "0"), as the kernel names nodes and pids. */
static bool dec_name(const char *s, uint64_t max, uint64_t *ret)
{
	if (!*s || strspn(s, "0123456789") != strlen(s) || (s[0] == '0' && s[1]))
		return false;
	return gs_parse_u64(s, ret) == 0 && *ret <= max;
}

static int cmp_node(const void *a, const void *b)
{
	const struct gs_kfd_node *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* One node directory: its gpu_id file and properties. 1 when it is a GPU. */
static int read_node(int sys_fd, unsigned id, struct gs_kfd_node *ret)
{
	_cleanup_free_ char *text = NULL;
	char path[128];
	uint64_t gpu_id;
	int r;

	snprintf(path, sizeof(path), KFD_TOPOLOGY "/%u/gpu_id", id);
	r = gs_read_u64_at(sys_fd, path, &gpu_id);
	if (r < 0)
		return r;
	if (gpu_id == 0)
		return 0; /* a CPU node */
	if (gpu_id > UINT32_MAX)
		return -EBADMSG;
	snprintf(path, sizeof(path), KFD_TOPOLOGY "/%u/properties", id);
	r = gs_read_file_at(sys_fd, path, PROPERTIES_MAX, &text, NULL);
	if (r < 0)
		return r;
	r = gs_kfd_parse_properties(text, ret);
	if (r < 0)
		return r;
	ret->id = id;
	ret->gpu_id = (uint32_t)gpu_id;
	return 1;
}

int gs_kfd_topology_load(int sys_fd, struct gs_kfd_node **ret, size_t *ret_n)
{
	_cleanup_free_ struct gs_kfd_node *nodes = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (!ret || !ret_n)
		return -EINVAL;
	d = opendir_sys(sys_fd, KFD_TOPOLOGY);
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		uint64_t id;
		struct gs_kfd_node node;

		if (!dec_name(de->d_name, UINT32_MAX, &id))
			continue;
		r = read_node(sys_fd, (unsigned)id, &node);
		if (r == -ENOENT) {
			r = 0; /* a node going away (hot unplug): skip it */
			continue;
		}
		if (r < 0)
			break;
		if (r == 0)
			continue;
		if (GS_ARRAY_RESERVE(nodes, cap, n) < 0) {
			r = -ENOMEM;
			break;
		}
		nodes[n++] = node;
		r = 0;
	}
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	if (r < 0)
		return r;
	if (n)
		qsort(nodes, n, sizeof(*nodes), cmp_node);
	*ret = GS_TAKE_PTR(nodes);
	*ret_n = n;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

int gs_kfd_proc_list(int sys_fd, pid_t **ret, size_t *ret_n)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (!ret || !ret_n)
		return -EINVAL;
	d = opendir_sys(sys_fd, KFD_PROC);
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		uint64_t pid;

		if (!dec_name(de->d_name, INT32_MAX, &pid) || pid == 0)
			continue;
		if (GS_ARRAY_RESERVE(pids, cap, n) < 0) {
			r = -ENOMEM;
			break;
		}
		pids[n++] = (pid_t)pid;
	}
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	if (r < 0)
		return r;
	if (n)
		qsort(pids, n, sizeof(*pids), cmp_pid);
	*ret = GS_TAKE_PTR(pids);
	*ret_n = n;
	return 0;
}

int gs_kfd_proc_vram(int sys_fd, pid_t pid, struct gs_kfd_vram **ret, size_t *ret_n)
{
	_cleanup_free_ struct gs_kfd_vram *v = NULL;
	size_t n = 0, cap = 0;
	char path[64];
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (pid <= 0 || !ret || !ret_n)
		return -EINVAL;
	snprintf(path, sizeof(path), KFD_PROC "/%d", (int)pid);
	d = opendir_sys(sys_fd, path);
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		struct gs_kfd_vram e = { 0 };
		uint64_t id;

		if (!gs_startswith(de->d_name, "vram_") || !dec_name(de->d_name + 5, UINT32_MAX, &id))
			continue;
		e.gpu_id = (uint32_t)id;
		r = gs_read_u64_at(dirfd(d), de->d_name, &e.bytes);
		if (r == -ENOENT || r == -ESRCH)
			continue; /* the process went away under us */
		if (r == -ENOMEM)
			break;
		/* -EPERM from kfd_devcgroup_check_permission: known absent. */
		e.known = r == 0;
		r = 0;
		if (GS_ARRAY_RESERVE(v, cap, n) < 0) {
			r = -ENOMEM;
			break;
		}
		v[n++] = e;
	}
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	if (r < 0)
		return r;
	*ret = GS_TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

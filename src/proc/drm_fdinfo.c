#include "proc/drm_fdinfo.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

/* An fdinfo of a DRM fd is about 1 KiB (amdgpu, xe with every engine). */
#define FDINFO_MAX (64 * 1024)

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* "<uint>", "<uint> KiB" or "<uint> MiB" (drm_print_memory_stats prints the
 * largest unit that loses nothing, so all three occur). Bytes in *ret. */
static int parse_size(const char *s, uint64_t *ret)
{
	char digits[24];
	const char *p = s, *unit;
	uint64_t v, mult = 1;
	size_t n = strspn(p, "0123456789");

	if (n == 0 || n >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, p, n);
	digits[n] = '\0';
	if (gs_parse_u64(digits, &v) < 0)
		return -ERANGE;
	unit = p + n;
	if (*unit != '\0') {
		if (!is_blank(*unit))
			return -EINVAL;
		unit += strspn(unit, " \t");
		if (strcmp(unit, "KiB") == 0)
			mult = 1024;
		else if (strcmp(unit, "MiB") == 0)
			mult = 1024 * 1024;
		else
			return -EINVAL; /* "kB", "GiB": not in the specification */
	}
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*ret = v * mult;
	return 0;
}

static struct gs_drm_region *region_get(struct gs_drm_fdinfo *fi, const char *name)
{
	struct gs_drm_region *r;

	if (!*name || strlen(name) >= sizeof(fi->regions[0].name))
		return NULL;
	for (size_t i = 0; i < fi->n_regions; i++)
		if (strcmp(fi->regions[i].name, name) == 0)
			return &fi->regions[i];
	if (fi->n_regions == GS_DRM_REGIONS_MAX)
		return NULL;
	r = &fi->regions[fi->n_regions++];
	memset(r, 0, sizeof(*r));
	gs_strlcpy(r->name, name, sizeof(r->name));
	return r;
}

enum mem_stat { MEM_TOTAL, MEM_RESIDENT, MEM_LEGACY };

static void set_memory(struct gs_drm_fdinfo *fi, enum mem_stat stat, const char *region, const char *val)
{
	struct gs_drm_region *r;
	uint64_t bytes;

	/* drm-total-cycles-<engine> is an engine counter, not a region; no
	 * region has that name, whatever the key. */
	if (gs_startswith(region, "cycles-"))
		return;
	r = region_get(fi, region);
	if (!r || parse_size(val, &bytes) < 0) {
		fi->n_bad++;
		return;
	}
	switch (stat) {
	case MEM_TOTAL:
		r->total = bytes;
		r->total_known = true;
		break;
	case MEM_RESIDENT:
		r->resident = bytes;
		r->resident_known = true;
		r->resident_legacy = false;
		break;
	case MEM_LEGACY:
		/* Deprecated alias: newer amdgpu prints both, and the
		 * standard key wins whichever comes first. */
		if (r->resident_known && !r->resident_legacy)
			break;
		r->resident = bytes;
		r->resident_known = true;
		r->resident_legacy = true;
		break;
	}
}

/* The keys amdgpu printed in Linux 5.14-5.18 (amdgpu_fdinfo.c before the
 * common format, 0604aa87 in 5.19): "pdev", "pasid" and, per placement,
 * "<vram|gtt|cpu> mem: N kB", the only keys with a blank in them. */
static bool is_old_amdgpu_mem_key(const char *p, size_t n)
{
	static const char *const keys[] = { "vram mem", "gtt mem", "cpu mem" };

	for (size_t i = 0; i < GS_ARRAY_SIZE(keys); i++)
		if (n == strlen(keys[i]) && memcmp(p, keys[i], n) == 0)
			return true;
	return false;
}

/* What the 5.14-5.18 text gave: the device, the VM's PASID and the bytes
 * per placement ("kB" there is the byte count shifted by 10: KiB). Kept
 * apart: it becomes the client only when no drm-driver key came. */
struct old_amdgpu {
	bool pdev_known, pasid_known;
	struct gs_pci_addr pdev;
	uint64_t pasid;
	size_t n_mem;
	char region[3][8];
	bool known[3];
	uint64_t bytes[3];
	unsigned n_bad;
};

static void set_old_amdgpu_key(struct old_amdgpu *o, const char *key, const char *val)
{
	const char *sp = strchr(key, ' ');
	size_t n = strspn(val, "0123456789");
	char num[24];
	uint64_t kib;
	size_t i;

	if (strcmp(key, "pdev") == 0) {
		o->pdev_known = gs_pci_addr_parse(val, &o->pdev) == 0;
		return;
	}
	if (strcmp(key, "pasid") == 0) {
		o->pasid_known = gs_parse_u64(val, &o->pasid) == 0 && o->pasid != 0;
		return;
	}
	if (!is_old_amdgpu_mem_key(key, strlen(key)) || o->n_mem == GS_ARRAY_SIZE(o->region))
		return;
	i = o->n_mem++;
	memcpy(o->region[i], key, (size_t)(sp - key));
	o->region[i][sp - key] = '\0';
	if (n == 0 || n >= sizeof(num) || strcmp(val + n + strspn(val + n, " \t"), "kB") != 0) {
		o->n_bad++;
		return;
	}
	memcpy(num, val, n);
	num[n] = '\0';
	if (gs_parse_u64(num, &kib) < 0 || kib > UINT64_MAX / 1024) {
		o->n_bad++;
		return;
	}
	o->bytes[i] = kib * 1024;
	o->known[i] = true;
}

/* The old text as a client: its device, its VM's PASID as the client id
 * (one per open file: fork and dup share it, as they share a drm-client-id)
 * and its placements as resident bytes. -ENODATA unless it has all three. */
static int use_old_amdgpu(const struct old_amdgpu *o, struct gs_drm_fdinfo *fi)
{
	if (!o->pdev_known || !o->pasid_known || !o->n_mem)
		return -ENODATA;
	gs_strlcpy(fi->driver, "amdgpu", sizeof(fi->driver));
	fi->pdev_known = true;
	fi->pdev = o->pdev;
	fi->client_id_known = true;
	fi->client_id = o->pasid;
	fi->n_bad += o->n_bad;
	for (size_t i = 0; i < o->n_mem; i++) {
		struct gs_drm_region *r;

		if (!o->known[i])
			continue;
		r = region_get(fi, o->region[i]);
		if (!r)
			continue;
		r->resident = o->bytes[i];
		r->resident_known = true;
		r->resident_legacy = true;
	}
	return 0;
}

static void set_key(struct gs_drm_fdinfo *fi, bool *have_driver, const char *key, const char *val)
{
	if (strcmp(key, "drm-driver") == 0) {
		/* The name a driver registers: shown to users, so checked. */
		if (!*val || strlen(val) >= sizeof(fi->driver) ||
		    strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(val)) {
			fi->n_bad++;
			return;
		}
		gs_strlcpy(fi->driver, val, sizeof(fi->driver));
		*have_driver = true;
	} else if (strcmp(key, "drm-pdev") == 0) {
		fi->pdev_known = gs_pci_addr_parse(val, &fi->pdev) == 0;
		if (!fi->pdev_known)
			fi->n_bad++;
	} else if (strcmp(key, "drm-client-id") == 0) {
		fi->client_id_known = gs_parse_u64(val, &fi->client_id) == 0;
		if (!fi->client_id_known)
			fi->n_bad++;
	} else if (gs_startswith(key, "drm-total-")) {
		set_memory(fi, MEM_TOTAL, key + strlen("drm-total-"), val);
	} else if (gs_startswith(key, "drm-resident-")) {
		set_memory(fi, MEM_RESIDENT, key + strlen("drm-resident-"), val);
	} else if (gs_startswith(key, "drm-memory-")) {
		set_memory(fi, MEM_LEGACY, key + strlen("drm-memory-"), val);
	}
	/* drm-shared/-active/-purgeable, engines and driver keys (amd-*,
	 * pasid) say nothing about who holds how much: ignored. */
}

/* Split the line [p, end) into key and value; false when it is not a
 * "key: value" line. Only old amdgpu's "vram mem" (and gtt, cpu) may have a
 * blank in its key. */
static bool split_line(const char *p, const char *end, char *key, size_t keylen, char *val, size_t vallen)
{
	const char *colon = memchr(p, ':', (size_t)(end - p));
	size_t kn, vn;

	if (!colon || colon == p)
		return false;
	kn = (size_t)(colon - p);
	if (kn >= keylen)
		return false;
	for (const char *k = p; k < colon && !is_old_amdgpu_mem_key(p, kn); k++)
		if (is_blank(*k) || *k == '\n')
			return false;
	memcpy(key, p, kn);
	key[kn] = '\0';
	p = colon + 1;
	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	vn = (size_t)(end - p);
	if (vn >= vallen)
		vn = 0; /* longer than any value we read: empty, so it fails to parse */
	memcpy(val, p, vn);
	val[vn] = '\0';
	return true;
}

int gs_drm_fdinfo_parse(const char *text, struct gs_drm_fdinfo *ret)
{
	struct gs_drm_fdinfo fi;
	struct old_amdgpu old = { 0 };
	bool have_driver = false;
	const char *p;

	if (!text || !ret)
		return -EINVAL;
	memset(&fi, 0, sizeof(fi));
	for (p = text; *p;) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		char key[80], val[96];

		if (split_line(p, end, key, sizeof(key), val, sizeof(val))) {
			set_key(&fi, &have_driver, key, val);
			set_old_amdgpu_key(&old, key, val);
		}
		p = nl ? nl + 1 : end;
	}
	if (!have_driver && use_old_amdgpu(&old, &fi) < 0)
		return -ENODATA;
	*ret = fi;
	return 0;
}

/* name is prefix followed by one or more digits. */
static bool is_numbered(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(name, prefix, n) == 0 && name[n] && strspn(name + n, "0123456789") == strlen(name + n);
}

bool gs_drm_region_is_vram(const char *driver, const char *region)
{
	if (strcmp(driver, "amdgpu") == 0)
		return strcmp(region, "vram") == 0;
	if (strcmp(driver, "xe") == 0)
		return is_numbered(region, "vram");
	if (strcmp(driver, "i915") == 0)
		return is_numbered(region, "local");
	/* Other drivers: the names the specification's examples use. */
	return strcmp(region, "vram") == 0 || is_numbered(region, "vram") || is_numbered(region, "local");
}

int gs_drm_fdinfo_vram(const struct gs_drm_fdinfo *fi, uint64_t *ret_resident)
{
	uint64_t sum = 0;
	bool known = false;

	for (size_t i = 0; i < fi->n_regions; i++) {
		const struct gs_drm_region *r = &fi->regions[i];

		if (!r->resident_known || !gs_drm_region_is_vram(fi->driver, r->name))
			continue;
		if (sum > UINT64_MAX - r->resident)
			return -ERANGE;
		sum += r->resident;
		known = true;
	}
	if (!known)
		return -ENODATA;
	*ret_resident = sum;
	return 0;
}

/* The value of "name:" in fdinfo text as a number; -ENOENT when absent. */
static int field_u64(const char *text, const char *name, uint64_t *ret)
{
	size_t n = strlen(name);

	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');

		if (strncmp(p, name, n) == 0 && p[n] == ':') {
			char buf[32];
			const char *v = p + n + 1, *end = nl ? nl : v + strlen(v);
			size_t len;

			while (v < end && is_blank(*v))
				v++;
			while (end > v && is_blank(end[-1]))
				end--;
			len = (size_t)(end - v);
			if (len >= sizeof(buf))
				return -EINVAL;
			memcpy(buf, v, len);
			buf[len] = '\0';
			return gs_parse_u64(buf, ret);
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return -ENOENT;
}

/* Does the fixture describe the same open file as the kernel's text? */
static bool shadow_matches(const char *real, const char *shadow)
{
	static const char *const keys[] = { "ino", "mnt_id" };
	bool compared = false;

	for (size_t i = 0; i < GS_ARRAY_SIZE(keys); i++) {
		uint64_t a, b;

		if (field_u64(real, keys[i], &a) < 0)
			continue;
		if (field_u64(shadow, keys[i], &b) < 0 || a != b)
			return false;
		compared = true;
	}
	return compared;
}

int gs_drm_fdinfo_read(int proc_fd, int shadow_fd, pid_t pid, int fd, ino_t expect_ino,
		       struct gs_drm_fdinfo *ret)
{
	_cleanup_free_ char *real = NULL, *shadow = NULL;
	char path[64];
	uint64_t ino;
	int r;

	if (pid <= 0 || fd < 0 || !ret)
		return -EINVAL;
	snprintf(path, sizeof(path), "%d/fdinfo/%d", (int)pid, fd);
	r = gs_read_file_at(proc_fd, path, FDINFO_MAX, &real, NULL);
	if (r < 0)
		return r;
	if (expect_ino && field_u64(real, "ino", &ino) == 0 && ino != (uint64_t)expect_ino)
		return -ESTALE;
	if (shadow_fd >= 0) {
		snprintf(path, sizeof(path), "%d/%d", (int)pid, fd);
		r = gs_read_file_at(shadow_fd, path, FDINFO_MAX, &shadow, NULL);
		if (r < 0 && r != -ENOENT)
			return r;
		if (r == 0 && shadow_matches(real, shadow))
			return gs_drm_fdinfo_parse(shadow, ret);
	}
	return gs_drm_fdinfo_parse(real, ret);
}

static bool same_client(const struct gs_drm_client *c, const struct gs_drm_client *n)
{
	if (!c->id_known || !n->id_known || c->id != n->id)
		return false;
	/* Ids are unique per device when drm-pdev is given, else globally. */
	if (c->pdev_known != n->pdev_known)
		return false;
	if (c->pdev_known && !gs_pci_addr_equal(&c->pdev, &n->pdev))
		return false;
	return strcmp(c->driver, n->driver) == 0;
}

static int add_client(struct gs_drm_usage *u, const struct gs_drm_client *n)
{
	for (size_t i = 0; i < u->n_clients; i++) {
		struct gs_drm_client *c = &u->clients[i];

		if (!same_client(c, n))
			continue;
		c->n_fds += n->n_fds;
		if (n->vram_known && (!c->vram_known || n->vram > c->vram))
			c->vram = n->vram;
		c->vram_known |= n->vram_known;
		if (n->mem_known && (!c->mem_known || n->mem > c->mem))
			c->mem = n->mem;
		c->mem_known |= n->mem_known;
		return 0;
	}
	if (GS_ARRAY_RESERVE(u->clients, u->cap_clients, u->n_clients) < 0)
		return -ENOMEM;
	u->clients[u->n_clients++] = *n;
	return 0;
}

/* All regions: the buffers the client created (total), else those present. */
static bool client_mem(const struct gs_drm_fdinfo *fi, uint64_t *ret)
{
	uint64_t sum = 0;
	bool known = false;

	for (size_t i = 0; i < fi->n_regions; i++) {
		const struct gs_drm_region *r = &fi->regions[i];
		uint64_t v;

		if (r->total_known)
			v = r->total;
		else if (r->resident_known)
			v = r->resident;
		else
			continue;
		sum = v > UINT64_MAX - sum ? UINT64_MAX : sum + v;
		known = true;
	}
	*ret = sum;
	return known;
}

int gs_drm_usage_add(struct gs_drm_usage *u, const struct gs_drm_fdinfo *fi)
{
	struct gs_drm_client n;
	int r;

	if (!u)
		return -EINVAL;
	if (!fi) {
		u->n_fds++;
		u->n_no_stats++;
		return 0;
	}
	memset(&n, 0, sizeof(n));
	gs_strlcpy(n.driver, fi->driver, sizeof(n.driver));
	n.pdev_known = fi->pdev_known;
	n.pdev = fi->pdev;
	n.id_known = fi->client_id_known;
	n.id = fi->client_id;
	n.n_fds = 1;
	n.vram_known = gs_drm_fdinfo_vram(fi, &n.vram) == 0;
	n.mem_known = client_mem(fi, &n.mem);
	r = add_client(u, &n);
	if (r == 0)
		u->n_fds++;
	return r;
}

int gs_drm_usage_note_fd(struct gs_drm_usage *u, const struct gs_drm_fdref *ref)
{
	if (!u || !ref)
		return -EINVAL;
	if (GS_ARRAY_RESERVE(u->refs, u->cap_refs, u->n_refs) < 0)
		return -ENOMEM;
	u->refs[u->n_refs++] = *ref;
	return 0;
}

int gs_drm_usage_merge(struct gs_drm_usage *dst, const struct gs_drm_usage *src)
{
	for (size_t i = 0; i < src->n_clients; i++) {
		int r = add_client(dst, &src->clients[i]);

		if (r < 0)
			return r;
	}
	dst->n_fds += src->n_fds;
	dst->n_no_stats += src->n_no_stats;
	return 0;
}

void gs_drm_usage_totals(const struct gs_drm_usage *u, const struct gs_pci_addr *pdev, struct gs_drm_totals *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < u->n_clients; i++) {
		const struct gs_drm_client *c = &u->clients[i];

		if (pdev && (!c->pdev_known || !gs_pci_addr_equal(&c->pdev, pdev)))
			continue;
		ret->n_clients++;
		if (c->vram_known) {
			ret->vram = c->vram > UINT64_MAX - ret->vram ? UINT64_MAX : ret->vram + c->vram;
			ret->vram_known = true;
		}
		if (c->mem_known) {
			ret->mem = c->mem > UINT64_MAX - ret->mem ? UINT64_MAX : ret->mem + c->mem;
			ret->mem_known = true;
		}
	}
}

void gs_drm_usage_free(struct gs_drm_usage *u)
{
	if (!u)
		return;
	free(u->clients);
	free(u->refs);
	memset(u, 0, sizeof(*u));
}

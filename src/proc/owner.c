/* Owner classification from /proc/PID/cgroup.
 *
 * The path components are controlled by whoever may create cgroups (delegated
 * users, container managers), so every copy is bounded, numbers go through the
 * checked parsers and text that a kernel would never print (malformed lines,
 * a hierarchy ID seen twice) makes the whole file untrusted. */
#include "proc/owner.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

/* A path of 1023 bytes has at most 512 non-empty components. */
#define CG_MAX_COMPS 512
/* Real files have one line per hierarchy (about 15); far more means garbage. */
#define CG_MAX_LINES 256

struct cgpath {
	char buf[sizeof(((struct gs_owner *)0)->cgroup)];
	const char *c[CG_MAX_COMPS];
	size_t n;
	/* The path started with "/..": it lies outside the reader's cgroup
	 * namespace, so no manager we can talk to names it this way. */
	bool outside_ns;
};

const char *gs_owner_kind_str(enum gs_owner_kind k)
{
	switch (k) {
	case GS_OWNER_UNIT:       return "unit";
	case GS_OWNER_USER_UNIT:  return "user-unit";
	case GS_OWNER_SESSION:    return "session";
	case GS_OWNER_DOCKER:     return "docker";
	case GS_OWNER_PODMAN:     return "podman";
	case GS_OWNER_KUBERNETES: return "kubernetes";
	case GS_OWNER_LXC:        return "lxc";
	case GS_OWNER_NSPAWN:     return "nspawn";
	case GS_OWNER_SLURM:      return "slurm";
	case GS_OWNER_NONE:       break;
	}
	return "none";
}

bool gs_owner_kind_is_container(enum gs_owner_kind k)
{
	return k == GS_OWNER_DOCKER || k == GS_OWNER_PODMAN || k == GS_OWNER_KUBERNETES || k == GS_OWNER_LXC ||
	       k == GS_OWNER_NSPAWN;
}

/* Copy len bytes of src (not necessarily NUL-terminated) into dst, truncating. */
static void copy_span(char *dst, size_t size, const char *src, size_t len)
{
	if (size == 0)
		return;
	if (len > size - 1)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* The part of s between prefix and suffix, when s has both and it is not empty. */
static bool middle(const char *s, const char *prefix, const char *suffix,
		   const char **ret, size_t *ret_len)
{
	size_t ls = strlen(s), lp = strlen(prefix), lx = strlen(suffix);

	if (ls <= lp + lx || strncmp(s, prefix, lp) != 0 || strcmp(s + ls - lx, suffix) != 0)
		return false;
	*ret = s + lp;
	*ret_len = ls - lp - lx;
	return true;
}

static bool is_hex64(const char *s, size_t len)
{
	if (len != 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool parse_u32_span(const char *s, size_t len, unsigned *ret)
{
	char tmp[16];
	uint32_t v;

	if (len == 0 || len >= sizeof(tmp))
		return false;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	if (gs_parse_u32(tmp, &v) < 0)
		return false;
	*ret = v;
	return true;
}

static bool is_unit(const char *c)
{
	return (strlen(c) > strlen(".service") && gs_endswith(c, ".service")) ||
	       (strlen(c) > strlen(".scope") && gs_endswith(c, ".scope"));
}

/* Innermost "*.service" in c[from..n), else innermost "*.scope". A service is
 * what an operator stops; a scope only when there is no service around. */
static bool innermost_unit(const struct cgpath *p, size_t from, char *out, size_t size)
{
	static const char *const sufs[] = { ".service", ".scope" };

	for (size_t k = 0; k < GS_ARRAY_SIZE(sufs); k++)
		for (size_t i = p->n; i > from; i--) {
			const char *c = p->c[i - 1];

			if (strlen(c) > strlen(sufs[k]) && gs_endswith(c, sufs[k])) {
				gs_strlcpy(out, c, size);
				return true;
			}
		}
	return false;
}

/* The unit that owns the subtree c[from..n): the OUTERMOST unit there. A
 * manager creates units under slices only, so a unit found below another
 * unit was made by a second manager running inside the first (a container's
 * systemd, a CI runner, a nested user manager): below a delegation boundary.
 * The outer unit is what its manager knows; the inner one belongs to the
 * inner manager, and a unit of the same name elsewhere is another unit.
 * Writes the unit into out, sets o->delegated, and the inner unit's name
 * into inner when given; records where the unit's cgroup is (relative to
 * c[from], the root its manager sees). */
static bool owning_unit(const struct cgpath *p, size_t from, struct gs_owner *o, char *out, size_t size,
			char *inner, size_t inner_size)
{
	size_t u = from;

	while (u < p->n && !is_unit(p->c[u]))
		u++;
	if (u >= p->n)
		return false;
	gs_strlcpy(out, p->c[u], size);
	for (size_t k = u + 1; k < p->n; k++)
		if (is_unit(p->c[k]))
			o->delegated = true;
	if (o->delegated && inner)
		innermost_unit(p, u + 1, inner, inner_size);
	if (!p->outside_ns) {
		size_t start = (size_t)(p->c[from] - p->buf) - 1;
		size_t end = (size_t)(p->c[u] - p->buf) + strlen(p->c[u]);

		/* c[from] follows a '/': every path starts with one. */
		if (end - start < 0xffff) {
			o->unit_cg_start = (unsigned short)start;
			o->unit_cg_len = (unsigned short)(end - start);
		}
	}
	return true;
}

/* systemd escapes bytes of instance and machine names as "\xNN" ("gpu\x2dct"
 * for "gpu-ct"). Printable ones are decoded so a name reads as the operator
 * typed it; control bytes stay escaped, never raw in a name. */
static void copy_unescaped(char *dst, size_t size, const char *src, size_t len)
{
	size_t o = 0;

	if (size == 0)
		return;
	for (size_t i = 0; i < len && o < size - 1; i++) {
		unsigned v = 0;
		bool hex = i + 3 < len && src[i] == '\\' && src[i + 1] == 'x';

		if (hex) {
			for (size_t k = 2; k < 4 && hex; k++) {
				char c = src[i + k];

				v <<= 4;
				if (c >= '0' && c <= '9')
					v |= (unsigned)(c - '0');
				else if (c >= 'a' && c <= 'f')
					v |= (unsigned)(c - 'a' + 10);
				else if (c >= 'A' && c <= 'F')
					v |= (unsigned)(c - 'A' + 10);
				else
					hex = false;
			}
		}
		if (hex && v >= 0x20 && v < 0x7f && v != '/') {
			dst[o++] = (char)v;
			i += 3;
		} else {
			dst[o++] = src[i];
		}
	}
	dst[o] = '\0';
}

/* Docker container at component i: "docker-<64hex>.scope" (systemd driver) or
 * "docker" followed by "<64hex>" (cgroupfs driver). *ret_next is the index
 * after the marker. */
static bool docker_at(const struct cgpath *p, size_t i, const char **ret_id, size_t *ret_next)
{
	const char *m;
	size_t ml;

	if (middle(p->c[i], "docker-", ".scope", &m, &ml) && is_hex64(m, ml)) {
		*ret_id = m;
		*ret_next = i + 1;
		return true;
	}
	if (strcmp(p->c[i], "docker") == 0 && i + 1 < p->n &&
	    is_hex64(p->c[i + 1], strlen(p->c[i + 1]))) {
		*ret_id = p->c[i + 1];
		*ret_next = i + 2;
		return true;
	}
	return false;
}

/* Podman container at component i: "libpod-<64hex>.scope", its conmon
 * "libpod-conmon-<64hex>.scope", or the cgroupfs manager's "libpod-<64hex>". */
static bool podman_at(const struct cgpath *p, size_t i, const char **ret_id)
{
	const char *c = p->c[i], *id;
	size_t len;

	if (gs_startswith(c, "libpod-conmon-"))
		id = c + strlen("libpod-conmon-");
	else if (gs_startswith(c, "libpod-"))
		id = c + strlen("libpod-");
	else
		return false;
	len = strlen(id);
	if (len > strlen(".scope") && gs_endswith(id, ".scope"))
		len -= strlen(".scope");
	if (!is_hex64(id, len))
		return false;
	*ret_id = id;
	return true;
}

static bool kube_root(const char *c)
{
	return strcmp(c, "kubepods") == 0 || strcmp(c, "kubepods.slice") == 0 ||
	       /* kubelet in a container (kind, k3d) nests under kubelet.slice */
	       (gs_startswith(c, "kubelet-kubepods") && gs_endswith(c, ".slice"));
}

static void kube_pod(const struct cgpath *p, size_t from, struct gs_owner *o)
{
	for (size_t i = from; i < p->n; i++) {
		const char *c = p->c[i], *uid = NULL, *s;
		size_t len = 0;

		if (gs_endswith(c, ".slice")) {
			/* kubepods-<qos>-pod<uid_with_underscores>.slice, the last
			 * "-pod" because the prefix itself says "kubepods" */
			for (s = strstr(c, "-pod"); s; s = strstr(s + 1, "-pod"))
				uid = s + strlen("-pod");
			if (uid)
				len = strlen(uid) - strlen(".slice");
		} else if (gs_startswith(c, "pod") && strlen(c) > 3) {
			uid = c + 3;
			len = strlen(uid);
		}
		if (!uid || len == 0)
			continue;
		copy_span(o->name, sizeof(o->name), uid, len);
		/* systemd escapes '-' in slice names, so the driver writes '_' */
		for (char *q = o->name; *q; q++)
			if (*q == '_')
				*q = '-';
		return;
	}
}

static bool slurm_root(const struct cgpath *p, size_t i)
{
	const char *c = p->c[i];

	if (strcmp(c, "slurmstepd.scope") == 0)
		return true;
	return i == 0 && (strcmp(c, "slurm") == 0 || (gs_startswith(c, "slurm_") && c[6]));
}

static void slurm_job(const struct cgpath *p, size_t i, struct gs_owner *o)
{
	for (size_t j = i + 1; j < p->n; j++)
		if (gs_startswith(p->c[j], "job_") && p->c[j][4]) {
			o->kind = GS_OWNER_SLURM;
			gs_strlcpy(o->name, p->c[j] + 4, sizeof(o->name));
			return;
		}
	/* slurmstepd's own cgroups (".../slurmstepd.scope/system") belong to no
	 * job: the scope is the best name. */
	if (strcmp(p->c[i], "slurmstepd.scope") == 0) {
		o->kind = GS_OWNER_UNIT;
		gs_strlcpy(o->name, p->c[i], sizeof(o->name));
	} else {
		o->kind = GS_OWNER_SLURM;
	}
}

/* An nspawn container named name (escaped as systemd writes it) whose
 * payload starts at c[from]. Units inside it are its own systemd's, stopped
 * there or not at all: no cgroup for a host manager to compare with. */
static void nspawn_at(const struct cgpath *p, size_t from, const char *name, size_t len, struct gs_owner *o)
{
	o->kind = GS_OWNER_NSPAWN;
	copy_unescaped(o->name, sizeof(o->name), name, len);
	if (from < p->n && !strcmp(p->c[from], "payload"))
		from++;
	owning_unit(p, from, o, o->unit, sizeof(o->unit), NULL, 0);
	o->unit_cg_start = o->unit_cg_len = 0;
}

/* Containers, outermost first: the outer container is what the host operator
 * manages, and a service inside it must not be taken for a host service. */
static bool classify_container(const struct cgpath *p, struct gs_owner *o)
{
	bool seen_unit = false;

	for (size_t i = 0; i < p->n; i++) {
		const char *c = p->c[i], *m;
		size_t ml, next;

		if (i == 0 && strcmp(c, "lxc") == 0 && p->n >= 2) {
			/* Proxmox: lxc/<vmid>/ns/...; older LXC: lxc/<name>/... */
			size_t rest = 2;

			if (rest < p->n && strcmp(p->c[rest], "ns") == 0)
				rest++;
			o->kind = GS_OWNER_LXC;
			gs_strlcpy(o->name, p->c[1], sizeof(o->name));
			owning_unit(p, rest, o, o->unit, sizeof(o->unit), NULL, 0);
			return true;
		}
		if (i == 0 && strcmp(c, "lxc.monitor") == 0 && p->n >= 2) {
			o->kind = GS_OWNER_LXC;
			gs_strlcpy(o->name, p->c[1], sizeof(o->name));
			return true;
		}
		if (middle(c, "lxc.payload.", "", &m, &ml)) {
			o->kind = GS_OWNER_LXC;
			copy_span(o->name, sizeof(o->name), m, ml);
			owning_unit(p, i + 1, o, o->unit, sizeof(o->unit), NULL, 0);
			return true;
		}
		if (middle(c, "lxc.monitor.", "", &m, &ml)) {
			o->kind = GS_OWNER_LXC;
			copy_span(o->name, sizeof(o->name), m, ml);
			return true;
		}
		if (docker_at(p, i, &m, &next)) {
			/* docker-in-docker: the innermost container runs the process */
			for (size_t j = next; j < p->n; j++) {
				const char *m2;
				size_t n2;

				if (docker_at(p, j, &m2, &n2)) {
					m = m2;
					j = n2 - 1;
				}
			}
			o->kind = GS_OWNER_DOCKER;
			copy_span(o->name, sizeof(o->name), m, 64);
			return true;
		}
		if (podman_at(p, i, &m)) {
			for (size_t j = i + 1; j < p->n; j++) {
				const char *m2;

				if (podman_at(p, j, &m2))
					m = m2;
			}
			o->kind = GS_OWNER_PODMAN;
			copy_span(o->name, sizeof(o->name), m, 64);
			return true;
		}
		if (kube_root(c)) {
			o->kind = GS_OWNER_KUBERNETES;
			kube_pod(p, i + 1, o);
			return true;
		}
		if (slurm_root(p, i)) {
			slurm_job(p, i, o);
			return true;
		}
		if (middle(c, "machine-", ".scope", &m, &ml)) {
			/* libvirt VMs and libvirt-lxc share machine.slice; they are
			 * not nspawn containers, so report their scope as a unit. */
			if (gs_startswith(m, "qemu\\x2d") || gs_startswith(m, "lxc\\x2d")) {
				o->kind = GS_OWNER_UNIT;
				gs_strlcpy(o->name, c, sizeof(o->name));
				return true;
			}
			nspawn_at(p, i + 1, m, ml, o);
			return true;
		}
		/* The stock unit of machinectl start / systemd-nspawn@.service:
		 * the container's own systemd runs in .../payload below it. */
		if (middle(c, "systemd-nspawn@", ".service", &m, &ml)) {
			nspawn_at(p, i + 1, m, ml, o);
			return true;
		}
		/* systemd-nspawn --keep-unit in a cgroup that is no unit (a
		 * script's own cgroup): its payload and supervisor subgroups. */
		if (i > 0 && !seen_unit && !strcmp(c, "payload")) {
			nspawn_at(p, i + 1, p->c[i - 1], strlen(p->c[i - 1]), o);
			return true;
		}
		seen_unit |= is_unit(c);
	}
	return false;
}

/* Is c[i] user@UID.service where logind puts a user's manager, below
 * user.slice/user-UID.slice and below no unit? Anywhere else (a delegated
 * subtree of a service: /system.slice/ci.service/user@0.service/...) it
 * is a cgroup someone named so, and the unit above it owns the process. */
static bool user_manager_at(const struct cgpath *p, size_t i)
{
	const char *m;
	size_t ml;

	if (i < 2 || !middle(p->c[i - 1], "user-", ".slice", &m, &ml) || strcmp(p->c[i - 2], "user.slice"))
		return false;
	for (size_t k = 0; k < i; k++)
		if (is_unit(p->c[k]))
			return false;
	return true;
}

static bool classify_user(const struct cgpath *p, struct gs_owner *o)
{
	for (size_t i = 0; i < p->n; i++) {
		const char *m;
		size_t ml;

		if (middle(p->c[i], "user@", ".service", &m, &ml) && user_manager_at(p, i)) {
			o->kind = GS_OWNER_USER_UNIT;
			/* A uid that does not parse names no manager to ask: no
			 * unit cgroup either (unit_cg_len stays 0 below). */
			if (!parse_u32_span(m, ml, &o->uid)) {
				o->uid = 0;
				if (!innermost_unit(p, i + 1, o->name, sizeof(o->name)))
					gs_strlcpy(o->name, p->c[i], sizeof(o->name));
				return true;
			}
			/* Units of the user's manager, as the host's units are the
			 * host manager's: the outermost below user@UID.service,
			 * and below a second unit a delegation boundary. The user
			 * manager runs in the host's cgroup namespace: it names
			 * the unit's cgroup from the root, as the path does.
			 * user@UID.service/init.scope is the manager itself. */
			if (!owning_unit(p, i + 1, o, o->name, sizeof(o->name), o->unit, sizeof(o->unit)))
				gs_strlcpy(o->name, p->c[i], sizeof(o->name));
			else if (o->unit_cg_len && !p->outside_ns) {
				size_t end = (size_t)o->unit_cg_start + o->unit_cg_len;

				o->unit_cg_start = 0;
				o->unit_cg_len = (unsigned short)end;
			}
			return true;
		}
		if (middle(p->c[i], "session-", ".scope", &m, &ml)) {
			const char *u;
			size_t ul;

			o->kind = GS_OWNER_SESSION;
			copy_span(o->name, sizeof(o->name), m, ml);
			if (i > 0 && middle(p->c[i - 1], "user-", ".slice", &u, &ul))
				(void)parse_u32_span(u, ul, &o->uid);
			return true;
		}
	}
	return false;
}

static void classify_path(const char *path, size_t len, struct gs_owner *o)
{
	struct cgpath p;
	char *s, *save = NULL;
	bool leading = true;

	memset(o, 0, sizeof(*o));
	copy_span(o->cgroup, sizeof(o->cgroup), path, len);
	memcpy(p.buf, o->cgroup, sizeof(p.buf));
	/* A truncated path ends in a partial component ("ollama.serv"): classify
	 * only the complete components that fit. */
	if (len >= sizeof(o->cgroup)) {
		char *slash = strrchr(p.buf, '/');

		if (slash)
			*slash = '\0';
	}
	p.n = 0;
	p.outside_ns = false;
	for (s = strtok_r(p.buf, "/", &save); s && p.n < CG_MAX_COMPS; s = strtok_r(NULL, "/", &save)) {
		/* Paths outside the reader's cgroup namespace start with "/.." */
		if (strcmp(s, ".") == 0)
			continue;
		if (leading && strcmp(s, "..") == 0) {
			p.outside_ns = true;
			continue;
		}
		leading = false;
		p.c[p.n++] = s;
	}

	if (p.n == 0)
		return;
	if (classify_container(&p, o) || classify_user(&p, o))
		return;
	if (owning_unit(&p, 0, o, o->name, sizeof(o->name), o->unit, sizeof(o->unit)))
		o->kind = GS_OWNER_UNIT;
}

static int kind_rank(enum gs_owner_kind k)
{
	switch (k) {
	case GS_OWNER_NONE:
		return 0;
	case GS_OWNER_UNIT:
	case GS_OWNER_USER_UNIT:
	case GS_OWNER_SESSION:
		return 1;
	default:
		return 2;
	}
}

enum { CAND_V2, CAND_SYSTEMD, CAND_PIDS, CAND_MEMORY, CAND_CPU, CAND_N };

/* Whether the comma-separated list ctl (of length len) contains word. */
static bool has_controller(const char *ctl, size_t len, const char *word)
{
	size_t wl = strlen(word);
	const char *end = ctl + len;

	while (ctl < end) {
		const char *comma = memchr(ctl, ',', (size_t)(end - ctl));
		size_t l = comma ? (size_t)(comma - ctl) : (size_t)(end - ctl);

		if (l == wl && memcmp(ctl, word, wl) == 0)
			return true;
		ctl += l + 1;
	}
	return false;
}

int gs_owner_from_cgroup(const char *text, struct gs_owner *ret)
{
	const char *cand[CAND_N] = { 0 };
	size_t cand_len[CAND_N] = { 0 };
	unsigned seen[CG_MAX_LINES];
	size_t nseen = 0;
	const char *line = text;

	memset(ret, 0, sizeof(*ret));
	if (!text)
		return -EINVAL;

	while (*line) {
		const char *eol = strchr(line, '\n');
		size_t ll = eol ? (size_t)(eol - line) : strlen(line);
		const char *c1, *c2, *path, *ctl;
		size_t path_len, ctl_len;
		unsigned id;

		if (ll == 0)
			goto next;
		/* "ID:controllers:/path"; the path may itself contain ':' */
		c1 = memchr(line, ':', ll);
		c2 = c1 ? memchr(c1 + 1, ':', ll - (size_t)(c1 + 1 - line)) : NULL;
		if (!c2 || !parse_u32_span(line, (size_t)(c1 - line), &id))
			return -EINVAL;
		path = c2 + 1;
		path_len = ll - (size_t)(path - line);
		if (path_len == 0 || path[0] != '/')
			return -EINVAL;
		/* Each hierarchy appears once; a repeated ID means a cgroup name
		 * smuggled a line in, so nothing in the file can be trusted. */
		for (size_t k = 0; k < nseen; k++)
			if (seen[k] == id)
				return -EINVAL;
		if (nseen == CG_MAX_LINES)
			return -EINVAL;
		seen[nseen++] = id;

		ctl = c1 + 1;
		ctl_len = (size_t)(c2 - ctl);
		if (id == 0 && ctl_len == 0) {
			/* v2 marks a removed cgroup with this suffix */
			static const char del[] = " (deleted)";

			if (path_len > sizeof(del) - 1 &&
			    memcmp(path + path_len - (sizeof(del) - 1), del, sizeof(del) - 1) == 0)
				path_len -= sizeof(del) - 1;
			cand[CAND_V2] = path;
			cand_len[CAND_V2] = path_len;
		} else {
			static const struct { int idx; const char *word; } ctls[] = {
				{ CAND_SYSTEMD, "name=systemd" },
				{ CAND_PIDS, "pids" },
				{ CAND_MEMORY, "memory" },
				{ CAND_CPU, "cpu" },
			};

			for (size_t k = 0; k < GS_ARRAY_SIZE(ctls); k++)
				if (!cand[ctls[k].idx] && has_controller(ctl, ctl_len, ctls[k].word)) {
					cand[ctls[k].idx] = path;
					cand_len[ctls[k].idx] = path_len;
				}
		}
next:
		if (!eol)
			break;
		line = eol + 1;
	}

	/* Take the most specific answer, the earlier candidate on a tie. On
	 * hybrid and v1 hosts a job or container can live in v1 controllers
	 * only: Slurm's v1 plugins move tasks in memory/devices while the v2 or
	 * name=systemd line still says slurmd.service, and docker's cgroupfs
	 * driver leaves the unified line at "/". Stopping the launcher unit
	 * there would be wrong, so a container or job beats a unit. */
	int best = -1, best_rank = -1;

	for (int k = 0; k < CAND_N; k++) {
		int rank;

		if (!cand[k])
			continue;
		classify_path(cand[k], cand_len[k], ret);
		rank = kind_rank(ret->kind);
		if (rank > best_rank) {
			best = k;
			best_rank = rank;
		}
	}
	if (best >= 0) {
		classify_path(cand[best], cand_len[best], ret);
		return 0;
	}
	memset(ret, 0, sizeof(*ret));
	return -EINVAL;
}

const char *gs_unit_scope_user(char *buf, size_t len, unsigned uid)
{
	snprintf(buf, len, "user/%u", uid);
	return buf;
}

bool gs_unit_scope_is_user(const char *container, unsigned *ret_uid)
{
	unsigned uid;

	if (!gs_startswith(container, "user/") || !parse_u32_span(container + 5, strlen(container + 5), &uid))
		return false;
	if (ret_uid)
		*ret_uid = uid;
	return true;
}

const char *gs_unit_scope_text(const char *container, char *buf, size_t len)
{
	unsigned uid;
	size_t o = 0;

	if (gs_unit_scope_is_user(container, &uid)) {
		snprintf(buf, len, " of user %u", uid);
		return buf;
	}
	if (!container[0] || len < 16) {
		if (len)
			buf[0] = '\0';
		return buf;
	}
	o = (size_t)snprintf(buf, len, " in CT ");
	/* A CT name comes from a cgroup path: printable bytes only. */
	for (const char *c = container; *c && o + 1 < len; c++)
		buf[o++] = (*c >= 0x20 && *c < 0x7f) ? *c : '?';
	buf[o] = '\0';
	return buf;
}

int gs_owner_unit_cgroup(const struct gs_owner *o, char *buf, size_t len)
{
	size_t start = o->unit_cg_start, n = o->unit_cg_len;

	if (n == 0 || start + n > strnlen(o->cgroup, sizeof(o->cgroup)) || n >= len)
		return -ENOENT;
	memcpy(buf, o->cgroup + start, n);
	buf[n] = '\0';
	return 0;
}

#include "core/snapshot.h"
#include "gpu/drm.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Used memory on the snapshot's basis: a v1 reading less the reservation. */
static void v1_normalize(const struct gs_discover *d, unsigned idx, uint64_t *used, uint64_t *reserved)
{
	uint64_t r = d->v1_reserved[idx].bytes;

	if (r > *used)
		r = *used;
	*used -= r;
	*reserved = d->v1_reserved[idx].bytes;
}

/* Memory of backend GPUs idx[0..n): one exchange when the backend can. */
static int backend_memory(struct gs_discover *d, const unsigned *idx, size_t n, struct gs_gpu_mem *ret, int *errs)
{
	struct gs_gpu_backend *b = d->backend;

	if (!b || !b->ops->memory)
		return -EOPNOTSUPP;
	if (b->ops->memory_many)
		return b->ops->memory_many(b, idx, n, ret, errs);
	for (size_t k = 0; k < n; k++)
		errs[k] = b->ops->memory(b, idx[k], &ret[k]);
	return 0;
}

/* Used memory of an AMD GPU less the driver's own buffers as estimated. */
static void drm_normalize(const struct gs_discover *d, unsigned bi, uint64_t *used, uint64_t *reserved)
{
	uint64_t r = bi < GS_DEVSET_DRM_MAX ? d->drm_reserved[bi].bytes : 0;

	if (r > *used)
		r = *used;
	*used -= r;
	*reserved = r;
}

/* An Intel GPU's used memory between full snapshots: its clients' fdinfo,
 * re-read from the fds the last full snapshot saw on its nodes
 * (proc/drm_fdwatch.h); new clients wait for the next full snapshot. No
 * figure (a client without usage stats) is used_unknown, not an error. */
static int intel_memory(struct gs_discover *d, const struct gs_gpu *gp, struct gs_gpu_mem *ret)
{
	struct gs_drm_usage u;
	int r;

	r = gs_drm_fdwatch_usage(&d->drm_watch, d->root.proc_fd, d->fdinfo_shadow_fd, gp->backend_index, &u);
	if (r < 0)
		return r;
	r = gs_drm_memory_from_usage(d->drm, gp->backend_index, &u, ret);
	gs_drm_usage_free(&u);
	if (r == -ENODATA) {
		memset(ret, 0, sizeof(*ret));
		ret->total = gp->mem_total;
		ret->used_unknown = true;
		return 0;
	}
	return r;
}

int gs_snapshot_memory(struct gs_discover *d, const struct gs_snapshot *s, const unsigned *gpus, size_t n,
		       struct gs_gpu_mem *ret)
{
	unsigned idx[GS_MAX_GPUS];
	size_t pos[GS_MAX_GPUS];
	struct gs_gpu_mem nv[GS_MAX_GPUS];
	int errs[GS_MAX_GPUS];
	size_t n_nv = 0;
	int r;

	if (n > GS_MAX_GPUS)
		return -EINVAL;
	if (!n)
		return 0;
	for (size_t k = 0; k < n; k++) {
		const struct gs_gpu *gp;

		if (gpus[k] >= s->n_gpus)
			return -EINVAL;
		gp = &s->gpus[gpus[k]];
		if (gp->vendor == GS_VENDOR_INTEL && d->drm) {
			r = intel_memory(d, gp, &ret[k]);
			if (r < 0)
				return r;
			continue;
		}
		if (gp->vendor != GS_VENDOR_NVIDIA) {
			/* amdgpu: a sysfs read; the DRM backend never hangs on
			 * the driver the way an NVML call can. */
			if (!d->drm || !d->drm->ops->memory)
				return -EOPNOTSUPP;
			memset(&ret[k], 0, sizeof(ret[k]));
			r = d->drm->ops->memory(d->drm, gp->backend_index, &ret[k]);
			if (r < 0)
				return r;
			ret[k].used_unknown = false; /* only Intel's figure can lack */
			if (gp->mem_basis == GS_MEM_V1_ESTIMATED)
				drm_normalize(d, gp->backend_index, &ret[k].used, &ret[k].reserved);
			continue;
		}
		pos[n_nv] = k;
		idx[n_nv++] = gp->index;
	}
	if (!n_nv)
		return 0;
	r = backend_memory(d, idx, n_nv, nv, errs);
	if (r < 0)
		return r;
	for (size_t j = 0; j < n_nv; j++) {
		size_t k = pos[j];

		if (errs[j] < 0)
			return errs[j];
		ret[k] = nv[j];
		/* Whatever the backend left there (NVML's helper sends the
		 * struct it filled): an NVIDIA reading always has its figure. */
		ret[k].used_unknown = false;
		if (!ret[k].v2 && s->gpus[gpus[k]].mem_basis == GS_MEM_V1_ESTIMATED)
			v1_normalize(d, idx[j], &ret[k].used, &ret[k].reserved);
	}
	return 0;
}

const char *gs_snapshot_source(const struct gs_snapshot *s, char *buf, size_t len)
{
	const char *nv = s->gpu_source ? s->gpu_source : "none";
	bool any = false;

	for (size_t g = 0; g < s->n_gpus; g++)
		any |= s->gpus[g].vendor != GS_VENDOR_NVIDIA;
	if (!any)
		return nv;
	snprintf(buf, len, "%s%s", strcmp(nv, "none") ? nv : "", strcmp(nv, "none") ? "+drm" : "drm");
	return buf;
}

void gs_snapshot_free(struct gs_snapshot *s)
{
	for (size_t i = 0; i < s->n_holders; i++)
		free(s->holders[i].cmdline_full);
	free(s->gpus);
	free(s->nvml);
	free(s->holders);
	free(s->unknown_shares);
	memset(s, 0, sizeof(*s));
}

const struct gs_holder *gs_snapshot_find(const struct gs_snapshot *s, pid_t pid)
{
	size_t lo = 0, hi = s->n_holders;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->holders[mid].pid == pid)
			return &s->holders[mid];
		if (s->holders[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Growable holder array, kept unsorted while building. */
struct holder_vec {
	struct gs_holder *v;
	size_t n, cap;
};

static struct gs_holder *holder_get(struct holder_vec *hv, pid_t pid, bool create)
{
	for (size_t i = 0; i < hv->n; i++)
		if (hv->v[i].pid == pid)
			return &hv->v[i];
	if (!create)
		return NULL;
	if (hv->n == hv->cap) {
		size_t nc = hv->cap ? hv->cap * 2 : 32;
		struct gs_holder *nv = realloc(hv->v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		hv->v = nv;
		hv->cap = nc;
	}
	memset(&hv->v[hv->n], 0, sizeof(hv->v[0]));
	hv->v[hv->n].pid = pid;
	return &hv->v[hv->n++];
}

static int cmp_holder(const void *a, const void *b)
{
	pid_t x = ((const struct gs_holder *)a)->pid, y = ((const struct gs_holder *)b)->pid;

	return (x > y) - (x < y);
}

/* Add a sentence to the snapshot's one-line warning. */
static void add_warning(struct gs_snapshot *s, const char *text)
{
	size_t len = strlen(s->gpu_warning);

	snprintf(s->gpu_warning + len, sizeof(s->gpu_warning) - len, "%s%s", len ? "; " : "", text);
}

/* AMD and Intel GPUs after the NVIDIA ones, numbered on from NVML's count
 * so that -g 0 and nvidia-smi's numbering never move. */
static int read_drm_gpus(struct gs_discover *d, struct gs_snapshot *s, unsigned first_index)
{
	unsigned n = 0;
	int r;

	r = d->drm->ops->count(d->drm, &n);
	if (r < 0)
		return r;
	/* Only the GPUs whose nodes discovery recorded: a GPU whose holders
	 * the scan cannot see must not be listed as if it had none. */
	if (n > GS_DEVSET_DRM_MAX) {
		char msg[96];

		snprintf(msg, sizeof(msg), "%u AMD/Intel GPUs: the first %u are shown", n, GS_DEVSET_DRM_MAX);
		add_warning(s, msg);
		n = GS_DEVSET_DRM_MAX;
	}
	for (unsigned i = 0; i < n && s->n_gpus < GS_MAX_GPUS; i++) {
		struct gs_gpu *gp = &s->gpus[s->n_gpus];
		struct gs_drm_gpu dg = { 0 };

		r = d->drm->ops->info(d->drm, i, gp);
		if (r == 0)
			r = gs_drm_gpu_info(d->drm, i, &dg);
		if (r < 0)
			return r;
		gp->index = first_index + i;
		gp->backend_index = i;
		gp->vendor = dg.vendor_id == 0x1002 ? GS_VENDOR_AMD : GS_VENDOR_INTEL;
		gs_strlcpy(gp->driver, dg.driver, sizeof(gp->driver));
		/* amdgpu's used figure includes the driver's own buffers
		 * until estimate_drm_reserved() has told them apart. */
		gp->mem_basis = gp->mem_known ? GS_MEM_V1 : GS_MEM_NONE;
		gp->mem_source = gp->mem_known ? "sysfs" : NULL;
		s->n_gpus++;
	}
	return 0;
}

static int read_gpus(struct gs_discover *d, struct gs_snapshot *s)
{
	unsigned n = 0, n_drm = 0;
	int r;

	s->drm = d->drm != NULL;
	if (!d->backend && !d->drm)
		return -ENODEV;
	if (d->backend) {
		r = d->backend->ops->count(d->backend, &n);
		if (r < 0)
			return r;
	}
	if (n > GS_MAX_GPUS)
		n = GS_MAX_GPUS;
	if (d->drm && d->drm->ops->count(d->drm, &n_drm) < 0)
		n_drm = 0;
	s->gpus = calloc(n + n_drm ? n + n_drm : 1, sizeof(*s->gpus));
	if (!s->gpus)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		r = d->backend->ops->info(d->backend, i, &s->gpus[s->n_gpus]);
		if (r == -EACCES) {
			/* Refused by the driver: left out, and said so. The
			 * others keep NVML's own index (gpus[].index). */
			char msg[96];

			s->refused[s->n_refused++] = i;
			snprintf(msg, sizeof(msg), "GPU %u: the driver refuses access (NVML: no permission); left out", i);
			add_warning(s, msg);
			continue;
		}
		if (r < 0)
			return r;
		s->gpus[s->n_gpus].backend_index = s->gpus[s->n_gpus].index;
		if (s->gpus[s->n_gpus].mem_known && d->gpu_source && !strcmp(d->gpu_source, "nvml"))
			s->gpus[s->n_gpus].mem_source = "nvml";
		s->n_gpus++;
	}
	if (d->drm) {
		r = read_drm_gpus(d, s, n);
		if (r < 0)
			return r;
	}
	return d->backend || s->n_gpus ? 0 : -ENODEV;
}

/* Room for n more process-list rows (NVML's or KFD's) in s->nvml. */
static int nvml_room(struct gs_snapshot *s, size_t n)
{
	struct gs_nvml_entry *ne;

	if (!n)
		return 0;
	ne = realloc(s->nvml, (s->n_nvml + n) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	s->nvml = ne;
	return 0;
}

/* Add NVML's process lists: they carry memory and name dead creators. */
static int add_nvml_processes(struct gs_discover *d, struct gs_snapshot *s, struct holder_vec *hv)
{
	for (size_t g = 0; g < s->n_gpus; g++) {
		struct gs_gpu_proc *procs = NULL;
		size_t n = 0;
		int r;

		if (s->gpus[g].vendor != GS_VENDOR_NVIDIA || !d->backend)
			continue;
		r = d->backend->ops->processes(d->backend, s->gpus[g].index, &procs, &n);

		if (r == -EOPNOTSUPP)
			continue;
		if (r == -EBADMSG) {
			/* The driver's list did not validate with any entry layout:
			 * trust none of its PIDs, keep the fd scan. */
			char msg[128];

			snprintf(msg, sizeof(msg),
				 "NVML's process list for GPU %u was malformed and ignored; holders from the fd scan",
				 s->gpus[g].index);
			add_warning(s, msg);
			continue;
		}
		if (r < 0)
			return r;
		gs_gpuset_add(&s->nvml_listed, (unsigned)g);
		if (nvml_room(s, n) < 0) {
			free(procs);
			return -ENOMEM;
		}
		for (size_t i = 0; i < n; i++) {
			struct gs_holder *h;

			s->nvml[s->n_nvml++] = (struct gs_nvml_entry){
				.pid = procs[i].pid, .gpu = (unsigned)g,
				.mem_known = procs[i].mem_known, .mem_used = procs[i].mem_used, .source = "nvml",
			};
			if (procs[i].pid == d->self || procs[i].pid == d->backend->helper_pid)
				continue;
			h = holder_get(hv, procs[i].pid, true);
			if (!h) {
				free(procs);
				return -ENOMEM;
			}
			h->nvml_listed = true;
			gs_gpuset_add(&h->nvml_gpus, (unsigned)g);
			if (procs[i].mem_known) {
				h->mem_known = true;
				h->mem_used += procs[i].mem_used;
				h->mem_source = "nvml";
			}
		}
		free(procs);
	}
	return 0;
}

/* Sum of the memory NVML's entries give GPU g; false when one entry does not
 * say (then the reservation cannot be told apart). */
static bool listed_memory(const struct gs_nvml_entry *e, size_t n, unsigned g, uint64_t *ret)
{
	uint64_t sum = 0;

	for (size_t k = 0; k < n; k++) {
		if (e[k].gpu != g)
			continue;
		if (!e[k].mem_known || __builtin_add_overflow(sum, e[k].mem_used, &sum))
			return false;
	}
	*ret = sum;
	return true;
}

/* One GPU's fresh process list, reduced to its memory sum. */
static int relist_memory(struct gs_discover *d, unsigned idx, bool *ret_ok, uint64_t *ret_sum)
{
	struct gs_gpu_proc *procs = NULL;
	size_t n = 0;
	uint64_t sum = 0;
	bool ok = true;
	int r = d->backend->ops->processes(d->backend, idx, &procs, &n);

	if (r < 0)
		return r;
	for (size_t k = 0; k < n; k++)
		ok = ok && procs[k].mem_known && !__builtin_add_overflow(sum, procs[k].mem_used, &sum);
	free(procs);
	*ret_ok = ok;
	*ret_sum = sum;
	return 0;
}

/* Memory of one backend GPU, the same exchange as the wait loop's. */
static int one_memory(struct gs_discover *d, unsigned idx, struct gs_gpu_mem *ret)
{
	int err = 0, r = backend_memory(d, &idx, 1, ret, &err);

	return r < 0 ? r : err;
}

#define V1_ESTIMATE_TRIES 3

/* NVML with only v1 memory info: estimate each GPU's reservation (struct
 * gs_v1_reserve) and put used memory on the v2 basis, so that a baseline of
 * "what the processes left alone use" holds on these drivers too. A reading
 * counts when used memory is the same before and after the process list:
 * then the list describes that memory. */
static int estimate_v1_reserved(struct gs_discover *d, struct gs_snapshot *s)
{
	bool may_set = d->n_full_snapshots == 0;

	for (size_t g = 0; g < s->n_gpus; g++) {
		struct gs_gpu *gp = &s->gpus[g];
		struct gs_v1_reserve *res = &d->v1_reserved[gp->index];
		uint64_t before = gp->mem_used, sum = 0;
		bool ok;
		int r;

		if (gp->vendor != GS_VENDOR_NVIDIA || !gp->mem_known || gp->mem_basis != GS_MEM_V1 ||
		    gp->index >= GS_MAX_GPUS)
			continue;
		ok = listed_memory(s->nvml, s->n_nvml, (unsigned)g, &sum);
		for (int t = 0; t < V1_ESTIMATE_TRIES; t++) {
			struct gs_gpu_mem m;

			r = one_memory(d, gp->index, &m);
			if (r < 0)
				return r;
			if (ok && m.used == before && sum <= m.used) {
				if (!res->known ? may_set : m.used - sum < res->bytes) {
					res->known = true;
					res->bytes = m.used - sum;
				}
				break;
			}
			/* Moving memory, or a process whose share is not
			 * known: only the first snapshot tries again. */
			if (!may_set)
				break;
			r = relist_memory(d, gp->index, &ok, &sum);
			if (r < 0)
				return r;
			before = m.used;
		}
		if (res->known) {
			gp->mem_basis = GS_MEM_V1_ESTIMATED;
			v1_normalize(d, gp->index, &gp->mem_used, &gp->mem_reserved);
		}
	}
	return 0;
}

/* The AMD/Intel GPUs a scanned process holds, as for NVIDIA: those whose
 * nodes it maps when it maps any (a context's buffers), else those it has
 * open. /dev/kfd serves every AMD GPU: a process that maps it maps the
 * GPUs KFD lists it on, or, unlisted, the AMD GPUs whose nodes it has open. */
static void add_drm_gpus(const struct gs_snapshot *s, const struct gs_scan_proc *sp, struct gs_holder *h)
{
	bool maps = !gs_minorset_empty(&sp->drm_map_gpus);

	for (size_t g = 0; g < s->n_gpus; g++) {
		const struct gs_gpu *gp = &s->gpus[g];
		bool open = gs_minorset_has(&sp->drm_fd_gpus, gp->backend_index);
		bool mapped = gs_minorset_has(&sp->drm_map_gpus, gp->backend_index);

		if (gp->vendor == GS_VENDOR_NVIDIA)
			continue;
		if (sp->map_kfd && gp->vendor == GS_VENDOR_AMD &&
		    (gs_gpuset_has(&h->nvml_gpus, (unsigned)g) || (!h->kfd_listed && open)))
			mapped = true;
		if (mapped) {
			gs_gpuset_add(&h->mapped, (unsigned)g);
			h->maps_gpu = true;
		}
		if (mapped || (!maps && !sp->map_kfd && open))
			gs_gpuset_add(&h->gpus, (unsigned)g);
	}
}

/* A leader whose main thread exited shows state Z while its other threads
 * run on, holding the files: alive. */
static bool has_live_threads(int proc_fd, pid_t pid)
{
	char path[32];
	DIR *dir;
	struct dirent *de;
	int fd, n = 0;

	snprintf(path, sizeof(path), "%d/task", (int)pid);
	fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return false;
	}
	while ((de = readdir(dir)) && n < 2)
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n > 1;
}

/* An NVML-listed GPU counts as held only when the scan backs it up: the
 * process maps that GPU's node, as a CUDA context does. An open fd alone is
 * what every monitor has (nvidia-smi, exporters): a PID NVML names that only
 * has the node open is another process that got the number (PID reuse,
 * another PID namespace's numbering). Also when the scan could not look
 * (fds unreadable), or the PID is gone (the fork case: shown as such). */
static void confirm_nvml_gpus(const struct gs_snapshot *s, struct gs_holder *h)
{
	for (size_t g = 0; g < s->n_gpus; g++) {
		unsigned m = s->gpus[g].minor;

		if (!gs_gpuset_has(&h->nvml_gpus, (unsigned)g))
			continue;
		/* KFD's pids are the creators of contexts, which map /dev/kfd
		 * (or a render node of the GPU): the same test. */
		if (!h->alive || h->fds_denied || gs_minorset_has(&h->map_minors, m) ||
		    (s->gpus[g].vendor != GS_VENDOR_NVIDIA && gs_gpuset_has(&h->mapped, (unsigned)g)))
			gs_gpuset_add(&h->gpus, (unsigned)g);
		else
			gs_gpuset_add(&h->nvml_unconfirmed, (unsigned)g);
	}
}

static bool nvml_confirmed(const struct gs_holder *h)
{
	return gs_set256_outside(h->nvml_gpus.bits, h->nvml_unconfirmed.bits);
}

/* Does the process hold VRAM on an AMD/Intel GPU by its DRM clients? */
static bool holds_drm_vram(const struct gs_snapshot *s, const struct gs_holder *h)
{
	for (size_t k = 0; k < s->n_nvml; k++)
		if (s->nvml[k].pid == h->pid && s->gpus[s->nvml[k].gpu].vendor != GS_VENDOR_NVIDIA &&
		    s->nvml[k].mem_known && s->nvml[k].mem_used)
			return true;
	return false;
}

static void classify(const struct gs_snapshot *s, struct gs_holder *h)
{
	enum gs_protection prot = h->info_ok ? gs_protection_of(&h->info) : GS_PROT_NONE;

	h->protected_unverified = prot == GS_PROT_UNVERIFIED;
	if (prot == GS_PROT_VERIFIED)
		h->role = GS_ROLE_PROTECTED;
	else if (h->n_drm_fds && !h->n_fds && gs_minorset_empty(&h->map_minors) && h->info_ok &&
		 gs_is_drm_monitor(&h->info))
		h->role = GS_ROLE_CLIENT; /* an AMD/Intel monitor, even with memory of its own */
	else if (nvml_confirmed(h) || h->maps_gpu || (h->n_drm_fds && holds_drm_vram(s, h)))
		h->role = GS_ROLE_COMPUTE;
	else
		h->role = GS_ROLE_CLIENT;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The PIDs NVML listed (the holders so far), sorted, malloc'd. */
static int listed_pids(const struct holder_vec *hv, pid_t **ret, size_t *ret_n)
{
	pid_t *v = malloc((hv->n ? hv->n : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < hv->n; i++)
		v[i] = hv->v[i].pid;
	qsort(v, hv->n, sizeof(*v), cmp_pid);
	*ret = v;
	*ret_n = hv->n;
	return 0;
}

/* KFD's process lists of the AMD GPUs (ROCm contexts), as NVML's: they name
 * dead creators whose memory a forked child keeps. Their memory is settled
 * with the fdinfo figures in add_drm_memory(). */
static int add_kfd_processes(struct gs_discover *d, struct gs_snapshot *s, struct holder_vec *hv)
{
	for (size_t g = 0; g < s->n_gpus; g++) {
		struct gs_gpu_proc *procs = NULL;
		size_t n = 0;
		int r;

		if (s->gpus[g].vendor != GS_VENDOR_AMD || !d->drm)
			continue;
		if (gs_drm_kfd_state(d->drm) < 0)
			continue; /* no KFD (or an unreadable topology): no list */
		r = d->drm->ops->processes(d->drm, s->gpus[g].backend_index, &procs, &n);
		if (r < 0)
			return r;
		if (nvml_room(s, n) < 0) {
			free(procs);
			return -ENOMEM;
		}
		for (size_t i = 0; i < n; i++) {
			struct gs_holder *h;

			if (procs[i].pid == d->self)
				continue;
			s->nvml[s->n_nvml++] = (struct gs_nvml_entry){
				.pid = procs[i].pid, .gpu = (unsigned)g,
				.mem_known = procs[i].mem_known, .mem_used = procs[i].mem_used, .source = "kfd",
			};
			h = holder_get(hv, procs[i].pid, true);
			if (!h) {
				free(procs);
				return -ENOMEM;
			}
			h->kfd_listed = true;
			gs_gpuset_add(&h->nvml_gpus, (unsigned)g);
		}
		free(procs);
	}
	return 0;
}

/* Has this client (driver, device, id) been counted already? */
static bool client_seen(const struct gs_drm_usage *seen, const struct gs_drm_client *c)
{
	if (!c->id_known)
		return false;
	for (size_t k = 0; k < seen->n_clients; k++) {
		const struct gs_drm_client *o = &seen->clients[k];

		if (o->id_known && o->id == c->id && o->pdev_known == c->pdev_known &&
		    (!c->pdev_known || gs_pci_addr_equal(&o->pdev, &c->pdev)) && !strcmp(o->driver, c->driver))
			return true;
	}
	return false;
}

/* The resident VRAM of p's clients on PCI device pci that no process before
 * it (in pid order) showed: *ret_known false when one had no figure. */
static void proc_drm_vram(const struct gs_scan_proc *p, const struct gs_pci_addr *pci, const struct gs_drm_usage *seen,
			  bool *ret_any, bool *ret_known, uint64_t *ret)
{
	uint64_t sum = 0;
	bool known = true, any = false;

	for (size_t k = 0; k < p->drm.n_clients; k++) {
		const struct gs_drm_client *c = &p->drm.clients[k];

		if (!c->pdev_known || !gs_pci_addr_equal(&c->pdev, pci))
			continue;
		any = true;
		if (client_seen(seen, c))
			continue;
		if (!c->vram_known) {
			known = false;
			continue;
		}
		sum = c->vram > UINT64_MAX - sum ? UINT64_MAX : sum + c->vram;
	}
	*ret_any = any;
	*ret_known = known;
	*ret = sum;
}

/* The scanned fds on DRM GPU bi (backend index) whose fdinfo had no usage
 * stats. */
static unsigned no_stats_on(const struct gs_scan_result *scan, unsigned bi)
{
	unsigned n = 0;

	for (size_t i = 0; i < scan->n_procs; i++)
		for (size_t k = 0; k < scan->procs[i].drm.n_refs; k++)
			n += scan->procs[i].drm.refs[k].gpu == bi && scan->procs[i].drm.refs[k].no_stats;
	return n;
}

/* A process whose DRM fds on AMD GPU gp give no usage stats, which maps
 * none of the GPU's nodes and has no KFD context there: a client (a monitor
 * such as rocm-smi, on an amdgpu before the drm- keys). Its own share is not
 * known, as an NVIDIA client's is not; the device-wide figure
 * (mem_info_vram_used) still is, so it does not make the GPU's memory
 * unaccounted: whatever it holds stays with it, left alone, beside the
 * driver's own buffers. A process that maps the GPU may hold a context's
 * memory: that one keeps the GPU unaccounted (never taken for the driver's).
 * Intel has no device-wide figure: every client counts there. */
static bool unknown_share_is_a_clients(const struct gs_gpu *gp, const struct gs_scan_proc *sp,
				       const struct gs_nvml_entry *kfd)
{
	return gp->vendor == GS_VENDOR_AMD && gp->mem_known && !kfd && !sp->map_kfd &&
	       !gs_minorset_has(&sp->drm_map_gpus, gp->backend_index);
}

static struct gs_nvml_entry *find_entry(struct gs_snapshot *s, pid_t pid, unsigned g)
{
	for (size_t k = 0; k < s->n_nvml; k++)
		if (s->nvml[k].pid == pid && s->nvml[k].gpu == g)
			return &s->nvml[k];
	return NULL;
}

/* Per-process memory on the AMD/Intel GPUs from DRM fdinfo, beside KFD's:
 * a process's row on a GPU is the larger of the two (a ROCm context's
 * buffers live in its render node's VM, so fdinfo and KFD can show the same
 * bytes: never their sum), and each DRM client counts once on the host
 * (fork, dup and SCM_RIGHTS share one). A dead KFD creator whose memory an
 * heir's inherited client shows keeps no figure of its own. Intel GPUs get
 * their used memory here: the sum over their clients. */
static int add_drm_memory(struct gs_discover *d, struct gs_snapshot *s, const struct gs_scan_result *scan)
{
	struct gs_drm_usage seen = { 0 }, host = { 0 };
	int r = 0;

	for (size_t i = 0; i < scan->n_procs && r == 0; i++)
		r = gs_drm_usage_merge(&host, &scan->procs[i].drm);
	for (size_t g = 0; g < s->n_gpus && r == 0; g++) {
		struct gs_gpu *gp = &s->gpus[g];
		struct gs_drm_gpu dg = { 0 };
		/* all_known: every fd on it gave a figure; accounted: every
		 * process on it has one, from fdinfo or KFD. Without that, what
		 * no process is seen to hold cannot be told from the driver's
		 * own buffers, and nothing is estimated or excused. */
		bool all_known = true, accounted = true;

		if (gp->vendor == GS_VENDOR_NVIDIA || gs_drm_gpu_info(d->drm, gp->backend_index, &dg) < 0)
			continue;
		gs_drm_usage_free(&seen);
		for (size_t i = 0; i < scan->n_procs && r == 0; i++) {
			const struct gs_scan_proc *sp = &scan->procs[i];
			struct gs_nvml_entry *e;
			uint64_t vram;
			bool any, known;

			if (!gs_minorset_has(&sp->drm_fd_gpus, gp->backend_index) &&
			    !gs_minorset_has(&sp->drm_map_gpus, gp->backend_index))
				continue;
			proc_drm_vram(sp, &dg.pci, &seen, &any, &known, &vram);
			r = gs_drm_usage_merge(&seen, &sp->drm);
			if (r < 0)
				break;
			all_known &= known && sp->drm.n_no_stats == 0;
			e = find_entry(s, sp->pid, (unsigned)g);
			if ((known && sp->drm.n_no_stats == 0) || (e && e->mem_known)) {
				/* its figure is known */
			} else if (unknown_share_is_a_clients(gp, sp, e)) {
				struct gs_unknown_share *nu = realloc(s->unknown_shares,
								      (s->n_unknown_shares + 1) * sizeof(*nu));

				if (!nu) {
					r = -ENOMEM;
					break;
				}
				s->unknown_shares = nu;
				nu[s->n_unknown_shares++] = (struct gs_unknown_share){ .pid = sp->pid, .gpu = (unsigned)g };
			} else {
				accounted = false;
			}
			if (e) {
				/* KFD's figure, raised to fdinfo's when that is larger. */
				if (known && any && (!e->mem_known || vram > e->mem_used)) {
					e->mem_used = vram;
					e->mem_known = true;
					e->source = "fdinfo";
				}
				continue;
			}
			if (!any || !known || vram == 0)
				continue; /* no figure, or nothing held: not a row */
			r = nvml_room(s, 1);
			if (r < 0)
				break;
			s->nvml[s->n_nvml++] = (struct gs_nvml_entry){
				.pid = sp->pid, .gpu = (unsigned)g, .mem_known = true, .mem_used = vram, .source = "fdinfo",
			};
		}
		if (r < 0)
			break;
		if (!all_known) {
			size_t len = strlen(s->drm_note);

			snprintf(s->drm_note + len, sizeof(s->drm_note) - len,
				 "%sGPU %u (%s): DRM fdinfo gives no memory figure for some clients (no drm- memory"
				 " keys: a kernel before 5.19, or unreadable); process memory from %s", len ? "; " : "",
				 gp->index, gp->driver,
				 accounted ? "KFD, GPU memory from sysfs" : "nowhere: memory not verified");
		}
		if (accounted)
			gs_gpuset_add(&s->nvml_listed, (unsigned)g);
		if (gp->vendor == GS_VENDOR_INTEL && !gp->mem_known) {
			/* Only an fd on this GPU's nodes without usage stats
			 * makes its figure unknown (the poll counts the same). */
			struct gs_drm_usage on_gpu = host;
			struct gs_gpu_mem m;

			on_gpu.n_no_stats = no_stats_on(scan, gp->backend_index);
			if (gs_drm_memory_from_usage(d->drm, gp->backend_index, &on_gpu, &m) == 0) {
				gp->mem_known = true;
				gp->mem_basis = GS_MEM_V2; /* clients only: nothing of the driver's in it */
				gp->mem_used = m.used;
				gp->mem_total = m.total;
				gp->mem_free = m.total > m.used ? m.total - m.used : 0;
				gp->mem_source = "fdinfo";
			}
		}
	}
	gs_drm_usage_free(&seen);
	gs_drm_usage_free(&host);
	return r;
}

/* A dead KFD creator's memory shows in the inherited client of a live
 * process that maps the GPU (its heir): the heir's row carries it. */
static void settle_dead_creators(struct gs_snapshot *s)
{
	for (size_t k = 0; k < s->n_nvml; k++) {
		struct gs_nvml_entry *e = &s->nvml[k];
		const struct gs_holder *h;
		unsigned g = e->gpu;

		if (s->gpus[g].vendor == GS_VENDOR_NVIDIA)
			continue;
		h = gs_snapshot_find(s, e->pid);
		if (!h || h->alive || !h->kfd_listed)
			continue;
		for (size_t j = 0; j < s->n_nvml; j++) {
			const struct gs_holder *o = gs_snapshot_find(s, s->nvml[j].pid);

			if (j != k && s->nvml[j].gpu == g && s->nvml[j].mem_known && s->nvml[j].mem_used && o &&
			    o->alive && !o->kfd_listed && gs_gpuset_has(&o->mapped, g)) {
				e->mem_used = 0;
				e->mem_known = true;
				break;
			}
		}
	}
}

/* The AMD/Intel rows into the holders' memory (NVML's went in as listed). */
static void add_drm_holder_memory(struct gs_snapshot *s)
{
	for (size_t k = 0; k < s->n_nvml; k++) {
		const struct gs_nvml_entry *e = &s->nvml[k];
		struct gs_holder *h;

		if (s->gpus[e->gpu].vendor == GS_VENDOR_NVIDIA)
			continue;
		h = (struct gs_holder *)gs_snapshot_find(s, e->pid);
		if (!h)
			continue;
		if (e->mem_known) {
			h->mem_known = true;
			h->mem_used = e->mem_used > UINT64_MAX - h->mem_used ? UINT64_MAX : h->mem_used + e->mem_used;
			if (!h->mem_source)
				h->mem_source = e->source;
			else if (strcmp(h->mem_source, e->source))
				/* NVML's figure beside an AMD/Intel one is "mixed",
				 * and stays so whatever row comes after. */
				h->mem_source = strcmp(h->mem_source, "nvml") && strcmp(h->mem_source, "mixed") ?
							"kfd+fdinfo" : "mixed";
		}
	}
}

/* amdgpu counts its own buffers in mem_info_vram_used (never 0): as for NVML
 * v1, what the first snapshot finds held by no process is taken for them,
 * when the figure held still across the process lists. */
static int estimate_drm_reserved(struct gs_discover *d, struct gs_snapshot *s, bool may_set)
{
	for (size_t g = 0; g < s->n_gpus; g++) {
		struct gs_gpu *gp = &s->gpus[g];
		struct gs_v1_reserve *res;
		struct gs_gpu_mem m;
		uint64_t sum = 0;
		int r;

		if (gp->vendor != GS_VENDOR_AMD || !gp->mem_known || gp->backend_index >= GS_DEVSET_DRM_MAX ||
		    !gs_gpuset_has(&s->nvml_listed, (unsigned)g))
			continue;
		res = &d->drm_reserved[gp->backend_index];
		if (listed_memory(s->nvml, s->n_nvml, (unsigned)g, &sum) && sum <= gp->mem_used) {
			r = d->drm->ops->memory(d->drm, gp->backend_index, &m);
			if (r < 0)
				return r;
			if (m.used == gp->mem_used && (!res->known ? may_set : m.used - sum < res->bytes)) {
				res->known = true;
				res->bytes = m.used - sum;
			}
		}
		if (res->known) {
			gp->mem_basis = GS_MEM_V1_ESTIMATED;
			drm_normalize(d, gp->backend_index, &gp->mem_used, &gp->mem_reserved);
		}
	}
	return 0;
}

int gs_snapshot_take(struct gs_discover *d, struct gs_snapshot *s)
{
	struct gs_scan_opts so = { .skip_pid = d->self, .read_maps = true };
	struct gs_scan_result scan = { 0 };
	struct holder_vec hv = { 0 };
	pid_t *listed = NULL;
	bool first = d->n_full_snapshots == 0;
	int r, gpu_r;

	memset(s, 0, sizeof(*s));
	if (gethostname(s->host, sizeof(s->host) - 1) < 0)
		gs_strlcpy(s->host, "localhost", sizeof(s->host));
	s->gpu_source = d->gpu_source;
	gs_strlcpy(s->gpu_warning, d->gpu_warning, sizeof(s->gpu_warning));
	if (d->backend)
		gs_strlcpy(s->driver_version, d->backend->driver_version, sizeof(s->driver_version));
	s->as_root = geteuid() == 0;

	gpu_r = read_gpus(d, s);
	if (gpu_r < 0 && gpu_r != -ENODEV) {
		r = gpu_r;
		goto fail;
	}
	if (d->gpus_only)
		return gpu_r;
	if (gpu_r == 0) {
		r = add_nvml_processes(d, s, &hv);
		if (r < 0)
			goto fail;
		r = estimate_v1_reserved(d, s);
		if (r < 0)
			goto fail;
		r = add_kfd_processes(d, s, &hv);
		if (r < 0)
			goto fail;
		d->n_full_snapshots++;
	}

	/* NVML's PIDs get the closer look (see gs_scan_opts.listed). */
	r = listed_pids(&hv, &listed, &so.n_listed);
	if (r < 0)
		goto fail;
	so.listed = listed;
	so.fdinfo_shadow_fd = d->fdinfo_shadow_fd;
	r = gs_scan_holders(&d->root, &d->devs, &so, &scan);
	free(listed);
	listed = NULL;
	if (r < 0)
		goto fail;
	/* The wait loop's polls of Intel memory re-read these fds until the
	 * next full snapshot replaces them. */
	if (d->drm) {
		r = gs_drm_fdwatch_set(&d->drm_watch, &scan);
		if (r < 0)
			goto fail;
	}
	s->n_scanned = scan.n_scanned;
	s->n_denied = scan.n_denied;
	for (size_t i = 0; i < scan.n_denied && i < GS_ARRAY_SIZE(s->denied); i++)
		s->denied[i] = scan.denied[i];

	/* A CUDA process often has every GPU node open (no CUDA_VISIBLE_DEVICES,
	 * or NVML initialised): a compute holder holds the GPUs it maps or NVML
	 * lists it on; a client the GPUs whose nodes it has open. */
	for (size_t i = 0; i < scan.n_procs; i++) {
		const struct gs_scan_proc *sp = &scan.procs[i];
		struct gs_holder *h;
		bool maps = !gs_minorset_empty(&sp->map_gpus);

		/* The NVML helper is part of gpuslate: never a holder. */
		if (d->backend && d->backend->helper_pid > 0 && sp->pid == d->backend->helper_pid)
			continue;
		h = holder_get(&hv, sp->pid, true);
		if (!h) {
			r = -ENOMEM;
			goto fail;
		}
		h->n_fds = sp->n_fds;
		h->n_drm_fds = sp->n_drm_fds;
		h->maps_denied = sp->maps_denied;
		h->maps_gpu = maps;
		h->fd_minors = sp->fd_gpus;
		h->map_minors = sp->map_gpus;
		for (size_t g = 0; g < s->n_gpus; g++) {
			const struct gs_minorset *set = maps ? &sp->map_gpus : &sp->fd_gpus;

			if (s->gpus[g].vendor != GS_VENDOR_NVIDIA)
				continue;
			if (gs_minorset_has(set, s->gpus[g].minor))
				gs_gpuset_add(&h->gpus, (unsigned)g);
			if (gs_minorset_has(&sp->map_gpus, s->gpus[g].minor))
				gs_gpuset_add(&h->mapped, (unsigned)g);
		}
		add_drm_gpus(s, sp, h);
	}

	for (size_t i = 0; i < hv.n; i++) {
		struct gs_holder *h = &hv.v[i];
		char dirname[32];
		int fd;

		for (size_t k = 0; k < scan.n_denied; k++)
			if (scan.denied[k] == h->pid)
				h->fds_denied = true;

		snprintf(dirname, sizeof(dirname), "%d", (int)h->pid);
		fd = openat(d->root.proc_fd, dirname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			h->alive = true;
			r = gs_procinfo_read(fd, h->pid, &h->info);
			if (r == -ENOMEM) {
				/* Not "identity unreadable": that would leave a
				 * holder alone for our own lack of memory. */
				close(fd);
				goto fail;
			}
			if (r == 0) {
				h->info_ok = true;
				/* The executable's owner matters only to a claim of
				 * protection; a stat can wait on its file system. */
				if (gs_claims_protection(&h->info) ||
				    gs_is_drm_monitor_name(h->info.st.comm, h->info.exe_ok ? h->info.exe_name : NULL))
					(void)gs_procinfo_read_exe_stat(fd, &h->info);
				if (gs_procinfo_read_cmdline(fd, &h->cmdline_full) == -ENOMEM) {
					close(fd);
					r = -ENOMEM;
					goto fail;
				}
			}
			close(fd);
		}
		if (h->info_ok && h->info.st.state == 'Z' && !has_live_threads(d->root.proc_fd, h->pid))
			h->alive = false; /* a zombie holds nothing */
	}
	if (hv.n)
		qsort(hv.v, hv.n, sizeof(hv.v[0]), cmp_holder);
	s->holders = hv.v;
	s->n_holders = hv.n;
	hv = (struct holder_vec){ 0 };
	if (d->drm && gpu_r == 0) {
		r = add_drm_memory(d, s, &scan);
		if (r == 0) {
			settle_dead_creators(s);
			r = estimate_drm_reserved(d, s, first);
		}
		if (r < 0)
			goto fail;
		add_drm_holder_memory(s);
	}
	for (size_t i = 0; i < s->n_holders; i++) {
		confirm_nvml_gpus(s, &s->holders[i]);
		classify(s, &s->holders[i]);
	}
	gs_scan_result_free(&scan);
	return gpu_r == -ENODEV ? -ENODEV : 0;

fail:
	for (size_t i = 0; i < hv.n; i++)
		free(hv.v[i].cmdline_full);
	gs_scan_result_free(&scan);
	free(hv.v);
	gs_snapshot_free(s);
	return r;
}

/* A live process that maps GPU g without NVML listing it there: the heir of
 * a dead creator's context (the fork case). */
static bool has_unlisted_mapper(const struct gs_snapshot *s, size_t g)
{
	for (size_t i = 0; i < s->n_holders; i++) {
		const struct gs_holder *h = &s->holders[i];

		if (h->alive && h->maps_gpu &&
		    (gs_minorset_has(&h->map_minors, s->gpus[g].minor) || gs_gpuset_has(&h->mapped, (unsigned)g)) &&
		    !gs_gpuset_has(&h->nvml_gpus, (unsigned)g))
			return true;
	}
	return false;
}

bool gs_snapshot_memory_verifiable(const struct gs_discover *d, const struct gs_snapshot *s, size_t g)
{
	const struct gs_gpu *gp;

	if (g >= s->n_gpus)
		return false;
	gp = &s->gpus[g];
	return gp->mem_known && gp->mem_basis != GS_MEM_V1 && gs_discover_polls_gpu(d, gp);
}

bool gs_snapshot_unowned(const struct gs_snapshot *s, size_t g, uint64_t *ret)
{
	const struct gs_gpu *gp;
	uint64_t held = 0;
	bool heir;

	*ret = 0;
	if (g >= s->n_gpus)
		return false;
	gp = &s->gpus[g];
	if (!gp->mem_known || (gp->mem_basis != GS_MEM_V2 && gp->mem_basis != GS_MEM_V1_ESTIMATED) ||
	    !gs_gpuset_has(&s->nvml_listed, (unsigned)g))
		return false;
	heir = has_unlisted_mapper(s, g);
	for (size_t k = 0; k < s->n_nvml; k++) {
		const struct gs_nvml_entry *e = &s->nvml[k];
		const struct gs_holder *h;

		if (e->gpu != g)
			continue;
		h = gs_snapshot_find(s, e->pid);
		/* gpuslate's own helper is never a holder; a PID it cannot find
		 * at all is gone */
		if (!(h && h->alive) && !heir)
			continue;
		if (!e->mem_known)
			return false;
		if (__builtin_add_overflow(held, e->mem_used, &held))
			return false;
	}
	*ret = gp->mem_used > held ? gp->mem_used - held : 0;
	return true;
}

bool gs_snapshot_denied_matters(const struct gs_snapshot *s, uint64_t tolerance)
{
	if (!s->n_denied)
		return false;
	for (size_t g = 0; g < s->n_gpus; g++) {
		uint64_t unowned;

		if (!gs_snapshot_unowned(s, g, &unowned) || unowned > tolerance)
			return true;
	}
	return false;
}

size_t gs_snapshot_heirs(const struct gs_snapshot *s, const struct gs_holder *dead,
			 pid_t *ret, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_holders && n < max; i++) {
		const struct gs_holder *h = &s->holders[i];

		if (h == dead || !h->alive || h->nvml_listed || h->kfd_listed || !h->maps_gpu)
			continue;
		if (gs_gpuset_intersects(&h->gpus, &dead->gpus))
			ret[n++] = h->pid;
	}
	return n;
}

#include "core/filters.h"
#include "proc/procinfo.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

bool gs_filters_any(const struct gs_filter_spec *spec)
{
	return spec->n_users || spec->n_units || spec->n_containers || spec->match;
}

static int resolve_user(const struct gs_filter_spec *spec, const char *name, uid_t *ret, char *err, size_t errlen)
{
	uint32_t u;

	if (gs_parse_u32(name, &u) == 0) {
		*ret = (uid_t)u;
		return 0;
	}
	if (!spec->resolve_user || spec->resolve_user(name, ret) < 0) {
		snprintf(err, errlen, "unknown user '%s'", name);
		return -EINVAL;
	}
	return 0;
}

int gs_filters_compile(const struct gs_filter_spec *spec, struct gs_filters *f, char *err, size_t errlen)
{
	int r;

	memset(f, 0, sizeof(*f));
	f->spec = spec;
	if (spec->n_users > GS_FILTER_MAX || spec->n_units > GS_FILTER_MAX || spec->n_containers > GS_FILTER_MAX) {
		snprintf(err, errlen, "too many -u, --unit or --container values (at most %d each)", GS_FILTER_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < spec->n_users; i++) {
		r = resolve_user(spec, spec->users[i], &f->uids[i], err, errlen);
		if (r < 0)
			return r;
	}
	if (spec->match) {
		r = regcomp(&f->re, spec->match, REG_EXTENDED | REG_NOSUB);
		if (r != 0) {
			char msg[128];

			regerror(r, &f->re, msg, sizeof(msg));
			regfree(&f->re);
			snprintf(err, errlen, "invalid --match '%s': %s", spec->match, msg);
			return -EINVAL;
		}
		f->have_re = true;
	}
	return 0;
}

void gs_filters_free(struct gs_filters *f)
{
	if (f->have_re)
		regfree(&f->re);
	f->have_re = false;
}

/* Unit names match with or without the .service suffix. */
static bool unit_matches(const char *want, const char *unit)
{
	size_t lw = strlen(want);

	if (!unit[0])
		return false;
	if (!strcmp(want, unit))
		return true;
	return !strchr(want, '.') && !strncmp(unit, want, lw) && !strcmp(unit + lw, ".service");
}

/* Container ids match in full or by a prefix of at least 4 characters
 * (docker's short ids), and CT names/vmids exactly. */
static bool container_matches(const char *want, const struct gs_owner *o, bool exact)
{
	size_t lw = strlen(want);

	if (!gs_owner_kind_is_container(o->kind))
		return false;
	if (exact || o->kind == GS_OWNER_LXC || o->kind == GS_OWNER_NSPAWN)
		return !strcmp(o->name, want);
	return lw >= 4 && !strncmp(o->name, want, lw);
}

bool gs_filters_test(const struct gs_filters *f, uid_t uid, const struct gs_owner *o, const char *cmdline,
		     struct gs_filter_hits *hits)
{
	const struct gs_filter_spec *sp = f->spec;
	/* --unit names a unit of the host or the unit inside a container;
	 * never a unit some inner manager runs below a delegation boundary. */
	const char *unit = o->kind == GS_OWNER_UNIT || o->kind == GS_OWNER_USER_UNIT ? o->name
			   : o->delegated ? "" : o->unit;
	struct gs_filter_hits h = { 0 };
	bool pass = true;

	for (size_t i = 0; i < sp->n_users; i++)
		if (uid == f->uids[i])
			h.users |= 1ULL << i;
	for (size_t i = 0; i < sp->n_units; i++)
		if (unit_matches(sp->units[i], unit))
			h.units |= 1ULL << i;
	for (size_t i = 0; i < sp->n_containers; i++)
		if (container_matches(sp->containers[i], o, sp->containers_exact))
			h.containers |= 1ULL << i;
	h.match = f->have_re && cmdline && regexec(&f->re, cmdline, 0, NULL, 0) == 0;
	pass = (!sp->n_users || h.users) && (!sp->n_units || h.units) && (!sp->n_containers || h.containers) &&
	       (!f->have_re || h.match);
	if (hits) {
		hits->users |= h.users;
		hits->units |= h.units;
		hits->containers |= h.containers;
		hits->match |= h.match;
	}
	return pass;
}

void gs_filters_host_free(struct gs_filters_host *h)
{
	free(h->resolved);
	memset(h, 0, sizeof(*h));
}

/* What a process says about itself for the filters: only the files a
 * filter needs (no user names: resolving thousands through NSS is slow). */
static int read_process(int proc_fd, pid_t pid, const struct gs_filter_spec *sp, uid_t *uid,
			struct gs_owner *o, char **cmdline)
{
	_cleanup_free_ char *status = NULL, *cgroup = NULL;
	char dir[32];
	_cleanup_close_ int dfd = -1;
	struct gs_pidstatus ps;
	int r;

	*cmdline = NULL;
	memset(o, 0, sizeof(*o));
	snprintf(dir, sizeof(dir), "%d", (int)pid);
	dfd = openat(proc_fd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	*uid = (uid_t)-1;
	if (sp->n_users) {
		r = gs_read_file_at(dfd, "status", 16384, &status, NULL);
		if (r < 0)
			return r;
		if (gs_parse_pidstatus(status, &ps) < 0)
			return -EINVAL;
		*uid = ps.uid;
	}
	if (sp->n_units || sp->n_containers) {
		r = gs_read_file_at(dfd, "cgroup", 64 * 1024, &cgroup, NULL);
		if (r < 0)
			return r;
		(void)gs_owner_from_cgroup(cgroup, o);
	}
	if (sp->match)
		return gs_procinfo_read_cmdline(dfd, cmdline);
	return 0;
}

/* Add o to the distinct containers value i names; false when there are
 * now two. */
static bool note_candidate(struct gs_filters_host *h, const struct gs_owner *o, size_t i,
			   struct gs_owner *first, size_t *n_cand)
{
	if (n_cand[i] == 0) {
		first[i] = *o;
		n_cand[i] = 1;
		gs_strlcpy(h->resolved[i], o->name, sizeof(h->resolved[i]));
		return true;
	}
	if (first[i].kind == o->kind && !strcmp(first[i].name, o->name))
		return true;
	n_cand[i]++;
	return false;
}

/* A container in a message: the name comes from a cgroup path, which its
 * runtime (or a user) chose, so it is escaped (util/sanitize.h). */
static void describe(const struct gs_owner *o, char *buf, size_t len)
{
	char name[80];

	snprintf(name, sizeof(name), "%.*s", o->kind == GS_OWNER_DOCKER || o->kind == GS_OWNER_PODMAN ? 12 : 64,
		 o->name);
	snprintf(buf, len, "%s %s", gs_owner_kind_str(o->kind), GS_SAFE(name));
}

int gs_filters_scan_host(const struct gs_filters *f, int proc_fd, const struct gs_ptable *pt, pid_t self,
			 struct gs_filters_host *h, char *err, size_t errlen)
{
	const struct gs_filter_spec *sp = f->spec;
	struct gs_owner *first = NULL, o;
	size_t *n_cand = NULL;
	int rc = 0;

	memset(h, 0, sizeof(*h));
	h->n_resolved = sp->n_containers;
	h->resolved = calloc(sp->n_containers ? sp->n_containers : 1, sizeof(*h->resolved));
	first = calloc(sp->n_containers ? sp->n_containers : 1, sizeof(*first));
	n_cand = calloc(sp->n_containers ? sp->n_containers : 1, sizeof(*n_cand));
	if (!h->resolved || !first || !n_cand) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < sp->n_containers; i++)
		gs_strlcpy(h->resolved[i], sp->containers[i], sizeof(h->resolved[i]));

	for (size_t k = 0; k < pt->n; k++) {
		const struct gs_pidstat *st = &pt->procs[k];
		char *cmdline = NULL;
		uid_t uid = (uid_t)-1;
		struct gs_filter_hits ph = { 0 };
		bool pass, ours;
		int r;

		if (gs_pidstat_is_kthread(st))
			continue;
		r = read_process(proc_fd, st->pid, sp, &uid, &o, &cmdline);
		if (r == -ENOMEM) {
			free(cmdline);
			rc = r;
			goto out;
		}
		if (r < 0)
			continue; /* gone, or not ours to read */
		/* gpuslate and what it started (its NVML helper is forked
		 * without exec: its command line is ours, filters included)
		 * never match --match; a user, unit or container that names
		 * gpuslate's own still matches it (json.md, exit 7). */
		ours = st->pid == self || gs_ptable_is_ancestor(pt, self, st->pid);
		pass = gs_filters_test(f, uid, &o, ours ? NULL : (cmdline && *cmdline ? cmdline : st->comm), &ph);
		free(cmdline);
		h->any_match |= pass;
		h->hits.users |= ph.users;
		h->hits.units |= ph.units;
		h->hits.containers |= ph.containers;
		h->hits.match |= ph.match;
		for (size_t i = 0; i < sp->n_containers; i++) {
			if (!(ph.containers >> i & 1) || note_candidate(h, &o, i, first, n_cand))
				continue;
			{
				char a[160], b[160];

				describe(&first[i], a, sizeof(a));
				describe(&o, b, sizeof(b));
				snprintf(err, errlen,
					 "--container '%s' is ambiguous: it names %s and %s (give more of the id)",
					 sp->containers[i], a, b);
			}
			rc = -EINVAL;
			goto out;
		}
	}
out:
	free(first);
	free(n_cand);
	if (rc < 0)
		gs_filters_host_free(h);
	return rc;
}

size_t gs_filters_unmatched(const struct gs_filter_spec *sp, const struct gs_filter_hits *hits,
			    char (*out)[320], size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sp->n_users && n < max; i++)
		if (!(hits->users >> i & 1))
			snprintf(out[n++], sizeof(out[0]), "-u %.300s", sp->users[i]);
	for (size_t i = 0; i < sp->n_units && n < max; i++)
		if (!(hits->units >> i & 1))
			snprintf(out[n++], sizeof(out[0]), "--unit %.300s", sp->units[i]);
	for (size_t i = 0; i < sp->n_containers && n < max; i++)
		if (!(hits->containers >> i & 1))
			snprintf(out[n++], sizeof(out[0]), "--container %.300s", sp->containers[i]);
	if (sp->match && !hits->match && n < max)
		snprintf(out[n++], sizeof(out[0]), "--match %.300s", sp->match);
	return n;
}

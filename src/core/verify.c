#include "core/verify.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs_respawn_watch_free(struct gs_respawn_watch *w)
{
	for (size_t i = 0; i < w->n_idents; i++)
		free(w->idents[i].cmdline);
	free(w->idents);
	free(w->parents);
	free(w->cgroups);
	memset(w, 0, sizeof(*w));
}

void gs_verify_result_free(struct gs_verify_result *r)
{
	free(r->gpus);
	free(r->respawns);
	free(r->alive);
	memset(r, 0, sizeof(*r));
}

static bool interrupted(const struct gs_verify_opts *o)
{
	return o->interrupted && *o->interrupted;
}

/* Was this process part of the original snapshot (same pid and start time)? */
static bool was_known(const struct gs_snapshot *before, const struct gs_holder *h)
{
	const struct gs_holder *b = gs_snapshot_find(before, h->pid);

	return b && b->info_ok && h->info_ok && b->info.st.starttime == h->info.st.starttime;
}

static void parent_comm(int proc_fd, const struct gs_snapshot *b, pid_t ppid, char *buf, size_t len)
{
	const struct gs_holder *parent = gs_snapshot_find(b, ppid);
	struct gs_pidstat st;

	if (parent && parent->info_ok)
		gs_strlcpy(buf, parent->info.st.comm, len);
	else if (gs_pidstat_read(proc_fd, ppid, &st) == 0)
		gs_strlcpy(buf, st.comm, len);
	else
		gs_strlcpy(buf, "?", len);
}

static void describe_respawn(int proc_fd, const struct gs_verify_opts *o, const struct gs_holder *h,
			     struct gs_respawn *rs)
{
	char pc[64];

	const struct gs_plan *op = o->old_plan;
	const struct gs_snapshot *b = o->before;
	const struct gs_owner *ow = &h->info.owner;

	rs->pid = h->pid;
	gs_strlcpy(rs->comm, h->info.st.comm, sizeof(rs->comm));
	/* Same unit as something we stopped or signalled: its manager restarted it. */
	for (size_t i = 0; op && i < op->n_targets; i++) {
		const struct gs_target *t = &op->targets[i];
		const struct gs_holder *oh = t->holder >= 0 ? &b->holders[t->holder] : NULL;

		if (oh && oh->info_ok && ow->kind != GS_OWNER_NONE && ow->kind != GS_OWNER_SESSION &&
		    oh->info.owner.kind == ow->kind && !strcmp(oh->info.owner.name, ow->name) &&
		    !strcmp(oh->info.owner.unit, ow->unit)) {
			snprintf(rs->by, sizeof(rs->by), "%s %.150s%s%.150s", gs_owner_kind_str(ow->kind), ow->name,
				 ow->unit[0] ? ": " : "", ow->unit);
			if (t->restarter >= 0 && !gs_restarter_is_process(&op->restarters[t->restarter]))
				gs_strlcpy(rs->stop_with, op->restarters[t->restarter].stop_with, sizeof(rs->stop_with));
			return;
		}
		if (oh && oh->info_ok && oh->info.st.ppid == h->info.st.ppid && h->info.st.ppid > 1) {
			parent_comm(proc_fd, b, h->info.st.ppid, pc, sizeof(pc));
			snprintf(rs->by, sizeof(rs->by), "parent %d (%s)", (int)h->info.st.ppid, pc);
			if (t->restarter >= 0 && gs_restarter_is_process(&op->restarters[t->restarter]) &&
			    op->restarters[t->restarter].pid == h->info.st.ppid)
				gs_strlcpy(rs->stop_with, op->restarters[t->restarter].stop_with, sizeof(rs->stop_with));
			return;
		}
	}
	if (h->info.st.ppid > 1) {
		parent_comm(proc_fd, b, h->info.st.ppid, pc, sizeof(pc));
		snprintf(rs->by, sizeof(rs->by), "parent %d (%s)", (int)h->info.st.ppid, pc);
	}
	else
		snprintf(rs->by, sizeof(rs->by), "a new process");
}

/* The same GPU in another snapshot (indices shift if the driver refuses
 * one), or -1. */
static int same_gpu(const struct gs_snapshot *before, unsigned g, const struct gs_snapshot *now)
{
	const struct gs_gpu *a = &before->gpus[g];

	for (size_t k = 0; k < now->n_gpus; k++)
		if (now->gpus[k].minor == a->minor && !strcmp(now->gpus[k].uuid, a->uuid))
			return (int)k;
	return -1;
}

/* A reading without a figure: whatever the last one said, the memory is
 * not known to be back. */
static void mark_unknown(struct gs_gpu_verdict *v)
{
	v->figure_lost = true;
	v->released = false;
}

static void mark_released(struct gs_gpu_verdict *v, uint64_t used, uint64_t t0_ns)
{
	v->figure_lost = false;
	v->after = used;
	if (used <= v->baseline) {
		if (!v->released) {
			v->released = true;
			v->released_ms = (gs_now_ns() - t0_ns) / 1000000ULL;
		}
	} else {
		v->released = false;
	}
}

/* What may stay follows the holders left alone as they are now: the
 * re-plan's baseline, judged against the memory read in the same snapshot.
 * A left-alone job that ended freed its share; a target's memory still
 * being torn down must not hide under it. */
static void follow_baseline(struct gs_gpu_verdict *v, const struct gs_snapshot *before, const struct gs_snapshot *now,
			    const struct gs_plan *np, uint64_t t0_ns)
{
	int k = same_gpu(before, v->gpu, now);

	v->n_others = 0;
	v->others_total = 0;
	v->unowned_known = false;
	if (k < 0 || k >= GS_MAX_GPUS)
		return;
	v->unowned_known = gs_snapshot_unowned(now, (size_t)k, &v->unowned);
	for (size_t i = 0; i < np->n_others; i++) {
		const struct gs_plan_other *ot = &np->others[i];

		if (ot->gpu != (unsigned)k)
			continue;
		if (v->n_others < GS_ARRAY_SIZE(v->others)) {
			v->others[v->n_others] = ot->pid;
			gs_strlcpy(v->others_comm[v->n_others], ot->comm, sizeof(v->others_comm[0]));
			v->others_memory[v->n_others] = ot->mem;
		}
		v->n_others++;
		v->others_total += ot->mem;
	}
	if (v->mem_known && !now->gpus[k].mem_known) {
		mark_unknown(v);
		return;
	}
	if (!v->mem_known || !np->baseline_known[k])
		return;
	v->baseline = np->baseline[k];
	mark_released(v, now->gpus[k].mem_used, t0_ns);
}

static bool respawn_listed(const struct gs_verify_result *r, pid_t pid)
{
	for (size_t i = 0; i < r->n_respawns; i++)
		if (r->respawns[i].pid == pid)
			return true;
	return false;
}

static bool was_target(const struct gs_plan *op, const struct gs_pidstat *st)
{
	const struct gs_target *t = op ? gs_plan_find_target(op, st->pid) : NULL;

	return t && t->starttime == st->starttime;
}

/* Is pid, started at starttime, the parent's child that a watched identity
 * recorded (a wrapper script between a loop and the target: it survives the
 * stop and may go on to the next GPU program)? */
static bool is_recorded_wrapper(const struct gs_respawn_watch *w, pid_t parent, const struct gs_pidstat *p)
{
	for (size_t i = 0; i < w->n_idents; i++)
		if (w->idents[i].parent == parent && w->idents[i].was == p->pid && w->idents[i].was_starttime == p->starttime)
			return true;
	return false;
}

/* The v2 cgroup of pid ("0::/path" of /proc/PID/cgroup): 0, or -errno. */
static int cgroup_of_pid(int proc_fd, pid_t pid, char *buf, size_t len)
{
	char path[32], *txt = NULL, *line;
	int r;

	snprintf(path, sizeof(path), "%d/cgroup", (int)pid);
	r = gs_read_file_at(proc_fd, path, 65536, &txt, NULL);
	if (r < 0)
		return r;
	line = strstr(txt, "0::");
	if (line && (line == txt || line[-1] == '\n')) {
		size_t n = strcspn(line + 3, "\n");

		if (n >= len)
			n = len - 1;
		memcpy(buf, line + 3, n);
		buf[n] = '\0';
	} else {
		r = -ENOENT;
	}
	free(txt);
	return r;
}

/* Is st a process started since the watch began whose chain of ancestors
 * reaches parent through processes all started since too (a launcher, a
 * wrapper script the parent started again), or through the wrapper script
 * the parent had started (train.sh going on to eval)? *ret_direct:
 * parent's child. parent 0: st itself, started since, in watched cgroup
 * cg: the manager's new process, not the fork of one that survived the
 * stop there (a rank on an unselected GPU forking a worker). */
static bool new_below(int proc_fd, const struct gs_respawn_watch *w, const struct gs_ptable *pt,
		      const struct gs_pidstat *st, pid_t parent, int cg, bool *ret_direct)
{
	const struct gs_pidstat *cur = st;

	*ret_direct = false;
	if (st->starttime < w->since_ticks)
		return false;
	if (!parent) {
		const struct gs_pidstat *up = gs_ptable_find(pt, st->ppid);
		char pcg[1024];

		/* An old parent inside the watched cgroup survived the stop. */
		if (up && up->starttime < w->since_ticks && cg >= 0 && (size_t)cg < w->n_cgroups &&
		    cgroup_of_pid(proc_fd, up->pid, pcg, sizeof(pcg)) == 0) {
			size_t n = strlen(w->cgroups[cg].path);

			if (!strncmp(pcg, w->cgroups[cg].path, n) && (pcg[n] == '\0' || pcg[n] == '/'))
				return false;
		}
		*ret_direct = true;
		return true;
	}
	for (int depth = 0; cur && depth < 16; depth++) {
		const struct gs_pidstat *up;

		if (cur->ppid == parent) {
			*ret_direct = cur == st;
			return true;
		}
		if (cur->ppid <= 1)
			return false;
		up = gs_ptable_find(pt, cur->ppid);
		if (!up || (up->starttime < w->since_ticks && !is_recorded_wrapper(w, parent, up)))
			return false;
		cur = up;
	}
	return false;
}

/* Does process st, new below watched parent ppid (or, ppid 0, in watched
 * cgroup cg), restart a stopped target? Yes when it runs the target's own
 * executable, whatever its arguments (supervisors pass run ids, ports,
 * seeds), or, as the parent's child, has the very identity of what the
 * parent started (a wrapper script, a launcher: executable and command
 * line). A loop's helpers (sleep, date) run other programs. */
static bool is_restarted_target(int proc_fd, const struct gs_respawn_watch *w, const struct gs_ptable *pt,
				const struct gs_pidstat *st, pid_t ppid, int cg)
{
	char path[32], exe[512], *cmd = NULL;
	pid_t pid = st->pid;
	bool same = false, direct;
	ssize_t n;
	int fd;

	if (!new_below(proc_fd, w, pt, st, ppid, cg, &direct))
		return false;
	snprintf(path, sizeof(path), "%d/exe", (int)pid);
	n = readlinkat(proc_fd, path, exe, sizeof(exe) - 1);
	if (n < 0)
		return false;
	exe[n] = '\0';
	for (size_t i = 0; i < w->n_idents; i++) {
		const struct gs_watch_ident *id = &w->idents[i];

		if ((ppid ? id->parent == ppid : id->cgroup == cg) && !(id->was == pid && id->was_starttime == st->starttime) &&
		    id->target_exe[0] && !strcmp(id->target_exe, exe))
			return true;
	}
	if (!direct)
		return false;
	snprintf(path, sizeof(path), "%d", (int)pid);
	fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (gs_procinfo_read_cmdline(fd, &cmd) == 0) {
		for (size_t i = 0; i < w->n_idents && !same; i++)
			same = (ppid ? w->idents[i].parent == ppid : w->idents[i].cgroup == cg) &&
			       !(w->idents[i].was == pid && w->idents[i].was_starttime == st->starttime) &&
			       !strcmp(w->idents[i].exe, exe) &&
			       w->idents[i].cmdline && !strcmp(w->idents[i].cmdline, cmd);
		free(cmd);
	}
	close(fd);
	return same;
}

static int add_identity_respawn(struct gs_verify_result *r, const struct gs_pidstat *st, const char *by,
				const char *stop_with, bool *ret_new)
{
	struct gs_respawn *nr = realloc(r->respawns, (r->n_respawns + 1) * sizeof(*nr));

	if (!nr)
		return -ENOMEM;
	r->respawns = nr;
	nr += r->n_respawns++;
	memset(nr, 0, sizeof(*nr));
	nr->pid = st->pid;
	gs_strlcpy(nr->comm, st->comm, sizeof(nr->comm));
	gs_strlcpy(nr->by, by, sizeof(nr->by));
	gs_strlcpy(nr->stop_with, stop_with, sizeof(nr->stop_with));
	nr->by_identity = true;
	*ret_new = true;
	return 0;
}

/* The same for a unit or container whose manager restarts what was killed
 * in it: a new process in its cgroup (cgroup.procs of the unified
 * hierarchy; nothing on a v1-only host) that is a stopped target again. */
static int watch_cgroups(const struct gs_root *root, int proc_fd, const struct gs_verify_opts *o,
			 const struct gs_ptable *pt, struct gs_verify_result *r, bool *ret_new)
{
	const struct gs_respawn_watch *w = o->watch;
	const char *mnt;

	if (!w || !w->n_cgroups || !root || root->sys_fd < 0)
		return 0;
	/* The unified hierarchy: /sys/fs/cgroup, or its unified/ directory on
	 * hybrid hosts (where the owner's path is the v2 line's). */
	if (faccessat(root->sys_fd, "fs/cgroup/cgroup.controllers", F_OK, 0) == 0)
		mnt = "fs/cgroup";
	else if (faccessat(root->sys_fd, "fs/cgroup/unified/cgroup.controllers", F_OK, 0) == 0)
		mnt = "fs/cgroup/unified";
	else
		return 0;
	for (size_t k = 0; k < w->n_cgroups; k++) {
		char path[1200], *txt = NULL, *save = NULL, *line;

		snprintf(path, sizeof(path), "%s%s/cgroup.procs", mnt, w->cgroups[k].path);
		if (gs_read_file_at(root->sys_fd, path, 1 << 20, &txt, NULL) < 0)
			continue; /* gone with its unit, or not the unified hierarchy */
		for (line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			const struct gs_pidstat *st = gs_ptable_find(pt, (pid_t)strtol(line, NULL, 10));
			int e;

			if (!st || was_target(o->old_plan, st) || respawn_listed(r, st->pid) ||
			    !is_restarted_target(proc_fd, w, pt, st, 0, (int)k))
				continue;
			e = add_identity_respawn(r, st, w->cgroups[k].by, w->cgroups[k].stop_with, ret_new);
			if (e < 0) {
				free(txt);
				return e;
			}
		}
		free(txt);
	}
	return 0;
}

/* A restarted process imports for seconds before it opens the GPU (PyTorch):
 * a new child of a watched parent that is a stopped target again is a
 * respawn at once, before it holds anything. Also notes whether every
 * watched parent is gone. */
static int watch_children(int proc_fd, const struct gs_verify_opts *o, const struct gs_ptable *pt,
			  struct gs_verify_result *r, bool *ret_new)
{
	const struct gs_respawn_watch *w = o->watch;
	bool any_parent = false;

	if (!w || !w->n_parents)
		return 0;
	r->n_alive = 0;
	for (size_t k = 0; k < w->n_parents; k++) {
		const struct gs_watch_parent *wp = &w->parents[k];
		const struct gs_pidstat *pst = gs_ptable_find(pt, wp->pid);

		if (!pst || pst->starttime != wp->starttime || pst->state == 'Z')
			continue;
		any_parent = true;
		if (wp->restarter) {
			struct gs_alive_restarter *na = realloc(r->alive, (r->n_alive + 1) * sizeof(*na));

			if (!na)
				return -ENOMEM;
			r->alive = na;
			na += r->n_alive++;
			memset(na, 0, sizeof(*na));
			na->pid = wp->pid;
			gs_strlcpy(na->comm, wp->comm, sizeof(na->comm));
			gs_strlcpy(na->stop_with, wp->stop_with, sizeof(na->stop_with));
		}
		for (size_t i = 0; i < pt->n; i++) {
			const struct gs_pidstat *st = &pt->procs[i];
			char by[320];
			int e;

			/* Its child, or a new process further below through
			 * new ones (timeout, nice, a wrapper script). */
			if (was_target(o->old_plan, st) || respawn_listed(r, st->pid) ||
			    !is_restarted_target(proc_fd, w, pt, st, wp->pid, -1))
				continue;
			snprintf(by, sizeof(by), "parent %d (%s)", (int)wp->pid, wp->comm);
			e = add_identity_respawn(r, st, by, wp->stop_with, ret_new);
			if (e < 0)
				return e;
		}
		if (wp->restarter) {
			char by[320];

			snprintf(by, sizeof(by), "parent %d (%s)", (int)wp->pid, wp->comm);
			for (size_t i = 0; i < r->n_respawns; i++)
				r->alive[r->n_alive - 1].restarted |= !strcmp(r->respawns[i].by, by);
		}
	}
	r->watched_parents_gone = !any_parent;
	return 0;
}

/* Re-discover and re-plan with the same selection: whatever the selection
 * would still target is what keeps the GPUs from being clean. */
static int rescan(struct gs_discover *d, const struct gs_verify_opts *o, struct gs_verify_result *r,
		  bool *ret_old_left, bool *ret_new)
{
	struct gs_snapshot s;
	struct gs_ptable pt = { 0 };
	struct gs_plan np;
	struct gs_selection sel;
	char err[256];
	int rc;

	*ret_old_left = false;
	*ret_new = false;
	rc = gs_snapshot_take(d, &s);
	if (rc < 0 && rc != -ENODEV)
		return rc;
	rc = gs_discover_ptable(d, &pt);
	if (rc < 0) {
		gs_snapshot_free(&s);
		return rc;
	}
	/* What the stop left alive stays a target: the re-plan must not
	 * excuse it because the association that made it one is gone. */
	sel = *o->sel;
	sel.targeted = o->old_plan;
	/* No systemctl on the re-scan's beat: its targets stay targets, and
	 * a new holder gets the cautious unit-main rule. */
	sel.unit_main_pid = NULL;
	rc = gs_plan_build(&s, &pt, &sel, d->self, &d->self_owner, &np, err, sizeof(err));
	if (rc < 0) {
		gs_ptable_free(&pt);
		gs_snapshot_free(&s);
		return rc;
	}
	for (size_t g = 0; g < r->n_gpus; g++) {
		r->gpus[g].n_held_by = 0;
		follow_baseline(&r->gpus[g], o->before, &s, &np, o->t0_ns);
	}
	free(r->respawns);
	r->respawns = NULL;
	r->n_respawns = 0;
	for (size_t i = 0; i < np.n_targets; i++) {
		const struct gs_target *t = &np.targets[i];
		const struct gs_holder *h = t->holder >= 0 ? &s.holders[t->holder] : NULL;

		if (!h || !h->alive)
			continue;
		for (size_t g = 0; g < r->n_gpus; g++) {
			struct gs_gpu_verdict *v = &r->gpus[g];

			if (gs_gpuset_has(&h->gpus, v->gpu) && v->n_held_by < GS_ARRAY_SIZE(v->held_by)) {
				gs_strlcpy(v->held_comm[v->n_held_by], h->info_ok ? h->info.st.comm : "?",
					   sizeof(v->held_comm[0]));
				v->held_by[v->n_held_by++] = h->pid;
			}
		}
		if (was_known(o->before, h)) {
			*ret_old_left = true;
		} else if (h->info_ok && !respawn_listed(r, h->pid)) {
			struct gs_respawn *nr = realloc(r->respawns, (r->n_respawns + 1) * sizeof(*nr));

			*ret_new = true;
			if (nr) {
				r->respawns = nr;
				memset(&nr[r->n_respawns], 0, sizeof(*nr));
				describe_respawn(gs_discover_proc_fd(d), o, h, &nr[r->n_respawns]);
				r->n_respawns++;
			}
		}
	}
	rc = watch_children(gs_discover_proc_fd(d), o, &pt, r, ret_new);
	if (rc == 0)
		rc = watch_cgroups(gs_discover_root(d), gs_discover_proc_fd(d), o, &pt, r, ret_new);
	gs_plan_free(&np);
	gs_ptable_free(&pt);
	gs_snapshot_free(&s);
	return rc;
}

/* One exchange with the driver for every GPU polled. */
static int poll_memory(struct gs_discover *d, const struct gs_verify_opts *o, struct gs_verify_result *r)
{
	unsigned gpus[GS_MAX_GPUS];
	struct gs_gpu_mem mem[GS_MAX_GPUS] = { 0 };
	size_t n = 0, k = 0;
	int rc;

	for (size_t g = 0; g < r->n_gpus && n < GS_MAX_GPUS; g++)
		if (r->gpus[g].mem_known)
			gpus[n++] = r->gpus[g].gpu;
	if (!n)
		return 0;
	rc = gs_snapshot_memory(d, o->before, gpus, n, mem);
	if (rc < 0)
		return rc;
	for (size_t g = 0; g < r->n_gpus && k < n; g++) {
		struct gs_gpu_verdict *v = &r->gpus[g];
		const struct gs_gpu_mem *m;

		if (!v->mem_known)
			continue;
		m = &mem[k++];
		if (m->used_unknown)
			mark_unknown(v);
		else
			mark_released(v, m->used, o->t0_ns);
	}
	return 0;
}

/* A target whose own share of GPU g is unknown (an AMD client without usage
 * stats, --include-clients or taken with its group): its memory went into
 * what stays, so the figure would say clean whether or not it was freed. */
static bool target_share_unknown(const struct gs_plan *p, const struct gs_snapshot *b, size_t g)
{
	for (size_t i = 0; i < b->n_unknown_shares; i++)
		if (b->unknown_shares[i].gpu == g && gs_plan_find_target(p, b->unknown_shares[i].pid))
			return true;
	return false;
}

int gs_verify_begin(struct gs_discover *d, const struct gs_verify_opts *o, struct gs_verify_result *r)
{
	const struct gs_plan *p = o->old_plan;
	const struct gs_snapshot *b = o->before;

	memset(r, 0, sizeof(*r));
	r->gpus = calloc(b->n_gpus ? b->n_gpus : 1, sizeof(*r->gpus));
	if (!r->gpus)
		return -ENOMEM;
	for (size_t g = 0; g < b->n_gpus; g++) {
		struct gs_gpu_verdict *v;

		if (!gs_gpuset_has(&p->gpus, (unsigned)g))
			continue;
		v = &r->gpus[r->n_gpus++];
		v->gpu = (unsigned)g;
		/* v1 figures with the reservation inside cannot be held
		 * against a baseline: holders only, and the verdict says so. */
		v->mem_known = gs_snapshot_memory_verifiable(d, b, g) && !target_share_unknown(p, b, g);
		v->before = v->after = b->gpus[g].mem_used;
		v->baseline = p->baseline[g];
		v->unowned_known = gs_snapshot_unowned(b, g, &v->unowned);
		if (!v->mem_known)
			r->memory_unverified = true;
	}
	r->begun = true;
	return 0;
}

int gs_verify_tick(struct gs_discover *d, const struct gs_verify_opts *o, struct gs_verify_result *r)
{
	int rc;

	if (!r->begun || r->tick_error)
		return r->tick_error;
	rc = poll_memory(d, o, r);
	if (rc < 0)
		r->tick_error = rc;
	return rc;
}

int gs_verify_wait(struct gs_discover *d, const struct gs_verify_opts *o, struct gs_verify_result *r)
{
	uint64_t start = gs_now_ms(), deadline = start + o->timeout_ms;
	uint64_t poll_ms = o->poll_ms ? o->poll_ms : 5, rescan_ms = o->rescan_ms ? o->rescan_ms : 200;
	uint64_t next_rescan = 0, next_progress = start + 200, clean_since = 0;
	bool old_left = true, new_holders = false, all_released;
	int rc;

	if (!r->begun) {
		rc = gs_verify_begin(d, o, r);
		if (rc < 0)
			return rc;
	}

	for (;;) {
		uint64_t now = gs_now_ms();

		rc = r->tick_error ? r->tick_error : poll_memory(d, o, r);
		if (rc < 0) {
			r->driver_failed = true;
			r->error = rc;
			snprintf(r->driver_error, sizeof(r->driver_error), "reading GPU memory failed: %s",
				 gs_discover_error(d)[0] ? gs_discover_error(d) : strerror(-rc));
			break;
		}
		all_released = true;
		for (size_t g = 0; g < r->n_gpus; g++)
			all_released &= !r->gpus[g].mem_known || r->gpus[g].released;

		/* Holders are re-scanned on a slower beat, and always before a
		 * verdict: memory at the baseline is not enough if a holder the
		 * selection targets is still there (it may not have allocated yet). */
		/* Once the GPUs look clean, re-scan at once to confirm, then on
		 * the respawn watch's own beat: a full /proc pass every 5 ms
		 * poll would be work on the hot path. */
		if (now >= next_rescan || now >= deadline || (all_released && !clean_since)) {
			rc = rescan(d, o, r, &old_left, &new_holders);
			if (rc < 0) {
				r->driver_failed = true;
				r->error = rc;
				snprintf(r->driver_error, sizeof(r->driver_error), "re-scanning holders failed: %s",
					 gs_discover_error(d)[0] ? gs_discover_error(d) : strerror(-rc));
				break;
			}
			next_rescan = now + rescan_ms;
			/* The re-scan moved the baselines to what stays now. */
			all_released = true;
			for (size_t g = 0; g < r->n_gpus; g++)
				all_released &= !r->gpus[g].mem_known || r->gpus[g].released;
			if (all_released && !old_left && !new_holders) {
				/* Clean now; a supervisor may still restart what we
				 * stopped: watch a little longer when one may exist. */
				if (!clean_since)
					clean_since = now;
				/* Every watched parent gone: nothing restarts through them. */
				if (now - clean_since >= o->respawn_watch_ms || now >= deadline ||
				    (o->watch && o->watch->parents_only && r->watched_parents_gone)) {
					r->clean = true;
					break;
				}
				next_rescan = now + 50;
			} else {
				clean_since = 0;
			}
			/* Everything we stopped is gone but something new holds the
			 * GPU: a respawn. Waiting longer would only hide it. */
			if (!old_left && new_holders && !o->keep_waiting_on_respawn)
				break;
		}
		if (now >= deadline) {
			r->timed_out = true;
			break;
		}
		if (interrupted(o)) {
			r->interrupted = true;
			break;
		}
		if (o->progress && now >= next_progress) {
			o->progress(o->progress_ud, r->gpus, r->n_gpus, now - start);
			next_progress = now + 200;
		}
		/* The poll interval is the condition check's beat, not a guess at
		 * how long teardown takes. */
		(void)poll(NULL, 0, (int)poll_ms);
	}
	for (size_t g = 0; g < r->n_gpus; g++) {
		struct gs_gpu_verdict *v = &r->gpus[g];

		v->clean = (!v->mem_known || (v->after <= v->baseline && !v->figure_lost)) && v->n_held_by == 0;
		v->unattributed = v->mem_known && !v->figure_lost && v->after > v->baseline && v->n_held_by == 0;
		/* Everything the selection targets has gone but the driver still
		 * accounts the memory: teardown not finished (or a holder we
		 * cannot see). */
		v->holders_gone = v->unattributed && !old_left;
		if (!v->clean)
			r->clean = false;
	}
	/* Clean for the selection; free only when nothing left alone holds
	 * memory there either. */
	for (size_t g = 0; r->clean && g < r->n_gpus; g++)
		r->others_hold |= r->gpus[g].n_others > 0;
	r->waited_ms = gs_now_ms() - start;
	r->respawn_watch_ms = o->respawn_watch_ms;
	return 0;
}

/* The reclaim pipeline: discover -> plan -> stop -> wait -> verify, and its
 * verdict. See reclaim.h. */
#include "core/reclaim.h"
#include "core/expect.h"
#include "core/stopped.h"
#include "proc/launcher.h"
#include "util/sanitize.h"
#include "util/lockwait.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How far a run got: gs_reclaim_free releases up to there. */
enum {
	STAGE_NONE,
	STAGE_DISCOVER,  /* discovery open */
	STAGE_SNAPSHOT,  /* snapshot taken */
	STAGE_PLAN,      /* plan built */
};

/* An AMD/Intel GPU of the verdict without a memory figure to poll. */
static bool unpolled_drm_gpu(const struct gs_snapshot *s, const struct gs_verify_result *vr)
{
	for (size_t g = 0; g < vr->n_gpus; g++)
		if (!vr->gpus[g].mem_known && s->gpus[vr->gpus[g].gpu].vendor != GS_VENDOR_NVIDIA)
			return true;
	return false;
}

static volatile sig_atomic_t interrupted;
/* The driver failed while stopping: stop escalating (see stop_tick). */
static volatile sig_atomic_t driver_failed;

/* Which signal interrupted: the exit status is the shell's 128 + N. */
static volatile sig_atomic_t interrupt_sig;

static void on_interrupt(int sig)
{
	if (!interrupted)
		interrupt_sig = sig;
	interrupted = 1;
}

/* No SA_RESTART: a blocking poll returns EINTR so the loops see the flag
 * at once. */
static void install_handlers(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = on_interrupt };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < GS_ARRAY_SIZE(sigs); i++) {
		struct sigaction old;

		/* Ignored when gpuslate started (nohup, a script's background
		 * job's SIGINT): the caller asked that it not end the run. */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
}

static void note(struct gs_reclaim *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct gs_reclaim *rc, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	if (!rc->hooks->note)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	rc->hooks->note(rc->hooks->ud, text);
}

/* The run ends without a verdict: why, and what kind of failure. */
static int fail(struct gs_reclaim *rc, enum gs_exit status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct gs_reclaim *rc, enum gs_exit status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rc->error, sizeof(rc->error), fmt, ap);
	va_end(ap);
	rc->rep.verdict = GS_VERDICT_NONE;
	rc->rep.exit_status = status;
	return 0;
}

/* One reclaim at a time per host: two would race over the same holders
 * and baselines. Waits up to timeout_ms for the other one to finish. */
/* Said once, when the lock is taken by another reclaim. */
static void lock_waiting(void *ud)
{
	struct gs_reclaim *rc = ud;

	rc->lock_waited = true;
	note(rc, "another gpuslate reclaim is running on this host; waiting up to %.0f s", rc->req->timeout_ms / 1000.0);
}

int gs_host_lock_take(uint64_t timeout_ms, volatile sig_atomic_t *intr, void (*waiting)(void *ud), void *ud,
		      int *ret_fd, char *err, size_t errlen)
{
	const char *path = getenv("GPUSLATE_LOCK_FILE");
	char buf[256];
	int fd, r;

	if (!path) {
		if (access("/run", W_OK) == 0)
			path = "/run/gpuslate.lock";
		else {
			snprintf(buf, sizeof(buf), "/tmp/gpuslate-%u.lock", (unsigned)getuid());
			path = buf;
		}
	}
	/* 0600: flock() needs no write permission, so a lock file others can
	 * open would let any local user hold it and refuse every reclaim. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		int e = errno;

		gs_seterr(err, errlen, "cannot open lock file '%s': %s", path, strerror(e));
		return -e;
	}
	{
		struct stat lst;

		if (fstat(fd, &lst) == 0 && lst.st_uid == geteuid() && (lst.st_mode & 077))
			(void)fchmod(fd, 0600); /* one made by an older version */
	}
	r = gs_lock_wait(fd, path, timeout_ms, intr, waiting, ud);
	if (r < 0) {
		char who[300];

		/* Who it is, while it still holds it. */
		gs_lock_holder_text(fd, who, sizeof(who));
		close(fd);
		if (r == -EINTR)
			gs_seterr(err, errlen,
				  "interrupted while waiting for another gpuslate reclaim to release the lock: nothing was done");
		else if (r == -EBUSY)
			gs_seterr(err, errlen, "another gpuslate reclaim still holds the lock after %.0f s%s%s",
				  timeout_ms / 1000.0, who[0] ? ": " : "", who);
		else
			gs_seterr(err, errlen, "cannot lock '%s': %s", path, strerror(-r));
		return r;
	}
	{
		/* The holder's pid, for whoever waits on the lock. */
		char pid[32];
		int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());

		if (ftruncate(fd, 0) == 0 && write(fd, pid, (size_t)n) < 0) {
			/* Informational only. */
		}
	}
	*ret_fd = fd;
	return 0;
}

static int take_lock(struct gs_reclaim *rc, const struct gs_request *req)
{
	int r = gs_host_lock_take(req->timeout_ms, &interrupted, lock_waiting, rc, &rc->lock_fd, rc->error,
				  sizeof(rc->error));

	if (r < 0) {
		rc->rep.verdict = GS_VERDICT_NONE;
		rc->rep.exit_status = GS_EXIT_REFUSED;
	}
	return r;
}

struct tick_ctx {
	struct gs_discover *d;
	const struct gs_verify_opts *vo;
	struct gs_verify_result *vr;
};

static void stop_tick(void *ud)
{
	struct tick_ctx *tc = ud;

	/* A hung or failed driver: no SIGKILL on an error path, and the
	 * report comes at once instead of after the grace period. */
	if (gs_verify_tick(tc->d, tc->vo, tc->vr) < 0)
		driver_failed = 1;
}

static void progress(void *ud, const struct gs_gpu_verdict *v, size_t n, uint64_t elapsed_ms)
{
	struct gs_reclaim *rc = ud;

	rc->hooks->progress(rc->hooks->ud, &rc->s, v, n, elapsed_ms);
}

static void stop_progress(void *ud, const struct gs_stop_progress *p)
{
	struct gs_reclaim *rc = ud;

	rc->hooks->stop_progress(rc->hooks->ud, rc, p);
}

/* Where the last reclaim's verdict is kept for `status --format prometheus`. */
const char *gs_last_reclaim_path(char *buf, size_t len)
{
	const char *p = getenv("GPUSLATE_STATE_FILE");

	if (p)
		return p;
	if (geteuid() == 0)
		return "/run/gpuslate.last-reclaim";
	snprintf(buf, len, "/tmp/gpuslate-%u.last-reclaim", (unsigned)getuid());
	return buf;
}

/* One line "<unix time> <exit status> <verdict>", replaced atomically. Best
 * effort: a read-only /run must not turn a clean reclaim into a failure. */
void gs_last_reclaim_record(const struct gs_reclaim_report *rep)
{
	char buf[256], tmp[300], line[128];
	const char *path = gs_last_reclaim_path(buf, sizeof(buf));
	int fd, n;

	/* A new file of ours (mkostemp: O_EXCL), never one someone put at a
	 * name we would use: where fs.protected_regular is 0, root would write
	 * into another user's file, then rename it into place as the record. */
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return;
	if (fchmod(fd, 0644) < 0) {
		close(fd);
		(void)unlink(tmp);
		return;
	}
	n = snprintf(line, sizeof(line), "%lld %d %s\n", (long long)time(NULL), (int)rep->exit_status,
		     gs_verdict_name(rep->verdict));
	if (write(fd, line, (size_t)n) != n || close(fd) < 0 || rename(tmp, path) < 0)
		(void)unlink(tmp);
}

/* Whoever supervises a process may restart it when it is killed from
 * outside: a service manager (whatever its PID: systemd is PID 1, a
 * container's init is the container's PID 1), a container runtime, or a
 * parent that lives on and is neither a target, init, nor one of our own
 * ancestors (such as the shell that started both). Every target whose stop
 * did not go through its manager (signalled, or its unit stop failed or was
 * refused) gets the watch after the GPUs look clean: 1 s for a live parent
 * or owner we know nothing more of; at least 2 s for a supervising parent
 * (a restarted PyTorch process imports for seconds: the parent's new child
 * is recognised by executable and command line before it opens the GPU);
 * a unit's RestartUSec plus a margin. */
#define GS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GS_RESPAWN_WATCH_MS 1000
#define GS_RESPAWN_WATCH_PARENT_MS 2500
#define GS_RESPAWN_WATCH_MARGIN_MS 1000
/* 2.5 s: a supervisor that sleeps 1.5 s before restarting (as some do
 * after a failure) is still seen with a second to spare on a loaded host. */
static bool owner_may_restart(enum gs_owner_kind k)
{
	return k == GS_OWNER_UNIT || k == GS_OWNER_USER_UNIT || gs_owner_kind_is_container(k);
}

static bool stopped_through_manager(const struct gs_target *t, const struct gs_stop_result *stop)
{
	return (t->action == GS_ACT_STOP_UNIT || t->action == GS_ACT_STOP_CONTAINER ||
		t->action == GS_ACT_STOP_SUPERVISED) && stop && t->unit >= 0 &&
	       (size_t)t->unit < stop->n_units && stop->units[t->unit].stopped;
}

static uint64_t respawn_watch(const struct gs_plan *p, const struct gs_stop_result *stop, const struct gs_snapshot *s,
			      const struct gs_ptable *pt, pid_t self, int proc_fd, bool *ret_parents_only)
{
	uint64_t ms = 0, other = 0;

	for (size_t i = 0; i < p->n_targets; i++) {
		const struct gs_target *t = &p->targets[i];
		const struct gs_pidstat *st = gs_ptable_find(pt, t->pid);
		const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;
		const struct gs_restarter *rs = t->restarter >= 0 ? &p->restarters[t->restarter] : NULL;
		pid_t pp = st ? st->ppid : 0;

		if (stopped_through_manager(t, stop))
			continue; /* systemd and the runtimes do not restart what they stopped */
		/* A loop typed at an interactive shell restarts as slowly as a
		 * script's: the same watch. The shell outlives the watch, so it
		 * is never a parents-only one. */
		if (t->shell_parent > 0)
			other = GS_MAX(other, GS_RESPAWN_WATCH_PARENT_MS);
		if (rs && gs_restarter_is_process(rs)) {
			const struct gs_pidstat *ps = gs_ptable_find(pt, rs->pid);
			pid_t gpp = ps ? ps->ppid : 0;

			ms = GS_MAX(ms, GS_RESPAWN_WATCH_PARENT_MS);
			/* The parent's end ends the watch early only when nothing
			 * would start the parent again: its own parent is init
			 * or one of ours, and no manager owns the target. */
			if (gpp > 1 && !gs_ptable_is_ancestor(pt, gpp, self) && gs_ptable_find(pt, gpp))
				other = GS_MAX(other, GS_RESPAWN_WATCH_PARENT_MS);
			if (h && h->info_ok && owner_may_restart(h->info.owner.kind))
				other = GS_MAX(other, GS_RESPAWN_WATCH_PARENT_MS);
			continue;
		}
		if (rs && rs->kind == GS_RESTARTER_UNIT) {
			uint64_t u = rs->restart_ms > 600000 ? 600000 : rs->restart_ms;

			other = GS_MAX(other, GS_MAX(GS_RESPAWN_WATCH_PARENT_MS, u + GS_RESPAWN_WATCH_MARGIN_MS));
			continue;
		}
		if (rs && rs->kind == GS_RESTARTER_CONTAINER) {
			other = GS_MAX(other, GS_RESPAWN_WATCH_PARENT_MS);
			continue;
		}
		if (h && h->info_ok && owner_may_restart(h->info.owner.kind)) {
			other = GS_MAX(other, GS_RESPAWN_WATCH_MS);
			continue;
		}
		/* A launcher runs its program once (unshare --fork waiting on
		 * a namespace's init, sudo, sshd): it restarts nothing, but what
		 * runs it may (a shell loop around `timeout 600 python ...`).
		 * On the H200 a watch for the launcher itself was the second
		 * ns_init paid above the floor. */
		{
			const struct gs_pidstat *up = gs_launcher_skip(pt, pp, gs_launch_kind_proc, (void *)(intptr_t)proc_fd);

			if (pp <= 1 || !up || up->pid <= 1 || gs_plan_find_target(p, up->pid) ||
			    gs_ptable_is_ancestor(pt, up->pid, self))
				continue;
		}
		other = GS_MAX(other, GS_RESPAWN_WATCH_MS);
	}
	*ret_parents_only = ms > 0 && other == 0;
	return GS_MAX(ms, other);
}

/* A unit whose processes were signalled (--no-units, or its stop failed)
 * may have its restart scheduled further away than the watch could last:
 * RestartSec=30s under --timeout 5s. Its manager knows; asked once per
 * unit after a clean wait, a scheduled restart makes the verdict not clean.
 * A unit that cannot be asked keeps the verdict, with a note. */
static int check_scheduled_restarts(struct gs_reclaim *rc)
{
	const struct gs_plan *p = &rc->plan;
	struct gs_verify_result *vr = &rc->vr;

	/* The plan's questions had their own deadline, long past after the
	 * wait: these share a new one. */
	rc->query.deadline_ms = gs_now_ms() + rc->query.timeout_ms;
	for (size_t i = 0; i < p->n_targets; i++) {
		const struct gs_target *t = &p->targets[i];
		const struct gs_restarter *rs = t->restarter >= 0 ? &p->restarters[t->restarter] : NULL;
		struct gs_unit_state st;
		struct gs_respawn *nr;
		bool asked = false;
		int r;

		if (!rs || rs->kind != GS_RESTARTER_UNIT || stopped_through_manager(t, rc->rep.stop))
			continue;
		for (size_t k = 0; k < i && !asked; k++)
			asked = p->targets[k].restarter == t->restarter;
		if (asked)
			continue;
		r = gs_restarter_query_unit_state(&rc->query, rs->name, rs->container, &st);
		if (r < 0) {
			note(rc, "could not ask systemd whether %s will be restarted: %s", rs->name, strerror(-r));
			continue;
		}
		if (!gs_unit_restart_pending(&st))
			continue;
		nr = realloc(vr->respawns, (vr->n_respawns + 1) * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		vr->respawns = nr;
		nr += vr->n_respawns++;
		memset(nr, 0, sizeof(*nr));
		nr->scheduled = true;
		nr->by_identity = true; /* before it opens the GPU, as a recognised restart */
		snprintf(nr->state, sizeof(nr->state), "%s/%s", st.active, st.sub);
		if (gs_unit_scope_is_user(rs->container, NULL)) {
			char where[96];

			snprintf(nr->by, sizeof(nr->by), "unit %.150s%s", rs->name,
				 gs_unit_scope_text(rs->container, where, sizeof(where)));
			snprintf(nr->stop_with, sizeof(nr->stop_with), "systemctl --user stop %.120s as that user, or %.150s",
				 rs->name, rs->stop_with);
		} else if (rs->container[0]) {
			snprintf(nr->by, sizeof(nr->by), "unit %.150s in CT %.100s", rs->name, rs->container);
			snprintf(nr->stop_with, sizeof(nr->stop_with), "pct exec %.60s -- systemctl stop %.100s, or %.120s",
				 rs->container, rs->name, rs->stop_with);
		} else {
			snprintf(nr->by, sizeof(nr->by), "unit %.250s", rs->name);
			snprintf(nr->stop_with, sizeof(nr->stop_with), "systemctl stop %.120s, or %.150s", rs->name,
				 rs->stop_with);
		}
		vr->clean = false;
	}
	return 0;
}

/* The cgroup of a unit or container restarter (the unit's own cgroup, the
 * container's), once: its index in *ret, -1 when there is none to read. */
static int watch_cgroup(struct gs_respawn_watch *w, const struct gs_owner *o, const struct gs_restarter *rs, int *ret)
{
	struct gs_watch_cgroup c = { 0 }, *nc;
	size_t len = rs->kind == GS_RESTARTER_UNIT ? (size_t)o->unit_cg_start + o->unit_cg_len : strlen(o->cgroup);

	*ret = -1;
	if (!len || len >= sizeof(c.path) || o->cgroup[0] != '/')
		return 0;
	memcpy(c.path, o->cgroup, len);
	c.path[len] = '\0';
	for (size_t i = 0; i < w->n_cgroups; i++)
		if (!strcmp(w->cgroups[i].path, c.path)) {
			*ret = (int)i;
			return 0;
		}
	/* Named as the holder re-scan names a restart by the same owner. */
	snprintf(c.by, sizeof(c.by), "%s %.150s%s%.150s", gs_owner_kind_str(o->kind), o->name, o->unit[0] ? ": " : "",
		 o->unit);
	gs_strlcpy(c.stop_with, rs->stop_with, sizeof(c.stop_with));
	nc = realloc(w->cgroups, (w->n_cgroups + 1) * sizeof(*nc));
	if (!nc)
		return -ENOMEM;
	w->cgroups = nc;
	nc[w->n_cgroups] = c;
	*ret = (int)w->n_cgroups++;
	return 0;
}

static int watch_parent(struct gs_respawn_watch *w, pid_t pid, uint64_t starttime, const char *comm,
			const char *stop_with, bool restarter)
{
	struct gs_watch_parent *np;

	for (size_t i = 0; i < w->n_parents; i++)
		if (w->parents[i].pid == pid) {
			w->parents[i].restarter |= restarter;
			return 0;
		}
	np = realloc(w->parents, (w->n_parents + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	w->parents = np;
	np += w->n_parents++;
	memset(np, 0, sizeof(*np));
	np->pid = pid;
	np->starttime = starttime;
	gs_strlcpy(np->comm, comm, sizeof(np->comm));
	gs_strlcpy(np->stop_with, stop_with, sizeof(np->stop_with));
	np->restarter = restarter;
	return 0;
}

/* pid itself, or its ancestor whose parent is parent (0: pid itself, a
 * cgroup's watch). NULL when parent is not above pid. */
static const struct gs_pidstat *child_toward(const struct gs_ptable *pt, pid_t parent, pid_t pid)
{
	const struct gs_pidstat *st = gs_ptable_find(pt, pid);

	if (!parent)
		return st;
	for (int depth = 0; st && depth < 64; depth++) {
		if (st->ppid == parent)
			return st;
		if (st->ppid <= 1)
			return NULL;
		st = gs_ptable_find(pt, st->ppid);
	}
	return NULL;
}

/* The identity of what id's parent (or cgroup) would start again for
 * target pid: the parent's child on the way to the target (the target, or
 * the launcher or wrapper script the parent restarts it through), its
 * executable and command line. Nothing is added when it is gone already or
 * unreadable: the holder re-scan still sees a restart. */
static int add_ident(struct gs_respawn_watch *w, const struct gs_ptable *pt, int proc_fd, struct gs_watch_ident *id,
		     pid_t pid)
{
	const struct gs_pidstat *c = child_toward(pt, id->parent, pid);
	struct gs_watch_ident *ni;
	char path[32];
	ssize_t n;
	int fd, r;

	if (!c)
		return 0;
	id->was = c->pid;
	id->was_starttime = c->starttime;
	/* The target's own program, however the parent starts it. */
	snprintf(path, sizeof(path), "%d/exe", (int)pid);
	n = readlinkat(proc_fd, path, id->target_exe, sizeof(id->target_exe) - 1);
	id->target_exe[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof(path), "%d/exe", (int)id->was);
	n = readlinkat(proc_fd, path, id->exe, sizeof(id->exe) - 1);
	if (n < 0)
		return 0;
	id->exe[n] = '\0';
	snprintf(path, sizeof(path), "%d", (int)id->was);
	fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	r = gs_procinfo_read_cmdline(fd, &id->cmdline);
	close(fd);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	ni = realloc(w->idents, (w->n_idents + 1) * sizeof(*ni));
	if (!ni) {
		free(id->cmdline);
		id->cmdline = NULL;
		return -ENOMEM;
	}
	w->idents = ni;
	ni[w->n_idents++] = *id;
	id->cmdline = NULL;
	return 0;
}

/* The supervising parents and what they started, read before the stop
 * (the targets' executables and command lines are gone after it). An
 * interactive shell parent is watched the same way, though it is no
 * restarter: a `while true` typed at it restarts the target, and its new
 * child with the target's identity is the only sign of that before the
 * child opens the GPU. Only the watch's length (the 2.5 s of a
 * supervising parent: what it restarts imports as long) is spent on it:
 * nothing of it is ever stopped. */
static int build_watch(struct gs_reclaim *rc)
{
	const struct gs_plan *p = &rc->plan;
	struct gs_respawn_watch *w = &rc->watch;
	int proc_fd = gs_discover_proc_fd(&rc->d);
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);
	int r;

	/* Before the stop: whatever starts from here on is new (the kernel's
	 * start times count boot time in clock ticks). */
	if (hz > 0 && clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
		w->since_ticks = (uint64_t)ts.tv_sec * (uint64_t)hz + (uint64_t)ts.tv_nsec / (1000000000ULL / (uint64_t)hz);
	for (size_t i = 0; i < p->n_restarters; i++) {
		const struct gs_restarter *rs = &p->restarters[i];

		const struct gs_pidstat *ps;

		if (!gs_restarter_is_process(rs))
			continue;
		/* A supervisor's restarter is named by its program: the watch
		 * names the process (supervisord, runsv). */
		ps = rs->kind == GS_RESTARTER_SUPERVISOR ? gs_ptable_find(&rc->pt, rs->pid) : NULL;
		r = watch_parent(w, rs->pid, rs->starttime, ps ? ps->comm : rs->name, rs->stop_with, true);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < p->n_targets; i++) {
		const struct gs_target *t = &p->targets[i];
		const struct gs_pidstat *sh = t->shell_parent > 0 ? gs_ptable_find(&rc->pt, t->shell_parent) : NULL;

		if (!sh)
			continue;
		r = watch_parent(w, sh->pid, sh->starttime, sh->comm,
				 "ending the loop in that interactive shell (gpuslate never stops one)", false);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < p->n_targets; i++) {
		const struct gs_target *t = &p->targets[i];
		const struct gs_restarter *rs = t->restarter >= 0 ? &p->restarters[t->restarter] : NULL;
		const struct gs_holder *h = t->holder >= 0 ? &rc->s.holders[t->holder] : NULL;
		struct gs_watch_ident id = { .parent = 0, .cgroup = -1 };

		if (t->why == GS_WHY_PARENT)
			continue;
		/* An interactive shell above the restarter (a loop typed at it
		 * around a wrapper script) restarts through its own child. */
		if (t->shell_parent > 0) {
			id.parent = t->shell_parent;
			r = add_ident(w, &rc->pt, proc_fd, &id, t->pid);
			if (r < 0)
				return r;
		}
		if (!rs || rs->kind == GS_RESTARTER_POD)
			continue;
		id = (struct gs_watch_ident){ .parent = 0, .cgroup = -1 };
		if (gs_restarter_is_process(rs)) {
			id.parent = rs->pid;
		} else {
			if (!h || !h->info_ok)
				continue;
			r = watch_cgroup(w, &h->info.owner, rs, &id.cgroup);
			if (r < 0)
				return r;
			if (id.cgroup < 0)
				continue;
		}
		r = add_ident(w, &rc->pt, proc_fd, &id, t->pid);
		if (r < 0)
			return r;
	}
	return 0;
}

/* What went through its manager, for the state file of `restore`. */
static int record_managed(struct gs_reclaim *rc)
{
	const struct gs_plan *p = &rc->plan;

	for (size_t u = 0; u < p->n_units && u < rc->stop.n_units; u++) {
		struct gs_managed_stop *m;

		if (!rc->stop.units[u].stopped)
			continue;
		m = realloc(rc->managed, (rc->n_managed + 1) * sizeof(*m));
		if (!m)
			return -ENOMEM;
		rc->managed = m;
		m += rc->n_managed++;
		memset(m, 0, sizeof(*m));
		m->kind = gs_unit_stop_is_supervised(&p->units[u]) ? "supervised"
			  : p->units[u].runtime[0] ? "container" : "unit";
		gs_strlcpy(m->name, p->units[u].unit, sizeof(m->name));
		gs_strlcpy(m->container, p->units[u].container, sizeof(m->container));
		gs_strlcpy(m->runtime, p->units[u].runtime, sizeof(m->runtime));
	}
	return 0;
}

/* systemctl show, once per unit and run (the plan's unit-main rule and
 * the restarters ask about the same units). */
static int unit_props_cached(void *ud, const char *unit, const char *container, struct gs_unit_props *ret)
{
	struct gs_reclaim *rc = ud;
	struct gs_unit_answer *a;

	for (size_t i = 0; i < rc->n_unit_answers; i++) {
		a = &rc->unit_answers[i];
		if (!strcmp(a->unit, unit) && !strcmp(a->container, container)) {
			*ret = a->props;
			return a->r;
		}
	}
	if (rc->n_unit_answers == GS_ARRAY_SIZE(rc->unit_answers))
		return gs_restarter_query_unit(&rc->query, unit, container, ret);
	a = &rc->unit_answers[rc->n_unit_answers++];
	gs_strlcpy(a->unit, unit, sizeof(a->unit));
	gs_strlcpy(a->container, container, sizeof(a->container));
	a->r = gs_restarter_query_unit(&rc->query, unit, container, &a->props);
	*ret = a->props;
	return a->r;
}

/* docker/podman inspect, once per container and run (every target of a
 * container asks about the same one). */
static int container_policy_cached(void *ud, const char *runtime, const char *id, char *ret, size_t len)
{
	struct gs_reclaim *rc = ud;
	struct gs_container_answer *a;

	for (size_t i = 0; i < rc->n_container_answers; i++) {
		a = &rc->container_answers[i];
		if (!strcmp(a->runtime, runtime) && !strcmp(a->id, id)) {
			gs_strlcpy(ret, a->policy, len);
			return a->r;
		}
	}
	if (rc->n_container_answers == GS_ARRAY_SIZE(rc->container_answers))
		return gs_restarter_query_container(&rc->query, runtime, id, ret, len);
	a = &rc->container_answers[rc->n_container_answers++];
	gs_strlcpy(a->runtime, runtime, sizeof(a->runtime));
	gs_strlcpy(a->id, id, sizeof(a->id));
	a->r = gs_restarter_query_container(&rc->query, runtime, id, a->policy, sizeof(a->policy));
	gs_strlcpy(ret, a->policy, len);
	return a->r;
}

/* The plan's unit-main rule made exact: the MainPID the manager reports
 * for the unit of this cgroup (never a unit below a delegation boundary,
 * whose manager is another). */
static int unit_main_pid(void *ud, const struct gs_owner *o, pid_t *ret)
{
	const char *unit = o->kind == GS_OWNER_LXC ? o->unit : o->name;
	char scope[32] = "";
	const char *ct = o->kind == GS_OWNER_LXC ? o->name
			 : o->kind == GS_OWNER_USER_UNIT ? gs_unit_scope_user(scope, sizeof(scope), o->uid) : "";
	struct gs_unit_props up;
	char cg[1024];
	int r;

	if ((o->kind != GS_OWNER_UNIT && o->kind != GS_OWNER_LXC && o->kind != GS_OWNER_USER_UNIT) || o->delegated ||
	    !gs_endswith(unit, ".service") || gs_owner_unit_cgroup(o, cg, sizeof(cg)) < 0)
		return -ENOENT;
	if (o->kind == GS_OWNER_LXC && !((struct gs_reclaim *)ud)->sel.have_pct &&
	    !((struct gs_reclaim *)ud)->sel.have_lxc_attach)
		return -ENOENT;
	r = unit_props_cached(ud, unit, ct, &up);
	if (r < 0)
		return r;
	if (strcmp(up.control_group, cg) || up.main_pid <= 0)
		return -ENOENT;
	*ret = up.main_pid;
	return 0;
}

/* The questions the restarter stage asks, answered from this host. */
static void restarter_env(struct gs_reclaim *rc, bool include_parent, struct gs_restarter_env *env)
{
	*env = (struct gs_restarter_env){
		.self = rc->d.self,
		.include_parent = include_parent,
		.no_units = rc->req->no_units,
		.unit_props = unit_props_cached,
		.unit_ud = rc,
		.container_policy = container_policy_cached,
		.container_ud = rc,
		.read_cmdline = gs_restarter_read_cmdline,
		.read_stdin = gs_restarter_read_stdin,
		.read_cgroup = gs_restarter_read_cgroup,
		.is_pidns_init = gs_discover_is_pidns_init,
		.pidns_ud = &rc->d,
		.launch_kind = gs_launch_kind_proc,
		.launch_ud = (void *)(intptr_t)gs_discover_proc_fd(&rc->d),
		.supervised = gs_supervised_find_proc,
		.supervised_ud = (void *)(intptr_t)gs_discover_proc_fd(&rc->d),
		.unprivileged = geteuid() != 0,
		.uid = geteuid(),
		.ud = &rc->query,
	};
}

int gs_reclaim_plan_restarters(struct gs_reclaim *rc, struct gs_plan *p, const struct gs_snapshot *s,
			       const struct gs_ptable *pt, bool include_parent)
{
	struct gs_restarter_env env;

	restarter_env(rc, include_parent, &env);
	/* The questions of this plan share a deadline of their own. */
	rc->query.deadline_ms = gs_now_ms() + rc->query.timeout_ms;
	return gs_restarters_plan(p, s, pt, &env);
}

/* Find what would restart each target (restarter.h), asking systemctl and
 * the container runtimes with deadlines. */
static int find_restarters(struct gs_reclaim *rc, const struct gs_request *req)
{
	struct gs_restarter_env env;

	restarter_env(rc, req->include_parent, &env);
	env.no_units = req->no_units;
	return gs_restarters_plan(&rc->plan, &rc->s, &rc->pt, &env);
}

/* "--unit x.service matches no process", or the filters together. */
static void no_match_text(const struct gs_selection *sel, const char (*unmatched)[320], size_t n, char *buf,
			  size_t len)
{
	static const struct gs_filter_hits none;
	char all[8][320];
	const char (*list)[320] = unmatched;
	size_t off;

	if (n == 0) {
		/* Each matches something, just not the same process. */
		n = gs_filters_unmatched(&sel->filters, &none, all, GS_ARRAY_SIZE(all));
		list = (const char (*)[320])all;
	}
	off = (size_t)snprintf(buf, len, "nothing matched: ");
	for (size_t i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", list[i]);
	if (off < len)
		snprintf(buf + off, len - off, " %s", list == unmatched ? (n == 1 ? "matches no process" : "match no process")
							 : "together match no process");
}

/* Every process of the host, once: a filter that names nothing is said by
 * name, and a container prefix is resolved to the one container it names
 * (or refused when it names two). */
static int apply_filters(struct gs_reclaim *rc)
{
	struct gs_filters f;
	char err[512];
	int r;

	r = gs_filters_compile(&rc->sel.filters, &f, err, sizeof(err));
	if (r == 0) {
		r = gs_filters_scan_host(&f, gs_discover_proc_fd(&rc->d), &rc->pt, rc->d.self, &rc->host, err,
					 sizeof(err));
		gs_filters_free(&f);
	}
	if (r < 0)
		return fail(rc, r == -EINVAL ? GS_EXIT_USAGE : gs_exit_of_error(r, GS_EXIT_DRIVER), "%s",
			    r == -EINVAL ? err : strerror(-r));
	rc->rep.n_unmatched = gs_filters_unmatched(&rc->sel.filters, &rc->host.hits, rc->unmatched,
						   GS_ARRAY_SIZE(rc->unmatched));
	for (size_t i = 0; i < rc->host.n_resolved && i < GS_ARRAY_SIZE(rc->resolved); i++)
		rc->resolved[i] = rc->host.resolved[i];
	rc->sel.filters.containers = rc->resolved;
	rc->sel.filters.containers_exact = true;
	return 1;
}

static void conclude(struct gs_reclaim *rc, enum gs_verdict v, const char *message)
{
	rc->rep.verdict = v;
	rc->rep.exit_status = gs_verdict_exit(v);
	rc->rep.message = message;
}

/* The verdict from what the wait found. */
static void judge(struct gs_reclaim *rc)
{
	const struct gs_verify_result *vr = &rc->vr;

	if (vr->driver_failed && gs_exit_of_error(vr->error, GS_EXIT_DRIVER) != GS_EXIT_DRIVER) {
		/* We ran out of memory, not the driver: the GPUs are not known
		 * to be clean, and nothing points at the driver. */
		snprintf(rc->driver_msg, sizeof(rc->driver_msg), "out of memory: %s", vr->driver_error);
		conclude(rc, GS_VERDICT_NOT_CLEAN, rc->driver_msg);
	} else if (vr->driver_failed) {
		/* The summary (and a Slurm epilog's log line) names the call. */
		snprintf(rc->driver_msg, sizeof(rc->driver_msg), "driver failure: %s", vr->driver_error);
		conclude(rc, GS_VERDICT_DRIVER_FAILURE, rc->driver_msg);
	} else if (vr->interrupted || (rc->rep.stop && rc->rep.stop->interrupted) || interrupted) {
		/* Ctrl-C is its own outcome, not "not clean after 0.0 s": a
		 * script sees 130, as for any command SIGINT ended. */
		conclude(rc, GS_VERDICT_INTERRUPTED,
			 "interrupted: what was stopped so far is listed; the GPUs were not verified");
		if (interrupt_sig > 0)
			rc->rep.exit_status = 128 + interrupt_sig;
	} else if (vr->clean && vr->memory_unverified) {
		conclude(rc, GS_VERDICT_UNVERIFIED,
			 unpolled_drm_gpu(&rc->s, vr)
				 ? "holders gone, but GPU memory could not be verified (an AMD/Intel GPU without a memory"
				   " figure: a DRM client without usage stats, or no figure in sysfs)"
			 : !strcmp(rc->s.gpu_source, "nvml")
				 ? "holders gone, but GPU memory could not be verified (NVML has only v1 memory figures"
				   " and the driver's reservation could not be estimated)"
				 : "holders gone, but GPU memory could not be verified (NVML unusable)");
	} else if (!vr->clean) {
		conclude(rc, GS_VERDICT_NOT_CLEAN, NULL);
	} else if (rc->no_match) {
		conclude(rc, GS_VERDICT_NO_MATCH, rc->no_match_msg);
	} else if (vr->others_hold) {
		/* The selection is gone; the GPUs are not free. */
		conclude(rc, GS_VERDICT_SELECTION_GONE, NULL);
	} else {
		conclude(rc, GS_VERDICT_CLEAN, NULL);
	}
}

/* What this reclaim stopped through a manager, merged into the stopped-state
 * file for `gpuslate restore` (core/stopped.h). Best effort: the GPUs are
 * as clean as they are whether or not the file could be written, but the
 * user is told that restore will not know. Nothing stopped: the file (and
 * an earlier reclaim's records) is left alone. */
static void record_stopped(struct gs_reclaim *rc)
{
	struct gs_stopped set;
	char buf[4096], err[512];
	const char *path = gs_stopped_path(buf, sizeof(buf));
	size_t added = 0;
	int r;

	for (size_t u = 0; u < rc->stop.n_units; u++)
		added += rc->stop.units[u].stopped;
	if (!added)
		return;
	r = gs_stopped_load(path, &set, err, sizeof(err));
	if (r < 0) {
		/* A file we may not trust is not merged into, nor replaced:
		 * someone has to look at it. */
		note(rc, "not recorded for 'gpuslate restore': cannot use '%s': %s", path, err);
		return;
	}
	for (size_t u = 0; u < rc->stop.n_units && r == 0; u++) {
		const struct gs_unit_result *ur = &rc->stop.units[u];
		const struct gs_unit_stop *us = &rc->plan.units[u];
		struct gs_stopped_rec rec = {
			.kind = GS_STOPPED_UNIT,
			.stopped_at = ur->stopped_at,
			.reclaim_at = rc->started_at,
		};

		if (!ur->stopped)
			continue;
		/* A transient unit (systemd-run) is gone once stopped: no
		 * restore could start it again, and a record of it would
		 * fail every restore. */
		if (!us->runtime[0] && !strcmp(ur->enabled_before, "transient")) {
			note(rc, "not recorded for 'gpuslate restore': %s is a transient unit (systemd-run), gone once "
				 "stopped", us->unit);
			continue;
		}
		if (gs_unit_stop_is_supervised(us)) {
			/* A supervised program, stopped only while its tool
			 * named our process as it (stop.c asked). */
			rec.kind = GS_STOPPED_SUPERVISED;
			gs_strlcpy(rec.runtime, us->runtime, sizeof(rec.runtime));
			gs_strlcpy(rec.name, us->unit, sizeof(rec.name));
			gs_strlcpy(rec.control_opt, us->control_opt, sizeof(rec.control_opt));
			gs_strlcpy(rec.control, us->control, sizeof(rec.control));
			gs_strlcpy(rec.state_before, "running", sizeof(rec.state_before));
		} else if (us->runtime[0]) {
			/* A docker/podman container stopped through its runtime,
			 * only while it was running (stop.c asked): its id. */
			rec.kind = GS_STOPPED_CONTAINER;
			gs_strlcpy(rec.runtime, us->runtime, sizeof(rec.runtime));
			gs_strlcpy(rec.id, us->unit, sizeof(rec.id));
			gs_strlcpy(rec.state_before, "running", sizeof(rec.state_before));
		} else {
			gs_strlcpy(rec.runtime, "systemd", sizeof(rec.runtime));
			gs_strlcpy(rec.name, us->unit, sizeof(rec.name));
			gs_strlcpy(rec.container, us->container, sizeof(rec.container));
			gs_strlcpy(rec.state_before, ur->state_before, sizeof(rec.state_before));
			gs_strlcpy(rec.enabled_before, ur->enabled_before, sizeof(rec.enabled_before));
		}
		/* Escaped: the file holds one-line printable text only. */
		if (rc->req->reason)
			gs_safe(rc->req->reason, rec.reason, sizeof(rec.reason));
		if ((rec.kind == GS_STOPPED_CONTAINER && !gs_stopped_name_ok(rec.id, sizeof(rec.id))) ||
		    (rec.kind == GS_STOPPED_UNIT && !gs_stopped_name_ok(rec.name, sizeof(rec.name))) ||
		    (rec.kind == GS_STOPPED_SUPERVISED && (!rec.name[0] || strlen(rec.name) >= sizeof(rec.name) - 1)) ||
		    (rec.container[0] && !gs_unit_scope_is_user(rec.container, NULL) &&
		     !gs_stopped_name_ok(rec.container, sizeof(rec.container)))) {
			note(rc, "not recorded for 'gpuslate restore': unit name '%s' is not one restore would start",
			     us->unit);
			continue;
		}
		r = gs_stopped_add(&set, &rec);
		if (r == 0)
			r = gs_stopped_add(&rc->recorded, &rec);
	}
	if (r == 0)
		r = gs_stopped_save(path, &set);
	if (r < 0) {
		note(rc, "not recorded for 'gpuslate restore': cannot write '%s': %s", path, strerror(-r));
		gs_stopped_free(&rc->recorded);
	}
	gs_stopped_free(&set);
}

/* After the stop: is every target still alive one the kernel refused to
 * let gpuslate signal (another user's, gpuslate not root)? Then waiting
 * out --timeout could only end "not clean": the verdict comes at once. A
 * unit stop that ran has its own processes, gone or not, as outcomes. */
static bool only_denied_remain(const struct gs_stop_result *st)
{
	size_t denied = 0;

	for (size_t i = 0; i < st->n_procs; i++)
		switch (st->procs[i].outcome) {
		case GS_OUT_PERMISSION:
			denied++;
			break;
		case GS_OUT_EXITED_TERM:
		case GS_OUT_KILLED:
		case GS_OUT_STOPPED_WITH_UNIT:
		case GS_OUT_ALREADY_GONE:
		case GS_OUT_PID_REUSED:
			break;
		default:
			return false; /* alive for another reason, or still pending */
		}
	return denied > 0;
}

/* Stop the targets while polling memory, then wait for the release. */
static int stop_and_wait(struct gs_reclaim *rc, const struct gs_request *req, bool acting)
{
	bool wait_mode = req->cmd == GS_CMD_WAIT;
	struct gs_verify_opts vo = {
		.timeout_ms = req->timeout_ms,
		.t0_ns = gs_now_ns(),
		.interrupted = &interrupted,
		.keep_waiting_on_respawn = wait_mode,
		.sel = &rc->sel,
		.old_plan = &rc->plan,
		.before = &rc->s,
	};
	struct tick_ctx tc = { .d = &rc->d, .vo = &vo, .vr = &rc->vr };
	int r;

	r = gs_verify_begin(&rc->d, &vo, &rc->vr);
	if (r < 0)
		return fail(rc, gs_exit_of_error(r, GS_EXIT_DRIVER), "verification failed: %s", strerror(-r));
	if (acting && rc->plan.n_targets) {
		/* Before the stop: the targets' identities go with them. */
		r = build_watch(rc);
		if (r < 0)
			return fail(rc, GS_EXIT_OUT_OF_MEMORY, "out of memory: nothing was stopped");
	}
	if (acting && rc->plan.n_targets) {
		struct gs_stop_opts so = {
			.tick = stop_tick,
			.tick_ud = &tc,
			.tick_ms = 5,
			.grace_ms = req->grace_ms,
			.kill_wait_ms = 5000,
			.unit_timeout_ms = req->grace_ms + 90000,
			.units_bounded = true,
			.units_budget_ms = req->timeout_ms,
			.interrupted = &interrupted,
			.driver_failed = &driver_failed,
			.have_pct = rc->sel.have_pct,
			.root = gs_discover_root(&rc->d),
			.progress = rc->hooks->stop_progress ? stop_progress : NULL,
			.progress_ud = rc,
		};

		r = gs_stop_run(&rc->plan, gs_discover_proc_fd(&rc->d), &so, &rc->stop);
		if (rc->hooks->progress_end)
			rc->hooks->progress_end(rc->hooks->ud);
		if (r < 0)
			return fail(rc, gs_exit_of_error(r, GS_EXIT_DRIVER), "stopping failed: %s", strerror(-r));
		rc->rep.stop = &rc->stop;
		record_stopped(rc);
	}
	/* Decided after the stop: a unit whose stop failed had its processes
	 * signalled, and its manager may restart them. */
	if (acting) {
		bool parents_only = false;

		vo.respawn_watch_ms = respawn_watch(&rc->plan, rc->rep.stop, &rc->s, &rc->pt, rc->d.self,
					      gs_discover_proc_fd(&rc->d), &parents_only);
		/* --respawn-watch: as long as the user's supervisor waits
		 * before a restart, wherever something may restart. */
		if (vo.respawn_watch_ms && req->respawn_watch_ms)
			vo.respawn_watch_ms = req->respawn_watch_ms;
		rc->watch.parents_only = parents_only;
		vo.watch = &rc->watch;
		if (rc->rep.stop && record_managed(rc) < 0)
			return fail(rc, GS_EXIT_OUT_OF_MEMORY, "out of memory after stopping: the GPUs are not verified");
	}
	if (rc->hooks->progress) {
		vo.progress = progress;
		vo.progress_ud = rc;
	}
	if (interrupted) {
		/* Ctrl-C during the stop: report what was done, no waiting. */
		vo.timeout_ms = 0;
	} else if (acting && rc->rep.stop && !wait_mode && only_denied_remain(rc->rep.stop)) {
		vo.timeout_ms = 0;
	}
	r = gs_verify_wait(&rc->d, &vo, &rc->vr);
	if (rc->hooks->progress_end)
		rc->hooks->progress_end(rc->hooks->ud);
	if (r < 0)
		return fail(rc, gs_exit_of_error(r, GS_EXIT_DRIVER), "verification failed: %s", strerror(-r));
	if (acting && rc->vr.clean && !rc->vr.interrupted && check_scheduled_restarts(rc) < 0)
		return fail(rc, GS_EXIT_OUT_OF_MEMORY, "out of memory after stopping: the GPUs are not verified");
	rc->rep.verify = &rc->vr;
	judge(rc);
	return 0;
}

/* Ask before acting; a refusal is the verdict. Returns true to go on. */
static bool confirmed(struct gs_reclaim *rc)
{
	enum gs_confirm c = rc->hooks->confirm ? rc->hooks->confirm(rc->hooks->ud, &rc->plan) : GS_CONFIRM_NO_TERMINAL;

	if (c == GS_CONFIRM_YES)
		return true;
	conclude(rc, GS_VERDICT_REFUSED,
		 c == GS_CONFIRM_NO_TERMINAL ? "refused: no terminal to confirm on; use -y to act without confirmation"
					     : "refused: not confirmed");
	return false;
}

/* --expect: the plan made now, under the lock, against the one a fleet
 * controller showed and had confirmed. A target it did not show, or text
 * that is not an expectation, stops nothing. Returns true to go on. */
static bool plan_as_confirmed(struct gs_reclaim *rc, const struct gs_request *req)
{
	struct gs_expect e;
	char err[512];
	int r = gs_expect_parse(req->expect, &e, err, sizeof(err));

	if (r < 0) {
		fail(rc, gs_exit_of_error(r, GS_EXIT_USAGE), "%s", err);
		return false;
	}
	r = gs_expect_check(&e, &rc->plan, rc->expect_msg, sizeof(rc->expect_msg));
	gs_expect_free(&e);
	if (r == 0)
		return true;
	conclude(rc, GS_VERDICT_PLAN_CHANGED, rc->expect_msg);
	return false;
}

static int run(const struct gs_request *req, struct gs_reclaim *rc)
{
	bool wait_mode = req->cmd == GS_CMD_WAIT;
	bool acting = !wait_mode && !req->dry_run;
	char err[512];
	int r;

	/* The driver first, the lock after: a host without a GPU gets its
	 * exit 3 with nothing written (no /run/gpuslate.lock), and a dry run
	 * takes no lock at all (issue 26). */
	r = gs_request_discover_open(req, &rc->d, err, sizeof(err));
	if (r < 0)
		return fail(rc, r == -ENOENT || r == -ENOTDIR ? GS_EXIT_USAGE : gs_exit_of_error(r, GS_EXIT_DRIVER), "%s", err);
	rc->stage = STAGE_DISCOVER;
	r = gs_snapshot_take(&rc->d, &rc->s);
	if (r < 0 && r != -ENODEV)
		return fail(rc, gs_exit_of_error(r, GS_EXIT_DRIVER), "cannot read GPU state: %s",
			    gs_discover_error(&rc->d)[0] ? gs_discover_error(&rc->d) : strerror(-r));
	rc->stage = STAGE_SNAPSHOT;
	if (r == -ENODEV) {
		gs_request_no_driver(req, &rc->s, rc->error, sizeof(rc->error));
		rc->rep.exit_status = GS_EXIT_DRIVER;
		return 0;
	}
	if (acting) {
		rc->lock_waited = false;
		if (take_lock(rc, req) < 0)
			return 0;
		if (rc->lock_waited) {
			/* Another reclaim ran meanwhile: what it stopped is not
			 * ours to plan from. */
			gs_snapshot_free(&rc->s);
			/* Its memory may have been on its way out when the
			 * driver's reservation was estimated: estimated again. */
			gs_discover_forget_reservations(&rc->d);
			r = gs_snapshot_take(&rc->d, &rc->s);
			if (r < 0)
				return fail(rc, r == -ENODEV ? GS_EXIT_DRIVER : gs_exit_of_error(r, GS_EXIT_DRIVER),
					    "cannot read GPU state: %s",
					    gs_discover_error(&rc->d)[0] ? gs_discover_error(&rc->d) : strerror(-r));
		}
	}
	if (rc->hooks->snapshot_ready)
		rc->hooks->snapshot_ready(rc->hooks->ud, &rc->s);
	r = gs_discover_ptable(&rc->d, &rc->pt);
	if (r < 0)
		return fail(rc, gs_exit_of_error(r, GS_EXIT_DRIVER), "cannot read the process table: %s", strerror(-r));
	gs_request_selection(req, &rc->sel);
	rc->sel.is_pidns_init = gs_discover_is_pidns_init;
	rc->sel.is_pidns_init_ud = &rc->d;
	rc->query = (struct gs_restarter_query){
		.have_pct = rc->sel.have_pct,
		.timeout_ms = req->timeout_ms < 10000 ? req->timeout_ms : 10000,
		.deadline_ms = gs_now_ms() + (req->timeout_ms < 10000 ? req->timeout_ms : 10000),
		.interrupted = &interrupted,
		.proc_fd = gs_discover_proc_fd(&rc->d),
	};
	rc->sel.launch_kind = gs_launch_kind_proc;
	rc->sel.launch_kind_ud = (void *)(intptr_t)gs_discover_proc_fd(&rc->d);
	if (!wait_mode) {
		rc->sel.unit_main_pid = unit_main_pid;
		rc->sel.unit_main_pid_ud = rc;
	}
	if (gs_filters_any(&rc->sel.filters) && apply_filters(rc) == 0)
		return 0;
	r = gs_plan_build(&rc->s, &rc->pt, &rc->sel, rc->d.self, &rc->d.self_owner, &rc->plan, err, sizeof(err));
	if (r < 0)
		return fail(rc, gs_exit_of_error(r, GS_EXIT_USAGE), "%s", err);
	rc->stage = STAGE_PLAN;
	if (!wait_mode && rc->plan.n_targets) {
		r = find_restarters(rc, req);
		if (r < 0) /* only -ENOMEM: nothing was done yet */
			return fail(rc, gs_exit_of_error(r, GS_EXIT_NOT_CLEAN), "out of memory finding what restarts the targets");
	}
	rc->rep.before = &rc->s;
	rc->rep.plan = &rc->plan;
	rc->rep.dry_run = req->dry_run;
	rc->rep.unprivileged = rc->sel.unprivileged;
	rc->rep.unmatched = (const char (*)[320])rc->unmatched;
	/* Nothing on the host passes the filters: a typo, a unit that does not
	 * exist, a pdsh habit (-u 30). Said by name, never "clean". */
	rc->no_match = gs_filters_any(&rc->sel.filters) && !rc->host.any_match && rc->plan.n_targets == 0;
	if (rc->no_match)
		no_match_text(&rc->sel, rc->rep.unmatched, rc->rep.n_unmatched, rc->no_match_msg,
			      sizeof(rc->no_match_msg));
	else
		for (size_t i = 0; i < rc->rep.n_unmatched; i++)
			note(rc, "%s matches no process", rc->unmatched[i]);
	/* wait too: its header says which host and GPUs it waits for. */
	if (rc->hooks->plan_ready)
		rc->hooks->plan_ready(rc->hooks->ud, rc);
	if (!wait_mode && req->dry_run) {
		if (rc->no_match)
			conclude(rc, GS_VERDICT_NO_MATCH, rc->no_match_msg);
		else
			conclude(rc, GS_VERDICT_DRY_RUN, NULL);
		return 0;
	}
	if (acting && req->expect && !plan_as_confirmed(rc, req))
		return 0;
	if (acting && rc->plan.n_targets && !req->yes && !confirmed(rc))
		return 0;
	return stop_and_wait(rc, req, acting);
}

int gs_reclaim_run(const struct gs_request *req, const struct gs_reclaim_hooks *hooks, struct gs_reclaim *rc)
{
	static const struct gs_reclaim_hooks none;
	uint64_t t_start = gs_now_ms();
	int r;

	memset(rc, 0, sizeof(*rc));
	rc->lock_fd = -1;
	rc->hooks = hooks ? hooks : &none;
	rc->req = req;
	rc->rep.command = req->cmd == GS_CMD_WAIT ? "wait" : "reclaim";
	rc->rep.reason = req->reason;
	rc->started_at = (int64_t)time(NULL);
	if (req->cmd != GS_CMD_RECLAIM && req->cmd != GS_CMD_WAIT)
		return -EINVAL;
	install_handlers();
	r = run(req, rc);
	rc->rep.elapsed_ms = gs_now_ms() - t_start;
	return r;
}

bool gs_reclaim_was_interrupted(void)
{
	return interrupted != 0;
}

void gs_reclaim_free(struct gs_reclaim *rc)
{
	gs_verify_result_free(&rc->vr);
	gs_respawn_watch_free(&rc->watch);
	gs_stopped_free(&rc->recorded);
	free(rc->managed);
	rc->managed = NULL;
	rc->n_managed = 0;
	gs_stop_result_free(&rc->stop);
	if (rc->stage >= STAGE_PLAN)
		gs_plan_free(&rc->plan);
	gs_filters_host_free(&rc->host);
	gs_ptable_free(&rc->pt);
	if (rc->stage >= STAGE_SNAPSHOT)
		gs_snapshot_free(&rc->s);
	if (rc->stage >= STAGE_DISCOVER)
		gs_discover_close(&rc->d);
	if (rc->lock_fd >= 0)
		close(rc->lock_fd);
	rc->lock_fd = -1;
	rc->stage = STAGE_NONE;
}

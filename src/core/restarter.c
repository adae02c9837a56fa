/* Restarters: what would bring a target back. See restarter.h. */
#include "core/restarter.h"
#include "core/plan.h"
#include "core/protect.h"
#include "core/snapshot.h"
#include "proc/launcher.h"
#include "proc/owner.h"
#include "proc/ptable.h"
#include "util/spawn.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *gs_restarter_kind_str(enum gs_restarter_kind k)
{
	switch (k) {
	case GS_RESTARTER_UNIT: return "unit";
	case GS_RESTARTER_CONTAINER: return "container";
	case GS_RESTARTER_POD: return "pod";
	case GS_RESTARTER_PARENT: return "parent";
	case GS_RESTARTER_SUPERVISOR: return "supervisor";
	}
	return "unknown";
}

const char *gs_restarter_handling_str(enum gs_restarter_handling h)
{
	switch (h) {
	case GS_HANDLE_UNIT_STOP: return "stopped through systemd";
	case GS_HANDLE_RUNTIME_STOP: return "stopped through its runtime";
	case GS_HANDLE_WATCHED: return "watched";
	case GS_HANDLE_PARENT_STOP: return "stopped (--include-parent)";
	case GS_HANDLE_REPORTED: return "reported only";
	case GS_HANDLE_SUPERVISOR_STOP: return "stopped through its supervisor";
	}
	return "unknown";
}

int gs_timespan_ms(const char *text, uint64_t *ret)
{
	/* systemd's units, longest first where one is a prefix of another. */
	static const struct { const char *u; double ms; } units[] = {
		{ "usec", 0.001 }, { "us", 0.001 }, { "msec", 1 }, { "ms", 1 }, { "seconds", 1000 },
		{ "second", 1000 }, { "sec", 1000 }, { "s", 1000 }, { "minutes", 60000 }, { "minute", 60000 },
		{ "min", 60000 }, { "m", 60000 }, { "hours", 3600000 }, { "hour", 3600000 }, { "hr", 3600000 },
		{ "h", 3600000 }, { "days", 86400000 }, { "day", 86400000 }, { "d", 86400000 },
	};
	const char *p = text;
	double total = 0;
	bool any = false;

	while (isspace((unsigned char)*p))
		p++;
	if (!strcmp(p, "infinity")) {
		*ret = UINT64_MAX;
		return 0;
	}
	while (*p) {
		char *end;
		double v;
		size_t k;

		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		v = strtod(p, &end);
		p = end;
		while (*p == ' ')
			p++;
		for (k = 0; k < GS_ARRAY_SIZE(units); k++) {
			size_t l = strlen(units[k].u);

			if (!strncmp(p, units[k].u, l) && !isalpha((unsigned char)p[l])) {
				p += l;
				break;
			}
		}
		/* A bare number is seconds, as systemd reads it. */
		total += v * (k < GS_ARRAY_SIZE(units) ? units[k].ms : 1000);
		any = true;
	}
	if (!any || total > 1e15)
		return -EINVAL;
	*ret = (uint64_t)total;
	return 0;
}

/* A shell is one a person types into when it is a login shell (argv[0]
 * begins with '-'), was started with -i, or has neither -c nor a script
 * and reads a terminal. A shell that runs -c, a script, or commands from a
 * pipe is running a program: a `while true` loop looks exactly like that.
 * Options that take a word (-o, +o, -O, --rcfile, --init-file) skip it. */
bool gs_restarter_is_interactive_shell(const char *comm, const char *cmdline, const char *stdin_target)
{
	char buf[1024], *save = NULL, *w;
	bool first = true, skip_next = false;

	if (cmdline[0] == '-')
		return true;
	if (!gs_shell_name(comm))
		return false;
	gs_strlcpy(buf, cmdline, sizeof(buf));
	for (w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (first) {
			first = false;
			continue;
		}
		if (skip_next) {
			skip_next = false;
			continue;
		}
		if (!strcmp(w, "--rcfile") || !strcmp(w, "--init-file")) {
			skip_next = true;
			continue;
		}
		if (!strcmp(w, "--"))
			return false; /* a script follows, or nothing: not typed into */
		if (gs_startswith(w, "--"))
			continue;
		if (w[0] == '-' || w[0] == '+') {
			if (w[0] == '-' && strchr(w + 1, 'i'))
				return true;
			if (strchr(w + 1, 'c'))
				return false;
			if (strchr(w + 1, 'o') || strchr(w + 1, 'O'))
				skip_next = true;
			continue;
		}
		return false; /* a script */
	}
	return stdin_target && (gs_startswith(stdin_target, "/dev/pts/") || gs_startswith(stdin_target, "/dev/tty") ||
				!strcmp(stdin_target, "/dev/console"));
}

static int add_restarter(struct gs_plan *p, const struct gs_restarter *r)
{
	struct gs_restarter *n;

	for (size_t i = 0; i < p->n_restarters; i++) {
		const struct gs_restarter *o = &p->restarters[i];

		if (o->kind == r->kind && !strcmp(o->name, r->name) && !strcmp(o->container, r->container) &&
		    o->pid == r->pid)
			return (int)i;
	}
	n = realloc(p->restarters, (p->n_restarters + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->restarters = n;
	n[p->n_restarters] = *r;
	return (int)p->n_restarters++;
}

static bool holds_outside(const struct gs_holder *h, const struct gs_gpuset *sel)
{
	return gs_set256_outside(h->gpus.bits, sel->bits) || gs_set256_outside(h->nvml_gpus.bits, sel->bits);
}

/* Is path the cgroup dir or below it? */
static bool cgroup_below(const char *path, const char *dir)
{
	size_t len = strlen(dir);

	return len > 1 && !strncmp(path, dir, len) && (path[len] == '\0' || path[len] == '/');
}

/* Stopping a container ends every process in it: only when every GPU
 * holder in it is a target on the selected GPUs only (as for a unit), and
 * every holder's owner could be read. */
static bool container_stop_is_contained(const struct gs_plan *p, const struct gs_snapshot *s, const struct gs_owner *co)
{
	if (!s->holders)
		return false; /* nothing known of who else is inside: not proven */
	for (size_t i = 0; i < s->n_holders; i++) {
		const struct gs_holder *o = &s->holders[i];

		if (!o->alive)
			continue;
		if (!o->info_ok)
			return false;
		/* In it by name, or below its cgroup (a container nested in it,
		 * named after the innermost one, ends with it too). */
		if ((o->info.owner.kind != co->kind || strcmp(o->info.owner.name, co->name)) &&
		    !cgroup_below(o->info.owner.cgroup, co->cgroup))
			continue;
		if (!gs_plan_find_target(p, o->pid) || holds_outside(o, &p->gpus))
			return false;
	}
	return true;
}

/* The unit's restart policy, asked once per unit (cache of the answers). */
struct unit_answer {
	char unit[256], container[256];
	int r;
	struct gs_unit_props props;
};

static int unit_props_cached(const struct gs_restarter_env *env, struct unit_answer *cache, size_t *n, size_t max,
			     const char *unit, const char *container, const struct gs_unit_props **ret)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(cache[i].unit, unit) && !strcmp(cache[i].container, container)) {
			*ret = &cache[i].props;
			return cache[i].r;
		}
	if (*n == max || !env->unit_props)
		return -ENOSPC;
	{
		struct unit_answer *a = &cache[(*n)++];

		memset(a, 0, sizeof(*a));
		gs_strlcpy(a->unit, unit, sizeof(a->unit));
		gs_strlcpy(a->container, container, sizeof(a->container));
		a->r = env->unit_props(env->unit_ud, unit, container, &a->props);
		*ret = &a->props;
		return a->r;
	}
}

/* The unit restarter of target t (owner o), when its manager restarts it
 * and the manager's unit of that name is the cgroup the target is in. */
static bool unit_restarter(const struct gs_restarter_env *env, struct unit_answer *cache, size_t *n_cache,
			   size_t max_cache, const struct gs_owner *o, struct gs_restarter *ret)
{
	const char *unit = o->kind == GS_OWNER_LXC ? o->unit : o->name;
	char scope[32] = "";
	/* A user's unit is asked of (and stopped through) that user's manager. */
	const char *ct = o->kind == GS_OWNER_LXC ? o->name
			 : o->kind == GS_OWNER_USER_UNIT ? gs_unit_scope_user(scope, sizeof(scope), o->uid) : "";
	const struct gs_unit_props *up;
	char cg[1024];

	if ((o->kind != GS_OWNER_UNIT && o->kind != GS_OWNER_LXC && o->kind != GS_OWNER_USER_UNIT) ||
	    !gs_endswith(unit, ".service") || o->delegated || gs_owner_unit_cgroup(o, cg, sizeof(cg)) < 0)
		return false;
	if (unit_props_cached(env, cache, n_cache, max_cache, unit, ct, &up) < 0) {
		/* Its manager cannot be asked (a user's manager out of reach,
		 * systemctl failing): it may restart what is killed in it, as
		 * fast as systemd's default (100 ms). Not knowing is no "no":
		 * its cgroup is watched as a restarting unit's. A CT's unit
		 * without pct or lxc-attach is a CT's: its own watch. */
		if (o->kind == GS_OWNER_LXC)
			return false;
		memset(ret, 0, sizeof(*ret));
		ret->kind = GS_RESTARTER_UNIT;
		gs_strlcpy(ret->name, unit, sizeof(ret->name));
		gs_strlcpy(ret->container, ct, sizeof(ret->container));
		gs_strlcpy(ret->policy, "unknown", sizeof(ret->policy));
	} else {
		if (!up->restart[0] || !strcmp(up->restart, "no") || strcmp(up->control_group, cg))
			return false;
		memset(ret, 0, sizeof(*ret));
		ret->kind = GS_RESTARTER_UNIT;
		gs_strlcpy(ret->name, unit, sizeof(ret->name));
		gs_strlcpy(ret->container, ct, sizeof(ret->container));
		gs_strlcpy(ret->policy, up->restart, sizeof(ret->policy));
		ret->restart_ms = up->restart_ms;
		ret->pid = up->main_pid;
	}
	/* Not stopped through systemd: --no-units said so, or a process of
	 * the unit was left out of the selection (--unit takes them all). */
	if (env->no_units)
		snprintf(ret->stop_with, sizeof(ret->stop_with), "a reclaim without --no-units");
	else
		snprintf(ret->stop_with, sizeof(ret->stop_with), "--unit %.250s", unit);
	return true;
}

/* The owner's cgroup path of a process, from its /proc/PID/cgroup text. */
static int cgroup_of(const struct gs_restarter_env *env, pid_t pid, struct gs_owner *ret)
{
	char text[4096];
	int r;

	if (!env->read_cgroup)
		return -ENOSYS;
	r = env->read_cgroup(env->ud, pid, text, sizeof(text));
	if (r < 0)
		return r;
	return gs_owner_from_cgroup(text, ret);
}

/* Would stopping parent par end a GPU holder that stays: par holds a GPU
 * itself (left alone, or a target's parent that also holds another GPU),
 * or a holder that is not a target descends from it (a supervisor ends its
 * other workers on SIGTERM; an orphaned kernel or rank exits with it).
 * *ret_pid names one. A holder whose identity is unknown counts. */
static bool parent_end_ends_a_holder(const struct gs_plan *p, const struct gs_snapshot *s,
				     const struct gs_ptable *pt, const struct gs_pidstat *par, pid_t *ret_pid)
{
	for (size_t i = 0; s && i < s->n_holders; i++) {
		const struct gs_holder *h = &s->holders[i];

		if (!h->alive)
			continue;
		if (h->pid == par->pid ||
		    (!gs_plan_find_target(p, h->pid) && gs_ptable_is_ancestor(pt, par->pid, h->pid))) {
			*ret_pid = h->pid;
			return true;
		}
	}
	return false;
}

/* Launchers whose child is a job's or a session's main process: ending
 * that child ends the job (Slurm ends a batch job whose script exits). */
static bool is_job_launcher(const char *comm)
{
	return !strcmp(comm, "slurmstepd");
}

/* Is par the unit's main process as far as its end goes: the manager's
 * child, or below it through launchers and shells only (`timeout 1d
 * SUPERVISOR`, `bash -c 'cd /x; SUPERVISOR'`), which end when par ends and
 * take the unit with them (its manager then stops it, killing every
 * process in it). A chain longer than any real one counts: the safe way. */
static bool ends_unit_main(const struct gs_ptable *pt, const struct gs_restarter_env *env,
			   const struct gs_pidstat *par)
{
	const struct gs_pidstat *st = par;

	for (int depth = 0; st && depth < 64; depth++) {
		const struct gs_pidstat *gp;

		if (st->ppid <= 1)
			return true;
		gp = gs_ptable_find(pt, st->ppid);
		if (!gp)
			return false;
		if (!strcmp(gp->comm, "systemd"))
			return true;
		if (is_job_launcher(gp->comm) || gs_launch_kind_ask(env->launch_kind, env->launch_ud, gp) == GS_LAUNCH_NONE)
			return false;
		st = gp;
	}
	return true;
}

/* Is par, the live parent of target t (above any launchers), a supervisor
 * that would start it again? Not PID 1 or a namespace's init, not systemd,
 * not a target, not gpuslate's ancestor (the shell that ran gpuslate), not
 * a protected daemon or a launcher that starts once (sudo, slurmstepd), not
 * in another cgroup (a container's shim, a service manager: their restarts
 * are the container's or unit's policy), not a shell a person types into.
 * *ret_interactive: par passed every test but the last, it is a shell a
 * person types into (not a supervisor, but watched: see gs_target). */
static bool supervising_parent(const struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
			       const struct gs_restarter_env *env, const struct gs_pidstat *par,
			       const struct gs_owner *child_owner, bool *ret_stoppable, bool *ret_interactive,
			       char *stop_with, size_t stop_len)
{
	pid_t ends = 0;
	const struct gs_pidstat *gp;
	struct gs_owner po;
	char *cmd = NULL, in[256] = "";
	bool interactive;

	if (par->pid <= 1 || gs_pidstat_is_kthread(par) || gs_plan_find_target(p, par->pid) ||
	    gs_ptable_is_ancestor(pt, par->pid, env->self) || !strcmp(par->comm, "systemd") ||
	    gs_is_protected_name(par->comm, NULL) ||
	    gs_launch_kind_ask(env->launch_kind, env->launch_ud, par) == GS_LAUNCH_LAUNCHER)
		return false;
	if (env->is_pidns_init && env->is_pidns_init(env->pidns_ud, par->pid, par->starttime) != 0)
		return false;
	if (cgroup_of(env, par->pid, &po) < 0 || strcmp(po.cgroup, child_owner->cgroup))
		return false;
	if (!env->read_cmdline || env->read_cmdline(env->ud, par->pid, &cmd) < 0)
		return false;
	if (env->read_stdin)
		(void)env->read_stdin(env->ud, par->pid, in, sizeof(in));
	interactive = gs_restarter_is_interactive_shell(par->comm, cmd, in);
	free(cmd);
	*ret_interactive = interactive;
	if (interactive)
		return false;
	/* A service's main process (the manager's child, or its child through
	 * launchers and shells): ending it stops the unit, or makes the
	 * manager restart it; the unit is what to stop. */
	gp = gs_ptable_find(pt, par->ppid);
	*ret_stoppable = true;
	snprintf(stop_with, stop_len, "--include-parent");
	if (po.unit_cg_len && ends_unit_main(pt, env, par)) {
		*ret_stoppable = false;
		if (po.kind == GS_OWNER_UNIT || po.kind == GS_OWNER_USER_UNIT)
			snprintf(stop_with, stop_len, "--unit %.250s", po.name);
		else
			snprintf(stop_with, stop_len, "stopping the service that runs it");
	} else if (gp && is_job_launcher(gp->comm)) {
		/* A batch script: its end ends the job, every step with it. */
		*ret_stoppable = false;
		snprintf(stop_with, stop_len, "scancel (it is the job's batch script)");
	} else if (parent_end_ends_a_holder(p, s, pt, par, &ends)) {
		/* Watched only: --include-parent would end a holder that stays. */
		*ret_stoppable = false;
		snprintf(stop_with, stop_len, "nothing gpuslate will do: its end would end GPU holder %d, which stays",
			 (int)ends);
	}
	return true;
}

#define MAX_WRAPPERS 16

/* The parent goes first: stopped before its children, it cannot start one
 * again in the grace period. */
static int add_parent_target(struct gs_plan *p, const struct gs_pidstat *par, pid_t child, int ridx)
{
	struct gs_target t = {
		.pid = par->pid, .starttime = par->starttime, .holder = -1, .action = GS_ACT_SIGNAL,
		.why = GS_WHY_PARENT, .why_pid = child, .unit = -1, .restarter = ridx, .term = GS_TERM_UNKNOWN,
	};
	struct gs_target *n = realloc(p->targets, (p->n_targets + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	gs_strlcpy(t.comm, par->comm, sizeof(t.comm));
	memmove(n + 1, n, p->n_targets * sizeof(*n));
	n[0] = t;
	p->targets = n;
	p->n_targets++;
	return 0;
}

static int container_restarter(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_restarter_env *env,
			       const struct gs_owner *o, struct gs_restarter *ret, bool *ret_contained)
{
	const char *rt = o->kind == GS_OWNER_DOCKER ? "docker" : "podman";
	char policy[64] = "";

	if (!env->container_policy || env->container_policy(env->container_ud, rt, o->name, policy, sizeof(policy)) < 0 ||
	    !policy[0] || !strcmp(policy, "no"))
		return 0;
	memset(ret, 0, sizeof(*ret));
	ret->kind = GS_RESTARTER_CONTAINER;
	gs_strlcpy(ret->name, o->name, sizeof(ret->name));
	gs_strlcpy(ret->runtime, rt, sizeof(ret->runtime));
	gs_strlcpy(ret->policy, policy, sizeof(ret->policy));
	snprintf(ret->stop_with, sizeof(ret->stop_with), "%s stop %.12s", rt, o->name);
	*ret_contained = container_stop_is_contained(p, s, o);
	return 1;
}

/* Targets in container o are stopped through the runtime: one stop entry. */
static int stop_through_runtime(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_owner *o,
				const char *runtime)
{
	struct gs_unit_stop u = { 0 };
	int idx = -1;

	for (size_t i = 0; i < p->n_units; i++)
		if (!strcmp(p->units[i].runtime, runtime) && !strcmp(p->units[i].unit, o->name))
			idx = (int)i;
	if (idx < 0) {
		struct gs_unit_stop *n = realloc(p->units, (p->n_units + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		gs_strlcpy(u.unit, o->name, sizeof(u.unit));
		gs_strlcpy(u.cgroup, o->cgroup, sizeof(u.cgroup));
		gs_strlcpy(u.runtime, runtime, sizeof(u.runtime));
		n[p->n_units] = u;
		p->units = n;
		idx = (int)p->n_units++;
	}
	for (size_t i = 0; i < p->n_targets; i++) {
		struct gs_target *t = &p->targets[i];
		const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;

		if (h && h->info_ok && h->info.owner.kind == o->kind && !strcmp(h->info.owner.name, o->name)) {
			t->action = GS_ACT_STOP_CONTAINER;
			t->unit = idx;
		}
	}
	return 0;
}

/* A parent that is itself a target is signalled before its children: it
 * cannot start one again in the grace period. Each target moves before
 * the first of its descendants that comes earlier; nothing else moves (an
 * ancestor already placed is before all of its descendants). */
struct pid_pos {
	pid_t pid;
	size_t pos;
};

static int pid_pos_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct pid_pos *)a)->pid, y = ((const struct pid_pos *)b)->pid;

	return (x > y) - (x < y);
}

/* Does some target come before one of its ancestors that is a target?
 * (Seldom: holders are planned in PID order.) A walk up from each target
 * with a sorted index: no quadratic pass over thousands of targets. */
static int any_child_first(const struct gs_plan *p, const struct gs_ptable *pt, bool *ret)
{
	struct pid_pos *ix = calloc(p->n_targets ? p->n_targets : 1, sizeof(*ix));

	*ret = false;
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_targets; i++)
		ix[i] = (struct pid_pos){ p->targets[i].pid, i };
	qsort(ix, p->n_targets, sizeof(*ix), pid_pos_cmp);
	for (size_t i = 0; i < p->n_targets && !*ret; i++) {
		const struct gs_pidstat *st = gs_ptable_find(pt, p->targets[i].pid);

		for (int depth = 0; st && st->ppid > 1 && st->ppid != st->pid && depth < 4096 && !*ret; depth++) {
			struct pid_pos key = { st->ppid, 0 }, *hit = bsearch(&key, ix, p->n_targets, sizeof(*ix), pid_pos_cmp);

			*ret = hit && hit->pos > i;
			st = gs_ptable_find(pt, st->ppid);
		}
	}
	free(ix);
	return 0;
}

static int parents_before_children(struct gs_plan *p, const struct gs_ptable *pt)
{
	bool needed;
	int r = any_child_first(p, pt, &needed);

	if (r < 0 || !needed)
		return r;
	for (size_t i = 1; i < p->n_targets; i++) {
		struct gs_target t = p->targets[i];
		size_t k = 0;

		while (k < i && !(p->targets[k].pid != t.pid && gs_ptable_is_ancestor(pt, t.pid, p->targets[k].pid)))
			k++;
		if (k == i)
			continue;
		memmove(&p->targets[k + 1], &p->targets[k], (i - k) * sizeof(t));
		p->targets[k] = t;
	}
	return 0;
}

/* The tool's words that stop the program for good: the plan's and a
 * respawn's advice. */
static void supervised_stop_with(const struct gs_supervised *sv, char *buf, size_t len)
{
	/* A program its supervisor runs under a name we could not read. */
	if (!sv->name[0]) {
		snprintf(buf, len, "%s (the program running PID %d)",
			 sv->kind == GS_SUP_SUPERVISORD ? "supervisorctl stop" :
			 sv->kind == GS_SUP_RUNIT	? "sv down" : "s6-svc -d",
			 (int)sv->main_pid);
		return;
	}
	switch (sv->kind) {
	case GS_SUP_SUPERVISORD:
		snprintf(buf, len, "supervisorctl %s %.180s stop %.100s", sv->control_opt, sv->control, sv->name);
		return;
	case GS_SUP_RUNIT:
		snprintf(buf, len, "sv down %.250s", sv->name);
		return;
	case GS_SUP_S6:
		snprintf(buf, len, "s6-svc -d %.250s", sv->name);
		return;
	case GS_SUP_NONE:
		break;
	}
	buf[0] = '\0';
}

/* Stopping the program ends it and, as its supervisor may (supervisord's
 * killasgroup, a run script's process group), what it started: only when
 * that takes nothing the selection leaves alone. */
static bool supervised_stop_is_contained(const struct gs_plan *p, const struct gs_snapshot *s,
					 const struct gs_ptable *pt, const struct gs_supervised *sv)
{
	const struct gs_pidstat *m = gs_ptable_find(pt, sv->main_pid);

	if (!m)
		return false;
	for (size_t i = 0; s && i < s->n_holders; i++) {
		const struct gs_holder *h = &s->holders[i];
		const struct gs_pidstat *hs = gs_ptable_find(pt, h->pid);

		/* Below the program, or in its process group or session
		 * (supervisord's stopasgroup/killasgroup signal the group; an
		 * orphaned worker stays in it): its stop may end them. */
		if (!h->alive || (h->pid != sv->main_pid && !gs_ptable_is_ancestor(pt, sv->main_pid, h->pid) &&
				  !(hs && (hs->pgrp == m->pgrp || hs->session == m->session))))
			continue;
		if (!gs_plan_find_target(p, h->pid) || holds_outside(h, &p->gpus))
			return false;
	}
	return true;
}

/* A program that serves the whole host (sshd, cron, a getty, a display
 * manager: what gs_unit_is_infrastructure names for units), found above a
 * GPU job in one of its sessions: never stopped for it. Also any program
 * the job reached through a new session (a login under it). */
static bool supervised_is_infrastructure(const struct gs_ptable *pt, const struct gs_supervised *sv)
{
	static const char *const hosts[] = { "sshd", "dropbear", "cron", "crond", "atd", "agetty", "getty", "login",
					     "dbus-daemon", "slurmd", "munged", "dockerd", "containerd", "gdm",
					     "sddm", "lightdm", "Xorg", "nv-hostengine", "nvidia-persistenced" };
	const struct gs_pidstat *m = gs_ptable_find(pt, sv->main_pid);
	const char *base = strrchr(sv->name, '/');
	char unit[300];

	if (!m)
		return true;
	for (size_t i = 0; i < GS_ARRAY_SIZE(hosts); i++)
		if (!strcmp(m->comm, hosts[i]) || (base && !strcmp(base + 1, hosts[i])))
			return true;
	snprintf(unit, sizeof(unit), "%s.service", base ? base + 1 : sv->name);
	return gs_unit_is_infrastructure(unit);
}

/* The stop entry of the program (one per program, whatever number of its
 * processes are targets). */
static int supervised_entry(struct gs_plan *p, const struct gs_supervised *sv)
{
	const char *rt = gs_sup_kind_str(sv->kind);
	struct gs_unit_stop u = { 0 }, *n;

	for (size_t i = 0; i < p->n_units; i++)
		if (!strcmp(p->units[i].runtime, rt) && !strcmp(p->units[i].unit, sv->name) &&
		    !strcmp(p->units[i].control, sv->control))
			return (int)i;
	gs_strlcpy(u.unit, sv->name, sizeof(u.unit));
	gs_strlcpy(u.runtime, rt, sizeof(u.runtime));
	gs_strlcpy(u.control_opt, sv->control_opt, sizeof(u.control_opt));
	gs_strlcpy(u.control, sv->control, sizeof(u.control));
	u.main_pid = sv->main_pid;
	u.main_starttime = sv->main_starttime;
	n = realloc(p->units, (p->n_units + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	n[p->n_units] = u;
	p->units = n;
	return (int)p->n_units++;
}

/* A target that a process supervisor runs: its program is stopped through
 * the supervisor's tool when that is contained and allowed, else the
 * supervisor is watched (never stopped: it runs other programs too, which
 * is also why its own unit is never the one to stop). */
static int supervised_restarter(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
				const struct gs_restarter_env *env, size_t i, const struct gs_supervised *sv)
{
	struct gs_target *t = &p->targets[i];
	struct gs_restarter rs = { 0 };
	/* As root, only a supervisor that runs as root: a user's runsv or
	 * supervisord keeps its files where the user may point them at
	 * another service's control pipe or socket. */
	bool stop = sv->name[0] && !env->no_units && sv->main_pid != env->self && !gs_ptable_is_ancestor(pt, sv->main_pid, env->self) &&
		    (env->unprivileged ? sv->sup_uid == env->uid : sv->sup_uid == 0) &&
		    !supervised_is_infrastructure(pt, sv) && supervised_stop_is_contained(p, s, pt, sv);
	int ri, u;

	rs.kind = GS_RESTARTER_SUPERVISOR;
	rs.handling = stop ? GS_HANDLE_SUPERVISOR_STOP : GS_HANDLE_WATCHED;
	gs_strlcpy(rs.name, sv->name, sizeof(rs.name));
	gs_strlcpy(rs.runtime, gs_sup_kind_str(sv->kind), sizeof(rs.runtime));
	gs_strlcpy(rs.policy, "always", sizeof(rs.policy));
	rs.pid = sv->sup_pid;
	rs.starttime = sv->sup_starttime;
	supervised_stop_with(sv, rs.stop_with, sizeof(rs.stop_with));
	ri = add_restarter(p, &rs);
	if (ri < 0)
		return ri;
	t->restarter = ri;
	if (!stop) {
		if (t->action == GS_ACT_STOP_UNIT) {
			t->action = GS_ACT_SIGNAL;
			t->unit = -1;
		}
		return 0;
	}
	u = supervised_entry(p, sv);
	if (u < 0)
		return u;
	t->action = GS_ACT_STOP_SUPERVISED;
	t->unit = u;
	return 0;
}

/* Unit stops no target uses any more (a supervised program's unit was its
 * supervisor's): dropped, the targets' indices kept right. */
static void drop_unused_units(struct gs_plan *p)
{
	size_t w = 0;

	for (size_t u = 0; u < p->n_units; u++) {
		bool used = false;

		for (size_t i = 0; i < p->n_targets && !used; i++)
			used = p->targets[i].unit == (int)u;
		if (!used)
			continue;
		for (size_t i = 0; i < p->n_targets; i++)
			if (p->targets[i].unit == (int)u)
				p->targets[i].unit = (int)w;
		if (w != u)
			p->units[w] = p->units[u];
		w++;
	}
	p->n_units = w;
}

#define UNIT_CACHE 16

/* A parent stopped with the targets (--include-parent), once each. */
struct parent_stop {
	pid_t pid;
	int r; /* its restarter */
};

static int note_parent(struct parent_stop **list, size_t *n, pid_t pid, int r)
{
	struct parent_stop *nl;

	for (size_t k = 0; k < *n; k++)
		if ((*list)[k].pid == pid)
			return 0;
	nl = realloc(*list, (*n + 1) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	*list = nl;
	nl[*n].pid = pid;
	nl[(*n)++].r = r;
	return 0;
}

/* The restarter among target st's ancestors: the nearest one that
 * outlives its children's exits. Launchers end with their program, and so
 * may a shell that runs a script or -c (a wrapper that runs python without
 * exec): both are looked through. The first ancestor above them that is
 * a program of its own and a supervising_parent is the supervisor, the
 * shells passed on the way its wrappers; when the walk ends at anything
 * else (an interactive shell, systemd, init, another cgroup, an ancestor
 * of gpuslate), the outermost of those shells is the supervisor (it is
 * the loop, or the wrapper whose end ends the job), the ones below it its
 * wrappers. An interactive shell that ends the walk is *ret_shell (watched,
 * never stopped: a `while true` typed at it). NULL when there is none. */
static const struct gs_pidstat *find_supervisor(const struct gs_plan *p, const struct gs_snapshot *s,
						const struct gs_ptable *pt, const struct gs_restarter_env *env,
						const struct gs_pidstat *st, const struct gs_owner *own,
						bool *ret_stoppable, const struct gs_pidstat **ret_shell, char *stop_with,
						size_t stop_len, const struct gs_pidstat **wrappers, size_t *n_wrappers)
{
	const struct gs_pidstat *cur = gs_launcher_skip(pt, st->ppid, env->launch_kind, env->launch_ud);
	const struct gs_pidstat *found[MAX_WRAPPERS];
	bool found_stoppable = false;
	char found_stop_with[320] = "";
	size_t n = 0;

	*ret_shell = NULL;
	*n_wrappers = 0;
	while (cur && n < MAX_WRAPPERS) {
		bool shell = gs_launch_kind_ask(env->launch_kind, env->launch_ud, cur) == GS_LAUNCH_SHELL;
		bool stoppable = false, interactive = false;
		char sw[320];

		if (!supervising_parent(p, s, pt, env, cur, own, &stoppable, &interactive, sw, sizeof(sw))) {
			if (interactive)
				*ret_shell = cur;
			break;
		}
		if (!shell) {
			/* A program of its own: the supervisor. */
			for (size_t k = 0; k < n; k++)
				wrappers[k] = found[k];
			*n_wrappers = n;
			*ret_stoppable = stoppable;
			gs_strlcpy(stop_with, sw, stop_len);
			return cur;
		}
		found[n++] = cur;
		found_stoppable = stoppable;
		gs_strlcpy(found_stop_with, sw, sizeof(found_stop_with));
		cur = gs_launcher_skip(pt, cur->ppid, env->launch_kind, env->launch_ud);
	}
	if (!n)
		return NULL;
	for (size_t k = 0; k + 1 < n; k++)
		wrappers[k] = found[k];
	*n_wrappers = n - 1;
	*ret_stoppable = found_stoppable;
	gs_strlcpy(stop_with, found_stop_with, stop_len);
	return found[n - 1];
}

int gs_restarters_plan(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
		       const struct gs_restarter_env *env)
{
	struct unit_answer *cache = calloc(UNIT_CACHE, sizeof(*cache));
	size_t n_cache = 0, n0 = p->n_targets;
	struct parent_stop *parents = NULL;
	size_t n_parents = 0;
	int r = 0;

	if (!cache) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n0 && r >= 0; i++) {
		struct gs_target *t = &p->targets[i];
		const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;
		const struct gs_pidstat *st = gs_ptable_find(pt, t->pid);
		const struct gs_pidstat *par;
		struct gs_owner own = { 0 };
		struct gs_restarter rs;
		const struct gs_pidstat *wrappers[MAX_WRAPPERS], *shell = NULL;
		size_t n_wrappers = 0;
		bool have_unit = false, stoppable = false;

		if (env->supervised && t->why != GS_WHY_PARENT) {
			struct gs_supervised sv;
			int k = env->supervised(env->supervised_ud, pt, t->pid, &sv);

			if (k < 0) {
				r = k;
				break;
			}
			if (k == 1 || k == 2) {
				r = supervised_restarter(p, s, pt, env, i, &sv);
				continue;
			}
		}
		if (h && h->info_ok)
			own = h->info.owner;
		else if (cgroup_of(env, t->pid, &own) < 0)
			continue; /* nothing known of it */
		if (own.kind == GS_OWNER_DOCKER || own.kind == GS_OWNER_PODMAN) {
			bool contained = false;
			int c = container_restarter(p, s, env, &own, &rs, &contained);

			if (c <= 0)
				continue;
			rs.handling = contained ? GS_HANDLE_RUNTIME_STOP : GS_HANDLE_WATCHED;
			r = add_restarter(p, &rs);
			if (r >= 0)
				p->targets[i].restarter = r;
			if (r >= 0 && contained)
				r = stop_through_runtime(p, s, &own, rs.runtime);
			continue;
		}
		if (own.kind == GS_OWNER_KUBERNETES) {
			memset(&rs, 0, sizeof(rs));
			rs.kind = GS_RESTARTER_POD;
			rs.handling = GS_HANDLE_REPORTED;
			gs_strlcpy(rs.name, own.name, sizeof(rs.name));
			snprintf(rs.stop_with, sizeof(rs.stop_with),
				 "kubectl delete pod (the pod with UID %.64s; its kubelet restarts its containers), "
				 "or scale its controller down",
				 own.name);
			r = add_restarter(p, &rs);
			if (r >= 0)
				t->restarter = r;
			continue;
		}
		have_unit = unit_restarter(env, cache, &n_cache, UNIT_CACHE, &own, &rs);
		if (have_unit && t->action == GS_ACT_STOP_UNIT) {
			rs.handling = GS_HANDLE_UNIT_STOP;
			r = add_restarter(p, &rs);
			if (r >= 0)
				t->restarter = r;
			continue;
		}
		/* The loop restarts the launcher or the wrapper script, and
		 * that the target. */
		par = st ? find_supervisor(p, s, pt, env, st, &own, &stoppable, &shell, rs.stop_with,
					   sizeof(rs.stop_with), wrappers, &n_wrappers)
			 : NULL;
		if (shell)
			t->shell_parent = shell->pid;
		if (par) {
			char stop_with[320];

			gs_strlcpy(stop_with, rs.stop_with, sizeof(stop_with));
			memset(&rs, 0, sizeof(rs));
			rs.kind = GS_RESTARTER_PARENT;
			gs_strlcpy(rs.name, par->comm, sizeof(rs.name));
			gs_strlcpy(rs.stop_with, stop_with, sizeof(rs.stop_with));
			rs.pid = par->pid;
			rs.starttime = par->starttime;
			rs.handling = env->include_parent && stoppable ? GS_HANDLE_PARENT_STOP : GS_HANDLE_WATCHED;
			r = add_restarter(p, &rs);
			if (r < 0)
				break;
			p->targets[i].restarter = r;
			/* The supervisor, then the wrapper scripts between it
			 * and the target: each would only start the job again
			 * once more, or hold the GPU's job open. */
			if (rs.handling == GS_HANDLE_PARENT_STOP) {
				r = note_parent(&parents, &n_parents, par->pid, r);
				for (size_t w = 0; w < n_wrappers && r >= 0; w++)
					r = note_parent(&parents, &n_parents, wrappers[w]->pid, p->targets[i].restarter);
			}
			continue;
		}
		if (have_unit) {
			rs.handling = GS_HANDLE_WATCHED;
			r = add_restarter(p, &rs);
			if (r >= 0)
				t->restarter = r;
		}
	}
	/* Added last: target indices above stay valid while deciding. */
	for (size_t k = 0; k < n_parents && r >= 0; k++) {
		const struct gs_pidstat *par = gs_ptable_find(pt, parents[k].pid);
		pid_t child = 0;

		for (size_t i = 0; i < p->n_targets && !child; i++)
			if (p->targets[i].restarter == parents[k].r && p->targets[i].why != GS_WHY_PARENT)
				child = p->targets[i].pid;
		if (par)
			r = add_parent_target(p, par, child, parents[k].r);
	}
	if (r >= 0)
		r = parents_before_children(p, pt);
	if (r >= 0)
		drop_unused_units(p);
out:
	free(cache);
	free(parents);
	return r < 0 ? r : 0;
}

/* ---- the real questions ------------------------------------------------ */

int gs_runtime_argv(const char *runtime, char *buf, size_t len, const char **words, size_t max, size_t *n)
{
	const char *env = getenv(!strcmp(runtime, "docker") ? "GPUSLATE_DOCKER" : "GPUSLATE_PODMAN");
	char *save = NULL, *w;

	gs_strlcpy(buf, env && *env ? env : runtime, len);
	*n = 0;
	for (w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (*n + 1 >= max)
			return -EINVAL;
		words[(*n)++] = w;
	}
	if (!*n)
		return -EINVAL;
	words[*n] = NULL;
	return 0;
}

static int run_capture(const struct gs_restarter_query *q, const char **argv, char **ret_out)
{
	struct gs_run_result rr;
	uint64_t timeout = q->timeout_ms, now = gs_now_ms();
	int r;

	if (q->deadline_ms) {
		if (now >= q->deadline_ms)
			return -ETIMEDOUT;
		if (q->deadline_ms - now < timeout)
			timeout = q->deadline_ms - now;
	}
	r = gs_spawn_run_interruptible((char *const *)argv, timeout, 8192, q->interrupted, &rr);
	if (r < 0)
		return r;
	if (rr.timed_out || rr.interrupted || rr.exit_code != 0) {
		gs_run_result_free(&rr);
		return rr.timed_out ? -ETIMEDOUT : -EIO;
	}
	*ret_out = rr.out;
	rr.out = NULL;
	gs_run_result_free(&rr);
	return 0;
}

int gs_systemctl_argv(const char *container, bool have_pct, char *buf, size_t len, const char **argv, size_t max)
{
	size_t n = 0;
	unsigned uid;

	if (max < 12)
		return -EINVAL;
	if (gs_unit_scope_is_user(container, &uid)) {
		struct passwd pw, *res = NULL;
		char pwbuf[4096];
		int k;

		/* systemctl talks to a user's manager only as that user: it
		 * refuses a private socket whose peer is neither root nor
		 * itself. setpriv, not runuser or su: no PAM session is opened
		 * for a question. */
		if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) != 0 || !res)
			return -ENOENT;
		k = snprintf(buf, len, "--reuid=%u%c--regid=%u%cXDG_RUNTIME_DIR=/run/user/%u", uid, '\0',
			     (unsigned)pw.pw_gid, '\0', uid);
		if (k < 0 || (size_t)k >= len)
			return -ENAMETOOLONG;
		argv[n++] = "setpriv";
		argv[n++] = buf;
		argv[n++] = buf + strlen(buf) + 1;
		argv[n++] = "--clear-groups";
		argv[n++] = "--";
		argv[n++] = "env";
		argv[n++] = argv[2] + strlen(argv[2]) + 1;
		argv[n++] = "systemctl";
		argv[n++] = "--user";
	} else if (container[0]) {
		argv[n++] = have_pct ? "pct" : "lxc-attach";
		argv[n++] = have_pct ? "exec" : "-n";
		argv[n++] = container;
		argv[n++] = "--";
		argv[n++] = "systemctl";
	} else {
		argv[n++] = "systemctl";
	}
	argv[n] = NULL;
	return (int)n;
}

/* systemctl show -p PROPS -- UNIT (through the unit's manager). */
static int systemctl_show(const struct gs_restarter_query *q, const char *unit, const char *container,
			  const char *props, char **ret_out)
{
	const char *argv[24];
	char buf[128];
	int k = gs_systemctl_argv(container, q->have_pct, buf, sizeof(buf), argv, GS_ARRAY_SIZE(argv));
	size_t n;

	if (k < 0)
		return k;
	n = (size_t)k;
	argv[n++] = "show";
	argv[n++] = "-p";
	argv[n++] = props;
	argv[n++] = "--";
	argv[n++] = unit;
	argv[n] = NULL;
	return run_capture(q, argv, ret_out);
}

int gs_restarter_query_unit(void *ud, const char *unit, const char *container, struct gs_unit_props *ret)
{
	const struct gs_restarter_query *q = ud;
	char *out = NULL, *cur, *line, *eq;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = systemctl_show(q, unit, container, "Restart,RestartUSec,MainPID,ControlGroup", &out);
	if (r < 0)
		return r;
	cur = out;
	while (gs_next_property(&cur, &line, &eq)) {
		if (!strcmp(line, "Restart"))
			gs_strlcpy(ret->restart, eq, sizeof(ret->restart));
		else if (!strcmp(line, "RestartUSec") && gs_timespan_ms(eq, &ret->restart_ms) < 0)
			ret->restart_ms = 0;
		else if (!strcmp(line, "MainPID"))
			ret->main_pid = (pid_t)strtol(eq, NULL, 10);
		else if (!strcmp(line, "ControlGroup"))
			gs_strlcpy(ret->control_group, eq, sizeof(ret->control_group));
	}
	free(out);
	return 0;
}

int gs_restarter_query_unit_state(void *ud, const char *unit, const char *container, struct gs_unit_state *ret)
{
	char *out = NULL, *cur, *line, *eq;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = systemctl_show(ud, unit, container, "ActiveState,SubState", &out);
	if (r < 0)
		return r;
	cur = out;
	while (gs_next_property(&cur, &line, &eq)) {
		if (!strcmp(line, "ActiveState"))
			gs_strlcpy(ret->active, eq, sizeof(ret->active));
		else if (!strcmp(line, "SubState"))
			gs_strlcpy(ret->sub, eq, sizeof(ret->sub));
	}
	free(out);
	/* No state at all is no answer (an old or odd systemctl). */
	return ret->active[0] || ret->sub[0] ? 0 : -EIO;
}

bool gs_unit_restart_pending(const struct gs_unit_state *st)
{
	return gs_startswith(st->sub, "auto-restart") || !strcmp(st->active, "activating") ||
	       !strcmp(st->active, "deactivating");
}

int gs_restarter_query_container(void *ud, const char *runtime, const char *id, char *ret, size_t len)
{
	const struct gs_restarter_query *q = ud;
	const char *argv[48];
	char buf[1024], *out = NULL;
	size_t n;
	int r = gs_runtime_argv(runtime, buf, sizeof(buf), argv, GS_ARRAY_SIZE(argv) - 5, &n);

	if (r < 0)
		return r;
	argv[n++] = "inspect";
	argv[n++] = "-f";
	argv[n++] = "{{.HostConfig.RestartPolicy.Name}}";
	argv[n++] = id;
	argv[n] = NULL;
	r = run_capture(q, argv, &out);
	if (r < 0)
		return r;
	gs_strlcpy(ret, out ? gs_strstrip(out) : "", len);
	free(out);
	return 0;
}

int gs_restarter_read_cmdline(void *ud, pid_t pid, char **ret)
{
	const struct gs_restarter_query *q = ud;
	char path[32];
	int fd, r;

	snprintf(path, sizeof(path), "%d", (int)pid);
	fd = openat(q->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = gs_procinfo_read_cmdline(fd, ret);
	close(fd);
	return r;
}

int gs_restarter_read_stdin(void *ud, pid_t pid, char *buf, size_t len)
{
	const struct gs_restarter_query *q = ud;
	char path[32];
	ssize_t n;

	snprintf(path, sizeof(path), "%d/fd/0", (int)pid);
	n = readlinkat(q->proc_fd, path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

int gs_restarter_read_cgroup(void *ud, pid_t pid, char *buf, size_t len)
{
	const struct gs_restarter_query *q = ud;
	char path[32], *txt = NULL;
	int r;

	snprintf(path, sizeof(path), "%d/cgroup", (int)pid);
	r = gs_read_file_at(q->proc_fd, path, len - 1, &txt, NULL);
	if (r < 0)
		return r;
	gs_strlcpy(buf, txt, len);
	free(txt);
	return 0;
}

int gs_supervisor_argv(const char *runtime, const char *control_opt, const char *control, const char *name,
		       enum gs_sup_verb verb, uint64_t wait_ms, char *buf, size_t len, const char **argv, size_t max)
{
	enum gs_sup_kind k = gs_sup_kind_from_str(runtime);
	size_t n = 0;

	if (max < 12 || len < 48 || !name[0] || name[0] == '-')
		return -EINVAL;
	switch (k) {
	case GS_SUP_SUPERVISORD:
		if (strcmp(control_opt, "-c") && strcmp(control_opt, "-s"))
			return -EINVAL;
		argv[n++] = "supervisorctl";
		argv[n++] = control_opt;
		argv[n++] = control;
		argv[n++] = verb == GS_SUP_VERB_PID ? "pid" : verb == GS_SUP_VERB_STATUS ? "status"
			  : verb == GS_SUP_VERB_START ? "start" : "stop";
		break;
	case GS_SUP_RUNIT:
		argv[n++] = "sv";
		if (verb == GS_SUP_VERB_STOP || verb == GS_SUP_VERB_KILL) {
			/* sv waits whole seconds; at least one. */
			snprintf(buf, len, "%llu", (unsigned long long)(wait_ms < 1000 ? 1 : (wait_ms + 999) / 1000));
			argv[n++] = "-w";
			argv[n++] = buf;
			argv[n++] = "force-stop";
		} else {
			argv[n++] = verb == GS_SUP_VERB_START ? "up" : "status";
		}
		break;
	case GS_SUP_S6:
		if (verb == GS_SUP_VERB_PID || verb == GS_SUP_VERB_STATUS) {
			argv[n++] = "s6-svstat";
			argv[n++] = "-o";
			argv[n++] = verb == GS_SUP_VERB_PID ? "pid" : "up";
		} else if (verb == GS_SUP_VERB_START) {
			argv[n++] = "s6-svc";
			argv[n++] = "-u";
		} else {
			/* -T is an unsigned 32-bit count of ms. */
			snprintf(buf, len, "%llu", (unsigned long long)(wait_ms == 0 ? 1 : wait_ms > 4000000000ULL
									? 4000000000ULL : wait_ms));
			argv[n++] = "s6-svc";
			argv[n++] = "-wd";
			argv[n++] = "-T";
			argv[n++] = buf;
			argv[n++] = verb == GS_SUP_VERB_KILL ? "-k" : "-d";
		}
		break;
	case GS_SUP_NONE:
		return -EINVAL;
	}
	/* supervisorctl takes no "--" before a program name; names never
	 * start with '-' (checked above), directories are absolute. */
	argv[n++] = name;
	argv[n] = NULL;
	return (int)n;
}

#include "core/plan.h"
#include "core/gpusel.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *gs_action_str(enum gs_action a)
{
	switch (a) {
	case GS_ACT_SIGNAL: return "signal";
	case GS_ACT_SIGNAL_GROUP: return "signal-group";
	case GS_ACT_STOP_UNIT: return "stop-unit";
	case GS_ACT_KILL: return "kill";
	case GS_ACT_STOP_CONTAINER: return "stop-container";
	case GS_ACT_STOP_SUPERVISED: return "stop-supervised";
	}
	return "unknown";
}

const char *gs_leave_str(enum gs_leave w)
{
	switch (w) {
	case GS_LEAVE_SELF: return "gpuslate itself";
	case GS_LEAVE_ANCESTOR: return "an ancestor of gpuslate";
	case GS_LEAVE_STARTED_BY_SELF: return "started by gpuslate (its NVML helper, a tool it runs)";
	case GS_LEAVE_INIT: return "PID 1";
	case GS_LEAVE_KTHREAD: return "a kernel thread";
	case GS_LEAVE_PROTECTED: return "protected daemon (name it with --include to stop it)";
	case GS_LEAVE_CLIENT: return "client holding no GPU memory (--include-clients to stop it)";
	case GS_LEAVE_NOT_SELECTED: return "not selected";
	case GS_LEAVE_DEAD: return "no such process (listed by NVML)";
	case GS_LEAVE_UNKNOWN: return "identity unreadable (permission denied)";
	case GS_LEAVE_NO_DEVICE:
		return "listed by NVML but holds no NVIDIA device: the PID was reused, or belongs to another PID namespace";
	case GS_LEAVE_NO_CONTEXT:
		return "listed by NVML but only has the device open, no GPU context mapped: the PID was reused, "
		       "or belongs to another PID namespace";
	case GS_LEAVE_OTHER_GPU:
		return "also holds a GPU outside the selection: not taken with the target it belongs to";
	case GS_LEAVE_UNIT_MAIN:
		return "may be the main process of its unit: when it exits the manager stops the unit, which would end "
		       "a process left alone too (stop the unit, or select both)";
	case GS_LEAVE_NS_INIT:
		return "init of a PID namespace that also holds a process left alone: its end would end that "
		       "process too (stop its container, or select both)";
	}
	return "unknown";
}

const char *gs_why_str(enum gs_why w)
{
	switch (w) {
	case GS_WHY_HOLDER: return "holds a selected GPU";
	case GS_WHY_DESCENDANT: return "descendant of a target";
	case GS_WHY_GROUP_MEMBER: return "member of a target's process group";
	case GS_WHY_TARGETED: return "targeted by this reclaim, still alive";
	case GS_WHY_PARENT: return "supervising parent of a target (--include-parent)";
	}
	return "unknown";
}

void gs_plan_free(struct gs_plan *p)
{
	free(p->targets);
	free(p->left);
	free(p->units);
	free(p->others);
	free(p->restarters);
	memset(p, 0, sizeof(*p));
}

bool gs_unit_stop_is_supervised(const struct gs_unit_stop *u)
{
	return !strcmp(u->runtime, "supervisord") || !strcmp(u->runtime, "runit") || !strcmp(u->runtime, "s6");
}

const struct gs_target *gs_plan_find_target(const struct gs_plan *p, pid_t pid)
{
	for (size_t i = 0; i < p->n_targets; i++)
		if (p->targets[i].pid == pid)
			return &p->targets[i];
	return NULL;
}

static int push(void **arr, size_t *n, size_t elem, const void *v)
{
	/* Arrays here are small (holders of one host): grow one by one. */
	void *na = realloc(*arr, (*n + 1) * elem);

	if (!na)
		return -ENOMEM;
	memcpy((char *)na + *n * elem, v, elem);
	*arr = na;
	(*n)++;
	return 0;
}

static bool name_in(const char *const *list, size_t n, const struct gs_holder *h)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], h->info.name) || !strcmp(list[i], h->info.st.comm))
			return true;
	return false;
}

static bool passes_filters(const struct gs_holder *h, const struct gs_filters *f)
{
	const char *cmd = h->cmdline_full && h->cmdline_full[0] ? h->cmdline_full
			  : h->info.cmdline[0] ? h->info.cmdline : h->info.st.comm;

	return gs_filters_test(f, h->info.status.uid, &h->info.owner, cmd, NULL);
}

/* The GPUs a holder holds that the selection does not cover, NVML's word
 * included: taking it by association would take those too. */
static bool holds_outside(const struct gs_holder *h, const struct gs_gpuset *sel)
{
	return gs_set256_outside(h->gpus.bits, sel->bits) || gs_set256_outside(h->nvml_gpus.bits, sel->bits);
}

/* The caller's own limit on what may be a target (gs_selection.selectable). */
static bool selectable(const struct gs_selection *sel, const struct gs_holder *h)
{
	return !sel->selectable || sel->selectable(sel->selectable_ud, h->pid, h->info.st.starttime);
}

/* Safety rules that no selection overrides. Returns true and sets *why when
 * the process must be left alone. */
static bool never_touch(const struct gs_pidstat *st, const struct gs_ptable *pt, pid_t self, enum gs_leave *why)
{
	if (st->pid == self) {
		*why = GS_LEAVE_SELF;
		return true;
	}
	if (st->pid == 1) {
		*why = GS_LEAVE_INIT;
		return true;
	}
	if (gs_pidstat_is_kthread(st)) {
		*why = GS_LEAVE_KTHREAD;
		return true;
	}
	if (gs_ptable_is_ancestor(pt, st->pid, self)) {
		*why = GS_LEAVE_ANCESTOR;
		return true;
	}
	/* What gpuslate starts (the NVML helper forked without exec, so its
	 * command line is gpuslate's own; ssh, systemctl, docker) is part of
	 * it: never a target, whatever a filter says. */
	if (gs_ptable_is_ancestor(pt, self, st->pid)) {
		*why = GS_LEAVE_STARTED_BY_SELF;
		return true;
	}
	return false;
}

static int add_target(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_pidstat *st, int holder,
		      enum gs_why why, pid_t why_pid)
{
	const struct gs_holder *h = holder >= 0 ? &s->holders[holder] : NULL;
	struct gs_target t = {
		.pid = st->pid, .starttime = st->starttime, .holder = holder,
		.action = GS_ACT_SIGNAL, .why = why, .why_pid = why_pid, .unit = -1, .restarter = -1,
		.term = h && h->info_ok ? gs_pidstatus_term_fate(&h->info.status) : GS_TERM_UNKNOWN,
	};

	gs_strlcpy(t.comm, st->comm, sizeof(t.comm));
	return push((void **)&p->targets, &p->n_targets, sizeof(t), &t);
}

static int add_left(struct gs_plan *p, const struct gs_holder *h, int idx, enum gs_leave why)
{
	struct gs_leftalone l = { .pid = h->pid, .holder = idx, .why = why };

	gs_strlcpy(l.comm, h->info_ok ? h->info.st.comm : "", sizeof(l.comm));
	return push((void **)&p->left, &p->n_left, sizeof(l), &l);
}

static bool is_target(const struct gs_plan *p, pid_t pid)
{
	return gs_plan_find_target(p, pid) != NULL;
}

static bool has_target_ancestor(const struct gs_plan *p, const struct gs_ptable *pt, pid_t pid, pid_t *ret_anc)
{
	const struct gs_pidstat *st = gs_ptable_find(pt, pid);

	for (int depth = 0; st && depth < 4096; depth++) {
		if (st->ppid <= 1 || st->ppid == st->pid)
			return false;
		{
			const struct gs_pidstat *par = gs_ptable_find(pt, st->ppid);
			const struct gs_target *t = gs_plan_find_target(p, st->ppid);

			/* Same PID and the same start time: the parent really is
			 * that target, not a process that reused its PID. */
			if (t && par && par->starttime == t->starttime) {
				*ret_anc = st->ppid;
				return true;
			}
			st = par;
		}
	}
	return false;
}

static int unit_index(struct gs_plan *p, const char *unit, const char *container, const char *cgroup)
{
	struct gs_unit_stop u = { 0 };

	for (size_t i = 0; i < p->n_units; i++)
		if (!strcmp(p->units[i].unit, unit) && !strcmp(p->units[i].container, container)) {
			/* One name, two cgroups: not one unit. Stop neither. */
			if (strcmp(p->units[i].cgroup, cgroup))
				return -1;
			return (int)i;
		}
	gs_strlcpy(u.unit, unit, sizeof(u.unit));
	gs_strlcpy(u.container, container, sizeof(u.container));
	gs_strlcpy(u.cgroup, cgroup, sizeof(u.cgroup));
	if (push((void **)&p->units, &p->n_units, sizeof(u), &u) < 0)
		return -ENOMEM;
	return (int)p->n_units - 1;
}

/* Units that serve the whole host: a stray GPU process inside one (an ssh
 * session without logind, a cron job, a job step without cgroup tracking)
 * is signalled on its own, never by stopping sshd, cron or slurmd. */
static const char *const infrastructure_units[] = {
	"sshd.service", "ssh.service", "dropbear.service", "cron.service", "crond.service",
	"anacron.service", "atd.service", "dbus.service", "dbus-broker.service", "polkit.service",
	"slurmd.service", "slurmctld.service", "slurmdbd.service", "munge.service",
	"docker.service", "containerd.service", "crio.service", "podman.service", "kubelet.service",
	"libvirtd.service", "lxc.service", "lxcfs.service", "lxd.service", "incus.service",
	"NetworkManager.service", "networking.service", "rsyslog.service", "syslog.service",
	"nvidia-persistenced.service", "nvidia-fabricmanager.service", "nvidia-dcgm.service",
	"dcgm.service", "nvidia-imex.service", "gpuslate.service",
};

bool gs_unit_is_infrastructure(const char *unit)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(infrastructure_units); i++)
		if (!strcmp(unit, infrastructure_units[i]))
			return true;
	/* Families: systemd's own, login managers, Proxmox's daemons. */
	return gs_startswith(unit, "systemd-") || gs_startswith(unit, "user@") ||
	       gs_startswith(unit, "getty@") || gs_startswith(unit, "serial-getty@") ||
	       gs_startswith(unit, "pve") || gs_startswith(unit, "lxc@") ||
	       gs_startswith(unit, "container-getty@") || gs_startswith(unit, "gdm") ||
	       gs_startswith(unit, "sddm") || gs_startswith(unit, "lightdm") ||
	       gs_startswith(unit, "display-manager");
}

/* Is the cgroup path `path` the unit's cgroup `unit_path` or below it? */
static bool cgroup_within(const char *path, const char *unit_path, size_t len)
{
	return !strncmp(path, unit_path, len) && (path[len] == '\0' || path[len] == '/');
}

/* Stopping a unit ends every process in its cgroup, subgroups and delegated
 * subtrees included, whatever their owner reads as. Only when that takes
 * nothing the selection leaves alone: every GPU holder inside the unit's
 * cgroup is a target and none holds a GPU outside the selection. A holder
 * whose cgroup could not be read might be inside: then no unit stop. */
static bool unit_stop_is_contained(const struct gs_plan *p, const struct gs_snapshot *s, const struct gs_owner *uo)
{
	size_t len = (size_t)uo->unit_cg_start + uo->unit_cg_len;

	for (size_t i = 0; i < s->n_holders; i++) {
		const struct gs_holder *o = &s->holders[i];

		if (!o->alive)
			continue;
		if (!o->info_ok)
			return false;
		if (!cgroup_within(o->info.owner.cgroup, uo->cgroup, len))
			continue;
		if (!is_target(p, o->pid) || holds_outside(o, &p->gpus))
			return false;
	}
	return true;
}

/* Which unit stop, if any, ends this target the way its supervisor expects.
 * Only a unit its manager knows by that cgroup: never one below a
 * delegation boundary (a container's or a runner's own manager has it, and
 * the host's unit of that name is another unit). */
static int choose_unit(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_holder *h,
		       const struct gs_selection *sel, const struct gs_owner *self_owner)
{
	const struct gs_owner *o = &h->info.owner;
	char cg[sizeof(o->cgroup)];

	if (sel->no_units || o->delegated || gs_owner_unit_cgroup(o, cg, sizeof(cg)) < 0 ||
	    !unit_stop_is_contained(p, s, o))
		return -1;
	/* Not root: only the caller's own user manager takes a stop. */
	if (sel->unprivileged && !(o->kind == GS_OWNER_USER_UNIT && o->uid == sel->uid))
		return -1;
	if ((o->kind == GS_OWNER_UNIT || o->kind == GS_OWNER_USER_UNIT) && gs_endswith(o->name, ".service") &&
	    !gs_unit_is_infrastructure(o->name)) {
		char scope[32] = "";

		/* Never stop the unit gpuslate itself runs in. */
		if (cgroup_within(self_owner->cgroup, o->cgroup, (size_t)o->unit_cg_start + o->unit_cg_len))
			return -1;
		/* A user's unit: stopped through that user's manager. */
		if (o->kind == GS_OWNER_USER_UNIT)
			gs_unit_scope_user(scope, sizeof(scope), o->uid);
		return unit_index(p, o->name, scope, cg);
	}
	if (o->kind == GS_OWNER_LXC && gs_endswith(o->unit, ".service") && !gs_unit_is_infrastructure(o->unit) &&
	    (sel->have_pct || sel->have_lxc_attach))
		return unit_index(p, o->unit, o->name, cg);
	return -1;
}

static bool left_for(const struct gs_plan *p, pid_t pid, enum gs_leave why)
{
	for (size_t i = 0; i < p->n_left; i++)
		if (p->left[i].pid == pid && p->left[i].why == why)
			return true;
	return false;
}

/* Left alone by a rule no selection overrides (itself, an ancestor, PID 1,
 * a kernel thread): whatever NVML accounts to it stays, by definition. */
static bool left_for_safety(const struct gs_plan *p, pid_t pid)
{
	return left_for(p, pid, GS_LEAVE_SELF) || left_for(p, pid, GS_LEAVE_ANCESTOR) ||
	       left_for(p, pid, GS_LEAVE_STARTED_BY_SELF) || left_for(p, pid, GS_LEAVE_INIT) || left_for(p, pid, GS_LEAVE_KTHREAD);
}

/* Step 6: what may stay on each GPU: the memory NVML accounts to processes left
 * alone, plus the tolerance. The part held by processes that are not
 * protected daemons is also listed (p->others): the selection is gone, but
 * those GPUs are not free. */
static int compute_baseline(struct gs_plan *p, const struct gs_snapshot *s, uint64_t tolerance)
{
	p->tolerance = tolerance * GS_MIB;
	for (size_t g = 0; g < s->n_gpus && g < GS_MAX_GPUS; g++) {
		uint64_t keep = tolerance * GS_MIB;

		p->baseline_known[g] = s->gpus[g].mem_known;
		for (size_t k = 0; k < s->n_nvml; k++) {
			const struct gs_nvml_entry *e = &s->nvml[k];
			const struct gs_holder *h, *holder;
			struct gs_plan_other other = { .pid = e->pid, .gpu = (unsigned)g, .mem = e->mem_used };

			if (e->gpu != g || !e->mem_known)
				continue;
			if (is_target(p, e->pid))
				continue;
			h = holder = gs_snapshot_find(s, e->pid);
			/* A live PID left alone because it holds no NVIDIA device
			 * is not what the driver accounts the memory to: that
			 * memory has to go. */
			if ((h && gs_gpuset_has(&h->nvml_unconfirmed, (unsigned)g) && !left_for_safety(p, e->pid)) ||
			    left_for(p, e->pid, GS_LEAVE_UNKNOWN))
				continue;
			if (h && !h->alive) {
				/* A dead creator's memory goes when its heirs go. */
				pid_t heirs[64];
				size_t n = gs_snapshot_heirs(s, h, heirs, GS_ARRAY_SIZE(heirs));
				bool heir_targeted = false;

				for (size_t i = 0; i < n; i++)
					heir_targeted |= is_target(p, heirs[i]);
				if (heir_targeted || n == 0)
					continue;
				/* ... and its heirs, left alone, hold it. */
				other.pid = heirs[0];
				holder = gs_snapshot_find(s, heirs[0]);
			}
			keep += e->mem_used;
			if (e->mem_used == 0 || (holder && holder->alive && holder->role == GS_ROLE_PROTECTED &&
						 left_for(p, holder->pid, GS_LEAVE_PROTECTED)))
				continue;
			gs_strlcpy(other.comm, holder && holder->info_ok ? holder->info.st.comm : "?", sizeof(other.comm));
			if (push((void **)&p->others, &p->n_others, sizeof(other), &other) < 0)
				return -ENOMEM;
		}
		p->baseline[g] = keep;
	}
	return 0;
}

/* A holder that a target would take along but that holds a GPU outside the
 * selection: left alone, and the plan says why. */
static int leave_for_other_gpu(struct gs_plan *p, const struct gs_holder *h, int idx)
{
	for (size_t m = 0; m < p->n_left; m++)
		if (p->left[m].pid == h->pid) {
			p->left[m].why = GS_LEAVE_OTHER_GPU;
			return 0;
		}
	return add_left(p, h, idx, GS_LEAVE_OTHER_GPU);
}

/* Was this process (same start time) a target of the plan carried out? */
static bool was_targeted(const struct gs_plan *carried, const struct gs_pidstat *st)
{
	const struct gs_target *t = carried ? gs_plan_find_target(carried, st->pid) : NULL;

	return t && t->starttime == st->starttime;
}

/* Step 1: every holder of the selected GPUs is a target or left alone, and
 * the plan says why. */
static int select_holders(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
			  const struct gs_selection *sel, const struct gs_filters *f, pid_t self)
{
	for (size_t i = 0; i < s->n_holders; i++) {
		const struct gs_holder *h = &s->holders[i];
		const struct gs_pidstat *st = &h->info.st;
		struct gs_gpuset concern = h->gpus;
		enum gs_leave why;
		int r;

		gs_set256_merge(concern.bits, h->nvml_unconfirmed.bits);
		if (!gs_gpuset_intersects(&concern, &p->gpus))
			continue;
		if (!h->alive) {
			r = add_left(p, h, (int)i, GS_LEAVE_DEAD);
		} else if (!h->info_ok) {
			r = add_left(p, h, (int)i, GS_LEAVE_UNKNOWN);
		} else if (never_touch(st, pt, self, &why)) {
			r = add_left(p, h, (int)i, why);
		} else if (!gs_gpuset_intersects(&h->gpus, &p->gpus)) {
			/* NVML's PIDs are the host's, from a moment ago: a live
			 * process with that number but no NVIDIA fd or mapping is
			 * someone else (a reused PID, or a container's own PID
			 * space). Never a target on NVML's word alone. */
			r = add_left(p, h, (int)i, GS_LEAVE_NO_DEVICE);
		} else if (was_targeted(sel->targeted, st)) {
			r = add_target(p, s, st, (int)i, GS_WHY_TARGETED, 0);
		} else if (h->role == GS_ROLE_PROTECTED && !name_in(sel->includes, sel->n_includes, h)) {
			r = add_left(p, h, (int)i, GS_LEAVE_PROTECTED);
		} else if (h->role == GS_ROLE_CLIENT && !sel->include_clients &&
			   !name_in(sel->includes, sel->n_includes, h)) {
			/* A monitor NVML names: an fd is not a context. */
			r = add_left(p, h, (int)i,
				     gs_gpuset_intersects(&h->nvml_unconfirmed, &p->gpus) ? GS_LEAVE_NO_CONTEXT
											: GS_LEAVE_CLIENT);
		} else if (!passes_filters(h, f) || !selectable(sel, h)) {
			r = add_left(p, h, (int)i, GS_LEAVE_NOT_SELECTED);
		} else {
			r = add_target(p, s, st, (int)i, GS_WHY_HOLDER, 0);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Step 2: descendants of targets that hold a selected GPU go with them,
 * whatever their role or filters, but never past the safety rules or a
 * protected name, and never one that also holds a GPU outside the
 * selection: that one is not ours to take by association. */
static int adopt_descendants(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
			     const struct gs_selection *sel)
{
	bool changed;

	do {
		changed = false;
		for (size_t k = 0; k < p->n_left; k++) {
			struct gs_leftalone *l = &p->left[k];
			const struct gs_holder *h;
			pid_t anc;
			int r;

			if (l->why != GS_LEAVE_CLIENT && l->why != GS_LEAVE_NOT_SELECTED && l->why != GS_LEAVE_NO_CONTEXT)
				continue;
			h = &s->holders[l->holder];
			if (!selectable(sel, h) || !has_target_ancestor(p, pt, h->pid, &anc))
				continue;
			if (holds_outside(h, &p->gpus)) {
				l->why = GS_LEAVE_OTHER_GPU;
				continue;
			}
			r = add_target(p, s, &h->info.st, l->holder, GS_WHY_DESCENDANT, anc);
			if (r < 0)
				return r;
			memmove(l, l + 1, (p->n_left - k - 1) * sizeof(*l));
			p->n_left--;
			k--;
			changed = true;
		}
	} while (changed);
	return 0;
}

/* Step 3: owner-aware actions: units are stopped through their manager. */
static int choose_unit_stops(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_selection *sel,
			     const struct gs_owner *self_owner)
{
	for (size_t i = 0; i < p->n_targets; i++) {
		struct gs_target *t = &p->targets[i];
		int u;

		if (t->holder < 0)
			continue;
		u = choose_unit(p, s, &s->holders[t->holder], sel, self_owner);
		if (u == -ENOMEM)
			return -ENOMEM;
		if (u >= 0) {
			t->action = GS_ACT_STOP_UNIT;
			t->unit = u;
		}
	}
	return 0;
}

/* One member of a leader's process group: taken with it unless a rule
 * leaves it. Returns 1 when it is a target (already or now), 0 when not. */
static int take_member(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
		       const struct gs_selection *sel, const struct gs_pidstat *st, pid_t leader, pid_t self)
{
	const struct gs_holder *h;
	enum gs_leave why;
	int hidx, r;

	if (is_target(p, st->pid))
		return 1;
	if (never_touch(st, pt, self, &why))
		return 0;
	h = gs_snapshot_find(s, st->pid);
	hidx = h ? (int)(h - s->holders) : -1;
	/* The table and the snapshot were read apart: the same PID must be
	 * the same process. */
	if (h && (!h->info_ok || h->info.st.starttime != st->starttime))
		return 0;
	if (h ? h->role == GS_ROLE_PROTECTED || !selectable(sel, h) : gs_is_protected_name(st->comm, NULL))
		return 0;
	if (h && holds_outside(h, &p->gpus)) {
		r = leave_for_other_gpu(p, h, hidx);
		return r < 0 ? r : 0;
	}
	/* A holder's namespace is judged by the namespace-init rule
	 * (guard_collateral), which knows who else lives there; for any other
	 * member only the question is asked, and an init (or no answer) is
	 * never taken by association. */
	if (!h && sel->is_pidns_init && sel->is_pidns_init(sel->is_pidns_init_ud, st->pid, st->starttime) != 0)
		return 0;
	r = add_target(p, s, st, hidx, GS_WHY_GROUP_MEMBER, leader);
	if (r < 0)
		return r;
	/* The left-alone entry, if any, is superseded. */
	for (size_t m = 0; m < p->n_left; m++)
		if (p->left[m].pid == st->pid) {
			memmove(&p->left[m], &p->left[m + 1], (p->n_left - m - 1) * sizeof(p->left[0]));
			p->n_left--;
			break;
		}
	return 1;
}

/* Step 4: a target that leads its own process group takes the group with
 * it (workers, helpers). Members are signalled one by one through pidfds.
 * A member that holds a GPU outside the selection stays, and shows why. */
static int take_process_groups(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
			       const struct gs_selection *sel, pid_t self)
{
	size_t n0 = p->n_targets;
	const struct gs_pidstat *me = gs_ptable_find(pt, self);

	for (size_t i = 0; i < n0; i++) {
		pid_t leader = p->targets[i].pid;
		size_t members = 0; /* taken with it */
		const struct gs_pidstat *lst = gs_ptable_find(pt, leader);

		if (p->targets[i].action != GS_ACT_SIGNAL || p->targets[i].why != GS_WHY_HOLDER || !lst ||
		    lst->pgrp != leader || lst->starttime != p->targets[i].starttime)
			continue;
		if (me && me->pgrp == leader)
			continue;
		for (size_t k = 0; k < pt->n; k++) {
			const struct gs_pidstat *st = &pt->procs[k];
			int r;

			if (st->pgrp != leader || st->pid == leader)
				continue;
			r = take_member(p, s, pt, sel, st, leader, self);
			if (r < 0)
				return r;
			members += (size_t)r;
		}
		/* By index: adding targets may have moved the array. */
		if (members)
			p->targets[i].action = GS_ACT_SIGNAL_GROUP;
	}
	return 0;
}

/* Does signalling target t, the init of its PID namespace, end holder h?
 * The kernel kills every process of the namespace when its init dies: h
 * shares the namespace, or descends from t (a child namespace, or a
 * process that reparented to it). */
static bool init_would_end(const struct gs_holder *init, const struct gs_holder *h, const struct gs_ptable *pt)
{
	const struct gs_pidstat *st;

	if (h->info.pidns_ok && h->info.pidns_dev == init->info.pidns_dev && h->info.pidns_ino == init->info.pidns_ino)
		return true;
	st = gs_ptable_find(pt, h->pid);
	for (int depth = 0; st && depth < 4096; depth++) {
		if (st->ppid == init->pid)
			return true;
		if (st->ppid <= 1 || st->ppid == st->pid)
			break;
		st = gs_ptable_find(pt, st->ppid);
	}
	return false;
}

/* Turn target i back into a process left alone, with the targets taken
 * only because of it (descendants, group members). */
static int untarget(struct gs_plan *p, const struct gs_snapshot *s, size_t i, enum gs_leave why, pid_t would_end)
{
	struct gs_target t = p->targets[i];
	int r = 0;

	memmove(&p->targets[i], &p->targets[i + 1], (p->n_targets - i - 1) * sizeof(t));
	p->n_targets--;
	if (t.holder >= 0) {
		r = add_left(p, &s->holders[t.holder], t.holder, why);
		if (r < 0)
			return r;
		p->left[p->n_left - 1].would_end = would_end;
	}
	for (size_t k = 0; k < p->n_targets; k++) {
		struct gs_target *d = &p->targets[k];

		if (d->why_pid != t.pid || (d->why != GS_WHY_DESCENDANT && d->why != GS_WHY_GROUP_MEMBER))
			continue;
		r = untarget(p, s, k, d->holder >= 0 && s->holders[d->holder].role == GS_ROLE_CLIENT ? GS_LEAVE_CLIENT
												    : GS_LEAVE_NOT_SELECTED,
			     0);
		if (r < 0)
			return r;
		k = (size_t)-1; /* the array changed: start over */
	}
	return r;
}

/* Whether a signalled target t's end takes others with it, by a rule of
 * the kernel or of a manager: its subject() says if the rule applies to t,
 * ends() whether it would end holder h. */
struct collateral_rule {
	bool (*subject)(const struct gs_holder *t, const struct gs_ptable *pt, const struct gs_selection *sel);
	bool (*ends)(const struct gs_holder *t, const struct gs_holder *h, const struct gs_ptable *pt);
	enum gs_leave why;
	/* The rule holds for a target whose unit is stopped too: the unit
	 * stop ends it as a signal would, and a failed stop falls back to
	 * signals on it. Not the unit-main rule: a unit stop is what it
	 * guards against, and unit_stop_is_contained asked that already. */
	bool unit_stops_too;
};

/* Steps 5 and 6: a target whose end would end a holder the plan does not
 * stop is left alone (with what it took along), naming one such holder. A
 * surviving target of the plan carried out (a re-plan) stays one. */
static int guard_collateral(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_ptable *pt,
			    const struct gs_selection *sel, const struct collateral_rule *rule)
{
	for (size_t i = 0; i < p->n_targets; i++) {
		const struct gs_target *t = &p->targets[i];
		const struct gs_holder *th;
		pid_t victim = 0;
		int r;

		if (t->holder < 0 || (t->action == GS_ACT_STOP_UNIT && !rule->unit_stops_too) ||
		    t->why == GS_WHY_TARGETED)
			continue;
		th = &s->holders[t->holder];
		if (!th->info_ok || !rule->subject(th, pt, sel))
			continue;
		for (size_t k = 0; k < s->n_holders && !victim; k++) {
			const struct gs_holder *h = &s->holders[k];

			if (h != th && h->alive && !is_target(p, h->pid) && rule->ends(th, h, pt))
				victim = h->pid;
		}
		if (!victim)
			continue;
		r = untarget(p, s, i, rule->why, victim);
		if (r < 0)
			return r;
		i = (size_t)-1; /* start over: targets moved */
	}
	return 0;
}

/* Step 5: the init of a PID namespace (a container's main process without
 * an init, `unshare -p -f`) takes its whole namespace with it, whatever
 * gpuslate signals. */
static bool is_namespace_init(const struct gs_holder *t, const struct gs_ptable *pt, const struct gs_selection *sel)
{
	(void)pt;
	(void)sel;
	return t->info.status.nspid == 1 && t->info.pidns_ok;
}

static bool namespace_end_ends(const struct gs_holder *init, const struct gs_holder *h, const struct gs_ptable *pt)
{
	return h->info_ok && init_would_end(init, h, pt);
}

/* Step 6: when a unit's main process exits, its manager stops the unit
 * and kills every process left in its cgroup (KillMode=control-group, the
 * default). A unit's main process is the manager's child (systemd: PID 1
 * for system units, `systemd --user`, a container's own init); so is an
 * orphan the manager reaped as subreaper, which is taken as main too, the
 * safe way. A process forked inside the unit, or moved into it, has another
 * parent. */
static bool may_be_unit_main(const struct gs_holder *t, const struct gs_ptable *pt, const struct gs_selection *sel)
{
	const struct gs_pidstat *st = gs_ptable_find(pt, t->pid);
	pid_t main_pid;

	if (!t->info.owner.unit_cg_len)
		return false; /* not in a unit */
	/* The manager's word, where it has one for the unit of this cgroup:
	 * exact. A main process that is a launcher or a shell (`timeout 1d
	 * python`, `bash -c '... && python'`) ends when the target ends,
	 * through every launcher and shell between: the target is main too.
	 * Otherwise the guess below, the safe way. */
	if (sel->unit_main_pid && sel->unit_main_pid(sel->unit_main_pid_ud, &t->info.owner, &main_pid) == 0)
		return main_pid == t->pid || gs_launcher_chain_to(pt, t->pid, main_pid, sel->launch_kind,
								   sel->launch_kind_ud);
	/* The manager's child, or one below it through launchers and shells
	 * only. */
	for (int depth = 0; st && depth < 64; depth++) {
		const struct gs_pidstat *parent = gs_ptable_find(pt, st->ppid);

		if (st->ppid <= 1)
			return true;
		if (!parent)
			return false;
		if (!strcmp(parent->comm, "systemd"))
			return true;
		if (gs_launch_kind_ask(sel->launch_kind, sel->launch_kind_ud, parent) == GS_LAUNCH_NONE)
			return false;
		st = parent;
	}
	return true; /* a chain longer than any real one: the safe way */
}

/* A holder whose cgroup could not be read may be inside the unit. */
static bool unit_stop_ends(const struct gs_holder *m, const struct gs_holder *h, const struct gs_ptable *pt)
{
	const struct gs_owner *uo = &m->info.owner;

	(void)pt;
	return !h->info_ok ||
	       cgroup_within(h->info.owner.cgroup, uo->cgroup, (size_t)uo->unit_cg_start + uo->unit_cg_len);
}

static const struct collateral_rule namespace_init_rule = { is_namespace_init, namespace_end_ends,
							     GS_LEAVE_NS_INIT, true };
static const struct collateral_rule unit_main_rule = { may_be_unit_main, unit_stop_ends, GS_LEAVE_UNIT_MAIN,
							false };

/* Forget unit u: its targets are signalled, later units move down one. */
static void drop_unit(struct gs_plan *p, int u)
{
	for (size_t i = 0; i < p->n_targets; i++) {
		struct gs_target *t = &p->targets[i];

		if (t->unit == u) {
			t->action = GS_ACT_SIGNAL;
			t->unit = -1;
		} else if (t->unit > u) {
			t->unit--;
		}
	}
	memmove(&p->units[u], &p->units[u + 1], (p->n_units - (size_t)u - 1) * sizeof(p->units[0]));
	p->n_units--;
}

/* The unit stops were chosen before the guards: a guard may since have
 * left alone a holder inside a unit's cgroup (or every target of it),
 * and stopping the unit would end that holder all the same. Such a unit
 * is not stopped; its targets go back to plain signals, and the caller
 * runs the later steps again for them (a unit's main process signalled
 * makes the manager stop the unit: the unit-main rule must see it).
 * Returns 1 when a unit was dropped, 0 when none. */
static int drop_uncontained_unit_stops(struct gs_plan *p, const struct gs_snapshot *s)
{
	int dropped = 0;

	for (int u = (int)p->n_units - 1; u >= 0; u--) {
		const struct gs_target *first = NULL;

		for (size_t i = 0; i < p->n_targets && !first; i++)
			if (p->targets[i].unit == u)
				first = &p->targets[i];
		if (first && unit_stop_is_contained(p, s, &s->holders[first->holder].info.owner))
			continue;
		drop_unit(p, u);
		dropped = 1;
	}
	return dropped;
}

/* Step 7, last: a target whose SIGTERM the kernel would drop (ignored,
 * or the init of its own PID namespace without a handler) gets SIGKILL at
 * once: the grace period could only be waited out. Units are still stopped
 * through their manager. */
static void kill_where_sigterm_is_futile(struct gs_plan *p)
{
	for (size_t i = 0; i < p->n_targets; i++) {
		struct gs_target *t = &p->targets[i];

		if (t->action != GS_ACT_STOP_UNIT && gs_term_futile(t->term))
			t->action = GS_ACT_KILL;
	}
}

/* Last: not root, a holder of another user is a target the kernel will not
 * let gpuslate signal (kill(2): the sender's real or effective uid must be
 * the target's real or saved one). Said in the plan, before anything is
 * tried. A target that holds no GPU (a group member) has no uid here: the
 * stop stage finds out. */
static void mark_not_permitted(struct gs_plan *p, const struct gs_snapshot *s, const struct gs_selection *sel)
{
	if (!sel->unprivileged)
		return;
	for (size_t i = 0; i < p->n_targets; i++) {
		struct gs_target *t = &p->targets[i];
		const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;

		if (h && h->info_ok && h->info.status.uid != sel->uid) {
			t->not_permitted = true;
			t->owner_uid = h->info.status.uid;
		}
	}
}

int gs_plan_build(const struct gs_snapshot *s, const struct gs_ptable *pt, const struct gs_selection *sel,
		  pid_t self, const struct gs_owner *self_owner, struct gs_plan *p, char *err, size_t errlen)
{
	struct gs_filters f;
	int r;

	memset(p, 0, sizeof(*p));
	r = gs_gpusel_resolve(sel->gpus, s->gpus, s->n_gpus, &p->gpus, err, errlen);
	if (r < 0)
		return -EINVAL;
	r = gs_filters_compile(&sel->filters, &f, err, errlen);
	if (r < 0)
		return r;
	r = select_holders(p, s, pt, sel, &f, self);
	if (r == 0)
		r = adopt_descendants(p, s, pt, sel);
	if (r == 0)
		r = choose_unit_stops(p, s, sel, self_owner);
	/* The guards see the unit stops chosen; a unit stop they made unsafe
	 * is dropped and the steps run again for its targets. Every round
	 * that goes on drops a unit, so this ends. */
	while (r == 0) {
		r = take_process_groups(p, s, pt, sel, self);
		if (r == 0)
			r = guard_collateral(p, s, pt, sel, &namespace_init_rule);
		if (r == 0)
			r = guard_collateral(p, s, pt, sel, &unit_main_rule);
		if (r == 0 && !drop_uncontained_unit_stops(p, s))
			break;
	}
	if (r == 0)
		r = compute_baseline(p, s, sel->tolerance_mib);
	if (r == 0) {
		kill_where_sigterm_is_futile(p);
		mark_not_permitted(p, s, sel);
	}
	gs_filters_free(&f);
	if (r < 0) {
		gs_plan_free(p);
		snprintf(err, errlen, "out of memory");
	}
	return r;
}

/* The plan's decisions from literal hosts: snapshots, process tables and
 * cgroup paths written out here, no /proc and no NVML. Each test is named
 * after the situation it reproduces (issue 11: wrong kills and false
 * cleans), and asserts what the plan would make gpuslate do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/filters.h"
#include "core/plan.h"
#include "core/snapshot.h"
#include "proc/owner.h"
#include "util/util.h"

#define MIB GS_MIB
#define SELF 999000 /* gpuslate's pid in these worlds: no process's ancestor */

/* A host: GPUs, holders (ascending pids), NVML's lists, every process. */
struct world {
	struct gs_snapshot s;
	struct gs_ptable pt;
	struct gs_gpu gpus[4];
	struct gs_holder holders[16];
	struct gs_nvml_entry nvml[16];
	struct gs_pidstat procs[32];
	struct gs_owner self_owner;
	struct gs_selection sel;
	struct gs_plan plan;
};

static struct world *new_world(unsigned n_gpus)
{
	struct world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	for (unsigned g = 0; g < n_gpus; g++) {
		w->gpus[g].index = g;
		w->gpus[g].minor = g;
		snprintf(w->gpus[g].uuid, sizeof(w->gpus[g].uuid), "GPU-a2983c1e-0000-4000-8000-%012x", g);
		w->gpus[g].mem_known = true;
		w->gpus[g].mem_total = 143771 * MIB;
	}
	w->s.gpus = w->gpus;
	w->s.n_gpus = n_gpus;
	w->s.holders = w->holders;
	w->s.nvml = w->nvml;
	w->pt.procs = w->procs;
	w->sel.tolerance_mib = 16;
	(void)gs_owner_from_cgroup("0::/user.slice/user-0.slice/session-1.scope\n", &w->self_owner);
	return w;
}

static void free_world(struct world *w)
{
	gs_plan_free(&w->plan);
	free(w);
}

/* A process in the table (processes must come in ascending pid order). */
static struct gs_pidstat *proc(struct world *w, pid_t pid, pid_t ppid, pid_t pgrp, const char *comm)
{
	struct gs_pidstat *st = &w->procs[w->pt.n++];

	assert_true(w->pt.n <= GS_ARRAY_SIZE(w->procs));
	st->pid = pid;
	st->ppid = ppid;
	st->pgrp = pgrp;
	st->session = pgrp;
	st->state = 'S';
	st->starttime = (uint64_t)pid * 10;
	gs_strlcpy(st->comm, comm, sizeof(st->comm));
	return st;
}

/* A process that holds GPUs: in the table and in the snapshot, owned per
 * the literal /proc/PID/cgroup text, a compute holder by default. */
static struct gs_holder *holder(struct world *w, pid_t pid, pid_t ppid, pid_t pgrp, const char *comm,
				const char *cgroup)
{
	struct gs_holder *h = &w->holders[w->s.n_holders++];
	struct gs_pidstat *st = proc(w, pid, ppid, pgrp, comm);

	assert_true(w->s.n_holders <= GS_ARRAY_SIZE(w->holders));
	h->pid = pid;
	h->alive = h->info_ok = true;
	h->info.st = *st;
	h->info.status.uid = 1000;
	gs_strlcpy(h->info.name, comm, sizeof(h->info.name));
	gs_strlcpy(h->info.user, "alice", sizeof(h->info.user));
	assert_int_equal(gs_owner_from_cgroup(cgroup, &h->info.owner), 0);
	h->role = GS_ROLE_COMPUTE;
	return h;
}

/* It maps /dev/nvidia<g>: a CUDA context there. */
static void maps(struct gs_holder *h, unsigned g)
{
	gs_gpuset_add(&h->gpus, g);
	gs_minorset_add(&h->map_minors, g);
	gs_minorset_add(&h->fd_minors, g);
	h->maps_gpu = true;
	h->n_fds++;
}

/* It has /dev/nvidia<g> open, maps nothing there. */
static void opens(struct gs_holder *h, unsigned g)
{
	gs_gpuset_add(&h->gpus, g);
	gs_minorset_add(&h->fd_minors, g);
	h->n_fds++;
}

/* NVML lists pid on GPU g with mib MiB (confirmed when it maps g). */
static void nvml(struct world *w, struct gs_holder *h, unsigned g, uint64_t mib)
{
	w->nvml[w->s.n_nvml++] = (struct gs_nvml_entry){ .pid = h->pid, .gpu = g, .mem_known = true,
							 .mem_used = mib * MIB };
	w->gpus[g].mem_used += mib * MIB;
	h->nvml_listed = true;
	gs_gpuset_add(&h->nvml_gpus, g);
	if (!gs_minorset_has(&h->map_minors, g))
		gs_gpuset_add(&h->nvml_unconfirmed, g);
	h->mem_known = true;
	h->mem_used += mib * MIB;
}

static void plan(struct world *w, const char *gpus)
{
	char err[256] = "";
	int r;

	w->sel.gpus = gpus;
	r = gs_plan_build(&w->s, &w->pt, &w->sel, SELF, &w->self_owner, &w->plan, err, sizeof(err));
	if (r != 0)
		print_error("plan failed: %d %s\n", r, err);
	assert_int_equal(r, 0);
}

static const struct gs_target *target(const struct world *w, pid_t pid)
{
	return gs_plan_find_target(&w->plan, pid);
}

static const struct gs_leftalone *left(const struct world *w, pid_t pid)
{
	for (size_t i = 0; i < w->plan.n_left; i++)
		if (w->plan.left[i].pid == pid)
			return &w->plan.left[i];
	return NULL;
}

/* Issue 11 item 1: `reclaim -g 1` killed a process holding only GPU 0
 * because it shared the process group of a GPU 1 holder, and showed it with
 * GPUS "-". */
static void test_group_member_holding_an_unselected_gpu_is_not_taken(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *leader, *other;

	(void)state;
	leader = holder(w, 100, 1, 100, "torchrun", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(leader, 1);
	nvml(w, leader, 1, 4096);
	other = holder(w, 101, 100, 100, "python3", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(other, 0);
	nvml(w, other, 0, 2048);
	proc(w, 102, 100, 100, "logger"); /* holds nothing: goes with the group */
	plan(w, "1");

	assert_non_null(target(w, 100));
	assert_null(target(w, 101));
	assert_non_null(left(w, 101));
	assert_int_equal(left(w, 101)->why, GS_LEAVE_OTHER_GPU);
	assert_non_null(target(w, 102));
	assert_int_equal(target(w, 102)->why, GS_WHY_GROUP_MEMBER);
	assert_int_equal(target(w, 100)->action, GS_ACT_SIGNAL_GROUP);
	free_world(w);
}

/* The plan shows a member's real GPUs: a member that holds a selected GPU
 * points at its holder entry, not "-". */
static void test_group_member_shows_the_gpus_it_holds(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *leader, *member;

	(void)state;
	leader = holder(w, 100, 1, 100, "torchrun", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(leader, 1);
	nvml(w, leader, 1, 4096);
	member = holder(w, 101, 100, 100, "python3", "0::/user.slice/user-1000.slice/session-4.scope\n");
	opens(member, 1);
	member->role = GS_ROLE_CLIENT;
	plan(w, "1");

	assert_non_null(target(w, 101));
	assert_int_equal(target(w, 101)->holder, 1);
	assert_true(gs_gpuset_has(&w->holders[target(w, 101)->holder].gpus, 1));
	free_world(w);
}

/* A group whose only other member is left alone is not "signal process
 * group": the label must say what happens. */
static void test_group_with_no_member_taken_is_a_plain_signal(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *leader, *other;

	(void)state;
	leader = holder(w, 100, 1, 100, "torchrun", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(leader, 1);
	other = holder(w, 101, 100, 100, "python3", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(other, 0);
	plan(w, "1");

	assert_int_equal(target(w, 100)->action, GS_ACT_SIGNAL);
	free_world(w);
}

/* A child of a target that also holds a GPU outside the selection (it
 * inherited the nodes of both): not taken with its parent. */
static void test_descendant_holding_an_unselected_gpu_is_not_taken(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *parent, *child;

	(void)state;
	parent = holder(w, 200, 1, 200, "vllm", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(parent, 1);
	child = holder(w, 201, 200, 201, "monitor", "0::/user.slice/user-1000.slice/session-4.scope\n");
	opens(child, 0);
	opens(child, 1);
	child->role = GS_ROLE_CLIENT;
	plan(w, "1");

	assert_non_null(target(w, 200));
	assert_null(target(w, 201));
	assert_int_equal(left(w, 201)->why, GS_LEAVE_OTHER_GPU);

	/* holding only the selected GPU, it goes with its parent */
	gs_plan_free(&w->plan);
	memset(&child->gpus, 0, sizeof(child->gpus));
	opens(child, 1);
	plan(w, "1");
	assert_non_null(target(w, 201));
	assert_int_equal(target(w, 201)->why, GS_WHY_DESCENDANT);
	free_world(w);
}

/* A unit is stopped only when stopping it takes nothing the selection
 * leaves alone: here a peer in its cgroup holds GPU 0. */
static void test_unit_peer_holding_an_unselected_gpu_blocks_the_unit_stop(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *a, *b;

	(void)state;
	/* 301 is the unit's main process (systemd's child), 300 its worker */
	a = holder(w, 300, 301, 300, "trainer", "0::/system.slice/trainer.service\n");
	maps(a, 1);
	b = holder(w, 301, 1, 301, "trainer", "0::/system.slice/trainer.service/workers\n");
	maps(b, 0);
	plan(w, "1");
	assert_int_equal(target(w, 300)->action, GS_ACT_SIGNAL);
	assert_int_equal(w->plan.n_units, 0);

	/* -g 0: the main process is left alone, since its exit would make
	 * systemd stop the unit and kill the GPU 1 worker with it */
	gs_plan_free(&w->plan);
	plan(w, "0");
	assert_null(target(w, 301));
	assert_int_equal(left(w, 301)->why, GS_LEAVE_UNIT_MAIN);
	assert_int_equal(left(w, 301)->would_end, 300);

	/* with both GPUs selected, the unit goes through systemd */
	gs_plan_free(&w->plan);
	plan(w, NULL);
	assert_int_equal(target(w, 300)->action, GS_ACT_STOP_UNIT);
	assert_int_equal(target(w, 301)->action, GS_ACT_STOP_UNIT);
	assert_int_equal(w->plan.n_units, 1);
	assert_string_equal(w->plan.units[0].unit, "trainer.service");
	assert_string_equal(w->plan.units[0].cgroup, "/system.slice/trainer.service");
	free_world(w);
}

/* Not root: a system unit is never planned for a stop (systemctl would ask
 * polkit), another user's process is marked not permitted, the caller's own
 * is not. */
static void test_unprivileged_plans_what_it_may_do(void **state)
{
	struct world *w = new_world(1);
	struct gs_holder *a, *b;

	(void)state;
	a = holder(w, 300, 1, 300, "trainer", "0::/system.slice/trainer.service\n");
	maps(a, 0);
	a->info.status.uid = 0;
	b = holder(w, 310, 1, 310, "mine", "0::/user.slice/user-1000.slice/session-2.scope\n");
	maps(b, 0);
	w->sel.unprivileged = true;
	w->sel.uid = 1000;
	plan(w, NULL);
	assert_int_equal(w->plan.n_units, 0);
	assert_int_equal(target(w, 300)->action, GS_ACT_SIGNAL);
	assert_true(target(w, 300)->not_permitted);
	assert_int_equal(target(w, 300)->owner_uid, 0);
	assert_false(target(w, 310)->not_permitted);

	/* As root: the unit is stopped through systemd, nothing is marked. */
	gs_plan_free(&w->plan);
	w->sel.unprivileged = false;
	w->sel.uid = 0;
	plan(w, NULL);
	assert_int_equal(target(w, 300)->action, GS_ACT_STOP_UNIT);
	assert_false(target(w, 300)->not_permitted);
	free_world(w);
}

/* A peer below a delegation boundary of the unit is in its cgroup: the
 * host unit's stop would take it, whatever its owner reads as. */
static void test_unit_peer_in_a_delegated_subtree_blocks_the_unit_stop(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *a, *b;

	(void)state;
	/* a job the runner's main process (299) forked: not the unit's main
	 * process (that one's exit would stop the unit: see the test above) */
	a = holder(w, 300, 299, 300, "runner", "0::/system.slice/ci.service\n");
	maps(a, 1);
	b = holder(w, 301, 1, 301, "ollama", "0::/system.slice/ci.service/job-7/system.slice/ollama.service\n");
	maps(b, 0);
	plan(w, "1");
	assert_int_equal(target(w, 300)->action, GS_ACT_SIGNAL);
	assert_int_equal(w->plan.n_units, 0);
	free_world(w);
}

/* Issue 11 item 2: a service inside a container booted by the stock
 * systemd-nspawn@.service was stopped as a host unit of the same name. */
static void test_unit_below_a_delegation_boundary_is_never_stopped_on_the_host(void **state)
{
	static const char *const cgroups[] = {
		"0::/machine.slice/systemd-nspawn@ct1.service/payload/system.slice/ollama.service\n",
		"0::/machine.slice/machine-ct2.scope/payload/system.slice/ollama.service\n",
		"0::/system.slice/gitlab-runner.service/job-1/system.slice/ollama.service\n",
		"0::/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/system.slice/ollama.service\n",
		"0::/lxc/129/ns/system.slice/runner.service/c1/system.slice/ollama.service\n",
		"0::/../../system.slice/ollama.service\n",
	};

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(cgroups); i++) {
		struct world *w = new_world(1);
		struct gs_holder *h = holder(w, 400, 1, 400, "ollama", cgroups[i]);

		maps(h, 0);
		w->sel.have_pct = true;
		plan(w, NULL);
		if (target(w, 400)->action != GS_ACT_SIGNAL || w->plan.n_units != 0)
			print_error("cgroup %s: action %s, %zu units\n", cgroups[i], gs_action_str(target(w, 400)->action),
				    w->plan.n_units);
		assert_int_equal(target(w, 400)->action, GS_ACT_SIGNAL);
		assert_int_equal(w->plan.n_units, 0);
		free_world(w);
	}
}

/* --unit names units of the host (or a CT's own units), never a unit an
 * inner manager runs below a delegation boundary. */
static void test_unit_filter_does_not_reach_below_a_delegation_boundary(void **state)
{
	struct world *w = new_world(1);
	static const char *const units[] = { "ollama" };
	struct gs_holder *host_unit, *inner;

	(void)state;
	host_unit = holder(w, 500, 1, 500, "ollama", "0::/system.slice/ollama.service\n");
	maps(host_unit, 0);
	inner = holder(w, 501, 1, 501, "ollama", "0::/system.slice/box.service/x/system.slice/ollama.service\n");
	maps(inner, 0);
	w->sel.filters.units = units;
	w->sel.filters.n_units = 1;
	plan(w, NULL);
	assert_non_null(target(w, 500));
	assert_null(target(w, 501));
	assert_int_equal(left(w, 501)->why, GS_LEAVE_NOT_SELECTED);
	free_world(w);
}

/* Issue 11 item 4: NVML named the PID of a monitor that only has the node
 * open (no mapping): it was promoted to compute and killed. */
static void test_nvml_listed_monitor_with_only_an_fd_is_left_alone(void **state)
{
	struct world *w = new_world(1);
	struct gs_holder *job, *smi;

	(void)state;
	job = holder(w, 600, 1, 600, "python3", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(job, 0);
	nvml(w, job, 0, 1024);
	smi = holder(w, 601, 1, 601, "nvidia-smi", "0::/user.slice/user-1000.slice/session-4.scope\n");
	opens(smi, 0);
	nvml(w, smi, 0, 700); /* the PID NVML means is another process */
	smi->role = GS_ROLE_CLIENT;
	plan(w, NULL);

	assert_non_null(target(w, 600));
	assert_null(target(w, 601));
	assert_int_equal(left(w, 601)->why, GS_LEAVE_NO_CONTEXT);
	/* and its 700 MiB is not excused: the GPU is not clean while it is there */
	assert_int_equal(w->plan.baseline[0], 16 * MIB);
	free_world(w);
}

/* Issue 11 item 9: memory of processes left alone is named (they keep the
 * GPU busy), that of protected daemons is not. */
static void test_left_alone_memory_is_listed_apart_from_protected_daemons(void **state)
{
	struct world *w = new_world(1);
	static const char *const users[] = { "1000" };
	struct gs_holder *mine, *theirs, *pd;

	(void)state;
	mine = holder(w, 700, 1, 700, "train", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(mine, 0);
	nvml(w, mine, 0, 4096);
	theirs = holder(w, 701, 1, 701, "serve", "0::/user.slice/user-1001.slice/session-5.scope\n");
	theirs->info.status.uid = 1001;
	maps(theirs, 0);
	nvml(w, theirs, 0, 8192);
	pd = holder(w, 702, 1, 702, "nvidia-persiste", "0::/system.slice/nvidia-persistenced.service\n");
	maps(pd, 0);
	nvml(w, pd, 0, 64);
	pd->role = GS_ROLE_PROTECTED;
	w->sel.filters.users = users;
	w->sel.filters.n_users = 1;
	plan(w, NULL);

	assert_non_null(target(w, 700));
	assert_int_equal(left(w, 701)->why, GS_LEAVE_NOT_SELECTED);
	assert_int_equal(left(w, 702)->why, GS_LEAVE_PROTECTED);
	assert_int_equal(w->plan.baseline[0], (8192 + 64 + 16) * MIB);
	assert_int_equal(w->plan.n_others, 1);
	assert_int_equal(w->plan.others[0].pid, 701);
	assert_int_equal(w->plan.others[0].mem, 8192 * MIB);
	assert_string_equal(w->plan.others[0].comm, "serve");
	free_world(w);
}

static struct gs_procinfo named(const char *comm, const char *exe, uid_t exe_uid, mode_t mode, uid_t uid,
				const char *cgroup)
{
	struct gs_procinfo in;

	memset(&in, 0, sizeof(in));
	gs_strlcpy(in.st.comm, comm, sizeof(in.st.comm));
	gs_strlcpy(in.name, comm, sizeof(in.name));
	if (exe) {
		in.exe_ok = true;
		in.exe_stat_ok = true;
		gs_strlcpy(in.exe_name, exe, sizeof(in.exe_name));
		in.exe_uid = exe_uid;
		in.exe_mode = S_IFREG | mode;
	}
	in.status.uid = uid;
	assert_int_equal(gs_owner_from_cgroup(cgroup, &in.owner), 0);
	return in;
}

/* Issue 11 item 6: any process could call itself Xorg (PR_SET_NAME) and
 * be protected on its comm alone, its memory excused. */
static void test_protected_name_rests_on_executable_unit_and_uid(void **state)
{
	const char *session = "0::/user.slice/user-1000.slice/session-4.scope\n";
	const char *gdm = "0::/user.slice/user-120.slice/session-c1.scope\n";
	struct gs_procinfo in;

	(void)state;
	/* PR_SET_NAME("Xorg") in a python job */
	in = named("Xorg", "python3.11", 0, 0755, 1000, session);
	assert_int_equal(gs_protection_of(&in), GS_PROT_UNVERIFIED);
	/* a user's own copy named Xorg */
	in = named("Xorg", "Xorg", 1000, 0755, 1000, session);
	assert_int_equal(gs_protection_of(&in), GS_PROT_UNVERIFIED);
	/* the real binary, run by a user (anything can be preloaded into it) */
	in = named("Xorg", "Xorg", 0, 0755, 1000, session);
	assert_int_equal(gs_protection_of(&in), GS_PROT_UNVERIFIED);
	/* root's binary that others may write to */
	in = named("Xorg", "Xorg", 0, 0775, 120, gdm);
	assert_int_equal(gs_protection_of(&in), GS_PROT_UNVERIFIED);
	/* gdm's greeter X server: root's binary, a system account */
	in = named("Xorg", "Xorg", 0, 0755, 120, gdm);
	assert_int_equal(gs_protection_of(&in), GS_PROT_VERIFIED);
	/* persistenced seen by a user who cannot read its exe: its unit */
	in = named("nvidia-persiste", NULL, 0, 0, 999, "0::/system.slice/nvidia-persistenced.service\n");
	assert_int_equal(gs_protection_of(&in), GS_PROT_VERIFIED);
	/* the same unit name in a user's own manager is the user's */
	in = named("nvidia-persiste", NULL, 0, 0, 1000,
		   "0::/user.slice/user-1000.slice/user@1000.service/app.slice/nvidia-persistenced.service\n");
	assert_int_equal(gs_protection_of(&in), GS_PROT_UNVERIFIED);
	/* the executable's name is the claim even when comm says otherwise */
	in = named("worker", "nv-hostengine", 0, 0755, 0, "0::/system.slice/nvidia-dcgm.service\n");
	assert_int_equal(gs_protection_of(&in), GS_PROT_VERIFIED);
	/* no claim at all */
	in = named("python3", "python3.11", 0, 0755, 1000, session);
	assert_int_equal(gs_protection_of(&in), GS_PROT_NONE);
}

/* Issue 11 item 8: --match ran on a command line cut at 511 bytes. */
static void test_match_reads_the_whole_command_line(void **state)
{
	struct world *w = new_world(1);
	struct gs_holder *job;
	char *line = malloc(300000);

	(void)state;
	assert_non_null(line);
	memset(line, 'x', 299000);
	strcpy(line + 299000, " --model Qwen3-235B");
	job = holder(w, 800, 1, 800, "python3", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(job, 0);
	gs_strlcpy(job->info.cmdline, line, sizeof(job->info.cmdline)); /* the cut one, for tables */
	job->cmdline_full = line;
	w->sel.filters.match = "Qwen3";
	plan(w, NULL);
	assert_non_null(target(w, 800));
	job->cmdline_full = NULL;
	free(line);
	free_world(w);
}

/* e2e "reclaim -g 1 leaves the holders of GPU 0 alone": the plan takes the
 * holder of GPU 1 and leaves the one of GPU 0 out of the plan entirely. */
static void test_reclaim_g1_leaves_the_holders_of_gpu0_alone(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *a, *b;

	(void)state;
	a = holder(w, 700, 1, 700, "python3", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(a, 0);
	nvml(w, a, 0, 4000);
	b = holder(w, 701, 1, 701, "python3", "0::/user.slice/user-1000.slice/session-5.scope\n");
	maps(b, 1);
	nvml(w, b, 1, 3000);
	plan(w, "1");
	assert_non_null(target(w, 701));
	assert_null(target(w, 700));
	assert_null(left(w, 700)); /* not a holder of the selection at all */
	assert_int_equal(w->plan.n_targets, 1);
	assert_int_equal(w->plan.baseline[1], 16 * MIB);
	free_world(w);
}

/* e2e safety "never gpuslate itself, its ancestors, PID 1": each holds the
 * GPU and is left alone with its reason, whatever the selection. */
static void test_gpuslate_its_ancestors_and_pid1_are_never_targets(void **state)
{
	struct world *w = new_world(1);
	struct gs_holder *init, *shell, *me;

	(void)state;
	init = holder(w, 1, 0, 1, "systemd", "0::/init.scope\n");
	maps(init, 0);
	shell = holder(w, 500, 1, 500, "bash", "0::/user.slice/user-0.slice/session-1.scope\n");
	maps(shell, 0);
	me = holder(w, SELF, 500, SELF, "gpuslate", "0::/user.slice/user-0.slice/session-1.scope\n");
	maps(me, 0);
	plan(w, NULL);
	assert_int_equal(w->plan.n_targets, 0);
	assert_int_equal(left(w, 1)->why, GS_LEAVE_INIT);
	assert_int_equal(left(w, 500)->why, GS_LEAVE_ANCESTOR);
	assert_int_equal(left(w, SELF)->why, GS_LEAVE_SELF);
	free_world(w);
}

/* The user database is the caller's: the plan resolves -u through the
 * resolver it is given (here a literal one), never through NSS itself. */
static int literal_users(const char *name, uid_t *ret)
{
	if (strcmp(name, "alice"))
		return -ENOENT;
	*ret = 1000;
	return 0;
}

static void test_reclaim_u_resolves_names_through_the_resolver_given(void **state)
{
	static const char *const alice[] = { "alice" };
	static const char *const bob[] = { "bob" };
	struct world *w = new_world(1);
	struct gs_holder *a, *r;
	char err[256] = "";

	(void)state;
	a = holder(w, 600, 1, 600, "python3", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(a, 0);
	r = holder(w, 601, 1, 601, "python3", "0::/user.slice/user-0.slice/session-2.scope\n");
	r->info.status.uid = 0;
	maps(r, 0);
	w->sel.filters.users = alice;
	w->sel.filters.n_users = 1;
	w->sel.filters.resolve_user = literal_users;
	plan(w, NULL);
	assert_non_null(target(w, 600));
	assert_int_equal(left(w, 601)->why, GS_LEAVE_NOT_SELECTED);
	gs_plan_free(&w->plan);

	/* A name the resolver does not know is a usage error naming it. */
	w->sel.filters.users = bob;
	assert_int_equal(gs_plan_build(&w->s, &w->pt, &w->sel, SELF, &w->self_owner, &w->plan, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "unknown user 'bob'");
	/* Without a resolver only numeric uids are users. */
	w->sel.filters.users = alice;
	w->sel.filters.resolve_user = NULL;
	assert_int_equal(gs_plan_build(&w->s, &w->pt, &w->sel, SELF, &w->self_owner, &w->plan, err, sizeof(err)),
			 -EINVAL);
	free_world(w);
}

/* The filters themselves: which values matched, and exact containers once
 * a prefix was resolved. */
static void test_filters_report_the_values_that_matched_nothing(void **state)
{
	static const char *const users[] = { "0", "30" };
	static const char *const units[] = { "sglang-qwen.service", "ollama" };
	static const char *const containers[] = { "abcd" };
	struct gs_filter_spec spec = {
		.users = users, .n_users = 2, .units = units, .n_units = 2,
		.containers = containers, .n_containers = 1, .match = "vllm",
	};
	struct gs_filters f;
	struct gs_filter_hits hits = { 0 };
	struct gs_owner unit, docker;
	char err[128], out[8][320];
	size_t n;

	(void)state;
	assert_int_equal(gs_owner_from_cgroup("0::/system.slice/ollama.service\n", &unit), 0);
	assert_int_equal(gs_owner_from_cgroup("0::/docker/abcd456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
					      &docker), 0);
	assert_int_equal(gs_filters_compile(&spec, &f, err, sizeof(err)), 0);
	assert_false(gs_filters_test(&f, 0, &unit, "python3 -m vllm serve", &hits));
	assert_false(gs_filters_test(&f, 0, &docker, NULL, &hits));
	n = gs_filters_unmatched(&spec, &hits, out, GS_ARRAY_SIZE(out));
	assert_int_equal(n, 2);
	assert_string_equal(out[0], "-u 30");
	assert_string_equal(out[1], "--unit sglang-qwen.service");

	/* a resolved container matches exactly: "abcd" no longer a prefix */
	spec.containers_exact = true;
	memset(&hits, 0, sizeof(hits));
	(void)gs_filters_test(&f, 0, &docker, NULL, &hits);
	assert_int_equal(hits.containers, 0);
	gs_filters_free(&f);

	spec.match = "(";
	assert_int_equal(gs_filters_compile(&spec, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--match '('"));
}

/* Issue 15 item 1: a holder that set SIGTERM to SIG_IGN, and a container's
 * main process (PID 1 of its namespace) without a handler, waited out the
 * whole grace period: the kernel drops their SIGTERM. The plan kills them at
 * once; a handler, or a SIGTERM only blocked, keeps the ladder. */
static void sigmasks(struct gs_holder *h, pid_t nspid, uint64_t blk, uint64_t ign, uint64_t cgt)
{
	h->info.status.has_nspid = true;
	h->info.status.nspid = nspid;
	h->info.status.has_sigmasks = true;
	h->info.status.sig_blk = blk;
	h->info.status.sig_ign = ign;
	h->info.status.sig_cgt = cgt;
}

static void test_sigterm_that_would_be_dropped_gets_sigkill_at_once(void **state)
{
	struct world *w = new_world(1);
	const uint64_t term = 1ULL << (15 - 1);
	struct gs_holder *ign, *init, *init_handler, *blocked, *plain;
	const char *cg = "0::/user.slice/user-1000.slice/session-4.scope\n";

	(void)state;
	ign = holder(w, 100, 1, 100, "autotune", cg);
	sigmasks(ign, 100, 0, term, 0);
	init = holder(w, 200, 1, 200, "python3", "0::/docker/3f2a1b9c0d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4\n");
	sigmasks(init, 1, 0, 0, 0);
	init_handler = holder(w, 300, 1, 300, "vllm", cg);
	sigmasks(init_handler, 1, 0, 0, term);
	blocked = holder(w, 400, 1, 400, "job", cg);
	sigmasks(blocked, 400, term, term, 0);
	plain = holder(w, 500, 1, 500, "serve", cg);
	for (unsigned i = 0; i < w->s.n_holders; i++) {
		maps(&w->holders[i], 0);
		nvml(w, &w->holders[i], 0, 1024);
	}
	plan(w, NULL);

	assert_int_equal(target(w, 100)->action, GS_ACT_KILL);
	assert_int_equal(target(w, 100)->term, GS_TERM_IGNORED);
	assert_int_equal(target(w, 200)->action, GS_ACT_KILL);
	assert_int_equal(target(w, 200)->term, GS_TERM_NS_INIT);
	assert_int_equal(target(w, 300)->action, GS_ACT_SIGNAL);
	assert_int_equal(target(w, 300)->term, GS_TERM_DELIVERED);
	assert_int_equal(target(w, 400)->action, GS_ACT_SIGNAL);
	assert_int_equal(target(w, 500)->action, GS_ACT_SIGNAL);
	assert_int_equal(target(w, 500)->term, GS_TERM_UNKNOWN);
	assert_string_equal(gs_action_str(GS_ACT_KILL), "kill");
	(void)plain;
	free_world(w);
}

/* It is PID 1 of the PID namespace (4, ino). */
static void in_pidns(struct gs_holder *h, pid_t nspid, ino_t ino)
{
	h->info.status.has_nspid = true;
	h->info.status.nspid = nspid;
	h->info.pidns_ok = true;
	h->info.pidns_dev = 4;
	h->info.pidns_ino = ino;
}

/* Review 5 item 1: the unit stop was chosen before the guards left a
 * holder inside the unit's cgroup alone: a CI runner's service (main 300)
 * whose job started a container, its init 310 in a delegated subtree of
 * the unit. Another process of the container's namespace (320, joined from
 * a login session) holds only GPU 1. -g 0 left 310 alone (its end would end
 * 320) yet stopped ci.service, which ends 310, and the kernel 320 with it. */
static void test_unit_holding_an_init_left_alone_is_not_stopped(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *runner, *init, *peer;

	(void)state;
	runner = holder(w, 300, 1, 300, "runner", "0::/system.slice/ci.service\n");
	maps(runner, 0);
	init = holder(w, 310, 300, 310, "ctr-init",
		      "0::/system.slice/ci.service/job-7/system.slice/train.service\n");
	maps(init, 0);
	in_pidns(init, 1, 4026532100);
	peer = holder(w, 320, 1, 320, "probe", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(peer, 1);
	in_pidns(peer, 14, 4026532100);
	plan(w, "0");

	assert_null(target(w, 310));
	assert_int_equal(left(w, 310)->why, GS_LEAVE_NS_INIT);
	assert_int_equal(left(w, 310)->would_end, 320);
	/* the unit would take 310: not stopped; and its main process, whose
	 * exit would make systemd stop it, is left alone too */
	assert_int_equal(w->plan.n_units, 0);
	assert_null(target(w, 300));
	assert_int_equal(left(w, 300)->why, GS_LEAVE_UNIT_MAIN);
	assert_int_equal(left(w, 300)->would_end, 310);

	/* with GPU 1 too, the namespace goes whole, and the unit through systemd */
	gs_plan_free(&w->plan);
	plan(w, NULL);
	assert_int_equal(target(w, 300)->action, GS_ACT_STOP_UNIT);
	assert_non_null(target(w, 310));
	assert_non_null(target(w, 320));
	assert_int_equal(w->plan.n_units, 1);
	free_world(w);
}

/* Review 5 item 2: a unit's target is the init of a PID namespace
 * (PrivatePIDs=yes: the service's main process is PID 1 of its own
 * namespace) that a process outside the unit's cgroup joined (nsenter from
 * a login session), holding only GPU 1. The namespace-init rule skipped
 * unit stops: -g 0 stopped the unit, or, when that failed, signalled 300;
 * either way the kernel ended 320. */
static void test_unit_target_that_inits_a_namespace_with_a_holder_left_alone_stays(void **state)
{
	struct world *w = new_world(2);
	struct gs_holder *svc, *joined;

	(void)state;
	svc = holder(w, 300, 1, 300, "trainer", "0::/system.slice/trainer.service\n");
	maps(svc, 0);
	in_pidns(svc, 1, 4026532200);
	joined = holder(w, 320, 1, 320, "debug", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(joined, 1);
	in_pidns(joined, 2, 4026532200);
	plan(w, "0");

	assert_null(target(w, 300));
	assert_int_equal(left(w, 300)->why, GS_LEAVE_NS_INIT);
	assert_int_equal(left(w, 300)->would_end, 320);
	assert_int_equal(w->plan.n_units, 0);
	assert_int_equal(w->plan.n_targets, 0);

	/* both GPUs: both go, the unit through systemd */
	gs_plan_free(&w->plan);
	plan(w, NULL);
	assert_int_equal(target(w, 300)->action, GS_ACT_STOP_UNIT);
	assert_int_equal(target(w, 320)->action, GS_ACT_SIGNAL);
	free_world(w);
}

/* Issue 15 item 3: memory no process holds. */
static void test_memory_held_by_no_process(void **state)
{
	struct world *w = new_world(3);
	struct gs_holder *live, *dead, *creator, *heir;
	const char *cg = "0::/user.slice/user-1000.slice/session-4.scope\n";
	uint64_t u;

	(void)state;
	for (unsigned g = 0; g < 3; g++) {
		w->gpus[g].mem_basis = GS_MEM_V2;
		gs_gpuset_add(&w->s.nvml_listed, g);
	}
	/* GPU 0: a live holder's 2 GiB and 4 GiB that the driver keeps */
	live = holder(w, 100, 1, 100, "serve", cg);
	maps(live, 0);
	nvml(w, live, 0, 2048);
	w->gpus[0].mem_used += 4096 * MIB;
	/* GPU 1: a holder that is gone, still listed (teardown, or for good) */
	dead = holder(w, 200, 1, 200, "train", cg);
	dead->alive = false;
	gs_gpuset_add(&dead->gpus, 1);
	nvml(w, dead, 1, 3000);
	/* GPU 2: the fork case: the dead creator's memory, a live heir maps it */
	creator = holder(w, 300, 1, 300, "torchrun", cg);
	creator->alive = false;
	gs_gpuset_add(&creator->gpus, 2);
	nvml(w, creator, 2, 5000);
	heir = holder(w, 301, 1, 300, "worker", cg);
	maps(heir, 2);

	assert_true(gs_snapshot_unowned(&w->s, 0, &u));
	assert_int_equal(u, 4096 * MIB);
	assert_true(gs_snapshot_unowned(&w->s, 1, &u));
	assert_int_equal(u, 3000 * MIB);
	assert_true(gs_snapshot_unowned(&w->s, 2, &u));
	assert_int_equal(u, 0);
	/* Nothing unreadable: nothing to warn about. */
	assert_false(gs_snapshot_denied_matters(&w->s, 16 * MIB));
	/* One process unreadable while 4 GiB are held by no visible process:
	 * it may hold them. */
	w->s.n_denied = 1;
	w->s.denied[0] = 1;
	assert_true(gs_snapshot_denied_matters(&w->s, 16 * MIB));

	/* What cannot be told is not 0: v1 figures with the reservation inside,
	 * no process list, a live process whose memory NVML does not report. */
	w->gpus[2].mem_basis = GS_MEM_V1;
	assert_false(gs_snapshot_unowned(&w->s, 2, &u));
	w->gpus[2].mem_basis = GS_MEM_V2;
	w->s.nvml_listed.bits[0] &= ~(1ULL << 1);
	assert_false(gs_snapshot_unowned(&w->s, 1, &u));
	w->nvml[0].mem_known = false;
	assert_false(gs_snapshot_unowned(&w->s, 0, &u));
	assert_false(gs_snapshot_unowned(&w->s, 3, &u));
	free_world(w);
}

/* Everything accounted for: an unreadable process (PID 1 of a container or
 * sandbox) is no reason to warn. */
static void test_unreadable_process_matters_only_with_unaccounted_memory(void **state)
{
	struct world *w = new_world(1);
	struct gs_holder *live = holder(w, 100, 1, 100, "serve", "0::/user.slice/user-1000.slice/session-4.scope\n");
	uint64_t u;

	(void)state;
	w->gpus[0].mem_basis = GS_MEM_V2;
	gs_gpuset_add(&w->s.nvml_listed, 0);
	maps(live, 0);
	nvml(w, live, 0, 2048);
	w->s.n_denied = 1;
	w->s.denied[0] = 1;
	assert_true(gs_snapshot_unowned(&w->s, 0, &u));
	assert_int_equal(u, 0);
	assert_false(gs_snapshot_denied_matters(&w->s, 16 * MIB));
	/* up to the tolerance is no matter either */
	w->gpus[0].mem_used += 16 * MIB;
	assert_false(gs_snapshot_denied_matters(&w->s, 16 * MIB));
	w->gpus[0].mem_used += 1;
	assert_true(gs_snapshot_denied_matters(&w->s, 16 * MIB));
	/* no memory figures: any of them may be a holder */
	w->gpus[0].mem_known = false;
	assert_true(gs_snapshot_denied_matters(&w->s, 16 * MIB));
	free_world(w);
}

/* run --guard plans for the new intruders only (sel.selectable): here the
 * unit's main process started holding GPU 0 while COMMAND ran, beside its
 * child that the reclaim left alone. Every other holder is left alone as
 * not selected and never taken with the intruder, so the unit-main rule
 * sees the child: the main process is not signalled (systemd would stop
 * the unit and end the child), nor is the unit stopped. */
static bool only_pid_300(void *ud, pid_t pid, uint64_t starttime)
{
	(void)ud;
	return pid == 300 && starttime == 3000;
}

static void test_guard_selection_keeps_the_unit_of_a_holder_left_alone(void **state)
{
	struct world *w = new_world(1);
	struct gs_holder *main_proc, *kept;

	(void)state;
	main_proc = holder(w, 300, 1, 300, "trainer", "0::/system.slice/svc.service\n");
	maps(main_proc, 0);
	nvml(w, main_proc, 0, 256);
	kept = holder(w, 301, 300, 300, "keeper", "0::/system.slice/svc.service\n");
	maps(kept, 0);
	nvml(w, kept, 0, 0);
	w->sel.selectable = only_pid_300;
	plan(w, NULL);
	assert_int_equal(w->plan.n_targets, 0);
	assert_int_equal(w->plan.n_units, 0);
	assert_int_equal(left(w, 300)->why, GS_LEAVE_UNIT_MAIN);
	assert_int_equal(left(w, 300)->would_end, 301);
	assert_int_equal(left(w, 301)->why, GS_LEAVE_NOT_SELECTED);

	/* Without the limit both are targets and the unit is stopped. */
	gs_plan_free(&w->plan);
	w->sel.selectable = NULL;
	plan(w, NULL);
	assert_non_null(target(w, 300));
	assert_non_null(target(w, 301));
	assert_int_equal(w->plan.n_units, 1);
	free_world(w);
}

/* The intruder leads a process group: a member that holds the GPU and is
 * not selectable (here: known to the run) stays; one that holds nothing
 * goes with its leader, as reclaim takes a group. */
static void test_guard_selection_takes_no_unselectable_group_member(void **state)
{
	struct world *w = new_world(1);
	struct gs_holder *leader, *member;

	(void)state;
	leader = holder(w, 300, 1, 300, "launcher", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(leader, 0);
	nvml(w, leader, 0, 512);
	member = holder(w, 301, 1, 300, "worker", "0::/user.slice/user-1000.slice/session-4.scope\n");
	maps(member, 0);
	nvml(w, member, 0, 512);
	proc(w, 302, 300, 300, "logger");
	w->sel.selectable = only_pid_300;
	plan(w, NULL);
	assert_non_null(target(w, 300));
	assert_null(target(w, 301));
	assert_int_equal(left(w, 301)->why, GS_LEAVE_NOT_SELECTED);
	assert_non_null(target(w, 302));
	assert_int_equal(target(w, 302)->why, GS_WHY_GROUP_MEMBER);
	free_world(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_member_holding_an_unselected_gpu_is_not_taken),
		cmocka_unit_test(test_group_member_shows_the_gpus_it_holds),
		cmocka_unit_test(test_group_with_no_member_taken_is_a_plain_signal),
		cmocka_unit_test(test_descendant_holding_an_unselected_gpu_is_not_taken),
		cmocka_unit_test(test_unit_peer_holding_an_unselected_gpu_blocks_the_unit_stop),
		cmocka_unit_test(test_unprivileged_plans_what_it_may_do),
		cmocka_unit_test(test_unit_peer_in_a_delegated_subtree_blocks_the_unit_stop),
		cmocka_unit_test(test_unit_below_a_delegation_boundary_is_never_stopped_on_the_host),
		cmocka_unit_test(test_unit_filter_does_not_reach_below_a_delegation_boundary),
		cmocka_unit_test(test_nvml_listed_monitor_with_only_an_fd_is_left_alone),
		cmocka_unit_test(test_left_alone_memory_is_listed_apart_from_protected_daemons),
		cmocka_unit_test(test_protected_name_rests_on_executable_unit_and_uid),
		cmocka_unit_test(test_match_reads_the_whole_command_line),
		cmocka_unit_test(test_filters_report_the_values_that_matched_nothing),
		cmocka_unit_test(test_reclaim_g1_leaves_the_holders_of_gpu0_alone),
		cmocka_unit_test(test_gpuslate_its_ancestors_and_pid1_are_never_targets),
		cmocka_unit_test(test_reclaim_u_resolves_names_through_the_resolver_given),
		cmocka_unit_test(test_sigterm_that_would_be_dropped_gets_sigkill_at_once),
		cmocka_unit_test(test_unit_holding_an_init_left_alone_is_not_stopped),
		cmocka_unit_test(test_unit_target_that_inits_a_namespace_with_a_holder_left_alone_stays),
		cmocka_unit_test(test_memory_held_by_no_process),
		cmocka_unit_test(test_unreadable_process_matters_only_with_unaccounted_memory),
		cmocka_unit_test(test_guard_selection_keeps_the_unit_of_a_holder_left_alone),
		cmocka_unit_test(test_guard_selection_takes_no_unselectable_group_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

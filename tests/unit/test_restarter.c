/* The restarter decisions from literal hosts (as test_plan.c): snapshots,
 * process tables, cgroups, command lines and the managers' answers written
 * out here; nothing is asked of systemctl, docker or /proc. Each test is a
 * situation of issue 14 and asserts what gpuslate would do about it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "core/restarter.h"
#include "core/snapshot.h"
#include "proc/owner.h"
#include "proc/supervised.h"
#include "util/util.h"

#define MIB GS_MIB
#define SELF 999000

#define SESSION "0::/user.slice/user-1000.slice/session-4.scope\n"

/* What /proc and the managers would say about a process. */
struct said {
	pid_t pid;
	const char *cmdline, *stdin_target, *cgroup;
};

struct world {
	struct gs_snapshot s;
	struct gs_ptable pt;
	struct gs_gpu gpus[2];
	struct gs_holder holders[8];
	struct gs_nvml_entry nvml[8];
	struct gs_pidstat procs[16];
	struct said said[16];
	size_t n_said;
	struct gs_owner self_owner;
	struct gs_selection sel;
	struct gs_plan plan;
	/* The managers' answers. */
	const char *unit_restart, *unit_cgroup, *container_policy;
	/* The process supervisor found above a pid (kind NONE: none). */
	struct gs_supervised sup;
	int unit_queries;
};

static struct world *new_world(void)
{
	struct world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	for (unsigned g = 0; g < 2; g++) {
		w->gpus[g].index = g;
		w->gpus[g].minor = g;
		snprintf(w->gpus[g].uuid, sizeof(w->gpus[g].uuid), "GPU-a2983c1e-0000-4000-8000-%012x", g);
		w->gpus[g].mem_known = true;
		w->gpus[g].mem_total = 143771 * MIB;
	}
	w->s.gpus = w->gpus;
	w->s.n_gpus = 2;
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

/* A process (ascending pids), with its command line, stdin and cgroup. */
static struct gs_pidstat *proc(struct world *w, pid_t pid, pid_t ppid, const char *comm, const char *cmdline,
			       const char *stdin_target, const char *cgroup)
{
	struct gs_pidstat *st = &w->procs[w->pt.n++];

	st->pid = pid;
	st->ppid = ppid;
	st->pgrp = pid;
	st->session = pid;
	st->state = 'S';
	st->starttime = (uint64_t)pid * 10;
	gs_strlcpy(st->comm, comm, sizeof(st->comm));
	w->said[w->n_said++] = (struct said){ pid, cmdline, stdin_target, cgroup };
	return st;
}

/* A holder of GPU g with mib MiB. */
static struct gs_holder *holder(struct world *w, pid_t pid, pid_t ppid, const char *comm, const char *cgroup,
				unsigned g, uint64_t mib)
{
	struct gs_holder *h = &w->holders[w->s.n_holders++];
	struct gs_pidstat *st = proc(w, pid, ppid, comm, comm, "/dev/null", cgroup);

	h->pid = pid;
	h->alive = h->info_ok = true;
	h->info.st = *st;
	h->info.status.uid = 1000;
	gs_strlcpy(h->info.name, comm, sizeof(h->info.name));
	assert_int_equal(gs_owner_from_cgroup(cgroup, &h->info.owner), 0);
	h->role = GS_ROLE_COMPUTE;
	gs_gpuset_add(&h->gpus, g);
	gs_minorset_add(&h->map_minors, g);
	gs_minorset_add(&h->fd_minors, g);
	h->maps_gpu = true;
	h->n_fds++;
	w->nvml[w->s.n_nvml++] = (struct gs_nvml_entry){ .pid = pid, .gpu = g, .mem_known = true, .mem_used = mib * MIB };
	w->gpus[g].mem_used += mib * MIB;
	h->nvml_listed = true;
	gs_gpuset_add(&h->nvml_gpus, g);
	h->mem_known = true;
	h->mem_used = mib * MIB;
	return h;
}

static const struct said *said_of(struct world *w, pid_t pid)
{
	for (size_t i = 0; i < w->n_said; i++)
		if (w->said[i].pid == pid)
			return &w->said[i];
	return NULL;
}

static int read_cmdline(void *ud, pid_t pid, char **ret)
{
	const struct said *s = said_of(ud, pid);

	if (!s)
		return -ESRCH;
	*ret = strdup(s->cmdline);
	return *ret ? 0 : -ENOMEM;
}

static int read_stdin(void *ud, pid_t pid, char *buf, size_t len)
{
	const struct said *s = said_of(ud, pid);

	if (!s)
		return -ESRCH;
	gs_strlcpy(buf, s->stdin_target, len);
	return 0;
}

static int read_cgroup(void *ud, pid_t pid, char *buf, size_t len)
{
	const struct said *s = said_of(ud, pid);

	if (!s)
		return -ESRCH;
	gs_strlcpy(buf, s->cgroup, len);
	return 0;
}

static int unit_props(void *ud, const char *unit, const char *container, struct gs_unit_props *ret)
{
	struct world *w = ud;

	(void)unit;
	(void)container;
	w->unit_queries++;
	if (!w->unit_restart)
		return -EIO;
	memset(ret, 0, sizeof(*ret));
	gs_strlcpy(ret->restart, w->unit_restart, sizeof(ret->restart));
	gs_strlcpy(ret->control_group, w->unit_cgroup, sizeof(ret->control_group));
	ret->restart_ms = 100;
	ret->main_pid = 300;
	return 0;
}

static int container_policy(void *ud, const char *runtime, const char *id, char *ret, size_t len)
{
	struct world *w = ud;

	(void)runtime;
	(void)id;
	if (!w->container_policy)
		return -ENOENT;
	gs_strlcpy(ret, w->container_policy, len);
	return 0;
}

/* The supervisor of pid: w->sup for its program and what runs below it. */
static int supervised(void *ud, const struct gs_ptable *pt, pid_t pid, struct gs_supervised *ret)
{
	struct world *w = ud;

	if (w->sup.kind == GS_SUP_NONE ||
	    (pid != w->sup.main_pid && !gs_ptable_is_ancestor(pt, w->sup.main_pid, pid)))
		return 0;
	*ret = w->sup;
	return w->sup.name[0] ? 1 : 2;
}

static void plan(struct world *w, const char *gpus, bool include_parent)
{
	struct gs_restarter_env env = {
		.self = SELF, .include_parent = include_parent, .unit_props = unit_props, .unit_ud = w,
		.container_policy = container_policy, .container_ud = w, .read_cmdline = read_cmdline, .read_stdin = read_stdin,
		.read_cgroup = read_cgroup, .supervised = supervised, .supervised_ud = w, .ud = w,
	};
	char err[256] = "";

	w->sel.gpus = gpus;
	assert_int_equal(gs_plan_build(&w->s, &w->pt, &w->sel, SELF, &w->self_owner, &w->plan, err, sizeof(err)), 0);
	assert_int_equal(gs_restarters_plan(&w->plan, &w->s, &w->pt, &env), 0);
}

static const struct gs_restarter *restarter_of(const struct world *w, pid_t pid)
{
	const struct gs_target *t = gs_plan_find_target(&w->plan, pid);

	assert_non_null(t);
	return t->restarter >= 0 ? &w->plan.restarters[t->restarter] : NULL;
}

static void test_timespans_as_systemd_writes_them(void **state)
{
	uint64_t ms;

	(void)state;
	assert_int_equal(gs_timespan_ms("100ms", &ms), 0);
	assert_int_equal(ms, 100);
	assert_int_equal(gs_timespan_ms("1min 30s", &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(gs_timespan_ms("5s", &ms), 0);
	assert_int_equal(ms, 5000);
	assert_int_equal(gs_timespan_ms("0", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(gs_timespan_ms("500us", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(gs_timespan_ms("infinity", &ms), 0);
	assert_true(ms == UINT64_MAX);
	assert_int_equal(gs_timespan_ms("soon", &ms), -EINVAL);
	assert_int_equal(gs_timespan_ms("", &ms), -EINVAL);
}

/* Shells a person types into are never supervisors; shells running a
 * program (-c, a script, commands from a pipe) may be. */
static void test_interactive_shells_and_shells_running_a_program(void **state)
{
	(void)state;
	assert_true(gs_restarter_is_interactive_shell("bash", "-bash", "/dev/pts/3"));
	assert_true(gs_restarter_is_interactive_shell("bash", "bash", "/dev/pts/3"));
	assert_true(gs_restarter_is_interactive_shell("zsh", "zsh", "/dev/tty1"));
	assert_true(gs_restarter_is_interactive_shell("bash", "bash --norc --noprofile -i", "pipe:[1234]"));
	assert_true(gs_restarter_is_interactive_shell("bash", "bash -o vi", "/dev/pts/0"));
	assert_false(gs_restarter_is_interactive_shell("bash", "bash", "pipe:[1234]"));
	assert_false(gs_restarter_is_interactive_shell("bash", "bash loop.sh", "/dev/pts/3"));
	assert_false(gs_restarter_is_interactive_shell("bash", "bash -c while true; do python3 x.py; done", "/dev/pts/3"));
	assert_false(gs_restarter_is_interactive_shell("sh", "sh -ec run-workers", "/dev/pts/3"));
	assert_false(gs_restarter_is_interactive_shell("bash", "bash --rcfile x.rc run.sh", "/dev/pts/3"));
	assert_false(gs_restarter_is_interactive_shell("python3", "python3 -m torch.distributed.run", "/dev/pts/3"));
}

/* The incident: `while true; do python3 holder.py; sleep 0.2; done` in a
 * script. Watched without --include-parent; stopped first with it. */
static void test_bash_loop_is_a_supervising_parent(void **state)
{
	struct world *w = new_world();

	(void)state;
	proc(w, 200, 150, "bash", "bash loop.sh", "/dev/null", SESSION);
	holder(w, 201, 200, "python3", SESSION, 0, 4714);
	plan(w, "0", false);
	assert_int_equal(w->plan.n_targets, 1);
	assert_non_null(restarter_of(w, 201));
	assert_int_equal(restarter_of(w, 201)->kind, GS_RESTARTER_PARENT);
	assert_int_equal(restarter_of(w, 201)->pid, 200);
	assert_int_equal(restarter_of(w, 201)->handling, GS_HANDLE_WATCHED);
	assert_string_equal(restarter_of(w, 201)->stop_with, "--include-parent");
	gs_plan_free(&w->plan);

	plan(w, "0", true);
	assert_int_equal(w->plan.n_targets, 2);
	assert_int_equal(w->plan.targets[0].pid, 200); /* the parent first */
	assert_int_equal(w->plan.targets[0].why, GS_WHY_PARENT);
	assert_int_equal(w->plan.targets[0].why_pid, 201);
	assert_int_equal(w->plan.targets[0].starttime, 2000);
	assert_int_equal(w->plan.targets[0].holder, -1);
	assert_int_equal(restarter_of(w, 201)->handling, GS_HANDLE_PARENT_STOP);
	free_world(w);
}

/* Never a restarter: the shell that started gpuslate (its ancestor), an
 * interactive shell, PID 1, a parent in another cgroup (a container's shim:
 * the container's policy is what restarts). */
static void test_parents_that_are_not_supervisors(void **state)
{
	struct world *w = new_world();

	(void)state;
	proc(w, 100, 1, "bash", "-bash", "/dev/pts/1", SESSION);            /* login shell */
	holder(w, 101, 100, "python3", SESSION, 0, 1024);
	proc(w, 200, 1, "bash", "bash run.sh", "/dev/null", SESSION);      /* runs gpuslate */
	holder(w, 201, 200, "python3", SESSION, 0, 1024);
	proc(w, 300, 1, "containerd-shim", "containerd-shim-runc-v2 -id x", "/dev/null", "0::/system.slice/containerd.service\n");
	holder(w, 301, 300, "python3", "0::/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", 0, 1024);
	holder(w, 401, 1, "python3", SESSION, 0, 1024);
	proc(w, 500, 1, "sudo", "sudo python3 serve.py", "/dev/null", SESSION);  /* starts once */
	holder(w, 501, 500, "python3", SESSION, 0, 1024);
	proc(w, SELF, 200, "gpuslate", "gpuslate reclaim -y", "/dev/pts/2", SESSION);
	plan(w, "0", true);
	assert_int_equal(w->plan.n_targets, 5); /* nobody added */
	assert_null(restarter_of(w, 501));
	assert_null(restarter_of(w, 101));
	assert_null(restarter_of(w, 201));
	assert_null(restarter_of(w, 301)); /* no restart policy either */
	assert_null(restarter_of(w, 401));
	/* The login shell is no restarter, but a loop typed at it restarts
	 * its child: it is watched. Never the shell that runs gpuslate, nor
	 * a parent that is no shell. */
	assert_int_equal(gs_plan_find_target(&w->plan, 101)->shell_parent, 100);
	assert_int_equal(gs_plan_find_target(&w->plan, 201)->shell_parent, 0);
	assert_int_equal(gs_plan_find_target(&w->plan, 501)->shell_parent, 0);
	assert_int_equal(gs_plan_find_target(&w->plan, 401)->shell_parent, 0);
	free_world(w);
}

/* After the stop, systemd's word on a signalled unit: a restart scheduled
 * (auto-restart, auto-restart-queued of systemd 254+), one under way
 * (activating) or one that follows the stop of its other processes
 * (deactivating) is coming back; stopped, failed or running is not. */
static void test_unit_restart_pending_from_its_state(void **state)
{
	static const struct {
		const char *active, *sub;
		bool pending;
	} cases[] = {
		{ "activating", "auto-restart", true },
		{ "activating", "auto-restart-queued", true },
		{ "activating", "start-pre", true },
		{ "activating", "start", true },
		{ "inactive", "dead", false },
		{ "failed", "failed", false },
		{ "deactivating", "stop-sigterm", true },
		{ "deactivating", "final-sigkill", true },
		{ "active", "running", false },
		{ "", "", false },
	};

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(cases); i++) {
		struct gs_unit_state st = { 0 };

		gs_strlcpy(st.active, cases[i].active, sizeof(st.active));
		gs_strlcpy(st.sub, cases[i].sub, sizeof(st.sub));
		if (gs_unit_restart_pending(&st) != cases[i].pending)
			fail_msg("%s/%s: pending should be %d", cases[i].active, cases[i].sub, cases[i].pending);
	}
}

/* A service's main process that supervises workers: ending it is the
 * unit's business (the manager restarts or stops it): named, not stopped. */
static void test_parent_that_is_a_units_main_process_is_not_stopped(void **state)
{
	struct world *w = new_world();

	(void)state;
	proc(w, 300, 1, "supervisord", "supervisord -n", "/dev/null", "0::/system.slice/supervisor.service\n");
	holder(w, 301, 300, "python3", "0::/system.slice/supervisor.service\n", 0, 1024);
	w->sel.no_units = true; /* signalled, so its parent is asked about */
	plan(w, "0", true);
	assert_int_equal(w->plan.n_targets, 1);
	assert_non_null(restarter_of(w, 301));
	assert_int_equal(restarter_of(w, 301)->kind, GS_RESTARTER_PARENT);
	assert_int_equal(restarter_of(w, 301)->handling, GS_HANDLE_WATCHED);
	assert_string_equal(restarter_of(w, 301)->stop_with, "--unit supervisor.service");
	free_world(w);
}

/* A Restart=always unit stopped through systemd stays stopped; its manager
 * must report the cgroup the process is in, or it is another unit. */
static void test_restart_always_unit(void **state)
{
	struct world *w = new_world();

	(void)state;
	holder(w, 300, 1, "python3", "0::/system.slice/trainer.service\n", 0, 4096);
	w->unit_restart = "always";
	w->unit_cgroup = "/system.slice/trainer.service";
	plan(w, "0", false);
	assert_int_equal(w->plan.targets[0].action, GS_ACT_STOP_UNIT);
	assert_non_null(restarter_of(w, 300));
	assert_int_equal(restarter_of(w, 300)->kind, GS_RESTARTER_UNIT);
	assert_string_equal(restarter_of(w, 300)->policy, "always");
	assert_int_equal(restarter_of(w, 300)->restart_ms, 100);
	assert_int_equal(restarter_of(w, 300)->handling, GS_HANDLE_UNIT_STOP);
	gs_plan_free(&w->plan);

	w->unit_cgroup = "/elsewhere.slice/trainer.service";
	plan(w, "0", false);
	assert_null(restarter_of(w, 300));
	gs_plan_free(&w->plan);

	w->unit_restart = "no";
	w->unit_cgroup = "/system.slice/trainer.service";
	plan(w, "0", false);
	assert_null(restarter_of(w, 300));
	free_world(w);
}

#define DOCKER_ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* docker --restart=always: stopped with docker stop, unless the container
 * holds something the selection leaves alone (then signalled and watched). */
static void test_container_with_restart_policy(void **state)
{
	struct world *w = new_world();

	(void)state;
	proc(w, 300, 1, "containerd-shim", "containerd-shim-runc-v2", "/dev/null", "0::/system.slice/containerd.service\n");
	holder(w, 301, 300, "python3", "0::/docker/" DOCKER_ID "\n", 0, 4096);
	w->container_policy = "always";
	plan(w, "0", false);
	assert_int_equal(w->plan.targets[0].action, GS_ACT_STOP_CONTAINER);
	assert_int_equal(w->plan.n_units, 1);
	assert_string_equal(w->plan.units[0].runtime, "docker");
	assert_string_equal(w->plan.units[0].unit, DOCKER_ID);
	assert_int_equal(restarter_of(w, 301)->kind, GS_RESTARTER_CONTAINER);
	assert_int_equal(restarter_of(w, 301)->handling, GS_HANDLE_RUNTIME_STOP);
	gs_plan_free(&w->plan);

	/* Another process of the container holds GPU 1, not selected. */
	holder(w, 302, 300, "python3", "0::/docker/" DOCKER_ID "\n", 1, 1024);
	plan(w, "0", false);
	assert_int_equal(w->plan.targets[0].action, GS_ACT_SIGNAL);
	assert_int_equal(restarter_of(w, 301)->handling, GS_HANDLE_WATCHED);
	assert_string_equal(restarter_of(w, 301)->stop_with, "docker stop 0123456789ab");
	gs_plan_free(&w->plan);

	w->container_policy = "no";
	plan(w, "0,1", false);
	assert_null(restarter_of(w, 301));
	assert_int_equal(w->plan.targets[0].action, GS_ACT_SIGNAL);
	free_world(w);
}

/* docker-in-docker: a container nested in the one with the restart
 * policy is named after the innermost container, but `docker stop` of the
 * outer one ends it too: its GPU 1 holder keeps the outer one from being
 * stopped through the runtime. */
static void test_container_holding_a_nested_container_is_not_stopped(void **state)
{
	struct world *w = new_world();

	(void)state;
	proc(w, 300, 1, "containerd-shim", "containerd-shim-runc-v2", "/dev/null", "0::/system.slice/containerd.service\n");
	holder(w, 301, 300, "python3", "0::/docker/" DOCKER_ID "\n", 0, 4096);
	holder(w, 302, 300, "python3",
	       "0::/docker/" DOCKER_ID "/docker/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210\n", 1,
	       1024);
	w->container_policy = "always";
	plan(w, "0", false);
	assert_int_equal(w->plan.targets[0].action, GS_ACT_SIGNAL);
	assert_int_equal(w->plan.n_units, 0);
	assert_int_equal(restarter_of(w, 301)->handling, GS_HANDLE_WATCHED);
	free_world(w);
}

static void test_kubernetes_pod_is_reported_never_acted_on(void **state)
{
	struct world *w = new_world();

	(void)state;
	holder(w, 301, 1, "python3",
	       "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/"
	       "cri-containerd-" DOCKER_ID ".scope\n",
	       0, 4096);
	plan(w, "0", true);
	assert_int_equal(w->plan.n_targets, 1);
	assert_int_equal(w->plan.targets[0].action, GS_ACT_SIGNAL);
	assert_non_null(restarter_of(w, 301));
	assert_int_equal(restarter_of(w, 301)->kind, GS_RESTARTER_POD);
	assert_int_equal(restarter_of(w, 301)->handling, GS_HANDLE_REPORTED);
	assert_non_null(strstr(restarter_of(w, 301)->stop_with, "kubectl delete pod"));
	free_world(w);
}

/* torchrun's agent holds the GPU too, and its worker got a lower PID (the
 * PIDs wrapped): the agent is signalled first, or it restarts the worker
 * in the grace period. */
static void test_a_parent_that_is_a_target_comes_before_its_children(void **state)
{
	struct world *w = new_world();

	(void)state;
	holder(w, 400, 500, "python3", SESSION, 0, 2048);
	holder(w, 500, 1, "torchrun", SESSION, 0, 512);
	holder(w, 600, 1, "python3", SESSION, 0, 1024);
	plan(w, "0", false);
	assert_int_equal(w->plan.n_targets, 3);
	assert_int_equal(w->plan.targets[0].pid, 500);
	assert_int_equal(w->plan.targets[1].pid, 400);
	assert_int_equal(w->plan.targets[2].pid, 600);
	assert_null(restarter_of(w, 400)); /* a target: stopped, not watched */
	free_world(w);
}

static int main_is_300(void *ud, const struct gs_owner *o, pid_t *ret)
{
	(void)ud;
	(void)o;
	*ret = 300;
	return 0;
}

/* An orphan of the unit, reparented to the manager, holds GPU 0; the
 * unit's main process holds GPU 1 (not selected). Guessing, either may be
 * the main process, and the orphan is left alone; with the manager's
 * MainPID the orphan is known not to be: signalled, the unit untouched. */
static void test_main_pid_makes_the_unit_main_rule_exact(void **state)
{
	struct world *w = new_world();
	char err[256];

	(void)state;
	holder(w, 300, 1, "python3", "0::/system.slice/trainer.service\n", 1, 4096);
	holder(w, 301, 1, "python3", "0::/system.slice/trainer.service\n", 0, 2048);
	w->sel.gpus = "0";
	assert_int_equal(gs_plan_build(&w->s, &w->pt, &w->sel, SELF, &w->self_owner, &w->plan, err, sizeof(err)), 0);
	assert_null(gs_plan_find_target(&w->plan, 301));
	gs_plan_free(&w->plan);

	w->sel.unit_main_pid = main_is_300;
	assert_int_equal(gs_plan_build(&w->s, &w->pt, &w->sel, SELF, &w->self_owner, &w->plan, err, sizeof(err)), 0);
	assert_non_null(gs_plan_find_target(&w->plan, 301));
	assert_int_equal(gs_plan_find_target(&w->plan, 301)->action, GS_ACT_SIGNAL);
	assert_null(gs_plan_find_target(&w->plan, 300));
	free_world(w);
}

/* systemctl show's lines, split in place; a line without '=' (a warning
 * systemctl printed) is skipped, an empty value kept. */
static void test_next_property(void **state)
{
	char text[] = "ActiveState=inactive\nwarning\nSubState=\nInactiveEnterTimestampMonotonic=12=3";
	char *cur = text, *k, *v;

	(void)state;
	assert_true(gs_next_property(&cur, &k, &v));
	assert_string_equal(k, "ActiveState");
	assert_string_equal(v, "inactive");
	assert_true(gs_next_property(&cur, &k, &v));
	assert_string_equal(k, "SubState");
	assert_string_equal(v, "");
	assert_true(gs_next_property(&cur, &k, &v));
	assert_string_equal(k, "InactiveEnterTimestampMonotonic");
	assert_string_equal(v, "12=3");
	assert_false(gs_next_property(&cur, &k, &v));
	cur = NULL;
	assert_false(gs_next_property(&cur, &k, &v));
}

/* supervisord as a systemd unit (supervisor.service) runs a GPU program:
 * the program is stopped through supervisorctl, never the unit that would
 * stop every program; with a holder below it that the selection leaves
 * alone, nothing of it is stopped through the tool (or the unit), and
 * supervisord is watched, never taken with --include-parent. */
static void test_a_supervisord_program_is_stopped_through_supervisorctl(void **state)
{
	struct world *w = new_world();

	(void)state;
	proc(w, 300, 1, "supervisord", "/usr/bin/python3 /usr/bin/supervisord -n", "/dev/null",
	     "0::/system.slice/supervisor.service\n");
	proc(w, 301, 300, "bash", "bash run.sh", "/dev/null", "0::/system.slice/supervisor.service\n");
	holder(w, 302, 301, "python3", "0::/system.slice/supervisor.service\n", 0, 4096);
	w->unit_restart = "on-failure";
	w->unit_cgroup = "/system.slice/supervisor.service";
	w->sup = (struct gs_supervised){ .kind = GS_SUP_SUPERVISORD, .sup_pid = 300, .sup_starttime = 3000,
					 .main_pid = 301, .main_starttime = 3010, .name = "llm:llm", .control_opt = "-c",
					 .control = "/etc/supervisor/supervisord.conf" };
	plan(w, "0", true);
	assert_int_equal(w->plan.n_targets, 1);
	assert_int_equal(w->plan.targets[0].action, GS_ACT_STOP_SUPERVISED);
	assert_int_equal(w->plan.n_units, 1);
	assert_string_equal(w->plan.units[w->plan.targets[0].unit].runtime, "supervisord");
	assert_string_equal(w->plan.units[w->plan.targets[0].unit].unit, "llm:llm");
	assert_int_equal(w->plan.units[w->plan.targets[0].unit].main_pid, 301);
	assert_int_equal(restarter_of(w, 302)->kind, GS_RESTARTER_SUPERVISOR);
	assert_int_equal(restarter_of(w, 302)->handling, GS_HANDLE_SUPERVISOR_STOP);
	assert_int_equal(restarter_of(w, 302)->pid, 300);
	assert_string_equal(restarter_of(w, 302)->stop_with,
			    "supervisorctl -c /etc/supervisor/supervisord.conf stop llm:llm");
	gs_plan_free(&w->plan);

	/* A second holder of the program, on GPU 1, not selected. */
	holder(w, 303, 301, "python3", "0::/system.slice/supervisor.service\n", 1, 1024);
	plan(w, "0", true);
	assert_int_equal(w->plan.n_targets, 1);
	assert_int_equal(w->plan.targets[0].pid, 302);
	assert_int_equal(w->plan.targets[0].action, GS_ACT_SIGNAL);
	assert_int_equal(w->plan.n_units, 0);
	assert_int_equal(restarter_of(w, 302)->kind, GS_RESTARTER_SUPERVISOR);
	assert_int_equal(restarter_of(w, 302)->handling, GS_HANDLE_WATCHED);
	free_world(w);
}

/* A program supervisord runs under a name that could not be read (it
 * cleared its environment): watched, and its supervisor's unit, which
 * runs every other program too, is never the one stopped. */
static void test_an_unnamed_supervisord_program_is_watched_not_its_unit(void **state)
{
	struct world *w = new_world();

	(void)state;
	proc(w, 300, 1, "supervisord", "/usr/bin/python3 /usr/bin/supervisord -n", "/dev/null",
	     "0::/system.slice/supervisor.service\n");
	holder(w, 301, 300, "python3", "0::/system.slice/supervisor.service\n", 0, 4096);
	w->unit_restart = "on-failure";
	w->unit_cgroup = "/system.slice/supervisor.service";
	w->sup = (struct gs_supervised){ .kind = GS_SUP_SUPERVISORD, .sup_pid = 300, .sup_starttime = 3000,
					 .main_pid = 301, .main_starttime = 3010 };
	plan(w, "0", false);
	assert_int_equal(w->plan.n_targets, 1);
	assert_int_equal(w->plan.targets[0].action, GS_ACT_SIGNAL);
	assert_int_equal(w->plan.n_units, 0);
	assert_int_equal(restarter_of(w, 301)->kind, GS_RESTARTER_SUPERVISOR);
	assert_int_equal(restarter_of(w, 301)->handling, GS_HANDLE_WATCHED);
	assert_int_equal(restarter_of(w, 301)->pid, 300);
	assert_string_equal(restarter_of(w, 301)->stop_with, "supervisorctl stop (the program running PID 301)");
	free_world(w);
}

/* What the control tools print, read as they write it. */
static void test_supervisor_tool_outputs(void **state)
{
	pid_t pid;
	char buf[64];
	static const char argv[] = "/usr/bin/python3\0/usr/bin/supervisord\0-n\0-c\0/etc/sd.conf\0";
	static const char argv2[] = "supervisord\0--configuration=rel.conf\0";
	static const char argv3[] = "supervisord\0-c\0";
	static const char env[] = "PATH=/bin\0SUPERVISOR_PROCESS_NAME=llm\0SUPERVISOR_GROUP_NAME=grp\0";

	(void)state;
	assert_int_equal(gs_sup_parse_pid(GS_SUP_SUPERVISORD, "3411\n", &pid), 0);
	assert_int_equal(pid, 3411);
	assert_int_equal(gs_sup_parse_pid(GS_SUP_SUPERVISORD, "0\n", &pid), 0);
	assert_int_equal(pid, 0);
	assert_int_equal(gs_sup_parse_pid(GS_SUP_SUPERVISORD, "No such process x:x\n", &pid), -EINVAL);
	assert_int_equal(gs_sup_parse_pid(GS_SUP_RUNIT, "run: /etc/sv/llm: (pid 3662) 1s; run: log: (pid 3660) 1s\n", &pid), 0);
	assert_int_equal(pid, 3662);
	assert_int_equal(gs_sup_parse_pid(GS_SUP_RUNIT, "down: /etc/sv/llm: 0s, normally up; run: log: (pid 3660) 9s\n", &pid), 0);
	assert_int_equal(pid, 0);
	assert_int_equal(gs_sup_parse_pid(GS_SUP_RUNIT, "fail: /x: unable to change to service directory\n", &pid), -EINVAL);
	assert_int_equal(gs_sup_parse_pid(GS_SUP_S6, "3702\n", &pid), 0);
	assert_int_equal(pid, 3702);
	assert_int_equal(gs_sup_parse_pid(GS_SUP_S6, "-1\n", &pid), 0);
	assert_int_equal(pid, 0);
	assert_int_equal(gs_sup_parse_up(GS_SUP_SUPERVISORD, "llm   RUNNING   pid 3547, uptime 0:00:00\n"), 1);
	assert_int_equal(gs_sup_parse_up(GS_SUP_SUPERVISORD, "llm   STOPPED   Dec 06 03:56 PM\n"), 0);
	assert_int_equal(gs_sup_parse_up(GS_SUP_RUNIT, "down: /etc/sv/llm: 0s, normally up\n"), 0);
	assert_int_equal(gs_sup_parse_up(GS_SUP_S6, "true\n"), 1);
	assert_int_equal(gs_supervisord_config_arg(argv, sizeof(argv) - 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/etc/sd.conf");
	assert_int_equal(gs_supervisord_config_arg(argv2, sizeof(argv2) - 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "rel.conf");
	assert_int_equal(gs_supervisord_config_arg(argv3, sizeof(argv3) - 1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(gs_supervisord_config_arg("supervisord\0-n\0", 15, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(gs_environ_get(env, sizeof(env) - 1, "SUPERVISOR_GROUP_NAME", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "grp");
	assert_int_equal(gs_environ_get(env, sizeof(env) - 1, "SUPERVISOR_ENABLED", buf, sizeof(buf)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_property),
		cmocka_unit_test(test_timespans_as_systemd_writes_them),
		cmocka_unit_test(test_interactive_shells_and_shells_running_a_program),
		cmocka_unit_test(test_bash_loop_is_a_supervising_parent),
		cmocka_unit_test(test_parents_that_are_not_supervisors),
		cmocka_unit_test(test_unit_restart_pending_from_its_state),
		cmocka_unit_test(test_parent_that_is_a_units_main_process_is_not_stopped),
		cmocka_unit_test(test_restart_always_unit),
		cmocka_unit_test(test_container_with_restart_policy),
		cmocka_unit_test(test_container_holding_a_nested_container_is_not_stopped),
		cmocka_unit_test(test_kubernetes_pod_is_reported_never_acted_on),
		cmocka_unit_test(test_a_parent_that_is_a_target_comes_before_its_children),
		cmocka_unit_test(test_main_pid_makes_the_unit_main_rule_exact),
		cmocka_unit_test(test_a_supervisord_program_is_stopped_through_supervisorctl),
		cmocka_unit_test(test_an_unnamed_supervisord_program_is_watched_not_its_unit),
		cmocka_unit_test(test_supervisor_tool_outputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

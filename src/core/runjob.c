/* gpuslate run: COMMAND under the reclaim lock, the intruder watch and
 * signal forwarding. See runjob.h. */
#include "core/runjob.h"
#include "core/gpusel.h"
#include "core/reclaim.h"
#include "util/fdlimit.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A rescan of GPUs and processes every half second: an intruder is told
 * within a second, and a scan costs a few milliseconds of CPU. */
#define GS_RUN_SCAN_MS 500

static const int forwarded_signals[3] = { SIGINT, SIGTERM, SIGHUP };
/* Per signal: sent to gpuslate by a process (kill), or by the kernel (a
 * terminal's Ctrl-C or hangup, which the whole foreground group gets). */
static volatile sig_atomic_t pending_user[3], pending_kernel[3];
/* Any of them during a --guard stop: it stops escalating (as reclaim's
 * stop on Ctrl-C) and the signal goes on to COMMAND at once. */
static volatile sig_atomic_t guard_interrupted;

/* The dispositions gpuslate was started with (gs_runjob_save_dispositions):
 * COMMAND gets them back, so `nohup gpuslate run -- job` keeps the job's
 * SIGHUP ignored, as a shell would. */
static const int passed_signals[4] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
static bool was_ignored[4];

void gs_runjob_save_dispositions(void)
{
	for (int i = 0; i < 4; i++) {
		struct sigaction cur;

		was_ignored[i] = sigaction(passed_signals[i], NULL, &cur) == 0 && cur.sa_handler == SIG_IGN;
	}
}

static int sig_slot(int sig)
{
	for (int i = 0; i < 3; i++)
		if (forwarded_signals[i] == sig)
			return i;
	return -1;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int i = sig_slot(sig);

	(void)uc;
	if (i < 0)
		return;
	if (si && si->si_code == SI_KERNEL)
		pending_kernel[i] = 1;
	else
		pending_user[i] = 1;
	guard_interrupted = 1;
}

bool gs_pidset_has(const struct gs_pidset *s, pid_t pid, uint64_t starttime)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].pid == pid && s->v[i].starttime == starttime)
			return true;
	return false;
}

int gs_pidset_add(struct gs_pidset *s, pid_t pid, uint64_t starttime)
{
	if (gs_pidset_has(s, pid, starttime))
		return 0;
	if (GS_ARRAY_RESERVE(s->v, s->cap, s->n) < 0)
		return -ENOMEM;
	s->v[s->n].pid = pid;
	s->v[s->n].starttime = starttime;
	s->n++;
	return 0;
}

void gs_pidset_free(struct gs_pidset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* In COMMAND's tree, or below gpuslate (its helpers, and orphans of the
 * tree it adopted as subreaper): never an intruder, never signalled. */
static bool ours(const struct gs_ptable *pt, pid_t self, pid_t child, const struct gs_pidset *tree, pid_t pid,
		 uint64_t starttime)
{
	return gs_pidset_has(tree, pid, starttime) || gs_ptable_is_ancestor(pt, child, pid) ||
	       gs_ptable_is_ancestor(pt, self, pid);
}

/* NVML lists it with memory on a selected GPU while it has the driver
 * open, but the fd scan cannot tie it to that GPU (only the control node
 * mapped): the memory is taken all the same. Reported; the guard's plan
 * leaves it alone, as reclaim's would (NVML's word alone stops nothing). */
static bool nvml_only_holder(const struct gs_holder *h, const struct gs_gpuset *sel)
{
	return h->n_fds > 0 && h->mem_known && h->mem_used > 0 && gs_gpuset_intersects(&h->nvml_unconfirmed, sel);
}

bool gs_runjob_is_intruder(const struct gs_holder *h, const struct gs_gpuset *sel, const struct gs_ptable *pt,
			   pid_t self, pid_t child, const struct gs_pidset *known, const struct gs_pidset *tree)
{
	const struct gs_pidstat *st;

	/* Clients (monitors, nvidia-smi) hold no memory and protected daemons
	 * are never stopped: neither takes the GPU from COMMAND. */
	if (!h->alive || !h->info_ok || h->role == GS_ROLE_PROTECTED)
		return false;
	if (!(h->role == GS_ROLE_COMPUTE && gs_gpuset_intersects(&h->gpus, sel)) && !nvml_only_holder(h, sel))
		return false;
	st = gs_ptable_find(pt, h->pid);
	/* Gone from the table read after the snapshot, or a new process under
	 * the same pid: told on the next scan, if it still holds the GPU. */
	if (!st || st->starttime != h->info.st.starttime)
		return false;
	if (gs_pidset_has(known, h->pid, st->starttime))
		return false;
	return !ours(pt, self, child, tree, h->pid, st->starttime);
}

struct watch {
	struct gs_reclaim *rc;
	const struct gs_request *req;
	const struct gs_runjob_hooks *hooks;
	struct gs_runjob *job;
	pid_t self, child;
	uint64_t child_start;     /* COMMAND's start time, once a table showed it */
	uint64_t t0_ms;
	/* The mask inside the wait: the forwarded signals open. */
	sigset_t waitmask;
	struct gs_pidset known, tree;
};

static void fill_intruder(struct gs_intruder *in, const struct gs_snapshot *s, const struct gs_holder *h,
			  const struct gs_gpuset *sel, uint64_t seen_ms)
{
	memset(in, 0, sizeof(*in));
	in->pid = h->pid;
	in->starttime = h->info.st.starttime;
	in->uid = h->info.status.uid;
	snprintf(in->user, sizeof(in->user), "%s", h->info.user);
	snprintf(in->comm, sizeof(in->comm), "%s", h->info.name);
	snprintf(in->cmdline, sizeof(in->cmdline), "%.255s", h->info.cmdline);
	for (size_t g = 0; g < s->n_gpus; g++)
		if ((gs_gpuset_has(&h->gpus, (unsigned)g) || gs_gpuset_has(&h->nvml_unconfirmed, (unsigned)g)) &&
		    gs_gpuset_has(sel, (unsigned)g)) {
			in->gpu = s->gpus[g].index;
			break;
		}
	in->mem_known = h->mem_known;
	in->mem = h->mem_used;
	in->seen_ms = seen_ms;
	snprintf(in->outcome, sizeof(in->outcome), "left running");
}

/* The intruders one guard round acts on, for the plan's selectable(). */
struct guard_round {
	const struct gs_intruder *v;
	size_t n;
};

static bool guard_selects(void *ud, pid_t pid, uint64_t starttime)
{
	const struct guard_round *g = ud;

	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].pid == pid && g->v[i].starttime == starttime)
			return true;
	return false;
}

/* --guard: the plan reclaim would make for these GPUs, without reclaim's
 * filters (an intruder is whoever it is) but selecting the new intruders
 * only, so that every other holder is left alone as the plan's rules
 * know it (its unit is not stopped, nor its unit's main process
 * signalled); carried out for the intruders and what the plan takes with
 * them (their descendants and group members). Everything the plan leaves
 * alone stays alone. */
static void guard(struct watch *w, const struct gs_snapshot *s, const struct gs_ptable *pt, size_t first, size_t n)
{
	struct guard_round round = { .v = &w->job->intruders[first], .n = n };
	struct gs_reclaim *rc = w->rc;
	struct gs_selection gsel = rc->sel;
	struct gs_plan plan;
	struct gs_stop_result res;
	char err[256];
	size_t keep = 0;
	int r;

	memset(&gsel.filters, 0, sizeof(gsel.filters));
	gsel.targeted = NULL;
	gsel.selectable = guard_selects;
	gsel.selectable_ud = &round;
	r = gs_plan_build(s, pt, &gsel, w->self, &rc->d.self_owner, &plan, err, sizeof(err));
	/* As reclaim: a container whose restart policy would bring the
	 * intruder straight back is stopped through its runtime (when that
	 * takes nothing the guard leaves alone), not signalled again on
	 * every scan. Parents are never stopped by the guard. */
	if (r == 0 && plan.n_targets && gs_reclaim_plan_restarters(rc, &plan, s, pt, false) < 0) {
		gs_plan_free(&plan);
		snprintf(err, sizeof(err), "out of memory");
		r = -ENOMEM;
	}
	if (r < 0) {
		for (size_t i = first; i < first + n; i++)
			snprintf(w->job->intruders[i].outcome, sizeof(w->job->intruders[i].outcome),
				 "not stopped: no plan: %.100s", err);
		return;
	}
	for (size_t t = 0; t < plan.n_targets; t++) {
		const struct gs_target *tg = &plan.targets[t];
		bool mine = false;

		for (size_t i = first; i < first + n; i++) {
			const struct gs_intruder *in = &w->job->intruders[i];

			if ((tg->pid == in->pid && tg->starttime == in->starttime) || tg->why_pid == in->pid)
				mine = true;
		}
		if (!mine || ours(pt, w->self, w->child, &w->tree, tg->pid, tg->starttime))
			continue;
		/* A unit stop ends every process of the unit, including any the
		 * guard would not touch: signal the intruder instead. A
		 * container stop through its runtime, or a supervised program's
		 * through its supervisor, stays (its restart policy would undo a
		 * signal); the runtime's and supervisors' stop entries are kept,
		 * renumbered, the unit stops dropped. */
		plan.targets[keep] = *tg;
		if (plan.targets[keep].action == GS_ACT_STOP_UNIT) {
			plan.targets[keep].action = GS_ACT_SIGNAL;
			plan.targets[keep].unit = -1;
		}
		keep++;
	}
	plan.n_targets = keep;
	{
		size_t nu = 0;

		for (size_t u = 0; u < plan.n_units; u++) {
			bool used = false;

			for (size_t t = 0; t < keep; t++)
				used |= (plan.targets[t].action == GS_ACT_STOP_CONTAINER ||
					 plan.targets[t].action == GS_ACT_STOP_SUPERVISED) && plan.targets[t].unit == (int)u;
			if (!used || !plan.units[u].runtime[0])
				continue;
			for (size_t t = 0; t < keep; t++)
				if ((plan.targets[t].action == GS_ACT_STOP_CONTAINER ||
				     plan.targets[t].action == GS_ACT_STOP_SUPERVISED) && plan.targets[t].unit == (int)u)
					plan.targets[t].unit = (int)nu;
			plan.units[nu++] = plan.units[u];
		}
		plan.n_units = nu;
	}
	if (keep) {
		struct gs_stop_opts so = {
			.grace_ms = w->req->grace_ms,
			.kill_wait_ms = 5000,
			.unit_timeout_ms = w->req->grace_ms + 90000,
			.root = gs_discover_root(&rc->d),
			.interrupted = &guard_interrupted,
		};
		sigset_t held;

		memset(&res, 0, sizeof(res));
		/* The stop may wait --grace: a signal for COMMAND must not
		 * wait with it. Open here, it ends the stop's escalation (one
		 * already pending is delivered at once); the caller passes it
		 * on. */
		guard_interrupted = 0;
		sigprocmask(SIG_SETMASK, &w->waitmask, &held);
		r = gs_stop_run(&plan, gs_discover_proc_fd(&rc->d), &so, &res);
		sigprocmask(SIG_SETMASK, &held, NULL);
		for (size_t i = first; i < first + n; i++) {
			struct gs_intruder *in = &w->job->intruders[i];
			bool found = false;

			for (size_t k = 0; r == 0 && k < res.n_procs; k++)
				if (res.procs[k].pid == in->pid) {
					found = true;
					in->stopped = res.procs[k].outcome == GS_OUT_EXITED_TERM ||
						      res.procs[k].outcome == GS_OUT_KILLED ||
						      res.procs[k].outcome == GS_OUT_STOPPED_WITH_UNIT ||
						      res.procs[k].outcome == GS_OUT_ALREADY_GONE;
					snprintf(in->outcome, sizeof(in->outcome), "%s%s",
						 in->stopped ? "stopped: " : "not stopped: ",
						 gs_outcome_str(res.procs[k].outcome));
				}
			if (!found)
				snprintf(in->outcome, sizeof(in->outcome), "not stopped: %s",
					 r < 0 ? strerror(-r) : "the plan leaves it alone");
		}
		gs_stop_result_free(&res);
	} else {
		for (size_t i = first; i < first + n; i++)
			snprintf(w->job->intruders[i].outcome, sizeof(w->job->intruders[i].outcome),
				 "not stopped: the plan leaves it alone");
	}
	gs_plan_free(&plan);
	if (w->hooks->guarded)
		for (size_t i = first; i < first + n; i++)
			w->hooks->guarded(w->hooks->ud, &w->job->intruders[i]);
}

/* Grow the tree with what is below COMMAND now, and reap the orphans
 * handed to us as subreaper that died: the tree's, and any child younger
 * than COMMAND (one that ended before a scan saw it in the tree). Our own
 * helpers are older (the NVML helper) or waited for where they run. */
static void track_tree(struct watch *w, const struct gs_ptable *pt)
{
	const struct gs_pidstat *c = gs_ptable_find(pt, w->child);

	if (!w->child_start && c)
		w->child_start = c->starttime;
	for (size_t i = 0; i < pt->n; i++) {
		const struct gs_pidstat *p = &pt->procs[i];

		if (gs_ptable_is_ancestor(pt, w->child, p->pid))
			(void)gs_pidset_add(&w->tree, p->pid, p->starttime);
		if (p->ppid == w->self && p->pid != w->child && p->state == 'Z' &&
		    (gs_pidset_has(&w->tree, p->pid, p->starttime) ||
		     (w->child_start && p->starttime >= w->child_start)))
			(void)waitpid(p->pid, NULL, WNOHANG);
	}
}

/* Did the reclaim's plan leave this process (same start time) alone? */
static bool left_by_reclaim(const struct gs_plan *p, const struct gs_snapshot *before, pid_t pid, uint64_t starttime)
{
	for (size_t i = 0; i < p->n_left; i++) {
		const struct gs_leftalone *l = &p->left[i];
		const struct gs_holder *h = l->holder >= 0 && (size_t)l->holder < before->n_holders
						    ? &before->holders[l->holder]
						    : NULL;

		if (l->pid == pid && h && h->info_ok && h->info.st.starttime == starttime)
			return true;
	}
	return false;
}

static int scan(struct watch *w, bool first)
{
	struct gs_reclaim *rc = w->rc;
	struct gs_snapshot s;
	struct gs_ptable pt = { 0 };
	struct gs_gpuset sel = { 0 };
	char err[256];
	size_t before = w->job->n_intruders;
	int r;

	r = gs_snapshot_take(&rc->d, &s);
	if (r < 0)
		return r;
	r = gs_discover_ptable(&rc->d, &pt);
	if (r == 0)
		r = gs_gpusel_resolve(w->req->gpus, s.gpus, s.n_gpus, &sel, err, sizeof(err));
	if (r < 0)
		goto out;
	if (first) {
		/* A compute holder of a selected GPU as COMMAND starts is known
		 * only when the reclaim's plan left it alone (its verdict counted
		 * it); one that came after the plan is an intruder. Anything else
		 * (a client, a holder of another GPU) is judged by what it holds
		 * later: a client that allocates is a new holder all the same. */
		struct gs_pidset none = { 0 };

		for (size_t i = 0; i < s.n_holders; i++) {
			const struct gs_holder *h = &s.holders[i];

			if (gs_runjob_is_intruder(h, &sel, &pt, w->self, 0, &none, &none) &&
			    left_by_reclaim(&rc->plan, &rc->s, h->pid, h->info.st.starttime))
				(void)gs_pidset_add(&w->known, h->pid, h->info.st.starttime);
		}
		goto out;
	}
	track_tree(w, &pt);
	for (size_t i = 0; i < s.n_holders; i++) {
		const struct gs_holder *h = &s.holders[i];
		struct gs_intruder *v;

		if (!gs_runjob_is_intruder(h, &sel, &pt, w->self, w->child, &w->known, &w->tree))
			continue;
		v = realloc(w->job->intruders, (w->job->n_intruders + 1) * sizeof(*v));
		if (!v) {
			r = -ENOMEM;
			break;
		}
		w->job->intruders = v;
		fill_intruder(&v[w->job->n_intruders], &s, h, &sel, gs_now_ms() - w->t0_ms);
		(void)gs_pidset_add(&w->known, h->pid, h->info.st.starttime);
		if (w->hooks->intruder)
			w->hooks->intruder(w->hooks->ud, &v[w->job->n_intruders]);
		w->job->n_intruders++;
	}
	if (w->req->guard && w->job->n_intruders > before)
		guard(w, &s, &pt, before, w->job->n_intruders - before);
out:
	gs_ptable_free(&pt);
	gs_snapshot_free(&s);
	return r;
}

/* Is path an executable regular file? -EACCES for one that exists but is
 * not (a directory, no x bit, a noexec mount is only found by exec). */
static int executable_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -EACCES;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
		return -EACCES;
	return 0;
}

/* A script's "#!" interpreter, as the kernel reads it: the path up to the
 * first blank or newline (a CRLF script's "python3\r" is a name that does
 * not exist, so it fails as exec would). 0 and the path in buf; -ENODATA
 * for a file that is no script. */
static int script_interpreter(const char *path, char *buf, size_t len)
{
	char head[256];
	ssize_t n;
	size_t i = 2, k = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -ENODATA; /* unreadable: exec decides */
	n = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return -ENODATA;
	head[n] = '\0';
	while (head[i] == ' ' || head[i] == '\t')
		i++;
	while (head[i] && head[i] != ' ' && head[i] != '\t' && head[i] != '\n' && k + 1 < len)
		buf[k++] = head[i++];
	buf[k] = '\0';
	return k ? 0 : -ENODATA;
}

/* executable_file, and for a script its interpreter too, a few levels (the
 * kernel allows 4): a venv entry point whose python is gone fails exec with
 * ENOENT although the script itself is there. -ENOEXEC: the interpreter is
 * missing, named in interp; -EACCES: it is there but cannot run. */
static int runnable_file(const char *path, char *interp, size_t len)
{
	char cur[4096];
	int r = executable_file(path);

	gs_strlcpy(cur, path, sizeof(cur));
	for (int depth = 0; r == 0 && depth < 4; depth++) {
		char next[4096];

		if (script_interpreter(cur, next, sizeof(next)) < 0)
			return 0;
		r = executable_file(next);
		if (r < 0) {
			gs_strlcpy(interp, next, len);
			return r == -ENOENT ? -ENOEXEC : r;
		}
		gs_strlcpy(cur, next, sizeof(cur));
	}
	return r;
}

int gs_runjob_resolve(const char *file, char *buf, size_t len)
{
	const char *path = getenv("PATH"), *p, *colon;
	char def[256];
	int denied = 0;

	if (!file || !file[0])
		return -ENOENT;
	if (strchr(file, '/')) {
		int r = runnable_file(file, buf, len);

		if (r == 0 && gs_strlcpy(buf, file, len) >= len)
			return -ENAMETOOLONG;
		return r;
	}
	/* PATH unset: execvp's own default, the system's (confstr). */
	if (!path) {
		size_t n = confstr(_CS_PATH, def, sizeof(def));

		path = n > 0 && n <= sizeof(def) ? def : "/bin:/usr/bin";
	}
	for (p = path;; p = colon + 1) {
		char cand[4096];
		size_t dl;
		int n, r;

		colon = strchr(p, ':');
		dl = colon ? (size_t)(colon - p) : strlen(p);
		/* An empty entry is the current directory, as for execvp. */
		n = dl ? snprintf(cand, sizeof(cand), "%.*s/%s", (int)dl, p, file)
		       : snprintf(cand, sizeof(cand), "%s", file);
		if (n > 0 && (size_t)n < sizeof(cand)) {
			r = executable_file(cand);
			if (r == 0) {
				/* The one execvp runs: its interpreter decides. */
				r = runnable_file(cand, buf, len);
				if (r < 0)
					return r;
				if (gs_strlcpy(buf, cand, len) >= len)
					return -ENAMETOOLONG;
				return 0;
			}
			if (r == -EACCES)
				denied = r;
		}
		if (!colon)
			break;
	}
	return denied ? denied : -ENOENT;
}

/* fork + exec with the dispositions and mask a shell would give it; an
 * exec failure comes back through a close-on-exec pipe. */
static int spawn(char *const *argv, const sigset_t *mask, bool own_group, pid_t *ret_pid, int *ret_exec_errno)
{
	int pfd[2], e = 0;
	ssize_t n;
	pid_t pid, parent = getpid();

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		/* Not the terminal's foreground job (a supervisor, a script,
		 * a background job): COMMAND gets a process group of its own,
		 * so that a signal sent to gpuslate's group (kill -INT --
		 * -PGID, a supervisor's stopasgroup) reaches gpuslate alone,
		 * which passes it on once; in one group COMMAND got it twice.
		 * At a terminal's foreground COMMAND stays in gpuslate's group:
		 * Ctrl-C reaches it once from the terminal (not passed on), and
		 * Ctrl-Z stops the whole job as the shell expects. Set here and
		 * in the parent, so that neither order races. */
		if (own_group) {
			(void)setpgid(0, 0);
			/* Out of gpuslate's group, a kill of that group (SIGKILL
			 * after a supervisor's stopwaitsecs) would no longer end
			 * COMMAND: gpuslate's end does, as the group kill did. */
			(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
			if (getppid() != parent)
				_exit(126);
		}
		for (int i = 0; i < 4; i++) {
			struct sigaction sa = { .sa_handler = was_ignored[i] ? SIG_IGN : SIG_DFL };

			sigemptyset(&sa.sa_mask);
			sigaction(passed_signals[i], &sa, NULL);
		}
		sigprocmask(SIG_SETMASK, mask, NULL);
		/* The open-file limit gpuslate was started with, not the one it
		 * raised for its pidfds. */
		gs_fdlimit_restore();
		close(pfd[0]);
		execvp(argv[0], argv);
		e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0) {
			/* the exit status says it too */
		}
		_exit(e == ENOENT ? 127 : 126);
	}
	close(pfd[1]);
	if (own_group)
		(void)setpgid(pid, pid); /* EACCES once it has exec'd: it did it itself */
	do
		n = read(pfd[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	*ret_pid = pid;
	*ret_exec_errno = n == (ssize_t)sizeof(e) ? e : 0;
	return 0;
}

/* Signals for COMMAND. In its own process group (spawn) it received none
 * of what gpuslate got, so each is passed on, once, to COMMAND itself
 * (which passes it to its workers, as torchrun and mpirun do). In ours
 * (a terminal's foreground job), one the kernel sent the whole group (the
 * terminal's Ctrl-C) reached it already. */
static void forward(struct gs_runjob *job, int pidfd, pid_t child)
{
	for (int i = 0; i < 3; i++) {
		bool user = pending_user[i], kern = pending_kernel[i];

		pending_user[i] = pending_kernel[i] = 0;
		if (!user && !(kern && getpgid(child) != getpgrp()))
			continue;
		/* Our own child, not yet reaped: its pid cannot be another
		 * process's; the pidfd where there is one. */
		if ((pidfd >= 0 ? syscall(SYS_pidfd_send_signal, pidfd, forwarded_signals[i], NULL, 0)
				: kill(child, forwarded_signals[i])) == 0)
			job->forwarded[i]++;
	}
}

int gs_runjob_run(struct gs_reclaim *rc, const struct gs_request *req, const struct gs_runjob_hooks *hooks,
		  struct gs_runjob *job)
{
	static const struct gs_runjob_hooks none;
	struct watch w = { .rc = rc, .req = req, .hooks = hooks ? hooks : &none, .job = job };
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
	sigset_t block, old, waitmask;
	siginfo_t si;
	uint64_t next_scan, t0_ns = 0;
	int pidfd = -1, tty, r;
	bool tty_fg;

	memset(job, 0, sizeof(*job));
	if (!req->run_argv || !req->run_argv[0])
		return -EINVAL;
	w.self = getpid();
	/* Orphans of COMMAND's tree come to us instead of init, so they
	 * stay recognisably COMMAND's (never intruders, never signalled). */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	r = scan(&w, true);
	if (r < 0)
		job->watch_error = r;
	sigemptyset(&block);
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++) {
		sigaddset(&block, forwarded_signals[i]);
		pending_user[i] = pending_kernel[i] = 0;
	}
	/* Blocked except inside ppoll: none is lost between a check and the
	 * wait. The reclaim's own handler set its flag for the ones before. */
	sigprocmask(SIG_BLOCK, &block, &old);
	for (int i = 0; i < 3; i++)
		sigaction(forwarded_signals[i], &sa, NULL);
	waitmask = old;
	for (int i = 0; i < 3; i++)
		sigdelset(&waitmask, forwarded_signals[i]);
	/* Is gpuslate the terminal's foreground job? (spawn) */
	tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	tty_fg = tty >= 0 && tcgetpgrp(tty) == getpgrp();
	if (tty >= 0)
		close(tty);
	w.waitmask = waitmask;
	/* A Ctrl-C or SIGTERM after the reclaim's verdict and before these
	 * handlers: whoever sent it did not want COMMAND started. */
	if (gs_reclaim_was_interrupted()) {
		r = -EINTR;
		goto out;
	}

	t0_ns = gs_now_ns();
	w.t0_ms = t0_ns / 1000000;
	{
		struct timespec ts = { 0 };

		/* CLOCK_REALTIME is always there: no fallback to keep. */
		(void)clock_gettime(CLOCK_REALTIME, &ts);
		job->started_unix_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	}
	r = spawn(req->run_argv, &old, !tty_fg, &w.child, &job->exec_errno);
	if (r < 0)
		goto out;
	job->started = true;
	if (job->exec_errno) {
		/* It never ran: reap it; the shell's 126/127. */
		(void)waitpid(w.child, NULL, 0);
		job->status = job->exec_errno == ENOENT ? 127 : 126;
		job->exit_code = job->status;
		goto out;
	}
	job->pid = w.child;
	pidfd = (int)syscall(SYS_pidfd_open, w.child, 0);
	next_scan = gs_now_ms() + GS_RUN_SCAN_MS;
	for (;;) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		uint64_t now = gs_now_ms();
		uint64_t wait_ms = next_scan > now ? next_scan - now : 0;
		struct timespec ts = { .tv_sec = (time_t)(wait_ms / 1000), .tv_nsec = (long)(wait_ms % 1000) * 1000000 };

		/* Without a pidfd (an old kernel) the child's end is seen at
		 * the next scan tick. */
		(void)ppoll(&p, pidfd >= 0 ? 1 : 0, &ts, &waitmask);
		forward(job, pidfd, w.child);
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)w.child, &si, WEXITED | WNOHANG) == 0 && si.si_pid == w.child)
			break;
		if (gs_now_ms() >= next_scan) {
			r = scan(&w, false);
			if (r < 0)
				job->watch_error = r;
			next_scan = gs_now_ms() + GS_RUN_SCAN_MS;
			/* One that came during a --guard stop: now, not after
			 * the next wait. */
			forward(job, pidfd, w.child);
		}
	}
	if (si.si_code == CLD_EXITED) {
		job->exit_code = si.si_status;
		job->status = si.si_status;
	} else {
		job->term_signal = si.si_status;
		job->status = 128 + si.si_status;
	}
	r = 0;
out:
	job->run_ms = job->started ? (gs_now_ns() - t0_ns) / 1000000 : 0;
	if (pidfd >= 0)
		close(pidfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	gs_pidset_free(&w.known);
	gs_pidset_free(&w.tree);
	return r;
}

int gs_runjob_signal(int i)
{
	return i >= 0 && i < 3 ? forwarded_signals[i] : 0;
}

void gs_runjob_free(struct gs_runjob *j)
{
	free(j->intruders);
	j->intruders = NULL;
	j->n_intruders = 0;
}

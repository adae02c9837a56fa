/* The reclaim pipeline: discover -> plan -> stop -> wait -> verify, and its
 * verdict. See reclaim.h. */
#include "core/reclaim.h"
#include "util/lockwait.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
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

static volatile sig_atomic_t interrupted;
/* The driver failed while stopping: stop escalating (see stop_tick). */
static volatile sig_atomic_t driver_failed;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* No SA_RESTART: a blocking poll returns EINTR so the loops see the flag
 * at once. */
static void install_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_interrupt };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
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

	note(rc, "another gpuslate reclaim is running on this host; waiting up to %.0f s", rc->req->timeout_ms / 1000.0);
}

static int take_lock(struct gs_reclaim *rc, const struct gs_request *req)
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

		fail(rc, GS_EXIT_REFUSED, "cannot open lock file '%s': %s", path, strerror(e));
		return -e;
	}
	{
		struct stat lst;

		if (fstat(fd, &lst) == 0 && lst.st_uid == geteuid() && (lst.st_mode & 077))
			(void)fchmod(fd, 0600); /* one made by an older version */
	}
	r = gs_lock_wait(fd, path, req->timeout_ms, &interrupted, lock_waiting, rc);
	if (r < 0) {
		close(fd);
		if (r == -EINTR)
			fail(rc, GS_EXIT_REFUSED,
			     "interrupted while waiting for another gpuslate reclaim to release the lock: nothing was done");
		else if (r == -EBUSY)
			fail(rc, GS_EXIT_REFUSED, "another gpuslate reclaim still holds the lock after %.0f s",
			     req->timeout_ms / 1000.0);
		else
			fail(rc, GS_EXIT_REFUSED, "cannot lock '%s': %s", path, strerror(-r));
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
	rc->lock_fd = fd;
	return 0;
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

	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
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
 * refused) gets the watch after the GPUs look clean. */
#define GS_RESPAWN_WATCH_MS 1000
static bool owner_may_restart(enum gs_owner_kind k)
{
	return k == GS_OWNER_UNIT || k == GS_OWNER_USER_UNIT || gs_owner_kind_is_container(k);
}

static uint64_t respawn_watch(const struct gs_plan *p, const struct gs_stop_result *stop, const struct gs_snapshot *s,
			      const struct gs_ptable *pt, pid_t self)
{
	for (size_t i = 0; i < p->n_targets; i++) {
		const struct gs_target *t = &p->targets[i];
		const struct gs_pidstat *st = gs_ptable_find(pt, t->pid);
		const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;
		pid_t pp = st ? st->ppid : 0;

		if (t->action == GS_ACT_STOP_UNIT && stop && t->unit >= 0 && (size_t)t->unit < stop->n_units &&
		    stop->units[t->unit].stopped)
			continue; /* systemd does not restart what it stopped */
		if (h && h->info_ok && owner_may_restart(h->info.owner.kind))
			return GS_RESPAWN_WATCH_MS;
		if (pp <= 1 || gs_plan_find_target(p, pp) || gs_ptable_is_ancestor(pt, pp, self))
			continue;
		if (gs_ptable_find(pt, pp))
			return GS_RESPAWN_WATCH_MS;
	}
	return 0;
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
	} else if (vr->clean && vr->memory_unverified) {
		conclude(rc, GS_VERDICT_UNVERIFIED,
			 !strcmp(rc->s.gpu_source, "nvml")
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
		struct gs_stop_opts so = {
			.tick = stop_tick,
			.tick_ud = &tc,
			.tick_ms = 5,
			.grace_ms = req->grace_ms,
			.kill_wait_ms = 5000,
			.unit_timeout_ms = req->grace_ms + 90000,
			.interrupted = &interrupted,
			.driver_failed = &driver_failed,
			.have_pct = rc->sel.have_pct,
			.root = gs_discover_root(&rc->d),
		};

		r = gs_stop_run(&rc->plan, gs_discover_proc_fd(&rc->d), &so, &rc->stop);
		if (r < 0)
			return fail(rc, gs_exit_of_error(r, GS_EXIT_DRIVER), "stopping failed: %s", strerror(-r));
		rc->rep.stop = &rc->stop;
	}
	/* Decided after the stop: a unit whose stop failed had its processes
	 * signalled, and its manager may restart them. */
	vo.respawn_watch_ms = acting ? respawn_watch(&rc->plan, rc->rep.stop, &rc->s, &rc->pt, rc->d.self) : 0;
	if (rc->hooks->progress) {
		vo.progress = progress;
		vo.progress_ud = rc;
	}
	if (interrupted) {
		/* Ctrl-C during the stop: report what was done, no waiting. */
		vo.timeout_ms = 0;
	}
	r = gs_verify_wait(&rc->d, &vo, &rc->vr);
	if (rc->hooks->progress_end)
		rc->hooks->progress_end(rc->hooks->ud);
	if (r < 0)
		return fail(rc, gs_exit_of_error(r, GS_EXIT_DRIVER), "verification failed: %s", strerror(-r));
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

static int run(const struct gs_request *req, struct gs_reclaim *rc)
{
	bool wait_mode = req->cmd == GS_CMD_WAIT;
	bool acting = !wait_mode && !req->dry_run;
	char err[512];
	int r;

	if (acting && take_lock(rc, req) < 0)
		return 0;
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
	if (rc->hooks->snapshot_ready)
		rc->hooks->snapshot_ready(rc->hooks->ud, &rc->s);
	r = gs_discover_ptable(&rc->d, &rc->pt);
	if (r < 0)
		return fail(rc, gs_exit_of_error(r, GS_EXIT_DRIVER), "cannot read the process table: %s", strerror(-r));
	gs_request_selection(req, &rc->sel);
	rc->sel.is_pidns_init = gs_discover_is_pidns_init;
	rc->sel.is_pidns_init_ud = &rc->d;
	if (gs_filters_any(&rc->sel.filters) && apply_filters(rc) == 0)
		return 0;
	r = gs_plan_build(&rc->s, &rc->pt, &rc->sel, rc->d.self, &rc->d.self_owner, &rc->plan, err, sizeof(err));
	if (r < 0)
		return fail(rc, gs_exit_of_error(r, GS_EXIT_USAGE), "%s", err);
	rc->stage = STAGE_PLAN;
	rc->rep.before = &rc->s;
	rc->rep.plan = &rc->plan;
	rc->rep.dry_run = req->dry_run;
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
	if (!wait_mode && rc->hooks->plan_ready)
		rc->hooks->plan_ready(rc->hooks->ud, rc);
	if (!wait_mode && req->dry_run) {
		if (rc->no_match)
			conclude(rc, GS_VERDICT_NO_MATCH, rc->no_match_msg);
		else
			conclude(rc, GS_VERDICT_DRY_RUN, NULL);
		return 0;
	}
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

/* gpuslate reclaim and gpuslate wait: the pipeline discover -> plan -> stop
 * -> wait -> verify -> report, and its exit status. */
#include "cli/cli.h"
#include "core/filters.h"
#include "core/plan.h"
#include "core/snapshot.h"
#include "core/stop.h"
#include "core/verify.h"
#include "out/reclaim_out.h"
#include "out/status_out.h"
#include "util/lockwait.h"
#include "util/spawn.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

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

/* Said once, when the lock is taken by another reclaim. */
static void lock_waiting(void *ud)
{
	const struct gs_cli *cli = ud;

	if (!cli->quiet)
		gs_warn("another gpuslate reclaim is running on this host; waiting up to %.0f s",
			cli->timeout_ms / 1000.0);
}

/* One reclaim at a time per host: two would race over the same holders
 * and baselines. Waits up to timeout_ms for the other one to finish. */
static int take_lock(const struct gs_cli *cli, int *ret_fd)
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
		gs_err("cannot open lock file '%s': %s", path, strerror(errno));
		return -errno;
	}
	{
		struct stat lst;

		if (fstat(fd, &lst) == 0 && lst.st_uid == geteuid() && (lst.st_mode & 077))
			(void)fchmod(fd, 0600); /* one made by an older version */
	}
	r = gs_lock_wait(fd, path, cli->timeout_ms, &interrupted, lock_waiting, (void *)cli);
	if (r < 0) {
		if (r == -EINTR)
			gs_err("interrupted while waiting for another gpuslate reclaim to release the lock: nothing was done");
		else if (r != -EBUSY)
			gs_err("cannot lock '%s': %s", path, strerror(-r));
		close(fd);
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

static bool confirm(void)
{
	char line[64];

	fprintf(stderr, "Proceed? [y/N] ");
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		return false;
	gs_strstrip(line);
	return !strcasecmp(line, "y") || !strcasecmp(line, "yes");
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

struct progress {
	const struct gs_snapshot *s;
	bool on;
	bool drawn;
};

static void show_progress(void *ud, const struct gs_gpu_verdict *v, size_t n, uint64_t elapsed_ms)
{
	struct progress *pg = ud;
	char line[512];
	size_t off = 0;

	if (!pg->on)
		return;
	off = (size_t)snprintf(line, sizeof(line), "waiting %.1f s:", elapsed_ms / 1000.0);
	for (size_t g = 0; g < n && off + 48 < sizeof(line); g++) {
		if (v[g].released && !v[g].n_held_by)
			continue;
		/* No targeted process is left on the GPU: the driver is still
		 * tearing down the context of one that exited. */
		const char *what = v[g].n_held_by ? "held" : "releasing";

		if (v[g].mem_known)
			off += (size_t)snprintf(line + off, sizeof(line) - off, " GPU %u %llu MiB %s",
						pg->s->gpus[v[g].gpu].index,
						(unsigned long long)(v[g].after / GS_MIB), what);
		else
			off += (size_t)snprintf(line + off, sizeof(line) - off, " GPU %u %s",
						pg->s->gpus[v[g].gpu].index, what);
	}
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	pg->drawn = true;
}

static void fill_selection(const struct gs_cli *cli, struct gs_selection *sel, bool wait_mode)
{
	memset(sel, 0, sizeof(*sel));
	sel->gpus = cli->gpus;
	sel->tolerance_mib = cli->tolerance_mib;
	if (wait_mode)
		return; /* wait: every compute holder of the GPUs must be gone */
	sel->filters.users = cli->users;
	sel->filters.n_users = cli->n_users;
	sel->filters.units = cli->units;
	sel->filters.n_units = cli->n_units;
	sel->filters.containers = cli->containers;
	sel->filters.n_containers = cli->n_containers;
	sel->filters.match = cli->match;
	sel->include_clients = cli->include_clients;
	sel->includes = cli->includes;
	sel->n_includes = cli->n_includes;
	sel->no_units = cli->no_units;
	sel->have_pct = gs_program_exists("pct");
	sel->have_lxc_attach = gs_program_exists("lxc-attach");
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
static void record_last_reclaim(const struct gs_reclaim_report *rep)
{
	char buf[256], tmp[300], line[128];
	const char *path = gs_last_reclaim_path(buf, sizeof(buf));
	int fd, n;

	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%lld %d %s\n", (long long)time(NULL), rep->exit_status, rep->verdict);
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

/* A fleet's -v: the plan and report this host would print, as "output". */
static void add_remote_text(json_t *j, const struct gs_reclaim_report *rep)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&text, &len);

	if (!mf)
		return;
	if (!strcmp(rep->command, "reclaim"))
		gs_print_plan(mf, rep->before, rep->plan);
	if (!strcmp(rep->verdict, "dry-run"))
		fputs("\nDry run: nothing was changed.\n", mf);
	else
		gs_print_reclaim_report(mf, rep);
	if (fclose(mf) == 0)
		json_object_set_new(j, "output", gs_json_textn(text, len, GS_ESC_LINES));
	free(text);
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

static int emit(const struct gs_cli *cli, struct gs_reclaim_report *rep)
{
	if (!strcmp(rep->command, "reclaim") && strcmp(rep->verdict, "dry-run"))
		record_last_reclaim(rep);
	if (cli->json) {
		json_t *j = gs_json_reclaim(rep);

		if (cli->remote && cli->verbose)
			add_remote_text(j, rep);
		gs_cli_print_json(j);
		json_decref(j);
	} else {
		gs_print_reclaim_report(stdout, rep);
	}
	fflush(stdout);
	return rep->exit_status;
}

static int run(const struct gs_cli *cli, bool wait_mode)
{
	struct gs_discover d;
	struct gs_snapshot s;
	struct gs_ptable pt = { 0 };
	struct gs_plan plan;
	struct gs_selection sel;
	struct gs_stop_result stop = { 0 };
	struct gs_verify_result vr = { 0 };
	struct gs_reclaim_report rep = { .command = wait_mode ? "wait" : "reclaim", .reason = cli->reason };
	struct progress pg = { 0 };
	struct gs_filters_host host = { 0 };
	char unmatched[16][320], no_match_msg[1024] = "";
	const char *resolved[GS_MAX_MULTI] = { 0 };
	size_t n_unmatched = 0;
	char err[512], driver_msg[300];
	uint64_t t_start = gs_now_ms();
	int lock_fd = -1, r, rc;
	bool acting = !wait_mode && !cli->dry_run, no_match = false;

	install_handlers();
	if (acting) {
		r = take_lock(cli, &lock_fd);
		if (r == -EBUSY) {
			gs_err("another gpuslate reclaim still holds the lock after %.0f s", cli->timeout_ms / 1000.0);
			return GS_EXIT_REFUSED;
		}
		if (r < 0)
			return GS_EXIT_REFUSED;
	}
	rc = gs_cli_discover_open(cli, &d);
	if (rc)
		goto out_lock;
	r = gs_discover_snapshot(&d, &s);
	if (r < 0 && r != -ENODEV) {
		gs_err("cannot read GPU state: %s", gs_discover_error(&d)[0] ? gs_discover_error(&d) : strerror(-r));
		rc = GS_EXIT_DRIVER;
		goto out_discover;
	}
	if (r == -ENODEV) {
		gs_cli_no_driver(cli, &s);
		rc = GS_EXIT_DRIVER;
		goto out_snapshot;
	}
	gs_cli_note_visibility(cli, &s);
	r = gs_ptable_load(d.root.proc_fd, &pt);
	if (r < 0) {
		gs_err("cannot read the process table: %s", strerror(-r));
		rc = GS_EXIT_DRIVER;
		goto out_snapshot;
	}
	fill_selection(cli, &sel, wait_mode);
	if (gs_filters_any(&sel.filters)) {
		/* Every process of the host, once: a filter that names nothing
		 * is said by name, and a container prefix is resolved to the
		 * one container it names (or refused when it names two). */
		struct gs_filters f;

		r = gs_filters_compile(&sel.filters, &f, err, sizeof(err));
		if (r == 0) {
			r = gs_filters_scan_host(&f, d.root.proc_fd, &pt, d.self, &host, err, sizeof(err));
			gs_filters_free(&f);
		}
		if (r < 0) {
			gs_err("%s", r == -EINVAL ? err : strerror(-r));
			rc = r == -EINVAL ? GS_EXIT_USAGE : GS_EXIT_DRIVER;
			goto out_ptable;
		}
		n_unmatched = gs_filters_unmatched(&sel.filters, &host.hits, unmatched, GS_ARRAY_SIZE(unmatched));
		for (size_t i = 0; i < host.n_resolved && i < GS_ARRAY_SIZE(resolved); i++)
			resolved[i] = host.resolved[i];
		sel.filters.containers = resolved;
		sel.filters.containers_exact = true;
	}
	r = gs_plan_build(&s, &pt, &sel, d.self, &d.self_owner, &plan, err, sizeof(err));
	if (r < 0) {
		gs_err("%s", err);
		rc = r == -ENOMEM ? GS_EXIT_DRIVER : GS_EXIT_USAGE;
		goto out_ptable;
	}
	rep.before = &s;
	rep.plan = &plan;
	rep.dry_run = cli->dry_run;
	rep.unmatched = (const char (*)[320])unmatched;
	rep.n_unmatched = n_unmatched;
	/* Nothing on the host passes the filters: a typo, a unit that does not
	 * exist, a pdsh habit (-u 30). Said by name, never "clean". */
	no_match = gs_filters_any(&sel.filters) && !host.any_match && plan.n_targets == 0;
	if (no_match)
		no_match_text(&sel, (const char (*)[320])unmatched, n_unmatched, no_match_msg, sizeof(no_match_msg));
	else if (!cli->quiet)
		for (size_t i = 0; i < n_unmatched; i++)
			gs_warn("%s matches no process", unmatched[i]);

	if (!wait_mode && !cli->json) {
		gs_print_plan(stdout, &s, &plan);
		if (no_match)
			printf("%c%s.\n", toupper((unsigned char)no_match_msg[0]), GS_SAFE(no_match_msg + 1));
	}
	if (!wait_mode && cli->dry_run) {
		rep.verdict = no_match ? "no-match" : "dry-run";
		rep.exit_status = no_match ? GS_EXIT_NO_MATCH : GS_EXIT_CLEAN;
		rep.message = no_match ? no_match_msg : NULL;
		rep.elapsed_ms = gs_now_ms() - t_start;
		if (cli->json)
			emit(cli, &rep);
		else
			printf("\nDry run: nothing was changed.\n");
		rc = rep.exit_status;
		goto out_plan;
	}
	if (acting && plan.n_targets && !cli->yes) {
		if (!isatty(STDIN_FILENO)) {
			rep.verdict = "refused";
			rep.exit_status = GS_EXIT_REFUSED;
			rep.message = "refused: no terminal to confirm on; use -y to act without confirmation";
			rep.elapsed_ms = gs_now_ms() - t_start;
			gs_err("refusing to stop %zu process%s without confirmation: no terminal (use -y)",
			       plan.n_targets, plan.n_targets == 1 ? "" : "es");
			if (cli->json)
				emit(cli, &rep);
			rc = GS_EXIT_REFUSED;
			goto out_plan;
		}
		fflush(stdout);
		if (!confirm()) {
			rep.verdict = "refused";
			rep.exit_status = GS_EXIT_REFUSED;
			rep.message = "refused: not confirmed";
			rep.elapsed_ms = gs_now_ms() - t_start;
			gs_err("not confirmed: nothing was changed");
			if (cli->json)
				emit(cli, &rep);
			rc = GS_EXIT_REFUSED;
			goto out_plan;
		}
	}

	{
		uint64_t t0 = gs_now_ns();
		struct gs_verify_opts vo = {
			.timeout_ms = cli->timeout_ms,
			.t0_ns = t0,
			.interrupted = &interrupted,
			.keep_waiting_on_respawn = wait_mode,
			.sel = &sel,
			.progress = show_progress,
			.progress_ud = &pg,
			.old_plan = &plan,
			.before = &s,
		};

		struct tick_ctx tc = { .d = &d, .vo = &vo, .vr = &vr };

		r = gs_verify_begin(&d, &vo, &vr);
		if (r < 0) {
			gs_err("verification failed: %s", strerror(-r));
			rc = GS_EXIT_DRIVER;
			goto out_plan;
		}
		if (acting && plan.n_targets) {
			struct gs_stop_opts so = {
				.tick = stop_tick,
				.tick_ud = &tc,
				.tick_ms = 5,
				.grace_ms = cli->grace_ms,
				.kill_wait_ms = 5000,
				.unit_timeout_ms = cli->grace_ms + 90000,
				.interrupted = &interrupted,
				.driver_failed = &driver_failed,
				.have_pct = sel.have_pct,
				.root = &d.root,
			};

			r = gs_stop_run(&plan, d.root.proc_fd, &so, &stop);
			if (r < 0) {
				gs_err("stopping failed: %s", strerror(-r));
				rc = GS_EXIT_DRIVER;
				goto out_stop;
			}
			rep.stop = &stop;
		}
		/* Decided after the stop: a unit whose stop failed had its
		 * processes signalled, and its manager may restart them. */
		vo.respawn_watch_ms = acting ? respawn_watch(&plan, rep.stop, &s, &pt, d.self) : 0;
		pg.s = &s;
		pg.on = isatty(STDERR_FILENO) && !cli->quiet && !getenv("GPUSLATE_NO_PROGRESS");
		if (interrupted) {
			/* Ctrl-C during the stop: report what was done, no waiting. */
			vo.timeout_ms = 0;
		}
		r = gs_verify_wait(&d, &vo, &vr);
		if (pg.drawn)
			fprintf(stderr, "\r\033[K");
		if (r < 0) {
			gs_err("verification failed: %s", strerror(-r));
			rc = GS_EXIT_DRIVER;
			goto out_stop;
		}
		rep.verify = &vr;
	}

	if (vr.driver_failed) {
		rep.verdict = "driver-failure";
		rep.exit_status = GS_EXIT_DRIVER;
		/* The summary (and a Slurm epilog's log line) names the call. */
		snprintf(driver_msg, sizeof(driver_msg), "driver failure: %s", vr.driver_error);
		rep.message = driver_msg;
	} else if (vr.clean && vr.memory_unverified) {
		rep.verdict = "unverified";
		rep.exit_status = GS_EXIT_DRIVER;
		rep.message = !strcmp(s.gpu_source, "nvml")
				      ? "holders gone, but GPU memory could not be verified (NVML has only v1 memory figures"
					" and the driver's reservation could not be estimated)"
				      : "holders gone, but GPU memory could not be verified (NVML unusable)";
	} else if (!vr.clean) {
		rep.verdict = "not-clean";
		rep.exit_status = GS_EXIT_NOT_CLEAN;
	} else if (no_match) {
		rep.verdict = "no-match";
		rep.exit_status = GS_EXIT_NO_MATCH;
		rep.message = no_match_msg;
	} else if (vr.others_hold) {
		/* The selection is gone; the GPUs are not free. */
		rep.verdict = "selection-gone";
		rep.exit_status = GS_EXIT_SELECTION_GONE;
	} else {
		rep.verdict = "clean";
		rep.exit_status = GS_EXIT_CLEAN;
	}
	rep.elapsed_ms = gs_now_ms() - t_start;
	rc = emit(cli, &rep);

out_stop:
	gs_verify_result_free(&vr);
	gs_stop_result_free(&stop);
out_plan:
	gs_plan_free(&plan);
out_ptable:
	gs_filters_host_free(&host);
	gs_ptable_free(&pt);
out_snapshot:
	gs_snapshot_free(&s);
out_discover:
	gs_discover_close(&d);
out_lock:
	if (lock_fd >= 0)
		close(lock_fd);
	return rc;
}

int gs_cmd_reclaim(const struct gs_cli *cli)
{
	return run(cli, false);
}

int gs_cmd_wait(const struct gs_cli *cli)
{
	return run(cli, true);
}

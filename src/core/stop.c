#include "core/stop.h"
#include "core/restarter.h"
#include "proc/pidref.h"
#include "proc/procinfo.h"
#include "proc/supervised.h"
#include "util/audit.h"
#include "util/fdlimit.h"
#include "util/spawn.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *gs_outcome_str(enum gs_outcome o)
{
	switch (o) {
	case GS_OUT_PENDING: return "pending";
	case GS_OUT_EXITED_TERM: return "exited-after-term";
	case GS_OUT_KILLED: return "killed";
	case GS_OUT_STOPPED_WITH_UNIT: return "stopped-with-unit";
	case GS_OUT_ALREADY_GONE: return "already-gone";
	case GS_OUT_PID_REUSED: return "pid-reused";
	case GS_OUT_PERMISSION: return "permission-denied";
	case GS_OUT_D_STATE: return "d-state";
	case GS_OUT_SURVIVED: return "survived";
	case GS_OUT_INTERRUPTED: return "interrupted";
	case GS_OUT_DRIVER_FAILURE: return "driver-failure";
	case GS_OUT_NOT_SIGNALLED: return "not-signalled";
	case GS_OUT_FROZEN: return "frozen";
	}
	return "unknown";
}

void gs_stop_result_free(struct gs_stop_result *r)
{
	free(r->procs);
	free(r->units);
	memset(r, 0, sizeof(*r));
}

static bool user_interrupted(const struct gs_stop_opts *o)
{
	return o->interrupted && *o->interrupted;
}

static bool driver_failed(const struct gs_stop_opts *o)
{
	return o->driver_failed && *o->driver_failed;
}

/* Stop escalating: Ctrl-C, or a driver failure (no kill on an error path). */
static bool interrupted(const struct gs_stop_opts *o)
{
	return user_interrupted(o) || driver_failed(o);
}

/* After a driver failure, how long signalled targets still get to be seen
 * exiting (a process on its way out is "exited", not "not escalated"). */
#define STOP_SETTLE_MS 250u

static uint64_t since_ms(const struct gs_stop_result *r)
{
	return (gs_now_ns() - r->started_ns) / 1000000ULL;
}

/* Does a process with this pid exist now (whatever its identity)? */
static bool pid_exists(int proc_fd, pid_t pid)
{
	char path[32];

	snprintf(path, sizeof(path), "%d", (int)pid);
	return faccessat(proc_fd, path, F_OK, 0) == 0;
}

static void read_wchan(int proc_fd, pid_t pid, char *buf, size_t len, char *ret_state)
{
	struct gs_pidstat st;
	char path[32], *txt = NULL;

	buf[0] = '\0';
	*ret_state = '?';
	if (gs_pidstat_read(proc_fd, pid, &st) == 0)
		*ret_state = st.state;
	snprintf(path, sizeof(path), "%d/wchan", (int)pid);
	if (gs_read_file_at(proc_fd, path, 256, &txt, NULL) == 0) {
		gs_strlcpy(buf, gs_strstrip(txt), len);
		free(txt);
	}
}

static void send_signal(struct gs_pidref *ref, int proc_fd, struct gs_proc_result *pr, uint64_t start,
			int sig, unsigned flag)
{
	int r = gs_pidref_kill(ref, proc_fd, sig);

	gs_audit_signal(pr->pid, start, pr->comm, sig, r);
	if (r == 0)
		pr->sent |= flag;
	else if (r == -EPERM || r == -EACCES)
		pr->outcome = GS_OUT_PERMISSION;
	else if (r != -ESRCH && !pr->error)
		/* Not sent (EMFILE opening a parked target's pidfd): the
		 * target stays pending, and is never taken for gone. */
		pr->error = -r;
}

/* The progress line's beat: nothing for a stop that is over within half a
 * second, then about one line a second. */
#define PROGRESS_FIRST_MS 500u
#define PROGRESS_EVERY_MS 1000u
/* How often a running tool's wait looks at the beat. */
#define PROGRESS_CHECK_MS 100u

struct prog {
	const struct gs_stop_opts *o;
	struct gs_stop_progress st;
	uint64_t t0, next;
};

static void prog_begin(struct prog *pg, enum gs_stop_phase phase, const struct gs_unit_stop *u, uint64_t timeout_ms,
		       const bool *waiting)
{
	pg->st.phase = phase;
	pg->st.unit = u;
	pg->st.timeout_ms = timeout_ms;
	pg->st.waiting = waiting;
	pg->t0 = gs_now_ms();
	pg->next = pg->t0 + PROGRESS_FIRST_MS;
}

/* Tell the caller what is waited for, when the beat is due. */
static void prog_tick(void *ud)
{
	struct prog *pg = ud;
	uint64_t now = gs_now_ms();

	if (!pg->o->progress || now < pg->next)
		return;
	pg->st.elapsed_ms = now - pg->t0;
	pg->o->progress(pg->o->progress_ud, &pg->st);
	pg->next = now + PROGRESS_EVERY_MS;
}

/* A control tool (systemctl, docker, supervisorctl, sv, s6-svc), run
 * with the progress beat going while it runs. */
static int run_tool(const char *const *argv, uint64_t timeout_ms, struct prog *pg, struct gs_run_result *rr)
{
	struct gs_spawn_tick t = { .fn = prog_tick, .ud = pg, .every_ms = PROGRESS_CHECK_MS };

	return gs_spawn_run_ticking((char *const *)argv, timeout_ms, 4096, pg->o->interrupted,
				    pg->o->progress ? &t : NULL, rr);
}

/* Descriptors kept free while pidfds are held: pipes of the unit stops'
 * child processes, /proc files read meanwhile, a parked target's pidfd. */
#define STOP_FD_RESERVE 32u

/* Pidfds held at once, within the open-file limit (gs_fdlimit_spare).
 * Targets beyond it are parked (gs_pidref_park): verified, their pidfd
 * closed, one opened again for each signal; they get a held slot back as
 * others exit. */
struct slots {
	size_t held, budget;
};

/* With many parked targets, /proc/PID/stat is read for each on every
 * beat: stretch the beat so that this stays a small load. */
static uint64_t parked_beat_ms(size_t n_parked)
{
	return n_parked > 100 ? n_parked / 10 : 10;
}

/* The poll set of wait_refs, one slot per target. Allocated with the rest
 * before anything is signalled: an allocation failure inside the wait would
 * end the grace period at once and go straight to SIGKILL. */
struct wait_set {
	struct pollfd *pfd;
	size_t *idx;
};

/* Wait until every pending ref has exited or timeout_ms passed. Marks
 * exited ones with `outcome`. Returns when all are done, on timeout, or on
 * interruption. Only targets with active[i] are waited on. A target that
 * exits gives its pidfd back; parked ones take the free slots. */
static void wait_refs(struct gs_pidref *refs, struct gs_stop_result *r, const bool *active, size_t n,
		      int proc_fd, uint64_t timeout_ms, enum gs_outcome outcome, const struct gs_stop_opts *o,
		      struct slots *sl, const struct wait_set *ws, struct prog *pg)
{
	uint64_t deadline = gs_now_ms() + timeout_ms;
	struct pollfd *pfd = ws->pfd;
	size_t *idx = ws->idx;
	bool settling = false;

	for (;;) {
		size_t m = 0, parked = 0;
		uint64_t now;
		bool fallback = false;

		for (size_t i = 0; i < n; i++) {
			if (!active[i] || r->procs[i].outcome != GS_OUT_PENDING)
				continue;
			if (refs[i].parked && sl->held < sl->budget) {
				int e = gs_pidref_unpark(&refs[i], proc_fd);

				if (e == 0) {
					sl->held++;
				} else if (e == -ESRCH) {
					/* Gone, or its PID now another process's:
					 * either way ours exited. */
					r->procs[i].outcome = outcome;
					r->procs[i].exited_ms = since_ms(r);
					continue;
				}
			}
			if (gs_pidref_exited(&refs[i], proc_fd) == 1) {
				/* One killed at once ends during the others' grace. */
				r->procs[i].outcome = r->procs[i].sent & GS_SENT_KILL ? GS_OUT_KILLED : outcome;
				r->procs[i].exited_ms = since_ms(r);
				if (refs[i].pidfd >= 0 && gs_pidref_park(&refs[i]) == 0)
					sl->held--;
				continue;
			}
			if (refs[i].pidfd < 0)
				fallback = true;
			parked += refs[i].parked;
			pfd[m].fd = refs[i].pidfd;
			pfd[m].events = POLLIN;
			idx[m++] = i;
		}
		if (o->tick && !settling)
			o->tick(o->tick_ud);
		if (!settling)
			prog_tick(pg);
		now = gs_now_ms();
		if (!settling && driver_failed(o)) {
			settling = true;
			if (deadline > now + STOP_SETTLE_MS)
				deadline = now + STOP_SETTLE_MS;
		}
		if (m == 0 || now >= deadline || user_interrupted(o))
			break;
		{
			uint64_t left = deadline - now, beat = 1000;
			int t;

			/* Without pidfds nothing wakes us: re-check every 10 ms. */
			if (fallback)
				beat = parked_beat_ms(parked);
			if (o->tick && o->tick_ms && o->tick_ms < beat)
				beat = o->tick_ms;
			if (o->progress && beat > PROGRESS_CHECK_MS)
				beat = PROGRESS_CHECK_MS;
			t = (int)(left > beat ? beat : left);
			(void)poll(pfd, m, t);
		}
	}
}

/* A tool's output cut to its first line (s itself; NULL stays NULL): the
 * reports give one line per failure. */
static char *first_line(char *s)
{
	char *nl = s ? strchr(s, '\n') : NULL;

	if (nl)
		*nl = '\0';
	return s;
}

/* The unit's manager's systemctl (gs_systemctl_argv) VERB [OPTIONS] --
 * UNIT; buf holds words. Returns 0 or -errno (a user without a passwd
 * entry: no manager to reach). */
static int build_unit_argv(const struct gs_unit_stop *u, bool have_pct, const char *const *verb, char *buf,
			   size_t len, const char **argv, size_t max)
{
	int k = gs_systemctl_argv(u->container, have_pct, buf, len, argv, max);
	size_t n;

	if (k < 0)
		return k;
	n = (size_t)k;
	for (size_t i = 0; verb[i] && n + 3 < max; i++)
		argv[n++] = verb[i];
	/* Unit names come from cgroup paths; "--" keeps one that starts with
	 * '-' from being read as an option. */
	argv[n++] = "--";
	argv[n++] = u->unit;
	argv[n] = NULL;
	return 0;
}

static void argv_text(const char *const *argv, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; argv[i] && off < len - 2; i++) {
		int k = snprintf(buf + off, len - off, "%s%s", i ? " " : "", argv[i]);

		if (k < 0)
			break;
		off += (size_t)k;
	}
}

/* One property of `systemctl show -p A -p B` output ("A=value" lines). */
static const char *show_value(const char *out, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	buf[0] = '\0';
	for (const char *line = out; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t ll = nl ? (size_t)(nl - line) : strlen(line);

		if (ll > kl && !strncmp(line, key, kl) && line[kl] == '=') {
			size_t vl = ll - kl - 1;

			if (vl >= len)
				vl = len - 1;
			memcpy(buf, line + kl + 1, vl);
			buf[vl] = '\0';
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	return buf;
}

/* The unit's manager, asked where its unit of that name is: stop it only
 * when that is the cgroup the processes are in. The same name elsewhere (a
 * container's or a runner's unit below a delegation boundary, a layout
 * gpuslate does not know) is another unit, and stopping it a wrong kill. */
static bool unit_is_theirs(const struct gs_unit_stop *u, const struct gs_stop_opts *o, uint64_t timeout_ms,
			   struct gs_unit_result *ur, struct prog *pg)
{
	/* With its state before the stop, for the stopped-state file that
	 * `restore` reads (core/stopped.h): one question, not three. */
	static const char *const show[] = { "show", "-p", "ControlGroup", "-p", "ActiveState", "-p", "UnitFileState",
					    NULL };
	const char *argv[32];
	char cmd[256], cg[1024], words[128];
	struct gs_run_result rr;
	int r;

	r = build_unit_argv(u, o->have_pct, show, words, sizeof(words), argv, GS_ARRAY_SIZE(argv));
	if (r < 0) {
		snprintf(ur->error, sizeof(ur->error), "not stopped: no manager to ask for %s: %s", u->container,
			 strerror(-r));
		return false;
	}
	argv_text(argv, cmd, sizeof(cmd));
	r = run_tool(argv, timeout_ms, pg, &rr);
	if (r < 0) {
		snprintf(ur->error, sizeof(ur->error), "not stopped: cannot run %s: %s", argv[0], strerror(-r));
		return false;
	}
	if (rr.timed_out || rr.interrupted || rr.exit_code != 0) {
		first_line(rr.err);
		snprintf(ur->error, sizeof(ur->error), "not stopped: '%.200s' %s%s%.200s", cmd,
			 rr.interrupted ? "was interrupted" : rr.timed_out ? "timed out" : "failed",
			 rr.err && rr.err[0] ? ": " : "", rr.err ? rr.err : "");
		gs_run_result_free(&rr);
		return false;
	}
	show_value(rr.out ? rr.out : "", "ControlGroup", cg, sizeof(cg));
	show_value(rr.out ? rr.out : "", "ActiveState", ur->state_before, sizeof(ur->state_before));
	show_value(rr.out ? rr.out : "", "UnitFileState", ur->enabled_before, sizeof(ur->enabled_before));
	gs_run_result_free(&rr);
	if (strcmp(cg, u->cgroup)) {
		snprintf(ur->error, sizeof(ur->error),
			 "not stopped: its manager's %.120s is %.150s, not %.150s where the processes are", u->unit,
			 cg[0] ? cg : "nowhere (not loaded or not running)", u->cgroup);
		return false;
	}
	return true;
}

/* How long the next command of a unit stop may run: its own deadline, or
 * what is left of the time all unit stops share; 0 when none is left. */
static uint64_t unit_command_timeout(const struct gs_stop_opts *o, uint64_t units_end, bool *ret_capped)
{
	uint64_t now = gs_now_ms(), left = units_end > now ? units_end - now : 0;

	*ret_capped = left < o->unit_timeout_ms;
	return *ret_capped ? left : o->unit_timeout_ms;
}

/* --timeout spent before this unit's stop could run (or finish asking). */
static void unit_out_of_time(const struct gs_stop_opts *o, struct gs_unit_result *ur)
{
	ur->exit_code = -1;
	ur->timed_out = ur->out_of_time = true;
	snprintf(ur->error, sizeof(ur->error), "not stopped: the %.1f s that all unit stops share (--timeout) ran out",
		 o->units_budget_ms / 1000.0);
}

/* Run argv within the unit deadline; fills ur's exit code and error. */
static void run_stop_command(const char *const *argv, uint64_t timeout_ms, struct gs_unit_result *ur,
			     struct prog *pg)
{
	struct gs_run_result rr;
	int r;

	argv_text(argv, ur->command, sizeof(ur->command));
	r = run_tool(argv, timeout_ms, pg, &rr);
	if (r < 0) {
		ur->exit_code = -1;
		snprintf(ur->error, sizeof(ur->error), "cannot run %s: %s", argv[0], strerror(-r));
		return;
	}
	ur->exit_code = rr.timed_out || rr.interrupted ? -1 : rr.exit_code;
	ur->timed_out = rr.timed_out;
	if (rr.interrupted)
		snprintf(ur->error, sizeof(ur->error), "interrupted");
	else if (rr.timed_out)
		snprintf(ur->error, sizeof(ur->error), "timed out after %llu ms",
			 (unsigned long long)timeout_ms);
	else if (rr.exit_code != 0 && rr.err) {
		gs_strlcpy(ur->error, first_line(rr.err), sizeof(ur->error));
	}
	ur->stopped = ur->exit_code == 0;
	gs_run_result_free(&rr);
}

/* A container with a restart policy, stopped the runtime's own way, only
 * while the runtime's container of that id is running: ids are unique, so
 * the same id is the same container (the care a unit gets through its
 * ControlGroup). If the runtime cannot be asked or the stop fails, the
 * ladder signals its processes and the respawn watch judges. */
static void stop_container(const struct gs_unit_stop *u, const struct gs_stop_opts *o, uint64_t units_end,
			   struct gs_unit_result *ur, struct prog *pg)
{
	const char *argv[48];
	char buf[1024], grace[32];
	size_t n;
	struct gs_run_result rr;
	uint64_t t0 = gs_now_ms();
	uint64_t timeout_ms;
	bool capped;
	int r;

	ur->exit_code = -1;
	timeout_ms = unit_command_timeout(o, units_end, &capped);
	if (timeout_ms == 0) {
		unit_out_of_time(o, ur);
		return;
	}
	if (gs_runtime_argv(u->runtime, buf, sizeof(buf), argv, GS_ARRAY_SIZE(argv) - 6, &n) < 0) {
		snprintf(ur->error, sizeof(ur->error), "not stopped: no usable %s command; its processes are signalled",
			 u->runtime);
		return;
	}
	argv[n] = "inspect";
	argv[n + 1] = "-f";
	argv[n + 2] = "{{.Id}} {{.State.Running}}";
	argv[n + 3] = u->unit;
	argv[n + 4] = NULL;
	r = run_tool(argv, timeout_ms, pg, &rr);
	if (r < 0 || rr.timed_out || rr.interrupted || rr.exit_code != 0) {
		snprintf(ur->error, sizeof(ur->error), "not stopped: %s inspect %s", u->runtime,
			 r < 0 ? strerror(-r) : rr.timed_out ? "timed out" : rr.interrupted ? "was interrupted" : "failed");
		if (r == 0)
			gs_run_result_free(&rr);
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	{
		char want[300];

		snprintf(want, sizeof(want), "%s true", u->unit);
		if (strcmp(rr.out ? gs_strstrip(rr.out) : "", want)) {
			snprintf(ur->error, sizeof(ur->error), "not stopped: %s's container %.80s is not running as %.80s",
				 u->runtime, u->unit, want);
			gs_run_result_free(&rr);
			ur->took_ms = gs_now_ms() - t0;
			return;
		}
		gs_run_result_free(&rr);
	}
	/* The runtime's own grace (SIGTERM, then SIGKILL) is gpuslate's. */
	snprintf(grace, sizeof(grace), "%llu", (unsigned long long)((o->grace_ms + 999) / 1000));
	timeout_ms = unit_command_timeout(o, units_end, &capped);
	if (timeout_ms == 0) {
		unit_out_of_time(o, ur);
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	argv[n] = "stop";
	argv[n + 1] = "-t";
	argv[n + 2] = grace;
	argv[n + 3] = u->unit;
	argv[n + 4] = NULL;
	run_stop_command(argv, timeout_ms, ur, pg);
	/* For restore: when it stopped, to tell a later stop by someone else. */
	ur->stopped_at = (int64_t)time(NULL);
	if (ur->timed_out && capped)
		ur->out_of_time = true;
	ur->took_ms = gs_now_ms() - t0;
	gs_audit_container(u->runtime, u->unit, ur->exit_code);
}

/* A supervised program's stop went through when the tool says it is down
 * (runit's force-stop says "kill:" with a non-zero status when it had to
 * SIGKILL: down all the same). */
static bool supervised_stop_done(enum gs_sup_kind k, const struct gs_run_result *rr)
{
	const char *out = rr->out ? rr->out : "";

	if (rr->timed_out || rr->interrupted)
		return false;
	if (k == GS_SUP_SUPERVISORD)
		return rr->exit_code == 0 && strstr(out, ": stopped") && !strstr(out, "ERROR");
	if (k == GS_SUP_RUNIT)
		return rr->exit_code == 0 || gs_startswith(out, "kill: ");
	return rr->exit_code == 0;
}

/* A program of supervisord, runit or s6, stopped through the supervisor's
 * tool so that it stays stopped, only while the tool names the process the
 * plan found as that program (the PID, with its start time unchanged): a
 * name from an environment or a directory is a claim, and another program
 * of that name (a config reloaded since) is not ours to stop. Anything
 * that fails leaves its processes to the ladder and the respawn watch. */
static void stop_supervised(const struct gs_unit_stop *u, int proc_fd, const struct gs_stop_opts *o,
			    uint64_t units_end, struct gs_unit_result *ur, struct prog *pg)
{
	enum gs_sup_kind k = gs_sup_kind_from_str(u->runtime);
	const char *argv[16];
	char buf[64];
	struct gs_run_result rr;
	struct gs_pidstat now;
	uint64_t t0 = gs_now_ms(), timeout_ms;
	bool capped;
	pid_t pid = 0;
	int r;

	ur->exit_code = -1;
	timeout_ms = unit_command_timeout(o, units_end, &capped);
	if (timeout_ms == 0) {
		unit_out_of_time(o, ur);
		return;
	}
	if (gs_supervisor_argv(u->runtime, u->control_opt, u->control, u->unit, GS_SUP_VERB_PID, 0, buf, sizeof(buf),
			       argv, GS_ARRAY_SIZE(argv)) < 0) {
		snprintf(ur->error, sizeof(ur->error), "not stopped: no usable %s command", u->runtime);
		return;
	}
	r = run_tool(argv, timeout_ms, pg, &rr);
	if (r < 0) {
		snprintf(ur->error, sizeof(ur->error), "not stopped: cannot run %s: %s", argv[0], strerror(-r));
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	/* supervisorctl pid exits 7 for a program that is not running: its
	 * "0" is an answer too. */
	if (rr.timed_out || rr.interrupted || !rr.out || gs_sup_parse_pid(k, rr.out, &pid) < 0) {
		first_line(rr.err);
		snprintf(ur->error, sizeof(ur->error), "not stopped: %s %s%s%.200s", argv[0],
			 rr.interrupted ? "was interrupted" : rr.timed_out ? "timed out" : "gave no PID",
			 rr.err && rr.err[0] ? ": " : "", rr.err ? rr.err : "");
		gs_run_result_free(&rr);
		if (capped && gs_now_ms() >= units_end)
			unit_out_of_time(o, ur);
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	gs_run_result_free(&rr);
	if (pid != u->main_pid || gs_pidstat_read(proc_fd, pid, &now) < 0 || now.starttime != u->main_starttime) {
		if (pid)
			snprintf(ur->error, sizeof(ur->error),
				 "not stopped: %.20s's %.150s is PID %d, not PID %d where the processes are", u->runtime,
				 u->unit, (int)pid, (int)u->main_pid);
		else
			snprintf(ur->error, sizeof(ur->error), "not stopped: %.20s says %.150s is not running",
				 u->runtime, u->unit);
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	gs_strlcpy(ur->state_before, "running", sizeof(ur->state_before));
	timeout_ms = unit_command_timeout(o, units_end, &capped);
	if (timeout_ms == 0) {
		unit_out_of_time(o, ur);
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	/* The tool's own wait is gpuslate's grace, within what is left. */
	{
		uint64_t wait_ms = o->grace_ms < timeout_ms ? o->grace_ms : timeout_ms;

		(void)gs_supervisor_argv(u->runtime, u->control_opt, u->control, u->unit, GS_SUP_VERB_STOP, wait_ms,
					 buf, sizeof(buf), argv, GS_ARRAY_SIZE(argv));
		argv_text(argv, ur->command, sizeof(ur->command));
		r = run_tool(argv, timeout_ms, pg, &rr);
		if (r == 0 && k == GS_SUP_S6 && !supervised_stop_done(k, &rr) && !rr.interrupted &&
		    rr.exit_code == 99) {
			/* s6-svc waited the grace out (99: timed out); the
			 * service is wanted down, and SIGKILL is the ladder's
			 * next step anyway: s6-supervise sends it. */
			uint64_t left = unit_command_timeout(o, units_end, &capped);

			gs_run_result_free(&rr);
			if (left == 0) {
				unit_out_of_time(o, ur);
				ur->took_ms = gs_now_ms() - t0;
				return;
			}
			(void)gs_supervisor_argv(u->runtime, u->control_opt, u->control, u->unit, GS_SUP_VERB_KILL,
						 o->kill_wait_ms ? o->kill_wait_ms : 5000, buf, sizeof(buf), argv,
						 GS_ARRAY_SIZE(argv));
			argv_text(argv, ur->command, sizeof(ur->command));
			r = run_tool(argv, left, pg, &rr);
		}
	}
	ur->took_ms = gs_now_ms() - t0;
	ur->stopped_at = (int64_t)time(NULL);
	if (r < 0) {
		snprintf(ur->error, sizeof(ur->error), "cannot run %s: %s", argv[0], strerror(-r));
		gs_audit_supervised(u->runtime, u->unit, -1);
		return;
	}
	ur->exit_code = rr.timed_out || rr.interrupted ? -1 : rr.exit_code;
	ur->timed_out = rr.timed_out;
	ur->stopped = supervised_stop_done(k, &rr);
	if (rr.interrupted) {
		snprintf(ur->error, sizeof(ur->error), "interrupted");
	} else if (rr.timed_out) {
		ur->out_of_time = capped;
		snprintf(ur->error, sizeof(ur->error), "timed out after %.1f s", timeout_ms / 1000.0);
	} else if (!ur->stopped) {
		const char *why = rr.err && rr.err[0] ? rr.err : rr.out ? rr.out : "";

		gs_strlcpy(ur->error, why, sizeof(ur->error));
		first_line(ur->error);
		if (!ur->error[0])
			snprintf(ur->error, sizeof(ur->error), "exit status %d", rr.exit_code);
	}
	gs_audit_supervised(u->runtime, u->unit, ur->stopped ? 0 : ur->exit_code ? ur->exit_code : 1);
	gs_run_result_free(&rr);
}


static void stop_unit(const struct gs_unit_stop *u, const struct gs_stop_opts *o, uint64_t units_end,
		      struct gs_unit_result *ur, struct prog *pg)
{
	static const char *const stop[] = { "stop", NULL };
	const char *argv[32];
	char words[128];
	struct gs_run_result rr;
	uint64_t t0 = gs_now_ms(), timeout_ms;
	bool capped;
	int r;

	ur->exit_code = -1;
	timeout_ms = unit_command_timeout(o, units_end, &capped);
	if (timeout_ms == 0) {
		unit_out_of_time(o, ur);
		return;
	}
	if (!unit_is_theirs(u, o, timeout_ms, ur, pg)) {
		/* The question itself cut short by the shared time: say so. */
		if (capped && gs_now_ms() >= units_end)
			unit_out_of_time(o, ur);
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	timeout_ms = unit_command_timeout(o, units_end, &capped);
	if (timeout_ms == 0) {
		unit_out_of_time(o, ur);
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	if (build_unit_argv(u, o->have_pct, stop, words, sizeof(words), argv, GS_ARRAY_SIZE(argv)) < 0) {
		snprintf(ur->error, sizeof(ur->error), "not stopped: no manager to reach for %s", u->container);
		ur->took_ms = gs_now_ms() - t0;
		return;
	}
	argv_text(argv, ur->command, sizeof(ur->command));
	r = run_tool(argv, timeout_ms, pg, &rr);
	ur->took_ms = gs_now_ms() - t0;
	if (r < 0) {
		ur->exit_code = -1;
		snprintf(ur->error, sizeof(ur->error), "cannot run %s: %s", argv[0], strerror(-r));
		gs_audit_unit(u->unit, u->container, -1);
		return;
	}
	ur->exit_code = rr.timed_out || rr.interrupted ? -1 : rr.exit_code;
	ur->timed_out = rr.timed_out;
	if (rr.interrupted)
		snprintf(ur->error, sizeof(ur->error), "interrupted");
	else if (rr.timed_out && capped) {
		ur->out_of_time = true;
		snprintf(ur->error, sizeof(ur->error), "cut short after %.1f s: the %.1f s that all unit stops share "
			 "(--timeout) ran out", timeout_ms / 1000.0, o->units_budget_ms / 1000.0);
	} else if (rr.timed_out)
		snprintf(ur->error, sizeof(ur->error), "timed out after %llu ms", (unsigned long long)timeout_ms);
	else if (rr.exit_code != 0 && rr.err) {
		gs_strlcpy(ur->error, first_line(rr.err), sizeof(ur->error));
	}
	ur->stopped = ur->exit_code == 0;
	ur->stopped_at = (int64_t)time(NULL);
	gs_audit_unit(u->unit, u->container, ur->exit_code);
	gs_run_result_free(&rr);
}

/* Is the target held by the cgroup freezer now? Recorded in pr->frozen. */
static bool check_frozen(const struct gs_stop_opts *o, struct gs_proc_result *pr)
{
	struct gs_frozen fz;

	if (!o->root || gs_freezer_check(o->root, pr->pid, &fz) < 0 || fz.kind == GS_FREEZER_NONE)
		return false;
	pr->frozen = fz;
	return true;
}

/* Pin every target's identity: a pidfd opened while the start time recorded
 * at discovery still matched. From here on a recycled PID cannot be hit.
 * Only what the kernel says proves a target gone (ESRCH); any other failure
 * leaves it alive and not signalled, with the reason. */
static void pin_targets(const struct gs_plan *p, int proc_fd, struct gs_stop_result *r, struct gs_pidref *refs,
			bool *active, struct slots *sl)
{
	for (size_t i = 0; i < p->n_targets; i++) {
		const struct gs_target *t = &p->targets[i];
		struct gs_proc_result *pr = &r->procs[i];
		int e;

		refs[i].pidfd = -1;
		pr->pid = t->pid;
		gs_strlcpy(pr->comm, t->comm, sizeof(pr->comm));
		e = gs_pidref_open(&refs[i], proc_fd, t->pid, t->starttime);
		if (e == -ESRCH) {
			pr->outcome = pid_exists(proc_fd, t->pid) ? GS_OUT_PID_REUSED : GS_OUT_ALREADY_GONE;
		} else if (e == -EPERM || e == -EACCES) {
			pr->outcome = GS_OUT_PERMISSION;
		} else if (e < 0) {
			pr->outcome = GS_OUT_NOT_SIGNALLED;
			pr->error = -e;
		} else {
			active[i] = true;
			if (refs[i].pidfd < 0)
				continue; /* no pidfds on this kernel: nothing held */
			if (sl->held < sl->budget)
				sl->held++;
			else
				(void)gs_pidref_park(&refs[i]);
		}
	}
}

int gs_stop_run(const struct gs_plan *p, int proc_fd, const struct gs_stop_opts *o, struct gs_stop_result *r)
{
	struct gs_pidref *refs;
	struct wait_set ws;
	bool *active, *waitable, *shown;
	struct slots sl = { 0 };
	struct prog pg = { .o = o };
	size_t n = p->n_targets;
	uint64_t units_end;

	memset(r, 0, sizeof(*r));
	r->started_ns = gs_now_ns();
	r->procs = calloc(n ? n : 1, sizeof(*r->procs));
	r->units = calloc(p->n_units ? p->n_units : 1, sizeof(*r->units));
	refs = calloc(n ? n : 1, sizeof(*refs));
	active = calloc(n ? n : 1, sizeof(*active));
	waitable = calloc(n ? n : 1, sizeof(*waitable));
	shown = calloc(n ? n : 1, sizeof(*shown)); /* the progress line's */
	/* The wait's poll set too, before anything is signalled: an
	 * allocation failure inside the wait would end the grace period. */
	ws.pfd = calloc(n ? n : 1, sizeof(*ws.pfd));
	ws.idx = calloc(n ? n : 1, sizeof(*ws.idx));
	if (!r->procs || !r->units || !refs || !active || !waitable || !shown || !ws.pfd || !ws.idx) {
		/* Nothing was signalled: no stop on an error path. */
		free(refs);
		free(active);
		free(waitable);
		free(shown);
		free(ws.pfd);
		free(ws.idx);
		gs_stop_result_free(r);
		return -ENOMEM;
	}
	r->n_procs = n;
	r->n_units = p->n_units;
	sl.budget = gs_fdlimit_spare(STOP_FD_RESERVE);
	pin_targets(p, proc_fd, r, refs, active, &sl);

	/* Units first: a kill from outside would trigger Restart=. */
	units_end = o->units_bounded ? gs_now_ms() + o->units_budget_ms : UINT64_MAX;
	for (size_t u = 0; u < p->n_units && !interrupted(o); u++) {
		bool any = false;

		for (size_t i = 0; i < n; i++)
			any |= active[i] && p->targets[i].unit == (int)u;
		if (!any)
			continue;
		{
			bool capped;

			for (size_t i = 0; i < n; i++)
				waitable[i] = active[i] && p->targets[i].unit == (int)u;
			pg.st.result = r;
			prog_begin(&pg, GS_STOP_PHASE_UNIT, &p->units[u], unit_command_timeout(o, units_end, &capped),
				   waitable);
		}
		if (gs_unit_stop_is_supervised(&p->units[u]))
			stop_supervised(&p->units[u], proc_fd, o, units_end, &r->units[u], &pg);
		else if (p->units[u].runtime[0])
			stop_container(&p->units[u], o, units_end, &r->units[u], &pg);
		else
			stop_unit(&p->units[u], o, units_end, &r->units[u], &pg);
		for (size_t i = 0; i < n && r->units[u].stopped; i++)
			if (active[i] && p->targets[i].unit == (int)u && gs_pidref_exited(&refs[i], proc_fd) == 1) {
				r->procs[i].outcome = GS_OUT_STOPPED_WITH_UNIT;
				r->procs[i].exited_ms = since_ms(r);
			}
	}

	/* The ladder, for everything still running (unit leftovers included:
	 * KillMode=process leaves children in the cgroup). */
	for (size_t i = 0; i < n && !interrupted(o); i++) {
		struct gs_proc_result *pr = &r->procs[i];

		if (!active[i] || pr->outcome != GS_OUT_PENDING)
			continue;
		/* A stopped process keeps SIGTERM pending until continued. CONT
		 * goes first: sent after TERM it would race with a fast exit and
		 * the report would depend on the scheduler. */
		{
			/* Probe the permission first: the kernel lets SIGCONT
			 * through within a session even where SIGTERM is refused,
			 * and a process we may not stop must not be resumed. */
			int e = gs_pidref_kill(&refs[i], proc_fd, 0);

			if (e == -EPERM || e == -EACCES) {
				pr->outcome = GS_OUT_PERMISSION;
				continue;
			}
		}
		/* Decided on the dispositions as they are now, not at the plan:
		 * a process may have installed a handler (or dropped one) since.
		 * Unreadable: the ladder, as for any process. SIGKILL needs no
		 * SIGCONT (it ends a stopped process too). */
		if (gs_term_fate_read(proc_fd, pr->pid, p->targets[i].starttime, &pr->term) < 0)
			pr->term = GS_TERM_UNKNOWN;
		if (gs_term_futile(pr->term)) {
			pr->kill_at_once = true;
			send_signal(&refs[i], proc_fd, pr, p->targets[i].starttime, SIGKILL, GS_SENT_KILL);
			continue;
		}
		send_signal(&refs[i], proc_fd, pr, p->targets[i].starttime, SIGCONT, GS_SENT_CONT);
		if (pr->outcome == GS_OUT_PENDING)
			send_signal(&refs[i], proc_fd, pr, p->targets[i].starttime, SIGTERM, GS_SENT_TERM);
	}
	/* A frozen target cannot run a SIGTERM handler until its cgroup is
	 * thawed: waiting the grace period for it is waiting for nothing.
	 * gpuslate does not thaw it (that resumes every process of the
	 * cgroup, selected or not, and undoes someone's pause); SIGKILL
	 * follows at once, which ends a frozen task on cgroup v2. The grace
	 * period is for those that got SIGTERM: when every target was killed
	 * at once (or is frozen), only the wait after SIGKILL. */
	{
		bool any_term = false;

		for (size_t i = 0; i < n; i++) {
			waitable[i] = active[i] && r->procs[i].outcome == GS_OUT_PENDING && !check_frozen(o, &r->procs[i]);
			any_term |= waitable[i] && (r->procs[i].sent & GS_SENT_TERM) != 0;
		}
		if (any_term && !interrupted(o)) {
			pg.st.result = r;
			prog_begin(&pg, GS_STOP_PHASE_GRACE, NULL, o->grace_ms, waitable);
			wait_refs(refs, r, waitable, n, proc_fd, o->grace_ms, GS_OUT_EXITED_TERM, o, &sl, &ws, &pg);
		}
	}

	for (size_t i = 0; i < n && !interrupted(o); i++) {
		struct gs_proc_result *pr = &r->procs[i];

		if (!active[i] || pr->outcome != GS_OUT_PENDING || (pr->sent & GS_SENT_KILL))
			continue;
		send_signal(&refs[i], proc_fd, pr, p->targets[i].starttime, SIGKILL, GS_SENT_KILL);
	}
	/* On cgroup v1 the freezer holds SIGKILL too, until the thaw: those
	 * targets are not waited on either. */
	for (size_t i = 0; i < n; i++)
		waitable[i] = active[i] && r->procs[i].frozen.kind != GS_FREEZER_V1;
	if (!interrupted(o)) {
		uint64_t kill_wait = o->kill_wait_ms ? o->kill_wait_ms : 5000;

		/* Shown: those still alive now, not those gone in the grace. */
		for (size_t i = 0; i < n; i++)
			shown[i] = waitable[i] && r->procs[i].outcome == GS_OUT_PENDING;
		pg.st.result = r;
		prog_begin(&pg, GS_STOP_PHASE_KILL_WAIT, NULL, kill_wait, shown);
		wait_refs(refs, r, waitable, n, proc_fd, kill_wait, GS_OUT_KILLED, o, &sl, &ws, &pg);
	}

	for (size_t i = 0; i < n; i++) {
		struct gs_proc_result *pr = &r->procs[i];
		char state;

		if (active[i] && pr->outcome == GS_OUT_PENDING) {
			if (gs_pidref_exited(&refs[i], proc_fd) == 1) {
				pr->outcome = pr->sent & GS_SENT_KILL ? GS_OUT_KILLED
					      : pr->sent & GS_SENT_TERM ? GS_OUT_EXITED_TERM
					      : (p->targets[i].action == GS_ACT_STOP_UNIT ||
						 p->targets[i].action == GS_ACT_STOP_CONTAINER ||
						 p->targets[i].action == GS_ACT_STOP_SUPERVISED) &&
							r->units[p->targets[i].unit].stopped ? GS_OUT_STOPPED_WITH_UNIT
					      : GS_OUT_ALREADY_GONE;
				pr->exited_ms = since_ms(r);
			} else if (interrupted(o) && !(pr->sent & GS_SENT_KILL)) {
				pr->outcome = user_interrupted(o) ? GS_OUT_INTERRUPTED : GS_OUT_DRIVER_FAILURE;
			} else if (!(pr->sent & GS_SENT_KILL)) {
				/* Alive, and our SIGKILL never left: not "survived". */
				pr->outcome = GS_OUT_NOT_SIGNALLED;
			} else if (check_frozen(o, pr)) {
				/* v1 holds it in state D, but a thaw frees it, not
				 * a GPU reset. */
				pr->outcome = GS_OUT_FROZEN;
			} else {
				read_wchan(proc_fd, pr->pid, pr->wchan, sizeof(pr->wchan), &state);
				pr->outcome = state == 'D' ? GS_OUT_D_STATE : GS_OUT_SURVIVED;
			}
		}
		gs_pidref_close(&refs[i]);
	}
	r->interrupted = user_interrupted(o);
	free(refs);
	free(active);
	free(waitable);
	free(shown);
	free(ws.pfd);
	free(ws.idx);
	return 0;
}

/* gpuslate run [selection and reclaim options] -- COMMAND [ARGS...]:
 * reclaim (core/reclaim.c), then COMMAND under the lock with the intruder
 * watch (core/runjob.c), --restore (core/restore.h), the summary and the
 * exit status. Everything gpuslate says goes to stderr, so COMMAND's
 * stdout stays COMMAND's; with --json the one document goes to stdout
 * after COMMAND has ended. */
#include "cli/cli.h"
#include "core/json_keys.h"
#include "core/reclaim.h"
#include "core/restore.h"
#include "core/runjob.h"
#include "out/reclaim_out.h"
#include "out/restore_out.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_intruder(void *ud, const struct gs_intruder *in)
{
	(void)ud;
	if (in->mem_known)
		gs_warn("intruder on GPU %u: PID %d (%s) of %s, %llu MiB: %s", in->gpu, (int)in->pid, in->comm, in->user,
			(unsigned long long)(in->mem / GS_MIB), in->cmdline);
	else
		gs_warn("intruder on GPU %u: PID %d (%s) of %s: %s", in->gpu, (int)in->pid, in->comm, in->user,
			in->cmdline);
}

static void on_guarded(void *ud, const struct gs_intruder *in)
{
	(void)ud;
	gs_warn("intruder PID %d (%s): %s", (int)in->pid, in->comm, in->outcome);
}

static void on_restore_note(void *ud, const char *text)
{
	const struct gs_request *req = ud;

	if (!req->quiet)
		gs_warn("restore: %s", text);
}

static void print_argv(FILE *f, char *const *argv)
{
	for (size_t i = 0; argv[i]; i++)
		fprintf(f, "%s%s", i ? " " : "", GS_SAFE(argv[i]));
}

static json_t *json_run(const struct gs_request *req, const struct gs_runjob *job, const struct gs_restore *rs,
			bool ran)
{
	json_t *run = json_object(), *argv = json_array(), *ins = json_array();

	for (size_t i = 0; req->run_argv[i]; i++)
		json_array_append_new(argv, gs_json_text(req->run_argv[i]));
	json_object_set_new(run, "command", argv);
	json_object_set_new(run, "started", json_boolean(ran && job->started && !job->exec_errno));
	json_object_set_new(run, "started_unix_ms", ran ? json_integer((json_int_t)job->started_unix_ms) : json_null());
	/* No process when the exec failed (it is reaped, its PID not ours). */
	json_object_set_new(run, "pid", ran && job->pid > 0 ? json_integer(job->pid) : json_null());
	json_object_set_new(run, "exit_status", ran && !job->term_signal ? json_integer(job->exit_code) : json_null());
	json_object_set_new(run, "signal", ran && job->term_signal ? json_integer(job->term_signal) : json_null());
	json_object_set_new(run, "run_ms", ran ? json_integer((json_int_t)job->run_ms) : json_null());
	for (size_t i = 0; ran && i < job->n_intruders; i++) {
		const struct gs_intruder *in = &job->intruders[i];
		json_t *o = json_object();

		json_object_set_new(o, "pid", json_integer(in->pid));
		json_object_set_new(o, "comm", gs_json_text(in->comm));
		json_object_set_new(o, "cmdline", gs_json_text(in->cmdline));
		json_object_set_new(o, "user", gs_json_text(in->user));
		json_object_set_new(o, "uid", json_integer(in->uid));
		json_object_set_new(o, "gpu", json_integer(in->gpu));
		json_object_set_new(o, "memory_mib", in->mem_known ? json_integer((json_int_t)(in->mem / GS_MIB)) : json_null());
		json_object_set_new(o, "seen_ms", json_integer((json_int_t)in->seen_ms));
		json_object_set_new(o, "stopped", json_boolean(in->stopped));
		json_object_set_new(o, "outcome", gs_json_text(in->outcome));
		json_array_append_new(ins, o);
	}
	json_object_set_new(run, "intruders", ins);
	json_object_set_new(run, "watch_error",
			    ran && job->watch_error ? json_string(strerror(-job->watch_error)) : json_null());
	{
		json_t *sigs = json_array();

		for (int i = 0; ran && i < 3; i++)
			if (job->forwarded[i])
				json_array_append_new(sigs, json_sprintf("SIG%s", sigabbrev_np(gs_runjob_signal(i))));
		json_object_set_new(run, "signals_passed_on", sigs);
	}
	/* The restore's own document: its verdict and items, as restore
	 * --json gives them. */
	json_object_set_new(run, "restore", rs ? gs_json_restore(rs) : json_null());
	return run;
}

/* The reclaim's document with "run" added; command "run". */
static void emit_json(const struct gs_request *req, const struct gs_reclaim_report *rep, const struct gs_runjob *job,
		      const struct gs_restore *rs, bool ran, int status)
{
	json_t *j = gs_json_reclaim(rep);

	json_object_set_new(j, GS_JK_COMMAND, json_string("run"));
	json_object_set_new(j, GS_JK_EXIT_STATUS, json_integer(status));
	json_object_set_new(j, "run", json_run(req, job, rs, ran));
	gs_cli_print_json(j);
	json_decref(j);
	fflush(stdout);
}

static void summary(const struct gs_request *req, const struct gs_reclaim_report *rep, const struct gs_runjob *job,
		    const struct gs_restore *rs, int status)
{
	fprintf(stderr, "\nRun summary:\n  clean after  %.2f s\n  command      ", rep->elapsed_ms / 1000.0);
	print_argv(stderr, req->run_argv);
	if (job->exec_errno)
		fprintf(stderr, "\n  ran          not started: %s (status %d)\n", strerror(job->exec_errno), status);
	else if (job->term_signal)
		fprintf(stderr, "\n  ran          %.2f s, killed by signal %d (SIG%s)\n", job->run_ms / 1000.0,
			job->term_signal, sigabbrev_np(job->term_signal) ? sigabbrev_np(job->term_signal) : "?");
	else
		fprintf(stderr, "\n  ran          %.2f s, exit status %d\n", job->run_ms / 1000.0, job->exit_code);
	for (int i = 0; i < 3; i++)
		if (job->forwarded[i])
			fprintf(stderr, "  signals      SIG%s passed on to COMMAND (%d)\n", sigabbrev_np(gs_runjob_signal(i)),
				job->forwarded[i]);
	if (!job->n_intruders)
		fprintf(stderr, "  intruders    none\n");
	for (size_t i = 0; i < job->n_intruders; i++) {
		const struct gs_intruder *in = &job->intruders[i];

		fprintf(stderr, "  %-12s PID %d (%s) of %s on GPU %u after %.1f s: %s\n", i ? "" : "intruders",
			(int)in->pid, GS_SAFE(in->comm), GS_SAFE(in->user), in->gpu, in->seen_ms / 1000.0,
			GS_SAFE(in->outcome));
	}
	if (rs) {
		if (rs->verdict == GS_VERDICT_NONE)
			fprintf(stderr, "  restored     failed: %s\n", GS_SAFE(rs->error));
		else if (!rs->n)
			fprintf(stderr, "  restored     nothing\n");
		for (size_t i = 0; i < rs->n; i++) {
			const struct gs_restore_item *it = &rs->items[i];
			char name[512];

			gs_restore_item_name(&it->rec, name, sizeof(name));
			fprintf(stderr, "  %-12s %s: %s%s%s\n", i ? "" : "restored", name,
				gs_restore_outcome_str(it->outcome), it->error[0] ? ": " : "", GS_SAFE(it->error));
		}
	}
	if (job->watch_error)
		fprintf(stderr, "  watch        incomplete: %s\n", strerror(-job->watch_error));
	fprintf(stderr, "  exit status  %d%s\n", status,
		job->exit_code || job->term_signal || job->exec_errno ? ""
		: status == GS_EXIT_INTRUDER			       ? " (an intruder was seen)"
		: status == GS_EXIT_NOT_RESTORED		       ? " (the restore could not start everything)"
		: job->watch_error				       ? " (the GPUs could not be watched throughout)"
								       : "");
}

/* --restore: start again what this reclaim stopped (its own records, not
 * an earlier reclaim's), under the lock run still holds; -y, since asking
 * was the run's. A restore that cannot start everything turns a 0 into
 * its status. Returns whether rs holds a restore to render and free. */
static bool restore_stopped(const struct gs_request *req, struct gs_reclaim *rc, struct gs_restore *rs, int *status)
{
	struct gs_request rq = *req;
	struct gs_restore_hooks h = { .ud = (void *)req, .note = on_restore_note };
	struct gs_restore_opts o = { .lock_held = true, .only = &rc->recorded };

	rq.cmd = GS_CMD_RESTORE;
	rq.yes = true;
	rq.dry_run = false;
	if (gs_restore_run(&rq, &o, &h, rs) < 0) {
		gs_err("restore could not run");
		return false;
	}
	if (rs->verdict == GS_VERDICT_NONE)
		gs_err("restore: %s", rs->error);
	if (*status == 0 && rs->exit_status != GS_EXIT_CLEAN)
		*status = rs->exit_status;
	return true;
}

/* COMMAND did not run (the reclaim not clean, or it could not be started):
 * with --restore, what was stopped for it goes back, its report on stderr.
 * Returns whether rs holds a restore to render and free. */
static bool restore_unrun(const struct gs_request *req, struct gs_reclaim *rc, struct gs_restore *rs, int *status)
{
	bool restored;

	if (!req->restore || !rc->recorded.n)
		return false;
	restored = restore_stopped(req, rc, rs, status);
	if (restored && !req->json)
		(req->quiet ? gs_print_restore_verdict : gs_print_restore_report)(stderr, rs);
	return restored;
}

/* The reclaim's report on stderr (stdout is COMMAND's); -q: its verdict. */
static void print_report(const struct gs_request *req, const struct gs_reclaim_report *rep)
{
	if (req->quiet)
		gs_print_reclaim_verdict(stderr, rep);
	else
		gs_print_reclaim_report(stderr, rep);
}

int gs_cmd_run(const struct gs_request *cli)
{
	struct gs_request req = *cli;
	struct gs_reclaim_hooks hooks;
	struct gs_reclaim rc;
	struct gs_runjob job;
	struct gs_restore rs;
	bool restored = false;
	int status, r;

	memset(&job, 0, sizeof(job));
	{
		/* COMMAND must be able to run before anything is stopped for it:
		 * a typo (pythn3) must not cost another user's job. The shell's
		 * statuses: 127 not found, 126 not executable. */
		char path[4096];

		r = gs_runjob_resolve(req.run_argv[0], path, sizeof(path));
		if (r == -ENOEXEC) {
			gs_err("cannot run '%s': its interpreter '%s' does not exist; nothing was stopped",
			       req.run_argv[0], path);
			return 127;
		}
		if (r < 0) {
			gs_err("cannot run '%s': %s; nothing was stopped", req.run_argv[0],
			       r == -ENOENT ? (strchr(req.run_argv[0], '/') ? "no such file" : "command not found in PATH")
			       : r == -EACCES ? "not an executable file"
					      : strerror(-r));
			return r == -ENOENT ? 127 : 126;
		}
	}
	gs_runjob_save_dispositions();
	/* The reclaim is reclaim's own, plan and question included. */
	req.cmd = GS_CMD_RECLAIM;
	gs_cli_reclaim_hooks(&req, stderr, &hooks);
	if (gs_reclaim_run(&req, &hooks, &rc) < 0) {
		gs_err("'run' cannot run the reclaim pipeline");
		return GS_EXIT_USAGE;
	}
	status = rc.rep.exit_status;
	if (rc.rep.verdict == GS_VERDICT_NONE) {
		if (rc.error[0])
			gs_err("%s", rc.error);
		gs_reclaim_free(&rc);
		return status;
	}
	if (rc.rep.verdict == GS_VERDICT_DRY_RUN) {
		if (req.json) {
			emit_json(&req, &rc.rep, &job, NULL, false, status);
		} else {
			fputs("\nDry run: nothing was changed; would run: ", stderr);
			print_argv(stderr, req.run_argv);
			fputc('\n', stderr);
		}
		gs_reclaim_free(&rc);
		return status;
	}
	if (rc.rep.verdict != GS_VERDICT_REFUSED)
		gs_last_reclaim_record(&rc.rep);
	if (rc.rep.verdict != GS_VERDICT_CLEAN) {
		if (rc.rep.verdict != GS_VERDICT_REFUSED && !req.json)
			print_report(&req, &rc.rep);
		gs_err("COMMAND not run: the reclaim's verdict is %s", gs_verdict_name(rc.rep.verdict));
		/* What it stopped for COMMAND goes back: a service left
		 * stopped for a job that never ran helps nobody. */
		restored = restore_unrun(&req, &rc, &rs, &status);
		if (req.json)
			emit_json(&req, &rc.rep, &job, restored ? &rs : NULL, false, status);
		if (restored)
			gs_restore_free(&rs);
		gs_reclaim_free(&rc);
		return status;
	}
	if (!req.json)
		print_report(&req, &rc.rep);
	fflush(stderr);
	fflush(stdout);
	{
		struct gs_runjob_hooks rh = { .intruder = on_intruder, .guarded = on_guarded };

		r = gs_runjob_run(&rc, &req, &rh, &job);
	}
	if (r == -EINTR) {
		/* As Ctrl-C while waiting for the lock: nothing more is done. */
		gs_err("interrupted after the reclaim: COMMAND not run");
		status = GS_EXIT_REFUSED;
	} else if (r < 0) {
		gs_err("cannot start '%s': %s", req.run_argv[0], strerror(-r));
		status = GS_EXIT_NOT_CLEAN;
		/* As when the reclaim is not clean: COMMAND never ran. */
		restored = restore_unrun(&req, &rc, &rs, &status);
	} else {
		if (job.exec_errno)
			gs_err("cannot run '%s': %s", req.run_argv[0], strerror(job.exec_errno));
		status = job.status;
		if (status == 0 && job.n_intruders)
			status = GS_EXIT_INTRUDER;
		/* A scan that failed left the GPUs unwatched for a while: COMMAND's
		 * 0 cannot say it ran on clean GPUs (3, or 1 out of memory). */
		else if (status == 0 && job.watch_error)
			status = (int)gs_exit_of_error(job.watch_error, GS_EXIT_DRIVER);
		if (req.restore)
			restored = restore_stopped(&req, &rc, &rs, &status);
		if (!req.quiet)
			summary(&req, &rc.rep, &job, restored ? &rs : NULL, status);
	}
	if (req.json)
		emit_json(&req, &rc.rep, &job, restored ? &rs : NULL, r == 0, status);
	if (restored)
		gs_restore_free(&rs);
	gs_runjob_free(&job);
	/* The lock goes with the reclaim, after COMMAND and the restore. */
	gs_reclaim_free(&rc);
	return status;
}

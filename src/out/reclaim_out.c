#include "core/json_keys.h"
#include "out/reclaim_out.h"
#include "out/color.h"
#include "out/status_out.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <signal.h>
#include <string.h>

/* An NVIDIA GPU of the verdict whose memory was not polled. */

/* "container" (the CT a unit runs in) and "user" (the uid whose manager
 * runs it) of a unit's scope (owner.h gs_unit_scope_user). */
static void json_set_unit_scope(json_t *o, const char *scope)
{
	unsigned uid;
	bool user = gs_unit_scope_is_user(scope, &uid);

	json_object_set_new(o, "container", !user && scope[0] ? gs_json_text(scope) : json_null());
	json_object_set_new(o, "user", user ? json_integer(uid) : json_null());
}

static bool has_unpolled_nvidia(const struct gs_snapshot *s, const struct gs_verify_result *v)
{
	for (size_t g = 0; g < v->n_gpus; g++)
		if (!v->gpus[g].mem_known && s->gpus[v->gpus[g].gpu].vendor == GS_VENDOR_NVIDIA)
			return true;
	return false;
}

/* Why a holder is left alone; a dead PID only KFD lists says so (the
 * plan's reasons name NVML, which listed every dead PID before AMD GPUs). */
static const char *leave_text(const struct gs_leftalone *l, const struct gs_holder *h)
{
	if (l->why == GS_LEAVE_DEAD && h->kfd_listed && !h->nvml_listed)
		return "no such process (listed by KFD)";
	if (l->why == GS_LEAVE_CLIENT && h->mem_known && h->mem_used)
		return "GPU monitor, a client by its name (--include-clients to stop it)";
	return gs_leave_str(l->why);
}

static void gpus_of(const struct gs_snapshot *s, const struct gs_gpuset *set, char *buf, size_t len)
{
	gs_gpus_text(s, set, buf, len);
}

/* Why a SIGTERM would be dropped, as the plan and the report say it. */
static const char *term_futile_text(enum gs_term_fate f)
{
	return f == GS_TERM_NS_INIT ? "PID 1 of its namespace without a SIGTERM handler" : "SIGTERM ignored";
}

static void action_text(const struct gs_plan *p, const struct gs_target *t, char *buf, size_t len)
{
	switch (t->action) {
	case GS_ACT_KILL:
		snprintf(buf, len, "%s: SIGKILL at once", term_futile_text(t->term));
		break;
	case GS_ACT_STOP_UNIT:
		/* unit and container names come from cgroup paths: escaped */
		{
			char where[96];

			snprintf(buf, len, "stop unit %.200s%s", GS_SAFE(p->units[t->unit].unit),
				 gs_unit_scope_text(p->units[t->unit].container, where, sizeof(where)));
		}
		break;
	case GS_ACT_STOP_CONTAINER:
		/* the id comes from a cgroup path: escaped */
		snprintf(buf, len, "%s stop %.12s", p->units[t->unit].runtime, GS_SAFE(p->units[t->unit].unit));
		break;
	case GS_ACT_STOP_SUPERVISED:
		/* names come from an environment or a directory: escaped */
		snprintf(buf, len, "stop %s %s %.200s", p->units[t->unit].runtime,
			 strcmp(p->units[t->unit].runtime, "supervisord") ? "service" : "program",
			 GS_SAFE(p->units[t->unit].unit));
		break;
	case GS_ACT_SIGNAL_GROUP:
		snprintf(buf, len, "signal process group %d", (int)t->pid);
		break;
	case GS_ACT_SIGNAL:
		if (t->why == GS_WHY_DESCENDANT)
			snprintf(buf, len, "signal process (descendant of %d)", (int)t->why_pid);
		else if (t->why == GS_WHY_GROUP_MEMBER)
			snprintf(buf, len, "signal process (group of %d)", (int)t->why_pid);
		else if (t->why == GS_WHY_PARENT)
			snprintf(buf, len, "signal supervising parent of %d, first", (int)t->why_pid);
		else
			snprintf(buf, len, "signal process");
		break;
	}
	if (t->not_permitted) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, " [not permitted: uid %u's process; run as root]", (unsigned)t->owner_uid);
	}
}

static void mib(char *buf, size_t len, bool known, uint64_t bytes)
{
	if (known)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes / GS_MIB));
	else
		snprintf(buf, len, "-");
}

void gs_print_plan_header(FILE *f, const struct gs_snapshot *s, const struct gs_plan *p)
{
	char gl[64];

	gpus_of(s, &p->gpus, gl, sizeof(gl));
	fprintf(f, "Host %s, GPUs %s\n", GS_SAFE(s->host), gl);
}

/* The command a plan line shows for target t, in full. */
static void target_command(const struct gs_snapshot *s, const struct gs_target *t, char *buf, size_t len)
{
	const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;

	if (h && h->info_ok)
		gs_command_display(&h->info, buf, len);
	else
		gs_safe(t->comm, buf, len);
}

void gs_print_plan(FILE *f, const struct gs_snapshot *s, const struct gs_plan *p, size_t width)
{
	bool cut = false;
	size_t cw = 0;

	gs_print_plan_header(f, s, p);
	if (!p->n_targets) {
		fprintf(f, "Nothing to stop: no process the selection targets holds these GPUs.\n");
	} else {
		size_t ow = 5, aw = 6, longest = 7;

		/* As the status table: owner and action in full, the command in
		 * what is left of the width (at least 16), cut in the middle. */
		for (size_t i = 0; i < p->n_targets; i++) {
			const struct gs_target *t = &p->targets[i];
			const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;
			char owner[320], act[320], cmd[GS_CMD_DISPLAY_MAX];

			if (h && h->info_ok) {
				gs_owner_format(&h->info.owner, owner, sizeof(owner));
				if (strlen(owner) > ow)
					ow = strlen(owner);
			}
			action_text(p, t, act, sizeof(act));
			if (strlen(act) > aw)
				aw = strlen(act);
			target_command(s, t, cmd, sizeof(cmd));
			if (strlen(cmd) > longest)
				longest = strlen(cmd);
		}
		if (ow > GS_TABLE_OWNER_MAX)
			ow = GS_TABLE_OWNER_MAX;
		/* 41: indent, PID, user, GPUs, memory and the gaps */
		cw = gs_table_command_width(width, 41 + ow + aw, longest);
		fprintf(f, "Will stop:\n");
		fprintf(f, "  %7s %-8s %-*s %-7s %10s %-*s %s\n", "PID", "USER", (int)cw, "COMMAND", "GPUS", "GPU-MEM",
			(int)ow, "OWNER", "ACTION");
		for (size_t i = 0; i < p->n_targets; i++) {
			const struct gs_target *t = &p->targets[i];
			const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;
			char owner[320] = "-", act[320], m[32] = "-", tg[64] = "-", cmd[GS_CMD_DISPLAY_MAX],
			     shown[GS_CMD_DISPLAY_MAX];

			if (h) {
				gpus_of(s, &h->gpus, tg, sizeof(tg));
				mib(m, sizeof(m), h->mem_known, h->mem_used);
				if (h->info_ok)
					gs_owner_format(&h->info.owner, owner, sizeof(owner));
			}
			target_command(s, t, cmd, sizeof(cmd));
			gs_fit_middle(cmd, cw, shown, sizeof(shown));
			cut |= strcmp(cmd, shown) != 0;
			action_text(p, t, act, sizeof(act));
			if (h && h->protected_unverified) {
				size_t al = strlen(act);

				snprintf(act + al, sizeof(act) - al, " [named like a protected daemon; not one]");
			}
			fprintf(f, "  %7d %-8.8s %-*s %-7s %10s %-*s %s\n", (int)t->pid,
				h && h->info_ok ? GS_SAFE(h->info.user) : "-", (int)cw, shown, tg, m, (int)ow, owner, act);
		}
	}
	/* Nothing is stopped, or asked about, that the user cannot read in
	 * full: the lines the table cut, whole. */
	if (cut) {
		fprintf(f, "Command lines in full:\n");
		for (size_t i = 0; i < p->n_targets; i++) {
			char cmd[GS_CMD_DISPLAY_MAX];

			target_command(s, &p->targets[i], cmd, sizeof(cmd));
			if (strlen(cmd) > cw)
				fprintf(f, "  %7d %s\n", (int)p->targets[i].pid, cmd);
		}
	}
	if (p->n_restarters) {
		fprintf(f, "Restarters (what would bring a target back):\n");
		for (size_t i = 0; i < p->n_restarters; i++) {
			const struct gs_restarter *rs = &p->restarters[i];
			char who[400], pids[128] = "";
			size_t off = 0;

			for (size_t k = 0; k < p->n_targets && off + 16 < sizeof(pids); k++)
				if (p->targets[k].restarter == (int)i && p->targets[k].why != GS_WHY_PARENT)
					off += (size_t)snprintf(pids + off, sizeof(pids) - off, "%s%d", off ? "," : "",
								(int)p->targets[k].pid);
			if (rs->kind == GS_RESTARTER_PARENT)
				snprintf(who, sizeof(who), "parent %d (%s)", (int)rs->pid, GS_SAFE(rs->name));
			else if (rs->kind == GS_RESTARTER_UNIT)
			{
				char where[96];

				snprintf(who, sizeof(who), "unit %.250s%s, Restart=%.60s", GS_SAFE(rs->name),
					 gs_unit_scope_text(rs->container, where, sizeof(where)), GS_SAFE(rs->policy));
			}
			else if (rs->kind == GS_RESTARTER_CONTAINER)
				snprintf(who, sizeof(who), "%s container %.12s, --restart=%.60s", rs->runtime,
					 GS_SAFE(rs->name), GS_SAFE(rs->policy));
			else if (rs->kind == GS_RESTARTER_SUPERVISOR)
				snprintf(who, sizeof(who), "%s %d, its %s %.250s", rs->runtime, (int)rs->pid,
					 strcmp(rs->runtime, "supervisord") ? "service" : "program",
					 rs->name[0] ? GS_SAFE(rs->name) : "(its name unreadable)");
			else
				snprintf(who, sizeof(who), "Kubernetes pod %.64s", GS_SAFE(rs->name));
			fprintf(f, "  %s restarts %s: %s", who, pids, gs_restarter_handling_str(rs->handling));
			if (rs->handling == GS_HANDLE_WATCHED || rs->handling == GS_HANDLE_REPORTED)
				fprintf(f, " (stop it with %s)", GS_SAFE(rs->stop_with));
			fprintf(f, "\n");
		}
	}
	if (p->n_left) {
		fprintf(f, "Left alone:\n");
		for (size_t i = 0; i < p->n_left; i++) {
			const struct gs_leftalone *l = &p->left[i];
			const struct gs_holder *h = &s->holders[l->holder];
			char tg[64], m[32], extra[200] = "";

			gpus_of(s, &h->gpus, tg, sizeof(tg));
			mib(m, sizeof(m), h->mem_known, h->mem_used);
			if (l->why == GS_LEAVE_DEAD) {
				pid_t heirs[8];
				size_t n = gs_snapshot_heirs(s, h, heirs, GS_ARRAY_SIZE(heirs));
				size_t off = 0;

				for (size_t k = 0; k < n && off + 16 < sizeof(extra); k++)
					off += (size_t)snprintf(extra + off, sizeof(extra) - off, "%s%d",
								k ? "," : "; its memory is held by ", (int)heirs[k]);
			}
			if ((l->why == GS_LEAVE_NS_INIT || l->why == GS_LEAVE_UNIT_MAIN) && l->would_end)
				snprintf(extra, sizeof(extra), "; would end PID %d", (int)l->would_end);
			fprintf(f, "  %7d %-8.8s %-20.20s %-7s %10s %s%s\n", (int)l->pid,
				h->alive && h->info_ok ? GS_SAFE(h->info.user) : "-",
				h->alive && h->info_ok ? GS_SAFE(h->info.name) : GS_GONE, tg, m, leave_text(l, h), extra);
		}
	}
}

static const char *signals_text(unsigned sent, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", sent & GS_SENT_TERM ? "TERM" : "", sent & GS_SENT_CONT ? "+CONT" : "",
		 sent & GS_SENT_KILL ? (sent & GS_SENT_TERM ? ",KILL" : "KILL") : "", sent ? "" : "none");
	return buf;
}

/* The holder behind stop result i, NULL when it was not one. */
static const struct gs_holder *target_holder(const struct gs_reclaim_report *r, size_t i)
{
	const struct gs_target *t;

	if (!r->plan || i >= r->plan->n_targets)
		return NULL;
	t = &r->plan->targets[i];
	return t->holder >= 0 && (size_t)t->holder < r->before->n_holders ? &r->before->holders[t->holder] : NULL;
}

/* What thaws a frozen target: its runtime's own command for a docker or
 * podman container (the runtime keeps its paused state), else the write to
 * the freezer file. */
static void thaw_text(const struct gs_frozen *fz, const struct gs_holder *h, char *buf, size_t len)
{
	const struct gs_owner *ow = h && h->info_ok ? &h->info.owner : NULL;
	const char *value = fz->kind == GS_FREEZER_V1 ? "THAWED" : "0";

	if (ow && (ow->kind == GS_OWNER_DOCKER || ow->kind == GS_OWNER_PODMAN) && ow->name[0])
		snprintf(buf, len, "%s unpause %.100s", ow->kind == GS_OWNER_DOCKER ? "docker" : "podman", ow->name);
	else if (fz->control[0])
		snprintf(buf, len, "echo %s > %.1000s", value, fz->control);
	else
		snprintf(buf, len, "write %s to the freezer file of cgroup %.1000s", value, fz->cgroup);
}

/* Every holder gone, memory above the baseline, and (more than the
 * tolerance of) it held by no live process: only the driver keeps it. */
static bool held_with_no_process(const struct gs_reclaim_report *r, const struct gs_gpu_verdict *gv)
{
	/* Interrupted: it did not stay, gpuslate stopped looking. */
	return !gv->clean && gv->unattributed && gv->n_held_by == 0 && gv->unowned_known &&
	       gv->unowned > (r->plan ? r->plan->tolerance : 0) && r->verify && !r->verify->interrupted;
}

/* A restart its unit's manager has scheduled or begun, or one that follows
 * once the unit's other processes are gone (restarter.h). */
static const char *scheduled_what(const struct gs_respawn *rs)
{
	return gs_startswith(rs->state, "deactivating") ? "may restart it once its other processes are gone"
							: "will restart it";
}

/* The summary as built, before escaping: names and messages as they came. */
static void summary_raw(const struct gs_reclaim_report *r, char *buf, size_t len)
{
	const struct gs_verify_result *v = r->verify;
	size_t off = 0;

	if (r->message && *r->message) {
		snprintf(buf, len, "gpuslate: %s", r->message);
		return;
	}
	if (!v) {
		snprintf(buf, len, "gpuslate: %s", gs_verdict_name(r->verdict));
		return;
	}
	if (v->clean && v->others_hold) {
		off = (size_t)snprintf(buf, len, "gpuslate: selection gone, but processes left alone hold memory:");
		for (size_t g = 0; g < v->n_gpus && off + 64 < len; g++) {
			const struct gs_gpu_verdict *gv = &v->gpus[g];

			if (!gv->n_others)
				continue;
			off += (size_t)snprintf(buf + off, len - off, " GPU %u %llu MiB held by", r->before->gpus[gv->gpu].index,
						(unsigned long long)(gv->others_total / GS_MIB));
			for (size_t k = 0; k < gv->n_others && k < GS_ARRAY_SIZE(gv->others) && off + 48 < len; k++)
				off += (size_t)snprintf(buf + off, len - off, "%s %d (%s)", k ? "," : "", (int)gv->others[k],
							gv->others_comm[k]);
			if (gv->n_others > GS_ARRAY_SIZE(gv->others) && off + 16 < len)
				off += (size_t)snprintf(buf + off, len - off, ", ...");
			off += (size_t)snprintf(buf + off, len - off, ";");
		}
		if (off && off < len && buf[off - 1] == ';')
			buf[off - 1] = '\0';
		return;
	}
	if (v->clean) {
		off = (size_t)snprintf(buf, len, "gpuslate: clean (%zu GPU%s)", v->n_gpus, v->n_gpus == 1 ? "" : "s");
		for (size_t u = 0; r->stop && u < r->stop->n_units && off + 64 < len; u++)
			if ((r->stop->units[u].command[0] || r->stop->units[u].error[0]) && !r->stop->units[u].stopped)
				off += (size_t)snprintf(buf + off, len - off, "; %s %.100s not stopped %s%s, its processes signalled",
							gs_unit_stop_is_supervised(&r->plan->units[u]) ? "program"
							: r->plan->units[u].runtime[0] ? "container" : "unit",
							r->plan->units[u].unit,
							r->stop->units[u].out_of_time ? "within --timeout" : "through its ",
							r->stop->units[u].out_of_time ? ""
							: r->plan->units[u].runtime[0] ? r->plan->units[u].runtime : "manager");
		return;
	}
	off = (size_t)snprintf(buf, len, "gpuslate: not clean:");
	for (size_t g = 0; g < v->n_gpus && off + 64 < len; g++) {
		const struct gs_gpu_verdict *gv = &v->gpus[g];
		const struct gs_gpu *gp = &r->before->gpus[gv->gpu];

		if (gv->clean)
			continue;
		off += (size_t)snprintf(buf + off, len - off, " GPU %u", gp->index);
		if (gv->mem_known)
			off += (size_t)snprintf(buf + off, len - off, " %llu MiB used",
						(unsigned long long)(gv->after / GS_MIB));
		for (size_t k = 0; k < gv->n_held_by && off + 48 < len; k++)
			off += (size_t)snprintf(buf + off, len - off, "%s%d (%s)", k ? ", " : ", held by ",
						(int)gv->held_by[k], gv->held_comm[k]);
		if (held_with_no_process(r, gv) && off + 160 < len) {
			off += (size_t)snprintf(buf + off, len - off, ": %llu MiB held with no process",
						(unsigned long long)(gv->unowned / GS_MIB));
			if (gv->holders_gone && r->plan && r->plan->n_targets)
				off += (size_t)snprintf(buf + off, len - off, " %.1f s after its holders exited",
							v->waited_ms / 1000.0);
			off += (size_t)snprintf(buf + off, len - off, " (%s)", gs_unowned_why(r->before));
		} else if (gv->holders_gone && off + 64 < len)
			off += (size_t)snprintf(buf + off, len - off, ", not released %.1f s after its holders exited",
						v->waited_ms / 1000.0);
		else if (gv->unattributed && off + 40 < len)
			off += (size_t)snprintf(buf + off, len - off, " by no visible process");
		else if (gv->figure_lost && off + 40 < len)
			off += (size_t)snprintf(buf + off, len - off, " memory unknown");
		off += (size_t)snprintf(buf + off, len - off, ";");
	}
	for (size_t i = 0; i < v->n_respawns && off + 64 < len; i++) {
		if (v->respawns[i].scheduled)
			off += (size_t)snprintf(buf + off, len - off, " %s: systemd %s (%s)", v->respawns[i].by,
						scheduled_what(&v->respawns[i]), v->respawns[i].state);
		else
			off += (size_t)snprintf(buf + off, len - off, " %d respawned by %s", (int)v->respawns[i].pid,
						v->respawns[i].by);
		/* The option that stops the restarter too, named once. */
		if (v->respawns[i].stop_with[0] && off + 64 < len &&
		    (i == 0 || strcmp(v->respawns[i].stop_with, v->respawns[i - 1].stop_with)))
			off += (size_t)snprintf(buf + off, len - off, ", %s would stop it", v->respawns[i].stop_with);
		off += (size_t)snprintf(buf + off, len - off, ";");
	}
	{
		/* What only root can do: said where a script's log shows it. */
		size_t denied = 0;

		for (size_t i = 0; r->stop && i < r->stop->n_procs; i++)
			denied += r->stop->procs[i].outcome == GS_OUT_PERMISSION;
		if (denied && off + 96 < len && r->unprivileged)
			off += (size_t)snprintf(buf + off, len - off,
						" %zu process%s not permitted to signal: run as root (sudo gpuslate ...);",
						denied, denied == 1 ? "" : "es");
	}
	if (off && buf[off - 1] == ';')
		buf[off - 1] = '\0';
}

void gs_reclaim_summary(const struct gs_reclaim_report *r, char *buf, size_t len)
{
	char raw[1024];

	/* One line for people, logs and a drain reason: every name and
	 * message in it (process names, unit names, filter values, NVML's
	 * and systemctl's words) escaped at once (util/sanitize.h). */
	summary_raw(r, raw, sizeof(raw));
	gs_safe(raw, buf, len);
}

static void print_verdict_line(FILE *f, const struct gs_reclaim_report *r)
{
	const char *c = gs_color_verdict(f, r->verdict);

	fprintf(f, "Verdict: %s%s%s (%.2f s)\n", c, gs_verdict_name(r->verdict), gs_color_end(c), r->elapsed_ms / 1000.0);
}

void gs_print_reclaim_verdict(FILE *f, const struct gs_reclaim_report *r)
{
	char line[1024];

	print_verdict_line(f, r);
	if (!gs_verdict_ok(r->verdict)) {
		gs_reclaim_summary(r, line, sizeof(line));
		fprintf(f, "%s\n", line);
	}
}

/* An outcome in words for people (the JSON keeps gs_outcome_str's
 * tokens): "exited after SIGTERM", "stopped with its unit x.service". */
static void outcome_sentence(FILE *f, const struct gs_plan *p, size_t i, enum gs_outcome o)
{
	switch (o) {
	case GS_OUT_EXITED_TERM: fputs("exited after SIGTERM", f); return;
	case GS_OUT_KILLED: fputs("killed", f); return;
	case GS_OUT_STOPPED_WITH_UNIT: {
		int u = i < p->n_targets ? p->targets[i].unit : -1;

		if (u < 0 || (size_t)u >= p->n_units) {
			fputs("stopped with its unit", f);
			return;
		}
		if (gs_unit_stop_is_supervised(&p->units[u]))
			fprintf(f, "stopped with its %s %s", strcmp(p->units[u].runtime, "supervisord") ? "service" : "program",
				GS_SAFE(p->units[u].unit));
		else if (p->units[u].runtime[0])
			fprintf(f, "stopped with its container %.12s", GS_SAFE(p->units[u].unit));
		else
			fprintf(f, "stopped with its unit %s", GS_SAFE(p->units[u].unit));
		return;
	}
	case GS_OUT_ALREADY_GONE: fputs("already gone", f); return;
	case GS_OUT_PID_REUSED: fputs("not signalled: its PID is another process's now", f); return;
	case GS_OUT_PERMISSION: fputs("not permitted to signal", f); return;
	case GS_OUT_D_STATE: fputs("alive after SIGKILL", f); return;
	case GS_OUT_SURVIVED: fputs("survived SIGKILL", f); return;
	case GS_OUT_INTERRUPTED: fputs("not escalated: gpuslate was interrupted", f); return;
	case GS_OUT_DRIVER_FAILURE: fputs("not escalated: the GPU driver failed", f); return;
	case GS_OUT_NOT_SIGNALLED: fputs("not signalled", f); return;
	case GS_OUT_FROZEN: fputs("frozen", f); return;
	case GS_OUT_PENDING: break;
	}
	fputs(gs_outcome_str(o), f);
}

void gs_print_reclaim_report(FILE *f, const struct gs_reclaim_report *r)
{
	const struct gs_snapshot *s = r->before;
	const struct gs_plan *p = r->plan;
	char line[1024];

	if (r->stop) {
		const struct gs_stop_result *st = r->stop;

		if (st->n_units || st->n_procs)
			fprintf(f, "\nStopped:\n");
		for (size_t u = 0; u < st->n_units; u++) {
			const struct gs_unit_result *ur = &st->units[u];

			if (!ur->command[0] && !ur->error[0])
				continue;
			/* unit names, the argv run and the manager's error
			 * text all come from outside: escaped */
			/* a container stopped through its runtime: "docker container ID" */
			const char *what = p->units[u].runtime[0] ? p->units[u].runtime : "unit";
			const char *kind = !p->units[u].runtime[0] ? ""
					   : !gs_unit_stop_is_supervised(&p->units[u]) ? " container"
					   : strcmp(p->units[u].runtime, "supervisord") ? " service" : " program";

			if (!ur->command[0])
				fprintf(f, "  %s%s %s: %s; its processes are signalled\n", what, kind,
					GS_SAFE(p->units[u].unit), GS_SAFE(ur->error));
			else if (ur->exit_code == 0)
				fprintf(f, "  %s%s %s: %s: done in %.2f s\n", what, kind, GS_SAFE(p->units[u].unit),
					GS_SAFE(ur->command), ur->took_ms / 1000.0);
			else if (ur->timed_out) /* was "failed (timed out0)" */
				fprintf(f, "  %s%s %s: %s: failed (timed out)%s%s; its processes are signalled\n", what, kind,
					GS_SAFE(p->units[u].unit), GS_SAFE(ur->command), ur->error[0] ? ": " : "",
					GS_SAFE(ur->error));
			else
				fprintf(f, "  %s%s %s: %s: failed (exit %d)%s%s; its processes are signalled\n", what, kind,
					GS_SAFE(p->units[u].unit), GS_SAFE(ur->command), ur->exit_code,
					ur->error[0] ? ": " : "", GS_SAFE(ur->error));
		}
		for (size_t i = 0; i < st->n_procs; i++) {
			const struct gs_proc_result *pr = &st->procs[i];
			/* comm in 16 columns; an escape is never cut (util/sanitize.h) */
			char sig[32], cm[17];

			fprintf(f, "  %8d  %-16s signals %-14s ", (int)pr->pid,
				gs_text_escape(cm, sizeof(cm), pr->comm, strlen(pr->comm), 0),
				signals_text(pr->sent, sig, sizeof(sig)));
			outcome_sentence(f, p, i, pr->outcome);
			if (pr->outcome == GS_OUT_EXITED_TERM || pr->outcome == GS_OUT_KILLED ||
			    pr->outcome == GS_OUT_STOPPED_WITH_UNIT)
				fprintf(f, " in %.2f s", pr->exited_ms / 1000.0);
			if (pr->outcome == GS_OUT_D_STATE)
				fprintf(f, " (uninterruptible sleep in %s; only a GPU reset or reboot frees it)",
					pr->wchan[0] ? GS_SAFE(pr->wchan) : "?");
			if (pr->kill_at_once)
				fprintf(f, " (%s: SIGKILL at once)", term_futile_text(pr->term));
			if (pr->outcome == GS_OUT_NOT_SIGNALLED)
				fprintf(f, " (still running: %s)",
					pr->error ? strerror(pr->error) : "no SIGKILL could be sent");
			if (pr->frozen.kind != GS_FREEZER_NONE) {
				char thaw[1200];

				thaw_text(&pr->frozen, target_holder(r, i), thaw, sizeof(thaw));
				if (pr->outcome == GS_OUT_FROZEN)
					fprintf(f, " (frozen by cgroup %s, %s: its SIGKILL is pending and ends it once"
						" thawed: %s)", GS_SAFE(pr->frozen.cgroup), gs_freezer_str(pr->frozen.kind), GS_SAFE(thaw));
				else
					fprintf(f, " (frozen by cgroup %s, %s: SIGKILL without waiting for SIGTERM,"
						" which cannot be handled before a thaw)", GS_SAFE(pr->frozen.cgroup),
						gs_freezer_str(pr->frozen.kind));
			}
			fputc('\n', f);
		}
	}
	if (r->verify) {
		const struct gs_verify_result *v = r->verify;

		/* ALLOWED: the baseline plus the tolerance, what "clean" allows. */
		fprintf(f, "\n%-4s %-22s %12s %12s %12s  %s\n", "GPU", "NAME", "BEFORE", "AFTER", "ALLOWED", "RESULT");
		for (size_t g = 0; g < v->n_gpus; g++) {
			const struct gs_gpu_verdict *gv = &v->gpus[g];
			const struct gs_gpu *gp = &s->gpus[gv->gpu];
			char b[32], a[32], bl[32];

			mib(b, sizeof(b), gv->mem_known, gv->before);
			mib(a, sizeof(a), gv->mem_known, gv->after);
			mib(bl, sizeof(bl), gv->mem_known, gv->baseline);
			{
				char name[GS_SAFE_SIZE];

				/* Cut where it shows: "NVIDIA H100 80GB H...". */
				gs_safe(gp->name, name, sizeof(name));
				if (strlen(name) > 22)
					snprintf(name + 19, sizeof(name) - 19, "...");
				fprintf(f, "%-4u %-22s %12s %12s %12s  ", gp->index, name, b, a, bl);
			}
			if (gv->clean && gv->n_others) {
				fprintf(f, "not free: %llu MiB held by processes left alone:",
					(unsigned long long)(gv->others_total / GS_MIB));
				for (size_t k = 0; k < gv->n_others && k < GS_ARRAY_SIZE(gv->others); k++)
					fprintf(f, "%s %d (%s)", k ? "," : "", (int)gv->others[k],
						GS_SAFE(gv->others_comm[k]));
				fprintf(f, "%s\n", gv->n_others > GS_ARRAY_SIZE(gv->others) ? ", ..." : "");
			} else if (gv->clean && gv->mem_known && gv->before > gv->baseline)
				fprintf(f, "clean, released in %.2f s\n", gv->released_ms / 1000.0);
			else if (gv->clean)
				fprintf(f, "clean\n");
			else {
				fprintf(f, "NOT CLEAN");
				for (size_t k = 0; k < gv->n_held_by; k++) {
					const struct gs_holder *h = gs_snapshot_find(s, gv->held_by[k]);

					(void)h;
					fprintf(f, "%s%d (%s)", k ? ", " : ": held by ", (int)gv->held_by[k],
						GS_SAFE(gv->held_comm[k]));
				}
				if (gv->holders_gone)
					fprintf(f, ": holders gone, memory not released yet");
				else if (gv->unattributed)
					fprintf(f, ": memory above the baseline, no visible holder");
				else if (gv->figure_lost)
					fprintf(f, ": memory unknown (a DRM client without usage stats appeared)");
				fputc('\n', f);
			}
		}
		for (size_t g = 0; g < v->n_gpus; g++) {
			const struct gs_gpu_verdict *gv = &v->gpus[g];
			char held[512];

			if (!held_with_no_process(r, gv))
				continue;
			gs_unowned_text(s, s->gpus[gv->gpu].index, gv->unowned, held, sizeof(held));
			fprintf(f, "%s\n", held);
		}
		for (size_t g = 0; g < v->n_gpus; g++) {
			const struct gs_gpu *gp = &s->gpus[v->gpus[g].gpu];

			if (gp->mem_basis == GS_MEM_V1_ESTIMATED && gp->vendor == GS_VENDOR_AMD)
				fprintf(f, "GPU %u: amdgpu's used memory counts the driver's own buffers: used is less those,"
					" estimated at %llu MiB (used less the processes' memory, before anything was"
					" stopped)\n", gp->index, (unsigned long long)(gp->mem_reserved / GS_MIB));
			else if (gp->mem_basis == GS_MEM_V1_ESTIMATED)
				fprintf(f, "GPU %u: NVML has v1 memory figures only: used is v1's less the driver's reservation,"
					" estimated at %llu MiB (v1 used less the listed processes' memory, before anything"
					" was stopped)\n", gp->index, (unsigned long long)(gp->mem_reserved / GS_MIB));
			else if (gp->mem_basis == GS_MEM_V1)
				fprintf(f, "GPU %u: NVML has v1 memory figures only and the driver's reservation could not"
					" be estimated (a process's memory is not reported, or memory kept changing):"
					" memory not verified\n", gp->index);
		}
		for (size_t i = 0; i < v->n_respawns; i++)
			if (v->respawns[i].scheduled)
				fprintf(f, "respawn to come: %s: systemd %s (%s)%s%s%s\n", GS_SAFE(v->respawns[i].by),
					scheduled_what(&v->respawns[i]), GS_SAFE(v->respawns[i].state),
					v->respawns[i].stop_with[0] ? "; " : "",
					GS_SAFE(v->respawns[i].stop_with), v->respawns[i].stop_with[0] ? " would stop it" : "");
			else
				fprintf(f, "respawned: %d (%s) by %s%s%s%s\n", (int)v->respawns[i].pid,
					GS_SAFE(v->respawns[i].comm), GS_SAFE(v->respawns[i].by),
					v->respawns[i].stop_with[0] ? "; " : "", GS_SAFE(v->respawns[i].stop_with),
					v->respawns[i].stop_with[0] ? " would stop it" : "");
		for (size_t g = 0; g < v->n_gpus; g++) {
			const struct gs_gpu *gp = &s->gpus[v->gpus[g].gpu];

			if (!v->gpus[g].mem_known && gp->vendor != GS_VENDOR_NVIDIA)
				fprintf(f, "GPU %u: memory not verified: %s\n", gp->index,
					gp->vendor == GS_VENDOR_INTEL
						? "Intel's used memory is its clients' fdinfo, and a client there has no"
						  " usage stats (holders only)"
						: "no memory figure from sysfs (holders only)");
		}
		if (v->memory_unverified && strcmp(s->gpu_source, "nvml") && has_unpolled_nvidia(s, v))
			fprintf(f, "memory not verified: no GPU memory figures (NVML unusable)\n");
		if (v->driver_failed)
			fprintf(f, "driver failure: %s\n", GS_SAFE(v->driver_error));
		if (v->timed_out)
			fprintf(f, "gave up waiting after %.1f s\n", v->waited_ms / 1000.0);
		if (v->interrupted || (r->stop && r->stop->interrupted))
			fprintf(f, "interrupted: stopped escalating\n");
	}
	gs_reclaim_summary(r, line, sizeof(line));
	fputc('\n', f);
	print_verdict_line(f, r);
	/* Clean now, but what restarts the job is still there: a restart
	 * later than the watch would hold the GPU again. */
	for (size_t i = 0; r->verify && !r->verify->n_respawns && gs_verdict_ok(r->verdict) && i < r->verify->n_alive;
	     i++) {
		const struct gs_alive_restarter *a = &r->verify->alive[i];

		if (a->restarted)
			continue;
		fprintf(f, "Restarter still running: %d (%s) may start its program again after the %.1f s watched; %s%s"
			   "--respawn-watch TIME watches as long as it waits\n",
			(int)a->pid, GS_SAFE(a->comm), r->verify->respawn_watch_ms / 1000.0,
			a->stop_with[0] ? GS_SAFE(a->stop_with) : "", a->stop_with[0] ? " stops it, " : "");
	}
	if (!gs_verdict_ok(r->verdict))
		fprintf(f, "%s\n", line);
}

static json_t *json_gpus_of(const struct gs_snapshot *s, const struct gs_gpuset *set)
{
	json_t *a = json_array();

	for (size_t g = 0; g < s->n_gpus; g++)
		if (gs_gpuset_has(set, (unsigned)g))
			json_array_append_new(a, json_integer(s->gpus[g].index));
	return a;
}

static json_t *json_mib(bool known, uint64_t bytes)
{
	return known ? json_integer((json_int_t)(bytes / GS_MIB)) : json_null();
}

static json_t *json_term_fate(enum gs_term_fate f)
{
	const char *t = gs_term_fate_str(f);

	return t ? json_string(t) : json_null();
}

/* What the stop stage did, decided on the dispositions read just before
 * signalling: the plan's kill may have become the ladder, and back. */
static enum gs_action done_action(const struct gs_target *t, const struct gs_proc_result *pr)
{
	if (pr->kill_at_once)
		return GS_ACT_KILL;
	if (t->action == GS_ACT_KILL && (pr->sent & GS_SENT_TERM))
		return GS_ACT_SIGNAL;
	return t->action;
}

/* docs/json.md, plan.targets[].restarter */
static json_t *json_restarter(const struct gs_restarter *rs)
{
	json_t *o = json_object();

	json_object_set_new(o, "kind", json_string(gs_restarter_kind_str(rs->kind)));
	json_object_set_new(o, "name", gs_json_text(rs->name));
	json_object_set_new(o, GS_JK_PID, gs_restarter_is_process(rs) || rs->pid > 0 ? json_integer(rs->pid)
										     : json_null());
	json_set_unit_scope(o, rs->container);
	json_object_set_new(o, "runtime", rs->runtime[0] ? json_string(rs->runtime) : json_null());
	json_object_set_new(o, "policy", rs->policy[0] ? gs_json_text(rs->policy) : json_null());
	json_object_set_new(o, "restart_s", rs->kind == GS_RESTARTER_UNIT ? json_real(rs->restart_ms / 1000.0)
									    : json_null());
	json_object_set_new(o, "handling", json_string(gs_restarter_handling_str(rs->handling)));
	json_object_set_new(o, GS_JK_STOP_WITH, gs_json_text(rs->stop_with));
	return o;
}

json_t *gs_json_reclaim(const struct gs_reclaim_report *r)
{
	const struct gs_snapshot *s = r->before;
	const struct gs_plan *p = r->plan;
	json_t *j = json_object(), *plan = json_object(), *targets = json_array(), *left = json_array();
	json_t *units = json_array();
	char summary[1024];

	json_object_set_new(j, GS_JK_SCHEMA_VERSION, json_integer(GS_SCHEMA_VERSION));
	json_object_set_new(j, "tool", json_string("gpuslate"));
	json_object_set_new(j, "version", json_string(GS_VERSION));
	json_object_set_new(j, GS_JK_COMMAND, json_string(r->command));
	json_object_set_new(j, "host", gs_json_text(s->host));
	json_object_set_new(j, GS_JK_VERDICT, json_string(gs_verdict_name(r->verdict)));
	json_object_set_new(j, GS_JK_EXIT_STATUS, json_integer(r->exit_status));
	json_object_set_new(j, "dry_run", json_boolean(r->dry_run));
	gs_reclaim_summary(r, summary, sizeof(summary));
	json_object_set_new(j, GS_JK_SUMMARY, gs_json_text(summary));
	{
		/* An operator's --reason leads; the diagnosis follows when the
		 * GPUs are not clean, so a drain reason says what was wrong. */
		char reason[1400];

		if (r->reason && *r->reason && !gs_verdict_ok(r->verdict))
			snprintf(reason, sizeof(reason), "%s: %s", r->reason, summary);
		else
			snprintf(reason, sizeof(reason), "%s", r->reason && *r->reason ? r->reason : summary);
		/* --reason is the operator's text: valid UTF-8 kept, a line
		 * break or control byte escaped (it may become a drain reason) */
		json_object_set_new(j, GS_JK_REASON, gs_json_text(reason));
	}
	{
		json_t *um = json_array();

		for (size_t i = 0; i < r->n_unmatched; i++)
			json_array_append_new(um, gs_json_text(r->unmatched[i]));
		json_object_set_new(j, GS_JK_UNMATCHED, um);
	}
	json_object_set_new(j, "elapsed_s", json_real(r->elapsed_ms / 1000.0));
	{
		char src[32];

		json_object_set_new(j, "gpu_source", json_string(gs_snapshot_source(s, src, sizeof(src))));
	}
	json_object_set_new(j, "visibility",
			    gs_json_visibility(s, p ? p->tolerance : GS_TOLERANCE_DEFAULT_MIB * GS_MIB));

	if (p) {
		for (size_t i = 0; i < p->n_targets; i++) {
			const struct gs_target *t = &p->targets[i];
			const struct gs_holder *h = t->holder >= 0 ? &s->holders[t->holder] : NULL;
			json_t *o = json_object();

			json_object_set_new(o, GS_JK_PID, json_integer(t->pid));
			/* With the PID, the process's identity: a fleet passes
			 * both back as --expect (core/expect.h). */
			json_object_set_new(o, GS_JK_START_TIME, json_integer((json_int_t)t->starttime));
			json_object_set_new(o, GS_JK_COMM, gs_json_text(t->comm));
			json_object_set_new(o, "user", h && h->info_ok ? gs_json_text(h->info.user) : json_null());
			json_object_set_new(o, GS_JK_GPUS, h ? json_gpus_of(s, &h->gpus) : json_array());
			json_object_set_new(o, GS_JK_MEMORY_MIB, h ? json_mib(h->mem_known, h->mem_used) : json_null());
			json_object_set_new(o, "owner", h && h->info_ok ? gs_json_owner(&h->info.owner) : json_null());
			json_object_set_new(o, "action", json_string(gs_action_str(t->action)));
			/* The plan's own words for both, so that a fleet can show
			 * each host's targets in full before it asks. */
			{
				char cmd[GS_CMD_DISPLAY_MAX], act[320];

				target_command(s, t, cmd, sizeof(cmd));
				action_text(p, t, act, sizeof(act));
				json_object_set_new(o, GS_JK_COMMAND, gs_json_text(cmd));
				json_object_set_new(o, "action_text", gs_json_text(act));
			}
			json_object_set_new(o, "sigterm_dropped", json_term_fate(t->term));
			/* Not root, another user's process: the kernel refuses. */
			json_object_set_new(o, "permitted", json_boolean(!t->not_permitted));
			json_object_set_new(o, "unit", t->unit >= 0 ? gs_json_text(p->units[t->unit].unit) : json_null());
			json_set_unit_scope(o, t->unit >= 0 ? p->units[t->unit].container : "");
			json_object_set_new(o, "why", json_string(gs_why_str(t->why)));
			if (t->why != GS_WHY_HOLDER)
				json_object_set_new(o, "why_pid", json_integer(t->why_pid));
			json_object_set_new(o, "protected_name_unverified", json_boolean(h && h->protected_unverified));
			json_object_set_new(o, GS_JK_RESTARTER,
					    t->restarter >= 0 ? json_restarter(&p->restarters[t->restarter]) : json_null());
			json_array_append_new(targets, o);
		}
		for (size_t i = 0; i < p->n_left; i++) {
			const struct gs_leftalone *l = &p->left[i];
			const struct gs_holder *h = &s->holders[l->holder];
			json_t *o = json_object();

			json_object_set_new(o, GS_JK_PID, json_integer(l->pid));
			json_object_set_new(o, GS_JK_COMM, h->info_ok ? gs_json_text(h->info.st.comm) : json_null());
			json_object_set_new(o, GS_JK_ROLE, json_string(gs_role_str(h->role)));
			json_object_set_new(o, GS_JK_GPUS, json_gpus_of(s, &h->gpus));
			json_object_set_new(o, GS_JK_MEMORY_MIB, json_mib(h->mem_known, h->mem_used));
			json_object_set_new(o, GS_JK_REASON, json_string(leave_text(l, h)));
			if (l->would_end)
				json_object_set_new(o, "would_end", json_integer(l->would_end));
			json_object_set_new(o, "protected_name_unverified", json_boolean(h->protected_unverified));
			json_array_append_new(left, o);
		}
		json_object_set_new(plan, GS_JK_GPUS, json_gpus_of(s, &p->gpus));
		json_object_set_new(plan, GS_JK_TARGETS, targets);
		json_object_set_new(plan, GS_JK_LEFT_ALONE, left);
		json_object_set_new(j, GS_JK_PLAN, plan);
	} else {
		json_decref(plan);
		json_decref(targets);
		json_decref(left);
		json_object_set_new(j, GS_JK_PLAN, json_null());
	}

	if (r->stop) {
		json_t *procs = json_array();

		for (size_t u = 0; u < r->stop->n_units; u++) {
			const struct gs_unit_result *ur = &r->stop->units[u];
			json_t *o = json_object();

			json_object_set_new(o, "unit", gs_json_text(p->units[u].unit));
			json_set_unit_scope(o, p->units[u].container);
			/* A container stopped through its runtime: "unit" is its id. */
			json_object_set_new(o, "runtime", p->units[u].runtime[0] ? json_string(p->units[u].runtime)
										  : json_null());
			json_object_set_new(o, GS_JK_COMMAND, ur->command[0] ? gs_json_text(ur->command) : json_null());
			json_object_set_new(o, GS_JK_EXIT_STATUS, ur->command[0] ? json_integer(ur->exit_code) : json_null());
			json_object_set_new(o, "timed_out", json_boolean(ur->timed_out));
			json_object_set_new(o, "stopped", json_boolean(ur->stopped));
			json_object_set_new(o, GS_JK_ERROR, ur->error[0] ? gs_json_text(ur->error) : json_null());
			json_object_set_new(o, "seconds", json_real(ur->took_ms / 1000.0));
			json_array_append_new(units, o);
		}
		for (size_t i = 0; i < r->stop->n_procs; i++) {
			const struct gs_proc_result *pr = &r->stop->procs[i];
			json_t *o = json_object(), *sigs = json_array();

			if (pr->sent & GS_SENT_TERM)
				json_array_append_new(sigs, json_string("SIGTERM"));
			if (pr->sent & GS_SENT_CONT)
				json_array_append_new(sigs, json_string("SIGCONT"));
			if (pr->sent & GS_SENT_KILL)
				json_array_append_new(sigs, json_string("SIGKILL"));
			json_object_set_new(o, GS_JK_PID, json_integer(pr->pid));
			json_object_set_new(o, GS_JK_COMM, gs_json_text(pr->comm));
			json_object_set_new(o, "action", json_string(gs_action_str(done_action(&p->targets[i], pr))));
			json_object_set_new(o, "sigterm_dropped", json_term_fate(pr->term));
			json_object_set_new(o, "signals", sigs);
			json_object_set_new(o, "outcome", json_string(gs_outcome_str(pr->outcome)));
			json_object_set_new(o, "exited_after_s", pr->exited_ms || pr->outcome == GS_OUT_EXITED_TERM ||
								   pr->outcome == GS_OUT_KILLED
							 ? json_real(pr->exited_ms / 1000.0) : json_null());
			json_object_set_new(o, "wchan", pr->wchan[0] ? gs_json_text(pr->wchan) : json_null());
			json_object_set_new(o, "error", pr->error ? json_string(strerror(pr->error)) : json_null());
			if (pr->frozen.kind != GS_FREEZER_NONE) {
				json_t *fz = json_object();
				char thaw[1200];

				thaw_text(&pr->frozen, target_holder(r, i), thaw, sizeof(thaw));
				json_object_set_new(fz, "cgroup", gs_json_text(pr->frozen.cgroup));
				json_object_set_new(fz, "freezer", json_string(pr->frozen.kind == GS_FREEZER_V1 ? "v1" : "v2"));
				json_object_set_new(fz, "thaw", gs_json_text(thaw));
				json_object_set_new(o, "frozen", fz);
			} else {
				json_object_set_new(o, "frozen", json_null());
			}
			json_array_append_new(procs, o);
		}
		json_object_set_new(j, "units", units);
		json_object_set_new(j, GS_JK_PROCESSES, procs);
		json_object_set_new(j, "interrupted", json_boolean(r->stop->interrupted ||
								   (r->verify && r->verify->interrupted)));
	} else {
		json_decref(units);
		json_object_set_new(j, "units", json_array());
		json_object_set_new(j, GS_JK_PROCESSES, json_array());
		json_object_set_new(j, "interrupted", json_boolean(r->verify && r->verify->interrupted));
	}

	{
		json_t *gpus = json_array(), *resp = json_array();

		if (r->verify) {
			const struct gs_verify_result *v = r->verify;

			for (size_t g = 0; g < v->n_gpus; g++) {
				const struct gs_gpu_verdict *gv = &v->gpus[g];
				const struct gs_gpu *gp = &s->gpus[gv->gpu];
				json_t *o = json_object(), *held = json_array();

				for (size_t k = 0; k < gv->n_held_by; k++)
					json_array_append_new(held, json_integer(gv->held_by[k]));
				json_object_set_new(o, GS_JK_INDEX, json_integer(gp->index));
				json_object_set_new(o, "uuid", gs_json_text(gp->uuid));
				json_object_set_new(o, "name", gs_json_text(gp->name));
				json_object_set_new(o, GS_JK_CLEAN, json_boolean(gv->clean));
				json_object_set_new(o, GS_JK_MEMORY_BEFORE_MIB, json_mib(gv->mem_known, gv->before));
				json_object_set_new(o, GS_JK_MEMORY_AFTER_MIB,
						    json_mib(gv->mem_known && !gv->figure_lost, gv->after));
				json_object_set_new(o, "baseline_mib", json_mib(gv->mem_known, gv->baseline));
				json_object_set_new(o, "memory_total_mib", json_mib(gp->mem_known, gp->mem_total));
				gs_json_memory_basis(o, gp);
				json_object_set_new(o, "released_after_s", gv->released && gv->before > gv->baseline
										 ? json_real(gv->released_ms / 1000.0) : json_null());
				json_object_set_new(o, GS_JK_HELD_BY, held);
				json_object_set_new(o, "unattributed", json_boolean(gv->unattributed));
				json_object_set_new(o, GS_JK_UNOWNED_MIB, json_mib(gv->unowned_known, gv->unowned));
				{
					json_t *others = json_array();

					for (size_t k = 0; k < gv->n_others && k < GS_ARRAY_SIZE(gv->others); k++) {
						json_t *x = json_object();

						json_object_set_new(x, "pid", json_integer(gv->others[k]));
						json_object_set_new(x, "comm", gs_json_text(gv->others_comm[k]));
						json_object_set_new(x, "memory_mib", json_integer((json_int_t)(gv->others_memory[k] / GS_MIB)));
						json_array_append_new(others, x);
					}
					json_object_set_new(o, GS_JK_LEFT_ALONE_HOLDERS, others);
				}
				json_array_append_new(gpus, o);
			}
			for (size_t i = 0; i < v->n_respawns; i++) {
				json_t *o = json_object();

				json_object_set_new(o, GS_JK_PID, v->respawns[i].scheduled ? json_null()
											  : json_integer(v->respawns[i].pid));
				json_object_set_new(o, GS_JK_COMM, v->respawns[i].scheduled ? json_null()
											   : gs_json_text(v->respawns[i].comm));
				json_object_set_new(o, GS_JK_BY, gs_json_text(v->respawns[i].by));
				json_object_set_new(o, GS_JK_STOP_WITH, v->respawns[i].stop_with[0]
										? gs_json_text(v->respawns[i].stop_with)
										: json_null());
				json_object_set_new(o, "before_gpu", json_boolean(v->respawns[i].by_identity));
				json_object_set_new(o, "scheduled", json_boolean(v->respawns[i].scheduled));
				json_object_set_new(o, "unit_state", v->respawns[i].scheduled
										? gs_json_text(v->respawns[i].state)
										: json_null());
				json_array_append_new(resp, o);
			}
			json_object_set_new(j, "timed_out", json_boolean(v->timed_out));
			json_object_set_new(j, "memory_verified", json_boolean(!v->memory_unverified));
			json_object_set_new(j, "driver_error", v->driver_failed ? gs_json_text(v->driver_error) : json_null());
			json_object_set_new(j, "waited_s", json_real(v->waited_ms / 1000.0));
			json_object_set_new(j, "respawn_watch_s", json_real(v->respawn_watch_ms / 1000.0));
			{
				json_t *alive = json_array();

				for (size_t i = 0; i < v->n_alive; i++) {
					json_t *o = json_object();

					json_object_set_new(o, GS_JK_PID, json_integer(v->alive[i].pid));
					json_object_set_new(o, GS_JK_COMM, gs_json_text(v->alive[i].comm));
					json_object_set_new(o, "restarted", json_boolean(v->alive[i].restarted));
					json_object_set_new(o, "stop_with", v->alive[i].stop_with[0]
										     ? gs_json_text(v->alive[i].stop_with)
										     : json_null());
					json_array_append_new(alive, o);
				}
				json_object_set_new(j, "restarters_alive", alive);
			}
		} else if (p) {
			for (size_t g = 0; g < s->n_gpus; g++) {
				const struct gs_gpu *gp = &s->gpus[g];
				json_t *o;

				if (!gs_gpuset_has(&p->gpus, (unsigned)g))
					continue;
				o = json_object();
				json_object_set_new(o, GS_JK_INDEX, json_integer(gp->index));
				json_object_set_new(o, "uuid", gs_json_text(gp->uuid));
				json_object_set_new(o, "name", gs_json_text(gp->name));
				json_object_set_new(o, GS_JK_CLEAN, json_null());
				json_object_set_new(o, GS_JK_MEMORY_BEFORE_MIB, json_mib(gp->mem_known, gp->mem_used));
				json_object_set_new(o, GS_JK_MEMORY_AFTER_MIB, json_null());
				json_object_set_new(o, "baseline_mib", json_mib(gp->mem_known, p->baseline[g]));
				json_object_set_new(o, "memory_total_mib", json_mib(gp->mem_known, gp->mem_total));
				gs_json_memory_basis(o, gp);
				{
					uint64_t unowned;
					bool known = gs_snapshot_unowned(s, g, &unowned);

					json_object_set_new(o, GS_JK_UNOWNED_MIB, json_mib(known, unowned));
				}
				json_array_append_new(gpus, o);
			}
		}
		json_object_set_new(j, GS_JK_GPUS, gpus);
		json_object_set_new(j, GS_JK_RESPAWNS, resp);
	}
	return j;
}

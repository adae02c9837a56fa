#include "core/json_keys.h"
#include "out/status_out.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <errno.h>
#include <string.h>

void gs_command_display(const struct gs_procinfo *in, char *buf, size_t len)
{
	/* argv[0]'s directory is noise in a table: show its basename and the
	 * arguments, which begin where argv[0] ends (argv[0] may hold spaces). */
	size_t a0 = in->argv0_len <= strlen(in->cmdline) ? in->argv0_len : strlen(in->cmdline);
	const char *sp = in->cmdline[a0] ? in->cmdline + a0 : NULL;

	/* The process's own words: escaped for the terminal. */
	if (!in->cmdline[0]) {
		snprintf(buf, len, "[%s]", GS_SAFE(in->st.comm));
		return;
	}
	snprintf(buf, len, "%s%s", GS_SAFE(in->name), GS_SAFE(sp ? sp : ""));
}

void gs_fit_middle(const char *s, size_t width, char *buf, size_t len)
{
	size_t n = strlen(s), head, tail;

	if (!len)
		return;
	if (width >= len)
		width = len - 1;
	if (n <= width) {
		snprintf(buf, len, "%s", s);
		return;
	}
	if (width < 5) {
		snprintf(buf, len, "%.*s", (int)width, s);
		return;
	}
	/* The program and its first arguments say what it is, the last ones
	 * often which model or port: keep both ends. */
	head = (width - 3 + 1) / 2;
	tail = width - 3 - head;
	snprintf(buf, len, "%.*s...%s", (int)head, s, s + n - tail);
}

size_t gs_table_command_width(size_t width, size_t fixed, size_t longest)
{
	if (!width)
		return longest;
	if (width < fixed + GS_TABLE_COMMAND_MIN)
		return GS_TABLE_COMMAND_MIN;
	/* No wider than the longest: the columns after it stay close. */
	return width - fixed < longest ? width - fixed : longest;
}

bool gs_holder_in_selection(const struct gs_holder *h, const struct gs_gpuset *sel, bool sel_all)
{
	if (sel_all)
		return true;
	return gs_gpuset_intersects(&h->gpus, sel);
}

void gs_owner_format(const struct gs_owner *o, char *buf, size_t len)
{
	/* Names from cgroup paths, which runtimes and users choose: escaped. */
	char name[GS_SAFE_SIZE], unit[GS_SAFE_SIZE];

	gs_safe(o->name, name, sizeof(name));
	gs_safe(o->unit, unit, sizeof(unit));
	switch (o->kind) {
	case GS_OWNER_NONE:
		snprintf(buf, len, "-");
		break;
	case GS_OWNER_LXC:
	case GS_OWNER_NSPAWN:
	case GS_OWNER_UNIT:
		/* a host unit's unit[] is the inner one of a delegated subtree */
		if (o->unit[0])
			snprintf(buf, len, "%s %s: %s", gs_owner_kind_str(o->kind), name, unit);
		else
			snprintf(buf, len, "%s %s", gs_owner_kind_str(o->kind), name);
		break;
	case GS_OWNER_DOCKER:
	case GS_OWNER_PODMAN:
		/* Full ids are in the JSON; 12 characters are what docker ps shows. */
		snprintf(buf, len, "%s %.12s", gs_owner_kind_str(o->kind), name);
		break;
	case GS_OWNER_SLURM:
		snprintf(buf, len, "slurm job %s", name);
		break;
	case GS_OWNER_KUBERNETES:
		snprintf(buf, len, "pod %s", name);
		break;
	default:
		snprintf(buf, len, "%s %s", gs_owner_kind_str(o->kind), name);
		break;
	}
}

static json_t *json_mib(bool known, uint64_t bytes)
{
	return known ? json_integer((json_int_t)(bytes / GS_MIB)) : json_null();
}

void gs_unowned_text(const struct gs_snapshot *s, unsigned index, uint64_t bytes, char *buf, size_t len)
{
	size_t off;

	if (!s->n_denied) {
		snprintf(buf, len, "GPU %u: %llu MiB held with no process (%s)", index,
			 (unsigned long long)(bytes / GS_MIB), gs_unowned_why(s));
		return;
	}
	off = (size_t)snprintf(buf, len,
			       "GPU %u: %llu MiB held with no visible process: driver-held (a GPU reset or a reboot frees it),"
			       " or held by %s %zu process%s gpuslate could not inspect (PID",
			       index, (unsigned long long)(bytes / GS_MIB), s->n_denied == 1 ? "the" : "one of the",
			       s->n_denied, s->n_denied == 1 ? "" : "es");
	for (size_t i = 0; i < s->n_denied && i < GS_ARRAY_SIZE(s->denied) && off + 16 < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s %d", i ? "," : "", (int)s->denied[i]);
	if (off < len)
		snprintf(buf + off, len - off, "%s)", s->n_denied > GS_ARRAY_SIZE(s->denied) ? ", ..." : "");
}

const char *gs_unowned_why(const struct gs_snapshot *s)
{
	return s->n_denied ? "driver-held, or held by a process gpuslate could not inspect"
			   : "driver-held; a GPU reset or a reboot frees it";
}

json_t *gs_json_visibility(const struct gs_snapshot *s, uint64_t tolerance)
{
	json_t *vis = json_object(), *pids = json_array();

	for (size_t i = 0; i < s->n_denied && i < GS_ARRAY_SIZE(s->denied); i++)
		json_array_append_new(pids, json_integer(s->denied[i]));
	json_object_set_new(vis, "as_root", json_boolean(s->as_root));
	json_object_set_new(vis, "processes_scanned", json_integer((json_int_t)s->n_scanned));
	json_object_set_new(vis, "processes_denied", json_integer((json_int_t)s->n_denied));
	json_object_set_new(vis, "denied_pids", pids);
	json_object_set_new(vis, "denied_matter", json_boolean(gs_snapshot_denied_matters(s, tolerance)));
	return vis;
}

json_t *gs_json_owner(const struct gs_owner *o)
{
	json_t *j = json_object();

	json_object_set_new(j, "kind", json_string(gs_owner_kind_str(o->kind)));
	json_object_set_new(j, "name", o->kind == GS_OWNER_NONE ? json_null() : gs_json_text(o->name));
	json_object_set_new(j, "unit", o->unit[0] ? gs_json_text(o->unit) : json_null());
	json_object_set_new(j, "cgroup", o->cgroup[0] ? gs_json_text(o->cgroup) : json_null());
	json_object_set_new(j, "delegated", json_boolean(o->delegated));
	return j;
}

static size_t gpu_holder_count(const struct gs_snapshot *s, size_t g)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_holders; i++)
		if (gs_gpuset_has(&s->holders[i].gpus, (unsigned)g))
			n++;
	return n;
}

void gs_json_memory_basis(json_t *o, const struct gs_gpu *g)
{
	const char *basis = gs_mem_basis_str(g->mem_basis);

	json_object_set_new(o, "memory_reserved_mib",
			    json_mib(g->mem_basis == GS_MEM_V2 || g->mem_basis == GS_MEM_V1_ESTIMATED, g->mem_reserved));
	json_object_set_new(o, "memory_basis", basis ? json_string(basis) : json_null());
}

json_t *gs_json_gpu(const struct gs_gpu *g, const struct gs_snapshot *s)
{
	json_t *j = json_object();

	json_object_set_new(j, GS_JK_INDEX, json_integer(g->index));
	json_object_set_new(j, "minor", g->vendor == GS_VENDOR_NVIDIA ? json_integer(g->minor) : json_null());
	json_object_set_new(j, "vendor", json_string(gs_gpu_vendor_str(g->vendor)));
	json_object_set_new(j, "driver", json_string(g->vendor == GS_VENDOR_NVIDIA ? "nvidia" : g->driver));
	json_object_set_new(j, "uuid", g->uuid[0] ? gs_json_text(g->uuid) : json_null());
	json_object_set_new(j, "name", gs_json_text(g->name));
	json_object_set_new(j, "pci_bus_id", g->pci_bus_id[0] ? gs_json_text(g->pci_bus_id) : json_null());
	json_object_set_new(j, GS_JK_MEMORY_USED_MIB, json_mib(g->mem_known, g->mem_used));
	gs_json_memory_basis(j, g);
	json_object_set_new(j, "memory_total_mib", json_mib(g->mem_known, g->mem_total));
	json_object_set_new(j, "memory_source", g->mem_known && g->mem_source ? json_string(g->mem_source) : json_null());
	{
		uint64_t unowned;
		bool known = gs_snapshot_unowned(s, (size_t)(g - s->gpus), &unowned);

		json_object_set_new(j, GS_JK_UNOWNED_MIB, json_mib(known, unowned));
	}
	json_object_set_new(j, "holders", json_integer((json_int_t)gpu_holder_count(s, (size_t)(g - s->gpus))));
	return j;
}

json_t *gs_json_process(const struct gs_holder *h, const struct gs_snapshot *s)
{
	json_t *j = json_object(), *gpus = json_array();
	const struct gs_procinfo *in = &h->info;

	for (size_t g = 0; g < s->n_gpus; g++)
		if (gs_gpuset_has(&h->gpus, (unsigned)g))
			json_array_append_new(gpus, json_integer(s->gpus[g].index));
	json_object_set_new(j, GS_JK_PID, json_integer(h->pid));
	json_object_set_new(j, "alive", json_boolean(h->alive));
	json_object_set_new(j, GS_JK_COMM, h->info_ok ? gs_json_text(in->st.comm) : json_null());
	json_object_set_new(j, "name", h->info_ok ? gs_json_text(in->name) : json_null());
	json_object_set_new(j, "cmdline", h->info_ok ? gs_json_text(in->cmdline) : json_null());
	json_object_set_new(j, "user", h->info_ok ? gs_json_text(in->user) : json_null());
	json_object_set_new(j, "uid", h->info_ok ? json_integer(in->status.uid) : json_null());
	json_object_set_new(j, "state", h->info_ok ? json_sprintf("%c", in->st.state) : json_null());
	json_object_set_new(j, "ppid", h->info_ok ? json_integer(in->st.ppid) : json_null());
	json_object_set_new(j, "pgid", h->info_ok ? json_integer(in->st.pgrp) : json_null());
	json_object_set_new(j, "start_time", h->info_ok ? json_integer((json_int_t)in->st.starttime) : json_null());
	json_object_set_new(j, "nspid", h->info_ok && in->status.has_nspid && in->status.nspid != h->pid
				? json_integer(in->status.nspid) : json_null());
	json_object_set_new(j, GS_JK_GPUS, gpus);
	json_object_set_new(j, GS_JK_MEMORY_MIB, json_mib(h->mem_known, h->mem_used));
	json_object_set_new(j, "memory_source", h->mem_known && h->mem_source ? json_string(h->mem_source) : json_null());
	json_object_set_new(j, GS_JK_ROLE, json_string(gs_role_str(h->role)));
	json_object_set_new(j, "protected_name_unverified", json_boolean(h->protected_unverified));
	json_object_set_new(j, "nvml_listed", json_boolean(h->nvml_listed));
	json_object_set_new(j, "kfd_listed", json_boolean(h->kfd_listed));
	json_object_set_new(j, "maps_gpu", json_boolean(h->maps_gpu));
	json_object_set_new(j, "nvidia_fds", json_integer(h->n_fds));
	json_object_set_new(j, "drm_fds", json_integer(h->n_drm_fds));
	json_object_set_new(j, "owner", h->info_ok ? gs_json_owner(&in->owner) : json_null());
	if (!h->alive && (h->nvml_listed || h->kfd_listed)) {
		pid_t heirs[64];
		size_t n = gs_snapshot_heirs(s, h, heirs, GS_ARRAY_SIZE(heirs));
		json_t *a = json_array();

		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, json_integer(heirs[i]));
		json_object_set_new(j, GS_JK_HELD_BY, a);
	}
	return j;
}

json_t *gs_json_status(const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all,
		       enum gs_verdict verdict)
{
	json_t *j = json_object(), *gpus = json_array(), *procs = json_array(), *warn = json_array();

	json_object_set_new(j, GS_JK_SCHEMA_VERSION, json_integer(GS_SCHEMA_VERSION));
	json_object_set_new(j, "tool", json_string("gpuslate"));
	json_object_set_new(j, "version", json_string(GS_VERSION));
	json_object_set_new(j, GS_JK_COMMAND, json_string("status"));
	json_object_set_new(j, GS_JK_VERDICT, json_string(gs_verdict_name(verdict)));
	json_object_set_new(j, "host", gs_json_text(s->host));
	{
		char src[32];

		json_object_set_new(j, "gpu_source", json_string(gs_snapshot_source(s, src, sizeof(src))));
	}
	json_object_set_new(j, "driver_version", s->driver_version[0] ? gs_json_text(s->driver_version) : json_null());
	for (size_t g = 0; g < s->n_gpus; g++)
		if (sel_all || gs_gpuset_has(sel, (unsigned)g))
			json_array_append_new(gpus, gs_json_gpu(&s->gpus[g], s));
	for (size_t i = 0; i < s->n_holders; i++)
		if (gs_holder_in_selection(&s->holders[i], sel, sel_all))
			json_array_append_new(procs, gs_json_process(&s->holders[i], s));
	if (s->gpu_warning[0])
		json_array_append_new(warn, gs_json_text(s->gpu_warning));
	if (s->drm_note[0])
		json_array_append_new(warn, gs_json_text(s->drm_note));
	json_object_set_new(j, GS_JK_WARNINGS, warn);
	json_object_set_new(j, GS_JK_GPUS, gpus);
	json_object_set_new(j, GS_JK_PROCESSES, procs);
	json_object_set_new(j, "visibility", gs_json_visibility(s, GS_TOLERANCE_DEFAULT_MIB * GS_MIB));
	return j;
}

static void fmt_mib(char *buf, size_t len, bool known, uint64_t bytes)
{
	if (known)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes / GS_MIB));
	else
		snprintf(buf, len, "-");
}

void gs_gpus_text(const struct gs_snapshot *s, const struct gs_gpuset *set, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	/* Runs of consecutive indices as ranges: a tensor-parallel process on
	 * eight GPUs reads "0-7", not a column-breaking list. */
	for (size_t g = 0; g < s->n_gpus && off + 24 < len; g++) {
		size_t e = g;

		if (!gs_gpuset_has(set, (unsigned)g))
			continue;
		while (e + 1 < s->n_gpus && gs_gpuset_has(set, (unsigned)(e + 1)) &&
		       s->gpus[e + 1].index == s->gpus[e].index + 1)
			e++;
		if (e >= g + 2) {
			off += (size_t)snprintf(buf + off, len - off, "%s%u-%u", off ? "," : "", s->gpus[g].index,
						s->gpus[e].index);
			g = e;
		} else {
			off += (size_t)snprintf(buf + off, len - off, "%s%u", off ? "," : "", s->gpus[g].index);
		}
	}
	if (!off)
		snprintf(buf, len, "-");
}

static void gpus_list(const struct gs_holder *h, const struct gs_snapshot *s, char *buf, size_t len)
{
	gs_gpus_text(s, &h->gpus, buf, len);
}

/* The OWNER column of a PID that NVML lists but that is gone (the COMMAND
 * column says "(gone)"): who keeps its memory, the fork case. */
static void gone_owner(const struct gs_snapshot *s, const struct gs_holder *h, char *buf, size_t len)
{
	pid_t heirs[16];
	size_t n = gs_snapshot_heirs(s, h, heirs, GS_ARRAY_SIZE(heirs)), off;

	if (!n) {
		snprintf(buf, len, h->kfd_listed && !h->nvml_listed ? "listed by KFD" : "listed by NVML");
		return;
	}
	off = (size_t)snprintf(buf, len, "memory held by");
	for (size_t k = 0; k < n && off + 16 < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d", k ? "," : " ", (int)heirs[k]);
}

void gs_print_status_table(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all,
			   size_t width)
{
	size_t shown = 0, nw = 4;

	/* The vendor column only where there is more than NVIDIA to tell
	 * apart: an NVIDIA host's table stays as it was. */
	bool vendors = false;

	for (size_t g = 0; g < s->n_gpus; g++)
		vendors |= s->gpus[g].vendor != GS_VENDOR_NVIDIA;
	/* The name in full where it fits (at least 15 columns, as before),
	 * else cut with "..." where it shows. 86: the other columns and gaps. */
	for (size_t g = 0; g < s->n_gpus; g++) {
		size_t l = strlen(GS_SAFE(s->gpus[g].name));

		if ((sel_all || gs_gpuset_has(sel, (unsigned)g)) && l > nw)
			nw = l;
	}
	if (width) {
		size_t fixed = 86 + (vendors ? 7 : 0);

		size_t room = width > fixed + 15 ? width - fixed : 15;

		if (room < nw)
			nw = room;
	}
	if (vendors)
		fprintf(f, "%-3s %-6s %-*s %-40s %10s %9s %10s %7s\n", "GPU", "VENDOR", (int)nw, "NAME", "UUID", "USED",
			"RESERVED", "TOTAL", "HOLDERS");
	else
		fprintf(f, "%-3s %-*s %-40s %10s %9s %10s %7s\n", "GPU", (int)nw, "NAME", "UUID", "USED", "RESERVED",
			"TOTAL", "HOLDERS");
	for (size_t g = 0; g < s->n_gpus; g++) {
		const struct gs_gpu *gp = &s->gpus[g];
		static const char *const vendor_names[] = { "NVIDIA", "AMD", "Intel" };
		char used[32], res[32], tot[32];

		if (!sel_all && !gs_gpuset_has(sel, (unsigned)g))
			continue;
		fmt_mib(used, sizeof(used), gp->mem_known, gp->mem_used);
		fmt_mib(res, sizeof(res),
			gp->mem_known && (gp->mem_v2 || (gp->vendor != GS_VENDOR_NVIDIA && gp->mem_basis == GS_MEM_V1_ESTIMATED)),
			gp->mem_reserved);
		/* Intel: a total from sysfs (xe) even where the used figure is unknown. */
		fmt_mib(tot, sizeof(tot), gp->mem_known || gp->mem_total, gp->mem_total);
		if (vendors)
			fprintf(f, "%-3u %-6s ", gp->index, vendor_names[gp->vendor]);
		else
			fprintf(f, "%-3u ", gp->index);
		{
			char name[GS_SAFE_SIZE];

			/* The maker and model come first: cut the end. */
			gs_safe(gp->name, name, sizeof(name));
			if (strlen(name) > nw && nw > 3)
				snprintf(name + nw - 3, sizeof(name) - (nw - 3), "...");
			fprintf(f, "%-*s %-40.40s %10s %9s %10s %7zu\n", (int)nw, name,
				gp->uuid[0] ? GS_SAFE(gp->uuid) : "-", used, res, tot, gpu_holder_count(s, g));
		}
	}
	if (s->n_gpus == 0)
		fprintf(f, "(no GPUs found)\n");

	/* The owner in full (it decides how a holder is stopped), the
	 * command in what is left of the width, cut in the middle. */
	{
		size_t ow = 5, cw, longest = 7;

		for (size_t i = 0; i < s->n_holders; i++) {
			const struct gs_holder *h = &s->holders[i];
			char owner[320];

			if (!gs_holder_in_selection(h, sel, sel_all) || (h->alive && !h->info_ok))
				continue;
			if (h->alive)
				gs_owner_format(&h->info.owner, owner, sizeof(owner));
			else
				gone_owner(s, h, owner, sizeof(owner));
			if (strlen(owner) > ow)
				ow = strlen(owner);
			if (h->alive) {
				char cmd[GS_CMD_DISPLAY_MAX];

				gs_command_display(&h->info, cmd, sizeof(cmd));
				if (strlen(cmd) > longest)
					longest = strlen(cmd);
			}
		}
		if (ow > GS_TABLE_OWNER_MAX)
			ow = GS_TABLE_OWNER_MAX;
		cw = gs_table_command_width(width, GS_TABLE_FIXED + ow, longest);
		fprintf(f, "\n%7s %-8s %-*s %-7s %10s %-9s %s\n", "PID", "USER", (int)cw, "COMMAND", "GPUS", "GPU-MEM",
			"ROLE", "OWNER");
		for (size_t i = 0; i < s->n_holders; i++) {
			const struct gs_holder *h = &s->holders[i];
			char gl[64], mem[32], owner[320], cmd[GS_CMD_DISPLAY_MAX], shown_cmd[GS_CMD_DISPLAY_MAX], pidtxt[32];

			if (!gs_holder_in_selection(h, sel, sel_all))
				continue;
			shown++;
			gpus_list(h, s, gl, sizeof(gl));
			fmt_mib(mem, sizeof(mem), h->mem_known, h->mem_used);
			if (h->info_ok && h->info.status.has_nspid && h->info.status.nspid != h->pid)
				snprintf(pidtxt, sizeof(pidtxt), "%d(%d)", (int)h->pid, (int)h->info.status.nspid);
			else
				snprintf(pidtxt, sizeof(pidtxt), "%d", (int)h->pid);
			if (!h->alive) {
				gone_owner(s, h, owner, sizeof(owner));
				fprintf(f, "%7s %-8s %-*s %-7s %10s %-9s %s\n", pidtxt, "-", (int)cw, GS_GONE, gl, mem,
					gs_role_str(h->role), owner);
				continue;
			}
			if (h->info_ok) {
				gs_owner_format(&h->info.owner, owner, sizeof(owner));
				gs_command_display(&h->info, cmd, sizeof(cmd));
			} else {
				snprintf(owner, sizeof(owner), "?");
				snprintf(cmd, sizeof(cmd), "?");
			}
			gs_fit_middle(cmd, cw, shown_cmd, sizeof(shown_cmd));
			fprintf(f, "%7s %-8.8s %-*s %-7s %10s %-9s %s\n", pidtxt, h->info_ok ? GS_SAFE(h->info.user) : "?", (int)cw,
				shown_cmd, gl, mem, gs_role_str(h->role), owner);
		}
	}
	if (!shown)
		fprintf(f, "%7s (no processes hold the selected GPUs)\n", "");
	/* Memory that stopping processes cannot free: the user needs to
	 * know before reclaiming. */
	for (size_t g = 0, n = 0; g < s->n_gpus; g++) {
		uint64_t unowned;
		char line[512];

		if ((!sel_all && !gs_gpuset_has(sel, (unsigned)g)) || !gs_snapshot_unowned(s, g, &unowned) ||
		    unowned <= GS_TOLERANCE_DEFAULT_MIB * GS_MIB)
			continue;
		gs_unowned_text(s, s->gpus[g].index, unowned, line, sizeof(line));
		fprintf(f, "%s%s\n", n++ ? "" : "\n", line);
	}
}

void gs_csv_field(FILE *f, const char *raw)
{
	/* Escaped first (util/sanitize.h): no control byte, line break or
	 * invalid UTF-8 in a CSV cell; then RFC 4180 quoting. */
	const char *s = GS_SAFE(raw);

	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void print_processes_csv(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all);

/* One table per invocation (one header, one kind of row), as a CSV
 * reader expects: the GPUs, or with processes the holders. */
void gs_print_status_csv(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all,
			 bool processes)
{
	if (processes) {
		print_processes_csv(f, s, sel, sel_all);
		return;
	}
	fprintf(f, "gpu_index,uuid,name,memory_used_mib,memory_reserved_mib,memory_total_mib,holders\n");
	for (size_t g = 0; g < s->n_gpus; g++) {
		const struct gs_gpu *gp = &s->gpus[g];

		if (!sel_all && !gs_gpuset_has(sel, (unsigned)g))
			continue;
		fprintf(f, "%u,", gp->index);
		gs_csv_field(f, gp->uuid);
		fputc(',', f);
		gs_csv_field(f, gp->name);
		if (gp->mem_known)
			fprintf(f, ",%llu,%s%llu,%llu", (unsigned long long)(gp->mem_used / GS_MIB),
				"", (unsigned long long)(gp->mem_v2 ? gp->mem_reserved / GS_MIB : 0),
				(unsigned long long)(gp->mem_total / GS_MIB));
		else
			fprintf(f, ",,,");
		fprintf(f, ",%zu\n", gpu_holder_count(s, g));
	}
}

/* name: the whole process name (argv[0]'s basename; comm is cut at 15
 * bytes by the kernel); command: its command line as read. */
static void print_processes_csv(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all)
{
	fprintf(f, "pid,alive,user,name,comm,command,gpus,memory_mib,role,owner_kind,owner_name,owner_unit\n");
	for (size_t i = 0; i < s->n_holders; i++) {
		const struct gs_holder *h = &s->holders[i];
		char gl[64];

		if (!gs_holder_in_selection(h, sel, sel_all))
			continue;
		{
			/* CSV keeps the plain list ("0,1,2"): scripts split it. */
			size_t off = 0;

			gl[0] = '\0';
			for (size_t g = 0; g < s->n_gpus && off + 8 < sizeof(gl); g++)
				if (gs_gpuset_has(&h->gpus, (unsigned)g))
					off += (size_t)snprintf(gl + off, sizeof(gl) - off, "%s%u", off ? "," : "",
								s->gpus[g].index);
		}
		fprintf(f, "%d,%s,", (int)h->pid, h->alive ? "true" : "false");
		gs_csv_field(f, h->info_ok ? h->info.user : "");
		fputc(',', f);
		gs_csv_field(f, !h->alive ? GS_GONE : h->info_ok ? (h->info.name[0] ? h->info.name : h->info.st.comm) : "");
		fputc(',', f);
		gs_csv_field(f, !h->alive ? GS_GONE : h->info_ok ? h->info.st.comm : "");
		fputc(',', f);
		gs_csv_field(f, h->alive && h->info_ok ? h->info.cmdline : "");
		fputc(',', f);
		gs_csv_field(f, gl);
		if (h->mem_known)
			fprintf(f, ",%llu", (unsigned long long)(h->mem_used / GS_MIB));
		else
			fputc(',', f);
		fprintf(f, ",%s,%s,", gs_role_str(h->role),
			h->info_ok ? gs_owner_kind_str(h->info.owner.kind) : "");
		gs_csv_field(f, h->info_ok && h->info.owner.kind != GS_OWNER_NONE ? h->info.owner.name : "");
		fputc(',', f);
		gs_csv_field(f, h->info_ok ? h->info.owner.unit : "");
		fputc('\n', f);
	}
}

/* ---- nvidia-smi compatibility ---- */

struct smi_format {
	bool header, units;
};

static int parse_smi_format(const char *format, struct smi_format *fmt, char *err, size_t errlen)
{
	char buf[128], *save = NULL, *tok;
	bool csv = false;

	fmt->header = true;
	fmt->units = true;
	if (!format || strlen(format) >= sizeof(buf)) {
		snprintf(err, errlen, "--format is required with --query-gpu (e.g. --format=csv,noheader)");
		return -EINVAL;
	}
	gs_strlcpy(buf, format, sizeof(buf));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		gs_strstrip(tok);
		if (!strcmp(tok, "csv"))
			csv = true;
		else if (!strcmp(tok, "noheader"))
			fmt->header = false;
		else if (!strcmp(tok, "nounits"))
			fmt->units = false;
		else {
			snprintf(err, errlen, "\"%s\" is not a valid format option", tok);
			return -EINVAL;
		}
	}
	if (!csv) {
		snprintf(err, errlen, "only csv output is supported by --format ('%s')", format);
		return -EINVAL;
	}
	return 0;
}

enum smi_field {
	F_INDEX, F_UUID, F_NAME, F_BUS, F_DRIVER, F_COUNT, F_MINOR,
	F_MEM_TOTAL, F_MEM_RESERVED, F_MEM_USED, F_MEM_FREE,
	F_PID, F_PROCESS_NAME, F_GPU_NAME, F_GPU_UUID, F_GPU_BUS, F_USED_MEMORY,
};

struct smi_field_def {
	const char *names[3];
	enum smi_field f;
	const char *header;
	bool mib;
	bool gpu; /* valid in --query-gpu; else in --query-compute-apps */
};

static const struct smi_field_def smi_fields[] = {
	{ { "index" }, F_INDEX, "index", false, true },
	{ { "uuid", "gpu_uuid" }, F_UUID, "uuid", false, true },
	{ { "name", "gpu_name" }, F_NAME, "name", false, true },
	{ { "pci.bus_id", "gpu_bus_id" }, F_BUS, "pci.bus_id", false, true },
	{ { "driver_version" }, F_DRIVER, "driver_version", false, true },
	{ { "count" }, F_COUNT, "count", false, true },
	{ { "memory.total" }, F_MEM_TOTAL, "memory.total", true, true },
	{ { "memory.reserved" }, F_MEM_RESERVED, "memory.reserved", true, true },
	{ { "memory.used" }, F_MEM_USED, "memory.used", true, true },
	{ { "memory.free" }, F_MEM_FREE, "memory.free", true, true },
	{ { "pid" }, F_PID, "pid", false, false },
	{ { "process_name", "name" }, F_PROCESS_NAME, "process_name", false, false },
	{ { "gpu_name" }, F_GPU_NAME, "gpu_name", false, false },
	{ { "gpu_uuid" }, F_GPU_UUID, "gpu_uuid", false, false },
	{ { "gpu_bus_id" }, F_GPU_BUS, "gpu_bus_id", false, false },
	{ { "used_memory", "used_gpu_memory" }, F_USED_MEMORY, "used_gpu_memory", true, false },
};

static int parse_smi_fields(const char *fields, bool gpu, const struct smi_field_def **out, size_t max,
			    size_t *ret_n, char *err, size_t errlen)
{
	char buf[1024], *save = NULL, *tok;
	size_t n = 0;

	if (!fields || !*fields || strlen(fields) >= sizeof(buf)) {
		snprintf(err, errlen, "no fields to query");
		return -EINVAL;
	}
	gs_strlcpy(buf, fields, sizeof(buf));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct smi_field_def *def = NULL;

		gs_strstrip(tok);
		for (size_t i = 0; i < GS_ARRAY_SIZE(smi_fields) && !def; i++) {
			if (smi_fields[i].gpu != gpu)
				continue;
			for (size_t k = 0; k < 3 && smi_fields[i].names[k]; k++)
				if (!strcmp(tok, smi_fields[i].names[k]))
					def = &smi_fields[i];
		}
		if (!def) {
			/* nvidia-smi's own wording, so scripts see the familiar
			 * error; then the fields that are valid here. */
			size_t off = (size_t)snprintf(err, errlen, "Field \"%s\" is not a valid field to query. Valid fields:",
						      tok);
			bool first = true;

			for (size_t i = 0; i < GS_ARRAY_SIZE(smi_fields) && off < errlen; i++) {
				if (smi_fields[i].gpu != gpu)
					continue;
				for (size_t k = 0; k < 3 && smi_fields[i].names[k] && off < errlen; k++) {
					off += (size_t)snprintf(err + off, errlen - off, "%s %s", first ? "" : ",",
								smi_fields[i].names[k]);
					first = false;
				}
			}
			return -EINVAL;
		}
		if (n == max) {
			snprintf(err, errlen, "too many fields to query");
			return -EINVAL;
		}
		out[n++] = def;
	}
	*ret_n = n;
	return 0;
}

static void smi_header(FILE *f, const struct smi_field_def **defs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		/* nvidia-smi keeps " [MiB]" in the header with nounits: only
		 * the values lose their unit (seen on an H200, docs/gpu-h200.md). */
		fprintf(f, "%s%s%s", i ? ", " : "", defs[i]->header, defs[i]->mib ? " [MiB]" : "");
	fputc('\n', f);
}

/* Both queries: check the format and the fields before printing anything,
 * then the header line unless noheader. */
static int smi_begin(FILE *f, const char *fields, const char *format, bool gpu, const struct smi_field_def **defs,
		     size_t max, size_t *ret_n, struct smi_format *fmt, char *err, size_t errlen)
{
	int r = parse_smi_format(format, fmt, err, errlen);

	if (r < 0)
		return r;
	r = parse_smi_fields(fields, gpu, defs, max, ret_n, err, errlen);
	if (r < 0)
		return r;
	if (fmt->header)
		smi_header(f, defs, *ret_n);
	return 0;
}

int gs_smi_query_check(const char *fields, const char *format, bool gpu, char *err, size_t errlen)
{
	const struct smi_field_def *defs[64];
	struct smi_format fmt;
	size_t n;
	int r = parse_smi_format(format, &fmt, err, errlen);

	return r < 0 ? r : parse_smi_fields(fields, gpu, defs, GS_ARRAY_SIZE(defs), &n, err, errlen);
}

static void smi_mib(FILE *f, bool known, uint64_t bytes, const struct smi_format *fmt)
{
	if (!known)
		fputs("[N/A]", f);
	else /* rounded up, as nvidia-smi does: a 615.06 MiB reservation
	      * prints 616, 8201.5 MiB used 8202 (H200, docs/gpu-h200.md) */
		fprintf(f, "%llu%s", (unsigned long long)((bytes + GS_MIB - 1) / GS_MIB), fmt->units ? " MiB" : "");
}

/* nvidia-smi's count: the NVIDIA GPUs. */
static size_t nvidia_count(const struct gs_snapshot *s)
{
	size_t n = 0;

	for (size_t g = 0; g < s->n_gpus; g++)
		n += s->gpus[g].vendor == GS_VENDOR_NVIDIA;
	return n;
}

int gs_print_smi_query_gpu(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel,
			   const char *fields, const char *format, char *err, size_t errlen)
{
	const struct smi_field_def *defs[64];
	struct smi_format fmt;
	size_t n;
	int r;

	r = smi_begin(f, fields, format, true, defs, GS_ARRAY_SIZE(defs), &n, &fmt, err, errlen);
	if (r < 0)
		return r;
	for (size_t g = 0; g < s->n_gpus; g++) {
		const struct gs_gpu *gp = &s->gpus[g];

		/* nvidia-smi lists NVIDIA GPUs only; status and --json show all. */
		if (!gs_gpuset_has(sel, (unsigned)g) || gp->vendor != GS_VENDOR_NVIDIA)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputs(", ", f);
			switch (defs[i]->f) {
			case F_INDEX: fprintf(f, "%u", gp->index); break;
			case F_UUID: fputs(gp->uuid[0] ? GS_SAFE(gp->uuid) : "[N/A]", f); break;
			case F_NAME: fputs(GS_SAFE(gp->name), f); break;
			case F_BUS: fputs(gp->pci_bus_id[0] ? GS_SAFE(gp->pci_bus_id) : "[N/A]", f); break;
			case F_DRIVER: fputs(s->driver_version[0] ? GS_SAFE(s->driver_version) : "[N/A]", f); break;
			case F_COUNT: fprintf(f, "%zu", nvidia_count(s)); break;
			case F_MINOR: fprintf(f, "%u", gp->minor); break;
			case F_MEM_TOTAL: smi_mib(f, gp->mem_known, gp->mem_total, &fmt); break;
			case F_MEM_RESERVED:
				/* Only v2 splits the reservation out; a v1 estimate is
				 * ours, not NVML's, so nvidia-smi has nothing to print. */
				smi_mib(f, gp->mem_known && gp->mem_v2, gp->mem_reserved, &fmt);
				break;
			case F_MEM_USED: smi_mib(f, gp->mem_known, gp->mem_used, &fmt); break;
			case F_MEM_FREE:
				smi_mib(f, gp->mem_known, gp->mem_free, &fmt);
				break;
			default: break;
			}
		}
		fputc('\n', f);
	}
	return 0;
}

int gs_print_smi_query_apps(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel,
			    const char *fields, const char *format, char *err, size_t errlen)
{
	const struct smi_field_def *defs[64];
	struct smi_format fmt;
	size_t n;
	int r;

	r = smi_begin(f, fields, format, false, defs, GS_ARRAY_SIZE(defs), &n, &fmt, err, errlen);
	if (r < 0)
		return r;
	/* nvidia-smi lists what the driver lists: NVML's rows, GPU by GPU,
	 * dead PIDs included. */
	for (size_t k = 0; k < s->n_nvml; k++) {
		const struct gs_nvml_entry *e = &s->nvml[k];
		const struct gs_gpu *gp = &s->gpus[e->gpu];
		const struct gs_holder *h = gs_snapshot_find(s, e->pid);
		bool info = h && h->info_ok && h->alive;

		/* nvidia-smi's view: NVIDIA GPUs only (KFD and fdinfo rows are not NVML's). */
		if (!gs_gpuset_has(sel, e->gpu) || gp->vendor != GS_VENDOR_NVIDIA)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputs(", ", f);
			switch (defs[i]->f) {
			case F_PID: fprintf(f, "%d", (int)e->pid); break;
			case F_PROCESS_NAME:
				/* nvidia-smi names a process by its argv[0] (the
				 * path it was started with), not its arguments. */
				if (!info) {
					fputs("[Not Found]", f);
				} else if (h->info.argv0_len) {
					char a0[GS_SAFE_SIZE];

					fputs(gs_text_escape(a0, sizeof(a0), h->info.cmdline, h->info.argv0_len, 0), f);
				} else {
					fputs(GS_SAFE(h->info.st.comm), f);
				}
				break;
			case F_GPU_NAME: fputs(GS_SAFE(gp->name), f); break;
			case F_GPU_UUID: fputs(GS_SAFE(gp->uuid), f); break;
			case F_GPU_BUS: fputs(GS_SAFE(gp->pci_bus_id), f); break;
			case F_USED_MEMORY: smi_mib(f, e->mem_known, e->mem_used, &fmt); break;
			default: break;
			}
		}
		fputc('\n', f);
	}
	return 0;
}

/* Label values in the Prometheus text format escape \, " and newlines;
 * the value is escaped text first (util/sanitize.h): printable ASCII, so
 * always the valid UTF-8 the format requires. */
static void prom_label(FILE *f, const char *raw)
{
	for (const char *s = GS_SAFE(raw); *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
}

static void prom_up(FILE *f, int up)
{
	fprintf(f, "# HELP gpuslate_up 1 if gpuslate could read the GPUs, 0 if not (no driver, NVML failed).\n"
		   "# TYPE gpuslate_up gauge\n"
		   "gpuslate_up %d\n", up);
}

void gs_print_prometheus_down(FILE *f)
{
	prom_up(f, 0);
}

void gs_print_prometheus(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, const char *last_reclaim)
{
	static const enum gs_role roles[] = { GS_ROLE_COMPUTE, GS_ROLE_CLIENT, GS_ROLE_PROTECTED };

	prom_up(f, 1);
	fputs("# HELP gpuslate_gpu_memory_used_bytes GPU memory allocated (NVML v2 used, without the driver's reservation).\n"
	      "# TYPE gpuslate_gpu_memory_used_bytes gauge\n", f);
	for (size_t g = 0; g < s->n_gpus; g++) {
		if (!gs_gpuset_has(sel, (unsigned)g) || !s->gpus[g].mem_known)
			continue;
		fprintf(f, "gpuslate_gpu_memory_used_bytes{gpu=\"%u\",uuid=\"", s->gpus[g].index);
		prom_label(f, s->gpus[g].uuid);
		fprintf(f, "\"} %llu\n", (unsigned long long)s->gpus[g].mem_used);
	}
	fputs("# HELP gpuslate_gpu_memory_total_bytes GPU memory in total.\n"
	      "# TYPE gpuslate_gpu_memory_total_bytes gauge\n", f);
	for (size_t g = 0; g < s->n_gpus; g++) {
		if (!gs_gpuset_has(sel, (unsigned)g) || !s->gpus[g].mem_known)
			continue;
		fprintf(f, "gpuslate_gpu_memory_total_bytes{gpu=\"%u\",uuid=\"", s->gpus[g].index);
		prom_label(f, s->gpus[g].uuid);
		fprintf(f, "\"} %llu\n", (unsigned long long)s->gpus[g].mem_total);
	}
	fputs("# HELP gpuslate_gpu_holders Processes holding the GPU, by role.\n"
	      "# TYPE gpuslate_gpu_holders gauge\n", f);
	for (size_t g = 0; g < s->n_gpus; g++) {
		if (!gs_gpuset_has(sel, (unsigned)g))
			continue;
		for (size_t r = 0; r < GS_ARRAY_SIZE(roles); r++) {
			size_t n = 0;

			for (size_t i = 0; i < s->n_holders; i++)
				if (s->holders[i].role == roles[r] && gs_gpuset_has(&s->holders[i].gpus, (unsigned)g))
					n++;
			fprintf(f, "gpuslate_gpu_holders{gpu=\"%u\",uuid=\"", s->gpus[g].index);
			prom_label(f, s->gpus[g].uuid);
			fprintf(f, "\",role=\"%s\"} %zu\n", gs_role_str(roles[r]), n);
		}
	}
	fputs("# HELP gpuslate_processes_denied Processes whose file descriptors could not be read.\n"
	      "# TYPE gpuslate_processes_denied gauge\n", f);
	fprintf(f, "gpuslate_processes_denied %zu\n", s->n_denied);
	if (last_reclaim) {
		long long when;
		int status;
		char verdict[32];

		if (sscanf(last_reclaim, "%lld %d %31s", &when, &status, verdict) == 3) {
			fputs("# HELP gpuslate_last_reclaim_clean 1 if the last gpuslate reclaim on this host ended clean.\n"
			      "# TYPE gpuslate_last_reclaim_clean gauge\n", f);
			fprintf(f, "gpuslate_last_reclaim_clean{host=\"");
			prom_label(f, s->host);
			fprintf(f, "\",verdict=\"");
			prom_label(f, verdict);
			fprintf(f, "\"} %d\n", status == 0);
			fputs("# HELP gpuslate_last_reclaim_exit_status Exit status of the last gpuslate reclaim.\n"
			      "# TYPE gpuslate_last_reclaim_exit_status gauge\n", f);
			fprintf(f, "gpuslate_last_reclaim_exit_status %d\n", status);
			fputs("# HELP gpuslate_last_reclaim_timestamp_seconds When the last gpuslate reclaim ended.\n"
			      "# TYPE gpuslate_last_reclaim_timestamp_seconds gauge\n", f);
			fprintf(f, "gpuslate_last_reclaim_timestamp_seconds %lld\n", when);
		}
	}
}

/* gpuslate status: show every GPU and everything that holds it. */
#include "core/json_keys.h"
#include "cli/cli.h"
#include "core/gpusel.h"
#include "core/reclaim.h"
#include "core/snapshot.h"
#include "core/status.h"
#include "out/status_out.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Tell the user what the snapshot could not see, on stderr, once. */

void gs_cli_note_visibility(const struct gs_request *cli, const struct gs_snapshot *s)
{
	if (s->gpu_warning[0] && !cli->no_nvml) {
		if (!strcmp(s->gpu_source, "nvml"))
			gs_warn("%s", s->gpu_warning);
		else
			gs_warn("%s; %s", s->gpu_warning,
				!strcmp(s->gpu_source, "procfs")
					? "GPUs from /proc/driver/nvidia, holders from the fd scan, no memory figures"
					: "holders from the fd scan only");
	}
	if (s->drm_note[0])
		gs_warn("%s", s->drm_note);
	{
		/* The driver reports host PIDs. If none of them exists here, we
		 * are most likely inside a container's PID namespace. */
		size_t listed = 0, dead = 0;

		for (size_t i = 0; i < s->n_holders; i++)
			if (s->holders[i].nvml_listed) {
				listed++;
				dead += !s->holders[i].alive;
			}
		if (listed >= 2 && dead == listed)
			gs_warn("none of the %zu PIDs the driver lists exists here: gpuslate seems to run in another "
				"PID namespace (a container); run it on the host to see and stop the holders", listed);
	}
	if (s->n_denied && !cli->quiet) {
		/* Only where it matters (memory no visible process accounts
		 * for: one of them may hold it), or with -v: an unreadable PID 1
		 * in a container or sandbox is there on every run. Always in
		 * the JSON (visibility). */
		bool matters = gs_snapshot_denied_matters(s, cli->tolerance_mib * GS_MIB);
		char list[256];
		size_t off = 0;

		if (!matters && !cli->verbose)
			return;
		list[0] = '\0';
		for (size_t i = 0; i < s->n_denied && i < GS_ARRAY_SIZE(s->denied) && off + 32 < sizeof(list); i++)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d", i ? ", " : "", (int)s->denied[i]);
		if (matters)
			gs_warn("could not inspect %zu of %zu processes (permission denied): PID %s%s; they may hold GPU "
				"memory that no visible process accounts for%s", s->n_denied, s->n_scanned, list,
				s->n_denied > GS_ARRAY_SIZE(s->denied) ? ", ..." : "",
				s->as_root ? "" : "; run as root to see every holder");
		else
			fprintf(stderr, "gpuslate: note: could not inspect %zu of %zu processes (permission denied): PID %s%s; "
				"every GPU's memory is accounted for by processes gpuslate sees%s\n", s->n_denied,
				s->n_scanned, list, s->n_denied > GS_ARRAY_SIZE(s->denied) ? ", ..." : "",
				s->as_root ? "" : "; run as root to see every holder");
	}
}

/* The text forms of status (table, CSV, nvidia-smi queries, Prometheus) to
 * f: stdout, or a buffer that a fleet controller gets in the JSON. */
static int print_status_text(FILE *f, const struct gs_request *cli, const struct gs_snapshot *s,
			     const struct gs_gpuset *sel, char *err, size_t errlen)
{
	if (cli->csv) {
		gs_print_status_csv(f, s, sel, !cli->gpus, cli->csv_processes);
	} else if (cli->query_gpu || cli->query_apps) {
		int r = cli->query_gpu ? gs_print_smi_query_gpu(f, s, sel, cli->query_gpu, cli->format, err, errlen)
				       : gs_print_smi_query_apps(f, s, sel, cli->query_apps, cli->format, err, errlen);

		if (r < 0)
			return r;
	} else if (cli->prometheus) {
		char pbuf[256], *last = NULL;

		if (gs_read_file_at(AT_FDCWD, gs_last_reclaim_path(pbuf, sizeof(pbuf)), 4096, &last, NULL) < 0)
			last = NULL;
		gs_print_prometheus(f, s, sel, last);
		free(last);
	} else {
		gs_print_status_table(f, s, sel, !cli->gpus, gs_cli_table_width(cli, f));
	}
	return 0;
}

/* --remote with a text form asked for (a fleet's --query-gpu, --csv,
 * --format prometheus or -v): the document carries the text as "output". */
static bool remote_wants_text(const struct gs_request *cli)
{
	return cli->remote && (cli->csv || cli->query_gpu || cli->query_apps || cli->prometheus || cli->verbose);
}

int gs_cmd_status(const struct gs_request *cli)
{
	struct gs_discover d;
	struct gs_snapshot s;
	struct gs_gpuset sel = { 0 };
	char err[512];
	int r, rc = GS_EXIT_CLEAN;
	bool no_driver;

	r = gs_request_discover_open(cli, &d, err, sizeof(err));
	if (r < 0) {
		gs_err("%s", err);
		return r == -ENOENT || r == -ENOTDIR ? GS_EXIT_USAGE : gs_exit_of_error(r, GS_EXIT_DRIVER);
	}
	/* A GPU query (the nvidia-smi compatible one) needs no holder scan. */
	d.gpus_only = cli->query_gpu != NULL && !cli->remote; /* a fleet judges the holders too */
	r = gs_snapshot_take(&d, &s);
	if (r < 0 && r != -ENODEV) {
		gs_err("cannot read GPU state: %s", gs_discover_error(&d)[0] ? gs_discover_error(&d) : strerror(-r));
		gs_discover_close(&d);
		return gs_exit_of_error(r, GS_EXIT_DRIVER);
	}
	no_driver = r == -ENODEV;
	if (no_driver) {
		gs_request_no_driver(cli, &s, err, sizeof(err));
		gs_err("%s", err);
		rc = GS_EXIT_DRIVER;
	} else {
		gs_cli_note_visibility(cli, &s);
	}
	if (gs_gpusel_resolve(cli->gpus, s.gpus, s.n_gpus, &sel, err, sizeof(err)) < 0) {
		gs_err("%s", err);
		gs_snapshot_free(&s);
		gs_discover_close(&d);
		return GS_EXIT_USAGE;
	}

	if (cli->json) {
		json_t *j = gs_json_status(&s, &sel, !cli->gpus,
					   no_driver ? GS_VERDICT_DRIVER_FAILURE
						     : gs_status_verdict(&s, &sel, !cli->gpus, cli->tolerance_mib));

		if (no_driver)
			gs_cli_json_failure(j, rc);

		if (remote_wants_text(cli) && !no_driver) {
			char *text = NULL;
			size_t len = 0;
			FILE *mf = open_memstream(&text, &len);

			r = mf ? print_status_text(mf, cli, &s, &sel, err, sizeof(err)) : -ENOMEM;
			if (mf && fclose(mf) != 0 && r == 0)
				r = -ENOMEM;
			if (r == 0)
				json_object_set_new(j, GS_JK_OUTPUT, gs_json_textn(text, len, GS_ESC_LINES));
			free(text);
			if (r < 0) {
				gs_err("%s", r == -ENOMEM ? "out of memory" : err);
				json_decref(j);
				gs_snapshot_free(&s);
				gs_discover_close(&d);
				return gs_exit_of_error(r, GS_EXIT_USAGE);
			}
		}
		gs_cli_print_json(j);
		json_decref(j);
	} else if (no_driver) {
		/* Nothing to show but the error; Prometheus gets a valid
		 * document that says so, for the textfile collector. */
		if (cli->prometheus)
			gs_print_prometheus_down(stdout);
	} else {
		r = print_status_text(stdout, cli, &s, &sel, err, sizeof(err));
		if (r < 0) {
			gs_err("%s", err);
			rc = GS_EXIT_USAGE;
		}
	}
	gs_snapshot_free(&s);
	gs_discover_close(&d);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		gs_err("write error on standard output: %s", strerror(errno));
		return GS_EXIT_USAGE;
	}
	return rc;
}

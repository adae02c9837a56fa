/* gpuslate -w HOSTS COMMAND: the same command on many hosts over OpenSSH,
 * merged into one report (docs/fleet.md). */
#include "cli/cli.h"
#include "fleet/hostlist.h"
#include "fleet/inventory.h"
#include "fleet/merge.h"
#include "fleet/prom.h"
#include "fleet/remote.h"
#include "util/runner.h"
#include "out/status_out.h"
#include "util/sanitize.h"
#include "util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Bounds on what one host may send back. */
#define FLEET_MAX_OUT (8u * 1024u * 1024u)
#define FLEET_MAX_ERR (64u * 1024u)
/* Largest host list read from standard input (-w -). */
#define FLEET_MAX_STDIN (16u * 1024u * 1024u)

static volatile sig_atomic_t fleet_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	fleet_interrupted = 1;
}

/* The inventory: --hosts-file must exist; the default files may not. */
static int load_inventory(const struct gs_request *cli, struct gs_inventory *inv, bool *have)
{
	char err[512], path[4096];
	const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
	const char *candidates[2] = { NULL, "/etc/gpuslate/hosts" };
	int r;

	*have = false;
	if (cli->hosts_file) {
		r = gs_inventory_load(cli->hosts_file, inv, err, sizeof(err));
		if (r < 0) {
			gs_err("%s", err);
			return GS_EXIT_USAGE;
		}
		*have = true;
		return 0;
	}
	if (xdg && *xdg == '/')
		snprintf(path, sizeof(path), "%s/gpuslate/hosts", xdg);
	else if (home && *home)
		snprintf(path, sizeof(path), "%s/.config/gpuslate/hosts", home);
	else
		path[0] = '\0';
	if (path[0])
		candidates[0] = path;
	for (size_t i = 0; i < 2; i++) {
		if (!candidates[i] || access(candidates[i], F_OK) < 0)
			continue;
		r = gs_inventory_load(candidates[i], inv, err, sizeof(err));
		if (r < 0) {
			gs_err("%s", err);
			return GS_EXIT_USAGE;
		}
		*have = true;
		return 0;
	}
	return 0;
}

static int read_stdin_hosts(char **ret)
{
	char *buf;
	size_t len;
	int r = gs_read_fd(STDIN_FILENO, FLEET_MAX_STDIN, false, &buf, &len);

	if (r < 0)
		return r;
	if (memchr(buf, '\0', len)) {
		free(buf);
		return -EINVAL;
	}
	buf[len] = '\0';
	*ret = buf;
	return 0;
}

static int build_hostlist(const struct gs_request *cli, const struct gs_inventory *inv, struct gs_hostlist *hosts)
{
	struct gs_hostlist ex = GS_HOSTLIST_INIT;
	char err[512];
	bool stdin_used = false;
	int r;

	for (size_t i = 0; i < cli->n_hosts; i++) {
		if (!strcmp(cli->hosts[i], "-")) {
			char *text = NULL;

			if (stdin_used) {
				gs_err("-w - can be given only once");
				return GS_EXIT_USAGE;
			}
			stdin_used = true;
			r = read_stdin_hosts(&text);
			if (r < 0) {
				gs_err("cannot read hosts from standard input: %s",
				       r == -EINVAL ? "it contains a NUL byte" : strerror(-r));
				return GS_EXIT_USAGE;
			}
			r = gs_inventory_hostlist_append(inv, hosts, text, err, sizeof(err));
			free(text);
		} else {
			r = gs_inventory_hostlist_append(inv, hosts, cli->hosts[i], err, sizeof(err));
		}
		if (r < 0) {
			gs_err("-w: %s", r == -ENOMEM ? "out of memory" : err);
			return GS_EXIT_USAGE;
		}
	}
	for (size_t i = 0; i < cli->n_excludes; i++) {
		r = gs_inventory_hostlist_append(inv, &ex, cli->excludes[i], err, sizeof(err));
		if (r < 0) {
			gs_err("-x: %s", r == -ENOMEM ? "out of memory" : err);
			gs_hostlist_free(&ex);
			return GS_EXIT_USAGE;
		}
	}
	r = gs_hostlist_exclude(hosts, &ex);
	gs_hostlist_free(&ex);
	if (r < 0) {
		gs_err("-x: %s", strerror(-r));
		return GS_EXIT_USAGE;
	}
	if (hosts->n == 0) {
		gs_err("no hosts to run on%s", cli->n_excludes ? " (all excluded by -x)" : "");
		return GS_EXIT_USAGE;
	}
	return 0;
}

/* Acting on many hosts wants the same consent as acting on one: a
 * terminal to say yes on, or -y. Checked before any host is contacted;
 * restore asks here, reclaim after the hosts' plans (plans_then_act). */
static int confirm_reclaim(const struct gs_request *cli, const struct gs_hostlist *hosts)
{
	char *folded = NULL, line[16];
	bool yes;

	if ((cli->cmd != GS_CMD_RECLAIM && cli->cmd != GS_CMD_RESTORE) || cli->dry_run || cli->yes)
		return 0;
	if (!isatty(STDIN_FILENO)) {
		gs_err("refusing to %s on %zu host%s without confirmation: no terminal (use -y)", cli->cmd_name, hosts->n,
		       hosts->n == 1 ? "" : "s");
		return GS_EXIT_REFUSED;
	}
	/* reclaim asks once it has every host's plan (plans_then_act). */
	if (cli->cmd == GS_CMD_RECLAIM)
		return 0;
	if (gs_hostlist_fold(hosts->hosts, hosts->n, &folded) < 0) {
		gs_err("out of memory");
		return GS_EXIT_OUT_OF_MEMORY;
	}
	fprintf(stderr, "restore on %zu host%s (%.200s%s): start again what gpuslate reclaim stopped there; proceed? [y/N] ",
		hosts->n, hosts->n == 1 ? "" : "s", folded, strlen(folded) > 200 ? "..." : "");
	fflush(stderr);
	free(folded);
	yes = fgets(line, sizeof(line), stdin) && (line[0] == 'y' || line[0] == 'Y');
	if (!yes) {
		gs_err("not confirmed: no host was contacted");
		return GS_EXIT_REFUSED;
	}
	return 0;
}

/* GPUSLATE_FLEET_PRINT_ARGV: "HOST: [word] [word] ..." per host. */
static void print_argvs(const struct gs_hostlist *hosts, char ***argvs)
{
	for (size_t i = 0; i < hosts->n; i++) {
		printf("%s:", hosts->hosts[i]);
		for (size_t k = 0; argvs[i][k]; k++)
			printf(" [%s]", argvs[i][k]);
		putchar('\n');
	}
}

/* Each host's own text, prefixed; returns how many bytes were printed. */
static int print_prefixed(const struct gs_host_result *results, size_t n)
{
	char *text = NULL;
	int r = gs_fleet_render_prefixed(results, n, &text);
	size_t len;

	if (r < 0)
		return r;
	len = strlen(text);
	fputs(text, stdout);
	free(text);
	return len > 0;
}

struct fleet_run {
	char *const *names;
	struct gs_host_result *results;
	const struct gs_merge_opts *mo;
	size_t done, failed, total;
	bool progress, drawn;
	int err;
};

static void draw_progress(struct fleet_run *fr)
{
	if (!fr->progress)
		return;
	fprintf(stderr, "\r\033[K%zu/%zu hosts done, %zu failed%s", fr->done, fr->total, fr->failed,
		fleet_interrupted ? " (interrupted: ending the remote commands)" : "");
	fflush(stderr);
	fr->drawn = true;
}

static void on_finished(void *ud, size_t i, const struct gs_run_output *o)
{
	struct fleet_run *fr = ud;
	int r = gs_host_result_make(&fr->results[i], fr->names[i], o, fr->mo);

	if (r < 0 && !fr->err)
		fr->err = r;
	fr->done++;
	if (fr->results[i].verdict == GS_HV_FAILED)
		fr->failed++;
	draw_progress(fr);
}

static void on_tick(void *ud)
{
	static bool told;
	struct fleet_run *fr = ud;

	/* Redraw once when Ctrl-C arrives, so the user sees it was heard. */
	if (fleet_interrupted && !told) {
		told = true;
		draw_progress(fr);
	}
}

/* Run argvs[0..n) (one per host, names[i] its name) and judge each host
 * into results[i]. 0, or the exit status of a fleet that could not run. */
static int run_hosts(const struct gs_request *cli, char *const *names, size_t n, char ***argvs,
		     struct gs_host_result *results, struct gs_run_output *outs)
{
	struct sigaction sa = { 0 }, old_int, old_term, old_pipe;
	struct gs_merge_opts mo = {
		.command = cli->cmd_name,
		.deadline_ms = cli->command_timeout_ms,
		.tolerance_mib = cli->tolerance_mib,
	};
	struct fleet_run fr = {
		.names = names,
		.results = results,
		.mo = &mo,
		.total = n,
		/* --json keeps stderr for real errors, and progress is for
		 * people: on a terminal either way. */
		.progress = !cli->quiet && isatty(STDERR_FILENO) && !getenv("GPUSLATE_NO_PROGRESS"),
	};
	struct gs_runner_opts ro = {
		.fanout = cli->fanout,
		.deadline_ms = cli->command_timeout_ms,
		.end_grace_ms = 2000,
		.max_out = FLEET_MAX_OUT,
		.max_err = FLEET_MAX_ERR,
		.interrupted = &fleet_interrupted,
		.finished = on_finished,
		.tick = on_tick,
		.ud = &fr,
	};
	int r;

	if (n == 0)
		return 0;
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);
	draw_progress(&fr);
	r = gs_runner_run((char **const *)argvs, n, &ro, outs);
	if (fr.drawn)
		fprintf(stderr, "\r\033[K");
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	if (r < 0 || fr.err < 0) {
		gs_err("running the fleet failed: %s", strerror(-(r < 0 ? r : fr.err)));
		return gs_exit_of_error(r < 0 ? r : fr.err, GS_EXIT_DRIVER);
	}
	return 0;
}

/* A fleet reclaim on a terminal: every host's plan first (the remote side
 * run with --dry-run), shown folded as the fleet's other output is, then
 * one question; then each host that gave a plan is told to act on that
 * plan alone (--expect: its confirmed targets, core/expect.h). A host whose
 * targets changed in between stops nothing and says so (plan-changed). A
 * host that gave no plan is not asked to act: its failure is the result.
 * Fills results[0..hosts->n) as a plain run would. */
static int plans_then_act(const struct gs_request *cli, const struct gs_hostlist *hosts,
			  const struct gs_remote_ctx *act_ctx, struct gs_host_result *results,
			  struct gs_run_output *outs)
{
	struct gs_request plan_req = *cli;
	struct gs_remote_ctx plan_ctx = { 0 };
	struct gs_host_result *plans = calloc(hosts->n, sizeof(*plans));
	struct gs_run_output *plan_outs = calloc(hosts->n, sizeof(*plan_outs));
	char ***plan_argvs = calloc(hosts->n, sizeof(*plan_argvs));
	char **names = calloc(hosts->n, sizeof(*names));
	size_t *which = calloc(hosts->n, sizeof(*which));
	struct gs_host_result *acted = calloc(hosts->n, sizeof(*acted));
	char ***argvs = calloc(hosts->n, sizeof(*argvs));
	FILE *shown = cli->json ? stderr : stdout;
	size_t n_act = 0, n_targets = 0;
	char err[512], *text = NULL;
	int rc = 0, r;

	if (!plans || !plan_outs || !plan_argvs || !names || !which || !acted || !argvs) {
		gs_err("out of memory");
		rc = GS_EXIT_OUT_OF_MEMORY;
		goto out;
	}
	plan_req.dry_run = true;
	plan_req.cmd_name = "reclaim";
	r = gs_remote_ctx_init(&plan_ctx, &plan_req, act_ctx->inv, err, sizeof(err));
	for (size_t i = 0; r == 0 && i < hosts->n; i++)
		r = gs_remote_argv(&plan_ctx, hosts->hosts[i], &plan_argvs[i], err, sizeof(err));
	if (r < 0) {
		gs_err("%s", err);
		rc = gs_exit_of_error(r, GS_EXIT_USAGE);
		goto out;
	}
	rc = run_hosts(&plan_req, hosts->hosts, hosts->n, plan_argvs, plans, plan_outs);
	if (rc)
		goto out;
	if (cli->verbose) {
		/* Each host's own plan, then the folded view. */
		r = gs_fleet_render_prefixed(plans, hosts->n, &text);
		if (r == 0 && *text)
			fprintf(shown, "%s\n", text);
		free(text);
		text = NULL;
	}
	if (gs_fleet_render_lines(plans, hosts->n, &text) < 0) {
		gs_err("out of memory");
		rc = GS_EXIT_OUT_OF_MEMORY;
		goto out;
	}
	fputs(text, shown);
	free(text);
	text = NULL;
	/* Then every target in full: what the question asks about. */
	if (gs_fleet_render_plans(plans, hosts->n, &text) < 0) {
		gs_err("out of memory");
		rc = GS_EXIT_OUT_OF_MEMORY;
		goto out;
	}
	fputs(text, shown);
	free(text);
	text = NULL;
	fflush(shown);

	/* What each host is held to; a host without a plan is left out. */
	for (size_t i = 0; i < hosts->n; i++) {
		char *expect = NULL, *word = NULL;
		char *extra[2] = { NULL, NULL };

		if (fleet_interrupted)
			break;
		r = gs_host_result_expect(&plans[i], &expect);
		if (r == -ENOMEM) {
			gs_err("out of memory");
			rc = GS_EXIT_OUT_OF_MEMORY;
			goto out;
		}
		if (r < 0) {
			if (plans[i].verdict != GS_HV_FAILED) {
				/* A plan without the identities to hold it to. */
				plans[i].verdict = GS_HV_FAILED;
				plans[i].failure = GS_HF_BAD_OUTPUT;
				free(plans[i].error);
				plans[i].error = strdup(r == -E2BIG ? "too many targets to confirm; not asked to act"
								    : "its plan cannot be confirmed (no start times or an action this gpuslate does not know: another version?); not asked to act");
			}
			continue;
		}
		n_targets += json_array_size(
			json_object_get(json_object_get(plans[i].report, "plan"), "targets"));
		if (asprintf(&word, "--expect=%s", expect) < 0)
			word = NULL;
		free(expect);
		extra[0] = word;
		r = word ? gs_remote_argv_with(act_ctx, hosts->hosts[i], extra, &argvs[n_act], err, sizeof(err)) : -ENOMEM;
		free(word);
		if (r < 0) {
			gs_err("%s: %s", hosts->hosts[i], r == -ENOMEM ? "out of memory" : err);
			rc = gs_exit_of_error(r, GS_EXIT_USAGE);
			goto out;
		}
		names[n_act] = hosts->hosts[i];
		which[n_act++] = i;
	}
	if (fleet_interrupted) {
		gs_err("interrupted: nothing was stopped on any host");
		rc = GS_EXIT_INTERRUPTED;
		goto out;
	}
	if (n_targets) {
		if (!gs_cli_ask_proceed()) {
			gs_err("not confirmed: nothing was stopped on any host");
			rc = GS_EXIT_REFUSED;
			goto out;
		}
	}
	rc = run_hosts(cli, names, n_act, argvs, acted, outs);
	if (rc)
		goto out;
	/* The act's result where a host acted, the plan's failure where not. */
	for (size_t k = 0, i = 0; i < hosts->n; i++) {
		if (k < n_act && which[k] == i) {
			results[i] = acted[k++];
			memset(&acted[k - 1], 0, sizeof(acted[k - 1]));
		} else {
			results[i] = plans[i];
			memset(&plans[i], 0, sizeof(plans[i]));
		}
	}
out:
	for (size_t i = 0; plans && i < hosts->n; i++)
		gs_host_result_free(&plans[i]);
	for (size_t i = 0; acted && i < hosts->n; i++)
		gs_host_result_free(&acted[i]);
	for (size_t i = 0; plan_outs && i < hosts->n; i++)
		gs_run_output_free(&plan_outs[i]);
	for (size_t i = 0; plan_argvs && i < hosts->n; i++)
		gs_strv_free(plan_argvs[i]);
	for (size_t i = 0; argvs && i < hosts->n; i++)
		gs_strv_free(argvs[i]);
	free(plans);
	free(plan_outs);
	free(plan_argvs);
	free(names);
	free(which);
	free(acted);
	free(argvs);
	gs_remote_ctx_free(&plan_ctx);
	return rc;
}

int gs_cmd_fleet(const struct gs_request *cli, int argc, char **argv)
{
	struct gs_inventory inv = { 0 };
	struct gs_hostlist hosts = GS_HOSTLIST_INIT;
	struct gs_remote_ctx ctx = { 0 };
	struct gs_host_result *results = NULL;
	struct gs_run_output *outs = NULL;
	char ***argvs = NULL;
	struct gs_fleet_summary sum;
	bool have_inv = false;
	char err[512];
	int rc, r;

	(void)argc;
	(void)argv; /* never passed on: the remote argv is rebuilt from cli */
	if (cli->query_gpu || cli->query_apps) {
		/* A bad field is this command's error, not each host's. */
		if (gs_smi_query_check(cli->query_gpu ? cli->query_gpu : cli->query_apps, cli->format,
				       cli->query_gpu != NULL, err, sizeof(err)) < 0) {
			gs_err("%s", err);
			return GS_EXIT_USAGE;
		}
	}
	if (cli->expect) {
		/* Each host is held to the plan it showed; one list for all
		 * would hold none of them to theirs. */
		gs_err("--expect is set for each host by the fleet; it cannot be given with -w");
		return GS_EXIT_USAGE;
	}
	if (cli->nvml_lib && getenv("GPUSLATE_NVML_LIB") != cli->nvml_lib)
		gs_warn("--nvml-lib applies to this host only; it is not passed to the remote hosts");
	rc = load_inventory(cli, &inv, &have_inv);
	if (rc)
		return rc;
	rc = build_hostlist(cli, have_inv ? &inv : NULL, &hosts);
	if (rc)
		goto out;
	r = gs_remote_ctx_init(&ctx, cli, have_inv ? &inv : NULL, err, sizeof(err));
	if (r < 0) {
		gs_err("%s", err);
		rc = gs_exit_of_error(r, GS_EXIT_USAGE);
		goto out;
	}
	argvs = calloc(hosts.n, sizeof(*argvs));
	results = calloc(hosts.n, sizeof(*results));
	outs = calloc(hosts.n, sizeof(*outs));
	if (!argvs || !results || !outs) {
		gs_err("out of memory");
		rc = GS_EXIT_OUT_OF_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < hosts.n; i++) {
		r = gs_remote_argv(&ctx, hosts.hosts[i], &argvs[i], err, sizeof(err));
		if (r < 0) {
			gs_err("%s", err);
			rc = gs_exit_of_error(r, GS_EXIT_USAGE);
			goto out;
		}
	}
	if (getenv("GPUSLATE_FLEET_PRINT_ARGV")) {
		/* A dry run of the transport: what would run, contacting nothing. */
		print_argvs(&hosts, argvs);
		rc = fflush(stdout) == 0 && !ferror(stdout) ? GS_EXIT_CLEAN : GS_EXIT_USAGE;
		goto out;
	}
	rc = confirm_reclaim(cli, &hosts);
	if (rc)
		goto out;

	if (cli->cmd == GS_CMD_RECLAIM && !cli->dry_run && !cli->yes) {
		rc = plans_then_act(cli, &hosts, &ctx, results, outs);
		if (rc)
			goto out;
	} else {
		rc = run_hosts(cli, hosts.hosts, hosts.n, argvs, results, outs);
		if (rc)
			goto out;
	}

	if (!cli->json && (cli->csv || cli->query_gpu || cli->query_apps || cli->prometheus)) {
		/* Data for scripts: only "HOST: line" on stdout (for Prometheus
		 * one exposition, a host label on every sample); what went
		 * wrong on a host on stderr, one line each. */
		if (cli->prometheus) {
			char *text = NULL;
			size_t dropped = 0;

			r = gs_fleet_render_prometheus(results, hosts.n, &text, &dropped);
			if (r == 0) {
				fputs(text, stdout);
				free(text);
				if (dropped)
					gs_warn("%zu line%s of the hosts' expositions %s not metrics and %s left out", dropped,
						dropped == 1 ? "" : "s", dropped == 1 ? "was" : "were",
						dropped == 1 ? "was" : "were");
			}
		} else {
			r = print_prefixed(results, hosts.n);
		}
		if (r < 0) {
			gs_err("out of memory");
			rc = GS_EXIT_OUT_OF_MEMORY;
			goto out;
		}
		for (size_t i = 0; i < hosts.n; i++) {
			if (results[i].verdict == GS_HV_FAILED)
				gs_err("%s: %s", results[i].host, results[i].error ? results[i].error : "failed");
			else if (results[i].exit_code != GS_EXIT_CLEAN && results[i].line)
				gs_err("%s: %s", results[i].host, results[i].line);
		}
	} else if (cli->json) {
		json_t *j = gs_fleet_json(results, hosts.n, cli->cmd_name, fleet_interrupted);

		gs_cli_print_json(j);
		json_decref(j);
	} else {
		char *text = NULL;

		if (cli->verbose) {
			/* Each host's own plan and report, then the merged view. */
			r = print_prefixed(results, hosts.n);
			if (r < 0) {
				gs_err("out of memory");
				rc = GS_EXIT_OUT_OF_MEMORY;
				goto out;
			}
			if (r > 0)
				fputc('\n', stdout);
		}
		r = gs_fleet_render_text(cli->cmd_name, results, hosts.n, fleet_interrupted, &text);
		if (r < 0) {
			gs_err("out of memory");
			rc = GS_EXIT_OUT_OF_MEMORY;
			goto out;
		}
		fputs(text, stdout);
		free(text);
	}
	gs_fleet_summarize(results, hosts.n, &sum);
	rc = gs_fleet_exit_for(cli->cmd_name, &sum);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		gs_err("write error on standard output: %s", strerror(errno));
		rc = GS_EXIT_USAGE;
	}
out:
	for (size_t i = 0; argvs && i < hosts.n; i++)
		gs_strv_free(argvs[i]);
	for (size_t i = 0; results && i < hosts.n; i++)
		gs_host_result_free(&results[i]);
	for (size_t i = 0; outs && i < hosts.n; i++)
		gs_run_output_free(&outs[i]);
	free(argvs);
	free(results);
	free(outs);
	gs_remote_ctx_free(&ctx);
	gs_hostlist_free(&hosts);
	if (have_inv)
		gs_inventory_free(&inv);
	return rc;
}

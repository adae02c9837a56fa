/* The command line: getopt_long's tables, the parsing, the checks that
 * span options and --help, all made from the option table (core/options.c). */
#include "cli/cli.h"
#include "core/gpusel.h"
#include "core/options.h"
#include "core/snapshot.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_OPTIONS 64

static struct option long_opts[N_OPTIONS + 1];
/* ':' first (report a missing argument as ':'), then each short letter and
 * a ':' after those that take an argument. */
static char short_opts[2 * N_OPTIONS + 2];

void gs_cli_getopt_tables(const struct option **ret_long, const char **ret_short)
{
	if (!long_opts[0].name) {
		size_t n = 0, k = 0;

		short_opts[k++] = ':';
		for (const struct gs_option *o = gs_options; o->name && n < N_OPTIONS; o++, n++) {
			long_opts[n] = (struct option){ o->name,
							o->type == GS_OT_CSV ? optional_argument
							: o->arg	     ? required_argument
									     : no_argument,
							NULL, o->key };
			if (o->key < 0x80) {
				short_opts[k++] = (char)o->key;
				if (o->arg)
					short_opts[k++] = ':';
			}
		}
	}
	*ret_long = long_opts;
	*ret_short = short_opts;
}

/* The commands: the word, its usage line(s) (the same in README.md and the
 * man page: tests/e2e/drift.bats) and what it does. */
static const struct {
	enum gs_cmd cmd;
	const char *name;
	const char *usage;
	const char *what;
} commands[] = {
	{ GS_CMD_STATUS, "status",
	  " gpuslate [options] status  [-g GPUS] [--json | --csv[=processes] | --format prometheus]\n"
	  " gpuslate [options] status  --query-gpu=FIELDS | --query-compute-apps=FIELDS --format=csv[,noheader][,nounits]\n",
	  "the GPUs, their memory and every process that holds one" },
	{ GS_CMD_RECLAIM, "reclaim",
	  " gpuslate [options] reclaim [-g GPUS] [selection] [-y] [-n] [--grace TIME] [--timeout TIME] [--json]\n",
	  "stop what holds the GPUs, wait until the memory is released, verify" },
	{ GS_CMD_WAIT, "wait",
	  " gpuslate [options] wait    [-g GPUS] [--timeout TIME] [--json]\n",
	  "wait until the GPUs are clean, stopping nothing" },
	{ GS_CMD_RESTORE, "restore",
	  " gpuslate [options] restore [-y] [-n] [--timeout TIME] [--json]\n",
	  "start again what reclaims stopped through systemd or a container runtime" },
	{ GS_CMD_RUN, "run",
	  " gpuslate [options] run     [-g GPUS] [selection] [-y] [-n] [--guard] [--restore] [--json | --json-file FILE] -- COMMAND [ARGS...]\n",
	  "reclaim the GPUs, then run COMMAND on them" },
};

static const char usage_text[] =
	"\n"
	"Find every process holding a GPU, stop each one the right way, wait until\n"
	"the memory is released and verify it.\n";
static const char usage_time[] = "TIME is seconds (10, 0.5) or a duration with units: 90s, 2m, 500ms, 1m30s.\n";

static const char usage_tail[] =
	"\n"
	"Exit status: 0 clean, 1 not clean, 2 usage error, 3 GPU driver failure,\n"
	"4 some hosts failed, 5 refused, 6 selection gone but processes left alone\n"
	"hold memory, 7 a filter matched no process, 8 restore could not start\n"
	"everything, 9 (run) COMMAND succeeded but an intruder held a selected GPU.\n"
	"run: COMMAND's own status (128+N: signal N) once it ran. See gpuslate(1).\n";

/* The commands of a mask, "reclaim, run". */
static void put_cmds(FILE *f, unsigned mask)
{
	bool first = true;

	for (size_t i = 0; i < GS_ARRAY_SIZE(commands); i++)
		if (mask & (1u << commands[i].cmd)) {
			fprintf(f, "%s%s", first ? "" : ", ", commands[i].name);
			first = false;
		}
}

static void put_option(FILE *f, const struct gs_option *o)
{
	char left[64];
	int n;

	if (o->key < 0x80)
		n = snprintf(left, sizeof(left), " -%c, --%s%s%s", o->key, o->name, o->arg ? " " : "",
			     o->arg ? o->arg : "");
	else
		n = snprintf(left, sizeof(left), "     --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	if (!o->help[0]) {
		fprintf(f, "%s\n", left);
		return;
	}
	/* A help text of several lines: the next ones under the first. */
	for (const char *h = o->help, *nl; h; h = nl ? nl + 1 : NULL) {
		nl = strchr(h, '\n');
		fprintf(f, "%-*s%.*s\n", h == o->help ? (n <= 24 ? 26 : n + 2) : 26, h == o->help ? left : "",
			nl ? (int)(nl - h) : (int)strlen(h), h);
	}
}

/* The options of the table whose commands are `want` (exactly: every
 * command), or, with exact false, that apply to the command want names,
 * under their sections. A section is headed by the commands its options
 * apply to (derived from the table), unless that is every command. */
static void put_options(FILE *f, unsigned want, bool exact)
{
	for (const struct gs_option *o = gs_options; o->name; o++) {
		const struct gs_option *e;
		unsigned in_section = 0;
		bool listed = false;

		if (!o->section)
			continue;
		for (e = o; e->name && (e == o || !e->section); e++) {
			in_section |= e->cmds;
			listed |= e->help && (exact ? e->cmds == want : (e->cmds & want) != 0);
		}
		if (!listed)
			continue;
		if (!o->section[0]) {
			fputc('\n', f);
		} else {
			fprintf(f, "\n%s", o->section);
			if (!exact && in_section != GS_FOR_EVERY) {
				fputs(" (", f);
				put_cmds(f, in_section);
				fputc(')', f);
			}
			fputs(":\n", f);
		}
		for (e = o; e->name && (e == o || !e->section); e++)
			if (e->help && (exact ? e->cmds == want : (e->cmds & want) != 0))
				put_option(f, e);
	}
}

void gs_cli_usage(FILE *f)
{
	fputs("Usage:\n", f);
	for (size_t i = 0; i < GS_ARRAY_SIZE(commands); i++)
		fputs(commands[i].usage, f);
	fputs(usage_text, f);
	fputs(usage_time, f);
	fputs("\nCommands:\n", f);
	for (size_t i = 0; i < GS_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-9s%s\n", commands[i].name, commands[i].what);
	fprintf(f, "  %-9s%s\n", "help CMD", "the options of CMD (also: gpuslate CMD --help)");
	fputs("\nThe options below apply to every command; each command's own are in\n"
	      "'gpuslate help CMD' (or 'gpuslate CMD --help').\n", f);
	put_options(f, GS_FOR_EVERY, true);
	fputs(usage_tail, f);
}

int gs_cli_usage_cmd(FILE *f, enum gs_cmd cmd)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(commands); i++) {
		if (commands[i].cmd != cmd)
			continue;
		fprintf(f, "Usage:\n%s\n%s: %s.\n", commands[i].usage, commands[i].name, commands[i].what);
		fputs(usage_time, f);
		put_options(f, 1u << cmd, false);
		fputs(usage_tail, f);
		return 0;
	}
	return -EINVAL;
}

static int add_multi(const char **arr, size_t *n, const char *v, const char *what)
{
	if (*n >= GS_MAX_MULTI) {
		gs_err("too many %s options (at most %d)", what, GS_MAX_MULTI);
		return -E2BIG;
	}
	arr[(*n)++] = v;
	return 0;
}

static int parse_ms(const char *opt, const char *v, uint64_t *ret)
{
	int r = gs_parse_duration(v, ret);

	if (r < 0) {
		gs_err("invalid %s '%s': %s", opt, v,
		       r == -ERANGE ? "longer than 7 days" : "expected a duration, e.g. 10, 0.5, 90s, 2m or 500ms");
		return -EINVAL;
	}
	return 0;
}

/* Repeated -g: the lists add up, as repeated -u do ("-g 0 -g 2" is "0,2"). */
static int add_gpus(const char **gpus, const char *v)
{
	static char joined[4096];
	size_t have = *gpus ? strlen(*gpus) : 0;

	if (!*gpus) {
		*gpus = v;
		return 0;
	}
	if (have + 1 + strlen(v) + 1 > sizeof(joined)) {
		gs_err("-g: GPU list too long");
		return -E2BIG;
	}
	if (*gpus != joined)
		memcpy(joined, *gpus, have + 1);
	joined[have] = ',';
	memcpy(joined + have + 1, v, strlen(v) + 1);
	*gpus = joined;
	return 0;
}

/* Store one option's value where the table says. */
/* Length of arg's leading blanks. */
static size_t arg_blank(const char *arg)
{
	return strspn(arg, " \t\n");
}

static int set_option(const struct gs_option *o, const char *arg, struct gs_request *req)
{
	char *base = (char *)req;
	char what[40];

	if (o->key < 0x80 && (o->key == 'w' || o->key == 'x'))
		snprintf(what, sizeof(what), "-%c", o->key);
	else
		snprintf(what, sizeof(what), "--%s", o->name);
	/* An empty value (or blanks only: "$A $B" with both unset) is an
	 * unset variable in a script (-g
	 * "$CUDA_VISIBLE_DEVICES"), never a choice: for a selection it would
	 * mean "everything". Only free text may be empty. */
	if (o->arg && !arg[arg_blank(arg)] && o->off != offsetof(struct gs_request, reason)) {
		if (o->key < 0x80)
			gs_err("-%c/--%s '%s': empty value (an unset variable?)", o->key, o->name, arg);
		else
			gs_err("--%s '%s': empty value (an unset variable?)", o->name, arg);
		return -EINVAL;
	}
	switch (o->type) {
	case GS_OT_FLAG:
		*(bool *)(base + o->off) = true;
		return 0;
	case GS_OT_STRING:
		*(const char **)(base + o->off) = arg;
		return 0;
	case GS_OT_LIST:
		return add_multi((const char **)(base + o->off), (size_t *)(base + o->count_off), arg, what);
	case GS_OT_GPUS:
		return add_gpus((const char **)(base + o->off), arg);
	case GS_OT_MS:
		return parse_ms(what, arg, (uint64_t *)(base + o->off));
	case GS_OT_MS_SHORT: {
		uint64_t ms;
		int r = parse_ms(what, arg, &ms);

		*(unsigned *)(base + o->off) = ms > 600000 ? 600000 : (unsigned)ms;
		return r;
	}
	case GS_OT_MIB: {
		uint64_t *v = (uint64_t *)(base + o->off);

		if (gs_parse_u64(arg, v) < 0 || *v > (1u << 24)) {
			gs_err("invalid %s '%s': expected MiB, e.g. 16", what, arg);
			return -EINVAL;
		}
		return 0;
	}
	case GS_OT_FANOUT: {
		uint32_t u32 = 0;

		if (gs_parse_u32(arg, &u32) < 0 || u32 == 0 || u32 > 4096) {
			gs_err("invalid fanout '%s': expected 1 to 4096", arg);
			return -EINVAL;
		}
		*(unsigned *)(base + o->off) = u32;
		return 0;
	}
	case GS_OT_FORMAT:
		*(const char **)(base + o->off) = arg;
		if (!strcmp(arg, "prometheus"))
			req->prometheus = true;
		return 0;
	case GS_OT_CSV:
		/* --csv=TABLE only (an optional argument): "--csv processes"
		 * stays an unexpected argument, never a silent table. */
		if (arg && strcmp(arg, "gpus") && strcmp(arg, "processes")) {
			gs_err("invalid --csv '%s': use --csv (the GPUs), --csv=gpus or --csv=processes", arg);
			return -EINVAL;
		}
		*(bool *)(base + o->off) = true;
		req->csv_processes = arg && !strcmp(arg, "processes");
		return 0;
	case GS_OT_REMOTE:
		*(bool *)(base + o->off) = true;
		req->json = true;
		req->quiet = true;
		return 0;
	case GS_OT_HELP:
		/* gs_cli_parse prints it once the command word is known. */
		return 0;
	case GS_OT_VERSION:
		printf("gpuslate %s\n", GS_VERSION);
		exit(GS_EXIT_CLEAN);
	}
	return -EINVAL;
}

/* --include names a protected daemon to stop; any other name would be a
 * silent no-op (every other holder is a target already). */
static int check_includes(const struct gs_request *req)
{
	for (size_t i = 0; i < req->n_includes; i++) {
		char names[512];
		size_t off = 0;

		if (gs_is_protected_name(req->includes[i], req->includes[i]))
			continue;
		names[0] = '\0';
		for (size_t k = 0; gs_protected_name(k) && off + 40 < sizeof(names); k++)
			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", k ? ", " : "",
						gs_protected_name(k));
		gs_err("--include '%s': not a protected daemon; --include takes one of: %s "
		       "(other holders are targets already; narrow with -u, --unit, --container or --match)",
		       req->includes[i], names);
		return -EINVAL;
	}
	return 0;
}

/* What no single option can check: the combinations. */
static int check_request(struct gs_request *req)
{
	if (check_includes(req) < 0)
		return -EINVAL;
	/* --remote implies JSON; a text form asked for travels inside it. */
	if ((req->json && !req->remote) + req->csv + (req->query_gpu || req->query_apps) + req->prometheus > 1) {
		gs_err("choose one output: --json, --csv, --query-gpu/--query-compute-apps or --format prometheus");
		return -EINVAL;
	}
	if (req->query_gpu && req->query_apps) {
		gs_err("--query-gpu and --query-compute-apps cannot be combined");
		return -EINVAL;
	}
	if (req->format && !req->prometheus && !req->query_gpu && !req->query_apps) {
		gs_err("invalid --format '%s': use prometheus, or csv with --query-gpu", req->format);
		return -EINVAL;
	}
	if (req->gpus) {
		char err[256];

		if (gs_gpusel_check(req->gpus, err, sizeof(err)) < 0) {
			gs_err("%s", err);
			return -EINVAL;
		}
	}
	if (req->proc_root && req->cmd == GS_CMD_RECLAIM && !req->dry_run) {
		/* Signals go to real PIDs: identities must come from the real
		 * /proc, never from a fixture tree. */
		gs_err("--proc-root '%s' is for reading a /proc copy; reclaim acts only on the real /proc (use --dry-run)",
		       req->proc_root);
		return -EINVAL;
	}
	if (req->cmd == GS_CMD_RUN && (req->n_hosts || req->remote)) {
		/* COMMAND runs here, with this terminal: a fleet has no one
		 * place to run it. */
		gs_err("'run' is local only: it cannot be combined with -w (run it on each host: ssh HOST gpuslate run ...)");
		return -EINVAL;
	}
	/* The watch runs within the wait: cut at --timeout, it would end
	 * "clean" before the restart it was asked to wait for. */
	if (req->respawn_watch_ms > req->timeout_ms) {
		gs_err("--respawn-watch %.3gs is longer than --timeout %.3gs: the watch ends with the wait (raise --timeout)",
		       req->respawn_watch_ms / 1000.0, req->timeout_ms / 1000.0);
		return -EINVAL;
	}
	/* A reclaim's worst case: its unit stops share --timeout, then the
	 * wait takes up to --timeout, the grace periods on top; systemctl and
	 * the runtimes' questions (10 s at most, twice) and ssh fit in 60 s. */
	if (!req->command_timeout_ms)
		req->command_timeout_ms = req->timeout_ms * 2 + req->grace_ms * 2 + 60000;
	return 0;
}

/* The command word; false when it names none. */
static bool set_command(struct gs_request *req, const char *word)
{
	static const struct {
		const char *name;
		enum gs_cmd cmd;
	} cmds[] = { { "status", GS_CMD_STATUS },
		     { "reclaim", GS_CMD_RECLAIM },
		     { "wait", GS_CMD_WAIT },
		     { "restore", GS_CMD_RESTORE },
		     { "run", GS_CMD_RUN } };

	for (size_t i = 0; i < GS_ARRAY_SIZE(cmds); i++)
		if (!strcmp(word, cmds[i].name)) {
			req->cmd = cmds[i].cmd;
			req->cmd_name = cmds[i].name;
			return true;
		}
	return false;
}

/* `run [options] -- COMMAND [ARGS...]`: what follows the first "--" after
 * the word run is COMMAND's, never gpuslate's options (getopt would read
 * COMMAND's -y as ours). Returns the argc gpuslate parses. */
static int split_run_command(int argc, char **argv, struct gs_request *req)
{
	bool run_seen = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "run"))
			run_seen = true;
		if (strcmp(argv[i], "--"))
			continue;
		if (!run_seen)
			return argc;
		/* argv is NULL-terminated, and getopt permutes only the
		 * arguments before i. */
		req->run_argv = &argv[i + 1];
		return i;
	}
	return argc;
}

int gs_cli_parse(int argc, char **argv, struct gs_request *req)
{
	/* How each option was written (-n or --dry-run), for messages; NULL:
	 * not given. */
	const char *spelled[OPT_KEY_MAX] = { 0 };
	char short_spelled[0x80][3];
	const struct option *lo;
	const char *so;
	int c, r = 0, longindex = -1;
	bool help = false;

	gs_request_defaults(req);
	gs_cli_getopt_tables(&lo, &so);
	argc = split_run_command(argc, argv, req);
	opterr = 0;
	while ((c = getopt_long(argc, argv, so, lo, &longindex)) != -1) {
		const struct gs_option *o = c > 0 && c != ':' && c != '?' ? gs_option_find(c) : NULL;

		/* After --help the rest of the line is not checked: help
		 * is what was asked for. */
		if (help)
			continue;
		if (r < 0) {
			/* After the error only one thing is asked of the rest
			 * of the line: whether it wants its answer as JSON. */
			if (c == OPT_JSON || c == OPT_REMOTE)
				req->json = true;
			if (c == OPT_REMOTE)
				req->remote = true;
			if (c == 'w')
				req->n_hosts++;
			continue;
		}
		if (!o) {
			if (c == ':') {
				if (optopt && optopt < 0x100)
					gs_err("option '-%c' needs an argument", optopt);
				else
					gs_err("option '%s' needs an argument", argv[optind - 1]);
			} else {
				if (optopt && optopt < 0x100)
					gs_err("unknown option '-%c'", optopt);
				else
					gs_err("unknown option '%s'", argv[optind - 1]);
			}
			r = -EINVAL;
			continue;
		}
		if (longindex >= 0) {
			spelled[c] = lo[longindex].name;
		} else if (c < 0x80) {
			snprintf(short_spelled[c], sizeof(short_spelled[c]), "-%c", c);
			spelled[c] = short_spelled[c];
		}
		longindex = -1;
		if (o->type == GS_OT_HELP)
			help = true;
		r = set_option(o, optarg, req);
	}
	if (help) {
		/* `gpuslate CMD --help`: CMD's options; without a command
		 * word, the overview. */
		if (optind >= argc || !strcmp(argv[optind], "help")) {
			gs_cli_usage(stdout);
			exit(GS_EXIT_CLEAN);
		}
		if (!set_command(req, argv[optind])) {
			gs_err("unknown command '%s' (status, reclaim, wait, restore or run)", argv[optind]);
			return -EINVAL;
		}
		(void)gs_cli_usage_cmd(stdout, req->cmd);
		exit(GS_EXIT_CLEAN);
	}
	if (r < 0) {
		/* For the document of the usage error: which command it was. */
		if (optind < argc)
			(void)set_command(req, argv[optind]);
		return r;
	}

	if (optind >= argc) {
		gs_err("no command given (status, reclaim, wait, restore or run)");
		return -EINVAL;
	}
	if (!strcmp(argv[optind], "help")) {
		/* `gpuslate help [CMD]`, as git's. */
		if (optind + 1 >= argc) {
			gs_cli_usage(stdout);
			exit(GS_EXIT_CLEAN);
		}
		if (!set_command(req, argv[optind + 1])) {
			gs_err("help: unknown command '%s' (status, reclaim, wait, restore or run)", argv[optind + 1]);
			return -EINVAL;
		}
		if (optind + 2 < argc) {
			gs_err("unexpected argument '%s' (gpuslate help [CMD])", argv[optind + 2]);
			return -EINVAL;
		}
		(void)gs_cli_usage_cmd(stdout, req->cmd);
		exit(GS_EXIT_CLEAN);
	}
	if (!set_command(req, argv[optind])) {
		gs_err("unknown command '%s' (status, reclaim, wait, restore or run)", argv[optind]);
		return -EINVAL;
	}
	if (optind + 1 < argc) {
		if (req->cmd == GS_CMD_RUN)
			gs_err("unexpected argument '%s': put COMMAND after '--' (gpuslate run [options] -- COMMAND [ARGS...])",
			       argv[optind + 1]);
		else
			gs_err("unexpected argument '%s'", argv[optind + 1]);
		return -EINVAL;
	}
	if (req->cmd == GS_CMD_RUN && (!req->run_argv || !req->run_argv[0])) {
		gs_err("run: no COMMAND given (gpuslate run [options] -- COMMAND [ARGS...])");
		return -EINVAL;
	}
	if (req->cmd != GS_CMD_RUN && req->run_argv) {
		gs_err("'--' and a COMMAND are only for 'run'");
		return -EINVAL;
	}
	for (const struct gs_option *o = gs_options; o->name; o++)
		if (spelled[o->key] && !gs_option_valid_for(o, req->cmd)) {
			/* Named as the user wrote it: `wait --dry-run` is told
			 * about --dry-run, not -n. */
			const char *why = req->cmd == GS_CMD_RUN && (o->cmds & GS_FOR_FLEET) == GS_FOR_FLEET
						  ? ": 'run' is local only (run it on each host: ssh HOST gpuslate run ...)"
						  : "";

			if (spelled[o->key][0] == '-')
				gs_err("option %s is not valid for '%s'%s", spelled[o->key], req->cmd_name, why);
			else
				gs_err("option --%s is not valid for '%s'%s", spelled[o->key], req->cmd_name, why);
			return -EINVAL;
		}
	return check_request(req);
}
